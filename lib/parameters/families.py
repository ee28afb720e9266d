"""The parameter families of the cluster objects.

Backend (per instance), NIC, node, disk (per template) and the instance
policy: one table per family, each entry a ParamSpec giving the default,
the type check and the documentation. objects fills and checks the
configuration with them; the LUs convert and merge changes with them
(ganeti.parameters.base); the CLI and the API documentation list them.
"""

from typing import Any

from ganeti import constants, errors, ht
from ganeti.parameters.base import (CheckParamDict, DeepCopy, FillDict,
                                    GetUpdatedParams, ParamDefaults,
                                    ParamSpec, ParamTable)

PP_DEFAULT = constants.PP_DEFAULT

# Backend parameters
BE_MINMEM = "minmem"
BE_MAXMEM = "maxmem"
BE_VCPUS = "vcpus"
BE_AUTO_BALANCE = "auto_balance"
BE_ALWAYS_FAILOVER = "always_failover"
BE_SPINDLE_USE = "spindle_use"
# Pre-2.6 name of the memory size: sets minmem and maxmem (never stored)
BE_MEMORY = "memory"

# NIC parameters
NIC_MODE = "mode"
NIC_LINK = "link"
NIC_VLAN = "vlan"
NIC_MODE_BRIDGED = "bridged"
NIC_MODE_ROUTED = "routed"
NIC_MODE_OVS = "openvswitch"
NIC_VALID_MODES = frozenset([NIC_MODE_BRIDGED, NIC_MODE_ROUTED, NIC_MODE_OVS])

# Node parameters
ND_OOB_PROGRAM = "oob_program"
ND_SPINDLE_COUNT = "spindle_count"
ND_EXCLUSIVE_STORAGE = "exclusive_storage"
ND_OVS = "ovs"
ND_OVS_NAME = "ovs_name"
ND_OVS_LINK = "ovs_link"
ND_SSH_PORT = "ssh_port"
ND_CPU_SPEED = "cpu_speed"

# Instance policy
ISPECS_MINMAX = "minmax"
ISPECS_MIN = "min"
ISPECS_MAX = "max"
ISPECS_STD = "std"
IPOLICY_DTS = "disk-templates"
IPOLICY_VCPU_RATIO = "vcpu-ratio"
IPOLICY_SPINDLE_RATIO = "spindle-ratio"
ISPEC_MEM_SIZE = "memory-size"
ISPEC_CPU_COUNT = "cpu-count"
ISPEC_DISK_COUNT = "disk-count"
ISPEC_DISK_SIZE = "disk-size"
ISPEC_NIC_COUNT = "nic-count"
ISPEC_SPINDLE_USE = "spindle-use"

# Disk access modes of the templates that have one
DT_RBD = "rbd"
DT_GLUSTER = "gluster"
DISK_KERNELSPACE = "kernelspace"
DISK_USERSPACE = "userspace"
DISK_VALID_ACCESS_MODES = frozenset([DISK_KERNELSPACE, DISK_USERSPACE])

TPort = ht.TInRange(1, 65535)


BE_PARAMETERS = ParamTable({
    BE_MINMEM: ParamSpec(128, ht.TNonNegativeInt,
                         "Memory (MiB) the instance may be shrunk to when"
                         " memory is short", unit=True),
    BE_MAXMEM: ParamSpec(128, ht.TNonNegativeInt,
                         "Memory (MiB) the instance is started with",
                         unit=True),
    BE_VCPUS: ParamSpec(1, ht.TStrictPositiveInt, "Number of virtual CPUs"),
    BE_AUTO_BALANCE: ParamSpec(True, ht.TBool,
                               "Whether N+1 redundancy checks and the"
                               " rebalancing tools consider the instance"),
    BE_ALWAYS_FAILOVER: ParamSpec(False, ht.TBool,
                                  "Fail over instead of live-migrating"),
    BE_SPINDLE_USE: ParamSpec(1, ht.TNonNegativeInt,
                              "Spindles the instance uses, for the"
                              " instance policy"),
}, aliases={BE_MEMORY: (BE_MINMEM, BE_MAXMEM)})

