"""A KVM guest on a drbd disk, on a two-node virtual cluster.

QEMU attaches to the primary's image daemon (its NBD export on a Unix
socket, no FUSE file nor device daemon in between); the guest's writes
reach both images. The
guest, writing a disk heartbeat (a counter written and synced five times
a second), migrates to the secondary (non-live under TCG): the heartbeat
and the data go on there, the old primary's image becomes the replica,
and the new primary's mirror copied only what the guest wrote since (its
job's byte count), not the disk; there QEMU attaches to the device
daemon, as the image daemon serves the old primary over TLS. On the new
primary it reboots soft, hard and full: its data stays and the mirror
stays in sync, and after the full reboot (the disks opened again) QEMU
attaches to the image daemon again. grow-disk restarts the block daemons
under the running guest, whose disk goes on working (QEMU's NBD client
connects to the new ones).
"""

import os
import time

import pytest

from test_gnt_instance_drbd import _DiskLine
from test_gnt_instance_drbd_migrate import MirrorJob
from test_hv_kvm_migration import _Ask, _Status, _Type
from testutils_instance import (CHECKS, FILE_VDIR, MIB, NODE1, NODE2,
                                Field, FindInstance, RemoveInstances)
from testutils_cluster import WaitFor
from testutils_kvm import HEARTBEAT_LOOP, NodeHv, SerialLog
from testutils_node import DRBD_TOOLS

pytestmark = [pytest.mark.integration, pytest.mark.kvm, *DRBD_TOOLS,
              pytest.mark.kvm_cluster(
                  init_args=("--enabled-disk-templates=drbd,file", ))]

NAME = "kvmdrbd1"
DISK_MIB = 64


def _BothInSync(vc) -> bool:
    """Whether gnt-instance info shows the disk in sync on both nodes."""
    info = vc.Run("gnt-instance", "info", NAME).stdout
    return all(_DiskLine(info, role).endswith(" in sync, status ok")
               for role in ("primary", "secondary"))


def _Image(cluster, node, disk):
    return cluster.nodes[node].NodePath(os.path.join(
        FILE_VDIR, "drbd", "%s.qcow2" % disk["uuid"]))


def _Contains(path, marker):
    with open(path, "rb") as fobj:
        return marker.encode() in fobj.read()


def _WaitReady(kvm, count):
    WaitFor(lambda: SerialLog(kvm, NAME).count(
        "tinyimage %s ready" % NAME) >= count, 90,
        "the guest's ready line (%d)" % count)


def _DriveSocket(kvm):
    """The file name of the Unix socket QEMU's disk 0 attaches to."""
    (drive, ) = [arg for arg in kvm.LoadRuntime(NAME)["cmd"]
                 if "id=disk0" in arg]
    server = drive.split(",")[0]
    assert server.startswith("file=nbd+unix:///disk?socket="), drive
    return os.path.basename(server)


def _Heartbeat(kvm):
    return int(_Ask(kvm, "cat /root/hb", "H%d" % time.monotonic_ns(),
                    name=NAME))


