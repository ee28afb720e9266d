"""Networks on a real two-node virtual cluster: gnt-network, the network
query fields, /2/networks of ganeti-rapi and NICs on networks (``network=``,
``ip=pool``, conflicts) through gnt-instance add/modify/remove.

Messages are Ganeti 3.0's. Each test adds its own networks and instances
and removes them.
"""

import pytest

from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (ADMIN, CHECKS, NODE2, Config, Fail,
                                FindInstance, InstanceCluster, RapiClient,
                                RemoveInstances)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         nodes=(NODE2, ), rapi_users=True) as cluster:
        yield cluster


def _Net(cluster, *args):
    return cluster.Run("gnt-network", *args).stdout


def _Row(cluster, name, fields):
    return _Net(cluster, "list", "--no-headers", "--separator=|", "-o",
                fields, name).strip()


def _Add(cluster, name, *args, check=True):
    return cluster.Run("gnt-instance", "add", "-o", "tinyimage", "-n", NODE2,
                       "-t", "diskless", "--no-start", *CHECKS, *args, name,
                       check=check)


def _StoredNetwork(cluster, name):
    (net, ) = [net for net in Config(cluster)["networks"].values()
               if net["name"] == name]
    return net


@pytest.fixture
def net1(vc):
    """Network net1 (192.0.2.0/28, gateway .1, .5 reserved), connected to
    the default group in bridged mode on br0."""
    _Net(vc, "add", "--network", "192.0.2.0/28", "--gateway", "192.0.2.1",
         "--add-reserved-ips", "192.0.2.5", "--tags", "a,b", "net1")
    _Net(vc, "connect", "-N", "mode=bridged,link=br0", "net1", "default")
    try:
        yield vc
    finally:
        RemoveInstances(vc, "i1", "i2", "i3")
        vc.Run("gnt-network", "disconnect", "net1", "default", check=False)
        vc.Run("gnt-network", "remove", "net1", check=False)


def test_add_list_info_and_fields(net1):
    assert _Row(net1, "net1", "name,network,gateway,mac_prefix,group_list,"
                "tags") == ("net1|192.0.2.0/28|192.0.2.1|-|"
                            "default (bridged, br0, )|a,b")
    assert _Row(net1, "net1", "free_count,reserved_count,map,"
                "external_reservations,group_cnt,inst_cnt") == (
        "12|4|XX...X.........X|192.0.2.0, 192.0.2.1, 192.0.2.5,"
        " 192.0.2.15|1|0")
    info = _Net(net1, "info", "net1")
    for line in ("Network name: net1", "  Subnet: 192.0.2.0/28",
                 "  Gateway: 192.0.2.1", "  IPv6 Subnet: None",
                 "  Size: 16", "  Free: 12 (75.00%)",
                 "        0 XX...X.........X" + " " * 48 + " 63",
                 "         (X) used    (.) free",
                 "  externally reserved IPs:",
                 "    192.0.2.0, 192.0.2.1, 192.0.2.5, 192.0.2.15",
                 "  connected to node groups:",
                 "    default (mode:bridged link:br0 vlan:)",
                 "  not used by any instances"):
        assert line + "\n" in info, line
    fields = _Net(net1, "list-fields", "--no-headers")
    for name in ("name", "network", "gateway", "network6", "gateway6",
                 "mac_prefix", "free_count", "reserved_count", "map",
                 "group_list", "group_cnt", "inst_list", "inst_cnt",
                 "external_reservations", "tags", "uuid", "serial_no",
                 "ctime", "mtime"):
        assert "\n%s " % name in "\n" + fields, name
    assert _Net(net1, "list-tags", "net1").split() == ["a", "b"]
    _Net(net1, "add-tags", "net1", "c")
    _Net(net1, "remove-tags", "net1", "a")
    assert _Net(net1, "list-tags", "net1").split() == ["b", "c"]
    # The classic LUXI call of Ganeti's clients
    with net1.Luxi() as client:
        assert client.QueryNetworks(["net1"], ["name", "free_count"],
                                    False) == [["net1", 12]]