NIC_PARAMETERS: dict[str, ParamSpec] = {
    NIC_MODE: ParamSpec(NIC_MODE_BRIDGED, ht.TElemOf(NIC_VALID_MODES),
                        "How the NIC is connected to the host network"),
    NIC_LINK: ParamSpec(constants.DEFAULT_BRIDGE, ht.TString,
                        "Bridge, routing table or switch the NIC is"
                        " connected to, depending on the mode"),
    NIC_VLAN: ParamSpec("", ht.TString,
                        "VLANs for openvswitch mode (\".100\", \":200\")"),
}

ND_PARAMETERS: dict[str, ParamSpec] = {
    ND_OOB_PROGRAM: ParamSpec("", ht.TString,
                              "Out-of-band management program (empty: none)"),
    ND_SPINDLE_COUNT: ParamSpec(1, ht.TStrictPositiveInt,
                                "Spindles of the node, for the instance"
                                " policy"),
    ND_EXCLUSIVE_STORAGE: ParamSpec(False, ht.TBool,
                                    "Give each instance disk its own"
                                    " physical volumes"),
    ND_OVS: ParamSpec(False, ht.TBool, "Set up an Open vSwitch on the node"),
    ND_OVS_NAME: ParamSpec("switch1", ht.TString, "Name of the Open vSwitch"),
    ND_OVS_LINK: ParamSpec("", ht.TString,
                           "Physical interface attached to the Open vSwitch"),
    ND_SSH_PORT: ParamSpec(22, TPort, "Port of the node's SSH daemon"),
    ND_CPU_SPEED: ParamSpec(1.0, ht.TPositiveNumber,
                            "CPU speed relative to the cluster's typical"
                            " node, for the allocator"),
}

_CLASSIC_DRBD_SYNC_SPEED = 60 * 1024
_TDrbdInt = ht.TNonNegativeInt
_TAccess = ht.TElemOf(DISK_VALID_ACCESS_MODES)

DISK_PARAMETERS: dict[str, dict[str, ParamSpec]] = {
    constants.DT_DISKLESS: {},
    constants.DT_FILE: {},
    constants.DT_SHARED_FILE: {},
    constants.DT_BLOCK: {},
    constants.DT_PLAIN: {
        "stripes": ParamSpec(1, ht.TStrictPositiveInt,
                             "Number of LVM stripes"),
    },
    constants.DT_DRBD8: {
        "resync-rate": ParamSpec(_CLASSIC_DRBD_SYNC_SPEED, _TDrbdInt,
                                 "Static resync rate (KiB/s)"),
        "data-stripes": ParamSpec(1, ht.TStrictPositiveInt,
                                  "LVM stripes of the data volume"),
        "meta-stripes": ParamSpec(1, ht.TStrictPositiveInt,
                                  "LVM stripes of the metadata volume"),
        "disk-barriers": ParamSpec("n", ht.TString,
                                   "Disk barriers to disable (DRBD"
                                   " --no-disk-* letters, \"n\": none)"),
        "meta-barriers": ParamSpec(False, ht.TBool,
                                   "Disable metadata flushes"),
        "metavg": ParamSpec("xenvg", ht.TString,
                            "Volume group of the metadata volumes"),
        "disk-custom": ParamSpec("", ht.TString,
                                 "Extra options for drbdsetup disk"),
        "net-custom": ParamSpec("", ht.TString,
                                "Extra options for drbdsetup net"),
        "protocol": ParamSpec("C", ht.TElemOf(["A", "B", "C"]),
                              "DRBD replication protocol"),
        "dynamic-resync": ParamSpec(False, ht.TBool,
                                    "Use the dynamic resync controller"),
        "c-plan-ahead": ParamSpec(20, _TDrbdInt,
                                  "Dynamic resync planning horizon (0.1 s)"),
        "c-fill-target": ParamSpec(0, _TDrbdInt,
                                   "Dynamic resync fill target (sectors)"),
        "c-delay-target": ParamSpec(1, _TDrbdInt,
                                    "Dynamic resync delay target (0.1 s)"),
        "c-max-rate": ParamSpec(_CLASSIC_DRBD_SYNC_SPEED, _TDrbdInt,
                                "Dynamic resync maximum rate (KiB/s)"),
        "c-min-rate": ParamSpec(4 * 1024, _TDrbdInt,
                                "Dynamic resync minimum rate (KiB/s)"),
    },
    constants.DT_EXT: {
        "access": ParamSpec(DISK_KERNELSPACE, _TAccess,
                            "Whether the hypervisor accesses the disk through"
                            " the kernel or in user space"),
    },
    DT_RBD: {
        "pool": ParamSpec("rbd", ht.TString, "RADOS pool of the volumes"),
        "access": ParamSpec(DISK_KERNELSPACE, _TAccess,
                            "Kernel or user space access"),
    },
    DT_GLUSTER: {
        "host": ParamSpec("127.0.0.1", ht.TString, "Gluster server"),
        "port": ParamSpec(24007, TPort, "Gluster server port"),
        "volume": ParamSpec("gv0", ht.TString, "Gluster volume"),
        "access": ParamSpec(DISK_KERNELSPACE, _TAccess,
                            "Kernel or user space access"),
    },
}

