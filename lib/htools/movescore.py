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
"""

import math
import sys
from collections.abc import Iterable, Iterator
from operator import add, itemgetter, mul, sub

from ganeti.htools import moves
from ganeti.htools.metrics import STDDEV_WEIGHTS, NodeValues, Score
from ganeti.htools.model import Cluster, Instance, Node

_K = range(len(STDDEV_WEIGHTS))
_ZERO = (0.0, ) * len(STDDEV_WEIGHTS)
# Covers the rounding of the scores to 10 decimals and float error
_MARGIN = 1e-9
# Std-devs below this are not linearized (the bound would be useless)
_MIN_SIGMA = 1e-6

# (additive change, per component change of the sum, of the sum of squares)
Part = tuple[float, tuple[float, ...], tuple[float, ...]]
Check = tuple[str | None, bool]
# (sum of the parts' lower bounds, instance, kind, target, parts)
_Candidate = tuple[float, str, str, str | None, tuple]
_LOW = itemgetter(0)
_INF = float("inf")
# The highest bound a candidate may have: a failed check's is infinite
_FINITE = sys.float_info.max
# The part of a node the move leaves as it is
_NOTHING: Part = (0.0, _ZERO, _ZERO)


class Evaluator:
    """Candidate scores against the running sums of a ``Score``; call
    ``Changed`` with the nodes an accepted move touched."""

    def __init__(self, cluster: Cluster, score: Score, strict: bool) -> None:
        self.cluster = cluster
        self.score = score
        self.strict = strict
        self._memo: dict[str, dict[tuple, Part | None]] = {}
        # per target node, (round, lower bounds, parts) of _Target
        self._bundles: dict[str, dict[tuple, tuple]] = {}
        self._shapes: dict[str, int] = {}
        self._shape_ids: dict[tuple, int] = {}
        # equal parts are one object, so that candidates with the same
        # parts (equal scores) are told by the parts' ids
        self._intern: dict[Part, Part] = {}
        self._grad: tuple = ()
        # per round, by the part's id (parts are kept alive by _intern)
        self._lows: dict[int, float] = {}
        self._stamp = 0
        # per victim, its _Fixed parts and per peer values toward a target
        # (round, lower bounds, parts) of _Toward, while its nodes stay
        self._victims: dict[str, tuple[tuple, dict[tuple, tuple]]] = {}
        # per node, the victims cached in _victims that it holds
        self._held: dict[str, set[str]] = {}

    def Changed(self, names: frozenset[str] | set[str]) -> None:
        for name in names:
            self._memo.pop(name, None)
            self._bundles.pop(name, None)
            for victim in self._held.pop(name, ()):
                self._victims.pop(victim, None)

    # Parts ------------------------------------------------------------------

    def _Shape(self, inst: Instance) -> int:
        """The id of what a part depends on in the instance: equal shapes
        give equal parts on the same node."""
        shape = self._shapes.get(inst.name)
        if shape is None:
            full = (inst.mem, inst.dsk,
                    sum(sp or 0 for sp in inst.disk_spindles), inst.vcpus,
                    inst.spindle_use, inst.sec_mem, inst.template, inst.xtags)
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
        then add the final role(s) and the location score change."""
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
            part = self._intern.setdefault(part, part)
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
        old = self.score.values.get(node.name)
        if old is None:
            # not in the scored set
            return (0.0, _ZERO, _ZERO)
        new = NodeValues(node)
        if old.vec is None or new.vec is None:
            return (new.add - old.add, _ZERO, _ZERO)
        return (new.add - old.add,
                tuple(b - a for a, b in zip(old.vec, new.vec)),
                tuple(b * b - a * a for a, b in zip(old.vec, new.vec)))

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
            # replace-primary and failover-and-replace start with a failover
            self._Part(pnode, inst, ("pfr", pnode.peers.get(sname), p_strict,
                                     lps),
                       remove_pri=True, checks=((sname, p_strict), ),
                       dloc=-lps))

    def _Toward(self, inst: Instance, target: str) -> tuple[Part | None, ...]:
        """A mirrored instance's parts on its own nodes that depend on the
        target: replace-secondary's primary (location change only, zero
        when none), replace-and-failover's primary, replace-primary's
        secondary, failover-and-replace's secondary."""
        nodes = self.cluster.nodes
        pname, sname = inst.pnode, inst.snode
        assert pname is not None and sname is not None
        pnode, snode, tnode = nodes[pname], nodes[sname], nodes[target]
        p_strict = self.strict and not pnode.offline
        s_strict = self.strict and not snode.offline
        lps = _Shared(pnode, snode)
        dloc = _Shared(pnode, tnode) - lps
        sloc = _Shared(snode, tnode)
        return (
            self._Part(pnode, inst, ("pr", dloc), dloc=dloc) if dloc
            else _NOTHING,
            self._Part(pnode, inst, ("prf", pnode.peers.get(target),
                                     p_strict, lps),
                       remove_pri=True, checks=((target, p_strict), ),
                       add_sec=target, dloc=-lps),
            self._Part(snode, inst, ("sp", snode.peers.get(pname),
                                     snode.peers.get(target), p_strict,
                                     s_strict),
                       remove_sec=pname, checks=((None, p_strict),
                                                 (target, s_strict)),
                       add_sec=target),
            self._Part(snode, inst, ("sfr", snode.peers.get(pname), p_strict,
                                     sloc),
                       remove_sec=pname, checks=((None, p_strict), ),
                       add_pri=True, dloc=sloc))

    def _Target(self, inst: Instance, tnode: Node) -> tuple[Part | None, ...]:
        """The parts on the target. Failover-to-any: (target, );
        mirrored: those of replace-secondary, replace-and-failover,
        replace-primary, failover-and-replace."""
        pname, sname = inst.pnode, inst.snode
        assert pname is not None
        p_strict = self.strict and not self.cluster.nodes[pname].offline
        if not inst.internal_mirror:
            return (self._Part(tnode, inst, ("ta", p_strict),
                               checks=((None, p_strict), ), add_pri=True), )
        assert sname is not None
        snode = self.cluster.nodes[sname]
        s_strict = self.strict and not snode.offline
        ploc = _Shared(tnode, self.cluster.nodes[pname])
        sloc = _Shared(tnode, snode)
        peers = tnode.peers
        return (
            self._Part(tnode, inst, ("tr", peers.get(pname), s_strict),
                       checks=((pname, s_strict), ), add_sec=pname),
            self._Part(tnode, inst, ("trf", peers.get(pname), s_strict,
                                     p_strict, ploc),
                       checks=((pname, s_strict), (None, p_strict)),
                       add_pri=True, dloc=ploc),
            self._Part(tnode, inst, ("tp", peers.get(sname), p_strict,
                                     s_strict, sloc),
                       checks=((sname, p_strict), (None, s_strict)),
                       add_pri=True, dloc=sloc),
            self._Part(tnode, inst, ("tfr", peers.get(sname), p_strict),
                       checks=((sname, p_strict), ), add_sec=sname))

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
        name, pname = inst.name, inst.pnode
        assert pname is not None
        sname = inst.snode or ""
        internal = inst.internal_mirror
        if internal and not sname or \
                not internal and not inst.external_mirror:
            return
        cached = self._victims.get(name)
        if cached is None:
            cached = self._victims[name] = (self._Fixed(inst), {})
            for held in (pname, sname):
                if held:
                    self._held.setdefault(held, set()).add(name)
        fixed, local = cached
        flows = self._Lows(fixed)
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
        for tnode in targets:
            tname = tnode.name
            if tname == pname or tname == sname:
                continue
            tmemo = bundles.get(tname)
            if tmemo is None:
                tmemo = bundles[tname] = {}
            if not internal:
                tkey: tuple = (shape, p_strict)
            else:
                ploc = _Shared(pnode, tnode)
                sloc = _Shared(snode, tnode)
                tkey = (shape, tnode.peers.get(pname), tnode.peers.get(sname),
                        p_strict, s_strict, ploc, sloc)
            entry = tmemo.get(tkey)
            if entry is None or entry[0] != stamp:
                tparts = self._Target(inst, tnode) if entry is None \
                    else entry[2]
                entry = tmemo[tkey] = (stamp, self._Lows(tparts), tparts)
            tlows, tparts = entry[1], entry[2]
            if not internal:
                low = flows[0] + tlows[0]
                if low <= most:
                    yield (low, name, moves.FAILOVER_TO_ANY, tname,
                           (fixed[0], tparts[0]))
                continue
            vkey = (pnode.peers.get(tname), snode.peers.get(tname), ploc,
                    sloc)
            toward = local.get(vkey)
            if toward is None or toward[0] != stamp:
                vparts = self._Toward(inst, tname) if toward is None \
                    else toward[2]
                toward = local[vkey] = (stamp, self._Lows(vparts), vparts)
            vlows, vparts = toward[1], toward[2]
            low = flows[2] + vlows[0] + tlows[0]
            if low <= most:
                yield (low, name, moves.REPLACE_SECONDARY, tname,
                       (fixed[2], vparts[0], tparts[0]))
            low = flows[2] + vlows[1] + tlows[1]
            if low <= most:
                yield (low, name, moves.REPLACE_AND_FAILOVER, tname,
                       (fixed[2], vparts[1], tparts[1]))
            low = flows[3] + vlows[2] + tlows[2]
            if low <= most:
                yield (low, name, moves.REPLACE_PRIMARY, tname,
                       (fixed[3], vparts[2], tparts[2]))
            low = flows[3] + vlows[3] + tlows[3]
            if low <= most:
                yield (low, name, moves.FAILOVER_AND_REPLACE, tname,
                       (fixed[3], vparts[3], tparts[3]))

    # Scores -----------------------------------------------------------------

    def _Exact(self, parts: tuple[Part, ...]) -> float:
        """The score with the parts applied (``Score.With``), rounded as
        the planner compares them."""
        score = self.score
        count = score.count
        total = score.add
        for part in parts:
            total += part[0]
        if count:
            sums: Iterable[float] = score.sums
            squares: Iterable[float] = score.squares
            for part in parts:
                sums = map(add, sums, part[1])
                squares = map(add, squares, part[2])
            for weight, sum_k, square_k in zip(STDDEV_WEIGHTS, sums,
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
        for cand in self._Candidates(inst, targets, move.target is not None):
            if cand[2] == move.kind:
                return self._Exact(cand[4])
        return None

    def _Gradient(self) -> float:
        """Set up the lower bound for this round; returns its constant."""
        score = self.score
        count = score.count
        base = score.add
        grad = []
        for k in _K:
            weight = STDDEV_WEIGHTS[k]
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
        # bound of d**2, of the linear term and of the error term
        self._grad = tuple(zip(*grad))
        self._lows = {}
        self._stamp += 1
        return base

    def _Lows(self, parts: tuple[Part | None, ...]) -> tuple[float, ...]:
        """The parts' shares of the lower bound (infinite for a failed
        check)."""
        result = []
        lows = self._lows
        g_sq, g_sum, g_dd, g_lin, g_err = self._grad
        for part in parts:
            if part is None:
                result.append(_INF)
                continue
            low = lows.get(id(part))
            if low is None:
                dsum = part[1]
                dev = list(map(sub, map(mul, g_sq, part[2]),
                               map(mul, g_sum, dsum)))
                dsq = list(map(mul, g_dd, map(mul, dsum, dsum)))
                reach = list(map(add, map(abs, dev), dsq))
                low = lows[id(part)] = (
                    part[0] + sum(map(mul, g_lin, map(sub, dev, dsq))) -
                    sum(map(mul, g_err, map(mul, reach, reach))))
            result.append(low)
        return tuple(result)

    def Best(self, victims: list[Instance], targets: list[Node],
             disk_moves: bool = True, limit: float = _INF
             ) -> tuple[float, moves.Move] | None:
        """The victims' candidate (see ``_Candidates``) with the lowest
        rounded score, ties broken by (instance, kind, target) name, if
        that score is at most ``limit`` (give or take the rounding
        margin; None otherwise, or when there is no candidate).

        Victims of equal shape on the same nodes have equal scores, so only
        the first by name is looked at. The exact score is computed in the
        order of the lower bounds, until one is above the best so far."""
        base = self._Gradient() - _MARGIN
        cutoff = limit + _MARGIN
        chosen: dict[tuple, Instance] = {}
        for inst in victims:
            same = (inst.pnode, inst.snode, self._Shape(inst))
            other = chosen.get(same)
            if other is None or inst.name < other.name:
                chosen[same] = inst
        most = cutoff - base
        cands = [cand for inst in chosen.values()
                 for cand in self._Candidates(inst, targets, disk_moves,
                                              min(most, _FINITE))]
        best: tuple[float, tuple[str, str, str]] | None = None
        values: dict[tuple, float] = {}
        for low, name, kind, target, parts in sorted(cands, key=_LOW):
            if base + low > (cutoff if best is None else best[0]):
                break
            ids = tuple(map(id, parts))
            value = values.get(ids)
            if value is None:
                value = values[ids] = self._Exact(parts)
            key = (value, (name, kind, target or ""))
            if value <= cutoff and (best is None or key < best):
                best = key
        if best is None:
            return None
        name, kind, target = best[1]
        return best[0], moves.Move(name, kind, target or None)


def _Shared(node: Node, other: Node) -> int:
    """Location tags shared by a primary and its secondary."""
    if not node.locations:
        return 0
    return len(node.locations & other.locations)
