"""Rebalancing plans in the manner of hbal (``Cluster.tryBalance``).

Greedy, one move per round: every candidate move is scored with hail's
checks (``movescore``: from the running sums, without applying it, the
exact score only where a lower bound can beat the round's best); the
round's best move, ties broken as hbal does (``moves.TieKey``), is
accepted when it lowers the score and, once the score is below
``min_gain_limit``, by at least ``min_gain``. Movable instances are the
mirrored ones: DRBD instances get failover, replace-secondary,
replace-and-failover, replace-primary and failover-and-replace
(``--no-disk-moves``: failover only); externally mirrored ones get
failover-to-any (a migration to any node); plain and file instances are
never moved, as in hbal. (Ganeti 3.0's hbal binary, on a cluster read
from a text file, also leaves diskless instances alone; ours moves them.)

Unlike hbal, a round on more than ``FULL_NODES`` nodes does not try every
instance on every node (too slow in Python): it widens level by level
(``Levels``) until one yields an acceptable move: the instances of the
``SOURCES`` most loaded nodes (offline nodes first) moving to the
``TARGETS`` least loaded ones; then
those of the ``SPREAD_SOURCES`` most loaded nodes of each std-dev
component taken alone, moving to the ``SPREAD_TARGETS`` least loaded of
each (late in a run the overall load no longer tells where a component's
imbalance sits: there the sum of the components is about even); last,
those of the ``WIDE_SOURCES`` most loaded nodes moving to any node,
before stopping.

The accepted moves are split into job sets of consecutive moves touching
disjoint nodes (``splitJobs``, from the last move back): the jobs of one
set can run in parallel.
"""

import ctypes
from collections.abc import Iterator
from operator import mul
from typing import NamedTuple

from ganeti import errors
from ganeti.htools import metrics, moves, movescore, parallel
from ganeti.utils import gcpause
from ganeti.htools.metrics import Score
from ganeti.htools.model import Cluster, Failure, Instance, Node

# Up to this many nodes a round tries every instance on every node, as
# hbal does (and makes hbal's moves); the levels only pay on larger groups
FULL_NODES = 12
# Two sources rather than three: on 24 random clusters (20 to 100 nodes,
# 5 to 15 instances each, skewed) the final scores were as good (13
# better, 11 worse, within 5%) in about 10% less time
SOURCES = 2
TARGETS = 8
SPREAD_SOURCES = 2
SPREAD_TARGETS = 4
WIDE_SOURCES = 12
# The least nodes for which planning on several cores pays: measured on
# 2 idle cores with 10 skewed instances per node, 2 processes break even
# at 5 to 8 nodes and take 0.29 s instead of 0.45 s at 10 (20 ms at 3)
PARALLEL_NODES = 10
# The least gain of an accepted move: absorbs the rounding of the
# candidates' scores, so a move and its reverse can never both look like
# gains (hbal's -e, ``min_score``, is only when to stop)
_ROUNDING = 1e-9

# The std-dev components where a low value is a loaded node (free
# fractions); a high usage fraction or dynamic load is one too
_FREE = frozenset(["free_mem_cv", "free_disk_cv", "free_mem_cv_forth"])


class Options(NamedTuple):
    """hbal's main options."""
    min_gain: float = 0.01
    min_gain_limit: float = 0.1
    min_score: float = 1e-9
    max_cpu: float | None = None
    no_disk_moves: bool = False
    evac_mode: bool = False
    max_length: int = -1
    ignore_soft_errors: bool = False


class Step(NamedTuple):
    """An accepted move with the score before and after it."""
    move: moves.Move
    before: float
    after: float
    nodes: frozenset[str]

    @property
    def gain(self) -> float:
        return self.before - self.after


class Plan(NamedTuple):
    """The result: scores (``optimal_score``: ``metrics.OptimalScore``
    of the group, which planning stops ``min_score`` above), the moves
    and their job sets."""
    group: str
    initial_score: float
    final_score: float
    steps: list[Step]
    jobsets: list[list[Step]]
    optimal_score: float = 0.0

    def Jobs(self) -> list[list[list[dict]]]:
        """Per job set, the jobs (lists of opcode dicts) to submit."""
        return [[moves.MoveOpcodes(step.move) for step in jobset]
                for jobset in self.jobsets]


def SplitJobs(steps: list[Step]) -> list[list[Step]]:
    """Consecutive moves touching disjoint nodes share a job set, grouped
    from the last move back as hbal groups them (its ``splitJobs`` folds
    over the moves newest first), in the moves' order."""
    result: list[list[Step]] = []
    used: set[str] = set()
    for step in reversed(steps):
        if not result or used & step.nodes:
            result.append([])
            used = set()
        result[-1].append(step)
        used |= step.nodes
    return [jobset[::-1] for jobset in reversed(result)]


