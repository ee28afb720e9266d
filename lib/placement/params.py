"""Query-string parsing as Placement does it, microversion by microversion.

The order of the checks, and so which message a bad request gets, follows
Placement: first the keys allowed at the version (its JSON schema), then
each parameter's value, then (allocation candidates) the request groups.
Queries are lists of ``(key, value)`` pairs in request order, blank
values kept.
"""

import dataclasses
import re
import uuid as uuidlib

from ganeti import errors
from ganeti import placement as pl
from ganeti.placement import model
from ganeti.placement.microversion import Version

Query = list[tuple[str, str]]

_QS_PREFIX = "Invalid query string parameters: "

_NUMBERED_SUFFIX = "[1-9][0-9]*"
_STRING_SUFFIX = "[a-zA-Z0-9_-]{1,64}"
_LIMIT_RE = re.compile(r"^[1-9][0-9]*$")


def _BadRequest(detail: str, code: str = pl.ERR_UNDEFINED) -> None:
    raise errors.PlacementError(400, detail, code)


def GetAll(query: Query, key: str) -> list[str]:
    return [value for name, value in query if name == key]


def GetLast(query: Query, key: str) -> str | None:
    """The last value of a key, as Placement's schema sees it."""
    values = GetAll(query, key)
    return values[-1] if values else None


def IsUuid(value: str) -> bool:
    """Whether ``value`` is a UUID in canonical form.

    Placement accepts any form ``uuid.UUID`` parses but compares the text
    verbatim, so other forms match nothing; they are refused here instead.
    """
    try:
        return str(uuidlib.UUID(value)) == value
    except ValueError:
        return False


def CheckKeys(query: Query, allowed: set[str],
              patterns: tuple[str, ...] = ()) -> None:
    """Refuse keys the version's schema does not know (400)."""
    regexes = [re.compile(pattern) for pattern in patterns]
    unknown: list[str] = []
    for key, _ in query:
        if key in allowed or any(r.search(key) for r in regexes):
            continue
        if key not in unknown:
            unknown.append(key)
    if not unknown:
        return
    names = ", ".join("'%s'" % key for key in unknown)
    if patterns:
        _BadRequest(_QS_PREFIX + "%s %s not match any of the regexes: %s" %
                    (names, "does" if len(unknown) == 1 else "do",
                     ", ".join("'%s'" % p for p in sorted(patterns))))
    _BadRequest(_QS_PREFIX + "Additional properties are not allowed (%s %s"
                " unexpected)" % (names, "was" if len(unknown) == 1
                                  else "were"))


def CheckUuidParam(value: str | None) -> None:
    if value is not None and not IsUuid(value):
        _BadRequest(_QS_PREFIX + "'%s' is not a 'uuid'" % value)


# member_of -------------------------------------------------------------

def ParseMemberOfValue(value: str) -> tuple[set[str], set[str]]:
    """One ``member_of`` value as ``(required any-of, forbidden)``."""
    if "," in value and not (value.startswith("in:") or
                             value.startswith("!in:")):
        _BadRequest("Multiple values for 'member_of' must be prefixed with"
                    " the 'in:' or '!in:' keyword using the valid"
                    " microversion. Got: %s" % value)
    forbid = value.startswith("!")
    text = value[1:] if forbid else value
    items = text[3:].split(",") if text.startswith("in:") else [text]
    for item in items:
        if not IsUuid(item):
            _BadRequest(_QS_PREFIX + "Expected 'member_of' parameter to"
                        " contain valid UUID(s). Got: %s" % item)
    return (set(), set(items)) if forbid else (set(items), set())


def ParseMemberOf(query: Query, suffix: str, version: Version
                  ) -> tuple[list[set[str]], set[str]]:
    """``member_of<suffix>``: an AND of any-of sets, and a forbidden set."""
    key = "member_of" + suffix
    values = GetAll(query, key)
    if version < (1, 24) and len(values) > 1:
        _BadRequest("Multiple member_of%s parameters are not supported" %
                    suffix)
    required_sets: list[set[str]] = []
    forbidden_all: set[str] = set()
    for value in values:
        required, forbidden = ParseMemberOfValue(value)
        if required:
            required_sets.append(required)
        if forbidden:
            if version < (1, 32):
                _BadRequest("Forbidden member_of%s parameters are not"
                            " supported in the specified microversion" %
                            suffix)
            forbidden_all |= forbidden
    return required_sets, forbidden_all


# resources and required ----------------------------------------------------

