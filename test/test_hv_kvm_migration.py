"""KVM live and non-live migration between two hypervisor objects.

Two KVMHypervisor objects with their own roots play source and target
node. The target listens on 127.0.0.2, as a virtual cluster's node has
its own loopback address, and its root is deep, as a virtual cluster
node's is (so its sockets live in a short directory elsewhere). The
guest (see testutils_kvm) boots from a tinyimage disk that both sides
open, as a sharedfile disk would be. Commands typed into the serial
console show that the guest keeps running, with its memory and disk, on
whichever side it should.

At the end, gnt-instance migrate moves a kvm sharedfile instance between
the two nodes of a virtual cluster.
"""

import os
import re
import shutil
import socket
import subprocess
import time

import pytest

from ganeti import constants, errors, objects
from ganeti.hypervisor import hv_kvm

from testutils_instance import CHECKS, NODE1, NODE2, Field, RemoveInstances
from testutils_cluster import WaitFor
from testutils_kvm import (Disk, GuestHvParams, GuestRoot, Instance,
                           KillGuests, NodeHv, RequireGuest, SerialLog,
                           TinyImageDisk)
from testutils_node import ProcessesMentioning

pytestmark = [pytest.mark.integration, pytest.mark.kvm]

TARGET = "127.0.0.2"
SOURCE = "127.0.0.1"
NAME = "mig1.example.com"


def _FreePort() -> int:
    with socket.socket() as sock:
        sock.bind((TARGET, 0))
        return sock.getsockname()[1]


@pytest.fixture
def pair():
    """Source and target hypervisors, a guest running on the source."""
    vmlinux, initrd = RequireGuest()
    root = GuestRoot()
    src = hv_kvm.KVMHypervisor(root_dir=os.path.join(root, "src"))
    # Deep, as a virtual cluster's node root: its sockets are elsewhere
    dst = hv_kvm.KVMHypervisor(root_dir=os.path.join(root, "n" * 40, "dst"))
    assert not dst.QmpSocket(NAME).startswith(root)
    try:
        disk_path = os.path.join(root, "shared-disk0")
        TinyImageDisk(disk_path, NAME)
        inst = Instance(NAME, hvparams=GuestHvParams(
            vmlinux, initrd, migration_port=_FreePort()), maxmem=128)
        block_devices = [(Disk(), disk_path)]
        src.StartInstance(inst, block_devices, False)
        WaitFor(lambda: "tinyimage %s ready" % NAME in SerialLog(src, NAME),
                60, "the guest's ready message")
        yield src, dst, inst, block_devices
    finally:
        KillGuests(src)
        KillGuests(dst)
        shutil.rmtree(root, ignore_errors=True)


