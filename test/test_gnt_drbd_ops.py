"""grow-disk, gnt-cluster verify-disks, gnt-node list-drbd, gnt-node
migrate and evacuate, the failover of a stopped instance and
gnt-instance change-group for drbd instances, on a real virtual cluster.

The pairs run their real mirror daemons (qemu-storage-daemon); the
checks look where the effects land: the images' sizes as qemu-img reads
them, the primary's device, the daemons' pid files, the configuration.
"""

import json
import os
import re
import socket
import subprocess

import pytest

from ganeti import pathutils
from ganeti.storage import drbd, drbd_daemon
from ganeti.utils import process

import test_gnt_instance_drbd as drbd_tests
from testutils_instance import (FILE_VDIR, MIB, NODE2, NODE3,
                                AllowFileStorage, Config, FindInstance,
                                InstanceCluster, NodeUuid, PrimaryNode,
                                RemoveInstances)
from test_gnt_instance_drbd import (SIZE, _Add, _Contents, _Device, _Image,
                                    _WaitInSync)

pytestmark = drbd_tests.pytestmark

NODE4 = "node4.example.test"
# The test instances' size in a new group (the default policy wants more)
_SMALL_SPECS = ("min:memory-size=64,cpu-count=1,disk-count=1,disk-size=1,"
                "nic-count=1,spindle-use=1/max:memory-size=32768,"
                "cpu-count=8,disk-count=16,disk-size=1048576,nic-count=8,"
                "spindle-use=12")


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--enabled-disk-templates=drbd,file") as cluster:
        yield cluster


