"""The cluster's reservation defaults (the deployer flow of the
forbidden-aggregates spec) on the allocations of replace-disks,
recreate-disks, change-group, group evacuate and of the new nodes
gnt-instance modify names (drbd conversion, --new-primary).

The LUs run in-process on a real configuration with the built-in
allocator; nodes answer node_info through the recording fake. With both
prefixes ``reservation:``, node3 is the free pool (metadata
``reservation:``) and the emptiest node, node4 is an ordinary node:
untagged instances must never get node3, whether the allocator picks or
the admin names it.
"""

import pytest

from ganeti import constants, errors, mcpu, objects, opcodes

from testutils_cmdlib import MakeContext

pytestmark = pytest.mark.unit

FREEPOOL = "8c1e0a52-6f0d-4c1e-9a57-0c5d2b7f0001"
RES_R1 = "8c1e0a52-6f0d-4c1e-9a57-0c5d2b7f0002"
HALLOC = constants.IALLOCATOR_BUILTIN
NODE1 = "node1.example.test"
NODE2, NODE3, NODE4 = ("node%d.example.test" % idx for idx in (2, 3, 4))
DEFAULT_REFUSAL = "(the cluster's default: no aggregate with metadata" \
    " 'reservation:...')"


def _NodeInfo(free_mb: int) -> dict:
    """node_info's payload: memory and file storage."""
    return {"hv": {constants.HT_FAKE: {
        "memory_free": free_mb, "memory_total": 16384, "memory_dom0": 1024,
        "cpu_total": 8, "cpu_dom0": 0}},
        "storage": [{"type": constants.ST_FILE, "name": "file",
                     "storage_size": 100 * 1024, "storage_free": 90 * 1024}]}


@pytest.fixture
def ctx(tmp_path):
    context = MakeContext(tmp_path)
    for idx, name in enumerate((NODE2, NODE3, NODE4)):
        context.NewNode(name, "127.0.0.%d" % (idx + 2))
    cluster = context.cfg.GetClusterInfo()
    cluster.placement_required_prefix = "reservation:"
    cluster.placement_default_forbidden_prefix = "reservation:"
    cluster.aggregates = {
        FREEPOOL: {"name": "freepool", "metadata": {"reservation:": ""}},
        RES_R1: {"name": "res-r1", "metadata": {"reservation:r1": ""}}}
    cluster.enabled_disk_templates = [constants.DT_DRBD8, constants.DT_FILE,
                                      constants.DT_DISKLESS]
    cluster.ipolicy[objects.IPOLICY_DTS] = sorted(constants.DISK_TEMPLATES)
    minimum = cluster.ipolicy[objects.ISPECS_MINMAX][0][objects.ISPECS_MIN]
    minimum.update({objects.ISPEC_DISK_SIZE: 1, objects.ISPEC_NIC_COUNT: 0})
    context.cfg.Update(cluster)
    _Aggregates(context, NODE3, FREEPOOL)
    for name, free in ((NODE1, 8000), (NODE2, 8000), (NODE3, 14000),
                       (NODE4, 10000)):
        context.rpc.answers[("node_info", context.Node(name).uuid)] = \
            _NodeInfo(free)
    return context


def _Aggregates(ctx, name: str, *uuids: str) -> None:
    node = ctx.Node(name)
    node.aggregates = list(uuids)
    ctx.cfg.Update(node)


def _Tag(ctx, inst_uuid: str, tag: str) -> None:
    inst = ctx.cfg.GetInstanceInfo(inst_uuid)
    inst.AddTag(tag)
    ctx.cfg.Update(inst)


def _Refused(ctx, op, error=errors.OpPrereqError) -> str:
    with pytest.raises(error) as info:
        ctx.Run(op)
    return str(info.value)


def _Default(name: str) -> str:
    """How halloc names the default on a refusal (aggregates by name)."""
    return "%s: excluded by member_of '!in:freepool,res-r1'" % name


def _ReplaceOp(**kwargs) -> opcodes.OpCode:
    return opcodes.OpInstanceReplaceDisks(
        instance_name="web", mode=constants.REPLACE_DISK_CHG, disks=[],
        dry_run=True, **kwargs)


def test_replace_disks_new_secondary_keeps_the_defaults(ctx):
    uuid = ctx.AddInstance("web", ctx.Node(NODE1).uuid, ctx.Node(NODE2).uuid)
    messages: list[str] = []
    ctx.Run(_ReplaceOp(iallocator=HALLOC), messages)
    assert any("Selected new secondary for instance 'web': %s" % NODE4 in
               msg for msg in messages), messages
    # An explicit node is refused with the value that excludes it
    text = _Refused(ctx, _ReplaceOp(remote_node=NODE3))
    assert "Node %s is excluded by member_of '!in:%s,%s' %s" % (
        NODE3, FREEPOOL, RES_R1, DEFAULT_REFUSAL) in text, text
    ctx.Run(_ReplaceOp(remote_node=NODE4))
    # Reserved as r1, node4 is out too; with the tag, only node4 is in
    _Aggregates(ctx, NODE4, RES_R1)
    text = _Refused(ctx, _ReplaceOp(iallocator=HALLOC))
    assert _Default(NODE3) in text and _Default(NODE4) in text, text
    _Tag(ctx, uuid, "reservation:r1")
    ctx.Run(_ReplaceOp(iallocator=HALLOC))
    text = _Refused(ctx, _ReplaceOp(remote_node=NODE3))
    assert "Node %s is excluded by member_of 'in:%s' (aggregates with the" \
        " metadata 'reservation:r1')" % (NODE3, RES_R1) in text, text


