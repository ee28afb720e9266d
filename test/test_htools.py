"""The built-in allocator, capacity and balance planning (ganeti.htools)."""

import copy
import hashlib
import json
import os
import random
import subprocess
import sys

import pytest

import ganeti
from ganeti import errors, opcodes
from ganeti.htools import (FAIL_DISK, allocator, balance, capacity, metrics,
                           model, moves, movescore, placement, simu,
                           utilisation)

pytestmark = pytest.mark.unit

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUP = "f4e06e0d-528a-4963-a5ad-10f3e114232d"


def _Example() -> dict:
    """The allocation example of iallocator.rst."""
    ipolicy = {
        "disk-templates": ["drbd", "plain"],
        "minmax": [{"max": {"cpu-count": 2, "disk-count": 8,
                            "disk-size": 2048, "memory-size": 12800,
                            "nic-count": 8, "spindle-use": 8},
                    "min": {"cpu-count": 1, "disk-count": 1,
                            "disk-size": 1024, "memory-size": 128,
                            "nic-count": 1, "spindle-use": 1}}],
        "spindle-ratio": 32.0,
        "std": {"cpu-count": 1, "disk-count": 1, "disk-size": 1024,
                "memory-size": 128, "nic-count": 1, "spindle-use": 1},
        "vcpu-ratio": 4.0}

    def node(total_disk, free_disk, tags):
        return {"total_disk": total_disk, "free_disk": free_disk,
                "tags": tags, "group": GROUP, "free_memory": 3505,
                "total_memory": 4095}

    return {
        "version": 2, "cluster_name": "cluster1.example.com",
        "cluster_tags": [], "enabled_hypervisors": ["xen-pvm"],
        "nodegroups": {GROUP: {"name": "default",
                               "alloc_policy": "preferred",
                               "networks": ["net-uuid-1", "net-uuid-2"],
                               "ipolicy": ipolicy,
                               "tags": ["ng-tag-1", "ng-tag-2"]}},
        "instances": {
            "instance1.example.com": {
                "tags": [], "should_run": False,
                "disks": [{"mode": "w", "size": 64},
                          {"mode": "w", "size": 512}],
                "nics": [{"ip": None, "mac": "aa:00:00:00:60:bf",
                          "bridge": "xen-br0"}],
                "vcpus": 1, "disk_template": "plain", "memory": 128,
                "nodes": ["nodee1.com"], "os": "debootstrap+default"},
            "instance2.example.com": {
                "tags": [], "should_run": False,
                "disks": [{"mode": "w", "size": 512},
                          {"mode": "w", "size": 256}],
                "nics": [{"ip": None, "mac": "aa:00:00:55:f8:38",
                          "bridge": "xen-br0"}],
                "vcpus": 1, "disk_template": "drbd", "memory": 512,
                "nodes": ["node2.example.com", "node3.example.com"],
                "os": "debootstrap+default"}},
        "nodes": {
            "node1.example.com": node(858276, 856740, []),
            "node2.example.com": node(858240, 848320, ["test"]),
            "node3.example.com": node(572184, 570648, [])},
        "request": {
            "type": "allocate", "name": "instance3.example.com",
            "required_nodes": 2, "disk_space_total": 3328,
            "disks": [{"mode": "w", "size": 1024},
                      {"mode": "w", "size": 2048}],
            "nics": [{"ip": None, "mac": "00:11:22:33:44:55",
                      "bridge": None}],
            "vcpus": 1, "disk_template": "drbd", "memory": 2048,
            "os": "debootstrap+default", "tags": ["type:test", "owner:foo"],
            "hypervisor": "xen-pvm"}}


def _Small(nodes: int = 3, memory: int = 4096, **kwargs) -> dict:
    return simu.Message(nodes, memory=memory, **kwargs)


def test_example_allocation_drbd():
    answer = allocator.Run(_Example())
    assert answer["success"], answer
    assert len(answer["result"]) == 2
    assert len(set(answer["result"])) == 2
    assert set(answer["result"]) <= set(_Example()["nodes"])
    assert answer["info"].startswith("Request successful: Selected group:"
                                     " default")
    assert answer == allocator.Run(_Example())


def test_example_relocation():
    msg = _Example()
    msg["request"] = {"type": "relocate", "name": "instance2.example.com",
                      "required_nodes": 1, "disk_space_total": 832,
                      "relocate_from": ["node3.example.com"]}
    answer = allocator.Run(msg)
    assert answer["success"], answer
    assert answer["result"] == ["node1.example.com"]


def test_relocate_from_must_be_the_secondary():
    msg = _Example()
    msg["request"] = {"type": "relocate", "name": "instance2.example.com",
                      "required_nodes": 1,
                      "relocate_from": ["node2.example.com"]}
    answer = allocator.Run(msg)
    assert not answer["success"] and answer["result"] == []
    assert "must be [node3.example.com]" in answer["info"]


@pytest.mark.parametrize("size", [1, 2, 10, 100, 1000])
def test_generated_clusters(size):
    msg = simu.Message(size, size * 5, request=simu.AllocRequest())
    answer = allocator.Run(msg)
    assert answer["success"], answer["info"][:300]
    assert len(answer["result"]) == 1 and answer["result"][0] in msg["nodes"]
    assert allocator.Run(copy.deepcopy(msg)) == answer


@pytest.mark.parametrize("size", [2, 5, 20])
def test_generated_clusters_drbd(size):
    msg = simu.Message(size, size * 3, groups=2 if size > 2 else 1,
                       templates=("drbd", "plain"),
                       request=simu.AllocRequest(template="drbd"))
    answer = allocator.Run(msg)
    assert answer["success"], answer["info"][:300]
    pnode, snode = answer["result"]
    assert pnode != snode
    assert msg["nodes"][pnode]["group"] == msg["nodes"][snode]["group"]
    assert allocator.Run(msg) == answer


def test_fills_the_emptiest_node():
    msg = _Small(3, memory=8192)
    msg["nodes"]["node0001.example.com"]["free_memory"] = 7000
    msg["nodes"]["node0002.example.com"]["free_memory"] = 2000
    msg["request"] = simu.AllocRequest(memory=1024)
    assert allocator.Run(msg)["result"] == ["node0000.example.com"]


def test_failure_memory_names_node_and_values():
    msg = _Small(3, memory=2560)
    msg["request"] = simu.AllocRequest(memory=2048)
    answer = allocator.Run(msg)
    assert not answer["success"] and answer["result"] == []
    assert "FailMem: 3" in answer["info"]
    assert "node0000.example.com: memory 2048 MiB needed, 1536 MiB free" \
        in answer["info"]


def test_failure_summary_mixes_modes():
    msg = _Small(4, memory=8192)
    msg["nodes"]["node0000.example.com"]["free_memory"] = 100
    msg["nodes"]["node0001.example.com"]["free_disk"] = 10
    msg["nodes"]["node0002.example.com"]["total_cpus"] = 1
    msg["nodes"]["node0002.example.com"]["free_memory"] = 200
    msg["nodes"]["node0003.example.com"]["offline"] = True
    msg["request"] = simu.AllocRequest(memory=1024, disk=1024)
    answer = allocator.Run(msg)
    assert not answer["success"]
    assert "failure reasons: FailMem: 2, FailDisk: 1" in answer["info"]
    assert "node0001.example.com: disk 1024 MiB needed, 10 MiB free" in \
        answer["info"]
    assert "node0003" not in answer["info"]


def test_failure_vcpu_ratio():
    msg = _Small(1, memory=8192, cpus=1)
    msg["request"] = simu.AllocRequest(vcpus=8)
    answer = allocator.Run(msg)
    assert "FailCPU: 1" in answer["info"]
    assert "vcpus 8 needed, 4 of 4 allowed (vcpu-ratio 4) free" in \
        answer["info"]


def test_failure_instance_policy():
    msg = _Small(2, memory=65536)
    msg["request"] = simu.AllocRequest(memory=40000)
    answer = allocator.Run(msg)
    assert "FailMem: 2" in answer["info"]
    assert "memory 40000 outside the instance policy range [128, 32768]" \
        in answer["info"]


def test_exclusion_tags():
    msg = simu.Message(2, 1, memory=8192)
    msg["cluster_tags"] = ["htools:iextags:service"]
    msg["instances"]["inst00000.example.com"]["tags"] = ["service:db"]
    msg["request"] = simu.AllocRequest(tags=["service:db"])
    assert allocator.Run(msg)["result"] == ["node0001.example.com"]
    msg["nodes"]["node0001.example.com"]["drained"] = True
    answer = allocator.Run(msg)
    assert not answer["success"]
    assert "FailTags: 1" in answer["info"]
    assert "exclusion tag service:db" in answer["info"]
    # Only tags "<prefix>:..." are exclusion tags: "services:db" shares
    # the prefix's letters, not the prefix
    msg["instances"]["inst00000.example.com"]["tags"] = ["services:db"]
    msg["request"] = simu.AllocRequest(tags=["services:db"])
    assert allocator.Run(msg)["result"] == ["node0000.example.com"]


