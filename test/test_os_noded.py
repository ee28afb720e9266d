"""OS RPCs through real noded processes on a two-node virtual cluster.

node1 has the shipped tinyimage OS in its search path (below its root),
node2 has none; the master side combines the answers the way the os
query does (node_status shows the node lacking the OS).
"""

import os
import struct
import subprocess

import pytest

from ganeti import constants, objects, pathutils
from ganeti.cmdlib import operating_system

import testutils_node

SHIPPED_OS = os.path.join(testutils_node.REPO_DIR, "os", "tinyimage")
DISK_VPATH = "/srv/ganeti/file-storage/inst1.example.test/disk0"


def _InstallOses(cluster):
    """tinyimage and a broken OS in node1's search path (node2 has none)."""
    search_dir = cluster.nodes[0].Path(pathutils.OS_SEARCH_PATH[0])
    os.makedirs(search_dir)
    os.symlink(SHIPPED_OS, os.path.join(search_dir, "tinyimage"))
    broken = os.path.join(search_dir, "broken")
    os.makedirs(broken)
    with open(os.path.join(broken, constants.OS_API_FILE), "w",
              encoding="ascii") as fobj:
        fobj.write("20\n")


pytestmark = [pytest.mark.integration,
              pytest.mark.noded_cluster(prepare=_InstallOses)]


def _Instance(dev_path=DISK_VPATH, **extra):
    """The instance as sent to a node; ``dev_path`` is local to that node,
    as blockdev_assemble answered it."""
    instance = objects.Instance(name="inst1.example.test", os="tinyimage",
                                hypervisor=constants.HT_KVM,
                                primary_node="node1", uuid="i-1")
    result = instance.ToDict()
    result.update(osparams={}, hvparams={}, beparams={}, nics=[],
                  disks=[{"dev_type": constants.DT_FILE,
                          "logical_id": ["loop", DISK_VPATH], "size": 16,
                          "mode": "rw", "uuid": "d-1",
                          "dev_path": dev_path}])
    result.update(extra)
    return result


def test_diagnose_per_node(noded_cluster):
    runner = noded_cluster.Runner()
    results = runner.call_os_diagnose(["node1", "node2"])
    assert results["node2"].fail_msg is None
    assert results["node2"].payload == []
    entries = {entry[0]: entry for entry in results["node1"].payload}
    assert entries["tinyimage"][1:4] == ["/srv/ganeti/os/tinyimage", True,
                                         ""]
    assert entries["tinyimage"][6] == [20]
    assert entries["broken"][2] is False
    assert entries["broken"][3] == \
        "Script 'create' not found in OS dir /srv/ganeti/os/broken"
    # Combined as the os query does: node2 lacks tinyimage
    node_status = {"node1": [entries["tinyimage"][1:]], "node2": []}
    cluster_info = objects.Cluster(hidden_os=[], blacklisted_os=["x"],
                                   os_hvp={}, osparams={})
    info = operating_system.OsInfo("tinyimage", node_status, cluster_info)
    assert not info.valid and info.node_status["node2"] == []
    assert info.variants == [] and info.parameters == []
    only_node1 = operating_system.OsInfo(
        "tinyimage", {"node1": node_status["node1"]}, cluster_info)
    assert only_node1.valid and only_node1.api_versions == [20]
    assert [name for name, _ in only_node1.parameters] == ["hostname",
                                                           "message"]


def test_validate_through_noded(noded_cluster):
    runner = noded_cluster.Runner()
    checks = [constants.OS_VALIDATE_PARAMETERS]
    results = runner.call_os_validate(["node1", "node2"], False,
                                      "tinyimage", checks,
                                      {"hostname": "web1"}, False)
    assert results["node1"].payload is True
    assert results["node2"].payload is False
    bad = runner.call_os_validate(["node1"], True, "tinyimage", checks,
                                  {"hostname": "bad!"}, False)["node1"]
    assert "invalid value 'bad!' for parameter hostname" in bad.fail_msg


def test_create_through_noded(noded_cluster):
    node1 = noded_cluster.nodes[0]
    disk = node1.root + DISK_VPATH
    os.makedirs(os.path.dirname(disk), exist_ok=True)
    with open(disk, "wb") as fobj:
        fobj.truncate(16 << 20)
    runner = noded_cluster.Runner()
    result = runner.call_instance_os_add("node1", _Instance(disk), False, 0)
    assert result.fail_msg is None, result.fail_msg
    with open(disk, "rb") as fobj:
        fobj.seek(1080)
        assert struct.unpack("<H", fobj.read(2))[0] == 0xEF53
    hostname = subprocess.run(["debugfs", "-R", "cat /etc/hostname", disk],
                              capture_output=True, text=True, check=True)
    assert hostname.stdout == "inst1.example.test\n"
    logs = os.listdir(node1.Path(pathutils.LOG_OS_DIR))
    assert any(name.startswith("add-tinyimage-inst1.example.test-")
               for name in logs)


def test_failure_through_noded_carries_log_tail(noded_cluster):
    node1 = noded_cluster.nodes[0]
    os.makedirs(node1.root + "/srv/ganeti/file-storage/ro", exist_ok=True)
    instance = _Instance()
    instance["disks"][0]["mode"] = "ro"
    result = noded_cluster.Runner().call_instance_os_add("node1", instance,
                                                         False,
                                                         0)
    assert "OS create script failed (exited with exit code 1)" in \
        result.fail_msg
    assert "disk 0 of inst1.example.test is read-only" in result.fail_msg


def test_missing_os_on_node(noded_cluster):
    result = noded_cluster.Runner().call_instance_os_add("node2", _Instance(),
                                                         False, 0)
    assert "Directory for OS tinyimage not found" in result.fail_msg
