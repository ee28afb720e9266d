"""The QEMU processes of a drbd disk on one node (see storage.drbd).

Two daemons per disk and node, both ``qemu-storage-daemon``:

* the image daemon, in either role: it holds the node's image (node
  ``local``) and serves it over NBD (``ExportToPeer``, ``ServeDevice``;
  QEMU 7.2 runs one NBD server per process):

  - for the peer (the secondary, and the target of a migration): on the
    disk's port with TLS (``PeerListener``), as two exports, the disk's
    secret for the peer's mirror and ``disk`` for this node's own device
    daemon during a migration;
  - for this node alone (the primary): export ``disk`` on a Unix socket
    without TLS (pathutils.DrbdImageSocketPath), which spares every
    write of the device an encryption, a decryption and a TCP round trip
    on this node; the device daemon and KVM guests attach to it.

  The image is opened with O_DIRECT where its file system takes it
  (``DirectIo``): a write the peer's mirror sends then completes once
  on this node's disk, as DRBD's protocol C has it, without a flush
  after each (the primary does not forward flushes; where O_DIRECT is
  refused the peer's export is writethrough instead, several times
  slower). On the primary the daemon also runs the mirror to the peer
  (``remote``); the mirror's filter takes the place of ``local`` under
  the exports, so a mirror starts in place (the target of a migration
  becoming the primary) and the device daemon's connection survives it
  (an export added while the mirror runs goes on the filter);
* the device daemon, on the primary (and on the target of a migration):
  an NBD client of the image daemon's ``disk`` export (``DeviceServer``:
  the Unix socket, or the TLS port while the image daemon serves the
  peer), exported as the FUSE file ``dev_path`` (the fake hypervisor,
  the OS scripts, ``dd``) and over NBD on a Unix socket
  (pathutils.DrbdSocketPath), which KVM guests attach to where the
  image daemon serves the peer (the target of a migration). A writable
  FUSE export takes the resize permission, which the mirror job does
  not share on its filter (QEMU 7.2 has no option to drop it), and an
  NBD client in the image daemon connecting to the daemon's own server
  hangs (``blockdev-add`` waits for the handshake in the loop that would
  accept it): hence a process of its own, with one connection per export
  (an NBD export does not share the resize permission either).
"""

import errno
import logging
import os
import re
import socket
from collections.abc import Sequence
from typing import Any

from ganeti import errors, pathutils, serializer
from ganeti.storage import base
from ganeti.utils import io, process, qmp

QSD = "qemu-storage-daemon"
QEMU_IMG = "qemu-img"
# The common name of the TLS certificates of drbd daemons; clients check
# the server's certificate against it (the cluster CA signs them all)
TLS_HOSTNAME = "ganeti-drbd"
_TLS_VALIDITY_DAYS = 5 * 365
_TLS_FILES = ("ca-cert.pem", "server-cert.pem", "server-key.pem",
              "client-cert.pem", "client-key.pem", "dh-params.pem")
# The Diffie-Hellman group of the TLS servers, RFC 7919's ffdhe2048 (a
# public constant): without the file QEMU generates one at each start
# of a server, which took 0.15-0.6 s of CPU here
_DH_PARAMS_PEM = (
    "-----BEGIN DH PARAMETERS-----\n"
    "MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz\n"
    "+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a\n"
    "87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7\n"
    "YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi\n"
    "7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD\n"
    "ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==\n"
    "-----END DH PARAMETERS-----\n")
# The block daemons' malloc: their requests' buffers (up to some MiB)
# come from the heap instead of a fresh mmap each, whose page faults and
# zeroing took a fifth of their CPU time under sequential writes
_MALLOC_TUNABLES = ("glibc.malloc.mmap_threshold=%d:"
                    "glibc.malloc.trim_threshold=%d" % (4 << 20, 32 << 20))
# Node and job names in the image daemon
JOB = "resync"
LOCAL, REMOTE, MIRROR_TOP = "local", "remote", "mirror-top"
# The export the device daemon reads and writes, and the ids of the
# image daemon's exports
DEVICE_EXPORT = "disk"
PEER_EXPORT_ID, DEVICE_EXPORT_ID = "e0", "e1"
STOP_TIMEOUT = 10.0
SYNC_TIMEOUT = 3600.0
# The pid file of an image daemon in the run directory (storage.drbd)
IMAGE_PID_FILE = re.compile(r"^d(\d+)\.pid$")