def test_recreate_disks_keeps_the_defaults(ctx):
    uuid = ctx.AddInstance("web", ctx.Node(NODE1).uuid, ctx.Node(NODE2).uuid)
    messages: list[str] = []
    ctx.Run(opcodes.OpInstanceRecreateDisks(
        instance_name="web", iallocator=HALLOC, dry_run=True), messages)
    (selected, ) = [msg for msg in messages if "Selected nodes" in msg]
    assert NODE3 not in selected, selected
    text = _Refused(ctx, opcodes.OpInstanceRecreateDisks(
        instance_name="web", nodes=[NODE1, NODE3], dry_run=True))
    assert "Node %s is excluded by member_of '!in:" % NODE3 in text, text
    # The nodes the instance has already are no new allocation
    _Aggregates(ctx, NODE2, FREEPOOL)
    ctx.Run(opcodes.OpInstanceRecreateDisks(
        instance_name="web", nodes=[NODE1, NODE2], dry_run=True))
    _Aggregates(ctx, NODE2)
    # A pair for r1 needs two nodes of res-r1: every other node is named
    _Aggregates(ctx, NODE4, RES_R1)
    _Tag(ctx, uuid, "reservation:r1")
    text = _Refused(ctx, opcodes.OpInstanceRecreateDisks(
        instance_name="web", iallocator=HALLOC, dry_run=True))
    for name in (NODE1, NODE2, NODE3):
        assert "%s: excluded by member_of 'in:res-r1'" % name in text, text


class _Jobs(mcpu.OpExecCbBase):
    """Callbacks recording the follow-up jobs an LU submits."""

    def __init__(self):
        self.jobs: list[list[dict]] = []

    def SubmitManyJobs(self, jobs):
        self.jobs.extend(jobs)
        return [[True, idx] for idx, _ in enumerate(jobs)]


def _Targets(ctx, op) -> dict[str, str]:
    """Run ``op``; instance name -> target node of its submitted jobs."""
    op.Validate(True)
    callbacks = _Jobs()
    mcpu.Processor(ctx, None).ExecOpCode(op, callbacks)
    return {data["instance_name"]: data["target_node"]
            for job in callbacks.jobs for data in job}


def _OtherGroup(ctx) -> None:
    """node3 (the free pool) and node4 form the group g2."""
    ctx.Run(opcodes.OpGroupAdd(group_name="g2"))
    ctx.Run(opcodes.OpGroupAssignNodes(group_name="g2",
                                       nodes=[NODE3, NODE4]))


def test_change_group_keeps_the_defaults(ctx):
    uuid = ctx.AddInstance("web", ctx.Node(NODE1).uuid)
    _OtherGroup(ctx)

    def Op():
        return opcodes.OpInstanceChangeGroup(
            instance_name="web", target_groups=["g2"], iallocator=HALLOC)

    assert _Targets(ctx, Op()) == {"web": NODE4}
    _Aggregates(ctx, NODE4, RES_R1)
    text = _Refused(ctx, Op(), errors.OpExecError)
    assert "Unable to evacuate instances web (" in text, text
    assert _Default(NODE3) in text and _Default(NODE4) in text, text
    _Tag(ctx, uuid, "reservation:r1")
    assert _Targets(ctx, Op()) == {"web": NODE4}


def test_group_evacuate_applies_each_instances_defaults(ctx):
    ctx.AddInstance("web", ctx.Node(NODE1).uuid)
    _OtherGroup(ctx)

    def Op():
        return opcodes.OpGroupEvacuate(group_name="default",
                                       target_groups=["g2"],
                                       iallocator=HALLOC)

    assert _Targets(ctx, Op()) == {"web": NODE4}
    # node4 reserved: the tagged instance may go there, the other nowhere
    _Aggregates(ctx, NODE4, RES_R1)
    _Tag(ctx, ctx.AddInstance("rsv", ctx.Node(NODE2).uuid),
         "reservation:r1")
    text = _Refused(ctx, Op(), errors.OpExecError)
    assert "Unable to evacuate instances web (" in text, text
    assert "rsv (" not in text, text
    assert _Default(NODE3) in text and _Default(NODE4) in text, text
    ctx.cfg.RemoveInstance(ctx.cfg.GetInstanceInfoByName("web").uuid)
    assert _Targets(ctx, Op()) == {"rsv": NODE4}


@pytest.mark.parametrize("change", [
    {"disk_template": constants.DT_DRBD8, "remote_node": NODE3},
    {"pnode": NODE3, "force": True}])
def test_modify_to_a_new_node_keeps_the_defaults(ctx, change):
    """gnt-instance modify: the new secondary of a conversion to drbd and
    a new primary node (--new-primary) are refused as explicit nodes."""
    ctx.AddInstance("web", ctx.Node(NODE1).uuid, file_disk=True)
    text = _Refused(ctx, opcodes.OpInstanceSetParams(instance_name="web",
                                                     **change))
    assert "Node %s is excluded by member_of '!in:%s,%s' %s" % (
        NODE3, FREEPOOL, RES_R1, DEFAULT_REFUSAL) in text, text
    ctx.Run(opcodes.OpInstanceSetParams(
        instance_name="web", dry_run=True,
        **dict(change, **{key: NODE4 for key in change
                          if key in ("remote_node", "pnode")})))
