"""The cluster score of hail and hbal (``Cluster/Metrics.hs``).

``score = sum(weight * value)`` over these components (lower is better):

==========================  ======  ======================================
component                   weight  value
==========================  ======  ======================================
free_mem_cv                 0.5     std-dev over online nodes of the free
                                    (unallocated) memory fraction
free_disk_cv                0.5     std-dev of the free disk fraction (free
                                    spindles with exclusive storage)
n1_cnt                      1       instances (primary and secondary) on
                                    nodes failing N+1
reserved_mem_cv             1       std-dev of the memory reserved for
                                    DRBD failovers, as a fraction
offline_all_cnt             4       instances on offline nodes
offline_pri_cnt             16      primary instances on offline nodes
vcpu_ratio_cv               0.5     std-dev of used vCPUs per physical CPU
                                    (divided by the node's cpu_speed)
cpu/mem/disk/net_load_cv    1 each  std-dev of the dynamic load (sum of
                                    the instances' utilisation, disk also
                                    of secondaries); an instance without
                                    load data (``-U``, mond) counts 1.0
                                    each, as in Ganeti
pri_tags_score              2       primaries sharing an exclusion tag
spindles_cv                 0.5     std-dev of spindle use / allowed
free_mem_cv_forth           0.5     free memory also counting instances
                                    that are down or forthcoming
free_disk_cv_forth,         0.5     the same as the plain components:
vcpu_ratio_cv_forth,        each    forthcoming instances are not part
spindles_cv_forth                   of the protocol
location_score              1       location tags shared by an instance's
                                    primary and secondary node, plus its
                                    desired locations its primary lacks
location_exclusion_score    1       over the (location, exclusion tag)
                                    pairs of the primaries: the number of
                                    instances beyond the first per pair
reserved_mem_rtotal         0.25    sum of the reserved memory fractions
==========================  ======  ======================================

Offline nodes (offline, drained, not vm_capable) are left out of every
std-dev and of the location components, so their instances only weigh
through the offline counts.

The score is kept as running sums (count, sum and sum of squares per
std-dev component, plus the additive part) so a candidate that changes
a few nodes is scored in constant time: ``Score.With``. The four load
components are in the vectors of nodes with a load (every node of a
``Cluster``; nodes built without one leave them out).
The location exclusion score is not a sum over nodes: ``Score`` counts
the pairs of all nodes (``Values.lx``, None for a node without any) and
takes the changes of the nodes it replaces into account.
"""

import math
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from ganeti.htools.model import Node

# Std-dev components in the order of Values.vec, with their weight; the
# forthcoming twins that always equal a plain component are folded into
# its weight
STDDEV_COMPONENTS = ("free_mem_cv", "free_disk_cv", "reserved_mem_cv",
                     "vcpu_ratio_cv", "spindles_cv", "free_mem_cv_forth")
STDDEV_WEIGHTS = (0.5, 0.5 + 0.5, 1.0, 0.5 + 0.5, 0.5 + 0.5, 0.5)
# The dynamic load components, present when the nodes carry load data
LOAD_COMPONENTS = ("cpu_load_cv", "mem_load_cv", "disk_load_cv",
                   "net_load_cv")
LOAD_WEIGHTS = (1.0, 1.0, 1.0, 1.0)
# Components equal on every node by construction are one in the vectors,
# with their summed weight (the same score with fewer components to sum):
# with twin loads (``Node.twin_load``) the cpu load stands for the memory
# and network loads; where no node has memory the stopped instances want
# back (``Node.twin_forth``), free_mem_cv for free_mem_cv_forth
TWIN_LOADS = (LOAD_COMPONENTS[:2] + LOAD_COMPONENTS[3:], LOAD_COMPONENTS[2])
TWIN_LOAD_WEIGHTS = (LOAD_WEIGHTS[0] + LOAD_WEIGHTS[1] + LOAD_WEIGHTS[3],
                     LOAD_WEIGHTS[2])
W_N1 = 1.0
W_OFFLINE_ALL = 4.0
W_OFFLINE_PRI = 16.0
W_PRI_TAGS = 2.0
W_LOCATION = 1.0
W_LOCATION_EXCLUSION = 1.0
W_RESERVED_RTOTAL = 0.25


class Values(NamedTuple):
    """A node's share of the score: its std-dev inputs (None when offline),
    its additive part and its (location, exclusion tag) pairs with their
    counts (None when none)."""
    vec: tuple[float, ...] | None
    add: float
    lx: tuple[tuple[tuple[str, str], int], ...] | None = None


