"""Tests for ganeti.objects: serialization, defaults, filling, tags."""

import json

import pytest

from ganeti import constants, errors, ht, objects
from ganeti.parameters import base


def _Cluster(**kwargs):
    values = dict(cluster_name="cluster.example.com", uuid="c-uuid",
                  master_node="n1-uuid", master_ip="192.0.2.1")
    values.update(kwargs)
    cluster = objects.Cluster(**values)
    cluster.UpgradeConfig()
    return cluster


def _Instance(**kwargs):
    values = dict(name="inst1.example.com", uuid="i-uuid",
                  primary_node="n1-uuid", hypervisor="fake",
                  os="debootstrap+default",
                  nics=[objects.NIC(mac="aa:00:00:11:22:33", uuid="nic-uuid")],
                  disks=["d-uuid"])
    values.update(kwargs)
    inst = objects.Instance(**values)
    inst.UpgradeConfig()
    return inst


def _AllObjects():
    """One fully populated object of every type."""
    node = objects.Node(name="node1.example.com", uuid="n1-uuid",
                        primary_ip="192.0.2.10", secondary_ip="198.51.100.10",
                        group="g-uuid", ndparams={"spindle_count": 2},
                        tags=["rack:1"], serial_no=3, ctime=1.5, mtime=2.5)
    group = objects.NodeGroup(name="default", uuid="g-uuid",
                              ipolicy={"vcpu-ratio": 2.0},
                              networks={"net-uuid": {"link": "br1"}},
                              tags=["a", "b"], serial_no=1)
    drbd = objects.Disk(
        uuid="d-uuid", dev_type=constants.DT_DRBD8, size=1024, mode="rw",
        iv_name="disk/0", nodes=["n1-uuid", "n2-uuid"],
        logical_id=["n1-uuid", "n2-uuid", 11000, 0, 0, "secret"],
        children=[objects.Disk(dev_type="plain", size=1024,
                               logical_id=["xenvg", "data"]),
                  objects.Disk(dev_type="plain", size=128,
                               logical_id=["xenvg", "meta"])],
        params={}, serial_no=1, ctime=1.0, mtime=1.0)
    network = objects.Network(name="net1", uuid="net-uuid",
                              network="203.0.113.0/24",
                              gateway="203.0.113.1", reservations="0" * 256,
                              tags=["x"])
    rule = objects.FilterRule(uuid="f-uuid", watermark=10, priority=1,
                              predicates=[["jobid", [">", "id", "watermark"]]],
                              action=["RATE_LIMIT", 2],
                              reason_trail=[["luxid", "", 1700000000]])
    inst = _Instance(tags=["web", "db"], beparams={"maxmem": 512})
    cluster = _Cluster(tags=["prod"], uid_pool=[(1000, 2000), (3000, 3000)])
    data = objects.ConfigData(
        version=constants.CONFIG_VERSION, cluster=cluster,
        nodes={node.uuid: node}, nodegroups={group.uuid: group},
        instances={inst.uuid: inst}, networks={network.uuid: network},
        disks={drbd.uuid: drbd}, filters={rule.uuid: rule}, serial_no=7,
        ctime=1.0, mtime=2.0)
    return [node, group, drbd, network, rule, inst, inst.nics[0], cluster,
            data]


@pytest.mark.parametrize("obj", _AllObjects(),
                         ids=lambda o: o.__class__.__name__)
def test_round_trip(obj):
    text = json.dumps(obj.ToDict())
    restored = obj.__class__.FromDict(json.loads(text))
    assert restored == obj
    assert restored.ToDict() == obj.ToDict()
    copy = obj.Copy()
    assert copy == obj and copy is not obj


def test_copy_is_deep():
    inst = _Instance(beparams={"maxmem": 512}, tags=["a"])
    copy = inst.Copy()
    copy.beparams["maxmem"] = 1024
    copy.nics[0].mac = "aa:00:00:00:00:00"
    copy.AddTag("b")
    copy.disks.append("other")
    assert inst.beparams["maxmem"] == 512
    assert inst.nics[0].mac == "aa:00:00:11:22:33"
    assert inst.GetTags() == {"a"}
    assert inst.disks == ["d-uuid"]


