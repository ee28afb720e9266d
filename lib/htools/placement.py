"""Placing one new instance: hail's ``tryAlloc`` and group choice.

Every online node of a group (or every ordered pair of distinct nodes for
a mirrored template) is a candidate. A candidate passes hail's checks
(instance policy, then ``Node.AddPri``/``AddSec``) and is scored with the
cluster score as it would be after the placement; the lowest score wins,
ties going to the candidate hail tries last (the last node by name, for
a pair the last primary with its last secondary): its ``concatAllocs``
keeps a new solution unless the kept one scores lower. Groups are ordered
by allocation policy first (preferred, then last_resort; unallocable only
when named) and by their best score second.

Nodes in the same state give the same result for the same instance, so a
single-node evaluation is computed once per distinct node state (exact,
as the arithmetic is the same; it keeps homogeneous clusters cheap).
"""

import bisect
from collections import Counter
from operator import attrgetter
from typing import NamedTuple

from ganeti.htools import FAIL_MEMBER_OF, FAIL_MODES, FAIL_N1, evacuate, moves
from ganeti.htools.metrics import NodeValues, Score, Values
from ganeti.htools.ipolicy import PolicyFailure
from ganeti.htools.model import Cluster, Failure, Group, Instance, Node
from ganeti.placement.search import MemberOf

# How many per-node failure details the answer spells out
MAX_DETAILS = 20


class Candidate(NamedTuple):
    score: float
    nodes: tuple[str, ...]


class GroupResult:
    """The outcome of trying one group."""

    def __init__(self, group: Group) -> None:
        self.group = group
        self.candidates: list[Candidate] = []
        self.fails: Counter = Counter()
        self.details: dict[str, str] = {}

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None

    def FailSummary(self) -> str:
        """hail's ``FailMem: 3, FailDisk: 1`` (modes that occurred)."""
        return ", ".join("%s: %d" % (mode, self.fails[mode])
                         for mode in FAIL_MODES if self.fails[mode])

    def DetailText(self) -> str:
        names = sorted(self.details)
        text = "; ".join("%s: %s" % (name, self.details[name])
                         for name in names[:MAX_DETAILS])
        if len(names) > MAX_DETAILS:
            text += "; and %d more nodes" % (len(names) - MAX_DETAILS)
        return text

    def Describe(self) -> str:
        """hail's per-group log line."""
        prefix = "Group %s (%s): " % (self.group.name,
                                      self.group.alloc_policy)
        if self.best is None:
            return prefix + "No valid allocation solutions, failure" \
                " reasons: %s" % (self.FailSummary() or "none")
        return prefix + "score: %.8f, successes %d, failures %d (%s) for" \
            " node(s) %s" % (self.best.score, len(self.candidates),
                             sum(self.fails.values()), self.FailSummary(),
                             "/".join(self.best.nodes))


def _StateKey(node: Node, inst: Instance) -> tuple:
    """Everything a single-node placement's checks and score read (the
    dynamic load too: with load data it is no function of the rest)."""
    tags: tuple = ()
    if inst.xtags or node.xtags:
        tags = (tuple(tag in node.xtags for tag in inst.xtags),
                node.TagConflicts(), tuple(sorted(node.xtags.items())))
    return (node.t_mem, node.n_mem, node.f_mem, node.f_mem_forth, node.t_dsk,
            node.f_dsk, node.t_cpu, node.n_cpu, node.u_cpu, node.cpu_speed,
            node.inst_sp, node.hi_sp, node.vcpu_ratio, node.r_mem, node.excl,
            node.f_sp, node.t_sp, len(node.plist), len(node.slist),
            node.loc_score, node.locations, tags,
            None if node.load is None else tuple(node.load))


def _Targets(nodes: list[Node], restrict: frozenset | None) -> list[Node]:
    return [node for node in nodes if not node.offline and
            (restrict is None or node.name in restrict)]


def _MemberOfText(cluster: Cluster, value: str) -> str:
    """A member_of value with the aggregates named where the message
    names them."""
    head, sep, items = value.rpartition(":")
    if not sep and value.startswith("!"):
        head, items = "!", value[1:]
    names = [cluster.aggregate_names.get(item, item)
             for item in items.split(",")]
    return head + sep + ",".join(names)


