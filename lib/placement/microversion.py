"""Placement's microversions: the header, negotiation and the version
document.

A request names its version as ``OpenStack-API-Version: placement X.Y``
(or ``latest``); without it, the minimum applies. The answer repeats the
version chosen and says that it varies with that header.
"""

import re

from ganeti import errors

Version = tuple[int, int]

SERVICE_TYPE = "placement"
HEADER = "OpenStack-API-Version"
MIN_VERSION: Version = (1, 0)
MAX_VERSION: Version = (1, 39)

_VERSION_RE = re.compile(r"^([1-9][0-9]*)\.(0|[1-9][0-9]*)$")


def Format(version: Version) -> str:
    return "%d.%d" % version


def Parse(text: str) -> Version:
    """A version string as a tuple (400 if it is not ``X.Y``)."""
    match = _VERSION_RE.match(text.strip())
    if not match:
        raise errors.PlacementError(400, "invalid version string: %s" % text)
    return int(match.group(1)), int(match.group(2))


def FromHeader(value: str | None) -> Version:
    """The version a request asks for, given its header (406 if out of
    range); an absent header or one naming other services only means the
    minimum."""
    wanted = None
    for part in (value or "").split(","):
        words = part.strip().split(None, 1)
        if len(words) == 2 and words[0].lower() == SERVICE_TYPE:
            wanted = words[1].strip()
    if wanted is None:
        return MIN_VERSION
    if wanted.lower() == "latest":
        return MAX_VERSION
    version = Parse(wanted)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise errors.PlacementError(406, "Unacceptable version header: %s"
                                    % wanted)
    return version


def ResponseHeaders(version: Version) -> dict[str, str]:
    """The headers of every answer to a request at ``version``."""
    return {HEADER: "%s %s" % (SERVICE_TYPE, Format(version)),
            "Vary": HEADER.lower()}


def VersionDocument() -> dict:
    """The answer of ``GET /``: the one major version and its range."""
    return {"versions": [{
        "id": "v1.0",
        "min_version": Format(MIN_VERSION),
        "max_version": Format(MAX_VERSION),
        "status": "CURRENT",
        "links": [{"rel": "self", "href": ""}],
    }]}