def ParseResources(value: str, state: model.State) -> dict[str, int]:
    """``VCPU:2,MEMORY_MB:1024`` as a dict (400 if malformed or unknown)."""
    if not value.strip():
        _BadRequest("Badly formed resources parameter. Expected resources"
                    " query string parameter in form:"
                    " ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.")
    result: dict[str, int] = {}
    for item in value.split(","):
        try:
            rclass, amount_text = item.split(":")
            amount = int(amount_text)
        except ValueError:
            _BadRequest("Badly formed resources parameter. Expected"
                        " resources query string parameter in form:"
                        " ?resources=VCPU:2,MEMORY_MB:1024. Got: %s." %
                        value)
        if amount < 1:
            _BadRequest("Requested resource %s expected positive integer"
                        " amount. Got: %d." % (rclass, amount))
        if not state.IsResourceClass(rclass):
            _BadRequest("Invalid resource class in resources parameter: No"
                        " such resource class %s." % rclass)
        result[rclass] = amount
    return result


def _ParseTraitsValue(value: str, allow_forbidden: bool, allow_any: bool
                      ) -> tuple[list[set[str]], set[str]]:
    """One ``required`` value: an AND of any-of trait sets, and the
    forbidden traits (``!``, allowed from 1.22; ``in:``, from 1.39)."""
    if value.startswith("in:"):
        if not allow_any:
            _BadRequest(_QS_PREFIX + "The format 'in:HW_CPU_X86_VMX,"
                        "CUSTOM_MAGIC' only supported since microversion"
                        " 1.39. Got: %s" % value)
        any_of = {name.strip() for name in value[3:].split(",")}
        if not all(any_of):
            _BadRequest(_QS_PREFIX + "Expected 'required' parameter value"
                        " of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got"
                        " an empty trait in: %s" % value)
        if any(name.startswith("!") for name in any_of):
            _BadRequest(_QS_PREFIX + "The format 'in:HW_CPU_X86_VMX,"
                        "CUSTOM_MAGIC' does not support forbidden traits."
                        " Got: %s" % value)
        return [any_of], set()
    names = [name.strip() for name in value.split(",")]
    # Placement strips any number of "!" (an accepted quirk)
    forbidden = {name.lstrip("!") for name in names if name.startswith("!")}
    form = "HW_CPU_X86_VMX,!CUSTOM_MAGIC" if allow_forbidden else \
        "HW_CPU_X86_VMX,CUSTOM_MAGIC"
    if not all(names) or not all(forbidden):
        _BadRequest(_QS_PREFIX + "Expected 'required' parameter value of"
                    " the form: %s. Got an empty trait in: %s" %
                    (form, value))
    if forbidden and not allow_forbidden:
        _BadRequest(_QS_PREFIX + "Expected 'required' parameter value of"
                    " the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s" %
                    value)
    return [{name} for name in names if not name.startswith("!")], forbidden


def CheckTraitsExist(names: set[str], state: model.State) -> None:
    unknown = sorted(name for name in names if not state.IsTrait(name))
    if unknown:
        _BadRequest("No such trait(s): %s" % ", ".join(unknown))


def ParseRequired(values: list[str], version: Version, state: model.State
                  ) -> tuple[list[set[str]], set[str]]:
    """``required`` values: an AND of any-of trait sets, and the forbidden
    traits. Before 1.39 only the last value counts, as in Placement."""
    if version < (1, 39):
        values = values[-1:]
    required: list[set[str]] = []
    forbidden: set[str] = set()
    for value in values:
        any_of, none_of = _ParseTraitsValue(value, version >= (1, 22),
                                            version >= (1, 39))
        required += any_of
        forbidden |= none_of
    CheckTraitsExist(set().union(*required) | forbidden, state)
    return required, forbidden


# GET /resource_providers ---------------------------------------------------

@dataclasses.dataclass
class ProviderFilter:
    """The filters of GET /resource_providers (all ANDed)."""

    name: str | None = None
    uuid: str | None = None
    member_of: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_aggs: set[str] = dataclasses.field(default_factory=set)
    in_tree: str | None = None
    resources: dict[str, int] = dataclasses.field(default_factory=dict)
    required: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_traits: set[str] = dataclasses.field(default_factory=set)


def ParseProviderFilter(query: Query, version: Version,
                        state: model.State) -> ProviderFilter:
    allowed = {"name", "uuid"}
    for key, since in (("member_of", (1, 3)), ("resources", (1, 4)),
                       ("in_tree", (1, 14)), ("required", (1, 18))):
        if version >= since:
            allowed.add(key)
    CheckKeys(query, allowed)
    result = ProviderFilter(name=GetLast(query, "name"),
                            uuid=GetLast(query, "uuid"),
                            in_tree=GetLast(query, "in_tree"))
    CheckUuidParam(result.uuid)
    CheckUuidParam(result.in_tree)
    result.member_of, result.forbidden_aggs = ParseMemberOf(query, "",
                                                            version)
    resources = GetLast(query, "resources")
    if resources is not None:
        result.resources = ParseResources(resources, state)
    required = GetAll(query, "required")
    if required:
        result.required, result.forbidden_traits = ParseRequired(
            required, version, state)
    return result


