"""Tests for ganeti.config: the configuration store and its file."""

import hashlib
import json
import os
import stat
import threading

import pytest

from ganeti import config, constants, errors, netutils, objects, ssconf
from ganeti.config import serialization


def _Dump(data):
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


@pytest.fixture
def cfg_file(tmp_path):
    path = str(tmp_path / "config.data")
    cluster = objects.Cluster(cluster_name="cluster.example.com",
                              master_ip="192.0.2.1", tags=["prod"],
                              uid_pool=[(1000, 1010), (2000, 2000)])
    master = objects.Node(name="node1.example.com", primary_ip="192.0.2.10",
                          secondary_ip="198.51.100.10")
    config.InitConfig(constants.CONFIG_VERSION, cluster, master,
                      cfg_file=path)
    return path


@pytest.fixture
def cfg(cfg_file):
    writer = config.ConfigWriter(cfg_file, accept_foreign=True)
    group = writer.LookupNodeGroup(None)
    for idx in (2, 10):
        writer.AddNode(objects.Node(name="node%d.example.com" % idx,
                                    primary_ip="192.0.2.%d" % (10 + idx),
                                    group=group, offline=idx == 10))
    return writer


def _NewInstance(cfg, name, node_name="node2.example.com", **kwargs):
    node = cfg.GetNodeInfoByName(node_name)
    # A MAC of its own: the config refuses one already in use
    mac = "aa:00:00:%02x:%02x:%02x" % tuple(
        hashlib.sha1(name.encode()).digest()[:3])
    inst = objects.Instance(name=name, primary_node=node.uuid,
                            hypervisor="fake", os="debootstrap",
                            nics=[objects.NIC(mac=mac)], **kwargs)
    disk = objects.Disk(dev_type=constants.DT_FILE, size=1024,
                        logical_id=["loop", "/srv/%s/disk0" % name],
                        nodes=[node.uuid])
    cfg.AddInstance(inst, [disk])
    return inst


def _FileState(path):
    with open(path, "rb") as fobj:
        return fobj.read()


def test_init_config(cfg_file):
    with open(cfg_file) as fobj:
        raw = json.load(fobj)
    assert set(raw) == {"version", "cluster", "nodes", "nodegroups",
                        "instances", "networks", "disks", "filters",
                        "maintenance", "serial_no", "ctime", "mtime"}
    assert raw["maintenance"]["roundDelay"] == \
        constants.MAINTD_DEFAULT_ROUND_DELAY
    assert raw["maintenance"]["balance"] is False
    assert raw["version"] == constants.CONFIG_VERSION
    assert raw["serial_no"] == 1
    (node_uuid, node), = raw["nodes"].items()
    (group_uuid, group), = raw["nodegroups"].items()
    assert node["uuid"] == node_uuid and group["uuid"] == group_uuid
    assert node["group"] == group_uuid
    assert node["master_candidate"] is True
    assert group["name"] == constants.DEFAULT_GROUP_NAME
    assert raw["cluster"]["master_node"] == node_uuid
    assert raw["cluster"]["candidate_pool_size"] == 10
    assert raw["cluster"]["uid_pool"] == [[1000, 1010], [2000, 2000]]
    assert stat.S_IMODE(os.stat(cfg_file).st_mode) == \
        constants.CONFIG_FILE_MODE
    with pytest.raises(errors.ConfigurationError, match="exists"):
        config.InitConfig(constants.CONFIG_VERSION, objects.Cluster(),
                          objects.Node(), cfg_file=cfg_file)


def test_init_config_validates(tmp_path):
    path = str(tmp_path / "config.data")
    with pytest.raises(errors.ConfigurationError, match="master_ip"):
        config.InitConfig(constants.CONFIG_VERSION,
                          objects.Cluster(cluster_name="c",
                                          master_ip="not-an-ip"),
                          objects.Node(name="n", primary_ip="192.0.2.1"),
                          cfg_file=path)
    assert not os.path.exists(path)


