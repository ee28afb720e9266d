"""Ganeti 3.0's own ``hail`` on our iallocator messages.

Allocators written for Ganeti must work on our messages unchanged: the
real hail (Debian's ganeti-htools-3.0, fetched and unpacked by the
``hail_program`` fixture) answers the input message our cluster produces
for every request type, and our validator accepts each answer; then hail
is installed in the cluster's allocator search path and drives
``gnt-instance add``, ``migrate``, ``replace-disks``, ``change-group``,
``multi-alloc`` and ``gnt-node evacuate`` end to end.
"""

import json
import os
import random
import subprocess

import pytest

from ganeti import config, opcodes, pathutils
from ganeti.htools import allocator, simu
from ganeti.masterd import iallocator

from testutils_cluster import SMALL_IPOLICY_BOUNDS, WaitForJob
from testutils_instance import (CHECKS, FILE_VDIR, NODE1, NODE2, NODE3,
                                Config, Field, InstanceCluster, PrimaryNode,
                                RemoveInstances)
from testutils_node import DRBD_TOOLS

pytestmark = [pytest.mark.integration, *DRBD_TOOLS]

SHARED_VDIR = "/srv/ganeti/shared-file-storage"


@pytest.fixture(scope="module")
def vc(hail_program):
    """Three nodes with hail installed as allocator ``hail``: sh1
    (sharedfile, running) on node1, fi1 (file, stopped) on node2, dl1
    (diskless, running) on node3, dr1 (drbd, stopped) on node1:node2, and
    an empty group g2."""
    hail, env = hail_program
    with InstanceCluster(
            "--enabled-disk-templates=drbd,sharedfile,file,diskless",
            "--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
            file_paths=(FILE_VDIR, SHARED_VDIR)) as cluster:
        os.makedirs(os.path.join(cluster.base, SHARED_VDIR.lstrip("/")))
        for node in cluster.nodes.values():
            os.makedirs(node.NodePath(SHARED_VDIR), exist_ok=True)
        # Run on the master through noded, as any allocator
        directory = cluster.NodePath(pathutils.IALLOCATOR_SEARCH_PATH[0])
        os.makedirs(directory)
        wrapper = os.path.join(directory, "hail")
        with open(wrapper, "w", encoding="ascii") as fobj:
            fobj.write("#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s \"$@\"\n" %
                       (env["LD_LIBRARY_PATH"], hail))
        os.chmod(wrapper, 0o755)
        _Add(cluster, "sh1", "sharedfile", NODE1, "--disk", "0:size=4M")
        _Add(cluster, "fi1", "file", NODE2, "--disk", "0:size=4M",
             "--no-start")
        _Add(cluster, "dl1", "diskless", NODE3)
        _Add(cluster, "dr1", "drbd", "%s:%s" % (NODE1, NODE2), "--disk",
             "0:size=16M", "--no-start")
        cluster.Run("gnt-group", "add", "g2")
        cluster.hail = (hail, env)
        yield cluster


def _Add(cluster, name, template, nodes, *extra):
    cluster.Run("gnt-instance", "add", "-t", template, "-n", nodes,
                "--no-install", "-B", "memory=64", *extra, *CHECKS, name,
                timeout=120)


def _GroupUuid(cluster, name):
    return next(uuid for uuid, group in Config(cluster)["nodegroups"].items()
                if group["name"] == name)


def _Message(cluster, *args):
    """Our input message, as ``gnt-debug iallocator --dir in`` shows it."""
    return json.loads(cluster.Run("gnt-debug", "iallocator", "--dir", "in",
                                  *args).stdout)


def _RunHail(cluster, message, tmp_path, *options):
    """Real hail's answer to ``message`` (it must exit 0)."""
    return _Hail(cluster.hail, message, tmp_path, *options)


