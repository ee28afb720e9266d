"""Sizes as people type and read them: "512", "10G", "1.5t" <-> MiB.

Here rather than in the CLI because the master converts sizes too: backend
memory parameters typed with a unit reach it through the CLI, RAPI and
plain opcodes alike, and LU messages print sizes.
"""

import re

from ganeti import errors

_UNIT_RE = re.compile(r"^([.\d]+)\s*([a-zA-Z]+)?$")
_UNIT_FACTORS = {
    "m": 1, "mb": 1, "mib": 1,
    "g": 1024, "gb": 1024, "gib": 1024,
    "t": 1024 * 1024, "tb": 1024 * 1024, "tib": 1024 * 1024,
}


def ParseUnit(value: str) -> int:
    """Parse a size like "512", "10G" or "1.5t" into MiB.

    Plain numbers are MiB. The result is rounded up to a multiple of 4 MiB
    as Ganeti does, since LVM extents are 4 MiB.
    """
    match = _UNIT_RE.match(str(value).strip())
    if not match:
        raise errors.UnitParseError("Invalid format")
    try:
        number = float(match.group(1))
    except ValueError as err:
        raise errors.UnitParseError("Invalid format") from err
    unit = (match.group(2) or "m").lower()
    if unit not in _UNIT_FACTORS:
        raise errors.UnitParseError("Unknown unit: %s" % match.group(2))
    number *= _UNIT_FACTORS[unit]
    result = int(number)
    if result < number:
        result += 1
    if result % 4:
        result += 4 - result % 4
    return result


def FormatUnit(value: float, units: str) -> str:
    """Format a size in MiB; ``units`` h (human), m, g or t."""
    if units not in ("h", "m", "g", "t"):
        raise errors.ProgrammerError("Invalid unit specified '%s'" % units)
    if units == "m" or (units == "h" and value < 1024):
        return "%.0f%s" % (value, "M" if units == "h" else "")
    if units == "g" or (units == "h" and value < 1024 * 1024):
        return "%.1f%s" % (value / 1024.0, "G" if units == "h" else "")
    return "%.1f%s" % (value / 1024.0 / 1024.0, "T" if units == "h" else "")


def FormatSeconds(secs: float) -> str:
    """A duration as Ganeti words it: ``1h 02m 03s`` style (``2d 0h 1m 5s``
    keeps every unit after the first non-zero one)."""
    parts: list[str] = []
    secs = round(secs, 0)
    if secs > 0:
        for unit, one in (("d", 24 * 60 * 60), ("h", 60 * 60), ("m", 60)):
            complete, secs = divmod(secs, one)
            if complete or parts:
                parts.append("%d%s" % (complete, unit))
    parts.append("%ds" % secs)
    return " ".join(parts)
