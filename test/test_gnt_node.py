"""gnt-node and gnt-group on a real four-node virtual cluster.

The nodes get the cluster certificate copied before their noded starts
(the path without join key), are added with ``gnt-node add`` and then
driven only through the commands. Every test leaves the cluster as it
found it: four online master candidates in the default group.
"""

import os
import re
import shutil
import time

import pytest

from ganeti import pathutils

from testutils_cluster import VirtualCluster

pytestmark = pytest.mark.integration

NODES = ["node2.example.test", "node3.example.test", "node4.example.test"]
MASTER = "node1.example.test"


def _PrepareNode(node):
    """Give a node the cluster certificate and start its noded."""
    cert = node.NodePath(pathutils.NODED_CERT_FILE)
    os.makedirs(os.path.dirname(cert), exist_ok=True)
    shutil.copy(node.cluster.NodePath(pathutils.NODED_CERT_FILE), cert)
    node.StartNoded()


@pytest.fixture(scope="module")
def vcluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        for name in NODES:
            _PrepareNode(cluster.NewNode(name))
            cluster.Run("gnt-node", "add", name)
        yield cluster
    finally:
        cluster.Cleanup()


def _Rows(cluster, tool, fields, *names):
    result = cluster.Run(tool, "list", "--no-headers", "--separator=|",
                         "-o", ",".join(fields), *names)
    return [line.split("|") for line in result.stdout.splitlines()]


def _Roles(cluster):
    return dict(_Rows(cluster, "gnt-node", ["name", "role"]))


def _Fail(cluster, *args):
    result = cluster.Run(*args, check=False)
    assert result.returncode != 0, (args, result.stdout)
    return result


def _WaitFor(predicate, timeout=15):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_added_nodes_are_candidates_with_replicas(vcluster):
    assert _Roles(vcluster) == {MASTER: "M", NODES[0]: "C", NODES[1]: "C",
                                NODES[2]: "C"}
    rows = _Rows(vcluster, "gnt-node", ["name", "pip", "group", "pinst_cnt",
                                        "master_capable", "vm_capable"])
    assert rows[1] == [NODES[0], vcluster.nodes[NODES[0]].node_ip,
                       "default", "0", "Y", "Y"]
    # The candidates hold the configuration; every node knows the others
    for name in NODES:
        node = vcluster.nodes[name]
        _WaitFor(lambda: os.path.exists(
            node.NodePath(pathutils.CLUSTER_CONF_FILE)))
        with open(node.NodePath(pathutils.SsconfFileName("node_list")),
                  encoding="utf-8") as fobj:
            assert fobj.read().split() == [MASTER] + NODES
    result = _Fail(vcluster, "gnt-node", "add", NODES[0])
    assert "already in the configuration" in result.stderr


def test_list_live_fields_info_and_errors(vcluster):
    # Default columns, as in Ganeti
    header = vcluster.Run("gnt-node", "list").stdout.splitlines()[0]
    assert header.split() == ["Node", "DTotal", "DFree", "MTotal", "MNode",
                              "MFree", "Pinst", "Sinst"]
    rows = _Rows(vcluster, "gnt-node", ["name", "mtotal", "ctotal",
                                        "bootid"], "node3")
    assert len(rows) == 1 and rows[0][0] == NODES[1]
    assert int(rows[0][1]) > 0 and int(rows[0][2]) > 0 and rows[0][3]
    result = vcluster.Run("gnt-node", "list", "-o", "name,bogus",
                          check=False)
    assert result.returncode == 14
    assert "Unknown" in result.stderr or "unknown" in result.stderr
    result = _Fail(vcluster, "gnt-node", "list", "nosuchnode")
    assert "nosuchnode" in result.stderr
    fields = vcluster.Run("gnt-node", "list-fields", "--no-headers",
                          "--separator=|").stdout
    assert "role|Text|Role|" in fields
    info = vcluster.Run("gnt-node", "info", NODES[0]).stdout.splitlines()
    assert info[:9] == [
        "- Node name: %s" % NODES[0],
        "  primary ip: %s" % vcluster.nodes[NODES[0]].node_ip,
        "  secondary ip: %s" % vcluster.nodes[NODES[0]].node_ip,
        "  master candidate: True", "  drained: False", "  offline: False",
        "  master_capable: True", "  vm_capable: True", "  group: default"]
    assert "    spindle_count: default (1)" in info


