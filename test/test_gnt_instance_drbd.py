"""The drbd template through gnt-instance on a real virtual cluster.

Each node's mirror daemons (qemu-storage-daemon) listen on the node's own
loopback address; the data written through the primary's FUSE device
must be in the secondary's image (compared with checksums of what
qemu-img reads), and survive a failover, also one whose primary's noded
is dead.
"""

import hashlib
import os
import re
import subprocess
import threading
import time

import pytest

from ganeti import constants, pathutils
from ganeti.storage import drbd
from ganeti.utils import process

from testutils_instance import (CHECKS, FILE_VDIR, MIB, NODE2, NODE3,
                                Config, FindInstance, InstanceCluster,
                                NodeUuid, PrimaryNode, RapiClient,
                                RemoveInstances)
from testutils_node import DRBD_TOOLS

pytestmark = [pytest.mark.integration, *DRBD_TOOLS]

SIZE = 16


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--enabled-disk-templates=drbd,file",
                         rapi_users=True) as cluster:
        yield cluster


def _Add(cluster, name, pnode, snode, *extra):
    cluster.Run("gnt-instance", "add", "-t", "drbd", "-n",
                "%s:%s" % (pnode, snode), "--disk", "0:size=%dM" % SIZE,
                "--no-install", "--ignore-ipolicy", "-B", "memory=64",
                *extra, *CHECKS, name, timeout=120)


def _Image(cluster, node_name, disk):
    return cluster.nodes[node_name].NodePath(os.path.join(
        FILE_VDIR, "drbd", "%s.qcow2" % disk["uuid"]))


def _Device(cluster, node_name, disk):
    return cluster.nodes[node_name].NodePath(os.path.join(
        pathutils.DRBD_RUN_DIR, "d%d.dev" % disk["logical_id"][2]))


def _Contents(image):
    """The guest-visible data of an image, as qemu-img reads it."""
    out = image + ".raw"
    subprocess.run([drbd.QEMU_IMG, "convert", "-U", "-O", "raw", image,
                    out], check=True)
    with open(out, "rb") as fobj:
        digest = hashlib.sha256(fobj.read()).hexdigest()
    os.unlink(out)
    return digest


