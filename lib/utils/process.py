"""Running commands, pid files and daemonization.

Daemons must tell whoever started them whether they came up: a start
script that returns 0 promises a serving daemon. Daemonize therefore keeps
the original parent waiting on a pipe until the daemon reports readiness
(DaemonReady) or failure (DaemonFailed).
"""

import errno
import fcntl
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from ganeti import errors
from ganeti.utils.io import LockFile

# Grace period between SIGTERM and SIGKILL for a command that timed out
_RUNCMD_KILL_GRACE = 5.0

# Readiness protocol on the daemonization pipe: one status byte, then for
# failures the length (4 bytes, big endian) and the error message.
_DAEMON_READY = b"\x00"
_DAEMON_FAILED = b"\x01"


class RunResult:
    """Outcome of RunCmd.

    ``failed`` is true for a non-zero exit, a signal or a timeout;
    ``fail_reason`` says which, for messages shown to users.
    """

    __slots__ = ("cmd", "exit_code", "signal", "stdout", "stderr",
                 "timed_out", "failed", "fail_reason")

    def __init__(self, cmd: list[str], exit_code: int | None,
                 signal_: int | None, stdout: str, stderr: str,
                 timed_out: bool = False, timeout: float | None = None):
        self.cmd = cmd
        self.exit_code = exit_code
        self.signal = signal_
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.fail_reason: str | None
        if timed_out:
            self.fail_reason = "timed out after %s seconds" % timeout
        elif signal_ is not None:
            self.fail_reason = "terminated by signal %s" % \
                signal.Signals(signal_).name
        elif exit_code:
            self.fail_reason = "exited with exit code %s" % exit_code
        else:
            self.fail_reason = None
        self.failed = self.fail_reason is not None
        if self.failed:
            logging.debug("Command %s failed (%s); output: %s",
                          cmd, self.fail_reason, self.output)

    @property
    def output(self) -> str:
        """stdout followed by stderr, for error messages."""
        return self.stdout + self.stderr

    def __repr__(self) -> str:
        return "<RunResult %s: %s>" % (self.cmd, self.fail_reason or "ok")


