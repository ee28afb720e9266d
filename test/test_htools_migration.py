"""hail's migration classes (FailMig) in the built-in allocator and in
rebalancing.

Cluster tags ``htools:migration:<p>`` make a node's tags ``<p>:*`` its
migration classes; an instance may migrate or fail over to a node only
when that node receives every class of the node it leaves: its own
classes and those ``htools:allowmigration:<src>::<dst>`` lets a node of
class dst receive.
"""

import copy

import pytest

from ganeti.htools import FAIL_MIG, allocator, balance, model, moves, simu

from test_htools import _ReferencePlan

pytestmark = pytest.mark.unit

MIGRATION = "htools:migration:hv"
ALLOW_V2_TO_V1 = "htools:allowmigration:hv:v2::hv:v1"


def _Node(idx: int) -> str:
    return "node%04d.example.com" % idx


def _Inst(idx: int) -> str:
    return "inst%05d.example.com" % idx


def _Tagged(msg: dict, classes: list[str], *cluster_tags: str) -> dict:
    """The message with node i tagged ``classes[i]``."""
    msg["cluster_tags"] = list(cluster_tags)
    for idx, tag in enumerate(classes):
        msg["nodes"][_Node(idx)]["tags"] = [tag, "other:%d" % idx]
    return msg


def test_classes_from_tags():
    msg = _Tagged(simu.Message(4), ["hv:v2", "hv:v1", "hvx:1", "hv:v1"],
                  MIGRATION, ALLOW_V2_TO_V1,
                  # a destination holding another "::" is ignored
                  "htools:allowmigration:hv:v3::hv:v1::x")
    nodes = model.Cluster(msg).nodes
    assert nodes[_Node(0)].mig == {"hv:v2"}
    assert nodes[_Node(0)].rmig == {"hv:v2"}
    assert nodes[_Node(1)].rmig == {"hv:v1", "hv:v2"}
    # "hvx:1" is not of prefix "hv:"
    assert nodes[_Node(2)].mig == frozenset()
    assert nodes[_Node(2)].rmig == frozenset()
    # without the htools:migration tag node tags mean nothing
    msg["cluster_tags"] = [ALLOW_V2_TO_V1]
    assert model.Cluster(msg).nodes[_Node(0)].mig == frozenset()


@pytest.mark.parametrize("tags,refused", [
    ((MIGRATION, ), True),
    ((MIGRATION, ALLOW_V2_TO_V1), False),
    ((), False),
])
def test_failover_checks_classes(tags, refused):
    # inst0 (drbd) on node0 (v2), secondary node1 (v1)
    msg = _Tagged(simu.Message(3, 1, templates=("drbd", )),
                  ["hv:v2", "hv:v1", "hv:v1"], *tags)
    cluster = model.Cluster(msg)
    inst = cluster.instances[_Inst(0)]
    assert (inst.pnode, inst.snode) == (_Node(0), _Node(1))
    result = moves.ApplyMove(cluster, moves.Move(_Inst(0), moves.FAILOVER,
                                                 None))
    assert isinstance(result, model.Failure) == refused
    if refused:
        assert result.mode == FAIL_MIG
        assert "hv:v2" in result.text and _Node(0) in result.text
        assert (inst.pnode, inst.snode) == (_Node(0), _Node(1))
        # a new secondary is no migration
        assert not isinstance(moves.ApplyMove(cluster, moves.Move(
            _Inst(0), moves.REPLACE_SECONDARY, _Node(2))), model.Failure)
    else:
        assert (inst.pnode, inst.snode) == (_Node(1), _Node(0))


def test_composite_moves_check_each_failover():
    # inst0 drbd on node0 (v1) / node1 (v2); node2 v1
    msg = _Tagged(simu.Message(3, 1, templates=("drbd", )),
                  ["hv:v1", "hv:v2", "hv:v1"], MIGRATION)
    cluster = model.Cluster(msg)

    def mode(kind, target):
        result = moves.ApplyMove(cluster, moves.Move(_Inst(0), kind, target))
        if isinstance(result, model.Failure):
            return result.mode
        moves.UndoMove(cluster, result)
        return None

    # replace-and-failover: node0 -> node2, both v1
    assert mode(moves.REPLACE_AND_FAILOVER, _Node(2)) is None
    # failover-and-replace and replace-primary first fail over to node1
    assert mode(moves.FAILOVER_AND_REPLACE, _Node(2)) == FAIL_MIG
    assert mode(moves.REPLACE_PRIMARY, _Node(2)) == FAIL_MIG


def test_relocation_and_evacuation_refused_across_classes():
    # inst0 (sharedfile) on node0 (v2), the others v1
    req = {"type": "relocate", "name": _Inst(0), "required_nodes": 1,
           "relocate_from": [_Node(0)]}
    msg = _Tagged(simu.Message(3, 1, templates=("sharedfile", ),
                               request=req),
                  ["hv:v2", "hv:v1", "hv:v1"], MIGRATION)
    answer = allocator.Run(copy.deepcopy(msg))
    assert not answer["success"]
    assert "FailMig" in answer["info"], answer
    msg["cluster_tags"].append(ALLOW_V2_TO_V1)
    assert allocator.Run(copy.deepcopy(msg))["success"]
    # a drbd instance's primary-only evacuation is its failover, checked
    msg = _Tagged(simu.Message(3, 1, templates=("drbd", ), request={
        "type": "node-evacuate", "instances": [_Inst(0)],
        "evac_mode": "primary-only"}), ["hv:v2", "hv:v1", "hv:v1"],
        MIGRATION)
    moved, failed, _ = allocator.Run(msg)["result"]
    assert moved == [] and "FailMig" in failed[0][1], failed


def test_balance_respects_classes():
    # all instances on the first two nodes (v2); the others are v1, so
    # without classes hbal spreads them by failovers and migrations
    msg = _Tagged(simu.Message(6, 24, memory=32768, skew=0.67,
                               templates=("drbd", "sharedfile")),
                  ["hv:v2", "hv:v2", "hv:v1", "hv:v1", "hv:v1", "hv:v1"],
                  MIGRATION)
    free = copy.deepcopy(msg)
    free["cluster_tags"] = []
    v2 = {_Node(0), _Node(1)}

    def crossing(plan_msg, plan):
        cluster = model.Cluster(copy.deepcopy(plan_msg))
        count = 0
        for step in plan.steps:
            inst = cluster.instances[step.move.instance]
            before = inst.pnode
            assert not isinstance(moves.ApplyMove(cluster, step.move),
                                  model.Failure)
            count += before in v2 and inst.pnode not in v2
        return count

    unrestricted = balance.PlanBalance(copy.deepcopy(free))
    assert crossing(free, unrestricted) > 0
    plan = balance.PlanBalance(copy.deepcopy(msg))
    assert plan.steps and plan.final_score < plan.initial_score
    assert crossing(msg, plan) == 0
    # every move passes the check when applied as planned (the model is
    # built from the tagged message), and it is what full rescoring of
    # every candidate finds
    expected, final = _ReferencePlan(copy.deepcopy(msg), balance.Options())
    assert [step.move for step in plan.steps] == expected
    assert plan.final_score == final
