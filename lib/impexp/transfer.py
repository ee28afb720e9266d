"""The process running one end of a transfer (see ganeti.impexp).

Started by ganeti.impexp.node as::

    python -m ganeti.impexp.transfer DIR READY_FD LISTEN_FD

``DIR`` is the transfer directory (its ``spec`` says what to do),
``READY_FD`` a pipe on which the process reports ``ok`` once the pid file
is locked and the source or destination is open (or ``error: message``),
``LISTEN_FD`` the listening socket of an import (-1 for an export). The
process ends by itself: when the transfer is done, when it fails or times
out, or on SIGTERM (impexp_abort).
"""

import errno
import hashlib
import hmac
import logging
import os
import shutil
import signal
import socket
import ssl
import stat
import struct
import subprocess
import sys
import time
import zlib
from typing import IO, Any, Callable

from ganeti import (errors, impexp, objects, pathutils, serializer,
                    storage, vcluster)
from ganeti.impexp import sparse
from ganeti.storage import base as storage_base
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
# Zero blocks of this size (at multiples of it) are left as holes
_SPARSE_BLOCK = 64 * 1024
_ZERO_BLOCK = bytes(_SPARSE_BLOCK)
_ZERO_CHUNK = memoryview(bytes(CHUNK_SIZE))

FRAME_HEADER = b"H"
FRAME_DATA = b"D"
FRAME_HOLE = b"Z"
FRAME_END = b"E"
FRAME_ANSWER = b"A"
_HOLE_LENGTH = struct.Struct(">Q")


class TransferError(Exception):
    """A failure of the transfer; the message goes to the status."""


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

def _BackupPath(vpath: str) -> str:
    """The local path of an IEIO_FILE argument, which must lie below the
    backup directory, also after resolving symbolic links."""
    path = os.path.normpath(vcluster.LocalizeVirtualPath(vpath))
    if not io.IsBelowDir(os.path.realpath(pathutils.EXPORT_DIR),
                         os.path.realpath(path)):
        raise TransferError("Refusing file %s: not below the backup"
                            " directory %s" %
                            (vpath, vcluster.MakeVirtualPath(
                                pathutils.EXPORT_DIR)))
    return path


def _DiskPath(disk_dict: dict) -> str:
    """The device of a disk on this node (it assembles the disk)."""
    try:
        disk = objects.Disk.FromDict(dict(disk_dict))
        path = storage.Assemble(disk).dev_path
        assert path is not None, "an assembled disk has a path"
        return path
    except errors.GenericError as err:
        raise TransferError("Cannot open disk %s: %s" %
                            (disk_dict.get("iv_name") or
                             disk_dict.get("uuid"), err)) from err


def _StartCommand(args: dict, **kwargs: Any) -> subprocess.Popen:
    env = args.get("env")
    try:
        return subprocess.Popen(args["argv"], env=env, cwd="/",
                                close_fds=True, start_new_session=True,
                                **kwargs)
    except OSError as err:
        raise TransferError("Can't execute %s: %s" %
                            (args["argv"][0], err.strerror)) from err


def _CheckExecutable(args: dict) -> None:
    """Fail early (before the RPC answers) for a command that can't run."""
    program = args["argv"][0]
    path = program if "/" in program else shutil.which(
        program, path=(args.get("env") or os.environ).get("PATH"))
    if not path or not os.access(path, os.X_OK):
        raise TransferError("Command %s not found or not executable" %
                            program)


def _WaitCommand(proc: subprocess.Popen, argv: list[str],
                 timeout: float) -> None:
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _KillCommand(proc)
        raise TransferError("Command %s did not finish within %s seconds" %
                            (argv[0], timeout)) from None
    if code < 0:
        raise TransferError("Command %s was terminated by signal %d" %
                            (argv[0], -code))
    if code:
        raise TransferError("Command %s exited with exit code %d" %
                            (argv[0], code))