def EnsureTlsDir() -> str:
    """QEMU's x509 directory for drbd daemons, made from the cluster cert.

    The cluster certificate is a CA; QEMU refuses a CA in the server and
    client roles, so this node gets a leaf certificate it signs. The
    directory is remade when the cluster certificate changed.
    """
    tls_dir = pathutils.DRBD_TLS_DIR
    try:
        cluster_pem = io.ReadFile(pathutils.NODED_CERT_FILE)
    except OSError as err:
        base.ThrowError("Cannot read the cluster certificate %s: %s",
                        pathutils.NODED_CERT_FILE, err.strerror)
    ca_pem = cluster_pem[cluster_pem.find("-----BEGIN CERTIFICATE-----"):]
    ca_file = os.path.join(tls_dir, "ca-cert.pem")
    try:
        if io.ReadFile(ca_file) == ca_pem and all(
                os.path.exists(os.path.join(tls_dir, name))
                for name in _TLS_FILES):
            return tls_dir
    except FileNotFoundError:
        pass
    # Imported here: cryptography's x509 takes ~25 ms to load, and every
    # gnt-node and gnt-cluster start would pay it through this module
    from ganeti.utils import x509
    key_pem, cert_pem = x509.GenerateSignedX509Cert(
        cluster_pem, TLS_HOSTNAME, _TLS_VALIDITY_DAYS)
    os.makedirs(tls_dir, mode=0o700, exist_ok=True)
    for name, data in (("server-cert.pem", cert_pem),
                       ("server-key.pem", key_pem),
                       ("client-cert.pem", cert_pem),
                       ("client-key.pem", key_pem), ("ca-cert.pem", ca_pem),
                       ("dh-params.pem", _DH_PARAMS_PEM)):
        io.WriteFile(os.path.join(tls_dir, name), data=data, mode=0o600)
    return tls_dir


def Run(cmd: list[str], what: str, env: dict[str, str] | None = None,
        pass_fds: Sequence[int] = ()) -> None:
    result = process.RunCmd(cmd, env=env, pass_fds=pass_fds)
    if result.failed:
        base.ThrowError("Cannot %s: %s", what, result.output.strip())


def Json(value: Any) -> str:
    return serializer.DumpJson(value)


def CheckOptionValue(value: str) -> None:
    """QEMU's key=value option lists cannot carry a comma in a value."""
    if "," in value:
        base.ThrowError("Path %s contains a comma", value)


def DirectIo(path: str) -> bool:
    """Whether ``path``'s file system takes O_DIRECT (tmpfs does not)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError as err:
        if err.errno == errno.EINVAL:
            return False
        base.ThrowError("Cannot open %s: %s", path, err.strerror)
    os.close(fd)
    return True


def ImageNode(path: str, peer: bool) -> dict:
    """The image's node; O_DIRECT for serving the peer, where possible
    (module doc)."""
    file_node: dict[str, Any] = {"driver": "file", "filename": path}
    node = {"driver": "qcow2", "node-name": LOCAL, "file": file_node}
    if peer and DirectIo(path):
        # The file node inherits it
        node["cache"] = {"direct": True}
        file_node["aio"] = "native"
    return node


def _LocalDirect(mon: qmp.QmpConnection) -> bool:
    for node in mon.Execute("query-named-block-nodes", {"flat": True}):
        if node["node-name"] == LOCAL:
            return node["cache"]["direct"]
    return False


def TlsClient(obj_id: str, tls_dir: str) -> list[str]:
    return ["--object", "tls-creds-x509,id=%s,dir=%s,endpoint=client" %
            (obj_id, tls_dir)]


def InetServer(host: str, port: int) -> dict:
    return {"type": "inet", "host": host, "port": str(port)}


def NbdClient(node_name: str, server: dict, export: str,
              tls_id: str | None) -> dict:
    """A blockdev reading and writing a drbd image daemon's export (with
    TLS over the network, without on this node's Unix socket)."""
    node = {"driver": "nbd", "node-name": node_name, "server": server,
            "export": export}
    if tls_id:
        node.update({"tls-creds": tls_id, "tls-hostname": TLS_HOSTNAME})
    return node


def ImageDaemonArgs(image: str, listener: int | None) -> list[str]:
    """The image daemon's options. A secondary's (``listener``: the fd
    of its ``PeerListener``, which the daemon inherits) serves the peer
    from the start, without exports until ``ExportToPeer``; a primary's
    serves nothing until ``ServeDevice``. QEMU takes a listening socket
    only on its command line: qemu-storage-daemon has no ``getfd``."""
    tls_dir = EnsureTlsDir()
    CheckOptionValue(tls_dir)
    args = [
        "--object", "tls-creds-x509,id=tls0,dir=%s,endpoint=server,"
        "verify-peer=on" % tls_dir,
        *TlsClient("tlsc", tls_dir),
        "--blockdev", Json(ImageNode(image, listener is not None))]
    if listener is not None:
        args += ["--nbd-server",
                 "addr.type=fd,addr.str=%d,tls-creds=tls0" % listener]
    return args


