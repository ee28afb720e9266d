"""What writes take from pools and give back: the networks' IP addresses
and the cluster's TCP/UDP ports (for instances and drbd disks).

Each function computes new copies of the pools' owners from a snapshot;
the caller stores them in the same write as the objects using the
resources, so a pool always matches its users.
"""

from typing import Iterable

from ganeti import constants, errors, network
from ganeti.config.snapshot import Snapshot, Stamp
from ganeti.objects import Cluster, Instance, Network


def _NicAddresses(inst: Instance | None) -> set[tuple[str, str]]:
    """(network UUID, IP) of an instance's NICs on a network with an IP."""
    return {(nic.network, nic.ip) for nic in (inst.nics if inst else ())
            if nic.network and nic.ip}


def PoolChanges(snap: Snapshot, old: Instance | None,
                new: Instance | None, now: float) -> dict[str, dict]:
    """The networks whose pools change when ``old`` becomes ``new``.

    The addresses of an instance's NICs are reserved in their networks'
    pools in the same write that stores the instance, so a pool always
    matches the NICs (an aborted job leaves nothing reserved); releases go
    first, so an address can move between NICs.
    """
    before, after = _NicAddresses(old), _NicAddresses(new)
    changed: dict[str, Network] = {}
    steps = [(False, pair) for pair in sorted(before - after)] + \
        [(True, pair) for pair in sorted(after - before)]
    for reserve, (net_uuid, ip) in steps:
        net = changed.get(net_uuid)
        if net is None:
            stored = snap.data.networks.get(net_uuid)
            if stored is None:
                continue  # an unknown network is the validator's to report
            net = changed[net_uuid] = stored.Copy()
        pool = network.AddressPool(net)
        try:
            if reserve:
                pool.Reserve(ip)
            elif pool.Contains(ip) and pool.IsReserved(ip):
                pool.Release(ip)
        except errors.AddressPoolError as err:
            raise errors.ConfigurationError(
                "Network %s: %s" % (net.name, err)) from None
    for net in changed.values():
        Stamp(net, now, new=False)
    return {"networks": changed} if changed else {}


def TakePort(snap: Snapshot, now: float) -> tuple[int, Cluster]:
    """A port for an instance or a drbd disk, as Ganeti takes it, and the
    cluster without it: from the pool of returned ports first, else the
    next above the highest used one (up to LAST_DRBD_PORT)."""
    cluster = snap.data.cluster.Copy()
    if cluster.tcpudp_port_pool:
        port = min(cluster.tcpudp_port_pool)
        cluster.tcpudp_port_pool = [
            other for other in cluster.tcpudp_port_pool if other != port]
    else:
        port = cluster.highest_used_port + 1
        if port > constants.LAST_DRBD_PORT:
            raise errors.ConfigurationError(
                "The highest used port is greater than %s. Aborting."
                % constants.LAST_DRBD_PORT)
        cluster.highest_used_port = port
    Stamp(cluster, now, new=False)
    return port, cluster


def ReturnPorts(snap: Snapshot, ports: Iterable[int], now: float) -> Cluster:
    """The cluster with ``ports`` back in its pool."""
    cluster = snap.data.cluster.Copy()
    cluster.tcpudp_port_pool = sorted(set(cluster.tcpudp_port_pool) |
                                      set(ports))
    Stamp(cluster, now, new=False)
    return cluster