def test_equality_sees_differences():
    inst = _Instance()
    other = inst.Copy()
    other.nics[0].ip = "10.0.0.1"
    assert inst != other
    assert inst != _Cluster()


def test_fields_are_the_annotations():
    """A class's annotated public names are its slots and its fields."""
    class Probe(objects.TaggableObject):
        size: int
        label: str | None
        _note: str = "class attribute, not a field"
        _FIELD_CHECKS = {"size": ht.TNonNegativeInt}

    assert Probe.__slots__ == ("size", "label")
    assert Probe._ALL_SLOTS == ("tags", "size", "label")
    probe = Probe(size=3)
    assert probe.label is None and probe.tags is None
    assert not hasattr(probe, "__dict__")
    with pytest.raises(AttributeError):
        probe.unknown = 1
    assert probe.ToDict() == {"size": 3}
    assert Probe.FromDict({"size": 3, "label": "x"}).label == "x"
    probe.size = -1
    with pytest.raises(errors.ConfigurationError, match="size"):
        probe.Validate()


def test_real_objects_have_no_instance_dict():
    """Every config object keeps the memory layout of __slots__."""
    for obj in (_Cluster(), _Instance(), objects.Disk(dev_type="plain")):
        assert not hasattr(obj, "__dict__")
    assert "primary_node" in objects.Instance.__slots__
    assert objects.ConfigObject.__slots__ == ()


def test_none_fields_are_not_serialized():
    disk = objects.Disk(dev_type="plain", size=10, logical_id=["vg", "lv"])
    assert disk.ToDict() == {"dev_type": "plain", "size": 10,
                             "logical_id": ["vg", "lv"]}


def test_unknown_field_refused():
    with pytest.raises(errors.ConfigurationError, match="bogus"):
        objects.Node.FromDict({"name": "n", "bogus": 1})
    with pytest.raises(TypeError):
        objects.Node(bogus=1)


def test_config_data_key_names():
    data = _AllObjects()[-1]
    raw = data.ToDict()
    assert set(raw) == {"version", "cluster", "nodes", "nodegroups",
                        "instances", "networks", "disks", "filters",
                        "serial_no", "ctime", "mtime"}
    # containers are keyed by UUID
    for key in ("nodes", "nodegroups", "instances", "networks", "disks",
                "filters"):
        for uuid, item in raw[key].items():
            assert item["uuid"] == uuid
    inst = raw["instances"]["i-uuid"]
    assert set(inst) == {
        "name", "primary_node", "os", "hypervisor", "hvparams", "beparams",
        "osparams", "osparams_private", "admin_state", "admin_state_source",
        "nics", "disks", "disks_active", "tags", "uuid"}
    assert set(inst["nics"][0]) == {"mac", "nicparams", "uuid"}
    # members of a group are derived, never stored
    group = objects.NodeGroup(name="g", uuid="g", members=["n1"])
    assert "members" not in group.ToDict()
    cluster = raw["cluster"]
    for key in ("cluster_name", "master_node", "master_ip", "master_netdev",
                "master_netmask", "enabled_hypervisors", "hvparams",
                "beparams", "nicparams", "ndparams", "diskparams", "ipolicy",
                "candidate_pool_size", "max_running_jobs", "max_tracked_jobs",
                "enabled_disk_templates", "file_storage_dir",
                "shared_file_storage_dir", "mac_prefix", "uid_pool",
                "primary_ip_family", "tcpudp_port_pool", "highest_used_port",
                "data_collectors", "compression_tools"):
        assert key in cluster, key
    assert cluster["uid_pool"] == [[1000, 2000], [3000, 3000]]