def test_add_refusals(net1):
    assert "Desired network name 'net1' already exists as a network" in \
        Fail(net1, "gnt-network", "add", "--network", "198.51.100.0/24",
             "net1")
    assert "A network with only 2 host(s) is too small" in \
        Fail(net1, "gnt-network", "add", "--network", "198.51.100.0/31",
             "tiny")
    assert "The --network option must be given" in \
        Fail(net1, "gnt-network", "add", "nonet")
    assert "Network 'nosuch' not found" in \
        Fail(net1, "gnt-network", "remove", "nosuch")


def test_remove_refused_while_connected(net1):
    out = Fail(net1, "gnt-network", "remove", "net1")
    assert "Network still connected" in out
    assert "is connected to the following node groups: default" in out
    _Net(net1, "disconnect", "net1", "default")
    _Net(net1, "remove", "net1")
    assert "net1" not in _Net(net1, "list", "--no-headers", "-o", "name")


def test_modify(net1):
    assert "Cannot modify gateway and reserved ips at once" in \
        Fail(net1, "gnt-network", "modify", "--gateway", "192.0.2.2",
             "--add-reserved-ips", "192.0.2.6", "net1")
    assert "Please give at least one of the parameters." in \
        Fail(net1, "gnt-network", "modify", "net1")
    _Net(net1, "modify", "--gateway", "192.0.2.14", "--mac-prefix",
         "AA:BB:CC", "--network6", "2001:db8::/64", "net1")
    _Net(net1, "modify", "--add-reserved-ips", "192.0.2.6,192.0.2.7",
         "--remove-reserved-ips", "192.0.2.5", "net1")
    assert _Row(net1, "net1", "gateway,mac_prefix,network6,map") == \
        "192.0.2.14|aa:bb:cc|2001:db8::/64|X.....XX......XX"
    assert "Invalid MAC address prefix 'zz'" in \
        Fail(net1, "gnt-network", "modify", "--mac-prefix", "zz", "net1")


def test_nic_on_network_takes_pool_addresses(net1):
    _Add(net1, "i1", "--net", "0:network=net1,ip=pool")
    _Add(net1, "i2", "--net", "0:mac=aa:00:00:12:34:56",
         "--net", "1:network=net1,ip=pool")
    inst, _ = FindInstance(net1, "i1")
    nic = inst["nics"][0]
    net = _StoredNetwork(net1, "net1")
    assert nic["ip"] == "192.0.2.2"
    assert nic["network"] == net["uuid"]
    assert nic["nicparams"] == {"mode": "bridged", "link": "br0",
                                "vlan": ""}
    assert FindInstance(net1, "i2")[0]["nics"][1]["ip"] == "192.0.2.3"
    assert net["reservations"] == "0011000000000000"
    assert _Row(net1, "net1", "inst_list,inst_cnt,free_count") == \
        "i1,i2|2|10"
    assert "  used by 2 instances:\n    i1: 0:192.0.2.2\n" \
        "    i2: 1:192.0.2.3\n" in _Net(net1, "info", "net1")
    # Disconnecting is refused while the group's instances use it
    out = Fail(net1, "gnt-network", "disconnect", "net1", "default")
    assert "Conflicting IP addresses found" in out
    assert "are in use: i1: nic0/192.0.2.2, i2: nic1/192.0.2.3" in out
    # Removing a NIC and an instance give the addresses back
    net1.Run("gnt-instance", "modify", "--net", "1:remove", "i2")
    net1.Run("gnt-instance", "remove", "-f", "i1")
    assert _StoredNetwork(net1, "net1")["reservations"] == "0" * 16
    # A new NIC on the network with ip=pool through modify
    net1.Run("gnt-instance", "modify", "--net",
             "add:network=net1,ip=pool", "i2")
    (nic, ) = [nic for nic in FindInstance(net1, "i2")[0]["nics"]
               if nic.get("network")]
    assert nic["ip"] == "192.0.2.2"
    assert nic["nicparams"]["link"] == "br0"
    assert "Not allowed to change link or mode of a NIC that is connected" \
        in Fail(net1, "gnt-instance", "modify", "--net", "1:link=br1", "i2")


