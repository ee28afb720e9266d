"""Instance allocators on a virtual cluster: the input message, external
programs run through noded (and their failures), placement without -n and
opportunistic locking."""

import glob
import json
import os
import subprocess

import pytest

from ganeti import opcodes, pathutils
from ganeti.masterd import iallocator

from testutils_cluster import SMALL_IPOLICY_BOUNDS, WaitForJob
from testutils_instance import (ADMIN, CHECKS, FILE_VDIR, NODE1, NODE2,
                                NODE3, Config, Fail, Field, InstanceCluster,
                                PrimaryNode, RapiClient, RemoveInstances)

pytestmark = pytest.mark.integration

# A script allocator: its behaviour is read from a file beside it, so each
# test picks one; "ok" places on the node with the least primary memory
_ALLOCATOR = r"""#!%(python)s
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "behaviour")) as fobj:
    behaviour = fobj.read().strip()
with open(sys.argv[1]) as fobj:
    data = json.load(fobj)
with open(os.path.join(here, "last-input.json"), "w") as fobj:
    json.dump({"argv": sys.argv[2:], "message": data}, fobj)
if behaviour == "crash":
    print("allocator exploded: no coffee")
    sys.exit(3)
if behaviour == "garbage":
    print("this is { not json")
    sys.exit(0)
if behaviour == "hang":
    time.sleep(60)
if behaviour == "unknown":
    print(json.dumps({"success": True, "info": "",
                      "result": ["ghost.example.test"]}))
    sys.exit(0)
if behaviour.startswith("sleep"):
    time.sleep(float(behaviour[5:]))
req = data["request"]
allowed = req.get("restrict-to-nodes")
load = {name: info["i_pri_memory"] for name, info in data["nodes"].items()
        if "free_memory" in info and (allowed is None or name in allowed)}
insts = data["instances"]
group_of = {name: info["group"] for name, info in data["nodes"].items()}


def least(candidates):
    return min(sorted(candidates), key=lambda name: load[name])


def moves(names, candidates_of):
    # hail's rule: only externally mirrored instances change node
    moved, failed, jobs = [], [], []
    for name in names:
        inst = insts[name]
        if inst["disk_template"] not in ("sharedfile", "diskless"):
            failed.append([name, "Instances of type %%s cannot be"
                           " relocated" %% inst["disk_template"]])
            continue
        node = least(candidates_of(inst))
        load[node] += inst["memory"]
        moved.append([name, group_of[node], [node]])
        op_id = ("OP_INSTANCE_MIGRATE" if inst["admin_state"] == "up"
                 else "OP_INSTANCE_FAILOVER")
        jobs.append([{"OP_ID": op_id, "instance_name": name,
                      "target_node": node}])
    return [moved, failed, jobs]


kind = req["type"]
if kind == "multi-allocate":
    placed, failed = [], []
    for inst in req["instances"]:
        if inst["memory"] > 100000:
            failed.append(inst["name"])
            continue
        node = least(load)
        load[node] += inst["memory"]
        placed.append([inst["name"], [node]])
    result = [placed, failed]
elif kind == "relocate":
    result = [least(set(load) - set(req["relocate_from"]))]
elif kind == "node-evacuate":
    result = moves(req["instances"], lambda inst: [
        name for name in load if name not in inst["nodes"] and
        group_of[name] == group_of[inst["nodes"][0]]])
elif kind == "change-group":
    result = moves(req["instances"], lambda inst: [
        name for name in load if group_of[name] in req["target_groups"]])
else:
    result = [least(load)]
out = {"success": True, "info": "allocation successful", "result": result}
if "--explain" in sys.argv:
    out["explanation"] = "%%s has the least primary memory" %% result[0]
print(json.dumps(out))
"""


def _Behave(vc, behaviour: str) -> None:
    with open(os.path.join(_AllocDir(vc), "behaviour"), "w") as fobj:
        fobj.write(behaviour)


