"""The query engine: field definitions, filters and responses.

A resource is a table of fields ``name -> (title, kind, getter, doc)``;
``Query`` evaluates a filter in the wire form of the query language (JSON
S-expressions, §5.1 of the interfaces) and returns Ganeti's response:
``{"fields": [fielddefs], "data": [[[status, value], ...], ...]}``.

A getter returns the field's value, or one of ``FS_NODATA``, ``FS_UNAVAIL``
and ``FS_OFFLINE`` when the value is missing (live data of a node that did
not answer, is offline, ...); such values pass every filter condition, as
in Ganeti. The resources' tables are in ganeti.queryfields.
"""

import json
import math
import operator
import re
from typing import (Any, Callable, Collection, ContextManager, Iterable,
                    Protocol)

from ganeti import constants, errors, objects, qlang
from ganeti.parameters.base import ParamSpec
from ganeti.utils import gcpause

FieldDef = tuple[str, str, Callable[[Any], Any], str]
FieldTable = dict[str, FieldDef]


class FieldLookup(Protocol):
    """What a filter needs of a field table: a table, or an object making
    up definitions for names not known in advance."""

    def __contains__(self, name: object, /) -> bool: ...

    def __getitem__(self, name: str, /) -> FieldDef: ...


class FieldStatus:
    """Why a field has no value: one of the RS_* query statuses."""

    __slots__ = ("status",)

    def __init__(self, status: int):
        self.status = status

    def __repr__(self) -> str:
        return "FieldStatus(%d)" % self.status


FS_NODATA = FieldStatus(constants.RS_NODATA)
FS_UNAVAIL = FieldStatus(constants.RS_UNAVAIL)
FS_OFFLINE = FieldStatus(constants.RS_OFFLINE)
_FS_UNKNOWN = FieldStatus(constants.RS_UNKNOWN)
_RS_NORMAL = constants.RS_NORMAL


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


def MatchHostname(name: Any, wanted: Any) -> bool:
    """Whether host ``name`` is ``wanted`` or starts with its components.

    ``node1`` matches ``node1.example.com`` (case-insensitive), so that
    short names select hosts as everywhere in Ganeti.
    """
    if not isinstance(name, str) or not isinstance(wanted, str):
        return False
    name, wanted = name.lower(), wanted.lower()
    return name == wanted or name.startswith(wanted + ".")


_ORDERINGS = {
    qlang.OP_LT: operator.lt, qlang.OP_LE: operator.le,
    qlang.OP_GT: operator.gt, qlang.OP_GE: operator.ge,
}

# Which values (_ValueClass) the fields of a kind hold; fields of the
# other kinds (QFT_OTHER) are checked value by value
_KIND_CLASS = {
    constants.QFT_TEXT: "text",
    constants.QFT_BOOL: "bool",
    constants.QFT_NUMBER: "number",
    constants.QFT_NUMBER_FLOAT: "number",
    constants.QFT_UNIT: "number",
    constants.QFT_TIMESTAMP: "number",
}
_CLASS_DESCRIPTIONS = {"bool": "a boolean", "number": "a number",
                       "text": "a string"}


