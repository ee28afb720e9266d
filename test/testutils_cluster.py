"""A real one-node virtual cluster for integration tests.

The node gets its own root directory (``<tmp>/<node name>``), a random
127.x.y.z address and a hosts file; ``gnt-cluster init`` starts real noded
and masterd processes, which are stopped by PID when the test ends.
"""

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from ganeti import pathutils

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(TOP, "scripts")
DAEMONS = os.path.join(TOP, "daemons")
PID_FILES = ("ganeti-masterd.pid", "ganeti-noded.pid", "ganeti-rapi.pid")


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


def RandomLoopbackNet() -> str:
    """A random 127.x.y prefix, unlikely to clash with other test runs."""
    return "127.%d.%d" % (random.randint(1, 254), random.randint(1, 254))


class VirtualCluster:
    """One node of a virtual cluster, driven through the real commands."""

    def __init__(self, node_name: str = "node1.example.test",
                 cluster_name: str = "cluster.example.test"):
        self.base = tempfile.mkdtemp(prefix="gnt", dir="/tmp")
        self.node = node_name
        self.cluster_name = cluster_name
        net = RandomLoopbackNet()
        self.node_ip = net + ".1"
        self.cluster_ip = net + ".100"
        self.root = os.path.join(self.base, node_name)
        os.makedirs(self.root)
        self.hosts_file = os.path.join(self.base, "hosts")
        with open(self.hosts_file, "w", encoding="utf-8") as fobj:
            fobj.write("%s %s\n%s %s\n" % (self.node_ip, node_name,
                                           self.cluster_ip, cluster_name))
        self.env = dict(os.environ)
        self.env.update({
            "GANETI_ROOTDIR": self.root,
            "GANETI_HOSTNAME": node_name,
            "GANETI_HOSTS_FILE": self.hosts_file,
            "PATH": os.pathsep.join([SCRIPTS, DAEMONS,
                                     os.path.dirname(sys.executable),
                                     os.environ.get("PATH", "")]),
        })
        self.env.pop("FORCE_LUXI_SOCKET", None)

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

    def Run(self, *args: str, check: bool = True,
            timeout: float = 60) -> subprocess.CompletedProcess:
        """Run a command (gnt-*, daemon-util, ...) as this node."""
        result = subprocess.run(list(args), env=self.env, cwd=self.base,
                                capture_output=True, text=True,
                                timeout=timeout, check=False)
        if check and result.returncode != 0:
            raise AssertionError("%s failed (%d):\nstdout: %s\nstderr: %s" %
                                 (" ".join(args), result.returncode,
                                  result.stdout, result.stderr))
        return result

    def Init(self, *extra: str) -> None:
        self.Run("gnt-cluster", "init", "--master-netdev=lo",
                 "--file-storage-dir=" +
                 self.NodePath(pathutils.DEFAULT_FILE_STORAGE_DIR),
                 *extra, self.cluster_name)

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

    def StartMasterd(self) -> subprocess.CompletedProcess:
        return self.Run("daemon-util", "start", "ganeti-masterd")

    def KillDaemon(self, daemon: str, sig: int = signal.SIGKILL) -> None:
        pid = self.Pid(daemon)
        if not pid:
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.02)
        os.kill(pid, signal.SIGKILL)

    def Cleanup(self) -> None:
        """Stop every daemon of the node by PID and remove its files."""
        for pid_file in PID_FILES:
            daemon = pid_file[:-len(".pid")]
            self.KillDaemon(daemon, signal.SIGTERM)
        shutil.rmtree(self.base, ignore_errors=True)
