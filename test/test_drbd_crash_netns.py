"""Crash safety of the drbd template with nodes in network namespaces.

A writer on the primary stands in for the guest: it writes a counter
through the disk's device (the FUSE export, seen only in the mount
namespace its block daemon was started in), overwriting a
header block and appending to a ring of log blocks, fsyncs, and prints
each value once fsync returned (acknowledged). Then a part of the
primary dies by SIGKILL at a random moment (``--seed``): the whole node
(every process in its namespace), its block daemon alone, or its noded
alone. Every acknowledged value must be on the surviving copies, their
images must pass ``qemu-img check``, and the pair must come back in sync.

Bytes copied by a resync are what the secondary's namespace received on
its ``eth0`` while ``activate-disks`` ran (besides a few KiB of RPCs).
"""

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from ganeti import pathutils
from ganeti.storage import drbd
from ganeti.utils import process

from testutils_cluster import NetnsClusterOrSkip
from testutils_instance import (CHECKS, FILE_VDIR, MIB, NODE2, NODE3,
                                AllowFileStorage, FindInstance, NodeUuid,
                                PrimaryNode, RemoveInstances)
from testutils_node import DRBD_TOOLS

pytestmark = [pytest.mark.integration, pytest.mark.netns, *DRBD_TOOLS]

SIZE = 16
BLOCK = 4096
# Log blocks after the header block (the disk holds SIZE MiB of blocks)
RING = 1000
# The writer: header at block 0, value v also in log block 1 + v % RING
WRITER = r"""
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
value = 0
while True:
    value += 1
    block = (b"%d\n" % value).ljust(4096, b"\0")
    os.pwrite(fd, block, 4096 * (1 + value % {ring}))
    os.pwrite(fd, block, 0)
    os.fsync(fd)
    print(value, flush=True)
""".format(ring=RING)


@pytest.fixture(scope="module")
def nc():
    """Three nodes in namespaces (the master and two drbd nodes), fake
    hypervisor, drbd and file templates."""
    cluster = NetnsClusterOrSkip()
    try:
        cluster.Init("--enabled-disk-templates=drbd,file")
        for name in (NODE2, NODE3):
            cluster.AddNode(name)
        for node in cluster.nodes.values():
            AllowFileStorage(node, FILE_VDIR)
        yield cluster
    finally:
        cluster.Cleanup()


def _Add(cluster, name):
    cluster.Run("gnt-instance", "add", "-t", "drbd", "-n",
                "%s:%s" % (NODE2, NODE3), "--disk", "0:size=%dM" % SIZE,
                "--no-install", "--ignore-ipolicy", "-B", "memory=64",
                *CHECKS, name, timeout=120)
    _, (disk, ) = FindInstance(cluster, name)
    return disk


def _RunPath(cluster, node_name, disk, suffix):
    """A file of the disk's daemons in the node's drbd run directory."""
    return cluster.nodes[node_name].NodePath(os.path.join(
        pathutils.DRBD_RUN_DIR, "d%d%s" % (disk["logical_id"][2], suffix)))


def _DaemonPid(cluster, node_name, disk, suffix):
    return process.ReadPidFile(_RunPath(cluster, node_name, disk, suffix))


def _Image(cluster, node_name, disk):
    return cluster.nodes[node_name].NodePath(os.path.join(
        FILE_VDIR, "drbd", "%s.qcow2" % disk["uuid"]))


def _InNode(cluster, node_name, disk):
    """The command prefix that enters the namespaces of the disk's FUSE
    daemon on a node: its network and its mount namespace, the only one
    where the device is mounted (``ip netns exec`` gives every command
    its own, so a restarted noded does not see it)."""
    pid = _DaemonPid(cluster, node_name, disk, ".fuse.pid")
    assert process.IsProcessAlive(pid), "no device on %s" % node_name
    return ["nsenter", "-t", str(pid), "-m", "-n"]


