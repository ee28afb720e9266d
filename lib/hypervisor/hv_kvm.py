"""The KVM hypervisor: one QEMU process per running instance.

Each instance runs as a daemonised ``qemu-system-x86_64`` with a pid file,
a QMP socket (queries, power-down, ballooning) and its serial console on a
Unix socket with a log file, all below ``pathutils.KVM_HV_DIR``:

  pid/<instance>        the QEMU process's pid
  ctrl/<instance>.qmp   QMP socket
  ctrl/<instance>.serial, log/<instance>.serial  serial console and its log
  conf/<instance>.json  the runtime: full command line, NICs with their
                        taps, disks with their paths (restart and migration
                        reproduce the instance from it)
  nic/<tap>.ifup        per-NIC ifup wrapper handing the NIC to kvm-ifup

Unix socket paths are limited to 107 bytes. Where the root is deep (a
virtual cluster's node root), the sockets go to a short per-node directory
instead, ``/run/ganeti-kvm-<hash of the root>`` (made at the first start,
left in place); an instance name still too long for it is refused at start.

Without hardware acceleration (``kvm_flag`` empty or ``disabled``) QEMU
emulates the CPU with TCG, which is slow but runs any guest kernel.
"""

import hashlib
import json
import logging
import os
import re
import select
import shlex
import signal
import time
from typing import Any

from ganeti import constants, errors, netutils, objects, pathutils
from ganeti.hypervisor import hv_base
from ganeti.utils import qmp
from ganeti.parameters.hypervisors import (
    CPU_PINNING_ALL, HT_BO_CDROM, HT_CACHE_DEFAULT, HT_KVM_EXIT,
    HT_KVM_REBOOT, HT_SM_USER, HV_ACPI, HV_BOOT_ORDER, HV_CDROM_IMAGE_PATH,
    HV_CPU_CORES, HV_CPU_MASK, HV_CPU_SOCKETS, HV_CPU_THREADS, HV_CPU_TYPE,
    HV_DISK_CACHE, HV_DISK_TYPE, HV_INITRD_PATH, HV_KERNEL_ARGS,
    HV_KERNEL_PATH, HV_KVM_EXTRA, HV_KVM_FLAG, HV_KVM_PATH,
    HV_MACHINE_VERSION, HV_MEM_PATH, HV_MIGRATION_DOWNTIME, HV_NIC_TYPE,
    HV_REBOOT_BEHAVIOR, HV_ROOT_PATH, HV_SECURITY_DOMAIN, HV_SECURITY_MODEL,
    HV_SERIAL_CONSOLE, HV_SERIAL_SPEED, HV_USE_CHROOT, HV_USE_LOCALTIME,
    HV_USER_SHUTDOWN, HV_VNC_BIND_ADDRESS, KVM_PARAMETERS, ParseCpuMask)
from ganeti.parameters.hypervisors import \
    KVM_BOOT_ORDER_FLAGS as _BOOT_ORDER_FLAGS
from ganeti.parameters.hypervisors import \
    KVM_DEFAULT_PATH as _DEFAULT_KVM_PATH
from ganeti.parameters.hypervisors import \
    KVM_DISK_INTERFACES as _DISK_INTERFACES
from ganeti.parameters.hypervisors import KVM_FLAG_ACCEL as _KVM_FLAG_ACCEL
from ganeti.parameters.hypervisors import KVM_NIC_MODELS as _NIC_MODELS
from ganeti.parameters.hypervisors import KVM_NIC_MODES as _NIC_MODES
from ganeti.utils import io, process

_MIB = 1024 * 1024
_UNIX_PATH_MAX = 107
# Longest socket directory that leaves room for long instance names
_CTRL_DIR_MAX = 48
_SHORT_CTRL_PREFIX = "/run/ganeti-kvm"
# After QMP "quit" (forced stop), how long QEMU gets before SIGKILL
_QUIT_GRACE = 3.0
# How long the threads of a killed QEMU may take to exit
_KILL_TIMEOUT = 10.0
# QEMU daemonises once its devices and sockets are set up
_START_TIMEOUT = 60.0
# How long a cancelled outgoing migration, or the last device state of
# an incoming one, may take to settle
_MIGRATION_SETTLE_TIMEOUT = 30.0
# QEMU's query-migrate statuses as Ganeti's; any other ("none": nothing
# was started) is a failure
_MIGRATION_STATUSES = {
    "setup": constants.HV_MIGRATION_ACTIVE,
    "active": constants.HV_MIGRATION_ACTIVE,
    "pre-switchover": constants.HV_MIGRATION_ACTIVE,
    "device": constants.HV_MIGRATION_ACTIVE,
    "wait-unplug": constants.HV_MIGRATION_ACTIVE,
    "postcopy-active": constants.HV_MIGRATION_POSTCOPY_ACTIVE,
    "completed": constants.HV_MIGRATION_COMPLETED,
    "cancelling": constants.HV_MIGRATION_CANCELLED,
    "cancelled": constants.HV_MIGRATION_CANCELLED,
    "failed": constants.HV_MIGRATION_FAILED,
}
# query-migrate statuses of an outgoing migration still under way
_MIGRATION_UNDER_WAY = frozenset(["setup", "active", "pre-switchover",
                                  "device", "wait-unplug", "postcopy-active",
                                  "cancelling"])
# Statuses of QEMU jobs (query-jobs) that are over
_JOBS_ENDED = frozenset(["concluded", "null"])
# QEMU job id of the mirror copying a disk (by its drive id) to the
# target of a migration
_MIRROR_JOB_PREFIX = "migrate-"

