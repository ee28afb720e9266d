"""One HTTP/1.1 connection of the server: timeout-aware I/O over the
(TLS) socket, reading requests and writing responses.

The server's workers (ganeti.http.server) loop over a connection's requests
with these; a request the server cannot take is refused with BadRequest,
a broken or timed-out connection ends with ConnectionClosed.
"""

import email.utils
import io
import select
import socket
import time
from typing import Callable, TypeAlias

from OpenSSL import SSL

from ganeti import constants
from ganeti import http as ghttp

MAX_LINE = 16 * 1024
READ_BUFFER = 64 * 1024
_SERVER_NAME = "Ganeti/%s" % constants.RELEASE_VERSION
# What a connection's bytes go through: the socket itself, or TLS over it
_Connection = socket.socket | SSL.Connection


class ConnectionClosed(Exception):
    """The peer went away or the connection broke; nothing to answer."""


class BadRequest(Exception):
    """A request the server answers itself with ``status`` and closes."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class ConnectionIO(io.RawIOBase):
    """Blocking, timeout-aware file interface over a non-blocking connection.

    ``conn`` is an ``OpenSSL.SSL.Connection`` or the plain socket; both are
    driven in non-blocking mode so every wait goes through poll with the
    current ``timeout`` (pyOpenSSL does not honour socket timeouts) and,
    if set, before the absolute ``deadline`` (time.monotonic).

    ``head`` holds the bytes the accept loop already read. While
    ``SetIdle(True)``, a byte on ``shed_fd`` (the server needs the slot)
    closes the connection instead of waiting on.
    """

    def __init__(self, sock: socket.socket, conn: _Connection,
                 head: bytes = b"", shed_fd: int | None = None):
        super().__init__()
        self._sock = sock
        self._conn = conn
        self._head = head
        self._shed_fd = shed_fd
        self._idle = False
        self._poller = select.poll()
        self._poller.register(sock.fileno())
        self.timeout: float | None = None
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def SetIdle(self, idle: bool) -> None:
        """Whether waiting for the next request (a shed request ends it)."""
        if self._shed_fd is None or idle == self._idle:
            return
        if idle:
            self._poller.register(self._shed_fd, select.POLLIN)
        else:
            self._poller.unregister(self._shed_fd)
        self._idle = idle

    def _Wait(self, events: int) -> None:
        self._poller.modify(self._sock.fileno(), events)
        timeout = self.timeout
        if self.deadline is not None:
            left = max(self.deadline - time.monotonic(), 0.0)
            timeout = left if timeout is None else min(timeout, left)
        timeout_ms = None if timeout is None else int(timeout * 1000)
        while True:
            try:
                ready = self._poller.poll(timeout_ms)
            except InterruptedError:
                continue
            break
        if not ready:
            raise ConnectionClosed("timed out after %s seconds" % timeout)
        # A request that arrived anyway is served
        if all(fd == self._shed_fd for fd, _ in ready):
            raise ConnectionClosed("closed while idle to make room")

    def Retry(self, fn: Callable, *args):
        """Call a non-blocking connection method until it stops wanting I/O."""
        while True:
            try:
                return fn(*args)
            except SSL.WantReadError:
                self._Wait(select.POLLIN)
            except SSL.WantWriteError:
                self._Wait(select.POLLOUT)

    def readinto(self, buf) -> int:
        if self._head:
            size = min(len(buf), len(self._head))
            buf[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        while True:
            try:
                return self.Retry(self._conn.recv_into, buf)
            except BlockingIOError:
                self._Wait(select.POLLIN)
            except SSL.ZeroReturnError:
                return 0
            except (SSL.Error, OSError) as err:
                # Includes peers that close without a TLS close_notify
                raise ConnectionClosed(str(err)) from err

    def SendAll(self, data: bytes) -> None:
        """Send all of ``data`` (one call per response keeps packets few)."""
        view = memoryview(data)
        while view:
            try:
                sent = self.Retry(self._conn.send, view)
            except BlockingIOError:
                self._Wait(select.POLLOUT)
                continue
            except (SSL.Error, OSError) as err:
                raise ConnectionClosed(str(err)) from err
            view = view[sent:]


# Buffered reads over a connection (a string: io.BufferedReader is generic
# only in the type stubs)
Reader: TypeAlias = "io.BufferedReader[ConnectionIO]"


def ParseRequestLine(line: bytes) -> tuple[str, str, str]:
    """``(method, target, version)``; BadRequest unless HTTP/1.0 or 1.1."""
    if len(line) > MAX_LINE:
        raise BadRequest(414, "Request line too long")
    parts = line.decode("latin-1").split()
    if len(parts) != 3:
        raise BadRequest(400, "Malformed request line")
    method, target, version = parts
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(505, "HTTP version %s not supported" % version)
    return method, target, version


def WantsKeepAlive(version: str, headers) -> bool:
    """Whether the client wants the connection kept open after this
    request (the default from HTTP/1.1 on)."""
    tokens = [token.strip().lower()
              for token in headers.get("Connection", "").split(",")]
    if version == "HTTP/1.1":
        return "close" not in tokens
    return "keep-alive" in tokens


def ReadBody(rfile: Reader, rawio: ConnectionIO, version: str, headers,
             max_body_size: int) -> bytes:
    """The request's body (at most ``max_body_size`` bytes), answering an
    ``Expect: 100-continue`` first."""
    encoding = headers.get("Transfer-Encoding")
    length_hdr = headers.get("Content-Length")
    if encoding is not None:
        if encoding.strip().lower() != "chunked":
            raise BadRequest(501, "Transfer encoding %s not supported" %
                             encoding)
        _SendContinue(rawio, version, headers)
        return _ReadChunked(rfile, max_body_size)
    if length_hdr is None:
        return b""
    try:
        length = int(length_hdr)
        if length < 0:
            raise ValueError(length)
    except ValueError:
        raise BadRequest(400, "Invalid Content-Length %r" %
                         length_hdr) from None
    if length > max_body_size:
        raise BadRequest(413, "Request body of %d bytes exceeds the"
                         " limit of %d bytes" %
                         (length, max_body_size))
    _SendContinue(rawio, version, headers)
    body = rfile.read(length)
    if len(body) < length:
        raise ConnectionClosed("Connection closed in request body")
    return body


def _SendContinue(rawio: ConnectionIO, version: str, headers) -> None:
    # Clients asking for it would otherwise wait (curl: 1 s) before
    # sending the body
    if (version == "HTTP/1.1" and
            headers.get("Expect", "").strip().lower() == "100-continue"):
        rawio.SendAll(b"HTTP/1.1 100 Continue\r\n\r\n")


def _ReadChunked(rfile: Reader, max_body_size: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = rfile.readline(MAX_LINE + 1)
        if not line:
            raise ConnectionClosed("Connection closed in request body")
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise BadRequest(400, "Invalid chunk size") from None
        if size == 0:
            # Skip trailer fields up to the terminating empty line
            while True:
                line = rfile.readline(MAX_LINE + 1)
                if not line.strip():
                    return b"".join(parts)
        total += size
        if total > max_body_size:
            raise BadRequest(413, "Request body exceeds the limit of %d"
                             " bytes" % max_body_size)
        chunk = rfile.read(size)
        if len(chunk) < size:
            raise ConnectionClosed("Connection closed in request body")
        parts.append(chunk)
        rfile.readline(MAX_LINE + 1)


def SendResponse(rawio: ConnectionIO, method: str, status: int,
                 headers: dict[str, str], body: bytes,
                 keep_alive: bool) -> None:
    """Send the response in one write (no body for HEAD)."""
    lines = ["HTTP/1.1 %d %s" % (status, ghttp.StatusPhrase(status))]
    own = {"content-length", "connection", "date", "server"}
    lines.extend("%s: %s" % (name, value)
                 for name, value in headers.items()
                 if name.lower() not in own)
    lines.append("Content-Length: %d" % len(body))
    lines.append("Connection: %s" % ("keep-alive" if keep_alive
                                     else "close"))
    lines.append("Date: %s" % email.utils.formatdate(usegmt=True))
    lines.append("Server: %s" % _SERVER_NAME)
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    rawio.SendAll(head if method == ghttp.HTTP_HEAD else head + body)