def _KillCommand(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class Source:
    """What an export reads: a file, a disk or a command's output.

    It is checked at once but opened by Start, once the destination is
    connected: opening a FIFO waits for its writer. The holes of a
    regular file are reported rather than read (see Next).
    """

    def __init__(self, kind: str, args: Any, timeout: float):
        self.kind = kind
        self._args = args
        self._timeout = timeout
        self._proc: subprocess.Popen | None = None
        self._fobj: IO[bytes] | None = None
        self._sparse: sparse.SparseReader | None = None
        self._path: str | None = None
        self.size: int | None = None
        if kind == impexp.IEIO_COMMAND:
            _CheckExecutable(args)
            return
        self._path = _BackupPath(args) if kind == impexp.IEIO_FILE \
            else _DiskPath(args)
        try:
            st = os.stat(self._path)
        except OSError as err:
            raise TransferError("Cannot open %s: %s" %
                                (args if kind == impexp.IEIO_FILE
                                 else self._path, err.strerror)) from err
        if stat.S_ISREG(st.st_mode):
            self.size = st.st_size
        elif stat.S_ISBLK(st.st_mode):
            self.size = storage_base.GetPathSize(self._path)

    def Start(self) -> None:
        """Open the source, once the destination is there to take it."""
        if self.kind == impexp.IEIO_COMMAND:
            self._proc = _StartCommand(self._args, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE)
            self._fobj = self._proc.stdout
            return
        assert self._path is not None, "set for files and disks"
        try:
            fobj = self._fobj = open(self._path, "rb", buffering=0)
        except OSError as err:
            raise TransferError("Cannot open %s: %s" %
                                (self._path, err.strerror)) from err
        if stat.S_ISREG(os.fstat(fobj.fileno()).st_mode):
            self._sparse = sparse.SparseReader(fobj.fileno())

    @property
    def _open_fobj(self) -> IO[bytes]:
        if self._fobj is None:
            raise TransferError("The source is not open")
        return self._fobj

    def Next(self, buf: memoryview) -> tuple[int, int]:
        """``(count, 0)``: ``count`` bytes read into ``buf``; ``(0,
        length)``: a hole of ``length`` bytes (a regular file's only);
        ``(0, 0)``: the end of the data."""
        if self._sparse is not None:
            return self._sparse.Next(buf)
        return self._ReadInto(buf), 0

    def _ReadInto(self, buf: memoryview) -> int:
        """Fill ``buf`` as far as possible; 0 at the end of the data."""
        total = 0
        while total < len(buf):
            # A FileIO or a pipe's BufferedReader; typing.IO lacks readinto
            count = self._open_fobj.readinto(  # type: ignore[attr-defined]
                buf[total:])
            if not count:
                break
            total += count
        return total

    def Finish(self) -> None:
        """All data read: a command must have succeeded."""
        self._open_fobj.close()
        if self._proc is not None:
            _WaitCommand(self._proc, self._args["argv"], self._timeout)
            self._proc = None

    def Discard(self) -> None:
        if self._proc is not None:
            _KillCommand(self._proc)
            self._proc = None
        if self._fobj is not None:
            self._fobj.close()


class Destination:
    """What an import writes: a new file, a disk or a command's input.

    ``created`` lists what was created here (removed again on failure);
    ``on_created`` is told about it, so that it can be removed even if
    this process is killed.
    """

    def __init__(self, kind: str, args: Any, timeout: float,
                 on_created: Callable[[list[str]], None]):
        self.kind = kind
        self._args = args
        self._timeout = timeout
        self._on_created = on_created
        self._proc: subprocess.Popen | None = None
        self._fd: int | None = None
        self._regular = False
        self._hole = (0, 0)
        self.capacity: int | None = None
        self.created: list[str] = []
        if kind == impexp.IEIO_COMMAND:
            _CheckExecutable(args)
        elif kind == impexp.IEIO_FILE:
            self._CreateFile(_BackupPath(args))
        else:
            path = _DiskPath(args)
            try:
                self._fd = os.open(path, os.O_WRONLY)
            except OSError as err:
                raise TransferError("Cannot open %s for writing: %s" %
                                    (path, err.strerror)) from err
            self.capacity = storage_base.GetPathSize(path)
            self._regular = os.path.isfile(path)

    def _CreateFile(self, path: str) -> None:
        missing = []
        parent = os.path.dirname(path)
        while not os.path.isdir(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        try:
            for directory in reversed(missing):
                os.mkdir(directory, 0o750)
                self._Created(directory)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                               0o600)
        except OSError as err:
            RemoveCreated(self.created)
            if isinstance(err, FileExistsError):
                raise TransferError("Refusing to overwrite the existing file"
                                    " %s" % self._args) from None
            raise TransferError("Cannot create %s: %s" %
                                (self._args, err.strerror)) from err
        self._Created(path)
        self._regular = True

    def _Created(self, path: str) -> None:
        self.created.append(path)
        self._on_created(self.created)

    def Start(self) -> None:
        """Start the command, once the source is there to feed it."""
        if self.kind == impexp.IEIO_COMMAND:
            proc = self._proc = _StartCommand(
                self._args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            assert proc.stdin is not None, "started with stdin=PIPE"
            self._fd = proc.stdin.fileno()

    @property
    def _open_fd(self) -> int:
        if self._fd is None:
            raise TransferError("The destination is not open")
        return self._fd

    def _CheckCapacity(self, end: int) -> None:
        if self.capacity is not None and end > self.capacity:
            raise TransferError("The source has more data than the"
                                " destination disk holds (%d bytes)" %
                                self.capacity)

    def Write(self, data: memoryview | bytes, offset: int) -> None:
        """Write ``data`` at ``offset`` (the bytes written so far)."""
        self._CheckCapacity(offset + len(data))
        view = memoryview(data)
        if self._proc is not None:
            while view:
                view = view[os.write(self._open_fd, view):]
        elif not self._regular:
            self._PWrite(view, offset)
        else:
            self._WriteSparse(view, offset)

    def Zero(self, offset: int, length: int) -> None:
        """Make ``length`` bytes at ``offset`` read as zeros (a hole of
        the source): in a regular file only its data there is
        overwritten, so holes stay holes."""
        self._CheckCapacity(offset + length)
        end = offset + length
        if not self._regular:
            while offset < end:
                count = min(CHUNK_SIZE, end - offset)
                self.Write(_ZERO_CHUNK[:count], offset)
                offset += count
            return
        while offset < end:
            try:
                data = os.lseek(self._open_fd, offset, os.SEEK_DATA)
            except OSError as err:
                if err.errno == errno.ENXIO:
                    return
                raise
            if data >= end:
                return
            hole = min(os.lseek(self._open_fd, data, os.SEEK_HOLE), end)
            while data < hole:
                count = min(CHUNK_SIZE, hole - data)
                self._PWrite(_ZERO_CHUNK[:count], data)
                data += count
            offset = hole

    def _PWrite(self, view: memoryview, offset: int) -> None:
        while view:
            written = os.pwrite(self._open_fd, view, offset)
            offset += written
            view = view[written:]

    def _WriteSparse(self, view: memoryview, offset: int) -> None:
        """Write, but skip zero blocks (aligned to the file's offsets)
        that fall into holes of the file: those read as zeros already."""
        pending = pos = 0
        while pos < len(view):
            end = min(len(view),
                      pos + _SPARSE_BLOCK - (offset + pos) % _SPARSE_BLOCK)
            # Looking at both ends first keeps random data cheap
            if view[pos] == 0 and view[end - 1] == 0 and \
                    bytes(view[pos:end]) == _ZERO_BLOCK[:end - pos] and \
                    self._IsHole(offset + pos, end - pos):
                self._PWrite(view[pending:pos], offset + pending)
                pending = end
            pos = end
        self._PWrite(view[pending:], offset + pending)

    def _IsHole(self, offset: int, length: int) -> bool:
        """Whether a region of the file has no data (reads as zeros).

        Writes only go forward, so the hole found last stays one.
        """
        start, end = self._hole
        if not start <= offset < end:
            try:
                end = os.lseek(self._open_fd, offset, os.SEEK_DATA)
            except OSError as err:
                # ENXIO: no data from offset on; anything else: don't know
                end = sys.maxsize if err.errno == errno.ENXIO else offset
            self._hole = (offset, end)
        return offset + length <= end

    def Finish(self, size: int) -> None:
        """All data written: make it durable (and the file complete)."""
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._fd = None
            _WaitCommand(self._proc, self._args["argv"], self._timeout)
            self._proc = None
            return
        fd = self._open_fd
        if self._regular and os.fstat(fd).st_size < size:
            # Trailing zeros were skipped
            os.ftruncate(fd, size)
        os.fsync(fd)
        os.close(fd)
        self._fd = None

    def Discard(self) -> None:
        """Undo what was created; a disk stays (it is its owner's)."""
        if self._proc is not None:
            _KillCommand(self._proc)
            self._proc = None
        elif self._fd is not None:
            os.close(self._fd)
        self._fd = None
        RemoveCreated(self.created)
        self.created = []


def RemoveCreated(paths: list[str]) -> None:
    """Remove files and directories, newest first; a directory that
    others filled meanwhile stays."""
    for path in reversed(paths):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError as err:
            if err.errno not in (errno.ENOENT, errno.ENOTEMPTY):
                logging.warning("Cannot remove %s: %s", path, err.strerror)


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
