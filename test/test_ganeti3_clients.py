"""Ganeti 3.0.2's own gnt-* programs against our masterd, as an admin uses
them: instances added, changed, stopped, started, moved and removed,
nodes, groups, the cluster and its jobs looked at and changed.

The programs come unpacked from Debian's ``ganeti-3.0`` package
(testutils_ganeti3); they talk LUXI to the master through the node root
of a virtual cluster. Each test checks the program's exit code and a piece
of its output, and the effect through our own tools.
"""

import os
import re

import pytest

from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_ganeti3 import Ganeti3
from testutils_instance import (CHECKS, FILE_VDIR, NODE1, NODE2, Config,
                                FakeState, Field, InstanceCluster,
                                PrimaryNode)

pytestmark = pytest.mark.integration

SHARED_VDIR = "/srv/ganeti/shared-file-storage"
# Added with our gnt-instance: a file instance on node2, a sharedfile one
# (which can migrate) on node1
FILE_INST = "g3file"
SHARED_INST = "g3shared"


@pytest.fixture(scope="module")
def vc(ganeti3_tree):
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         "--enabled-hypervisors=fake",
                         "--enabled-disk-templates=file,sharedfile,diskless",
                         nodes=(NODE2, ),
                         file_paths=(FILE_VDIR, SHARED_VDIR)) as cluster:
        # One directory all nodes see, as an NFS mount would be
        os.makedirs(cluster.Path(SHARED_VDIR.lstrip("/")))
        for name, template, node in ((FILE_INST, "file", NODE2),
                                     (SHARED_INST, "sharedfile", NODE1)):
            cluster.Run("gnt-instance", "add", "-t", template, "--disk",
                        "0:size=8M", "-o", "tinyimage", "-n", node,
                        "-B", "memory=64", *CHECKS, name)
        cluster.ganeti3 = Ganeti3(cluster, ganeti3_tree)
        yield cluster


def _Ganeti3(cluster, program: str, *args: str) -> str:
    """Run one of Ganeti 3.0's programs, which must succeed; its output."""
    result = cluster.ganeti3.Run(program, *args)
    return result.stdout + result.stderr


# (program and arguments, a regular expression its output matches)
_QUERIES = [
    (("gnt-instance", "list"),
     r"g3file +fake +tinyimage +node2\.example\.test +running +\d+M"),
    (("gnt-instance", "info", FILE_INST),
     r"State: configured to be up, actual state is up\n(.*\n)*"
     r" +- disk/0: file, size 8M\n(.*\n)* +on primary: /\S+\.disk0"
     r" \(N/A:N/A\)"),
    (("gnt-instance", "info", "--static", SHARED_INST),
     r"Disk template: sharedfile"),
    (("gnt-instance", "console", FILE_INST),
     r"Console not available for fake hypervisor"),
    (("gnt-node", "list"),
     r"node2\.example\.test( +[\d.]+[MGT]){5} +[12] +0\n"),
    (("gnt-node", "info", NODE2),
     r"- Node name: node2\.example\.test\n(.*\n)* +primary for instances:"
     r" \n( +- \S+\n)* +- g3file\n"),
    (("gnt-group", "list"), r"default +2 +2 +preferred"),
    (("gnt-group", "info", "default"),
     r"Node group: default\n(.*\n)* +Instance policy: \n"),
    (("gnt-cluster", "info"),
     r"Cluster name: cluster\.example\.test\n(.*\n)*"
     r"Master node: node1\.example\.test\n(.*\n)*"
     r"  enabled disk templates: file, sharedfile, diskless\n"),
    (("gnt-job", "list"), r"success +INSTANCE_CREATE\(g3shared\)"),
]


@pytest.mark.parametrize("args, fragment", _QUERIES,
                         ids=[" ".join(args) for args, _ in _QUERIES])
def test_query(vc, args, fragment):
    assert re.search(fragment, _Ganeti3(vc, *args)), args


def test_cluster_verify(vc):
    out = _Ganeti3(vc, "gnt-cluster", "verify")
    assert "* Verifying group 'default'" in out
    assert "ERROR" not in out and "WARNING" not in out, out


def test_instance_add_and_remove(vc):
    out = _Ganeti3(vc, "gnt-instance", "add", "-t", "diskless", "-o",
                   "tinyimage", "-n", NODE1, "-B", "memory=32",
                   "--no-name-check", "--no-ip-check", "g3new")
    assert "* starting instance..." in out
    assert Field(vc, "g3new", "status,pnode,be/maxmem") == \
        "running|%s|32" % NODE1
    assert os.path.exists(FakeState(vc, "g3new"))
    _Ganeti3(vc, "gnt-instance", "remove", "-f", "g3new")
    assert "g3new" not in vc.Run("gnt-instance", "list", "--no-headers",
                                 "-o", "name").stdout.split()
    assert not os.path.exists(FakeState(vc, "g3new"))


