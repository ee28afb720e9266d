"""Node group LUs, run in-process on a real configuration."""

import pytest

from ganeti import constants, errors, locking, opcodes

from testutils_cmdlib import MakeContext


@pytest.fixture
def ctx(tmp_path):
    return MakeContext(tmp_path)


def _Prereq(ctx, op, ecode=None):
    with pytest.raises(errors.OpPrereqError) as info:
        ctx.Run(op)
    if ecode is not None:
        assert info.value.args[1] == ecode, info.value
    return str(info.value)


def _Group(ctx, name):
    return ctx.cfg.GetNodeGroup(ctx.cfg.LookupNodeGroup(name))


def _GroupLocks(ctx):
    ctx.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL], shared=1)
    try:
        owned = ctx.glm.acquire(locking.LEVEL_NODEGROUP, locking.ALL_SET,
                                shared=1, timeout=5)
        ctx.glm.release(locking.LEVEL_NODEGROUP)
        return owned
    finally:
        ctx.glm.release(locking.LEVEL_CLUSTER)


def test_add_group_with_parameters_and_lock(ctx):
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1",
                               alloc_policy=constants.ALLOC_POLICY_LAST_RESORT,
                               ndparams={"spindle_count": "2"},
                               diskparams={"drbd": {"resync-rate": "1000"}}))
    group = _Group(ctx, "rack1")
    assert group.alloc_policy == constants.ALLOC_POLICY_LAST_RESORT
    assert group.ndparams == {"spindle_count": 2}
    assert group.diskparams == {"drbd": {"resync-rate": 1000}}
    assert group.members == []
    assert group.uuid in _GroupLocks(ctx)
    ctx.Run(opcodes.OpGroupAdd(group_name="rack2"))
    assert _Group(ctx, "rack2").alloc_policy == \
        constants.ALLOC_POLICY_PREFERRED


def test_add_group_refuses_duplicates_and_bad_parameters(ctx):
    uuid = ctx.cfg.LookupNodeGroup("default")
    assert "already exists as a node group (UUID: %s)" % uuid in _Prereq(
        ctx, opcodes.OpGroupAdd(group_name="default"), errors.ECODE_EXISTS)
    assert "Unknown group node parameter" in _Prereq(
        ctx, opcodes.OpGroupAdd(group_name="g", ndparams={"bogus": 1}))
    assert "Invalid instance policy" in _Prereq(
        ctx, opcodes.OpGroupAdd(group_name="g",
                                ipolicy={"vcpu-ratio": -1}))
    with pytest.raises(errors.OpPrereqError):
        ctx.Run(opcodes.OpGroupAdd(group_name="g",
                                   alloc_policy="sometimes"))
    assert len(ctx.cfg.GetAllNodeGroupsInfo()) == 1


def test_rename_group(ctx):
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1"))
    uuid = ctx.cfg.LookupNodeGroup("rack1")
    assert ctx.Run(opcodes.OpGroupRename(group_name="rack1",
                                         new_name="rack9")) == "rack9"
    assert ctx.cfg.LookupNodeGroup("rack9") == uuid
    assert "clashes with existing node group" in _Prereq(
        ctx, opcodes.OpGroupRename(group_name="rack9", new_name="default"),
        errors.ECODE_EXISTS)
    assert "not found" in _Prereq(
        ctx, opcodes.OpGroupRename(group_name="rack1", new_name="x"),
        errors.ECODE_NOENT)


def test_assign_nodes_moves_nodes(ctx):
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1"))
    n2 = ctx.NewNode("node2.example.test", "127.0.0.2")
    n3 = ctx.NewNode("node3.example.test", "127.0.0.3")
    ctx.Run(opcodes.OpGroupAssignNodes(group_name="rack1",
                                       nodes=["node2", "node3.example.test"]))
    assert sorted(_Group(ctx, "rack1").members) == sorted([n2, n3])
    assert _Group(ctx, "default").members == [ctx.cfg.GetMasterNode()]
    # Back again, with the master too; no-op moves are fine
    ctx.Run(opcodes.OpGroupAssignNodes(
        group_name="default", nodes=["node1.example.test", "node2"]))
    assert _Group(ctx, "rack1").members == [n3]
    assert "not known" in _Prereq(
        ctx, opcodes.OpGroupAssignNodes(group_name="rack1",
                                        nodes=["nosuchnode"]),
        errors.ECODE_NOENT)


def test_assign_nodes_splitting_drbd_instance_needs_force(ctx):
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1"))
    n2 = ctx.NewNode("node2", "127.0.0.2")
    n3 = ctx.NewNode("node3", "127.0.0.3")
    ctx.AddInstance("inst1", n2, secondary=n3)
    ctx.AddInstance("inst2", n2)
    assert "split by this change and --force was not given: inst1" in \
        _Prereq(ctx, opcodes.OpGroupAssignNodes(group_name="rack1",
                                                nodes=["node2"]))
    # Moving both nodes splits nothing
    ctx.Run(opcodes.OpGroupAssignNodes(group_name="rack1",
                                       nodes=["node2", "node3"]))
    messages = []
    ctx.Run(opcodes.OpGroupAssignNodes(group_name="default", nodes=["node3"],
                                       force=True), messages)
    assert any("will split the following instances: inst1" in m
               for m in messages)
    assert ctx.cfg.GetNodeInfo(n3).group == ctx.cfg.LookupNodeGroup(
        "default")


def test_set_params(ctx):
    result = ctx.Run(opcodes.OpGroupSetParams(
        group_name="default", alloc_policy=constants.ALLOC_POLICY_UNALLOCABLE,
        ndparams={"ssh_port": "2022"}, ipolicy={"vcpu-ratio": 2.0}))
    group = _Group(ctx, "default")
    assert group.alloc_policy == constants.ALLOC_POLICY_UNALLOCABLE
    assert group.ndparams == {"ssh_port": 2022}
    assert group.ipolicy == {"vcpu-ratio": 2.0}
    assert ("alloc_policy", constants.ALLOC_POLICY_UNALLOCABLE) in result
    assert ("ndparams", str({"ssh_port": 2022})) in result
    ctx.Run(opcodes.OpGroupSetParams(group_name="default",
                                     ndparams={"ssh_port": "default"},
                                     ipolicy={"vcpu-ratio": None}))
    group = _Group(ctx, "default")
    assert group.ndparams == {} and group.ipolicy == {}
    assert "at least one modification" in _Prereq(
        ctx, opcodes.OpGroupSetParams(group_name="default"))
    assert "ssh_port" in _Prereq(
        ctx, opcodes.OpGroupSetParams(group_name="default",
                                      ndparams={"ssh_port": "many"}))


def test_remove_group(ctx):
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1"))
    uuid = ctx.cfg.LookupNodeGroup("rack1")
    ctx.NewNode("node2", "127.0.0.2", group=uuid)
    assert "not empty, has the following nodes: node2" in _Prereq(
        ctx, opcodes.OpGroupRemove(group_name="rack1"), errors.ECODE_STATE)
    ctx.Run(opcodes.OpGroupAssignNodes(group_name="default",
                                       nodes=["node2"]))
    ctx.Run(opcodes.OpGroupRemove(group_name="rack1"))
    assert "not found" in _Prereq(
        ctx, opcodes.OpGroupRemove(group_name="rack1"), errors.ECODE_NOENT)
    assert uuid not in _GroupLocks(ctx)
    assert "node1.example.test, node2" in _Prereq(
        ctx, opcodes.OpGroupRemove(group_name="default"))