def _Loads(score: Score, nodes: list[Node], spread: bool = False,
           cache: dict[str, tuple] | None = None
           ) -> list[dict[str, float]]:
    """How loaded each node is (higher: more): overall, or with
    ``spread`` per std-dev component. Offline nodes are the most loaded
    while they hold instances, the least once empty.

    The load relative to the mean, ``add + sum(weight * sign * (value -
    mean))``, ranks the nodes as ``add + sum(weight * sign * value)``
    does: that is the one computed, kept in ``cache`` while the node's
    values stay (a round changes a few nodes)."""
    result: list[dict[str, float]] = [
        {} for _ in range(len(score.weights) if spread else 1)]
    signs = [-1.0 if (name if isinstance(name, str) else name[0]) in _FREE
             else 1.0 for name in score.names]
    signed = [weight * sign for weight, sign in zip(score.weights, signs)]
    for node in nodes:
        name = node.name
        values = score.values[name]
        if values.vec is None:
            load = float("inf") if node.plist or node.slist \
                else float("-inf")
            for loads in result:
                loads[name] = load
        elif spread:
            for loads, sign, value in zip(result, signs, values.vec):
                loads[name] = sign * value
        else:
            known = cache.get(name) if cache is not None else None
            if known is not None and known[0] is values:
                load = known[1]
            else:
                load = values.add + sum(map(mul, signed, values.vec))
                if cache is not None:
                    cache[name] = (values, load)
            result[0][name] = load
    return result


def Levels(score: Score, nodes: list[Node], online: list[Node],
           cache: dict[str, tuple] | None = None
           ) -> Iterator[tuple[set[str], list[Node]]]:
    """A round's successive (source names, targets), see the module's
    docstring; ties broken by node name. Most rounds stop at the first
    level: the per-component loads are only computed for the second.
    ``cache``: kept from round to round by the caller (``_Loads``)."""
    def ranked(among: list[Node], load: dict[str, float],
               sign: float) -> list[Node]:
        return sorted(among, key=lambda n: (sign * load[n.name], n.name))

    if len(nodes) <= FULL_NODES:
        yield {node.name for node in nodes}, online
        return
    loads = _Loads(score, nodes, cache=cache)[0]
    overall = ranked(nodes, loads, -1.0)
    targets = ranked(online, loads, 1.0)
    yield {node.name for node in overall[:SOURCES]}, targets[:TARGETS]
    sources: set[str] = set()
    chosen: set[str] = set()
    for load in _Loads(score, nodes, spread=True):
        sources.update(node.name for node in
                       ranked(nodes, load, -1.0)[:SPREAD_SOURCES])
        chosen.update(node.name for node in
                      ranked(online, load, 1.0)[:SPREAD_TARGETS])
    yield sources, [node for node in targets if node.name in chosen]
    yield {node.name for node in overall[:WIDE_SOURCES]}, targets


def PlanBalance(message: dict, group: str | None = None,
                opts: Options = Options(),
                util: dict[str, tuple[float, ...]] | None = None,
                workers: int | None = 1) -> Plan:
    """Compute hbal's moves for one node group (required when the
    cluster has several), balancing the dynamic load too when ``util``
    (the instances' utilisation, see ``utilisation``) is given.

    ``workers``: how many processes score the candidates (``parallel``);
    None for every core when the group has at least ``PARALLEL_NODES``
    nodes and the process is single-threaded. Serial by default: a
    daemon must not fork. The plan is the same whatever the number.

    Planning creates millions of short-lived tuples, none of them in a
    reference cycle: the cyclic collector, run every few thousand
    allocations, only costs time (about 10% of a 100-node plan).
    """
    with gcpause.CyclicGcPaused():
        return _PlanBalance(message, group, opts, util, workers)


class _State:
    """What each planning process holds: the model, its score and the
    evaluator of the candidate moves."""

    def __init__(self, cluster: Cluster, nodes: list[Node],
                 opts: Options) -> None:
        self.cluster = cluster
        self.strict = not opts.ignore_soft_errors
        self.disk_moves = not opts.no_disk_moves
        self.score = Score(nodes)
        self.evaluator = movescore.Evaluator(cluster, self.score, self.strict)

    def Best(self, victims: list[Instance], targets: list[Node],
             limit: float, share: tuple[int, int],
             shared: ctypes.c_double | None
             ) -> tuple[float, moves.Move] | None:
        """The best acceptable move of the process's share of the
        victims (``Evaluator.Best``)."""
        return self.evaluator.Best(victims, targets, self.disk_moves, limit,
                                   share, shared)

    def Apply(self, move: moves.Move) -> frozenset[str]:
        """Apply the accepted move: the names of the nodes it touched."""
        inst = self.cluster.instances[move.instance]
        names = {name for name in (inst.pnode, inst.snode, move.target)
                 if name}
        applied = moves.ApplyMove(self.cluster, move, self.strict)
        assert not isinstance(applied, Failure), applied
        self.score.Update(applied.touched)
        names.update(node.name for node in applied.touched)
        self.evaluator.Changed(names)
        return frozenset(names)


