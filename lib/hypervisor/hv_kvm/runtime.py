"""The files of an instance's QEMU and its runtime: the command line
built from the instance's parameters, saved with the NICs (their taps)
and the disks (their paths) in it.
"""

import hashlib
import json
import logging
import os
import shlex
from typing import Any

from ganeti import constants, errors, objects, pathutils
from ganeti.hypervisor import hv_base
from ganeti.parameters.hypervisors import (
    HT_CACHE_DEFAULT, HT_KVM_EXIT, HT_SM_USER, HV_ACPI, HV_BOOT_ORDER,
    HV_CDROM_IMAGE_PATH, HV_CPU_CORES, HV_CPU_MASK, HV_CPU_SOCKETS,
    HV_CPU_THREADS, HV_CPU_TYPE, HV_DISK_CACHE, HV_DISK_TYPE, HV_INITRD_PATH,
    HV_KERNEL_ARGS, HV_KERNEL_PATH, HV_KVM_EXTRA, HV_KVM_FLAG, HV_KVM_PATH,
    HV_MACHINE_VERSION, HV_MEM_PATH, HV_NIC_TYPE, HV_REBOOT_BEHAVIOR,
    HV_ROOT_PATH, HV_SECURITY_DOMAIN, HV_SECURITY_MODEL, HV_SERIAL_CONSOLE,
    HV_SERIAL_SPEED, HV_USE_CHROOT, HV_USE_LOCALTIME, HV_USER_SHUTDOWN,
    HV_VNC_BIND_ADDRESS)
from ganeti.parameters.hypervisors import \
    KVM_BOOT_ORDER_FLAGS as _BOOT_ORDER_FLAGS
from ganeti.parameters.hypervisors import \
    KVM_DISK_INTERFACES as _DISK_INTERFACES
from ganeti.parameters.hypervisors import KVM_FLAG_ACCEL as _KVM_FLAG_ACCEL
from ganeti.parameters.hypervisors import KVM_NIC_MODELS as _NIC_MODELS
from ganeti.parameters.hypervisors import KVM_NIC_MODES as _NIC_MODES
from ganeti.utils import io

_UNIX_PATH_MAX = 107
# Longest socket directory that leaves room for long instance names
_CTRL_DIR_MAX = 48
_SHORT_CTRL_PREFIX = "/run/ganeti-kvm"

_VNC_BASE_PORT = 5900


def _CheckDrivePath(name: str, path: str) -> None:
    """QEMU's -drive option list cannot carry a comma in a file name."""
    if "," in path:
        raise errors.HypervisorError(
            "Disk path %s of instance %s contains a comma" % (path, name))


def IsLocalDisk(dev_type: str) -> bool:
    """Whether a disk's storage is reachable from its primary node only
    (file, plain): a migration copies it to the target (NBD mirror)."""
    return dev_type not in constants.DTS_MIRRORED


def _DriveFile(disk: objects.Disk, path: str) -> str:
    """Where a drive reads and writes: the device path, or for drbd disks
    an NBD export on this node (no FUSE file in between): the image
    daemon's own where it serves one on its Unix socket (a primary), else
    the device daemon's (the target of a migration, whose image daemon
    serves the source over TLS until the disk is next assembled). The
    target of a migration puts its own in."""
    if disk.dev_type in constants.DTS_INT_MIRROR:
        port = disk.logical_id[2]
        server = pathutils.DrbdImageSocketPath(port)
        if not os.path.exists(server):
            server = pathutils.DrbdSocketPath(port)
        return "file=nbd+unix:///disk?socket=%s" % server
    return "file=%s" % path


# Seconds a drbd disk's NBD client holds the guest's requests while its
# block daemon is away (grow-disk and activate-disks restart it, see
# storage.drbd) and connects again; only then do they fail. Without it
# the first request after the daemon went fails, and the guest's disk
# with it
_NBD_RECONNECT_DELAY = 300


