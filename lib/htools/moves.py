"""Moves of existing instances and the opcodes describing them.

The move kinds are hbal's ``IMove`` (``Cluster/Moves.hs``), applied with
the checks of ``applyMoveEx``: a composite move checks the nodes in their
final roles (and replace-primary the secondary as a primary, which it is
for a moment), not every intermediate step of its jobs: the old primary
of a replace-primary or failover-and-replace is only freed. A move from
an offline node is forced: the soft checks are skipped. The opcodes are
those of ``Cluster/Utils.iMoveToJob``, serialised as Ganeti's hail emits
them: a failover to the secondary is
``OP_INSTANCE_MIGRATE`` with ``allow_failover``, a new secondary is
``OP_INSTANCE_REPLACE_DISKS`` in ``replace_new_secondary`` mode.

Every move that migrates or fails an instance over (all but
replace-secondary) first checks the migration classes of the cluster's
``htools:migration`` tags, as ``applyMoveEx`` does: FailMig when the
receiving node does not accept every class of the one giving the
instance up, for each failover step (replace-primary: from the primary
to the secondary, then from there to the target).

Beyond hbal, ``copy`` moves a plain or file instance to another node by
copying its disks (``OP_INSTANCE_MOVE``); only change-group plans it,
the way our ``gnt-instance change-group`` moves such instances.
"""

from typing import NamedTuple

from ganeti import constants
from ganeti.htools import FAIL_DISK
from ganeti.htools.model import Cluster, Failure, Instance, Node

FAILOVER = "failover"
FAILOVER_TO_ANY = "failover-to-any"
REPLACE_PRIMARY = "replace-primary"
REPLACE_SECONDARY = "replace-secondary"
REPLACE_AND_FAILOVER = "replace-and-failover"
FAILOVER_AND_REPLACE = "failover-and-replace"
COPY = "copy"

_STEPS = {
    FAILOVER: ("f", ),
    FAILOVER_TO_ANY: ("a", ),
    REPLACE_PRIMARY: ("f", "r", "f"),
    REPLACE_SECONDARY: ("r", ),
    REPLACE_AND_FAILOVER: ("r", "f"),
    FAILOVER_AND_REPLACE: ("f", "r"),
    COPY: ("c", ),
}
# The order hbal tries an instance's moves in (``checkInstanceMove``):
# the failover first, then per target node these kinds in this order; of
# moves with equal scores it keeps the first tried
_TRIED = {FAILOVER: 0, REPLACE_SECONDARY: 1, FAILOVER_TO_ANY: 1, COPY: 1,
          REPLACE_AND_FAILOVER: 2, REPLACE_PRIMARY: 3,
          FAILOVER_AND_REPLACE: 4}


def TieKey(move: "Move") -> tuple[str, str, int]:
    """Orders moves of equal scores as hbal tries them: by instance, then
    target node (the failover, without one, first), then kind."""
    return move.instance, move.target or "", _TRIED[move.kind]


# Moves checked as a whole (``_Composite``); their steps are their jobs
_COMPOSITE = frozenset([REPLACE_PRIMARY, REPLACE_AND_FAILOVER,
                        FAILOVER_AND_REPLACE])


class Move(NamedTuple):
    """One hbal move of an instance; ``target`` is None for a failover."""
    instance: str
    kind: str
    target: str | None

    def Describe(self) -> str:
        if self.target is None:
            return "%s %s" % (self.kind, self.instance)
        return "%s %s %s" % (self.kind, self.instance, self.target)


class Applied(NamedTuple):
    """A move done in the model: the nodes it touched and where the
    instance was before."""
    touched: list[Node]
    instance: Instance
    pnode: str | None
    snode: str | None


def MigrationFailure(cluster: Cluster, move: Move) -> Failure | None:
    """The migration-class check of a move on the instance's current
    nodes (``Node.checkMigration`` in ``applyMoveEx``); a copy is no
    migration."""
    if not cluster.migration_classes:
        return None
    inst = cluster.instances[move.instance]
    nodes = cluster.nodes
    assert inst.pnode is not None
    pnode = nodes[inst.pnode]
    snode = nodes[inst.snode] if inst.snode else None
    target = nodes[move.target] if move.target else None
    pairs: tuple[tuple[Node | None, Node | None], ...] = ()
    if move.kind in (FAILOVER, FAILOVER_AND_REPLACE):
        pairs = ((pnode, snode), )
    elif move.kind in (FAILOVER_TO_ANY, REPLACE_AND_FAILOVER):
        pairs = ((pnode, target), )
    elif move.kind == REPLACE_PRIMARY:
        pairs = ((pnode, snode), (snode, target))
    for source, dest in pairs:
        assert source is not None and dest is not None
        failure = dest.MigrationFailure(source)
        if failure is not None:
            return failure
    return None


