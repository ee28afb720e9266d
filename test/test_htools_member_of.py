"""The built-in allocator's ``member_of`` (Placement aggregates) on
iallocator messages: the nodes kept, and the refusal naming the value."""

import pytest

from ganeti import constants, errors
from ganeti.htools import allocator, simu
from ganeti.placement import search

pytestmark = pytest.mark.unit

LICENSED = "3f0c1d52-8a8e-4b41-9f1f-0a5c2b7f0001"
FAST = "3f0c1d52-8a8e-4b41-9f1f-0a5c2b7f0002"
NODES = ["node%04d.example.com" % idx for idx in range(4)]


def _Message(member_of: list[str], **request) -> dict:
    """Four nodes, the emptiest first; node0 and node1 are licensed,
    node1 and node2 fast."""
    msg = simu.Message(4, memory=8192)
    for idx, name in enumerate(NODES):
        node = msg["nodes"][name]
        node["free_memory"] = 7000 - 1000 * idx
        node["aggregates"] = sorted({node["group"]} |
                                    ({LICENSED} if idx < 2 else set()) |
                                    ({FAST} if idx in (1, 2) else set()))
    msg["aggregates"] = {LICENSED: "licensed", FAST: "fast"}
    msg["request"] = simu.AllocRequest(memory=1024, member_of=member_of,
                                       **request)
    return msg


def _Result(member_of: list[str], **request) -> list[str]:
    answer = allocator.Run(_Message(member_of, **request))
    assert answer["success"], answer
    return answer["result"]


def test_without_member_of_the_emptiest_wins():
    assert _Result([]) == [NODES[0]]


def test_forbidden_aggregate_keeps_off_the_emptiest():
    answer = allocator.Run(_Message(["!" + LICENSED]), explain=True)
    assert answer["result"] == [NODES[2]]
    assert "failures 2 (FailMemberOf: 2)" in answer["info"]
    assert "FailMemberOf: 2" in answer["explanation"]
    assert _Result(["!in:%s,%s" % (LICENSED, FAST)]) == [NODES[3]]


def test_required_any_of_and_anded_values():
    assert _Result([FAST]) == [NODES[1]]
    assert _Result(["in:%s,%s" % (FAST, LICENSED)]) == [NODES[0]]
    # Repeated values are ANDed: fast and not licensed
    assert _Result([FAST, "!" + LICENSED]) == [NODES[2]]


def test_mirrored_pairs_use_member_nodes_only():
    answer = allocator.Run(_Message(["!" + FAST],
                                    template=constants.DT_DRBD8))
    assert answer["success"], answer
    assert sorted(answer["result"]) == [NODES[0], NODES[3]]


def test_refusal_names_the_constraint_per_node():
    answer = allocator.Run(_Message([LICENSED, "!in:%s,%s" %
                                     (FAST, LICENSED)]))
    assert not answer["success"] and answer["result"] == []
    info = answer["info"]
    assert "failure reasons: FailMemberOf: 4" in info
    for name in NODES[:2]:
        assert "%s: excluded by member_of '!in:fast,licensed'" % name in info
    for name in NODES[2:]:
        assert "%s: excluded by member_of 'licensed'" % name in info


def test_unnamed_aggregates_are_shown_by_uuid():
    msg = _Message(["!" + LICENSED])
    del msg["aggregates"]
    msg["request"]["member_of"] = [LICENSED, "!" + LICENSED]
    info = allocator.Run(msg)["info"]
    assert "%s: excluded by member_of '!%s'" % (NODES[0], LICENSED) in info
    assert "%s: excluded by member_of '%s'" % (NODES[3], LICENSED) in info


def test_multi_allocate_applies_each_instances_member_of():
    msg = _Message([])
    msg["request"] = {
        "type": constants.IALLOCATOR_MODE_MULTI_ALLOC,
        "instances": [simu.AllocRequest(name="a", member_of=[FAST]),
                      simu.AllocRequest(name="b",
                                        member_of=["!" + LICENSED])]}
    answer = allocator.Run(msg)
    assert answer["result"] == [[["a", [NODES[1]]], ["b", [NODES[2]]]],
                                []]


@pytest.mark.parametrize("value", ["licensed", "in:", "!in:%s,x" % FAST,
                                   "%s,%s" % (FAST, LICENSED)])
def test_invalid_values_are_malformed_input(value):
    with pytest.raises(errors.ParameterError, match="Invalid member_of"):
        allocator.Run(_Message([value]))


def test_member_of_check_is_placements():
    """The allocator's test is Placement's direct membership."""
    member_of = search.MemberOf([FAST, "!in:%s" % LICENSED])
    assert member_of.Failed({FAST}) is None
    assert member_of.Failed({LICENSED, FAST}) == "!in:%s" % LICENSED
    assert member_of.Failed(set()) == FAST
    assert search.IsMember({FAST}, [{FAST, LICENSED}], set())
    assert not search.IsMember({FAST}, [{FAST}], {FAST})


