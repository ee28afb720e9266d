"""The process running one end of a transfer (see ganeti.impexp).

Started by ganeti.impexp.node as::

    python -m ganeti.impexp.transfer DIR READY_FD LISTEN_FD

``DIR`` is the transfer directory (its ``spec`` says what to do),
``READY_FD`` a pipe on which the process reports ``ok`` once the pid file
is locked and the source or destination is open (or ``error: message``),
``LISTEN_FD`` the listening socket of an import (-1 for an export). The
process ends by itself: when the transfer is done, when it fails or times
out, or on SIGTERM (impexp_abort). What it reads or writes is an endpoint
(ganeti.impexp.endpoints); this module holds the connection and its
frames, the import and export loops and the process around them.
"""

import hashlib
import hmac
import logging
import os
import signal
import socket
import ssl
import struct
import sys
import time
import zlib
from typing import Any

from ganeti import errors, impexp, pathutils, serializer
from ganeti.impexp import sparse
from ganeti.impexp.endpoints import Destination, Source, TransferError
from ganeti.utils import io, process

CHUNK_SIZE = sparse.CHUNK_SIZE
# A data frame holds at most one chunk after compression, which can only
# grow it by a few bytes per KiB
_MAX_DATA_FRAME = 2 * CHUNK_SIZE
_MAX_CONTROL_FRAME = 64 * 1024
_STATUS_INTERVAL = 0.5
# How long an accepted peer may take to finish the TLS handshake and send
# its header, so a stray client can't block the listener for long
_HANDSHAKE_TIMEOUT = 10.0
_CONNECT_RETRY = 0.2
_FRAME_HEADER = struct.Struct(">cI")

FRAME_HEADER = b"H"
FRAME_DATA = b"D"
FRAME_HOLE = b"Z"
FRAME_END = b"E"
FRAME_ANSWER = b"A"
_HOLE_LENGTH = struct.Struct(">Q")


class _Aborted(Exception):
    """SIGTERM: impexp_abort asked the transfer to stop."""


def _OnSigterm(_signum, _frame) -> None:
    # Only once: the cleanup that follows must not be interrupted
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise _Aborted("Aborted")


class Status:
    """The status file of this end, rewritten atomically.

    Progress updates are written at most every ``_STATUS_INTERVAL``
    seconds; state changes at once.
    """

    def __init__(self, path: str, values: dict[str, Any]):
        self._path = path
        self.values: dict[str, Any] = dict.fromkeys(impexp.STATUS_FIELDS)
        self.values.update(values)
        self._written = 0.0
        self.Write()

    def Write(self) -> None:
        io.WriteFile(self._path, data=serializer.DumpJson(self.values),
                     fsync=False)
        self._written = time.monotonic()

    def Update(self, **values: Any) -> None:
        self.values.update(values)
        self.Write()

    def Progress(self, nbytes: int) -> None:
        self.values["bytes"] = nbytes
        if time.monotonic() - self._written >= _STATUS_INTERVAL:
            self.Write()


# Sources and destinations ---------------------------------------------------


# The connection -------------------------------------------------------------

class Wire:
    """Frames over the TLS connection (see the protocol in ganeti.impexp)."""

    def __init__(self, conn: ssl.SSLSocket):
        self.conn = conn
        self._buf = bytearray(_MAX_DATA_FRAME)

    def Send(self, kind: bytes, payload: bytes | memoryview) -> None:
        self.conn.sendall(_FRAME_HEADER.pack(kind, len(payload)))
        self.conn.sendall(payload)

    def SendJson(self, kind: bytes, value: Any) -> None:
        self.Send(kind, serializer.DumpJsonBytes(value))

    def _RecvInto(self, view: memoryview) -> None:
        got = 0
        while got < len(view):
            count = self.conn.recv_into(view[got:])
            if not count:
                raise TransferError("The peer closed the connection in the"
                                    " middle of the transfer")
            got += count

    def Recv(self) -> tuple[bytes, memoryview]:
        """The next frame; its payload is valid until the next call."""
        head = memoryview(self._buf)[:_FRAME_HEADER.size]
        self._RecvInto(head)
        kind, length = _FRAME_HEADER.unpack(head)
        limit = _MAX_DATA_FRAME if kind == FRAME_DATA else _MAX_CONTROL_FRAME
        if length > limit:
            raise TransferError("Invalid frame of %d bytes from the peer" %
                                length)
        payload = memoryview(self._buf)[:length]
        self._RecvInto(payload)
        return kind, payload

    def RecvJson(self, expected: bytes) -> Any:
        kind, payload = self.Recv()
        if kind != expected:
            raise TransferError("Protocol error: expected a %r frame, got"
                                " %r" % (expected, kind))
        return LoadJson(payload)


