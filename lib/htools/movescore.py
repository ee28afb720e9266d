"""Scores of hbal's candidate moves without applying them.

A move changes at most three nodes (primary, secondary, target), and the
checks of its steps each read one node. So a candidate is the sum of
per-node *parts*: the change of that node's share of the score (additive
part, and per std-dev component the change of the sum and of the sum of
squares) or None when one of its checks fails. A part is computed once
with the model's own ``Node`` methods (change, ``NodeValues``, undo) and
memoized per node, keyed by the role, the instance's shape and the values
of the other nodes it depends on (peer memory, location overlap, offline
flags), until an accepted move changes that node.

A round scores a candidate exactly only when a lower bound of its score
can beat the best so far (or the highest acceptable score). The bound
linearizes each std-dev around the current state: with ``n`` nodes, mean
``m``, ``sigma`` the current std-dev and ``x`` the new one, a part's
``u_p = (dQ_p - 2 m dS_p) / n`` (its changes of the sum of squares and of
the sum) and ``d`` the candidate's change of the sum, ``x**2 = sigma**2 +
u - d**2 / n**2`` with ``u`` the sum of the ``u_p``; as ``x - sigma =
(x**2 - sigma**2) / (x + sigma)`` and ``x >= 0``, ``x = sigma +
(x**2 - sigma**2) / (2 sigma) - (x - sigma)**2 / (2 sigma) >= sigma +
(u - d**2 / n**2) / (2 sigma) - (|u| + d**2 / n**2)**2 / (2 sigma**3)``.
With ``d**2 <= 3 sum(dS_p**2)``, ``a_p = |u_p| + 3 dS_p**2 / n**2`` and
``(sum a_p)**2 <= 3 sum(a_p**2)`` (at most 3 parts) every term is a sum
over the parts, so the bound is too. Its error shrinks with the moved
nodes' distance to the mean, which makes it much tighter than the
Lipschitz bound ``|x - sigma| <= |Dv| / sqrt(n)`` once the spread is
small (on 100 nodes about 10 times fewer candidates are scored exactly).
Components with a (near) zero std-dev contribute 0, which is always below
their value.

Most targets are unlinked to a victim (``_Linked``: not its nodes, not
reserving memory for them nor reserved for by them, sharing no location):
toward those a move's parts depend only on the victim and, on the target,
on the victim's shape. So per level ``Best`` sorts the targets by their
part's bound once per shape and kind of move, and each victim walks that
list from a heap, lazily: candidates are scored exactly in the order of
their bounds until one is above the best so far, and most targets of
most victims are never looked at. Linked targets are scored pair by pair.

The location exclusion score is no sum of parts (a pair's count spans
the nodes sharing the location): a candidate's exact score adds the
change of the pairs of the instance's primary (``_PairDelta``) and its
bound the least that change can be (``_PairLows``: all pairs removed).
"""

import ctypes
import itertools
import math
import sys
from collections.abc import Iterable, Iterator
from heapq import heapify, heappop, heapreplace
from operator import add, attrgetter, itemgetter, mul, sub

from ganeti.htools import moves, parallel
from ganeti.htools.metrics import W_LOCATION_EXCLUSION, NodeValues, Score
from ganeti.htools.model import Cluster, Instance, Node

# Covers the rounding of the scores to 10 decimals and float error
_MARGIN = 1e-9
# Std-devs below this are not linearized (the bound would be useless)
_MIN_SIGMA = 1e-6

# (additive change, per component change of the sum, of the sum of squares,
# and (component, change of the sum, of the sum of squares) of those that
# change: the bound skips the others, whose share is exactly zero)
Part = tuple[float, tuple[float, ...], tuple[float, ...],
             tuple[tuple[int, float, float], ...]]
Check = tuple[str | None, bool]
# (sum of the parts' lower bounds, instance, kind, target, parts)
_Candidate = tuple[float, str, str, str | None, tuple]
_LOW = itemgetter(0)
_INF = float("inf")
# The highest bound a candidate may have: a failed check's is infinite
_FINITE = sys.float_info.max
# Per kind of move to a target: its index in the parts of _Toward and
# _Target, and that of its part in those of _Fixed
_KINDS = ((moves.REPLACE_SECONDARY, 0, 2), (moves.REPLACE_AND_FAILOVER, 1, 2),
          (moves.REPLACE_PRIMARY, 2, 3), (moves.FAILOVER_AND_REPLACE, 3, 3))