# GET /allocation_candidates ------------------------------------------------

@dataclasses.dataclass
class RequestGroup:
    """One request group; the unnumbered one has suffix ""."""

    suffix: str
    resources: dict[str, int] = dataclasses.field(default_factory=dict)
    required: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_traits: set[str] = dataclasses.field(default_factory=set)
    member_of: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_aggs: set[str] = dataclasses.field(default_factory=set)
    in_tree: str | None = None

    @property
    def use_same_provider(self) -> bool:
        return self.suffix != ""


@dataclasses.dataclass
class CandidateRequest:
    """The request groups and the request-wide options: ``root_required``
    (1.35) constrains the root of each candidate's tree; each set of
    ``same_subtrees`` (1.36) names groups whose providers must all sit
    under one of them."""

    groups: list[RequestGroup]
    group_policy: str | None = None
    limit: int | None = None
    root_required: set[str] = dataclasses.field(default_factory=set)
    root_forbidden: set[str] = dataclasses.field(default_factory=set)
    same_subtrees: list[list[str]] = dataclasses.field(default_factory=list)


_GROUP_PARAMS = ("resources", "required", "member_of", "in_tree")


def _GroupKeyPatterns(version: Version) -> tuple[str, ...]:
    suffix = _STRING_SUFFIX if version >= (1, 33) else _NUMBERED_SUFFIX
    names = [name for name in _GROUP_PARAMS
             if name != "in_tree" or version >= (1, 31)]
    return tuple("^%s(%s)?$" % (name, suffix) for name in names)


def _CheckCandidateKeys(query: Query, version: Version) -> None:
    allowed = {"resources", "limit", "required", "member_of",
               "group_policy", "in_tree", "root_required", "same_subtree"}
    for key, since in (("limit", (1, 16)), ("required", (1, 17)),
                       ("member_of", (1, 21)), ("group_policy", (1, 25)),
                       ("in_tree", (1, 31)), ("root_required", (1, 35)),
                       ("same_subtree", (1, 36))):
        if version < since:
            allowed.discard(key)
    if version < (1, 25):
        CheckKeys(query, allowed)
        if GetLast(query, "resources") is None:
            _BadRequest(_QS_PREFIX + "'resources' is a required property")
        return
    CheckKeys(query, allowed, _GroupKeyPatterns(version))


def _SplitGroupKey(key: str, version: Version) -> tuple[str, str] | None:
    for pattern in _GroupKeyPatterns(version):
        match = re.match(pattern, key)
        if match:
            return key[:len(key) - len(match.group(1) or "")], \
                match.group(1) or ""
    return None


def _CheckOrphans(groups: list[RequestGroup]) -> None:
    checks = (
        ("required", lambda g: g.required or g.forbidden_traits,
         "All traits parameters must be associated with resources.  Found"
         " the following orphaned traits keys: %s"),
        ("member_of", lambda g: g.member_of or g.forbidden_aggs,
         "All member_of parameters must be associated with resources."
         " Found the following orphaned member_of keys: %s"),
        ("in_tree", lambda g: g.in_tree,
         "All in_tree parameters must be associated with resources. Found"
         " the following orphaned in_tree keys: %s"),
    )
    for name, has, message in checks:
        orphans = [name + g.suffix for g in groups
                   if has(g) and not g.resources]
        if orphans:
            _BadRequest(message % ", ".join(orphans))
    if not all(g.resources for g in groups):
        _BadRequest("All request groups must specify resources.")
    if not groups:
        _BadRequest("At least one request group (`resources` or"
                    " `resources{$S}`) is required.")


def _ParseRootRequired(query: Query) -> tuple[set[str], set[str]]:
    """``root_required`` (1.35): traits the root must have and not have;
    one value, without ``in:``."""
    values = GetAll(query, "root_required")
    if not values:
        return set(), set()
    if len(values) > 1:
        _BadRequest("Query parameter 'root_required' may be specified only"
                    " once.", pl.ERR_QUERY_DUPLICATE_KEY)
    any_of, forbidden = _ParseTraitsValue(values[0], True, False)
    required = set().union(*any_of)
    conflicts = required & forbidden
    if conflicts:
        _BadRequest("Conflicting required and forbidden traits found in"
                    " root_required: %s" % ", ".join(sorted(conflicts)),
                    pl.ERR_QUERY_BAD_VALUE)
    return required, forbidden