# Storage types a disk's dev_type may name (every template but diskless)
DISK_DEV_TYPES = frozenset(DISK_PARAMETERS) - {constants.DT_DISKLESS}

_TISpecValue = ht.TNonNegativeInt
ISPEC_PARAMETERS: dict[str, ParamSpec] = {
    ISPEC_MEM_SIZE: ParamSpec(128, _TISpecValue, "Memory size (MiB)"),
    ISPEC_CPU_COUNT: ParamSpec(1, _TISpecValue, "Number of virtual CPUs"),
    ISPEC_DISK_COUNT: ParamSpec(1, _TISpecValue, "Number of disks"),
    ISPEC_DISK_SIZE: ParamSpec(1024, _TISpecValue, "Size of a disk (MiB)"),
    ISPEC_NIC_COUNT: ParamSpec(1, _TISpecValue, "Number of NICs"),
    ISPEC_SPINDLE_USE: ParamSpec(1, _TISpecValue, "Spindles used"),
}
ISPECS_MINMAX_DEFAULTS = {
    ISPECS_MIN: {ISPEC_MEM_SIZE: 128, ISPEC_CPU_COUNT: 1,
                 ISPEC_DISK_COUNT: 1, ISPEC_DISK_SIZE: 1024,
                 ISPEC_NIC_COUNT: 1, ISPEC_SPINDLE_USE: 1},
    ISPECS_MAX: {ISPEC_MEM_SIZE: 32768, ISPEC_CPU_COUNT: 8,
                 ISPEC_DISK_COUNT: 16, ISPEC_DISK_SIZE: 1024 * 1024,
                 ISPEC_NIC_COUNT: 8, ISPEC_SPINDLE_USE: 12},
}

_TFullISpec = ht.TStrictDict(True, True, {key: spec.check for key, spec
                                          in ISPEC_PARAMETERS.items()})
_TPartialISpec = ht.TStrictDict(False, True, {key: spec.check for key, spec
                                              in ISPEC_PARAMETERS.items()})


def _MinMaxOrdered(value: list) -> bool:
    return bool(value) and all(
        pair[ISPECS_MIN][key] <= pair[ISPECS_MAX][key]
        for pair in value for key in ISPEC_PARAMETERS)


_TMinMax = ht.TAnd(
    ht.TListOf(ht.TStrictDict(True, True, {ISPECS_MIN: _TFullISpec,
                                           ISPECS_MAX: _TFullISpec})),
    ht.Check(_MinMaxOrdered, "non-empty with each min <= its max"))