def test_foreign_master_and_version(cfg_file, tmp_path):
    if netutils.GetMyName() != "node1.example.com":
        with pytest.raises(errors.ConfigurationError, match="foreign"):
            config.ConfigWriter(cfg_file)
    path = str(tmp_path / "own.data")
    config.InitConfig(constants.CONFIG_VERSION,
                      objects.Cluster(cluster_name="c", master_ip="192.0.2.1"),
                      objects.Node(name=netutils.GetMyName(),
                                   primary_ip="192.0.2.2"), cfg_file=path)
    assert config.ConfigWriter(path).GetMasterNodeName() == \
        netutils.GetMyName()
    with open(cfg_file) as fobj:
        raw = json.load(fobj)
    raw["version"] = 2160000
    with open(cfg_file, "w") as fobj:
        json.dump(raw, fobj)
    with pytest.raises(errors.ConfigVersionMismatch):
        config.ConfigWriter(cfg_file, accept_foreign=True)
    with open(cfg_file, "w") as fobj:
        fobj.write("{not json")
    with pytest.raises(errors.ConfigurationError, match="JSON"):
        config.ConfigWriter(cfg_file, accept_foreign=True)


def test_readers(cfg):
    inst = _NewInstance(cfg, "web1.example.com")
    master = cfg.GetMasterNode()
    assert cfg.GetMasterNodeName() == "node1.example.com"
    assert cfg.GetMasterNodeInfo().uuid == master
    assert cfg.GetClusterName() == "cluster.example.com"
    assert cfg.GetClusterInfo().master_node == master
    node2 = cfg.GetNodeInfoByName("node2.example.com")
    node10 = cfg.GetNodeInfoByName("node10.example.com")
    assert set(cfg.GetNodeList()) == {master, node2.uuid, node10.uuid}
    assert set(cfg.GetOnlineNodeList()) == {master, node2.uuid}
    assert cfg.GetMasterCandidateUuids() == [master]
    assert cfg.GetNodeNames([node2.uuid, master]) == [
        "node2.example.com", "node1.example.com"]
    assert cfg.GetNodeInfo("nonexistent") is None
    assert cfg.GetNodeInfoByName("nonexistent") is None
    assert cfg.GetInstanceList() == [inst.uuid]
    assert cfg.GetInstanceInfo(inst.uuid).name == "web1.example.com"
    assert cfg.GetInstanceInfoByName("web1.example.com").uuid == inst.uuid
    assert cfg.GetInstanceInfo("nonexistent") is None
    assert list(cfg.GetAllInstancesInfo()) == [inst.uuid]
    assert cfg.GetInstanceNodes(inst.uuid) == [node2.uuid]
    assert cfg.GetInstanceSecondaryNodes(inst.uuid) == []
    assert cfg.GetInstanceDiskTemplate(inst.uuid) == constants.DT_FILE
    assert [d.uuid for d in cfg.GetInstanceDisks(inst.uuid)] == inst.disks
    assert cfg.GetNodeInstances(node2.uuid) == ([inst.uuid], [])
    assert set(cfg.GetAllDisksInfo()) == set(inst.disks)
    group = cfg.GetNodeGroup(cfg.LookupNodeGroup(None))
    assert sorted(group.members) == sorted(cfg.GetNodeList())
    assert cfg.LookupNodeGroup("default") == group.uuid
    with pytest.raises(errors.OpPrereqError):
        cfg.LookupNodeGroup("nonexistent")
    assert cfg.VerifyConfig() == []


def test_readers_return_copies(cfg):
    inst = _NewInstance(cfg, "web1.example.com")
    mac = inst.nics[0].mac
    copy = cfg.GetInstanceInfo(inst.uuid)
    copy.beparams["maxmem"] = 4096
    copy.nics[0].mac = "aa:00:00:00:00:ff"
    cluster = cfg.GetClusterInfo()
    cluster.tags.add("changed")
    cluster.hvparams["fake"]["x"] = 1
    group = cfg.GetAllNodeGroupsInfo()[cfg.LookupNodeGroup(None)]
    group.members.append("bogus")
    assert cfg.GetInstanceInfo(inst.uuid).beparams == {}
    assert cfg.GetInstanceInfo(inst.uuid).nics[0].mac == mac
    assert cfg.GetClusterInfo().GetTags() == {"prod"}
    assert cfg.GetClusterInfo().hvparams == {
        "fake": {"migration_mode": "live"}}
    assert "bogus" not in cfg.GetNodeGroup(group.uuid).members


