"""The instance policy computations and checks (cmdlib.instance_policy),
against a real configuration; node RPCs go to a recording fake."""

import copy

import pytest

from ganeti import constants, errors, objects
from ganeti.cmdlib import instance_policy as ip

from testutils_cmdlib import FakeRpc
from testutils_config import MakeConfig

MIN = {"memory-size": 128, "cpu-count": 1, "disk-count": 1,
       "disk-size": 1024, "nic-count": 1, "spindle-use": 1}
MAX = {"memory-size": 4096, "cpu-count": 4, "disk-count": 4,
       "disk-size": 10240, "nic-count": 4, "spindle-use": 4}
POLICY = {"minmax": [{"min": MIN, "max": MAX}], "std": dict(MIN),
          "disk-templates": ["diskless", "file"], "vcpu-ratio": 2.0,
          "spindle-ratio": 32.0}


def _Spec(ipolicy=POLICY, mem=512, cpus=2, disks=(2048, ), nics=1,
          spindles=1, template="file"):
    return ip.ComputeIPolicySpecViolation(ipolicy, mem, cpus, len(disks),
                                          nics, list(disks), spindles,
                                          template)


def test_spec_within_policy():
    assert _Spec() == []
    assert _Spec(mem=128, cpus=4, disks=(1024, 10240), nics=4) == []


@pytest.mark.parametrize("kwargs,message", [
    ({"mem": 8192}, "memory-size value 8192 is not in range [128, 4096]"),
    ({"mem": 64}, "memory-size value 64 is not in range [128, 4096]"),
    ({"cpus": 5}, "cpu-count value 5 is not in range [1, 4]"),
    ({"nics": 0}, "nic-count value 0 is not in range [1, 4]"),
    ({"spindles": 9}, "spindle-use value 9 is not in range [1, 4]"),
    ({"disks": (2048, 20480)},
     "disk-size/1 value 20480 is not in range [1024, 10240]"),
    ({"disks": (1024, ) * 5}, "disk-count value 5 is not in range [1, 4]"),
    ({"template": "sharedfile"},
     "Disk template sharedfile is not allowed (allowed templates:"
     " diskless, file)"),
])
def test_spec_violations(kwargs, message):
    assert _Spec(**kwargs) == [message]


def test_unknown_values_and_diskless_disk_count_not_checked():
    assert _Spec(mem=None, cpus=constants.VALUE_AUTO, spindles=None) == []
    assert _Spec(disks=(), template="diskless") == []
    assert _Spec(disks=(), template="file") == \
        ["disk-count value 0 is not in range [1, 4]"]


def test_all_violations_of_the_best_fitting_pair_are_reported():
    small = {"min": dict(MIN, **{"memory-size": 32}),
             "max": dict(MIN, **{"memory-size": 256, "cpu-count": 2})}
    ipolicy = dict(POLICY, minmax=[small, {"min": MIN, "max": MAX}])
    # Fits the big pair only
    assert _Spec(ipolicy, mem=1024, cpus=2, disks=(1024, )) == []
    # Fits the small pair only
    assert _Spec(ipolicy, mem=64, cpus=2, disks=(1024, )) == []
    # Misses the small pair by CPUs only, the big one by memory and CPUs
    assert _Spec(ipolicy, mem=64, cpus=8, disks=(1024, )) == [
        "cpu-count value 8 is not in range [1, 2]"]
    # Misses the small pair twice, the big one once
    assert _Spec(ipolicy, mem=8192, cpus=3, disks=(1024, )) == [
        "memory-size value 8192 is not in range [128, 4096]"]
    # A tie goes to the first pair
    assert _Spec(ipolicy, mem=8192, cpus=1, disks=(1024, )) == [
        "memory-size value 8192 is not in range [32, 256]"]


def test_template_violation_comes_with_spec_violations():
    assert _Spec(mem=8192, template="plain") == [
        "Disk template plain is not allowed (allowed templates: diskless,"
        " file)", "memory-size value 8192 is not in range [128, 4096]"]


def test_disk_count_must_match_sizes():
    with pytest.raises(errors.ProgrammerError):
        ip.ComputeIPolicySpecViolation(POLICY, 128, 1, 2, 1, [1024], 1,
                                       "file")


# With a configuration --------------------------------------------------------