def _Type(kvm, line: str, name: str = NAME) -> None:
    """Type a command line into the guest's serial console."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(kvm.SerialSocket(name))
        sock.sendall(line.encode() + b"\n")
        # Let QEMU read the input before the client goes
        time.sleep(0.2)


def _Ask(kvm, command: str, tag: str, timeout: float = 20,
         name: str = NAME) -> str:
    """Run a shell command in the guest; its output, tagged in the log
    so that the echoed input does not match."""
    _Type(kvm, "echo %s$((1+1)):$(%s):" % (tag, command), name)
    pattern = re.compile(r"%s2:(.*?):" % re.escape(tag))
    found: list[str] = []

    def _Answered():
        found[:] = pattern.findall(SerialLog(kvm, name))
        return bool(found)

    WaitFor(_Answered, timeout, "the guest to answer %r" % command)
    return found[-1]


def _Uptime(kvm, tag: str, name: str = NAME) -> float:
    return float(_Ask(kvm, "cut -d' ' -f1 /proc/uptime", tag, name=name))


def _Status(kvm, name: str = NAME) -> str:
    return kvm._Qmp(name, "query-status")["status"]


def _WaitMigration(src, inst, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status = src.GetMigrationStatus(inst)
        if status["status"] not in (constants.HV_MIGRATION_ACTIVE,
                                    constants.HV_MIGRATION_POSTCOPY_ACTIVE):
            return status
        assert time.monotonic() < deadline, "migration did not end"
        time.sleep(0.1)


def _Migrate(src, dst, inst, block_devices, target, live):
    """The master's sequence for a successful migration; seconds taken
    from MigrateInstance to the guest running on the target."""
    info = src.MigrationInfo(inst)
    dst.AcceptInstance(inst, info, target, block_devices)
    assert _Status(dst) == "inmigrate"
    started = time.monotonic()
    src.MigrateInstance("cluster", inst, target, live)
    status = _WaitMigration(src, inst)
    assert status["status"] == constants.HV_MIGRATION_COMPLETED, status
    assert 0 < status["transferred_ram"] <= status["total_ram"]
    src.FinalizeMigrationSource(inst, True, live)
    dst.FinalizeMigrationDst(inst, info, True)
    return time.monotonic() - started, status


def _AssertGone(kvm) -> None:
    """No QEMU and no runtime files of the instance on this side."""
    assert kvm.ListInstances() == []
    for kind in ("pid", "ctrl", "conf", "nic"):
        if os.path.exists(kvm._dirs[kind]):
            assert os.listdir(kvm._dirs[kind]) == [], kind
    assert ProcessesMentioning(kvm.PidFile(NAME)) == []


def test_live_there_and_non_live_back(pair):
    src, dst, inst, block_devices = pair
    _Type(src, "echo before-migration > /root/marker; sync")
    uptime = _Uptime(src, "U1")

    took, status = _Migrate(src, dst, inst, block_devices, TARGET, True)
    print("live migration of a %d MiB guest: %.2f s, %d of %d bytes sent,"
          " QEMU downtime %s ms" % (inst.beparams["maxmem"], took,
                                    status["transferred_ram"],
                                    status["total_ram"],
                                    status.get("downtime")))
    _AssertGone(src)
    assert dst.ListInstances() == [NAME]
    assert _Status(dst) == "running"
    runtime = dst.LoadRuntime(NAME)
    assert "incoming" not in runtime
    assert runtime["disks"][0]["path"] == block_devices[0][1]
    assert dst.PidFile(NAME) in runtime["cmd"]
    assert "unix:%s,server=on,wait=off" % dst.QmpSocket(NAME) in \
        runtime["cmd"]
    assert not any(src._root in arg for arg in runtime["cmd"])
    # The same guest, later: its memory (uptime) and disk came along
    assert _Uptime(dst, "U2") > uptime
    assert _Ask(dst, "cat /root/marker", "M1") == "before-migration"
    info = dst.GetInstanceInfo(NAME)
    assert info[2:5] == (128, 1, constants.HV_INSTANCE_RUNNING)

    # Non-live, back to the source's address: paused while copied
    took, status = _Migrate(dst, src, inst, block_devices, SOURCE, False)
    print("non-live migration: %.2f s" % took)
    _AssertGone(dst)
    assert src.ListInstances() == [NAME]
    assert _Status(src) == "running"
    assert _Uptime(src, "U3") > uptime


def _Abort(src, dst, inst, info, live):
    """The master's undo after a failed step."""
    dst.FinalizeMigrationDst(inst, info, False)
    src.FinalizeMigrationSource(inst, False, live)


def _Slow(inst):
    """The instance with 1 MiB/s: a migration lasts long enough to be
    interrupted."""
    slow = inst.Copy()
    slow.hvparams["migration_bandwidth"] = 1
    return slow