def test_offline_drained_not_vm_capable_never_chosen():
    msg = _Small(4, memory=8192)
    msg["nodes"]["node0000.example.com"]["offline"] = True
    msg["nodes"]["node0001.example.com"]["drained"] = True
    msg["nodes"]["node0002.example.com"]["vm_capable"] = False
    msg["request"] = simu.AllocRequest()
    assert allocator.Run(msg)["result"] == ["node0003.example.com"]


def test_group_policies():
    msg = simu.Message(4, groups=2, memory=8192)
    groups = msg["nodegroups"]
    first, second = sorted(groups)
    groups[first]["alloc_policy"] = "last_resort"
    msg["request"] = simu.AllocRequest()
    answer = allocator.Run(msg)
    assert msg["nodes"][answer["result"][0]]["group"] == second
    groups[second]["alloc_policy"] = "unallocable"
    answer = allocator.Run(msg)
    assert msg["nodes"][answer["result"][0]]["group"] == first
    groups[first]["alloc_policy"] = "unallocable"
    assert not allocator.Run(msg)["success"]
    msg["request"]["group_name"] = groups[second]["name"]
    answer = allocator.Run(msg)
    assert msg["nodes"][answer["result"][0]]["group"] == second


def test_restrict_to_nodes():
    msg = _Small(4, memory=8192)
    msg["request"] = simu.AllocRequest(**{"restrict-to-nodes":
                                          ["node0002.example.com"]})
    assert allocator.Run(msg)["result"] == ["node0002.example.com"]
    answer = allocator.Run(msg, options={"restrict-allocation-to":
                                         "node0003.example.com"})
    assert answer["result"] == ["node0003.example.com"]


def test_multi_allocate_sees_previous_allocations():
    msg = _Small(2, memory=4096)
    msg["request"] = {"type": "multi-allocate", "instances": [
        simu.AllocRequest(name="a", memory=2048),
        simu.AllocRequest(name="b", memory=2048),
        simu.AllocRequest(name="c", memory=2048)]}
    answer = allocator.Run(msg)
    assert answer["success"]
    done, failed = answer["result"]
    assert sorted(nodes[0] for _, nodes in done) == [
        "node0000.example.com", "node0001.example.com"]
    assert [name for name, _ in done] == ["a", "b"]
    assert failed == ["c"]
    assert "c: No valid allocation solutions" in answer["info"]


def test_explain():
    msg = _Small(3, memory=8192)
    msg["nodes"]["node0002.example.com"]["free_memory"] = 3000
    msg["request"] = simu.AllocRequest()
    answer = allocator.Run(msg, explain=True)
    text = answer["explanation"]
    assert "Top candidates" in text
    assert "node0002.example.com" in text
    # equal scores: the winner is the node tried last, as hail's
    assert "Winner node0001.example.com beats node0000.example.com by" \
        " 0.00000000: equal score, tried last (as hail)" in text
    assert "explanation" not in allocator.Run(msg)


def _EvacMessage(mode: str, instances: list[str]) -> dict:
    msg = simu.Message(4, 6, memory=16384,
                       templates=("drbd", "diskless", "plain"))
    msg["request"] = {"type": "node-evacuate", "instances": instances,
                      "evac_mode": mode}
    return msg


def test_node_evacuate_primary_only():
    # inst0 drbd, inst1 diskless, inst2 plain; all on node0..2
    msg = _EvacMessage("primary-only", ["inst00000.example.com",
                                        "inst00001.example.com",
                                        "inst00002.example.com"])
    answer = allocator.Run(msg)
    assert answer["success"]
    moved, failed, jobs = answer["result"]
    assert [m[0] for m in moved] == ["inst00000.example.com",
                                     "inst00001.example.com"]
    assert moved[0][2] == list(reversed(
        msg["instances"]["inst00000.example.com"]["nodes"]))
    assert failed == [["inst00002.example.com",
                       "Instances of type plain cannot be relocated"]]
    assert jobs[0] == [{
        "OP_ID": "OP_INSTANCE_MIGRATE", "instance_name":
        "inst00000.example.com", "allow_runtime_changes": False,
        "ignore_ipolicy": False, "cleanup": False, "allow_failover": True,
        "ignore_hvversions": True}]
    assert jobs[1][0]["OP_ID"] == "OP_INSTANCE_MIGRATE"
    assert jobs[1][0]["target_node"] not in ("node0001.example.com", )
    assert moved[1][1] == "default"


def test_node_evacuate_secondary_and_all():
    msg = _EvacMessage("secondary-only", ["inst00000.example.com"])
    old = msg["instances"]["inst00000.example.com"]["nodes"]
    moved, failed, jobs = allocator.Run(msg)["result"]
    assert failed == []
    assert moved[0][2][0] == old[0] and moved[0][2][1] not in old
    assert jobs[0][0]["OP_ID"] == "OP_INSTANCE_REPLACE_DISKS"
    assert jobs[0][0]["mode"] == "replace_new_secondary"
    assert jobs[0][0]["remote_node"] == moved[0][2][1]
    msg = _EvacMessage("all", ["inst00000.example.com"])
    moved, failed, jobs = allocator.Run(msg)["result"]
    assert not set(moved[0][2]) & set(old)
    assert [op["OP_ID"] for op in jobs[0]] == [
        "OP_INSTANCE_REPLACE_DISKS", "OP_INSTANCE_MIGRATE",
        "OP_INSTANCE_REPLACE_DISKS"]


def test_change_group():
    msg = simu.Message(6, 2, groups=2, memory=16384,
                       templates=("drbd", "diskless"))
    msg["request"] = {"type": "change-group", "target_groups": [],
                      "instances": ["inst00000.example.com",
                                    "inst00001.example.com"]}
    answer = allocator.Run(msg)
    moved, failed, jobs = answer["result"]
    assert failed == []
    assert [m[1] for m in moved] == ["group1", "group1"]
    for _, _, nodes in moved:
        assert all(msg["nodes"][n]["group"] == "group-0001-uuid"
                   for n in nodes)
    assert len(jobs[0]) == 3 and len(jobs[1]) == 1


def test_change_group_copies_plain_and_file_instances():
    """hail refuses them; we answer a copy of the disks to the best node
    of the other group (``OP_INSTANCE_MOVE``), checked like a primary."""
    msg = simu.Message(4, 2, groups=2, memory=16384,
                       templates=("plain", "file"))
    insts = ["inst00000.example.com", "inst00001.example.com"]
    msg["request"] = {"type": "change-group", "target_groups": [],
                      "instances": insts}
    moved, failed, jobs = allocator.Run(msg)["result"]
    assert failed == []
    assert [m[0] for m in moved] == insts
    for (_, group, nodes), job in zip(moved, jobs):
        assert group == "group1" and len(nodes) == 1
        assert msg["nodes"][nodes[0]]["group"] == "group-0001-uuid"
        assert job == [{"OP_ID": "OP_INSTANCE_MOVE",
                        "instance_name": job[0]["instance_name"],
                        "target_node": nodes[0], "shutdown_timeout": 120,
                        "ignore_consistency": False,
                        "ignore_ipolicy": False}]
        opcodes.OpCode.LoadOpCode(job[0]).Validate(False)
    # both fit on either node of group1: the second goes to the emptier
    assert moved[0][2] != moved[1][2]
    # the target's disk is checked as for a new primary
    for name, data in msg["nodes"].items():
        if data["group"] == "group-0001-uuid":
            data["free_disk"] = 1024
    moved, failed, jobs = allocator.Run(msg)["result"]
    assert moved == [] and jobs == []
    assert [f[0] for f in failed] == insts
    assert "FailDisk: 2" in failed[0][1], failed
    assert "disk 10240 MiB needed, 1024 MiB free" in failed[0][1], failed
    # node evacuation still refuses them, as hail does
    msg["request"] = {"type": "node-evacuate", "instances": insts[:1],
                      "evac_mode": "all"}
    _, failed, _ = allocator.Run(msg)["result"]
    assert "cannot be relocated" in failed[0][1]


def test_allocate_secondary():
    msg = simu.Message(3, 1, memory=16384)
    msg["request"] = {"type": "allocate-secondary",
                      "name": "inst00000.example.com"}
    answer = allocator.Run(msg)
    assert answer["success"]
    assert answer["result"] in ("node0001.example.com",
                                "node0002.example.com")


@pytest.mark.parametrize("message", [
    [], {}, {"request": {"type": "bogus"}},
    {"request": {"type": "allocate"}, "nodes": {"n": {"group": "g",
                                                      "total_memory": "x"}}},
])
def test_malformed_input_raises(message):
    with pytest.raises(errors.ParameterError):
        allocator.Run(message)


def test_score_components():
    msg = simu.Message(2, memory=8192)
    cluster = model.Cluster(msg)
    nodes = list(cluster.nodes.values())
    assert metrics.ClusterScore(nodes) == 0.0
    msg["nodes"]["node0000.example.com"]["free_memory"] = 1024
    cluster = model.Cluster(msg)
    score = metrics.Score(list(cluster.nodes.values()))
    # pMem 1024/8192 vs 7168/8192: std-dev 0.375, weights 0.5 (+ forth)
    assert score.Components()["free_mem_cv"] == pytest.approx(0.375)
    assert score.Total() == pytest.approx(0.375)
    msg["nodes"]["node0001.example.com"]["offline"] = True
    msg["instances"] = {"i": {"nodes": ["node0001.example.com"],
                              "memory": 128, "disk_template": "plain"}}
    cluster = model.Cluster(msg)
    # one primary on an offline node: 4 + 16
    assert metrics.ClusterScore(list(cluster.nodes.values())) == 20.0


