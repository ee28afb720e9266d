"""Ganeti remote API daemon: the RAPI resources over HTTPS.

Like Ganeti's, it runs on the master node only and reaches the master
daemon only through LUXI. Requests are served in threads (at most
``--max-clients`` connections at once); each borrows a LUXI connection
from a small pool for as long as it runs. The users file is re-read on
SIGHUP.

A request goes through: resource lookup (404), method (501),
authentication and access (401, 403), body (415, 400), then the
resource's handler, whose Ganeti errors become HTTP statuses (see
ToHttpError). Errors are answered as ``{"code", "message", "explain"}``.
Paths under ``/placement`` go to the Placement API (ganeti.rapi.placement),
which answers in Placement's forms.
"""

import html
import http
import logging
import logging.handlers
import optparse
import signal
import threading
from typing import Any

from cryptography import x509 as crypto_x509

from ganeti import (constants, daemon, errors, luxi, netutils, pathutils,
                    serializer, ssconf, utils)
from ganeti import http as ghttp
from ganeti.http import auth, server
from ganeti.placement import store as placement_store
from ganeti.rapi import baserlib, connector
from ganeti.rapi import placement
from ganeti.utils import gcpause, x509

AUTH_REALM = "Ganeti Remote API"
DEFAULT_MAX_CLIENTS = 20
# Idle keep-alive connections count against --max-clients; drop them soon
KEEPALIVE_IDLE_TIMEOUT = 10.0
# Idle LUXI connections kept for reuse
_MAX_IDLE_CLIENTS = 8



def FormatErrorMessage(status: int, message: str) -> tuple[dict[str, str],
                                                           bytes]:
    """The JSON error body Ganeti's RAPI answers with."""
    try:
        explain = http.HTTPStatus(status).description
    except ValueError:
        explain = ""
    body = {"code": status, "message": html.escape(message, quote=False),
            "explain": explain}
    return dict(ghttp.JSON_HEADERS), serializer.DumpJsonBytes(body)


def _ErrorText(err: Exception) -> str:
    if err.args and isinstance(err.args[0], str):
        return err.args[0]
    return str(err) or err.__class__.__name__


def ToHttpError(err: errors.GenericError) -> ghttp.HttpException:
    """The HTTP answer to a Ganeti error raised while handling a request.

    Unreachable master: 502; LUXI timeout: 504; full or drained queue:
    503; unknown item: 404; invalid input: 400; anything else: 500.
    """
    text = _ErrorText(err)
    if isinstance(err, errors.NoMasterError):
        return baserlib.HttpBadGateway("Can't connect to master daemon: %s"
                                       % text)
    if isinstance(err, errors.PermissionError):
        return ghttp.HttpInternalServerError(
            "Internal error: no permission to connect to the master daemon")
    if isinstance(err, errors.TimeoutError):
        return baserlib.HttpGatewayTimeout("Timeout while talking to the"
                                           " master daemon: %s" % text)
    if isinstance(err, (errors.ProtocolError, errors.LuxiError)):
        return baserlib.HttpBadGateway(text)
    if isinstance(err, errors.JobQueueFull):
        return ghttp.HttpServiceUnavailable("Job queue is full, needs"
                                            " archiving")
    if isinstance(err, errors.JobQueueDrainError):
        return ghttp.HttpServiceUnavailable("Job queue is drained, cannot"
                                            " submit")
    if isinstance(err, errors.OpPrereqError):
        code = errors.GetErrorCode(err)
        if code == errors.ECODE_NOENT:
            return ghttp.HttpNotFound(text)
        if code == errors.ECODE_INVAL:
            return ghttp.HttpBadRequest(text)
    return ghttp.HttpInternalServerError(text)


class LuxiClientPool:
    """LUXI clients (connections to the master daemon) for reuse.

    A luxi.Client serves one thread at a time; a request takes one from
    the pool and gives it back when done, so a kept-alive HTTP connection
    or a busy server does not reconnect for every request.
    """

    def __init__(self, address: str | None = None,
                 max_idle: int = _MAX_IDLE_CLIENTS):
        self._address = address
        self._max_idle = max_idle
        self._idle: list[luxi.Client] = []
        self._lock = threading.Lock()

    def Get(self) -> luxi.Client:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return luxi.Client(address=self._address)

    def Put(self, client: luxi.Client) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append(client)
                return
        client.Close()


