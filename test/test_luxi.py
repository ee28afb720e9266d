"""Tests for ganeti.luxi: framing, request/response encoding and the client.

The client tests talk to a real Unix-socket server running in a thread
(testutils_luxi), which uses the same MessageStream and
ParseRequest/FormatResponse helpers as the master daemon.
"""

import os
import socket
import threading
import time

import pytest

from ganeti import constants, errors, luxi, opcodes, pathutils, serializer

import testutils_luxi
from testutils_luxi import RawResponse

pytestmark = pytest.mark.integration


# Encoding --------------------------------------------------------------------

def test_request_round_trip():
    msg = luxi.FormatRequest(luxi.REQ_QUERY, ["job", ["id"], None],
                             version=constants.LUXI_VERSION)
    assert isinstance(msg, bytes)
    assert constants.LUXI_EOM not in msg
    assert luxi.ParseRequest(msg) == ("Query", ["job", ["id"], None],
                                      constants.LUXI_VERSION)


def test_request_without_version_and_unicode():
    msg = luxi.FormatRequest("QueryTags", ["node", "n\u00f6de1"])
    assert b'"version"' not in msg
    assert luxi.ParseRequest(msg) == ("QueryTags", ["node", "n\u00f6de1"],
                                      None)


def test_request_wire_form():
    # The exact keys Ganeti's luxid expects
    data = serializer.LoadJson(luxi.FormatRequest("SubmitJob", [[]], 7))
    assert data == {"method": "SubmitJob", "args": [[]], "version": 7}


def test_parse_request_accepts_trailing_terminator():
    msg = luxi.FormatRequest("QueryClusterInfo", []) + constants.LUXI_EOM
    assert luxi.ParseRequest(msg)[0] == "QueryClusterInfo"


@pytest.mark.parametrize("msg", [
    b"not json",
    b"\xff\xfe",
    b"[1, 2]",
    b'"just a string"',
    b'{"args": []}',
    b'{"method": "Query"}',
    b'{"method": "Query", "args": null}',
    b'{"method": "Query", "args": {"a": 1}}',
    b'{"method": "Query", "args": "x"}',
    b'{"method": 5, "args": []}',
])
def test_parse_request_malformed(msg):
    with pytest.raises(errors.ProtocolError):
        luxi.ParseRequest(msg)


def test_response_round_trip():
    msg = luxi.FormatResponse(True, {"fields": [], "data": []})
    assert serializer.LoadJson(msg) == {"success": True,
                                        "result": {"fields": [], "data": []}}
    assert luxi.ParseResponse(msg) == (True, {"fields": [], "data": []},
                                       None)
    msg = luxi.FormatResponse(False, "boom", version=3)
    assert luxi.ParseResponse(msg) == (False, "boom", 3)


@pytest.mark.parametrize("msg", [
    b"{", b"[]", b'{"success": true}', b'{"result": 1}',
])
def test_parse_response_malformed(msg):
    with pytest.raises(errors.ProtocolError):
        luxi.ParseResponse(msg)


def test_error_response_encodes_ganeti_errors():
    err = errors.OpPrereqError("no such node", errors.ECODE_NOENT)
    success, result, _ = luxi.ParseResponse(luxi.FormatErrorResponse(err))
    assert not success
    assert result == ["OpPrereqError", ["no such node", "unknown_entity"]]
    success, result, _ = luxi.ParseResponse(
        luxi.FormatErrorResponse(ValueError("plain")))
    assert (success, result) == (False, "plain")


def test_control_characters_are_escaped():
    # A payload with ETX must not break the framing
    msg = luxi.FormatRequest("QueryTags", ["node", "a\x03b"])
    assert constants.LUXI_EOM not in msg
    assert luxi.ParseRequest(msg)[1] == ["node", "a\x03b"]


def test_request_methods_list():
    assert len(luxi.REQ_ALL) == 28
    assert luxi.REQ_SET_DRAIN_FLAG == "SetDrainFlag"
    assert luxi.REQ_SUBMIT_JOB == "SubmitJob"
    assert luxi.REQ_WAIT_FOR_JOB_CHANGE == "WaitForJobChange"


# Framing ---------------------------------------------------------------------

def test_stream_feed_splits_and_joins_chunks():
    stream = luxi.MessageStream()
    assert stream.Feed(b"ab") == []
    assert stream.HasPartialMessage()
    assert stream.Feed(b"c\x03de\x03f") == [b"abc", b"de"]
    assert stream.Feed(b"\x03") == [b"f"]
    assert not stream.HasPartialMessage()
    assert stream.Feed(b"\x03\x03") == [b"", b""]


def test_stream_feed_byte_by_byte():
    stream = luxi.MessageStream()
    data = luxi.FormatRequest("Query", ["node", ["name"], None]) + b"\x03"
    messages = []
    for byte in data:
        messages.extend(stream.Feed(bytes([byte])))
    assert [luxi.ParseRequest(m)[0] for m in messages] == ["Query"]