def CheckMemberOf(cluster: Cluster, targets: list[Node],
                   member_of: MemberOf | None, result: "GroupResult"
                   ) -> list[Node]:
    """The targets whose aggregates satisfy ``member_of``; the others
    are failures naming the value that excluded them."""
    if member_of is None:
        return targets
    kept = []
    for node in targets:
        value = member_of.Failed(node.aggregates)
        if value is None:
            kept.append(node)
            continue
        result.fails[FAIL_MEMBER_OF] += 1
        result.details.setdefault(node.name, "excluded by member_of '%s'" %
                                  _MemberOfText(cluster, value))
    return kept


def _Fits(node: Node, others: list[Node]) -> bool:
    """Whether one of the other nodes could take all of the node's
    primaries without an internal mirror, on top of the DRBD primaries
    failing over to it: then every step of ``_Evacuable`` finds a node
    whatever it chose before (a quick, sufficient test)."""
    if not node.nd_mem and not node.nd_dsk:
        return True
    name = node.name
    for other in others:
        if other is node:
            continue
        if other.f_mem - other.peers.get(name, 0.0) - node.nd_mem > 0 and \
                (not node.nd_dsk or other.f_dsk - node.nd_dsk > 0) and \
                (not other.excl or other.f_sp - node.nd_sp >= 0):
            return True
    return False


def _PlacementKey(node: Node, score: Score) -> tuple:
    """Everything placing a primary without the soft checks reads of a
    node, for any instance: the hard checks of ``Node.AddPri``, the
    fields ``Node.PlacePri`` changes and ``NodeValues`` reads, and the
    node's share in ``score``. Nodes with equal keys get the same
    outcome and the same ``Score.With``, the arithmetic being the same."""
    return (score.values.get(node.name), node.offline, node.t_mem,
            node.f_mem, node.f_mem_forth, node.t_dsk, node.f_dsk, node.t_cpu,
            node.u_cpu, node.cpu_speed, node.inst_sp, node.hi_sp,
            node.r_mem, node.excl, node.f_sp, node.t_sp, len(node.plist),
            len(node.slist), node.loc_score, node.locations,
            tuple(sorted(node.lx.items())),
            tuple(sorted(node.xtags.items())),
            None if node.load is None else tuple(node.load))


class _Classes(dict[tuple, list[Node]]):
    """Nodes by ``_PlacementKey``, each class sorted by name: where an
    evacuation re-creates an instance only each class's first node needs
    scoring (its equals score the same and lose the tie on the name).
    A placement changes one node: ``Remove`` it before, ``Add`` after."""

    def __init__(self, nodes: list[Node], score: Score) -> None:
        super().__init__()
        self.score = score
        self.node_keys: dict[str, tuple] = {}
        for node in sorted(nodes, key=lambda node: node.name):
            self.Add(node)

    def Add(self, node: Node) -> None:
        key = self.node_keys[node.name] = _PlacementKey(node, self.score)
        bisect.insort(self.setdefault(key, []), node,
                      key=lambda member: member.name)

    def Remove(self, node: Node) -> None:
        key = self.node_keys.pop(node.name)
        members = self[key]
        members.remove(node)
        if not members:
            del self[key]

    def Best(self, inst: Instance) -> Node | None:
        """The node ``inst`` is re-created on: the best scoring one with
        it, soft errors ignored, ties going to the first name."""
        best: tuple[float, str] | None = None
        chosen = None
        for members in self.values():
            node = members[0]
            if node.AddPri(inst, strict=False) is None:
                value = round(self.score.With([node]), 10)
                node.RemovePri(inst)
                if best is None or (value, node.name) < best:
                    best = (value, node.name)
                    chosen = node
        return chosen


