"""Hypervisor framework: parameter tables, filling, checks, fake hypervisor.

The RPC tests run the hypervisor procedures through real noded processes
and look at the fake hypervisor's state files in the nodes' roots.
"""

import json
import os

import pytest

from ganeti import constants, errors, hypervisor, objects
from ganeti import pathutils
from ganeti.hypervisor import hv_base, hv_fake
from ganeti import ht
from ganeti.parameters import hypervisors
from ganeti.parameters.base import ParamSpec

pytestmark = pytest.mark.integration


def _Cluster(**kwargs):
    cluster = objects.Cluster(cluster_name="c.example.com",
                              master_node="uuid-1", master_ip="192.0.2.1",
                              enabled_hypervisors=["fake"],
                              enabled_disk_templates=["diskless"], **kwargs)
    cluster.UpgradeConfig()
    return cluster


def _Instance(name="inst1.example.com", **kwargs):
    return objects.Instance(name=name, primary_node="uuid-1",
                            hypervisor="fake", os="debootstrap",
                            uuid="i-" + name, **kwargs)


# Parameter tables ----

def test_get_hypervisor():
    assert hypervisor.GetHypervisorClass("fake") is hv_fake.FakeHypervisor
    assert hypervisor.GetHypervisorNames() == ["fake", "kvm"]
    with pytest.raises(errors.HypervisorError, match="'xen-pvm'"):
        hypervisor.GetHypervisorClass("xen-pvm")


def test_live_migration_unsafe_only_under_tcg():
    kvm = hypervisor.GetHypervisorClass("kvm")
    params = kvm.GetDefaults()
    for flag in ("", hypervisors.HT_KVM_DISABLED):
        reason = kvm.LiveMigrationUnsafe({**params, "kvm_flag": flag})
        assert reason and "kvm_flag=%s" % flag in reason
    assert kvm.LiveMigrationUnsafe(
        {**params, "kvm_flag": hypervisors.HT_KVM_ENABLED}) is None
    fake = hypervisor.GetHypervisorClass("fake")
    assert fake.LiveMigrationUnsafe(fake.GetDefaults()) is None


def test_parameter_table_derivations():
    cls = hv_fake.FakeHypervisor
    for name, spec in cls.PARAMETERS.items():
        assert isinstance(spec, ParamSpec)
        assert spec.check(spec.default), name
        assert spec.doc
    assert cls.GetDefaults() == {"migration_mode": "live"}
    # A fresh copy each time
    cls.GetDefaults()["migration_mode"] = "x"
    assert cls.GetDefaults() == {"migration_mode": "live"}


def test_syntax_checks_name_the_parameter():
    cls = hv_fake.FakeHypervisor
    cls.CheckParameterOverrides({})
    cls.CheckParameterSyntax({"migration_mode": "non-live"})
    with pytest.raises(errors.HypervisorError, match="'kernel_path'"):
        cls.CheckParameterOverrides({"kernel_path": "/boot/vmlinuz"})
    with pytest.raises(errors.HypervisorError, match="'migration_mode'"):
        cls.CheckParameterOverrides({"migration_mode": "fast"})
    with pytest.raises(errors.HypervisorError, match="'migration_mode'"):
        cls.CheckParameterOverrides({"migration_mode": None})
    with pytest.raises(errors.HypervisorError, match="missing.*migration"):
        cls.CheckParameterSyntax({})


def test_node_value_check(tmp_path):
    class _FileHv(hv_fake.FakeHypervisor):
        PARAMETERS = dict(hv_fake.FakeHypervisor.PARAMETERS,
                          kernel_path=ParamSpec("", ht.TString, "Kernel"))
        NODE_CHECKS = {"kernel_path": hv_base.FileExistsCheck}
    hv = _FileHv(root_dir=str(tmp_path))
    kernel = tmp_path / "vmlinuz"
    kernel.write_text("k")
    hv.ValidateParameters({"migration_mode": "live",
                           "kernel_path": str(kernel)})
    with pytest.raises(errors.HypervisorError,
                       match="'kernel_path'.*does not exist"):
        hv.ValidateParameters({"migration_mode": "live",
                               "kernel_path": str(tmp_path / "nope")})


