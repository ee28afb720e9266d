"""LUXI: the local protocol between clients and the master daemon.

Messages are UTF-8 JSON documents each terminated by ETX (``\\x03``), sent
over a Unix stream socket; one connection carries any number of
request/response pairs in sequence. This matches Ganeti's wire format, so
tools written against Ganeti's LUXI keep working.

The request/response helpers and :class:`MessageStream` are shared by the
client below and the master daemon's server.
"""

import errno
import logging
import os
import select
import socket
from typing import Any, Iterator, Sequence

from ganeti import constants, errors, pathutils, serializer

KEY_METHOD = "method"
KEY_ARGS = "args"
KEY_SUCCESS = "success"
KEY_RESULT = "result"
KEY_VERSION = "version"

REQ_SUBMIT_JOB = "SubmitJob"
REQ_SUBMIT_JOB_TO_DRAINED_QUEUE = "SubmitJobToDrainedQueue"
REQ_SUBMIT_MANY_JOBS = "SubmitManyJobs"
REQ_PICKUP_JOB = "PickupJob"
REQ_WAIT_FOR_JOB_CHANGE = "WaitForJobChange"
REQ_CANCEL_JOB = "CancelJob"
REQ_ARCHIVE_JOB = "ArchiveJob"
REQ_CHANGE_JOB_PRIORITY = "ChangeJobPriority"
REQ_AUTO_ARCHIVE_JOBS = "AutoArchiveJobs"
REQ_QUERY = "Query"
REQ_QUERY_FIELDS = "QueryFields"
REQ_QUERY_JOBS = "QueryJobs"
REQ_QUERY_FILTERS = "QueryFilters"
REQ_REPLACE_FILTER = "ReplaceFilter"
REQ_DELETE_FILTER = "DeleteFilter"
REQ_QUERY_PLACEMENT_STATE = "QueryPlacementState"
REQ_SET_PLACEMENT_STATE = "SetPlacementState"
REQ_QUERY_INSTANCES = "QueryInstances"
REQ_QUERY_NODES = "QueryNodes"
REQ_QUERY_GROUPS = "QueryGroups"
REQ_QUERY_NETWORKS = "QueryNetworks"
REQ_QUERY_EXPORTS = "QueryExports"
REQ_QUERY_CONFIG_VALUES = "QueryConfigValues"
REQ_QUERY_CLUSTER_INFO = "QueryClusterInfo"
REQ_QUERY_TAGS = "QueryTags"
REQ_SET_DRAIN_FLAG = "SetDrainFlag"
REQ_SET_WATCHER_PAUSE = "SetWatcherPause"
# ganeti-maintd's state, kept in the configuration's maintenance section
REQ_SET_MAINTENANCE_STATE = "SetMaintenanceState"

REQ_ALL = frozenset([
    REQ_SUBMIT_JOB, REQ_SUBMIT_JOB_TO_DRAINED_QUEUE, REQ_SUBMIT_MANY_JOBS,
    REQ_PICKUP_JOB, REQ_WAIT_FOR_JOB_CHANGE, REQ_CANCEL_JOB, REQ_ARCHIVE_JOB,
    REQ_CHANGE_JOB_PRIORITY, REQ_AUTO_ARCHIVE_JOBS, REQ_QUERY,
    REQ_QUERY_FIELDS, REQ_QUERY_JOBS, REQ_QUERY_FILTERS, REQ_REPLACE_FILTER,
    REQ_DELETE_FILTER, REQ_QUERY_PLACEMENT_STATE, REQ_SET_PLACEMENT_STATE,
    REQ_QUERY_INSTANCES, REQ_QUERY_NODES,
    REQ_QUERY_GROUPS, REQ_QUERY_NETWORKS, REQ_QUERY_EXPORTS,
    REQ_QUERY_CONFIG_VALUES, REQ_QUERY_CLUSTER_INFO, REQ_QUERY_TAGS,
    REQ_SET_DRAIN_FLAG, REQ_SET_WATCHER_PAUSE, REQ_SET_MAINTENANCE_STATE,
])

# Environment variable overriding the client's default socket
ENV_FORCE_SOCKET = "FORCE_LUXI_SOCKET"
FORCE_SOCKET_MASTER = "master"
FORCE_SOCKET_QUERY = "query"

# Server-side wait limit; longer waits could outlast the client's read timeout
WFJC_TIMEOUT = constants.LUXI_WFJC_TIMEOUT

