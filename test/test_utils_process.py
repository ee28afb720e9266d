"""ganeti.utils.process: commands, pid files, daemonization."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ganeti import errors
from ganeti.utils import process


def test_runcmd_success_and_output():
    result = process.RunCmd([sys.executable, "-c",
                             "import sys; print('out'); "
                             "sys.stderr.write('err')"])
    assert not result.failed and result.fail_reason is None
    assert result.exit_code == 0
    assert (result.stdout, result.stderr) == ("out\n", "err")
    assert result.output == "out\nerr"


def test_runcmd_failure_env_cwd_input(tmp_path):
    result = process.RunCmd(
        ["sh", "-c", 'pwd; echo "$GNT_TEST_VAR"; cat; exit 3'],
        env={"GNT_TEST_VAR": "v"}, cwd=str(tmp_path), input_data="in")
    assert result.failed and result.exit_code == 3
    assert "exit code 3" in result.fail_reason
    assert result.stdout == "%s\nv\nin" % tmp_path
    # Without input, stdin is empty rather than the caller's terminal
    assert process.RunCmd(["cat"]).stdout == ""


def test_runcmd_signal_timeout_and_errors():
    result = process.RunCmd(["sh", "-c", "kill -9 $$"])
    assert result.failed and result.signal == signal.SIGKILL
    assert "SIGKILL" in result.fail_reason
    start = time.monotonic()
    result = process.RunCmd(["sleep", "10"], timeout=0.2)
    assert time.monotonic() - start < 3
    assert result.failed and result.timed_out
    assert "timed out" in result.fail_reason
    with pytest.raises(errors.CommandError):
        process.RunCmd(["/nonexistent/command"])
    with pytest.raises(errors.ProgrammerError):
        process.RunCmd("echo shell string")


def test_runcmd_timeout_with_a_grandchild_holding_the_pipes(monkeypatch):
    """The shell ends at SIGTERM, its sleep keeps the output pipes open:
    RunCmd stops waiting for them after the kill grace and one second
    (test_mond's timed-out diagnose command no longer takes this path)."""
    monkeypatch.setattr(process, "_RUNCMD_KILL_GRACE", 0.3)
    start = time.monotonic()
    result = process.RunCmd(["sh", "-c", "echo early; sleep 30; echo late"],
                            timeout=0.5)
    assert time.monotonic() - start < 5
    assert result.timed_out and result.failed
    assert result.fail_reason == "timed out after 0.5 seconds"
    assert "late" not in result.stdout


def test_read_pid_file(tmp_path):
    path = str(tmp_path / "x.pid")
    assert process.ReadPidFile(path) == 0
    for content, expected in (("123\n", 123), ("junk", 0), ("", 0),
                              ("-5", 0)):
        with open(path, "w", encoding="ascii") as fobj:
            fobj.write(content)
        assert process.ReadPidFile(path) == expected


def test_write_pid_file_locks(tmp_path):
    path = str(tmp_path / "d.pid")
    assert not process.IsPidFileLocked(path)
    fd = process.WritePidFile(path)
    try:
        assert process.ReadPidFile(path) == os.getpid()
        assert process.IsPidFileLocked(path)
        with pytest.raises(errors.PidFileLockError,
                           match="locked by another process"):
            process.WritePidFile(path)
    finally:
        os.close(fd)
    assert not process.IsPidFileLocked(path)
    os.close(process.WritePidFile(path))


def test_alive_and_kill():
    assert process.IsProcessAlive(os.getpid())
    assert not process.IsProcessAlive(0)
    pid = os.fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    assert process.IsProcessAlive(pid)
    process.KillProcess(pid, timeout=5, waitpid=True)
    assert not process.IsProcessAlive(pid)
    # Reaped by KillProcess
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    # A process ignoring SIGTERM gets SIGKILL after the timeout
    stubborn = subprocess.Popen(
        [sys.executable, "-c", "import signal, time, sys;"
         " signal.signal(signal.SIGTERM, signal.SIG_IGN);"
         " print('ready', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE)
    stubborn.stdout.readline()
    process.KillProcess(stubborn.pid, timeout=0.3)
    assert stubborn.wait(timeout=5) == -signal.SIGKILL
    stubborn.stdout.close()
    # Zombies are not alive
    zombie = subprocess.Popen(["true"])
    time.sleep(0.2)
    assert not process.IsProcessAlive(zombie.pid)
    zombie.wait()


def test_alive_while_a_thread_outlives_the_leader():
    """A leader that ended first is a zombie, the process is not done."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import ctypes, threading, time, sys;"
         " threading.Thread(target=lambda: (print('ready', flush=True),"
         " time.sleep(1.5))).start(); time.sleep(0.2);"
         " ctypes.CDLL(None).pthread_exit(None)"],
        stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        deadline = time.monotonic() + 5
        while not open("/proc/%d/stat" % proc.pid).read().rsplit(
                ")", 1)[1].startswith(" Z"):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert process.IsProcessAlive(proc.pid)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.stdout.close()


_DAEMON_SCRIPT = textwrap.dedent("""
    import os, sys, time
    from ganeti.utils import process
    fd = process.Daemonize(sys.argv[1])
    print("daemon output", flush=True)
    with open(sys.argv[2], "w") as fobj:
        fobj.write("%d %d" % (os.getpid(), os.getsid(0)))
    if sys.argv[3] == "ok":
        process.DaemonReady(fd)
    elif sys.argv[3] == "fail":
        process.DaemonFailed(fd, "could not bind")
    else:
        os._exit(3)
""")


@pytest.mark.parametrize("outcome,code,message", [
    ("ok", 0, ""),
    ("fail", 1, "could not bind"),
    ("crash", 1, "exited before it was ready"),
])
def test_daemonize(tmp_path, outcome, code, message):
    logfile = str(tmp_path / "d.log")
    info = str(tmp_path / "info")
    result = subprocess.run([sys.executable, "-c", _DAEMON_SCRIPT, logfile,
                             info, outcome], capture_output=True, text=True,
                            timeout=10)
    assert result.returncode == code
    assert message in result.stderr
    assert result.stdout == ""
    with open(info, encoding="ascii") as fobj:
        pid, sid = map(int, fobj.read().split())
    # Not a session leader (double fork), in its own session
    assert sid != pid and sid != os.getsid(0)
    with open(logfile, encoding="utf-8") as fobj:
        assert "daemon output" in fobj.read()