def test_view_is_one_uncopied_configuration(cfg):
    for name in ("web10.example.com", "web9.example.com", "db1.example.com"):
        _NewInstance(cfg, name)
    view = cfg.GetView()
    names = [inst.name for inst in view.InstancesByName()]
    assert names == ["db1.example.com", "web9.example.com",
                     "web10.example.com"]
    # The configuration's own objects, behind read-only mappings
    assert view.InstancesByName() is view.InstancesByName()
    inst = view.InstancesByName()[0]
    assert view.instances[inst.uuid] is inst
    assert view.InstanceDisks(inst)[0] is view.disks[inst.disks[0]]
    assert view.cluster.cluster_name == "cluster.example.com"
    with pytest.raises(TypeError):
        view.instances["x"] = inst
    # Changes go to a new configuration; the view keeps showing its own
    changed = cfg.GetInstanceInfo(inst.uuid)
    changed.admin_state = objects.ADMINST_UP
    cfg.Update(changed)
    _NewInstance(cfg, "app1.example.com")
    assert view.instances[inst.uuid].admin_state == objects.ADMINST_DOWN
    assert len(view.InstancesByName()) == len(view.instances) == 3
    new_view = cfg.GetView()
    assert new_view.instances[inst.uuid].admin_state == objects.ADMINST_UP
    assert new_view.InstancesByName()[0].name == "app1.example.com"


def test_expand_names(cfg):
    inst = _NewInstance(cfg, "web1.example.com")
    _NewInstance(cfg, "web1.other.com")
    _NewInstance(cfg, "db1.example.com")
    assert cfg.ExpandInstanceName(inst.uuid) == inst.uuid
    assert cfg.ExpandInstanceName("web1.example.com") == inst.uuid
    assert cfg.ExpandInstanceName("WEB1.EXAMPLE.COM") == inst.uuid
    assert cfg.ExpandInstanceName("web1.example") == inst.uuid
    assert cfg.ExpandInstanceName("web1") is None  # ambiguous
    assert cfg.ExpandInstanceName("db1") is not None
    assert cfg.ExpandInstanceName("nonexistent") is None
    assert cfg.ExpandNodeName("node2") == \
        cfg.GetNodeInfoByName("node2.example.com").uuid
    assert cfg.ExpandNodeName("node") is None


def test_update_serials_and_file(cfg, cfg_file):
    inst = _NewInstance(cfg, "web1.example.com")
    serial = cfg.GetConfigSerial()
    copy = cfg.GetInstanceInfo(inst.uuid)
    assert copy.serial_no == 1
    old_mtime = copy.mtime
    copy.beparams["maxmem"] = 512
    cfg.Update(copy)
    assert copy.serial_no == 2 and copy.mtime >= old_mtime
    stored = cfg.GetInstanceInfo(inst.uuid)
    assert stored == copy
    assert cfg.GetConfigSerial() == serial + 1
    with open(cfg_file) as fobj:
        raw = json.load(fobj)
    assert raw["serial_no"] == serial + 1
    assert raw["instances"][inst.uuid]["beparams"] == {"maxmem": 512}
    assert raw["instances"][inst.uuid]["serial_no"] == 2
    # a copy read before the update is stale now
    stale = inst.Copy()
    stale.serial_no = 1
    with pytest.raises(errors.ConfigurationError, match="modified since"):
        cfg.Update(stale)
    cluster = cfg.GetClusterInfo()
    cluster.AddTag("new-tag")
    cfg.Update(cluster)
    assert cfg.GetClusterInfo().GetTags() == {"prod", "new-tag"}
    assert cfg.GetClusterInfo().serial_no == cluster.serial_no == 2
    cfg.WriteConfig()
    assert cfg.GetConfigSerial() == serial + 3
    with pytest.raises(errors.ConfigurationError, match="not in the"):
        cfg.Update(objects.Node(name="ghost", uuid="ghost"))


