"""The hypervisors' parameters, at the level of syntax and defaults.

One table per hypervisor (name -> ParamSpec), in HV_PARAMETERS by
hypervisor name: what the master needs to fill, check and document
hypervisor parameters without the hypervisor classes (objects fills a
cluster's defaults from here). What only a node can judge (files,
devices, users) is checked by the hypervisor class on the node
(``NODE_CHECKS``); what the values mean to QEMU is in hv_kvm, apart from
the value-to-QEMU maps whose keys are the valid values.
"""

import os
import re
import shlex
from typing import Any

from ganeti import constants, errors, ht, netutils
from ganeti.parameters.base import (CheckParamDict, FillDict,
                                    GetUpdatedParams, ParamDefaults,
                                    ParamSpec)
from ganeti.parameters.families import NIC_MODE_BRIDGED, NIC_MODE_ROUTED

# Parameters that only the cluster may set (never per instance or OS)
HV_MIGRATION_PORT = "migration_port"
HV_MIGRATION_BANDWIDTH = "migration_bandwidth"
HV_MIGRATION_MODE = "migration_mode"
HVC_GLOBALS = frozenset([HV_MIGRATION_PORT, HV_MIGRATION_BANDWIDTH,
                         HV_MIGRATION_MODE])

MIGRATION_MODE_PARAM = ParamSpec(
    constants.HT_MIGRATION_LIVE, ht.TElemOf(constants.HT_MIGRATION_MODES),
    "Default migration mode: live (the instance keeps running) or"
    " non-live (paused while its memory is copied); cluster-wide only")

KVM_DEFAULT_PATH = "/usr/bin/qemu-system-x86_64"

# KVM parameter names (Ganeti's)
HV_KERNEL_PATH = "kernel_path"
HV_INITRD_PATH = "initrd_path"
HV_KERNEL_ARGS = "kernel_args"
HV_ROOT_PATH = "root_path"
HV_BOOT_ORDER = "boot_order"
HV_CDROM_IMAGE_PATH = "cdrom_image_path"
HV_ACPI = "acpi"
HV_CPU_TYPE = "cpu_type"
HV_CPU_CORES = "cpu_cores"
HV_CPU_THREADS = "cpu_threads"
HV_CPU_SOCKETS = "cpu_sockets"
HV_CPU_MASK = "cpu_mask"
HV_MACHINE_VERSION = "machine_version"
HV_DISK_TYPE = "disk_type"
HV_NIC_TYPE = "nic_type"
HV_DISK_CACHE = "disk_cache"
HV_VNC_BIND_ADDRESS = "vnc_bind_address"
HV_SERIAL_CONSOLE = "serial_console"
HV_SERIAL_SPEED = "serial_speed"
HV_MIGRATION_DOWNTIME = "migration_downtime"
HV_KVM_FLAG = "kvm_flag"
HV_MEM_PATH = "mem_path"
HV_USE_CHROOT = "use_chroot"
HV_SECURITY_MODEL = "security_model"
HV_SECURITY_DOMAIN = "security_domain"
HV_KVM_EXTRA = "kvm_extra"
HV_REBOOT_BEHAVIOR = "reboot_behavior"
HV_USE_LOCALTIME = "use_localtime"
HV_KVM_PATH = "kvm_path"
HV_USER_SHUTDOWN = "user_shutdown"

HT_BO_DISK = "disk"
HT_BO_CDROM = "cdrom"
HT_BO_NETWORK = "network"
HT_BO_FLOPPY = "floppy"
# boot_order -> QEMU's -boot letter
KVM_BOOT_ORDER_FLAGS = {HT_BO_DISK: "c", HT_BO_CDROM: "d",
                        HT_BO_NETWORK: "n", HT_BO_FLOPPY: "a"}

HT_DISK_PARAVIRTUAL = "paravirtual"
HT_NIC_PARAVIRTUAL = "paravirtual"
# disk_type -> QEMU's -drive if=
KVM_DISK_INTERFACES = {HT_DISK_PARAVIRTUAL: "virtio", "ide": "ide",
                       "scsi": "scsi", "sd": "sd", "mtd": "mtd",
                       "pflash": "pflash"}
# nic_type -> QEMU device model
KVM_NIC_MODELS = {HT_NIC_PARAVIRTUAL: "virtio-net-pci",
                  "rtl8139": "rtl8139", "ne2k_pci": "ne2k_pci",
                  "ne2k_isa": "ne2k_isa", "i82551": "i82551",
                  "i82557b": "i82557b", "i82559er": "i82559er",
                  "pcnet": "pcnet", "e1000": "e1000"}
# NIC modes kvm-ifup sets up: a bridge port, or a route to the NIC's IP
KVM_NIC_MODES = frozenset([NIC_MODE_BRIDGED, NIC_MODE_ROUTED])
HT_CACHE_DEFAULT = "default"
KVM_DISK_CACHES = frozenset([HT_CACHE_DEFAULT, "none", "writethrough",
                             "writeback"])
