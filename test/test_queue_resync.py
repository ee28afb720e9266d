"""A candidate's job queue copy after purges and failed resynchronisations.

Real masterd and noded processes on a two-node virtual cluster: the
master's full resynchronisation must rebuild what a purge removed (the
archive's subdirectories), and ``gnt-cluster verify`` must report a
candidate whose copies cannot be brought up to date.
"""

import glob
import os
import signal
import time

import pytest

from ganeti import constants, pathutils

from testutils_cluster import VirtualCluster, WaitForJob

pytestmark = pytest.mark.integration

NODE2 = "node2.example.test"


@pytest.fixture
def cluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        cluster.AddNode(NODE2)
        yield cluster
    finally:
        cluster.Cleanup()


def _Files(queue_dir: str) -> dict[str, str]:
    """Job files, serial and archive of a queue copy, by relative path."""
    files = {}
    for top, _, names in os.walk(queue_dir):
        for name in names:
            if name.startswith("job-") or name == "serial":
                path = os.path.join(top, name)
                with open(path, encoding="utf-8") as fobj:
                    files[os.path.relpath(path, queue_dir)] = fobj.read()
    return files


def _WaitFor(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s" % what)


def _Resynchronised(cluster, name: str) -> bool:
    """Whether the running masterd logged a full resync of node ``name``."""
    line = "ganeti-masterd pid=%d " % cluster.Pid("ganeti-masterd")
    done = "Node %s resynchronised" % name
    for path in glob.glob(cluster.NodePath(pathutils.LOG_DIR) + "/*.log"):
        with open(path, encoding="utf-8", errors="replace") as fobj:
            if any(line in text and done in text for text in fobj):
                return True
    return False


def _Submit(cluster) -> int:
    job_id = int(cluster.Run("gnt-debug", "delay", "--submit",
                             "--print-jobid", "0.01").stdout.strip())
    assert WaitForJob(cluster.Luxi(), job_id) == constants.JOB_STATUS_SUCCESS
    return job_id


def test_resync_after_archive_and_restart_converges(cluster):
    node2 = cluster.nodes[NODE2]
    job_id = _Submit(cluster)
    cluster.Run("gnt-job", "archive", str(job_id))
    cluster.KillDaemon("ganeti-masterd", signal.SIGTERM)
    cluster.StartMasterd()
    # The restart's resynchronisation purges node2's copy, archive included,
    # and must then rebuild it
    _WaitFor(lambda: _Resynchronised(cluster, NODE2), 30,
             "the restarted master to resynchronise node2")
    assert _Files(node2.queue_dir) == _Files(cluster.queue_dir)
    assert os.path.join("archive", "0", "job-%d" % job_id) in \
        _Files(node2.queue_dir)
    result = cluster.Run("gnt-cluster", "verify", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ENODESETUP" not in result.stdout


def test_verify_reports_candidate_whose_copy_stays_behind(cluster):
    node2 = cluster.nodes[NODE2]
    next_id = _Submit(cluster) + 1
    # A directory where the next job file goes: no write there succeeds,
    # and a purge keeps directories
    os.mkdir(os.path.join(node2.queue_dir, "job-%d" % next_id))
    assert _Submit(cluster) == next_id
    result = cluster.Run("gnt-cluster", "verify", "--error-codes",
                         check=False)
    assert result.returncode != 0
    lines = [line for line in result.stdout.splitlines()
             if "ENODESETUP" in line]
    assert len(lines) == 1, result.stdout
    assert "ERROR:ENODESETUP:node:%s:copy of the configuration and job" \
        " queue is behind the master's" % NODE2 in lines[0]
    assert "job-%d" % next_id in lines[0]