def test_file_is_plain_dump_and_reloads(cfg, cfg_file):
    insts = [_NewInstance(cfg, "inst%d.example.com" % i) for i in range(5)]
    copy = cfg.GetInstanceInfo(insts[2].uuid)
    copy.admin_state = "up"
    copy.nics[0].ip = "10.0.0.1"
    cfg.Update(copy)
    cfg.RemoveInstance(insts[0].uuid)
    node = cfg.GetNodeInfoByName("node10.example.com")
    node.drained = True
    cfg.Update(node)
    text = _FileState(cfg_file).decode("ascii")
    raw = json.loads(text)
    assert _Dump(raw) == text
    reloaded = config.ConfigWriter(cfg_file, accept_foreign=True)
    assert reloaded.GetAllInstancesInfo() == cfg.GetAllInstancesInfo()
    assert reloaded.GetAllNodesInfo() == cfg.GetAllNodesInfo()
    assert reloaded.GetAllDisksInfo() == cfg.GetAllDisksInfo()
    assert reloaded.GetAllNodeGroupsInfo() == cfg.GetAllNodeGroupsInfo()
    assert reloaded.GetClusterInfo() == cfg.GetClusterInfo()
    assert reloaded.GetConfigSerial() == cfg.GetConfigSerial()
    assert reloaded.GetSsconfValues() == cfg.GetSsconfValues()
    full = objects.ConfigData.FromDict(json.loads(text))
    assert serialization.SerializeConfig(full) == text


def test_maintenance_section(cfg, cfg_file):
    """maintd's state is part of config.data: written, reloaded, checked;
    a config.data from before maintd gets the default section."""
    serial = cfg.GetConfigSerial()
    incident = {"id": "i1", "node": "n1", "repair-status": "noted"}
    cfg.UpdateMaintenance({"incidents": [incident], "jobs": [3, 4]})
    cfg.UpdateMaintenance({"roundDelay": 60, "balance": True})
    assert cfg.GetConfigSerial() == serial + 2
    maint = cfg.GetMaintenance()
    assert (maint.incidents, maint.jobs) == ([incident], [3, 4])
    assert (maint.roundDelay, maint.balance) == (60, True)
    assert maint.serial_no == 3
    text = _FileState(cfg_file).decode("ascii")
    raw = json.loads(text)
    assert _Dump(raw) == text
    assert raw["maintenance"]["incidents"] == [incident]
    reloaded = config.ConfigWriter(cfg_file, accept_foreign=True)
    assert reloaded.GetMaintenance() == maint
    with pytest.raises(errors.ConfigurationError):
        cfg.UpdateMaintenance({"roundDelay": -1})
    with pytest.raises(errors.ProgrammerError):
        cfg.UpdateMaintenance({"nonsense": 1})
    assert _FileState(cfg_file).decode("ascii") == text
    del raw["maintenance"]
    with open(cfg_file, "w") as fobj:
        fobj.write(_Dump(raw))
    old = config.ConfigWriter(cfg_file, accept_foreign=True)
    assert old.GetMaintenance().roundDelay == \
        constants.MAINTD_DEFAULT_ROUND_DELAY
    assert old.GetMaintenance().incidents == []


def test_only_changed_objects_are_encoded(cfg, monkeypatch):
    insts = [_NewInstance(cfg, "inst%d.example.com" % i) for i in range(20)]
    calls = []
    orig = objects.Instance.ToDict

    def counting(self):
        calls.append(self.name)
        return orig(self)

    monkeypatch.setattr(objects.Instance, "ToDict", counting)
    copy = cfg.GetInstanceInfo(insts[7].uuid)
    copy.admin_state = "up"
    cfg.Update(copy)
    assert calls == ["inst7.example.com"]
    calls.clear()
    cfg.RemoveInstance(insts[3].uuid)
    cfg.WriteConfig()
    assert calls == []


def _AssertUnchanged(cfg, cfg_file, before_bytes, before_serial):
    assert _FileState(cfg_file) == before_bytes
    assert cfg.GetConfigSerial() == before_serial
    assert not [name for name in os.listdir(os.path.dirname(cfg_file))
                if name.startswith(".")]


