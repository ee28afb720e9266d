"""Ganeti node daemon: serves the node RPC procedures over HTTPS.

Requests are ``POST /<procedure>`` with a JSON list of arguments; the
answer is ``[true, result]`` or ``[false, "error message"]``. Only clients
presenting the cluster certificate get past the TLS handshake. Each
connection is handled in a forked child (design-2.0, "Node daemon
changes"), so a slow or crashing procedure never blocks the daemon.
"""

import hmac
import logging
import optparse
import os
import random
import re
import signal
import sys
import threading
import time
from typing import Any, Callable

from cryptography import x509 as cx509

from ganeti import (backend, constants, daemon, errors, netutils, pathutils,
                    rpc_defs)
from ganeti import http as ghttp
from ganeti import serializer
from ganeti.http import server
from ganeti.utils import io, x509

# Ganeti's default for --max-clients
DEFAULT_MAX_CLIENTS = 20
# Connections per client address still in their TLS handshake or request
# head; the master may open many to one node at once
MAX_PENDING_PER_ADDRESS = 64
# What the master sends as call id (uuid4().hex), and how often a
# receipt also prunes the old ids
_CALL_ID_RE = re.compile(r"^[0-9a-f]{32}$")
_PRUNE_CHANCE = 1 / 256


def _FormatError(err: Exception) -> str:
    """The message of an error, without tuple formatting of its args."""
    return ", ".join(str(arg) for arg in err.args if arg is not None) or \
        err.__class__.__name__


def RunProcedure(call: rpc_defs.RpcCall, args: list[Any],
                 daemon_pid: int) -> tuple[list, bool]:
    """Run one backend function; returns the ``[status, result]`` answer.

    The second value says whether the daemon is stopping: a
    QuitGanetiException (node_leave_cluster) answers with its arguments
    and sends SIGTERM to the daemon; the forked child still delivers the
    answer while the daemon shuts down.
    """
    if len(args) != len(call.args):
        return [False, "Procedure %s takes %d arguments (%s), %d given" %
                (call.name, len(call.args),
                 ", ".join(arg.name for arg in call.args), len(args))], False
    try:
        return [True, backend.PROCEDURES[call.name](*args)], False
    except errors.QuitGanetiException as err:
        logging.info("Stopping the node daemon on request: %s", err.args)
        os.kill(daemon_pid, signal.SIGTERM)
        return list(err.args), True
    except errors.GenericError as err:
        return [False, _FormatError(err)], False
    except Exception as err:  # pylint: disable=broad-except
        logging.exception("Error in procedure %s", call.name)
        return [False, "Error while executing backend function %s: %s" %
                (call.name, err)], False