_RECV_SIZE = 64 * 1024


def _StripEom(msg: bytes) -> bytes:
    # Accept a message with its terminator still attached, so callers that
    # kept the ETX (or read it with their own code) need not strip it.
    if msg.endswith(constants.LUXI_EOM):
        return msg[:-len(constants.LUXI_EOM)]
    return msg


def _Serialize(data: dict) -> bytes:
    msg = serializer.DumpJsonBytes(data)
    if constants.LUXI_EOM in msg:
        # JSON escapes control characters, so this means a serializer bug
        raise errors.ProtocolError("Message contains the end-of-message"
                                   " character")
    return msg


def FormatRequest(method: str, args: Sequence | None,
                  version: int | None = None) -> bytes:
    """Encode a request (without the ETX terminator)."""
    request: dict[str, Any] = {KEY_METHOD: method,
                               KEY_ARGS: list(args or [])}
    if version is not None:
        request[KEY_VERSION] = version
    return _Serialize(request)


def ParseRequest(msg: bytes) -> tuple[str, list, int | None]:
    """Decode a request into ``(method, args, version)``.

    Raises ProtocolError for anything that is not a well-formed request, so
    the server can answer with a plain error string as Ganeti's does.
    """
    try:
        request = serializer.LoadJson(_StripEom(msg))
    except (ValueError, UnicodeDecodeError) as err:
        raise errors.ProtocolError("Invalid LUXI request (parsing error): %s"
                                   % err) from err
    if not isinstance(request, dict):
        raise errors.ProtocolError("Invalid LUXI request (not a dict)")
    method = request.get(KEY_METHOD)
    args = request.get(KEY_ARGS)
    version = request.get(KEY_VERSION)
    if method is None or args is None:
        raise errors.ProtocolError("Invalid LUXI request (no method or"
                                   " arguments in request): %r" % msg[:200])
    if not isinstance(method, str):
        raise errors.ProtocolError("Invalid LUXI request (method is not a"
                                   " string): %r" % (method,))
    if not isinstance(args, list):
        raise errors.ProtocolError("Invalid LUXI request (arguments are not"
                                   " a list): %r" % (args,))
    return method, args, version


def FormatResponse(success: bool, result: Any,
                   version: int | None = None) -> bytes:
    """Encode a response (without the ETX terminator)."""
    response = {KEY_SUCCESS: bool(success), KEY_RESULT: result}
    if version is not None:
        response[KEY_VERSION] = version
    return _Serialize(response)


def ParseResponse(msg: bytes) -> tuple[bool, Any, int | None]:
    """Decode a response into ``(success, result, version)``."""
    try:
        # The master daemon's answer: trusted, and possibly very large
        data = serializer.LoadJson(_StripEom(msg), check_depth=False)
    except (ValueError, UnicodeDecodeError) as err:
        raise errors.ProtocolError("Error while deserializing response: %s"
                                   % err) from err
    if not (isinstance(data, dict) and KEY_SUCCESS in data and
            KEY_RESULT in data):
        raise errors.ProtocolError("Invalid response from server: %r" %
                                   (data,))
    return data[KEY_SUCCESS], data[KEY_RESULT], data.get(KEY_VERSION)


def FormatErrorResponse(err: BaseException) -> bytes:
    """Encode a failure response carrying ``err`` the way clients decode it.

    Ganeti errors travel as ``[class, args]`` so the client re-raises the
    same class; anything else becomes a plain message.
    """
    if isinstance(err, errors.GenericError):
        return FormatResponse(False, errors.EncodeException(err))
    return FormatResponse(False, str(err))


