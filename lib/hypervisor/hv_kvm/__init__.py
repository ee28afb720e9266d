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

The code is split by concept: validation (the node's checks of parameter
values), monitor (QMP), runtime (the files and the command line),
processes (starting and ending QEMU) and migration, each class building on
the one before; KVMHypervisor adds what remains (start, stop, reboot,
listing, console, ballooning).
"""

import os
import re
from typing import Any

from ganeti import constants, errors, objects, pathutils
from ganeti.hypervisor import hv_base
from ganeti.hypervisor.hv_kvm.migration import KVMMigration
from ganeti.hypervisor.hv_kvm.migration import NbdPort  # noqa: F401
from ganeti.hypervisor.hv_kvm.monitor import (  # noqa: F401 (re-exported)
    _MIB, QmpConnection, QmpError)
from ganeti.hypervisor.hv_kvm.processes import KVMProcesses  # noqa: F401
from ganeti.hypervisor.hv_kvm.runtime import (  # noqa: F401 (re-exported)
    _VNC_BASE_PORT, IsLocalDisk, KVMRuntime)
from ganeti.hypervisor.hv_kvm.validation import NODE_CHECKS, _KvmPathCheck
from ganeti.parameters.hypervisors import (
    HT_BO_CDROM, HT_KVM_REBOOT, HT_SM_USER, HV_ACPI, HV_BOOT_ORDER,
    HV_CDROM_IMAGE_PATH, HV_INITRD_PATH, HV_KERNEL_PATH, HV_KVM_PATH,
    HV_REBOOT_BEHAVIOR, HV_SECURITY_DOMAIN, HV_SECURITY_MODEL,
    HV_SERIAL_CONSOLE, HV_VNC_BIND_ADDRESS, KVM_PARAMETERS)
from ganeti.parameters.hypervisors import ParseCpuMask  # noqa: F401
from ganeti.parameters.hypervisors import \
    KVM_DEFAULT_PATH as _DEFAULT_KVM_PATH
from ganeti.utils import io, process

class KVMHypervisor(KVMMigration):
    """Drives QEMU processes through their command line and QMP."""

    NAME = constants.HT_KVM
    PARAMETERS = KVM_PARAMETERS
    NODE_CHECKS = NODE_CHECKS
    CAN_MIGRATE = True
    CAN_MIGRATE_STORAGE = True

    # Parameters and start ----------------------------------------------

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

    # Memory ------------------------------------------------------------

    def BalloonInstanceMemory(self, instance: objects.Instance,
                              mem: int) -> None:
        """Ask the guest's balloon driver for ``mem`` MiB."""
        if self._Pid(instance.name) is None:
            raise errors.HypervisorError(
                "Cannot balloon instance %s: not running" % instance.name)
        self._Qmp(instance.name, "balloon", {"value": mem * _MIB})
