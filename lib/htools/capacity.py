"""Capacity planning as Ganeti's hspace does it (``Program/Hspace.hs``).

Instances of one spec are allocated one after the other on the whole
cluster (each seeing the previous ones, hail's algorithm over the nodes
of every allocatable group) until one fails; the failures of that last
attempt, per fail mode, tell what ran out. The *standard* run uses the
policy's standard spec; the *tiered* run starts at the policy's maximum
spec and, when an allocation fails, shrinks the resource that failed
most by one of hspace's units (64 MiB, 256 MiB, one vCPU) and goes on
(``Cluster.tieredAlloc``). N+1 failures are no resource: when they are
the most frequent, only shrinking another resource that failed can
help, so a run stopped by the capacity check ends there. Both runs
start from the current cluster. With the capacity checks (the default,
not for DRBD) every allocation must leave each node's instances
somewhere to go should the node fail (hail's global N+1 check).

``Stats`` are hspace's cluster totals (``Cluster.CStats``) that its
report prints.
"""

from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from ganeti import constants
from ganeti.htools import (FAIL_CPU, FAIL_DISK, FAIL_MEM, FAIL_MODES,
                           FAIL_N1, display)
from ganeti.htools.metrics import Score
from ganeti.htools.model import Cluster, Group, Instance, Node
from ganeti.htools.placement import (Capacity, GlobalN1, GroupResult,
                                     TryGroup, Commit)
from ganeti.parameters import families

# hspace's fail modes (ours, FailMemberOf, cannot happen without a
# member_of request)
HSPACE_FAIL_MODES = FAIL_MODES[:FAIL_MODES.index("FailInternal") + 1]

# The shrinking steps of the tiered allocation (``Types.unitMem`` ...)
# and the Spec field each shrinks (``shrinkByType``)
UNIT = {FAIL_MEM: 64, FAIL_DISK: 256, FAIL_CPU: 1}
_FIELDS = {FAIL_MEM: "memory", FAIL_DISK: "disk", FAIL_CPU: "vcpus"}

# How far the tiered allocation's searches look ahead before halving,
# and up to how many shrinks they try one by one, as hspace does
_LOOK_AHEAD = 50
_ONE_BY_ONE = 256


class Spec(NamedTuple):
    """An instance size (hspace's ``RSpec``): memory, disk (MiB), vCPUs
    and the disk's spindles (with exclusive storage)."""
    memory: int
    disk: int
    vcpus: int
    spindles: int = 1

    @classmethod
    def FromISpec(cls, ispec: dict) -> "Spec":
        """An instance policy spec (``rspecFromISpec``)."""
        return cls(int(ispec[families.ISPEC_MEM_SIZE]),
                   int(ispec[families.ISPEC_DISK_SIZE]),
                   int(ispec[families.ISPEC_CPU_COUNT]),
                   int(ispec.get(families.ISPEC_SPINDLE_USE, 1)))


class Stats(NamedTuple):
    """hspace's cluster totals (``CStats``); memory, disk in MiB."""
    f_mem: int
    f_dsk: int
    f_spn: int
    a_mem: int
    a_dsk: int
    m_mem: int
    m_dsk: int
    i_mem: int
    i_dsk: int
    i_spn: int
    i_cpu: int
    t_mem: float
    t_dsk: float
    t_spn: float
    t_cpu: float
    v_cpu: int
    n_cpu: float
    x_mem: int
    n_mem: int
    score: float
    instances: int

    @property
    def mem_eff(self) -> float:
        return display.Ratio(self.i_mem, self.t_mem)

    @property
    def dsk_eff(self) -> float:
        return display.Ratio(self.i_dsk, self.t_dsk)

    @property
    def cpu_eff(self) -> float:
        return display.Ratio(self.i_cpu, self.v_cpu)

    @property
    def spn_eff(self) -> float:
        return display.Ratio(self.i_spn, self.t_spn)


def _Spindles(node: Node) -> tuple[int, int]:
    """A node's total and free spindles as hspace reads them over LUXI:
    without exclusive storage the spindle count, none free."""
    if node.excl:
        return int(node.t_sp), int(node.f_sp)
    return (node.spindles, 0) if node.t_mem else (0, 0)


