"""Text as people type and read it: sizes ("512", "10G", "1.5t" <-> MiB),
durations, and names in natural order ("node2" before "node10").

Here rather than in the CLI because the master converts sizes too: backend
memory parameters typed with a unit reach it through the CLI, RAPI and
plain opcodes alike, and LU messages print sizes.
"""

import re
from typing import Iterable

from ganeti import errors

_UNIT_RE = re.compile(r"^([.\d]+)\s*([a-zA-Z]+)?$")
_UNIT_FACTORS = {
    "m": 1, "mb": 1, "mib": 1,
    "g": 1024, "gb": 1024, "gib": 1024,
    "t": 1024 * 1024, "tb": 1024 * 1024, "tib": 1024 * 1024,
}


def NiceSortKey(name: str) -> list:
    """Sort key putting "node2" before "node10"."""
    parts = re.split(r"(\d+)", name)
    return [int(part) if idx % 2 else part for idx, part in enumerate(parts)]


def NiceSort(names: Iterable[str]) -> list[str]:
    """``names`` sorted with NiceSortKey."""
    return sorted(names, key=NiceSortKey)


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


def FormatUnit(value: float, units: str, roman: bool = False) -> str:
    """Format a size in MiB; ``units`` h (human), m, g or t; with
    ``roman``, a whole number in roman numerals."""
    if units not in ("h", "m", "g", "t"):
        raise errors.ProgrammerError("Invalid unit specified '%s'" % units)
    if units == "m" or (units == "h" and value < 1024):
        number, digits, suffix = value, 0, "M"
    elif units == "g" or (units == "h" and value < 1024 * 1024):
        number, digits, suffix = value / 1024.0, 1, "G"
    else:
        number, digits, suffix = value / 1024.0 / 1024.0, 1, "T"
    rounded = round(number, digits)
    text = TryToRoman(int(rounded), roman) if rounded == int(rounded) \
        else None
    if not isinstance(text, str):
        text = "%.*f" % (digits, number)
    return text + (suffix if units == "h" else "")


# Roman numerals, largest first, with the subtractive pairs
_ROMAN = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"),
          (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"),
          (4, "IV"), (1, "I")]
# Ganeti's roman module writes 1..4999 (4000 as MMMM)
_ROMAN_MAX = 4999


def TryToRoman(value: object, convert: bool = True) -> object:
    """An integer from 1 to 4999 in roman numerals (the ``--roman`` of
    Ganeti's info commands); anything else, or without ``convert``,
    unchanged."""
    if not convert or isinstance(value, bool) or \
            not isinstance(value, int) or not 0 < value <= _ROMAN_MAX:
        return value
    parts = []
    for amount, numeral in _ROMAN:
        count, value = divmod(value, amount)
        parts.append(numeral * count)
    return "".join(parts)


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
