"""gnt-instance migrate of drbd instances on a real virtual cluster.

Both nodes hold the data, so nothing is copied: the old secondary becomes
the primary with its own image under the device and mirrors to the old
primary's image from the first write on. The mirror's job (QMP, on the
new primary's block daemon) counts the bytes it copied: a few written
after the migration, never the whole disk. The fake hypervisor here; a
KVM guest in test_kvm_drbd_migration.
"""

import hashlib
import os

import pytest

from ganeti import pathutils
from ganeti.storage import drbd_daemon
from ganeti.utils import qmp

import test_gnt_instance_drbd as drbd_tests
from testutils_instance import (MIB, NODE2, FakeState, Field, FindInstance,
                                InstanceCluster, RemoveInstances)
from test_gnt_instance_drbd import (SIZE, _Add, _Contents, _Device, _Image,
                                    _WaitInSync, _Write)

pytestmark = drbd_tests.pytestmark


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--enabled-disk-templates=drbd,file") as cluster:
        yield cluster


def MirrorJob(cluster, node_name, disk):
    """The mirror job of a node's block daemon (None: not mirroring)."""
    path = cluster.nodes[node_name].NodePath(os.path.join(
        pathutils.DRBD_RUN_DIR, "d%d.qmp" % disk["logical_id"][2]))
    with qmp.QmpConnection(path) as mon:
        return drbd_daemon.MirrorJob(mon)


def _Pattern(seed):
    """The first MiB _Write writes."""
    return hashlib.sha256(seed.encode()).digest() * (MIB // 32)


def _Head(device):
    with open(device, "rb") as fobj:
        return fobj.read(MIB)


def _Migrate(cluster, name, old, new, disk):
    out = cluster.Run("gnt-instance", "migrate", "-f", name,
                      timeout=180).stdout
    assert "* closing the instance's disks on %s" % old in out, out
    assert Field(cluster, name, "pnode,snodes,status") == \
        "%s|%s|running" % (new, old)
    assert os.path.exists(_Device(cluster, new, disk))
    assert not os.path.exists(_Device(cluster, old, disk))
    # The new primary mirrors, the old one only serves its image
    assert MirrorJob(cluster, old, disk) is None
    job = MirrorJob(cluster, new, disk)
    assert job is not None and job["ready"], job
    return job


def test_migrate_back_and_forth_without_copy(vc):
    _Add(vc, "mig1", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "mig1")
        _WaitInSync(vc, "mig1")
        _Write(_Device(vc, vc.node, disk), "first")
        job = _Migrate(vc, "mig1", vc.node, NODE2, disk)
        assert _Head(_Device(vc, NODE2, disk)) == _Pattern("first")
        # Nothing to copy: the images were equal when the roles changed
        assert job["offset"] == 0, job
        _Write(_Device(vc, NODE2, disk), "second")
        job = MirrorJob(vc, NODE2, disk)
        # Only the writes since: 6 of the 16 MiB, each copied once
        assert 0 < job["offset"] <= 6 * MIB < SIZE * MIB, job
        job = _Migrate(vc, "mig1", NODE2, vc.node, disk)
        assert job["offset"] == 0, job
        assert _Head(_Device(vc, vc.node, disk)) == _Pattern("second")
        _Write(_Device(vc, vc.node, disk), "third")
        assert _Head(_Device(vc, vc.node, disk)) == _Pattern("third")
        vc.Run("gnt-instance", "shutdown", "mig1", timeout=120)
        assert _Contents(_Image(vc, vc.node, disk)) == \
            _Contents(_Image(vc, NODE2, disk))
    finally:
        RemoveInstances(vc, "mig1")


def test_migrate_refused_while_degraded(vc):
    """The target lacks writes: the migration stops before the guest
    moves, everything stays on the source."""
    _Add(vc, "mig2", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "mig2")
        _WaitInSync(vc, "mig2")
        pid_file = vc.nodes[NODE2].NodePath(os.path.join(
            pathutils.DRBD_RUN_DIR, "d%d.pid" % disk["logical_id"][2]))
        drbd_daemon.StopDaemon(pid_file)
        _Write(_Device(vc, vc.node, disk), "degraded")
        out = vc.Run("gnt-instance", "migrate", "-f", "mig2",
                     check=False, timeout=180)
        assert out.returncode != 0
        assert "not fully synchronized on target node, aborting" \
            " migration" in out.stdout + out.stderr
        assert Field(vc, "mig2", "pnode,status") == "%s|running" % vc.node
        assert os.path.exists(_Device(vc, vc.node, disk))
    finally:
        RemoveInstances(vc, "mig2")


def test_cleanup_after_interrupted_migration(vc):
    """The source fails to finalize after the disks changed roles (the
    source closed them, the target opened them): --cleanup makes the
    configuration and the pair follow where the instance runs, the data
    written before is on both nodes and the mirror in sync."""
    _Add(vc, "mig3", vc.node, NODE2)
    marker = FakeState(vc.nodes[vc.node], ".fail-finalize-src")
    try:
        _, (disk, ) = FindInstance(vc, "mig3")
        _WaitInSync(vc, "mig3")
        _Write(_Device(vc, vc.node, disk), "before")
        open(marker, "w").close()
        out = vc.Run("gnt-instance", "migrate", "-f", "mig3", check=False,
                     timeout=180)
        assert out.returncode != 0
        assert "run 'gnt-instance migrate --cleanup -n %s mig3'" % NODE2 \
            in out.stderr, out.stderr
        os.unlink(marker)
        out = vc.Run("gnt-instance", "migrate", "-f", "--cleanup", "mig3",
                     timeout=180)
        assert "* instance confirmed to be running on its primary node" \
            " (%s)" % vc.node in out.stdout, out.stdout
        assert "WARNING" not in out.stdout + out.stderr, out
        assert Field(vc, "mig3", "pnode,snodes,status") == \
            "%s|%s|running" % (vc.node, NODE2)
        # The source, closed before the failure, is the primary again and
        # mirrors to the target without a copy; the target only serves
        assert not os.path.exists(_Device(vc, NODE2, disk))
        assert MirrorJob(vc, NODE2, disk) is None
        job = MirrorJob(vc, vc.node, disk)
        assert job is not None and job["ready"] and job["offset"] == 0, job
        assert _Head(_Device(vc, vc.node, disk)) == _Pattern("before")
        _Write(_Device(vc, vc.node, disk), "after")
        vc.Run("gnt-instance", "shutdown", "mig3", timeout=120)
        assert _Contents(_Image(vc, vc.node, disk)) == \
            _Contents(_Image(vc, NODE2, disk))
    finally:
        if os.path.exists(marker):
            os.unlink(marker)
        RemoveInstances(vc, "mig3")