def _AllocDir(vc) -> str:
    return vc.NodePath(pathutils.IALLOCATOR_SEARCH_PATH[0])


def _LastInput(vc) -> dict:
    with open(os.path.join(_AllocDir(vc), "last-input.json")) as fobj:
        return json.load(fobj)


def _InstallAllocator(cluster) -> None:
    path = _AllocDir(cluster)
    os.makedirs(path)
    with open(os.path.join(path, "testalloc"), "w") as fobj:
        fobj.write(_ALLOCATOR % {"python": os.sys.executable})
    os.chmod(os.path.join(path, "testalloc"), 0o755)
    _Behave(cluster, "ok")


@pytest.fixture(scope="module")
def vc():
    # Short enough for the hanging allocator (masterd passes it to noded)
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         env={iallocator.ENV_TIMEOUT: "3"}) as cluster:
        _InstallAllocator(cluster)
        yield cluster


def _Remove(vc, *names: str) -> None:
    for name in names:
        vc.Run("gnt-instance", "remove", "-f", name)


def test_default_allocator_is_builtin(vc):
    info = vc.Run("gnt-cluster", "info").stdout
    assert "default instance allocator: halloc" in info


def test_input_message_has_every_field(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
           "-n", NODE2, "-B", "maxmem=32,minmem=32", "--tags", "web",
           *CHECKS, "msg1")
    try:
        vc.Run("gnt-node", "modify", "--drained=yes", NODE3)
        text = vc.Run("gnt-debug", "iallocator", "--dir", "in", "-t",
                      "file", "--disks", "12", "--memory", "16", "-p",
                      "2", "newinst").stdout
    finally:
        vc.Run("gnt-node", "modify", "--drained=no", NODE3)
        _Remove(vc, "msg1")
    data = json.loads(text)
    assert set(data) == {"version", "cluster_name", "cluster_tags",
                         "enabled_hypervisors", "ipolicy", "nodegroups",
                         "nodes", "instances", "request", "aggregates"}
    assert data["version"] == 2
    assert data["cluster_name"] == vc.cluster_name
    for group in data["nodegroups"].values():
        assert set(group) == {"name", "alloc_policy", "networks",
                              "ipolicy", "tags"}
    static = {"tags", "primary_ip", "secondary_ip", "offline", "drained",
              "master_candidate", "group", "master_capable", "vm_capable",
              "ndparams", "aggregates"}
    dynamic = {"total_memory", "reserved_memory", "free_memory",
               "total_disk", "free_disk", "total_spindles", "free_spindles",
               "total_cpus", "reserved_cpus", "i_pri_memory",
               "i_pri_up_memory"}
    assert set(data["nodes"]) == {NODE1, NODE2, NODE3}
    assert set(data["nodes"][NODE2]) == static | dynamic
    # A drained node gets no runtime data
    assert set(data["nodes"][NODE3]) == static
    # Every node group is a Placement aggregate, named in "aggregates"
    group = data["nodes"][NODE2]["group"]
    assert data["nodes"][NODE2]["aggregates"] == [group]
    assert data["aggregates"] == {group: "default"}
    assert data["nodes"][NODE2]["i_pri_memory"] == 32
    assert data["nodes"][NODE2]["total_disk"] > 0
    inst = data["instances"]["msg1"]
    assert set(inst) == {"tags", "admin_state", "vcpus", "memory",
                         "spindle_use", "os", "nodes", "nics", "disks",
                         "disk_template", "disks_active", "hypervisor",
                         "disk_space_total"}
    assert inst["nodes"] == [NODE2] and inst["tags"] == ["web"]
    assert set(inst["nics"][0]) >= {"mac", "ip", "mode", "link"}
    req = data["request"]
    assert set(req) == {"type", "name", "disk_template", "group_name",
                        "tags", "os", "vcpus", "memory", "spindle_use",
                        "disks", "disk_space_total", "nics",
                        "required_nodes", "hypervisor"}
    assert (req["type"], req["required_nodes"], req["disk_space_total"],
            req["memory"], req["vcpus"]) == ("allocate", 1, 12, 16, 2)


