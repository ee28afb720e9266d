"""The QEMU processes of a drbd disk on one node (see storage.drbd).

Two daemons per disk and node, both ``qemu-storage-daemon``:

* the image daemon, in either role: it holds the node's image (node
  ``local``) and serves it over NBD with TLS on the disk's port, as two
  exports: the disk's secret for the peer's mirror (writethrough: the
  primary does not forward flushes) and ``disk`` for this node's own
  device daemon. On the primary it also runs the mirror to the peer
  (``remote``); the mirror's filter takes the place of ``local`` under
  both exports, so a role changes in place (mirror started or ended)
  and the device daemon's connection survives it;
* the device daemon, on the primary (and on the target of a migration):
  an NBD client of the image daemon's ``disk`` export, exported as the
  FUSE file ``dev_path`` (the fake hypervisor, the OS scripts, ``dd``)
  and over NBD on a Unix socket (pathutils.DrbdSocketPath), which KVM
  guests attach to. (A writable FUSE export needs the resize
  permission, which neither a mirror source nor an NBD export shares,
  hence a process of its own, with one connection per export.)
"""

import logging
import os
from typing import Any

from ganeti import errors, pathutils, serializer
from ganeti.storage import base
from ganeti.utils import io, process, qmp, x509

QSD = "qemu-storage-daemon"
QEMU_IMG = "qemu-img"
# The common name of the TLS certificates of drbd daemons; clients check
# the server's certificate against it (the cluster CA signs them all)
TLS_HOSTNAME = "ganeti-drbd"
_TLS_VALIDITY_DAYS = 5 * 365
_TLS_FILES = ("ca-cert.pem", "server-cert.pem", "server-key.pem",
              "client-cert.pem", "client-key.pem")
# Node and job names in the image daemon
JOB = "resync"
LOCAL, REMOTE, MIRROR_TOP = "local", "remote", "mirror-top"
# The export the device daemon reads and writes
DEVICE_EXPORT = "disk"
STOP_TIMEOUT = 10.0
SYNC_TIMEOUT = 3600.0


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
    key_pem, cert_pem = x509.GenerateSignedX509Cert(
        cluster_pem, TLS_HOSTNAME, _TLS_VALIDITY_DAYS)
    os.makedirs(tls_dir, mode=0o700, exist_ok=True)
    for name, data in (("server-cert.pem", cert_pem),
                       ("server-key.pem", key_pem),
                       ("client-cert.pem", cert_pem),
                       ("client-key.pem", key_pem), ("ca-cert.pem", ca_pem)):
        io.WriteFile(os.path.join(tls_dir, name), data=data, mode=0o600)
    return tls_dir


def Run(cmd: list[str], what: str) -> None:
    result = process.RunCmd(cmd)
    if result.failed:
        base.ThrowError("Cannot %s: %s", what, result.output.strip())


def Json(value: Any) -> str:
    return serializer.DumpJson(value)


def CheckOptionValue(value: str) -> None:
    """QEMU's key=value option lists cannot carry a comma in a value."""
    if "," in value:
        base.ThrowError("Path %s contains a comma", value)


def ImageNode(path: str) -> dict:
    return {"driver": "qcow2", "node-name": LOCAL,
            "file": {"driver": "file", "filename": path}}


def TlsClient(obj_id: str, tls_dir: str) -> list[str]:
    return ["--object", "tls-creds-x509,id=%s,dir=%s,endpoint=client" %
            (obj_id, tls_dir)]


def NbdClient(node_name: str, host: str, port: int, export: str,
              tls_id: str) -> dict:
    """A blockdev reading and writing a drbd image daemon's export."""
    return {"driver": "nbd", "node-name": node_name,
            "server": {"type": "inet", "host": host, "port": str(port)},
            "export": export, "tls-creds": tls_id,
            "tls-hostname": TLS_HOSTNAME}


def ImageDaemonArgs(image: str, host: str, port: int,
                    secret: str) -> list[str]:
    """The image daemon's options (module doc); the peer's export is
    named by the disk's secret."""
    tls_dir = EnsureTlsDir()
    CheckOptionValue(tls_dir)
    return [
        "--object", "tls-creds-x509,id=tls0,dir=%s,endpoint=server,"
        "verify-peer=on" % tls_dir,
        *TlsClient("tlsc", tls_dir),
        "--blockdev", Json(ImageNode(image)),
        "--nbd-server", "addr.type=inet,addr.host=%s,addr.port=%d,"
        "tls-creds=tls0" % (host, port),
        "--export", "type=nbd,id=e0,node-name=%s,name=%s,writable=on,"
        "writethrough=on" % (LOCAL, secret),
        "--export", "type=nbd,id=e1,node-name=%s,name=%s,writable=on" %
        (LOCAL, DEVICE_EXPORT)]


def DeviceDaemonArgs(host: str, port: int, socket_path: str,
                     device: str) -> list[str]:
    """The device daemon's options (module doc)."""
    tls_dir = EnsureTlsDir()
    for value in (tls_dir, socket_path, device):
        CheckOptionValue(value)
    # One connection per export: a writable FUSE export takes the resize
    # permission, which an NBD export does not share
    return [
        *TlsClient("tlsc", tls_dir),
        "--blockdev", Json(NbdClient("f", host, port, DEVICE_EXPORT,
                                     "tlsc")),
        "--blockdev", Json(NbdClient("k", host, port, DEVICE_EXPORT,
                                     "tlsc")),
        "--nbd-server", "addr.type=unix,addr.path=%s" % socket_path,
        "--export", "type=nbd,id=k0,node-name=k,name=%s,writable=on" %
        DEVICE_EXPORT,
        "--export", "type=fuse,id=f0,node-name=f,mountpoint=%s,"
        "writable=on" % device]


def StartDaemon(pid_file: str, qmp_socket: str | None, args: list[str],
                what: str) -> None:
    os.makedirs(pathutils.DRBD_RUN_DIR, mode=0o750, exist_ok=True)
    io.RemoveFile(pid_file)
    cmd = [QSD] + args + ["--pidfile", pid_file, "--daemonize"]
    if qmp_socket:
        io.RemoveFile(qmp_socket)
        cmd[1:1] = ["--chardev", "socket,id=mon0,path=%s,server=on,"
                    "wait=off" % qmp_socket, "--monitor", "chardev=mon0"]
    Run(cmd, "start %s for %s" % (QSD, what))


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


def QuitImageDaemon(qmp_socket: str, what: str) -> None:
    """Let the image daemon exit cleanly (it stores the persistent
    bitmaps in the image); a full sync not done leaves no bitmap, as the
    peer lacks blocks a bitmap does not name (the next sync is full)."""
    try:
        with qmp.QmpConnection(qmp_socket) as mon:
            job = MirrorJob(mon)
            if job is not None and not job["ready"]:
                RemoveBitmaps(mon)
            mon.Execute("quit")
    except errors.QmpError as err:
        logging.warning("Cannot quit the block daemon of %s: %s", what, err)

