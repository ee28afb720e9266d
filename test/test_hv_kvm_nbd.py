"""Live migration of KVM instances whose disks only the source reaches.

The source mirrors each local (``file``) disk over NBD into a new, empty
image that the paused target QEMU exports, then sends the memory; the
guest goes on on the target's images. Two KVMHypervisor objects with
their own roots and images play source (127.0.0.1) and target
(127.0.0.2); the guest's files, read back through its serial console,
show that the data came along, and marker strings searched in the raw
images show which image the guest writes to afterwards.

At the end, gnt-instance migrate moves a kvm ``file`` instance between
the two nodes of a virtual cluster: the configuration, the disk files and
the guest follow, and a migration that can't start leaves all on the
source.
"""

import hashlib
import os
import shutil
import socket
import time

import pytest

from ganeti import constants, errors, objects
from ganeti.hypervisor import hv_kvm

from test_hv_kvm_migration import (NAME, _Ask, _Status, _Type,
                                   _WaitMigration)
from testutils_instance import (CHECKS, NODE1, NODE2, DiskPaths, Field,
                                FindInstance, NodeUuid, RemoveInstances)
from testutils_cluster import WaitFor
from testutils_kvm import (Disk, GuestHvParams, GuestRoot, Instance,
                           KillGuests, NodeHv, RequireGuest, SerialLog,
                           TinyImageDisk)
from testutils_node import ProcessesMentioning

pytestmark = [pytest.mark.integration, pytest.mark.kvm]

SOURCE = "127.0.0.1"
TARGET = "127.0.0.2"
DISK_MIB = 64


def _FreePorts(address: str) -> int:
    """A free port whose successor (the NBD port) is free too."""
    for _ in range(50):
        with socket.socket() as first, socket.socket() as second:
            first.bind((address, 0))
            port = first.getsockname()[1]
            try:
                second.bind((address, port + 1))
            except OSError:
                continue
            return port
    raise AssertionError("no two consecutive free ports")


def _LocalDisk() -> objects.Disk:
    return Disk(dev_type=constants.DT_FILE, size=DISK_MIB)


def _Contains(path: str, marker: str) -> bool:
    with open(path, "rb") as fobj:
        return marker.encode() in fobj.read()


def _Sha256(path: str) -> str:
    with open(path, "rb") as fobj:
        return hashlib.sha256(fobj.read()).hexdigest()


@pytest.fixture
def pair():
    """A guest running on the source's local image; an empty image of
    the same size for the target."""
    vmlinux, initrd = RequireGuest()
    root = GuestRoot()
    src = hv_kvm.KVMHypervisor(root_dir=os.path.join(root, "src"))
    dst = hv_kvm.KVMHypervisor(root_dir=os.path.join(root, "n" * 40, "dst"))
    try:
        src_image = os.path.join(root, "src-disk0")
        dst_image = os.path.join(root, "dst-disk0")
        TinyImageDisk(src_image, NAME, size_mib=DISK_MIB)
        with open(dst_image, "wb") as fobj:
            fobj.truncate(DISK_MIB * 1024 * 1024)
        inst = Instance(NAME, hvparams=GuestHvParams(
            vmlinux, initrd, migration_port=_FreePorts(TARGET),
            migration_bandwidth=1000), maxmem=128)
        src.StartInstance(inst, [(_LocalDisk(), src_image)], False)
        WaitFor(lambda: "tinyimage %s ready" % NAME in SerialLog(src, NAME),
                60, "the guest's ready message")
        yield src, dst, inst, src_image, dst_image
    finally:
        KillGuests(src)
        KillGuests(dst)
        shutil.rmtree(root, ignore_errors=True)


def _WriteData(kvm, tag: str) -> str:
    """4 MiB of random data and a marker on the guest's disk; the data's
    md5 as the guest computes it."""
    _Type(kvm, "dd if=/dev/urandom of=/root/blob bs=1M count=4 2>/dev/null;"
          " echo marker-before-%s > /root/marker; sync" % tag)
    return _Ask(kvm, "md5sum /root/blob | cut -d' ' -f1", tag + "S")