def _MoveMessage(template: str) -> tuple[dict, dict]:
    """Four nodes and one instance of ``template``; the instance."""
    msg = simu.Message(4, 1, memory=16384, templates=(template, ))
    (inst, ) = msg["instances"].values()
    msg["aggregates"] = {LICENSED: "licensed"}
    return msg, inst


def _License(msg: dict, names) -> None:
    for name, node in msg["nodes"].items():
        node["aggregates"] = [node["group"]] + \
            ([LICENSED] if name in names else [])


@pytest.mark.parametrize("kind", ["relocate", "node-evacuate"])
def test_moves_keep_off_forbidden_nodes(kind):
    """relocate (migrate/failover with -I) and node-evacuate take
    member_of too; a refusal names the constraint per node."""
    msg, inst = _MoveMessage(constants.DT_DRBD8 if kind == "relocate"
                             else constants.DT_DISKLESS)
    (name, ) = msg["instances"]
    if kind == "relocate":
        msg["request"] = {"type": "relocate", "name": name,
                          "required_nodes": 1, "disk_space_total": 0,
                          "relocate_from": [inst["nodes"][1]]}
    else:
        msg["request"] = {"type": "node-evacuate", "instances": [name],
                          "evac_mode": constants.NODE_EVAC_PRI}

    def Target(answer):
        assert answer["success"], answer
        if kind == "relocate":
            return answer["result"][0]
        moved, failed, _ = answer["result"]
        assert not failed, failed
        return moved[0][2][0]

    _License(msg, ())
    first = Target(allocator.Run(msg))
    _License(msg, {first})
    msg["request"]["member_of"] = ["!" + LICENSED]
    second = Target(allocator.Run(msg))
    assert second not in (first, *inst["nodes"])
    _License(msg, set(msg["nodes"]))
    answer = allocator.Run(msg)
    text = answer["info"] if kind == "relocate" else \
        answer["result"][1][0][1]
    assert "%s: excluded by member_of '!licensed'" % second in text


def test_node_evacuate_applies_each_instances_own_member_of():
    """Moving several instances, each may have further values of its own
    (the cluster's reservation defaults depend on its tags): they steer
    that instance only, ANDed with the request's member_of, and its
    refusal names them."""
    msg = simu.Message(4, 2, memory=16384, skew=0.75,
                       templates=(constants.DT_DISKLESS, ))
    msg["aggregates"] = {LICENSED: "licensed"}
    _License(msg, NODES[1:3])
    first, second = sorted(msg["instances"])
    assert {inst["nodes"][0] for inst in msg["instances"].values()} == \
        {NODES[0]}
    msg["request"] = {"type": "node-evacuate", "instances": [first, second],
                      "evac_mode": constants.NODE_EVAC_PRI,
                      "instance_member_of": {first: ["!" + LICENSED]}}
    answer = allocator.Run(msg)
    assert answer["success"], answer
    moved, failed, _ = answer["result"]
    assert not failed
    targets = {name: nodes[0] for name, _, nodes in moved}
    assert targets[first] == NODES[3]
    assert targets[second] in NODES[1:3]
    # ANDed with the request's own: nothing is left for the first
    msg["request"]["member_of"] = [LICENSED]
    moved, failed, _ = allocator.Run(msg)["result"]
    assert [name for name, _, _ in moved] == [second]
    ((name, reason), ) = failed
    assert name == first
    assert "%s: excluded by member_of '!licensed'" % NODES[1] in reason
    assert "%s: excluded by member_of 'licensed'" % NODES[3] in reason
    msg["request"]["instance_member_of"] = ["!" + LICENSED]
    with pytest.raises(errors.ParameterError, match="instance_member_of"):
        allocator.Run(msg)


def test_change_group_applies_each_instances_own_member_of():
    """change-group (gnt-instance change-group, gnt-group evacuate) keeps
    each instance off the nodes its own values exclude, in whichever
    group it picks; a refusal names the value per node."""
    msg = simu.Message(4, 1, groups=2, memory=16384, skew=0.75,
                       templates=(constants.DT_DISKLESS, ))
    msg["aggregates"] = {LICENSED: "licensed"}
    # node2 is the emptiest node of the other group
    msg["nodes"][NODES[2]]["free_memory"] += 4096
    (name, ) = msg["instances"]
    msg["request"] = {"type": constants.IALLOCATOR_MODE_CHG_GROUP,
                      "instances": [name], "target_groups": []}

    def Target():
        answer = allocator.Run(msg)
        assert answer["success"], answer
        moved, failed, _ = answer["result"]
        assert not failed, failed
        ((_, group, nodes), ) = moved
        assert group == "group1"
        return nodes[0]

    _License(msg, {NODES[2]})
    assert Target() == NODES[2]
    msg["request"]["instance_member_of"] = {name: ["!" + LICENSED]}
    assert Target() == NODES[3]
    _License(msg, NODES[2:])
    answer = allocator.Run(msg)
    moved, ((failed, reason), ), _ = answer["result"]
    assert not moved and failed == name
    for node in NODES[2:]:
        assert "%s: excluded by member_of '!licensed'" % node in reason
