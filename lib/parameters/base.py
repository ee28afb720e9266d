"""How a parameter family is declared, checked, converted and merged.

A family (backend, NIC, node, one disk template, one hypervisor) is a
table of ParamSpec by name. Everything else derives from the table: the
defaults, the type check of stored overrides, the conversion of values
typed as text (CLI ``-B maxmem=1G``, RAPI, opcodes), the merge of changes
into stored overrides and the documentation. A ParamTable also names the
legacy parameters it still accepts and what each stands for; they are
converted here only (ExpandAliases).
"""

from typing import Any, Iterable, Mapping, NamedTuple

from ganeti import constants, errors, ht
from ganeti.utils.text import ParseUnit


class ParamSpec(NamedTuple):
    """Declaration of one parameter of a family.

    ``unit``: the value is a size in MiB, and text may carry a unit
    ("512M", "2G"), as Ganeti's VTYPE_SIZE.
    """

    default: Any
    check: ht.Check
    doc: str
    unit: bool = False


class ParamTable(dict[str, ParamSpec]):
    """A family's parameters by name, with the legacy names it accepts.

    ``aliases`` maps a legacy name to the parameters it sets: Ganeti
    before 2.6 had one ``memory`` where there are now ``minmem`` and
    ``maxmem``. Legacy names are never stored.
    """

    def __init__(self, specs: Mapping[str, ParamSpec],
                 aliases: Mapping[str, tuple[str, ...]] | None = None):
        super().__init__(specs)
        self.aliases = dict(aliases or {})


IMMUTABLE_TYPES = frozenset([str, int, float, bool, type(None)])


def DeepCopy(value: Any) -> Any:
    """Copy JSON-like data and config objects; much faster than deepcopy.

    Anything with a ``Copy`` method (a config object) copies itself.
    """
    kind = type(value)
    if kind in IMMUTABLE_TYPES:
        return value
    if kind is dict:
        return {key: DeepCopy(item) for key, item in value.items()}
    if kind is list:
        return [DeepCopy(item) for item in value]
    if kind is set:
        return set(value)
    if kind is tuple:
        return tuple(DeepCopy(item) for item in value)
    copier = getattr(value, "Copy", None)
    return copier() if copier is not None else value


def ParamDefaults(table: Mapping[str, ParamSpec]) -> dict:
    """Defaults of a parameter family, as a fresh dict."""
    return {key: DeepCopy(spec.default) for key, spec in table.items()}


def _Aliases(table: Mapping[str, ParamSpec]) -> dict[str, tuple[str, ...]]:
    return table.aliases if isinstance(table, ParamTable) else {}


def ExpandAliases(table: Mapping[str, ParamSpec], params: dict) -> dict:
    """``params`` with each legacy name replaced by what it stands for.

    A parameter given under its own name wins over the legacy one
    (``memory=512,maxmem=1024``: minmem 512, maxmem 1024).
    """
    aliases = _Aliases(table)
    if not aliases.keys() & params.keys():
        return params
    result = dict(params)
    for alias, targets in aliases.items():
        if alias in result:
            value = result.pop(alias)
            for target in targets:
                result.setdefault(target, value)
    return result


def OverrideParams(table: Mapping[str, ParamSpec], lower: dict,
                   upper: dict) -> dict:
    """``lower`` overridden by ``upper``; either may use legacy names.

    A legacy name in ``upper`` overrides everything it stands for in
    ``lower``; ``upper`` keeps its names, so that conversion errors name
    what the user gave.
    """
    result = ExpandAliases(table, lower)
    for alias, targets in _Aliases(table).items():
        if alias in upper:
            for target in targets:
                result.pop(target, None)
    result.update(upper)
    return result


