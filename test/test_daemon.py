"""ganeti.daemon.GenericMain with a small real daemon."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from ganeti import constants, errors, netutils, pathutils
from ganeti.rpc import node as rpc_node
from ganeti.utils import process

import testutils_node

pytestmark = pytest.mark.integration

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

    parser = optparse.OptionParser()
    daemon.AddDaemonOptions(parser, default_port=4321)
    daemon.GenericMain(constants.MAINTD, parser, Check, Prepare, Exec)
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


def test_daemon_port_from_services_file(tmp_path, monkeypatch):
    services = tmp_path / "services"
    services.write_text("# comment\n"
                        "ganeti-noded 2811/udp\n"
                        "ganeti-noded 2812/tcp   # the one\n"
                        "other 3000/tcp ganeti-rapi\n")
    monkeypatch.setenv(netutils.ENV_SERVICES_FILE, str(services))
    assert netutils.GetDaemonPort(constants.NODED) == 2812
    # Aliases count, as in services(5)
    assert netutils.GetDaemonPort(constants.RAPI) == 3000
    services.write_text("ganeti-rapi 6080/tcp\n")
    assert netutils.GetDaemonPort(constants.RAPI) == 6080
    # A daemon the file does not name, or no file: the system's database
    monkeypatch.setenv(netutils.ENV_SERVICES_FILE, str(tmp_path / "none"))
    for name in (constants.NODED, constants.RAPI):
        try:
            expected = socket.getservbyname(name, "tcp")
        except OSError:
            expected = constants.DAEMON_PORTS[name][1]
        assert netutils.GetDaemonPort(name) == expected
    with pytest.raises(errors.ProgrammerError):
        netutils.GetDaemonPort(constants.MASTERD)


def test_noded_and_rpc_use_the_services_file_port(monkeypatch):
    """Without -p or port arguments, both ends agree on the file's port."""
    with testutils_node.TestCluster(1) as cluster:
        node = cluster.nodes[0]
        services = os.path.join(cluster.tmpdir, "services")
        with open(services, "w", encoding="ascii") as fobj:
            fobj.write("ganeti-noded %d/tcp\n" % cluster.port)
        node.env[netutils.ENV_SERVICES_FILE] = services
        result = node.Run([sys.executable, testutils_node.NODED])
        assert result.returncode == 0, result.stderr
        monkeypatch.setenv(netutils.ENV_SERVICES_FILE, services)
        runner = rpc_node.RpcRunner(
            rpc_node.StaticResolver({node.name: node.ip}),
            cert_file=cluster.cert_file)
        try:
            result = runner.call_version([node.name])[node.name]
        finally:
            runner.close()
        assert not result.fail_msg
        assert result.payload == constants.PROTOCOL_VERSION


def test_bind_failure_names_address_and_port():
    with testutils_node.TestCluster(1) as cluster:
        node = cluster.nodes[0]
        with socket.socket() as holder:
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            holder.bind((node.ip, cluster.port))
            holder.listen()
            result = node.Run(node.NodedCommand())
        assert result.returncode == 1
        assert ("ganeti-noded: Could not bind to %s:%d: Address already in"
                " use" % (node.ip, cluster.port)) in result.stderr
        assert "Errno" not in result.stderr
        # The daemon exits right after reporting the failure
        deadline = time.monotonic() + 5
        while node.NodedPid():
            assert time.monotonic() < deadline, "noded still runs"
            time.sleep(0.01)
