"""Placement, rebalancing and capacity on a real three-node virtual
cluster (fake hypervisor) with the built-in allocator.

Every node of a virtual cluster reports the host's memory and CPUs, so
the nodes are made to differ in size by "ballast": running instances
placed with -n, whose memory the fake hypervisor subtracts from its
node's free memory and whose vCPUs count against the node's CPUs.
"""

import os
import re

import pytest

from ganeti import constants

from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (CHECKS, FILE_VDIR, NODE1, NODE2, NODE3,
                                Field, InstanceCluster, RemoveInstances)

pytestmark = pytest.mark.integration

SHARED_VDIR = "/srv/ganeti/shared-file-storage"
_SCORE_RE = re.compile(r"Cluster score improved from ([0-9.]+) to ([0-9.]+)")


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--enabled-disk-templates=diskless,sharedfile",
                         "--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         "--ipolicy-vcpu-ratio=32",
                         file_paths=(FILE_VDIR, SHARED_VDIR)) as cluster:
        os.makedirs(os.path.join(cluster.base, SHARED_VDIR.lstrip("/")))
        yield cluster


def _Add(vc, name, *extra, memory=512, vcpus=1, template="diskless"):
    disk = ("--disk", "0:size=4M") if template != "diskless" else ()
    vc.Run("gnt-instance", "add", "-t", template, *disk, "--no-install",
           "-o", "tinyimage", "-B", "memory=%d,vcpus=%d" % (memory, vcpus),
           *extra, *CHECKS, name)


def _Spread(vc, names):
    counts = {NODE1: 0, NODE2: 0, NODE3: 0}
    for name in names:
        counts[Field(vc, name, "pnode")] += 1
    return counts


def test_add_without_node_fills_evenly(vc):
    # node1 is the smallest (4 units of 1 GiB and 1 vCPU used), node3 the
    # largest (nothing used)
    _Add(vc, "ballast1", "-n", NODE1, memory=4096, vcpus=4)
    _Add(vc, "ballast2", "-n", NODE2, memory=2048, vcpus=2)
    names = ["even%d" % idx for idx in range(6)]
    try:
        for name in names:
            _Add(vc, name, memory=1024)
        # Memory and vCPUs even out, and so do the instance counts: each
        # instance weighs 1.0 in the load components without load data,
        # as in Ganeti
        assert _Spread(vc, names) == {NODE1: 1, NODE2: 2, NODE3: 3}
    finally:
        RemoveInstances(vc, "ballast1", "ballast2", *names)


def test_rebalance_skewed_cluster(vc):
    names = ["skew%d" % idx for idx in range(6)]
    for idx, name in enumerate(names):
        _Add(vc, name, "-n", NODE1,
             template="sharedfile" if idx % 2 else "diskless")
    try:
        out = vc.Run("gnt-cluster", "rebalance", "-C").stdout
        initial, final = map(float, _SCORE_RE.search(out).groups())
        assert final < initial, out
        assert "Initial score: %.8f" % initial in out, out
        # One line per move: score after it, its change, hbal's move code
        moves = re.findall(r"^\s+\d+\. (skew\d) +%s +=> +(\S+) +([0-9.]+)"
                           r" +(-[0-9.]+) a=fa:(\S+)$" % re.escape(NODE1),
                           out, re.M)
        assert len(moves) >= 3, out
        assert all(target == new for _, new, _, _, target in moves), out
        assert "Commands to run to reach the above solution:" in out
        assert re.search(r"echo jobset 1, \d+ jobs", out), out
        for name, target, *_ in moves:
            assert "gnt-instance migrate -f -n %s %s" % (target, name) \
                in out, out
        # Nothing was changed
        assert _Spread(vc, names)[NODE1] == 6

        result = vc.Run("hbal", "-L", "-X")
        assert "Executing jobset for instances" in result.stdout, \
            result.stdout
        spread = _Spread(vc, names)
        assert max(spread.values()) - min(spread.values()) <= 1, spread
        for name in names:
            assert Field(vc, name, "status") == "running"
        # The moves ran with the rebalance reason
        jobs = vc.Luxi().QueryJobs(None, ["ops"])
        reasons = [op["reason"] for (ops, ) in jobs for op in ops
                   if op["OP_ID"] == "OP_INSTANCE_MIGRATE"]
        assert reasons and all(
            any(entry[0] == constants.OPCODE_REASON_SRC_REBALANCE
                for entry in trail) for trail in reasons), jobs

        # Balanced now: a new run does (almost) nothing
        out = vc.Run("gnt-cluster", "rebalance").stdout
        assert "No solution found" in out or \
            "Cluster is already well balanced" in out, out
    finally:
        RemoveInstances(vc, *names)


def test_capacity_for_a_spec(vc):
    _Add(vc, "cap-ballast", "-n", NODE1, memory=4096)
    try:
        out = vc.Run("gnt-cluster", "capacity", "--memory", "8G",
                     "--disk", "1G", "--vcpus", "1", "--disk-template",
                     "diskless").stdout
        assert "Standard (fixed-size) instance spec is:\n  MEM 8192, DSK" \
            " 1024, CPU 1, using disk template 'diskless'." in out, out
        count = int(re.search(r"- +(\d+) instances allocated", out).group(1))
        assert count > 0, out
        assert re.search("most likely failure reason: Fail(Mem|N1)\n.*"
                         "Standard", out, re.S), out
        # hspace: the same figures
        hout = vc.Run("hspace", "-L", "--standard-alloc", "1G,8G,1",
                      "--disk-template", "diskless").stdout
        assert "- %3d instances allocated" % count in hout, hout
        assert "Tiered allocation results:" in hout, hout
    finally:
        RemoveInstances(vc, "cap-ballast")
