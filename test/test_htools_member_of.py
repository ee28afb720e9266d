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