class _LU:
    """What the checks use of an LU: config, RPC and warnings."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.rpc = FakeRpc(cfg)
        self.warnings = []

    def LogWarning(self, message, *args):
        self.warnings.append(message % args if args else message)


@pytest.fixture
def lu(tmp_path):
    cfg = MakeConfig(str(tmp_path))
    cluster = cfg.GetClusterInfo()
    cluster.ipolicy = copy.deepcopy(POLICY)
    cfg.Update(cluster)
    return _LU(cfg)


def _AddGroup(lu, name, ipolicy):
    group = objects.NodeGroup(name=name, ipolicy=ipolicy)
    lu.cfg.AddNodeGroup(group)
    node = objects.Node(name="%s-node" % name, primary_ip="127.0.0.9",
                        secondary_ip="127.0.0.9", group=group.uuid)
    lu.cfg.AddNode(node)
    return group.uuid, node.uuid


def _AddInstance(lu, name, node_uuid, sizes=(2048, ), nics=1, **be):
    inst = objects.Instance(
        name=name, primary_node=node_uuid, hypervisor=constants.HT_FAKE,
        os="tinyimage", beparams=be,
        nics=[objects.NIC(mac="aa:00:00:00:00:%02x" % idx)
              for idx in range(nics)])
    disks = [objects.Disk(dev_type=constants.DT_FILE, size=size,
                          logical_id=["loop", "/srv/%s/disk%d" % (name, idx)],
                          nodes=[node_uuid])
             for idx, size in enumerate(sizes)]
    lu.cfg.AddInstance(inst, disks)
    return lu.cfg.GetInstanceInfo(inst.uuid)


def test_group_policy_is_the_cluster_policy_with_the_group_overrides(lu):
    group_max = dict(MAX, **{"memory-size": 1024})
    uuid, _ = _AddGroup(lu, "g1", {"minmax": [{"min": MIN,
                                               "max": group_max}],
                                   "std": {"cpu-count": 2},
                                   "vcpu-ratio": 1.5})
    result = ip.CalculateGroupIPolicy(lu.cfg.GetClusterInfo(),
                                      lu.cfg.GetNodeGroup(uuid))
    assert result["minmax"] == [{"min": MIN, "max": group_max}]
    assert result["std"] == dict(MIN, **{"cpu-count": 2})
    assert result["vcpu-ratio"] == 1.5
    assert result["disk-templates"] == ["diskless", "file"]
    assert result["spindle-ratio"] == 32.0


def test_instance_violation_uses_filled_backend_parameters(lu):
    master = lu.cfg.GetMasterNode()
    inst = _AddInstance(lu, "i1", master, sizes=(2048, 20480), nics=0,
                        maxmem=8192)
    assert ip.ComputeIPolicyInstanceViolation(POLICY, inst, lu.cfg) == [
        "memory-size value 8192 is not in range [128, 4096]",
        "nic-count value 0 is not in range [1, 4]",
        "disk-size/1 value 20480 is not in range [1024, 10240]"]
    # Planned disks replace the configured ones
    planned = [objects.Disk(dev_type=constants.DT_FILE, size=1024)]
    inst.beparams = {}
    inst.nics = [objects.NIC(mac="aa:00:00:00:01:00")]
    assert ip.ComputeIPolicyInstanceViolation(POLICY, inst, lu.cfg,
                                              planned) == []
    assert ip.ComputeIPolicyInstanceViolation(POLICY, inst, lu.cfg,
                                              []) == []


def test_check_instance_policy_refuses_or_warns(lu):
    master = lu.cfg.GetMasterNode()
    inst = _AddInstance(lu, "i2", master, maxmem=8192)
    group = lu.cfg.GetNodeGroup(lu.cfg.GetNodeInfo(master).group)
    with pytest.raises(errors.OpPrereqError) as info:
        ip.CheckInstanceIPolicy(lu, inst)
    assert str(info.value.args[0]) == (
        "Instance allocation to group %s (%s) violates policy: memory-size"
        " value 8192 is not in range [128, 4096]" % (group.uuid, group.name))
    assert info.value.args[1] == errors.ECODE_INVAL
    ip.CheckInstanceIPolicy(lu, inst, ignore=True)
    assert lu.warnings == [str(info.value.args[0])]


def test_check_spec_against_the_group_policy(lu):
    uuid, _ = _AddGroup(lu, "small", {"minmax": [{
        "min": MIN, "max": dict(MAX, **{"memory-size": 256})}]})
    spec = {"memory-size": 512, "cpu-count": 1, "disk-size": [1024],
            "nic-count": 1, "spindle-use": 1}
    ip.CheckIPolicySpec(lu, lu.cfg.GetNodeInfo(
        lu.cfg.GetMasterNode()).group, spec, "file")
    with pytest.raises(errors.OpPrereqError,
                       match=r"\(small\) violates policy: memory-size value"
                       r" 512 is not in range \[128, 256\]"):
        ip.CheckIPolicySpec(lu, uuid, spec, "file")


def test_target_node_policy_only_across_groups(lu):
    master = lu.cfg.GetMasterNode()
    _, other = _AddGroup(lu, "strict", {"minmax": [{
        "min": MIN, "max": dict(MAX, **{"memory-size": 512})}]})
    inst = _AddInstance(lu, "i3", master, maxmem=1024)
    strict = ip.CalculateGroupIPolicy(
        lu.cfg.GetClusterInfo(),
        lu.cfg.GetNodeGroup(lu.cfg.GetNodeInfo(other).group))
    # Same group: not checked again, even against a violated policy
    ip.CheckTargetNodeIPolicy(lu, strict, inst,
                              lu.cfg.GetNodeInfo(master), lu.cfg)
    with pytest.raises(errors.OpPrereqError,
                       match=r"Instance does not meet target node group's"
                       r" \(strict\) instance policy: memory-size value 1024"
                       r" is not in range \[128, 512\]"):
        ip.CheckTargetNodeIPolicy(lu, strict, inst,
                                  lu.cfg.GetNodeInfo(other), lu.cfg)
    ip.CheckTargetNodeIPolicy(lu, strict, inst, lu.cfg.GetNodeInfo(other),
                              lu.cfg, ignore=True)
    assert len(lu.warnings) == 1 and "strict" in lu.warnings[0]


def _NodeAnswer(lu, node, answer):
    """Make node_info answer ``answer``; an LU asks a node once (NodeInfo),
    so the LU forgets what it was told before, as a new LU would."""
    lu.rpc.answers[("node_info", node)] = answer
    lu.__dict__.pop("_node_info_cache", None)


def _NodeCpus(lu, node, cpus):
    _NodeAnswer(lu, node, {"hv": {constants.HT_FAKE: {"cpu_total": cpus}}})


def test_vcpu_ratio_counts_the_node_primary_instances(lu):
    master = lu.cfg.GetMasterNode()
    _NodeCpus(lu, master, 2)
    # vcpu-ratio 2.0 on 2 CPUs: 4 virtual CPUs
    ip.CheckNodeVcpuRatio(lu, master, 4, constants.HT_FAKE)
    _AddInstance(lu, "i4", master, vcpus=3)
    ip.CheckNodeVcpuRatio(lu, master, 1, constants.HT_FAKE)
    with pytest.raises(errors.OpPrereqError) as info:
        ip.CheckNodeVcpuRatio(lu, master, 2, constants.HT_FAKE)
    assert "would have 5 virtual CPUs on 2 physical CPUs, more than the 4" \
        " allowed by the instance policy's vcpu-ratio 2.0" in str(info.value)
    ip.CheckNodeVcpuRatio(lu, master, 2, constants.HT_FAKE, ignore=True)
    assert len(lu.warnings) == 1


def test_vcpu_ratio_of_the_node_group_and_unknown_cpu_count(lu):
    _, node = _AddGroup(lu, "dense", {"vcpu-ratio": 8.0})
    _NodeCpus(lu, node, 2)
    ip.CheckNodeVcpuRatio(lu, node, 16, constants.HT_FAKE)
    with pytest.raises(errors.OpPrereqError, match="vcpu-ratio 8.0"):
        ip.CheckNodeVcpuRatio(lu, node, 17, constants.HT_FAKE)
    _NodeAnswer(lu, node, {"hv": {}})
    ip.CheckNodeVcpuRatio(lu, node, 17, constants.HT_FAKE)
    assert "reports no CPU count" in lu.warnings[0]