def _ExportDevice(mon: qmp.QmpConnection) -> None:
    """Export the image for this node's device; on the mirror's filter
    while a mirror runs (the primary assembled), else the device's
    writes would bypass the mirror."""
    node = MIRROR_TOP if MIRROR_TOP in NodeNames(mon) else LOCAL
    mon.Execute("block-export-add", {
        "type": "nbd", "id": DEVICE_EXPORT_ID, "node-name": node,
        "name": DEVICE_EXPORT, "writable": True})


def _StopServing(mon: qmp.QmpConnection) -> None:
    """End the NBD server, if one runs, and its exports (QEMU waits for
    them to go)."""
    try:
        mon.Execute("nbd-server-stop")
    except errors.QmpError:
        # None runs (a failure to stop shows as one to start again)
        pass


def PeerListener(host: str, port: int) -> socket.socket:
    """The socket the image daemon accepts its peer's connections on,
    with TCP_NODELAY, which the accepted connections inherit.

    QEMU 7.2's NBD server leaves Nagle's algorithm on for the connections
    it accepts (its client turns it off): with several requests in flight
    a reply then waited for the client's delayed ACK, about 40 ms each
    time. A migration target's device (its KVM guest's queue, over TLS to
    this daemon) took 355 4 KiB writes/s at queue depth 16 here, 9,000 to
    13,000 without.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as err:
        base.ThrowError("Cannot listen on %s port %d: %s", host, port, err)
    try:
        # As QEMU's own listeners: a port left in TIME_WAIT is reused
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(address)
        sock.listen(socket.SOMAXCONN)
    except OSError as err:
        sock.close()
        base.ThrowError("Cannot listen on %s port %d: %s", host, port,
                        err.strerror)
    return sock


def ExportToPeer(mon: qmp.QmpConnection, secret: str) -> None:
    """Serve the image to the peer on the disk's port with TLS (the
    export named by the disk's secret), and to this node's device daemon
    there too (module doc); the daemon listens there from its start
    (``ImageDaemonArgs``). Writethrough unless the image is written with
    O_DIRECT."""
    mon.Execute("block-export-add", {
        "type": "nbd", "id": PEER_EXPORT_ID, "node-name": LOCAL,
        "name": secret, "writable": True,
        "writethrough": not _LocalDirect(mon)})
    _ExportDevice(mon)


def ServeDevice(mon: qmp.QmpConnection, socket_path: str) -> None:
    """Serve the image to this node's device daemon alone, on a Unix
    socket without TLS (the primary)."""
    _StopServing(mon)
    io.RemoveFile(socket_path)
    mon.Execute("nbd-server-start", {
        "addr": {"type": "unix", "data": {"path": socket_path}}})
    _ExportDevice(mon)


def ServesPeer(mon: qmp.QmpConnection) -> bool:
    return any(export["id"] == PEER_EXPORT_ID
               for export in mon.Execute("query-block-exports"))


def DeviceServer(mon: qmp.QmpConnection, host: str, port: int,
                 socket_path: str) -> tuple[dict, bool]:
    """Where the device daemon finds the image daemon's ``disk`` export,
    and whether with TLS."""
    if ServesPeer(mon):
        return InetServer(host, port), True
    return {"type": "unix", "path": socket_path}, False


def DeviceDaemonArgs(server: dict, tls: bool, socket_path: str,
                     device: str) -> list[str]:
    """The device daemon's options (module doc)."""
    tls_args: list[str] = []
    if tls:
        tls_dir = EnsureTlsDir()
        CheckOptionValue(tls_dir)
        tls_args = TlsClient("tlsc", tls_dir)
    for value in (socket_path, device):
        CheckOptionValue(value)
    tls_id = "tlsc" if tls else None
    # One connection per export: a writable FUSE export takes the resize
    # permission, which an NBD export does not share
    return [
        *tls_args,
        "--blockdev", Json(NbdClient("f", server, DEVICE_EXPORT, tls_id)),
        "--blockdev", Json(NbdClient("k", server, DEVICE_EXPORT, tls_id)),
        "--nbd-server", "addr.type=unix,addr.path=%s" % socket_path,
        "--export", "type=nbd,id=k0,node-name=k,name=%s,writable=on" %
        DEVICE_EXPORT,
        "--export", "type=fuse,id=f0,node-name=f,mountpoint=%s,"
        "writable=on" % device]


