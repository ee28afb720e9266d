"""Node LUs and the master candidate pool, run in-process on a real config.

The node flags follow design-2.0 "Node flags": master candidate, drained
and offline are exclusive, the master's role is fixed, and the cluster
keeps candidate_pool_size candidates where it can.
"""

import pytest

from ganeti import constants, errors, locking, opcodes, rpc_defs

from testutils_cmdlib import Failed, MakeContext

MASTER = "node1.example.test"


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    return MakeContext(tmp_path, monkeypatch)


def _Candidates(ctx):
    return sorted(node.name for node in ctx.cfg.GetAllNodesInfo().values()
                  if node.master_candidate)


def _Prereq(ctx, op, ecode=None):
    with pytest.raises(errors.OpPrereqError) as info:
        ctx.Run(op)
    if ecode is not None:
        assert info.value.args[1] == ecode, info.value
    return str(info.value)


def _AddNode(ctx, name, ip, **kwargs):
    messages = []
    ctx.Run(opcodes.OpNodeAdd(node_name=name, primary_ip=ip, **kwargs),
            messages)
    return messages


# Candidate pool bookkeeping in the configuration -----------------------------

def test_stats_count_eligible_nodes_and_honour_exceptions(ctx):
    ctx.SetPoolSize(3)
    n2 = ctx.NewNode("node2", "127.0.0.2", master_candidate=True)
    ctx.NewNode("node3", "127.0.0.3")
    ctx.NewNode("node4", "127.0.0.4", offline=True)
    ctx.NewNode("node5", "127.0.0.5", drained=True)
    ctx.NewNode("node6", "127.0.0.6", master_capable=False)
    assert ctx.cfg.GetMasterCandidateStats() == (2, 3, 3)
    assert ctx.cfg.GetMasterCandidateStats([n2]) == (1, 2, 2)


def test_maintain_pool_promotes_eligible_nodes_in_name_order(ctx):
    ctx.SetPoolSize(3)
    for idx, flags in [(10, {}), (3, {"offline": True}), (4, {}),
                       (2, {"master_capable": False}), (5, {})]:
        ctx.NewNode("node%d" % idx, "127.0.0.%d" % idx, **flags)
    promoted = ctx.cfg.MaintainCandidatePool([ctx.Node("node4").uuid])
    assert [node.name for node in promoted] == ["node5", "node10"]
    assert all(node.master_candidate for node in promoted)
    assert _Candidates(ctx) == sorted([MASTER, "node5", "node10"])
    assert ctx.cfg.MaintainCandidatePool() == []


def test_maintain_pool_never_demotes(ctx):
    for idx in (2, 3):
        ctx.NewNode("node%d" % idx, "127.0.0.%d" % idx,
                    master_candidate=True)
    ctx.SetPoolSize(1)
    assert ctx.cfg.MaintainCandidatePool() == []
    assert len(_Candidates(ctx)) == 3


# Adding ----------------------------------------------------------------------

def test_add_promotes_new_nodes_while_pool_is_short(ctx):
    ctx.SetPoolSize(2)
    messages = _AddNode(ctx, "node2.example.test", "127.0.0.2")
    assert any("will be a master candidate" in msg for msg in messages)
    _AddNode(ctx, "node3.example.test", "127.0.0.3")
    node2, node3 = ctx.Node("node2.example.test"), ctx.Node(
        "node3.example.test")
    assert node2.master_candidate and not node3.master_candidate
    assert node2.master_capable and node2.vm_capable and node2.powered
    assert node2.group == ctx.cfg.LookupNodeGroup(None)
    assert ctx.synced == [node2.uuid, node3.uuid]
    # The version was checked on the new node's address, before adding it
    assert ("version", "node3.example.test", "127.0.0.3") in \
        ctx.direct_calls
    # The new nodes can be locked
    assert ctx.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL],
                           timeout=1) is not None
    try:
        assert ctx.glm.acquire(locking.LEVEL_NODE, [node3.uuid], timeout=1)
    finally:
        ctx.glm.release(locking.LEVEL_NODE)
        ctx.glm.release(locking.LEVEL_CLUSTER)


def test_add_flags_group_and_params(ctx):
    group = ctx.cfg.LookupNodeGroup(None)
    _AddNode(ctx, "node2", "127.0.0.2", master_capable=False,
             vm_capable=False, group="default",
             ndparams={"spindle_count": "4"})
    node = ctx.Node("node2")
    assert (node.master_capable, node.vm_capable, node.master_candidate) == \
        (False, False, False)
    assert node.group == group
    assert node.ndparams == {"spindle_count": 4}