def test_failed_validation_changes_nothing(cfg, cfg_file):
    inst = _NewInstance(cfg, "web1.example.com")
    other = _NewInstance(cfg, "web2.example.com")
    before = _FileState(cfg_file)
    serial = cfg.GetConfigSerial()
    node2 = cfg.GetNodeInfoByName("node2.example.com")
    group = cfg.LookupNodeGroup(None)
    master = cfg.GetMasterNode()
    stored = cfg.GetInstanceInfo(inst.uuid)

    def bad_updates():
        dup = cfg.GetInstanceInfo(inst.uuid)
        dup.name = "web2.example.com"
        yield "already used", lambda: cfg.Update(dup)
        orphan = cfg.GetInstanceInfo(inst.uuid)
        orphan.primary_node = "no-such-node"
        yield "does not exist", lambda: cfg.Update(orphan)
        badtype = cfg.GetInstanceInfo(inst.uuid)
        badtype.admin_state = "sideways"
        yield "admin_state", lambda: cfg.Update(badtype)
        steal = cfg.GetInstanceInfo(inst.uuid)
        steal.disks = list(other.disks)
        yield "already used by instance", lambda: cfg.Update(steal)
        missing_disk = cfg.GetInstanceInfo(inst.uuid)
        missing_disk.disks = ["no-such-disk"]
        yield "does not exist", lambda: cfg.Update(missing_disk)
        yield "master node", lambda: cfg.RemoveNode(master)
        yield "primary node", lambda: cfg.RemoveNode(node2.uuid)
        yield "still contains", lambda: cfg.RemoveNodeGroup(group)
        yield "has no disk", lambda: cfg.RemoveInstanceDisk(
            "no-such-instance", inst.disks[0])
        yield "already used", lambda: cfg.AddNode(objects.Node(
            name="node2.example.com", primary_ip="192.0.2.99", group=group))
        yield "group", lambda: cfg.AddNode(objects.Node(
            name="node9.example.com", primary_ip="192.0.2.99",
            group="no-such-group"))
        yield "already exists", lambda: cfg.AddNode(objects.Node(
            name="node9.example.com", primary_ip="192.0.2.99", group=group,
            uuid=node2.uuid))
        yield "cluster", lambda: cfg.AddNode(objects.Node(
            name="node9.example.com", primary_ip="192.0.2.99", group=group,
            uuid=cfg.GetClusterInfo().uuid))
        bad_cluster = cfg.GetClusterInfo()
        bad_cluster.master_node = "no-such-node"
        yield "Master node", lambda: cfg.Update(bad_cluster)
        bad_cluster2 = cfg.GetClusterInfo()
        bad_cluster2.enabled_hypervisors = ["kvm"]
        yield "no parameters", lambda: cfg.Update(bad_cluster2)
        yield "action", lambda: cfg.SetFilter(
            objects.FilterRule(action="DROP"))
        yield "not used by", lambda: cfg.AddInstance(
            objects.Instance(name="x", primary_node=node2.uuid,
                             hypervisor="fake", disks=inst.disks),
            [objects.Disk(dev_type="file", size=1, logical_id=["a", "b"])])

    for message, action in bad_updates():
        with pytest.raises(errors.ConfigurationError) as info:
            action()
        assert message.lower() in str(info.value).lower(), \
            (message, str(info.value))
        _AssertUnchanged(cfg, cfg_file, before, serial)
    assert cfg.GetInstanceInfo(inst.uuid) == stored
    assert cfg.GetInstanceInfoByName("web2.example.com").uuid == other.uuid
    assert cfg.GetNodeInfoByName("node9.example.com") is None
    assert cfg.VerifyConfig() == []