def _DrbdPair(free_secondary: int, **secondary) -> dict:
    """Three 8 GiB nodes; one DRBD instance of 2 GiB with its primary on
    node0000 and its secondary on node0002, which has
    ``free_secondary`` MiB free (and the ``secondary`` node fields)."""
    msg = simu.Message(3, memory=8192,
                       request=simu.AllocRequest(memory=512))
    msg["instances"] = {"db.example.com": {
        "nodes": ["node0000.example.com", "node0002.example.com"],
        "memory": 2048, "disk_template": "drbd", "admin_state": "up",
        "disks": [{"size": 1024}], "disk_space_total": 1024}}
    msg["nodes"]["node0002.example.com"].update(
        free_memory=free_secondary, **secondary)
    return msg


def test_global_n1_refuses_when_a_secondary_cannot_take_over():
    # node0002 could not run db.example.com if node0000 failed: hail's
    # capacity check refuses every placement and names the node
    answer = allocator.Run(_DrbdPair(1024))
    assert not answer["success"]
    assert "failure reasons: FailN1: 3;" in answer["info"]
    assert "node0002.example.com: cannot take over the instances of" \
        " node0000.example.com (N+1): memory 2048 MiB needed, 1024 MiB" \
        " free" in answer["info"]
    answer = allocator.Run(_DrbdPair(1024),
                           options={allocator.OPT_NO_CAPACITY: ""})
    assert answer["success"], answer["info"]
    assert allocator.Run(_DrbdPair(4096))["success"]


def test_global_n1_drained_secondary_keeps_its_memory():
    # hail reads a drained node's resources: it can still take over
    answer = allocator.Run(_DrbdPair(4096, drained=True))
    assert answer["success"], answer["info"]
    assert answer["result"] != ["node0002.example.com"]
    answer = allocator.Run(_DrbdPair(1024, drained=True))
    assert not answer["success"] and "FailN1" in answer["info"]


def test_global_n1_pair_whose_secondary_could_not_fail_over():
    # Two nodes, node0001 short of memory: as primary it fails, as
    # secondary only the soft check stops it; with soft errors ignored
    # the capacity check still refuses the pair
    msg = simu.Message(2, memory=8192,
                       request=simu.AllocRequest(template="drbd",
                                                 memory=3000))
    msg["nodes"]["node0001.example.com"]["free_memory"] = 2500
    answer = allocator.Run(copy.deepcopy(msg))
    assert not answer["success"] and "FailN1" not in answer["info"]
    soft = {allocator.OPT_IGNORE_SOFT_ERRORS: ""}
    answer = allocator.Run(copy.deepcopy(msg), options=soft)
    assert not answer["success"]
    assert "failure reasons: FailMem: 1, FailN1: 1;" in answer["info"]
    answer = allocator.Run(copy.deepcopy(msg), options=dict(
        soft, **{allocator.OPT_NO_CAPACITY: ""}))
    assert answer["result"] == ["node0000.example.com",
                                "node0001.example.com"]


def test_global_n1_takes_the_best_redundant_candidate():
    # node0000 is the secondary of a 3 GiB instance of node0001. With soft
    # errors ignored, breaking its N+1 (score +1) beats sharing an
    # exclusion tag on node0002 (+2); the capacity check skips it (one
    # FailN1) and takes the next best
    msg = simu.Message(3, memory=16384, request=simu.AllocRequest(
        memory=4096, tags=["svc:a"]))
    msg["cluster_tags"] = ["htools:iextags:svc"]
    msg["instances"] = {"db.example.com": {
        "nodes": ["node0001.example.com", "node0000.example.com"],
        "memory": 3072, "disk_template": "drbd", "disks": [{"size": 1024}]}}
    for idx in (1, 2):
        msg["instances"]["web%d.example.com" % idx] = {
            "nodes": ["node000%d.example.com" % idx], "memory": 128,
            "disk_template": "plain", "disks": [{"size": 1024}],
            "tags": ["svc:a"]}
    msg["nodes"]["node0000.example.com"]["free_memory"] = 7000
    msg["nodes"]["node0001.example.com"]["free_memory"] = 4000
    msg["nodes"]["node0002.example.com"]["free_memory"] = 6000
    soft = {allocator.OPT_IGNORE_SOFT_ERRORS: ""}
    answer = allocator.Run(copy.deepcopy(msg), options=dict(
        soft, **{allocator.OPT_NO_CAPACITY: ""}))
    assert answer["result"] == ["node0000.example.com"]
    answer = allocator.Run(copy.deepcopy(msg), options=soft)
    assert answer["result"] == ["node0002.example.com"]
    assert "failures 2 (FailMem: 1, FailN1: 1)" in answer["info"]


@pytest.mark.parametrize("seed", range(4))
def test_pair_scores_equal_full_rescoring(seed):
    # The pair scores come from per-primary partial sums and cached
    # secondaries; they must equal scoring each placement in full
    rnd = random.Random(seed)
    msg = simu.Message(12, 60, templates=("drbd", "plain"), seed=seed,
                       memory=16384)
    msg["cluster_tags"] = ["htools:nlocation:rack"]
    for node in msg["nodes"].values():
        node["free_memory"] -= rnd.randint(0, 4000)
        node["tags"] = ["rack:%d" % rnd.randint(0, 2)]
    cluster = model.Cluster(msg)
    score = metrics.Score(list(cluster.nodes.values()))
    inst = cluster.NewInstance("new", simu.AllocRequest(template="drbd"))
    [group] = cluster.groups.values()
    result = placement.TryGroup(cluster, score, group, inst, 2)
    assert len(result.candidates) > 50
    for cand in result.candidates:
        pnode, snode = (cluster.nodes[name] for name in cand.nodes)
        assert pnode.AddPri(inst) is None
        assert snode.AddSec(inst, pnode.name) is None
        shared = len(pnode.locations & snode.locations)
        pnode.loc_score += shared
        assert cand.score == round(score.With([pnode, snode]), 10)
        pnode.loc_score -= shared
        snode.RemoveSec(inst, pnode.name)
        pnode.RemovePri(inst)


@pytest.mark.parametrize("seed", range(3))
def test_twin_components_score_as_their_twins(seed):
    """Components equal on every node by construction are scored as one
    (``metrics.TWIN_LOADS``): the same score and components as each
    scored on its own, through the planner's moves; a stopped instance
    (memory it wants back) or load data telling the cpu from the memory
    load keeps them apart."""
    msg = simu.Message(12, 80, templates=("drbd", "diskless"), seed=seed,
                       skew=0.5)
    cluster = model.Cluster(msg)
    nodes = list(cluster.nodes.values())
    assert all(node.twin_forth and node.twin_load for node in nodes)

    def apart() -> metrics.Score:
        for node in nodes:
            node.twin_forth = node.twin_load = False
        try:
            return metrics.Score(nodes)
        finally:
            for node in nodes:
                node.twin_forth = node.twin_load = True

    plan = balance.PlanBalance(copy.deepcopy(msg))
    assert plan.steps
    for step in plan.steps:
        folded = metrics.Score(nodes)
        assert len(folded.weights) == len(apart().weights) - 3
        assert folded.Total() == pytest.approx(apart().Total(), abs=1e-12)
        assert folded.Components() == pytest.approx(apart().Components(),
                                                    abs=1e-12)
        assert not isinstance(moves.ApplyMove(cluster, step.move),
                              model.Failure)
    name = sorted(msg["instances"])[0]
    msg["instances"][name]["admin_state"] = "down"
    assert not any(node.twin_forth
                   for node in model.Cluster(msg).nodes.values())
    cluster = model.Cluster(msg, {name: (0.5, 0.25, 0.5, 0.5)})
    assert not any(node.twin_load for node in cluster.nodes.values())
    assert len(metrics.Score(list(cluster.nodes.values())).weights) == 10


@pytest.mark.parametrize("kind", [moves.REPLACE_PRIMARY,
                                  moves.FAILOVER_AND_REPLACE])
def test_composite_moves_only_free_the_old_primary(kind):
    """As hbal's ``applyMoveEx``: replace-primary and failover-and-replace
    never make the old primary the secondary, so a primary that could
    not host the instance as a secondary (no free memory left) does not
    stop them; the planner's score of the move is that of doing it."""
    msg = simu.Message(4, 1, templates=("drbd", ))
    [(name, data)] = msg["instances"].items()
    pname, sname = data["nodes"]
    msg["nodes"][pname]["free_memory"] = 0
    cluster = model.Cluster(msg)
    inst = cluster.instances[name]
    pnode = cluster.nodes[pname]
    pnode.RemovePri(inst)
    assert isinstance(pnode.AddSec(inst, sname), model.Failure)
    pnode.PlacePri(inst)
    target = next(node for node in sorted(cluster.nodes)
                  if node not in (pname, sname))
    score = metrics.Score(list(cluster.nodes.values()))
    evaluator = movescore.Evaluator(cluster, score, True)
    move = moves.Move(name, kind, target)
    value = evaluator.Value(move)
    applied = moves.ApplyMove(cluster, move)
    assert not isinstance(applied, model.Failure), applied
    assert pname not in (inst.pnode, inst.snode)
    assert value == round(metrics.ClusterScore(
        list(cluster.nodes.values())), 10)


