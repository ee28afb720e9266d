"""KVM instance NICs on real networks: nodes in network namespaces.

Two nodes of a NetnsCluster; besides their cluster network, each node
namespace has an instance bridge ``brinst`` (address 10.88.0.<node>/24)
whose port ``uplink`` is a veth into one bridge on the host, so the
instance network spans the nodes. A kvm instance with a bridged NIC gets
its tap attached to ``brinst`` by the shipped kvm-ifup; tinyimage
configures the NIC's IP in the guest, which answers pings from both nodes.
A routed NIC gets a route to its IP via the tap in its routing table.
Needs root and network namespaces; skipped where they can't be made.
"""

import os
import subprocess

import pytest

from ganeti import pathutils
from ganeti.hypervisor import hv_kvm

from testutils_cluster import SMALL_IPOLICY_BOUNDS, NetnsClusterOrSkip
from testutils_instance import (CHECKS, FILE_VDIR, NODE2, SHIPPED_OS,
                                AllowFileStorage, Fail, Field, OsSearchDir,
                                RemoveInstances)
from testutils_cluster import WaitFor
from testutils_kvm import (GuestHvParams, KillClusterGuests, RequireGuest,
                           SerialLog)

pytestmark = [pytest.mark.integration, pytest.mark.kvm, pytest.mark.netns]

BRIDGE = "brinst"
GUEST_IP = "10.88.0.10"
GUEST_MAC = "aa:00:00:88:00:10"


def _Ip(*args):
    return subprocess.run(("ip", ) + args, capture_output=True, text=True,
                          check=True).stdout


def _InstanceNetwork(cluster):
    """brinst in every node, joined by a bridge on the host."""
    host_bridge = "gbi" + cluster.tag
    _Ip("link", "add", host_bridge, "type", "bridge")
    _Ip("link", "set", host_bridge, "up")
    for index, node in enumerate(cluster.nodes.values(), start=1):
        veth = "gvi%s%d" % (cluster.tag, index)
        _Ip("link", "add", veth, "type", "veth", "peer", "name", "uplink",
            "netns", node.netns)
        _Ip("link", "set", veth, "master", host_bridge, "up")
        _Ip("-n", node.netns, "link", "add", BRIDGE, "type", "bridge")
        _Ip("-n", node.netns, "link", "set", "uplink", "master", BRIDGE,
            "up")
        _Ip("-n", node.netns, "address", "add", "10.88.0.%d/24" % index,
            "dev", BRIDGE)
        _Ip("-n", node.netns, "link", "set", BRIDGE, "up")
    return host_bridge


def _Hv(node):
    """The node's KVM hypervisor, as its noded sees it."""
    return hv_kvm.KVMHypervisor(root_dir=node.NodePath(pathutils.KVM_HV_DIR))


@pytest.fixture(scope="module")
def nc():
    vmlinux, initrd = RequireGuest()
    cluster = NetnsClusterOrSkip()
    host_bridge = None
    try:
        params = GuestHvParams(vmlinux, initrd)
        cluster.Init("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                     "--enabled-hypervisors=kvm", "-H", "kvm:" + ",".join(
                         "%s=%s" % item for item in sorted(params.items())))
        cluster.AddNode(NODE2)
        for node in cluster.nodes.values():
            os.symlink(SHIPPED_OS,
                       os.path.join(OsSearchDir(node), "tinyimage"))
            AllowFileStorage(node, FILE_VDIR)
        host_bridge = _InstanceNetwork(cluster)
        yield cluster
    finally:
        KillClusterGuests(cluster)
        cluster.Cleanup()
        if host_bridge:
            subprocess.run(["ip", "link", "delete", host_bridge],
                           capture_output=True, check=False)


def _Ping(node, address):
    return subprocess.run(["ip", "netns", "exec", node.netns, "ping", "-c",
                           "1", "-W", "1", address],
                          capture_output=True, check=False).returncode == 0