def test_failed_rename_keeps_old_file(cfg, cfg_file, monkeypatch):
    inst = _NewInstance(cfg, "web1.example.com")
    before = _FileState(cfg_file)
    serial = cfg.GetConfigSerial()
    real_rename = os.rename

    def crashing_rename(src, dst):
        if dst == cfg_file:
            raise OSError(5, "simulated crash")
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", crashing_rename)
    copy = cfg.GetInstanceInfo(inst.uuid)
    copy.admin_state = "up"
    with pytest.raises(errors.ConfigurationError, match="simulated crash"):
        cfg.Update(copy)
    _AssertUnchanged(cfg, cfg_file, before, serial)
    assert cfg.GetInstanceInfo(inst.uuid).admin_state == "down"
    with pytest.raises(errors.ConfigurationError):
        cfg.RemoveInstance(inst.uuid)
    assert cfg.GetInstanceInfo(inst.uuid) is not None
    monkeypatch.setattr(os, "rename", real_rename)
    # the failed writes must not have left stale cached fragments behind
    copy = cfg.GetInstanceInfo(inst.uuid)
    copy.nics[0].ip = "10.1.1.1"
    cfg.Update(copy)
    raw = json.loads(_FileState(cfg_file))
    assert raw["instances"][inst.uuid]["admin_state"] == "down"
    assert raw["instances"][inst.uuid]["nics"][0]["ip"] == "10.1.1.1"
    assert raw["serial_no"] == serial + 1


def test_instance_disks(cfg):
    inst = _NewInstance(cfg, "web1.example.com")
    first = inst.disks[0]
    assert cfg.GetDiskInfo(first).iv_name == "disk/0"
    node = cfg.GetNodeInfoByName("node2.example.com").uuid
    new_disk = objects.Disk(dev_type="file", size=2048, nodes=[node],
                            logical_id=["loop", "/srv/x/disk-new"])
    cfg.AddInstanceDisk(inst.uuid, new_disk, idx=0)
    disks = cfg.GetInstanceDisks(inst.uuid)
    assert [d.uuid for d in disks] == [new_disk.uuid, first]
    assert [d.iv_name for d in disks] == ["disk/0", "disk/1"]
    assert disks[1].serial_no == 2
    assert cfg.GetInstanceInfo(inst.uuid).serial_no == 2
    cfg.RemoveInstanceDisk(inst.uuid, new_disk.uuid)
    disks = cfg.GetInstanceDisks(inst.uuid)
    assert [(d.uuid, d.iv_name) for d in disks] == [(first, "disk/0")]
    assert cfg.GetDiskInfo(new_disk.uuid) is None
    cfg.RemoveInstance(inst.uuid)
    assert cfg.GetAllDisksInfo() == {}
    assert cfg.GetInstanceInfoByName("web1.example.com") is None
    # the name is free again
    _NewInstance(cfg, "web1.example.com")


def test_nodes_groups_networks_filters(cfg):
    group = objects.NodeGroup(name="rack2", members=["ignored"])
    cfg.AddNodeGroup(group)
    assert group.uuid and group.serial_no == 1
    assert cfg.GetNodeGroup(group.uuid).members == []
    net = objects.Network(name="net1", network="203.0.113.0/24")
    cfg.AddNetwork(net)
    assert cfg.LookupNetwork("net1") == net.uuid
    assert cfg.GetNetwork(net.uuid).name == "net1"
    group = cfg.GetNodeGroup(group.uuid)
    group.networks = {net.uuid: {"link": "br-net1"}}
    cfg.Update(group)
    node = objects.Node(name="node3.example.com", primary_ip="192.0.2.13",
                        group=group.uuid)
    cfg.AddNode(node)
    assert cfg.GetNodeInfo(node.uuid).secondary_ip == "192.0.2.13"
    assert cfg.GetNodeGroup(group.uuid).members == [node.uuid]
    with pytest.raises(errors.ConfigurationError, match="connected"):
        cfg.RemoveNetwork(net.uuid)
    inst = _NewInstance(cfg, "web1.example.com",
                        node_name="node3.example.com")
    copy = cfg.GetInstanceInfo(inst.uuid)
    copy.nics[0].network = net.uuid
    cfg.Update(copy)
    cfg.RemoveInstance(inst.uuid)
    cfg.RemoveNode(node.uuid)
    group = cfg.GetNodeGroup(group.uuid)
    group.networks = {}
    cfg.Update(group)
    cfg.RemoveNetwork(net.uuid)
    cfg.RemoveNodeGroup(group.uuid)
    assert len(cfg.GetAllNodeGroupsInfo()) == 1

    rule = objects.FilterRule(priority=5, action="PAUSE",
                              predicates=[["opcode", ["=", "OP_ID",
                                                      "OP_TEST_DELAY"]]])
    cfg.SetFilter(rule)
    assert cfg.GetFilterRule(rule.uuid).action == "PAUSE"
    rule.action = ["RATE_LIMIT", 3]
    cfg.SetFilter(rule)
    assert list(cfg.GetFilterRules()) == [rule.uuid]
    assert cfg.GetFilterRule(rule.uuid).action == ["RATE_LIMIT", 3]
    cfg.RemoveFilter(rule.uuid)
    assert cfg.GetFilterRules() == {}
    with pytest.raises(errors.ConfigurationError):
        cfg.RemoveFilter(rule.uuid)


