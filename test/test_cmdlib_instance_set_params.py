"""LUInstanceSetParams run in-process on a real configuration.

RPCs go to a recording fake that answers as the test tells it; what
needs real nodes (file disks, ballooning, MAC refusals through the CLI)
is covered by test_gnt_instance_modify. Here: the templates the virtual
cluster can't create (blockdev, ext), the legacy change format, undoing
a half-done disk creation, dry runs and instance-level hypervisor
parameters.
"""

import pytest

from ganeti import constants, errors, ht, locking, objects, opcodes
from ganeti.cmdlib import instance_set_params
from ganeti.hypervisor import hv_fake
from ganeti.parameters.base import ParamSpec

from testutils_cmdlib import Failed, FakeRpc, MakeContext, Ok

MIB = 1024 * 1024


class _Rpc(FakeRpc):
    """FakeRpc answering instance_info from ``running`` (the instances'
    runtime info by name)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.running = {}

    def call_instance_info(self, node, name, hname, hvparams):
        self.calls.append(("instance_info", node, name))
        return Ok("instance_info", node, self.running.get(name, {}))


@pytest.fixture
def ctx(tmp_path):
    context = MakeContext(tmp_path)
    context.rpc = _Rpc(context.cfg)
    # A policy any instance of the tests fits
    cluster = context.cfg.GetClusterInfo()
    minimum = cluster.ipolicy[objects.ISPECS_MINMAX][0][objects.ISPECS_MIN]
    minimum.update({objects.ISPEC_DISK_SIZE: 1, objects.ISPEC_NIC_COUNT: 0})
    cluster.ipolicy[objects.IPOLICY_DTS] = sorted(constants.DISK_TEMPLATES)
    context.cfg.Update(cluster)
    return context


def _AddInstance(ctx, name, template, logical_ids, nics=()):
    master = ctx.cfg.GetMasterNode()
    inst = objects.Instance(name=name, primary_node=master,
                            hypervisor=constants.HT_FAKE, os="tinyimage",
                            nics=[objects.NIC(mac=mac) for mac in nics])
    disks = [objects.Disk(dev_type=template, size=64, mode="rw",
                          logical_id=logical_id, nodes=[master])
             for logical_id in logical_ids]
    ctx.cfg.AddInstance(inst, disks)
    ctx.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL])
    try:
        ctx.glm.add(locking.LEVEL_INSTANCE, inst.uuid)
    finally:
        ctx.glm.release(locking.LEVEL_CLUSTER)
    return inst.uuid


def _Op(**kwargs):
    return opcodes.OpInstanceSetParams(instance_name="inst1", **kwargs)


def _Prereq(ctx, op):
    with pytest.raises(errors.OpPrereqError) as info:
        ctx.Run(op)
    return str(info.value)


def _Calls(ctx, procedure):
    return [call for call in ctx.rpc.calls if call[0] == procedure]


def test_ext_disk_gets_provider_and_its_parameters(ctx):
    uuid = _AddInstance(ctx, "inst1", constants.DT_EXT, [["pvd", "v.disk0"]])
    result = ctx.Run(_Op(disks=[["add", -1, {"size": 32, "provider": "pvd",
                                             "tier": "gold"}]]))
    assert result == [("disk/1", "add:size=32,mode=rw")]
    disks = ctx.cfg.GetInstanceDisks(uuid)
    new = disks[1]
    assert new.logical_id == ["pvd", "%s.disk1" % new.uuid]
    assert (new.dev_type, new.size, new.params, new.iv_name) == \
        (constants.DT_EXT, 32, {"tier": "gold"}, "disk/1")
    ((_, node, disk, size, *_), ) = _Calls(ctx, "blockdev_create")
    assert (node, disk["uuid"], size) == (ctx.cfg.GetMasterNode(),
                                          new.uuid, 32)
    # Stopped instance: the new disk is not left assembled
    assert [call[2]["uuid"] for call in _Calls(ctx, "blockdev_shutdown")] \
        == [new.uuid]

    assert "Missing provider for template 'ext'" in _Prereq(
        ctx, _Op(disks=[["add", -1, {"size": 32}]]))


def test_provider_and_unknown_keys_refused_for_files(ctx):
    _AddInstance(ctx, "inst1", constants.DT_FILE,
                 [["loop", "/srv/ganeti/file-storage/inst1/a.disk0"]])
    assert "The 'provider' option is only valid for the ext disk template," \
        " not file" in _Prereq(ctx, _Op(disks=[["add", -1, {
            "size": 4, "provider": "pvd"}]]))
    assert "Unknown disk parameter(s) for disk 1: tier" in _Prereq(
        ctx, _Op(disks=[["add", -1, {"size": 4, "tier": "gold"}]]))
    assert "Disk adoption is not supported for the 'file' disk template" in \
        _Prereq(ctx, _Op(disks=[["add", -1, {"adopt": "/dev/sdz"}]]))
    assert _Calls(ctx, "blockdev_create") == []


def test_blockdev_disk_adopts_with_the_device_size(ctx):
    uuid = _AddInstance(ctx, "inst1", constants.DT_BLOCK,
                        [["manual", "/dev/loop0"]])
    _AddInstance(ctx, "other", constants.DT_BLOCK,
                 [["manual", "/dev/loop7"]])
    master = ctx.cfg.GetMasterNode()
    ctx.rpc.answers[("blockdev_getdimensions", master)] = [[96 * MIB, 1]]
    result = ctx.Run(_Op(disks=[["add", -1, {"adopt": "/dev/loop1",
                                             "mode": "ro"}]]))
    assert result == [("disk/1", "add:size=96,mode=ro")]
    new = ctx.cfg.GetInstanceDisks(uuid)[1]
    assert (new.logical_id, new.size, new.mode) == \
        (["manual", "/dev/loop1"], 96, "ro")

    for params, message in (
            ({"size": 4}, "requires disk adoption, but no 'adopt'"
             " parameter given"),
            ({"adopt": "/dev/loop2", "size": 4}, "the size of an adopted"
             " disk is the device's"),
            ({"adopt": "/dev/loop7"}, "Block device /dev/loop7 on node"
             " node1.example.test is already used by instance other"),
            ({"adopt": "/dev/loop1"}, "already used by instance inst1")):
        assert message in _Prereq(ctx, _Op(disks=[["add", -1, params]]))
    ctx.rpc.answers[("blockdev_getdimensions", master)] = [None]
    assert "Cannot find the adopted device /dev/loop3 on node" \
        " node1.example.test" in _Prereq(
            ctx, _Op(disks=[["add", -1, {"adopt": "/dev/loop3"}]]))
    assert len(ctx.cfg.GetInstanceDisks(uuid)) == 2


def test_failed_creation_removes_the_disks_created_before(ctx):
    uuid = _AddInstance(ctx, "inst1", constants.DT_EXT, [["pvd", "v.disk0"]])
    before = ctx.cfg.GetInstanceInfo(uuid)
    master = ctx.cfg.GetMasterNode()

    class _SecondFails(_Rpc):
        def call_blockdev_create(self, node, disk, size, *args):
            self.calls.append(("blockdev_create", node, disk, size))
            if len(_Calls(ctx, "blockdev_create")) == 2:
                return Failed("blockdev_create", "node1.example.test",
                              "provider exploded")
            return Ok("blockdev_create", "node1.example.test", None)

    ctx.rpc = _SecondFails(ctx.cfg)
    with pytest.raises(errors.OpExecError) as info:
        ctx.Run(_Op(disks=[["add", -1, {"size": 8, "provider": "pvd"}],
                           ["add", -1, {"size": 8, "provider": "pvd"}]],
                    beparams={"vcpus": 2}))
    assert "Can't create block device disk/2 on node node1.example.test" \
        in str(info.value) and "provider exploded" in str(info.value)
    created = _Calls(ctx, "blockdev_create")[0][2]
    assert [call[1:3] for call in _Calls(ctx, "blockdev_remove")] == \
        [(master, created)]
    after = ctx.cfg.GetInstanceInfo(uuid)
    assert (after.disks, after.beparams, after.serial_no) == \
        (before.disks, before.beparams, before.serial_no)


def test_legacy_change_format(ctx):
    uuid = _AddInstance(ctx, "inst1", constants.DT_EXT,
                        [["pvd", "v.disk0"], ["pvd", "v.disk1"]],
                        nics=["aa:00:00:00:00:01"])
    result = ctx.Run(_Op(disks=[["remove", {}], [0, {"mode": "ro"}]],
                         nics=[["add", {"mac": "aa:00:00:00:00:02"}]]))
    assert result == [("disk/1", "remove"), ("disk.mode/0", "ro"),
                      ("nic.1", "add:mac=aa:00:00:00:00:02,ip=None,"
                       "mode=bridged,link=%s,network=None" %
                       constants.DEFAULT_BRIDGE)]
    (disk, ) = ctx.cfg.GetInstanceDisks(uuid)
    assert disk.mode == "ro"
    assert [nic.mac for nic in ctx.cfg.GetInstanceInfo(uuid).nics] == \
        ["aa:00:00:00:00:01", "aa:00:00:00:00:02"]
    assert "Only one NIC add or remove operation is supported at a time" in \
        _Prereq(ctx, _Op(nics=[["add", {}], ["remove", {}]]))
    assert "No changes submitted" in _Prereq(ctx, _Op())


def test_dry_run_changes_nothing(ctx):
    uuid = _AddInstance(ctx, "inst1", constants.DT_EXT, [["pvd", "v.disk0"]])
    before = ctx.cfg.GetInstanceInfo(uuid)
    assert ctx.Run(_Op(disks=[["add", -1, {"size": 8, "provider": "p"}]],
                       beparams={"maxmem": 256}, force=True,
                       dry_run=True)) is None
    assert _Calls(ctx, "blockdev_create") == []
    assert ctx.cfg.GetInstanceInfo(uuid).serial_no == before.serial_no


def test_instance_hypervisor_parameters(ctx, monkeypatch):
    monkeypatch.setitem(hv_fake.FakeHypervisor.PARAMETERS, "boot_delay",
                        ParamSpec(0, ht.TNonNegativeInt,
                                  "Seconds before booting"))
    uuid = _AddInstance(ctx, "inst1", constants.DT_EXT, [["pvd", "v.disk0"]])
    result = ctx.Run(_Op(hvparams={"boot_delay": "5"}))
    assert result == [("hv/boot_delay", 5)]
    assert ctx.cfg.GetInstanceInfo(uuid).hvparams == {"boot_delay": 5}
    ((_, nodes, _, filled), ) = _Calls(ctx, "hypervisor_validate_params")
    assert nodes == (ctx.cfg.GetMasterNode(), ) and filled["boot_delay"] == 5
    assert "boot_delay" in _Prereq(ctx, _Op(hvparams={"boot_delay": "x"}))
    result = ctx.Run(_Op(hvparams={"boot_delay": "default"}))
    assert result == [("hv/boot_delay", "default")]
    assert ctx.cfg.GetInstanceInfo(uuid).hvparams == {}


def test_pre_hooks_describe_the_new_memory_and_nics(ctx):
    _AddInstance(ctx, "inst1", constants.DT_EXT, [["pvd", "v.disk0"]],
                 nics=["aa:00:00:00:00:01"])
    ctx.Run(_Op(beparams={"maxmem": 256, "vcpus": 3}, force=True,
                nics=[["remove", -1, {}]]))
    pre, post = [call for call in ctx.rpc.calls if call[0] == "hooks_runner"]
    assert pre[2] == "instance-modify" and pre[3] == "pre"
    assert (pre[4]["GANETI_INSTANCE_MAXMEM"],
            pre[4]["GANETI_INSTANCE_VCPUS"],
            pre[4]["GANETI_INSTANCE_NIC_COUNT"]) == ("256", "3", "0")
    assert post[4]["GANETI_POST_INSTANCE_MAXMEM"] == "256"


def test_upgrade_device_mods():
    upgrade = instance_set_params.UpgradeDeviceMods
    assert upgrade("disk", [["add", {"size": 1}], [2, {"mode": "ro"}]]) == \
        [("add", -1, {"size": 1}), ("modify", 2, {"mode": "ro"})]
    assert upgrade("disk", [["modify", "data", {}]]) == \
        [("modify", "data", {})]
    assert upgrade("NIC", []) == []
