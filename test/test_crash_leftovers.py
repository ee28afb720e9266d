"""What crashes leave behind: an instance creation whose master daemon was
killed, temporary files in the queue directory, a failed or interrupted
``gnt-cluster init``, and the orphan files ``gnt-cluster verify`` reports.
Real daemons on a virtual cluster.
"""

import glob
import os
import re
import time

import pytest

from ganeti import pathutils

from testutils_cluster import SMALL_IPOLICY_BOUNDS, VirtualCluster, WaitForJob
from testutils_instance import (CHECKS, FILE_VDIR, NODE2, InstanceCluster,
                                OsVariant, OsSearchDir)

pytestmark = pytest.mark.integration

# tinyimage whose create script says it started, then takes its time
SLOW_OS = OsVariant({"create": "#!/bin/sh\ntouch \"$(dirname \"$0\")/started"
                               "\"\nsleep 15\n"})


def _WaitFor(predicate, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.1)


def _Restart(node):
    node.KillDaemon("ganeti-masterd")
    node.StartMasterd()


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         nodes=(NODE2, ),
                         extra_os={"slowos": SLOW_OS}) as cluster:
        yield cluster


def _OrphanFindings(vc):
    result = vc.Run("gnt-cluster", "verify", check=False)
    # Findings without the time stamp of the job log
    return [line[line.index("  - "):] for line in result.stdout.splitlines()
            if "is unknown" in line], result


def test_killed_creation_is_rolled_back_at_start(vc):
    node2 = vc.nodes[NODE2]
    started = os.path.join(OsSearchDir(node2), "slowos", "started")
    result = vc.Run("gnt-instance", "add", "--submit", "-t", "file",
                    "--disk", "0:size=8M", "-o", "slowos", "-n", NODE2,
                    "--no-start", *CHECKS, "crashed")
    job_id = int(re.findall(r"\d+", result.stdout + result.stderr)[-1])
    _WaitFor(lambda: os.path.exists(started), what="the OS create script")
    disks = glob.glob(node2.NodePath(FILE_VDIR) + "/crashed/*.disk0")
    assert len(disks) == 1
    records = vc.NodePath(pathutils.DATA_DIR + "/creation-intents")
    assert len(os.listdir(records)) == 1

    # Killed mid-creation: the disk is the config's no more than the job's
    _Restart(vc)
    _WaitFor(lambda: not os.listdir(records), what="the recovery")
    assert not os.path.exists(disks[0])
    assert not os.path.exists(os.path.dirname(disks[0]))
    with vc.Luxi() as client:
        assert WaitForJob(client, job_id) == "error"
    assert "crashed" not in vc.Run("gnt-instance", "list").stdout
    findings, result = _OrphanFindings(vc)
    assert findings == [] and result.returncode == 0, result.stdout


def test_verify_reports_orphan_files_and_directories(vc):
    node2 = vc.nodes[NODE2]
    vc.Run("gnt-instance", "add", "-t", "file", "--disk", "0:size=4M", "-o",
           "tinyimage", "-n", NODE2, "--no-start", *CHECKS, "kept")
    base = node2.NodePath(FILE_VDIR)
    os.makedirs(os.path.join(base, "ghost"))
    with open(os.path.join(base, "ghost", "x.disk0"), "wb"):
        pass
    with open(os.path.join(base, "kept", "stray.disk1"), "wb"):
        pass
    try:
        findings, result = _OrphanFindings(vc)
        # Warnings, as Ganeti's orphan volumes: verify still succeeds
        assert result.returncode == 0, result.stdout
        assert sorted(findings) == sorted([
            "  - WARNING: node %s: instance directory %s/ghost is unknown" %
            (NODE2, FILE_VDIR),
            "  - WARNING: node %s: volume %s/kept/stray.disk1 is unknown" %
            (NODE2, FILE_VDIR)])
        codes = vc.Run("gnt-cluster", "verify", "--error-codes").stdout
        assert "WARNING:ENODEORPHANLV:node:%s:volume %s/kept/stray.disk1" \
            " is unknown" % (NODE2, FILE_VDIR) in codes
    finally:
        os.unlink(os.path.join(base, "ghost", "x.disk0"))
        os.rmdir(os.path.join(base, "ghost"))
        os.unlink(os.path.join(base, "kept", "stray.disk1"))
    assert _OrphanFindings(vc)[0] == []
    vc.Run("gnt-instance", "remove", "-f", "kept")