def test_reads_ganeti_31_style_data():
    # Shape of Ganeti 3.1's config.data: drbd disk with LV children without
    # uuid, NIC without name, group without members, tags as lists
    raw = {
        "version": constants.CONFIG_VERSION,
        "cluster": {"cluster_name": "c", "master_node": "n1",
                    "master_ip": "192.0.2.87", "uuid": "c1",
                    "enabled_hypervisors": ["fake"], "tags": ["mytag"],
                    "beparams": {"default": {"maxmem": 256}},
                    "diskparams": {"drbd": {"resync-rate": 1024},
                                   "rbd": {"pool": "rbd"}},
                    "ipolicy": {"vcpu-ratio": 1.0}, "serial_no": 3189},
        "nodes": {"n1": {"name": "node1", "primary_ip": "192.0.2.82",
                         "secondary_ip": "198.51.100.82", "group": "g1",
                         "master_candidate": True, "uuid": "n1",
                         "tags": [], "serial_no": 197}},
        "nodegroups": {"g1": {"name": "default", "uuid": "g1",
                              "alloc_policy": "preferred", "ipolicy": {},
                              "ndparams": {}, "diskparams": {},
                              "networks": {}, "tags": []}},
        "instances": {"i1": {"name": "instance1", "uuid": "i1",
                             "primary_node": "n1", "hypervisor": "fake",
                             "os": "busybox", "admin_state": "up",
                             "admin_state_source": "admin",
                             "beparams": {"memory": 512}, "hvparams": {},
                             "disks": ["d1"], "disks_active": True,
                             "disk_template": "drbd",
                             "nics": [{"mac": "aa:bb:cc:b2:6e:0b",
                                       "nicparams": {}}],
                             "osparams": {}, "osparams_private": {},
                             "serial_no": 2}},
        "disks": {"d1": {"uuid": "d1", "dev_type": "drbd", "size": 1024,
                         "mode": "rw", "iv_name": "disk/0",
                         "logical_id": ["n1", "n2", 32100, 0, 0, "s"],
                         "nodes": ["n1", "n2"], "params": {},
                         "children": [
                             {"dev_type": "plain", "size": 1024,
                              "logical_id": ["xenvg", "x.disk0_data"],
                              "nodes": ["n1", "n2"], "params": {}},
                             {"dev_type": "plain", "size": 128,
                              "logical_id": ["xenvg", "x.disk0_meta"],
                              "nodes": ["n1", "n2"], "params": {}}]}},
        "networks": {}, "filters": {}, "serial_no": 7627,
        "ctime": 1343869045.6, "mtime": 1421677173.7,
    }
    data = objects.ConfigData.FromDict(raw)
    data.UpgradeConfig()
    cluster = data.cluster
    assert cluster.GetTags() == {"mytag"}
    assert cluster.beparams["default"]["maxmem"] == 256
    assert cluster.beparams["default"]["vcpus"] == 1
    assert cluster.diskparams["drbd"]["resync-rate"] == 1024
    assert cluster.diskparams["drbd"]["protocol"] == "C"
    assert cluster.ipolicy["vcpu-ratio"] == 1.0
    assert cluster.ipolicy["spindle-ratio"] == 32.0
    inst = data.instances["i1"]
    # legacy memory becomes minmem/maxmem, disk_template is dropped
    assert inst.beparams == {"minmem": 512, "maxmem": 512}
    assert inst.disk_template is None
    assert inst.nics[0].uuid
    assert len(data.disks["d1"].children) == 2
    cluster.Validate()
    inst.Validate()
    data.disks["d1"].Validate()
    assert objects.ConfigData.FromDict(
        json.loads(json.dumps(data.ToDict()))) == data