def test_failed_migrations_roll_back(pair):
    src, dst, inst, block_devices = pair
    info = src.MigrationInfo(inst)
    port = inst.hvparams["migration_port"]

    # Refused before anything starts
    with pytest.raises(errors.HypervisorError, match="Invalid migration"):
        dst.AcceptInstance(inst, "garbage", TARGET, block_devices)
    other = Instance("other.example.com", hvparams=inst.hvparams)
    with pytest.raises(errors.HypervisorError, match="Invalid migration"):
        dst.AcceptInstance(other, info, TARGET, block_devices)
    with pytest.raises(errors.HypervisorError, match="1 disks, 0 were"):
        dst.AcceptInstance(inst, info, TARGET, [])
    with pytest.raises(errors.HypervisorError, match="not completed"):
        src.FinalizeMigrationSource(inst, True, True)
    with pytest.raises(errors.HypervisorError, match="did not arrive"):
        dst.FinalizeMigrationDst(inst, info, True)
    # An undo on a node the instance runs on for other reasons kills
    # nothing
    src.FinalizeMigrationDst(inst, info, False)
    assert _Status(src) == "running"
    _AssertGone(dst)

    # Target port taken: the target can't listen, nothing starts there
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind((TARGET, port))
        busy.listen()
        with pytest.raises(errors.HypervisorError,
                           match="Address already in use"):
            dst.AcceptInstance(inst, info, TARGET, block_devices)
    _Abort(src, dst, inst, info, True)
    _AssertGone(dst)
    assert _Status(src) == "running"

    # Target killed in the middle of a live and of a non-live migration
    for live, tag in ((True, "L"), (False, "N")):
        slow = _Slow(inst)
        dst.AcceptInstance(slow, info, TARGET, block_devices)
        src.MigrateInstance("cluster", slow, TARGET, live)
        WaitFor(lambda: src.GetMigrationStatus(slow).get(
            "transferred_ram", 0) > 0, 20, "the migration to start")
        assert src.GetMigrationStatus(slow)["status"] == \
            constants.HV_MIGRATION_ACTIVE
        if not live:
            assert _Status(src) == "paused"
        os.kill(dst._Pid(NAME), 9)
        status = _WaitMigration(src, slow)
        assert status["status"] == constants.HV_MIGRATION_FAILED, status
        _Abort(src, dst, slow, info, live)
        _AssertGone(dst)
        assert _Status(src) == "running"
        assert _Ask(src, "echo alive", tag) == "alive"

    # Master gives up while the memory is still being sent; the source,
    # undone first here, cancels the migration
    slow = _Slow(inst)
    dst.AcceptInstance(slow, info, TARGET, block_devices)
    src.MigrateInstance("cluster", slow, TARGET, True)
    with pytest.raises(errors.HypervisorError, match="under way"):
        src.MigrateInstance("cluster", slow, TARGET, True)
    src.FinalizeMigrationSource(slow, False, True)
    assert src.GetMigrationStatus(slow)["status"] == \
        constants.HV_MIGRATION_CANCELLED
    dst.FinalizeMigrationDst(slow, info, False)
    _AssertGone(dst)
    assert _Status(src) == "running"

    # Completed, but the master gives up before finalising: the target is
    # killed, the source (stopped after sending) resumes
    uptime = _Uptime(src, "U1")
    dst.AcceptInstance(inst, info, TARGET, block_devices)
    src.MigrateInstance("cluster", inst, TARGET, True)
    assert _WaitMigration(src, inst)["status"] == \
        constants.HV_MIGRATION_COMPLETED
    assert _Status(src) == "postmigrate"
    with pytest.raises(errors.HypervisorError, match="already running"):
        dst.AcceptInstance(inst, info, TARGET, block_devices)
    _Abort(src, dst, inst, info, True)
    _AssertGone(dst)
    assert _Status(src) == "running"
    assert _Uptime(src, "U2") > uptime
    assert src.ListInstances() == [NAME]


