"""The address pool of a network (ganeti.network) and the network objects
in the configuration: reservations follow the instances' NICs."""

import pytest

from ganeti import errors, network, objects

from testutils_config import MakeConfig


def _Net(subnet="192.0.2.0/29", gateway=None, **kwargs):
    return objects.Network(name="net1", network=subnet, gateway=gateway,
                           uuid="net-uuid", **kwargs)


def test_initialize_reserves_network_broadcast_and_gateway():
    net = _Net(gateway="192.0.2.1")
    pool = network.AddressPool.InitializeNetwork(net)
    assert net.reservations == "00000000"
    assert net.ext_reservations == "11000001"
    assert pool.GetMap() == "XX.....X"
    assert pool.GetFreeCount() == 5
    assert pool.GetReservedCount() == 3
    assert pool.GetExternalReservations() == ["192.0.2.0", "192.0.2.1",
                                              "192.0.2.7"]
    assert pool.GenerateFree() == "192.0.2.2"


def test_reserve_and_release_internal_and_external():
    net = _Net()
    pool = network.AddressPool.InitializeNetwork(net)
    pool.Reserve("192.0.2.2")
    assert net.reservations == "00100000"
    with pytest.raises(errors.AddressPoolError,
                       match="IP 192.0.2.2 is already used by an instance"):
        pool.Reserve("192.0.2.2")
    pool.Reserve("192.0.2.1", external=True)
    assert pool.GenerateFree() == "192.0.2.3"
    pool.Release("192.0.2.2")
    assert pool.GenerateFree() == "192.0.2.2"
    with pytest.raises(errors.AddressPoolError,
                       match="IP 192.0.2.2 is not used by an instance"):
        pool.Release("192.0.2.2")
    with pytest.raises(errors.AddressPoolError,
                       match="IP 192.0.2.0 is already externally reserved"):
        pool.Reserve("192.0.2.0", external=True)
    with pytest.raises(errors.AddressPoolError,
                       match="192.0.2.0/29 does not contain 198.51.100.1"):
        pool.Reserve("198.51.100.1")
    assert not pool.Contains("198.51.100.1")
    assert not pool.Contains(None)


def test_full_pool_and_size_bounds():
    net = _Net(subnet="192.0.2.0/30")
    pool = network.AddressPool.InitializeNetwork(net)
    pool.Reserve("192.0.2.1")
    pool.Reserve("192.0.2.2")
    assert pool.IsFull()
    with pytest.raises(errors.AddressPoolError,
                       match="192.0.2.0/30 is full"):
        pool.GenerateFree()
    with pytest.raises(errors.AddressPoolError, match="too small"):
        network.AddressPool(_Net(subnet="192.0.2.0/31"))
    with pytest.raises(errors.AddressPoolError, match="at most a /16"):
        network.AddressPool(_Net(subnet="10.0.0.0/15"))


def test_gateway_outside_the_network_is_refused():
    with pytest.raises(errors.AddressPoolError,
                       match="192.0.2.0/29 does not contain 198.51.100.1"):
        network.AddressPool.InitializeNetwork(_Net(gateway="198.51.100.1"))


def test_ganeti_2_12_network_keys_are_dropped_on_load():
    data = _Net().ToDict()
    data.update(network_type="private", family=4)
    assert objects.Network.FromDict(data).name == "net1"


def _Instance(cfg, ip, net_uuid):
    node = cfg.GetMasterNode()
    return objects.Instance(
        name="inst1.example.test", primary_node=node, hypervisor="fake",
        nics=[objects.NIC(mac="aa:00:00:00:00:01", ip=ip, network=net_uuid)])


def test_config_reserves_and_releases_nic_addresses(tmp_path):
    cfg = MakeConfig(str(tmp_path))
    net = _Net(subnet="192.0.2.0/29")
    network.AddressPool.InitializeNetwork(net)
    cfg.AddNetwork(net)
    inst = _Instance(cfg, "192.0.2.3", net.uuid)
    cfg.AddInstance(inst)
    assert cfg.GetNetwork(net.uuid).reservations == "00010000"
    # Moving the NIC to another address releases the old one
    inst = cfg.GetInstanceInfo(inst.uuid)
    inst.nics[0].ip = "192.0.2.4"
    cfg.Update(inst)
    assert cfg.GetNetwork(net.uuid).reservations == "00001000"
    # An address another NIC has is refused in the same write
    other = _Instance(cfg, "192.0.2.4", net.uuid)
    other.name = "inst2.example.test"
    other.nics[0].mac = "aa:00:00:00:00:02"
    with pytest.raises(errors.ConfigurationError,
                       match="IP 192.0.2.4 is already used by an instance"):
        cfg.AddInstance(other)
    with pytest.raises(errors.ConfigurationError,
                       match="still used by instance"):
        cfg.RemoveNetwork(net.uuid)
    cfg.RemoveInstance(inst.uuid)
    assert cfg.GetNetwork(net.uuid).reservations == "00000000"
    cfg.RemoveNetwork(net.uuid)
