"""The network opcodes: address pools and their connection to node
groups (part of ganeti.opcodes, which re-exports them; see it for how
parameters are declared)."""

from typing import Any

from ganeti import ht
from ganeti.opcodes_base import OpCode, _OpParam, _PConflictsCheck, _PForce


def _IPCheck(kind: str, desc: str, **kwargs: Any) -> ht.Check:
    """A string ``ipaddress.<kind>(value, **kwargs)`` accepts.

    ipaddress is imported on first use: every gnt-* program loads the
    opcodes, few check an address (~1 ms of each start-up).
    """
    def check(value: Any) -> bool:
        import ipaddress  # ValueError: refused by ht.Check
        return isinstance(value, str) and \
            getattr(ipaddress, kind)(value, **kwargs) is not None
    return ht.Check(check, desc, "string")


_TIPv4Address = _IPCheck("IPv4Address", "IPv4 address")
_TIPv4Network = _IPCheck("IPv4Network", "IPv4 network", strict=False)
_TIPv6Address = _IPCheck("IPv6Address", "IPv6 address")
_TIPv6Network = _IPCheck("IPv6Network", "IPv6 network", strict=False)
_PNetworkName = ("network_name", ht.NoDefault, ht.TNonEmptyString,
                 "Network name")
_NETWORK_ADDRESS_PARAMS: list[_OpParam] = [
    ("gateway", None, ht.TMaybe(_TIPv4Address), "IPv4 gateway"),
    ("network6", None, ht.TMaybe(_TIPv6Network), "IPv6 subnet"),
    ("gateway6", None, ht.TMaybe(_TIPv6Address), "IPv6 gateway"),
    ("mac_prefix", None, ht.TMaybeString,
     "MAC address prefix of the network's NICs"),
    ("add_reserved_ips", None, ht.TMaybeListOf(_TIPv4Address),
     "IP addresses to reserve"),
]


class OpNetworkAdd(OpCode):
    """Add a network."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [
        _PNetworkName,
        ("network", ht.NoDefault, _TIPv4Network, "IPv4 subnet"),
    ] + _NETWORK_ADDRESS_PARAMS + [
        _PConflictsCheck,
        ("tags", [], ht.TListOf(ht.TNonEmptyString), "Network tags"),
    ]
    OP_RESULT = ht.TNone


class OpNetworkRemove(OpCode):
    """Remove a network."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [_PNetworkName, _PForce]
    OP_RESULT = ht.TNone


class OpNetworkSetParams(OpCode):
    """Change the parameters of a network."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [_PNetworkName] + _NETWORK_ADDRESS_PARAMS + [
        ("remove_reserved_ips", None, ht.TMaybeListOf(_TIPv4Address),
         "IP addresses to release"),
    ]
    OP_RESULT = ht.TNone


class OpNetworkConnect(OpCode):
    """Connect a network to a node group."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [
        ("group_name", ht.NoDefault, ht.TNonEmptyString, "Node group name"),
        _PNetworkName,
        ("network_mode", ht.NoDefault,
         ht.TElemOf(["pool", "openvswitch", "routed", "bridged"]),
         "NIC mode of the network in the group"),
        ("network_link", ht.NoDefault, ht.TNonEmptyString,
         "NIC link of the network in the group"),
        ("network_vlan", "", ht.TString,
         "VLAN of the network in the group"),
        _PConflictsCheck,
    ]
    OP_RESULT = ht.TNone


class OpNetworkDisconnect(OpCode):
    """Disconnect a network from a node group."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [
        ("group_name", ht.NoDefault, ht.TNonEmptyString, "Node group name"),
        _PNetworkName,
    ]
    OP_RESULT = ht.TNone