def _VirtualSize(image):
    out = subprocess.run([drbd.QEMU_IMG, "info", "-U", "--output=json",
                          image], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["virtual-size"]


def _SecondaryPidFile(cluster, node, disk):
    return cluster.nodes[node].NodePath(os.path.join(
        pathutils.DRBD_RUN_DIR, "d%d.pid" % disk["logical_id"][2]))


def _Fill(path, offset_mib, seed):
    with open(path, "r+b") as fobj:
        fobj.seek(offset_mib * MIB)
        fobj.write(seed.encode() * (MIB // len(seed)))
        fobj.flush()
        os.fsync(fobj.fileno())


def test_grow_disk_running_then_stopped(vc):
    _Add(vc, "grow1", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "grow1")
        device = _Device(vc, vc.node, disk)
        _Fill(device, 1, "before grow ")
        out = vc.Run("gnt-instance", "grow-disk", "--ignore-ipolicy",
                     "grow1", "0", "16M", timeout=180).stdout
        assert "Growing disk 0 of instance 'grow1' by 16M to 32M" in out, out
        # The instance (fake hypervisor) runs on; both sides grew
        assert vc.Run("gnt-instance", "list", "--no-headers", "-o",
                      "status", "grow1").stdout.strip() == "running"
        _, (disk, ) = FindInstance(vc, "grow1")
        assert disk["size"] == 2 * SIZE
        assert os.path.getsize(device) == 2 * SIZE * MIB
        for node in (vc.node, NODE2):
            assert _VirtualSize(_Image(vc, node, disk)) == 2 * SIZE * MIB
        # The mirror covers the new part too
        _Fill(device, 2 * SIZE - 1, "after grow ")
        info = vc.Run("gnt-instance", "info", "grow1").stdout
        assert "disk/0: drbd, size 32M" in info, info
        assert drbd_tests._DiskLine(info, "primary").endswith(
            " in sync, status ok"), info

        # Stopped: the disk activated for the grow is shut down again
        vc.Run("gnt-instance", "shutdown", "grow1", timeout=120)
        vc.Run("gnt-instance", "grow-disk", "--ignore-ipolicy",
               "--absolute", "grow1", "0", "48M", timeout=180)
        assert not os.path.exists(device)
        assert not os.path.exists(_SecondaryPidFile(vc, NODE2, disk))
        for node in (vc.node, NODE2):
            assert _VirtualSize(_Image(vc, node, disk)) == 3 * SIZE * MIB
        assert _Contents(_Image(vc, vc.node, disk)) == \
            _Contents(_Image(vc, NODE2, disk))
        vc.Run("gnt-instance", "startup", "grow1", timeout=120)
        assert os.path.getsize(device) == 3 * SIZE * MIB
        with open(device, "rb") as fobj:
            fobj.seek(MIB)
            assert fobj.read(12) == b"before grow "
            fobj.seek((2 * SIZE - 1) * MIB)
            assert fobj.read(11) == b"after grow "
    finally:
        RemoveInstances(vc, "grow1")


def test_verify_disks(vc):
    _Add(vc, "vd1", vc.node, NODE2)
    try:
        result = vc.Run("gnt-cluster", "verify-disks", timeout=120)
        assert "No disks need to be activated." in result.stdout, \
            result.stdout

        # The secondary's server dies: activate-disks serves it again
        _, (disk, ) = FindInstance(vc, "vd1")
        pid_file = _SecondaryPidFile(vc, NODE2, disk)
        process.KillProcess(process.ReadPidFile(pid_file), timeout=15)
        result = vc.Run("gnt-cluster", "verify-disks", timeout=120)
        assert "Activating disks for instance 'vd1'" in result.stdout, \
            result.stdout
        assert process.IsProcessAlive(process.ReadPidFile(pid_file))
        assert "Instance vd1's disks are in sync" in _WaitInSync(vc, "vd1")
        result = vc.Run("gnt-cluster", "verify-disks", timeout=120)
        assert "No disks need to be activated." in result.stdout, \
            result.stdout

        # The secondary's image is gone: reported, not activated
        os.unlink(_Image(vc, NODE2, disk))
        result = vc.Run("gnt-cluster", "verify-disks", check=False,
                        timeout=120)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Instance vd1 has missing logical volumes:\n\t%s %s\n" % (
            NODE2, os.path.join(FILE_VDIR, "drbd", "%s.qcow2" %
                                disk["uuid"])) in result.stdout, \
            result.stdout
        assert "You need to replace or recreate disks for all the above" \
            " instances if this message persists after fixing broken" \
            " nodes." in result.stdout, result.stdout
        assert "Activating disks" not in result.stdout, result.stdout
    finally:
        RemoveInstances(vc, "vd1")


def _DrbdFindings(cluster):
    out = cluster.Run("gnt-cluster", "verify", "--error-codes", check=False,
                      timeout=120).stdout
    # After the job log's time stamp
    return sorted(line.split(" - ", 1)[1] for line in out.splitlines()
                  if ":ENODEDRBD:" in line)


def test_verify_drbd_daemons(vc, tmp_path):
    """gnt-cluster verify compares the block daemons running on each node
    with the configuration, as Ganeti compares the DRBD minors."""
    _Add(vc, "vdd1", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "vdd1")
        port = disk["logical_id"][2]
        pminor, sminor = disk["logical_id"][3:5]
        attached = "(attached in instance 'vdd1')"
        assert _DrbdFindings(vc) == []

        # The secondary's daemon is gone, the primary's device too
        process.KillProcess(process.ReadPidFile(
            _SecondaryPidFile(vc, NODE2, disk)), timeout=15)
        process.KillProcess(process.ReadPidFile(vc.nodes[vc.node].NodePath(
            os.path.join(pathutils.DRBD_RUN_DIR, "d%d.fuse.pid" % port))),
            timeout=15)
        assert _DrbdFindings(vc) == sorted([
            "ERROR:ENODEDRBD:node:%s:drbd minor %d of disk %s %s has no"
            " device on its primary node" % (vc.node, pminor, disk["uuid"],
                                             attached),
            "ERROR:ENODEDRBD:node:%s:drbd minor %d of disk %s %s is not"
            " active" % (NODE2, sminor, disk["uuid"], attached)])

        # A daemon left on a node the disk is not on (as replace-disks -n
        # would leave one on an unreachable old secondary)
        image = str(tmp_path / ("%s.qcow2" % disk["uuid"]))
        subprocess.run([drbd.QEMU_IMG, "create", "-q", "-f", "qcow2", image,
                        "1M"], check=True)
        stray_pid = vc.nodes[NODE3].NodePath(os.path.join(
            pathutils.DRBD_RUN_DIR, "d%d.pid" % port))
        os.makedirs(os.path.dirname(stray_pid), exist_ok=True)
        subprocess.run([drbd_daemon.QSD, "--blockdev", json.dumps({
            "driver": "qcow2", "node-name": drbd_daemon.LOCAL,
            "file": {"driver": "file", "filename": image}}),
            "--pidfile", stray_pid, "--daemonize"], check=True)
        try:
            vc.Run("gnt-instance", "activate-disks", "vdd1", timeout=120)
            assert _DrbdFindings(vc) == [
                "ERROR:ENODEDRBD:node:%s:unallocated drbd minor (port %d)"
                " is in use by the daemon of disk %s" % (NODE3, port,
                                                        disk["uuid"])]
        finally:
            drbd_daemon.StopDaemon(stray_pid)
        assert _DrbdFindings(vc) == []
    finally:
        RemoveInstances(vc, "vdd1")


def _DrbdRows(cluster, node):
    out = cluster.Run("gnt-node", "list-drbd", "--no-headers",
                      "--separator=|", node).stdout
    return sorted(line.split("|") for line in out.splitlines())


def _Minor(cluster, name, node):
    _, (disk, ) = FindInstance(cluster, name)
    return str(disk["logical_id"][3 + disk["logical_id"][:2].index(
        NodeUuid(cluster, node))])


def test_list_drbd_and_evacuate_secondaries(vc):
    _Add(vc, "ev1", vc.node, NODE2)
    _Add(vc, "ev2", NODE2, NODE3)
    try:
        out = vc.Run("gnt-node", "list-drbd", NODE2).stdout
        assert out.split("\n")[0].split() == [
            "Node", "Minor", "Instance", "Disk", "Role", "PeerNode"], out
        assert _DrbdRows(vc, NODE2) == [
            [NODE2, _Minor(vc, "ev1", NODE2), "ev1", "disk/0", "secondary",
             vc.node],
            [NODE2, _Minor(vc, "ev2", NODE2), "ev2", "disk/0", "primary",
             NODE3]]
        assert vc.Run("gnt-node", "list-drbd", "nosuchnode",
                      check=False).returncode != 0

        # A new secondary that is the primary of an instance is refused
        result = vc.Run("gnt-node", "evacuate", "-f", "-s", "-n", vc.node,
                        NODE2, check=False, timeout=120)
        assert result.returncode != 0
        assert "Node %s is the primary node of instance ev1, cannot use it" \
            " as secondary" % vc.node in result.stderr, result.stderr

        # -s -n: the secondaries move (replace-disks), the primaries stay
        old_image = _Image(vc, NODE2, FindInstance(vc, "ev1")[1][0])
        out = vc.Run("gnt-node", "evacuate", "-f", "-s", "-n", NODE3, NODE2,
                     timeout=300).stdout
        assert "All instances evacuated successfully." in out, out
        _, (disk, ) = FindInstance(vc, "ev1")
        assert disk["nodes"] == [NodeUuid(vc, vc.node), NodeUuid(vc, NODE3)]
        assert not os.path.exists(old_image)
        assert PrimaryNode(vc, "ev2") == NODE2
        assert _DrbdRows(vc, NODE2) == [
            [NODE2, _Minor(vc, "ev2", NODE2), "ev2", "disk/0", "primary",
             NODE3]]
        assert _DrbdRows(vc, NODE3) == sorted([
            [NODE3, _Minor(vc, "ev1", NODE3), "ev1", "disk/0", "secondary",
             vc.node],
            [NODE3, _Minor(vc, "ev2", NODE3), "ev2", "disk/0", "secondary",
             NODE2]])
        vc.Run("gnt-instance", "shutdown", "ev1", timeout=120)
        assert _Contents(_Image(vc, vc.node, disk)) == \
            _Contents(_Image(vc, NODE3, disk))
        ports = {d["logical_id"][2] for d in Config(vc)["disks"].values()}
        assert len(ports) == 2
    finally:
        RemoveInstances(vc, "ev1", "ev2")


def _Pair(cluster, name):
    """The instance's (primary, secondary) node names."""
    _, (disk, ) = FindInstance(cluster, name)
    names = {NodeUuid(cluster, node): node for node in cluster.nodes}
    return tuple(names[uuid] for uuid in disk["nodes"])


def test_node_migrate_and_evacuate(vc):
    _Add(vc, "nm1", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "nm1")
        _Fill(_Device(vc, vc.node, disk), 1, "before the moves ")
        # To the secondary: the cluster's default allocator, which a drbd
        # migration refuses, is not passed on
        out = vc.Run("gnt-node", "migrate", "-f", vc.node,
                     timeout=300).stdout
        assert "All instances migrated successfully." in out, out
        assert _Pair(vc, "nm1") == (NODE2, vc.node)
        # Through the allocator, which sees the drbd images' file storage
        out = vc.Run("gnt-node", "evacuate", "-f", "-p", NODE2,
                     timeout=300).stdout
        assert "All instances evacuated successfully." in out, out
        assert _Pair(vc, "nm1") == (vc.node, NODE2)
        # -n of a primary: to its secondary, the named node the new one
        out = vc.Run("gnt-node", "evacuate", "-f", "-n", NODE3, vc.node,
                     timeout=300).stdout
        assert "All instances evacuated successfully." in out, out
        assert _Pair(vc, "nm1") == (NODE2, NODE3)
        assert vc.Run("gnt-instance", "list", "--no-headers", "-o",
                      "status", "nm1").stdout.strip() == "running"
        result = vc.Run("gnt-node", "evacuate", "-f", "-n", NODE3, NODE2,
                        check=False, timeout=120)
        assert result.returncode != 0
        assert "Node %s is the secondary node of instance nm1, cannot use" \
            " it as the new secondary" % NODE3 in result.stderr, \
            result.stderr
        # The allocator's new secondary: the only node left
        out = vc.Run("gnt-instance", "replace-disks", "-I", ".", "nm1",
                     timeout=300).stdout
        assert "Selected new secondary for instance 'nm1': %s" % vc.node \
            in out, out
        assert _Pair(vc, "nm1") == (NODE2, vc.node)
        vc.Run("gnt-instance", "shutdown", "nm1", timeout=120)
        _, (disk, ) = FindInstance(vc, "nm1")
        assert _Contents(_Image(vc, NODE2, disk)) == \
            _Contents(_Image(vc, vc.node, disk))
    finally:
        RemoveInstances(vc, "nm1")


def test_failover_of_stopped_instance_syncs_first(vc):
    """Disks down, the secondary's image lacks writes done while it was
    away: the failover assembles the pair and resyncs before the switch
    (skipping the check, as Ganeti does for DRBD, would lose them)."""
    _Add(vc, "sf1", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "sf1")
        pid = process.ReadPidFile(_SecondaryPidFile(vc, NODE2, disk))
        process.KillProcess(pid)
        _Fill(_Device(vc, vc.node, disk), 2, "written while degraded ")
        vc.Run("gnt-instance", "shutdown", "sf1", timeout=120)
        expected = _Contents(_Image(vc, vc.node, disk))
        assert _Contents(_Image(vc, NODE2, disk)) != expected
        out = vc.Run("gnt-instance", "failover", "-f", "sf1",
                     timeout=300).stdout
        assert "* activating the instance's disks to check their" \
            " consistency" in out, out
        assert _Pair(vc, "sf1") == (NODE2, vc.node)
        assert _Contents(_Image(vc, NODE2, disk)) == expected
        # Both roles down again, as before the failover
        for node in (vc.node, NODE2):
            assert not process.IsProcessAlive(process.ReadPidFile(
                _SecondaryPidFile(vc, node, disk)))
    finally:
        RemoveInstances(vc, "sf1")


def test_evacuate_all_and_change_group(vc):
    """Last in the module: it adds a fourth node (a pair needs two nodes
    besides the evacuated ones, and two in the new group)."""
    node4 = vc.AddNode(NODE4)
    AllowFileStorage(node4, FILE_VDIR)
    _Add(vc, "cg1", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "cg1")
        _Fill(_Device(vc, vc.node, disk), 1, "before the evacuation ")
        expected = _Contents(_Image(vc, vc.node, disk))
        # Mode all through the allocator: a new pair on the other nodes
        # (new secondary, migration or failover to it, new secondary)
        out = vc.Run("gnt-node", "evacuate", "-f", vc.node,
                     timeout=600).stdout
        assert "All instances evacuated successfully." in out, out
        assert sorted(_Pair(vc, "cg1")) == [NODE3, NODE4]
        assert vc.Run("gnt-instance", "list", "--no-headers", "-o",
                      "status", "cg1").stdout.strip() == "running"
        vc.Run("gnt-group", "add", "--ipolicy-bounds-specs", _SMALL_SPECS,
               "g2")
        vc.Run("gnt-group", "assign-nodes", "g2", vc.node, NODE2)
        out = vc.Run("gnt-instance", "change-group", "--to", "g2", "cg1",
                     timeout=600).stdout
        assert "Instance 'cg1' changed group successfully." in out, out
        assert sorted(_Pair(vc, "cg1")) == sorted([vc.node, NODE2])
        vc.Run("gnt-instance", "shutdown", "cg1", timeout=120)
        _, (disk, ) = FindInstance(vc, "cg1")
        for node in _Pair(vc, "cg1"):
            assert _Contents(_Image(vc, node, disk)) == expected, node
    finally:
        RemoveInstances(vc, "cg1")
        vc.Run("gnt-group", "assign-nodes", "default", vc.node, NODE2,
               check=False)


def _DrbdImages(cluster, disk):
    """The drbd images on the primary and NODE2 (names per node)."""
    return [sorted(os.listdir(os.path.dirname(_Image(cluster, node, disk))))
            for node in (cluster.node, NODE2)]


def _Pool(cluster):
    cluster_conf = Config(cluster)["cluster"]
    return (cluster_conf["tcpudp_port_pool"],
            cluster_conf["highest_used_port"])


def test_modify_add_and_remove_disks(vc):
    _Add(vc, "ad1", vc.node, NODE2)
    try:
        # Running: the new disk is created on both nodes and stays active
        out = vc.Run("gnt-instance", "modify", "--ignore-ipolicy", "--disk",
                     "add:size=%dM" % SIZE, "ad1", timeout=120).stdout
        assert " - disk/1 -> add:size=%d,mode=rw" % SIZE in out, out
        _, (disk0, disk1) = FindInstance(vc, "ad1")
        assert disk1["dev_type"] == "drbd"
        assert disk1["nodes"] == disk0["nodes"] == \
            [NodeUuid(vc, vc.node), NodeUuid(vc, NODE2)]
        port = disk1["logical_id"][2]
        assert port != disk0["logical_id"][2]
        info = vc.Run("gnt-instance", "info", "ad1").stdout
        block = info[info.index("disk/1: drbd, size 16M"):]
        assert re.search(r"nodeA: %s, minor=\d+\s+nodeB: %s, minor=\d+\s+"
                         r"port: %d\s" % (vc.node, NODE2, port), block), info
        device = _Device(vc, vc.node, disk1)
        drbd_tests._Write(device, "added disk")
        vc.Run("gnt-instance", "shutdown", "ad1", timeout=120)
        assert _Contents(_Image(vc, vc.node, disk1)) == \
            _Contents(_Image(vc, NODE2, disk1))

        # Too big for the nodes: refused, nothing left anywhere
        images, pool = _DrbdImages(vc, disk0), _Pool(vc)
        result = vc.Run("gnt-instance", "modify", "--ignore-ipolicy",
                        "--disk", "add:size=100T", "ad1", check=False)
        assert result.returncode == 1
        assert "Not enough disk space on target node" in result.stderr, \
            result.stderr
        # The next port is taken on the secondary: its creation fails
        # after the port was allocated, which goes back to the pool
        next_port = min(pool[0]) if pool[0] else pool[1] + 1
        with socket.socket() as blocker:
            blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            blocker.bind(("", next_port))
            blocker.listen()
            result = vc.Run("gnt-instance", "modify", "--ignore-ipolicy",
                            "--disk", "add:size=%dM" % SIZE, "ad1",
                            check=False, timeout=120)
        assert result.returncode == 1, result.stdout
        assert "Can't serve block device disk/2" in result.stderr, \
            result.stderr
        assert len(FindInstance(vc, "ad1")[1]) == 2
        assert _DrbdImages(vc, disk0) == images
        assert next_port in _Pool(vc)[0]

        # Stopped: created and in sync, then shut down on both nodes
        vc.Run("gnt-instance", "modify", "--ignore-ipolicy", "--disk",
               "add:size=%dM" % SIZE, "ad1", timeout=120)
        _, (_, _, disk2) = FindInstance(vc, "ad1")
        assert not os.path.exists(_Device(vc, vc.node, disk2))
        assert not os.path.exists(_SecondaryPidFile(vc, NODE2, disk2))
        assert _Contents(_Image(vc, vc.node, disk2)) == \
            _Contents(_Image(vc, NODE2, disk2))

        out = vc.Run("gnt-instance", "modify", "--ignore-ipolicy",
                     "--disk", "2:remove", "--disk", "1:remove", "ad1",
                     timeout=120).stdout
        assert " - disk/1 -> remove" in out, out
        _, disks = FindInstance(vc, "ad1")
        assert [disk["uuid"] for disk in disks] == [disk0["uuid"]]
        for node in (vc.node, NODE2):
            for disk in (disk1, disk2):
                assert not os.path.exists(_Image(vc, node, disk))
        assert {port, disk2["logical_id"][2]} <= set(_Pool(vc)[0])
        vc.Run("gnt-instance", "startup", "ad1", timeout=120)
    finally:
        RemoveInstances(vc, "ad1")