# The key of _Toward's parts toward an unlinked target
_UNLINKED = (None, None, 0, 0)
_EMPTY: dict = {}
# The moves making the target the primary, and those making the secondary
_TO_TARGET = frozenset([moves.FAILOVER_TO_ANY, moves.REPLACE_AND_FAILOVER,
                        moves.REPLACE_PRIMARY])
_TO_SECONDARY = frozenset([moves.FAILOVER, moves.FAILOVER_AND_REPLACE])


class Evaluator:
    """Candidate scores against the running sums of a ``Score``; call
    ``Changed`` with the nodes an accepted move touched."""

    def __init__(self, cluster: Cluster, score: Score, strict: bool) -> None:
        self.cluster = cluster
        self.score = score
        self.strict = strict
        # per std-dev component of the score (see ``Score.weights``)
        self._zero = (0.0, ) * len(score.weights)
        # the part of a node the move leaves as it is
        self._nothing: Part = (0.0, self._zero, self._zero, ())
        self._memo: dict[str, dict[tuple, Part | None]] = {}
        # per target node, (round, lower bounds, parts) of _Target
        self._bundles: dict[str, dict[tuple, tuple]] = {}
        self._shapes: dict[str, int] = {}
        self._shape_ids: dict[tuple, int] = {}
        # equal parts are one object, so that candidates with the same
        # parts (equal scores) are told by the parts' ids
        self._intern: dict[tuple, Part] = {}
        self._grad: tuple = ()
        # per round, by the part's id (parts are kept alive by _intern)
        self._lows: dict[int, float] = {}
        self._stamp = 0
        # per group of victims, the share scoring them (parallel.Share)
        self._owners: dict[tuple, int] = {}
        # per victim, its _Fixed parts, per peer values toward a target
        # (round, lower bounds, parts) of _Toward and its linked nodes
        # (_Linked), while its nodes stay
        self._victims: dict[str, tuple[tuple, dict[tuple, tuple],
                                       frozenset[str]]] = {}
        # per node, the victims cached in _victims that it holds
        self._held: dict[str, set[str]] = {}
        # per node, the nodes whose peers include it (reserve memory for
        # its primaries), and the peers each node was last seen with
        self._reserving: dict[str, set[str]] = {}
        self._peers: dict[str, frozenset[str]] = {}
        self._Reserving(cluster.nodes)
        # per node, the nodes sharing one of its locations
        self._mates: dict[str, frozenset[str]] = {}
        self._located = any(node.locations
                            for node in cluster.nodes.values())
        # whether primaries' (location, exclusion tag) pairs are scored
        self._paired = self._located and bool(cluster.ex_prefixes)

    def Changed(self, names: frozenset[str] | set[str]) -> None:
        for name in names:
            self._memo.pop(name, None)
            self._bundles.pop(name, None)
            for victim in self._held.pop(name, ()):
                self._victims.pop(victim, None)
        self._Reserving(names)

    def _Reserving(self, names: Iterable[str]) -> None:
        """Follow the nodes' peers in ``_reserving``."""
        nodes = self.cluster.nodes
        for name in names:
            old = self._peers.get(name, frozenset())
            new = self._peers[name] = frozenset(nodes[name].peers)
            for peer in old - new:
                self._reserving[peer].discard(name)
            for peer in new - old:
                self._reserving.setdefault(peer, set()).add(name)

    # Parts ------------------------------------------------------------------

    def _Shape(self, inst: Instance) -> int:
        """The id of what a part depends on in the instance: equal shapes
        give equal parts on the same node."""
        shape = self._shapes.get(inst.name)
        if shape is None:
            full = (inst.mem, inst.dsk,
                    sum(sp or 0 for sp in inst.disk_spindles), inst.vcpus,
                    inst.spindle_use, inst.sec_mem, inst.template, inst.xtags,
                    inst.util, inst.dlocs)
            shape = self._shape_ids.setdefault(full, len(self._shape_ids))
            self._shapes[inst.name] = shape
        return shape

    def _Part(self, node: Node, inst: Instance, key: tuple,
              remove_pri: bool = False, remove_sec: str | None = None,
              checks: tuple[Check, ...] = (), add_pri: bool = False,
              add_sec: str | None = None, dloc: int = 0) -> Part | None:
        """The node's part: remove the instance's primary or secondary
        (for ``remove_sec``'s primary) role, run the checks (a node name:
        ``AddSec`` with that primary, None: ``AddPri``) on that state,
        then add the final role(s) and the location score change. The
        key names the steps (so moves of different kinds with the same
        steps on the node share the part) and holds what they read of the
        other nodes."""
        memo = self._memo.get(node.name)
        if memo is None:
            memo = self._memo[node.name] = {}
        key = (key, self._Shape(inst))
        if key in memo:
            return memo[key]
        if remove_pri:
            node.RemovePri(inst)
        if remove_sec is not None:
            node.RemoveSec(inst, remove_sec)
        part: Part | None = None
        for peer, strict in checks:
            if peer is None:
                failure = node.AddPri(inst, strict)
                if failure is None:
                    node.RemovePri(inst)
            else:
                failure = node.AddSec(inst, peer, strict)
                if failure is None:
                    node.RemoveSec(inst, peer)
            if failure is not None:
                break
        else:
            if add_pri:
                node.PlacePri(inst)
            if add_sec is not None:
                node.PlaceSec(inst, add_sec,
                              node.peers.get(add_sec, 0.0) + inst.sec_mem)
            node.loc_score += dloc
            part = self._Delta(node)
            node.loc_score -= dloc
            if add_sec is not None:
                node.RemoveSec(inst, add_sec)
            if add_pri:
                node.RemovePri(inst)
        if remove_sec is not None:
            node.PlaceSec(inst, remove_sec,
                          node.peers.get(remove_sec, 0.0) + inst.sec_mem)
        if remove_pri:
            node.PlacePri(inst)
        memo[key] = part
        return part

    def _Delta(self, node: Node) -> Part:
        """The node's part, interned (see ``_intern``)."""
        old = self.score.values.get(node.name)
        if old is None:
            # not in the scored set
            return self._nothing
        new = NodeValues(node)
        if old.vec is None or new.vec is None:
            dsums = dsquares = self._zero
        else:
            dsums = tuple(map(sub, new.vec, old.vec))
            dsquares = tuple(map(sub, map(mul, new.vec, new.vec),
                                 map(mul, old.vec, old.vec)))
        key = (new.add - old.add, dsums, dsquares)
        part = self._intern.get(key)
        if part is None:
            # a component's sum changes whenever its sum of squares does
            part = self._intern[key] = key + (tuple(itertools.compress(
                zip(itertools.count(), dsums, dsquares), dsums)), )
        return part

    def _Fixed(self, inst: Instance) -> tuple[Part | None, ...]:
        """The parts that do not depend on the target. Failover-to-any:
        (primary, ); mirrored: (failover's primary and secondary,
        replace-secondary's and replace-and-failover's secondary,
        replace-primary's and failover-and-replace's primary)."""
        nodes = self.cluster.nodes
        pname, sname = inst.pnode, inst.snode
        assert pname is not None
        pnode = nodes[pname]
        p_strict = self.strict and not pnode.offline
        if not inst.internal_mirror:
            dloc = -_Shared(pnode, nodes[sname]) if sname else 0
            return (self._Part(pnode, inst, ("pa", dloc), remove_pri=True,
                               dloc=dloc), )
        assert sname is not None
        snode = nodes[sname]
        lps = _Shared(pnode, snode)
        dloc = _Shared(snode, pnode)
        return (
            self._Part(pnode, inst, ("pf", pnode.peers.get(sname), p_strict,
                                     lps),
                       remove_pri=True, checks=((sname, p_strict), ),
                       add_sec=sname, dloc=-lps),
            self._Part(snode, inst, ("sf", snode.peers.get(pname), p_strict,
                                     dloc),
                       remove_sec=pname, checks=((None, p_strict), ),
                       add_pri=True, dloc=dloc),
            self._Part(snode, inst, ("sr", snode.peers.get(pname)),
                       remove_sec=pname),
            # replace-primary and failover-and-replace only free it
            self._Part(pnode, inst, ("pa", -lps), remove_pri=True,
                       dloc=-lps))

    def _Toward(self, inst: Instance, target: str, ploc: int,
                sloc: int) -> tuple[Part | None, ...]:
        """A mirrored instance's parts on its own nodes that depend on the
        target (its name, "" for one unlinked to them, see ``_Linked``;
        the locations it shares with the primary and the secondary):
        replace-secondary's primary (location change only, zero when
        none), replace-and-failover's primary, replace-primary's
        secondary, failover-and-replace's secondary."""
        nodes = self.cluster.nodes
        pname, sname = inst.pnode, inst.snode
        assert pname is not None and sname is not None
        pnode, snode = nodes[pname], nodes[sname]
        p_strict = self.strict and not pnode.offline
        s_strict = self.strict and not snode.offline
        lps = _Shared(pnode, snode)
        dloc = ploc - lps
        return (
            self._Part(pnode, inst, ("pr", dloc), dloc=dloc) if dloc
            else self._nothing,
            self._Part(pnode, inst, ("pf", pnode.peers.get(target),
                                     s_strict, lps),
                       remove_pri=True, checks=((target, s_strict), ),
                       add_sec=target, dloc=-lps),
            self._Part(snode, inst, ("sp", snode.peers.get(pname),
                                     snode.peers.get(target), p_strict),
                       remove_sec=pname, checks=((None, p_strict),
                                                 (target, p_strict)),
                       add_sec=target),
            self._Part(snode, inst, ("sf", snode.peers.get(pname), p_strict,
                                     sloc),
                       remove_sec=pname, checks=((None, p_strict), ),
                       add_pri=True, dloc=sloc))

    def _Target(self, inst: Instance, tnode: Node, pname: str, sname: str,
                ploc: int, sloc: int) -> tuple[Part | None, ...]:
        """The parts on the target (the instance's primary and secondary
        as the target sees them: their names, "" when unlinked, see
        ``_Linked``, and the locations it shares with them).
        Failover-to-any: (target, ); mirrored: those of
        replace-secondary, replace-and-failover, replace-primary,
        failover-and-replace."""
        assert inst.pnode is not None
        p_strict = self.strict and not self.cluster.nodes[inst.pnode].offline
        if not inst.internal_mirror:
            return (self._Part(tnode, inst, ("ta", p_strict),
                               checks=((None, p_strict), ), add_pri=True), )
        assert inst.snode is not None
        s_strict = self.strict and not self.cluster.nodes[inst.snode].offline
        peers = tnode.peers
        return (
            self._Part(tnode, inst, ("tr", peers.get(pname), s_strict),
                       checks=((pname, s_strict), ), add_sec=pname),
            self._Part(tnode, inst, ("tp", self.strict, ploc),
                       checks=((None, self.strict), ), add_pri=True,
                       dloc=ploc),
            self._Part(tnode, inst, ("tp", p_strict, sloc),
                       checks=((None, p_strict), ), add_pri=True,
                       dloc=sloc),
            self._Part(tnode, inst, ("tr", peers.get(sname), p_strict),
                       checks=((sname, p_strict), ), add_sec=sname))

    def _Victim(self, inst: Instance) -> tuple[tuple, dict[tuple, tuple],
                                               frozenset[str]]:
        """The victim's entry in ``_victims``, made when missing."""
        name = inst.name
        cached = self._victims.get(name)
        if cached is None:
            cached = self._victims[name] = (self._Fixed(inst), {},
                                            self._Linked(inst))
            for held in (inst.pnode, inst.snode):
                if held:
                    self._held.setdefault(held, set()).add(name)
        return cached

    def _Linked(self, inst: Instance) -> frozenset[str]:
        """The nodes whose parts for the instance depend on which node
        they are: a mirrored instance's own nodes, the nodes reserving
        memory for either of them or for which either reserves, and
        those sharing a location with either; an externally mirrored
        one's primary. Toward any other target a move's parts depend
        only on the instance's shape and strictness and the target's
        state, which ``Best`` uses."""
        pname = inst.pnode
        assert pname is not None
        if not inst.internal_mirror:
            return frozenset((pname, ))
        result = set()
        for name in (pname, inst.snode):
            if name:
                result.add(name)
                result.update(self._reserving.get(name, ()))
                result.update(self.cluster.nodes[name].peers)
                result.update(self._Mates(name))
        return frozenset(result)

    def _Mates(self, name: str) -> frozenset[str]:
        """The nodes sharing a location with the node (locations never
        change)."""
        mates = self._mates.get(name)
        if mates is None:
            node = self.cluster.nodes[name]
            mates = self._mates[name] = frozenset(
                other.name for other in self.cluster.nodes.values()
                if _Shared(node, other)) if node.locations else frozenset()
        return mates

    def _TargetEntry(self, inst: Instance, tnode: Node, tkey: tuple,
                     pname: str, sname: str, ploc: int, sloc: int) -> tuple:
        """(round, lower bounds, parts) of ``_Target`` for the key, the
        parts kept until the target changes, the bounds for the round."""
        tmemo = self._bundles.get(tnode.name)
        if tmemo is None:
            tmemo = self._bundles[tnode.name] = {}
        entry = tmemo.get(tkey)
        if entry is None or entry[0] != self._stamp:
            tparts = self._Target(inst, tnode, pname, sname, ploc, sloc) \
                if entry is None else entry[2]
            entry = tmemo[tkey] = (self._stamp, self._Lows(tparts), tparts)
        return entry

    def _TowardEntry(self, inst: Instance, local: dict[tuple, tuple],
                     vkey: tuple, target: str, ploc: int, sloc: int
                     ) -> tuple:
        """(round, lower bounds, parts) of ``_Toward`` for the victim's
        key, as ``_TargetEntry``."""
        toward = local.get(vkey)
        if toward is None or toward[0] != self._stamp:
            vparts = self._Toward(inst, target, ploc, sloc) \
                if toward is None else toward[2]
            toward = local[vkey] = (self._stamp, self._Lows(vparts), vparts)
        return toward

    def _Candidates(self, inst: Instance, targets: list[Node],
                    disk_moves: bool, most: float = _FINITE
                    ) -> Iterator[_Candidate]:
        """The instance's candidates whose checks pass and whose bound is
        at most ``most``, with the sum of
        their parts' lower bounds: mirrored instances a failover and, with
        disk moves, per target a replace-secondary, replace-and-failover,
        replace-primary and failover-and-replace; externally mirrored ones
        a failover-to-any per target. Victim parts are looked up once per
        victim (per peer values toward the target), target parts once per
        target, shape and peer values, their bounds once per round; the
        victim's parts are kept until an accepted move changes its nodes."""
        sname = inst.snode or ""
        internal = inst.internal_mirror
        if internal and not sname or \
                not internal and not inst.external_mirror:
            return
        fixed, local, _ = self._Victim(inst)
        yield from self._Moves(inst, fixed, local,
                               self._FixedLows(inst, fixed), targets,
                               disk_moves, most)

    def _FixedLows(self, inst: Instance, fixed: tuple) -> tuple[float, ...]:
        """The lower bounds of the victim's fixed parts, with the least
        change of the location exclusion score."""
        flows = self._Lows(fixed)
        if self._paired and inst.xtags:
            flows = self._PairLows(inst, flows)
        return flows

    def _Moves(self, inst: Instance, fixed: tuple, local: dict[tuple, tuple],
               flows: tuple[float, ...], targets: list[Node],
               disk_moves: bool, most: float) -> Iterator[_Candidate]:
        """``_Candidates`` of a victim (of a mirrored template) with its
        ``_Victim`` entry and fixed parts' bounds."""
        name, pname = inst.name, inst.pnode
        assert pname is not None
        sname = inst.snode or ""
        internal = inst.internal_mirror
        if internal:
            low = flows[0] + flows[1]
            if low <= most:
                yield (low, name, moves.FAILOVER, None, fixed[:2])
            if not disk_moves:
                return
        nodes = self.cluster.nodes
        pnode = nodes[pname]
        # only used when mirrored
        snode = nodes[sname] if internal else pnode
        p_strict = self.strict and not pnode.offline
        s_strict = self.strict and not snode.offline
        shape = self._Shape(inst)
        stamp = self._stamp
        bundles = self._bundles
        ploc = sloc = 0
        for tnode in targets:
            tname = tnode.name
            if tname == pname or tname == sname:
                continue
            if not internal:
                tlows, tparts = self._TargetEntry(
                    inst, tnode, (shape, p_strict), "", "", 0, 0)[1:]
                low = flows[0] + tlows[0]
                if low <= most:
                    yield (low, name, moves.FAILOVER_TO_ANY, tname,
                           (fixed[0], tparts[0]))
                continue
            if self._located:
                ploc = _Shared(pnode, tnode)
                sloc = _Shared(snode, tnode)
            # the entries' look-ups inlined while they are fresh
            tkey = (shape, tnode.peers.get(pname), tnode.peers.get(sname),
                    p_strict, s_strict, ploc, sloc)
            entry = bundles.get(tname, _EMPTY).get(tkey)
            if entry is None or entry[0] != stamp:
                entry = self._TargetEntry(inst, tnode, tkey, pname, sname,
                                          ploc, sloc)
            tlows, tparts = entry[1], entry[2]
            vkey = (pnode.peers.get(tname), snode.peers.get(tname), ploc,
                    sloc)
            entry = local.get(vkey)
            if entry is None or entry[0] != stamp:
                entry = self._TowardEntry(inst, local, vkey, tname, ploc,
                                          sloc)
            vlows, vparts = entry[1], entry[2]
            for kind, k, fk in _KINDS:
                low = flows[fk] + vlows[k] + tlows[k]
                if low <= most:
                    yield (low, name, kind, tname,
                           (fixed[fk], vparts[k], tparts[k]))

    # Scores -----------------------------------------------------------------

    def _Pairs(self, name: str | None, inst: Instance) -> list[tuple]:
        """The instance's (location, exclusion tag) pairs as the primary
        on the node (none on an offline one: not scored)."""
        if not name:
            return []
        node = self.cluster.nodes[name]
        if node.offline:
            return []
        return [(loc, tag) for loc in node.locations for tag in inst.xtags]

    def _PairDelta(self, inst: Instance, kind: str,
                   target: str | None) -> float:
        """The move's change of the location exclusion score."""
        if not (self._paired and inst.xtags):
            return 0.0
        if kind in _TO_TARGET:
            new = target
        elif kind in _TO_SECONDARY:
            new = inst.snode
        else:
            return 0.0
        return self.score.PairDelta(self._Pairs(inst.pnode, inst),
                                    self._Pairs(new, inst))

    def _PairLows(self, inst: Instance, flows: tuple[float, ...]
                  ) -> tuple[float, ...]:
        """The lower bounds of the victim's fixed parts with the least
        change of the location exclusion score (all its pairs removed)."""
        low = self.score.PairDelta(self._Pairs(inst.pnode, inst), ())
        return tuple(value + low for value in flows) if low else flows

    def _Exact(self, parts: tuple[Part, ...], extra: float = 0.0) -> float:
        """The score with the parts applied (``Score.With``) and ``extra``
        (the change of the location exclusion score), rounded as the
        planner compares them."""
        score = self.score
        count = score.count
        total = score.add + W_LOCATION_EXCLUSION * score.lx_excess + extra
        for part in parts:
            total += part[0]
        if count:
            sums: Iterable[float] = score.sums
            squares: Iterable[float] = score.squares
            for part in parts:
                sums = map(add, sums, part[1])
                squares = map(add, squares, part[2])
            for weight, sum_k, square_k in zip(score.weights, sums,
                                               squares):
                mean = sum_k / count
                var = square_k / count - mean * mean
                if var > 0:
                    total += weight * math.sqrt(var)
        return round(total, 10)

    def Value(self, move: moves.Move) -> float | None:
        """The rounded score after the move, None if a check fails."""
        self._Gradient()
        inst = self.cluster.instances[move.instance]
        targets = [] if move.target is None \
            else [self.cluster.nodes[move.target]]
        if not self._Migrates(move.instance, move.kind, move.target):
            return None
        for cand in self._Candidates(inst, targets, move.target is not None):
            if cand[2] == move.kind:
                return self._Exact(cand[4], self._PairDelta(inst, move.kind,
                                                            move.target))
        return None

    def _Migrates(self, name: str, kind: str, target: str | None) -> bool:
        """Whether the move passes the migration-class check, which
        depends on two nodes and so is no part (checked only for the
        candidates that could be chosen)."""
        return not self.cluster.migration_classes or \
            moves.MigrationFailure(
                self.cluster, moves.Move(name, kind, target)) is None

    def _Gradient(self) -> float:
        """Set up the lower bound for this round; returns its constant."""
        score = self.score
        count = score.count
        base = score.add + W_LOCATION_EXCLUSION * score.lx_excess
        grad = []
        for k, weight in enumerate(score.weights):
            if count:
                mean = score.sums[k] / count
                var = score.squares[k] / count - mean * mean
                sigma = math.sqrt(var) if var > 0 else 0.0
            if count and sigma > _MIN_SIGMA:
                base += weight * sigma
                grad.append((1.0 / count, 2.0 * mean / count,
                             3.0 / (count * count), weight / (2 * sigma),
                             3 * weight / (2 * sigma ** 3)))
            else:
                grad.append((0.0, 0.0, 0.0, 0.0, 0.0))
        # per component: factors of the change of the sum of squares and
        # of the sum in u, of the square of the change of the sum in the
        # bound of d**2, of the linear term and of the error term; the
        # bounds of the previous call hold while the sums stay (the next
        # level of a round)
        if tuple(grad) != self._grad:
            self._grad = tuple(grad)
            self._lows = {}
            self._stamp += 1
        return base

    def _Lows(self, parts: tuple[Part | None, ...]) -> tuple[float, ...]:
        """The parts' shares of the lower bound (infinite for a failed
        check)."""
        result = []
        lows = self._lows
        grad = self._grad
        for part in parts:
            if part is None:
                result.append(_INF)
                continue
            low = lows.get(id(part))
            if low is None:
                low = part[0]
                for k, dsum, dsquare in part[3]:
                    g_sq, g_sum, g_dd, g_lin, g_err = grad[k]
                    dev = g_sq * dsquare - g_sum * dsum
                    dsq = g_dd * dsum * dsum
                    reach = (dev if dev > 0 else -dev) + dsq
                    low += g_lin * (dev - dsq) - g_err * reach * reach
                lows[id(part)] = low
            result.append(low)
        return tuple(result)

    def Best(self, victims: list[Instance], targets: list[Node],
             disk_moves: bool = True, limit: float = _INF,
             share: tuple[int, int] = (0, 1),
             shared: ctypes.c_double | None = None
             ) -> tuple[float, moves.Move] | None:
        """The victims' candidate (see ``_Candidates``) with the lowest
        rounded score, ties broken as hbal does (``moves.TieKey``,
        ``parallel.Rank``), if that score is at most ``limit`` (give or
        take the rounding margin; None otherwise, or when there is no
        candidate).

        Victims of equal shape on the same nodes have equal scores, so only
        the first by name is looked at. The exact score is computed in the
        order of the lower bounds (a heap of the candidates toward linked
        targets and of the heads of the walks, see ``_Seed``), until one
        is above the best so far.

        With ``share`` (index, count), only the share's victims are
        looked at (``parallel.Share``): the best of the shares by
        ``parallel.Rank`` is the best of all. ``shared`` holds the
        lowest score any share has found so far (a candidate's: at least
        the best), which stops the walk as the own best does."""
        base = self._Gradient() - _MARGIN
        cutoff = limit + _MARGIN
        chosen: dict[tuple, Instance] = {}
        for inst in victims:
            same = (inst.pnode, inst.snode, self._Shape(inst))
            other = chosen.get(same)
            if other is None or inst.name < other.name:
                chosen[same] = inst
        selected: Iterable[Instance] = chosen.values()
        if share[1] > 1:
            # equal shape and strictness: the same targets' parts
            groups: dict[tuple, list[Instance]] = {}
            nodes = self.cluster.nodes
            for inst in sorted(selected, key=attrgetter("name")):
                groups.setdefault((self._Shape(inst),
                                   nodes[inst.pnode or ""].offline,
                                   nodes[inst.snode or inst.pnode
                                         or ""].offline), []).append(inst)
            selected = parallel.Share(groups, share, self._owners)
        most = min(cutoff - base, _FINITE)
        heap: list[tuple] = []
        unlinked: dict[tuple, tuple] = {}
        by_name = {tnode.name: tnode for tnode in targets}
        for inst in selected:
            self._Seed(inst, targets, by_name, disk_moves, most, heap,
                       unlinked)
        heapify(heap)
        # (rank: score and hbal's order, the move's fields)
        best: tuple[tuple, tuple[str, str, str | None]] | None = None
        values: dict[tuple, float] = {}
        # the best score so far (of all shares), or the cutoff
        top = cutoff
        while heap:
            cand = heap[0]
            low, name, kind, target, parts = cand[:5]
            if shared is not None and shared.value < top:
                top = shared.value
            if base + low > top:
                break
            extra = self._PairDelta(self.cluster.instances[name], kind,
                                    target) if self._paired else 0.0
            ids = (extra, ) + tuple(map(id, parts))
            value = values.get(ids)
            if value is None:
                value = values[ids] = self._Exact(parts, extra)
            key = (value, moves.TieKey(moves.Move(name, kind, target)))
            if value <= cutoff and (best is None or key < best[0]) and \
                    self._Migrates(name, kind, target):
                best = (key, (name, kind, target))
                if value < top:
                    top = value
                    if shared is not None and value < shared.value:
                        shared.value = value
            follow = _Walk(cand[5], name, kind, most) if len(cand) > 5 \
                else None
            if follow is None:
                heappop(heap)
            else:
                heapreplace(heap, follow)
        if best is None:
            return None
        name, kind, target = best[1]
        return best[0][0], moves.Move(name, kind, target)

    def _Seed(self, inst: Instance, targets: list[Node],
              by_name: dict[str, Node], disk_moves: bool, most: float,
              heap: list[tuple], unlinked: dict[tuple, tuple]) -> None:
        """Add the instance's candidates to the heap of ``Best``: those
        toward its linked targets (``_Linked``) and the nodes it is on one
        by one (``_Candidates``), the others per kind of move as the head
        of a walk down the targets of ``_Unlinked`` (``_Walk``)."""
        pname = inst.pnode
        assert pname is not None
        sname = inst.snode or ""
        internal = inst.internal_mirror
        if internal and not sname or \
                not internal and not inst.external_mirror:
            return
        fixed, local, linked = self._Victim(inst)
        nodes = self.cluster.nodes
        p_strict = self.strict and not nodes[pname].offline
        shape = self._Shape(inst)
        tkey: tuple = (shape, p_strict)
        if internal:
            tkey = (shape, None, None, p_strict,
                    self.strict and not nodes[sname].offline, 0, 0)
        shared = unlinked.get(tkey)
        if shared is None:
            shared = unlinked[tkey] = self._Unlinked(inst, tkey, targets)
        lists, skipped = shared
        flows = self._FixedLows(inst, fixed)
        # the linked targets (a set operation: usually a few of many)
        heap.extend(self._Moves(
            inst, fixed, local, flows,
            [by_name[name] for name in
             (linked | skipped).intersection(by_name)], disk_moves, most))
        heads: list[tuple[str, float, tuple, list]]
        if not internal:
            heads = [(moves.FAILOVER_TO_ANY, flows[0], (fixed[0], ),
                      lists[0])]
        elif disk_moves:
            vlows, vparts = self._TowardEntry(inst, local, _UNLINKED, "",
                                              0, 0)[1:]
            heads = [(kind, flows[fk] + vlows[k], (fixed[fk], vparts[k]),
                      lists[k]) for kind, k, fk in _KINDS]
        else:
            return
        for kind, offset, head, entries in heads:
            first = _Walk(((entries, offset, head, linked), 0), inst.name,
                          kind, most)
            if first is not None:
                heap.append(first)

    def _Unlinked(self, inst: Instance, tkey: tuple, targets: list[Node]
                  ) -> tuple[tuple[list, ...], frozenset[str]]:
        """Per kind of move (as ``_Target``), the (lower bound, target,
        part) toward each target for the instances of the key's shape and
        strictness unlinked to it, sorted by bound; and the instance's own
        nodes, left out (placing the instance there would double it), for
        the other instances of the key to try one by one."""
        own = frozenset(name for name in (inst.pnode, inst.snode) if name)
        lists: tuple[list, ...] = tuple(
            [] for _ in (_KINDS if inst.internal_mirror else (0, )))
        for tnode in targets:
            if tnode.name in own:
                continue
            tlows, tparts = self._TargetEntry(inst, tnode, tkey, "", "", 0,
                                              0)[1:]
            for entries, low, part in zip(lists, tlows, tparts):
                if part is not None:
                    entries.append((low, tnode.name, part))
        for entries in lists:
            entries.sort(key=_LOW)
        return lists, own


def _Walk(walk: tuple, name: str, kind: str, most: float) -> tuple | None:
    """The next candidate of a walk (list, offset: the victim's share of
    the bound, head: the victim's parts, skip: its linked nodes; and the
    index to go on from) whose bound is at most ``most``, as a heap
    entry: the candidate and the walk to go on with; None past the end."""
    (entries, offset, head, skip), start = walk
    for index in range(start, len(entries)):
        low, target, part = entries[index]
        low += offset
        if low > most:
            return None
        if target not in skip:
            return (low, name, kind, target, head + (part, ),
                    (walk[0], index + 1))
    return None


def _Shared(node: Node, other: Node) -> int:
    """Location tags shared by a primary and its secondary."""
    if not node.locations:
        return 0
    return len(node.locations & other.locations)