_VNC_BASE_PORT = 5900


def _KvmPathCheck(value: Any) -> str | None:
    if not os.path.isfile(value):
        return "file %s does not exist" % value
    if not os.access(value, os.X_OK):
        return "file %s is not executable" % value
    return None


def _SecurityDomainCheck(value: Any) -> str | None:
    if not value:
        return None
    import pwd
    try:
        pwd.getpwnam(value)
    except KeyError:
        return "user %s does not exist" % value
    return None


def _CpuMaskNodeCheck(value: Any) -> str | None:
    cpus = os.cpu_count() or 1
    for entry in ParseCpuMask(value):
        if entry and max(entry) >= cpus:
            return "CPU %d is not in this node's CPUs 0-%d" % (max(entry),
                                                               cpus - 1)
    return None


def _MemPathCheck(value: Any) -> str | None:
    if value and not os.path.isdir(value):
        return "directory %s does not exist" % value
    return None


# The checks of parameter values that only the node can make
NODE_CHECKS: dict[str, hv_base.NodeCheck] = {
    HV_KVM_PATH: _KvmPathCheck,
    HV_KERNEL_PATH: hv_base.FileExistsCheck,
    HV_INITRD_PATH: hv_base.FileExistsCheck,
    HV_CDROM_IMAGE_PATH: hv_base.FileExistsCheck,
    HV_CPU_MASK: _CpuMaskNodeCheck,
    HV_MEM_PATH: _MemPathCheck,
    HV_SECURITY_DOMAIN: _SecurityDomainCheck,
}


class QmpError(errors.HypervisorError):
    """A QMP command failed or the monitor did not answer."""


class QmpConnection(qmp.QmpConnection):
    """A QMP session whose failures are hypervisor errors."""

    ERROR = QmpError


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


def NbdPort(hvparams: dict) -> int:
    """The port the target of a migration exports the disks to copy
    on: the one after the migration port."""
    return hvparams[objects.HV_MIGRATION_PORT] % 65535 + 1