def test_ssconf_values(cfg):
    _NewInstance(cfg, "web10.example.com")
    _NewInstance(cfg, "web9.example.com")
    values = cfg.GetSsconfValues()
    group = cfg.GetNodeGroup(cfg.LookupNodeGroup(None))
    assert values == {
        "cluster_name": "cluster.example.com",
        "cluster_tags": "prod",
        "file_storage_dir": cfg.GetClusterInfo().file_storage_dir,
        "shared_file_storage_dir":
            cfg.GetClusterInfo().shared_file_storage_dir,
        "master_candidates": "node1.example.com",
        "master_candidates_ips": "192.0.2.10",
        "master_ip": "192.0.2.1",
        "master_netdev": constants.DEFAULT_MASTER_NETDEV,
        "master_netmask": "32",
        "master_node": "node1.example.com",
        "node_list": "node1.example.com\nnode2.example.com\n"
                     "node10.example.com",
        "node_primary_ips": "node1.example.com 192.0.2.10\n"
                            "node2.example.com 192.0.2.12\n"
                            "node10.example.com 192.0.2.20",
        "node_secondary_ips": "node1.example.com 198.51.100.10\n"
                              "node2.example.com 192.0.2.12\n"
                              "node10.example.com 192.0.2.20",
        "node_vm_capable": "node1.example.com=True\n"
                           "node2.example.com=True\n"
                           "node10.example.com=True",
        "offline_nodes": "node10.example.com",
        "online_nodes": "node1.example.com\nnode2.example.com",
        "primary_ip_family": "2",
        "instance_list": "web9.example.com\nweb10.example.com",
        "release_version": constants.RELEASE_VERSION,
        "hypervisor_list": "fake",
        "maintain_node_health": "False",
        "uid_pool": "1000-1010\n2000",
        "nodegroups": "%s default" % group.uuid,
        "networks": "",
        "enabled_user_shutdown": "False",
        # Every collector, on, at the default 5 s (in microseconds)
        "data_collectors": "\n".join(
            "%s True 5000000" % name
            for name in sorted(constants.DATA_COLLECTOR_NAMES)),
        "diagnose_data_collector_filename": "",
    }
    assert set(values) <= ssconf.VALID_KEYS
    # derived values follow the changes that affect them
    inst = cfg.GetInstanceInfoByName("web9.example.com")
    inst.name = "web1.example.com"
    cfg.Update(inst)
    assert cfg.GetSsconfValues()["instance_list"] == \
        "web1.example.com\nweb10.example.com"
    node = cfg.GetNodeInfoByName("node10.example.com")
    node.offline = False
    cfg.Update(node)
    assert cfg.GetSsconfValues()["offline_nodes"] == ""
    cluster = cfg.GetClusterInfo()
    cluster.maintain_node_health = True
    cfg.Update(cluster)
    assert cfg.GetSsconfValues()["maintain_node_health"] == "True"