def test_bridged_nic_reaches_the_guest(nc):
    name = "net1"
    kvm = _Hv(nc)
    node2 = nc.nodes[NODE2]
    try:
        nc.Run("gnt-instance", "add", "-H", "kvm", "-t", "file",
               "-o", "tinyimage", "-n", nc.name, "--disk", "0:size=32M",
               "--net", "0:link=%s,ip=%s,mac=%s" % (BRIDGE, GUEST_IP,
                                                     GUEST_MAC),
               "-B", "maxmem=128,minmem=128", *CHECKS, name, timeout=120)
        WaitFor(lambda: "tinyimage %s ready" % name in SerialLog(kvm, name),
                90, "the guest's ready line")
        (nic, ) = kvm.LoadRuntime(name)["nics"]
        assert nic["mac"] == GUEST_MAC and nic["link"] == BRIDGE
        # kvm-ifup attached the tap to the NIC's bridge, in the node
        ports = _Ip("-n", nc.netns, "-o", "link", "show", "master", BRIDGE)
        assert nic["tap"] in ports
        assert Field(nc, name, "status,nic.links,nic.ips") == \
            "running|%s|%s" % (BRIDGE, GUEST_IP)

        # The guest answers on its node and across the instance network
        for node in (nc, node2):
            WaitFor(lambda node=node: _Ping(node, GUEST_IP), 30,
                    "a ping from %s to the guest" % node.name)
        neighbours = _Ip("-n", node2.netns, "neigh", "show", GUEST_IP)
        assert GUEST_MAC in neighbours

        nc.Run("gnt-instance", "shutdown", "--timeout=0", name)
        assert nic["tap"] not in _Ip("-n", nc.netns, "-o", "link", "show")
        assert not _Ping(nc, GUEST_IP)
    finally:
        RemoveInstances(nc, name, extra=("--shutdown-timeout=0", ))


def test_nic_to_missing_bridge_fails_cleanly(nc):
    kvm = _Hv(nc)
    out = Fail(nc, "gnt-instance", "add", "-H", "kvm", "-t", "file",
               "-o", "tinyimage", "-n", nc.name, "--disk", "0:size=16M",
               "--net", "0:link=nosuchbr", "-B", "maxmem=128,minmem=128",
               *CHECKS, "net2")
    assert "nosuchbr" in out, out
    assert kvm.ListInstances() == []
    assert "net2" not in nc.Run("gnt-instance", "list").stdout


def test_routed_nic_gets_a_route(nc):
    """Routed NIC: kvm-ifup routes the NIC's IP to the tap in the NIC's
    table (here 100, which the admin has the node consult for it)."""
    name = "net3"
    address = "10.99.0.20"
    kvm = _Hv(nc)
    subprocess.run(["ip", "-n", nc.netns, "rule", "add", "to",
                    "10.99.0.0/24", "lookup", "100"], check=True)
    try:
        nc.Run("gnt-instance", "add", "-H", "kvm", "-t", "file",
               "-o", "tinyimage", "-n", nc.name, "--disk", "0:size=32M",
               "--net", "0:mode=routed,link=100,ip=%s" % address,
               "-B", "maxmem=128,minmem=128", *CHECKS, name, timeout=120)
        WaitFor(lambda: "tinyimage %s ready" % name in SerialLog(kvm, name),
                90, "the guest's ready line")
        (nic, ) = kvm.LoadRuntime(name)["nics"]
        routes = _Ip("-n", nc.netns, "route", "show", "table", "100")
        assert "%s dev %s" % (address, nic["tap"]) in routes
        WaitFor(lambda: _Ping(nc, address), 30, "a ping to the guest")
        # The cluster network and the bridge know nothing of it
        assert not _Ping(nc.nodes[NODE2], address)
    finally:
        RemoveInstances(nc, name, extra=("--shutdown-timeout=0", ))
    assert "10.99.0.20" not in _Ip("-n", nc.netns, "route", "show",
                                    "table", "100")