def test_stream_refuses_oversized_messages():
    stream = luxi.MessageStream(max_size=10)
    assert stream.Feed(b"0123456789\x03") == [b"0123456789"]
    with pytest.raises(errors.ProtocolError):
        stream.Feed(b"0123456789A\x03")
    # Without a terminator, buffering stops at the limit too
    stream = luxi.MessageStream(max_size=10)
    stream.Feed(b"01234")
    with pytest.raises(errors.ProtocolError):
        stream.Feed(b"567890")


def test_stream_default_limit():
    assert luxi.MessageStream().max_size == constants.LUXI_MAX_MESSAGE_SIZE


def test_stream_over_socket():
    left, right = socket.socketpair()
    with left, right:
        writer = luxi.MessageStream(left)
        reader = luxi.MessageStream(right)
        writer.WriteMessage(b"one")
        writer.WriteMessage(b"two")
        assert reader.ReadMessage() == b"one"
        assert reader.ReadMessage() == b"two"
        left.sendall(b"three\x03")
        left.shutdown(socket.SHUT_WR)
        assert list(reader) == [b"three"]
        assert reader.ReadMessage() is None


def test_stream_eof_inside_message():
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"partial")
        left.shutdown(socket.SHUT_WR)
        with pytest.raises(errors.ConnectionClosedError):
            luxi.MessageStream(right).ReadMessage()


def test_stream_read_timeout():
    left, right = socket.socketpair()
    with left, right:
        right.settimeout(0.05)
        with pytest.raises(errors.TimeoutError):
            luxi.MessageStream(right).ReadMessage()


def test_stream_refuses_terminator_in_payload():
    left, right = socket.socketpair()
    with left, right:
        with pytest.raises(errors.ProtocolError):
            luxi.MessageStream(left).WriteMessage(b"a\x03b")


# Client ----------------------------------------------------------------------

@pytest.fixture
def sock_path(tmp_path):
    return str(tmp_path / "luxi.sock")


@pytest.fixture
def server(sock_path):
    servers = []

    def make(handler, close_after=None):
        srv = testutils_luxi.LuxiServer(sock_path, handler,
                                        close_after=close_after)
        servers.append(srv)
        return srv
    yield make
    for srv in servers:
        srv.Stop()


def test_client_several_requests_one_connection(server, sock_path):
    srv = server(lambda method, args: [method, args])
    with luxi.Client(address=sock_path) as cl:
        assert cl.QueryClusterInfo() == ["QueryClusterInfo", []]
        assert cl.QueryTags("node", "n1") == ["QueryTags", ["node", "n1"]]
        assert cl.Query("job", ["id"], None) == \
            ["Query", ["job", ["id"], None]]
        assert cl.SetQueueDrainFlag(True) == ["SetDrainFlag", [True]]
    assert srv.connections == 1
    assert [r[2] for r in srv.requests] == [constants.LUXI_VERSION] * 4


def test_client_argument_encoding(server, sock_path):
    srv = server(lambda method, args: args)
    cl = luxi.Client(address=sock_path)
    op = opcodes.OpTestDelay(duration=1.5, on_master=False)
    (ops, ) = cl.SubmitJob([op, {"OP_ID": "OP_TEST_DELAY", "duration": 2}])
    assert ops[0] == {"OP_ID": "OP_TEST_DELAY", "duration": 1.5,
                      "on_master": False}
    assert ops[1] == {"OP_ID": "OP_TEST_DELAY", "duration": 2}
    (jobs, ) = cl.SubmitManyJobs([[op], [op, op]])
    assert [len(job) for job in jobs] == [1, 2]
    assert cl.CancelJob("12") == [12, False]
    assert cl.CancelJob(3, kill=True) == [3, True]
    assert cl.ArchiveJob("7") == [7]
    assert cl.ChangeJobPriority("8", -10) == [8, -10]
    assert cl.QueryJobs(["1", 2], ["status"]) == [[1, 2], ["status"]]
    assert cl.QueryJobs(None, ["id"]) == [None, ["id"]]
    assert cl.AutoArchiveJobs(3600) == [3600, constants.LUXI_WFJC_TIMEOUT]
    assert cl.WaitForJobChangeOnce(5, ["status"], None, None,
                                   timeout=1000) == \
        [5, ["status"], None, None, constants.LUXI_WFJC_TIMEOUT]
    assert cl.QueryFields("node", None) == ["node", None]
    assert cl.QueryConfigValues(["drain_flag"]) == [["drain_flag"]]
    assert cl.QueryNodes(["n1"], ["name"], False) == [["n1"], ["name"], False]
    assert cl.QueryExports(["n1"], False) == [["n1"], False]
    assert cl.SetWatcherPause(None) == [None]
    assert cl.ReplaceFilter(None, 0, [], "ACCEPT", []) == \
        [None, 0, [], "ACCEPT", []]
    assert cl.QueryFilters(None, ["uuid"]) == [None, ["uuid"]]
    assert cl.DeleteFilter("u") == ["u"]
    assert [r[0] for r in srv.requests] == [
        "SubmitJob", "SubmitManyJobs", "CancelJob", "CancelJob", "ArchiveJob",
        "ChangeJobPriority", "QueryJobs", "QueryJobs", "AutoArchiveJobs",
        "WaitForJobChange", "QueryFields", "QueryConfigValues", "QueryNodes",
        "QueryExports", "SetWatcherPause", "ReplaceFilter", "QueryFilters",
        "DeleteFilter"]
    with pytest.raises(errors.OpPrereqError):
        cl.CancelJob("not-a-number")
    cl.Close()


