"""grow-disk, gnt-cluster verify-disks, gnt-node list-drbd and
gnt-node evacuate -s for drbd instances, on a real virtual cluster.

The pairs run their real mirror daemons (qemu-storage-daemon); the
checks look where the effects land: the images' sizes as qemu-img reads
them, the primary's device, the daemons' pid files, the configuration.
"""

import json
import os
import subprocess

import pytest

from ganeti import pathutils
from ganeti.storage import drbd
from ganeti.utils import process

import test_gnt_instance_drbd as drbd_tests
from testutils_instance import (FILE_VDIR, MIB, NODE2, NODE3, Config,
                                FindInstance, InstanceCluster, NodeUuid,
                                PrimaryNode, RemoveInstances)
from test_gnt_instance_drbd import (SIZE, _Add, _Contents, _Device, _Image,
                                    _WaitInSync)

pytestmark = drbd_tests.pytestmark


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
