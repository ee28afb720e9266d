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
can beat the best so far. The bound linearizes each std-dev around the
current state: with ``sigma`` the current std-dev, ``x`` the new one and
``Dv`` the change of the component's node values (at most 3 nodes),
``x >= sigma + lin - ((x - sigma)**2 + d**2 / n) / (2 * sigma)``, where
``|x - sigma| <= |Dv| / sqrt(n)`` and ``d**2 <= 3 |Dv|**2``; both terms are
sums over the parts, so the bound is too. Components with a (near) zero
std-dev contribute 0, which is always below their value.
"""

import math

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


class Evaluator:
    """Candidate scores against the running sums of a ``Score``; call
    ``Changed`` with the nodes an accepted move touched."""

    def __init__(self, cluster: Cluster, score: Score, strict: bool) -> None:
        self.cluster = cluster
        self.score = score
        self.strict = strict
        self._memo: dict[str, dict[tuple, Part | None]] = {}
        self._shapes: dict[str, tuple] = {}
        self._lows: dict[int, float] = {}
        self._grad: tuple = ()

    def Changed(self, names: frozenset[str] | set[str]) -> None:
        for name in names:
            self._memo.pop(name, None)

    # Parts ------------------------------------------------------------------

    def _Shape(self, inst: Instance) -> tuple:
        """What a part depends on in the instance: equal shapes give equal
        parts on the same node."""
        shape = self._shapes.get(inst.name)
        if shape is None:
            shape = self._shapes[inst.name] = (
                inst.mem, inst.dsk, sum(sp or 0 for sp in inst.disk_spindles),
                inst.vcpus, inst.spindle_use, inst.sec_mem, inst.template,
                inst.xtags)
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

    def _Parts(self, inst: Instance, kind: str,
               target: str | None) -> list[Part | None]:
        """The parts of a candidate move (see ``moves._STEPS`` for the
        steps; each node's checks are those its steps run on it)."""
        nodes = self.cluster.nodes
        pname, sname = inst.pnode, inst.snode
        assert pname is not None
        pnode = nodes[pname]
        p_strict = self.strict and not pnode.offline
        if kind == moves.FAILOVER_TO_ANY:
            assert target is not None
            tnode = nodes[target]
            dloc = -_Shared(pnode, nodes[sname]) if sname else 0
            return [self._Part(pnode, inst, ("pa", dloc), remove_pri=True,
                               dloc=dloc),
                    self._Part(tnode, inst, ("ta", p_strict),
                               checks=((None, p_strict), ), add_pri=True)]
        assert sname is not None
        snode = nodes[sname]
        s_strict = self.strict and not snode.offline
        lps = _Shared(pnode, snode)
        if kind == moves.FAILOVER:
            dloc = _Shared(snode, pnode)
            return [self._Part(pnode, inst, ("pf", pnode.peers.get(sname),
                                             p_strict, lps),
                               remove_pri=True, checks=((sname, p_strict), ),
                               add_sec=sname, dloc=-lps),
                    self._Part(snode, inst, ("sf", snode.peers.get(pname),
                                             p_strict, dloc),
                               remove_sec=pname, checks=((None, p_strict), ),
                               add_pri=True, dloc=dloc)]
        assert target is not None
        tnode = nodes[target]
        if kind in (moves.REPLACE_SECONDARY, moves.REPLACE_AND_FAILOVER):
            parts = [self._Part(snode, inst, ("sr", snode.peers.get(pname)),
                                remove_sec=pname)]
            if kind == moves.REPLACE_SECONDARY:
                dloc = _Shared(pnode, tnode) - lps
                if dloc:
                    parts.append(self._Part(pnode, inst, ("pr", dloc),
                                            dloc=dloc))
                parts.append(self._Part(
                    tnode, inst, ("tr", tnode.peers.get(pname), s_strict),
                    checks=((pname, s_strict), ), add_sec=pname))
                return parts
            dloc = _Shared(tnode, pnode)
            parts.append(self._Part(
                pnode, inst, ("prf", pnode.peers.get(target), p_strict, lps),
                remove_pri=True, checks=((target, p_strict), ),
                add_sec=target, dloc=-lps))
            parts.append(self._Part(
                tnode, inst, ("trf", tnode.peers.get(pname), s_strict,
                              p_strict, dloc),
                checks=((pname, s_strict), (None, p_strict)), add_pri=True,
                dloc=dloc))
            return parts
        # replace-primary and failover-and-replace start with a failover
        parts = [self._Part(pnode, inst, ("pfr", pnode.peers.get(sname),
                                          p_strict, lps),
                            remove_pri=True, checks=((sname, p_strict), ),
                            dloc=-lps)]
        if kind == moves.REPLACE_PRIMARY:
            dloc = _Shared(tnode, snode)
            parts.append(self._Part(
                snode, inst, ("sp", snode.peers.get(pname),
                              snode.peers.get(target), p_strict, s_strict),
                remove_sec=pname, checks=((None, p_strict),
                                          (target, s_strict)),
                add_sec=target))
            parts.append(self._Part(
                tnode, inst, ("tp", tnode.peers.get(sname), p_strict,
                              s_strict, dloc),
                checks=((sname, p_strict), (None, s_strict)), add_pri=True,
                dloc=dloc))
            return parts
        dloc = _Shared(snode, tnode)
        parts.append(self._Part(
            snode, inst, ("sfr", snode.peers.get(pname), p_strict, dloc),
            remove_sec=pname, checks=((None, p_strict), ), add_pri=True,
            dloc=dloc))
        parts.append(self._Part(
            tnode, inst, ("tfr", tnode.peers.get(sname), p_strict),
            checks=((sname, p_strict), ), add_sec=sname))
        return parts

    # Scores -----------------------------------------------------------------

    def _Exact(self, parts: list[Part]) -> float:
        """The score with the parts applied (``Score.With``), rounded as
        the planner compares them."""
        score = self.score
        count = score.count
        total = score.add
        for part in parts:
            total += part[0]
        if count:
            for k in _K:
                sums = score.sums[k]
                squares = score.squares[k]
                for part in parts:
                    sums += part[1][k]
                    squares += part[2][k]
                mean = sums / count
                var = squares / count - mean * mean
                if var > 0:
                    total += STDDEV_WEIGHTS[k] * math.sqrt(var)
        return round(total, 10)

    def Value(self, move: moves.Move) -> float | None:
        """The rounded score after the move, None if a check fails."""
        parts = self._Parts(self.cluster.instances[move.instance], move.kind,
                            move.target)
        if any(part is None for part in parts):
            return None
        return self._Exact(parts)  # type: ignore[arg-type]

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
                grad.append((weight / (2 * count * sigma),
                             -weight * mean / (count * sigma),
                             weight * (count + 3) /
                             (2 * count * count * sigma)))
            else:
                grad.append((0.0, 0.0, 0.0))
        self._grad = tuple(grad)
        self._lows = {}
        return base

    def _Low(self, part: Part) -> float:
        """The part's share of the lower bound."""
        low = self._lows.get(id(part))
        if low is None:
            low = part[0]
            dsum, dsq = part[1], part[2]
            for k, (g_sq, g_sum, err) in enumerate(self._grad):
                delta = dsum[k]
                low += g_sq * dsq[k] + g_sum * delta - err * delta * delta
            self._lows[id(part)] = low
        return low

    def Best(self, candidates: list[moves.Move]
             ) -> tuple[float, moves.Move] | None:
        """The candidate with the lowest rounded score, ties broken by
        (instance, kind, target) name."""
        base = self._Gradient() - _MARGIN
        best: tuple[float, tuple, moves.Move] | None = None
        instances = self.cluster.instances
        for move in candidates:
            parts = self._Parts(instances[move.instance], move.kind,
                                move.target)
            low = base
            for part in parts:
                if part is None:
                    break
                low += self._Low(part)
            else:
                if best is not None and low > best[0]:
                    continue
                value = self._Exact(parts)  # type: ignore[arg-type]
                key = (value, (move.instance, move.kind, move.target or ""))
                if best is None or key < best[:2]:
                    best = (value, key[1], move)
        return None if best is None else (best[0], best[2])


def _Shared(node: Node, other: Node) -> int:
    """Location tags shared by a primary and its secondary."""
    if not node.locations:
        return 0
    return len(node.locations & other.locations)