# Filling ----

def test_cluster_hvparams_filled_and_checked():
    cluster = _Cluster(hvparams={"fake": {}})
    assert cluster.hvparams == {"fake": {"migration_mode": "live"}}
    cluster.Validate()
    cluster.hvparams["fake"]["bogus"] = 1
    with pytest.raises(errors.ConfigurationError, match="'bogus'"):
        cluster.Validate()
    cluster.hvparams["fake"] = {"migration_mode": None}
    with pytest.raises(errors.ConfigurationError, match="migration_mode"):
        cluster.Validate()


def test_instance_hvparams_checked():
    inst = _Instance(hvparams={"bogus": "1"})
    inst.UpgradeConfig()
    with pytest.raises(errors.ConfigurationError, match="'bogus'"):
        inst.Validate()


def test_fill_hv_and_be():
    cluster = _Cluster(hvparams={"fake": {"migration_mode": "non-live"}},
                       os_hvp={"debootstrap": {"fake": {}}})
    inst = _Instance(beparams={"maxmem": 512})
    inst.UpgradeConfig()
    assert cluster.FillHV(inst) == {"migration_mode": "non-live"}
    assert cluster.FillHV(inst, skip_globals=True) == {}
    assert cluster.FillBE(inst)["maxmem"] == 512
    assert cluster.FillBE(inst)["vcpus"] == 1
    # A hypervisor missing from the cluster still gets complete defaults
    cluster.hvparams = {}
    assert cluster.FillHV(inst) == {"migration_mode": "live"}


def test_instance_rpc_dict_is_filled():
    cluster = _Cluster()
    inst = _Instance(beparams={"vcpus": 2},
                     nics=[objects.NIC(mac="aa:00:00:00:00:01")])
    inst.UpgradeConfig()
    data = cluster.InstanceRpcDict(inst, beparams={"maxmem": 64})
    assert data["hvparams"] == {"migration_mode": "live"}
    assert data["beparams"] == dict(objects.BEC_DEFAULTS, vcpus=2, maxmem=64)
    assert data["nics"][0]["nicparams"] == objects.NICC_DEFAULTS
    # The instance itself keeps only its overrides
    assert inst.beparams == {"vcpus": 2}


def test_updated_hv_params_reset_semantics():
    current = {"migration_mode": "live"}
    new = hypervisors.UpdatedHvParams("fake", current,
                                      {"migration_mode": "non-live"})
    assert new == {"migration_mode": "non-live"}
    # Customised values stay until reset
    assert hypervisors.UpdatedHvParams("fake", new, {}) == new
    for reset in ("default", None):
        assert hypervisors.UpdatedHvParams(
            "fake", new, {"migration_mode": reset}) == current
    with pytest.raises(errors.OpPrereqError, match="'bogus'"):
        hypervisors.UpdatedHvParams("fake", current, {"bogus": "1"})
    with pytest.raises(errors.OpPrereqError, match="migration_mode"):
        hypervisors.UpdatedHvParams("fake", current,
                                    {"migration_mode": "warp"})
    with pytest.raises(errors.OpPrereqError, match="'xen-pvm'"):
        hypervisors.UpdatedHvParams("xen-pvm", {}, {})


# The fake hypervisor on real files ----

def _FilledInstance(name="inst1.example.com", maxmem=256, vcpus=2):
    inst = _Instance(name=name, beparams={"maxmem": maxmem, "vcpus": vcpus})
    inst.UpgradeConfig()
    return objects.Instance.FromDict(_Cluster().InstanceRpcDict(inst))