def _Hail(program, message, tmp_path, *options):
    hail, env = program
    path = tmp_path / "in.json"
    path.write_text(json.dumps(message))
    result = subprocess.run([hail, *options, str(path)], capture_output=True,
                            text=True, env=dict(os.environ, **env),
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _Request(cfg, req):
    """Our request object for the ``request`` part of a message."""
    def _Alloc(spec):
        return iallocator.IAReqInstanceAlloc(
            spec["name"], spec["disk_template"], spec["memory"],
            spec["vcpus"], spec["spindle_use"], spec["disks"], spec["nics"],
            spec["os"], spec["tags"], spec["hypervisor"], spec["group_name"])

    kind = req["type"]
    if kind == "allocate":
        return _Alloc(req)
    if kind == "multi-allocate":
        return iallocator.IAReqMultiInstanceAlloc(
            [_Alloc(spec) for spec in req["instances"]])
    if kind == "relocate":
        return iallocator.IAReqRelocate(
            cfg.GetInstanceInfoByName(req["name"]).uuid,
            [cfg.GetNodeInfoByName(name).uuid
             for name in req["relocate_from"]])
    if kind == "allocate-secondary":
        return iallocator.IAReqInstanceAllocateSecondary(req["name"])
    if kind == "node-evacuate":
        return iallocator.IAReqNodeEvac(req["instances"], req["evac_mode"])
    return iallocator.IAReqGroupChange(req["instances"],
                                       req["target_groups"])


def _Validate(cluster, message, answer):
    """Check hail's answer as masterd does before using it (the cluster's
    configuration read from the master's file)."""
    cfg = config.ConfigWriter(cluster.NodePath(pathutils.CLUSTER_CONF_FILE),
                              accept_foreign=True)
    # The message is built already: only the answer's checks are needed
    ial = iallocator.IAllocator.__new__(iallocator.IAllocator)
    ial.cfg = cfg
    ial.req = _Request(cfg, message["request"])
    ial.out_text = ""
    ial._ProcessAnswer("hail", answer)
    return ial.result


@pytest.mark.parametrize("template,request_", [
    ("sharedfile", {"type": "relocate", "name": "inst00000.example.com",
                    "required_nodes": 1,
                    "relocate_from": ["node0000.example.com"]}),
    ("sharedfile", {"type": "node-evacuate", "evac_mode": "primary-only",
                    "instances": ["inst00000.example.com"]}),
    ("drbd", {"type": "node-evacuate", "evac_mode": "primary-only",
              "instances": ["inst00000.example.com"]}),
    ("drbd", {"type": "node-evacuate", "evac_mode": "all",
              "instances": ["inst00000.example.com"]}),
], ids=["relocate", "evacuate-shared", "evacuate-drbd-primary",
        "evacuate-drbd-all"])
@pytest.mark.parametrize("cluster_tags", [
    [], ["htools:migration:hv"],
    ["htools:migration:hv", "htools:allowmigration:hv:v2::hv:v1"],
], ids=["untagged", "classes", "allowed"])
def test_migration_classes_as_hail(hail_program, tmp_path, template,
                                   request_, cluster_tags):
    """The built-in allocator refuses (FailMig) and accepts the same
    moves as hail: inst0 lives on node0, of migration class hv:v2, the
    other nodes are hv:v1 (a drbd inst0's secondary is node1)."""
    message = simu.Message(4, 3, templates=(template, ), request=request_)
    message["cluster_tags"] = cluster_tags
    for idx, tag in enumerate(["hv:v2", "hv:v1", "hv:v1", "hv:v1"]):
        message["nodes"]["node%04d.example.com" % idx]["tags"] = [tag]
    theirs = _Hail(hail_program, message, tmp_path)
    ours = allocator.Run(message)
    refused = cluster_tags == ["htools:migration:hv"]
    if request_["type"] == "relocate":
        assert theirs["success"] == ours["success"] == (not refused)
        assert theirs["result"] == ours["result"]
        texts = [theirs["info"], ours["info"]]
    else:
        moved, failed, _ = ours["result"]
        assert moved == theirs["result"][0]
        assert [name for name, _ in failed] == \
            [name for name, _ in theirs["result"][1]]
        assert bool(failed) == refused
        texts = [reason for _, reason in failed + theirs["result"][1]]
    assert all(("FailMig" in text) == refused for text in texts), texts


@pytest.mark.parametrize("nodes", [3, 4])
@pytest.mark.parametrize("template", ["plain", "drbd"])
def test_ties_as_hail(hail_program, tmp_path, nodes, template):
    """On identical empty nodes every placement scores the same: hail
    keeps the one it tries last, and so does the built-in allocator."""
    message = simu.Message(nodes, 0, templates=(template, ),
                           request=simu.AllocRequest(template=template))
    theirs = _Hail(hail_program, message, tmp_path)
    ours = allocator.Run(message)
    assert theirs["result"] == ours["result"]
    assert ours["result"][0] == "node%04d.example.com" % (nodes - 1)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("mode", ["all", "secondary-only", "primary-only"])
def test_evacuations_as_hail(hail_program, tmp_path, seed, mode):
    """node-evacuate of a random DRBD node on generated clusters: the same
    moves, new nodes and jobs as hail's (ties go to the node or pair
    tried last), and hail's summary."""
    rnd = random.Random(seed)
    nodes = rnd.choice([4, 6, 8])
    message = simu.Message(nodes, nodes * rnd.choice([2, 4]),
                           templates=("drbd", ), seed=seed, memory=32768)
    victim = "node%04d.example.com" % rnd.randrange(nodes)
    message["request"] = {
        "type": "node-evacuate", "evac_mode": mode,
        "instances": sorted(name for name, data
                            in message["instances"].items()
                            if victim in data["nodes"])}
    theirs = _Hail(hail_program, message, tmp_path)
    ours = allocator.Run(message)
    assert ours["result"][0] == theirs["result"][0]
    assert ours["result"][2] == theirs["result"][2]
    assert [name for name, _ in ours["result"][1]] == \
        [name for name, _ in theirs["result"][1]]
    assert ours["info"].startswith(theirs["info"])


def test_node_data_adds_up(vc):
    """hail (Loader.checkData) expects total = reserved + free + the
    running primaries' memory; with the fake hypervisor the running
    instances' memory was once taken off the reserved memory as well.
    A diskless request still reports the nodes' storage: hail's capacity
    check re-creates the existing instances in it."""
    nodes = _Message(vc, "-t", "diskless", "--memory", "32", "x")["nodes"]
    for name, node in nodes.items():
        delta = (node["total_memory"] - node["reserved_memory"] -
                 node["free_memory"] - node["i_pri_up_memory"])
        assert abs(delta) <= 1, (name, node)
        assert 0 < node["free_disk"] <= node["total_disk"], (name, node)
    assert nodes[NODE1]["i_pri_up_memory"] == 64


@pytest.mark.parametrize("args,expected", [
    (("-t", "sharedfile", "--disks", "16", "--memory", "32", "new1"), 1),
    (("-t", "drbd", "--disks", "16", "--memory", "32", "new1"), 2),
    (("--mode", "multi-allocate", "--count", "2", "-t", "diskless",
      "--memory", "32", "ma"), None),
    (("--mode", "relocate", "dr1"), [NODE3]),
    (("--mode", "allocate-secondary", "fi1"), (NODE1, NODE3)),
    (("--mode", "node-evacuate", "--evac-mode", "primary-only", "sh1"),
     None),
    (("--mode", "node-evacuate", "--evac-mode", "secondary-only", "dr1"),
     None),
], ids=["allocate", "allocate-drbd", "multi-allocate", "relocate",
        "allocate-secondary", "evacuate-primary", "evacuate-secondary"])
def test_hail_answers_our_messages(vc, tmp_path, args, expected):
    message = _Message(vc, *args)
    answer = _RunHail(vc, message, tmp_path)
    assert answer["success"] is True, answer
    result = _Validate(vc, message, answer)
    kind = message["request"]["type"]
    if kind == "allocate":
        assert len(result) == expected
    elif kind == "multi-allocate":
        assert sorted(name for name, _ in result[0]) == ["ma0", "ma1"]
        assert result[1] == []
    elif kind == "node-evacuate":
        moved, failed, jobs = result
        assert failed == [] and len(moved) == len(jobs) == 1, result
    elif kind == "allocate-secondary":
        assert result in expected
    else:
        assert result == expected


def test_add_with_hail(vc):
    try:
        out = vc.Run("gnt-instance", "add", "-I", "hail", "-t", "sharedfile",
                     "--disk", "0:size=4M", "--no-install", "-B",
                     "memory=64", *CHECKS, "h1").stdout
        assert "Selected nodes for instance h1 via iallocator hail" in out
        assert Field(vc, "h1", "status") == "running"
        out = vc.Run("gnt-instance", "add", "-I", "hail", "-t", "drbd",
                     "--disk", "0:size=16M", "--no-install", "--no-start",
                     "-B", "memory=64", *CHECKS, "h2", timeout=120).stdout
        assert "Selected nodes for instance h2 via iallocator hail" in out
        pnode, snode = Field(vc, "h2", "pnode,snodes").split("|")
        assert pnode != snode
    finally:
        RemoveInstances(vc, "h1", "h2")


def test_multi_alloc_with_hail(vc):
    specs = [opcodes.OpInstanceCreate(
        instance_name=name, disk_template="diskless", disks=[], nics=[],
        no_install=True, name_check=False, ip_check=False, start=False,
        beparams={"maxmem": 64, "minmem": 64}) for name in ("hm1", "hm2")]
    try:
        with vc.Luxi() as client:
            job_id = client.SubmitJob([opcodes.OpInstanceMultiAlloc(
                iallocator="hail", instances=specs)])
            assert WaitForJob(client, job_id, timeout=60) == "success"
            (result, ), = client.QueryJobs([job_id], ["opresult"])[0]
            assert sorted(result["allocatable"]) == ["hm1", "hm2"]
            for status, follow_up in result["jobs"]:
                assert status is True
                assert WaitForJob(client, follow_up, timeout=60) == \
                    "success"
    finally:
        RemoveInstances(vc, "hm1", "hm2")


def test_migrate_and_replace_disks_with_hail(vc):
    old = PrimaryNode(vc, "sh1")
    out = vc.Run("gnt-instance", "migrate", "-f", "-I", "hail", "sh1").stdout
    assert "via iallocator hail" in out, out
    assert PrimaryNode(vc, "sh1") != old
    assert Field(vc, "sh1", "status") == "running"
    out = vc.Run("gnt-instance", "replace-disks", "-I", "hail", "dr1",
                 timeout=120).stdout
    assert "Selected new secondary for instance 'dr1': %s" % NODE3 in out, \
        out
    assert Field(vc, "dr1", "snodes") == NODE3


def test_node_evacuate_with_hail(vc):
    # hail moves no file instance (it can't change node)
    RemoveInstances(vc, "fi1")
    pnode = PrimaryNode(vc, "sh1")
    out = vc.Run("gnt-node", "evacuate", "-f", "-p", "-I", "hail",
                 pnode).stdout
    assert "All instances evacuated successfully." in out, out
    assert PrimaryNode(vc, "sh1") != pnode
    assert vc.Run("gnt-node", "list", "--no-headers", "-o", "pinst_cnt",
                  pnode).stdout.strip() == "0"
    snode = Field(vc, "dr1", "snodes")
    out = vc.Run("gnt-node", "evacuate", "-f", "-s", "-I", "hail", snode,
                 timeout=120).stdout
    assert "All instances evacuated successfully." in out, out
    assert Field(vc, "dr1", "snodes") not in (snode, "")


def test_change_group_with_hail(vc, tmp_path):
    # hail's capacity check wants every group to survive the loss of a
    # node, which a three-node cluster split in two can't: it is turned
    # off, through the cluster's allocator parameters as an admin would
    RemoveInstances(vc, "dr1")
    if PrimaryNode(vc, "sh1") != NODE1:
        vc.Run("gnt-instance", "migrate", "-f", "-n", NODE1, "sh1")
    vc.Run("gnt-group", "assign-nodes", "g2", NODE2, NODE3)
    message = _Message(vc, "--mode", "change-group", "--target-groups",
                       "g2", "sh1")
    assert message["request"]["target_groups"] == [_GroupUuid(vc, "g2")]
    answer = _RunHail(vc, message, tmp_path, "--no-capacity-checks")
    (moved, ), failed, _ = _Validate(vc, message, answer)
    assert failed == [] and moved[:2] == ["sh1", "g2"], answer
    vc.Run("gnt-cluster", "modify", "--default-iallocator-params",
           "-no-capacity-checks")
    try:
        out = vc.Run("gnt-instance", "change-group", "-I", "hail", "--to",
                     "g2", "sh1").stdout
    finally:
        vc.Run("gnt-cluster", "modify", "--default-iallocator-params", "")
    assert "changed group successfully" in out, out
    assert PrimaryNode(vc, "sh1") in (NODE2, NODE3)
    assert Field(vc, "sh1", "status") == "running"
