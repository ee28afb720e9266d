"""Ganeti 3.0's clients against a real masterd: opcodes with every one of
Ganeti's parameters, the classic LUXI queries, the watcher pause, and the
opcodes of features this cluster lacks.
"""

import os
import time

import pytest

from ganeti import constants, errors, pathutils

from testutils_cluster import SMALL_IPOLICY_BOUNDS, WaitForJob
from testutils_instance import NODE1, NODE2, Config, InstanceCluster
from testutils_opcodes import GanetiBody

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         nodes=(NODE2, )) as cluster:
        yield cluster


def _Run(cluster, body: dict) -> tuple[str, object]:
    """Submit a one-opcode job; its final status and opcode result."""
    client = cluster.Luxi()
    job_id = client.SubmitJob([body])
    status = WaitForJob(client, job_id)
    ((result, ), ) = client.QueryJobs([job_id], ["opresult"])
    return status, result


def _Success(cluster, body: dict) -> object:
    status, result = _Run(cluster, body)
    assert status == "success", result
    return result


def _Refused(cluster, body: dict) -> str:
    """The message of an opcode failing with OpPrereqError."""
    status, (result, ) = _Run(cluster, body)
    assert status == "error"
    assert result[0] == "OpPrereqError", result
    return result[1][0]


def test_bodies_with_every_ganeti_parameter(vc):
    """OpCodes as Ganeti 3.0's gnt-* send them, defaults included."""
    _Success(vc, GanetiBody("OP_CLUSTER_SET_PARAMS",
                            compression_tools=["gzip", "gzip-fast"]))
    assert Config(vc)["cluster"]["compression_tools"] == ["gzip",
                                                          "gzip-fast"]
    _Success(vc, GanetiBody("OP_NODE_SET_PARAMS", node_name=NODE2,
                            hv_state={"fake": {"mem_total": 1024}}))
    node2 = [node for node in Config(vc)["nodes"].values()
             if node["name"] == NODE2][0]
    assert node2["hv_state_static"] == {"fake": {"mem_total": 1024}}
    assert _Success(vc, GanetiBody(
        "OP_INSTANCE_CREATE", instance_name="inst1", mode="create",
        disks=[], nics=[], disk_template="diskless", os_type="tinyimage",
        pnode=NODE2, name_check=False, ip_check=False,
        beparams={"maxmem": 64, "minmem": 64})) == [[NODE2]]
    changes = _Success(vc, GanetiBody(
        "OP_INSTANCE_SET_PARAMS", instance_name="inst1",
        beparams={"auto_balance": False}))
    assert changes == [[["be/auto_balance", False]]]


def test_unsupported_parameter_refused_at_submission(vc):
    with pytest.raises(errors.OpPrereqError) as err:
        vc.Luxi().SubmitJob([GanetiBody(
            "OP_INSTANCE_SET_PARAMS", instance_name="inst1", hotplug=True)])
    assert "OP_INSTANCE_SET_PARAMS.hotplug" in str(err.value)
    assert "not supported" in str(err.value)


def test_classic_queries(vc):
    client = vc.Luxi()
    assert client.QueryInstances([], ["name", "pnode", "admin_state"],
                                 False) == [["inst1", NODE2, "up"]]
    assert client.QueryNodes([NODE2, NODE1], ["name", "master"], False) == \
        [[NODE2, False], [NODE1, True]]
    assert client.QueryGroups([], ["name", "node_cnt"], False) == \
        [["default", 2]]
    with pytest.raises(errors.OpPrereqError, match="Sync queries are not"
                       " allowed"):
        client.QueryNodes([], ["name"], True)
    with pytest.raises(errors.OpPrereqError, match="Unknown output fields"
                       " selected: nosuch"):
        client.QueryInstances([], ["name", "nosuch"], False)
    with pytest.raises(errors.OpPrereqError, match="nosuchinst"):
        client.QueryInstances(["nosuchinst"], ["name"], False)


def test_watcher_pause(vc):
    client = vc.Luxi()
    until = int(time.time()) + 3600
    assert client.SetWatcherPause(until) == until
    assert client.QueryConfigValues(["watcher_pause"]) == [until]
    for node in vc.nodes.values():
        path = node.NodePath(pathutils.WATCHER_PAUSEFILE)
        with open(path, encoding="ascii") as fobj:
            assert fobj.read() == "%d\n" % until
    assert _Success(vc, GanetiBody(
        "OP_CLUSTER_CONFIG_QUERY",
        output_fields=["watcher_pause", "drain_flag", "master_node"])) == \
        [[until, False, NODE1]]
    # A pause in the past is no pause
    assert client.SetWatcherPause(int(time.time()) - 10) is not None
    assert client.QueryConfigValues(["watcher_pause"]) == [None]
    assert client.SetWatcherPause(None) is None
    for node in vc.nodes.values():
        assert not os.path.exists(node.NodePath(pathutils.WATCHER_PAUSEFILE))
    with pytest.raises(errors.OpPrereqError):
        client.SetWatcherPause("tomorrow")


def test_network_opcodes_with_all_parameters(vc):
    assert _Success(vc, GanetiBody(
        "OP_NETWORK_ADD", network_name="net1",
        network="10.0.0.0/24")) == [None]
    assert _Success(vc, GanetiBody(
        "OP_NETWORK_REMOVE", network_name="net1")) == [None]


def test_opcodes_of_missing_features_refused(vc):
    assert "out-of-band" in _Refused(vc, GanetiBody(
        "OP_NODE_POWERCYCLE", node_name=NODE2))
    # Nodes without an out-of-band program: "unavailable" per node
    rows = _Success(vc, GanetiBody("OP_OOB_COMMAND",
                                   command="power-status"))[0]
    assert [row[1] for row in rows] == [[constants.RS_UNAVAIL, None]] * \
        len(rows) and rows
    assert _Refused(vc, GanetiBody(
        "OP_NODE_MODIFY_STORAGE", node_name=NODE2, storage_type="file",
        name="x", changes={"allocatable": False})) == \
        "Storage units of type 'file' can not be modified"
    assert _Refused(vc, GanetiBody(
        "OP_CLUSTER_CONFIG_QUERY", output_fields=["nosuch"])) == \
        "Unknown output fields selected: nosuch"


def test_small_opcodes(vc):
    assert _Success(vc, GanetiBody(
        "OP_NODE_QUERYVOLS", output_fields=["node", "name"])) == [[]]
    assert _Success(vc, GanetiBody(
        "OP_EXT_STORAGE_DIAGNOSE", output_fields=["name"])) == [[]]
    assert _Success(vc, GanetiBody(
        "OP_TEST_DUMMY", result={"a": 1}, messages=["hi"], fail=False,
        submit_jobs=None)) == [{"a": 1}]
    status, result = _Run(vc, GanetiBody(
        "OP_TEST_DUMMY", result=None, messages=[], fail=True,
        submit_jobs=None))
    assert status == "error" and result[0][0] == "OpExecError"
    assert _Success(vc, GanetiBody("OP_TEST_JQUEUE")) == [True]
