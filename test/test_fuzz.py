"""Property-based fuzzing of the parsers that take untrusted input.

LUXI requests, opcodes, query filters, RAPI bodies and noded requests:
whatever the input, the parser answers with its declared error class
(which the daemons turn into a client error), never with another
exception. Deterministic (derandomize) and bounded, so it fits in CI.
"""

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ganeti import errors, luxi, opcodes, qlang, rpc_defs, serializer
from ganeti.http import HttpException
from ganeti.rapi import baserlib
from ganeti.server import noded
from ganeti.server.rapi import RemoteApiHandler

_SETTINGS = settings(max_examples=150, deadline=1000, derandomize=True,
                     database=None,
                     suppress_health_check=[HealthCheck.too_slow])

_SCALARS = (st.none() | st.booleans() | st.integers() |
            st.floats(allow_nan=False, allow_infinity=False) | st.text())
# Any JSON value, a few levels deep
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) |
                     st.dictionaries(st.text(max_size=8), inner, max_size=4),
                     max_leaves=12)
# Text that is JSON-ish: valid documents, their fragments, hostile numbers
# and nesting, arbitrary bytes
_HOSTILE = st.sampled_from([b"1e400", b"-1e999", b"NaN", b"[Infinity]",
                            b"[" * 5000 + b"]" * 5000,
                            b'{"a":' * 3000 + b"1" + b"}" * 3000,
                            b"1" * 5000, b"\xff\xfe", b"", b"{", b'"\\ud800"'])
_BODIES = (_JSON.map(serializer.DumpJsonBytes) | _HOSTILE |
           st.binary(max_size=64) |
           st.tuples(_JSON, st.integers(0, 20)).map(
               lambda item: serializer.DumpJsonBytes(item[0])[:item[1]]))


@_SETTINGS
@given(_BODIES | st.builds(
    lambda method, args: serializer.DumpJsonBytes(
        {"method": method, "args": args}),
    st.sampled_from(sorted(luxi.REQ_ALL)) | st.text(max_size=8), _JSON))
def test_luxi_request_parser(msg: bytes) -> None:
    try:
        method, args, _ = luxi.ParseRequest(msg)
    except errors.ProtocolError:
        return
    assert isinstance(method, str) and isinstance(args, list)


def _OpData() -> Any:
    """Wire dicts of real opcodes, parameters set to arbitrary values."""
    def build(op_id: str, values: list) -> dict:
        params = [p[0] for p in opcodes.OP_MAPPING[op_id].GetAllParams()]
        data: dict = dict(zip(params, values))
        data["OP_ID"] = op_id
        return data
    return st.builds(build, st.sampled_from(sorted(opcodes.OP_MAPPING)),
                     st.lists(_JSON, max_size=6))


@_SETTINGS
@given(_OpData() | _JSON)
def test_opcode_validator(data: Any) -> None:
    try:
        op = opcodes.OpCode.LoadOpCode(data)
        op.Validate(True)
    except errors.OpPrereqError:
        return
    # A valid opcode goes to job files and queries: it must serialize
    serializer.DumpJson(op.RedactedState())


_FILTER_WORDS = st.sampled_from(["name", "=", "==", "!=", "=~", "and", "or",
                                 "not", "in", "(", ")", "[", "]", "/x/",
                                 '"a"', "1", "-1", "1.5", "true", "!"])


@_SETTINGS
@given(st.text(max_size=40) |
       st.lists(_FILTER_WORDS, max_size=12).map(" ".join) |
       st.integers(1, 400).map(lambda n: "(" * n + "name == 1" + ")" * n))
def test_query_language_parser(text: str) -> None:
    try:
        result = qlang.ParseFilter(text)
    except errors.QueryFilterParseError:
        return
    assert isinstance(result, list)


_CONTENT_TYPES = st.sampled_from(["application/json",
                                  "application/json; charset=utf-8",
                                  "text/plain", ""])


@_SETTINGS
@given(_CONTENT_TYPES, _BODIES)
def test_rapi_body_parsing(content_type: str, body: bytes) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    try:
        data = RemoteApiHandler._ParseBody(headers, body)
    except HttpException:
        return
    # The body then fills an opcode: only a 400 may come of it
    try:
        baserlib.FillOpcode(opcodes.OpGroupAdd, data, None)
    except HttpException as err:
        assert err.code == 400


@_SETTINGS
@given(st.sampled_from(["POST", "GET", "PUT"]),
       st.sampled_from(["/version", "/upload_file", "/nosuch", "", "x"]) |
       st.text(max_size=12), _BODIES)
def test_noded_request_parser(method: str, path: str, body: bytes) -> None:
    try:
        call, args = noded._ParseRequest(rpc_defs.CALLS_BY_NAME, method,
                                         path, body)
    except HttpException as err:
        assert err.code in (400, 404, 405)
        return
    assert isinstance(args, list) and call.name == path[1:]