def NodeValues(node: Node) -> Values:
    """The node's current share of the score (``compDetailedCVNode``)."""
    nprim = len(node.plist)
    if node.offline:
        return Values(None, W_OFFLINE_ALL * (nprim + len(node.slist)) +
                      W_OFFLINE_PRI * nprim)
    add = W_LOCATION * node.loc_score
    t_mem = node.t_mem or 1.0
    if node.excl:
        p_dsk = node.f_sp / node.t_sp if node.t_sp else 0.0
    else:
        p_dsk = node.f_dsk / node.t_dsk if node.t_dsk else 0.0
    p_rem = node.r_mem / t_mem
    vec: tuple[float, ...] = (node.f_mem / t_mem, p_dsk, p_rem,
                              node.u_cpu / node.p_cpus / node.cpu_speed,
                              node.inst_sp / node.hi_sp if node.hi_sp
                              else 0.0)
    if not node.twin_forth:
        vec += (node.f_mem_forth / t_mem, )
    load = node.load
    if load is not None:
        vec += (load[0], load[2]) if node.twin_load else tuple(load)
    if node.f_mem <= node.r_mem:
        add += W_N1 * (nprim + len(node.slist))
    if node.xtags:
        add += W_PRI_TAGS * node.TagConflicts()
    return Values(vec, add + W_RESERVED_RTOTAL * p_rem,
                  tuple(sorted(node.lx.items())) if node.lx else None)


def _Excess(count: int) -> int:
    """A pair's share of the location exclusion score."""
    return count - 1 if count > 1 else 0


