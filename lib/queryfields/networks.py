"""Query fields of the ``network`` resource (Ganeti 3.0's names, titles,
kinds and docs).

A row is a ``NetworkItem``: the network, its address pool, and the groups
it is connected to and instances using it, gathered once per query.
"""

from typing import Any, Callable

from ganeti import constants, network, objects, query, utils


class NetworkItem:
    """One row of a network query."""

    __slots__ = ("net", "pool", "groups", "instances")

    def __init__(self, net: objects.Network, groups: list[list[Any]],
                 instances: list[str]):
        self.net = net
        self.pool = network.AddressPool(net)
        # [group name, NIC mode, NIC link, NIC VLAN] per connected group
        self.groups = groups
        self.instances = instances


def NetworkItems(networks: list[objects.Network],
                 nodegroups: list[objects.NodeGroup],
                 instances: list[objects.Instance]) -> list[NetworkItem]:
    """The rows of ``networks``, with their groups and instances."""
    groups: dict[str, list[list[Any]]] = {}
    for group in sorted(nodegroups,
                        key=lambda group: utils.NiceSortKey(group.name)):
        for net_uuid, params in group.networks.items():
            groups.setdefault(net_uuid, []).append([
                group.name, params.get(objects.NIC_MODE),
                params.get(objects.NIC_LINK),
                params.get(objects.NIC_VLAN, "")])
    users: dict[str, set[str]] = {}
    for inst in instances:
        for nic in inst.nics:
            if nic.network:
                users.setdefault(nic.network, set()).add(inst.name)
    return [NetworkItem(net, groups.get(net.uuid, []),
                        utils.NiceSort(users.get(net.uuid, ())))
            for net in networks]


def _MaybeUnavail(name: str) -> Callable[[NetworkItem], Any]:
    def get(item: NetworkItem) -> Any:
        value = getattr(item.net, name)
        return query.FS_UNAVAIL if value is None else value
    return get


def _BuildNetworkFields() -> query.FieldTable:
    table: query.FieldTable = {
        "name": ("Network", constants.QFT_TEXT,
                 lambda item: item.net.name, "Name"),
        "network": ("Subnet", constants.QFT_TEXT,
                    lambda item: item.net.network, "IPv4 subnet"),
        "gateway": ("Gateway", constants.QFT_OTHER, _MaybeUnavail("gateway"),
                    "IPv4 gateway"),
        "network6": ("IPv6Subnet", constants.QFT_OTHER,
                     _MaybeUnavail("network6"), "IPv6 subnet"),
        "gateway6": ("IPv6Gateway", constants.QFT_OTHER,
                     _MaybeUnavail("gateway6"), "IPv6 gateway"),
        "mac_prefix": ("MacPrefix", constants.QFT_OTHER,
                       _MaybeUnavail("mac_prefix"), "MAC address prefix"),
        "group_cnt": ("NodeGroups", constants.QFT_NUMBER,
                      lambda item: len(item.groups), "Number of nodegroups"),
        "group_list": ("GroupList", constants.QFT_OTHER,
                       lambda item: item.groups,
                       "List of nodegroups (group name, NIC mode, NIC"
                       " link)"),
        "inst_cnt": ("Instances", constants.QFT_NUMBER,
                     lambda item: len(item.instances), "Number of instances"),
        "inst_list": ("InstanceList", constants.QFT_OTHER,
                      lambda item: item.instances, "List of instances"),
        "free_count": ("FreeCount", constants.QFT_NUMBER,
                       lambda item: item.pool.GetFreeCount(),
                       "Number of available addresses"),
        "reserved_count": ("ReservedCount", constants.QFT_NUMBER,
                           lambda item: item.pool.GetReservedCount(),
                           "Number of reserved addresses"),
        "map": ("Map", constants.QFT_TEXT, lambda item: item.pool.GetMap(),
                "Actual mapping"),
        "external_reservations": (
            "ExternalReservations", constants.QFT_TEXT,
            lambda item: ", ".join(item.pool.GetExternalReservations()),
            "External reservations"),
    }
    table.update(query._ObjectFields("Network", "net"))
    return table


NETWORK_FIELDS = _BuildNetworkFields()