def test_client_reraises_encoded_errors(server, sock_path):
    def handler(method, args):
        if method == "SubmitJob":
            raise errors.JobQueueDrainError("Queue drained")
        raise errors.OpPrereqError("Unknown node", errors.ECODE_NOENT)
    server(handler)
    cl = luxi.Client(address=sock_path)
    with pytest.raises(errors.OpPrereqError) as info:
        cl.QueryTags("node", "x")
    assert info.value.args == ("Unknown node", errors.ECODE_NOENT)
    with pytest.raises(errors.JobQueueDrainError):
        cl.SubmitJob([])
    # The connection survives failed requests
    with pytest.raises(errors.OpPrereqError):
        cl.QueryClusterInfo()


def test_client_plain_error_and_version(server, sock_path):
    def handler(method, args):
        if method == "QueryTags":
            return RawResponse(luxi.FormatResponse(False, "Invalid request"))
        if method == "QueryClusterInfo":
            return RawResponse(luxi.FormatResponse(True, {}, version=1))
        return RawResponse(luxi.FormatResponse(
            True, "ok", version=constants.LUXI_VERSION))
    server(handler)
    cl = luxi.Client(address=sock_path)
    with pytest.raises(errors.RequestError):
        cl.QueryTags("cluster", None)
    with pytest.raises(errors.LuxiError):
        cl.QueryClusterInfo()
    assert cl.QueryConfigValues([]) == "ok"


def test_client_wait_for_job_change_hides_nochange(server, sock_path):
    answers = [constants.JOB_NOTCHANGED, constants.JOB_NOTCHANGED,
               [["running"], []]]
    server(lambda method, args: answers.pop(0))
    cl = luxi.Client(address=sock_path)
    assert cl.WaitForJobChange(1, ["status"], None, None) == \
        [["running"], []]
    assert not answers


def test_client_reconnects_after_server_closed_connection(server, sock_path):
    srv = server(lambda method, args: method, close_after=1)
    cl = luxi.Client(address=sock_path)
    for _ in range(3):
        assert cl.QueryClusterInfo() == "QueryClusterInfo"
        # The server closes after answering; a request racing with that
        # close is lost (the client cannot know if it was processed), so
        # give the close time to arrive before reusing the connection
        time.sleep(0.1)
    assert srv.connections == 3
    assert len(srv.requests) == 3


def test_client_connection_lost_while_waiting(sock_path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(errors.ConnectionClosedError):
            luxi.Client(address=sock_path).SubmitJob([])
    finally:
        thread.join(5)
        listener.close()


def test_client_read_timeout(sock_path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    listener.listen(1)
    try:
        cl = luxi.Client(address=sock_path, rw_timeout=0.1)
        with pytest.raises(errors.TimeoutError):
            cl.QueryClusterInfo()
    finally:
        listener.close()


def test_client_missing_socket(tmp_path):
    cl = luxi.Client(address=str(tmp_path / "nothing-here"))
    with pytest.raises(errors.NoMasterError):
        cl.QueryClusterInfo()


def test_client_refused_connection(sock_path):
    # A socket file nobody listens on
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(sock_path)
    sock.close()
    assert os.path.exists(sock_path)
    with pytest.raises(errors.NoMasterError):
        luxi.Client(address=sock_path).QueryClusterInfo()


def test_client_default_address(monkeypatch, tmp_path):
    monkeypatch.delenv(luxi.ENV_FORCE_SOCKET, raising=False)
    assert luxi.Client().address == pathutils.MASTER_SOCKET
    monkeypatch.setenv(luxi.ENV_FORCE_SOCKET, "query")
    assert luxi.Client().address == pathutils.QUERY_SOCKET
    monkeypatch.setenv(luxi.ENV_FORCE_SOCKET, "master")
    assert luxi.Client().address == pathutils.MASTER_SOCKET
    monkeypatch.setenv(luxi.ENV_FORCE_SOCKET, str(tmp_path / "s"))
    assert luxi.Client().address == str(tmp_path / "s")
    assert luxi.Client(address="/x").address == "/x"
