"""Type checks for declared parameters.

A check is a callable returning True for valid values and carrying a
human-readable description, so that one declaration gives both the
validation and the text of the error (and of CLI help and API docs).
"""

import re
from typing import Any, Callable, Iterable


class Check:
    """A predicate with a description ("positive integer", ...)."""

    __slots__ = ("fn", "desc", "kind")

    def __init__(self, fn: Callable[[Any], bool], desc: str,
                 kind: str = "other"):
        self.fn = fn
        self.desc = desc
        # JSON-schema-ish base type, used by the API description and the CLI
        self.kind = kind

    def __call__(self, value: Any) -> bool:
        try:
            return bool(self.fn(value))
        except (TypeError, ValueError, AttributeError):
            return False

    def __str__(self) -> str:
        return self.desc

    __repr__ = __str__


def WithDesc(desc: str, kind: str | None = None) -> Callable:
    """Re-describe a check: ``WithDesc("job id")(TPositiveInt)``."""
    def wrap(check: Check) -> Check:
        return Check(check, desc, kind or check.kind)
    return wrap


class PrivateCheck(Check):
    """The check of a parameter whose value must not be shown.

    Declaring a parameter with it is what makes the value redacted in job
    files, job queries, logs and error messages (see opcodes).
    """

    __slots__ = ()


def TPrivate(check: Check) -> PrivateCheck:
    """``check``, on a private or secret parameter (e.g. osparams_private)."""
    return PrivateCheck(check, "private %s" % check, check.kind)


class _NoDefault:
    def __repr__(self) -> str:
        return "NoDefault"


NoDefault = _NoDefault()
"""Marks a required parameter in a declaration."""

NoType = Check(lambda _: True, "any value")
TAny = NoType
TNone = Check(lambda v: v is None, "None", "null")
TBool = Check(lambda v: isinstance(v, bool), "boolean", "boolean")
TInt = Check(lambda v: isinstance(v, int) and not isinstance(v, bool),
             "integer", "integer")
TFloat = Check(lambda v: isinstance(v, float), "float", "number")
TNumber = Check(lambda v: isinstance(v, (int, float)) and
                not isinstance(v, bool), "number", "number")
TString = Check(lambda v: isinstance(v, str), "string", "string")
TNonEmptyString = Check(lambda v: isinstance(v, str) and bool(v),
                        "non-empty string", "string")
TList = Check(lambda v: isinstance(v, list), "list", "array")
TDict = Check(lambda v: isinstance(v, dict), "dictionary", "object")
TTrue = Check(bool, "true value")
TPositiveInt = Check(lambda v: TInt(v) and v >= 0, "non-negative integer",
                     "integer")
TNonNegativeInt = TPositiveInt
TStrictPositiveInt = Check(lambda v: TInt(v) and v > 0, "positive integer",
                           "integer")
TNonNegativeNumber = Check(lambda v: TNumber(v) and v >= 0,
                           "non-negative number", "number")
TPositiveNumber = Check(lambda v: TNumber(v) and v > 0, "positive number",
                        "number")


def TMaybe(check: Check) -> Check:
    """``check`` or None."""
    return Check(lambda v: v is None or check(v), "None or %s" % check,
                 check.kind)


def TOr(*checks: Check) -> Check:
    """Any of ``checks``."""
    return Check(lambda v: any(c(v) for c in checks),
                 " or ".join(str(c) for c in checks))


def TAnd(*checks: Check) -> Check:
    """All of ``checks``."""
    kind = next((c.kind for c in checks if c.kind != "other"), "other")
    return Check(lambda v: all(c(v) for c in checks),
                 " and ".join(str(c) for c in checks), kind)


def TElemOf(values: Iterable) -> Check:
    """One of a fixed set of values."""
    values = frozenset(values)
    if all(isinstance(v, str) for v in values):
        kind = "string"
    elif all(type(v) is int for v in values):
        kind = "integer"
    else:
        kind = "other"
    return Check(lambda v: v in values,
                 "one of %s" % ", ".join(sorted(repr(v) for v in values)),
                 kind)


def TListOf(check: Check) -> Check:
    """A list whose every item passes ``check``."""
    return Check(lambda v: isinstance(v, list) and all(check(i) for i in v),
                 "list of %s" % check, "array")


def TSetOf(check: Check) -> Check:
    """A list of unique items each passing ``check``."""
    return Check(lambda v: TListOf(check)(v) and len(set(v)) == len(v),
                 "list of unique %s" % check, "array")


def TDictOf(key_check: Check, val_check: Check) -> Check:
    """A dict with keys and values passing the checks."""
    return Check(lambda v: isinstance(v, dict) and
                 all(key_check(k) and val_check(i) for k, i in v.items()),
                 "dictionary of %s to %s" % (key_check, val_check), "object")


def TStrictDict(require_all: bool, exclusive: bool,
                items: dict[str, Check]) -> Check:
    """A dict whose listed keys pass their checks."""
    def fn(value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        if require_all and not set(items) <= set(value):
            return False
        if exclusive and not set(value) <= set(items):
            return False
        return all(items[k](v) for k, v in value.items() if k in items)
    return Check(fn, "dictionary with keys %s" % ", ".join(sorted(items)),
                 "object")


def TTupleOf(*checks: Check) -> Check:
    """A list (or tuple) of exactly len(checks) items passing each check."""
    return Check(lambda v: isinstance(v, (list, tuple)) and
                 len(v) == len(checks) and
                 all(c(i) for c, i in zip(checks, v)),
                 "tuple of (%s)" % ", ".join(str(c) for c in checks), "array")


def TRegex(pattern: str, desc: str | None = None) -> Check:
    """A string fully matching ``pattern``."""
    rex = re.compile(pattern)
    return Check(lambda v: isinstance(v, str) and rex.match(v) is not None,
                 desc or "string matching %s" % pattern, "string")


def TInRange(low: int, high: int) -> Check:
    """An integer with ``low <= value <= high``."""
    return Check(lambda v: TInt(v) and low <= v <= high,
                 "integer in range [%d, %d]" % (low, high), "integer")


TMaybeString = TMaybe(TNonEmptyString)
TMaybeBool = TMaybe(TBool)
TMaybeDict = TMaybe(TDict)
TMaybeListOf = lambda check: TMaybe(TListOf(check))  # noqa: E731
TListOfStrings = TListOf(TString)
TJobId = WithDesc("job id", "integer")(
    TOr(TPositiveInt, TRegex(r"^\d+$")))
TRelativeJobId = WithDesc("relative job id", "integer")(
    Check(lambda v: TInt(v) and v < 0, "negative integer"))
# Names become file and directory names on the nodes, so they are checked
# at the opcode, before anything can use them. Host names (instances) follow
# Ganeti's rule (netutils.Hostname), case-insensitively: letters, digits,
# ".", "_" and "-", at most 255, no empty label.
THostname = TRegex(r"(?!\.)(?!.*\.\.)[A-Za-z0-9._-]{1,255}\Z",
                   "host name (letters, digits, '.', '_', '-')")
# Group names are free text, but never a path: no "/", no control
# character, not "." or ".."
TObjectName = TRegex(r"(?!\.\.?\Z)[^/\x00-\x1f\x7f]{1,255}\Z",
                     "name without '/' or control characters")