def StartDaemon(pid_file: str, qmp_socket: str | None, args: list[str],
                what: str, pass_fds: Sequence[int] = ()) -> None:
    os.makedirs(pathutils.DRBD_RUN_DIR, mode=0o750, exist_ok=True)
    io.RemoveFile(pid_file)
    cmd = [QSD] + args + ["--pidfile", pid_file, "--daemonize"]
    if qmp_socket:
        io.RemoveFile(qmp_socket)
        cmd[1:1] = ["--chardev", "socket,id=mon0,path=%s,server=on,"
                    "wait=off" % qmp_socket, "--monitor", "chardev=mon0"]
    Run(cmd, "start %s for %s" % (QSD, what),
        env={"GLIBC_TUNABLES": _MALLOC_TUNABLES}, pass_fds=pass_fds)


def DaemonAlive(pid_file: str) -> bool:
    return process.IsProcessAlive(process.ReadPidFile(pid_file))


def StopDaemon(pid_file: str) -> None:
    """Stop a daemon by its pid file and wait until it is gone."""
    pid = process.ReadPidFile(pid_file)
    if process.IsProcessAlive(pid):
        process.KillProcess(pid, timeout=STOP_TIMEOUT)
    io.RemoveFile(pid_file)


def MirrorJob(mon: qmp.QmpConnection) -> dict | None:
    for job in mon.Execute("query-block-jobs"):
        if job["device"] == JOB and job["type"] == "mirror":
            return job
    return None


def Bitmaps(mon: qmp.QmpConnection) -> list[dict]:
    """The named dirty bitmaps of the local image (a running mirror adds
    an anonymous one of its own)."""
    for node in mon.Execute("query-named-block-nodes", {"flat": True}):
        if node["node-name"] == LOCAL:
            return [bitmap for bitmap in node.get("dirty-bitmaps", [])
                    if "name" in bitmap]
    return []


def RemoveBitmaps(mon: qmp.QmpConnection, keep: str | None = None) -> None:
    """Drop the local image's named bitmaps but ``keep`` (if consistent).
    """
    for bitmap in Bitmaps(mon):
        if bitmap["name"] != keep or bitmap.get("inconsistent"):
            mon.Execute("block-dirty-bitmap-remove",
                        {"node": LOCAL, "name": bitmap["name"]})


def NodeNames(mon: qmp.QmpConnection) -> set[str]:
    return {node["node-name"] for node in
            mon.Execute("query-named-block-nodes", {"flat": True})}


def QuitImageDaemon(qmp_socket: str, pid_file: str, what: str) -> None:
    """Let the image daemon exit cleanly (it stores the persistent
    bitmaps in the image) and wait until it is gone; a full sync not done
    leaves no bitmap, as the peer lacks blocks a bitmap does not name (the
    next sync is full)."""
    # Read first: the daemon removes its pid file before it closes its
    # port, which a daemon started next would fail to bind
    pid = process.ReadPidFile(pid_file)
    try:
        with qmp.QmpConnection(qmp_socket) as mon:
            job = MirrorJob(mon)
            if job is not None and not job["ready"]:
                RemoveBitmaps(mon)
            mon.Execute("quit")
    except errors.QmpError as err:
        logging.warning("Cannot quit the block daemon of %s: %s", what, err)
    if process.IsProcessAlive(pid):
        process.KillProcess(pid, timeout=STOP_TIMEOUT)
    io.RemoveFile(pid_file)



def _DaemonDisk(pid: int) -> str | None:
    """The UUID of the disk whose image an image daemon was started on
    (its ``--blockdev`` option; the image is ``<disk uuid>.qcow2``)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fobj:
            args = fobj.read().decode("utf-8", "replace").split("\0")
    except OSError:
        return None
    for option, value in zip(args, args[1:]):
        if option != "--blockdev":
            continue
        try:
            node = serializer.LoadJson(value)
            if node.get("node-name") == LOCAL:
                return os.path.basename(node["file"]["filename"]).split(
                    ".")[0]
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return None


def RunningDisks() -> list[list]:
    """``[port, disk UUID or None, primary]`` of each drbd disk side whose
    image daemon runs on this node (pid files ``d<port>.pid`` in the run
    directory); ``primary``: its device daemon runs too (the primary
    role). What cluster verify compares with the configuration, as
    Ganeti compares the DRBD minors in use."""
    try:
        names = os.listdir(pathutils.DRBD_RUN_DIR)
    except FileNotFoundError:
        return []
    result = []
    for name in names:
        match = IMAGE_PID_FILE.match(name)
        if not match:
            continue
        prefix = os.path.join(pathutils.DRBD_RUN_DIR, "d" + match.group(1))
        pid = process.ReadPidFile(prefix + ".pid")
        if not process.IsProcessAlive(pid):
            continue
        result.append([int(match.group(1)), _DaemonDisk(pid),
                       DaemonAlive(prefix + ".fuse.pid")])
    return sorted(result, key=lambda entry: entry[0])
