"""HTTPS transport of the node RPC, with pycurl.

One call sends the same request to many nodes in parallel through a
``pycurl.CurlMulti``. Connections are kept alive between calls: libcurl
keeps them in the connection cache of the multi handle, and libcurl does
not support sharing a connection cache between threads. So the client
holds a pool of sessions (a multi handle plus idle easy handles per node
address); a call takes a session for itself, several threads calling at
once simply use several sessions.

Both ends authenticate with the cluster certificate: it is our client
certificate and key, and the only CA the node's certificate is checked
against (host names are not checked; nodes are addressed by IP).
"""

import io
import logging
import threading
import time
import uuid
from typing import Any, Iterable

import pycurl

from ganeti import constants, errors, netutils, serializer

# Idle connections older than this are not reused; keep it below the
# server's idle timeout (30 s) so we never write into a closing connection.
_MAX_CONNECTION_AGE = 25
_MAX_CACHED_CONNECTIONS = 1024
_SELECT_TIMEOUT = 1.0
_IDLE_SLEEP = 0.005
_ERROR_BODY_LIMIT = 200
# The request went out but the connection broke before a complete answer
_BROKEN_CONNECTION_ERRORS = frozenset([
    pycurl.E_GOT_NOTHING, pycurl.E_RECV_ERROR, pycurl.E_SEND_ERROR,
    pycurl.E_PARTIAL_FILE,
])

OFFLINE_MESSAGE = "Node is marked offline"

_BASE_HEADERS = [
    "Content-Type: application/json",
    # Without this, curl waits for "100 Continue" on larger bodies
    "Expect:",
]


def _EnsureErr(value: Any) -> str:
    """A failure description never empty, whatever the node sent."""
    if value:
        return str(value)
    return "No error information"


class RpcResult:
    """Result of one procedure on one node.

    ``fail_msg`` is None on success, when ``payload`` holds the
    procedure's return value. ``offline`` marks nodes that were not
    contacted because they are offline. ``data`` is the raw response
    (``[status, payload]``) or the failure message.
    """

    def __init__(self, data: Any = None, failed: bool = False,
                 offline: bool = False, call: str | None = None,
                 node: str | None = None):
        self.offline = offline
        self.call = call
        self.node = node
        self.payload = None
        self.fail_msg: str | None
        if offline:
            self.fail_msg = OFFLINE_MESSAGE
            self.data = None
        elif failed:
            self.fail_msg = _EnsureErr(data)
            self.data = data
        elif not (isinstance(data, (list, tuple)) and len(data) == 2 and
                  isinstance(data[0], bool)):
            self.fail_msg = "Invalid result type (%r)" % (data,)
            self.data = data
        elif not data[0]:
            self.fail_msg = _EnsureErr(data[1])
            self.data = data
        else:
            self.fail_msg = None
            self.data = data
            self.payload = data[1]

    def Raise(self, msg: str, prereq: bool = False,
              ecode: str | None = None) -> None:
        """Raise OpPrereqError (prereq) or OpExecError if the call failed.

        The message is ``"msg: fail_msg"``; an empty ``msg`` gets a generic
        one naming the call and the node.
        """
        if self.fail_msg is None:
            return
        if not msg:
            msg = "Call '%s' to node '%s' has failed" % (self.call, self.node)
        text = "%s: %s" % (msg, self.fail_msg)
        errcls = errors.OpPrereqError if prereq else errors.OpExecError
        if ecode is not None:
            raise errcls(text, ecode)
        raise errcls(text)

    def __repr__(self) -> str:
        state = "ok" if self.fail_msg is None else repr(self.fail_msg)
        return "<RpcResult %s@%s: %s>" % (self.call, self.node, state)


class _Session:
    """A multi handle (owning a connection cache) and idle easy handles."""

    def __init__(self):
        self.multi = pycurl.CurlMulti()
        self.multi.setopt(pycurl.M_MAXCONNECTS, _MAX_CACHED_CONNECTIONS)
        self._idle: dict[tuple[str, int], list[pycurl.Curl]] = {}

    def GetHandle(self, address: tuple[str, int]) -> pycurl.Curl | None:
        handles = self._idle.get(address)
        return handles.pop() if handles else None

    def PutHandle(self, address: tuple[str, int], curl: pycurl.Curl) -> None:
        self._idle.setdefault(address, []).append(curl)

    def close(self) -> None:
        for handles in self._idle.values():
            for curl in handles:
                curl.close()
        self._idle.clear()
        self.multi.close()