def test_flags_through_modify(vcluster):
    node = NODES[1]
    try:
        result = vcluster.Run("gnt-node", "modify", "-D", "yes", node)
        assert result.stdout.splitlines() == [
            "Modified node %s" % node, " - master_candidate -> False",
            " - drained -> True"]
        assert _Roles(vcluster)[node] == "D"
        # A node that is no candidate drops its copy of the configuration
        _WaitFor(lambda: not os.path.exists(vcluster.nodes[node].NodePath(
            pathutils.CLUSTER_CONF_FILE)))
        vcluster.Run("gnt-node", "modify", "--offline=yes", node)
        rows = dict((row[0], row[1:]) for row in _Rows(
            vcluster, "gnt-node", ["name", "role", "mfree", "drained"]))
        # Live fields of offline nodes are not asked for
        assert rows[node] == ["O", "*", "N"]
        for flags in (["-O", "yes"], ["-D", "yes"], ["-C", "no"]):
            result = _Fail(vcluster, "gnt-node", "modify", *flags, MASTER)
            assert "master-failover" in result.stderr
    finally:
        result = vcluster.Run("gnt-node", "modify", "-O", "no", node)
    # Back online, it rejoins the pool (short of its size of 10)
    assert " - master_candidate -> True" in result.stdout
    assert _Roles(vcluster)[node] == "C"
    _WaitFor(lambda: os.path.exists(vcluster.nodes[node].NodePath(
        pathutils.CLUSTER_CONF_FILE)))


def test_candidate_pool_size_and_auto_promote(vcluster):
    try:
        vcluster.Run("gnt-cluster", "modify", "--candidate-pool-size=2")
        # A surplus of candidates may be demoted freely
        for node in NODES[1:]:
            vcluster.Run("gnt-node", "modify", "-C", "no", node)
        assert _Roles(vcluster) == {MASTER: "M", NODES[0]: "C",
                                    NODES[1]: "R", NODES[2]: "R"}
        result = _Fail(vcluster, "gnt-node", "modify", "-C", "no", NODES[0])
        assert "Not enough master candidates" in result.stderr
        result = vcluster.Run("gnt-node", "modify", "-C", "no",
                              "--auto-promote", NODES[0])
        assert "Promoted nodes to master candidate role: %s" % NODES[1] in \
            result.stdout
        assert _Roles(vcluster) == {MASTER: "M", NODES[0]: "R",
                                    NODES[1]: "C", NODES[2]: "R"}
    finally:
        vcluster.Run("gnt-cluster", "modify", "--candidate-pool-size=10")
    assert set(_Roles(vcluster).values()) == {"M", "C"}


def test_remove_and_add_again(vcluster):
    name = NODES[2]
    node = vcluster.nodes[name]
    result = _Fail(vcluster, "gnt-node", "remove", MASTER)
    assert "master node" in result.stderr
    vcluster.Run("gnt-node", "remove", name)
    try:
        assert name not in _Roles(vcluster)
        # The node forgot the cluster and its noded stopped
        _WaitFor(lambda: not node.Pid("ganeti-noded") or
                 not os.path.exists("/proc/%d" % node.Pid("ganeti-noded")))
        assert not os.path.exists(node.NodePath(pathutils.NODED_CERT_FILE))
        with open(vcluster.NodePath(pathutils.SsconfFileName("node_list")),
                  encoding="utf-8") as fobj:
            assert name not in fobj.read().split()
    finally:
        _PrepareNode(node)
        vcluster.Run("gnt-node", "add", name)
    assert _Roles(vcluster)[name] == "C"


def test_add_with_join_key(vcluster):
    node = vcluster.NewNode("node5.example.test")
    # Without certificate its noded only serves the join, and says how
    started = node.StartNoded()
    key = re.search(r"--join-key=(\S+)", started.stdout + started.stderr)
    assert key, started
    result = _Fail(vcluster, "gnt-node", "add", node.name)
    assert "must already hold the cluster certificate" in result.stderr
    result = _Fail(vcluster, "gnt-node", "add", "--join-key=%s0" %
                   key.group(1), node.name)
    assert "did not join" in result.stderr
    node.Join()
    try:
        assert _Roles(vcluster)[node.name] == "C"
        assert os.path.exists(node.NodePath(pathutils.NODED_CERT_FILE))
    finally:
        vcluster.Run("gnt-node", "remove", node.name)
    assert node.name not in _Roles(vcluster)


def test_readd_resets_flags(vcluster):
    name = NODES[0]
    vcluster.Run("gnt-node", "modify", "-O", "yes", name)
    try:
        result = vcluster.Run("gnt-node", "add", "--readd", name)
        assert "offline/drained flags were reset" in result.stdout
    finally:
        if _Roles(vcluster)[name] == "O":
            vcluster.Run("gnt-node", "modify", "-O", "no", name)
    assert _Roles(vcluster)[name] == "C"