def test_add_refuses_duplicates_and_bad_input(ctx):
    _AddNode(ctx, "node2", "127.0.0.2")
    serial = ctx.cfg.GetConfigSerial()
    assert "already in the configuration" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name="node2", primary_ip="127.0.0.9"),
        errors.ECODE_EXISTS)
    assert "conflict with existing node node2" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name="node3", primary_ip="127.0.0.2"),
        errors.ECODE_NOTUNIQUE)
    assert "not found" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name="node3", primary_ip="127.0.0.3",
                               group="nosuchgroup"), errors.ECODE_NOENT)
    assert "not in the configuration" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name="node3", primary_ip="127.0.0.3",
                               readd=True), errors.ECODE_NOENT)
    assert "Cannot readd the master" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name=MASTER, primary_ip="127.0.0.1",
                               readd=True))
    assert "valid IPv4" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name="node3", primary_ip="127.0.0.3",
                               secondary_ip="bogus"))
    assert "Unknown node parameter" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name="node3", primary_ip="127.0.0.3",
                               ndparams={"bogus": 1}))
    assert ctx.cfg.GetConfigSerial() == serial


def test_add_refuses_unresolvable_name(ctx):
    assert "Cannot resolve" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name="nosuchhost.invalid"),
        errors.ECODE_RESOLVER)


def test_add_refuses_node_not_answering_or_wrong_version(ctx):
    ctx.direct_answers[("version", "node2")] = Failed("version", "node2")
    text = _Prereq(ctx, opcodes.OpNodeAdd(node_name="node2",
                                          primary_ip="127.0.0.2"),
                   errors.ECODE_ENVIRON)
    assert "Can't get version information from node node2" in text
    assert "cluster certificate" in text
    ctx.direct_answers[("version", "node2")] = 1
    assert "Version mismatch" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name="node2", primary_ip="127.0.0.2"))
    assert ctx.Node("node2") is None


def test_readd_resets_flags_and_resyncs(ctx):
    ctx.SetPoolSize(2)
    ctx.NewNode("node2", "127.0.0.2", master_candidate=True)
    uuid = ctx.NewNode("node3", "127.0.0.3", offline=True,
                       master_capable=False)
    messages = _AddNode(ctx, "node3", "127.0.0.3", readd=True,
                        master_capable=True)
    node = ctx.Node("node3")
    assert (node.offline, node.drained, node.master_capable) == \
        (False, False, True)
    # The pool (master and node2) is full: it stays a regular node and
    # drops any copies from an earlier time as candidate
    assert not node.master_candidate
    assert ctx.synced == [uuid]
    assert ("node_demote_from_mc", uuid) in ctx.rpc.calls
    assert any("offline/drained flags were reset" in m for m in messages)


def test_readd_promotes_when_pool_short_and_keeps_secondary_ip(ctx):
    uuid = ctx.NewNode("node2", "127.0.0.2", drained=True)
    assert "same IP address configuration" in _Prereq(
        ctx, opcodes.OpNodeAdd(node_name="node2", primary_ip="127.0.0.2",
                               secondary_ip="127.0.0.22", readd=True))
    _AddNode(ctx, "node2", "127.0.0.2", readd=True)
    assert ctx.Node("node2").master_candidate
    assert ("node_demote_from_mc", uuid) not in ctx.rpc.calls


# Flags -----------------------------------------------------------------------

def _Modify(ctx, name, messages=None, **kwargs):
    return ctx.Run(opcodes.OpNodeSetParams(node_name=name, **kwargs),
                   messages)


def test_flags_are_exclusive_and_result_lists_changes(ctx):
    uuid = ctx.NewNode("node2", "127.0.0.2", master_candidate=True)
    result = _Modify(ctx, "node2", drained=True)
    assert result == [("master_candidate", "False"), ("drained", "True")]
    node = ctx.Node("node2")
    assert (node.master_candidate, node.drained, node.offline) == \
        (False, True, False)
    assert ("node_demote_from_mc", uuid) in ctx.rpc.calls
    result = _Modify(ctx, "node2", offline=True)
    assert result == [("drained", "False"), ("offline", "True")]
    node = ctx.Node("node2")
    assert (node.master_candidate, node.drained, node.offline) == \
        (False, False, True)
    assert "more than one state" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name="node2", offline=True,
                                     drained=True))
    assert "at least one modification" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name="node2"))


