"""The drbd template through gnt-instance on a real virtual cluster.

Each node's mirror daemons (qemu-storage-daemon) listen on the node's own
loopback address; the data written through the primary's FUSE device
must be in the secondary's image (compared with checksums of what
qemu-img reads), and survive a failover, also one whose primary's noded
is dead.
"""

import hashlib
import os
import shutil
import subprocess

import pytest

from ganeti import constants, pathutils
from ganeti.storage import drbd

from testutils_instance import (CHECKS, FILE_VDIR, MIB, NODE2, NODE3,
                                Config, FindInstance, InstanceCluster,
                                NodeUuid, PrimaryNode, RemoveInstances)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which(drbd.QSD) is None or
                       shutil.which(drbd.QEMU_IMG) is None,
                       reason="qemu-storage-daemon/qemu-img not installed"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"),
                       reason="no /dev/fuse for FUSE block exports"),
]

SIZE = 16


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--enabled-disk-templates=drbd,file") as cluster:
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
    _Add(vc, "drbd1", vc.node, NODE2)
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