def test_groups(vcluster):
    vcluster.Run("gnt-group", "add", "--alloc-policy=last_resort",
                 "--node-parameters=spindle_count=2", "rack1")
    try:
        vcluster.Run("gnt-group", "assign-nodes", "rack1", NODES[1],
                     NODES[2])
        assert dict(_Rows(vcluster, "gnt-node", ["name", "group"])) == {
            MASTER: "default", NODES[0]: "default", NODES[1]: "rack1",
            NODES[2]: "rack1"}
        header = vcluster.Run("gnt-group", "list").stdout.splitlines()[0]
        assert header.split() == ["Group", "Nodes", "Instances",
                                  "AllocPolicy", "NDParams"]
        rows = _Rows(vcluster, "gnt-group", ["name", "node_cnt",
                                             "alloc_policy", "node_list"])
        assert rows == [["default", "2", "preferred",
                         "%s,%s" % (MASTER, NODES[0])],
                        ["rack1", "2", "last_resort",
                         "%s,%s" % (NODES[1], NODES[2])]]
        # Effective node parameters follow the group
        assert _Rows(vcluster, "gnt-node", ["ndp/spindle_count"],
                     NODES[1]) == [["2"]]
        result = _Fail(vcluster, "gnt-group", "remove", "rack1")
        assert "not empty" in result.stderr
        vcluster.Run("gnt-group", "rename", "rack1", "rack2")
        result = vcluster.Run("gnt-group", "modify", "--alloc-policy",
                              "unallocable", "rack2")
        assert " - alloc_policy -> unallocable" in result.stdout
        info = vcluster.Run("gnt-group", "info", "rack2").stdout
        assert "- Node group: rack2" in info
        assert "    spindle_count: 2" in info
        assert _Fail(vcluster, "gnt-group", "add", "default").returncode == 1
        result = vcluster.Run("gnt-group", "list", "-o", "name,bogus",
                              check=False)
        assert result.returncode == 14
    finally:
        vcluster.Run("gnt-group", "assign-nodes", "default", NODES[1],
                     NODES[2])
        for name in ("rack1", "rack2"):
            vcluster.Run("gnt-group", "remove", name, check=False)
    assert [row[0] for row in _Rows(vcluster, "gnt-group", ["name"])] == \
        ["default"]


def test_tags(vcluster):
    vcluster.Run("gnt-node", "add-tags", NODES[0], "rack:a", "ssd")
    vcluster.Run("gnt-group", "add-tags", "default", "dc1")
    try:
        assert vcluster.Run("gnt-node", "list-tags",
                            NODES[0]).stdout.split() == ["rack:a", "ssd"]
        assert _Rows(vcluster, "gnt-node", ["tags"], NODES[0]) == \
            [["rack:a,ssd"]]
        assert vcluster.Run("gnt-group", "list-tags",
                            "default").stdout.split() == ["dc1"]
    finally:
        vcluster.Run("gnt-node", "remove-tags", NODES[0], "rack:a", "ssd")
        vcluster.Run("gnt-group", "remove-tags", "default", "dc1")
    assert vcluster.Run("gnt-node", "list-tags", NODES[0]).stdout == ""


def test_powercycle_and_failover_without_instances(vcluster):
    """powercycle asks unless --yes (no terminal: declined, exit 2), then
    the master refuses its opcode: nodes are power-cycled out of band
    here. failover of a node without primary instances does nothing."""
    result = vcluster.Run("setsid", "-w", "gnt-node", "powercycle",
                          NODES[0], check=False)
    assert result.returncode == 2
    assert "Are you sure you want to hard powercycle node %s?" % \
        NODES[0] in result.stderr
    result = _Fail(vcluster, "gnt-node", "powercycle", "--yes", NODES[0])
    assert "OP_NODE_POWERCYCLE is not supported by this cluster" in \
        result.stderr
    result = vcluster.Run("gnt-node", "failover", NODES[1])
    assert result.stderr == "No primary instances on node %s, exiting.\n" % \
        NODES[1]


def test_job_list_archived(vcluster):
    """Archived jobs are listed with --archived only (or by id), as
    Ganeti's luxid reads the archive when the "archived" field is asked
    for."""
    vcluster.Run("gnt-node", "add-tags", NODES[0], "arch")
    vcluster.Run("gnt-node", "remove-tags", NODES[0], "arch")
    job = _Rows(vcluster, "gnt-job", ["id"])[-1][0]
    vcluster.Run("gnt-job", "archive", job)
    assert [job] not in _Rows(vcluster, "gnt-job", ["id"])
    rows = _Rows(vcluster, "gnt-job", ["id", "status"])
    archived = vcluster.Run("gnt-job", "list", "--archived", "--no-headers",
                            "--separator=|", "-o", "id,status").stdout
    assert "%s|success|Y" % job in archived.splitlines()
    assert ["%s|N" % "|".join(row) for row in rows] == \
        [line for line in archived.splitlines() if line.endswith("|N")]
    assert _Rows(vcluster, "gnt-job", ["id", "archived"], job) == \
        [[job, "Y"]]
