"""tools/local-cluster as a new user runs it, in a temporary directory.

The script's nodes have fixed addresses (127.0.80.1 and .2); the test
holds Ganeti's default ports on them, as another Ganeti would, so the
script must choose others. One test function walks through the whole
story, since every step needs the cluster of the step before.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from ganeti import constants

# tools/local-cluster's addresses are fixed (127.0.80.x): its tests must
# not run in parallel (see test_local_cluster_kvm)
pytestmark = [pytest.mark.integration,
              pytest.mark.usefixtures("local_cluster_lock")]

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(TOP, "tools", "local-cluster")
NODE1_IP = "127.0.80.1"
NODE2_IP = "127.0.80.2"


def _Hold(address: str, port: int) -> socket.socket | None:
    """Listen on address:port; None if something else already does."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError:
        sock.close()
        return None
    sock.listen()
    return sock


@pytest.fixture
def base():
    """The cluster's directory, destroyed (daemons stopped) at the end."""
    tmpdir = tempfile.mkdtemp(prefix="glc", dir="/tmp")
    path = os.path.join(tmpdir, "lc")
    try:
        yield path
    finally:
        _Script(path, "destroy", timeout=120)
        shutil.rmtree(tmpdir, ignore_errors=True)


def _Env(base: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("GANETI_") and key != "FORCE_LUXI_SOCKET"}
    env["GANETI_LOCAL_CLUSTER_DIR"] = base
    return env


def _Script(base: str, *args: str,
            timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([SCRIPT] + list(args), env=_Env(base),
                          capture_output=True, text=True, timeout=timeout,
                          check=False)


def _AsNode(base: str, env_file: str, command: str
            ) -> subprocess.CompletedProcess:
    """Run a shell command with a node's env file sourced."""
    return subprocess.run(["bash", "-c", ". %s/%s; %s" %
                           (base, env_file, command)], env=_Env(base),
                          capture_output=True, text=True, timeout=120,
                          check=False)


def _Ports(base: str) -> dict[str, int]:
    ports = {}
    with open(os.path.join(base, "services"), encoding="ascii") as fobj:
        for line in fobj:
            fields = line.split("#", 1)[0].split()
            if fields:
                ports[fields[0]] = int(fields[1].split("/")[0])
    return ports


def _KillWhenInitialised(base: str) -> None:
    """Run the script and kill it once the master's config exists."""
    config = os.path.join(base, "node1.local/var/lib/ganeti/config.data")
    proc = subprocess.Popen([SCRIPT], env=_Env(base),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(config):
            assert proc.poll() is None, "the script ended early"
            assert time.monotonic() < deadline, "no config.data"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_taken_ports_failed_run_and_failover(base):
    holders = [_Hold(NODE1_IP, constants.DEFAULT_NODED_PORT),
               _Hold(NODE2_IP, constants.DEFAULT_RAPI_PORT)]
    try:
        # A run that dies half-way leaves running daemons and no marker ...
        _KillWhenInitialised(base)
        assert not os.path.exists(os.path.join(base, "initialised"))
        # ... and the next run starts afresh
        result = _Script(base)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Removing the unfinished cluster" in result.stdout
        assert "config.data not found" not in result.stderr
        assert os.path.exists(os.path.join(base, "initialised"))
        ports = _Ports(base)
        assert ports["ganeti-noded"] != constants.DEFAULT_NODED_PORT
        assert ports["ganeti-rapi"] != constants.DEFAULT_RAPI_PORT
        assert "https://%s:%d" % (NODE1_IP, ports["ganeti-rapi"]) in \
            result.stdout
        result = _AsNode(base, "env", "gnt-instance list --no-headers -o"
                         " name,status")
        assert result.stdout.split() == ["inst1.local", "running"], \
            result.stderr

        # After a failover the old master's commands point to the new one
        result = _AsNode(base, "env-node2.local",
                         "gnt-cluster master-failover")
        assert result.returncode == 0, result.stderr
        result = _AsNode(base, "env", "gnt-node list")
        assert result.returncode == 1
        assert ("This is not the master node, please connect to node"
                " 'node2.local'") in result.stderr
        # A restart after the failover is clean and runs on the new master
        assert _Script(base, "stop").returncode == 0
        result = _Script(base)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Cluster already initialised" in result.stdout
        assert "not the master" not in result.stdout + result.stderr
        assert "on the master, node2.local" in result.stdout
        assert "https://%s:%d" % (NODE2_IP, ports["ganeti-rapi"]) in \
            result.stdout
    finally:
        for sock in holders:
            if sock is not None:
                sock.close()