class _ClientLease:
    """The LUXI client of one request, taken from the pool on first use."""

    def __init__(self, pool: LuxiClientPool):
        self._pool = pool
        self._client: luxi.Client | None = None

    def Get(self) -> luxi.Client:
        if self._client is None:
            self._client = self._pool.Get()
        return self._client

    def Release(self) -> None:
        if self._client is not None:
            self._pool.Put(self._client)
            self._client = None


def _IsJson(content_type: str) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == ghttp.HTTP_APP_JSON


class RemoteApiHandler:
    """The HTTP request handler of the RAPI daemon (see module doc)."""

    def __init__(self, users: auth.UsersFile, require_auth: bool,
                 client_pool: LuxiClientPool,
                 mapper: connector.Mapper | None = None,
                 placement_api: placement.PlacementApi | None = None):
        self._users = users
        self._require_auth = require_auth
        self._pool = client_pool
        self._mapper = mapper or connector.Mapper()
        self._placement = placement_api or placement.PlacementApi(
            placement_store.Store())

    def _Authenticate(self, resource: type[baserlib.AccessControlled],
                      method: str, headers) -> None:
        """Check credentials where needed; 401 or 403 if insufficient.

        Credentials are required by --require-authentication or a method
        with an access list; if a client sends them anyway, they must be
        valid.
        """
        access = resource.GetAccess(method)
        header = headers.get(ghttp.HTTP_AUTHORIZATION)
        if not (self._require_auth or access or header):
            return
        user = self._users.Authenticate(header, AUTH_REALM)
        if user is None:
            raise auth.Unauthorized(AUTH_REALM)
        if access and not set(user.options) & set(access):
            raise ghttp.HttpForbidden()

    @staticmethod
    def _ParseBody(headers, body: bytes) -> Any:
        if not body:
            return None
        # RFC 9110: a body without a content type is application/octet-stream
        content_type = headers.get(ghttp.HTTP_CONTENT_TYPE,
                                   "application/octet-stream")
        if not _IsJson(content_type):
            raise ghttp.HttpUnsupportedMediaType()
        try:
            return serializer.LoadJson(body)
        except (ValueError, UnicodeDecodeError):
            raise ghttp.HttpBadRequest("Unable to parse JSON data") from None

    def __call__(self, method: str, target: str, headers,
                 body: bytes) -> tuple[int, dict[str, str], bytes]:
        if placement.IsPlacementPath(target.partition("?")[0]):
            lease = _ClientLease(self._pool)
            try:
                return self._placement(method, target, headers, body,
                                       self._Authenticate, lease.Get)
            finally:
                lease.Release()
        resource, items, queryargs = self._mapper.getController(target)
        method = method.upper()
        if method not in resource.GetMethods():
            raise ghttp.HttpNotImplemented(
                "Method %s is unsupported for path %s" %
                (method, target.partition("?")[0]))
        self._Authenticate(resource, method, headers)
        body_data = self._ParseBody(headers, body)
        lease = _ClientLease(self._pool)
        # A large answer (a bulk listing) is a big tree of new containers,
        # none of them garbage: with the cyclic collector paused until it
        # is encoded and dropped, the collector never goes over it. The
        # pause includes the wait for the master daemon; garbage cycles
        # left meanwhile are collected after it.
        with gcpause.CyclicGcPaused():
            try:
                handler = resource(items, queryargs, body_data, lease.Get)
                result = getattr(handler, method)()
            except errors.GenericError as err:
                logging.debug("%s %s failed: %s", method, target, err)
                raise ToHttpError(err) from err
            finally:
                lease.Release()
            answer = serializer.DumpJsonBytes(result)
            del result
        return 200, dict(ghttp.JSON_HEADERS), answer


