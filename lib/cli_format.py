"""Formatting for display: values, tables of query results and the
YAML-like layout of the "info" commands, as Ganeti's tools show them.
"""

import re
import time
from typing import Any, Callable, Iterable, Sequence

from ganeti import constants
from ganeti.cli_output import ToStdout
from ganeti.parameters import families
from ganeti.utils.text import FormatUnit, TryToRoman

# Results of FormatQueryResult
QR_NORMAL, QR_UNKNOWN, QR_INCOMPLETE = range(3)

# Value shown for a query field whose status is not "normal"
_RS_DESCRIPTION = {
    constants.RS_UNKNOWN: ("(unknown)", "??"),
    constants.RS_NODATA: ("(nodata)", "?"),
    constants.RS_OFFLINE: ("(offline)", "*"),
    constants.RS_UNAVAIL: ("(unavail)", "-"),
}


def FormatTime(val: Any, usecs: int | None = None) -> str:
    """Local time as "YYYY-MM-DD HH:MM:SS[.usec]", "N/A" if unset."""
    if val is None or isinstance(val, bool) or \
            not isinstance(val, (int, float)):
        return "N/A"
    result = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(val))
    if usecs is not None:
        result += ".%06d" % usecs
    return result


def FormatTimestamp(ts: Any) -> str:
    """Format a ``[sec, usec]`` (or seconds) timestamp; "?" if neither."""
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return FormatTime(ts)
    if not isinstance(ts, (tuple, list)) or len(ts) != 2:
        return "?"
    sec, usec = ts
    return FormatTime(sec, usecs=usec)


def FormatBool(value: bool) -> str:
    """Y/N, as in Ganeti's tables."""
    return "Y" if value else "N"


def FormatLogMessage(log_type: str, log_msg: Any) -> str:
    """Text of a job log entry."""
    if log_type != constants.ELOG_MESSAGE or not isinstance(log_msg, str):
        log_msg = str(log_msg)
    return log_msg


# Tables ----------------------------------------------------------------------

def _FieldMatcher(patterns: Iterable[str] | None) -> Callable[[str], bool]:
    # Field names or regular expressions matching whole names (Ganeti's
    # FieldSet), e.g. "disk\.size/([0-9]+)"
    regexes = [re.compile("^%s$" % pattern) for pattern in (patterns or [])]
    return lambda field: any(rex.match(field) for rex in regexes)


def _AlignRows(rows: list[list[str]], align_right: list[bool],
               separator: str | None) -> list[str]:
    if separator is not None:
        return [separator.join(row) for row in rows]
    widths = [max((len(row[idx]) for row in rows), default=0)
              for idx in range(len(align_right))]
    if align_right and not align_right[-1]:
        # No padding after the last column
        widths[-1] = 0
    result = []
    for row in rows:
        cells = [value.rjust(width) if right else value.ljust(width)
                 for value, width, right in zip(row, widths, align_right)]
        result.append(" ".join(cells))
    return result


def GenerateTable(headers: dict | None, fields: list[str],
                  separator: str | None, data: Iterable,
                  numfields: Iterable[str] | None = None,
                  unitfields: Iterable[str] | None = None,
                  units: str | None = None) -> list[str]:
    """Format rows as text lines.

    ``headers`` maps field -> title (None or empty: no header line). Without
    a separator, columns are aligned (``numfields`` to the right); with one,
    values are joined by it. ``unitfields`` hold MiB sizes shown in
    ``units`` (default "h", or "m" with a separator). A row of None is
    shown as dashes.
    """
    if units is None:
        units = "m" if separator else "h"
    is_num = _FieldMatcher(numfields)
    is_unit = _FieldMatcher(unitfields)
    rows = []
    if headers:
        rows.append([str(headers.get(field, field)) for field in fields])
    for row in data:
        if row is None:
            rows.append(["-" for _ in fields])
            continue
        cells = []
        for field, val in zip(fields, row):
            if is_unit(field):
                try:
                    val = FormatUnit(int(val), units)
                except (TypeError, ValueError):
                    pass
            cells.append(str(val))
        rows.append(cells)
    return _AlignRows(rows, [is_num(field) for field in fields], separator)


class TableColumn:
    """A column of FormatTable: title, value formatter, alignment."""

    def __init__(self, title: str, fn: Callable[[Any], str],
                 align_right: bool):
        self.title = title
        self.format = fn
        self.align_right = align_right


def FormatTable(rows: Iterable[Sequence], columns: list[TableColumn],
                header: bool, separator: str | None) -> list[str]:
    """Format rows of raw values through their columns' formatters."""
    lines = [[col.title for col in columns]] if header else []
    for row in rows:
        lines.append([col.format(value) for value, col in zip(row, columns)])
    return _AlignRows(lines, [col.align_right for col in columns], separator)


def _DefaultFormatter(kind: str, unit: str) -> tuple[Callable, bool]:
    if kind == constants.QFT_UNIT:
        return (lambda value: FormatUnit(value, unit)), True
    if kind in (constants.QFT_NUMBER, constants.QFT_NUMBER_FLOAT):
        return str, True
    if kind == constants.QFT_BOOL:
        return FormatBool, False
    if kind == constants.QFT_TIMESTAMP:
        return FormatTime, False
    return str, False


