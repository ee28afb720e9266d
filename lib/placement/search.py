"""Finding providers: the filters of GET /resource_providers and the
allocation candidates of GET /allocation_candidates.

Aggregate membership is tested two ways (see placement-semantics.md):

- directly, on the provider alone (``IsMember``): GET /resource_providers,
  the numbered (suffixed) request groups and the built-in allocator's
  nodes;
- tree-wide, for the unnumbered group: a provider qualifies through
  itself or through the root of the tree it serves (its anchor), so an
  aggregate of a root spans its whole tree; a sharing provider must also
  match ``member_of`` itself.

A sharing provider (``MISC_SHARES_VIA_AGGREGATE``) serves its own tree and
every tree that has any provider in an aggregate with it.
"""

import itertools
from typing import Iterable

from ganeti.placement import model, params
from ganeti.placement.microversion import Version

Allocation = dict[str, dict[str, int]]


def _InAll(aggregates: set[str] | frozenset[str],
           any_of_sets: list[set[str]]) -> bool:
    return all(aggregates & wanted for wanted in any_of_sets)


def IsMember(aggregates: set[str] | frozenset[str],
             any_of_sets: list[set[str]], forbidden: set[str]) -> bool:
    """Direct membership: in one aggregate of every any-of set and in
    no forbidden one (GET /resource_providers, numbered groups, and the
    allocator's nodes, which are root providers without children)."""
    return _InAll(aggregates, any_of_sets) and not aggregates & forbidden


class MemberOf:
    """``member_of`` values (Placement's forms, UUIDs only) parsed once,
    so a refusal can name the value a provider fails."""

    def __init__(self, values: list[str]):
        self.values = [(value, *params.ParseMemberOfValue(value))
                       for value in values]

    def Failed(self, aggregates: set[str] | frozenset[str]) -> str | None:
        """The first value the aggregates do not satisfy, or None."""
        for value, required, forbidden in self.values:
            if not IsMember(aggregates, [required] if required else [],
                            forbidden):
                return value
        return None


def _HasTraits(traits: set[str], required: list[set[str]],
               forbidden: set[str]) -> bool:
    return all(traits & wanted for wanted in required) and \
        not traits & forbidden


class _Context:
    """The state with what a search needs about it computed once."""

    def __init__(self, state: model.State):
        self.state = state
        self.providers = state.providers
        self.usages = state.Usages()
        roots_by_agg: dict[str, set[str]] = {}
        for provider in self.providers.values():
            for agg in provider.aggregates:
                roots_by_agg.setdefault(agg, set()).add(provider.root)
        self._roots_by_agg = roots_by_agg

    def IsSharing(self, provider: model.Provider) -> bool:
        return self.state.IsSharing(provider)

    def Fits(self, provider: model.Provider, rclass: str,
             amount: int) -> bool:
        """Whether the provider can take one more allocation of amount."""
        inventory = provider.inventories.get(rclass)
        if inventory is None or not model.FitsUnits(inventory, amount):
            return False
        used = self.usages.get(provider.uuid, {}).get(rclass, 0)
        return used + amount <= model.Capacity(inventory)

    def HasCapacity(self, provider: model.Provider, rclass: str,
                    amount: int) -> bool:
        """Whether the provider has room for groups' summed amounts (the
        units were checked per group)."""
        used = self.usages.get(provider.uuid, {}).get(rclass, 0)
        return used + amount <= model.Capacity(provider.inventories[rclass])

    def Anchors(self, provider: model.Provider) -> set[str]:
        """The roots of the trees the provider's inventory serves."""
        if not self.IsSharing(provider):
            return {provider.root}
        anchors = {provider.root}
        for agg in provider.aggregates:
            anchors |= self._roots_by_agg.get(agg, set())
        return anchors

    def TreeOf(self, uuid: str | None) -> str | None:
        provider = self.providers.get(uuid or "")
        return provider.root if provider else None


# GET /resource_providers -----------------------------------------------------

def FilterProviders(state: model.State,
                    flt: params.ProviderFilter) -> list[model.Provider]:
    """The providers matching every filter, in creation order."""
    ctx = _Context(state)
    tree = None
    if flt.in_tree is not None:
        tree = ctx.TreeOf(flt.in_tree)
        if tree is None:
            return []
    result = []
    for provider in state.providers.values():
        if (flt.name is not None and provider.name != flt.name or
                flt.uuid is not None and provider.uuid != flt.uuid or
                tree is not None and provider.root != tree or
                not IsMember(provider.aggregates, flt.member_of,
                             flt.forbidden_aggs) or
                not _HasTraits(provider.traits, flt.required,
                               flt.forbidden_traits) or
                not all(ctx.Fits(provider, rclass, amount)
                        for rclass, amount in flt.resources.items())):
            continue
        result.append(provider)
    return result


