"""Migration, a failed migration and failover of a real KVM guest
between nodes in network namespaces, watched from a third node.

The guest runs under TCG, so gnt-instance migrate moves it non-live
(KVMHypervisor.LiveMigrationUnsafe): an active TCG guest migrated live
was seen to arrive with stale memory.

Three nodes of a NetnsCluster share an instance bridge (``brinst``, see
test_kvm_network) and a sharedfile directory (one directory below the
cluster's base, as an NFS mount would be). One guest with a bridged NIC,
whose IP tinyimage configures, runs on a sharedfile disk.

Each test takes the guest where it runs now (the source), moves it to
another node and watches it from the remaining one, so the tests do not
depend on their order. Needs root and network namespaces; skipped where
they can't be made.
"""

import os
import re
import signal
import subprocess
import time

import pytest


from test_hv_kvm_migration import _Ask, _Status, _Type, _Uptime
from test_kvm_network import BRIDGE, _Hv, _InstanceNetwork, _Ping
from testutils_cluster import SMALL_IPOLICY_BOUNDS, NetnsClusterOrSkip
from testutils_instance import (CHECKS, NODE2, NODE3, SHIPPED_OS,
                                AllowFileStorage, Field, OsSearchDir,
                                RemoveInstances)
from testutils_cluster import WaitFor
from testutils_kvm import (HEARTBEAT_LOOP, GuestHvParams, KillGuests,
                           RequireGuest, SerialLog)

pytestmark = [pytest.mark.integration, pytest.mark.kvm, pytest.mark.netns]

SHARED_VDIR = "/srv/ganeti/shared-file-storage"
NAME = "nsmig1"
GUEST_IP = "10.88.0.20"
GUEST_MAC = "aa:00:00:88:00:20"
# Seconds of lost replies (at 10 pings a second) a migration may cost
MAX_OUTAGE = 3.0
# MiB/s (Ganeti's default, 32, would make the non-live pause last seconds)
BANDWIDTH = 400


@pytest.fixture(scope="module")
def nc():
    """Three nodes in namespaces, kvm with the test kernel, sharedfile
    storage; the guest running on the first node."""
    vmlinux, initrd = RequireGuest()
    cluster = NetnsClusterOrSkip()
    host_bridge = None
    try:
        params = GuestHvParams(vmlinux, initrd,
                               migration_bandwidth=BANDWIDTH)
        cluster.Init("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                     "--enabled-hypervisors=kvm",
                     "--enabled-disk-templates=sharedfile",
                     "-H", "kvm:" + ",".join(
                         "%s=%s" % item for item in sorted(params.items())))
        for name in (NODE2, NODE3):
            cluster.AddNode(name)
        os.makedirs(os.path.join(cluster.base, SHARED_VDIR.lstrip("/")))
        for node in cluster.nodes.values():
            os.symlink(SHIPPED_OS,
                       os.path.join(OsSearchDir(node), "tinyimage"))
            AllowFileStorage(node, SHARED_VDIR)
        host_bridge = _InstanceNetwork(cluster)
        cluster.Run("gnt-instance", "add", "-t", "sharedfile",
                    "-o", "tinyimage", "-n", cluster.name,
                    "--disk", "0:size=32M",
                    "--net", "0:link=%s,ip=%s,mac=%s" % (BRIDGE, GUEST_IP,
                                                          GUEST_MAC),
                    "-B", "maxmem=128,minmem=128", *CHECKS, NAME,
                    timeout=120)
        WaitFor(lambda: "tinyimage %s ready" % NAME in
                SerialLog(_Hv(cluster), NAME), 90, "the guest's ready line")
        yield cluster
    finally:
        RemoveInstances(cluster, NAME, extra=("--shutdown-timeout=0", ))
        for node in cluster.nodes.values():
            KillGuests(_Hv(node))
        cluster.Cleanup()
        if host_bridge:
            subprocess.run(["ip", "link", "delete", host_bridge],
                           capture_output=True, check=False)


def _Placement(cluster):
    """(source, target, watcher): the guest's node and the two others."""
    primary = Field(cluster, NAME, "pnode")
    source = cluster.nodes[primary]
    target, watcher = [node for node in cluster.nodes.values()
                       if node is not source]
    assert Field(cluster, NAME, "status") == "running"
    assert _Hv(source).ListInstances() == [NAME]
    return source, target, watcher


