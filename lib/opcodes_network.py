"""The network opcodes: address pools and their connection to node
groups (part of ganeti.opcodes, which re-exports them; see it for how
parameters are declared)."""

import ipaddress
from typing import Any, Callable

from ganeti import ht
from ganeti.opcodes_base import OpCode, _OpParam, _PConflictsCheck, _PForce


def _IPCheck(parse: Callable[[str], Any], desc: str) -> ht.Check:
    """A string ``parse`` accepts (it raises ValueError otherwise)."""
    return ht.Check(lambda value: isinstance(value, str) and
                    parse(value) is not None, desc, "string")


_TIPv4Address = _IPCheck(ipaddress.IPv4Address, "IPv4 address")
_TIPv4Network = _IPCheck(
    lambda value: ipaddress.IPv4Network(value, strict=False), "IPv4 network")
_TIPv6Address = _IPCheck(ipaddress.IPv6Address, "IPv6 address")
_TIPv6Network = _IPCheck(
    lambda value: ipaddress.IPv6Network(value, strict=False), "IPv6 network")
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
