"""A candidate's job queue copy after purges and failed resynchronisations.

Real masterd and noded processes on a two-node virtual cluster: the
master's full resynchronisation must rebuild what a purge removed (the
archive's subdirectories), and ``gnt-cluster verify`` must report a
candidate whose copies cannot be brought up to date.
"""

import os
import signal

import pytest

from ganeti import constants

from testutils_cluster import WaitFor, WaitForJob
from testutils_instance import NODE2

# Both tests use the module's two_node_cluster (test/conftest.py): the
# first leaves node2's copy current, the second leaves it behind
pytestmark = pytest.mark.integration


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


def _Submit(cluster) -> int:
    job_id = int(cluster.Run("gnt-debug", "delay", "--submit",
                             "--print-jobid", "0.01").stdout.strip())
    assert WaitForJob(cluster.Luxi(), job_id) == constants.JOB_STATUS_SUCCESS
    return job_id


def test_resync_after_archive_and_restart_converges(two_node_cluster):
    master = two_node_cluster
    node2 = master.nodes[NODE2]
    job_id = _Submit(master)
    master.Run("gnt-job", "archive", str(job_id))
    master.KillDaemon("ganeti-masterd", signal.SIGTERM)
    master.StartMasterd()
    # The restart's resynchronisation purges node2's copy, archive included,
    # and must then rebuild it
    WaitFor(lambda: master.Logged(constants.MASTERD,
                                  "Node %s resynchronised" % NODE2), 30,
            "the restarted master to resynchronise node2")
    assert _Files(node2.queue_dir) == _Files(master.queue_dir)
    assert os.path.join("archive", "0", "job-%d" % job_id) in \
        _Files(node2.queue_dir)
    result = master.Run("gnt-cluster", "verify", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ENODESETUP" not in result.stdout


def test_verify_reports_candidate_whose_copy_stays_behind(two_node_cluster):
    master = two_node_cluster
    node2 = master.nodes[NODE2]
    next_id = _Submit(master) + 1
    # A directory where the next job file goes: no write there succeeds,
    # and a purge keeps directories
    os.mkdir(os.path.join(node2.queue_dir, "job-%d" % next_id))
    assert _Submit(master) == next_id
    result = master.Run("gnt-cluster", "verify", "--error-codes",
                        check=False)
    assert result.returncode != 0
    lines = [line for line in result.stdout.splitlines()
             if "ENODESETUP" in line]
    assert len(lines) == 1, result.stdout
    assert "ERROR:ENODESETUP:node:%s:copy of the configuration and job" \
        " queue is behind the master's" % NODE2 in lines[0]
    assert "job-%d" % next_id in lines[0]