def _ParseRequest(calls: dict[str, rpc_defs.RpcCall], method: str,
                  path: str, body: bytes) -> tuple[rpc_defs.RpcCall, list]:
    """The procedure a request names and its arguments.

    Raises HttpNotFound for a procedure not in ``calls``.
    """
    call = calls.get(path[1:]) if path.startswith("/") else None
    if call is None:
        raise ghttp.HttpNotFound("Unknown procedure %s" % path)
    if method != ghttp.HTTP_POST:
        raise ghttp.HttpMethodNotAllowed(
            headers={ghttp.HTTP_ALLOW: ghttp.HTTP_POST})
    try:
        args = serializer.LoadJson(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise ghttp.HttpBadRequest("Invalid JSON body: %s" % err) from err
    if not isinstance(args, list):
        raise ghttp.HttpBadRequest("The body must be a JSON list of"
                                   " arguments")
    return call, args


def _FirstReceipt(call_id: str) -> bool:
    """Record a call id; False if it was received before.

    The master gives every request that is not safe to repeat an id (see
    rpc.client); libcurl re-sends a request whose kept-alive connection
    broke, and such a second copy must fail instead of running again.
    Creating the id's file is the atomic test-and-set, shared by all
    forked children. Ids older than RPC_CALL_ID_KEEP are pruned now and
    then (a re-sent request follows its first copy within seconds).
    """
    if not _CALL_ID_RE.match(call_id):
        raise ghttp.HttpBadRequest("Invalid %s header: %r" %
                                   (constants.RPC_CALL_ID_HEADER, call_id))
    path = os.path.join(pathutils.RPC_CALLS_DIR, call_id)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    except FileNotFoundError:
        os.makedirs(pathutils.RPC_CALLS_DIR, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    if random.random() < _PRUNE_CHANCE:
        _PruneCallIds(time.time() - constants.RPC_CALL_ID_KEEP)
    return True


def _PruneCallIds(older_than: float) -> None:
    with os.scandir(pathutils.RPC_CALLS_DIR) as entries:
        for entry in entries:
            try:
                if entry.stat().st_mtime < older_than:
                    os.unlink(entry.path)
            except FileNotFoundError:
                pass


def MakeRequestHandler(daemon_pid: int) -> Callable:
    """The HTTP request handler of noded."""

    def _Handle(method: str, path: str, headers,
                body: bytes) -> tuple[int, dict[str, str], bytes]:
        call, args = _ParseRequest(rpc_defs.CALLS_BY_NAME, method, path,
                                   body)
        call_id = headers.get(constants.RPC_CALL_ID_HEADER)
        if call_id is not None and not _FirstReceipt(call_id):
            logging.warning("Call %s (%s) received again, not run",
                            call_id, call.name)
            return 200, ghttp.JSON_HEADERS, serializer.DumpJsonBytes(
                [False, "Call %s (%s) reached the node a second time (its"
                 " connection broke and it was sent again); it was not"
                 " repeated" % (call_id, call.name)])
        answer, stopping = RunProcedure(call, args, daemon_pid)
        headers = ghttp.JSON_HEADERS
        if stopping:
            headers = {**headers, ghttp.HTTP_CONNECTION: "close"}
        return 200, headers, serializer.DumpJsonBytes(answer)

    return _Handle


def MakeJoinRequestHandler(daemon_pid: int) -> Callable:
    """The request handler of a node not yet in a cluster.

    Only the join procedures are served. A successful join tells the
    daemon (SIGUSR1) to come back as a cluster member.
    """

    def _Handle(method: str, path: str, _headers,
                body: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            call, args = _ParseRequest(rpc_defs.JOIN_CALLS_BY_NAME, method,
                                       path, body)
        except ghttp.HttpNotFound:
            raise ghttp.HttpForbidden("This node is not in a cluster yet;"
                                      " only joining is possible") from None
        answer, _ = RunProcedure(call, args, daemon_pid)
        if answer[0]:
            os.kill(daemon_pid, signal.SIGUSR1)
        return 200, {**ghttp.JSON_HEADERS, ghttp.HTTP_CONNECTION: "close"}, \
            serializer.DumpJsonBytes(answer)

    return _Handle


def GetJoinKey() -> str:
    """The join key of this node: its join certificate's pin and a secret.

    Created once, when noded first starts outside a cluster, and kept
    until the node joins, so the admin can read it again
    (``pathutils.NODED_JOIN_KEY_FILE``).
    """
    if not os.path.isfile(pathutils.NODED_JOIN_CERT_FILE):
        io.RemoveFile(pathutils.NODED_JOIN_KEY_FILE)
        x509.GenerateSelfSignedSslCert(pathutils.NODED_JOIN_CERT_FILE,
                                       common_name="ganeti-node-join")
    try:
        return io.ReadFile(pathutils.NODED_JOIN_KEY_FILE).strip()
    except FileNotFoundError:
        pass
    pin = x509.GetPublicKeyPin(io.ReadFile(pathutils.NODED_JOIN_CERT_FILE))
    key = "%s:%s" % (pin, os.urandom(16).hex())
    io.WriteFile(pathutils.NODED_JOIN_KEY_FILE, data=key + "\n",
                 mode=constants.SECURE_FILE_MODE)
    return key


def _IsMember() -> bool:
    return os.path.isfile(pathutils.NODED_CERT_FILE)


def CheckNoded(options: optparse.Values, args: list[str]) -> None:
    """Check the certificate; outside a cluster, show the join key.

    A node that is not in a cluster serves only the join: the admin passes
    the key printed here to ``gnt-node add --join-key`` on the master.
    """
    daemon.CheckServerArgs(options, args)
    if _IsMember():
        x509.GetCertificateDigest(io.ReadFile(pathutils.NODED_CERT_FILE))
        return
    key = GetJoinKey()
    sys.stderr.write(
        "This node is not in a cluster yet; its node daemon only accepts a"
        " join.\nTo add it, run on the master node:\n"
        "  gnt-node add --join-key=%s %s\n" % (key, netutils.GetMyName()))


def _ServerSettings() -> dict:
    """What the server answers with: the join procedures under the join
    certificate outside a cluster, everything to cluster members inside."""
    if not _IsMember():
        return {"handler": MakeJoinRequestHandler(os.getpid()),
                "ssl_cert_file": pathutils.NODED_JOIN_CERT_FILE,
                "require_client_cert": False}
    digest = x509.GetCertificateDigest(io.ReadFile(pathutils.NODED_CERT_FILE))

    def _VerifyClient(cert: cx509.Certificate, _openssl_ok: bool) -> bool:
        # The cluster certificate is self-signed and shared by all nodes;
        # a client is a cluster member exactly if it presents it
        accepted = hmac.compare_digest(x509.GetCertificateDigest(cert),
                                       digest)
        if not accepted:
            logging.warning("Rejecting client certificate %s",
                            cert.subject.rfc4514_string())
        return accepted

    return {"handler": MakeRequestHandler(os.getpid()),
            "ssl_cert_file": pathutils.NODED_CERT_FILE,
            "require_client_cert": True, "verify_fn": _VerifyClient}


def PrepNoded(options: optparse.Values, _args: list[str]) -> server.HttpServer:
    """Bind the listening socket (failures reach the starting process)."""
    if not _IsMember():
        logging.info("Not in a cluster: serving the join only (join key in"
                     " %s)", pathutils.NODED_JOIN_KEY_FILE)
    return server.HttpServer(
        options.bind_address, options.port, mode=server.MODE_FORK,
        max_clients=options.max_clients,
        max_pending_per_address=MAX_PENDING_PER_ADDRESS, **_ServerSettings())


def ExecNoded(_options: optparse.Values, _args: list[str],
              http_server: server.HttpServer,
              stop_event: threading.Event) -> None:
    """Serve until asked to stop.

    A join switches the running server to the cluster certificate and the
    member procedures; the listening socket is never closed in between, so
    the master, which talks to the node right after the join, always
    finds it.
    """
    joined = threading.Event()
    signal.signal(signal.SIGUSR1, lambda _signum, _frame: joined.set())
    address, port = http_server.server_address
    logging.info("Serving on %s port %d", address, port)
    http_server.start()
    try:
        while not stop_event.is_set():
            stop_event.wait(0.2)
            if joined.is_set():
                joined.clear()
                if _IsMember():
                    logging.info("Joined a cluster, serving as a member")
                    http_server.Reconfigure(**_ServerSettings())
    finally:
        http_server.shutdown()


def BuildParser() -> optparse.OptionParser:
    """ganeti-noded's options (its man page is generated from them)."""
    parser = optparse.OptionParser(
        description="The Ganeti node daemon runs on every node and does"
        " what changes the node's state (disks, instances, the master IP"
        " address, cluster files) for the master, over HTTPS: only clients"
        " presenting the cluster certificate are served. Stopping it does"
        " not affect running instances, but the master can no longer"
        " reach the node.",
        usage="%prog [-f] [-d] [-b ADDRESS] [-p PORT] [--max-clients N]",
        version="%%prog (ganeti) %s" % constants.RELEASE_VERSION)
    parser.add_option("--max-clients", dest="max_clients", type="int",
                      default=DEFAULT_MAX_CLIENTS, metavar="N",
                      help="Number of connections served at once, each by"
                      " a child process (default: %%default); idle ones are"
                      " closed when others need the room. Connections"
                      " that have not sent their request yet (at most %d"
                      " per client address) get %d seconds for the TLS"
                      " handshake and %d for each request line and"
                      " headers" % (MAX_PENDING_PER_ADDRESS,
                                    server.DEFAULT_HANDSHAKE_TIMEOUT,
                                    server.DEFAULT_HEADER_TIMEOUT))
    daemon.AddDaemonOptions(
        parser, default_port=netutils.GetDaemonPort(constants.NODED))
    return parser


def main() -> None:
    """Entry point of ganeti-noded."""
    daemon.GenericMain(constants.NODED, BuildParser(), CheckNoded, PrepNoded,
                       ExecNoded)