def test_param_tables_are_consistent():
    families = [objects.BE_PARAMETERS, objects.NIC_PARAMETERS,
                objects.ND_PARAMETERS, objects.IPOLICY_PARAMETERS,
                objects.ISPEC_PARAMETERS]
    families.extend(objects.DISK_PARAMETERS.values())
    for table in families:
        for key, spec in table.items():
            assert isinstance(spec.check, ht.Check), key
            assert spec.doc, key
            assert spec.check(spec.default), key
    assert objects.BEC_DEFAULTS == {
        "minmem": 128, "maxmem": 128, "vcpus": 1, "auto_balance": True,
        "always_failover": False, "spindle_use": 1}
    assert objects.NICC_DEFAULTS == {"mode": "bridged",
                                     "link": constants.DEFAULT_BRIDGE,
                                     "vlan": ""}
    assert objects.NDC_DEFAULTS == {
        "oob_program": "", "spindle_count": 1, "exclusive_storage": False,
        "ovs": False, "ovs_name": "switch1", "ovs_link": "", "ssh_port": 22,
        "cpu_speed": 1.0}
    ipolicy = objects.IPOLICY_DEFAULTS
    assert ipolicy["minmax"] == [{
        "min": {"memory-size": 128, "cpu-count": 1, "disk-count": 1,
                "disk-size": 1024, "nic-count": 1, "spindle-use": 1},
        "max": {"memory-size": 32768, "cpu-count": 8, "disk-count": 16,
                "disk-size": 1048576, "nic-count": 8, "spindle-use": 12}}]
    assert ipolicy["std"] == ipolicy["minmax"][0]["min"]
    assert ipolicy["vcpu-ratio"] == 4.0
    assert ipolicy["spindle-ratio"] == 32.0
    objects.CheckIPolicy(ipolicy, complete=True)
    # defaults are fresh copies, not shared with the tables
    base.ParamDefaults(objects.IPOLICY_PARAMETERS)["std"]["cpu-count"] = 9
    assert objects.IPOLICY_PARAMETERS["std"].default["cpu-count"] == 1


def test_check_param_dict():
    objects.CheckParamDict(objects.BE_PARAMETERS, {"vcpus": 2}, "backend")
    with pytest.raises(errors.TypeEnforcementError, match="bogus"):
        objects.CheckParamDict(objects.BE_PARAMETERS, {"bogus": 1}, "be")
    with pytest.raises(errors.TypeEnforcementError, match="vcpus"):
        objects.CheckParamDict(objects.BE_PARAMETERS, {"vcpus": 0}, "be")
    with pytest.raises(errors.TypeEnforcementError, match="mode"):
        objects.CheckParamDict(objects.NIC_PARAMETERS, {"mode": "x"}, "nic")
    with pytest.raises(errors.TypeEnforcementError):
        objects.CheckDiskParams({"drbd": {"protocol": "D"}})
    bad = objects.FillDict(objects.IPOLICY_DEFAULTS, {})
    bad["minmax"][0]["min"]["cpu-count"] = 20
    with pytest.raises(errors.TypeEnforcementError, match="min <= its max"):
        objects.CheckIPolicy(bad, complete=True)
    bad = objects.FillDict(objects.IPOLICY_DEFAULTS, {})
    bad["std"]["cpu-count"] = 20
    with pytest.raises(errors.TypeEnforcementError, match="outside"):
        objects.CheckIPolicy(bad, complete=True)
    del bad["std"]["cpu-count"]
    objects.CheckIPolicy(bad, complete=False)
    with pytest.raises(errors.TypeEnforcementError, match="Standard"):
        objects.CheckIPolicy(bad, complete=True)


def test_fresh_cluster_defaults():
    cluster = _Cluster()
    cluster.Validate()
    assert cluster.candidate_pool_size == 10
    assert cluster.max_running_jobs == 20
    assert cluster.max_tracked_jobs == 25
    assert cluster.enabled_hypervisors == ["fake"]
    assert cluster.hvparams == {"fake": {"migration_mode": "live"}}
    assert cluster.enabled_disk_templates == ["file", "diskless"]
    assert cluster.ipolicy["disk-templates"] == ["file", "diskless"]
    assert cluster.mac_prefix == constants.DEFAULT_MAC_PREFIX
    assert cluster.master_netdev == constants.DEFAULT_MASTER_NETDEV
    assert cluster.beparams == {"default": objects.BEC_DEFAULTS}
    assert cluster.nicparams == {"default": objects.NICC_DEFAULTS}
    assert set(cluster.diskparams) == set(objects.DISK_PARAMETERS)
    assert cluster.primary_hypervisor == "fake"


