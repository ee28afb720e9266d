"""HTTP/1.1 server over TLS (pyOpenSSL), used by noded and RAPI.

Design points:

* Concurrency is per connection: ``MODE_FORK`` handles each connection in a
  forked child (noded, as design-2.0 asks: a hanging backend call can't
  block other requests and a crash can't take the daemon down),
  ``MODE_THREAD`` in a thread.
* Keep-alive is supported; a connection idle for ``idle_timeout`` seconds
  is closed so forked children don't linger.
* Accepted sockets get TCP_NODELAY and the listen backlog is large: with
  many clients connecting at once a small backlog drops SYNs (1 s
  retransmit stall), and Nagle plus delayed ACK costs ~40 ms per
  keep-alive request.
* The accept loop waits on the listening socket and a wake-up pipe, so
  shutdown() returns immediately instead of after a poll interval.
* Reading requests from a connection and writing the responses is
  ganeti.http.connection's; this module accepts, hands connections to
  workers and serves their requests with the handler.

A request handler is ``handler(method, path, headers, body) -> (status,
headers, body)``, where ``path`` is the raw request target (including any
query string) and ``headers`` an ``email.message.Message`` (case-insensitive
``get``). It may raise ganeti.http.HttpException for error responses. In
fork mode the handler runs in the child, so it can't change the parent's
state.
"""

import collections
import errno
import functools
import http.client
import io
import itertools
import logging
import os
import selectors
import socket
import threading
import time
from typing import Callable

from cryptography import x509
from OpenSSL import SSL, crypto

from ganeti import errors, netutils
from ganeti import http as ghttp
from ganeti.http import connection, pending

MODE_FORK = "fork"
MODE_THREAD = "thread"
MODES = frozenset([MODE_FORK, MODE_THREAD])

DEFAULT_BACKLOG = 128
DEFAULT_IDLE_TIMEOUT = 30.0
DEFAULT_IO_TIMEOUT = 60.0
# A client gets this long for the TLS handshake, and then for its request
# line and headers: slow or silent clients must not hold a connection slot
DEFAULT_HANDSHAKE_TIMEOUT = 5.0
DEFAULT_HEADER_TIMEOUT = 5.0
# Connections still in their handshake or headers, over all addresses;
# beyond it the oldest is dropped
DEFAULT_MAX_PENDING = 256

# A request head (request line and headers) longer than this is handed to
# a worker unfinished, which answers it with an error
_MAX_HEAD = 64 * 1024
# How often the accept loop reaps finished children, and how long it waits
# before re-checking when max_clients is reached
_REAP_INTERVAL = 1.0
_BUSY_INTERVAL = 0.05
# Connections accepted at most per wake-up, so the loop stays responsive
_ACCEPT_BATCH = 64

Handler = Callable[[str, str, http.client.HTTPMessage, bytes],
                   tuple[int, dict[str, str], bytes]]
VerifyFn = Callable[[x509.Certificate, bool], bool]
ErrorFormatter = Callable[[int, str], tuple[dict[str, str], bytes]]


def FormatPlainError(status: int, message: str) -> tuple[dict[str, str],
                                                         bytes]:
    """Default error body: the message as plain text."""
    return ({ghttp.HTTP_CONTENT_TYPE: ghttp.HTTP_TEXT_PLAIN},
            (message + "\n").encode("utf-8"))


class _Worker:
    """The accept loop's handle on a thread or child serving a connection.

    Writing to ``shed_w`` asks the worker to close its connection if idle
    (waiting for the next request); a busy worker closes it after the
    request at hand.
    """

    def __init__(self, shed_w: int):
        self._shed_w: int | None = shed_w
        self._shed = False

    def Shed(self) -> None:
        if self._shed or self._shed_w is None:
            return
        self._shed = True
        try:
            os.write(self._shed_w, b"x")
        except OSError:
            pass

    def Close(self) -> None:
        if self._shed_w is not None:
            os.close(self._shed_w)
            self._shed_w = None