def test_instance_modify(vc):
    out = _Ganeti3(vc, "gnt-instance", "modify", "-B", "memory=48",
                   FILE_INST)
    assert "Modified instance g3file\n - be/memory -> 48" in out
    assert Field(vc, FILE_INST, "be/maxmem,be/minmem") == "48|48"


def test_instance_shutdown_startup_reboot(vc):
    node2 = vc.nodes[NODE2]
    _Ganeti3(vc, "gnt-instance", "shutdown", FILE_INST)
    assert Field(vc, FILE_INST, "status") == "ADMIN_down"
    assert not os.path.exists(FakeState(node2, FILE_INST))
    _Ganeti3(vc, "gnt-instance", "startup", FILE_INST)
    assert Field(vc, FILE_INST, "status") == "running"
    assert os.path.exists(FakeState(node2, FILE_INST))
    _Ganeti3(vc, "gnt-instance", "reboot", FILE_INST)
    assert Field(vc, FILE_INST, "status") == "running"


@pytest.mark.parametrize("command", ["migrate", "failover"])
def test_instance_moves(vc, command):
    """Without a target node: the cluster's allocator picks the other
    node, whose shared storage it asks for its free space."""
    source = PrimaryNode(vc, SHARED_INST)
    target = NODE2 if source == NODE1 else NODE1
    out = _Ganeti3(vc, "gnt-instance", command, "-f", SHARED_INST)
    assert target in out
    assert PrimaryNode(vc, SHARED_INST) == target
    assert Field(vc, SHARED_INST, "status") == "running"
    assert os.path.exists(FakeState(vc.nodes[target], SHARED_INST))
    assert not os.path.exists(FakeState(vc.nodes[source], SHARED_INST))


def test_node_modify_drained(vc):
    out = _Ganeti3(vc, "gnt-node", "modify", "--drained=yes", NODE2)
    assert "Modified node node2.example.test" in out
    assert " - drained -> True" in out
    assert vc.Run("gnt-node", "list", "--no-headers", "--separator=|",
                  "-o", "drained", NODE2).stdout.strip() == "Y"
    out = _Ganeti3(vc, "gnt-node", "modify", "--drained=no", NODE2)
    assert " - drained -> False" in out
    assert vc.Run("gnt-node", "list", "--no-headers", "--separator=|",
                  "-o", "drained", NODE2).stdout.strip() == "N"


def test_cluster_modify(vc):
    _Ganeti3(vc, "gnt-cluster", "modify", "--candidate-pool-size=7")
    assert Config(vc)["cluster"]["candidate_pool_size"] == 7
    assert "candidate pool size: 7" in _Ganeti3(vc, "gnt-cluster", "info")


def test_group_add_modify_remove(vc):
    _Ganeti3(vc, "gnt-group", "add", "g3group")
    out = _Ganeti3(vc, "gnt-group", "modify", "--alloc-policy=last_resort",
                   "g3group")
    assert "Modified node group g3group\n - alloc_policy -> last_resort" \
        in out
    assert re.search(r"g3group +0 +0 +last_resort",
                     _Ganeti3(vc, "gnt-group", "list"))
    _Ganeti3(vc, "gnt-group", "remove", "g3group")
    assert "g3group" not in vc.Run("gnt-group", "list", "--no-headers",
                                   "-o", "name").stdout.split()


@pytest.mark.parametrize("program, target", [
    ("gnt-cluster", ()), ("gnt-node", (NODE2, )),
    ("gnt-group", ("default", )), ("gnt-instance", (FILE_INST, ))],
    ids=["cluster", "node", "group", "instance"])
def test_tags(vc, program, target):
    """Ganeti's clients name the cluster as "" in the tag opcodes."""
    _Ganeti3(vc, program, "add-tags", *target, "g3tag", "other")
    assert _Ganeti3(vc, program, "list-tags", *target).split() == \
        ["g3tag", "other"]
    _Ganeti3(vc, program, "remove-tags", *target, "other")
    assert _Ganeti3(vc, program, "list-tags", *target).split() == ["g3tag"]
    assert vc.Run(program, "list-tags", *target).stdout.split() == ["g3tag"]


def test_cluster_modify_missing_feature_off(vc):
    """Features this cluster lacks can be switched off, not on."""
    _Ganeti3(vc, "gnt-cluster", "modify", "--user-shutdown=no",
             "--prealloc-wipe-disks=no")
    result = vc.ganeti3.Run("gnt-cluster", "modify", "--user-shutdown=yes",
                            check=False)
    assert result.returncode == 1
    assert "enabled_user_shutdown' is not supported by this cluster" in \
        result.stdout + result.stderr