def test_nic_conflicts(net1):
    out = _Add(net1, "i1", "--net", "0:network=net1,ip=192.0.2.5",
               check=False)
    assert out.returncode != 0
    assert "IP address 192.0.2.5 already in use or does not belong to" \
        " network net1" in out.stdout + out.stderr
    # Not checked against external reservations on request
    _Add(net1, "i1", "--net", "0:network=net1,ip=192.0.2.5",
         "--no-conflicts-check")
    assert FindInstance(net1, "i1")[0]["nics"][0]["ip"] == "192.0.2.5"
    out = _Add(net1, "i2", "--net", "0:ip=192.0.2.9", check=False)
    assert "The requested IP address (192.0.2.9) belongs to network net1," \
        " but the target NIC does not." in out.stdout + out.stderr
    _Add(net1, "i2", "--net", "0:ip=192.0.2.9", "--no-conflicts-check")
    assert "The requested IP address (192.0.2.10) belongs to network net1" \
        in Fail(net1, "gnt-instance", "modify", "--net", "0:ip=192.0.2.10",
                "i2")
    assert "if ip=pool, parameter network must be passed too" in \
        Fail(net1, "gnt-instance", "add", "-o", "tinyimage", "-n", NODE2,
             "-t", "diskless", "--no-start", *CHECKS, "--net", "0:ip=pool",
             "i3")
    assert "If network is given, no mode or link is allowed" in \
        Fail(net1, "gnt-instance", "add", "-o", "tinyimage", "-n", NODE2,
             "-t", "diskless", "--no-start", *CHECKS, "--net",
             "0:network=net1,link=br1", "i3")
    # Connecting a network whose range instances already use is refused
    net1.Run("gnt-instance", "remove", "-f", "i1")
    _Net(net1, "disconnect", "net1", "default")
    out = Fail(net1, "gnt-network", "connect", "-N", "mode=routed,link=rt",
               "net1", "default")
    assert "Conflicting IP addresses found" in out
    _Net(net1, "connect", "--no-conflicts-check", "-N", "mode=routed,link=rt",
         "net1", "default")


def test_rapi(vc):
    client = RapiClient(vc, ADMIN)
    try:
        assert client.WaitForJobCompletion(client.CreateNetwork(
            "rnet", "198.51.100.0/24", gateway="198.51.100.1",
            add_reserved_ips="198.51.100.10", tags="x"), period=0.2)
        assert client.WaitForJobCompletion(client.ConnectNetwork(
            "rnet", "default", "routed", "rt0"), period=0.2)
        assert client.WaitForJobCompletion(client.ModifyNetwork(
            "rnet", mac_prefix="aa:00:01"), period=0.2)
        assert client.WaitForJobCompletion(client.AddNetworkTags(
            "rnet", ["y"]), period=0.2)
        assert client.GetNetworks() == ["rnet"]
        info = client.GetNetwork("rnet")
        assert info["gateway"] == "198.51.100.1"
        assert info["mac_prefix"] == "aa:00:01"
        assert info["free_count"] == 252
        assert info["group_list"] == [["default", "routed", "rt0", ""]]
        assert sorted(info["tags"]) == ["x", "y"]
        assert client.GetNetworkTags("rnet") == ["x", "y"]
        (bulk, ) = client.GetNetworks(bulk=True)
        assert bulk["external_reservations"] == \
            "198.51.100.0, 198.51.100.1, 198.51.100.10, 198.51.100.255"
        assert not client.WaitForJobCompletion(client.DeleteNetwork("rnet"),
                                               period=0.2)
        assert client.WaitForJobCompletion(client.DisconnectNetwork(
            "rnet", "default"), period=0.2)
        assert client.WaitForJobCompletion(client.DeleteNetwork("rnet"),
                                           period=0.2)
        assert client.GetNetworks() == []
    finally:
        vc.Run("gnt-network", "disconnect", "rnet", "default", check=False)
        vc.Run("gnt-network", "remove", "rnet", check=False)
