"""ganeti.daemon.GenericMain with a small real daemon."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import testutils_node  # noqa: E402

from ganeti import constants, pathutils  # noqa: E402
from ganeti.utils import process  # noqa: E402

_DAEMON = textwrap.dedent("""
    import json, optparse, os, sys, time
    from ganeti import constants, daemon, errors, utils

    mode, info_file = sys.argv.pop(1), sys.argv.pop(1)

    def Check(options, args):
        if mode == "check-fail":
            raise errors.GenericError("bad environment")

    def Prepare(options, args):
        if mode == "prep-fail":
            raise errors.GenericError("cannot bind")
        worker = os.fork()
        if worker == 0:
            time.sleep(10)
            os._exit(0)
        return {"bind": options.bind_address, "port": options.port,
                "pid": os.getpid(), "worker": worker}

    def Exec(options, args, prep, stop_event):
        # Atomic, so the test never reads a half-written file
        utils.WriteFile(info_file, data=json.dumps(prep))
        stop_event.wait()

    daemon.GenericMain(constants.MAINTD, optparse.OptionParser(), Check,
                       Prepare, Exec, default_port=4321)
""")


@pytest.fixture
def node():
    with testutils_node.TestCluster() as cluster:
        yield cluster.AddNode("dnode", with_cert=False)


def _Info(path, timeout=5):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "daemon did not start"
        time.sleep(0.01)
    with open(path, encoding="utf-8") as fobj:
        return json.load(fobj)


def _WaitGone(pid, timeout=5):
    deadline = time.monotonic() + timeout
    while process.IsProcessAlive(pid):
        assert time.monotonic() < deadline, "process %d still alive" % pid
        time.sleep(0.01)


def test_lifecycle(node):
    info_file = os.path.join(node.cluster.tmpdir, "info")
    result = node.Run([sys.executable, "-c", _DAEMON, "ok", info_file])
    assert result.returncode == 0, result.stderr
    info = _Info(info_file)
    # A virtual node listens on its own address by default
    assert (info["bind"], info["port"]) == (node.ip, 4321)
    pidfile = node.Path(pathutils.DaemonPidFileName(constants.MAINTD))
    assert process.ReadPidFile(pidfile) == info["pid"]
    assert process.IsPidFileLocked(pidfile)
    for path, _ in pathutils.GetNodeDirectories():
        assert os.path.isdir(node.Path(path))

    os.kill(info["pid"], signal.SIGTERM)
    _WaitGone(info["pid"])
    assert not os.path.exists(pidfile)
    # The forked worker outlives the daemon without holding its pid file,
    # and has the default SIGTERM action again
    assert process.IsProcessAlive(info["worker"])
    assert not process.IsPidFileLocked(pidfile)
    os.kill(info["worker"], signal.SIGTERM)
    _WaitGone(info["worker"])

    logfile = node.Path(pathutils.GetLogFilename(
        constants.DAEMONS_LOGBASE[constants.MAINTD]))
    with open(logfile, encoding="utf-8") as fobj:
        log = fobj.read()
    assert "Received SIGTERM" in log and "stopped" in log


@pytest.mark.parametrize("mode,message", [("check-fail", "bad environment"),
                                          ("prep-fail", "cannot bind")])
def test_startup_failures(node, mode, message):
    info_file = os.path.join(node.cluster.tmpdir, "info")
    result = node.Run([sys.executable, "-c", _DAEMON, mode, info_file])
    assert result.returncode == 1
    assert message in result.stderr
    pidfile = node.Path(pathutils.DaemonPidFileName(constants.MAINTD))
    assert not os.path.exists(pidfile)


def test_foreground_and_options(node):
    info_file = os.path.join(node.cluster.tmpdir, "info")
    proc = subprocess.Popen(
        [sys.executable, "-c", _DAEMON, "ok", info_file, "-f", "-d",
         "-b", "127.0.0.1", "-p", "999"],
        env=node.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    info = _Info(info_file)
    assert info["pid"] == proc.pid
    assert (info["bind"], info["port"]) == ("127.0.0.1", 999)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=5) == 0
    # The worker shares our pipes
    os.kill(info["worker"], signal.SIGTERM)
    _, stderr = proc.communicate(timeout=5)
    assert "Received SIGINT" in stderr
    result = node.Run([sys.executable, "-c", _DAEMON, "ok", info_file,
                       "-p", "0"])
    assert result.returncode == 1 and "Invalid port" in result.stderr