def test_master_flags_are_fixed(ctx):
    for flags in ({"offline": True}, {"drained": True},
                  {"master_candidate": False}):
        assert "only via master-failover" in _Prereq(
            ctx, opcodes.OpNodeSetParams(node_name=MASTER, **flags),
            errors.ECODE_INVAL)
    assert "master capable" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name=MASTER, master_capable=False))
    assert ctx.Node(MASTER).master_candidate


def test_offline_refused_with_primary_instances(ctx):
    n2 = ctx.NewNode("node2", "127.0.0.2")
    n3 = ctx.NewNode("node3", "127.0.0.3")
    ctx.AddInstance("inst1", n2, secondary=n3)
    assert "primary node of instance(s) inst1" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name="node2", offline=True),
        errors.ECODE_STATE)
    # Secondary instances don't prevent it
    _Modify(ctx, "node3", offline=True)
    assert ctx.Node("node3").offline
    assert "hosts instances" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name="node2", vm_capable=False))


def test_demotion_leaving_pool_short_needs_auto_promote(ctx):
    ctx.SetPoolSize(2)
    n2 = ctx.NewNode("node2", "127.0.0.2", master_candidate=True)
    n3 = ctx.NewNode("node3", "127.0.0.3")
    for flags in ({"master_candidate": False}, {"offline": True},
                  {"drained": True}):
        assert "Not enough master candidates" in _Prereq(
            ctx, opcodes.OpNodeSetParams(node_name="node2", **flags),
            errors.ECODE_STATE)
    messages = []
    result = _Modify(ctx, "node2", messages, offline=True,
                     auto_promote=True)
    assert result == [("master_candidate", "False"), ("offline", "True")]
    assert _Candidates(ctx) == [MASTER, "node3"]
    assert ctx.synced == [n3]
    assert any("Promoted nodes to master candidate role: node3" in m
               for m in messages)
    # An offline node is not contacted to demote itself
    assert ("node_demote_from_mc", n2) not in ctx.rpc.calls


def test_demotion_without_replacement_is_allowed(ctx):
    # Every eligible node is a candidate: nobody could take over
    ctx.NewNode("node2", "127.0.0.2", master_candidate=True)
    result = _Modify(ctx, "node2", master_candidate=False)
    assert result == [("master_candidate", "False")]
    assert _Candidates(ctx) == [MASTER]


def test_unset_flag_already_unset_is_ignored(ctx):
    ctx.NewNode("node2", "127.0.0.2", master_candidate=True)
    messages = []
    assert _Modify(ctx, "node2", messages, drained=False) == []
    assert any("Ignoring request to unset flag drained" in m
               for m in messages)


def test_undrain_and_online_promote_when_pool_short(ctx):
    n2 = ctx.NewNode("node2", "127.0.0.2", drained=True)
    n3 = ctx.NewNode("node3", "127.0.0.3", offline=True)
    assert _Modify(ctx, "node2", drained=False) == [
        ("master_candidate", "True"), ("drained", "False")]
    messages = []
    assert _Modify(ctx, "node3", messages, offline=False) == [
        ("master_candidate", "True"), ("offline", "False")]
    assert _Candidates(ctx) == [MASTER, "node2", "node3"]
    assert ctx.synced == [n2, n3]
    # Leaving offline checks the node answers (directly: it is offline)
    assert ("version", "node3", "127.0.0.3") in ctx.direct_calls
    assert any("without using re-add" in m for m in messages)


def test_leaving_offline_refused_if_node_does_not_answer(ctx):
    ctx.NewNode("node2", "127.0.0.2", offline=True)
    ctx.direct_answers[("version", "node2")] = Failed("version", "node2")
    assert "being de-offlined but fails to report its version" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name="node2", offline=False))
    assert ctx.Node("node2").offline


def test_undrain_with_full_pool_stays_regular(ctx):
    ctx.SetPoolSize(1)
    ctx.NewNode("node2", "127.0.0.2", drained=True)
    assert _Modify(ctx, "node2", drained=False) == [("drained", "False")]
    assert _Candidates(ctx) == [MASTER]


def test_master_capable_flag_and_candidate(ctx):
    ctx.NewNode("node2", "127.0.0.2", master_candidate=True)
    ctx.NewNode("node3", "127.0.0.3", master_capable=False)
    assert _Modify(ctx, "node2", master_capable=False) == [
        ("master_capable", "False"), ("master_candidate", "False")]
    assert "not master capable" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name="node3",
                                     master_candidate=True))
    # Becoming capable joins the (short) pool
    assert _Modify(ctx, "node3", master_capable=True) == [
        ("master_capable", "True"), ("master_candidate", "True")]