HT_KVM_ENABLED = "enabled"
HT_KVM_DISABLED = "disabled"
# kvm_flag -> QEMU's accelerator (None: QEMU's default)
KVM_FLAG_ACCEL = {"": None, HT_KVM_ENABLED: "kvm", HT_KVM_DISABLED: "tcg"}
HT_SM_NONE = "none"
HT_SM_USER = "user"
HT_KVM_REBOOT = "reboot"
HT_KVM_EXIT = "exit"
CPU_PINNING_ALL = "all"
KVM_SERIAL_SPEEDS = frozenset([9600, 19200, 38400, 57600, 115200])


def _IsAbsPathOrEmpty(value: Any) -> bool:
    return isinstance(value, str) and (value == "" or os.path.isabs(value))


def _ParseCpuList(text: str) -> list[int]:
    """'0-2,5' -> [0, 1, 2, 5]; ValueError if malformed."""
    cpus: list[int] = []
    for part in text.split(","):
        match = re.match(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$", part)
        if not match:
            raise ValueError("invalid CPU range %r" % part)
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        if high < low:
            raise ValueError("invalid CPU range %r" % part)
        cpus.extend(range(low, high + 1))
    return cpus


def ParseCpuMask(mask: str) -> list[list[int] | None]:
    """A cpu_mask as per-vCPU CPU lists; None stands for "all".

    "all" or one list ("0-2,4") applies to every vCPU; a colon-separated
    list ("0:1-2:all") pins vCPU i to entry i. ValueError if malformed.
    """
    result: list[list[int] | None] = []
    for entry in mask.split(":"):
        entry = entry.strip()
        result.append(None if entry == CPU_PINNING_ALL
                      else _ParseCpuList(entry))
    return result


def _IsCpuMask(value: Any) -> bool:
    if not isinstance(value, str) or not value:
        return False
    try:
        ParseCpuMask(value)
    except ValueError:
        return False
    return True


def _IsVncAddress(value: Any) -> bool:
    return value == "" or (isinstance(value, str) and
                           netutils.IsValidIP(value))


def _IsShellWords(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        shlex.split(value)
    except ValueError:
        return False
    return True


def _Check(fn: Any, desc: str) -> ht.Check:
    return ht.Check(fn, desc)


_TPath = _Check(_IsAbsPathOrEmpty, "empty or an absolute path")
_TElem = ht.TElemOf

KVM_PARAMETERS: dict[str, ParamSpec] = {
    HV_KVM_PATH: ParamSpec(
        KVM_DEFAULT_PATH, _Check(lambda v: isinstance(v, str) and
                                 os.path.isabs(v), "an absolute path"),
        "QEMU system emulator binary"),
    HV_KERNEL_PATH: ParamSpec(
        "", _TPath, "Kernel booted directly (empty: boot from the disks)"),
    HV_INITRD_PATH: ParamSpec(
        "", _TPath, "Initial ramdisk for kernel_path"),
    HV_KERNEL_ARGS: ParamSpec(
        "ro", ht.TString, "Kernel command line (after root=)"),
    HV_ROOT_PATH: ParamSpec(
        "/dev/vda1", ht.TString,
        "Root device given to kernel_path (root=; empty: none)"),
    HV_BOOT_ORDER: ParamSpec(
        HT_BO_DISK, _TElem(frozenset(KVM_BOOT_ORDER_FLAGS)),
        "Boot device without kernel_path: disk, cdrom, network or floppy"),
    HV_CDROM_IMAGE_PATH: ParamSpec(
        "", _TPath, "ISO image attached as CD-ROM"),
    HV_ACPI: ParamSpec(
        True, ht.TBool, "Whether the guest has ACPI (needed for a clean"
        " power-down)"),
    HV_CPU_TYPE: ParamSpec(
        "", ht.TString, "QEMU CPU model (-cpu; empty: QEMU's default)"),
    HV_CPU_CORES: ParamSpec(
        0, ht.TNonNegativeInt, "Cores per socket (0: QEMU's choice)"),
    HV_CPU_THREADS: ParamSpec(
        0, ht.TNonNegativeInt, "Threads per core (0: QEMU's choice)"),
    HV_CPU_SOCKETS: ParamSpec(
        0, ht.TNonNegativeInt, "Sockets (0: QEMU's choice)"),
    HV_CPU_MASK: ParamSpec(
        CPU_PINNING_ALL, _Check(_IsCpuMask, "a CPU mask"),
        "Host CPUs the vCPUs run on: 'all', a list like '0-2,4' or one"
        " entry per vCPU separated by colons"),
    HV_MACHINE_VERSION: ParamSpec(
        "", ht.TString, "QEMU machine type (-machine; empty: default)"),
    HV_DISK_TYPE: ParamSpec(
        HT_DISK_PARAVIRTUAL, _TElem(frozenset(KVM_DISK_INTERFACES)),
        "Disk interface: paravirtual (virtio), ide, scsi, sd, mtd, pflash"),
    HV_NIC_TYPE: ParamSpec(
        HT_NIC_PARAVIRTUAL, _TElem(frozenset(KVM_NIC_MODELS)),
        "NIC model: paravirtual (virtio) or an emulated card"),
    HV_DISK_CACHE: ParamSpec(
        HT_CACHE_DEFAULT, _TElem(KVM_DISK_CACHES),
        "Host cache mode of the disks: default, none, writethrough,"
        " writeback"),
    HV_VNC_BIND_ADDRESS: ParamSpec(
        "", _Check(_IsVncAddress, "empty or an IP address"),
        "Address the VNC console listens on, on the instance's network"
        " port (empty: no VNC)"),
    HV_SERIAL_CONSOLE: ParamSpec(
        True, ht.TBool, "Serial console on a Unix socket (gnt-instance"
        " console)"),
    HV_SERIAL_SPEED: ParamSpec(
        38400, _TElem(KVM_SERIAL_SPEEDS), "Serial console speed (baud)"),
    HV_MIGRATION_PORT: ParamSpec(
        8102, ht.TInRange(1, 65535),
        "TCP port migrations arrive on"),
    HV_MIGRATION_BANDWIDTH: ParamSpec(
        32, ht.TPositiveInt, "Migration bandwidth limit (MiB/s)"),
    HV_MIGRATION_DOWNTIME: ParamSpec(
        30, ht.TPositiveInt, "Longest pause at the end of a live"
        " migration (ms)"),
    HV_MIGRATION_MODE: MIGRATION_MODE_PARAM,
    HV_KVM_FLAG: ParamSpec(
        "", _TElem(frozenset(KVM_FLAG_ACCEL)),
        "Hardware acceleration: enabled (KVM), disabled (TCG emulation) or"
        " empty (QEMU's default, TCG)"),
    HV_MEM_PATH: ParamSpec(
        "", _TPath, "Back the guest memory by files in this directory"
        " (hugetlbfs)"),
    HV_USE_CHROOT: ParamSpec(
        False, ht.TBool, "Run QEMU chrooted into an empty directory"),
    HV_SECURITY_MODEL: ParamSpec(
        HT_SM_NONE, _TElem(frozenset([HT_SM_NONE, HT_SM_USER])),
        "none (QEMU runs as root) or user (as security_domain)"),
    HV_SECURITY_DOMAIN: ParamSpec(
        "", ht.TString, "User QEMU runs as with security_model=user"),
    HV_KVM_EXTRA: ParamSpec(
        "", _Check(_IsShellWords, "shell words"),
        "Extra QEMU arguments (shell words)"),
    HV_REBOOT_BEHAVIOR: ParamSpec(
        HT_KVM_REBOOT, _TElem(frozenset([HT_KVM_REBOOT, HT_KVM_EXIT])),
        "What a reboot inside the guest does: reboot, or exit (QEMU stops,"
        " Ganeti restarts it)"),
    HV_USE_LOCALTIME: ParamSpec(
        False, ht.TBool, "Guest clock in local time instead of UTC"),
    HV_USER_SHUTDOWN: ParamSpec(
        False, ht.TBool, "Keep QEMU when the guest powers off, so that"
        " the shutdown is reported as done by the user (USER_down)"),
}


FAKE_PARAMETERS: dict[str, ParamSpec] = {
    HV_MIGRATION_MODE: MIGRATION_MODE_PARAM,
}

# Hypervisor name -> its parameter table
HV_PARAMETERS: dict[str, dict[str, ParamSpec]] = {
    constants.HT_FAKE: FAKE_PARAMETERS,
    constants.HT_KVM: KVM_PARAMETERS,
}


def HvDefaults(hv_name: str) -> dict:
    """Built-in defaults of a hypervisor's parameters ({} if this version
    lacks the hypervisor)."""
    return ParamDefaults(HV_PARAMETERS.get(hv_name, {}))


def CheckHvParams(hv_name: str, hvparams: Any, what: str) -> None:
    """Raise TypeEnforcementError naming an unknown or ill-typed
    parameter of ``hv_name`` in ``hvparams`` (overrides only); those of
    a hypervisor this version lacks are kept unchecked."""
    table = HV_PARAMETERS.get(hv_name)
    if table is None:
        return
    try:
        CheckParamDict(table, hvparams, "%s hypervisor" % hv_name)
    except errors.TypeEnforcementError as err:
        raise errors.TypeEnforcementError("%s: %s" % (what, err)) from None


def HvParameters(hv_name: str) -> dict[str, ParamSpec]:
    """The parameter table of a hypervisor, or OpPrereqError naming the
    unknown hypervisor."""
    try:
        return HV_PARAMETERS[hv_name]
    except (KeyError, TypeError):
        raise errors.OpPrereqError(
            "Unknown hypervisor %r (known: %s)" %
            (hv_name, ", ".join(sorted(HV_PARAMETERS))),
            errors.ECODE_INVAL) from None


def UpdatedHvParams(hv_name: str, current: dict | None,
                    changes: dict) -> dict:
    """A hypervisor's complete cluster parameters after ``changes``.

    Values typed on the command line are converted to their declared
    types; "default" or None resets a parameter to the built-in default;
    an unknown or ill-typed parameter is refused by name (OpPrereqError).
    Every declared parameter is present in the result.
    """
    table = HvParameters(hv_name)
    return FillDict(ParamDefaults(table), GetUpdatedParams(
        current, changes, table, "%s hypervisor" % hv_name))