def test_queue_temporary_files_are_removed_at_start(vc):
    leftover = os.path.join(vc.queue_dir, ".job-999.x1y2z3.tmp")
    with open(leftover, "w", encoding="ascii") as fobj:
        fobj.write('{"id": 99')
    _Restart(vc)
    assert not os.path.exists(leftover)
    assert vc.Run("gnt-job", "list").returncode == 0


def test_stale_master_ssconf_is_rewritten_at_start(vc):
    """A master killed between writing config.data and its ssconf files
    (a tag added, say) finds them stale at the next start: masterd
    rewrites them from the configuration, and verify is clean."""
    path = vc.NodePath(os.path.join(pathutils.DATA_DIR,
                                    "ssconf_cluster_tags"))
    vc.Run("gnt-cluster", "add-tags", "crash-tag")
    with open(path, encoding="ascii") as fobj:
        assert fobj.read().split() == ["crash-tag"]
    vc.KillDaemon("ganeti-masterd")
    with open(path, "w", encoding="ascii") as fobj:
        fobj.write("")
    vc.StartMasterdAndWait()
    try:
        with open(path, encoding="ascii") as fobj:
            assert fobj.read().split() == ["crash-tag"]
        out = vc.Run("gnt-cluster", "verify", check=False).stdout
        assert "ssconf_cluster_tags differs" not in out, out
    finally:
        vc.Run("gnt-cluster", "remove-tags", "crash-tag")


def test_failed_init_leaves_nothing_that_blocks_the_next():
    cluster = VirtualCluster()
    try:
        # The master daemon can't bind its socket: init fails at the end
        socket = cluster.master_socket
        os.makedirs(os.path.join(socket, "blocker"))
        result = cluster.Run("gnt-cluster", "init", "--master-netdev=lo",
                             "--file-storage-dir=" + cluster.NodePath(
                                 pathutils.DEFAULT_FILE_STORAGE_DIR),
                             cluster.cluster_name, check=False)
        assert result.returncode != 0
        assert not os.path.exists(cluster.NodePath(
            pathutils.CLUSTER_CONF_FILE))
        assert not glob.glob(cluster.NodePath(pathutils.SSCONF_PREFIX) + "*")
        assert not cluster.IsRunning("ganeti-masterd")
        assert not cluster.IsRunning("ganeti-noded")
        os.rmdir(os.path.join(socket, "blocker"))
        os.rmdir(socket)
        cluster.Init()
        assert cluster.IsRunning("ganeti-masterd")
    finally:
        cluster.Cleanup()


def test_interrupted_init_leftovers_do_not_block_the_next():
    cluster = VirtualCluster()
    try:
        # What a kill -9 after the configuration was written leaves
        data_dir = cluster.NodePath(pathutils.DATA_DIR)
        os.makedirs(data_dir)
        for name, content in (("config.data", '{"version": 3'),
                              ("cluster-init.incomplete", "")):
            with open(os.path.join(data_dir, name), "w",
                      encoding="ascii") as fobj:
                fobj.write(content)
        cluster.Init()
        assert cluster.IsRunning("ganeti-masterd")
        assert not os.path.exists(os.path.join(data_dir,
                                               "cluster-init.incomplete"))
        # A finished init is a cluster: the next one is refused
        result = cluster.Run("gnt-cluster", "init", "--master-netdev=lo",
                             cluster.cluster_name, check=False)
        assert result.returncode != 0
        assert "already initialised" in result.stdout + result.stderr
    finally:
        cluster.Cleanup()