# GET /allocation_candidates --------------------------------------------------

class _Option:
    """One way to satisfy one request group within one tree."""

    def __init__(self, anchor: str, allocation: Allocation,
                 providers: Iterable[str]):
        self.anchor = anchor
        self.allocation = allocation
        self.providers = sorted(set(providers))


def _TreeQualifies(ctx: _Context, group: params.RequestGroup,
                   provider: model.Provider, anchor: str) -> bool:
    """The unnumbered group's aggregate test of a provider serving the
    tree of ``anchor``: through itself or the anchor, never split."""
    root = ctx.providers[anchor]
    if group.member_of:
        own = _InAll(provider.aggregates, group.member_of)
        if ctx.IsSharing(provider) and not own:
            return False
        if not (own or _InAll(root.aggregates, group.member_of)):
            return False
    return not (group.forbidden_aggs and
                (provider.aggregates & group.forbidden_aggs or
                 root.aggregates & group.forbidden_aggs))


def _UnnumberedOptions(ctx: _Context, group: params.RequestGroup
                       ) -> list[_Option]:
    """Per tree, every combination of providers serving each class."""
    tree = ctx.TreeOf(group.in_tree) if group.in_tree else None
    if group.in_tree and tree is None:
        return []
    by_anchor: dict[str, dict[str, list[str]]] = {}
    for rclass, amount in group.resources.items():
        for provider in ctx.providers.values():
            if tree is not None and provider.root != tree:
                continue
            if not ctx.Fits(provider, rclass, amount):
                continue
            for anchor in sorted(ctx.Anchors(provider)):
                if _TreeQualifies(ctx, group, provider, anchor):
                    by_anchor.setdefault(anchor, {}).setdefault(
                        rclass, []).append(provider.uuid)
    options = []
    for anchor, per_class in by_anchor.items():
        if set(per_class) != set(group.resources):
            continue
        classes = sorted(per_class)
        for choice in itertools.product(*(per_class[rc] for rc in classes)):
            traits = set().union(*(ctx.providers[uuid].traits
                                   for uuid in choice))
            if not _HasTraits(traits, group.required,
                              group.forbidden_traits):
                continue
            allocation: Allocation = {}
            for rclass, uuid in zip(classes, choice):
                allocation.setdefault(uuid, {})[rclass] = \
                    group.resources[rclass]
            options.append(_Option(anchor, allocation, choice))
    return options


def _NumberedOptions(ctx: _Context, group: params.RequestGroup
                     ) -> list[_Option]:
    """Single providers satisfying the whole group by themselves."""
    tree = ctx.TreeOf(group.in_tree) if group.in_tree else None
    if group.in_tree and tree is None:
        return []
    options = []
    for provider in ctx.providers.values():
        if (tree is not None and provider.root != tree or
                not IsMember(provider.aggregates, group.member_of,
                             group.forbidden_aggs) or
                not _HasTraits(provider.traits, group.required,
                               group.forbidden_traits) or
                not all(ctx.Fits(provider, rclass, amount)
                        for rclass, amount in group.resources.items())):
            continue
        # A resourceless group (1.36) allocates nothing, it only places
        # the provider in the mappings (for same_subtree)
        allocation = {provider.uuid: dict(group.resources)} \
            if group.resources else {}
        for anchor in sorted(ctx.Anchors(provider)):
            options.append(_Option(anchor, allocation, [provider.uuid]))
    return options


class Candidate:
    """One allocation request: what to allocate where, and which
    providers serve which group."""

    def __init__(self, allocation: Allocation,
                 mappings: dict[str, list[str]]):
        self.allocation = allocation
        self.mappings = mappings

    def Key(self) -> tuple:
        return (tuple(sorted((rp, rc, n) for rp, res in
                             self.allocation.items()
                             for rc, n in res.items())),
                tuple(sorted((s, tuple(p)) for s, p in
                             self.mappings.items())))


def _RootQualifies(ctx: _Context, request: params.CandidateRequest,
                   anchor: str) -> bool:
    """``root_required``: the traits of the candidate's tree's root."""
    traits = ctx.providers[anchor].traits
    return request.root_required <= traits and \
        not traits & request.root_forbidden


def _Ancestors(ctx: _Context, uuid: str) -> set[str]:
    """The provider and its ancestors."""
    result = set()
    node: str | None = uuid
    while node in ctx.providers:
        result.add(node)
        node = ctx.providers[node].parent
    return result


