"""gnt-storage on a real two-node virtual cluster, and the ExtStorage
diagnosis behind it (OpExtStorageDiagnose, the extstorage_diagnose RPC).

The shipped example provider is in both nodes' search path; "broken" (an
empty directory) only on node2, so one provider is valid everywhere and
one is invalid on one node and missing on the other.
"""

import os
import shutil

import pytest

from ganeti import pathutils

from testutils_cluster import TOP, WaitForJob
from testutils_instance import NODE1, NODE2

pytestmark = pytest.mark.integration

EXAMPLE = os.path.join(TOP, "share", "extstorage", "example-file")
ES_DIR = pathutils.ES_SEARCH_PATH[0]


@pytest.fixture(scope="module")
def cluster(two_node_cluster):
    for node in two_node_cluster.nodes.values():
        shutil.copytree(EXAMPLE, node.NodePath(
            os.path.join(ES_DIR, "example-file")))
    os.makedirs(two_node_cluster.nodes[NODE2].NodePath(
        os.path.join(ES_DIR, "broken")))
    yield two_node_cluster
    for node in two_node_cluster.nodes.values():
        shutil.rmtree(node.NodePath(ES_DIR))


def test_diagnose(cluster):
    out = cluster.Run("gnt-storage", "diagnose").stdout
    valid = ("valid (path: %s/example-file) [parameters: dir, loop]" %
             ES_DIR)
    broken = out.split("\n\n")[0].splitlines()
    assert broken[:2] == ["Provider: broken", "---"]
    # Valid nodes first, then the others; node groups likewise
    assert broken[2] == ("  Node: %s, status: ExtStorage provider not"
                         " found" % NODE1)
    assert broken[3].startswith("  Node: %s, status: invalid - " % NODE2)
    assert "has no 'attach' script" in broken[3]
    assert broken[3].endswith("(path: %s/broken) [no parameters]" % ES_DIR)
    assert broken[4:] == ["  --", "  For nodegroup: default --> invalid"]
    assert out.split("\n\n")[1].splitlines() == [
        "Provider: example-file", "---",
        "  Node: %s, status: %s" % (NODE1, valid),
        "  Node: %s, status: %s" % (NODE2, valid),
        "  --", "  For nodegroup: default --> valid"]


def test_info(cluster):
    out = cluster.Run("gnt-storage", "info").stdout
    assert out.startswith("broken:\n  - Invalid for all nodegroups\n\n"
                          "example-file:\n  - Valid for nodegroups:\n"
                          "      default\n  - Supported parameters:\n"
                          "      dir: Directory holding the volume files")
    assert "\n      loop: Attach volumes as loop devices" in out
    out = cluster.Run("gnt-storage", "info", "nosuch", "broken").stdout
    assert out == ("broken:\n  - Invalid for all nodegroups\n\n"
                   "nosuch: Not Found\n\n")


def test_no_providers(cluster):
    """Without any provider Ganeti's messages and exit code 1."""
    es_dirs = [node.NodePath(ES_DIR) for node in cluster.nodes.values()]
    for path in es_dirs:
        os.rename(path, path + ".off")
    try:
        for command, message in (
                ("diagnose", "Can't get the list of ExtStorage providers"),
                ("info", "Can't get the ExtStorage providers list")):
            result = cluster.Run("gnt-storage", command, check=False)
            assert result.returncode == 1
            assert result.stderr.strip() == message
    finally:
        for path in es_dirs:
            os.rename(path + ".off", path)


def test_diagnose_opcode_fields_and_names(cluster):
    client = cluster.Luxi()
    job_id = client.SubmitJob([{
        "OP_ID": "OP_EXT_STORAGE_DIAGNOSE", "names": ["example-file"],
        "output_fields": ["name", "nodegroup_status", "parameters"]}])
    assert WaitForJob(client, job_id) == "success"
    ((((name, groups, parameters), ), ), ) = client.QueryJobs(
        [job_id], ["opresult"])[0]
    assert (name, groups) == ("example-file", {"default": True})
    assert [pname for pname, _ in parameters] == ["dir", "loop"]