def _Evacuable(cluster: Cluster, score: Score, node: Node,
               others: list[Node]) -> Failure | None:
    """hail's ``canEvacuateNode`` for the node's primaries that DRBD does
    not fail over (that part is ``Node.N1Failure``): its DRBD primaries
    fail over to their secondaries, then its externally mirrored ones
    move to the best other node of its group and its plain and file ones
    are re-created there, largest memory first, soft errors ignored.
    Each kind goes in the order of hail's node instance list (the last
    added first; the order decides where memory runs out). Nothing is
    left changed. Existing instances are taken to fit their group's
    instance policy."""
    insts = [cluster.instances[name]
             for name in cluster.instances.NewestFirst(node.plist)]
    mirrored = [inst for inst in insts if inst.internal_mirror]
    shared = [inst for inst in insts if inst.external_mirror]
    local = sorted((inst for inst in insts if not inst.internal_mirror
                    and not inst.external_mirror),
                   key=lambda inst: -inst.mem)
    targets = [other for other in others if other is not node]
    work = score.Copy()
    done: list[moves.Applied] = []
    placed: list[tuple[Node, Instance]] = []
    try:
        for inst in mirrored:
            if not inst.snode:
                continue
            applied = moves.ApplyMove(
                cluster, moves.Move(inst.name, moves.FAILOVER, None), False)
            if isinstance(applied, Failure):
                return Failure(FAIL_N1, "cannot fail over %s when %s fails"
                               " (N+1): %s" % (inst.name, node.name,
                                               applied.text))
            done.append(applied)
            work.Update(applied.touched)
        for inst in shared:
            try:
                move = evacuate.PlanInstance(
                    cluster, inst, evacuate.CHANGE_PRIMARY, targets, work,
                    strict=False)[0]
            except evacuate.EvacError as err:
                return Failure(FAIL_N1, "cannot move %s elsewhere when %s"
                               " fails (N+1): %s" % (inst.name, node.name,
                                                     err))
            applied = moves.ApplyMove(cluster, move, False)
            assert not isinstance(applied, Failure), applied
            done.append(applied)
            work.Update(applied.touched)
        classes = _Classes(targets, work)
        for inst in local:
            target = classes.Best(inst)
            if target is None:
                return Failure(FAIL_N1, "cannot re-create %s elsewhere when"
                               " %s fails (N+1): memory %d MiB needed" %
                               (inst.name, node.name, inst.mem))
            classes.Remove(target)
            target.PlacePri(inst)
            placed.append((target, inst))
            work.Update([target])
            classes.Add(target)
        return None
    finally:
        for target, inst in reversed(placed):
            target.RemovePri(inst)
        for applied in reversed(done):
            moves.UndoMove(cluster, applied)


class Capacity:
    """hail's global N+1 check of allocations (``allocGlobalN1``) over
    some nodes: every node's DRBD secondaries can take over from their
    primaries (``Node.N1Failure``) and, with ``evacuate``, were the node
    to fail its other primaries find room on the other nodes of its group
    (``_Evacuable``, tried only when ``_Fits`` does not tell)."""

    def __init__(self, cluster: Cluster, score: Score, nodes: list[Node],
                 evacuate: bool = False) -> None:
        self.cluster = cluster
        self.score = score
        self.evacuate = evacuate
        self.groups: dict[str, list[Node]] = {}
        for node in nodes:
            self.groups.setdefault(node.group.uuid, []).append(node)
        # the nodes failing in the current state, by name
        self.broken: dict[str, Failure] = {}
        for members in self.groups.values():
            for node in members:
                failure = self._Check(node, members)
                if failure is not None:
                    self.broken[node.name] = failure

    def _Check(self, node: Node, members: list[Node]) -> Failure | None:
        failure = node.N1Failure()
        if failure is None and self.evacuate and not _Fits(node, members):
            failure = _Evacuable(self.cluster, self.score, node, members)
        return failure

    def Placement(self, inst: Instance, names: tuple[str, ...]
                  ) -> tuple[str, Failure] | None:
        """The first node failing once the instance is placed on
        ``names``. A placement only takes memory and disk, so it mends
        no node that fails already."""
        for name, broke in self.broken.items():
            if name not in names:
                return name, broke
        cluster = self.cluster
        pnode = cluster.nodes[names[0]]
        placed = [pnode]
        failure = pnode.AddPri(inst, strict=False)
        assert failure is None, failure
        if len(names) > 1:
            snode = cluster.nodes[names[1]]
            failure = snode.AddSec(inst, pnode.name, strict=False)
            assert failure is None, failure
            placed.append(snode)
        found = None
        for node in placed:
            failure = node.N1Failure()
            if failure is not None:
                found = (node.name, failure)
                break
        if found is None and self.evacuate:
            # the simulation moves the instance too
            inst.pnode, inst.snode = names[0], (names[1:] or (None, ))[0]
            cluster.instances[inst.name] = inst
            try:
                found = self._Evacuations(placed)
            finally:
                del cluster.instances[inst.name]
                inst.pnode = inst.snode = None
        if len(placed) > 1:
            placed[1].RemoveSec(inst, pnode.name)
        pnode.RemovePri(inst)
        return found

    def _Evacuations(self, placed: list[Node]) -> tuple[str, Failure] | None:
        """The first node of the placed nodes' groups whose primaries
        would find no room elsewhere; the score is the allocation's."""
        score: Score | None = None
        for uuid in dict.fromkeys(node.group.uuid for node in placed):
            members = self.groups.get(uuid, [])
            for node in members:
                if _Fits(node, members):
                    continue
                if score is None:
                    score = self.score.Copy()
                    score.Update(placed)
                failure = _Evacuable(self.cluster, score, node, members)
                if failure is not None:
                    return node.name, failure
        return None


