"""JSON serialization used on disk and on the wire.

One place decides the JSON dialect so that job files, config.data, LUXI and
RPC bodies stay byte-compatible with each other.
"""

from typing import Any

import simplejson

from ganeti.utils import gcpause


def DumpJson(data: Any, indent: bool = False) -> str:
    """Serialize ``data``; compact unless ``indent`` (for files admins read)."""
    if indent:
        return simplejson.dumps(data, indent=2, sort_keys=True) + "\n"
    return simplejson.dumps(data, separators=(",", ":"))


def DumpJsonBytes(data: Any) -> bytes:
    """Serialize ``data`` to UTF-8 bytes (wire form)."""
    return simplejson.dumps(data, separators=(",", ":")).encode("utf-8")


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