def test_live_migration_copies_the_disk(pair):
    src, dst, inst, src_image, dst_image = pair
    checksum = _WriteData(src, "A")
    runtime = src.LoadRuntime(NAME)
    assert runtime["disks"][0]["local"] is True

    info = src.MigrationInfo(inst)
    dst.AcceptInstance(inst, info, TARGET, [(_LocalDisk(), dst_image)])
    assert _Status(dst) == "inmigrate"
    assert dst.LoadRuntime(NAME)["nbd"] == "%s:%d" % (
        TARGET, inst.hvparams["migration_port"] + 1)
    started = time.monotonic()
    src.MigrateInstance("cluster", inst, TARGET, True)
    # Written while the disk is being copied
    _Type(src, "echo during-copy > /root/during; sync")
    first = src.GetMigrationStatus(inst)
    assert first["status"] == constants.HV_MIGRATION_ACTIVE
    assert first["total_disk"] > 0
    with pytest.raises(errors.HypervisorError, match="under way"):
        src.MigrateInstance("cluster", inst, TARGET, True)
    status = _WaitMigration(src, inst)
    assert status["status"] == constants.HV_MIGRATION_COMPLETED, status
    # Paused on the target until the source has ended its mirrors
    assert _Status(dst) == "paused"
    src.FinalizeMigrationSource(inst, True, True)
    dst.FinalizeMigrationDst(inst, info, True)
    took = time.monotonic() - started
    print("live migration with a %d MiB local disk: %.2f s (QEMU"
          " downtime %s ms)" % (DISK_MIB, took, status.get("downtime")))

    assert src.ListInstances() == [] and dst.ListInstances() == [NAME]
    assert _Status(dst) == "running"
    runtime = dst.LoadRuntime(NAME)
    assert "nbd" not in runtime and "incoming" not in runtime
    assert runtime["disks"][0]["path"] == dst_image
    assert runtime["disks"][0]["local"] is True
    assert _Ask(dst, "cat /root/marker", "B") == "marker-before-A"
    assert _Ask(dst, "cat /root/during", "C") == "during-copy"
    assert _Ask(dst, "md5sum /root/blob | cut -d' ' -f1", "D") == checksum
    # The guest now writes to the target's image, not the source's
    before = _Sha256(src_image)
    _Type(dst, "echo marker-after-migration > /root/after; sync")
    assert _Ask(dst, "cat /root/after", "E") == "marker-after-migration"
    WaitFor(lambda: _Contains(dst_image, "marker-after-migration"), 10,
            "the marker in the target image")
    assert _Sha256(src_image) == before
    assert not _Contains(src_image, "marker-after-migration")
    # The target's NBD server is gone
    with socket.socket() as sock:
        assert sock.connect_ex(
            (TARGET, inst.hvparams["migration_port"] + 1)) != 0


def test_failures_roll_back(pair):
    src, dst, inst, src_image, dst_image = pair
    info = src.MigrationInfo(inst)

    # The source QEMU knows its disk is local: a shared one on the target
    # is refused
    with pytest.raises(errors.HypervisorError,
                       match="disk0 of instance %s is shared here but"
                       " local on the source" % NAME):
        dst.AcceptInstance(inst, info, TARGET, [(Disk(), dst_image)])
    assert dst.ListInstances() == []

    # NBD port taken: nothing is left running on the target
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind((TARGET, hv_kvm.NbdPort(inst.hvparams)))
        busy.listen()
        with pytest.raises(errors.HypervisorError,
                           match="nbd-server-start failed"):
            dst.AcceptInstance(inst, info, TARGET,
                               [(_LocalDisk(), dst_image)])
    assert dst.ListInstances() == []
    assert os.listdir(dst._dirs["conf"]) == []

    # Target killed while the disk is copied: the mirror (or the memory
    # transfer right after it) fails, the guest goes on on the source
    checksum = _WriteData(src, "F")
    dst.AcceptInstance(inst, info, TARGET, [(_LocalDisk(), dst_image)])
    src.MigrateInstance("cluster", inst, TARGET, True)
    os.kill(dst._Pid(NAME), 9)
    status = _WaitMigration(src, inst)
    assert status["status"] == constants.HV_MIGRATION_FAILED, status
    print("target killed while copying: %s" % status.get("error"))
    dst.FinalizeMigrationDst(inst, info, False)
    src.FinalizeMigrationSource(inst, False, True)
    assert dst.ListInstances() == [] and src.ListInstances() == [NAME]
    assert _Status(src) == "running"
    assert "pending_migration" not in src.LoadRuntime(NAME)
    assert src._Qmp(NAME, "query-jobs") == []
    _Type(src, "echo still-on-source > /root/after; sync")
    assert _Ask(src, "cat /root/after", "G") == "still-on-source"
    WaitFor(lambda: _Contains(src_image, "still-on-source"), 10,
            "the marker in the source image")

    # Non-live, given up by the master after the memory had arrived: the
    # target (paused) is killed, the source resumes on its own image
    dst.AcceptInstance(inst, info, TARGET, [(_LocalDisk(), dst_image)])
    src.MigrateInstance("cluster", inst, TARGET, False)
    assert _Status(src) == "paused"
    assert _WaitMigration(src, inst)["status"] == \
        constants.HV_MIGRATION_COMPLETED
    dst.FinalizeMigrationDst(inst, info, False)
    src.FinalizeMigrationSource(inst, False, False)
    assert dst.ListInstances() == [] and src.ListInstances() == [NAME]
    assert _Status(src) == "running"
    assert src._Qmp(NAME, "query-jobs") == []
    assert _Ask(src, "md5sum /root/blob | cut -d' ' -f1", "H") == checksum
    _Type(src, "echo after-rollback > /root/after2; sync")
    WaitFor(lambda: _Contains(src_image, "after-rollback"), 10,
            "the marker in the source image")