def ClusterStats(cluster: Cluster) -> Stats:
    """The totals over all nodes (``Cluster.totalResources``)."""
    nodes = list(cluster.nodes.values())
    totals: Counter = Counter()
    m_mem = m_dsk = 0
    for node in nodes:
        t_spn, f_spn = _Spindles(node)
        a_mem = max(int(node.f_mem - node.r_mem), 0)
        a_dsk = max(int(node.f_dsk - node.lo_dsk), 0)
        m_mem = max(m_mem, a_mem)
        m_dsk = max(m_dsk, a_dsk)
        x_mem = int(node.x_mem)
        totals.update({
            "f_mem": int(node.f_mem), "f_dsk": int(node.f_dsk),
            "f_spn": f_spn, "a_mem": a_mem, "a_dsk": a_dsk,
            "i_mem": int(node.t_mem - node.n_mem - max(x_mem, 0) -
                         node.f_mem),
            "i_dsk": int(node.t_dsk - node.f_dsk), "i_spn": t_spn - f_spn,
            "i_cpu": int(node.u_cpu), "t_mem": node.t_mem,
            "t_dsk": node.t_dsk, "t_spn": t_spn, "t_cpu": node.t_cpu,
            "v_cpu": int(node.vcpu_ratio * node.t_cpu),
            "n_cpu": node.u_cpu / node.vcpu_ratio if node.vcpu_ratio
            else 0.0, "x_mem": x_mem, "n_mem": int(node.n_mem),
            "instances": len(node.plist)})
    fields = {name: totals[name] for name in Stats._fields
              if name not in ("m_mem", "m_dsk", "score")}
    return Stats(m_mem=m_mem, m_dsk=m_dsk, score=Score(nodes).Total(),
                 **fields)


class Outcome(NamedTuple):
    """A run: the cluster it left, the specs allocated in order and the
    failures of its last, failed attempt (mode, count), most first."""
    cluster: Cluster
    specs: list[Spec]
    fails: list[tuple[str, int]]

    def SpecCounts(self) -> list[tuple[Spec, int]]:
        """Consecutive allocations of one spec and their count
        (``tieredSpecMap``)."""
        result: list[tuple[Spec, int]] = []
        for spec in self.specs:
            if result and result[-1][0] == spec:
                result[-1] = (spec, result[-1][1] + 1)
            else:
                result.append((spec, 1))
        return result


class _Attempt(NamedTuple):
    """One allocation tried: the chosen nodes (None: it failed) and the
    failures, per mode, of the candidates."""
    nodes: tuple[str, ...] | None
    fails: Counter


def SortedFails(fails: Counter) -> list[tuple[str, int]]:
    """Every fail mode with its count, most first, ties in hspace's order
    (``collapseFailures``, ``sortReasons``)."""
    return sorted(((mode, fails[mode]) for mode in HSPACE_FAIL_MODES),
                  key=lambda pair: -pair[1])


