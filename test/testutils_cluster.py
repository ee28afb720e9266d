"""A real virtual cluster for integration tests.

Each node gets its own root directory (``<tmp>/<node name>``), its own
127.x.y.z address and the shared hosts file; ``gnt-cluster init`` starts
real noded and masterd processes, which are stopped by PID when the test
ends. ``AddNode`` prepares further nodes and starts their noded.
"""

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from ganeti import constants, pathutils
from ganeti.utils import process

import testutils_node

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(TOP, "scripts")
DAEMONS = os.path.join(TOP, "daemons")
PID_FILES = ("ganeti-maintd.pid", "ganeti-masterd.pid", "ganeti-noded.pid",
             "ganeti-rapi.pid", "ganeti-mond.pid")
# Instance policy bounds wide enough for the small instances of the tests
# (Ganeti's defaults want 128 MiB of memory and 1 GiB disks); for
# "gnt-cluster init/modify --ipolicy-bounds-specs"
SMALL_IPOLICY_BOUNDS = (
    "min:memory-size=1,cpu-count=1,disk-count=0,disk-size=1,nic-count=0,"
    "spindle-use=0/max:memory-size=2000000000,cpu-count=64,disk-count=16,"
    "disk-size=100000000,nic-count=8,spindle-use=12")


def WaitFor(predicate, timeout: float = 30, what: str = "a condition",
            interval: float = 0.1):
    """Poll ``predicate`` until it returns something true, and return it;
    fails naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError("Timed out waiting for %s" % what)
        time.sleep(interval)


def WaitForJob(client, job_id: int, timeout: float = 30) -> str:
    """Wait (without polling) until a job is finalized; return its status."""
    from ganeti import constants
    deadline = time.monotonic() + timeout
    info = None
    while time.monotonic() < deadline:
        result = client.WaitForJobChangeOnce(job_id, ["status"], info, None,
                                             timeout=5)
        if result == constants.JOB_NOTCHANGED:
            continue
        info = result[0]
        if info[0] in constants.JOBS_FINALIZED:
            return info[0]
    raise AssertionError("job %s did not finish in %s s" % (job_id, timeout))


def StopProcessesMentioning(text: str, timeout: float = 5) -> None:
    """SIGTERM every process whose command line mentions ``text`` (QEMU's
    daemons unmount their FUSE exports on it), SIGKILL what is left after
    ``timeout`` seconds."""
    pids = testutils_node.ProcessesMentioning(text)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = [pid for pid in pids if process.IsProcessAlive(pid)]
        if not pids:
            return


@contextlib.contextmanager
def NoDefaultIAllocator(cluster: "VirtualCluster"):
    """The cluster without a default allocator for the duration (commands
    given neither a node nor -I then refuse, as in Ganeti)."""
    cluster.Run("gnt-cluster", "modify", "--default-iallocator", "")
    try:
        yield
    finally:
        cluster.Run("gnt-cluster", "modify", "--default-iallocator",
                    constants.IALLOCATOR_BUILTIN)


def RandomLoopbackNet() -> str:
    """A random 127.x.y prefix, unlikely to clash with other test runs."""
    return "127.%d.%d" % (random.randint(1, 254), random.randint(1, 254))


class VirtualNode:
    """One node of a virtual cluster, driven through the real commands."""

    def __init__(self, cluster: "VirtualCluster", name: str, ip: str):
        self.cluster = cluster
        self.node = name
        self.node_ip = ip
        # Network namespace the node's commands run in (None: the host's)
        self.netns: str | None = None
        self.root = os.path.join(cluster.base, name)
        os.makedirs(self.root, exist_ok=True)
        self.env = dict(os.environ)
        self.env.update({
            "GANETI_ROOTDIR": self.root,
            "GANETI_HOSTNAME": name,
            "GANETI_HOSTS_FILE": cluster.hosts_file,
            "GANETI_SERVICES_FILE": cluster.services_file,
            "PATH": os.pathsep.join([SCRIPTS, DAEMONS,
                                     os.path.dirname(sys.executable),
                                     os.environ.get("PATH", "")]),
        })
        self.env.pop("FORCE_LUXI_SOCKET", None)
        self.env.update(cluster.extra_env)

    @property
    def name(self) -> str:
        return self.node

    def Path(self, *parts: str) -> str:
        """A path below the node root (parts relative to /)."""
        return os.path.join(self.root, *parts)

    def NodePath(self, path: str) -> str:
        """A pathutils path (as for a real node) below this node's root."""
        return self.root + path

    @property
    def queue_dir(self) -> str:
        return self.NodePath(pathutils.QUEUE_DIR)

    @property
    def master_socket(self) -> str:
        return self.NodePath(pathutils.MASTER_SOCKET)

    def Run(self, *args: str, check: bool = True, timeout: float = 60,
            input: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run a command (gnt-*, daemon-util, ...) as this node; ``env``
        adds to the node's environment for this command."""
        if self.netns:
            args = ("ip", "netns", "exec", self.netns) + args
        result = subprocess.run(list(args), env={**self.env, **(env or {})},
                                cwd=self.cluster.base, capture_output=True,
                                text=True, timeout=timeout, check=False,
                                input=input)
        if check and result.returncode != 0:
            raise AssertionError("%s on %s failed (%d):\nstdout: %s\n"
                                 "stderr: %s" %
                                 (" ".join(args), self.node,
                                  result.returncode, result.stdout,
                                  result.stderr))
        return result

    def Pid(self, daemon: str) -> int:
        try:
            with open(self.NodePath(pathutils.DaemonPidFileName(daemon)),
                      encoding="utf-8") as fobj:
                return int(fobj.read().strip())
        except (OSError, ValueError):
            return 0

    def Luxi(self):
        """A LUXI client bound to this node's master socket."""
        from ganeti import luxi
        return luxi.Client(address=self.master_socket)

    def StartMasterd(self, *args: str,
                     check: bool = True) -> subprocess.CompletedProcess:
        return self.Run("daemon-util", "start", "ganeti-masterd", *args,
                        check=check)

    def StartMasterdAndWait(self, timeout: float = 120) -> None:
        """Start masterd and wait until it answers LUXI (after loading a
        large configuration, that takes a while)."""
        self.StartMasterd()
        WaitFor(lambda: self.Run("gnt-cluster", "getmaster",
                                 check=False).returncode == 0,
                timeout, "masterd to answer")

    def LogTail(self, daemon: str, lines: int = 30) -> str:
        """The end of a daemon's log on this node (for failure messages)."""
        path = self.NodePath(pathutils.GetLogFilename(
            constants.DAEMONS_LOGBASE[daemon]))
        try:
            with open(path, encoding="utf-8", errors="replace") as fobj:
                return "".join(fobj.readlines()[-lines:])
        except OSError as err:
            return str(err)

    def Logged(self, daemon: str, text: str) -> bool:
        """Whether the daemon's running process logged ``text`` (its log
        lines name their pid)."""
        mark = "%s pid=%d " % (daemon, self.Pid(daemon))
        path = self.NodePath(pathutils.GetLogFilename(
            constants.DAEMONS_LOGBASE[daemon]))
        try:
            with open(path, encoding="utf-8", errors="replace") as fobj:
                return any(mark in line and text in line for line in fobj)
        except FileNotFoundError:
            return False

    def Join(self, *extra: str) -> None:
        """``gnt-node add --join-key`` this node (its noded running);
        a failure carries the end of the new node's noded log, its side
        of the join."""
        with open(self.NodePath(pathutils.NODED_JOIN_KEY_FILE),
                  encoding="ascii") as fobj:
            key = fobj.read().strip()
        try:
            self.cluster.Run("gnt-node", "add", "--join-key=" + key,
                             *extra, self.name)
        except AssertionError as err:
            raise AssertionError("%s\n%s's noded log ends:\n%s" %
                                 (err, self.name,
                                  self.LogTail(constants.NODED))) from err

    def StartNoded(self) -> subprocess.CompletedProcess:
        return self.Run("daemon-util", "start", "ganeti-noded")

    def KillDaemon(self, daemon: str, sig: int = signal.SIGKILL) -> None:
        """Signal a daemon and wait (up to 15 s, then SIGKILL) until it ends.
        """
        pid = self.Pid(daemon)
        if pid:
            process.KillProcess(pid, sig, timeout=15)

    def IsRunning(self, daemon: str) -> bool:
        return process.IsProcessAlive(self.Pid(daemon))

    def StopAll(self) -> None:
        """Stop every daemon of the node by PID."""
        for pid_file in PID_FILES:
            self.KillDaemon(pid_file[:-len(".pid")], signal.SIGTERM)


class VirtualCluster(VirtualNode):
    """A virtual cluster; the object itself is its first node.

    Commands run through the cluster object run as the first node (the
    initial master); ``nodes`` maps every node's name to its VirtualNode.
    ``env`` adds to every node's environment, the daemons' included: the
    test cluster's settings of the waits in utils.tunable.
    """

    def __init__(self, node_name: str = "node1.example.test",
                 cluster_name: str = "cluster.example.test",
                 env: dict[str, str] | None = None):
        self.extra_env = dict(env or {})
        self.base = tempfile.mkdtemp(prefix="gnt", dir="/tmp")
        self.cluster_name = cluster_name
        self.net = RandomLoopbackNet()
        self.cluster_ip = self.net + ".100"
        self.hosts_file = os.path.join(self.base, "hosts")
        self._hosts = [(self.cluster_ip, cluster_name)]
        # A random node daemon port, so that a program holding Ganeti's
        # (on 0.0.0.0, say) does not fail the tests; RAPI keeps its port
        self.noded_port = testutils_node.RandomPort()
        self.services_file = os.path.join(self.base, "services")
        with open(self.services_file, "w", encoding="ascii") as fobj:
            fobj.write("ganeti-noded %d/tcp\n" % self.noded_port)
        self.nodes: dict[str, VirtualNode] = {}
        VirtualNode.__init__(self, self, node_name, self.net + ".1")
        self._Register(self)

    def _Register(self, node: VirtualNode) -> None:
        self.nodes[node.node] = node
        self._hosts.append((node.node_ip, node.node))
        with open(self.hosts_file + ".tmp", "w", encoding="utf-8") as fobj:
            fobj.writelines("%s %s\n" % entry for entry in self._hosts)
        os.rename(self.hosts_file + ".tmp", self.hosts_file)

    def NewNode(self, name: str) -> VirtualNode:
        """Create a node's root and address (no daemon started yet)."""
        node = VirtualNode(self, name, "%s.%d" % (self.net,
                                                  len(self.nodes) + 1))
        self._Register(node)
        return node

    def AddNode(self, name: str, *extra: str, join: bool = True
                ) -> VirtualNode:
        """Create a node, start its noded and ``gnt-node add`` it.

        With ``join``, the node joins with the key its noded printed;
        otherwise it gets the cluster certificate copied beforehand (the
        admin's manual set-up).
        """
        node = self.NewNode(name)
        if not join:
            cert = node.NodePath(pathutils.NODED_CERT_FILE)
            os.makedirs(os.path.dirname(cert), exist_ok=True)
            shutil.copy(self.NodePath(pathutils.NODED_CERT_FILE), cert)
        node.StartNoded()
        if join:
            node.Join(*extra)
        else:
            self.Run("gnt-node", "add", *extra, name)
        return node

    def Init(self, *extra: str) -> None:
        self.Run("gnt-cluster", "init", "--master-netdev=lo",
                 "--file-storage-dir=" +
                 self.NodePath(pathutils.DEFAULT_FILE_STORAGE_DIR),
                 *extra, self.cluster_name)

    def Cleanup(self) -> None:
        """Stop every daemon of every node by PID, then whatever still
        runs from the cluster's files, and remove the files.

        Block daemons of drbd disks (and guests) outlive the node daemons
        by design, as DRBD devices outlive Ganeti's; a test that ends with
        disks active would otherwise leave them running, FUSE mounts and
        all, after its files are gone.
        """
        for node in self.nodes.values():
            node.StopAll()
        StopProcessesMentioning(self.base)
        shutil.rmtree(self.base, ignore_errors=True)


class NetnsCluster(VirtualCluster):
    """A virtual cluster whose nodes live in network namespaces.

    The nodes' ``eth0`` devices hang off one bridge on the host, with
    addresses in a random 10.x.y.0/24, so addresses (the master IP) can
    move between nodes as between machines. Needs root; the constructor
    raises ``NetnsUnavailable`` where namespaces can't be made.
    """

    def __init__(self, node_name: str = "node1.example.test",
                 cluster_name: str = "cluster.example.test"):
        self.tag = "%04x" % random.randint(0, 0xffff)
        self.bridge = "gbr" + self.tag
        self._namespaces: list[str] = []
        self._Ip("link", "add", self.bridge, "type", "bridge")
        try:
            self._Ip("link", "set", self.bridge, "up")
            VirtualCluster.__init__(self, node_name, cluster_name)
        except NetnsUnavailable:
            self._DeleteNetworks()
            if hasattr(self, "base"):
                shutil.rmtree(self.base, ignore_errors=True)
            raise

    @staticmethod
    def _Ip(*args: str) -> None:
        result = subprocess.run(("ip", ) + args, capture_output=True,
                                text=True, check=False)
        if result.returncode != 0:
            raise NetnsUnavailable("ip %s: %s" % (" ".join(args),
                                                  result.stderr.strip()))

    def _Register(self, node: VirtualNode) -> None:
        if not hasattr(self, "_subnet"):
            self._subnet = "10.%d.%d" % (random.randint(1, 254),
                                          random.randint(1, 254))
            self.net = self._subnet
            self.cluster_ip = self._subnet + ".100"
            self._hosts = [(self.cluster_ip, self.cluster_name)]
        node.node_ip = "%s.%d" % (self._subnet, len(self.nodes) + 1)
        node.netns = "gns%s-%d" % (self.tag, len(self.nodes) + 1)
        veth = "gve%s%d" % (self.tag, len(self.nodes) + 1)
        self._Ip("netns", "add", node.netns)
        self._namespaces.append(node.netns)
        self._Ip("link", "add", veth, "type", "veth", "peer", "name", "eth0",
                 "netns", node.netns)
        self._Ip("link", "set", veth, "master", self.bridge, "up")
        self._Ip("-n", node.netns, "address", "add", node.node_ip + "/24",
                 "dev", "eth0")
        self._Ip("-n", node.netns, "link", "set", "eth0", "up")
        self._Ip("-n", node.netns, "link", "set", "lo", "up")
        VirtualCluster._Register(self, node)

    def Addresses(self, node: VirtualNode) -> list[str]:
        """The IPv4 addresses on a node's eth0."""
        result = subprocess.run(["ip", "-n", node.netns, "-o", "-4",
                                 "address", "show", "dev", "eth0"],
                                capture_output=True, text=True, check=True)
        return [line.split()[3].split("/")[0]
                for line in result.stdout.splitlines()]

    def Init(self, *extra: str) -> None:
        self.Run("gnt-cluster", "init", "--master-netdev=eth0",
                 "--master-netmask=24",
                 "--file-storage-dir=" +
                 self.NodePath(pathutils.DEFAULT_FILE_STORAGE_DIR),
                 *extra, self.cluster_name)

    def Pids(self, node: VirtualNode) -> list[int]:
        """Every process in a node's network namespace."""
        result = subprocess.run(["ip", "netns", "pids", node.netns],
                                capture_output=True, text=True, check=True)
        return [int(pid) for pid in result.stdout.split()]

    def KillNode(self, node: VirtualNode, timeout: float = 15) -> None:
        """The node dies as a machine does: SIGKILL to every process in
        its namespace (noded, masterd, block daemons, the guests' stand-
        ins), repeated until none is left (a dying parent may fork)."""
        deadline = time.monotonic() + timeout
        while pids := self.Pids(node):
            if time.monotonic() > deadline:
                raise AssertionError("processes of %s survive SIGKILL: %s"
                                     % (node.name, pids))
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)

    def Cleanup(self) -> None:
        for node in self.nodes.values():
            self.KillNode(node)
        VirtualCluster.Cleanup(self)
        self._DeleteNetworks()

    def _DeleteNetworks(self) -> None:
        for netns in self._namespaces:
            subprocess.run(["ip", "netns", "delete", netns],
                           capture_output=True, check=False)
        subprocess.run(["ip", "link", "delete", self.bridge],
                       capture_output=True, check=False)


class NetnsUnavailable(Exception):
    """Network namespaces (or the bridge) cannot be created here."""


def NetnsClusterOrSkip() -> NetnsCluster:
    """A NetnsCluster, or the calling test skipped with the reason none
    can be made here (not root, no namespaces or bridges)."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    try:
        return NetnsCluster()
    except NetnsUnavailable as err:
        pytest.skip("cannot create network namespaces here: %s" % err)