def test_fake_lifecycle(tmp_path):
    hv = hv_fake.FakeHypervisor(root_dir=str(tmp_path))
    inst = _FilledInstance()
    assert hv.ListInstances() == []
    assert hv.GetInstanceInfo(inst.name) is None
    hv.StartInstance(inst, [], False)
    assert (tmp_path / inst.name).read_text() == "0\n256\n2\n"
    assert hv.ListInstances() == [inst.name]
    assert hv.GetInstanceInfo(inst.name) == (
        inst.name, 0, 256, 2, constants.HV_INSTANCE_RUNNING, 0.0)
    with pytest.raises(errors.HypervisorError, match="already running"):
        hv.StartInstance(inst, [], False)
    hv.RebootInstance(inst)
    hv.BalloonInstanceMemory(inst, 128)
    assert hv.GetInstanceInfo(inst.name)[2] == 128
    hv.StopInstance(inst)
    assert not (tmp_path / inst.name).exists()
    with pytest.raises(errors.HypervisorError, match="not running"):
        hv.StopInstance(inst)
    with pytest.raises(errors.HypervisorError, match="not running"):
        hv.RebootInstance(inst)
    with pytest.raises(errors.HypervisorError, match="Invalid instance"):
        hv.GetInstanceInfo("../etc")
    assert hv.Verify() is None


def test_fake_node_info_accounts_memory(tmp_path):
    hv = hv_fake.FakeHypervisor(root_dir=str(tmp_path))
    before = hv.GetNodeInfo()
    hv.StartInstance(_FilledInstance("a", maxmem=1024), [], False)
    hv.StartInstance(_FilledInstance("b", maxmem=512), [], False)
    after = hv.GetNodeInfo()
    assert after["memory_total"] == before["memory_total"]
    # The host's free memory moves a little between the two readings
    assert abs(before["memory_free"] - after["memory_free"] - 1536) < 256
    assert after["cpu_total"] >= 1


def test_fake_console_and_migration_status(tmp_path):
    hv = hv_fake.FakeHypervisor(root_dir=str(tmp_path))
    inst = _FilledInstance()
    console = hv.GetInstanceConsole(inst, None, None, inst.hvparams,
                                    inst.beparams)
    assert console["kind"] == constants.CONS_MESSAGE
    assert "not available for fake" in console["message"]
    assert hv.GetMigrationStatus(inst) == {"status": "completed"}


# RPCs through real noded (the noded_cluster fixture) ----

def _StateFile(node, name):
    return node.Path(os.path.join(pathutils.FAKE_HV_DIR, name))


def _RpcInstance(name, maxmem=300):
    inst = _Instance(name=name, beparams={"maxmem": maxmem})
    inst.UpgradeConfig()
    return _Cluster().InstanceRpcDict(inst)


_ALL_HVP = {"fake": {"migration_mode": "live"}}


def test_rpc_lifecycle(noded_cluster, noded_runner):
    node = noded_cluster.nodes[0]
    name = "rpc-life.example.com"
    inst = _RpcInstance(name)
    disk = {"dev_type": "file", "size": 10, "logical_id": ["loop", "/d"]}
    noded_runner.call_instance_start(node.name, inst, [[disk, "/dev/null"]],
                                     False).Raise("start")
    with open(_StateFile(node, name), encoding="ascii") as fobj:
        assert fobj.read() == "0\n300\n1\n"
    # Starting again is a no-op
    noded_runner.call_instance_start(node.name, inst, [], False).Raise("start")
    info = noded_runner.call_instance_info(node.name, name, "fake",
                                           _ALL_HVP["fake"])
    assert info.payload == {"memory": 300, "vcpus": 1, "state": 0,
                            "time": 0.0}
    names = noded_runner.call_instance_list([node.name], ["fake"], _ALL_HVP)
    assert name in names[node.name].payload
    all_info = noded_runner.call_all_instances_info([node.name], ["fake"],
                                                    _ALL_HVP)[node.name].payload
    assert all_info[name]["memory"] == 300
    node_info = noded_runner.call_node_info([node.name], [], ["fake"])
    assert node_info[node.name].payload["hv"]["fake"]["memory_free"] <= \
        node_info[node.name].payload["memory_free"]

    noded_runner.call_instance_balloon_memory(node.name, inst,
                                              200).Raise("bal")
    assert noded_runner.call_instance_info(node.name, name, "fake",
                                           None).payload["memory"] == 200
    for reboot_type in ("soft", "hard"):
        noded_runner.call_instance_reboot(node.name, inst, reboot_type,
                                          10).Raise(reboot_type)
        assert os.path.exists(_StateFile(node, name))
    # A hard reboot restarts with the configured memory
    assert noded_runner.call_instance_info(node.name, name, "fake",
                                           None).payload["memory"] == 300
    result = noded_runner.call_instance_reboot(node.name, inst, "full", 10)
    assert "Invalid reboot_type" in result.fail_msg
    console = noded_runner.call_instance_console_info(
        node.name, inst, {"name": node.name, "primary_ip": node.ip,
                          "uuid": "n1"}, None).payload
    assert console["kind"] == "msg"

    noded_runner.call_instance_shutdown(node.name, inst, 5).Raise("stop")
    assert not os.path.exists(_StateFile(node, name))
    assert noded_runner.call_instance_info(node.name, name, "fake",
                                           None).payload == {}
    # Stopping a stopped instance succeeds; rebooting it does not
    noded_runner.call_instance_shutdown(node.name, inst, 5).Raise("stop again")
    result = noded_runner.call_instance_reboot(node.name, inst, "soft", 5)
    assert "not running" in result.fail_msg