IPOLICY_PARAMETERS: dict[str, ParamSpec] = {
    ISPECS_MINMAX: ParamSpec([ISPECS_MINMAX_DEFAULTS], _TMinMax,
                             "Allowed ranges of instance specs; an instance"
                             " must fit one min/max pair"),
    ISPECS_STD: ParamSpec({key: spec.default for key, spec
                           in ISPEC_PARAMETERS.items()}, _TPartialISpec,
                          "Standard instance specs, used by the capacity"
                          " tools"),
    IPOLICY_DTS: ParamSpec(sorted(constants.DISK_TEMPLATES),
                           ht.TListOf(ht.TElemOf(DISK_PARAMETERS)),
                           "Disk templates instances may use"),
    IPOLICY_VCPU_RATIO: ParamSpec(4.0, ht.TPositiveNumber,
                                  "Maximum virtual to physical CPU ratio"),
    IPOLICY_SPINDLE_RATIO: ParamSpec(32.0, ht.TPositiveNumber,
                                     "Maximum instance spindle use per"
                                     " physical spindle"),
}


BEC_DEFAULTS = ParamDefaults(BE_PARAMETERS)
NICC_DEFAULTS = ParamDefaults(NIC_PARAMETERS)
NDC_DEFAULTS = ParamDefaults(ND_PARAMETERS)
DISK_DT_DEFAULTS = {dt: ParamDefaults(table)
                    for dt, table in DISK_PARAMETERS.items()}
IPOLICY_DEFAULTS = ParamDefaults(IPOLICY_PARAMETERS)


def CheckDiskParams(diskparams: Any, what: str = "disk") -> None:
    """Check a per-template dict of disk parameters (overrides only)."""
    if not isinstance(diskparams, dict):
        raise errors.TypeEnforcementError("%s parameters must be a"
                                          " dictionary" % what)
    for template, params in diskparams.items():
        table = DISK_PARAMETERS.get(template)
        if table is None:
            raise errors.TypeEnforcementError("Unknown disk template %r in %s"
                                              " parameters" %
                                              (template, what))
        CheckParamDict(table, params, "%s %s" % (template, what))


def UpdatedDiskParams(old: dict, changes: dict) -> dict:
    """Per-template disk parameter overrides with each template's changes
    applied (values converted from text and checked; None or "default"
    resets a parameter); a template left without overrides is dropped.
    OpPrereqError for an unknown template or a bad value."""
    result = {template: dict(params) for template, params in old.items()}
    for template, params in changes.items():
        if template not in DISK_PARAMETERS:
            raise errors.OpPrereqError("Unknown disk template %r in disk"
                                       " parameters" % template,
                                       errors.ECODE_INVAL)
        result[template] = GetUpdatedParams(
            old.get(template), params, DISK_PARAMETERS[template],
            "%s disk" % template)
        if not result[template]:
            del result[template]
    return result


def CheckIPolicy(ipolicy: Any, complete: bool) -> None:
    """Check an instance policy; ``complete`` for a cluster's full policy.

    A node group's policy only holds the keys it overrides.
    """
    CheckParamDict(IPOLICY_PARAMETERS, ipolicy, "instance policy")
    if not complete:
        return
    missing = set(IPOLICY_PARAMETERS) - set(ipolicy)
    if missing:
        raise errors.TypeEnforcementError("Instance policy lacks %s" %
                                          ", ".join(sorted(missing)))
    std = ipolicy[ISPECS_STD]
    if not _TFullISpec(std):
        raise errors.TypeEnforcementError("Standard specs must give %s" %
                                          ", ".join(sorted(ISPEC_PARAMETERS)))
    bounds = ipolicy[ISPECS_MINMAX][0]
    for key, value in std.items():
        if not bounds[ISPECS_MIN][key] <= value <= bounds[ISPECS_MAX][key]:
            raise errors.TypeEnforcementError(
                "Standard spec %s=%s is outside the first min/max range"
                " [%s, %s]" % (key, value, bounds[ISPECS_MIN][key],
                               bounds[ISPECS_MAX][key]))


def FillIPolicy(default_ipolicy: dict, custom_ipolicy: dict | None) -> dict:
    """A group's effective policy: the cluster's with the group's overrides.

    ``std`` is merged key by key; the other keys are replaced as a whole.
    """
    result = DeepCopy(custom_ipolicy or {})
    for key, value in default_ipolicy.items():
        if key not in result:
            result[key] = DeepCopy(value)
        elif key == ISPECS_STD:
            result[key] = FillDict(value, result[key])
    return result
