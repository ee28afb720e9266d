"""Nodes of a throw-away virtual cluster, with real noded processes.

Each node gets a root directory ``<tmp>/<name>`` (GANETI_ROOTDIR), a random
127.x.y.z address in a shared hosts file (GANETI_HOSTS_FILE) and the
cluster certificate. All nodes listen on the same random port, on their
own address, so tests neither clash with each other nor with a developer's
cluster on 127.0.0.1:1811. The temporary directory is short because unix
socket paths below it must stay under 108 characters.

Usage::

    with TestCluster(3) as cluster:
        cluster.StartNoded()
        runner = cluster.Runner()
        ...
"""

import os
import random
import shutil
import subprocess
import sys
import tempfile

import pytest

from ganeti import constants, netutils, pathutils, vcluster
from ganeti.rpc import node as rpc_node
from ganeti.storage import drbd, drbd_daemon
from ganeti.utils import io, process, x509

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DAEMONS_DIR = os.path.join(REPO_DIR, "daemons")
NODED = os.path.join(DAEMONS_DIR, "ganeti-noded")
DAEMON_UTIL = os.path.join(DAEMONS_DIR, "daemon-util")

_START_TIMEOUT = 30
_STOP_TIMEOUT = 10


def RandomLoopbackAddress(exclude: set[str] = frozenset()) -> str:
    """A random 127.x.y.z address (x, y, z in 1..254) not in ``exclude``."""
    while True:
        address = "127.%d.%d.%d" % tuple(random.randint(1, 254)
                                         for _ in range(3))
        if address not in exclude:
            return address


def RandomPort() -> int:
    """A port below the ephemeral range, so clients' ports never clash."""
    return random.randint(10000, 30000)


# The drbd template's tools: a mirror pair needs them on every node
DRBD_TOOLS = [
    pytest.mark.skipif(shutil.which(drbd_daemon.QSD) is None or
                       shutil.which(drbd.QEMU_IMG) is None,
                       reason="qemu-storage-daemon/qemu-img not installed"),
    pytest.mark.skipif(not os.path.exists("/dev/fuse"),
                       reason="no /dev/fuse for FUSE block exports"),
]


def ChildPids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (e.g. noded's connection
    children), read from /proc."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, encoding="ascii",
                      errors="replace") as stat_file:
                # The command name may hold spaces and parentheses
                fields = stat_file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(entry))
    return children


def ProcessesMentioning(text: str) -> list[int]:
    """PIDs of the processes whose command line contains ``text`` (what
    "pgrep -f" finds, read from /proc: minimal machines lack procps)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as fobj:
                cmdline = fobj.read().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in cmdline:
            found.append(int(entry))
    return found


class TestNode:
    """One node: its name, address, root directory and environment."""

    def __init__(self, cluster: "TestCluster", name: str, address: str):
        self.cluster = cluster
        self.name = name
        self.ip = address
        self.root = os.path.join(cluster.tmpdir, name)
        self.env = dict(os.environ)
        self.env.update({
            vcluster.ENV_ROOTDIR: self.root,
            vcluster.ENV_HOSTNAME: name,
            netutils.ENV_HOSTS_FILE: cluster.hosts_file,
            # "#!/usr/bin/env python3" must find this interpreter
            "PATH": os.pathsep.join([os.path.dirname(sys.executable),
                                     os.environ.get("PATH", "")]),
        })

    def Path(self, path: str) -> str:
        """This node's copy of a pathutils path."""
        return self.root + vcluster.MakeVirtualPath(path)

    @property
    def pid_file(self) -> str:
        """noded's pid file on this node."""
        return self.Path(pathutils.DaemonPidFileName(constants.NODED))

    def NodedPid(self) -> int:
        """Pid of this node's noded, 0 if none runs."""
        pid = process.ReadPidFile(self.pid_file)
        return pid if process.IsProcessAlive(pid) else 0

    def Run(self, args: list[str],
            timeout: float = _START_TIMEOUT) -> subprocess.CompletedProcess:
        """Run a command with this node's environment."""
        return subprocess.run(args, env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def NodedCommand(self, *args: str) -> list[str]:
        """Command line starting noded on this node's address and port."""
        return [sys.executable, NODED, "-p", str(self.cluster.port)] + \
            list(args)

    def StartNoded(self, *args: str) -> subprocess.CompletedProcess:
        """Start noded (it daemonizes); fails the caller if it did not."""
        result = self.Run(self.NodedCommand(*args))
        if result.returncode != 0:
            raise RuntimeError("noded on %s failed to start: %s" %
                               (self.name, result.stderr))
        return result

    def StopNoded(self) -> None:
        """Stop noded by its pid and wait until it has exited."""
        pid = self.NodedPid()
        if pid:
            process.KillProcess(pid, timeout=_STOP_TIMEOUT)


class TestCluster:
    """A temporary virtual cluster sharing one self-signed certificate."""

    def __init__(self, node_count: int = 0, port: int | None = None,
                 prefix: str = "node"):
        self.tmpdir = tempfile.mkdtemp(prefix="gnt", dir="/tmp")
        self.hosts_file = os.path.join(self.tmpdir, "hosts")
        self.port = port or RandomPort()
        self.cert_file = os.path.join(self.tmpdir, "cluster.pem")
        x509.GenerateSelfSignedSslCert(self.cert_file, validity_days=1)
        self.nodes: list[TestNode] = []
        io.WriteFile(self.hosts_file, data="")
        for idx in range(node_count):
            self.AddNode("%s%d" % (prefix, idx + 1))

    def __enter__(self) -> "TestCluster":
        return self

    def __exit__(self, *_exc) -> None:
        self.Cleanup()

    def AddNode(self, name: str, with_cert: bool = True) -> TestNode:
        """Create a node root, its hosts entry and (optionally) its cert."""
        address = RandomLoopbackAddress({node.ip for node in self.nodes})
        node = TestNode(self, name, address)
        os.makedirs(node.Path(pathutils.DATA_DIR))
        if with_cert:
            shutil.copy(self.cert_file, node.Path(pathutils.NODED_CERT_FILE))
        with open(self.hosts_file, "a", encoding="ascii") as fobj:
            fobj.write("%s %s\n" % (address, name))
        self.nodes.append(node)
        return node

    def StartNoded(self, nodes: list[TestNode] | None = None) -> None:
        """Start noded on the given (default: all) nodes in parallel."""
        nodes = self.nodes if nodes is None else nodes
        procs = [(node, subprocess.Popen(node.NodedCommand(), env=node.env,
                                         stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True))
                 for node in nodes]
        failed = []
        for node, proc in procs:
            _, stderr = proc.communicate(timeout=_START_TIMEOUT)
            if proc.returncode != 0:
                failed.append("%s: %s" % (node.name, stderr.strip()))
        if failed:
            raise RuntimeError("noded failed to start: %s" %
                               "; ".join(failed))

    def Runner(self, offline: tuple[str, ...] = (),
               cert_file: str | None = None) -> rpc_node.RpcRunner:
        """An RPC runner knowing every node's address."""
        resolver = rpc_node.StaticResolver(
            {node.name: node.ip for node in self.nodes}, offline=offline)
        return rpc_node.RpcRunner(resolver, cert_file=cert_file or
                                  self.cert_file, port=self.port)

    def Cleanup(self) -> None:
        """Stop every noded and remove the cluster's files."""
        for node in self.nodes:
            node.StopNoded()
        shutil.rmtree(self.tmpdir, ignore_errors=True)