def test_secondaries_use_spindles():
    """As Ganeti's ``calcSpindleUse``: a DRBD secondary's disks count in
    its node's spindle use, from the message and on every move, and a
    strict placement of a secondary beyond the spindle limit fails."""
    msg = simu.Message(3, 1, templates=("drbd", ))
    [(name, data)] = msg["instances"].items()
    data["spindle_use"] = 3
    cluster = model.Cluster(msg)
    inst = cluster.instances[name]
    pnode, snode = (cluster.nodes[node] for node in data["nodes"])
    assert pnode.inst_sp == snode.inst_sp == 3
    [other] = set(cluster.nodes.values()) - {pnode, snode}
    other.hi_sp = 2
    failure = other.AddSec(inst, pnode.name)
    assert isinstance(failure, model.Failure)
    assert failure.mode == FAIL_DISK and "spindles" in failure.text
    assert other.AddSec(inst, pnode.name, strict=False) is None
    assert other.inst_sp == 3
    other.RemoveSec(inst, pnode.name)
    assert other.inst_sp == 0


def test_single_node_scores_follow_the_dynamic_load():
    """Nodes in the same state but for their instances' dynamic load must
    not share a memoized score (a placement's score reads the load)."""
    msg = simu.Message(4, 4, templates=("plain", ), memory=16384)
    names = sorted(msg["instances"])
    # every node holds one instance of the same size, with its own load
    for index, name in enumerate(names):
        data = msg["instances"][name]
        data.update(memory=1024, vcpus=1, disks=[{"size": 1024,
                                                  "mode": "rw"}],
                    disk_space_total=1024, spindle_use=1,
                    nodes=["node%04d.example.com" % index])
    for data in msg["nodes"].values():
        data.update(free_memory=16384 - 1024, free_disk=data["total_disk"]
                    - 1024, i_pri_memory=1024, i_pri_up_memory=1024)
    util = {name: (0.5 + index, 0.5 + index, 0.5, 0.5 + index)
            for index, name in enumerate(names)}
    cluster = model.Cluster(msg, util)
    score = metrics.Score(list(cluster.nodes.values()))
    inst = cluster.NewInstance("new", simu.AllocRequest())
    [group] = cluster.groups.values()
    result = placement.TryGroup(cluster, score, group, inst, 1)
    assert len(result.candidates) == 4
    assert len({cand.score for cand in result.candidates}) > 1
    for cand in result.candidates:
        node = cluster.nodes[cand.nodes[0]]
        assert node.AddPri(inst) is None
        assert cand.score == round(score.With([node]), 10)
        node.RemovePri(inst)


def test_instances_built_on_demand():
    msg = simu.Message(2, 4)
    msg["instances"]["broken"] = {"nodes": ["node0000.example.com"],
                                  "disks": 5}
    cluster = model.Cluster(msg)
    assert len(cluster.instances) == 5
    inst = cluster.instances["inst00001.example.com"]
    assert inst is cluster.instances["inst00001.example.com"]
    assert inst.pnode == "node0001.example.com"
    assert "inst00001.example.com" in \
        cluster.nodes["node0001.example.com"].plist
    with pytest.raises(errors.ParameterError, match="instance broken"):
        cluster.instances["broken"]


def test_capacity_sequential_and_limit():
    """hspace's standard run: one by one until an attempt fails, the
    failures of that attempt per mode; with -l at most that many."""
    msg = simu.Message(2, memory=8192)
    report = capacity.HSpace(msg, "plain", capacity.Spec(1024, 1024, 1),
                             capacity.Spec(1024, 1024, 1))
    # 7168 MiB free per node, memory must stay above 0: 6 per node; the
    # global N+1 check keeps the room of one node free
    assert len(report.standard.specs) == 6
    assert report.standard.fails[0] == ("FailN1", 2)
    alloc = capacity.Allocator(msg, "plain", 1, capacity=False)
    fails = alloc.Iterate(capacity.Spec(1024, 1024, 1), None)
    assert len(alloc.placed) == 12
    assert capacity.SortedFails(fails)[0] == ("FailMem", 2)
    # spindles: 32 per node (spindle ratio 32, one spindle)
    alloc = capacity.Allocator(msg, "plain", 1, capacity=False)
    fails = alloc.Iterate(capacity.Spec(128, 10240, 1), None)
    assert len(alloc.placed) == 64
    assert capacity.SortedFails(fails)[0] == ("FailDisk", 2)
    alloc = capacity.Allocator(msg, "plain", 1, capacity=False)
    alloc.Iterate(capacity.Spec(128, 10240, 1), 5)
    assert len(alloc.placed) == 5


def test_capacity_tiered():
    """From the policy's maximum spec, shrinking the memory that ran out
    to the first size at which fewer nodes lack it (hspace's tiers)."""
    msg = simu.Message(2, memory=8192)
    report = capacity.HSpace(msg, "plain", capacity=False)
    assert report.tiered_spec == capacity.Spec(32768, 1048576, 8, 12)
    counts = report.tiered.SpecCounts()
    # 7168 MiB free: the largest multiple-of-64 shrink below it, twice
    assert counts[0] == (capacity.Spec(7104, 1048576, 8, 12), 2)
    assert all(count > 0 for _, count in counts)
    assert report.tiered.fails[0][0] == "FailMem"


def _DisklessThree() -> dict:
    """test_htools_compat's cluster: three nodes of different sizes (MiB
    free once their running instances are counted) and diskless
    instances, one of them stopped."""
    msg = simu.Message(3, memory=8192, disk=100000, cpus=4,
                       templates=("diskless", ))
    msg["ipolicy"]["disk-templates"] = ["diskless"]
    sizes = ((16384, 1024, 4, 11008, 4352), (8192, 512, 2, 6656, 1024),
             (12288, 1024, 4, 11264, 0))
    nodes = {}
    for idx, name in enumerate(sorted(msg["nodes"])):
        total, own, cpus, free, used = sizes[idx]
        nodes["node%d" % (idx + 1)] = dict(
            msg["nodes"][name], total_memory=total, reserved_memory=own,
            free_memory=free, total_cpus=cpus, i_pri_memory=used,
            i_pri_up_memory=used)
    msg["nodes"] = nodes

    def inst(node: str, memory: int, vcpus: int, up: bool) -> dict:
        return {"tags": [], "admin_state": "up" if up else "down",
                "admin_state_source": "admin", "vcpus": vcpus,
                "memory": memory, "spindle_use": 1, "os": "none",
                "nodes": [node], "nics": [], "disks": [],
                "disk_template": "diskless", "disks_active": True,
                "hypervisor": "kvm", "disk_space_total": 0}
    msg["instances"] = {"big1": inst("node1", 4096, 2, True),
                        "small1": inst("node1", 256, 1, True),
                        "mid2": inst("node2", 1024, 1, True),
                        "stopped3": inst("node3", 2048, 2, False)}
    return msg


def test_tiered_stops_at_n1_failures():
    """Ganeti 3.0's tieredAlloc shrinks by the most frequent failure
    only: N+1 failures shrink nothing, and no other failure occurred,
    so the run ends (Ganeti's hspace -t on this cluster:
    HTS_TSPEC='2048,1024,1,1=6')."""
    report = capacity.HSpace(_DisklessThree(), "diskless",
                             tiered=capacity.Spec(2048, 1024, 1))
    assert report.tiered.SpecCounts() == [(capacity.Spec(2048, 1024, 1),
                                          6)]
    assert report.tiered.fails[0] == ("FailN1", 3)


def test_global_n1_moves_the_newest_instances_first():
    """A failing node's instances move in hail's node list order, the
    last added first: node3's 9000 MiB instance, added last, takes
    node1's room before stopped3 does, and the 1960 MiB instance on
    node1 leaves no room for node1's big1 once it goes first (Ganeti's
    hspace refuses it; in name order both would fit)."""
    msg = _DisklessThree()
    cluster = model.Cluster(msg)
    assert cluster.instances.NewestFirst(["big1", "small1"]) == \
        ["small1", "big1"]
    alloc = capacity.Allocator(msg, "diskless", 1)
    for memory, node in ((9000, "node3"), (2536, "node2")):
        spec = capacity.Spec(memory, 1024, 1)
        attempt = alloc.Try(spec)
        assert attempt.nodes == (node, )
        alloc._Commit(spec, attempt.nodes)
    assert alloc.cluster.instances.NewestFirst(
        alloc.cluster.nodes["node3"].plist) == ["new-0", "stopped3"]
    attempt = alloc.Try(capacity.Spec(1960, 1024, 1))
    assert attempt.nodes is None
    assert attempt.fails == {"FailN1": 2, "FailMem": 1}
    assert alloc.Try(capacity.Spec(1960, 1024, 1), capacity=False).nodes