def test_ndparams_secondary_ip_and_powered(ctx):
    ctx.NewNode("node2", "127.0.0.2")
    result = _Modify(ctx, "node2", ndparams={"spindle_count": "3",
                                             "ssh_port": "2222"})
    assert ctx.Node("node2").ndparams == {"spindle_count": 3,
                                          "ssh_port": 2222}
    assert result == [("ndparams", str({"spindle_count": 3,
                                        "ssh_port": 2222}))]
    _Modify(ctx, "node2", ndparams={"ssh_port": "default"})
    assert ctx.Node("node2").ndparams == {"spindle_count": 3}
    assert "single-homed" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name="node2",
                                     secondary_ip="127.0.1.2"))
    assert "out-of-band" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name="node2", powered=False))


# Removing --------------------------------------------------------------------

def test_remove_node_promotes_replacement_and_makes_it_leave(ctx):
    ctx.SetPoolSize(2)
    n2 = ctx.NewNode("node2", "127.0.0.2", master_candidate=True)
    n3 = ctx.NewNode("node3", "127.0.0.3")
    messages = []
    ctx.Run(opcodes.OpNodeRemove(node_name="node2"), messages)
    assert ctx.Node("node2") is None
    assert _Candidates(ctx) == [MASTER, "node3"]
    assert ctx.synced == [n3]
    assert ctx.direct_calls == [("node_leave_cluster", "node2",
                                 "127.0.0.2")]
    # Its locks are gone
    assert ctx.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL],
                           timeout=1) is not None
    try:
        assert n2 not in ctx.glm.acquire(locking.LEVEL_NODE,
                                         locking.ALL_SET, timeout=1)
    finally:
        ctx.glm.release(locking.LEVEL_NODE)
        ctx.glm.release(locking.LEVEL_CLUSTER)


def test_remove_warns_when_node_cannot_leave(ctx):
    ctx.NewNode("node2", "127.0.0.2", offline=True)
    messages = []
    ctx.Run(opcodes.OpNodeRemove(node_name="node2"), messages)
    assert ctx.Node("node2") is None
    assert any("while leaving the cluster: Node is marked offline" in m
               for m in messages)


def test_remove_refuses_master_unknown_and_used_nodes(ctx):
    assert "master node" in _Prereq(
        ctx, opcodes.OpNodeRemove(node_name=MASTER), errors.ECODE_INVAL)
    assert "not known" in _Prereq(
        ctx, opcodes.OpNodeRemove(node_name="nosuchnode"),
        errors.ECODE_NOENT)
    n2 = ctx.NewNode("node2", "127.0.0.2")
    n3 = ctx.NewNode("node3", "127.0.0.3")
    ctx.AddInstance("inst1", n2, secondary=n3)
    assert "Instance inst1 is still running on the node" in _Prereq(
        ctx, opcodes.OpNodeRemove(node_name="node3"))
    assert ctx.direct_calls == []


# Pool size changes -----------------------------------------------------------

def test_growing_pool_size_promotes_shrinking_only_notes(ctx):
    ctx.SetPoolSize(1)
    for idx in (2, 3, 4):
        ctx.NewNode("node%d" % idx, "127.0.0.%d" % idx)
    ctx.Run(opcodes.OpClusterSetParams(candidate_pool_size=3))
    assert _Candidates(ctx) == [MASTER, "node2", "node3"]
    messages = []
    ctx.Run(opcodes.OpClusterSetParams(candidate_pool_size=2), messages)
    assert _Candidates(ctx) == [MASTER, "node2", "node3"]
    assert any("more nodes are candidates (3) than desired (2)" in m
               for m in messages)
    assert ctx.cfg.GetClusterInfo().candidate_pool_size == 2
    assert constants.MASTER_POOL_SIZE_DEFAULT == 10


def test_fake_rpc_offers_every_declared_procedure(ctx):
    """The LUs' fake runner takes its calls from rpc_defs: each one
    records and answers, one result for a single-node call, one per node
    for a multi-node call."""
    master = ctx.cfg.GetMasterNode()
    for call in rpc_defs.CALLS:
        method = getattr(ctx.rpc, "call_" + call.name)
        args = ["arg%d" % idx for idx in range(len(call.args))]
        if call.kind == rpc_defs.CALL_SINGLE:
            assert method(master, *args).fail_msg is None
            target = master
        else:
            assert set(method([master], *args)) == {master}
            target = (master, )
        assert ctx.rpc.calls[-1] == (call.name, target) + tuple(args)