def _AccessLogger() -> logging.Logger:
    """The access log (common log format), beside the daemon's own log."""
    logger = logging.getLogger("ganeti.rapi.access")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    handler = logging.handlers.WatchedFileHandler(pathutils.LOG_RAPI_ACCESS,
                                                  encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    return logger


def CheckRapi(options: optparse.Values, args: list[str]) -> None:
    """Start only on the master, with a usable certificate."""
    daemon.CheckServerArgs(options, args)
    ssconf.CheckMaster(options.debug)
    if options.ssl:
        for path in sorted({options.ssl_cert, options.ssl_key}):
            try:
                data = utils.ReadFile(path)
            except OSError as err:
                raise errors.GenericError("Can't read SSL certificate or key"
                                          " %s: %s" % (path, err)) from err
            if path == options.ssl_cert:
                x509.GetCertificateDigest(data)
        if options.ssl_chain:
            _CheckChainFile(options.ssl_chain)


def _CheckChainFile(path: str) -> None:
    """Refuse to start with a chain file that holds no certificate."""
    try:
        data = utils.ReadFile(path, binary=True)
    except OSError as err:
        raise errors.GenericError("Can't read SSL certificate chain %s: %s"
                                  % (path, err)) from err
    try:
        crypto_x509.load_pem_x509_certificates(data)
    except ValueError as err:
        raise errors.GenericError("Invalid SSL certificate chain %s: %s" %
                                  (path, err)) from err


def PrepRapi(options: optparse.Values,
             _args: list[str]) -> tuple[server.HttpServer, auth.UsersFile]:
    """Load the users and bind the listening socket."""
    users = auth.UsersFile(pathutils.RAPI_USERS_FILE)
    users.Load()
    handler = RemoteApiHandler(users, options.reqauth, LuxiClientPool())
    http_server = server.HttpServer(
        options.bind_address, options.port, handler,
        ssl_cert_file=options.ssl_cert if options.ssl else None,
        ssl_key_file=options.ssl_key if options.ssl else None,
        ssl_chain_file=options.ssl_chain if options.ssl else None,
        mode=server.MODE_THREAD, max_clients=options.max_clients,
        max_pending_per_address=options.max_clients,
        idle_timeout=KEEPALIVE_IDLE_TIMEOUT,
        error_formatter=FormatErrorMessage, access_logger=_AccessLogger())
    return http_server, users


def ExecRapi(_options: optparse.Values, _args: list[str],
             prep: tuple[server.HttpServer, auth.UsersFile],
             stop_event: threading.Event) -> None:
    """Serve until SIGTERM; SIGHUP re-reads the users file."""
    http_server, users = prep
    # The main thread only waits for the stop event, so reading the file in
    # the signal handler can't interrupt anything
    signal.signal(signal.SIGHUP, lambda _signum, _frame: users.Load())
    address, port = http_server.server_address
    logging.info("Serving the remote API on %s port %d", address, port)
    http_server.start()
    stop_event.wait()
    http_server.shutdown()


def BuildParser() -> optparse.OptionParser:
    """ganeti-rapi's options (its man page is generated from them)."""
    parser = optparse.OptionParser(
        description="The Ganeti remote API daemon serves the RAPI, a REST"
        " interface over HTTPS, on the master node, passing the requests"
        " to ganeti-masterd. Users and their rights come from the RAPI"
        " users file, which is read again on SIGHUP.",
        usage="%prog [-f] [-d] [-b ADDRESS] [-p PORT]"
        " [--require-authentication] [--max-clients N]"
        " [--ssl-chain FILE]",
        version="%%prog (ganeti) %s" % constants.RELEASE_VERSION)
    parser.add_option("--require-authentication", dest="reqauth",
                      action="store_true", default=False,
                      help="Require authentication for every request,"
                      " reading included")
    parser.add_option("--max-clients", dest="max_clients", type="int",
                      default=DEFAULT_MAX_CLIENTS, metavar="N",
                      help="Number of connections served at once"
                      " (default: %%default); idle ones are closed when"
                      " others need the room. Each client address may"
                      " also have N connections that have not sent their"
                      " request yet, which get %d seconds for the TLS"
                      " handshake and %d for each request line and"
                      " headers" % (server.DEFAULT_HANDSHAKE_TIMEOUT,
                                    server.DEFAULT_HEADER_TIMEOUT))
    parser.add_option("--no-ssl", dest="ssl", action="store_false",
                      default=True, help="Serve plain HTTP (testing only)")
    parser.add_option("-K", "--ssl-key", dest="ssl_key",
                      default=pathutils.RAPI_CERT_FILE, metavar="FILE",
                      help="SSL key (default: %default)")
    parser.add_option("-C", "--ssl-cert", dest="ssl_cert",
                      default=pathutils.RAPI_CERT_FILE, metavar="FILE",
                      help="SSL certificate, possibly followed by its chain"
                      " (default: %default)")
    parser.add_option("--ssl-chain", dest="ssl_chain", default=None,
                      metavar="FILE",
                      help="Intermediate CA certificates (PEM) to send along"
                      " with the SSL certificate")
    daemon.AddDaemonOptions(
        parser, default_port=netutils.GetDaemonPort(constants.RAPI))
    return parser


def main() -> None:
    """Entry point of ganeti-rapi."""
    daemon.GenericMain(constants.RAPI, BuildParser(), CheckRapi, PrepRapi,
                       ExecRapi)