def GlobalN1(inst: Instance, result: GroupResult,
              capacity: Capacity) -> None:
    """Keep hail's capacity-checked candidates (``collectionToSolution
    FailN1``): walking them best first, those before the first one that
    passes ``Capacity.Placement`` are dropped and counted as FailN1; pairs are
    walked per primary node, as hail collects them."""
    kept = []
    passed: set[str] = set()
    for cand in result.candidates:
        walk = cand.nodes[0] if len(cand.nodes) > 1 else ""
        if walk in passed:
            kept.append(cand)
            continue
        found = capacity.Placement(inst, cand.nodes)
        if found is None:
            passed.add(walk)
            kept.append(cand)
            continue
        result.fails[FAIL_N1] += 1
        result.details.setdefault(found[0], found[1].text)
    result.candidates = kept


def TryGroup(cluster: Cluster, score: Score, group: Group, inst: Instance,
             required_nodes: int, restrict: frozenset | None = None,
             strict: bool = True, keep: int = 0,
             capacity: Capacity | None = None,
             member_of: MemberOf | None = None) -> GroupResult:
    """All candidates of one group, sorted best first (``tryAlloc``).

    ``keep`` limits the candidates kept (0: all). With ``capacity``
    hail's global N+1 capacity check applies. Nodes failing
    ``member_of`` are no candidates.
    """
    result = GroupResult(group)
    targets = CheckMemberOf(cluster,
                             _Targets(cluster.GroupNodes(group), restrict),
                             member_of, result)
    policy_fail: dict[bool, Failure | None] = {}

    def policy(node: Node) -> Failure | None:
        if node.excl not in policy_fail:
            policy_fail[node.excl] = PolicyFailure(inst, group.ipolicy,
                                                   node.excl)
        return policy_fail[node.excl]

    def fail(node: Node, failure: Failure, prefix: str = "") -> None:
        result.fails[failure.mode] += 1
        result.details.setdefault(node.name, prefix + failure.text)

    if required_nodes == 1:
        memo: dict[tuple, tuple[Failure | None, float]] = {}
        for node in targets:
            failure = policy(node)
            if failure is not None:
                fail(node, failure)
                continue
            key = _StateKey(node, inst)
            known = memo.get(key)
            if known is None:
                failure = node.AddPri(inst, strict)
                if failure is None:
                    known = (None, round(score.With([node]), 10))
                    node.RemovePri(inst)
                else:
                    known = (failure, 0.0)
                memo[key] = known
            if known[0] is not None:
                fail(node, known[0])
            else:
                result.candidates.append(Candidate(known[1], (node.name, )))
    else:
        sec_fail: dict[str, Failure] = {}
        sec_ok: set[str] = set()
        # A secondary's checks and new values depend on the primary only
        # through the memory it already reserves for it
        sec_memo: dict[tuple[str, float], Failure | Values] = {}
        for pnode in targets:
            failure = policy(pnode) or pnode.AddPri(inst, strict)
            if failure is not None:
                result.fails[failure.mode] += len(targets) - 1
                result.details.setdefault(pnode.name,
                                          "as primary: " + failure.text)
                continue
            pri_states: dict[int, list] = {}
            for snode in targets:
                if snode is pnode:
                    continue
                key = (snode.name, snode.peers.get(pnode.name, 0.0))
                sec = sec_memo.get(key)
                if sec is None:
                    failure = snode.AddSec(inst, pnode.name, strict)
                    if failure is None:
                        sec = NodeValues(snode)
                        snode.RemoveSec(inst, pnode.name)
                    else:
                        sec = failure
                    sec_memo[key] = sec
                if isinstance(sec, Failure):
                    result.fails[sec.mode] += 1
                    sec_fail.setdefault(snode.name, sec)
                    continue
                sec_ok.add(snode.name)
                shared = len(pnode.locations & snode.locations)
                state = pri_states.get(shared)
                if state is None:
                    pnode.loc_score += shared
                    state = pri_states[shared] = score.Start()
                    score.Replace(state, pnode.name, NodeValues(pnode))
                    pnode.loc_score -= shared
                result.candidates.append(Candidate(
                    round(score.Swapped(state, snode.name, sec), 10),
                    (pnode.name, snode.name)))
            pnode.RemovePri(inst)
        for name, failure in sec_fail.items():
            if name not in sec_ok:
                result.details.setdefault(name,
                                          "as secondary: " + failure.text)
    # the last tried first among equal scores (see the module's docstring)
    result.candidates.reverse()
    result.candidates.sort(key=attrgetter("score"))
    if capacity is not None:
        GlobalN1(inst, result, capacity)
    if keep:
        del result.candidates[keep:]
    return result