class _Writer:
    """The counter writer, run in the primary's namespaces."""

    def __init__(self, cluster, node_name, disk):
        self.proc = subprocess.Popen(
            _InNode(cluster, node_name, disk) +
            [sys.executable, "-c", WRITER,
             _RunPath(cluster, node_name, disk, ".dev")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.acked = 0

    def WaitAcked(self, count):
        """Read acknowledgements until ``count`` values are."""
        while self.acked < count:
            line = self.proc.stdout.readline()
            assert line, "the writer died: %s" % self.proc.stderr.read()
            self.acked = int(line)

    def Finish(self):
        """Collect the values acknowledged before the writer ended (it
        was killed or its device failed); returns its stderr."""
        self.proc.kill()
        out, err = self.proc.communicate(timeout=30)
        for line in out.splitlines():
            self.acked = int(line)
        return err


def _Blocks(data):
    """(header value, {log slot: value}) of the writer's blocks."""
    def Value(index):
        raw = data[index * BLOCK:(index + 1) * BLOCK].split(b"\n", 1)[0]
        return int(raw) if raw.strip(b"\0") else 0
    return Value(0), {slot: Value(1 + slot) for slot in range(RING)}


def _CheckCounter(data, acked):
    """Every acknowledged value is there: the header holds it or a later
    one, and each log slot the last acknowledged values used holds that
    value or a later one of the same slot."""
    header, log = _Blocks(data)
    assert header >= acked, (header, acked)
    for value in range(max(1, acked - RING + 1), acked + 1):
        found = log[value % RING]
        assert found >= value and found % RING == value % RING, \
            (value, found, acked)


def _ImageData(image):
    """The guest-visible data of an image (also while a daemon has it
    open: the writes that count were flushed)."""
    out = image + ".raw"
    subprocess.run([drbd.QEMU_IMG, "convert", "-U", "-O", "raw", image, out],
                   check=True)
    try:
        with open(out, "rb") as fobj:
            return fobj.read()
    finally:
        os.unlink(out)


def _DeviceData(cluster, node_name, disk):
    """The device's data as the node's programs see it."""
    return subprocess.run(
        _InNode(cluster, node_name, disk) +
        ["cat", _RunPath(cluster, node_name, disk, ".dev")],
        capture_output=True, check=True, timeout=60).stdout


def _Check(image):
    result = subprocess.run([drbd.QEMU_IMG, "check", "-U", image],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def _RxBytes(cluster, node_name):
    out = subprocess.run(["ip", "-n", cluster.nodes[node_name].netns, "-s",
                          "-j", "link", "show", "eth0"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)[0]["stats64"]["rx"]["bytes"]


def _Activate(cluster, name, receiver):
    """activate-disks --wait-for-sync; the bytes ``receiver`` got."""
    before = _RxBytes(cluster, receiver)
    cluster.Run("gnt-instance", "activate-disks", "--wait-for-sync", name,
                timeout=120)
    return _RxBytes(cluster, receiver) - before


def _Digest(data):
    return hashlib.sha256(data).hexdigest()


def _KillAfterRandomWrites(writer, crash_rng, kill):
    rng, _ = crash_rng
    writer.WaitAcked(rng.randint(20, 200))
    # Somewhere within the next write (one takes milliseconds)
    time.sleep(rng.uniform(0, 0.005))
    kill()


def test_dead_primary_node_failover_keeps_acknowledged(nc, crash_rng):
    disk = _Add(nc, "crash1")
    node2 = nc.nodes[NODE2]
    try:
        writer = _Writer(nc, NODE2, disk)
        _KillAfterRandomWrites(writer, crash_rng,
                               lambda: nc.KillNode(node2))
        writer.Finish()
        assert nc.Run("gnt-instance", "failover", "-f", "crash1",
                      check=False, timeout=120).returncode != 0
        nc.Run("gnt-instance", "failover", "-f", "--ignore-consistency",
               "crash1", timeout=120)
        assert PrimaryNode(nc, "crash1") == NODE3
        _CheckCounter(_DeviceData(nc, NODE3, disk), writer.acked)
        image = _Image(nc, NODE3, disk)
        _Check(image)
        _CheckCounter(_ImageData(image), writer.acked)

        # The old primary comes back as the secondary: a full sync, as
        # it may hold writes that were never acknowledged
        node2.StartNoded()
        copied = _Activate(nc, "crash1", NODE2)
        assert copied >= SIZE * MIB, copied
        nc.Run("gnt-instance", "shutdown", "crash1", timeout=120)
        data = _ImageData(_Image(nc, NODE3, disk))
        _CheckCounter(data, writer.acked)
        assert _Digest(_ImageData(_Image(nc, NODE2, disk))) == \
            _Digest(data)
        _Check(_Image(nc, NODE2, disk))
    finally:
        if not node2.IsRunning("ganeti-noded"):
            node2.StartNoded()
        RemoveInstances(nc, "crash1")


def test_dead_block_daemon_keeps_secondary(nc, crash_rng):
    """The primary's block daemon dies under writes: the secondary's
    image holds every acknowledged write and passes qemu-img check;
    activate-disks brings the pair back in sync, the configuration
    unchanged.

    The resync is full: the writes in flight at the crash may be on the
    primary only, and nothing recorded where (the persistent bitmap is
    stored on a clean exit only; DRBD has its activity log for this)."""
    disk = _Add(nc, "crash2")
    try:
        # A clean restart: the image now holds a stored bitmap, which the
        # crash leaves marked in use (inconsistent)
        nc.Run("gnt-instance", "shutdown", "crash2", timeout=120)
        nc.Run("gnt-instance", "startup", "crash2", timeout=120)
        pid = _DaemonPid(nc, NODE2, disk, ".pid")
        writer = _Writer(nc, NODE2, disk)
        _KillAfterRandomWrites(
            writer, crash_rng,
            lambda: process.KillProcess(pid, 9, timeout=15))
        writer.Finish()
        image = _Image(nc, NODE3, disk)
        _Check(image)
        _CheckCounter(_ImageData(image), writer.acked)

        copied = _Activate(nc, "crash2", NODE3)
        assert copied >= SIZE * MIB, copied
        _, (after, ) = FindInstance(nc, "crash2")
        assert after["nodes"] == [NodeUuid(nc, NODE2), NodeUuid(nc, NODE3)]
        assert after["logical_id"] == disk["logical_id"]
        _CheckCounter(_DeviceData(nc, NODE2, disk), writer.acked)
        nc.Run("gnt-instance", "shutdown", "crash2", timeout=120)
        data = _ImageData(_Image(nc, NODE2, disk))
        assert _Digest(_ImageData(image)) == _Digest(data)
        _Check(image)
        _Check(_Image(nc, NODE2, disk))
    finally:
        RemoveInstances(nc, "crash2")


def test_dead_noded_keeps_mirror(nc, crash_rng):
    """noded is not on the data path: killed under writes, the writes go
    on mirrored, and activate-disks after its restart copies nothing."""
    disk = _Add(nc, "crash3")
    node2 = nc.nodes[NODE2]
    try:
        writer = _Writer(nc, NODE2, disk)
        _KillAfterRandomWrites(writer, crash_rng,
                               lambda: node2.KillDaemon("ganeti-noded"))
        writer.WaitAcked(writer.acked + 20)
        writer.Finish()
        node2.StartNoded()
        copied = _Activate(nc, "crash3", NODE3)
        assert copied < MIB, copied
        _CheckCounter(_DeviceData(nc, NODE2, disk), writer.acked)
        nc.Run("gnt-instance", "shutdown", "crash3", timeout=120)
        image = _Image(nc, NODE3, disk)
        _Check(image)
        _CheckCounter(_ImageData(image), writer.acked)
        assert _Digest(_ImageData(image)) == \
            _Digest(_ImageData(_Image(nc, NODE2, disk)))
    finally:
        if not node2.IsRunning("ganeti-noded"):
            node2.StartNoded()
        RemoveInstances(nc, "crash3")