def LoadJson(payload: memoryview) -> Any:
    """The value of a JSON frame."""
    try:
        return serializer.LoadJson(bytes(payload))
    except (ValueError, UnicodeDecodeError) as err:
        raise TransferError("Protocol error: %s" % err) from err


def _SslContext(server: bool) -> ssl.SSLContext:
    """Both ends present the cluster certificate and trust only it."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server
                         else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(pathutils.NODED_CERT_FILE)
    ctx.load_verify_locations(pathutils.NODED_CERT_FILE)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def _CheckPeer(conn: ssl.SSLSocket) -> None:
    """Accept only the cluster certificate itself (as noded does)."""
    from ganeti.utils import x509  # see storage.drbd_daemon
    expected = x509.GetCertificateDigest(
        io.ReadFile(pathutils.NODED_CERT_FILE))
    der = conn.getpeercert(binary_form=True)
    if not der or not hmac.compare_digest(hashlib.sha256(der).hexdigest(),
                                          expected):
        raise TransferError("The peer does not present the cluster"
                            " certificate")


def _Decompressor(compress: str):
    if compress == impexp.IEC_NONE:
        return None
    return zlib.decompressobj(zlib.MAX_WBITS | 16)


def _Compressor(compress: str):
    if compress == impexp.IEC_NONE:
        return None
    return zlib.compressobj(impexp.GZIP_LEVELS[compress], zlib.DEFLATED,
                            zlib.MAX_WBITS | 16)


# Import ---------------------------------------------------------------------

def _AcceptPeer(listener: socket.socket, ctx: ssl.SSLContext,
                opts: dict, status: Status) -> tuple[ssl.SSLSocket, dict]:
    """Accept connections until one is the source; returns it and its
    header. Others (wrong certificate, wrong magic) are refused."""
    deadline = time.monotonic() + opts["connect_timeout"]
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TransferError("No source connected within %s seconds" %
                                opts["connect_timeout"])
        listener.settimeout(remaining)
        try:
            sock, peer = listener.accept()
        except socket.timeout:
            continue
        sock.settimeout(_HANDSHAKE_TIMEOUT)
        conn = None
        try:
            # The TLS socket takes over the connection from sock
            conn = ctx.wrap_socket(sock, server_side=True)
            _CheckPeer(conn)
            header = Wire(conn).RecvJson(FRAME_HEADER)
            if not isinstance(header, dict) or not hmac.compare_digest(
                    str(header.get("magic")), opts["magic"]):
                raise TransferError("wrong transfer magic")
            if header.get("compress") != opts["compress"]:
                raise TransferError("compression %r instead of %r" %
                                    (header.get("compress"),
                                     opts["compress"]))
        except (OSError, TransferError) as err:
            logging.warning("Refusing connection from %s: %s",
                            peer[0], err)
            (conn or sock).close()
            status.Update(refused=status.values["refused"] + 1)
            continue
        logging.info("Source connected from %s port %d", peer[0], peer[1])
        return conn, header


def RunImport(spec: dict, status: Status, listener: socket.socket,
              dest: Destination) -> None:
    opts = spec["opts"]
    conn, header = _AcceptPeer(listener, _SslContext(True), opts, status)
    listener.close()
    total = header.get("size")
    status.Update(listening=False, connected=True, connect_time=time.time(),
                  total=total if isinstance(total, int) else None)
    with conn:
        conn.settimeout(opts["timeout"])
        wire = Wire(conn)
        dest.Start()
        decomp = _Decompressor(opts["compress"])
        digest = sparse.StreamDigest()
        written = 0

        def _Write(data):
            nonlocal written
            dest.Write(data, written)
            digest.Data(data)
            written += len(data)
            status.Progress(written)

        while True:
            kind, payload = wire.Recv()
            if kind == FRAME_END:
                trailer = LoadJson(payload)
                break
            if kind == FRAME_HOLE and len(payload) == _HOLE_LENGTH.size:
                # The source flushed the data before the hole; inflate may
                # still hold some of it (output was limited to a chunk)
                while decomp is not None and \
                        (pending := decomp.decompress(b"", CHUNK_SIZE)):
                    _Write(pending)
                (length, ) = _HOLE_LENGTH.unpack(payload)
                dest.Zero(written, length)
                digest.Hole(written, length)
                written += length
                status.Progress(written)
                continue
            if kind != FRAME_DATA:
                raise TransferError("Protocol error: unexpected %r frame" %
                                    kind)
            if decomp is None:
                _Write(payload)
                continue
            data = payload
            while data:
                _Write(decomp.decompress(data, CHUNK_SIZE))
                data = decomp.unconsumed_tail
        if decomp is not None:
            _Write(decomp.flush())
            if not decomp.eof or decomp.unused_data:
                raise TransferError("The compressed data is incomplete or"
                                    " has trailing garbage")
        checksum = digest.HexDigest()
        if not isinstance(trailer, dict) or trailer.get("size") != written \
                or trailer.get("sha256") != checksum:
            error = ("Received %d bytes with checksum %s, the source sent"
                     " %r" % (written, checksum, trailer))
            wire.SendJson(FRAME_ANSWER, {"success": False, "error": error})
            raise TransferError(error)
        dest.Finish(written)
        status.Update(bytes=written, checksum=checksum)
        wire.SendJson(FRAME_ANSWER, {"success": True, "error": None})


# Export ---------------------------------------------------------------------

def _Connect(host: str, port: int, opts: dict) -> ssl.SSLSocket:
    """Connect to the destination, retrying until the connect timeout."""
    ctx = _SslContext(False)
    deadline = time.monotonic() + opts["connect_timeout"]
    while True:
        remaining = deadline - time.monotonic()
        try:
            sock = socket.create_connection(
                (host, port), timeout=max(min(remaining, _HANDSHAKE_TIMEOUT),
                                          0.1))
        except OSError as err:
            if remaining <= 0:
                raise TransferError("Cannot connect to %s port %d: %s" %
                                    (host, port, err)) from err
            time.sleep(_CONNECT_RETRY)
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = ctx.wrap_socket(sock)
        _CheckPeer(conn)
        return conn


def RunExport(spec: dict, status: Status, source: Source) -> None:
    opts = spec["opts"]
    conn = _Connect(spec["host"], spec["port"], opts)
    with conn:
        conn.settimeout(opts["timeout"])
        status.Update(connected=True, connect_time=time.time())
        wire = Wire(conn)
        wire.SendJson(FRAME_HEADER, {"magic": opts["magic"],
                                     "compress": opts["compress"],
                                     "size": source.size})
        source.Start()
        comp = _Compressor(opts["compress"])
        digest = sparse.StreamDigest()
        buf = memoryview(bytearray(CHUNK_SIZE))
        done = 0
        while True:
            count, hole = source.Next(buf)
            if hole:
                if comp is not None:
                    # The destination must have the data before the hole
                    wire.Send(FRAME_DATA, comp.flush(zlib.Z_SYNC_FLUSH))
                wire.Send(FRAME_HOLE, _HOLE_LENGTH.pack(hole))
                digest.Hole(done, hole)
                done += hole
                status.Progress(done)
                continue
            if not count:
                break
            data = buf[:count]
            digest.Data(data)
            payload = comp.compress(data) if comp is not None else data
            if payload:
                wire.Send(FRAME_DATA, payload)
            done += count
            status.Progress(done)
        if comp is not None:
            wire.Send(FRAME_DATA, comp.flush())
        source.Finish()
        checksum = digest.HexDigest()
        status.Update(bytes=done, checksum=checksum)
        wire.SendJson(FRAME_END, {"size": done, "sha256": checksum})
        answer = wire.RecvJson(FRAME_ANSWER)
        if not isinstance(answer, dict) or answer.get("success") is not True:
            raise TransferError("The destination refused the data: %s" %
                                (answer.get("error")
                                 if isinstance(answer, dict) else answer))


# Main -----------------------------------------------------------------------

def _Report(ready_fd: int, message: str) -> None:
    try:
        os.write(ready_fd, message.encode("utf-8", "replace") + b"\n")
    except OSError:
        pass
    os.close(ready_fd)


def _Describe(err: BaseException) -> str:
    if isinstance(err, (_Aborted, TransferError)):
        return str(err)
    if isinstance(err, socket.timeout):
        return "No progress within the timeout: %s" % err
    if isinstance(err, ssl.SSLError):
        return "TLS error: %s" % (err.reason or err)
    if isinstance(err, OSError):
        return err.strerror or str(err)
    return "%s: %s" % (err.__class__.__name__, err)


def Run(tdir: str, ready_fd: int, listen_fd: int) -> int:
    """Run one end of a transfer; the exit code says whether it succeeded."""
    spec = serializer.LoadJson(io.ReadFile(os.path.join(tdir, "spec")))
    listener = socket.socket(fileno=listen_fd) if listen_fd >= 0 else None
    created_file = os.path.join(tdir, "created")
    try:
        # Kept open (and locked) for the life of the process
        process.WritePidFile(os.path.join(tdir, "pid"))
        status = Status(os.path.join(tdir, "status"), {
            "name": spec["name"], "mode": spec["mode"],
            "instance": spec["instance"], "component": spec["component"],
            "address": spec.get("host"), "port": spec.get("port"),
            "listening": listener is not None, "connected": False,
            "refused": 0, "bytes": 0, "start_time": time.time(),
            "done": False})
        if listener is not None:
            status.Update(address=listener.getsockname()[0],
                          port=listener.getsockname()[1])
        kind, args = impexp.CheckIO(spec["mode"], spec["io"])
        timeout = spec["opts"]["timeout"]
        endpoint: Source | Destination
        if spec["mode"] == impexp.IEM_IMPORT:
            endpoint = Destination(
                kind, args, timeout, lambda paths: io.WriteFile(
                    created_file, data=serializer.DumpJson(paths),
                    fsync=False))
        else:
            endpoint = Source(kind, args, timeout)
    except (TransferError, errors.GenericError, OSError) as err:
        _Report(ready_fd, "error: %s" % _Describe(err))
        return 1
    error = None
    signal.signal(signal.SIGTERM, _OnSigterm)
    try:
        _Report(ready_fd, "ok")
        if isinstance(endpoint, Destination):
            assert listener is not None, "imports listen"
            RunImport(spec, status, listener, endpoint)
        else:
            RunExport(spec, status, endpoint)
    except Exception as err:  # pylint: disable=broad-except
        error = _Describe(err)
        if not isinstance(err, (_Aborted, TransferError, OSError)):
            logging.exception("Transfer failed")
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if error is not None:
        logging.error("Transfer %s failed: %s", spec["name"], error)
        endpoint.Discard()
        io.RemoveFile(created_file)
    if listener is not None:
        listener.close()
    status.Update(done=True, success=error is None, error=error,
                  end_time=time.time(), listening=False,
                  checksum=status.values["checksum"] if error is None
                  else None)
    if error is None:
        logging.info("Transfer %s done: %d bytes, sha256 %s", spec["name"],
                     status.values["bytes"], status.values["checksum"])
    return 0 if error is None else 1


def main() -> None:
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO,
        format="%(asctime)s: impexp pid=%(process)d %(levelname)s"
        " %(message)s")
    if len(sys.argv) != 4:
        sys.stderr.write("Usage: %s DIR READY_FD LISTEN_FD\n" % sys.argv[0])
        sys.exit(2)
    sys.exit(Run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))


if __name__ == "__main__":
    main()