class _Request:
    """One HTTP request of a call, and what came back."""

    def __init__(self, key: str, node: str, address: tuple[str, int],
                 curl: pycurl.Curl, repeatable: bool):
        self.key = key
        self.node = node
        self.address = address
        self.curl = curl
        self.repeatable = repeatable
        self.body = io.BytesIO()
        self.error: tuple[int, str] | None = None


class RpcClient:
    """Sends node RPC requests over HTTPS; safe to use from many threads."""

    def __init__(self, cert_file: str | None,
                 connect_timeout: float = constants.RPC_CONNECT_TIMEOUT,
                 pinned_key: str | None = None):
        """``pinned_key`` (instead of ``cert_file``) trusts exactly the
        server key with that pin (x509.GetPublicKeyPin) and presents no
        client certificate: the join of a new node."""
        if (cert_file is None) == (pinned_key is None):
            raise errors.ProgrammerError("Give either a certificate or a"
                                         " pinned key")
        self._cert_file = cert_file
        self._pinned_key = pinned_key
        self._connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._sessions: list[_Session] = []
        self._closed = False
        self._connections_opened = 0

    @property
    def connections_opened(self) -> int:
        """How many TCP connections were made so far (keep-alive check)."""
        with self._lock:
            return self._connections_opened

    def close(self) -> None:
        """Close the idle connections; calls in progress are not affected."""
        with self._lock:
            sessions, self._sessions = self._sessions, []
            self._closed = True
        for session in sessions:
            session.close()

    def _AcquireSession(self) -> _Session:
        with self._lock:
            if self._sessions:
                return self._sessions.pop()
        return _Session()

    def _ReleaseSession(self, session: _Session) -> None:
        with self._lock:
            if not self._closed:
                self._sessions.append(session)
                return
        session.close()

    def _NewHandle(self) -> pycurl.Curl:
        curl = pycurl.Curl()
        curl.setopt(pycurl.NOSIGNAL, 1)
        curl.setopt(pycurl.PROXY, "")
        curl.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        if self._pinned_key is not None:
            # The pin is checked even though the (self-signed) chain is not
            curl.setopt(pycurl.PINNEDPUBLICKEY, "sha256//" + self._pinned_key)
            curl.setopt(pycurl.SSL_VERIFYPEER, 0)
        else:
            curl.setopt(pycurl.SSLCERTTYPE, "PEM")
            curl.setopt(pycurl.SSLCERT, self._cert_file)
            curl.setopt(pycurl.SSLKEYTYPE, "PEM")
            curl.setopt(pycurl.SSLKEY, self._cert_file)
            curl.setopt(pycurl.CAINFO, self._cert_file)
            curl.setopt(pycurl.CAPATH, None)
            curl.setopt(pycurl.SSL_VERIFYPEER, 1)
        curl.setopt(pycurl.SSL_VERIFYHOST, 0)
        curl.setopt(pycurl.MAXAGE_CONN, _MAX_CONNECTION_AGE)
        curl.setopt(pycurl.CONNECTTIMEOUT_MS,
                    int(self._connect_timeout * 1000))
        curl.setopt(pycurl.POST, 1)
        return curl

    def Call(self, procedure: str,
             nodes: Iterable[tuple[str, str, str | None, bool]],
             port: int, body: bytes, read_timeout: float,
             repeatable: bool = False) -> dict[str, RpcResult]:
        """POST ``body`` to ``/procedure`` on every node, in parallel.

        ``nodes`` holds ``(key, name, ip, offline)``: results are keyed by
        ``key``, ``name`` is used in messages. Offline nodes and nodes
        without address are not contacted. ``read_timeout`` bounds the
        whole request, in seconds.

        libcurl sends a request again, unasked, when a reused connection
        closes before any answer, and the node may have run it already. So
        every request of a call that is not ``repeatable``
        (rpc_defs.RpcCall.repeatable) carries a call id of its own
        (constants.RPC_CALL_ID_HEADER): the node runs an id once and
        refuses it when it comes again, which makes such a re-sent request
        the call's failure while all calls keep their connections alive.
        """
        results: dict[str, RpcResult] = {}
        pending = []
        for key, name, ip, offline in nodes:
            if offline:
                results[key] = RpcResult(offline=True, call=procedure,
                                         node=name)
            elif not ip:
                results[key] = RpcResult(
                    data="No address known for node %s" % name, failed=True,
                    call=procedure, node=name)
            else:
                pending.append((key, name, (ip, port)))
        if not pending:
            return results

        session = self._AcquireSession()
        try:
            requests = []
            for key, name, address in pending:
                curl = session.GetHandle(address) or self._NewHandle()
                req = _Request(key, name, address, curl, repeatable)
                url = "https://%s/%s" % (netutils.FormatAddress(address),
                                         procedure)
                curl.setopt(pycurl.URL, url)
                headers = _BASE_HEADERS
                if not repeatable:
                    headers = headers + ["%s: %s" % (
                        constants.RPC_CALL_ID_HEADER, uuid.uuid4().hex)]
                curl.setopt(pycurl.HTTPHEADER, headers)
                curl.setopt(pycurl.POSTFIELDS, body)
                curl.setopt(pycurl.TIMEOUT_MS, max(int(read_timeout * 1000),
                                                   1))
                curl.setopt(pycurl.WRITEFUNCTION, req.body.write)
                requests.append(req)
            self._Perform(session.multi, requests)
            connects = 0
            for req in requests:
                results[req.key] = self._MakeResult(procedure, req)
                connects += req.curl.getinfo(pycurl.NUM_CONNECTS)
                req.curl.setopt(pycurl.WRITEFUNCTION, _Discard)
                session.PutHandle(req.address, req.curl)
            with self._lock:
                self._connections_opened += connects
        except BaseException:
            session.close()
            raise
        self._ReleaseSession(session)
        return results

    @staticmethod
    def _Perform(multi: pycurl.CurlMulti, requests: list[_Request]) -> None:
        by_handle = {id(req.curl): req for req in requests}
        for req in requests:
            multi.add_handle(req.curl)
        try:
            remaining = len(requests)
            while remaining:
                ret, remaining = multi.perform()
                if ret == pycurl.E_CALL_MULTI_PERFORM:
                    continue
                if not remaining:
                    break
                # libcurl checks its timeouts only when called, so wake up
                # when the next one is due
                due_ms = multi.timeout()
                wait = (_SELECT_TIMEOUT if due_ms < 0
                        else min(due_ms / 1000.0, _SELECT_TIMEOUT))
                # select returns at once while libcurl has no socket to wait
                # on (e.g. between a dead kept-alive connection and its
                # replacement); don't spin then
                if multi.select(wait) <= 0 and not any(multi.fdset()):
                    time.sleep(min(wait, _IDLE_SLEEP))
            while True:
                queued, _, failed = multi.info_read()
                for curl, errno, errmsg in failed:
                    by_handle[id(curl)].error = (errno, errmsg)
                if not queued:
                    break
        finally:
            for req in requests:
                multi.remove_handle(req.curl)

    @staticmethod
    def _MakeResult(procedure: str, req: _Request) -> RpcResult:
        where = "%s (%s)" % (req.node, netutils.FormatAddress(req.address))

        def _Fail(msg):
            logging.warning("RPC %s to node %s failed: %s", procedure,
                            req.node, msg)
            return RpcResult(data=msg, failed=True, call=procedure,
                             node=req.node)

        if req.error is not None:
            errno, errmsg = req.error
            if errno == pycurl.E_OPERATION_TIMEDOUT:
                return _Fail("Node %s timed out: %s" % (where, errmsg))
            if not req.repeatable and errno in _BROKEN_CONNECTION_ERRORS:
                return _Fail("Connection to node %s broke before an answer"
                             " (%s, curl error %d); the call may have run"
                             " on the node and was not repeated" %
                             (where, errmsg, errno))
            return _Fail("Error while talking to node %s: %s (curl error"
                         " %d)" % (where, errmsg, errno))
        status = req.curl.getinfo(pycurl.RESPONSE_CODE)
        body = req.body.getvalue()
        if status != 200:
            text = body[:_ERROR_BODY_LIMIT].decode("utf-8", "replace").strip()
            return _Fail("Node %s answered HTTP %d: %s" % (where, status,
                                                           text))
        try:
            data = serializer.LoadJson(body)
        except (ValueError, UnicodeDecodeError) as err:
            return _Fail("Invalid response from node %s: %s" % (where, err))
        return RpcResult(data=data, call=procedure, node=req.node)


def _Discard(_data: bytes) -> None:
    """Write callback of idle handles, so they don't keep a buffer alive."""