def test_write_hooks(cfg_file):
    calls = []
    writer = config.ConfigWriter(cfg_file, accept_foreign=True)
    writer.AddWriteHook(lambda w, serial: calls.append(
        (w, serial, w.GetConfigSerial())))

    def failing(_, serial):
        raise RuntimeError("replication failed")

    writer.AddWriteHook(failing)
    feedback = []
    writer.WriteConfig(feedback_fn=feedback.append)
    assert calls == [(writer, 2, 2)]
    assert feedback and "replication failed" in feedback[0]
    with pytest.raises(errors.ConfigurationError):
        writer.RemoveNode(writer.GetMasterNode())
    assert len(calls) == 1
    offline = config.ConfigWriter(cfg_file, offline=True,
                                  accept_foreign=True)
    offline.AddWriteHook(lambda w, serial: calls.append(serial))
    offline.WriteConfig()
    assert len(calls) == 1


def test_concurrent_writers_and_readers(cfg, cfg_file):
    insts = [_NewInstance(cfg, "inst%d.example.com" % i) for i in range(8)]
    serial = cfg.GetConfigSerial()
    errors_seen = []
    stop = threading.Event()

    def writer(inst):
        try:
            for _ in range(5):
                copy = cfg.GetInstanceInfo(inst.uuid)
                copy.beparams["vcpus"] = copy.serial_no
                cfg.Update(copy)
        except Exception as err:  # pylint: disable=broad-except
            errors_seen.append(err)

    def reader():
        while not stop.wait(0.001):
            snapshot = cfg.GetAllInstancesInfo()
            if len(snapshot) != len(insts):
                errors_seen.append("inconsistent read")

    threads = [threading.Thread(target=writer, args=(inst,))
               for inst in insts]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for thread in readers + threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert errors_seen == []
    assert cfg.GetConfigSerial() == serial + 40
    for inst in insts:
        assert cfg.GetInstanceInfo(inst.uuid).serial_no == 6
    raw = json.loads(_FileState(cfg_file))
    assert raw["serial_no"] == serial + 40
    assert all(raw["instances"][inst.uuid]["beparams"] == {"vcpus": 5}
               for inst in insts)


def test_verify_reports_broken_file(cfg, cfg_file):
    inst = _NewInstance(cfg, "web1.example.com")
    raw = json.loads(_FileState(cfg_file))
    raw["instances"][inst.uuid]["disks"].append("missing-disk")
    raw["instances"][inst.uuid]["beparams"] = {"vcpus": -1}
    with open(cfg_file, "w") as fobj:
        json.dump(raw, fobj)
    broken = config.ConfigWriter(cfg_file, accept_foreign=True)
    problems = broken.VerifyConfig()
    assert any("missing-disk" in p for p in problems)
    assert any("vcpus" in p for p in problems)
    # unrelated writes still work on a configuration with old problems
    node = broken.GetNodeInfoByName("node2.example.com")
    node.drained = True
    broken.Update(node)


def test_network_ports_come_from_the_pool_and_go_back(cfg):
    first = cfg.AllocatePort()
    assert first == constants.FIRST_DRBD_PORT
    assert cfg.AllocatePort() == first + 1
    inst = _NewInstance(cfg, "p1.example.com", network_port=first)
    cfg.RemoveInstance(inst.uuid)
    assert cfg.GetClusterInfo().tcpudp_port_pool == [first]
    # A returned port is used again before a new one
    assert cfg.AllocatePort() == first
    assert cfg.AllocatePort() == first + 2
    cluster = cfg.GetClusterInfo()
    cluster.highest_used_port = constants.LAST_DRBD_PORT
    cfg.Update(cluster)
    with pytest.raises(errors.ConfigurationError,
                       match="highest used port is greater than 14999"):
        cfg.AllocatePort()


def test_removed_drbd_disk_gives_its_port_back(cfg):
    inst = _NewInstance(cfg, "p2.example.com")
    nodes = [cfg.GetInstanceInfo(inst.uuid).primary_node,
             cfg.GetNodeInfoByName("node1.example.com").uuid]
    port = cfg.AllocatePort()
    disk = objects.Disk(dev_type=constants.DT_DRBD8, size=16, nodes=nodes,
                        logical_id=nodes + [port, 0, 0, "secret"])
    cfg.AddInstanceDisk(inst.uuid, disk)
    assert port not in cfg.GetClusterInfo().tcpudp_port_pool
    cfg.RemoveInstanceDisk(inst.uuid, disk.uuid)
    assert cfg.GetClusterInfo().tcpudp_port_pool == [port]