def test_nodes_in_one_namespace_migrate_a_nic():
    """Virtual cluster nodes share one network namespace: the source and
    the target QEMU of an instance with a bridged NIC run side by side
    during a migration, each with its own tap on the bridge."""
    if os.geteuid() != 0:
        pytest.skip("a bridge needs root")
    vmlinux, initrd = RequireGuest()
    bridge = "gbt" + os.urandom(4).hex()
    made = subprocess.run(["ip", "link", "add", bridge, "type", "bridge"],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip("cannot create a bridge: %s" % made.stderr.strip())
    root = GuestRoot()
    src = hv_kvm.KVMHypervisor(root_dir=os.path.join(root, "src"))
    dst = hv_kvm.KVMHypervisor(root_dir=os.path.join(root, "dst"))
    try:
        disk_path = os.path.join(root, "shared-disk0")
        TinyImageDisk(disk_path, NAME)
        nic = objects.NIC(mac="aa:00:00:88:00:30",
                          nicparams={"mode": "bridged", "link": bridge})
        inst = Instance(NAME, hvparams=GuestHvParams(
            vmlinux, initrd, migration_port=_FreePort()), nics=[nic],
            maxmem=128)
        block_devices = [(Disk(), disk_path)]
        src.StartInstance(inst, block_devices, False)
        (src_tap, ) = [entry["tap"] for entry in
                       src.LoadRuntime(NAME)["nics"]]
        _Migrate(src, dst, inst, block_devices, TARGET, True)
        (dst_tap, ) = [entry["tap"] for entry in
                       dst.LoadRuntime(NAME)["nics"]]
        assert dst_tap != src_tap
        assert _Status(dst) == "running"
        ports = subprocess.run(["ip", "-o", "link", "show", "master", bridge],
                               capture_output=True, text=True,
                               check=True).stdout
        assert dst_tap in ports and src_tap not in ports
    finally:
        KillGuests(src)
        KillGuests(dst)
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run(["ip", "link", "delete", bridge], capture_output=True)


# Through the cluster ------------------------------------------------------

SHARED_VDIR = "/srv/ganeti/shared-file-storage"


def _MakeSharedDir(cluster):
    """One sharedfile directory for both nodes, as an NFS mount would be."""
    os.makedirs(os.path.join(cluster.base, SHARED_VDIR.lstrip("/")))


# kvm_cluster: sharedfile storage
pytestmark.append(pytest.mark.kvm_cluster(
    init_args=("--enabled-disk-templates=sharedfile", ),
    file_paths=(SHARED_VDIR, ), setup=_MakeSharedDir,
    hvparams=lambda _: {"migration_port": _FreePort()}))


def test_gnt_instance_migrate_kvm_sharedfile(kvm_cluster):
    name = "kvmmig1"
    node1, node2 = (NodeHv(kvm_cluster.nodes[node])
                    for node in (NODE1, NODE2))
    try:
        kvm_cluster.Run("gnt-instance", "add", "-t", "sharedfile",
                        "-o", "tinyimage", "-n", NODE1, "--disk",
                        "0:size=32M", "--no-nics", "-B",
                        "maxmem=128,minmem=128", *CHECKS, name, timeout=120)
        WaitFor(lambda: "tinyimage %s ready" % name in
                SerialLog(node1, name), 90, "the guest's ready line")
        _Type(node1, "echo on-node1 > /root/where; sync", name)
        uptime = _Uptime(node1, "C1", name)

        started = time.monotonic()
        out = kvm_cluster.Run("gnt-instance", "migrate", "-f", "-n", NODE2,
                              name).stdout
        print("gnt-instance migrate (TCG, so non-live, 128 MiB): %.2f s" %
              (time.monotonic() - started))
        assert "* memory transfer complete" in out, out
        assert "Migrating instance %s non-live: without hardware" \
            " acceleration (kvm_flag=disabled)" % name in out, out
        assert node1.ListInstances() == [] and node2.ListInstances() == [name]
        assert _Status(node2, name) == "running"
        assert Field(kvm_cluster, name, "pnode,status,oper_ram") == \
            "%s|running|128" % NODE2
        assert _Uptime(node2, "C2", name) > uptime
        assert _Ask(node2, "cat /root/where", "C3", name=name) == "on-node1"

        kvm_cluster.Run("gnt-instance", "migrate", "-f", "--non-live",
                        "-n", NODE1, name)
        assert node2.ListInstances() == [] and node1.ListInstances() == [name]
        assert _Status(node1, name) == "running"
        assert Field(kvm_cluster, name, "pnode,status") == "%s|running" % NODE1
        assert _Uptime(node1, "C4", name) > uptime
    finally:
        RemoveInstances(kvm_cluster, name, extra=("--shutdown-timeout=0", ))
    assert node1.ListInstances() == [] and node2.ListInstances() == []
