"""JSON serialization used on disk and on the wire.

One place decides the JSON dialect so that job files, config.data, LUXI and
RPC bodies stay byte-compatible with each other.
"""

import math
from typing import Any

import simplejson

from ganeti import errors
from ganeti.utils import gcpause


# Encoding a query answer (tens of thousands of small lists) is a good
# part of the cost of a bulk listing, and two of simplejson's defaults
# make it three times as slow: namedtuple_as_object looks up ``_asdict``
# on every list (no named tuple is ever serialized here), check_circular
# keeps a dict of the containers being encoded. Without that check a
# circular structure ends in a RecursionError, which _Encode turns into
# the ValueError simplejson raises for it. The text is the same.
_COMPACT = simplejson.JSONEncoder(separators=(",", ":"),
                                  namedtuple_as_object=False,
                                  check_circular=False)
_INDENTED = simplejson.JSONEncoder(indent=2, sort_keys=True,
                                   namedtuple_as_object=False,
                                   check_circular=False)


def _Encode(encoder: simplejson.JSONEncoder, data: Any) -> str:
    try:
        return encoder.encode(data)
    except RecursionError as err:
        raise ValueError("Circular reference detected") from err


def DumpJson(data: Any, indent: bool = False) -> str:
    """Serialize ``data``; compact unless ``indent`` (files admins read)."""
    if indent:
        return _Encode(_INDENTED, data) + "\n"
    return _Encode(_COMPACT, data)


def DumpJsonBytes(data: Any) -> bytes:
    """Serialize ``data`` to UTF-8 bytes (wire form)."""
    return _Encode(_COMPACT, data).encode("utf-8")


JSONDecodeError = simplejson.JSONDecodeError
"""What LoadJson raises for any input it refuses (a ValueError, which
LUXI, RAPI and noded answer as the client's error)."""

# Deepest nesting LoadJson accepts: far more than any document of ours has
# (config, job files, query filters), little enough that code walking a
# parsed value recursively stays clear of Python's recursion limit
MAX_DEPTH = 100


class _Refused(Exception):
    """A value the JSON grammar allows but Python cannot hold exactly."""


def _ParseFloat(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused("Number out of range: %s" % text[:40])
    return value


def _ParseConstant(name: str) -> float:
    raise _Refused("%s is not a JSON number" % name)


def _CheckDepth(data: Any, text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH.

    Level by level rather than recursively (the value may be deep), and
    with exact type tests: the parser only makes plain lists and dicts.
    """
    level = [data]
    for _ in range(MAX_DEPTH):
        below: list = []
        for value in level:
            below += [item for item in
                      (value.values() if type(value) is dict else value)
                      if type(item) is list or type(item) is dict]
        if not below:
            return
        level = below
    raise JSONDecodeError("Nesting deeper than %d levels" % MAX_DEPTH,
                          text, 0)


def LoadJson(text: str | bytes, check_depth: bool = True) -> Any:
    """Parse JSON text (str or UTF-8 bytes).

    Raises JSONDecodeError (or UnicodeDecodeError, also a ValueError) for
    anything but strict JSON: nesting deeper than MAX_DEPTH, and numbers
    that would become infinite or NaN, are refused here, before they can
    reach code that fails on them with an internal error. Checking the
    nesting of a large document walks all of it; ``check_depth=False``
    skips that walk for answers of our own master daemon (a LUXI query
    over every instance is megabytes).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    # A large answer (e.g. a query over all instances) is a big tree of new
    # containers, which the cyclic collector would go over again and again
    with gcpause.CyclicGcPaused():
        try:
            data = simplejson.loads(text, parse_float=_ParseFloat,
                                    parse_constant=_ParseConstant)
        except _Refused as err:
            raise JSONDecodeError(str(err), text, 0) from None
        except RecursionError:
            raise JSONDecodeError("Nesting deeper than %d levels" % MAX_DEPTH,
                                  text, 0) from None
        # Without that many brackets the nesting cannot be too deep, and
        # counting them is much cheaper than walking a large answer
        if check_depth and text.count("[") + text.count("{") > MAX_DEPTH:
            _CheckDepth(data, text)
        return data


def _Hmac(key: bytes, text: str, salt: str) -> str:
    # Imported here: hashlib loads OpenSSL (~2.5 ms of every gnt-* start),
    # and only confd and mond messages are signed
    import hashlib
    import hmac
    return hmac.new(key, (salt + text).encode("utf-8"),
                    hashlib.sha1).hexdigest()


def SignJson(data: Any, key: bytes, salt: str) -> dict[str, str]:
    """``data`` signed as in Ganeti's confd wire protocol.

    The message is the JSON text of ``data``, signed as text, so the
    receiver checks exactly the bytes that were signed:
    ``{"msg": text, "salt": salt, "hmac": HMAC-SHA1(key, salt + text)}``.
    """
    text = DumpJson(data)
    return {"msg": text, "salt": salt, "hmac": _Hmac(key, text, salt)}


def LoadSignedJson(signed: Any, key: bytes) -> tuple[Any, str]:
    """The data and salt of a SignJson envelope; SignatureError unless it
    is one, signed with ``key``."""
    if not isinstance(signed, dict) or \
            not all(isinstance(signed.get(name), str)
                    for name in ("msg", "salt", "hmac")):
        raise errors.SignatureError("Not a signed message")
    import hmac  # see _Hmac
    expected = _Hmac(key, signed["msg"], signed["salt"])
    if not hmac.compare_digest(expected, signed["hmac"]):
        raise errors.SignatureError("Invalid signature")
    return LoadJson(signed["msg"]), signed["salt"]


Dump = DumpJson
Load = LoadJson
