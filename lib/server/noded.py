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
import signal
import threading
from typing import Any, Callable

from cryptography import x509 as cx509

from ganeti import backend, constants, daemon, errors, pathutils, rpc_defs
from ganeti import http as ghttp
from ganeti import serializer
from ganeti.http import server
from ganeti.utils import io, x509

_JSON_HEADERS = {ghttp.HTTP_CONTENT_TYPE: ghttp.HTTP_APP_JSON}


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
        return [True, getattr(backend, call.name)(*args)], False
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


def MakeRequestHandler(daemon_pid: int) -> Callable:
    """The HTTP request handler of noded."""

    def _Handle(method: str, path: str, _headers,
                body: bytes) -> tuple[int, dict[str, str], bytes]:
        call = rpc_defs.CALLS_BY_NAME.get(path[1:] if path[:1] == "/"
                                          else None)
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
        answer, stopping = RunProcedure(call, args, daemon_pid)
        headers = _JSON_HEADERS
        if stopping:
            headers = {**headers, ghttp.HTTP_CONNECTION: "close"}
        return 200, headers, serializer.DumpJsonBytes(answer)

    return _Handle


def CheckNoded(_options: optparse.Values, args: list[str]) -> None:
    """Refuse to start without a usable cluster certificate."""
    if args:
        raise errors.GenericError("Unexpected arguments: %s" % " ".join(args))
    if not os.path.isfile(pathutils.NODED_CERT_FILE):
        raise errors.GenericError(
            "The node certificate %s is missing; this node is not part of a"
            " cluster" % pathutils.NODED_CERT_FILE)
    x509.GetCertificateDigest(io.ReadFile(pathutils.NODED_CERT_FILE))


def PrepNoded(options: optparse.Values, _args: list[str]) -> server.HttpServer:
    """Bind the listening socket (failures reach the starting process)."""
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

    return server.HttpServer(
        options.bind_address, options.port, MakeRequestHandler(os.getpid()),
        ssl_cert_file=pathutils.NODED_CERT_FILE, require_client_cert=True,
        verify_fn=_VerifyClient, mode=server.MODE_FORK)


def ExecNoded(_options: optparse.Values, _args: list[str],
              http_server: server.HttpServer,
              stop_event: threading.Event) -> None:
    """Serve until asked to stop."""
    address, port = http_server.server_address
    logging.info("Serving on %s port %d", address, port)
    http_server.start()
    stop_event.wait()
    http_server.shutdown()


def main() -> None:
    """Entry point of ganeti-noded."""
    parser = optparse.OptionParser(
        description="Ganeti node daemon",
        usage="%prog [-f] [-d] [-b ADDRESS] [-p PORT]",
        version="%%prog (ganeti) %s" % constants.RELEASE_VERSION)
    daemon.GenericMain(constants.NODED, parser, CheckNoded, PrepNoded,
                       ExecNoded, default_port=constants.DEFAULT_NODED_PORT)
