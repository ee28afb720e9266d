"""IP networks, which instances' NICs can be connected to.
"""

# Field annotations stay strings: ConfigObject reads them, never evaluates
from __future__ import annotations

from typing import Self

from ganeti import ht
from ganeti.objects.base import (_TIMESTAMP_CHECKS, TaggableObject,
                                 _TBitString, _TIPAddress, _TNetworkAddress)


class Network(TaggableObject):
    """An IP network instances' NICs can be connected to."""

    name: str
    serial_no: int
    mac_prefix: str | None
    network: str
    gateway: str | None
    network6: str | None
    gateway6: str | None
    reservations: str | None
    ext_reservations: str | None
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "name": ht.TNonEmptyString,
        "mac_prefix": ht.TString,
        "network": _TNetworkAddress,
        "gateway": _TIPAddress,
        "network6": _TNetworkAddress,
        "gateway6": _TIPAddress,
        "reservations": _TBitString,
        "ext_reservations": _TBitString,
    })
    _REQUIRED = frozenset(["name", "network", "uuid"])
    # Keys of Ganeti 2.12's networks, dropped on load as Ganeti does
    _OBSOLETE_KEYS = ("network_type", "family")

    @classmethod
    def FromDict(cls, data: dict) -> Self:
        for key in cls._OBSOLETE_KEYS:
            data.pop(key, None)
        return super().FromDict(data)