class HttpServer:
    """An HTTP/1.1 server, over TLS if given a certificate.

    ``ssl_cert_file`` holds the certificate (and the key unless
    ``ssl_key_file`` is given); without it the server speaks plain HTTP.
    ``ssl_chain_file`` holds intermediate CA certificates sent along with
    it, so that clients trusting only the root CA accept the certificate.
    With ``require_client_cert`` a client must present a certificate, and
    ``verify_fn(cert, openssl_ok)`` decides whether to accept it (cert is the
    client's own certificate, openssl_ok OpenSSL's verdict against
    ``ca_file``); rejected clients fail the TLS handshake.
    ``max_clients`` (0: unlimited) bounds the connections handled at once
    (by a thread or forked child); further complete requests wait, and
    idle keep-alive connections are closed to make room for them. A
    client has ``handshake_timeout`` seconds for the TLS handshake and
    then ``header_timeout`` for each request line and headers.
    Connections that have not sent their request yet are limited to
    ``max_pending`` and to ``max_pending_per_address`` per client address
    (0: no limit); see ganeti.http.pending.
    """

    def __init__(self, bind_address: str, port: int, handler: Handler,
                 ssl_cert_file: str | None = None,
                 ssl_key_file: str | None = None,
                 ssl_chain_file: str | None = None,
                 require_client_cert: bool = False,
                 verify_fn: VerifyFn | None = None,
                 ca_file: str | None = None,
                 mode: str = MODE_THREAD,
                 max_body_size: int = ghttp.DEFAULT_MAX_BODY_SIZE,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                 io_timeout: float = DEFAULT_IO_TIMEOUT,
                 max_clients: int = 0,
                 handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
                 header_timeout: float = DEFAULT_HEADER_TIMEOUT,
                 max_pending: int = DEFAULT_MAX_PENDING,
                 max_pending_per_address: int = 0,
                 backlog: int = DEFAULT_BACKLOG,
                 error_formatter: ErrorFormatter = FormatPlainError,
                 access_logger: logging.Logger | None = None):
        if mode not in MODES:
            raise ValueError("Unknown server mode %r" % mode)
        self._handler = handler
        self._mode = mode
        self._max_body_size = max_body_size
        self._idle_timeout = idle_timeout
        self._io_timeout = io_timeout
        self._max_clients = max_clients
        self._handshake_timeout = handshake_timeout
        self._header_timeout = header_timeout
        self._error_formatter = error_formatter
        self._access_logger = access_logger
        self._ssl_ctx = None
        if ssl_cert_file is not None:
            self._ssl_ctx = self._MakeSslContext(
                ssl_cert_file, ssl_key_file or ssl_cert_file,
                require_client_cert, verify_fn, ca_file)
            if ssl_chain_file is not None:
                self._AddChain(self._ssl_ctx, ssl_chain_file)

        self._pending = pending.PendingSet(max_pending,
                                           max_pending_per_address)
        # Connections with a complete request, waiting for a worker
        self._ready: collections.deque[pending.PendingConnection] = \
            collections.deque()
        # Workers by child pid or thread number
        self._workers: dict[int, _Worker] = {}
        self._worker_ids = itertools.count()
        # Protects what handler threads report back: finished workers, and
        # whether the loop (and its wake-up pipe) is gone
        self._active_lock = threading.Lock()
        self._finished: list[int] = []
        self._loop_done = False
        self._shutdown_request = False
        # A new (handler, TLS context) for the loop to switch to, and the
        # event telling Reconfigure that it did
        self._new_settings: tuple[Handler, SSL.Context | None,
                                  threading.Event] | None = None
        self._stopped = threading.Event()
        self._stopped.set()
        self._thread: threading.Thread | None = None

        family = socket.AF_INET6 if ":" in bind_address else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self._socket.bind((bind_address, port))
            except OSError as err:
                # The bare errno ("Address already in use") does not say
                # which of the daemons' addresses and ports is the problem
                raise errors.BindError("Could not bind to %s: %s" % (
                    netutils.FormatAddress((bind_address, port)),
                    err.strerror or err)) from err
            self._socket.listen(backlog)
            self._socket.setblocking(False)
        except BaseException:
            self._socket.close()
            raise
        self._wakeup_r, self._wakeup_w = os.pipe()
        os.set_blocking(self._wakeup_r, False)
        os.set_blocking(self._wakeup_w, False)

    @property
    def server_address(self) -> tuple[str, int]:
        """The bound (address, port), with the real port if 0 was asked."""
        return self._socket.getsockname()[:2]

    def _MakeSslContext(self, cert_file: str, key_file: str,
                        require_client_cert: bool, verify_fn: VerifyFn | None,
                        ca_file: str | None) -> SSL.Context:
        ctx = SSL.Context(SSL.TLS_SERVER_METHOD)
        ctx.set_min_proto_version(SSL.TLS1_2_VERSION)
        ctx.set_options(SSL.OP_NO_COMPRESSION)
        ctx.use_certificate_chain_file(cert_file)
        ctx.use_privatekey_file(key_file)
        ctx.check_privatekey()
        # Required for session resumption together with client certificates
        ctx.set_session_id(b"ganeti-http")
        if ca_file is not None:
            ctx.load_verify_locations(ca_file)
        if require_client_cert or verify_fn is not None:
            mode = SSL.VERIFY_PEER | SSL.VERIFY_CLIENT_ONCE
            if require_client_cert:
                mode |= SSL.VERIFY_FAIL_IF_NO_PEER_CERT
            ctx.set_verify(mode, None if verify_fn is None else
                           functools.partial(self._VerifyCallback, verify_fn))
        return ctx

    @staticmethod
    def _AddChain(ctx: SSL.Context, chain_file: str) -> None:
        """Send the certificates of ``chain_file`` after the server's own.

        Raises ValueError if the file holds no certificate.
        """
        with open(chain_file, "rb") as fobj:
            chain = x509.load_pem_x509_certificates(fobj.read())
        for cert in chain:
            ctx.add_extra_chain_cert(crypto.X509.from_cryptography(cert))

    @staticmethod
    def _VerifyCallback(verify_fn: VerifyFn, _conn, cert, _errnum: int,
                        depth: int, preverify_ok: int) -> bool:
        # Intermediate certificates keep OpenSSL's verdict; the decision is
        # about the client's own certificate (depth 0)
        if depth > 0:
            return bool(preverify_ok)
        return bool(verify_fn(cert.to_cryptography(), bool(preverify_ok)))

    def Reconfigure(self, handler: Handler, ssl_cert_file: str,
                    require_client_cert: bool = False,
                    verify_fn: VerifyFn | None = None,
                    ca_file: str | None = None) -> None:
        """Serve new connections with another handler and certificate.

        The listening socket stays open throughout, so clients never find
        the port closed (a node daemon that joins a cluster switches from
        its join certificate to the cluster's this way). Connections
        accepted under the old settings that have not reached a worker
        yet are closed: their TLS handshake was checked against the old
        settings, so the new handler must not serve them. Returns once
        the serving loop uses the new settings.
        """
        ctx = self._MakeSslContext(ssl_cert_file, ssl_cert_file,
                                   require_client_cert, verify_fn, ca_file)
        applied = threading.Event()
        self._new_settings = (handler, ctx, applied)
        if self._stopped.is_set():
            self._ApplySettings(None)
            return
        self._WakeUp()
        while not applied.wait(0.1):
            if self._stopped.is_set():
                return

    def _ApplySettings(self,
                       selector: selectors.BaseSelector | None) -> None:
        if self._new_settings is None:
            return
        self._handler, self._ssl_ctx, applied = self._new_settings
        self._new_settings = None
        for conn in list(self._pending):
            if selector is None:
                self._pending.Remove(conn)
                conn.Close()
            else:
                self._Drop(selector, conn, "server reconfigured")
        while self._ready:
            self._ready.popleft().Close()
        applied.set()

    # Accept loop ----------------------------------------------------------

    def start(self) -> None:
        """Serve in a background thread (see serve_forever)."""
        self._stopped.clear()
        self._thread = threading.Thread(target=self.serve_forever,
                                        name="HttpServer", daemon=True)
        self._thread.start()

    def serve_forever(self) -> None:
        """Accept and dispatch connections until shutdown() is called.

        This loop also does each connection's TLS handshake and reads its
        request head (ganeti.http.pending), so only clients that sent a
        complete request take one of the ``max_clients`` workers.
        """
        self._stopped.clear()
        selector = selectors.DefaultSelector()
        try:
            selector.register(self._wakeup_r, selectors.EVENT_READ)
            selector.register(self._socket, selectors.EVENT_READ)
            while not self._shutdown_request:
                self._ApplySettings(selector)
                self._ReapWorkers()
                self._Dispatch()
                for key, _ in selector.select(self._NextWait()):
                    if key.fileobj == self._wakeup_r:
                        self._DrainWakeup()
                    elif self._shutdown_request:
                        break
                    elif key.fileobj is self._socket:
                        self._Accept(selector)
                    else:
                        self._Advance(selector, key.data)
                for conn in self._pending.TakeExpired(time.monotonic()):
                    self._Drop(selector, conn, "no request in time")
        finally:
            with self._active_lock:
                self._loop_done = True
            for conn in [*self._pending, *self._ready]:
                conn.Close()
            for worker in self._workers.values():
                worker.Shed()
            selector.close()
            self._socket.close()
            os.close(self._wakeup_r)
            os.close(self._wakeup_w)
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop accepting connections and close the listening socket.

        Connections being handled are not interrupted: forked children and
        handler threads finish their request, so a reply already being
        computed still reaches its client; idle connections are closed.
        """
        if self._shutdown_request:
            return
        self._shutdown_request = True
        if self._thread is None and self._stopped.is_set():
            # Never served: release the resources here
            self._socket.close()
            os.close(self._wakeup_r)
            os.close(self._wakeup_w)
            return
        self._WakeUp()
        self._stopped.wait()
        if self._thread is not None:
            self._thread.join()
        self._ReapWorkers()

    def _WakeUp(self) -> None:
        try:
            os.write(self._wakeup_w, b"x")
        except BlockingIOError:
            pass

    def _DrainWakeup(self) -> None:
        try:
            while os.read(self._wakeup_r, 512):
                pass
        except BlockingIOError:
            pass

    def _NextWait(self) -> float | None:
        """How long the loop may sleep: until the next pending deadline,
        and briefly while children (no wake-up when they exit) run."""
        waits = []
        deadline = self._pending.NextDeadline()
        if deadline is not None:
            waits.append(max(deadline - time.monotonic(), 0.0))
        if self._ready and self._mode == MODE_FORK:
            waits.append(_BUSY_INTERVAL)
        elif self._workers and self._mode == MODE_FORK:
            waits.append(_REAP_INTERVAL)
        return min(waits, default=None)

    def _ReapWorkers(self) -> None:
        """Forget workers that ended (children exited, threads returned)."""
        if self._mode == MODE_FORK:
            for pid in list(self._workers):
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done = pid
                if done:
                    self._workers.pop(pid).Close()
        else:
            with self._active_lock:
                finished, self._finished = self._finished, []
            for key in finished:
                self._workers.pop(key).Close()

    def _Accept(self, selector: selectors.BaseSelector) -> None:
        for _ in range(_ACCEPT_BATCH):
            try:
                sock, client_address = self._socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:
                # Out of file descriptors and the like: keep serving others
                logging.error("Accepting a connection failed: %s", err)
                if err.errno in (errno.EMFILE, errno.ENFILE):
                    time.sleep(_BUSY_INTERVAL)
                return
            room, dropped = self._pending.MakeRoom(client_address[0],
                                                   len(self._ready))
            for conn in dropped:
                self._Drop(selector, conn, "replaced by a newer connection")
            if not room:
                logging.warning("Too many connections, refusing %s",
                                client_address[0])
                sock.close()
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
            tls = None
            timeout = self._header_timeout
            if self._ssl_ctx is not None:
                tls = SSL.Connection(self._ssl_ctx, sock)
                tls.set_accept_state()
                timeout = self._handshake_timeout
            conn = pending.PendingConnection(
                sock, client_address, tls, time.monotonic() + timeout)
            self._pending.Add(conn)
            selector.register(sock, conn.events, conn)

    def _Advance(self, selector: selectors.BaseSelector,
                 conn: pending.PendingConnection) -> None:
        try:
            ready = conn.Advance(self._header_timeout, _MAX_HEAD)
        except pending.Closed as err:
            self._Drop(selector, conn, str(err))
            return
        if ready:
            selector.unregister(conn.sock)
            self._pending.Remove(conn)
            self._ready.append(conn)
        else:
            selector.modify(conn.sock, conn.events, conn)

    def _Drop(self, selector: selectors.BaseSelector,
              conn: pending.PendingConnection, reason: str) -> None:
        logging.debug("Dropping connection from %s: %s", conn.host, reason)
        self._pending.Remove(conn)
        selector.unregister(conn.sock)
        conn.Close()

    def _Dispatch(self) -> None:
        """Give waiting requests to workers; without a free one, ask the
        workers to close their idle connections."""
        while self._ready and (not self._max_clients or
                               len(self._workers) < self._max_clients):
            conn = self._ready.popleft()
            if self._mode == MODE_FORK:
                self._ForkConnection(conn, self._handler)
            else:
                self._ThreadConnection(conn, self._handler)
        if self._ready:
            for worker in self._workers.values():
                worker.Shed()

    def _ForkConnection(self, conn: pending.PendingConnection,
                        handler: Handler) -> None:
        server_pid = os.getpid()
        shed_r, shed_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as err:
            logging.error("Can't fork for connection from %s: %s",
                          conn.host, err)
            os.close(shed_r)
            os.close(shed_w)
            conn.Close()
            return
        if pid == 0:
            status = 1
            try:
                # Only this connection's descriptors stay open in the child
                self._socket.close()
                os.close(self._wakeup_r)
                os.close(self._wakeup_w)
                os.close(shed_w)
                for other in [*self._pending, *self._ready]:
                    other.Close()
                for worker in self._workers.values():
                    worker.Close()
                self._HandleConnection(conn, shed_r, handler,
                                       server_pid=server_pid)
                status = 0
            except BaseException:  # pylint: disable=broad-except
                logging.exception("Error in connection child")
            finally:
                os._exit(status)
        os.close(shed_r)
        conn.Close()
        self._workers[pid] = _Worker(shed_w)

    def _ThreadConnection(self, conn: pending.PendingConnection,
                          handler: Handler) -> None:
        shed_r, shed_w = os.pipe()
        key = next(self._worker_ids)
        self._workers[key] = _Worker(shed_w)

        def _Run() -> None:
            try:
                self._HandleConnection(conn, shed_r, handler)
            finally:
                os.close(shed_r)
                with self._active_lock:
                    self._finished.append(key)
                    if not self._loop_done:
                        self._WakeUp()

        threading.Thread(target=_Run, daemon=True,
                         name="HttpConnection-%s" % (conn.address,)).start()

    # One connection -------------------------------------------------------

    def _HandleConnection(self, conn: pending.PendingConnection, shed_fd: int,
                          handler: Handler,
                          server_pid: int | None = None) -> None:
        """Serve the requests of one connection, the first already read.

        A forked child (``server_pid`` set) takes no further requests once
        the server process is gone: it must not keep serving with a stopped
        daemon's state. Clients like curl retry such a request on a new
        connection.
        """
        sock, tls = conn.sock, conn.tls
        try:
            rawio = connection.ConnectionIO(
                sock, sock if tls is None else tls, head=bytes(conn.head),
                shed_fd=shed_fd)
            rfile = io.BufferedReader(rawio, connection.READ_BUFFER)
            while self._HandleRequest(rfile, rawio, handler, conn.address,
                                      server_pid):
                pass
        except connection.ConnectionClosed as err:
            logging.debug("Connection from %s closed: %s", conn.host, err)
        except Exception:  # pylint: disable=broad-except
            logging.exception("Error handling connection from %s",
                              conn.host)
        finally:
            if tls is not None:
                try:
                    tls.shutdown()
                except (SSL.Error, OSError):
                    pass
            sock.close()

    def _HandleRequest(self, rfile: connection.Reader,
                       rawio: connection.ConnectionIO, handler: Handler,
                       client_address,
                       server_pid: int | None) -> bool:
        """Read, dispatch and answer one request; returns keep-alive.

        Waiting for the request, the connection is idle (the server may
        close it to make room); once it starts, the request line and
        headers must be in within the header timeout.
        """
        rawio.SetIdle(True)
        rawio.timeout = self._idle_timeout
        if not rfile.peek(1):
            return False
        rawio.SetIdle(False)
        rawio.timeout = self._io_timeout
        rawio.deadline = time.monotonic() + self._header_timeout
        line = rfile.readline(connection.MAX_LINE + 1)
        if server_pid is not None and os.getppid() != server_pid:
            logging.debug("Server process gone, not serving %s any more",
                          client_address)
            return False
        if not line.strip():
            # Stray CRLF between requests (RFC 9112 section 2.2)
            return True
        start = time.monotonic()
        method = target = "-"
        try:
            method, target, version = connection.ParseRequestLine(line)
            try:
                headers = http.client.parse_headers(rfile)
            except http.client.HTTPException as err:
                raise connection.BadRequest(
                    431, "Bad request headers: %s" % err) from err
            rawio.deadline = None
            keep_alive = connection.WantsKeepAlive(version, headers)
            body = connection.ReadBody(rfile, rawio, version, headers,
                                       self._max_body_size)
        except connection.BadRequest as err:
            resp_headers, resp_body = self._error_formatter(err.status,
                                                            err.message)
            connection.SendResponse(rawio, method, err.status,
                                    resp_headers, resp_body, False)
            self._LogAccess(client_address, method, target, err.status,
                            len(resp_body), start)
            return False

        try:
            status, resp_headers, resp_body = handler(method, target,
                                                      headers, body)
        except ghttp.HttpException as err:
            status = err.code
            resp_headers, resp_body = self._error_formatter(status,
                                                            err.message)
            resp_headers = {**resp_headers, **err.headers}
        except Exception:  # pylint: disable=broad-except
            logging.exception("Error handling %s %s", method, target)
            status = 500
            resp_headers, resp_body = self._error_formatter(
                status, ghttp.StatusPhrase(status))
        if isinstance(resp_body, str):
            resp_body = resp_body.encode("utf-8")
        for name, value in resp_headers.items():
            if (name.lower() == "connection" and
                    value.strip().lower() == "close"):
                keep_alive = False
        connection.SendResponse(rawio, method, status, resp_headers,
                                resp_body, keep_alive)
        self._LogAccess(client_address, method, target, status,
                        len(resp_body), start)
        return keep_alive

    def _LogAccess(self, client_address, method: str, target: str,
                   status: int, size: int, start: float) -> None:
        duration = time.monotonic() - start
        logging.debug("%s %s %s -> %d (%.1f ms)", client_address[0], method,
                      target, status, duration * 1000)
        if self._access_logger is not None:
            self._access_logger.info(
                '%s - - [%s] "%s %s" %d %d', client_address[0],
                time.strftime("%d/%b/%Y:%H:%M:%S %z"), method, target,
                status, size)