class MessageStream:
    """ETX-delimited message framing over a stream socket.

    Usable both blocking (``ReadMessage``/``WriteMessage`` on a socket) and
    from an event loop (``Feed`` with bytes read elsewhere). A message (or an
    unterminated partial one) longer than ``max_size`` raises ProtocolError;
    the stream is then out of sync and the connection should be closed.
    """

    def __init__(self, sock: socket.socket | None = None,
                 max_size: int | None = constants.LUXI_MAX_MESSAGE_SIZE):
        self.sock = sock
        self.max_size = max_size
        self._buffer = bytearray()
        self._messages: list[bytes] = []
        # Where the scan for the next ETX resumes (avoids rescanning)
        self._scan_pos = 0

    def Feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return the messages completed by them."""
        self._buffer.extend(data)
        result = []
        eom = constants.LUXI_EOM
        while True:
            idx = self._buffer.find(eom, self._scan_pos)
            if idx < 0:
                self._scan_pos = len(self._buffer)
                break
            msg = bytes(self._buffer[:idx])
            del self._buffer[:idx + len(eom)]
            self._scan_pos = 0
            self._CheckSize(len(msg))
            result.append(msg)
        self._CheckSize(len(self._buffer))
        return result

    def _CheckSize(self, size: int) -> None:
        if self.max_size is not None and size > self.max_size:
            self._buffer.clear()
            self._scan_pos = 0
            raise errors.ProtocolError("LUXI message too large (more than %d"
                                       " bytes)" % self.max_size)

    def HasPartialMessage(self) -> bool:
        """Whether bytes of an unterminated message are buffered."""
        return bool(self._buffer)

    def ReadMessage(self) -> bytes | None:
        """Block until one message is complete; None on a clean EOF.

        EOF in the middle of a message raises ConnectionClosedError and a
        socket timeout raises errors.TimeoutError.
        """
        assert self.sock is not None, "ReadMessage needs a socket"
        while not self._messages:
            try:
                data = self.sock.recv(_RECV_SIZE)
            except socket.timeout as err:
                raise errors.TimeoutError("Receive timeout: %s" % err) from err
            except OSError as err:
                if err.errno in (errno.ECONNRESET, errno.EPIPE):
                    raise errors.ConnectionClosedError(
                        "Connection reset by peer") from err
                raise
            if not data:
                if self._buffer:
                    raise errors.ConnectionClosedError(
                        "Connection closed in the middle of a message")
                return None
            self._messages.extend(self.Feed(data))
        return self._messages.pop(0)

    def WriteMessage(self, msg: bytes) -> None:
        """Send one message followed by its terminator."""
        assert self.sock is not None, "WriteMessage needs a socket"
        if constants.LUXI_EOM in msg:
            raise errors.ProtocolError("Message contains the end-of-message"
                                       " character")
        try:
            self.sock.sendall(msg + constants.LUXI_EOM)
        except socket.timeout as err:
            raise errors.TimeoutError("Sending timeout: %s" % err) from err
        except OSError as err:
            if err.errno in (errno.ECONNRESET, errno.EPIPE):
                raise errors.ConnectionClosedError(
                    "Connection closed by peer") from err
            raise

    def __iter__(self) -> Iterator[bytes]:
        """Yield messages until the peer closes the connection."""
        while True:
            msg = self.ReadMessage()
            if msg is None:
                return
            yield msg


def GetDefaultAddress() -> str:
    """The socket a client uses when given none (``FORCE_LUXI_SOCKET``)."""
    override = os.environ.get(ENV_FORCE_SOCKET, "")
    if override == FORCE_SOCKET_MASTER:
        return pathutils.MASTER_SOCKET
    if override == FORCE_SOCKET_QUERY:
        return pathutils.QUERY_SOCKET
    if override:
        return override
    return pathutils.MASTER_SOCKET


def _EncodeOp(op: Any) -> dict:
    if isinstance(op, dict):
        return op
    state = op.__getstate__()
    if not isinstance(state, dict):
        raise errors.ProgrammerError("Opcode %r does not serialize to a dict"
                                     % (op,))
    return state


def _EncodeOps(ops: Sequence) -> list[dict]:
    return [_EncodeOp(op) for op in ops]


def _JobId(job_id: Any) -> int:
    try:
        return int(job_id)
    except (TypeError, ValueError) as err:
        raise errors.OpPrereqError("Invalid job ID '%s'" % (job_id,),
                                   errors.ECODE_INVAL) from err


class Client:
    """LUXI client keeping one connection open across calls.

    Not thread-safe: use one client per thread. A connection the server
    closed while idle is re-opened transparently; a failure after a request
    was sent is reported, not retried, since the request may have been
    executed (e.g. a job submitted).
    """

    def __init__(self, address: str | None = None,
                 connect_timeout: float = constants.LUXI_DEF_CTMO,
                 rw_timeout: float = constants.LUXI_DEF_RWTO):
        self.address = address if address is not None else \
            GetDefaultAddress()
        self.connect_timeout = connect_timeout
        self.rw_timeout = rw_timeout
        self._stream: MessageStream | None = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *_) -> None:
        self.Close()

    def Close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        if self._stream is not None:
            sock = self._stream.sock
            self._stream = None
            if sock is not None:
                sock.close()

    def _Connect(self) -> MessageStream:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.connect_timeout)
            sock.connect(self.address)
        except socket.timeout as err:
            sock.close()
            raise errors.TimeoutError("Connection to %s timed out" %
                                      self.address) from err
        except OSError as err:
            sock.close()
            if err.errno in (errno.ENOENT, errno.ECONNREFUSED,
                             errno.ENOTDIR):
                raise errors.NoMasterError(self.address) from err
            if err.errno == errno.EACCES:
                raise errors.PermissionError(self.address) from err
            raise errors.ProtocolError("Can't connect to %s: %s" %
                                       (self.address, err)) from err
        sock.settimeout(self.rw_timeout)
        # Responses can be large (job lists); the server limits requests
        return MessageStream(sock, max_size=None)

    @staticmethod
    def _IsAlive(stream: MessageStream) -> bool:
        """Whether an idle connection is still usable.

        Between responses nothing should be readable: readable means the
        server closed the connection (EOF) or sent unsolicited data.
        ``select`` is used because a socket with a timeout waits for data
        in recv() even with MSG_DONTWAIT.
        """
        if stream.sock is None:
            return False
        try:
            readable, _, _ = select.select([stream.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def _Call(self, request: bytes) -> bytes:
        if self._stream is not None and not self._IsAlive(self._stream):
            logging.debug("LUXI connection to %s was closed, reconnecting",
                          self.address)
            self.Close()
        fresh = self._stream is None
        stream = self._stream
        if stream is None:
            stream = self._stream = self._Connect()
        try:
            try:
                stream.WriteMessage(request)
            except errors.ConnectionClosedError:
                if fresh:
                    raise
                # The server dropped the old connection; nothing was read
                self.Close()
                stream = self._stream = self._Connect()
                stream.WriteMessage(request)
            response = stream.ReadMessage()
        except BaseException:
            self.Close()
            raise
        if response is None:
            self.Close()
            raise errors.ConnectionClosedError("Connection closed by the"
                                               " server before answering")
        return response

    def CallMethod(self, method: str, args: Sequence) -> Any:
        """Send one request and return its result or raise its error."""
        version = constants.LUXI_VERSION
        response = self._Call(FormatRequest(method, args, version=version))
        success, result, resp_version = ParseResponse(response)
        if resp_version is not None and resp_version != version:
            raise errors.LuxiError("LUXI version mismatch, client %s,"
                                   " response %s" % (version, resp_version))
        if success:
            return result
        errors.MaybeRaise(result)
        raise errors.RequestError(result)

    # Jobs

    def SetQueueDrainFlag(self, drain_flag: bool) -> bool:
        return self.CallMethod(REQ_SET_DRAIN_FLAG, [bool(drain_flag)])

    def SetWatcherPause(self, until: float | None) -> Any:
        return self.CallMethod(REQ_SET_WATCHER_PAUSE, [until])

    def SetMaintenanceState(self, state: dict[str, Any]) -> Any:
        """Store maintd's state fields (objects.Maintenance.STATE_FIELDS)
        in the configuration."""
        return self.CallMethod(REQ_SET_MAINTENANCE_STATE, [state])

    def PickupJob(self, job_id: int | str) -> Any:
        return self.CallMethod(REQ_PICKUP_JOB, [_JobId(job_id)])

    def SubmitJob(self, ops: Sequence) -> int:
        return self.CallMethod(REQ_SUBMIT_JOB, [_EncodeOps(ops)])

    def SubmitJobToDrainedQueue(self, ops: Sequence) -> int:
        return self.CallMethod(REQ_SUBMIT_JOB_TO_DRAINED_QUEUE,
                               [_EncodeOps(ops)])

    def SubmitManyJobs(self, jobs: Sequence[Sequence]) -> list:
        return self.CallMethod(REQ_SUBMIT_MANY_JOBS,
                               [[_EncodeOps(ops) for ops in jobs]])

    def CancelJob(self, job_id: int | str, kill: bool = False) -> list:
        return self.CallMethod(REQ_CANCEL_JOB, [_JobId(job_id), bool(kill)])

    def ArchiveJob(self, job_id: int | str) -> bool:
        return self.CallMethod(REQ_ARCHIVE_JOB, [_JobId(job_id)])

    def ChangeJobPriority(self, job_id: int | str, priority: int) -> list:
        return self.CallMethod(REQ_CHANGE_JOB_PRIORITY,
                               [_JobId(job_id), priority])

    def AutoArchiveJobs(self, age: float,
                        timeout: float = WFJC_TIMEOUT) -> list:
        return self.CallMethod(REQ_AUTO_ARCHIVE_JOBS, [age, timeout])

    def WaitForJobChangeOnce(self, job_id: int | str, fields: list[str],
                             prev_job_info: list | None,
                             prev_log_serial: int | None,
                             timeout: float = WFJC_TIMEOUT) -> Any:
        """One wait: ``[job_info, log_entries]`` or ``"nochange"``."""
        timeout = min(timeout, WFJC_TIMEOUT)
        return self.CallMethod(REQ_WAIT_FOR_JOB_CHANGE,
                               [_JobId(job_id), fields, prev_job_info,
                                prev_log_serial, timeout])

    def WaitForJobChange(self, job_id: int | str, fields: list[str],
                         prev_job_info: list | None,
                         prev_log_serial: int | None) -> Any:
        """Wait until the job changes, hiding ``"nochange"`` answers."""
        while True:
            result = self.WaitForJobChangeOnce(job_id, fields, prev_job_info,
                                               prev_log_serial)
            if result != constants.JOB_NOTCHANGED:
                return result

    def QueryJobs(self, job_ids: Sequence | None, fields: list[str]) -> list:
        if job_ids is not None:
            job_ids = [_JobId(i) for i in job_ids]
        return self.CallMethod(REQ_QUERY_JOBS, [job_ids, fields])

    # Queries

    def Query(self, what: str, fields: list[str],
              qfilter: list | None) -> dict:
        """Query2: ``{"fields": [fielddef...], "data": [[[rs, v]...]...]}``."""
        return self.CallMethod(REQ_QUERY, [what, fields, qfilter])

    def QueryFields(self, what: str, fields: list[str] | None) -> dict:
        return self.CallMethod(REQ_QUERY_FIELDS, [what, fields])

    def QueryInstances(self, names: list[str], fields: list[str],
                       use_locking: bool = False) -> list:
        return self.CallMethod(REQ_QUERY_INSTANCES,
                               [names, fields, use_locking])

    def QueryNodes(self, names: list[str], fields: list[str],
                   use_locking: bool = False) -> list:
        return self.CallMethod(REQ_QUERY_NODES, [names, fields, use_locking])

    def QueryGroups(self, names: list[str], fields: list[str],
                    use_locking: bool = False) -> list:
        return self.CallMethod(REQ_QUERY_GROUPS, [names, fields, use_locking])

    def QueryNetworks(self, names: list[str], fields: list[str],
                      use_locking: bool = False) -> list:
        return self.CallMethod(REQ_QUERY_NETWORKS,
                               [names, fields, use_locking])

    def QueryExports(self, nodes: list[str],
                     use_locking: bool = False) -> Any:
        return self.CallMethod(REQ_QUERY_EXPORTS, [nodes, use_locking])

    def QueryClusterInfo(self) -> dict:
        return self.CallMethod(REQ_QUERY_CLUSTER_INFO, [])

    def QueryConfigValues(self, fields: list[str]) -> list:
        return self.CallMethod(REQ_QUERY_CONFIG_VALUES, [fields])

    def QueryTags(self, kind: str, name: str | None) -> list[str]:
        return self.CallMethod(REQ_QUERY_TAGS, [kind, name])

    # Job filters

    def QueryFilters(self, uuids: list[str] | None,
                     fields: list[str]) -> list:
        return self.CallMethod(REQ_QUERY_FILTERS, [uuids, fields])

    def ReplaceFilter(self, uuid: str | None, priority: int,
                      predicates: list, action: Any, reason: list) -> str:
        return self.CallMethod(REQ_REPLACE_FILTER,
                               [uuid, priority, predicates, action, reason])

    def DeleteFilter(self, uuid: str) -> None:
        return self.CallMethod(REQ_DELETE_FILTER, [uuid])

    # The Placement API's state (ganeti.placement.store)

    def QueryPlacementState(self, known_serial: int | None) -> dict | None:
        return self.CallMethod(REQ_QUERY_PLACEMENT_STATE, [known_serial])

    def SetPlacementState(self, serial: int, data: dict) -> int:
        return self.CallMethod(REQ_SET_PLACEMENT_STATE, [serial, data])