def test_kvm_guest_on_drbd_migrates(kvm_cluster):
    vc = kvm_cluster
    node1, node2 = NodeHv(vc.nodes[NODE1]), NodeHv(vc.nodes[NODE2])
    try:
        vc.Run("gnt-instance", "add", "-t", "drbd", "-o", "tinyimage",
               "-n", "%s:%s" % (NODE1, NODE2), "--disk",
               "0:size=%dM" % DISK_MIB, "--no-nics", "-B",
               "maxmem=128,minmem=128", *CHECKS, NAME, timeout=180)
        _, (disk, ) = FindInstance(vc, NAME)
        WaitFor(lambda: "tinyimage %s ready" % NAME in
                SerialLog(node1, NAME), 90, "the guest's ready line")
        port = disk["logical_id"][2]
        assert _DriveSocket(node1) == "d%d.img" % port
        _Type(node1, "echo on-node1-$((6*7)) > /root/where; sync", NAME)
        for node in (NODE1, NODE2):
            WaitFor(lambda node=node: _Contains(_Image(vc, node, disk),
                                                "on-node1-42"),
                    10, "the guest's write in the image on %s" % node)
        _Type(node1, HEARTBEAT_LOOP, NAME)
        WaitFor(lambda: _Heartbeat(node1) > 0, 20, "the heartbeat")
        beat = _Heartbeat(node1)

        out = vc.Run("gnt-instance", "migrate", "-f", NAME,
                     timeout=300).stdout
        assert "* closing the instance's disks on %s" % NODE1 in out, out
        assert Field(vc, NAME, "pnode,snodes,status") == \
            "%s|%s|running" % (NODE2, NODE1)
        assert node1.ListInstances() == [] and \
            node2.ListInstances() == [NAME]
        assert _Status(node2, NAME) == "running"
        assert _DriveSocket(node2) == "d%d.nbd" % port
        after = _Heartbeat(node2)
        assert after > beat
        WaitFor(lambda: _Heartbeat(node2) > after, 20,
                "the heartbeat to go on")
        assert _Ask(node2, "cat /root/where", "W1", name=NAME) == \
            "on-node1-42"
        # The old primary mirrors no more; the new one copied only the
        # heartbeat's blocks since (a few KiB each), not the disk
        assert MirrorJob(vc, NODE1, disk) is None
        job = MirrorJob(vc, NODE2, disk)
        assert job is not None and job["ready"], job
        assert job["offset"] < DISK_MIB * MIB // 8, job
        _Type(node2, "echo on-node2-$((6*7)) > /root/where2; sync", NAME)
        for node in (NODE1, NODE2):
            WaitFor(lambda node=node: _Contains(_Image(vc, node, disk),
                                                "on-node2-42"),
                    10, "the guest's write in the image on %s" % node)

        # Stopped and started again on the new primary: same data
        vc.Run("gnt-instance", "shutdown", "--timeout=0", NAME, timeout=120)
        vc.Run("gnt-instance", "startup", NAME, timeout=120)
        WaitFor(lambda: SerialLog(node2, NAME).count(
            "tinyimage %s ready" % NAME) >= 1, 90, "the guest's ready line")
        assert _Ask(node2, "cat /root/where2", "W2", name=NAME) == \
            "on-node2-42"

        # Reboots: soft (a reset in the same QEMU), hard (a new QEMU on
        # the same export, the old one killed) and full (the disks closed
        # and opened again); the data stays, the mirror is in sync
        pid = node2._Pid(NAME)
        ready = SerialLog(node2, NAME).count("tinyimage %s ready" % NAME)
        vc.Run("gnt-instance", "reboot", "--type=soft", NAME, timeout=120)
        _WaitReady(node2, ready + 1)
        assert node2._Pid(NAME) == pid
        for kind in ("hard", "full"):
            vc.Run("gnt-instance", "reboot", "--type=%s" % kind,
                   "--shutdown-timeout=0", NAME, timeout=120)
            assert node2._Pid(NAME) not in (None, pid)
            pid = node2._Pid(NAME)
            # A new QEMU starts a new serial log
            _WaitReady(node2, 1)
            assert _Ask(node2, "cat /root/where2", kind, name=NAME) == \
                "on-node2-42"
            _Type(node2, "echo after-%s-$((6*7)) > /root/%s; sync" %
                  (kind, kind), NAME)
            for node in (NODE1, NODE2):
                WaitFor(lambda node=node, kind=kind: _Contains(
                    _Image(vc, node, disk), "after-%s-42" % kind), 10,
                    "the guest's write in the image on %s" % node)

        # grow-disk restarts the block daemons under the running guest:
        # QEMU's NBD client holds its requests and connects again, the
        # guest goes on writing and reading its disk
        _Type(node2, HEARTBEAT_LOOP, NAME)
        WaitFor(lambda: _Heartbeat(node2) > 0, 20, "the heartbeat")
        vc.Run("gnt-instance", "grow-disk", NAME, "0", "16M", timeout=180)
        assert Field(vc, NAME, "disk.size/0") == str(DISK_MIB + 16)
        beat = _Heartbeat(node2)
        WaitFor(lambda: _Heartbeat(node2) > beat, 30,
                "the heartbeat to go on after grow-disk")
        _Type(node2, "echo after-grow-$((6*7)) > /root/grow; sync", NAME)
        for node in (NODE1, NODE2):
            WaitFor(lambda node=node: _Contains(
                _Image(vc, node, disk), "after-grow-42"), 30,
                "the guest's write in the image on %s" % node)
        assert _Ask(node2, "echo 3 > /proc/sys/vm/drop_caches;"
                    " cat /root/where2", "G1", name=NAME) == "on-node2-42"
        assert _Ask(node2, "dmesg | grep -c -i 'i/o error'", "G2",
                    name=NAME) == "0"
        assert Field(vc, NAME, "pnode,status") == "%s|running" % NODE2
        assert _DriveSocket(node2) == "d%d.img" % port
        # the grown part is synced in the background
        WaitFor(lambda: _BothInSync(vc), 60,
                "both sides of the grown disk in sync")
        job = MirrorJob(vc, NODE2, disk)
        assert job is not None and job["ready"], job
    finally:
        RemoveInstances(vc, NAME, extra=("--shutdown-timeout=0", ))
    assert node1.ListInstances() == [] and node2.ListInstances() == []