def _Write(path, seed):
    data = hashlib.sha256(seed.encode()).digest() * (MIB // 32)
    with open(path, "r+b") as fobj:
        for mib in range(0, SIZE, 3):
            fobj.seek(mib * MIB)
            fobj.write(data)
        fobj.flush()
        os.fsync(fobj.fileno())


def _WaitInSync(cluster, name):
    out = cluster.Run("gnt-instance", "activate-disks", "--wait-for-sync",
                      name, timeout=120).stdout
    return out


def test_add_write_remove(vc):
    # Ganeti's single-disk shorthand -s (--os-size)
    vc.Run("gnt-instance", "add", "-t", "drbd", "-n",
           "%s:%s" % (vc.node, NODE2), "-s", "%dM" % SIZE, "--no-install",
           "--ignore-ipolicy", "-B", "memory=64", *CHECKS, "drbd1",
           timeout=120)
    assert "Please use either the '--disk' or '-s' option" in vc.Run(
        "gnt-instance", "add", "-t", "drbd", "-n",
        "%s:%s" % (vc.node, NODE2), "-s", "%dM" % SIZE, "--disk",
        "0:size=%dM" % SIZE, *CHECKS, "drbd2", check=False).stderr
    try:
        inst, (disk, ) = FindInstance(vc, "drbd1")
        assert disk["dev_type"] == constants.DT_DRBD8
        pnode, snode, port = disk["logical_id"][:3]
        assert (pnode, snode) == (NodeUuid(vc, vc.node),
                                  NodeUuid(vc, NODE2))
        assert constants.FIRST_DRBD_PORT <= port <= constants.LAST_DRBD_PORT
        assert disk["nodes"] == [pnode, snode]
        out = vc.Run("gnt-instance", "list", "--no-headers",
                     "--separator=|", "-o", "pnode,snodes,status",
                     "drbd1").stdout.strip()
        assert out == "%s|%s|running" % (vc.node, NODE2)
        device = _Device(vc, vc.node, disk)
        assert os.path.getsize(device) == SIZE * MIB
        _Write(device, "add")
        vc.Run("gnt-instance", "shutdown", "drbd1", timeout=120)
        assert not os.path.exists(device)
        assert _Contents(_Image(vc, vc.node, disk)) == \
            _Contents(_Image(vc, NODE2, disk))
    finally:
        RemoveInstances(vc, "drbd1")
    for node in (vc.node, NODE2):
        assert not os.path.exists(_Image(vc, node, disk))
        run_dir = vc.nodes[node].NodePath(pathutils.DRBD_RUN_DIR)
        assert not [f for f in os.listdir(run_dir)
                    if f.startswith("d%d." % port)] \
            if os.path.isdir(run_dir) else True
    assert port in Config(vc)["cluster"]["tcpudp_port_pool"]


def test_failover_keeps_data(vc):
    _Add(vc, "drbd2", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "drbd2")
        _Write(_Device(vc, vc.node, disk), "before failover")
        expected = _Contents(_Image(vc, vc.node, disk))
        vc.Run("gnt-instance", "failover", "-f", "drbd2", timeout=120)
        assert PrimaryNode(vc, "drbd2") == NODE2
        _, (disk, ) = FindInstance(vc, "drbd2")
        assert disk["nodes"] == [NodeUuid(vc, NODE2), NodeUuid(vc, vc.node)]
        assert _Contents(_Image(vc, NODE2, disk)) == expected
        device = _Device(vc, NODE2, disk)
        with open(device, "rb") as fobj:
            assert hashlib.sha256(fobj.read()).hexdigest() == expected
    finally:
        RemoveInstances(vc, "drbd2")


def test_failover_ignore_consistency_dead_primary(vc):
    _Add(vc, "drbd3", NODE2, NODE3)
    node2 = vc.nodes[NODE2]
    try:
        _, (disk, ) = FindInstance(vc, "drbd3")
        _Write(_Device(vc, NODE2, disk), "acknowledged")
        expected = _Contents(_Image(vc, NODE3, disk))
        node2.KillDaemon("ganeti-noded")
        out = vc.Run("gnt-instance", "failover", "-f", "drbd3",
                     check=False, timeout=120)
        assert out.returncode != 0
        vc.Run("gnt-instance", "failover", "-f", "--ignore-consistency",
               "drbd3", timeout=120)
        assert PrimaryNode(vc, "drbd3") == NODE3
        with open(_Device(vc, NODE3, disk), "rb") as fobj:
            assert hashlib.sha256(fobj.read()).hexdigest() == expected
    finally:
        if not node2.IsRunning("ganeti-noded"):
            node2.StartNoded()
        RemoveInstances(vc, "drbd3")


def _DiskLine(info, side):
    """The "on primary"/"on secondary" status of disk/0 in info output."""
    found = re.search(r"on %s: (.*)" % side, info)
    return found.group(1) if found else None


def test_info_status_degraded_and_resync(vc):
    out = vc.Run("gnt-instance", "add", "-t", "drbd", "-n",
                 "%s:%s" % (vc.node, NODE2), "--disk", "0:size=%dM" % SIZE,
                 "--no-install", "--ignore-ipolicy", "-B", "memory=64",
                 *CHECKS, "drbd4", timeout=120).stdout
    # gnt-instance add waits for the first sync (--no-wait-for-sync: not)
    assert "Waiting for instance drbd4 to sync disks" in out, out
    assert "Instance drbd4's disks are in sync" in out, out
    try:
        _, (disk, ) = FindInstance(vc, "drbd4")
        port = disk["logical_id"][2]
        info = vc.Run("gnt-instance", "info", "drbd4").stdout
        assert "disk/0: drbd, size %dM" % SIZE in info, info
        assert "nodeA: %s, minor=0" % vc.node in info, info
        assert "nodeB: %s, minor=0" % NODE2 in info, info
        assert "port: %d" % port in info, info
        assert re.fullmatch(r"\S*/d%d\.dev \(N/A:N/A\) in sync, status ok"
                            % port, _DiskLine(info, "primary")), info
        assert re.fullmatch(r"\S*/drbd/%s\.qcow2 \(N/A:N/A\) in sync,"
                            r" status ok" % disk["uuid"],
                            _DiskLine(info, "secondary")), info
        static = vc.Run("gnt-instance", "info", "--static", "drbd4").stdout
        assert _DiskLine(static, "primary") is None, static

        # The secondary's server dies: the primary goes on, degraded
        pid_file = vc.nodes[NODE2].NodePath(os.path.join(
            pathutils.DRBD_RUN_DIR, "d%d.pid" % port))
        process.KillProcess(process.ReadPidFile(pid_file), timeout=15)
        _Write(_Device(vc, vc.node, disk), "degraded")
        info = vc.Run("gnt-instance", "info", "drbd4").stdout
        assert _DiskLine(info, "primary").endswith(", status *DEGRADED*"), \
            info
        assert _DiskLine(info, "secondary") is None, info
        verify = vc.Run("gnt-cluster", "verify", "--error-codes",
                        check=False).stdout
        # As Ganeti: both sides of the broken pair are degraded
        for node in (vc.node, NODE2):
            assert "WARNING:EINSTANCEFAULTYDISK:instance:drbd4:disk/0 on %s" \
                " is degraded; local disk state is 'ok'" % node in verify, \
                verify
        # The images of configured drbd disks are no orphans
        assert not [line for line in verify.splitlines()
                    if "ENODEORPHANLV" in line and "drbd" in line], verify

        out = _WaitInSync(vc, "drbd4")
        assert "Waiting for instance drbd4 to sync disks" in out, out
        assert "Instance drbd4's disks are in sync" in out, out
        info = vc.Run("gnt-instance", "info", "drbd4").stdout
        assert _DiskLine(info, "primary").endswith(" in sync, status ok"), \
            info
        assert _DiskLine(info, "secondary") is not None, info
        vc.Run("gnt-instance", "shutdown", "drbd4", timeout=120)
        assert _Contents(_Image(vc, vc.node, disk)) == \
            _Contents(_Image(vc, NODE2, disk))
    finally:
        RemoveInstances(vc, "drbd4")


class _Writer(threading.Thread):
    """Writes through a device, each pass synced, until stopped."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.passes = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            _Write(self.path, "pass %d" % self.passes)
            self.passes += 1


def _RapiWait(client, job_id):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job = client.GetJobStatus(job_id)
        if job["status"] in constants.JOBS_FINALIZED:
            return job
        time.sleep(0.5)
    raise AssertionError("job %s did not finish" % job_id)


def test_replace_disks_new_secondary_while_writing(vc):
    _Add(vc, "drbd5", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "drbd5")
        old_image = _Image(vc, NODE2, disk)
        assert os.path.exists(old_image)
        out = vc.Run("gnt-instance", "replace-disks", "-n", vc.node, "drbd5",
                     check=False)
        assert "The specified node is the primary node of the instance" in \
            out.stderr, out.stderr
        writer = _Writer(_Device(vc, vc.node, disk))
        writer.start()
        try:
            out = vc.Run("gnt-instance", "replace-disks", "-n", NODE3,
                         "drbd5", timeout=180).stdout
        finally:
            writer.stop.set()
            writer.join()
        assert writer.passes > 0
        for line in ("STEP 3/6 Allocate new storage", "STEP 5/6 Sync devices",
                     "Instance drbd5's disks are in sync",
                     "STEP 6/6 Removing old storage"):
            assert line in out, out
        assert PrimaryNode(vc, "drbd5") == vc.node
        _, (disk, ) = FindInstance(vc, "drbd5")
        assert disk["nodes"] == [NodeUuid(vc, vc.node), NodeUuid(vc, NODE3)]
        assert NodeUuid(vc, NODE3) in disk["logical_id"][:2]
        assert not os.path.exists(old_image)
        out = vc.Run("gnt-instance", "list", "--no-headers", "-o", "snodes",
                     "drbd5").stdout.strip()
        assert out == NODE3
        info = vc.Run("gnt-instance", "info", "drbd5").stdout
        assert _DiskLine(info, "primary").endswith(" in sync, status ok"), \
            info
        assert "nodeB: %s, minor=" % NODE3 in info, info
        vc.Run("gnt-instance", "shutdown", "drbd5", timeout=120)
        assert _Contents(_Image(vc, vc.node, disk)) == \
            _Contents(_Image(vc, NODE3, disk))

        # Back to the first secondary through RAPI (Ganeti's legacy form),
        # the instance stopped: its disks are activated meanwhile
        client = RapiClient(vc)
        job = _RapiWait(client, client.ReplaceInstanceDisks(
            "drbd5", mode=constants.REPLACE_DISK_CHG, remote_node=NODE2))
        assert job["status"] == constants.JOB_STATUS_SUCCESS, job
        _, (disk, ) = FindInstance(vc, "drbd5")
        assert disk["nodes"] == [NodeUuid(vc, vc.node), NodeUuid(vc, NODE2)]
        assert not os.path.exists(_Image(vc, NODE3, disk))
        assert not os.path.exists(_Device(vc, vc.node, disk))
        assert _Contents(_Image(vc, vc.node, disk)) == \
            _Contents(_Image(vc, NODE2, disk))
    finally:
        RemoveInstances(vc, "drbd5")


def test_verify_n_plus_one_memory(vc):
    """Ganeti's N+1 check: a secondary lacking the memory to start the
    instances of a failed primary is an error, stopped instances count
    (someone may start them), instances that are not auto-balanced don't.
    """
    with open("/proc/meminfo", encoding="ascii") as fobj:
        total_mib = int(fobj.readline().split()[1]) // 1024
    memory = 4 * total_mib
    vc.Run("gnt-instance", "add", "-t", "drbd", "-n",
           "%s:%s" % (vc.node, NODE2), "--disk", "0:size=%dM" % SIZE,
           "--no-install", "--no-start", "--ignore-ipolicy", "-B",
           "memory=%d" % memory, *CHECKS, "drbdn1", timeout=120)
    pattern = (r"ERROR:ENODEN1:node:%s:not enough memory to accomodate"
               r" instance failovers should node %s fail \(%dMiB needed,"
               r" \d+MiB available\)" % (re.escape(NODE2),
                                         re.escape(vc.node), memory))
    try:
        verify = vc.Run("gnt-cluster", "verify", "--error-codes",
                        check=False)
        assert verify.returncode == constants.EXIT_FAILURE, verify.stdout
        assert "* Verifying N+1 Memory redundancy" in verify.stdout, \
            verify.stdout
        found = [line for line in verify.stdout.splitlines()
                 if "ENODEN1" in line]
        assert len(found) == 1 and re.search(pattern, found[0]), \
            verify.stdout
        skipped = vc.Run("gnt-cluster", "verify", "--error-codes",
                         "--no-nplus1-mem", check=False).stdout
        assert "ENODEN1" not in skipped and "N+1" not in skipped, skipped
        vc.Run("gnt-instance", "modify", "--ignore-ipolicy", "-B",
               "auto_balance=false", "drbdn1", timeout=120)
        verify = vc.Run("gnt-cluster", "verify", "--error-codes",
                        check=False).stdout
        assert "ENODEN1" not in verify, verify
    finally:
        RemoveInstances(vc, "drbdn1")