def test_rpc_refuses_unfilled_instance(noded_cluster, noded_runner):
    node = noded_cluster.nodes[0]
    inst = _Instance(name="raw.example.com")
    inst.UpgradeConfig()
    result = noded_runner.call_instance_start(node.name, inst.ToDict(), [],
                                              False)
    assert "parameter(s) missing" in result.fail_msg
    data = _RpcInstance("bad.example.com")
    data["hvparams"]["bogus"] = 1
    result = noded_runner.call_instance_start(node.name, data, [], False)
    assert "'bogus'" in result.fail_msg
    assert not os.path.exists(_StateFile(node, "bad.example.com"))


def test_rpc_validate_params(noded_cluster, noded_runner):
    names = [node.name for node in noded_cluster.nodes]
    results = noded_runner.call_hypervisor_validate_params(
        names, "fake", {"migration_mode": "non-live"})
    for name in names:
        results[name].Raise("validate")
    results = noded_runner.call_hypervisor_validate_params(
        names, "fake", {"migration_mode": "fast"})
    assert all("migration_mode" in results[name].fail_msg for name in names)


def test_rpc_migration(noded_cluster, noded_runner):
    source, target = noded_cluster.nodes
    name = "rpc-mig.example.com"
    inst = _RpcInstance(name)
    noded_runner.call_instance_start(source.name, inst, [],
                                     False).Raise("start")
    info = noded_runner.call_migration_info(source.name, inst).payload
    devices = [[{"dev_type": constants.DT_SHARED_FILE, "size": 16,
                 "logical_id": ["loop", "/shared/rpc-mig/disk0"],
                 "uuid": "disk-0", "mode": "rw"},
                "/shared/rpc-mig/disk0"]]
    noded_runner.call_accept_instance(target.name, inst, info, target.ip,
                                      devices).Raise("accept")
    noded_runner.call_instance_migrate(source.name, "c.example.com", inst,
                                       target.ip, True).Raise("migrate")
    status = noded_runner.call_instance_get_migration_status(source.name,
                                                             inst).payload
    assert status["status"] == constants.HV_MIGRATION_COMPLETED
    noded_runner.call_finalize_migration_dst(target.name, inst, info,
                                             True).Raise("dst")
    noded_runner.call_finalize_migration_src(source.name, inst, True,
                                             True).Raise("src")
    assert not os.path.exists(_StateFile(source, name))
    assert os.path.exists(_StateFile(target, name))
    # The target keeps the devices for a hard reboot; the source forgets
    with open(target.Path(os.path.join(pathutils.DISK_LINKS_DIR, name)),
              encoding="utf-8") as fobj:
        assert json.load(fobj) == devices
    assert not os.path.exists(source.Path(
        os.path.join(pathutils.DISK_LINKS_DIR, name)))
    # The target now runs it: accepting it there again is refused
    result = noded_runner.call_accept_instance(target.name, inst, info,
                                               target.ip, [])
    assert "already running" in result.fail_msg
    # Migrating from a node that doesn't run it is refused
    result = noded_runner.call_instance_migrate(source.name, "c.example.com",
                                                inst, target.ip, True)
    assert "not running" in result.fail_msg
    noded_runner.call_instance_shutdown(target.name, inst, 5).Raise("stop")