class KVMHypervisor(hv_base.BaseHypervisor):
    """Drives QEMU processes through their command line and QMP."""

    NAME = constants.HT_KVM
    PARAMETERS = KVM_PARAMETERS
    NODE_CHECKS = NODE_CHECKS
    CAN_MIGRATE = True
    CAN_MIGRATE_STORAGE = True

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

    @classmethod
    def CheckParameterSyntax(cls, hvparams: Any) -> None:
        super().CheckParameterSyntax(hvparams)
        if hvparams[HV_BOOT_ORDER] == HT_BO_CDROM and \
                not hvparams[HV_CDROM_IMAGE_PATH]:
            raise errors.HypervisorError(
                "KVM parameter boot_order is cdrom but cdrom_image_path is"
                " empty")
        if hvparams[HV_INITRD_PATH] and not hvparams[HV_KERNEL_PATH]:
            raise errors.HypervisorError(
                "KVM parameter initrd_path %s needs a kernel_path" %
                hvparams[HV_INITRD_PATH])
        if hvparams[HV_SECURITY_MODEL] == HT_SM_USER and \
                not hvparams[HV_SECURITY_DOMAIN]:
            raise errors.HypervisorError(
                "KVM security_model user needs a security_domain")
        if hvparams[HV_SECURITY_MODEL] != HT_SM_USER and \
                hvparams[HV_SECURITY_DOMAIN]:
            raise errors.HypervisorError(
                "KVM security_domain %s is only used with security_model"
                " user" % hvparams[HV_SECURITY_DOMAIN])

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

    def _ExecuteRuntime(self, runtime: dict, startup_paused: bool,
                        incoming: str | None = None) -> None:
        """Start QEMU from a runtime; it daemonises once set up.

        ``incoming`` (a QEMU migration URI) makes it wait for the state
        of a migrating instance instead of booting.
        """
        name = runtime["name"]
        self._CheckSocketPaths(name)
        io.EnsureDirs([(self._dirs["ctrl"], 0o750)])
        self._RemoveRuntimeFiles(name, keep_runtime=True)
        self._WriteIfupScripts(runtime)
        if "-chroot" in runtime["cmd"]:
            io.EnsureDirs([(self._Path("chroot", name), 0o750)])
        cmd = list(runtime["cmd"])
        if startup_paused:
            cmd.append("-S")
        if incoming:
            cmd += ["-incoming", incoming]
        result = process.RunCmd(cmd, timeout=_START_TIMEOUT)
        if result.failed:
            self._RemoveRuntimeFiles(name, keep_runtime=False)
            raise errors.HypervisorError(
                "Failed to start instance %s: %s (exit code %s): %s" %
                (name, result.fail_reason, result.exit_code,
                 result.output.strip()[-2000:]))
        if self._Pid(name) is None:
            self._RemoveRuntimeFiles(name, keep_runtime=False)
            raise errors.HypervisorError(
                "Instance %s: QEMU started but is not running" % name)
        self._ApplyCpuMask(name, runtime.get("cpu_mask", CPU_PINNING_ALL))

    def _ApplyCpuMask(self, name: str, mask: str) -> None:
        """Pin the QEMU process (one list) or each vCPU thread."""
        entries = ParseCpuMask(mask)
        if entries == [None]:
            return
        pid = self._Pid(name)
        if pid is None:
            return
        try:
            if len(entries) == 1:
                only = entries[0]
                assert only is not None, "[None] returned above"
                for tid in os.listdir("/proc/%d/task" % pid):
                    os.sched_setaffinity(int(tid), only)
                return
            cpus = self._Qmp(name, "query-cpus-fast")
            if len(cpus) != len(entries):
                raise errors.HypervisorError(
                    "cpu_mask %s of instance %s has %d entries for %d"
                    " vCPUs" % (mask, name, len(entries), len(cpus)))
            for cpu in cpus:
                entry = entries[cpu["cpu-index"]]
                if entry is not None:
                    os.sched_setaffinity(cpu["thread-id"], entry)
        except OSError as err:
            raise errors.HypervisorError(
                "Cannot pin instance %s to CPUs %s: %s" % (name, mask,
                                                           err)) from err

    def StartInstance(self, instance: objects.Instance,
                      block_devices: list[tuple[objects.Disk, str]],
                      startup_paused: bool) -> None:
        if self._Pid(instance.name) is not None:
            raise errors.HypervisorError(
                "Failed to start instance %s: already running" %
                instance.name)
        self.ValidateParameters(instance.hvparams)
        runtime = self.GenerateRuntime(instance, block_devices)
        self._SaveRuntime(runtime)
        try:
            self._ExecuteRuntime(runtime, startup_paused)
        except errors.HypervisorError:
            self._Kill(instance.name)
            self._RemoveRuntimeFiles(instance.name, keep_runtime=False)
            raise

    # Processes -----------------------------------------------------------

    def _Pid(self, name: str) -> int | None:
        """The pid of the instance's QEMU if it runs, else None.

        A pid file whose process is not this instance's QEMU (it died and
        the pid was reused) counts as not running.
        """
        try:
            pid = int(io.ReadFile(self.PidFile(name)).strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as fobj:
                argv = fobj.read().split(b"\0")
            with open("/proc/%d/stat" % pid, "rb") as fobj:
                stat = fobj.read()
        except OSError:
            return None
        # A zombie is gone for our purposes
        if stat.rpartition(b")")[2].split()[0] == b"Z":
            return None
        pidfile = self.PidFile(name).encode()
        if pidfile not in argv:
            return None
        return pid

    def _Qmp(self, name: str, command: str,
             arguments: dict | None = None) -> Any:
        with QmpConnection(self.QmpSocket(name)) as qmp:
            return qmp.Execute(command, arguments)

    def _PidFd(self, name: str) -> int | None:
        """A pidfd of the instance's QEMU if it runs (see _Pid), else
        None; the caller closes it."""
        pid = self._Pid(name)
        if pid is None:
            return None
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            return None
        # The pid may have been reused between the check and the open
        if self._Pid(name) != pid:
            os.close(pidfd)
            return None
        return pidfd

    @staticmethod
    def _WaitExit(pidfd: int, timeout: float) -> bool:
        """Wait until the process has ended with all its threads.

        Only then are its files closed and so its image locks released
        (a migration undo resumes the source on the same images): the
        main thread becomes a zombie, which _Pid counts as gone, while
        other threads may still be exiting with the files open. A pidfd
        becomes readable only once the whole thread group has exited.
        """
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(int(timeout * 1000)))

    def _Kill(self, name: str, pidfd: int | None = None) -> None:
        """SIGKILL the instance's QEMU and wait for it to be gone."""
        own = pidfd is None
        if pidfd is None:
            pidfd = self._PidFd(name)
            if pidfd is None:
                return
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            if not self._WaitExit(pidfd, _KILL_TIMEOUT):
                logging.warning("QEMU of instance %s still exiting %.0f s"
                                " after SIGKILL", name, _KILL_TIMEOUT)
        except ProcessLookupError:
            pass
        finally:
            if own:
                os.close(pidfd)

    def _Quit(self, name: str, pidfd: int) -> None:
        """QMP quit; SIGKILL if QEMU has not exited within the grace
        time. Returns once the process is gone."""
        try:
            self._Qmp(name, "quit")
        except QmpError as err:
            logging.warning("QMP quit of %s failed: %s", name, err)
        if not self._WaitExit(pidfd, _QUIT_GRACE):
            logging.warning("Instance %s did not quit, killing it", name)
            self._Kill(name, pidfd)

    def _Status(self, name: str) -> str:
        return self._Qmp(name, "query-status").get("status", "")

    # Lifecycle ---------------------------------------------------------

    def StopInstance(self, instance: objects.Instance, force: bool = False,
                     retry: bool = False, name: str | None = None,
                     timeout: int | None = None) -> None:
        """ACPI power-down; forced: QMP quit, then SIGKILL.

        noded's shutdown loop calls this repeatedly until the timeout and
        then with ``force``; a guest ignoring the power button (or without
        ACPI) thus stops at the timeout.
        """
        name = name or instance.name
        pidfd = self._PidFd(name)
        if pidfd is None:
            return
        try:
            if force:
                self._Quit(name, pidfd)
                return
            status = self._Status(name)
            if status == "shutdown" or not self._AcpiOf(instance):
                # Powered off inside (user_shutdown) or no power button
                self._Quit(name, pidfd)
            elif not retry:
                self._Qmp(name, "system_powerdown")
        except QmpError as err:
            if self._Pid(name) is not None:
                raise errors.HypervisorError(
                    "Failed to stop instance %s: %s" % (name, err)) from err
        finally:
            os.close(pidfd)

    @staticmethod
    def _AcpiOf(instance: objects.Instance | None) -> bool:
        if instance is None or not instance.hvparams:
            return True
        return bool(instance.hvparams.get(HV_ACPI, True))

    def CleanupInstance(self, instance_name: str) -> None:
        if self._Pid(instance_name) is not None:
            raise errors.HypervisorError(
                "Cannot clean up instance %s: still running" % instance_name)
        self._RemoveRuntimeFiles(instance_name, keep_runtime=False)

    def RebootInstance(self, instance: objects.Instance) -> None:
        """Reset the guest (reboot_behavior reboot), or restart QEMU from
        the saved runtime (exit: the guest's own reboot stops QEMU)."""
        name = instance.name
        if self._Pid(name) is None:
            raise errors.HypervisorError(
                "Failed to reboot instance %s: not running" % name)
        if instance.hvparams[HV_REBOOT_BEHAVIOR] == HT_KVM_REBOOT:
            self._Qmp(name, "system_reset")
            return
        runtime = self.LoadRuntime(name)
        if runtime is None:
            raise errors.HypervisorError(
                "Failed to reboot instance %s: no saved runtime" % name)
        self.StopInstance(instance, force=True)
        self._SaveRuntime(runtime)
        self._ExecuteRuntime(runtime, False)

    # Listing -----------------------------------------------------------

    def ListInstances(self, hvparams: dict | None = None) -> list[str]:
        try:
            names = io.ListVisibleFiles(self._dirs["pid"])
        except FileNotFoundError:
            return []
        return sorted(name for name in names if self._Pid(name) is not None)

    @staticmethod
    def _CpuTime(pid: int) -> float:
        try:
            with open("/proc/%d/stat" % pid, "rb") as fobj:
                fields = fobj.read().rpartition(b")")[2].split()
        except OSError:
            return 0.0
        # utime and stime are fields 14 and 15 of stat (1-based)
        ticks = int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def GetInstanceInfo(self, instance_name: str,
                        hvparams: dict | None = None
                        ) -> hv_base.InstanceInfo | None:
        """From QMP: run state, current (balloon) memory and vCPUs.

        A guest that powered itself off while QEMU stays (user_shutdown)
        is HV_INSTANCE_SHUTDOWN; a vanished QEMU is not reported at all.
        """
        pid = self._Pid(instance_name)
        if pid is None:
            return None
        runtime = self.LoadRuntime(instance_name) or {}
        try:
            with QmpConnection(self.QmpSocket(instance_name)) as qmp:
                status = qmp.Execute("query-status").get("status", "")
                vcpus = len(qmp.Execute("query-cpus-fast"))
                try:
                    memory = qmp.Execute("query-balloon")["actual"] // _MIB
                except QmpError:
                    memory = runtime.get("memory", 0)
        except QmpError:
            if self._Pid(instance_name) is None:
                return None
            raise
        state = (constants.HV_INSTANCE_SHUTDOWN
                 if status in ("shutdown", "guest-panicked")
                 else constants.HV_INSTANCE_RUNNING)
        return (instance_name, pid, memory, vcpus, state,
                self._CpuTime(pid))

    def GetNodeInfo(self, hvparams: dict | None = None) -> dict[str, Any]:
        info: dict[str, Any] = hv_base.GetLinuxNodeInfo()
        version = self._Version((hvparams or {}).get(HV_KVM_PATH,
                                                     _DEFAULT_KVM_PATH))
        if version:
            info["hv_version"] = version
        return info

    @staticmethod
    def _Version(kvm_path: str) -> list[int] | None:
        """QEMU's version as [major, minor, micro], None if unknown."""
        try:
            result = process.RunCmd([kvm_path, "--version"])
        except errors.GenericError:
            return None
        match = re.search(r"version (\d+)\.(\d+)(?:\.(\d+))?",
                          result.output)
        if result.failed or not match:
            return None
        return [int(part or 0) for part in match.groups()]

    def GetInstanceConsole(self, instance: objects.Instance,
                           primary_node: objects.Node,
                           node_group: objects.NodeGroup | None,
                           hvparams: dict, beparams: dict) -> dict:
        """The serial console over ssh and socat (Ctrl-] detaches), else
        VNC, else a message."""
        if hvparams[HV_SERIAL_CONSOLE]:
            command = ["socat", "STDIO,raw,echo=0,escape=0x1d",
                       "UNIX-CONNECT:%s" % self.SerialSocket(instance.name)]
            return {"instance": instance.name, "kind": constants.CONS_SSH,
                    "host": primary_node.name, "user": "root",
                    "command": command}
        if hvparams[HV_VNC_BIND_ADDRESS] and instance.network_port:
            return {"instance": instance.name, "kind": constants.CONS_VNC,
                    "host": primary_node.primary_ip or primary_node.name,
                    "port": instance.network_port,
                    "display": instance.network_port - _VNC_BASE_PORT}
        return {"instance": instance.name, "kind": constants.CONS_MESSAGE,
                "message": "No serial console or VNC configured for"
                " instance %s" % instance.name}

    def Verify(self, hvparams: dict | None = None) -> str | None:
        """The QEMU binary must exist and answer --version."""
        kvm_path = (hvparams or {}).get(HV_KVM_PATH, _DEFAULT_KVM_PATH)
        problem = _KvmPathCheck(kvm_path)
        if problem:
            return "The KVM binary ('%s') is not usable: %s" % (kvm_path,
                                                                 problem)
        if self._Version(kvm_path) is None:
            return ("The KVM binary ('%s') does not report a QEMU version" %
                    kvm_path)
        if not os.path.isfile(pathutils.KVM_IFUP):
            return "The KVM ifup script %s is missing" % pathutils.KVM_IFUP
        return None

    # Migration ---------------------------------------------------------
    #
    # The target runs the source's saved command line on its own block
    # devices, with -incoming; QEMU starts the guest there by itself once
    # the state has arrived (a non-live migration's guest arrives paused
    # and is resumed by FinalizeMigrationDst). Until then the source guest
    # runs, and after it the source QEMU is stopped ("postmigrate"), so
    # the guest runs on one node at a time. The target's saved runtime
    # carries the "incoming" URI until FinalizeMigrationDst: an undo kills
    # only a QEMU started for the migration.
    #
    # Local disks (IsLocalDisk: file, plain) are copied first: the target
    # QEMU, started paused (-S), exports its new empty images over NBD
    # (NbdPort); the source mirrors each disk there (drive-mirror, sync
    # full, write-blocking, so that once a job is ready every guest write
    # reaches both sides). GetMigrationStatus reports the copy and starts
    # the memory transfer once every mirror is ready. After the switch
    # FinalizeMigrationSource ends the mirrors (block-job-cancel after
    # ready: the target keeps a consistent copy, the source stays on its
    # own images) before the target, its NBD server stopped, resumes the
    # guest; on failure the mirrors are abandoned and the guest goes on on
    # the source's images.

    @classmethod
    def LiveMigrationUnsafe(cls, hvparams: dict) -> str | None:
        # Measured with QEMU 7.2 under host load: about one live
        # migration in 15 of an active guest left pages on the target
        # that differed from the stopped source's (and a kernel oops),
        # none of 60 non-live ones. Presumably a store that passed TCG's
        # TLB check before the migration thread re-armed dirty tracking
        # lands after its page was sent, unmarked.
        if _KVM_FLAG_ACCEL[hvparams[HV_KVM_FLAG]] == "kvm":
            return None
        return ("without hardware acceleration (kvm_flag=%s) QEMU's"
                " emulated dirty-page tracking can lose guest memory"
                " writes during a live migration" % hvparams[HV_KVM_FLAG])

    def MigrationInfo(self, instance: objects.Instance) -> str:
        """The saved runtime, serialised: the target reproduces it."""
        name = instance.name
        runtime = self.LoadRuntime(name)
        if self._Pid(name) is None or runtime is None:
            raise errors.HypervisorError("Instance %s is not running" % name)
        for key in ("incoming", "nbd", "pending_migration"):
            runtime.pop(key, None)
        return json.dumps(runtime, sort_keys=True)

    @staticmethod
    def _ParseMigrationInfo(name: str, info: Any) -> dict:
        try:
            runtime = json.loads(info)
        except (TypeError, ValueError):
            runtime = None
        if not (isinstance(runtime, dict) and runtime.get("name") == name
                and isinstance(runtime.get("cmd"), list)
                and all(isinstance(arg, str) for arg in runtime["cmd"])
                and isinstance(runtime.get("disks"), list)
                and isinstance(runtime.get("nics"), list)
                and all(isinstance(nic, dict) and
                        isinstance(nic.get("tap"), str)
                        for nic in runtime["nics"])):
            raise errors.HypervisorError(
                "Invalid migration data for instance %s: %r" %
                (name, info if len(str(info)) < 200 else
                 str(info)[:200] + "..."))
        return runtime

    def _LocaliseRuntime(self, instance: objects.Instance, runtime: dict,
                         block_devices: list[tuple[objects.Disk, str]]
                         ) -> dict:
        """The source's runtime with this node's files, disk paths and
        tap names.

        The source's hypervisor directory is known from its pid file
        (<root>/pid/<instance>), its socket directory from the QMP socket
        (unix:<dir>/<instance>.qmp,...); nodes normally share both,
        virtual clusters don't.
        """
        name = runtime["name"]
        cmd = runtime["cmd"]

        def _Option(flag: str) -> str:
            try:
                return cmd[cmd.index(flag) + 1]
            except (ValueError, IndexError):
                return ""

        piddir, pidname = os.path.split(_Option("-pidfile"))
        qmp = _Option("-qmp")
        ctrldir, qmpname = os.path.split(qmp[len("unix:"):].split(",")[0])
        if pidname != name or os.path.basename(piddir) != "pid" or \
                not qmp.startswith("unix:") or qmpname != name + ".qmp":
            raise errors.HypervisorError(
                "Invalid migration data for instance %s: pid file %r, QMP"
                " %r" % (name, _Option("-pidfile"), qmp))
        if len(block_devices) != len(runtime["disks"]):
            raise errors.HypervisorError(
                "Instance %s runs with %d disks, %d were given for the"
                " migration" % (name, len(runtime["disks"]),
                                len(block_devices)))
        # One pass, so that a translated path is not translated again
        moves = {ctrldir + "/": self._dirs["ctrl"] + "/",
                 os.path.dirname(piddir) + "/": self._root.rstrip("/") + "/"}
        pattern = re.compile("|".join(re.escape(old) for old in
                                      sorted(moves, key=len, reverse=True)))
        cmd = [pattern.sub(lambda match: moves[match.group(0)], arg)
               for arg in cmd]
        disks = []
        files = {}
        for entry, (disk, path) in zip(runtime["disks"], block_devices):
            _CheckDrivePath(name, path)
            files["id=" + entry["id"]] = _DriveFile(disk, path)
            disks.append(dict(entry, path=path))
        for index, arg in enumerate(cmd[1:], start=1):
            if cmd[index - 1] != "-drive":
                continue
            options = arg.split(",")
            drive_id = [opt for opt in options if opt in files]
            if drive_id:
                cmd[index] = ",".join(
                    files[drive_id[0]] if opt.startswith("file=") else opt
                    for opt in options)
        taps = {nic["tap"]: self.TapName(instance, index)
                for index, nic in enumerate(runtime["nics"])}
        for index, arg in enumerate(cmd[1:], start=1):
            if cmd[index - 1] != "-netdev":
                continue
            options = arg.split(",")
            tap = [taps[opt[len("ifname="):]] for opt in options
                   if opt.startswith("ifname=") and
                   opt[len("ifname="):] in taps]
            if tap:
                cmd[index] = ",".join(
                    "ifname=%s" % tap[0] if opt.startswith("ifname=") else
                    "script=%s" % self._IfupScript(tap[0])
                    if opt.startswith("script=") else opt
                    for opt in options)
        nics = [dict(nic, tap=taps[nic["tap"]]) for nic in runtime["nics"]]
        return dict(runtime, cmd=cmd, disks=disks, nics=nics)

    def AcceptInstance(self, instance: objects.Instance, info: str,
                       target: str,
                       block_devices: list[tuple[objects.Disk, str]]
                       ) -> None:
        """Start QEMU waiting for the instance on ``target`` (this node's
        address) and the migration port."""
        name = instance.name
        if self._Pid(name) is not None:
            raise errors.HypervisorError(
                "Can't accept instance %s: already running" % name)
        runtime = self._LocaliseRuntime(
            instance, self._ParseMigrationInfo(name, info), block_devices)
        local = self._LocalDisks(runtime, block_devices)
        port = instance.hvparams[objects.HV_MIGRATION_PORT]
        runtime["incoming"] = "tcp:" + netutils.FormatAddress((target, port))
        if local:
            runtime["nbd"] = netutils.FormatAddress(
                (target, NbdPort(instance.hvparams)))
        self._SaveRuntime(runtime)
        # Paused until the source has ended its mirrors, or the drbd disks
        # mirror from here (FinalizeMigrationDst resumes it)
        paused = bool(local) or any(
            disk.dev_type in constants.DTS_INT_MIRROR
            for disk, _ in block_devices)
        try:
            self._ExecuteRuntime(runtime, paused, runtime["incoming"])
            if local:
                self._ExportDisks(name, target,
                                  NbdPort(instance.hvparams), local)
        except errors.HypervisorError:
            self._Kill(name)
            self._RemoveRuntimeFiles(name, keep_runtime=False)
            raise

    @staticmethod
    def _LocalDisks(runtime: dict,
                    block_devices: list[tuple[objects.Disk, str]]
                    ) -> list[str]:
        """Ids of the disks to copy; the source must agree (a QEMU
        started before it recorded local disks would not copy them)."""
        local = []
        for entry, (disk, _) in zip(runtime["disks"], block_devices):
            if IsLocalDisk(disk.dev_type) != bool(entry.get("local")):
                raise errors.HypervisorError(
                    "Disk %s of instance %s is %s here but %s on the source"
                    " node; restart the instance before migrating it" %
                    (entry["id"], runtime["name"],
                     "local" if IsLocalDisk(disk.dev_type) else "shared",
                     "local" if entry.get("local") else "shared"))
            if entry.get("local"):
                local.append(entry["id"])
        return local

    def _ExportDisks(self, name: str, address: str, port: int,
                     disk_ids: list[str]) -> None:
        """Serve the new images over NBD for the source's mirrors."""
        with QmpConnection(self.QmpSocket(name)) as qmp:
            qmp.Execute("nbd-server-start", {"addr": {
                "type": "inet",
                "data": {"host": address, "port": str(port)}}})
            for disk_id in disk_ids:
                qmp.Execute("nbd-server-add", {"device": disk_id,
                                               "writable": True})
        logging.info("Instance %s: disks %s exported on %s for the"
                     " migration", name, ", ".join(disk_ids),
                     netutils.FormatAddress((address, port)))

    def MigrateInstance(self, cluster_name: str,
                        instance: objects.Instance, target: str,
                        live: bool) -> None:
        """Start sending the instance (QMP migrate returns at once); a
        non-live migration stops the guest first.

        With local disks only their mirrors start here: the memory
        follows once they are ready (GetMigrationStatus).
        """
        name = instance.name
        runtime = self.LoadRuntime(name)
        if self._Pid(name) is None or runtime is None:
            raise errors.HypervisorError(
                "Cannot migrate instance %s: not running" % name)
        hvp = instance.hvparams
        uri = "tcp:" + netutils.FormatAddress(
            (target, hvp[objects.HV_MIGRATION_PORT]))
        parameters = {
            "max-bandwidth": hvp[objects.HV_MIGRATION_BANDWIDTH] * _MIB,
            "downtime-limit": hvp[HV_MIGRATION_DOWNTIME]}
        local = [disk["id"] for disk in runtime["disks"] if disk.get("local")]
        with QmpConnection(self.QmpSocket(name)) as qmp:
            status = qmp.Execute("query-migrate").get("status")
            if status not in _MIGRATION_UNDER_WAY and \
                    any(job["status"] not in _JOBS_ENDED
                        for job in self._MirrorJobs(qmp).values()):
                status = "copying disks"
            if status in _MIGRATION_UNDER_WAY or status == "copying disks":
                raise errors.HypervisorError(
                    "Cannot migrate instance %s: a migration is under way"
                    " (%s)" % (name, status))
            self._EndMirrors(qmp, name, True)
            if not live:
                qmp.Execute("stop")
            try:
                if local:
                    self._StartMirrors(qmp, name, local, target,
                                       NbdPort(hvp))
                else:
                    self._StartMemoryMigration(qmp, parameters, uri)
            except QmpError:
                if local:
                    self._EndMirrors(qmp, name, True)
                if not live:
                    qmp.Execute("cont")
                raise
        if local:
            runtime["pending_migration"] = {"uri": uri,
                                            "parameters": parameters}
            self._SaveRuntime(runtime)
            logging.info("Copying disks %s of instance %s to %s before its"
                         " migration (live=%s)", ", ".join(local), name,
                         target, live)
        else:
            logging.info("Migrating instance %s to %s (live=%s)", name, uri,
                         live)

    @staticmethod
    def _StartMemoryMigration(qmp: QmpConnection, parameters: dict,
                              uri: str) -> None:
        qmp.Execute("migrate-set-parameters", parameters)
        qmp.Execute("migrate", {"uri": uri})

    @staticmethod
    def _StartMirrors(qmp: QmpConnection, name: str, disk_ids: list[str],
                      target: str, port: int) -> None:
        """Mirror each disk into the target's NBD export of the same
        name; write-blocking, so that a ready mirror has every write."""
        address = netutils.FormatAddress((target, port))
        for disk_id in disk_ids:
            qmp.Execute("drive-mirror", {
                "job-id": _MIRROR_JOB_PREFIX + disk_id, "device": disk_id,
                "target": "nbd://%s/%s" % (address, disk_id),
                "format": "raw", "mode": "existing", "sync": "full",
                "copy-mode": "write-blocking", "auto-dismiss": False})

    @staticmethod
    def _MirrorJobs(qmp: QmpConnection) -> dict[str, dict]:
        """query-jobs entries of the migration mirrors, by job id."""
        return {job["id"]: job for job in qmp.Execute("query-jobs")
                if job["id"].startswith(_MIRROR_JOB_PREFIX)}

    def _EndMirrors(self, qmp: QmpConnection, name: str,
                    force: bool) -> list[str]:
        """End and dismiss the migration mirrors; their errors.

        Without ``force`` a ready mirror first copies what is left, so
        that the target holds the disk as it is now.
        """
        for job_id, job in self._MirrorJobs(qmp).items():
            if job["status"] in _JOBS_ENDED:
                continue
            try:
                qmp.Execute("block-job-cancel", {"device": job_id,
                                                 "force": force})
            except QmpError as err:
                # It may have ended meanwhile: seen below
                logging.warning("Instance %s: %s", name, err)
        deadline = time.monotonic() + _MIGRATION_SETTLE_TIMEOUT
        jobs = self._MirrorJobs(qmp)
        while any(job["status"] not in _JOBS_ENDED for job in jobs.values()):
            if time.monotonic() >= deadline:
                raise errors.HypervisorError(
                    "The disk mirrors of instance %s did not stop: %s" %
                    (name, ", ".join("%s %s" % (job_id, job["status"])
                                     for job_id, job in sorted(jobs.items()))))
            time.sleep(0.05)
            jobs = self._MirrorJobs(qmp)
        problems = []
        for job_id, job in sorted(jobs.items()):
            if job.get("error"):
                problems.append("%s: %s" % (job_id[len(_MIRROR_JOB_PREFIX):],
                                            job["error"]))
            if job["status"] == "concluded":
                qmp.Execute("job-dismiss", {"id": job_id})
        return problems

    def _MirrorStatus(self, runtime: dict) -> dict:
        """Progress of the disk copy before the memory transfer; the
        memory transfer starts once every mirror is ready."""
        name = runtime["name"]
        pending = runtime["pending_migration"]
        expected = [_MIRROR_JOB_PREFIX + disk["id"]
                    for disk in runtime["disks"] if disk.get("local")]
        with QmpConnection(self.QmpSocket(name)) as qmp:
            jobs = self._MirrorJobs(qmp)
            mine = [jobs.get(job_id, {"status": "null"})
                    for job_id in expected]
            result: dict[str, Any] = {
                "status": constants.HV_MIGRATION_ACTIVE,
                "transferred_disk": sum(job.get("current-progress", 0)
                                        for job in mine),
                "total_disk": sum(job.get("total-progress", 0)
                                  for job in mine)}
            failed = ["%s: %s" % (job_id[len(_MIRROR_JOB_PREFIX):],
                                  job.get("error", "the mirror ended"))
                      for job_id, job in zip(expected, mine)
                      if job["status"] in _JOBS_ENDED]
            if failed:
                result["status"] = constants.HV_MIGRATION_FAILED
                result["error"] = ("Copying the disks to the target failed:"
                                   " %s" % "; ".join(failed))
                return result
            if all(job["status"] == "ready" for job in mine):
                self._StartMemoryMigration(qmp, pending["parameters"],
                                           pending["uri"])
                del runtime["pending_migration"]
                self._SaveRuntime(runtime)
                logging.info("Disks of instance %s copied, migrating it to"
                             " %s", name, pending["uri"])
        return result

    def GetMigrationStatus(self, instance: objects.Instance) -> dict:
        """query-migrate as HV_MIGRATION_*, with the RAM sent so far and
        in all (bytes), and QEMU's timings (ms) once known; while local
        disks are being copied, the bytes of disk copied and to copy."""
        runtime = self.LoadRuntime(instance.name)
        if runtime and runtime.get("pending_migration"):
            return self._MirrorStatus(runtime)
        info = self._Qmp(instance.name, "query-migrate")
        status = _MIGRATION_STATUSES.get(info.get("status"))
        if status is None:
            logging.warning("Instance %s: migration status %r", instance.name,
                            info.get("status"))
            status = constants.HV_MIGRATION_FAILED
        result: dict[str, Any] = {"status": status}
        ram = info.get("ram") or {}
        if "transferred" in ram and "total" in ram:
            result["transferred_ram"] = ram["transferred"]
            result["total_ram"] = ram["total"]
        for key in ("total-time", "downtime", "setup-time"):
            if key in info:
                result[key.replace("-", "_")] = info[key]
        if "error-desc" in info:
            result["error"] = info["error-desc"]
        return result

    def FinalizeMigrationDst(self, instance: objects.Instance, info: str,
                             success: bool) -> None:
        """Success: make sure the guest runs here and keep its runtime.

        Failure: kill the QEMU that AcceptInstance started and forget it;
        a QEMU this node runs for other reasons is left alone.
        """
        name = instance.name
        runtime = self.LoadRuntime(name)
        incoming = runtime is not None and "incoming" in runtime
        if not success:
            if self._Pid(name) is not None and not incoming:
                logging.warning("Instance %s runs here but was not accepted"
                                " for a migration, leaving it", name)
                return
            self._Kill(name)
            self._RemoveRuntimeFiles(name, keep_runtime=False)
            return
        if runtime is None or self._Pid(name) is None:
            raise errors.HypervisorError(
                "Instance %s did not arrive: its QEMU is not running" % name)
        deadline = time.monotonic() + _MIGRATION_SETTLE_TIMEOUT
        status = self._Status(name)
        while status == "inmigrate" and time.monotonic() < deadline:
            time.sleep(0.05)
            status = self._Status(name)
        if status == "inmigrate":
            raise errors.HypervisorError(
                "Instance %s: the incoming migration did not finish" % name)
        if runtime.get("nbd"):
            self._Qmp(name, "nbd-server-stop")
        if status == "paused":
            self._Qmp(name, "cont")
        runtime.pop("incoming", None)
        runtime.pop("nbd", None)
        self._SaveRuntime(runtime)

    def _EndOutgoingMigration(self, qmp: QmpConnection, name: str) -> None:
        """Cancel a migration still under way and wait for it to stop."""
        status = qmp.Execute("query-migrate").get("status", "none")
        if status not in _MIGRATION_UNDER_WAY:
            return
        logging.info("Cancelling the migration of instance %s (%s)", name,
                     status)
        qmp.Execute("migrate_cancel")
        deadline = time.monotonic() + _MIGRATION_SETTLE_TIMEOUT
        while status in _MIGRATION_UNDER_WAY:
            if time.monotonic() >= deadline:
                raise errors.HypervisorError(
                    "The migration of instance %s did not stop (%s)" %
                    (name, status))
            time.sleep(0.05)
            status = qmp.Execute("query-migrate").get("status", "none")

    def FinalizeMigrationSource(self, instance: objects.Instance,
                                success: bool, live: bool) -> None:
        """Success: quit the source QEMU, whose state has been sent.

        Failure: the guest resumes here if the migration stopped it (a
        non-live one, or one that completed before the master gave up).

        Disk mirrors end either way: with success once they have copied
        the last writes, before the QEMU quits; after a failure at once,
        the guest staying on this node's images.
        """
        name = instance.name
        if self._Pid(name) is None:
            if success:
                self._RemoveRuntimeFiles(name, keep_runtime=False)
                return
            raise errors.HypervisorError(
                "Instance %s is no longer running on the source node" % name)
        with QmpConnection(self.QmpSocket(name)) as qmp:
            runtime = self.LoadRuntime(name) or {}
            if success:
                status = qmp.Execute("query-migrate").get("status")
                if runtime.get("pending_migration"):
                    status = "copying disks"
                if status != "completed":
                    raise errors.HypervisorError(
                        "Migration of instance %s has not completed (%s),"
                        " not stopping it" % (name, status))
                problems = self._EndMirrors(qmp, name, False)
                if problems:
                    raise errors.HypervisorError(
                        "Migration of instance %s: copying its disks did"
                        " not finish (%s), not stopping it" %
                        (name, "; ".join(problems)))
            else:
                self._EndOutgoingMigration(qmp, name)
                self._EndMirrors(qmp, name, True)
                if runtime.pop("pending_migration", None):
                    self._SaveRuntime(runtime)
                state = qmp.Execute("query-status").get("status")
                if state == "postmigrate" or (not live and
                                              state == "paused"):
                    qmp.Execute("cont")
                return
        self.StopInstance(instance, force=True)
        self._RemoveRuntimeFiles(name, keep_runtime=False)

    # Memory ------------------------------------------------------------

    def BalloonInstanceMemory(self, instance: objects.Instance,
                              mem: int) -> None:
        """Ask the guest's balloon driver for ``mem`` MiB."""
        if self._Pid(instance.name) is None:
            raise errors.HypervisorError(
                "Cannot balloon instance %s: not running" % instance.name)
        self._Qmp(instance.name, "balloon", {"value": mem * _MIB})