def _ValueClass(value: Any) -> str | None:
    """"text", "number" or "bool": the values ``value`` compares with
    (None for lists, dicts and null, which compare with nothing)."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return None


def _Json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _Seconds(value: Any) -> Any:
    """A timestamp (seconds or ``[seconds, microseconds]``) as whole
    seconds: timestamps compare on seconds only, as in Ganeti."""
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    if _ValueClass(value) == "number":
        return math.floor(value)
    return value


class _FilterCompiler:
    """Compiles wire-form filters over one field table (CompileFilter)."""

    def __init__(self, table: FieldLookup,
                 hostname_fields: Collection[str]):
        self.table = table
        self.hostname_fields = hostname_fields

    def Compile(self, part: Any, depth: int) -> Callable[[Any], bool]:
        if not isinstance(part, list) or not part or \
                not isinstance(part[0], str):
            raise errors.ParameterError(
                "Invalid filter part %s: expected a list starting with an"
                " operator" % _Json(part))
        if depth >= qlang.MAX_DEPTH:
            raise errors.ParameterError("Filter nested more than %d levels"
                                        " deep" % qlang.MAX_DEPTH)
        op, args = part[0], part[1:]
        if op in (qlang.OP_AND, qlang.OP_OR):
            subs = [self.Compile(sub, depth + 1) for sub in args]
            combine = all if op == qlang.OP_AND else any
            return lambda item: combine(sub(item) for sub in subs)
        if op == qlang.OP_NOT:
            self._CheckArity(part, 1)
            inner = self.Compile(args[0], depth + 1)
            return lambda item: not inner(item)
        if op == qlang.OP_TRUE:
            self._CheckArity(part, 1)
            return self._Leaf(part, self._Truth(part))
        if op in (qlang.OP_EQUAL, qlang.OP_EQUAL_LEGACY, qlang.OP_NOT_EQUAL):
            self._CheckArity(part, 2)
            equal = self._Leaf(part, self._Equality(part))
            if op == qlang.OP_NOT_EQUAL:
                return lambda item: not equal(item)
            return equal
        if op in _ORDERINGS:
            self._CheckArity(part, 2)
            return self._Leaf(part, self._Ordering(part))
        if op == qlang.OP_REGEXP:
            self._CheckArity(part, 2)
            return self._Leaf(part, self._Regexp(part))
        if op in (qlang.OP_CONTAINS, qlang.OP_NOT_CONTAINS):
            self._CheckArity(part, 2)
            contains = self._Leaf(part, self._Contains(part))
            if op == qlang.OP_NOT_CONTAINS:
                return lambda item: not contains(item)
            return contains
        raise errors.ParameterError("Unknown operator '%s' in filter %s" %
                                    (op, _Json(part)))

    @staticmethod
    def _CheckArity(part: list, count: int) -> None:
        if len(part) - 1 != count:
            raise errors.ParameterError(
                "Operator '%s' takes %d operand(s), got %d in filter %s" %
                (part[0], count, len(part) - 1, _Json(part)))

    def _Kind(self, part: list) -> str:
        name = part[1]
        if not isinstance(name, str) or name not in self.table:
            raise errors.ParameterError("Unknown field %s in filter %s" %
                                        (_Json(name), _Json(part)))
        return self.table[name][1]

    def _Leaf(self, part: list, test: Callable[[Any], bool]
              ) -> Callable[[Any], bool]:
        """A condition on the field ``part[1]``; a missing value (non-normal
        status, or null) passes it, as in Ganeti."""
        name = part[1]
        get = self.table[name][2]
        timestamp = self.table[name][1] == constants.QFT_TIMESTAMP

        def predicate(item: Any) -> bool:
            value = get(item)
            if value is None or isinstance(value, FieldStatus):
                return True
            return test(_Seconds(value) if timestamp else value)
        return predicate

    @staticmethod
    def _MismatchError(part: list, value: Any) -> errors.ParameterError:
        """Error for an item whose value does not suit the condition."""
        return errors.ParameterError(
            "Cannot compare value %s of field '%s' with %s in filter %s" %
            (_Json(value), part[1], _Json(part[2]), _Json(part)))

    def _Truth(self, part: list) -> Callable[[Any], bool]:
        kind = self._Kind(part)
        if kind not in (constants.QFT_BOOL, constants.QFT_OTHER):
            raise errors.ParameterError(
                "Field '%s' (type %s) is not a boolean in filter %s" %
                (part[1], kind, _Json(part)))

        def test(value: Any) -> bool:
            if not isinstance(value, bool):
                raise errors.ParameterError(
                    "Unexpected value %s of field '%s' in boolean filter %s"
                    % (_Json(value), part[1], _Json(part)))
            return value
        return test

    def _ComparedClass(self, part: list, allowed: Collection[str]) -> str:
        """The class of the condition's value, checked against the field's.
        """
        kind, value = self._Kind(part), part[2]
        value_class = _ValueClass(value)
        if value_class is None or value_class not in allowed:
            raise errors.ParameterError(
                "Invalid value %s in filter %s: expected %s" %
                (_Json(value), _Json(part),
                 " or ".join(_CLASS_DESCRIPTIONS[name]
                             for name in sorted(allowed))))
        field_class = _KIND_CLASS.get(kind)
        if field_class is not None and field_class != value_class:
            raise errors.ParameterError(
                "Cannot compare field '%s' (type %s) with %s in filter %s" %
                (part[1], kind, _Json(value), _Json(part)))
        return value_class

    def _Equality(self, part: list) -> Callable[[Any], bool]:
        value_class = self._ComparedClass(part, ("bool", "number", "text"))
        wanted = part[2]
        hostname = part[1] in self.hostname_fields

        def test(value: Any) -> bool:
            if _ValueClass(value) != value_class:
                raise self._MismatchError(part, value)
            if hostname:
                return MatchHostname(value, wanted)
            return value == wanted
        return test

    def _Ordering(self, part: list) -> Callable[[Any], bool]:
        value_class = self._ComparedClass(part, ("number", "text"))
        compare, wanted = _ORDERINGS[part[0]], part[2]

        def test(value: Any) -> bool:
            if _ValueClass(value) != value_class:
                raise self._MismatchError(part, value)
            return compare(value, wanted)
        return test

    def _Regexp(self, part: list) -> Callable[[Any], bool]:
        kind = self._Kind(part)
        if kind not in (constants.QFT_TEXT, constants.QFT_OTHER):
            raise errors.ParameterError(
                "Field '%s' (type %s) cannot match a regular expression in"
                " filter %s" % (part[1], kind, _Json(part)))
        if not isinstance(part[2], str):
            raise errors.ParameterError(
                "Invalid regular expression %s in filter %s: expected a"
                " string" % (_Json(part[2]), _Json(part)))
        try:
            regexp = re.compile(part[2])
        except re.error as err:
            raise errors.ParameterError(
                "Invalid regular expression %s in filter %s: %s" %
                (_Json(part[2]), _Json(part), err)) from None

        def test(value: Any) -> bool:
            if not isinstance(value, str):
                raise errors.ParameterError(
                    "Field '%s' has the non-string value %s, which cannot"
                    " match the regular expression in filter %s" %
                    (part[1], _Json(value), _Json(part)))
            return regexp.search(value) is not None
        return test

    def _Contains(self, part: list) -> Callable[[Any], bool]:
        kind, wanted = self._Kind(part), part[2]
        if kind != constants.QFT_OTHER:
            raise errors.ParameterError(
                "Field '%s' (type %s) is not a list in filter %s" %
                (part[1], kind, _Json(part)))
        wanted_class = _ValueClass(wanted)
        if wanted_class is None:
            raise errors.ParameterError(
                "Invalid value %s in filter %s: expected a string, a number"
                " or a boolean" % (_Json(wanted), _Json(part)))

        def test(value: Any) -> bool:
            if not isinstance(value, (list, tuple)):
                raise errors.ParameterError(
                    "Field '%s' has the non-list value %s in filter %s" %
                    (part[1], _Json(value), _Json(part)))
            return any(_ValueClass(elem) == wanted_class and elem == wanted
                       for elem in value)
        return test


def CompileFilter(table: FieldLookup, qfilter: Any,
                  hostname_fields: Collection[str] = ()
                  ) -> Callable[[Any], bool]:
    """Turn a wire-form filter (§5.1) into a predicate over items.

    Equality on a field in ``hostname_fields`` matches by name component
    (MatchHostname). Malformed filters, unknown fields and values that do
    not suit a field's kind raise ParameterError here; values of untyped
    (QFT_OTHER) fields that do not suit the condition raise it when an item
    is tested. Every message names the offending part of the filter.
    """
    if qfilter is None:
        return lambda _: True
    return _FilterCompiler(table, hostname_fields).Compile(qfilter, 0)


def FilterFields(qfilter: Any) -> set[str]:
    """The field names a (wire-form) filter refers to.

    Lets a resource find out which data the filter needs before fetching
    it (e.g. live node data); malformed parts are left to CompileFilter.
    """
    result: set[str] = set()
    if not isinstance(qfilter, list) or not qfilter:
        return result
    op, args = qfilter[0], qfilter[1:]
    if op in (qlang.OP_AND, qlang.OP_OR, qlang.OP_NOT):
        for sub in args:
            result |= FilterFields(sub)
    elif args and isinstance(args[0], str):
        result.add(args[0])
    return result


def RequestedNames(qfilter: Any, namefield: str = "name") -> list[str] | None:
    """The names a filter asks for, if it only selects by name.

    Such filters (``["|", ["==", "name", "a"], ...]``, what ``gnt-* list
    a b`` sends) let the resource look the names up itself and report
    unknown ones, as Ganeti does, instead of silently matching nothing.
    """
    if not isinstance(qfilter, list) or not qfilter:
        return None
    parts = qfilter[1:] if qfilter[0] == qlang.OP_OR else [qfilter]
    names = []
    for part in parts:
        if not (isinstance(part, list) and len(part) == 3 and
                part[0] in (qlang.OP_EQUAL, qlang.OP_EQUAL_LEGACY) and
                part[1] == namefield and
                isinstance(part[2], str)):
            return None
        names.append(part[2])
    return names or None


def Query(table: FieldTable, items: Iterable[Any], fields: list[str],
          qfilter: Any,
          item_lock: Callable[[Any], ContextManager] | None = None,
          hostname_fields: Collection[str] = ()) -> dict:
    """Evaluate a query over ``items``; unknown fields get RS_UNKNOWN.

    ``item_lock(item)``, if given, is held while one item is filtered and
    its row built, so every row shows one consistent state of its item.
    """
    predicate = CompileFilter(table, qfilter, hostname_fields)
    getters = [table[name][2] if name in table else _UnknownField
               for name in fields]
    # A large result is many new lists, none of them garbage
    with gcpause.CyclicGcPaused():
        if item_lock is None:
            data = [_Row(getters, item) for item in items if predicate(item)]
        else:
            data = []
            for item in items:
                with item_lock(item):
                    if predicate(item):
                        data.append(_Row(getters, item))
    return {"fields": [FieldDefinition(name, table) for name in fields],
            "data": data}


def _UnknownField(_item: Any) -> FieldStatus:
    return _FS_UNKNOWN


def _Row(getters: list[Callable[[Any], Any]], item: Any) -> list[list]:
    """``[status, value]`` of each field of an item.

    Runs for every cell of a result, hence one comprehension rather than
    a function call per cell, and a type test (FieldStatus has no
    subclasses) rather than isinstance.
    """
    return [[_RS_NORMAL, value] if type(value := get(item)) is not FieldStatus
            else [value.status, None]
            for get in getters]


# Common fields ---------------------------------------------------------------

_SERIAL_NO_DOC = "%s object serial number, incremented on each modification"


def _Timestamp(path: str) -> Callable[[Any], Any]:
    get = operator.attrgetter(path)

    def timestamp(item: Any) -> Any:
        value = get(item)
        return FS_UNAVAIL if value is None else value
    return timestamp


def _ObjectFields(what: str, obj_attr: str) -> FieldTable:
    """uuid, serial_no, ctime, mtime and tags of the item's object (its
    attribute ``obj_attr``)."""
    obj_of = operator.attrgetter(obj_attr)
    return {
        "uuid": ("UUID", constants.QFT_TEXT,
                 operator.attrgetter(obj_attr + ".uuid"), "%s UUID" % what),
        "serial_no": ("SerialNo", constants.QFT_NUMBER,
                      operator.attrgetter(obj_attr + ".serial_no"),
                      _SERIAL_NO_DOC % what),
        "ctime": ("CTime", constants.QFT_TIMESTAMP,
                  _Timestamp(obj_attr + ".ctime"), "Creation timestamp"),
        "mtime": ("MTime", constants.QFT_TIMESTAMP,
                  _Timestamp(obj_attr + ".mtime"), "Modification timestamp"),
        "tags": ("Tags", constants.QFT_OTHER,
                 lambda item: sorted(obj_of(item).GetTags()), "Tags"),
    }


# Titles of the ndp/<name> fields (Ganeti's NDS_PARAMETER_TITLES); the
# other parameters' fields are titled "ndp/<name>", as in Ganeti
_ND_TITLES = {
    objects.ND_OOB_PROGRAM: "OutOfBandProgram",
    objects.ND_SPINDLE_COUNT: "SpindleCount",
    objects.ND_EXCLUSIVE_STORAGE: "ExclusiveStorage",
    objects.ND_OVS: "OpenvSwitch",
    objects.ND_OVS_NAME: "OpenvSwitchName",
    objects.ND_OVS_LINK: "OpenvSwitchLink",
}
# Parameters' field kinds by their check's kind, as Ganeti's _VTToQFT:
# string parameters are QFT_OTHER there (they may be empty)
_KIND_OF_CHECK = {
    "boolean": constants.QFT_BOOL,
    "integer": constants.QFT_NUMBER,
    "number": constants.QFT_NUMBER_FLOAT,
}


def ParamFieldKind(spec: ParamSpec) -> str:
    """The field kind of a parameter's ``ndp/``, ``hv/`` or ``be/`` field:
    sizes are QFT_UNIT, so clients print them with units as Ganeti's."""
    if spec.unit:
        return constants.QFT_UNIT
    return _KIND_OF_CHECK.get(spec.check.kind, constants.QFT_OTHER)


def _NDParamFields(ndparams_of: Callable[[Any], Any]) -> FieldTable:
    """One ``ndp/<name>`` field per node parameter (effective values)."""
    def field(name: str) -> Callable[[Any], Any]:
        def get(item: Any) -> Any:
            ndparams = ndparams_of(item)
            if isinstance(ndparams, FieldStatus):
                return ndparams
            return ndparams.get(name)
        return get
    return {"ndp/%s" % name: (_ND_TITLES.get(name, "ndp/%s" % name),
                              ParamFieldKind(spec), field(name),
                              "The \"%s\" node parameter" % name)
            for name, spec in objects.ND_PARAMETERS.items()}