# Through the cluster ------------------------------------------------------

# kvm_cluster: file storage per node
pytestmark.append(pytest.mark.kvm_cluster(
    init_args=("--enabled-disk-templates=file", ),
    hvparams=lambda _: {"migration_port": _FreePorts(SOURCE)}))


def test_gnt_instance_migrate_kvm_file(kvm_cluster):
    name = "kvmnbd1"
    node1, node2 = (NodeHv(kvm_cluster.nodes[node])
                    for node in (NODE1, NODE2))
    try:
        kvm_cluster.Run("gnt-instance", "add", "-t", "file", "-o",
                        "tinyimage", "-n", NODE1, "--disk",
                        "0:size=%dM" % DISK_MIB, "--no-nics", "-B",
                        "maxmem=128,minmem=128", *CHECKS, name, timeout=120)
        WaitFor(lambda: "tinyimage %s ready" % name in
                SerialLog(node1, name), 90, "the guest's ready line")
        _Type(node1, "echo on-node1 > /root/where; sync", name)
        (src_path, ) = DiskPaths(kvm_cluster, name, NODE1)
        (dst_path, ) = DiskPaths(kvm_cluster, name, NODE2)
        assert os.path.exists(src_path) and not os.path.exists(dst_path)

        # The target can't export the disks (its NBD port is taken): the
        # migration fails before anything moved, the target file goes
        nbd_port = int(Field(kvm_cluster, name, "hv/migration_port")) + 1
        with socket.socket() as busy:
            busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            busy.bind((kvm_cluster.nodes[NODE2].node_ip, nbd_port))
            busy.listen()
            result = kvm_cluster.Run("gnt-instance", "migrate", "-f",
                                     "-n", NODE2, name, check=False)
        assert result.returncode != 0
        assert "Could not pre-migrate instance %s" % name in \
            result.stdout + result.stderr, result.stdout
        assert not os.path.exists(dst_path)
        assert os.path.exists(src_path)
        assert node1.ListInstances() == [name]
        assert node2.ListInstances() == []
        assert Field(kvm_cluster, name, "pnode,status") == "%s|running" % NODE1

        started = time.monotonic()
        out = kvm_cluster.Run("gnt-instance", "migrate", "-f", "-n", NODE2,
                              name).stdout
        print("gnt-instance migrate (TCG, so non-live, 128 MiB, %d MiB file"
              " disk): %.2f s" % (DISK_MIB, time.monotonic() - started))
        assert "* creating the instance's disks on %s" % NODE2 in out, out
        assert "* removing the instance's disks on %s" % NODE1 in out, out
        assert Field(kvm_cluster, name, "pnode,status,oper_ram") == \
            "%s|running|128" % NODE2
        inst, disks = FindInstance(kvm_cluster, name)
        assert disks[0]["nodes"] == [NodeUuid(kvm_cluster, NODE2)]
        assert not os.path.exists(src_path)
        assert os.path.exists(dst_path)
        assert node1.ListInstances() == [] and node2.ListInstances() == [name]
        assert _Status(node2, name) == "running"
        assert _Ask(node2, "cat /root/where", "W1", name=name) == "on-node1"
        _Type(node2, "echo on-node2 > /root/where2; sync", name)
        WaitFor(lambda: _Contains(dst_path, "on-node2"), 10,
                "the guest's write in the new disk file")

        # Failover of file disks stays refused
        out = kvm_cluster.Run("gnt-instance", "failover", "-f", "-n", NODE1,
                              name, check=False)
        assert out.returncode != 0
        assert "Instance's disk layout 'file' does not allow failovers" in \
            out.stdout + out.stderr
    finally:
        RemoveInstances(kvm_cluster, name, extra=("--shutdown-timeout=0", ))
    assert node1.ListInstances() == [] and node2.ListInstances() == []
    assert ProcessesMentioning(node2.PidFile(name)) == []