class Allocator:
    """hspace's allocation on one copy of the cluster.

    ``groups`` are the UUIDs of the groups allocated in (by default
    those not unallocable); ``capacity`` the global N+1 check of every
    allocation (never for DRBD, as hspace).
    """

    def __init__(self, message: dict, template: str, spindle_use: int,
                 groups: list[str] | None = None,
                 capacity: bool = True) -> None:
        self.message = message
        self.template = template
        self.spindle_use = spindle_use
        self.group_uuids = groups
        self.required = 2 if template in constants.DTS_INT_MIRROR else 1
        self.capacity = capacity and template != constants.DT_DRBD8
        # the allocations done, in order: their spec and nodes
        self.placed: list[tuple[Spec, tuple[str, ...]]] = []
        self._Load()
        # hspace's guess of the instances that fit reads the free memory
        # the nodes report, which allocations do not change
        self.reported_free = sum(
            int(data.get("free_memory") or 0)
            for name, data in (message.get("nodes") or {}).items()
            if self.cluster.nodes[name].t_mem)
        self.max_memory = max((node.t_mem for node in
                               self.cluster.nodes.values()), default=0.0)

    def _Load(self) -> None:
        """The cluster of the message with the allocations done."""
        self.cluster = Cluster(self.message)
        groups = self.group_uuids
        self.groups: list[Group] = [
            group for group in self.cluster.groups.values()
            if (group.uuid in groups if groups is not None
                else group.rank < 2)]
        self.score = Score(list(self.cluster.nodes.values()))
        placed, self.placed = self.placed, []
        for spec, nodes in placed:
            self._Commit(spec, nodes)

    @property
    def specs(self) -> list[Spec]:
        return [spec for spec, _ in self.placed]

    def _Instance(self, spec: Spec) -> Instance:
        name = "new-%d" % len(self.placed)
        return self.cluster.NewInstance(name, {
            "name": name, "memory": spec.memory, "vcpus": spec.vcpus,
            "disk_template": self.template,
            "disks": [{"size": spec.disk, "mode": "rw",
                       "spindles": spec.spindles}],
            "disk_space_total": spec.disk, "spindle_use": self.spindle_use,
            "tags": [], "nics": []})

    def _Commit(self, spec: Spec, nodes: tuple[str, ...]) -> None:
        Commit(self.cluster, self.score, self._Instance(spec), list(nodes))
        self.placed.append((spec, nodes))

    def _Checker(self) -> Capacity:
        return Capacity(self.cluster, self.score,
                        list(self.cluster.nodes.values()), evacuate=True)

    def Try(self, spec: Spec, capacity: bool | None = None) -> _Attempt:
        """Where an instance of ``spec`` would go (``tryAlloc``), with
        the capacity check unless ``capacity`` is false; nothing
        changes."""
        if capacity is None:
            capacity = self.capacity
        inst = self._Instance(spec)
        if not self.groups:
            return _Attempt(None, Counter())
        merged = GroupResult(self.groups[0])
        for group in self.groups:
            res = TryGroup(self.cluster, self.score, group, inst,
                           self.required, keep=0 if capacity else 1)
            merged.candidates += res.candidates
            merged.fails.update(res.fails)
        merged.candidates.sort()
        if capacity and merged.candidates:
            GlobalN1(inst, merged, self._Checker())
        best = merged.best
        return _Attempt(best.nodes if best is not None else None,
                        merged.fails)

    def _SmallSteps(self, spec: Spec, limit: int | None,
                    capacity: bool) -> Counter:
        """Allocate one by one until an attempt fails or ``limit`` more
        are done (``iterateAllocSmallStep``); the failures of the last
        attempt."""
        done = 0
        while True:
            attempt = self.Try(spec, capacity)
            if attempt.nodes is None or \
                    (limit is not None and done >= limit):
                return attempt.fails
            self._Commit(spec, attempt.nodes)
            done += 1

    def _Redundant(self) -> bool:
        """Whether every node's instances could go elsewhere should it
        fail (``GlobalN1.redundant``)."""
        return not self._Checker().broken

    def _GuessSteps(self, spec: Spec) -> int:
        """hspace's first batch size (``guessBigstepSize``)."""
        guess = (self.reported_free - round(self.max_memory)) // \
            max(spec.memory, 1) - len(self.cluster.nodes)
        return max(guess, 20)

    def Iterate(self, spec: Spec, limit: int | None) -> Counter:
        """Allocate until an attempt fails or ``limit`` more are done
        (``iterateAlloc``): with the capacity check, in batches without
        it that are kept when the cluster is redundant after them (first
        of hspace's guessed size, then of 10), else one by one."""
        if not self.capacity:
            return self._SmallSteps(spec, limit, False)
        huge = True
        while True:
            size = self._GuessSteps(spec) if huge else 10
            batch = size if limit is None else min(size, limit)
            before = len(self.placed)
            fails = self._SmallSteps(spec, batch, False)
            if self._Redundant():
                done = len(self.placed) - before
                if limit is not None:
                    limit = max(limit - size, 0)
                if limit == 0 or not done:
                    return fails
                continue
            del self.placed[before:]
            self._Load()
            if huge:
                huge = False
                continue
            return self._SmallSteps(spec, limit, True)

    @staticmethod
    def _Shrinks(spec: Spec, mode: str) -> tuple[int, Callable[[int], Spec]]:
        """How many of ``spec`` and its shrinks by the resource ``mode``
        names there are, and the one at an index (computed, not listed:
        a policy's maximum may be millions of units)."""
        unit = UNIT.get(mode)
        if unit is None:
            return 1, lambda idx: spec
        field = _FIELDS[mode]
        value = getattr(spec, field)
        count = 1 + max(0, (value - unit) // unit)
        return count, lambda idx: spec._replace(**{field: value - idx * unit})

    def _SufficesShrinking(self, spec: Spec, mode: str) -> Spec | None:
        """The first shrink by ``mode`` that allocates, as long as each
        failing one still fails on ``mode`` (``sufficesShrinking``);
        ``spec`` itself is known to fail on ``mode``. The shrinks are
        searched as ``_NextChange`` does."""
        length, shrink = self._Shrinks(spec, mode)
        found: list[Spec] = []

        def stops(idx: int) -> bool:
            candidate = shrink(idx + 1)
            attempt = self.Try(candidate)
            if attempt.nodes is not None:
                found.append(candidate)
                return True
            return not attempt.fails[mode]

        idx = _FirstIndex(length - 1, stops)
        if idx is None or not found or found[-1] != shrink(idx + 1):
            return None
        return found[-1]

    def Tiered(self, spec: Spec, limit: int | None) -> Counter:
        """``Cluster.tieredAlloc``: allocate ``spec`` until it fails, then
        go on with it shrunk by one unit of its most frequent failure;
        when no shrink below allocates, with the first shrink by another
        failure that allocates (``sufficesShrinking``), tried from the
        smallest shrink up. A limit counts down by all allocations so far
        at every shrink, as in hspace. The failures of the last spec that
        allocated.

        Shrinks that fail as the one before are skipped (``_NextChange``):
        a policy's maximum may be millions of units above what fits, which
        takes hspace hours."""
        fails = self.Iterate(spec, limit)
        while True:
            # the shrinks that allocated nothing: spec, failures, limit
            levels: list[tuple[Spec, Counter, int | None]] = []
            done = len(self.placed)
            current, current_fails = spec, fails
            while True:
                if limit is not None:
                    if limit <= len(self.placed):
                        break
                    limit -= len(self.placed)
                levels.append((current, current_fails, limit))
                # with a limit counting down, every shrink counts
                skip = limit is None or not self.placed
                step = self._NextChange(current, current_fails, skip)
                if step is None:
                    break
                same, shrunk = step
                if same is not None:
                    levels.append((same, current_fails, limit))
                current, current_fails = shrunk, self.Iterate(shrunk, limit)
                if len(self.placed) > done:
                    break
            if len(self.placed) > done:
                spec, fails = current, current_fails
                continue
            bigger = self._BigStep(levels)
            if bigger is None:
                return fails
            spec, limit = bigger
            fails = self.Iterate(spec, limit)

    def _BigStep(self, levels: list[tuple[Spec, Counter, int | None]]
                 ) -> tuple[Spec, int | None] | None:
        """The spec (and limit) a tiered run goes on with when shrinking
        by the most frequent failure allocated nothing: each level's
        failures, most frequent first, from the smallest level up."""
        for spec, fails, limit in reversed(levels):
            for mode in reversed(_Ascending(fails)):
                # the level's spec failed with these failures: modes
                # that did not fail stop sufficesShrinking at once
                if not fails[mode]:
                    continue
                shrunk = self._SufficesShrinking(spec, mode)
                if shrunk is not None:
                    return shrunk, limit
        return None

    def _NextChange(self, spec: Spec, fails: Counter, skip: bool
                    ) -> tuple[Spec | None, Spec] | None:
        """The next shrink of the tiered run below ``spec``, which failed
        with ``fails``: one unit less of its most frequent failure
        (``shrinkByType``; None when none is left or the failure names no
        resource). With ``skip``, the first shrink that allocates or fails
        otherwise (else the smallest), and the last one failing as
        ``spec`` did before it (or None)."""
        length, shrink = self._Shrinks(spec, _Ascending(fails)[-1])
        if length <= 1:
            return None
        if not skip:
            return None, shrink(1)

        def changed(idx: int) -> bool:
            attempt = self.Try(shrink(idx + 1))
            return attempt.nodes is not None or attempt.fails != fails

        found = _FirstIndex(length - 1, changed)
        idx = length - 1 if found is None else found + 1
        return (shrink(idx - 1) if idx > 1 else None), shrink(idx)


def _Ascending(fails: Counter) -> list[str]:
    """hspace's fail modes by their count, ties in its order (the stable
    ``sortBy (comparing snd)`` of ``collapseFailures``)."""
    return sorted(HSPACE_FAIL_MODES, key=lambda mode: fails[mode])


def _FirstIndex(length: int, pred: Callable[[int], bool]) -> int | None:
    """The first index below ``length`` at which ``pred`` holds: one by
    one (exact) up to ``_ONE_BY_ONE``, beyond by a monotone search (the
    failures need not be monotone: near a policy's minimum they rise
    again)."""
    if length <= _ONE_BY_ONE:
        return next((idx for idx in range(length) if pred(idx)), None)
    return _MonotoneFind(length, pred)


def _MonotoneFind(length: int, pred: Callable[[int], bool]) -> int | None:
    """The first index below ``length`` at which the (monotone) predicate
    holds: looking ``_LOOK_AHEAD`` ahead while far, then halving
    (``monotoneFind`` with the heuristics of later Ganeti versions)."""
    start, end = 0, length
    while start < end:
        size = end - start
        step = _LOOK_AHEAD if size > _LOOK_AHEAD else size // 2
        probe = start + step
        if pred(probe):
            if step == 0:
                return probe
            inner = _MonotoneFind(step, lambda idx: pred(start + idx))
            return probe if inner is None else start + inner
        start = probe + 1
    return None


class Report(NamedTuple):
    """hspace's results: the initial totals, the tiered and the standard
    run with the specs they started from."""
    initial: Stats
    template: str
    tiered_spec: Spec
    tiered: Outcome
    standard_spec: Spec
    standard: Outcome
    initial_instances: int
    nodes: int
    exclusive_storage: bool


def HSpace(message: dict, template: str | None = None,
           standard: Spec | None = None, tiered: Spec | None = None,
           spindle_use: int | None = None, capacity: bool = True,
           independent_groups: bool = False, accept_existing: bool = False,
           max_length: int = -1) -> Report:
    """hspace on the cluster of an iallocator message (whose storage
    figures are those of ``template``): the standard and the tiered
    allocation, each from the current cluster."""
    base = Cluster(message)
    policy = families.FillIPolicy(families.IPOLICY_DEFAULTS,
                                  message.get("ipolicy") or {})
    if template is None:
        template = policy[families.IPOLICY_DTS][0]
    std_spec = standard or Spec.FromISpec(policy[families.ISPECS_STD])
    if spindle_use is None:
        spindle_use = int(policy[families.ISPECS_STD].get(
            families.ISPEC_SPINDLE_USE, 1))
    tiered_specs = [tiered] if tiered is not None else [
        Spec.FromISpec(pair[families.ISPECS_MAX])
        for pair in policy[families.ISPECS_MINMAX]]
    limit = None if max_length == -1 else max_length
    # Nodes failing N+1 already: their groups take nothing (unless
    # accepted); with no group left, or not independent, nothing at all
    bad_groups = {node.group.uuid for node in base.nodes.values()
                  if not node.offline and node.fail_n1}
    groups = [group for group in base.groups.values() if group.rank < 2
              and (accept_existing or group.uuid not in bad_groups)]
    stopped = bad_groups and not accept_existing and \
        not (independent_groups and groups)

    def Run(specs: list[Spec], tiered_run: bool) -> Outcome:
        alloc = Allocator(message, template, spindle_use,
                          [group.uuid for group in groups], capacity)
        if stopped:
            return Outcome(alloc.cluster, [], [(FAIL_N1, 1)])
        fails: Counter = Counter()
        for spec in specs:
            if not tiered_run:
                fails = alloc.Iterate(spec, limit)
                continue
            run_limit = limit
            if run_limit is not None:
                # hspace's combineTiered: the limit less all so far
                if run_limit <= len(alloc.placed):
                    break
                run_limit -= len(alloc.placed)
            fails = alloc.Tiered(spec, run_limit)
        return Outcome(alloc.cluster, alloc.specs, SortedFails(fails))

    return Report(ClusterStats(base), template, tiered_specs[0],
                  Run(tiered_specs, True), std_spec, Run([std_spec], False),
                  len(base.instances), len(base.nodes),
                  any(node.excl for node in base.nodes.values()))