def FormatResultError(status: int, verbose: bool) -> str:
    """How a result status other than RS_NORMAL is shown: "(unavail)",
    or with ``verbose`` false "-"."""
    verbose_text, short_text = _RS_DESCRIPTION.get(status, ("?", "?"))
    return verbose_text if verbose else short_text


def FormatQueryResult(result: dict, unit: str | None = None,
                      format_override: dict | None = None,
                      separator: str | None = None, header: bool = False,
                      verbose: bool = False) -> tuple[int, list[str]]:
    """Format a LUXI Query result; return ``(QR_* status, lines)``.

    ``format_override`` maps a field name to ``(fn, align_right)``.
    """
    if unit is None:
        unit = "m" if separator else "h"
    format_override = format_override or {}
    stats = {"unknown": False, "abnormal": False}

    def make_column(fdef: dict) -> TableColumn:
        fn, align_right = format_override.get(
            fdef["name"], _DefaultFormatter(fdef["kind"], unit))

        def fmt(cell: Sequence) -> str:
            status, value = cell
            if status == constants.RS_NORMAL:
                return str(fn(value))
            if status == constants.RS_UNKNOWN:
                stats["unknown"] = True
            else:
                stats["abnormal"] = True
            return FormatResultError(status, verbose)
        return TableColumn(fdef["title"], fmt, bool(align_right))

    columns = [make_column(fdef) for fdef in result["fields"]]
    lines = FormatTable(result["data"], columns, header, separator)
    if stats["unknown"] or any(fdef["kind"] == constants.QFT_UNKNOWN
                               for fdef in result["fields"]):
        status = QR_UNKNOWN
    elif stats["abnormal"]:
        status = QR_INCOMPLETE
    else:
        status = QR_NORMAL
    return status, lines


# Generic "info" output -------------------------------------------------------

def FormatParamsDictInfo(custom: dict, actual: dict,
                         roman: bool = False) -> dict:
    """Effective parameters for display: own values as they are, inherited
    ones as "default (<value>)"; integers in roman numerals with
    ``roman``."""
    result: dict[str, dict | str] = {}
    for key, value in actual.items():
        if isinstance(value, dict) and value:
            result[key] = FormatParamsDictInfo(custom.get(key) or {}, value,
                                               roman)
        elif key in custom:
            result[key] = str(TryToRoman(custom[key], roman))
        else:
            result[key] = "default (%s)" % (TryToRoman(value, roman), )
    return result


def FormatPolicyInfo(custom: dict, effective: dict, iscluster: bool,
                     roman: bool = False) -> list[tuple[str, Any]]:
    """An instance policy for PrintGenericInfo, in Ganeti's layout:
    "bounds specs" (a ``min/N``, ``max/N`` pair per entry), the cluster's
    "std" specs, "allowed disk templates" and the ratios, inherited
    values marked "default (<value>)" (a group's; the cluster's policy is
    all its own)."""
    if iscluster:
        effective = custom
    own = bool(custom.get(families.ISPECS_MINMAX))
    minmax = (custom if own else effective)[families.ISPECS_MINMAX]
    bounds = [[("%s/%d" % (key, idx),
                FormatParamsDictInfo(specs[key] if own else {}, specs[key],
                                     roman))
               for key in (families.ISPECS_MIN, families.ISPECS_MAX)]
              for idx, specs in enumerate(minmax)]
    result: list[tuple[str, Any]] = [("bounds specs", bounds)]
    if iscluster:
        std = custom[families.ISPECS_STD]
        result.append((families.ISPECS_STD,
                       FormatParamsDictInfo(std, std, roman)))
    templates = custom.get(families.IPOLICY_DTS)
    result.append(("allowed disk templates",
                   ", ".join(templates) if templates is not None else
                   "default (%s)" %
                   ", ".join(effective[families.IPOLICY_DTS])))
    for key in (families.IPOLICY_SPINDLE_RATIO, families.IPOLICY_VCPU_RATIO):
        result.append((key, str(TryToRoman(custom.get(
            key, "default (%s)" % (TryToRoman(effective[key], roman),
                                   )), roman))))
    return result


def _SerializeInfo(lines: list[str], data: Any, level: int,
                   prefix: str) -> None:
    """Append ``data`` in Ganeti's YAML-like "info" layout.

    ``prefix`` is what precedes the first line (the key, or the list
    dash); lists of pairs are ordered mappings.
    """
    indent = "  " * level
    if isinstance(data, list) and data and isinstance(data[0], tuple):
        items = data
    elif isinstance(data, dict) and data:
        items = sorted(data.items())
    elif isinstance(data, list) and data:
        if prefix:
            lines.append(prefix.rstrip())
            prefix = indent
        for item in data:
            _SerializeInfo(lines, item, level + 1, prefix + "- ")
            prefix = indent
        return
    elif isinstance(data, (list, dict)):
        lines.append(prefix)
        return
    else:
        lines.append("%s%s" % (prefix, data))
        return
    if prefix.strip().endswith(":"):
        lines.append(prefix.rstrip())
        prefix = indent
    for key, value in items:
        _SerializeInfo(lines, value, level + 1, "%s%s: " % (prefix, key))
        prefix = indent


def PrintGenericInfo(data: list) -> None:
    """Print a list of objects, each a list of (key, value) pairs."""
    lines: list[str] = []
    _SerializeInfo(lines, data, 0, "")
    for line in lines:
        ToStdout("%s", line)
