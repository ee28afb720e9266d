"""The QEMU process of an instance: started from its runtime, pinned to
its CPUs, found by its pid file, asked over QMP and ended.
"""

import logging
import os
import select
import signal
from typing import Any

from ganeti import errors
from ganeti.hypervisor.hv_kvm.monitor import QmpConnection, QmpError
from ganeti.hypervisor.hv_kvm.runtime import KVMRuntime
from ganeti.parameters.hypervisors import CPU_PINNING_ALL, ParseCpuMask
from ganeti.utils import io, process

# After QMP "quit" (forced stop), how long QEMU gets before SIGKILL
_QUIT_GRACE = 3.0
# How long the threads of a killed QEMU may take to exit
_KILL_TIMEOUT = 10.0
# QEMU daemonises once its devices and sockets are set up
_START_TIMEOUT = 60.0


class KVMProcesses(KVMRuntime):
    """Starting, finding and ending the instances' QEMU processes."""

    # Starting ------------------------------------------------------------

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