@pytest.mark.parametrize("mode,extra", [
    ("relocate", ()), ("allocate-secondary", ()),
    ("multi-allocate", ("--count", "2")),
    ("node-evacuate", ("--evac-mode", "primary-only")),
    ("change-group", ("--target-groups", "default")),
])
def test_input_message_request_types(vc, mode, extra):
    name = "x" if mode in ("relocate", "allocate-secondary") else "a,b"
    if mode == "relocate":
        out = Fail(vc, "gnt-debug", "iallocator", "--mode", mode, name)
        assert "not known" in out
        return
    data = json.loads(vc.Run("gnt-debug", "iallocator", "--mode", mode,
                             *extra, name).stdout)
    assert data["request"]["type"] == mode
    if mode == "multi-allocate":
        assert len(data["request"]["instances"]) == 2
    elif mode == "node-evacuate":
        assert data["request"]["evac_mode"] == "primary-only"
    elif mode == "change-group":
        # Named by UUID, as the protocol (and hail) wants them
        (uuid, ) = Config(vc)["nodegroups"]
        assert data["request"]["target_groups"] == [uuid]


def test_script_allocator_output_and_params(vc):
    vc.Run("gnt-cluster", "modify", "--default-iallocator-params",
           "verbose=1")
    try:
        out = vc.Run("gnt-debug", "iallocator", "--dir", "out", "-I",
                     "testalloc", "-t", "file", "--disks", "10",
                     "newinst").stdout
    finally:
        vc.Run("gnt-cluster", "modify", "--default-iallocator-params", "")
    assert json.loads(out)["success"] is True
    assert _LastInput(vc)["argv"] == ["--verbose=1"]


@pytest.mark.parametrize("behaviour,message", [
    ("crash", "exited with exit code 3, output 'allocator exploded: no"
     " coffee'"),
    ("garbage", "Can't parse the results of iallocator 'testalloc'"),
    ("hang", "timed out after 3"),
    ("unknown", "iallocator 'testalloc' returned an invalid result: node"
     " ghost.example.test does not exist"),
])
def test_broken_allocator_is_a_clear_error(vc, behaviour, message):
    _Behave(vc, behaviour)
    try:
        out = Fail(vc, "gnt-instance", "add", "-t", "file", "--disk",
                   "0:size=4M", "-o", "tinyimage", "-I", "testalloc",
                   *CHECKS, "broken1")
    finally:
        _Behave(vc, "ok")
    assert message in out, out
    assert "testalloc" in out
    assert Config(vc)["instances"] == {}
    assert Config(vc).get("disks", {}) == {}


def test_missing_allocator(vc):
    out = Fail(vc, "gnt-instance", "add", "-t", "diskless", "-o",
               "tinyimage", "-I", "nosuchalloc", *CHECKS, "missing1")
    assert "iallocator module 'nosuchalloc' not found in the search path" \
        in out, out


def test_add_without_node_fills_nodes(vc):
    vc.Run("gnt-cluster", "modify", "--default-iallocator", "testalloc")
    names = ["fill%d" % idx for idx in range(3)]
    try:
        for name in names:
            vc.Run("gnt-instance", "add", "-t", "file", "--disk",
                   "0:size=4M", "-o", "tinyimage", "-B",
                   "maxmem=32,minmem=32", "--no-start", *CHECKS, name)
        assert sorted(PrimaryNode(vc, name) for name in names) == \
            [NODE1, NODE2, NODE3]
        out = vc.Run("gnt-instance", "add", "-t", "diskless", "-o",
                     "tinyimage", "--no-start", "--explain", *CHECKS,
                     "explained").stdout
        assert "has the least primary memory" in out, out
        names.append("explained")
        assert Fail(vc, "gnt-instance", "add", "-t", "diskless", "-o",
                    "tinyimage", "-n", NODE2, "-I", "testalloc", *CHECKS,
                    "both") != ""
    finally:
        vc.Run("gnt-cluster", "modify", "--default-iallocator", "halloc")
        _Remove(vc, *names)