def _SetNodes(cluster: Cluster, inst: Instance, pnode: str | None,
              snode: str | None) -> None:
    """Change the instance's nodes, keeping the location score current."""
    nodes = cluster.nodes
    old_p = nodes.get(inst.pnode) if inst.pnode else None
    old_s = nodes.get(inst.snode) if inst.snode else None
    if old_p is not None and old_s is not None:
        old_p.loc_score -= len(old_p.locations & old_s.locations)
    inst.pnode, inst.snode = pnode, snode
    new_p = nodes.get(pnode) if pnode else None
    new_s = nodes.get(snode) if snode else None
    if new_p is not None and new_s is not None:
        new_p.loc_score += len(new_p.locations & new_s.locations)


def _CopySpace(tnode: Node, inst: Instance) -> Failure | None:
    """A copy needs room for the disks on the target even where the model
    does not track the template's space (``file``, like hail's)."""
    if inst.local_storage or tnode.f_dsk - inst.dsk > 0:
        return None
    return Failure(FAIL_DISK, "disk %d MiB needed, %d MiB free" %
                   (inst.dsk, tnode.f_dsk))


def _Step(cluster: Cluster, inst: Instance, step: str, target: str | None,
          strict: bool) -> Failure | None:
    """One elementary step; on failure nothing has changed."""
    pname, sname = inst.pnode, inst.snode
    assert pname is not None
    pnode = cluster.nodes[pname]
    force = pnode.offline or not strict
    if step == "f":
        assert sname is not None
        snode = cluster.nodes[sname]
        pnode.RemovePri(inst)
        snode.RemoveSec(inst, pname)
        failure = snode.AddPri(inst, not force)
        if failure is None:
            failure = pnode.AddSec(inst, sname, not force)
            if failure is not None:
                snode.RemovePri(inst)
        if failure is not None:
            _Attach(cluster, inst, pname, sname)
            return failure
        _SetNodes(cluster, inst, sname, pname)
    elif step in ("a", "c"):
        # the disks of a copied instance go along: AddPri takes them
        assert target is not None
        tnode = cluster.nodes[target]
        failure = _CopySpace(tnode, inst) if step == "c" else None
        if failure is not None:
            return failure
        pnode.RemovePri(inst)
        failure = tnode.AddPri(inst, not force)
        if failure is not None:
            pnode.PlacePri(inst)
            return failure
        _SetNodes(cluster, inst, target, None)
    else:
        assert sname is not None and target is not None
        snode = cluster.nodes[sname]
        tnode = cluster.nodes[target]
        snode.RemoveSec(inst, pname)
        failure = tnode.AddSec(inst, pname, strict and not snode.offline)
        if failure is not None:
            snode.PlaceSec(inst, pname, snode.peers.get(pname, 0.0) +
                           inst.sec_mem)
            return failure
        _SetNodes(cluster, inst, pname, target)
    return None


def _Detach(cluster: Cluster, inst: Instance) -> None:
    if inst.pnode is not None:
        cluster.nodes[inst.pnode].RemovePri(inst)
        if inst.snode is not None:
            cluster.nodes[inst.snode].RemoveSec(inst, inst.pnode)


def _Attach(cluster: Cluster, inst: Instance, pname: str | None,
            sname: str | None) -> None:
    """Put the instance on the nodes without checks."""
    if pname is not None:
        cluster.nodes[pname].PlacePri(inst)
        if sname is not None:
            snode = cluster.nodes[sname]
            snode.PlaceSec(inst, pname, snode.peers.get(pname, 0.0) +
                           inst.sec_mem)
    _SetNodes(cluster, inst, pname, sname)


