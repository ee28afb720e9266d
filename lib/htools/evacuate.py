"""Relocation, node evacuation and group change (``Cluster/Evacuate.hs``).

Per instance, by disk template:

* DRBD: change the primary by failing over to the secondary; change the
  secondary by the best ``replace-secondary`` target; change both (mode
  ``all``, or a new group) by the best pair (p, s), reached through
  replace-secondary to p, failover, replace-secondary to s;
* externally mirrored (shared file, block device, ext, rbd, gluster,
  diskless): a new primary, the best ``failover-to-any`` target; no
  secondary to change;
* plain and file: cannot be relocated, except by a group change
  (``copy``): the best ``copy`` target, the disks copied there.

Targets are the online nodes of the target group, never the nodes being
evacuated nor the instance's primary; the best target is the one giving
the lowest score of that group, ties going to the one tried last, as in
hail's folds (the last node by name, the last pair).
"""

from ganeti import constants
from ganeti.htools import moves
from ganeti.htools.metrics import Score
from ganeti.htools.model import Cluster, Failure, Group, Instance, Node

CHANGE_PRIMARY = constants.NODE_EVAC_PRI
CHANGE_SECONDARY = constants.NODE_EVAC_SEC
CHANGE_ALL = constants.NODE_EVAC_ALL


class EvacError(Exception):
    """An instance that cannot be moved (the text is the reason)."""


def _BestMove(cluster: Cluster, inst: Instance, kind: str,
              targets: list[Node], score: Score,
              strict: bool) -> moves.Move:
    best: tuple[float, str] | None = None
    failures: list[str] = []
    for node in targets:
        if node.name in (inst.pnode, inst.snode):
            continue
        move = moves.Move(inst.name, kind, node.name)
        applied = moves.ApplyMove(cluster, move, strict)
        if isinstance(applied, Failure):
            failures.append(" Node %s failed: %s (%s);" %
                            (node.name, applied.mode, applied.text))
            continue
        value = score.With(applied.touched)
        moves.UndoMove(cluster, applied)
        if best is None or value <= best[0]:
            best = (value, node.name)
    if best is None:
        raise EvacError("Can't find any good node:%s" % "".join(failures))
    return moves.Move(inst.name, kind, best[1])


def _ChangeAll(cluster: Cluster, inst: Instance, targets: list[Node],
               score: Score, strict: bool) -> list[moves.Move]:
    """The best (primary, secondary) pair for a DRBD instance."""
    prefix: list[moves.Move] = []
    assert inst.pnode is not None
    if cluster.nodes[inst.pnode].offline:
        prefix = [moves.Move(inst.name, moves.FAILOVER, None)]
    best: tuple[float, str, str] | None = None
    reason = "no nodes available"
    for pnode in targets:
        for snode in targets:
            if snode is pnode or pnode.name == inst.snode:
                continue
            plan = prefix + [
                moves.Move(inst.name, moves.REPLACE_SECONDARY, pnode.name),
                moves.Move(inst.name, moves.FAILOVER, None),
                moves.Move(inst.name, moves.REPLACE_SECONDARY, snode.name)]
            done: list[moves.Applied] = []
            touched: dict[str, Node] = {}
            for move in plan:
                applied = moves.ApplyMove(cluster, move, strict)
                if isinstance(applied, Failure):
                    reason = "%s to %s: %s (%s)" % (
                        move.kind, move.target or "secondary", applied.mode,
                        applied.text)
                    break
                done.append(applied)
                touched.update((node.name, node) for node in applied.touched)
            else:
                value = score.With(list(touched.values()))
                if best is None or value <= best[0]:
                    best = (value, pnode.name, snode.name)
            for applied in reversed(done):
                moves.UndoMove(cluster, applied)
    if best is None:
        raise EvacError("Can't find any good nodes for relocation:"
                        " Allocation failed: %s" % reason)
    return prefix + [
        moves.Move(inst.name, moves.REPLACE_SECONDARY, best[1]),
        moves.Move(inst.name, moves.FAILOVER, None),
        moves.Move(inst.name, moves.REPLACE_SECONDARY, best[2])]


def PlanInstance(cluster: Cluster, inst: Instance, mode: str,
                 targets: list[Node], score: Score,
                 strict: bool = True, copy: bool = False) -> list[moves.Move]:
    """The moves taking the instance off its node(s) (``nodeEvacInstance``);
    raises EvacError with hail's reason when impossible. With ``copy``
    (a group change) plain and file instances move by copying their
    disks."""
    if inst.internal_mirror:
        if mode == CHANGE_PRIMARY:
            # Checked as hail does (migration classes included)
            move = moves.Move(inst.name, moves.FAILOVER, None)
            applied = moves.ApplyMove(cluster, move, strict)
            if isinstance(applied, Failure):
                raise EvacError("Failover to the secondary failed: %s (%s)"
                                % (applied.mode, applied.text))
            moves.UndoMove(cluster, applied)
            return [move]
        if mode == CHANGE_SECONDARY:
            return [_BestMove(cluster, inst, moves.REPLACE_SECONDARY,
                              targets, score, strict)]
        return _ChangeAll(cluster, inst, targets, score, strict)
    if inst.external_mirror:
        if mode == CHANGE_SECONDARY:
            raise EvacError("Instances with disk template '%s' can't execute"
                            " change secondary" % inst.template)
        return [_BestMove(cluster, inst, moves.FAILOVER_TO_ANY, targets,
                          score, strict)]
    if copy and inst.template in constants.DTS_COPYABLE:
        return [_BestMove(cluster, inst, moves.COPY, targets, score,
                          strict)]
    raise EvacError("Instances of type %s cannot be relocated" %
                    inst.template)


def Execute(cluster: Cluster, plan: list[moves.Move], score: Score) -> None:
    """Apply planned moves to the model (forced: they were checked)."""
    for move in plan:
        applied = moves.ApplyMove(cluster, move, strict=False)
        assert not isinstance(applied, Failure), applied
        score.Update(applied.touched)


def EvacNodes(cluster: Cluster, instances: list[Instance],
              mode: str) -> set[str]:
    """The nodes being emptied (``nodesToEvacuate``)."""
    result = set()
    for inst in instances:
        if mode in (CHANGE_PRIMARY, CHANGE_ALL) and inst.pnode:
            result.add(inst.pnode)
        if mode in (CHANGE_SECONDARY, CHANGE_ALL) and inst.snode and \
                inst.internal_mirror:
            result.add(inst.snode)
    return result


def GroupTargets(cluster: Cluster, group: Group,
                 excluded: set[str]) -> list[Node]:
    return [node for node in cluster.GroupNodes(group)
            if not node.offline and node.name not in excluded]


def Result(cluster: Cluster, moved: list[tuple[Instance, list[moves.Move]]],
           failed: list[tuple[str, str]]) -> list:
    """``[moved, failed, jobs]`` as hail answers node-evacuate and
    change-group: moved entries are ``[instance, group name, nodes]``,
    one job per moved instance."""
    done = []
    jobs = []
    for inst, plan in moved:
        assert inst.pnode is not None
        nodes = [name for name in (inst.pnode, inst.snode) if name]
        done.append([inst.name, cluster.nodes[inst.pnode].group.name, nodes])
        job: list[dict] = []
        for move in plan:
            job.extend(moves.MoveOpcodes(move))
        jobs.append(job)
    return [done, [[name, reason] for name, reason in failed], jobs]
