"""Instance LUs and the instance query, run in-process on a real config.

RPCs go to a recording fake; the end-to-end behaviour on real nodes is
covered by test_gnt_instance.
"""

import pytest

from ganeti import constants, errors, objects, opcodes
from ganeti.cmdlib import instance_create, instance_utils

from testutils_cmdlib import Failed, FakeRpc, MakeContext, Ok

MASTER = "node1.example.test"


class _InstanceRpc(FakeRpc):
    """FakeRpc plus the instance calls, answered from ``running``
    (node uuid -> {instance name: info})."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.running = {}

    def call_all_instances_info(self, node_list, hv_names, all_hvparams):
        self.calls.append(("all_instances_info", tuple(node_list)))
        result = {}
        for node in node_list:
            answer = self.answers.get(("all_instances_info", node))
            name = self.cfg.GetNodeInfo(node).name
            result[node] = answer if answer is not None else Ok(
                "all_instances_info", name, self.running.get(node, {}))
        return result


@pytest.fixture
def ctx(tmp_path):
    context = MakeContext(tmp_path)
    context.rpc = _InstanceRpc(context.cfg)
    return context


def _Prereq(ctx, op):
    with pytest.raises(errors.OpPrereqError) as info:
        ctx.Run(op)
    return str(info.value)


def _Create(**kwargs):
    params = dict(instance_name="inst1", disks=[], nics=[],
                  disk_template=constants.DT_DISKLESS, pnode=MASTER,
                  os_type="tinyimage", name_check=False, ip_check=False)
    params.update(kwargs)
    return opcodes.OpInstanceCreate(**params)


@pytest.mark.parametrize("kwargs,message", [
    ({"ip_check": True}, "Cannot do IP address check without a name check"),
    ({"disks": [{"size": 4}]}, "does not allow disks"),
    ({"disk_template": constants.DT_FILE}, "needs at least one disk"),
    ({"disk_template": constants.DT_FILE, "disks": [{"mode": "rw"}]},
     "Missing disk size for disk 0"),
    ({"disk_template": constants.DT_FILE,
      "disks": [{"size": 4, "mode": "rx"}]}, "Invalid disk access mode 'rx'"),
    ({"disk_template": constants.DT_BLOCK, "disks": [{"size": 4}]},
     "requires disk adoption"),
    ({"nics": [{"mac": "zz:00"}]}, "Invalid MAC address specified: zz:00"),
    ({"nics": [{"ip": "auto"}]}, "IP address set to auto"),
    ({"nics": [{"mode": "tunnel"}]}, "NIC 0"),
    ({"os_type": None}, "No guest OS specified"),
    ({"iallocator": "halloc"}, "One and only one of iallocator and primary"
     " node must be given"),
    ({"opportunistic_locking": True}, "Opportunistic locking is only"
     " available in combination with an instance allocator"),
    ({"file_storage_dir": "../etc", "disk_template": constants.DT_FILE,
      "disks": [{"size": 4}]}, "must be a path below"),
    ({"pnode": "nosuchnode"}, "Node 'nosuchnode' not known"),
])
def test_create_refuses_bad_arguments_before_any_rpc(ctx, kwargs, message):
    assert message in _Prereq(ctx, _Create(**kwargs))
    assert ctx.rpc.calls == []
    assert ctx.cfg.GetInstanceList() == []


def test_create_refuses_offline_and_disabled_template(ctx):
    ctx.NewNode("node2", "127.0.0.2", offline=True)
    assert "Can't use offline node node2" in _Prereq(ctx,
                                                     _Create(pnode="node2"))
    assert "not enabled in the cluster" in _Prereq(
        ctx, _Create(disk_template=constants.DT_SHARED_FILE,
                     disks=[{"size": 4}]))


def test_disks_accept_ganetis_volume_groups():
    """Scripts written for Ganeti pass vg/metavg for drbd disks; there is
    no LVM here, they are accepted and unused (Ganeti does so for file
    disks), while other unknown keys are refused."""
    disks = instance_create.ParseDisks([{"size": 32, "vg": "xenvg",
                                         "metavg": "metavg"}],
                                       constants.DT_DRBD8)
    assert disks == [{"size": 32, "mode": "rw", "name": None,
                      "adopt": None}]
    with pytest.raises(errors.OpPrereqError,
                       match="Unknown disk parameter.*: tier"):
        instance_create.ParseDisks([{"size": 32, "tier": "gold"}],
                                   constants.DT_DRBD8)


def test_generated_macs_use_prefix_and_avoid_used_ones():
    used = {"aa:00:00:%02x:%02x:%02x" % (a, b, c)
            for a in range(2) for b in range(2) for c in range(2)}
    mac = instance_utils.GenerateMAC("aa:00:00", used)
    assert mac.startswith("aa:00:00:") and mac not in used


def _Status(ctx, name="inst1"):
    result = ctx.Run(opcodes.OpQuery(what=constants.QR_INSTANCE,
                                     fields=["status", "oper_state",
                                             "oper_ram"],
                                     qfilter=["=", "name", name]))
    return [value for _, value in result["data"][0]]


def test_status_values(ctx):
    master = ctx.cfg.GetMasterNode()
    node2 = ctx.NewNode("node2", "127.0.0.2")
    uuid = ctx.AddInstance("inst1", master)
    assert _Status(ctx) == ["ADMIN_down", False, None]

    inst = ctx.cfg.GetInstanceInfo(uuid)
    inst.admin_state = objects.ADMINST_UP
    ctx.cfg.Update(inst)
    assert _Status(ctx)[0] == "ERROR_down"
    ctx.rpc.running[master] = {"inst1": {"memory": 128, "vcpus": 1,
                                         "state": 0, "time": 0.0}}
    assert _Status(ctx) == ["running", True, 128]
    # The guest powered itself off, its hypervisor process remains
    ctx.rpc.running[master]["inst1"]["state"] = \
        constants.HV_INSTANCE_SHUTDOWN
    assert _Status(ctx)[0] == "USER_down"
    ctx.rpc.running[master]["inst1"]["state"] = constants.HV_INSTANCE_RUNNING
    ctx.rpc.running[node2] = ctx.rpc.running.pop(master)
    assert _Status(ctx)[0] == "ERROR_wrongnode"
    ctx.rpc.answers[("all_instances_info", master)] = Failed(
        "all_instances_info", MASTER)
    assert _Status(ctx)[0] == "ERROR_nodedown"
    del ctx.rpc.answers[("all_instances_info", master)]
    ctx.rpc.running.clear()

    inst = ctx.cfg.GetInstanceInfo(uuid)
    inst.admin_state = objects.ADMINST_DOWN
    ctx.cfg.Update(inst)
    ctx.rpc.running[master] = {"inst1": {"memory": 128, "vcpus": 1,
                                         "state": 0, "time": 0.0}}
    assert _Status(ctx)[0] == "ERROR_up"
    ctx.rpc.running.clear()
    inst = ctx.cfg.GetInstanceInfo(uuid)
    inst.admin_state_source = objects.USER_SOURCE
    ctx.cfg.Update(inst)
    assert _Status(ctx)[0] == "USER_down"
    inst = ctx.cfg.GetInstanceInfo(uuid)
    inst.admin_state = objects.ADMINST_OFFLINE
    ctx.cfg.Update(inst)
    assert _Status(ctx)[0] == "ADMIN_offline"


def test_status_of_instance_on_offline_node(ctx):
    node2 = ctx.NewNode("node2", "127.0.0.2", offline=True)
    ctx.AddInstance("inst2", node2)
    assert _Status(ctx, "inst2")[0] == "ERROR_nodeoffline"
    # Only live fields need the nodes
    ctx.rpc.calls.clear()
    ctx.Run(opcodes.OpQuery(what=constants.QR_INSTANCE,
                            fields=["name", "be/maxmem"], qfilter=None))
    assert ctx.rpc.calls == []


def test_static_fields_and_aliases(ctx):
    ctx.AddInstance("inst1", ctx.cfg.GetMasterNode())
    fields = ["name", "pnode", "disk_template", "be/maxmem", "be/memory",
              "vcpus", "nic.count", "snodes", "disk.count", "hv/nosuch"]
    result = ctx.Run(opcodes.OpQuery(what=constants.QR_INSTANCE,
                                     fields=fields, qfilter=None))
    row = [value for _, value in result["data"][0]]
    assert row[:9] == ["inst1", MASTER, "diskless", 128, 128, 1, 0, [], 0]
    assert result["data"][0][9][0] == constants.RS_UNKNOWN
    assert "Instance 'nope' not known" in _Prereq(
        ctx, opcodes.OpQuery(what=constants.QR_INSTANCE, fields=["name"],
                             qfilter=["=", "name", "nope"]))