def _Composite(cluster: Cluster, inst: Instance, kind: str, target: str,
               strict: bool) -> Failure | None:
    """A move with a failover and a new node (``applyMoveEx``): every
    node checked once in its final role, with the strictness Ganeti
    gives it; on failure nothing has changed."""
    pname, sname = inst.pnode, inst.snode
    assert pname is not None and sname is not None
    nodes = cluster.nodes
    pnode, snode, tnode = nodes[pname], nodes[sname], nodes[target]
    p_strict = strict and not pnode.offline
    s_strict = strict and not snode.offline
    pnode.RemovePri(inst)
    snode.RemoveSec(inst, pname)
    # the roles taken so far (node, None as primary or the primary's name)
    taken: list[tuple[Node, str | None]] = []
    failed: list[Failure] = []

    def take(node: Node, primary: str | None, checked: bool) -> bool:
        if primary is None:
            failure = node.AddPri(inst, checked)
        else:
            failure = node.AddSec(inst, primary, checked)
        if failure is not None:
            failed.append(failure)
            return False
        taken.append((node, primary))
        return True

    if kind == REPLACE_AND_FAILOVER:
        # the target becomes the primary, the old primary its secondary
        done = take(tnode, None, strict) and \
            take(pnode, target, s_strict)
        final = (target, pname)
    elif kind == REPLACE_PRIMARY:
        # the secondary must run the instance on the way
        done = take(snode, None, p_strict)
        if done:
            snode.RemovePri(inst)
            taken.pop()
            done = take(tnode, None, p_strict) and \
                take(snode, target, p_strict)
        final = (target, sname)
    else:
        done = take(snode, None, p_strict) and \
            take(tnode, sname, p_strict)
        final = (sname, target)
    if not done:
        for node, primary in reversed(taken):
            if primary is None:
                node.RemovePri(inst)
            else:
                node.RemoveSec(inst, primary)
        _Attach(cluster, inst, pname, sname)
        return failed[0]
    _SetNodes(cluster, inst, *final)
    return None


def ApplyMove(cluster: Cluster, move: Move,
              strict: bool = True) -> Applied | Failure:
    """Do a move in the model (``applyMoveEx``), or say why it fails."""
    failure = MigrationFailure(cluster, move)
    if failure is not None:
        return failure
    inst = cluster.instances[move.instance]
    applied = Applied([], inst, inst.pnode, inst.snode)
    touched = {name for name in (inst.pnode, inst.snode) if name}
    if move.kind in _COMPOSITE:
        assert move.target is not None
        failure = _Composite(cluster, inst, move.kind, move.target, strict)
        if failure is not None:
            return failure
        touched.add(move.target)
    else:
        # a single step
        [step] = _STEPS[move.kind]
        target = move.target if step in ("a", "c", "r") else None
        failure = _Step(cluster, inst, step, target, strict)
        if failure is not None:
            return failure
        if target:
            touched.add(target)
    applied.touched.extend(cluster.nodes[name] for name in sorted(touched))
    return applied


def UndoMove(cluster: Cluster, applied: Applied) -> None:
    """Put the instance back where it was before ``ApplyMove``."""
    inst = applied.instance
    if (inst.pnode, inst.snode) == (applied.pnode, applied.snode):
        return
    _Detach(cluster, inst)
    _Attach(cluster, inst, applied.pnode, applied.snode)


def MoveOpcodes(move: Move, forthcoming: bool = False) -> list[dict]:
    """The job for a move (``iMoveToJob``)."""
    def failover(target: str | None) -> dict:
        if forthcoming:
            op = {"OP_ID": "OP_INSTANCE_FAILOVER",
                  "instance_name": move.instance,
                  "shutdown_timeout": constants.DEFAULT_SHUTDOWN_TIMEOUT,
                  "ignore_consistency": False, "ignore_ipolicy": False,
                  "cleanup": False}
        else:
            op = {"OP_ID": "OP_INSTANCE_MIGRATE",
                  "instance_name": move.instance,
                  "allow_runtime_changes": False, "ignore_ipolicy": False,
                  "cleanup": False, "allow_failover": True,
                  "ignore_hvversions": True}
        if target is not None:
            op["target_node"] = target
        return op

    def replace(node: str | None) -> dict:
        return {"OP_ID": "OP_INSTANCE_REPLACE_DISKS",
                "instance_name": move.instance, "early_release": False,
                "ignore_ipolicy": False, "mode": "replace_new_secondary",
                "disks": [], "remote_node": node}

    result = []
    for step in _STEPS[move.kind]:
        if step == "f":
            result.append(failover(None))
        elif step == "a":
            result.append(failover(move.target))
        elif step == "c":
            result.append({"OP_ID": "OP_INSTANCE_MOVE",
                           "instance_name": move.instance,
                           "target_node": move.target,
                           "shutdown_timeout":
                           constants.DEFAULT_SHUTDOWN_TIMEOUT,
                           "ignore_consistency": False,
                           "ignore_ipolicy": False})
        else:
            result.append(replace(move.target))
    return result
