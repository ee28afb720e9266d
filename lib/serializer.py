"""JSON serialization used on disk and on the wire.

One place decides the JSON dialect so that job files, config.data, LUXI and
RPC bodies stay byte-compatible with each other.
"""

from typing import Any

import simplejson

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
    """Serialize ``data``; compact unless ``indent`` (for files admins read)."""
    if indent:
        return _Encode(_INDENTED, data) + "\n"
    return _Encode(_COMPACT, data)


def DumpJsonBytes(data: Any) -> bytes:
    """Serialize ``data`` to UTF-8 bytes (wire form)."""
    return _Encode(_COMPACT, data).encode("utf-8")


def LoadJson(text: str | bytes) -> Any:
    """Parse JSON text (str or UTF-8 bytes)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    # A large answer (e.g. a query over all instances) is a big tree of new
    # containers, which the cyclic collector would go over again and again
    with gcpause.CyclicGcPaused():
        return simplejson.loads(text)


Dump = DumpJson
Load = LoadJson
JSONDecodeError = simplejson.JSONDecodeError