def test_cluster_upgrades_legacy_fields():
    cluster = _Cluster(default_hypervisor="kvm",
                       enabled_hypervisors=["fake", "kvm"],
                       hvparams={"fake": {}, "kvm": {}},
                       default_bridge="br7",
                       beparams={"default": {"memory": 256}})
    assert cluster.enabled_hypervisors == ["kvm", "fake"]
    assert cluster.default_hypervisor is None
    assert cluster.nicparams["default"]["link"] == "br7"
    assert "default_bridge" not in cluster.ToDict()
    assert cluster.beparams["default"]["minmem"] == 256
    assert "memory" not in cluster.beparams["default"]


def test_validate_reports_field():
    inst = _Instance(admin_state="sideways")
    with pytest.raises(errors.ConfigurationError, match="admin_state"):
        inst.Validate()
    inst = _Instance()
    inst.nics[0].mac = "not-a-mac"
    with pytest.raises(errors.ConfigurationError, match="mac"):
        inst.Validate()
    with pytest.raises(errors.ConfigurationError, match="primary_node"):
        objects.Instance(name="x", uuid="u", hypervisor="fake").Validate()
    with pytest.raises(errors.ConfigurationError, match="migration_port"):
        _Instance(hvparams={"migration_port": 1}).Validate()
    with pytest.raises(errors.ConfigurationError, match="backend"):
        _Instance(beparams={"vcpus": "two"}).Validate()
    with pytest.raises(errors.ConfigurationError, match="primary_ip"):
        objects.Node(name="n", uuid="u", primary_ip="300.1.1.1").Validate()
    with pytest.raises(errors.ConfigurationError, match="action"):
        objects.FilterRule(uuid="f", action="DROP").Validate()
    with pytest.raises(errors.ConfigurationError, match="action"):
        objects.FilterRule(uuid="f", action=["RATE_LIMIT", 0]).Validate()


def test_fill_dict():
    defaults = {"a": 1, "b": {"x": 1}, "c": 3}
    result = objects.FillDict(defaults, {"b": {"y": 2}, "d": 4},
                              skip_keys=["c"])
    # nested dicts are replaced, not merged
    assert result == {"a": 1, "b": {"y": 2}, "d": 4}
    result = objects.FillDict(defaults, None)
    result["b"]["x"] = 99
    assert defaults["b"]["x"] == 1


def test_fill_be():
    cluster = _Cluster(beparams={"default": {"vcpus": 2}})
    inst = _Instance(beparams={"maxmem": 1024})
    assert cluster.FillBE(inst) == {
        "minmem": 128, "maxmem": 1024, "vcpus": 2, "auto_balance": True,
        "always_failover": False, "spindle_use": 1}
    assert inst.beparams == {"maxmem": 1024}


def test_fill_hv():
    cluster = _Cluster(hvparams={"fake": {"a": 1, "b": 1,
                                          "migration_mode": "live"}},
                       os_hvp={"debootstrap+default": {"fake": {"b": 2}}})
    inst = _Instance(hvparams={"c": 3})
    assert cluster.FillHV(inst) == {"a": 1, "b": 2, "c": 3,
                                    "migration_mode": "live"}
    assert cluster.FillHV(inst, skip_globals=True) == {"a": 1, "b": 2,
                                                       "c": 3}