class Allocation:
    """The answer to placing one instance: the chosen group and nodes
    (or none) and what every group tried."""

    def __init__(self, results: list[GroupResult], skipped: list[str]) -> None:
        self.results = results
        self.skipped = skipped
        self.chosen: GroupResult | None = None
        for res in sorted(results, key=lambda r: (
                r.group.rank, r.best.score if r.best else 0.0,
                r.group.name)):
            if res.best is not None:
                self.chosen = res
                break

    @property
    def nodes(self) -> list[str]:
        if self.chosen is None or self.chosen.best is None:
            return []
        return list(self.chosen.best.nodes)

    def Fails(self) -> Counter:
        total: Counter = Counter()
        for res in self.results:
            total.update(res.fails)
        return total

    def Info(self) -> str:
        """hail's text: the selected group and one line per group, or the
        failure reasons with the first failed check of each node."""
        lines = [res.Describe() for res in self.results] + self.skipped
        if self.chosen is not None:
            return "Selected group: %s, %s" % (self.chosen.group.name,
                                                ", ".join(lines))
        fails = self.Fails()
        summary = ", ".join("%s: %d" % (mode, fails[mode])
                            for mode in FAIL_MODES if fails[mode])
        details = "; ".join(res.DetailText() for res in self.results
                            if res.details)
        text = "No valid allocation solutions, failure reasons: %s" % (
            summary or "no online node")
        if details:
            text += "; " + details
        if self.skipped:
            text += "; " + "; ".join(self.skipped)
        return text


def Allocate(cluster: Cluster, score: Score, inst: Instance,
             required_nodes: int, group_name: str | None = None,
             restrict: frozenset | None = None, strict: bool = True,
             keep: int = 0, capacity: bool = False,
             member_of: MemberOf | None = None,
             evacuate: bool = False) -> Allocation:
    """Find the placement of a new instance (``tryMGAlloc`` or, with a
    group name, ``tryGroupAlloc``); nothing is changed.

    ``capacity`` is hail's global N+1 check, over the cluster's nodes or,
    with a group name, the group's (as hail's node list there), with
    ``evacuate`` also for the primaries DRBD does not fail over;
    ``member_of`` the aggregates the nodes must (not) be in.
    """
    if group_name:
        group = cluster.FindGroup(group_name)
        if group is None:
            return Allocation([], ["No such node group %s" % group_name])
        nodes = cluster.GroupNodes(group)
        local = Score(nodes)
        checker = Capacity(cluster, local, nodes, evacuate) \
            if capacity else None
        return Allocation([TryGroup(cluster, local, group, inst,
                                    required_nodes, restrict, strict, keep,
                                    checker, member_of)],
                          [])
    checker = Capacity(cluster, score, list(cluster.nodes.values()),
                       evacuate) if capacity else None
    results = []
    skipped = []
    for group in cluster.groups.values():
        if not inst.networks <= group.networks:
            skipped.append("group %s is not connected to a network required"
                           " by instance %s" % (group.name, inst.name))
            continue
        res = TryGroup(cluster, score, group, inst, required_nodes, restrict,
                       strict, keep, checker, member_of)
        if res.group.rank >= 2:
            # unallocable groups are never chosen unless named
            res.candidates = []
        results.append(res)
    return Allocation(results, skipped)


def Commit(cluster: Cluster, score: Score, inst: Instance,
           nodes: list[str]) -> None:
    """Place the instance on the chosen nodes, in the model and score."""
    pnode = cluster.nodes[nodes[0]]
    failure = pnode.AddPri(inst, strict=False)
    assert failure is None, failure
    touched = [pnode]
    inst.pnode = pnode.name
    if len(nodes) > 1:
        snode = cluster.nodes[nodes[1]]
        failure = snode.AddSec(inst, pnode.name, strict=False)
        assert failure is None, failure
        inst.snode = snode.name
        pnode.loc_score += len(pnode.locations & snode.locations)
        touched.append(snode)
    cluster.instances[inst.name] = inst
    score.Update(touched)