class KVMRuntime(hv_base.BaseHypervisor):
    """The hypervisor directory's files and the saved runtimes."""

    def __init__(self, root_dir: str | None = None):
        self._root = root_dir or pathutils.KVM_HV_DIR
        self._dirs = {sub: os.path.join(self._root, sub)
                      for sub in ("pid", "ctrl", "log", "conf", "nic",
                                  "chroot")}
        # The socket directory is made when an instance starts
        io.EnsureDirs([(self._root, constants.RUN_DIRS_MODE)] +
                      [(path, 0o750) for kind, path in self._dirs.items()
                       if kind != "ctrl"])
        if len(self._dirs["ctrl"]) > _CTRL_DIR_MAX:
            self._dirs["ctrl"] = "%s-%s" % (
                _SHORT_CTRL_PREFIX,
                hashlib.sha1(self._root.encode()).hexdigest()[:10])

    # Paths ---------------------------------------------------------------

    def _Path(self, kind: str, instance_name: str, suffix: str = "") -> str:
        if not instance_name or "/" in instance_name or \
                instance_name.startswith("."):
            raise errors.HypervisorError("Invalid instance name %r" %
                                         instance_name)
        return os.path.join(self._dirs[kind], instance_name + suffix)

    def PidFile(self, name: str) -> str:
        return self._Path("pid", name)

    def QmpSocket(self, name: str) -> str:
        return self._Path("ctrl", name, ".qmp")

    def SerialSocket(self, name: str) -> str:
        return self._Path("ctrl", name, ".serial")

    def SerialLog(self, name: str) -> str:
        return self._Path("log", name, ".serial")

    def RuntimeFile(self, name: str) -> str:
        return self._Path("conf", name, ".json")

    def _IfupScript(self, tap: str) -> str:
        return os.path.join(self._dirs["nic"], tap + ".ifup")

    def TapName(self, instance: objects.Instance, index: int) -> str:
        """The tap of NIC ``index``: stable, at most 15 chars (IFNAMSIZ).

        Derived from this node's hypervisor directory too, so that the
        source and target QEMU of a migration between virtual cluster
        nodes, which share one network namespace, get different taps.
        """
        key = "%s/%s/%d" % (self._root, instance.uuid or instance.name,
                            index)
        return "tap" + hashlib.sha1(key.encode()).hexdigest()[:10]

    # Runtime ---------------------------------------------------------

    def GenerateRuntime(self, instance: objects.Instance,
                        block_devices: list[tuple[objects.Disk, str]]
                        ) -> dict[str, Any]:
        """The saved form of a started instance: its command line and
        the NICs (with tap names) and disks (with paths) in it."""
        hvp = instance.hvparams
        bep = instance.beparams
        name = instance.name
        memory = bep[objects.BE_MAXMEM]
        vcpus = bep[objects.BE_VCPUS]
        cmd = [hvp[HV_KVM_PATH], "-name", name, "-daemonize",
               "-pidfile", self.PidFile(name), "-nodefaults",
               "-no-user-config", "-m", str(memory)]
        smp = [str(vcpus)]
        for key, param in (("sockets", HV_CPU_SOCKETS),
                           ("cores", HV_CPU_CORES),
                           ("threads", HV_CPU_THREADS)):
            if hvp[param]:
                smp.append("%s=%d" % (key, hvp[param]))
        cmd += ["-smp", ",".join(smp)]
        accel = _KVM_FLAG_ACCEL[hvp[HV_KVM_FLAG]]
        if accel:
            cmd += ["-accel", accel]
        if hvp[HV_MACHINE_VERSION]:
            cmd += ["-machine", hvp[HV_MACHINE_VERSION]]
        if hvp[HV_CPU_TYPE]:
            cmd += ["-cpu", hvp[HV_CPU_TYPE]]
        if not hvp[HV_ACPI]:
            cmd.append("-no-acpi")
        if hvp[HV_MEM_PATH]:
            cmd += ["-mem-path", hvp[HV_MEM_PATH]]
        if hvp[HV_USE_LOCALTIME]:
            cmd += ["-rtc", "base=localtime"]
        if hvp[HV_REBOOT_BEHAVIOR] == HT_KVM_EXIT:
            cmd.append("-no-reboot")
        if hvp[HV_USER_SHUTDOWN]:
            cmd.append("-no-shutdown")
        cmd += ["-qmp", "unix:%s,server=on,wait=off" % self.QmpSocket(name)]
        if hvp[HV_SERIAL_CONSOLE]:
            cmd += ["-chardev", "socket,id=serial0,path=%s,server=on,"
                    "wait=off,logfile=%s" % (self.SerialSocket(name),
                                             self.SerialLog(name)),
                    "-serial", "chardev:serial0"]
        if hvp[HV_VNC_BIND_ADDRESS] and instance.network_port:
            display = instance.network_port - _VNC_BASE_PORT
            if display < 0:
                raise errors.HypervisorError(
                    "Network port %d of instance %s is below the VNC base"
                    " port %d" % (instance.network_port, name,
                                  _VNC_BASE_PORT))
            address = hvp[HV_VNC_BIND_ADDRESS]
            if ":" in address:
                address = "[%s]" % address
            cmd += ["-vnc", "%s:%d" % (address, display)]
        else:
            cmd += ["-display", "none"]
        if hvp[HV_KERNEL_PATH]:
            cmd += ["-kernel", hvp[HV_KERNEL_PATH]]
            if hvp[HV_INITRD_PATH]:
                cmd += ["-initrd", hvp[HV_INITRD_PATH]]
            append = []
            if hvp[HV_ROOT_PATH]:
                append.append("root=%s" % hvp[HV_ROOT_PATH])
            if hvp[HV_KERNEL_ARGS]:
                append.append(hvp[HV_KERNEL_ARGS])
            if hvp[HV_SERIAL_CONSOLE]:
                append.append("console=ttyS0,%d" % hvp[HV_SERIAL_SPEED])
            cmd += ["-append", " ".join(append)]
        else:
            cmd += ["-boot", _BOOT_ORDER_FLAGS[hvp[HV_BOOT_ORDER]]]
        if hvp[HV_CDROM_IMAGE_PATH]:
            cmd += ["-drive", "file=%s,media=cdrom,readonly=on,format=raw,"
                    "if=ide" % hvp[HV_CDROM_IMAGE_PATH]]
        disks = []
        interface = _DISK_INTERFACES[hvp[HV_DISK_TYPE]]
        for index, (disk, path) in enumerate(block_devices):
            _CheckDrivePath(name, path)
            drive = [_DriveFile(disk, path), "format=raw",
                     "if=%s" % interface, "id=disk%d" % index, "aio=threads"]
            if disk.dev_type in constants.DTS_INT_MIRROR:
                drive.append("file.reconnect-delay=%d" %
                             _NBD_RECONNECT_DELAY)
            if hvp[HV_DISK_CACHE] != HT_CACHE_DEFAULT:
                drive.append("cache=%s" % hvp[HV_DISK_CACHE])
            if disk.mode == objects.DISK_RDONLY:
                drive.append("readonly=on")
            cmd += ["-drive", ",".join(drive)]
            entry: dict[str, Any] = {
                "path": path, "uuid": disk.uuid, "mode": disk.mode,
                "id": "disk%d" % index}
            if IsLocalDisk(disk.dev_type):
                entry["local"] = True
            disks.append(entry)
        nics = []
        model = _NIC_MODELS[hvp[HV_NIC_TYPE]]
        for index, nic in enumerate(instance.nics or []):
            params = nic.nicparams or {}
            mode = params.get(objects.NIC_MODE)
            if mode not in _NIC_MODES:
                raise errors.HypervisorError(
                    "NIC %d of instance %s: mode %r is not supported by the"
                    " KVM hypervisor (only %s)" %
                    (index, name, mode, ", ".join(sorted(_NIC_MODES))))
            if mode == objects.NIC_MODE_ROUTED and not nic.ip:
                raise errors.HypervisorError(
                    "NIC %d of instance %s: mode 'routed' needs an IP"
                    " address" % (index, name))
            tap = self.TapName(instance, index)
            cmd += ["-netdev", "tap,id=net%d,ifname=%s,script=%s,"
                    "downscript=no" % (index, tap, self._IfupScript(tap)),
                    "-device", "%s,netdev=net%d,mac=%s" % (model, index,
                                                          nic.mac)]
            nics.append({"tap": tap, "mac": nic.mac, "ip": nic.ip,
                         "mode": mode, "link": params.get(objects.NIC_LINK),
                         "vlan": params.get(objects.NIC_VLAN) or "",
                         "uuid": nic.uuid})
        cmd += ["-device", "virtio-balloon-pci,id=balloon0"]
        if hvp[HV_USE_CHROOT]:
            cmd += ["-chroot", self._Path("chroot", name)]
        if hvp[HV_SECURITY_MODEL] == HT_SM_USER:
            cmd += ["-runas", hvp[HV_SECURITY_DOMAIN]]
        cmd += shlex.split(hvp[HV_KVM_EXTRA])
        return {"name": name, "cmd": cmd, "nics": nics, "disks": disks,
                "memory": memory, "vcpus": vcpus,
                "cpu_mask": hvp[HV_CPU_MASK]}

    def _SaveRuntime(self, runtime: dict) -> None:
        io.WriteFile(self.RuntimeFile(runtime["name"]),
                     data=json.dumps(runtime, indent=1, sort_keys=True))

    def LoadRuntime(self, name: str) -> dict | None:
        """The saved runtime of an instance, None if there is none."""
        path = self.RuntimeFile(name)
        try:
            return json.loads(io.ReadFile(path))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as err:
            raise errors.HypervisorError("Cannot read KVM runtime %s: %s" %
                                         (path, err)) from err

    def _WriteIfupScripts(self, runtime: dict) -> None:
        """One wrapper per NIC: QEMU gives the script only the tap name."""
        for nic in runtime["nics"]:
            env = {"INSTANCE": runtime["name"], "MAC": nic["mac"],
                   "MODE": nic["mode"], "LINK": nic["link"] or "",
                   "IP": nic["ip"] or "", "VLAN": nic["vlan"],
                   "KVM_IFUP_CUSTOM": pathutils.KVM_IFUP_CUSTOM}
            lines = ["#!/bin/sh"]
            lines += ["export %s=%s" % (key, shlex.quote(value))
                      for key, value in sorted(env.items())]
            lines.append('exec %s "$@"' % shlex.quote(pathutils.KVM_IFUP))
            io.WriteFile(self._IfupScript(nic["tap"]),
                         data="\n".join(lines) + "\n", mode=0o700)

    def _RemoveRuntimeFiles(self, name: str, keep_runtime: bool) -> None:
        runtime = None
        try:
            runtime = self.LoadRuntime(name)
        except errors.HypervisorError as err:
            logging.warning("%s", err)
        for nic in (runtime or {}).get("nics", []):
            io.RemoveFile(self._IfupScript(nic["tap"]))
        paths = [self.PidFile(name), self.QmpSocket(name),
                 self.SerialSocket(name)]
        if not keep_runtime:
            paths.append(self.RuntimeFile(name))
        for path in paths:
            io.RemoveFile(path)

    def _CheckSocketPaths(self, name: str) -> None:
        for path in (self.QmpSocket(name), self.SerialSocket(name)):
            if len(path.encode()) > _UNIX_PATH_MAX:
                raise errors.HypervisorError(
                    "Socket path %s of instance %s is longer than %d bytes"
                    % (path, name, _UNIX_PATH_MAX))