def _CheckTraitConflicts(groups: list[RequestGroup]) -> None:
    """A group that requires a trait (or any of a set, all forbidden) and
    forbids it can never match: refused as Placement does."""
    conflicts = []
    for group in groups:
        names = sorted(set().union(*[any_of for any_of in group.required
                                     if any_of <= group.forbidden_traits]))
        if names:
            conflicts.append("required%s: (%s)" % (group.suffix,
                                                   ", ".join(names)))
    if conflicts:
        _BadRequest("Conflicting required and forbidden traits found in the"
                    " following traits keys: %s" %
                    ", ".join(sorted(conflicts)))


def _ParseSameSubtree(query: Query) -> list[list[str]]:
    """``same_subtree`` (1.36): lists of group suffixes, in query order."""
    result = []
    for value in GetAll(query, "same_subtree"):
        suffixes = list(dict.fromkeys(s.strip() for s in value.split(",")))
        if "" in suffixes:
            _BadRequest("Empty string (unsuffixed group) can not be"
                        " specified in `same_subtree` ",
                        pl.ERR_QUERY_BAD_VALUE)
        result.append(suffixes)
    return result


def _CheckSubtreeGroups(groups: list[RequestGroup],
                        same_subtrees: list[list[str]]) -> None:
    """From 1.36 a group without resources is legal if ``same_subtree``
    names it; one group at least must have resources, and
    ``same_subtree`` may name existing groups only."""
    resourceless = [g.suffix for g in groups if not g.resources]
    if len(resourceless) == len(groups):
        _BadRequest("There must be at least one resources or resources[$S]"
                    " parameter.", pl.ERR_QUERY_MISSING_VALUE)
    named = [suffix for suffixes in same_subtrees for suffix in suffixes]
    bad = [suffix for suffix in resourceless if suffix not in named]
    if bad:
        _BadRequest("Resourceless suffixed group request should be specified"
                    " in `same_subtree` query param: bad group(s) - %s." %
                    bad, pl.ERR_QUERY_BAD_VALUE)
    suffixes = [g.suffix for g in groups]
    bad = list(dict.fromkeys(s for s in named if s not in suffixes))
    if bad:
        _BadRequest("Real suffixes should be specified in `same_subtree`:"
                    " %s not found in %s." % (bad, suffixes),
                    pl.ERR_QUERY_BAD_VALUE)


def ParseCandidateRequest(query: Query, version: Version,
                          state: model.State) -> CandidateRequest:
    """The request groups and options of GET /allocation_candidates."""
    _CheckCandidateKeys(query, version)
    limit = GetLast(query, "limit")
    if limit is not None and not _LIMIT_RE.match(limit):
        _BadRequest(_QS_PREFIX + "'%s' does not match '^[1-9][0-9]*$'" %
                    limit)
    policy = GetLast(query, "group_policy")
    if policy is not None and policy not in ("none", "isolate"):
        _BadRequest(_QS_PREFIX + "'%s' is not one of ['none', 'isolate']" %
                    policy)
    root_required, root_forbidden = _ParseRootRequired(query)
    same_subtrees = _ParseSameSubtree(query)
    for key, value in query:
        if key.startswith("in_tree"):
            CheckUuidParam(value)
    by_suffix: dict[str, RequestGroup] = {}
    for key, _ in query:
        split = _SplitGroupKey(key, version) if version >= (1, 25) else \
            ((key, "") if key in _GROUP_PARAMS else None)
        if split is not None and split[1] not in by_suffix:
            by_suffix[split[1]] = RequestGroup(split[1])
    for suffix, group in by_suffix.items():
        resources = GetLast(query, "resources" + suffix)
        if resources is not None:
            group.resources = ParseResources(resources, state)
        required = GetAll(query, "required" + suffix)
        if required:
            group.required, group.forbidden_traits = ParseRequired(
                required, version, state)
        group.member_of, group.forbidden_aggs = ParseMemberOf(
            query, suffix, version)
        group.in_tree = GetLast(query, "in_tree" + suffix)
    groups = list(by_suffix.values())
    if version >= (1, 36):
        _CheckSubtreeGroups(groups, same_subtrees)
    else:
        _CheckOrphans(groups)
    _CheckTraitConflicts(groups)
    numbered = [g for g in groups if g.use_same_provider]
    if len(numbered) > 1 and policy is None:
        _BadRequest('The "group_policy" parameter is required when'
                    ' specifying more than one "resources{N}" parameter.')
    CheckTraitsExist(root_required | root_forbidden, state)
    return CandidateRequest(groups=groups, group_policy=policy,
                            limit=int(limit) if limit else None,
                            root_required=root_required,
                            root_forbidden=root_forbidden,
                            same_subtrees=same_subtrees)
