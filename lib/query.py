"""The query engine: field definitions, filters and responses.

A resource is a table of fields ``name -> (title, kind, getter, doc)``;
``Query`` evaluates a filter in the wire form of the query language (JSON
S-expressions, §5.1 of the interfaces) and returns Ganeti's response:
``{"fields": [fielddefs], "data": [[[status, value], ...], ...]}``.
"""

import contextlib
import re
from typing import Any, Callable, ContextManager, Iterable

from ganeti import constants, errors

FieldTable = dict[str, tuple[str, str, Callable[[Any], Any], str]]


def FieldDefinition(name: str, table: FieldTable) -> dict:
    """The ``{"name", "title", "kind", "doc"}`` of one field."""
    if name not in table:
        return {"name": name, "title": name, "kind": constants.QFT_UNKNOWN,
                "doc": "Unknown field '%s'" % name}
    title, kind, _, doc = table[name]
    return {"name": name, "title": title, "kind": kind, "doc": doc}


def QueryFields(table: FieldTable, fields: list[str] | None) -> dict:
    """Response of QueryFields: definitions of ``fields`` (all if None)."""
    if fields is None:
        fields = sorted(table)
    return {"fields": [FieldDefinition(name, table) for name in fields]}


_COMPARISONS = {
    "<": lambda a, b: a < b, ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
}


def CompileFilter(table: FieldTable, qfilter: Any) -> Callable[[Any], bool]:
    """Turn a wire-form filter into a predicate over items.

    Errors name the offending part of the filter, so a user can fix it.
    """
    if qfilter is None:
        return lambda _: True
    if not isinstance(qfilter, list) or not qfilter:
        raise errors.ParameterError("Invalid filter part %r: expected a"
                                    " non-empty list" % (qfilter, ))
    op, args = qfilter[0], qfilter[1:]

    def getter(name: Any) -> Callable[[Any], Any]:
        if not isinstance(name, str) or name not in table:
            raise errors.ParameterError("Unknown field %r in filter %r" %
                                        (name, qfilter))
        return table[name][2]

    def arity(count: int) -> None:
        if len(args) != count:
            raise errors.ParameterError(
                "Filter operator %r takes %d argument(s), got %d in %r" %
                (op, count, len(args), qfilter))

    if op in ("&", "|"):
        parts = [CompileFilter(table, sub) for sub in args]
        combine = all if op == "&" else any
        return lambda item: combine(part(item) for part in parts)
    if op == "!":
        arity(1)
        inner = CompileFilter(table, args[0])
        return lambda item: not inner(item)
    if op == "?":
        arity(1)
        get = getter(args[0])
        return lambda item: bool(get(item))
    if op in ("=", "==", "!="):
        arity(2)
        get, value = getter(args[0]), args[1]
        if op == "!=":
            return lambda item: get(item) != value
        return lambda item: get(item) == value
    if op in _COMPARISONS:
        arity(2)
        get, value, cmp = getter(args[0]), args[1], _COMPARISONS[op]
        if not isinstance(value, (int, float, str)):
            raise errors.ParameterError("Cannot compare with %r in %r" %
                                        (value, qfilter))
        return lambda item: cmp(get(item), value)
    if op == "=~":
        arity(2)
        get = getter(args[0])
        try:
            rex = re.compile(args[1])
        except (re.error, TypeError) as err:
            raise errors.ParameterError("Invalid regular expression %r in"
                                        " %r: %s" % (args[1], qfilter, err))
        return lambda item: (isinstance(get(item), str) and
                             rex.search(get(item)) is not None)
    if op in ("=[]", "!=[]"):
        arity(2)
        get, value = getter(args[0]), args[1]
        if op == "!=[]":
            return lambda item: value not in (get(item) or [])
        return lambda item: value in (get(item) or [])
    raise errors.ParameterError("Unknown filter operator %r in %r" %
                                (op, qfilter))


def Query(table: FieldTable, items: Iterable[Any], fields: list[str],
          qfilter: Any,
          item_lock: Callable[[Any], ContextManager] | None = None) -> dict:
    """Evaluate a query over ``items``; unknown fields get RS_UNKNOWN.

    ``item_lock(item)``, if given, is held while one item is filtered and
    its row built, so every row shows one consistent state of its item.
    """
    predicate = CompileFilter(table, qfilter)
    getters = [table[name][2] if name in table else None for name in fields]
    data = []
    for item in items:
        with item_lock(item) if item_lock else contextlib.nullcontext():
            if not predicate(item):
                continue
            data.append([[constants.RS_NORMAL, get(item)] if get is not None
                         else [constants.RS_UNKNOWN, None]
                         for get in getters])
    return {"fields": [FieldDefinition(name, table) for name in fields],
            "data": data}