def test_fill_nd_nic_dp_os():
    cluster = _Cluster(ndparams={"spindle_count": 4})
    group = objects.NodeGroup(name="g", uuid="g", ndparams={"ssh_port": 2222},
                              networks={"net": {"link": "br-net"}})
    node = objects.Node(name="n", uuid="n", ndparams={"ssh_port": 22022})
    filled = cluster.FillND(node, group)
    assert filled["spindle_count"] == 4
    assert filled["ssh_port"] == 22022
    assert filled["ovs_name"] == "switch1"
    assert cluster.SimpleFillND({})["ssh_port"] == 22

    nic = objects.NIC(mac="aa:00:00:00:00:01", network="net",
                      nicparams={"vlan": ".100"})
    assert cluster.FillNIC(nic, group) == {"mode": "bridged",
                                           "link": "br-net", "vlan": ".100"}
    assert cluster.SimpleFillNIC({})["link"] == constants.DEFAULT_BRIDGE

    dp = cluster.SimpleFillDP({"drbd": {"protocol": "A"}})
    assert dp["drbd"]["protocol"] == "A"
    assert dp["drbd"]["resync-rate"] == 61440
    assert dp["plain"] == {"stripes": 1}

    cluster.osparams = {"debootstrap": {"a": "1", "b": "1"},
                        "debootstrap+default": {"b": "2"}}
    cluster.osparams_private_cluster = {"debootstrap": {"secret": "s"}}
    assert cluster.SimpleFillOS("debootstrap+default", {"c": "3"}) == {
        "a": "1", "b": "2", "c": "3", "secret": "s"}
    with pytest.raises(errors.OpPrereqError, match="secret"):
        cluster.SimpleFillOS("debootstrap", {"secret": "x"})


def test_fill_ipolicy():
    cluster = _Cluster()
    group_policy = {"std": {"cpu-count": 2}, "vcpu-ratio": 2.0,
                    "disk-templates": ["plain"]}
    filled = objects.FillIPolicy(cluster.ipolicy, group_policy)
    assert filled["std"]["cpu-count"] == 2
    assert filled["std"]["memory-size"] == 128
    assert filled["vcpu-ratio"] == 2.0
    assert filled["disk-templates"] == ["plain"]
    assert filled["minmax"] == cluster.ipolicy["minmax"]
    assert filled["spindle-ratio"] == 32.0
    assert cluster.SimpleFillIPolicy(group_policy) == filled
    objects.CheckIPolicy(group_policy, complete=False)


@pytest.mark.parametrize("tag", ["", "x" * (constants.MAX_TAG_LEN + 1),
                                 "has space", "semi;colon", "new\nline", 5])
def test_invalid_tags(tag):
    with pytest.raises(errors.TagError) as info:
        objects.ValidateTag(tag)
    if tag:
        assert repr(tag) in str(info.value)
    node = objects.Node(name="n")
    with pytest.raises(errors.TagError):
        node.AddTag(tag)
    assert node.GetTags() == set()


def test_tags():
    for tag in ["a", "web.server", "x+y*z/w:v@u-t", "_underscore",
                "ä", "x" * constants.MAX_TAG_LEN]:
        objects.ValidateTag(tag)
    inst = _Instance(tags=["b", "a"])
    assert inst.tags == {"a", "b"}
    inst.AddTag("c")
    inst.AddTag("c")
    assert inst.ToDict()["tags"] == ["a", "b", "c"]
    inst.RemoveTag("a")
    assert inst.GetTags() == {"b", "c"}
    with pytest.raises(errors.TagError, match="'zz'"):
        inst.RemoveTag("zz")
    inst.GetTags().add("not-stored")
    assert "not-stored" not in inst.tags


def test_too_many_tags():
    node = objects.Node(name="n", tags=["t%d" % i for i in
                                        range(constants.MAX_TAGS_PER_OBJ)])
    with pytest.raises(errors.TagError, match="Too many"):
        node.AddTag("one-more")
    node.AddTag("t0")
    node.tags.add("one-more")
    node.uuid, node.primary_ip = "u", "192.0.2.1"
    with pytest.raises(errors.ConfigurationError, match="Too many"):
        node.Validate()
    node = objects.Node(name="n", uuid="u", primary_ip="192.0.2.1",
                        tags=["bad tag"])
    with pytest.raises(errors.ConfigurationError, match="bad tag"):
        node.Validate()