class _PingLoop:
    """Pings from a node's namespace, ten a second, until stopped."""

    def __init__(self, node, address):
        self._proc = subprocess.Popen(
            ["ip", "netns", "exec", node.netns, "ping", "-n", "-i", "0.1",
             "-W", "1", address], stdout=subprocess.PIPE, text=True)

    def Stop(self) -> tuple[int, int]:
        """(sent, answered)."""
        self._proc.send_signal(signal.SIGINT)
        out = self._proc.communicate(timeout=10)[0]
        match = re.search(r"(\d+) packets transmitted, (\d+) received", out)
        assert match, out
        return int(match.group(1)), int(match.group(2))


def _Heartbeat(kvm, tag: str) -> int:
    """The counter the guest's heartbeat loop writes to its disk."""
    return int(_Ask(kvm, "cat /root/hb", tag, name=NAME))


def test_migration_keeps_serving(nc):
    source, target, watcher = _Placement(nc)
    src, dst = _Hv(source), _Hv(target)
    WaitFor(lambda: _Ping(watcher, GUEST_IP), 30, "a first ping")
    # The disk heartbeat: a counter written and synced five times a second
    _Type(src, HEARTBEAT_LOOP, NAME)
    WaitFor(lambda: _Heartbeat(src, "H%d" % time.monotonic_ns()) > 0, 20,
            "the heartbeat")
    beat = _Heartbeat(src, "HB1")
    uptime = _Uptime(src, "UP1", NAME)

    pings = _PingLoop(watcher, GUEST_IP)
    try:
        time.sleep(1)
        started = time.monotonic()
        out = nc.Run("gnt-instance", "migrate", "-f", "-n", target.name,
                     NAME, timeout=180).stdout
        took = time.monotonic() - started
        assert "* memory transfer complete" in out, out
        assert "Migrating instance %s non-live: without hardware" \
            " acceleration" % NAME in out, out
        # Replies again before the count is taken
        time.sleep(1)
    finally:
        sent, answered = pings.Stop()
    print("migration %s -> %s: %.1f s; pings from %s: %d sent, %d"
          " lost" % (source.name, target.name, took, watcher.name, sent,
                     sent - answered))
    assert sent - answered <= MAX_OUTAGE * 10, (sent, answered)
    assert answered > 0

    assert src.ListInstances() == [] and dst.ListInstances() == [NAME]
    assert _Status(dst, NAME) == "running"
    assert Field(nc, NAME, "pnode,status") == "%s|running" % target.name
    # The tap moved to the target's bridge
    (nic, ) = dst.LoadRuntime(NAME)["nics"]
    ports = subprocess.run(["ip", "-n", target.netns, "-o", "link", "show",
                            "master", BRIDGE], capture_output=True,
                           text=True, check=True).stdout
    assert nic["tap"] in ports
    # Same memory (uptime went on), same disk, the loop still writing
    assert _Uptime(dst, "UP2", NAME) > uptime
    after = _Heartbeat(dst, "HB2")
    assert after > beat
    WaitFor(lambda: _Heartbeat(dst, "H%d" % time.monotonic_ns()) > after,
            20, "the heartbeat to go on")
    assert _Ping(watcher, GUEST_IP) and _Ping(source, GUEST_IP)