def _InSameSubtree(ctx: _Context, request: params.CandidateRequest,
                   mappings: dict[str, list[str]]) -> bool:
    """``same_subtree``: for each list of groups, one of the providers
    serving them is an ancestor of (or is) all the others."""
    for suffixes in request.same_subtrees:
        providers = set().union(*(mappings.get(s, ()) for s in suffixes))
        if len(providers) < 2:
            continue
        common = set.intersection(*(_Ancestors(ctx, uuid)
                                    for uuid in providers))
        if not common & providers:
            return False
    return True


def _Merge(ctx: _Context, request: params.CandidateRequest,
           per_group: list[list[_Option]]) -> list[Candidate]:
    """Combine one option per group, all serving the same tree."""
    groups = request.groups
    isolate = request.group_policy == "isolate"
    anchors = set.intersection(*({o.anchor for o in options}
                                 for options in per_group))
    result: dict[tuple, Candidate] = {}
    for anchor in sorted(anchors):
        if not _RootQualifies(ctx, request, anchor):
            continue
        choices = [[o for o in options if o.anchor == anchor]
                   for options in per_group]
        for combo in itertools.product(*choices):
            if isolate:
                numbered = [o.providers[0] for g, o in zip(groups, combo)
                            if g.use_same_provider]
                if len(numbered) != len(set(numbered)):
                    continue
            mappings = {g.suffix: o.providers
                        for g, o in zip(groups, combo)}
            if not _InSameSubtree(ctx, request, mappings):
                continue
            allocation: Allocation = {}
            for option in combo:
                for rp, resources in option.allocation.items():
                    total = allocation.setdefault(rp, {})
                    for rclass, amount in resources.items():
                        total[rclass] = total.get(rclass, 0) + amount
            if not all(ctx.HasCapacity(ctx.providers[rp], rc, n)
                       for rp, res in allocation.items()
                       for rc, n in res.items()):
                continue
            candidate = Candidate(allocation, mappings)
            result.setdefault(candidate.Key(), candidate)
    return [result[key] for key in sorted(result)]


def _UsesOneProviderPerTree(ctx: _Context, candidate: Candidate) -> bool:
    """Before 1.29 a request may not combine providers of one tree."""
    own = [rp for rp in candidate.allocation
           if not ctx.IsSharing(ctx.providers[rp])]
    return len(own) == len({ctx.providers[rp].root for rp in own})


def FindCandidates(state: model.State, request: params.CandidateRequest,
                   version: Version) -> dict:
    """The body of GET /allocation_candidates."""
    ctx = _Context(state)
    per_group = [_NumberedOptions(ctx, g) if g.use_same_provider
                 else _UnnumberedOptions(ctx, g) for g in request.groups]
    candidates = _Merge(ctx, request, per_group)
    if version < (1, 29):
        candidates = [c for c in candidates
                      if _UsesOneProviderPerTree(ctx, c)]
    if request.limit is not None:
        candidates = candidates[:request.limit]
    requested = set().union(*(g.resources for g in request.groups))
    return {"allocation_requests": [_FormatCandidate(c, version)
                                    for c in candidates],
            "provider_summaries": _Summaries(ctx, candidates, requested,
                                             version)}


def _FormatCandidate(candidate: Candidate, version: Version) -> dict:
    if version < (1, 12):
        return {"allocations": [
            {"resource_provider": {"uuid": rp}, "resources": res}
            for rp, res in sorted(candidate.allocation.items())]}
    result: dict = {"allocations": {rp: {"resources": res} for rp, res
                                    in candidate.allocation.items()}}
    if version >= (1, 34):
        result["mappings"] = candidate.mappings
    return result


def _Summaries(ctx: _Context, candidates: list[Candidate],
               requested: set[str], version: Version) -> dict:
    """Every provider of the trees used (1.29: nested-aware), or only the
    providers used before."""
    used = {rp for c in candidates for rp in c.allocation}
    if version >= (1, 29):
        roots = {ctx.providers[rp].root for rp in used}
        shown = [p for p in ctx.providers.values() if p.root in roots]
    else:
        shown = [p for p in ctx.providers.values() if p.uuid in used]
    result = {}
    for provider in shown:
        resources = {}
        for rclass, inventory in provider.inventories.items():
            if version < (1, 27) and rclass not in requested:
                continue
            resources[rclass] = {
                "capacity": model.Capacity(inventory),
                "used": ctx.usages.get(provider.uuid, {}).get(rclass, 0)}
        summary: dict = {"resources": resources}
        if version >= (1, 17):
            summary["traits"] = sorted(provider.traits)
        if version >= (1, 29):
            summary["parent_provider_uuid"] = provider.parent
            summary["root_provider_uuid"] = provider.root
        result[provider.uuid] = summary
    return result