def RunCmd(cmd: list[str], env: dict[str, str] | None = None,
           cwd: str | None = None, timeout: float | None = None,
           input_data: str | bytes | None = None,
           pass_fds: Sequence[int] = ()) -> RunResult:
    """Run a command and collect its output without a shell.

    ``env`` adds to (not replaces) the current environment. Without
    ``input_data`` stdin is /dev/null, since daemons have no terminal. On
    timeout the command gets SIGTERM, then SIGKILL after a grace period.
    The command inherits ``pass_fds`` (under the same numbers) and no
    other descriptor.
    """
    if isinstance(cmd, str):
        raise errors.ProgrammerError("RunCmd takes a list of arguments, not"
                                     " a shell string: %r" % cmd)
    cmd = [str(arg) for arg in cmd]
    full_env = None
    if env is not None:
        full_env = os.environ.copy()
        full_env.update(env)
    if isinstance(input_data, str):
        input_data = input_data.encode("utf-8")
    stdin = subprocess.DEVNULL if input_data is None else subprocess.PIPE
    try:
        proc = subprocess.Popen(cmd, env=full_env, cwd=cwd, close_fds=True,
                                pass_fds=pass_fds, stdin=stdin,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as err:
        raise errors.CommandError("Can't execute %s: %s" %
                                  (" ".join(cmd), err)) from err
    timed_out = False
    try:
        stdout, stderr = proc.communicate(input=input_data, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.terminate()
        try:
            stdout, stderr = proc.communicate(timeout=_RUNCMD_KILL_GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            # A grandchild may keep the pipes open; do not wait for it
            try:
                stdout, stderr = proc.communicate(timeout=1.0)
            except subprocess.TimeoutExpired:
                stdout, stderr = b"", b""
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()
                proc.wait()
    code = proc.returncode
    return RunResult(cmd,
                     code if code >= 0 else None,
                     -code if code < 0 else None,
                     stdout.decode("utf-8", "replace"),
                     stderr.decode("utf-8", "replace"),
                     timed_out=timed_out, timeout=timeout)


def ReadPidFile(path: str) -> int:
    """Pid stored in a pid file; 0 if the file is missing or invalid."""
    try:
        with open(path, encoding="ascii") as fobj:
            content = fobj.read(64)
    except FileNotFoundError:
        return 0
    except (OSError, UnicodeDecodeError) as err:
        logging.warning("Can't read pid file %s: %s", path, err)
        return 0
    try:
        pid = int(content.strip())
    except ValueError:
        logging.warning("Pid file %s does not contain a pid: %r", path,
                        content)
        return 0
    return pid if pid > 0 else 0


def IsProcessAlive(pid: int) -> bool:
    """Whether a process exists and is not a zombie.

    Any thread counts: a leader that ends first shows as a zombie while
    the others still run and hold the process's files (a daemon's
    listening socket stayed bound for milliseconds after its leader was
    a zombie).
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        threads = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return True
    for tid in threads:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid), encoding="ascii",
                      errors="replace") as fobj:
                stat = fobj.read()
        except OSError:
            # The thread ended meanwhile
            continue
        # A zombie has finished; it only waits for its parent to reap it.
        # The command name may contain spaces and parentheses; the state
        # follows the last closing parenthesis.
        if stat[stat.rfind(")") + 2:][:1] != "Z":
            return True
    return False


def _WaitForExit(pid: int, timeout: float, waitpid: bool) -> bool:
    """Wait until ``pid`` is gone (reaping it if ``waitpid``)."""
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        if waitpid:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return True
            except ChildProcessError:
                return True
        elif not IsProcessAlive(pid):
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.1)


def KillProcess(pid: int, signal_: int = signal.SIGTERM,
                timeout: float = 30, waitpid: bool = False) -> None:
    """Send ``signal_`` to a process and make sure it ends.

    If the process is still alive after ``timeout`` seconds it gets SIGKILL
    (a non-positive timeout only sends the signal). ``waitpid`` reaps the
    process, for callers whose own child it is.
    """
    if pid <= 0:
        raise errors.ProgrammerError("Invalid pid %r" % pid)
    if not IsProcessAlive(pid):
        if waitpid:
            _WaitForExit(pid, 0, True)
        return
    try:
        os.kill(pid, signal_)
    except ProcessLookupError:
        pass
    if timeout <= 0:
        if waitpid:
            _WaitForExit(pid, 0, True)
        return
    if _WaitForExit(pid, timeout, waitpid):
        return
    logging.warning("Process %d did not exit %s seconds after signal %s,"
                    " sending SIGKILL", pid, timeout, signal_)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    _WaitForExit(pid, timeout, waitpid)


def WritePidFile(path: str) -> int:
    """Create the pid file, lock it and write our pid; returns the fd.

    The exclusive lock is what marks the daemon as running (a pid alone may
    be stale or reused), so the fd must stay open for the life of the
    process.
    """
    try:
        fd = LockFile(path)
    except errors.LockError:
        raise errors.PidFileLockError("Pid file %s is locked by another"
                                      " process" % path) from None
    os.ftruncate(fd, 0)
    os.write(fd, b"%d\n" % os.getpid())
    return fd


def IsPidFileLocked(path: str) -> bool:
    """Whether a live process holds the lock of a pid file.

    The probe takes a shared lock for an instant; a daemon that tries to
    lock the file in exactly that instant fails as if another copy ran.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def Daemonize(logfile: str) -> int:
    """Detach from the terminal; returns the fd for DaemonReady/Failed.

    Double fork (with setsid in between) so the daemon is not a session
    leader and can't reacquire a terminal. The original process waits for
    the daemon's report and exits with 0 (ready) or 1 (failed, message on
    stderr); it never returns. stdin becomes /dev/null and stdout/stderr go
    to ``logfile`` so stray output ends up in the log.
    """
    # Buffered output would otherwise be written by both processes
    sys.stdout.flush()
    sys.stderr.flush()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid != 0:
        os.close(wfd)
        _WaitForDaemon(rfd, logfile)
    os.close(rfd)
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    os.chdir("/")
    os.umask(0o077)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    log_fd = os.open(logfile, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(null_fd)
    os.close(log_fd)
    return wfd


def _ReadExactly(fd: int, size: int) -> bytes:
    """Read ``size`` bytes from a pipe (fewer only at end of file)."""
    data = b""
    while len(data) < size:
        try:
            chunk = os.read(fd, size - len(data))
        except InterruptedError:
            continue
        if not chunk:
            break
        data += chunk
    return data


def _WaitForDaemon(rfd: int, logfile: str) -> None:
    # Don't wait for end of file: processes the daemon forked before it
    # reported inherit the pipe and may keep it open for long
    status = _ReadExactly(rfd, 1)
    if status == _DAEMON_READY:
        os._exit(0)
    message = None
    if status == _DAEMON_FAILED:
        header = _ReadExactly(rfd, 4)
        if len(header) == 4:
            message = _ReadExactly(rfd, int.from_bytes(header, "big")) \
                .decode("utf-8", "replace")
    if message is None:
        message = "The daemon exited before it was ready; see %s" % logfile
    sys.stderr.write("%s\n" % message)
    sys.stderr.flush()
    os._exit(1)


def _ReportToParent(fd: int, data: bytes) -> None:
    try:
        os.write(fd, data)
    except OSError as err:
        # The waiting parent may have been killed; the daemon carries on
        if err.errno != errno.EPIPE:
            raise
    finally:
        os.close(fd)


def DaemonReady(fd: int) -> None:
    """Tell the process waiting in Daemonize that the daemon is serving."""
    _ReportToParent(fd, _DAEMON_READY)


def DaemonFailed(fd: int, message: str) -> None:
    """Tell the process waiting in Daemonize that start-up failed."""
    data = message.encode("utf-8")
    _ReportToParent(fd, _DAEMON_FAILED + len(data).to_bytes(4, "big") + data)
