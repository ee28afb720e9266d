"""The cluster's aggregates: LUs on a real configuration, the file format
(replicated as config.data), and the CLI's parsing."""

import pytest

from ganeti import config, errors, opcodes
from ganeti.client import gnt_cluster, gnt_node
from ganeti.placement import cluster as pcluster

from testutils_cmdlib import MakeContext


@pytest.fixture
def ctx(tmp_path):
    context = MakeContext(tmp_path)
    context.NewNode("node2", "127.0.0.2")
    context.NewNode("node3", "127.0.0.3")
    return context


def _Prereq(ctx, op, ecode=None):
    with pytest.raises(errors.OpPrereqError) as info:
        ctx.Run(op)
    if ecode is not None:
        assert info.value.args[1] == ecode, info.value
    return str(info.value)


def _Query(ctx, *names):
    return {agg["name"]: agg for agg in ctx.Run(
        opcodes.OpClusterAggregateQuery(names=list(names)))}


def test_add_rename_remove_survive_a_reload(ctx):
    uuid = ctx.Run(opcodes.OpClusterAggregateAdd(
        name="licensed", metadata={"reservation:r1": ""}))
    assert ctx.Run(opcodes.OpClusterAggregateRename(
        name="licensed", new_name="windows")) == "windows"
    # What a failed-over master reads: the configuration file itself
    reloaded = config.ConfigWriter(ctx.cfg.GetConfigFileName(),
                                   accept_foreign=True)
    assert reloaded.GetClusterInfo().aggregates == {
        uuid: {"name": "windows", "metadata": {"reservation:r1": ""}}}
    ctx.Run(opcodes.OpClusterAggregateRemove(name=uuid))
    assert ctx.cfg.GetClusterInfo().aggregates is None


def test_names_are_unique_among_aggregates_and_groups(ctx):
    ctx.Run(opcodes.OpClusterAggregateAdd(name="a"))
    assert "already exists" in _Prereq(
        ctx, opcodes.OpClusterAggregateAdd(name="a"), errors.ECODE_EXISTS)
    assert "node group" in _Prereq(
        ctx, opcodes.OpClusterAggregateAdd(name="default"),
        errors.ECODE_EXISTS)
    ctx.Run(opcodes.OpClusterAggregateAdd(name="b"))
    _Prereq(ctx, opcodes.OpClusterAggregateRename(name="b", new_name="a"),
            errors.ECODE_EXISTS)
    assert "not known" in _Prereq(
        ctx, opcodes.OpClusterAggregateRemove(name="c"), errors.ECODE_NOENT)
    with pytest.raises(errors.OpPrereqError):
        ctx.Run(opcodes.OpClusterAggregateAdd(name="!c"))


def test_node_membership(ctx):
    uuid = ctx.Run(opcodes.OpClusterAggregateAdd(name="licensed"))
    ctx.Run(opcodes.OpClusterAggregateAdd(name="fast"))
    result = ctx.Run(opcodes.OpNodeSetParams(
        node_name="node2", add_aggregates=["licensed", "fast"]))
    assert ("aggregates", "fast,licensed") in result
    node = ctx.Node("node2")
    group = ctx.cfg.LookupNodeGroup("default")
    assert pcluster.NodeAggregates(node) == \
        {group, uuid, pcluster.FindNamedAggregate(
            ctx.cfg.GetClusterInfo(), "fast")}
    aggs = _Query(ctx)
    assert aggs["licensed"]["nodes"] == ["node2"]
    assert aggs["default"]["node_group"] is True
    assert "node2" in aggs["default"]["nodes"]
    assert list(_Query(ctx, "licensed")) == ["licensed"]
    # A node in it keeps an aggregate from being removed
    assert "still contains node(s) node2" in _Prereq(
        ctx, opcodes.OpClusterAggregateRemove(name="licensed"),
        errors.ECODE_STATE)
    ctx.Run(opcodes.OpNodeSetParams(node_name="node2",
                                    remove_aggregates=[uuid, "fast"]))
    assert ctx.Node("node2").aggregates is None
    ctx.Run(opcodes.OpClusterAggregateRemove(name="licensed"))
    assert "not known" in _Prereq(
        ctx, opcodes.OpNodeSetParams(node_name="node2",
                                     add_aggregates=["licensed"]),
        errors.ECODE_NOENT)


def test_config_refuses_membership_of_unknown_aggregate(ctx):
    node = ctx.Node("node3")
    node.aggregates = ["0c9ad4b7-0000-4000-8000-000000000000"]
    with pytest.raises(errors.ConfigurationError, match="does not exist"):
        ctx.cfg.Update(node)


def test_resolve_member_of(ctx):
    uuid = ctx.Run(opcodes.OpClusterAggregateAdd(name="licensed"))
    cluster = ctx.cfg.GetClusterInfo()
    groups = ctx.cfg.GetAllNodeGroupsInfo()
    group = ctx.cfg.LookupNodeGroup("default")
    assert pcluster.ResolveMemberOf(
        ["in:licensed,default", "!licensed", "!in:%s" % group], cluster,
        groups) == ["in:%s,%s" % (uuid, group), "!" + uuid, "!in:" + group]
    with pytest.raises(errors.OpPrereqError, match="'nope' not known"):
        pcluster.ResolveMemberOf(["!nope"], cluster, groups)


def test_cli_options():
    parser_opts = {opt.dest: opt for opt in
                   gnt_node.commands["modify"][2]}
    assert parser_opts["add_aggregates"].check_value(
        "--add-aggregates", "a,b") == ["a", "b"]
    metadata = gnt_cluster.AGG_METADATA_OPT.check_value(
        "--metadata", "reservation:r1,owner=x")
    assert metadata == {"reservation:r1": True, "owner": "x"}