def _PlanBalance(message: dict, group: str | None, opts: Options,
                 util: dict[str, tuple[float, ...]] | None,
                 workers: int | None) -> Plan:
    cluster = Cluster(message, util)
    if group is None:
        if len(cluster.groups) != 1:
            raise errors.ParameterError("Found multiple node groups: %s;"
                                        " select one" % ", ".join(
                                            sorted(g.name for g in
                                                   cluster.groups.values())))
        target_group = next(iter(cluster.groups.values()))
    else:
        named = cluster.FindGroup(group)
        if named is None:
            raise errors.ParameterError("Unknown node group %s" % group)
        target_group = named
    nodes = cluster.GroupNodes(target_group)
    if opts.max_cpu is not None:
        for node in nodes:
            node.vcpu_ratio = opts.max_cpu
    names = {node.name for node in nodes}
    online = [node for node in nodes if not node.offline]
    offline = {node.name for node in nodes if node.offline}
    movable = [inst for inst in cluster.instances.values()
               if inst.pnode in names and (inst.snode is None or
                                           inst.snode in names)
               and (inst.internal_mirror or inst.external_mirror)]
    positions = {inst.name: index for index, inst in enumerate(movable)}
    state = _State(cluster, nodes, opts)
    score = state.score
    initial = score.Total()
    optimal = metrics.OptimalScore(nodes)
    # hbal's doNextBalance: go on while above the least reachable score
    # plus -e
    stop = opts.min_score + optimal

    def rounds(share: tuple[int, int], shared: ctypes.c_double | None,
               merge: parallel.Merge) -> list[Step]:
        """The greedy rounds, run by each planning process."""
        steps: list[Step] = []
        current = initial
        loads: dict[str, tuple] = {}
        # per node, the positions in ``movable`` of the instances on it
        held: dict[str, set[int]] = {}
        for index, inst in enumerate(movable):
            _Hold(held, inst, index, 1)
        while (opts.max_length < 0 or len(steps) < opts.max_length) and \
                current > stop:
            limit = _Limit(current, opts)
            found = None
            for sources, targets in Levels(score, nodes, online, loads):
                victims = [movable[index] for index in
                           sorted(set().union(*(held.get(name, ())
                                                for name in sources)))]
                if opts.evac_mode:
                    victims = [inst for inst in victims
                               if inst.pnode in offline or
                               inst.snode in offline]
                found = merge(state.Best(victims, targets, limit, share,
                                         shared))
                if found is not None and \
                        _Acceptable(current, found[0], opts):
                    break
                found = None
            if found is None:
                break
            moved = cluster.instances[found[1].instance]
            index = positions[moved.name]
            _Hold(held, moved, index, -1)
            touched = state.Apply(found[1])
            _Hold(held, moved, index, 1)
            after = score.Total()
            steps.append(Step(found[1], current, after, touched))
            current = after
        return steps

    count = parallel.Count(workers, len(nodes) >= PARALLEL_NODES) \
        if initial > stop else 1
    steps = parallel.Run(count, rounds)
    final = steps[-1].after if steps else initial
    return Plan(target_group.name, initial, final, steps, SplitJobs(steps),
                optimal)


def _Hold(held: dict[str, set[int]], inst: Instance, index: int,
          sign: int) -> None:
    """Record (sign 1) or forget (-1) the instance's position in the
    planner's movable instances on the nodes it is on."""
    for name in (inst.pnode, inst.snode):
        if name:
            if sign > 0:
                held.setdefault(name, set()).add(index)
            else:
                held[name].discard(index)


def _Limit(current: float, opts: Options) -> float:
    """The highest score an acceptable move may reach (``_Acceptable``
    up to float rounding, which ``Evaluator.Best`` allows for)."""
    gain = _ROUNDING
    if current <= opts.min_gain_limit:
        gain = max(gain, opts.min_gain)
    return current - gain


def _Acceptable(current: float, new: float, opts: Options) -> bool:
    gain = current - new
    return gain > _ROUNDING and (current > opts.min_gain_limit or
                                 gain >= opts.min_gain)