def test_balance_lowers_score_with_disjoint_jobsets():
    msg = simu.Message(10, 60, memory=32768, skew=0.5,
                       templates=("drbd", "diskless"))
    plan = balance.PlanBalance(msg)
    assert plan.steps
    assert plan.final_score < plan.initial_score
    for step in plan.steps:
        assert step.after < step.before
    for jobset in plan.jobsets:
        seen: set = set()
        for step in jobset:
            assert not seen & step.nodes
            seen |= step.nodes
    assert sum(len(js) for js in plan.jobsets) == len(plan.steps)
    jobs = plan.Jobs()
    assert all(op["OP_ID"] in ("OP_INSTANCE_MIGRATE",
                               "OP_INSTANCE_REPLACE_DISKS")
               for jobset in jobs for job in jobset for op in job)
    again = balance.PlanBalance(msg)
    assert [s.move for s in again.steps] == [s.move for s in plan.steps]


def test_balance_options():
    msg = simu.Message(10, 60, memory=32768, skew=0.5,
                       templates=("drbd", ))
    plan = balance.PlanBalance(msg, opts=balance.Options(no_disk_moves=True))
    assert all(s.move.kind == "failover" for s in plan.steps)
    plan = balance.PlanBalance(msg, opts=balance.Options(max_length=2))
    assert len(plan.steps) == 2
    plan = balance.PlanBalance(msg, opts=balance.Options(evac_mode=True))
    assert plan.steps == []
    msg["nodes"]["node0000.example.com"]["offline"] = True
    plan = balance.PlanBalance(msg, opts=balance.Options(evac_mode=True))
    assert plan.steps
    assert all("node0000.example.com" in s.nodes for s in plan.steps)
    with pytest.raises(errors.ParameterError):
        balance.PlanBalance(simu.Message(4, groups=2))