def CheckParamDict(table: Mapping[str, ParamSpec], params: Any,
                   what: str) -> None:
    """Raise TypeEnforcementError unless ``params`` fits ``table``.

    Missing keys are allowed: stored parameter dicts only hold overrides.
    """
    if not isinstance(params, dict):
        raise errors.TypeEnforcementError("%s must be a dictionary, not %r" %
                                          (what, params))
    for key, value in params.items():
        spec = table.get(key)
        if spec is None:
            raise errors.TypeEnforcementError(
                "Unknown %s parameter %r (valid: %s)" %
                (what, key, ", ".join(sorted(table))))
        if not spec.check(value):
            raise errors.TypeEnforcementError(
                "%s parameter %r must be %s, not %r" %
                (what, key, spec.check, value))


_TRUE_WORDS = frozenset(["yes", "true", "on", "1"])
_FALSE_WORDS = frozenset(["no", "false", "off", "0"])


def _ForceValue(spec: ParamSpec, value: Any) -> Any:
    """A value typed as text converted to the declared type."""
    if not isinstance(value, str):
        return value
    if spec.unit:
        return ParseUnit(value)
    kind = spec.check.kind
    if kind == "integer":
        return int(value)
    if kind == "number":
        return float(value)
    if kind == "boolean":
        if value.lower() in _TRUE_WORDS:
            return True
        if value.lower() in _FALSE_WORDS:
            return False
        raise ValueError("not a boolean: %r" % value)
    return value


def ForceParamDict(table: Mapping[str, ParamSpec], params: dict,
                   what: str) -> dict:
    """Convert text values to the declared types, then check the dict.

    Values typed on the command line arrive as text (``maxmem=512``,
    ``maxmem=1G``); the declaration of each parameter says what they must
    become. Legacy names are converted and checked as what they stand
    for, and errors name the parameter as given. OpPrereqError if a value
    does not fit.
    """
    aliases = _Aliases(table)
    result = {}
    for key, value in params.items():
        spec = table.get(key)
        if spec is None and key in aliases:
            spec = table[aliases[key][0]]
        if spec is not None:
            try:
                value = _ForceValue(spec, value)
            except (ValueError, errors.UnitParseError):
                raise errors.OpPrereqError(
                    "Invalid value %r for %s parameter '%s' (expected %s)" %
                    (value, what, key, spec.check), errors.ECODE_INVAL)
            if not spec.check(value):
                raise errors.OpPrereqError(
                    "%s parameter %r must be %s, not %r" %
                    (what, key, spec.check, value), errors.ECODE_INVAL)
        result[key] = value
    result = ExpandAliases(table, result)
    try:
        CheckParamDict(table, result, what)
    except errors.TypeEnforcementError as err:
        raise errors.OpPrereqError(str(err), errors.ECODE_INVAL)
    return result


def GetUpdatedParams(old: dict | None, changes: dict,
                     table: Mapping[str, ParamSpec], what: str) -> dict:
    """``old`` parameters with ``changes`` applied and checked.

    A value of None or "default" removes the key (back to the inherited
    value); other values are converted from text to their declared types
    and checked against ``table``.
    """
    resets = {key for key, value in changes.items()
              if value is None or value == constants.VALUE_DEFAULT}
    values = ForceParamDict(table, {key: value for key, value
                                    in changes.items() if key not in resets},
                            what)
    unknown = resets - set(table) - set(_Aliases(table))
    if unknown:
        raise errors.OpPrereqError("Unknown %s parameter(s) %s" %
                                   (what, ", ".join(sorted(unknown))),
                                   errors.ECODE_INVAL)
    resets = set(ExpandAliases(table, dict.fromkeys(resets)))
    result = {key: value for key, value in (old or {}).items()
              if key not in resets}
    result.update(values)
    return result


def FillDict(defaults: dict, custom: dict | None,
             skip_keys: Iterable[str] | None = None) -> dict:
    """Defaults overridden by custom values, as a new deep-copied dict.

    Nested dicts are replaced, not merged: a parameter is one value.
    """
    result = DeepCopy(defaults)
    if custom:
        result.update(DeepCopy(custom))
    if skip_keys:
        for key in skip_keys:
            result.pop(key, None)
    return result
