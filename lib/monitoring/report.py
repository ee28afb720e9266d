"""The report of a data collector, and its signature.

A report is Ganeti's (monitoring-query-format)::

  {"name", "version", "format_version", "timestamp" (ns), "category"
   (null for none), "kind" (0 performance, 1 status), "data"}

Reports that ganeti-maintd acts on (the self-diagnose one) carry a
``signed`` member as well: the report without it, signed with the
cluster's HMAC key as in Ganeti's confd wire protocol (see
serializer.SignJson). A reader takes the data from the verified
``signed["msg"]``, never from the unsigned copy beside it: VerifyReport
does that, in one place for every consumer.
"""

import os
import time
from typing import Any

from ganeti import errors, pathutils, serializer, utils

# Version of the built-in collectors (Ganeti's "B")
BUILTIN_VERSION = "B"
KIND_PERFORMANCE = 0
KIND_STATUS = 1
# Categories; a collector without one is listed and addressed as "default"
CATEGORY_DEFAULT = "default"
CATEGORY_INSTANCE = "instance"
CATEGORY_STORAGE = "storage"
CATEGORY_NODE = "node"
# Codes of the "status" of status collectors: OK, temporarily bad (being
# fixed), unknown, bad
STATUS_OK = 0
STATUS_TEMPORARY = 1
STATUS_UNKNOWN = 2
STATUS_BAD = 4

SIGNED_KEY = "signed"


def BuildReport(name: str, category: str | None, kind: int, data: Any,
                format_version: int = 1,
                timestamp: int | None = None) -> dict[str, Any]:
    """A report of a built-in collector, stamped now (in nanoseconds)."""
    return {
        "name": name,
        "version": BUILTIN_VERSION,
        "format_version": format_version,
        "timestamp": time.time_ns() if timestamp is None else timestamp,
        "category": category,
        "kind": kind,
        "data": data,
    }


def ReadHmacKey(path: str = pathutils.CONFD_HMAC_KEY) -> bytes:
    """The cluster's HMAC key, as Ganeti uses it (the file's text)."""
    key = utils.ReadFile(path).strip()
    if not key:
        raise errors.ConfigurationError("The HMAC key file %s is empty" %
                                        path)
    return key.encode("ascii")


def SignReport(report: dict[str, Any], key: bytes) -> dict[str, Any]:
    """The report with its signature (a fresh random salt)."""
    unsigned = {name: value for name, value in report.items()
                if name != SIGNED_KEY}
    return dict(unsigned, **{SIGNED_KEY: serializer.SignJson(
        unsigned, key, os.urandom(16).hex())})


def VerifyReport(report: Any, key: bytes) -> dict[str, Any]:
    """The signed content of a report; SignatureError if it is unsigned,
    badly signed or not a report."""
    if not isinstance(report, dict) or SIGNED_KEY not in report:
        raise errors.SignatureError("The report is not signed")
    content, _ = serializer.LoadSignedJson(report[SIGNED_KEY], key)
    if not isinstance(content, dict) or "data" not in content:
        raise errors.SignatureError("The signed message is not a report")
    return content