def _Halloc(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(ganeti.__file__))
    return subprocess.run([sys.executable, os.path.join(TOP, "scripts",
                                                        "halloc")] +
                          list(args), env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_halloc_program(tmp_path):
    good = tmp_path / "in.json"
    good.write_text(json.dumps(_Example()))
    result = _Halloc(str(good), "--explain")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["success"] and len(answer["result"]) == 2
    assert "explanation" in answer
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = _Halloc(str(bad))
    assert result.returncode == 1
    assert result.stdout == ""
    assert "invalid input" in result.stderr
    result = _Halloc(str(tmp_path / "missing.json"))
    assert result.returncode == 1 and "cannot read" in result.stderr


def _Candidates(inst, targets):
    """The moves ``Evaluator.Best`` looks at for an instance."""
    if inst.internal_mirror and inst.snode is not None:
        return [moves.Move(inst.name, moves.FAILOVER, None)] + [
            moves.Move(inst.name, kind, node.name) for node in targets
            if node.name not in (inst.pnode, inst.snode)
            for kind in (moves.REPLACE_SECONDARY, moves.REPLACE_AND_FAILOVER,
                         moves.REPLACE_PRIMARY, moves.FAILOVER_AND_REPLACE)]
    if inst.external_mirror:
        return [moves.Move(inst.name, moves.FAILOVER_TO_ANY, node.name)
                for node in targets if node.name != inst.pnode]
    return []


def _BruteBest(cluster, score, candidates, strict):
    """The reference: apply, score and undo every candidate."""
    best = None
    for move in candidates:
        applied = moves.ApplyMove(cluster, move, strict)
        if isinstance(applied, model.Failure):
            continue
        value = round(score.With(applied.touched), 10)
        moves.UndoMove(cluster, applied)
        key = (value, (move.instance, move.kind, move.target or ""))
        if best is None or key < best[:2]:
            best = (value, key[1], move)
    return None if best is None else (best[0], best[2])


def _AssertValues(cluster, score, evaluator, candidates, strict):
    """Each candidate's evaluated score is the applied-and-undone one
    (None where the move is not possible)."""
    for move in candidates:
        applied = moves.ApplyMove(cluster, move, strict)
        expected = None
        if not isinstance(applied, model.Failure):
            expected = round(score.With(applied.touched), 10)
            moves.UndoMove(cluster, applied)
        value = evaluator.Value(move)
        if expected is None:
            assert value is None, move
        else:
            assert value == pytest.approx(expected, abs=1e-9), move


@pytest.mark.parametrize("seed", range(12))
def test_move_scores_equal_apply_score_undo(seed):
    """The analytic candidate scores (and the pruned search for the best
    one) agree with applying, scoring and undoing each move, also after
    moves were accepted and with offline nodes and soft errors ignored."""
    rnd = random.Random(seed)
    msg = simu.Message(rnd.randint(3, 10), rnd.randint(10, 60),
                       memory=rnd.choice([8192, 32768]), seed=seed,
                       templates=("drbd", "diskless", "plain"),
                       skew=rnd.choice([0.0, 0.5]))
    for data in msg["nodes"].values():
        data["offline"] = rnd.random() < 0.15
    if seed % 3 == 0:
        # shared locations link nodes as peers do (per-pair scoring)
        msg["cluster_tags"] = ["htools:nlocation:rack"]
        for data in msg["nodes"].values():
            data["tags"] = ["rack:%d" % rnd.randint(0, 1)]
    _CheckSteps(model.Cluster(msg), rnd.random() < 0.7)


def _CheckSteps(cluster: model.Cluster, strict: bool) -> None:
    """Three greedy steps of the planner's evaluator on ``cluster``: every
    candidate's score equals applying, scoring and undoing it, its lower
    bound is below its exact score, the pruned best move is the brute
    force one (also under a limit), and the score kept up to date equals
    a full rescoring after each accepted move."""
    nodes = list(cluster.nodes.values())
    score = metrics.Score(nodes)
    assert score.Total() == pytest.approx(metrics.ClusterScore(nodes))
    evaluator = movescore.Evaluator(cluster, score, strict)
    insts = sorted(cluster.instances.values(), key=lambda inst: inst.name)
    for _ in range(3):
        candidates = [move for inst in insts
                      for move in _Candidates(inst, nodes)]
        _AssertValues(cluster, score, evaluator, candidates, strict)
        base = evaluator._Gradient()
        for inst in insts:
            for low, _, kind, target, parts in evaluator._Candidates(
                    inst, nodes, True):
                assert base + low <= evaluator._Exact(
                    parts, evaluator._PairDelta(inst, kind, target)) + 1e-9
        best = evaluator.Best(insts, nodes)
        assert best == _BruteBest(cluster, score, candidates, strict)
        if best is None:
            break
        # a limit keeps the best move when it reaches it, else finds none
        assert evaluator.Best(insts, nodes, limit=best[0]) == best
        assert evaluator.Best(insts, nodes, limit=best[0] - 1e-6) is None
        applied = moves.ApplyMove(cluster, best[1], strict)
        score.Update(applied.touched)
        evaluator.Changed({node.name for node in applied.touched})
        assert score.Total() == pytest.approx(metrics.ClusterScore(nodes))


def _ReferencePlan(msg: dict, opts: balance.Options,
                   util: dict | None = None) -> tuple[list, float]:
    """The moves and final score of ``balance.PlanBalance``'s greedy rounds
    (same levels of sources and targets, same acceptance) with each level's
    best move found by applying, scoring and undoing every candidate."""
    cluster = model.Cluster(msg, util)
    nodes = list(cluster.nodes.values())
    strict = not opts.ignore_soft_errors
    online = [node for node in nodes if not node.offline]
    offline = {node.name for node in nodes if node.offline}
    movable = [inst for inst in cluster.instances.values()
               if inst.internal_mirror or inst.external_mirror]
    score = metrics.Score(nodes)
    current = score.Total()
    result: list = []
    while current > opts.min_score:
        found = None
        for sources, tnodes in balance.Levels(score, nodes, online):
            candidates = [
                move for inst in movable
                if (inst.pnode in sources or inst.snode in sources) and
                (not opts.evac_mode or inst.pnode in offline or
                 inst.snode in offline)
                for move in _Candidates(inst, tnodes)
                if not opts.no_disk_moves or
                move.kind in (moves.FAILOVER, moves.FAILOVER_TO_ANY)]
            found = _BruteBest(cluster, score, candidates, strict)
            if found is not None and \
                    balance._Acceptable(current, found[0], opts):
                break
            found = None
        if found is None:
            break
        applied = moves.ApplyMove(cluster, found[1], strict)
        score.Update(applied.touched)
        result.append(found[1])
        current = score.Total()
    return result, current


@pytest.mark.parametrize("seed", range(4))
def test_plan_equals_full_rescoring_reference(seed):
    """The planner's pruned, memoized scoring gives the very plan of
    rescoring every candidate in full, with hbal's options."""
    rnd = random.Random(seed)
    msg = simu.Message(rnd.randint(9, 12), rnd.randint(36, 48),
                       memory=32768, seed=seed, skew=0.5,
                       templates=("drbd", "diskless", "rbd"))
    if seed == 3:
        msg["nodes"]["node0001.example.com"]["offline"] = True
    if seed == 2:
        msg["cluster_tags"] = ["htools:nlocation:rack"]
        for data in msg["nodes"].values():
            data["tags"] = ["rack:%d" % rnd.randint(0, 2)]
    variants = [balance.Options(),
                balance.Options(min_gain=0.05, min_gain_limit=0.5),
                balance.Options(no_disk_moves=True),
                balance.Options(max_cpu=1.0, ignore_soft_errors=seed % 2)]
    if seed == 3:
        variants.append(balance.Options(evac_mode=True))
    for opts in variants:
        plan = balance.PlanBalance(copy.deepcopy(msg), opts=opts)
        ref_msg = copy.deepcopy(msg)
        if opts.max_cpu is not None:
            ref_msg["ipolicy"]["vcpu-ratio"] = opts.max_cpu
            for group in ref_msg["nodegroups"].values():
                group["ipolicy"]["vcpu-ratio"] = opts.max_cpu
        expected, final = _ReferencePlan(ref_msg, opts)
        assert [step.move for step in plan.steps] == expected, opts
        assert plan.final_score == final, opts
        assert expected or opts != balance.Options(), opts


def test_plan_pinned_for_fixed_cluster():
    """The plan for a fixed skewed cluster (the benchmark's kind, through
    every level of ``balance.Levels``) stays move for move what it is:
    speed-ups of the planner must not change it."""
    msg = simu.Message(20, 160, templates=("drbd", "diskless"), skew=0.5)
    plan = balance.PlanBalance(msg)
    moved = [tuple(step.move) for step in plan.steps]
    assert moved[:2] == [
        ("inst00132.example.com", "replace-and-failover",
         "node0010.example.com"),
        ("inst00016.example.com", "replace-and-failover",
         "node0011.example.com")]
    assert (len(moved), len(plan.jobsets)) == (120, 45)
    assert round(plan.initial_score, 9) == 37.495802653
    assert round(plan.final_score, 9) == 0.371499298
    digest = hashlib.sha256("\n".join(
        "%s %s %s" % move for move in moved).encode()).hexdigest()
    assert digest == ("2bcfec7d2cbc6455e31ce314881ad9cb"
                      "c8bc5aff3fca5fddddee37299fc9b00b")


def test_reserved_memory_stays_largest_peer():
    """``Node.RemoveSec`` recomputes ``r_mem`` only when the largest peer
    shrinks: through random moves (the planner's parts do and undo the
    same steps) it must stay the largest memory reserved for a peer."""
    msg = simu.Message(6, 60, templates=("drbd", ))
    cluster = model.Cluster(msg)
    rng = random.Random(13)
    names = sorted(cluster.instances)
    nodes = sorted(cluster.nodes)
    kinds = (moves.FAILOVER, moves.REPLACE_SECONDARY,
             moves.REPLACE_AND_FAILOVER, moves.REPLACE_PRIMARY,
             moves.FAILOVER_AND_REPLACE)
    applied = 0
    for _ in range(400):
        kind = rng.choice(kinds)
        move = moves.Move(rng.choice(names), kind,
                          None if kind == moves.FAILOVER else
                          rng.choice(nodes))
        inst = cluster.instances[move.instance]
        if move.target in (inst.pnode, inst.snode):
            continue
        if not isinstance(moves.ApplyMove(cluster, move, False),
                          model.Failure):
            applied += 1
        for node in cluster.nodes.values():
            assert node.r_mem == max(node.peers.values(), default=0.0)
    assert applied > 100


def _Even(nodes: int, per_node: int) -> dict:
    """A statically balanced cluster: ``per_node`` equal diskless
    instances on each node (score 0)."""
    msg = simu.Message(nodes, nodes * per_node, templates=("diskless", ))
    for data in msg["instances"].values():
        data["memory"], data["vcpus"] = 1024, 1
    for name, data in msg["nodes"].items():
        data["free_memory"] = data["total_memory"] - 1024 - 1024 * sum(
            1 for inst in msg["instances"].values()
            if inst["nodes"][0] == name)
    return msg


def _Hot(msg: dict, node: str, cpu: float) -> dict:
    """Utilisation (CPU only): the node's primaries use ``cpu``, the
    others 0.1."""
    return {name: (cpu if data["nodes"][0] == node else 0.1, 0.0, 0.0, 0.0)
            for name, data in msg["instances"].items()}


def test_parse_utilisation():
    util = utilisation.ParseUtilisation(
        "inst1 0.5 0.25 1 0\n\n  inst2\t1e-1 0.2 0.3 0.4  \n")
    assert util == {"inst1": (0.5, 0.25, 1.0, 0.0),
                    "inst2": (0.1, 0.2, 0.3, 0.4)}
    assert utilisation.ParseUtilisation("") == {}


@pytest.mark.parametrize("text,why", [
    ("inst1 0.5 0.5 0.5\n", "line 1: expected 'name cpu_util"),
    ("inst1 0.5 0.5 0.5 0.5 0.5\n", "line 1: expected"),
    ("inst1 1 1 1 1\ninst2 1 x 1 1\n", "line 2: not a number"),
    ("inst1 1 -1 1 1\n", "line 1: values must be finite and not negative"),
    ("inst1 1 nan 1 1\n", "line 1: values must be finite"),
    ("inst1 1 1 1 1\ninst1 1 1 1 1\n", "line 2: instance inst1 given twice"),
])
def test_parse_utilisation_errors(text, why):
    with pytest.raises(errors.ParameterError, match=why):
        utilisation.ParseUtilisation(text)


def test_read_utilisation_file(tmp_path):
    path = tmp_path / "util"
    path.write_text("inst00000.example.com 0.5 0.5 0.5 0.5\n")
    assert utilisation.ReadUtilisation(str(path)) == {
        "inst00000.example.com": (0.5, 0.5, 0.5, 0.5)}
    with pytest.raises(errors.ParameterError,
                       match="Cannot read the utilisation file"):
        utilisation.ReadUtilisation(str(tmp_path / "missing"))


def test_utilisation_of_unknown_instance_aborts():
    msg = _Even(3, 2)
    with pytest.raises(errors.ParameterError,
                       match="Unknown instance\\(s\\): ghost1, ghost2"):
        balance.PlanBalance(msg, util={"ghost2": (1, 1, 1, 1),
                                       "ghost1": (1, 1, 1, 1)})


def test_load_components():
    """Per node the sums of its instances' utilisation (disk also of
    secondaries), their population std-dev over online nodes with weight
    1 each; unnamed instances count one per metric, also without any
    load data (Ganeti's ``baseUtil``)."""
    msg = simu.Message(3, 6, templates=("drbd", ), memory=32768)
    names = sorted(msg["instances"])
    util = {names[0]: (0.8, 0.4, 0.2, 0.6)}
    idle = {name: (0.0, 0.0, 0.0, 0.0) for name in names}
    plain = metrics.Score(list(model.Cluster(msg, idle).nodes.values()))
    assert plain.Components()["cpu_load_cv"] == 0.0
    default = metrics.Score(list(model.Cluster(msg).nodes.values()))
    assert default.Total() == pytest.approx(
        metrics.Score(list(model.Cluster(msg, {}).nodes.values())).Total())
    cluster = model.Cluster(msg, util)
    score = metrics.Score(list(cluster.nodes.values()))
    expected = {node: [0.0] * 4 for node in msg["nodes"]}
    for name, data in msg["instances"].items():
        values = util.get(name, model.BASE_UTIL)
        for k in range(4):
            expected[data["nodes"][0]][k] += values[k]
        expected[data["nodes"][1]][2] += values[2]
    for name, node in cluster.nodes.items():
        assert node.load == pytest.approx(expected[name])
    components = score.Components()
    total = plain.Total()
    for k, name in enumerate(metrics.LOAD_COMPONENTS):
        column = [expected[node][k] for node in sorted(expected)]
        mean = sum(column) / 3
        stddev = (sum((v - mean) ** 2 for v in column) / 3) ** 0.5
        assert components[name] == pytest.approx(stddev)
        total += stddev
    assert score.Total() == pytest.approx(total)
    # the load follows the instances as they move
    inst = cluster.instances[names[0]]
    pnode, snode = cluster.nodes[inst.pnode], cluster.nodes[inst.snode]
    before = list(pnode.load), list(snode.load)
    applied = moves.ApplyMove(cluster, moves.Move(names[0], moves.FAILOVER,
                                                  None), False)
    assert not isinstance(applied, model.Failure)
    assert pnode.load == pytest.approx([before[0][0] - 0.8,
                                        before[0][1] - 0.4, before[0][2],
                                        before[0][3] - 0.6])
    assert snode.load == pytest.approx([before[1][0] + 0.8,
                                        before[1][1] + 0.4, before[1][2],
                                        before[1][3] + 0.6])


def test_dynamic_load_moves_instances_off_a_loaded_node():
    """Static resources are balanced (nothing to do without load data);
    with a node's instances busy, instances move off it and the CPU load
    spreads."""
    msg = _Even(3, 2)
    assert balance.PlanBalance(copy.deepcopy(msg)).steps == []
    hot = "node0000.example.com"
    util = _Hot(msg, hot, 0.9)
    plan = balance.PlanBalance(copy.deepcopy(msg), util=util)
    assert plan.steps
    first = plan.steps[0].move
    assert msg["instances"][first.instance]["nodes"][0] == hot
    assert first.target != hot
    assert plan.final_score < plan.initial_score
    cluster = model.Cluster(msg, util)
    for step in plan.steps:
        moves.ApplyMove(cluster, step.move, False)
    loads = [node.load[0] for node in cluster.nodes.values()]
    assert max(loads) < 1.8
    # --ignore-dynu's effect: no data, the static plan
    assert balance.PlanBalance(copy.deepcopy(msg), util=None).steps == []


@pytest.mark.parametrize("seed", range(4))
def test_move_scores_with_load_equal_apply_score_undo(seed):
    """With load data the analytic candidate scores and the pruned search
    still agree with applying, scoring and undoing each move."""
    rnd = random.Random(seed)
    msg = simu.Message(rnd.randint(3, 8), rnd.randint(10, 40),
                       memory=32768, seed=seed,
                       templates=("drbd", "diskless", "plain"), skew=0.5)
    util = {name: tuple(round(rnd.random(), 2) for _ in range(4))
            for name in msg["instances"] if rnd.random() < 0.8}
    cluster = model.Cluster(msg, util)
    nodes = list(cluster.nodes.values())
    score = metrics.Score(nodes)
    evaluator = movescore.Evaluator(cluster, score, True)
    insts = sorted(cluster.instances.values(), key=lambda inst: inst.name)
    for _ in range(3):
        candidates = [move for inst in insts
                      for move in _Candidates(inst, nodes)]
        _AssertValues(cluster, score, evaluator, candidates, True)
        best = evaluator.Best(insts, nodes)
        assert best == _BruteBest(cluster, score, candidates, True)
        if best is None:
            break
        applied = moves.ApplyMove(cluster, best[1], True)
        score.Update(applied.touched)
        evaluator.Changed({node.name for node in applied.touched})


@pytest.mark.parametrize("seed", range(2))
def test_plan_with_load_equals_full_rescoring_reference(seed):
    rnd = random.Random(seed)
    msg = simu.Message(rnd.randint(6, 9), rnd.randint(24, 36),
                       memory=32768, seed=seed, skew=0.3,
                       templates=("drbd", "diskless"))
    util = {name: tuple(round(rnd.random(), 2) for _ in range(4))
            for name in msg["instances"]}
    plan = balance.PlanBalance(copy.deepcopy(msg), util=util)
    expected, final = _ReferencePlan(copy.deepcopy(msg), balance.Options(),
                                     util)
    assert [step.move for step in plan.steps] == expected
    assert plan.final_score == final
    assert expected


def test_utilisation_from_mond():
    """A node's busy CPU fraction is shared by its primaries in
    proportion to their vCPUs; a missing report disables the data."""
    msg = _Even(2, 2)
    names = sorted(msg["instances"])
    msg["instances"][names[0]]["vcpus"] = 3
    node0, node1 = sorted(msg["nodes"])

    def cpu(total, number):
        return {"name": "cpu-avg-load", "category": None,
                "kind": 0, "version": "B", "format_version": 1,
                "timestamp": 0, "data": {"cpu_total": total,
                                         "cpu_number": number,
                                         "cpus": [total / number] * number}}

    reports = {node0: [cpu(2.0, 4)], node1: [cpu(0.5, 4)]}
    # simu places the instances round-robin: 0 and 2 on node0
    assert [msg["instances"][name]["nodes"][0] for name in names] == \
        [node0, node1, node0, node1]
    util = utilisation.UtilisationFromMond(msg, reports)
    assert util is not None and sorted(util) == names
    for name, cpu_util in zip(names, (0.5 * 3 / 4, 0.125 / 2, 0.5 / 4,
                                       0.125 / 2)):
        # the other metrics keep hbal's default (BASE_UTIL)
        assert util[name] == pytest.approx((cpu_util, 1, 1, 1))
    assert utilisation.UtilisationFromMond(msg, {node0: reports[node0]}) \
        is None
    # an offline node's missing report does not matter
    msg["nodes"][node1]["offline"] = True
    assert utilisation.UtilisationFromMond(msg, {node0: reports[node0]})
    with pytest.raises(errors.ParameterError, match="Can't parse MonD data"):
        utilisation.ParseMondData('{"node": "x"}')
    data = utilisation.ParseMondData(json.dumps(
        [{"node": node0, "reports": reports[node0]}]))
    assert data == {node0: reports[node0]}


def test_hbal_utilisation_options(tmp_path):
    """-U and --mond-data combine (MonD's CPU load, the file's other
    metrics); --ignore-dynu takes precedence."""
    from ganeti.client import hbal
    msg = _Even(2, 1)
    inst0, inst1 = sorted(msg["instances"])
    node0 = msg["instances"][inst0]["nodes"][0]
    dynu = tmp_path / "dynu"
    dynu.write_text("%s 0.1 0.2 0.3 0.4\n" % inst0)
    mond = tmp_path / "mond"
    mond.write_text(json.dumps([
        {"node": node, "reports": [{"name": "cpu-avg-load", "data": {
            "cpu_total": 1.0 if node == node0 else 0.0, "cpu_number": 2}}]}
        for node in msg["nodes"]]))

    def opts(**values):
        base = {"ignore_dynu": False, "dynu_file": None, "mond_data": None,
                "mond": False}
        base.update(values)
        return type("Opts", (), base)

    assert hbal._Utilisation(opts(), msg) is None
    assert hbal._Utilisation(opts(dynu_file=str(dynu)), msg) == {
        inst0: (0.1, 0.2, 0.3, 0.4)}
    both = hbal._Utilisation(opts(dynu_file=str(dynu),
                                  mond_data=str(mond)), msg)
    assert both == {inst0: (0.5, 0.2, 0.3, 0.4), inst1: (0.0, 1, 1, 1)}
    assert hbal._Utilisation(opts(ignore_dynu=True, dynu_file=str(dynu),
                                  mond_data=str(mond)), msg) is None


def test_min_score_is_when_to_stop_not_the_least_gain():
    """hbal's -e only says when the score is good enough: while the
    score is above it, moves gaining less than it are taken."""
    msg = simu.Message(10, 60, memory=32768, skew=0.5,
                       templates=("drbd", ))
    plan = balance.PlanBalance(copy.deepcopy(msg))
    small = min(step.gain for step in plan.steps)
    stop = plan.final_score + (plan.initial_score - plan.final_score) / 2
    assert small < stop
    limited = balance.PlanBalance(copy.deepcopy(msg), opts=balance.Options(
        min_score=stop))
    assert limited.steps
    assert [s.move for s in limited.steps] == \
        [s.move for s in plan.steps[:len(limited.steps)]]
    assert limited.final_score <= stop < limited.steps[-1].before


def _Located(msg: dict, racks: list[str], **tagged: list[str]) -> dict:
    """Location tags (``htools:nlocation:rack``, exclusion prefix ``svc``,
    desired-location prefix ``rack``) on the nodes in order, and the
    given tags on the named instances."""
    msg["cluster_tags"] = ["htools:nlocation:rack", "htools:iextags:svc",
                           "htools:desiredlocation:rack"]
    for data, rack in zip(msg["nodes"].values(), racks):
        data["tags"] = ["rack:%s" % rack]
    for name, tags in tagged.items():
        msg["instances"][name]["tags"] = tags
    return msg


def test_desired_location_changes_the_choice():
    # two identical empty nodes: the last by name wins (as in hail)
    # unless the instance desires the other's location (unmet desired
    # locations count in location_score)
    msg = _Located(_Small(2), ["a", "b"])
    msg["request"] = simu.AllocRequest()
    assert allocator.Run(msg)["result"] == ["node0001.example.com"]
    msg["request"] = simu.AllocRequest(tags=["rack:a"])
    assert allocator.Run(msg)["result"] == ["node0000.example.com"]
    # an unknown location is unmet everywhere: no preference
    msg["request"] = simu.AllocRequest(tags=["rack:c"])
    answer = allocator.Run(msg)
    assert answer["result"] == ["node0001.example.com"]
    cluster = model.Cluster(msg)
    inst = cluster.NewInstance("x", simu.AllocRequest(tags=["rack:b",
                                                            "other"]))
    assert inst.dlocs == frozenset(["rack:b"])
    node = cluster.nodes["node0000.example.com"]
    before = metrics.ClusterScore([node])
    assert node.AddPri(inst) is None
    assert node.loc_score == 1
    node.RemovePri(inst)
    assert node.loc_score == 0
    assert metrics.ClusterScore([node]) == before


def test_desired_location_of_existing_instances_counts():
    msg = _Located(_Small(2, instances=2), ["a", "b"],
                   **{"inst00000.example.com": ["rack:b"],
                      "inst00001.example.com": ["rack:b"]})
    cluster = model.Cluster(msg)
    # inst00000 is on node0000 (rack a), inst00001 on node0001 (rack b)
    assert cluster.nodes["node0000.example.com"].loc_score == 1
    assert cluster.nodes["node0001.example.com"].loc_score == 0
    # hail scores locations on online nodes only
    score = metrics.Score(list(cluster.nodes.values())).Total()
    msg["nodes"]["node0000.example.com"]["offline"] = True
    offline = model.Cluster(msg)
    assert offline.nodes["node0000.example.com"].loc_score == 1
    values = metrics.NodeValues(offline.nodes["node0000.example.com"])
    assert values.add == metrics.W_OFFLINE_ALL + metrics.W_OFFLINE_PRI
    assert score != metrics.Score(list(offline.nodes.values())).Total()


def test_location_exclusion_changes_the_choice():
    # node0000 and node0001 share rack a; an instance of service svc:web
    # runs on node0000. A second one avoids node0000 (exclusion tag) and,
    # with the location exclusion score, node0001 too (same rack)
    msg = _Located(_Small(3, instances=1), ["a", "a", "b"],
                   **{"inst00000.example.com": ["svc:web"]})
    # node0002 a little fuller: otherwise the best
    msg["nodes"]["node0002.example.com"]["free_memory"] -= 256
    msg["request"] = simu.AllocRequest(tags=["svc:web"])
    answer = allocator.Run(msg)
    assert answer["result"] == ["node0002.example.com"], answer
    cluster = model.Cluster(msg)
    score = metrics.Score(list(cluster.nodes.values()))
    assert score.lx_excess == 0
    inst = cluster.NewInstance("new", msg["request"])
    node1 = cluster.nodes["node0001.example.com"]
    assert node1.AddPri(inst) is None
    assert score.With([node1]) == pytest.approx(
        metrics.ClusterScore(list(cluster.nodes.values())))
    assert metrics.Score(list(cluster.nodes.values())).lx_excess == 1
    node1.RemovePri(inst)
    # without locations (or without the exclusion prefix) the emptiest
    # node wins, in rack a
    for drop in ("htools:nlocation:rack", "htools:iextags:svc"):
        plain = copy.deepcopy(msg)
        plain["cluster_tags"].remove(drop)
        assert allocator.Run(plain)["result"] == ["node0001.example.com"]
    # another service's instance does not count
    msg["request"] = simu.AllocRequest(tags=["svc:db"])
    assert allocator.Run(msg)["result"] == ["node0001.example.com"]


def test_location_exclusion_changes_the_plan():
    # two web instances (externally mirrored) on the two nodes of rack a;
    # rack b's nodes are as loaded, so only the location exclusion score
    # makes moving one of them worth it
    msg = simu.Message(4, 8, templates=("rbd", ), memory=32768)
    msg = _Located(msg, ["a", "a", "b", "b"],
                   **{"inst00000.example.com": ["svc:web"],
                      "inst00001.example.com": ["svc:web"]})
    cluster = model.Cluster(msg)
    assert metrics.Score(list(cluster.nodes.values())).lx_excess == 1
    # no dynamic load: by default each instance weighs 1.0 in the load
    # components, which would keep the instance counts per node even
    idle = {name: (0.0, 0.0, 0.0, 0.0) for name in msg["instances"]}
    plan = balance.PlanBalance(copy.deepcopy(msg), util=idle)
    assert plan.steps, plan
    expected, final = _ReferencePlan(copy.deepcopy(msg), balance.Options(),
                                     idle)
    assert [step.move for step in plan.steps] == expected
    assert plan.final_score == final
    after = model.Cluster(msg)
    for step in plan.steps:
        moves.ApplyMove(after, step.move, True)
    assert metrics.Score(list(after.nodes.values())).lx_excess == 0
    plain = copy.deepcopy(msg)
    plain["cluster_tags"].remove("htools:iextags:svc")
    assert balance.PlanBalance(plain, util=idle).steps != plan.steps


@pytest.mark.parametrize("seed", range(6))
def test_location_scores_equal_apply_score_undo(seed):
    """With location, exclusion and desired-location tags, the planner's
    candidate scores and bounds equal applying, scoring and undoing each
    move, and its plans those of rescoring in full."""
    rnd = random.Random(seed)
    msg = simu.Message(rnd.randint(4, 9), rnd.randint(16, 40),
                       memory=32768, seed=seed, skew=rnd.choice([0.0, 0.5]),
                       templates=("drbd", "diskless", "plain"))
    racks = [rnd.choice("abc") for _ in msg["nodes"]]
    tags = {name: [tag for tag in ("svc:web", "svc:db", "rack:a", "rack:b")
                   if rnd.random() < 0.3]
            for name in msg["instances"]}
    msg = _Located(msg, racks, **tags)
    if seed % 2:
        next(iter(msg["nodes"].values()))["offline"] = True
    _CheckSteps(model.Cluster(msg), True)
    plan = balance.PlanBalance(copy.deepcopy(msg))
    expected, final = _ReferencePlan(copy.deepcopy(msg), balance.Options())
    assert [step.move for step in plan.steps] == expected
    assert plan.final_score == final


def _Crowded(template: str) -> dict:
    """Three 4 GiB nodes (3 GiB free each before instances): a 2.5 GiB
    instance on node0000, a 1 GiB one on node0001, node0002 empty."""
    msg = simu.Message(3, 2, memory=4096, templates=(template, ))
    for (name, data), (node, mem) in zip(
            msg["instances"].items(), (("node0000.example.com", 2560),
                                       ("node0001.example.com", 1024))):
        old = msg["nodes"][data["nodes"][0]]
        old["free_memory"] += data["memory"]
        data["nodes"] = [node]
        data["memory"] = mem
        msg["nodes"][node]["free_memory"] -= mem
    msg["request"] = simu.AllocRequest(memory=1024, template=template)
    return msg


@pytest.mark.parametrize("template", ["plain", "ext"])
def test_full_capacity_check_keeps_room_for_a_failed_node(template):
    # the emptiest node is the balanced choice; but then the big
    # instance of node0000 (re-created if plain, moved if shared
    # storage) would find no node with room should node0000 fail
    msg = _Crowded(template)
    answer = allocator.Run(msg)
    assert answer["result"] == ["node0002.example.com"], answer
    full = {"full-capacity-checks": ""}
    answer = allocator.Run(msg, options=full)
    assert answer["result"] == ["node0001.example.com"], answer
    assert "failures 2 (FailMem: 1, FailN1: 1)" in answer["info"]
    assert allocator.Run(msg, options=dict(full, **{
        "no-capacity-checks": ""}))["result"] == ["node0002.example.com"]
    # nothing is left changed by the simulation
    cluster = model.Cluster(msg)
    score = metrics.Score(list(cluster.nodes.values()))
    before = {name: (node.f_mem, node.f_dsk, sorted(node.plist),
                     sorted(node.slist)) for name, node in
              cluster.nodes.items()}
    inst = cluster.NewInstance("new", msg["request"])
    alloc = placement.Allocate(cluster, score, inst, 1, capacity=True,
                               evacuate=True)
    assert alloc.nodes == ["node0001.example.com"]
    [result] = alloc.results
    assert dict(result.fails) == {"FailMem": 1, "FailN1": 1}
    # only node0002 left: node0000's instance cannot go anywhere
    msg["request"]["restrict-to-nodes"] = ["node0002.example.com"]
    answer = allocator.Run(msg, options=full)
    assert "node0000.example.com: cannot %s inst00000.example.com" \
        " elsewhere when node0000.example.com fails (N+1)" % (
            "re-create" if template == "plain" else "move") in answer["info"]
    assert before == {name: (node.f_mem, node.f_dsk, sorted(node.plist),
                             sorted(node.slist)) for name, node in
                      cluster.nodes.items()}
    assert [cluster.instances[name].pnode for name in (
        "inst00000.example.com", "inst00001.example.com")] == [
        "node0000.example.com", "node0001.example.com"]


def test_full_capacity_check_on_one_node_refuses_as_hail():
    # hail's check needs another node for a plain instance's re-creation
    msg = simu.Message(1, 1, request=simu.AllocRequest())
    assert allocator.Run(msg)["success"]
    answer = allocator.Run(msg, options={"full-capacity-checks": ""})
    assert not answer["success"]
    assert "failure reasons: FailN1: 1; node0000.example.com: cannot" \
        " re-create" in answer["info"]
    # drbd instances only fail over: the quick test passes at once
    msg = simu.Message(2, 4, templates=("drbd", ),
                       request=simu.AllocRequest(template="drbd"))
    assert allocator.Run(msg, options={"full-capacity-checks": ""}) == \
        allocator.Run(msg)


def _CrowdedRandom(seed: int) -> tuple[dict, list[dict]]:
    """A random crowded cluster and allocate requests for it."""
    rnd = random.Random(seed)
    msg = simu.Message(rnd.randint(2, 6), rnd.randint(4, 30), memory=8192,
                       seed=seed, templates=("plain", "ext", "drbd"),
                       skew=rnd.choice([0.0, 0.5]))
    for data in msg["nodes"].values():
        data["free_memory"] -= rnd.randint(0, 3000)
    return msg, [simu.AllocRequest(memory=memory,
                                   template=rnd.choice(["plain", "ext"]))
                 for memory in (512, 1024, 2048, 3072)]


@pytest.mark.parametrize("seed", range(8))
def test_full_capacity_quick_test_changes_no_answer(seed, monkeypatch):
    """``_Fits`` only skips simulations that would succeed: on crowded
    random clusters the answers with and without it are the same."""
    options = {"full-capacity-checks": ""}
    msg, requests = _CrowdedRandom(seed)

    def answers() -> list[dict]:
        return [allocator.Run(dict(msg, request=request), options=options)
                for request in requests]

    quick = answers()
    monkeypatch.setattr(placement, "_Fits", lambda node, others: False)
    assert answers() == quick