class Score:
    """Running sums of the score over a set of nodes; ``weights`` are
    those of the std-dev components the nodes' vectors have (the load
    components only with load data), ``names`` their names (a tuple of
    names for twins)."""

    def __init__(self, nodes: list[Node]) -> None:
        kinds = {(node.twin_forth, node.twin_load, node.load is not None)
                 for node in nodes}
        assert len(kinds) <= 1, "nodes of different clusters"
        twin_forth, twin_load, loads = kinds.pop() if kinds \
            else (False, False, False)
        names: tuple = STDDEV_COMPONENTS
        weights: tuple[float, ...] = STDDEV_WEIGHTS
        if twin_forth:
            names = ((names[0], names[5]), ) + names[1:5]
            weights = (weights[0] + weights[5], ) + weights[1:5]
        if loads:
            names += TWIN_LOADS if twin_load else LOAD_COMPONENTS
            weights += TWIN_LOAD_WEIGHTS if twin_load else LOAD_WEIGHTS
        self.names: tuple = names
        self.weights: tuple[float, ...] = weights
        self._k = range(len(self.weights))
        self.values: dict[str, Values] = {}
        self.count = 0
        self.sums = [0.0] * len(self._k)
        self.squares = [0.0] * len(self._k)
        self.add = 0.0
        # the nodes' (location, exclusion tag) pairs and their excess
        self.lx: Counter = Counter()
        self.lx_excess = 0
        for node in nodes:
            self._Account(node.name, NodeValues(node), 1)

    def _Account(self, name: str, values: Values, sign: int) -> None:
        if sign > 0:
            self.values[name] = values
        self.add += sign * values.add
        if values.lx is not None:
            self.lx_excess += self.LxDelta(
                {key: sign * count for key, count in values.lx})
            for key, count in values.lx:
                self.lx[key] += sign * count
        if values.vec is not None:
            self.count += sign
            for k in self._k:
                value = values.vec[k]
                self.sums[k] += sign * value
                self.squares[k] += sign * value * value

    def LxDelta(self, changes: dict[tuple[str, str], int]) -> int:
        """The change of the location exclusion excess if the pairs'
        counts changed by ``changes``."""
        lx = self.lx
        delta = 0
        for key, change in changes.items():
            if change:
                count = lx[key] if key in lx else 0
                delta += _Excess(count + change) - _Excess(count)
        return delta

    def PairDelta(self, removed: Iterable[tuple[str, str]],
                  added: Iterable[tuple[str, str]]) -> float:
        """The weighted change of the location exclusion score if an
        instance's pairs moved from ``removed`` to ``added``."""
        changes: dict[tuple[str, str], int] = {}
        for key in removed:
            changes[key] = changes.get(key, 0) - 1
        for key in added:
            changes[key] = changes.get(key, 0) + 1
        return W_LOCATION_EXCLUSION * self.LxDelta(changes)

    def Total(self) -> float:
        return self._Compute(self.count, self.sums, self.squares,
                             self.add + W_LOCATION_EXCLUSION * self.lx_excess)

    def _Compute(self, count: int, sums: list[float], squares: list[float],
                 add: float) -> float:
        total = add
        if count:
            for weight, sum_k, square_k in zip(self.weights, sums, squares):
                mean = sum_k / count
                var = square_k / count - mean * mean
                if var > 0:
                    total += weight * math.sqrt(var)
        return total

    def With(self, nodes: list[Node]) -> float:
        """The score if the given nodes (of this set) had their current
        state; the running sums keep their old values."""
        state = self.Start()
        for node in nodes:
            self.Replace(state, node.name, NodeValues(node))
        return self.Finish(state)

    # Scoring many candidates that share a changed node (hail's
    # ``compCVfromStats``): the shared change is applied to a state once,
    # each candidate's own node by ``Swapped``. The arithmetic is the one
    # of ``With``, so the scores are identical.

    def Start(self) -> list:
        """A scratch copy of the running sums for ``Replace`` (with the
        changes of the location exclusion pairs, None while none)."""
        return [self.count, list(self.sums), list(self.squares), self.add,
                None]

    def Replace(self, state: list, name: str, new: Values) -> None:
        """Put a node's new values in place of its old ones in ``state``
        (nothing for a node not in this set, e.g. the old group of a
        moved instance)."""
        old = self.values.get(name)
        if old is None:
            return
        count, sums, squares, add, changes = state
        if old.lx != new.lx:
            if changes is None:
                changes = state[4] = {}
            _PairChanges(changes, old, new)
        add -= old.add
        if old.vec is not None:
            count -= 1
            for k in self._k:
                sums[k] -= old.vec[k]
                squares[k] -= old.vec[k] * old.vec[k]
        add += new.add
        if new.vec is not None:
            count += 1
            for k in self._k:
                sums[k] += new.vec[k]
                squares[k] += new.vec[k] * new.vec[k]
        state[0] = count
        state[3] = add

    def Finish(self, state: list) -> float:
        count, sums, squares, add, changes = state
        add += W_LOCATION_EXCLUSION * self.lx_excess
        if changes:
            add += W_LOCATION_EXCLUSION * self.LxDelta(changes)
        return self._Compute(count, sums, squares, add)

    def Swapped(self, state: list, name: str, new: Values) -> float:
        """``Finish`` of ``state`` after ``Replace(state, name, new)``,
        leaving ``state`` as it is."""
        old = self.values.get(name)
        if old is None:
            return self.Finish(state)
        count, sums, squares, add, changes = state
        if old.vec is None or new.vec is None or old.lx != new.lx:
            scratch = [count, list(sums), list(squares), add,
                       None if changes is None else dict(changes)]
            self.Replace(scratch, name, new)
            return self.Finish(scratch)
        total = add - old.add + new.add + \
            W_LOCATION_EXCLUSION * self.lx_excess
        if changes:
            total += W_LOCATION_EXCLUSION * self.LxDelta(changes)
        # both online: the count stays, one fused pass over the components
        if not count:
            return total
        for weight, total_k, square_k, out, into in zip(
                self.weights, sums, squares, old.vec, new.vec):
            mean = (total_k - out + into) / count
            var = (square_k - out * out + into * into) / count - mean * mean
            if var > 0:
                total += weight * math.sqrt(var)
        return total

    def Update(self, nodes: list[Node]) -> None:
        """Take the nodes' current state into the running sums."""
        for node in nodes:
            old = self.values.get(node.name)
            if old is not None:
                self._Account(node.name, old, -1)
                self._Account(node.name, NodeValues(node), 1)

    def Copy(self) -> "Score":
        result = Score([])
        result.weights = self.weights
        result.names = self.names
        result._k = self._k
        result.values = dict(self.values)
        result.count = self.count
        result.sums = list(self.sums)
        result.squares = list(self.squares)
        result.add = self.add
        result.lx = Counter(self.lx)
        result.lx_excess = self.lx_excess
        return result

    def Components(self) -> dict[str, float]:
        """Each component's value (unweighted), for explanations."""
        result = {}
        for k, name in enumerate(self.names):
            if self.count:
                mean = self.sums[k] / self.count
                var = self.squares[k] / self.count - mean * mean
                value = math.sqrt(var) if var > 0 else 0.0
            else:
                value = 0.0
            for each in (name, ) if isinstance(name, str) else name:
                result[each] = value
        result["additive"] = self.add
        result["location_exclusion_score"] = float(self.lx_excess)
        return result


def _PairChanges(changes: dict[tuple[str, str], int], old: Values,
                 new: Values) -> None:
    """Add a node's change of (location, exclusion tag) pairs."""
    for key, count in old.lx or ():
        changes[key] = changes.get(key, 0) - count
    for key, count in new.lx or ():
        changes[key] = changes.get(key, 0) + count


def OptimalScore(nodes: list[Node]) -> float:
    """The least score the nodes can reach (``optimalCVScore``): with the
    memory reserved for DRBD failovers spread evenly, what the reserved
    memory total still adds when the largest node fails. hbal stops this
    far above its minimum score."""
    if len(nodes) < 2:
        return 0.0
    total = sum(node.t_mem for node in nodes)
    one_less = total - max(node.t_mem for node in nodes)
    if one_less <= 0:
        return 0.0
    drbd = float(sum(sum(node.peers.values()) for node in nodes))
    return W_RESERVED_RTOTAL * (drbd / one_less - drbd / total)


def ClusterScore(nodes: list[Node]) -> float:
    """The score of a set of nodes (``compCV``)."""
    return Score(nodes).Total()
