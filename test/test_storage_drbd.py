"""The drbd template's storage layer: a mirrored pair of real QEMU daemons.

Two nodes share this process: each has its own data, run and file storage
directories below a temporary directory (pathutils switched per call),
and its own address (127.0.0.1, 127.0.0.2). Data goes through the
primary's FUSE device and is compared with the secondary's image.
"""

import contextlib
import ctypes
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid as uuidlib

import pytest

from ganeti import constants, errors, objects, pathutils
from ganeti.backend import disks
from ganeti.storage import drbd
from ganeti.utils import process, x509

from testutils_node import DRBD_TOOLS

pytestmark = [pytest.mark.integration, *DRBD_TOOLS]

MIB = 1024 * 1024
SIZE = 32
ADDRESSES = ("127.0.0.1", "127.0.0.2")


class Pair:
    """Two nodes' directories and the drbd disk they hold."""

    def __init__(self, tmp_path, monkeypatch, port):
        self.tmp = str(tmp_path)
        self.monkeypatch = monkeypatch
        key_pem, cert_pem = x509.GenerateSelfSignedX509Cert("cluster", 10)
        self.nodes = {}
        for name in ("pnode", "snode"):
            root = os.path.join(self.tmp, name)
            dirs = {key: os.path.join(root, key)
                    for key in ("data", "run", "conf", "files")}
            for path in dirs.values():
                os.makedirs(path)
            with open(os.path.join(dirs["data"], "server.pem"), "w",
                      encoding="ascii") as fobj:
                fobj.write(key_pem + cert_pem)
            with open(os.path.join(dirs["data"], "ssconf_file_storage_dir"),
                      "w", encoding="utf-8") as fobj:
                fobj.write(dirs["files"] + "\n")
            with open(os.path.join(dirs["conf"], "file-storage-paths"), "w",
                      encoding="utf-8") as fobj:
                fobj.write(dirs["files"] + "\n")
            self.nodes[name] = dirs
        self.disk = objects.Disk(
            dev_type=constants.DT_DRBD8, size=SIZE, uuid=str(uuidlib.uuid4()),
            logical_id=["pnode-uuid", "snode-uuid", port, 0, 0,
                        "0123456789abcdef"],
            params={"resync-rate": 1024 * 1024})

    @contextlib.contextmanager
    def On(self, name):
        """pathutils pointed at one node's directories."""
        dirs = self.nodes[name]
        with self.monkeypatch.context() as patch:
            for attr, value in (
                    ("DATA_DIR", dirs["data"]),
                    ("NODED_CERT_FILE",
                     os.path.join(dirs["data"], "server.pem")),
                    ("DRBD_TLS_DIR", os.path.join(dirs["data"], "drbd-tls")),
                    ("DRBD_RUN_DIR", os.path.join(dirs["run"], "drbd")),
                    ("FILE_STORAGE_PATHS_FILE",
                     os.path.join(dirs["conf"], "file-storage-paths"))):
                patch.setattr(pathutils, attr, value)
            yield

    @staticmethod
    def Addresses(name):
        """Each node serves its image on its own address (the port is
        the disk's on both)."""
        local, remote = (ADDRESSES if name == "pnode"
                         else reversed(ADDRESSES))
        return {constants.DDP_LOCAL_IP: local,
                constants.DDP_REMOTE_IP: remote}

    def DiskDict(self, name):
        disk = self.disk.Copy()
        disk.dynamic_params = self.Addresses(name)
        return disk.ToDict()

    def Dev(self, name):
        disk = self.disk.Copy()
        disk.dynamic_params = self.Addresses(name)
        with self.On(name):
            return drbd.DRBD8Dev(disk.logical_id, [], disk.size, disk.params,
                                 disk.dynamic_params, uuid=disk.uuid)

    def Call(self, name, method, *args):
        dev = self.Dev(name)
        with self.On(name):
            return getattr(dev, method)(*args)

    def Create(self):
        for name in ("snode", "pnode"):
            disk = self.disk.Copy()
            with self.On(name):
                drbd.DRBD8Dev.Create(disk.logical_id, [], disk.size, None,
                                     disk.params, False, {}, uuid=disk.uuid)

    def Status(self):
        return self.Call("pnode", "GetSyncStatus")

    def WaitInSync(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.Status()
            if not status[2]:
                return
            time.sleep(0.1)
        raise AssertionError("not in sync: %r" % (self.Status(),))

    def Image(self, name):
        return self.Dev(name).image

    def Files(self):
        found = []
        for dirs in self.nodes.values():
            for key in ("run", "files"):
                for dirpath, _, filenames in os.walk(dirs[key]):
                    found.extend(os.path.join(dirpath, f) for f in filenames)
        return sorted(found)


def _Write(path, offset_mib, count_mib, seed):
    data = hashlib.sha256(seed.encode()).digest() * (MIB // 32)
    with open(path, "r+b") as fobj:
        for i in range(count_mib):
            fobj.seek((offset_mib + i) * MIB)
            fobj.write(data)
        fobj.flush()
        os.fsync(fobj.fileno())


def _Contents(image):
    """The guest-visible data of an image, as qemu-img reads it."""
    out = image + ".raw"
    subprocess.run([drbd.QEMU_IMG, "convert", "-U", "-O", "raw", image, out],
                   check=True)
    with open(out, "rb") as fobj:
        digest = hashlib.sha256(fobj.read()).hexdigest()
    os.unlink(out)
    return digest


@pytest.fixture
def pair(tmp_path, monkeypatch, unused_port_range):
    pair = Pair(tmp_path, monkeypatch, unused_port_range)
    yield pair
    for name in ("pnode", "snode"):
        pair.Call(name, "Shutdown")


@pytest.fixture
def unused_port_range():
    for port in range(constants.FIRST_DRBD_PORT + 3000 + os.getpid() % 900,
                      constants.LAST_DRBD_PORT):
        with socket.socket() as one, socket.socket() as two:
            try:
                one.bind((ADDRESSES[0], port))
                two.bind((ADDRESSES[1], port))
            except OSError:
                continue
            return port
    pytest.skip("no free port in the DRBD range")


def test_mirror_incremental_resync_and_cleanup(pair):
    pair.Create()
    pair.Call("snode", "AssembleSecondary")
    pair.Call("pnode", "Assemble")
    assert pair.Call("pnode", "Attach")
    device = pair.Dev("pnode").device
    assert os.path.getsize(device) == SIZE * MIB
    pair.WaitInSync()
    _Write(device, 2, 8, "first")
    assert pair.Status()[2] is False
    assert _Contents(pair.Image("pnode")) == _Contents(pair.Image("snode"))

    # The secondary dies: writes go on, the disk is degraded
    pair.Call("snode", "Shutdown")
    synced = pair.Call("pnode", "GetSyncedBytes")
    _Write(device, 20, 3, "degraded")
    percent, _, degraded, ldisk = pair.Status()
    assert degraded and percent is not None and ldisk == constants.LDS_OKAY
    assert _Contents(pair.Image("pnode")) != _Contents(pair.Image("snode"))

    # It comes back: only the 3 MiB written meanwhile are copied
    pair.Call("snode", "AssembleSecondary")
    _Write(device, 30, 1, "wake")
    pair.WaitInSync()
    copied = pair.Call("pnode", "GetSyncedBytes") - synced
    assert 3 * MIB <= copied <= 5 * MIB, copied
    pair.Call("pnode", "Shutdown")
    assert _Contents(pair.Image("pnode")) == _Contents(pair.Image("snode"))

    # Removal on both nodes leaves nothing behind
    for name in ("pnode", "snode"):
        pair.Call(name, "Remove")
    assert [f for f in pair.Files() if "drbd" in f] == []


def test_restart_primary_copies_only_new_writes(pair):
    pair.Create()
    pair.Call("snode", "AssembleSecondary")
    pair.Call("pnode", "Assemble")
    pair.WaitInSync()
    device = pair.Dev("pnode").device
    _Write(device, 0, 4, "one")
    pair.Call("pnode", "Shutdown")
    pair.Call("snode", "Shutdown")
    # The primary runs alone, then restarts with its peer back
    pair.Call("pnode", "Assemble")
    assert pair.Status()[2] is True
    _Write(device, 10, 2, "alone")
    pair.Call("pnode", "Shutdown")
    # Through noded's functions: the secondary role, then the status tuple
    with pair.On("snode"):
        assert disks.blockdev_assemble(pair.DiskDict("snode"),
                                         {"name": "inst1"},
                                         False, 0) is None
    pair.Call("pnode", "Assemble")
    pair.WaitInSync()
    assert pair.Call("pnode", "GetSyncedBytes") == 0
    with pair.On("pnode"):
        assert disks.blockdev_getmirrorstatus([pair.DiskDict("pnode")]) == [
            [device, None, None, None, None, False, constants.LDS_OKAY]]
    pair.Call("pnode", "Shutdown")
    assert _Contents(pair.Image("pnode")) == _Contents(pair.Image("snode"))


def _Cmdline(pid_file):
    with open("/proc/%d/cmdline" % process.ReadPidFile(pid_file),
              "rb") as fobj:
        return fobj.read().decode().replace("\0", " ")


def _OpenDirect(pid_file, path):
    """Whether the daemon of ``pid_file`` has ``path`` open with
    O_DIRECT."""
    pid = process.ReadPidFile(pid_file)
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target == path:
            with open("/proc/%d/fdinfo/%s" % (pid, fd),
                      encoding="ascii") as fobj:
                flags = next(line for line in fobj
                             if line.startswith("flags:")).split()[1]
            return bool(int(flags, 8) & os.O_DIRECT)
    raise AssertionError("%s is not open" % path)


# The same number on every Linux architecture
_SYS_PIDFD_GETFD = 438


def _TcpNoDelay(pid_file):
    """TCP_NODELAY of each TCP socket (listening or connected) the daemon
    of ``pid_file`` holds, read on copies of its descriptors."""
    pid = process.ReadPidFile(pid_file)
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    result = []
    try:
        for name in os.listdir("/proc/%d/fd" % pid):
            try:
                if not os.readlink("/proc/%d/fd/%s" % (pid, name)) \
                        .startswith("socket:"):
                    continue
            except OSError:
                continue
            fd = libc.syscall(_SYS_PIDFD_GETFD, pidfd, int(name), 0)
            if fd < 0:
                raise OSError(ctypes.get_errno(), "pidfd_getfd failed")
            with socket.socket(fileno=fd) as sock:
                if sock.family in (socket.AF_INET, socket.AF_INET6) and \
                        sock.type == socket.SOCK_STREAM:
                    result.append(bool(sock.getsockopt(
                        socket.IPPROTO_TCP, socket.TCP_NODELAY)))
    finally:
        os.close(pidfd)
    return result


def _Listens(host, port):
    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False


def test_device_on_unix_socket_and_roles_in_place(pair):
    """The primary's device daemon reaches its image daemon on a Unix
    socket without TLS (nothing listens on the primary's port), the
    secondary writes its image with O_DIRECT; a migration's role changes
    (Open and ConnectInSync in place, Close starting the source's daemon
    as a secondary's) serve the right way and lose no write; the
    secondary's connections go without Nagle's algorithm."""
    pair.Create()
    pair.Call("snode", "AssembleSecondary")
    pair.Call("pnode", "Assemble")
    pair.WaitInSync()
    pdev, sdev = pair.Dev("pnode"), pair.Dev("snode")
    assert not _Listens(ADDRESSES[0], pdev.port)
    assert _Listens(ADDRESSES[1], pdev.port)
    device_args = _Cmdline(pdev.fuse_pid_file)
    assert pdev.image_socket in device_args and "tls" not in device_args
    assert _OpenDirect(sdev.pid_file, sdev.image)
    assert not _OpenDirect(pdev.pid_file, pdev.image)
    # The secondary's port and the mirror's connection to it without
    # Nagle's algorithm (QEMU leaves it on for what it accepts)
    nodelay = _TcpNoDelay(sdev.pid_file)
    assert len(nodelay) >= 2 and all(nodelay), nodelay
    _Write(pdev.device, 0, 4, "before")
    # The target opens its device over the port it serves the source on
    pair.Call("snode", "Open")
    assert "tls-creds" in _Cmdline(sdev.fuse_pid_file)
    pair.Call("pnode", "Close")
    assert _Listens(ADDRESSES[0], pdev.port)
    pair.Call("snode", "ConnectInSync")
    assert _OpenDirect(pdev.pid_file, pdev.image)
    nodelay = _TcpNoDelay(pdev.pid_file)
    assert len(nodelay) >= 2 and all(nodelay), nodelay
    _Write(sdev.device, 8, 4, "after")
    assert pair.Call("snode", "GetSyncStatus")[2] is False
    for name in ("snode", "pnode"):
        pair.Call(name, "Shutdown")
    assert _Contents(pair.Image("pnode")) == _Contents(pair.Image("snode"))


def test_secondary_port_in_use(pair):
    """A port another process holds is reported as such, and no daemon is
    left behind."""
    pair.Create()
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind((ADDRESSES[1], pair.disk.logical_id[2]))
        other.listen()
        with pytest.raises(errors.BlockDeviceError,
                           match="Cannot listen on %s port %d: Address"
                           " already in use" % (ADDRESSES[1],
                                                pair.disk.logical_id[2])):
            pair.Call("snode", "AssembleSecondary")
    assert pair.Call("snode", "Find") is None


@pytest.mark.skipif(shutil.which("qemu-io") is None,
                    reason="qemu-io not installed")
def test_interrupted_full_sync_starts_over(pair):
    """A full sync stopped half way keeps no bitmap that would make the
    next sync copy only the writes: the peer may lack the rest (QEMU
    happens to finish the copy while quitting; nothing promises it)."""
    pair.disk.params = {"resync-rate": 2 * 1024}
    pair.Create()
    subprocess.run(["qemu-io", "-c", "write -P 0x5a 0 %dM" % SIZE,
                    pair.Image("pnode")], check=True, capture_output=True)
    pair.Call("snode", "AssembleSecondary")
    pair.Call("pnode", "Assemble")
    percent, _, degraded, _ = pair.Status()
    assert degraded and percent is not None and percent < 100
    pair.Call("pnode", "Shutdown")
    pair.disk.params = {"resync-rate": 1024 * 1024}
    pair.Call("pnode", "Assemble")
    pair.WaitInSync()
    assert pair.Call("pnode", "GetSyncedBytes") == SIZE * MIB
    pair.Call("pnode", "Shutdown")
    assert _Contents(pair.Image("pnode")) == _Contents(pair.Image("snode"))


def test_secondary_killed_mid_write_resyncs_dirty_part(pair):
    """SIGKILL to the secondary's server while a writer writes: no write
    fails, the image it leaves passes qemu-img check, and once it serves
    again only the region written meanwhile is copied."""
    pair.Create()
    pair.Call("snode", "AssembleSecondary")
    pair.Call("pnode", "Assemble")
    pair.WaitInSync()
    device = pair.Dev("pnode").device
    _Write(device, 0, SIZE, "before")
    passes = [0]
    stop = threading.Event()

    def Writer():
        # A 4 MiB region, 1 MiB per synced write, over and over
        while not stop.is_set():
            _Write(device, 4 + passes[0] % 4, 1, "pass %d" % passes[0])
            passes[0] += 1

    writer = threading.Thread(target=Writer, daemon=True)
    writer.start()
    try:
        _WaitFor(lambda: passes[0] >= 4 or not writer.is_alive())
        os.kill(process.ReadPidFile(pair.Dev("snode").pid_file),
                signal.SIGKILL)
        _WaitFor(lambda: pair.Status()[2] or not writer.is_alive())
        killed_at = passes[0]
        _WaitFor(lambda: passes[0] >= killed_at + 8 or
                 not writer.is_alive())
    finally:
        stop.set()
        writer.join()
    assert passes[0] >= killed_at + 8, "the writer failed"
    image = pair.Image("snode")
    subprocess.run([drbd.QEMU_IMG, "check", image], check=True,
                   capture_output=True)
    synced = pair.Call("pnode", "GetSyncedBytes")
    pair.Call("snode", "AssembleSecondary")
    pair.WaitInSync()
    copied = pair.Call("pnode", "GetSyncedBytes") - synced
    assert 0 < copied <= 4 * MIB, copied
    pair.Call("pnode", "Shutdown")
    assert _Contents(pair.Image("pnode")) == _Contents(image)


def _WaitFor(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _CpuSeconds(pid):
    """User plus system CPU time of a process (all its threads)."""
    with open("/proc/%d/stat" % pid, encoding="ascii") as fobj:
        fields = fobj.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_degraded_primary_is_idle_and_reconnects(pair):
    """With blocks its peer lacks, a degraded primary's mirror waits for
    the peer instead of copying them again and again (that took most of
    a core), and still resyncs them soon after the peer is back."""
    pair.disk.params = {"resync-rate": 60 * 1024}
    pair.Create()
    pair.Call("snode", "AssembleSecondary")
    pair.Call("pnode", "Assemble")
    pair.WaitInSync()
    dev = pair.Dev("pnode")
    pair.Call("snode", "Shutdown")
    _Write(dev.device, 4, 4, "degraded")
    assert pair.Status()[2]
    pid = process.ReadPidFile(dev.pid_file)
    time.sleep(1)
    start = _CpuSeconds(pid)
    time.sleep(4)
    assert _CpuSeconds(pid) - start < 0.2
    pair.Call("snode", "AssembleSecondary")
    pair.WaitInSync(timeout=20)
    watcher = process.ReadPidFile(dev.watch_pid_file)
    assert process.IsProcessAlive(watcher)
    pair.Call("pnode", "Shutdown")
    assert not process.IsProcessAlive(watcher)
    assert _Contents(pair.Image("pnode")) == _Contents(pair.Image("snode"))