def test_concurrent_creations_with_opportunistic_locking(vc):
    _Behave(vc, "sleep1.5")
    names = ["opp1", "opp2"]
    try:
        procs = [subprocess.Popen(
            ["gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
             "-I", "testalloc", "--opportunistic-locking", "--no-start",
             *CHECKS, name], env=vc.env, cwd=vc.base, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            for name in names]
        outputs = [proc.communicate(timeout=120)[0] for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], outputs
        # Each allocation saw only the nodes it could lock
        assert PrimaryNode(vc, "opp1") != PrimaryNode(vc, "opp2")
    finally:
        _Behave(vc, "ok")
        _Remove(vc, *[name for name in names
                      if name in {inst["name"] for inst
                                  in Config(vc)["instances"].values()}])


# Evacuation, relocation and multi-allocation (sharedfile: externally
# mirrored, so its instances change node without copying) ----------------

_SHARED_VDIR = "/srv/ganeti/shared-file-storage"


@pytest.fixture(scope="module")
def svc():
    with InstanceCluster("--enabled-disk-templates=sharedfile,file,diskless",
                         file_paths=(FILE_VDIR, _SHARED_VDIR),
                         rapi_users=True) as cluster:
        os.makedirs(os.path.join(cluster.base, _SHARED_VDIR.lstrip("/")))
        # node_info (the allocator's free disk) looks below each node root
        for node in cluster.nodes.values():
            os.makedirs(node.NodePath(_SHARED_VDIR), exist_ok=True)
        _InstallAllocator(cluster)
        yield cluster


def _AddShared(cluster, name, node, template="sharedfile", start=True,
               memory=64, size="4M"):
    cluster.Run("gnt-instance", "add", "-t", template, "-n", node,
                "--no-install", "--ignore-ipolicy", "-B", "memory=%d" % memory,
                "--disk", "0:size=%s" % size,
                *(() if start else ("--no-start",)), *CHECKS, name)


def _CreateOp(name, memory=64):
    return opcodes.OpInstanceCreate(
        instance_name=name, disk_template="diskless", disks=[], nics=[],
        no_install=True, name_check=False, ip_check=False, start=False,
        ignore_ipolicy=True, beparams={"maxmem": memory, "minmem": memory})


def test_multi_alloc_luxi_splits_allocatable_and_failed(svc):
    op = opcodes.OpInstanceMultiAlloc(
        iallocator="testalloc",
        instances=[_CreateOp("ma1"), _CreateOp("ma2"),
                   _CreateOp("mahuge", memory=200000)])
    try:
        with svc.Luxi() as client:
            job_id = client.SubmitJob([op])
            assert WaitForJob(client, job_id, timeout=60) == "success"
            (result, ), = client.QueryJobs([job_id], ["opresult"])[0]
            for status, follow_up in result["jobs"]:
                assert status is True
                assert WaitForJob(client, follow_up, timeout=60) == \
                    "success"
        assert sorted(result["allocatable"]) == ["ma1", "ma2"]
        assert result["failed"] == ["mahuge"]
        assert len(result["jobs"]) == 2
        # Each placement saw the previous one
        assert PrimaryNode(svc, "ma1") != PrimaryNode(svc, "ma2")
        message = _LastInput(svc)["message"]["request"]
        assert message["type"] == "multi-allocate"
        assert [inst["name"] for inst in message["instances"]] == \
            ["ma1", "ma2", "mahuge"]
        names = {inst["name"] for inst in Config(svc)["instances"].values()}
        assert "mahuge" not in names
    finally:
        RemoveInstances(svc, "ma1", "ma2")


def test_multi_alloc_rapi(svc):
    client = RapiClient(svc, ADMIN)
    spec = {"disk_template": "diskless", "disks": [], "nics": [],
            "no_install": True, "name_check": False, "ip_check": False,
            "start": False, "ignore_ipolicy": True,
            "beparams": {"maxmem": 64, "minmem": 64}}
    try:
        # A dry run answers the split without creating anything
        job_id = client.InstancesMultiAlloc(
            [dict(spec, name="ra1"),
             dict(spec, name="rahuge", beparams={"maxmem": 200000,
                                                  "minmem": 200000})],
            iallocator="testalloc", dry_run=True)
        assert client.WaitForJobCompletion(job_id, period=0.2, retries=300)
        assert client.GetJobStatus(job_id)["opresult"][0] == \
            {"jobs": [], "allocatable": ["ra1"], "failed": ["rahuge"]}
        job_id = client.InstancesMultiAlloc(
            [dict(spec, name="ra1"), dict(spec, name="ra2")],
            iallocator="testalloc", opportunistic_locking=True)
        assert client.WaitForJobCompletion(job_id, period=0.2, retries=300)
        result = client.GetJobStatus(job_id)["opresult"][0]
        assert sorted(result["allocatable"]) == ["ra1", "ra2"]
        assert result["failed"] == []
        for _, follow_up in result["jobs"]:
            assert client.WaitForJobCompletion(follow_up, period=0.2,
                                               retries=300)
        assert {PrimaryNode(svc, "ra1"), PrimaryNode(svc, "ra2")} <= \
            {NODE1, NODE2, NODE3}
        assert PrimaryNode(svc, "ra1") != PrimaryNode(svc, "ra2")
    finally:
        RemoveInstances(svc, "ra1", "ra2")


def test_batch_create_with_iallocator(svc, tmp_path):
    spec = {"disk_template": "diskless", "disks": [], "nics": [],
            "no_install": True, "name_check": False, "ip_check": False,
            "start": False, "beparams": {"maxmem": 64, "minmem": 64},
            "ignore_ipolicy": True}
    path = tmp_path / "instances.json"
    path.write_text(json.dumps([dict(spec, instance_name="bc%d" % idx)
                                for idx in range(3)]))
    try:
        out = svc.Run("gnt-instance", "batch-create", "-I", "testalloc",
                      str(path)).stdout
        assert "All instances created successfully." in out, out
        assert sorted(PrimaryNode(svc, "bc%d" % idx) for idx in range(3)) \
            == [NODE1, NODE2, NODE3]
        path.write_text(json.dumps([dict(spec, instance_name="bad",
                                         nosuchfield=1)]))
        out = Fail(svc, "gnt-instance", "batch-create", "-I", "testalloc",
                   str(path))
        assert "Unknown fields in definition 0: nosuchfield" in out, out
    finally:
        RemoveInstances(svc, "bc0", "bc1", "bc2")


def test_migrate_and_failover_with_iallocator(svc):
    _AddShared(svc, "mig1", NODE1)
    try:
        svc.Run("gnt-instance", "migrate", "-f", "-I", "testalloc", "mig1")
        request = _LastInput(svc)["message"]["request"]
        assert (request["type"], request["relocate_from"]) == \
            ("relocate", [NODE1])
        first = PrimaryNode(svc, "mig1")
        assert first != NODE1
        assert Field(svc, "mig1", "status") == "running"
        svc.Run("gnt-instance", "failover", "-f", "-I", "testalloc", "mig1")
        assert PrimaryNode(svc, "mig1") not in (first, )
        assert Field(svc, "mig1", "status") == "running"
        out = Fail(svc, "gnt-instance", "migrate", "-f", "-I", "testalloc",
                   "-n", NODE2, "mig1")
        assert "Specify either an iallocator (-I), or a target node" in out
    finally:
        RemoveInstances(svc, "mig1")


def test_node_evacuate_with_iallocator(svc):
    _AddShared(svc, "ev1", NODE2)
    _AddShared(svc, "ev2", NODE2, start=False)
    _AddShared(svc, "evf", NODE2, template="file")
    try:
        # hail's rule: a file instance can't change node; nothing is moved
        out = Fail(svc, "gnt-node", "evacuate", "-f", "-I", "testalloc",
                   NODE2)
        assert "Unable to evacuate instances evf (Instances of type file" \
            " cannot be relocated)" in out, out
        assert PrimaryNode(svc, "ev1") == NODE2
        RemoveInstances(svc, "evf")
        out = svc.Run("gnt-node", "evacuate", "-f", "-I", "testalloc",
                      NODE2).stdout
        assert "All instances evacuated successfully." in out, out
        request = _LastInput(svc)["message"]["request"]
        assert (request["type"], sorted(request["instances"]),
                request["evac_mode"]) == ("node-evacuate", ["ev1", "ev2"],
                                          "all")
        assert PrimaryNode(svc, "ev1") != NODE2
        assert PrimaryNode(svc, "ev2") != NODE2
        assert Field(svc, "ev1", "status") == "running"
        assert Field(svc, "ev2", "status") == "ADMIN_down"
        assert svc.Run("gnt-node", "list", "--no-headers", "-o", "pinst_cnt",
                       NODE2).stdout.strip() == "0"
        # Without -n nor -I the cluster's default allocator is used
        svc.Run("gnt-cluster", "modify", "--default-iallocator", "testalloc")
        try:
            node = PrimaryNode(svc, "ev1")
            svc.Run("gnt-node", "evacuate", "-f", "-p", node)
            assert PrimaryNode(svc, "ev1") != node
            assert _LastInput(svc)["message"]["request"]["evac_mode"] == \
                "primary-only"
        finally:
            svc.Run("gnt-cluster", "modify", "--default-iallocator",
                    "halloc")
    finally:
        RemoveInstances(svc, "ev1", "ev2", "evf")


def test_group_evacuate_and_change_group(svc):
    svc.Run("gnt-group", "add", "g2")
    svc.Run("gnt-group", "assign-nodes", "g2", NODE3)
    # Within the default policy: the follow-up jobs check it
    _AddShared(svc, "ge1", NODE1, memory=128, size="1G")
    _AddShared(svc, "ge2", NODE2, start=False, memory=128, size="1G")
    try:
        out = svc.Run("gnt-group", "evacuate", "-I", "testalloc",
                      "default").stdout
        assert "All instances evacuated successfully." in out, out
        request = _LastInput(svc)["message"]["request"]
        assert request["type"] == "change-group"
        assert sorted(request["instances"]) == ["ge1", "ge2"]
        assert PrimaryNode(svc, "ge1") == NODE3
        assert PrimaryNode(svc, "ge2") == NODE3
        assert Field(svc, "ge1", "status") == "running"
        out = svc.Run("gnt-instance", "change-group", "-I", "testalloc",
                      "--to", "default", "ge1").stdout
        assert "changed group successfully" in out, out
        assert PrimaryNode(svc, "ge1") in (NODE1, NODE2)
    finally:
        RemoveInstances(svc, "ge1", "ge2")
        svc.Run("gnt-group", "assign-nodes", "default", NODE3)
        svc.Run("gnt-group", "remove", "g2")


def test_recreate_disks_with_iallocator(svc):
    _AddShared(svc, "rd1", NODE2, template="file", start=False)
    try:
        svc.Run("gnt-node", "modify", "--drained=yes", NODE2)
        # The disk is lost with the node: recreate it where it fits
        for path in glob.glob(svc.nodes[NODE2].NodePath(FILE_VDIR) +
                              "/rd1/*"):
            os.unlink(path)
        svc.Run("gnt-instance", "recreate-disks", "-I", "testalloc", "rd1")
        assert PrimaryNode(svc, "rd1") != NODE2
        assert _LastInput(svc)["message"]["request"]["type"] == "allocate"
    finally:
        svc.Run("gnt-node", "modify", "--drained=no", NODE2)
        RemoveInstances(svc, "rd1")