def test_failed_migration_stays_on_source(nc):
    """The destination QEMU is killed while the memory is being sent."""
    source, target, watcher = _Placement(nc)
    src, dst = _Hv(source), _Hv(target)
    uptime = _Uptime(src, "UF1", NAME)
    # 1 MiB/s: the transfer lasts long enough to be interrupted
    nc.Run("gnt-cluster", "modify", "-H", "kvm:migration_bandwidth=1")
    try:
        migrate = subprocess.Popen(
            ["ip", "netns", "exec", nc.netns, "gnt-instance", "migrate",
             "-f", "-n", target.name, NAME], env=nc.env, cwd=nc.base,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            def _Sending():
                status = src._Qmp(NAME, "query-migrate")
                return status.get("status") == "active" and \
                    status.get("ram", {}).get("transferred", 0) > 0
            WaitFor(_Sending, 60, "the memory transfer to start")
            pid = dst._Pid(NAME)
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            out = migrate.communicate(timeout=120)[0]
        finally:
            if migrate.poll() is None:
                migrate.kill()
                migrate.wait()
    finally:
        nc.Run("gnt-cluster", "modify", "-H",
               "kvm:migration_bandwidth=%d" % BANDWIDTH)
    assert migrate.returncode != 0, out
    assert "Could not migrate instance %s" % NAME in out, out

    assert Field(nc, NAME, "pnode,status") == "%s|running" % source.name
    assert src.ListInstances() == [NAME] and dst.ListInstances() == []
    assert _Status(src, NAME) == "running"
    assert src._Qmp(NAME, "query-migrate").get("status") != "active"
    assert _Uptime(src, "UF2", NAME) > uptime
    WaitFor(lambda: _Ping(watcher, GUEST_IP), 30, "a ping after the"
            " failed migration")


def _ForgetSerialLog(kvm) -> None:
    """Remove the serial log a guest left on a node it no longer runs on,
    so that the next boot's ready line is the only one there."""
    assert kvm.ListInstances() == []
    if os.path.exists(kvm.SerialLog(NAME)):
        os.unlink(kvm.SerialLog(NAME))


def _WaitReady(kvm, node) -> None:
    WaitFor(lambda: "tinyimage %s ready" % NAME in SerialLog(kvm, NAME), 90,
            "the guest's ready line on %s" % node.name)


def _KillByPidFile(kvm) -> None:
    """SIGKILL the guest's QEMU on a node whose noded is down (the admin
    making sure the node is down); wait until it has gone."""
    with open(kvm.PidFile(NAME), encoding="ascii") as fobj:
        pid = int(fobj.read())
    if kvm._Pid(NAME) == pid:
        os.kill(pid, signal.SIGKILL)
    WaitFor(lambda: kvm._Pid(NAME) is None, 10, "the old QEMU to end")


def test_failover_from_dead_node(nc):
    """The primary dies: its noded stops, then its QEMU (killed by pid
    file, as no noded can stop it). The failover boots the guest on
    another node."""
    source, target, watcher = _Placement(nc)
    src, dst = _Hv(source), _Hv(target)
    _ForgetSerialLog(dst)
    source.KillDaemon("ganeti-noded")
    try:
        _KillByPidFile(src)
        out = nc.Run("gnt-instance", "failover", "-f", "--ignore-consistency",
                     "-n", target.name, NAME, timeout=180).stdout
        assert "please make sure node %s is down" % source.name in out, out
        assert Field(nc, NAME, "pnode,status") == \
            "%s|running" % target.name
        assert dst.ListInstances() == [NAME]
        _WaitReady(dst, target)
        assert _Status(dst, NAME) == "running"
        WaitFor(lambda: _Ping(watcher, GUEST_IP), 60,
                "a ping from %s after the failover" % watcher.name)
        assert _Ping(target, GUEST_IP)
    finally:
        source.StartNoded()
    assert src.ListInstances() == []


def test_failover_refused_while_old_guest_runs(nc):
    """Only the primary's noded is down, its guest still runs: QEMU's lock
    on the shared image keeps a second guest from starting on it. The
    configuration has switched (as in Ganeti); once the old QEMU is gone,
    the guest starts on the new primary."""
    source, target, watcher = _Placement(nc)
    src, dst = _Hv(source), _Hv(target)
    _ForgetSerialLog(dst)
    source.KillDaemon("ganeti-noded")
    try:
        result = nc.Run("gnt-instance", "failover", "-f",
                        "--ignore-consistency", "-n", target.name, NAME,
                        timeout=180, check=False)
        out = result.stdout + result.stderr
        assert result.returncode != 0, out
        assert "Could not start instance %s" % NAME in out, out
        assert 'Failed to get "write" lock' in out, out
        assert dst.ListInstances() == []
        assert src.ListInstances() == [NAME]
        assert Field(nc, NAME, "pnode,status") == \
            "%s|ERROR_down" % target.name
        _KillByPidFile(src)
        nc.Run("gnt-instance", "startup", NAME, timeout=120)
        _WaitReady(dst, target)
        assert Field(nc, NAME, "pnode,status") == \
            "%s|running" % target.name
        WaitFor(lambda: _Ping(watcher, GUEST_IP), 60,
                "a ping from %s after the restart" % watcher.name)
    finally:
        source.StartNoded()
    assert src.ListInstances() == []
