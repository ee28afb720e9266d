"""Instances and what they are made of: NICs and disks.
"""

# Field annotations stay strings: ConfigObject reads them, never evaluates
from __future__ import annotations

from typing import Any

from ganeti import errors, ht
from ganeti.objects.base import (_TIMESTAMP_CHECKS, ConfigObject, NewUUID,
                                 TaggableObject, _TIPAddress, _TMac,
                                 _TStringList)
from ganeti.parameters.base import CheckParamDict, ExpandAliases
from ganeti.parameters.families import (BE_PARAMETERS, DISK_DEV_TYPES,
                                        NIC_PARAMETERS, TPort)
from ganeti.parameters.hypervisors import HVC_GLOBALS, CheckHvParams

# Instance states
ADMINST_UP = "up"
ADMINST_DOWN = "down"
ADMINST_OFFLINE = "offline"
ADMINST_ALL = frozenset([ADMINST_UP, ADMINST_DOWN, ADMINST_OFFLINE])
ADMIN_SOURCE = "admin"
USER_SOURCE = "user"
INSTANCE_STATE_SOURCES = frozenset([ADMIN_SOURCE, USER_SOURCE])

# Disks
DISK_RDWR = "rw"
DISK_RDONLY = "ro"
DISK_ACCESS_SET = frozenset([DISK_RDWR, DISK_RDONLY])


class NIC(ConfigObject):
    """A network interface of an instance (stored inside the instance)."""

    name: str | None
    mac: str
    ip: str | None
    network: str | None
    nicparams: dict[str, Any]
    netinfo: dict[str, Any] | None
    pci: int | None
    hvinfo: dict[str, Any] | None
    uuid: str
    _FIELD_CHECKS = {
        "name": ht.TString,
        "mac": _TMac,
        "ip": _TIPAddress,
        "network": ht.TNonEmptyString,
        "nicparams": ht.TDict,
        "netinfo": ht.TDict,
        "pci": ht.TNonNegativeInt,
        "hvinfo": ht.TDict,
        "uuid": ht.TNonEmptyString,
    }
    _FIELD_DEFAULTS = {"nicparams": {}}
    _REQUIRED = frozenset(["mac"])

    def UpgradeConfig(self) -> None:
        super().UpgradeConfig()
        if self.uuid is None:
            self.uuid = NewUUID()

    def _ValidateParams(self) -> None:
        CheckParamDict(NIC_PARAMETERS, self.nicparams or {}, "NIC")


class Disk(ConfigObject):
    """A disk (top-level, keyed by UUID) or a child device of one."""

    dev_type: str
    logical_id: list[Any]
    children: list[Disk]
    nodes: list[str]
    iv_name: str | None
    size: int
    mode: str | None
    params: dict[str, Any]
    spindles: int | None
    name: str | None
    pci: int | None
    hvinfo: dict[str, Any] | None
    forthcoming: bool | None
    dynamic_params: dict[str, Any] | None
    serial_no: int
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "dev_type": ht.TElemOf(DISK_DEV_TYPES),
        "logical_id": ht.TList,
        "nodes": _TStringList,
        "iv_name": ht.TString,
        "size": ht.TNonNegativeInt,
        "mode": ht.TElemOf(DISK_ACCESS_SET),
        "params": ht.TDict,
        "spindles": ht.TNonNegativeInt,
        "name": ht.TString,
        "pci": ht.TNonNegativeInt,
        "hvinfo": ht.TDict,
        "forthcoming": ht.TBool,
        "dynamic_params": ht.TDict,
    })
    _FIELD_DEFAULTS = {"params": {}, "nodes": [], "children": []}
    _REQUIRED = frozenset(["dev_type", "size", "logical_id"])


Disk._NESTED = {"children": (Disk, list)}
Disk._UpdateGetters()


class Instance(TaggableObject):
    """A virtual machine.

    ``disks`` holds the UUIDs of the instance's disks, which live in the
    configuration's top-level ``disks``. ``disk_template`` is only read
    from configurations older than 3.1; it is derived from the disks now.
    """

    name: str
    primary_node: str
    os: str
    hypervisor: str
    hvparams: dict[str, Any]
    beparams: dict[str, Any]
    osparams: dict[str, Any]
    osparams_private: dict[str, Any]
    admin_state: str
    admin_state_source: str
    nics: list[NIC]
    disks: list[str]
    disk_template: str | None
    disks_active: bool
    network_port: int | None
    forthcoming: bool | None
    serial_no: int
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "name": ht.TNonEmptyString,
        "primary_node": ht.TNonEmptyString,
        "os": ht.TString,
        "hypervisor": ht.TNonEmptyString,
        "hvparams": ht.TDict,
        "beparams": ht.TDict,
        "osparams": ht.TDict,
        "osparams_private": ht.TDict,
        "admin_state": ht.TElemOf(ADMINST_ALL),
        "admin_state_source": ht.TElemOf(INSTANCE_STATE_SOURCES),
        "nics": ht.TList,
        "disks": ht.TSetOf(ht.TNonEmptyString),
        "disks_active": ht.TBool,
        "network_port": TPort,
        "forthcoming": ht.TBool,
    })
    _FIELD_DEFAULTS = {
        "hvparams": {}, "beparams": {}, "osparams": {},
        "osparams_private": {}, "admin_state": ADMINST_DOWN,
        "admin_state_source": ADMIN_SOURCE, "nics": [], "disks": [],
        "disks_active": False,
    }
    _REQUIRED = frozenset(["name", "primary_node", "hypervisor", "uuid"])

    def UpgradeConfig(self) -> None:
        super().UpgradeConfig()
        self.beparams = ExpandAliases(BE_PARAMETERS, self.beparams)
        self.disk_template = None

    def _ValidateParams(self) -> None:
        super()._ValidateParams()
        CheckParamDict(BE_PARAMETERS, self.beparams or {}, "backend")
        if self.hypervisor:
            CheckHvParams(self.hypervisor, self.hvparams or {},
                          "instance hypervisor parameters")
        if HVC_GLOBALS & set(self.hvparams or {}):
            raise errors.TypeEnforcementError(
                "hypervisor parameters %s can only be set cluster-wide" %
                ", ".join(sorted(HVC_GLOBALS & set(self.hvparams))))


Instance._NESTED = {"nics": (NIC, list)}
Instance._UpdateGetters()
