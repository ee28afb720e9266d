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
import shutil
import tempfile

import pytest

from ganeti import constants, pathutils, queryfields

from testutils_cluster import SMALL_IPOLICY_BOUNDS, TOP
from testutils_ganeti3 import FieldDefinitions, Ganeti3
from testutils_instance import (CHECKS, FILE_VDIR, NODE1, NODE2, Config,
                                FakeState, Field, InstanceCluster,
                                PrimaryNode, WriteOobProgram)

pytestmark = pytest.mark.integration

SHARED_VDIR = "/srv/ganeti/shared-file-storage"
ES_DIR = pathutils.ES_SEARCH_PATH[0]
EXAMPLE_PROVIDER = os.path.join(TOP, "share", "extstorage", "example-file")
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
    (("gnt-node", "list-storage"),
     r"Node +Type Name +Size +Used +Free +Allocatable\n"
     r"node1\.example\.test file /srv/ganeti/file-storage +[\d.]+[MGT]"
     r" +[\d.]+[MGT] +[\d.]+[MGT] Y\n"),
    (("gnt-node", "list-storage", "-t", "sharedfile", NODE2),
     r"node2\.example\.test sharedfile /srv/ganeti/shared-file-storage "),
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


# Output formats --------------------------------------------------------------

def test_field_definitions_as_ganeti(ganeti3_tree):
    """Every field we share with Ganeti 3.0 has its title and kind, read
    from Ganeti's own ganeti.query (fields it lacks, such as the cluster-wide
    hv/migration_* that it has no instance field for, are ours to name)."""
    theirs = FieldDefinitions(ganeti3_tree)
    for resource, table in queryfields.FIELDS.items():
        for name, (title, kind, _, _) in table.items():
            if name in theirs[resource]:
                assert [title, kind] == theirs[resource][name], \
                    (resource, name)
    assert queryfields.FIELDS["instance"]["be/memory"][:2] == \
        ("ConfigMaxMem", constants.QFT_UNIT)


# Lines that differ by installation (search paths), or that Ganeti 3.0
# does not have (its data collectors are all built in, and it has no
# maintenance daemon and no Placement)
_INSTALLATION_LINES = ("  OS search path: ",
                       "  ExtStorage Providers search path: ",
                       "Diagnose data collector filename: ",
                       "Maintenance daemon:", "  maintenance interval: ",
                       # every "auto balancing ..." setting
                       "  auto balancing", "  harep: ",
                       "Placement:", "  required aggregate metadata prefix: ",
                       "  default forbidden aggregate metadata prefix: ")
# (command, a fragment of our output, exactly)
_SAME_OUTPUT = [
    (("gnt-cluster", "info"),
     "Hypervisor parameters:\n  fake:\n    migration_mode: live\n"
     "OS-specific hypervisor parameters: \nOS parameters: \n"
     "Hidden OSes: \nBlacklisted OSes: \nCluster parameters:\n"
     "  candidate pool size: "),
    (("gnt-cluster", "info"),
     "  lvm reserved volumes: (none)\n"),
    (("gnt-cluster", "info"),
     "  compression tools:\n    - gzip\n"),
    (("gnt-cluster", "info"),
     "Instance policy - limits for instances:\n  bounds specs:\n"
     "    - min/0:\n        cpu-count: 1\n        disk-count: 0\n"
     "        disk-size: 1\n        memory-size: 1\n        nic-count: 0\n"
     "        spindle-use: 0\n      max/0:\n        cpu-count: 64\n"),
    (("gnt-cluster", "info"),
     "  std:\n    cpu-count: 1\n    disk-count: 1\n    disk-size: 1024\n"
     "    memory-size: 128\n    nic-count: 1\n    spindle-use: 1\n"
     "  allowed disk templates: file, sharedfile, diskless\n"
     "  spindle-ratio: 32.0\n  vcpu-ratio: 4.0\nData collectors:\n"),
    (("gnt-group", "info", "default"),
     "  Instance policy:\n    bounds specs:\n      - min/0:\n"
     "          cpu-count: default (1)\n"),
    (("gnt-group", "info", "default"),
     "    allowed disk templates: default (file, sharedfile, diskless)\n"
     "    spindle-ratio: default (32.0)\n    vcpu-ratio: default (4.0)\n"),
    (("gnt-node", "volumes"), "Node PhysDev VG Name Size Instance\n"),
    (("gnt-node", "volumes", "--no-headers", "-o", "node,size"), ""),
    (("gnt-instance", "list-fields", "be/memory", "hv/acpi", "hv/kvm_path",
      "status", "ctime", "oper_vcpus", "admin_up"),
     "Name        Type         Title        Description\n"
     "be/memory   Storage size ConfigMaxMem The \"maxmem\" backend parameter\n"
     "hv/acpi     Boolean      ACPI         The \"acpi\" hypervisor"
     " parameter\n"
     "hv/kvm_path Custom       hv/kvm_path  The \"kvm_path\" hypervisor"
     " parameter\n"
     "status      Text         Status       "),
    (("gnt-instance", "list-fields"),
     "\nctime                  Timestamp    CTime                     "
     " Creation timestamp\n"),
    (("gnt-node", "list-fields", "ndp/cpu_speed", "ndp/ssh_port"),
     "ndp/cpu_speed Floating-point number ndp/cpu_speed The \"cpu_speed\""
     " node parameter\n"
     "ndp/ssh_port  Number                ndp/ssh_port  The \"ssh_port\""
     " node parameter\n"),
    (("gnt-instance", "list", "-o", "name,be/memory,be/vcpus", SHARED_INST),
     "Instance ConfigMaxMem ConfigVCPUs\ng3shared          64M           1"),
    (("gnt-node", "list-storage", "-t", "sharedfile", "--separator=|",
      "-o", "node,type,name,allocatable"),
     "Node|Type|Name|Allocatable\n"
     "node1.example.test|sharedfile|/srv/ganeti/shared-file-storage|Y\n"),
]


def _Lines(text: str) -> list[str]:
    """An output's lines without trailing blanks (Ganeti leaves one after
    a key with nested values) and installation-specific lines."""
    return [line.rstrip() for line in text.splitlines()
            if not line.startswith(_INSTALLATION_LINES)]


def _Tree(lines: list[str]) -> list:
    """Lines as a tree by indentation ("- " counts as indentation), each
    level sorted: Ganeti prints an instance policy's min/max and ratios in
    the order of Python sets, which varies from run to run."""
    root: list = []
    stack: list[tuple[int, list]] = [(-1, root)]
    for line in lines:
        text = line.lstrip(" -")
        indent = len(line) - len(text)
        while stack[-1][0] >= indent:
            stack.pop()
        children: list = []
        stack[-1][1].append((text, children))
        stack.append((indent, children))

    def canonical(nodes: list) -> list:
        return sorted((text, canonical(children)) for text, children in nodes)
    return canonical(root)


def _WithoutPolicies(lines: list[str]) -> list[str]:
    """The lines outside instance policies (whose order _Tree ignores)."""
    result, policy_indent = [], None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if policy_indent is not None and indent > policy_indent:
            continue
        policy_indent = indent if "nstance policy" in line else None
        result.append(line)
    return result


@pytest.mark.parametrize("args, fragment", _SAME_OUTPUT,
                         ids=[" ".join(args) for args, _ in _SAME_OUTPUT])
def test_output_as_ganeti(vc, args, fragment):
    """Our client prints what Ganeti 3.0's prints on the same cluster."""
    ours = vc.Run(*args).stdout
    assert fragment in ours
    theirs = vc.ganeti3.Run(*args).stdout
    assert _Tree(_Lines(ours)) == _Tree(_Lines(theirs))
    assert _WithoutPolicies(_Lines(ours)) == _WithoutPolicies(_Lines(theirs))


# Commands added for Ganeti's clients -----------------------------------------

def _Both(cluster, *args: str) -> tuple[int, str]:
    """Run a command with our client and with Ganeti 3.0's; both must exit
    with the same code and print the same lines (trailing blanks aside:
    Ganeti pads a table's last column). The code and our output."""
    ours = cluster.Run(*args, check=False)
    theirs = cluster.ganeti3.Run(*args, check=False)
    assert ours.returncode == theirs.returncode, (args, ours, theirs)
    for what in ("stdout", "stderr"):
        # Log lines start with a time stamp that may differ
        lines = [re.sub(r"^\w{3} \w{3} +\d+ [\d:]+ \d{4} ", "", line)
                 for line in _Lines(getattr(ours, what))]
        assert lines == [re.sub(r"^\w{3} \w{3} +\d+ [\d:]+ \d{4} ", "",
                                line)
                         for line in _Lines(getattr(theirs, what))], args
    return ours.returncode, ours.stdout + ours.stderr


def test_node_power_and_health(vc):
    """Through an OOB program on NODE2 (NODE1 has none: "(unavail)", and
    the exit code says that not all nodes answered)."""
    program = WriteOobProgram(tempfile.mkdtemp(prefix="oob", dir=vc.base))
    vc.Run("gnt-node", "modify", "--node-parameters",
           "oob_program=" + program, NODE2)
    try:
        code, out = _Both(vc, "gnt-node", "power", "status")
        assert code == 1
        assert re.search(r"node1\.example\.test \(unavail\)\n"
                         r"node2\.example\.test powered\n", out)
        code, out = _Both(vc, "gnt-node", "power", "status", NODE2)
        assert code == 0
        assert out == "Node               Status\nnode2.example.test powered\n"
        code, out = _Both(vc, "gnt-node", "health", NODE2)
        assert code == 0
        assert "Item 'fan' on node 'node2.example.test' has status" \
            " 'WARNING'" in out
        assert "node2.example.test disk0=OK\n                   fan=WARNING" \
            in out
    finally:
        vc.Run("gnt-node", "modify", "--node-parameters", "-oob_program",
               NODE2)


def test_cluster_modify_disk_parameters(vc):
    _Ganeti3(vc, "gnt-cluster", "modify", "-D",
             "drbd:resync-rate=1000,c-max-rate=2000", "-D", "plain:stripes=2")
    try:
        drbd = Config(vc)["cluster"]["diskparams"]["drbd"]
        assert (drbd["resync-rate"], drbd["c-max-rate"],
                drbd["protocol"]) == (1000, 2000, "C")
        assert "  plain: \n    stripes: 2\n" in \
            _Ganeti3(vc, "gnt-cluster", "info")
    finally:
        # Ganeti's client takes no "default" for an integer
        vc.Run("gnt-cluster", "modify", "-D",
               "drbd:resync-rate=default,c-max-rate=default",
               "-D", "plain:stripes=default")


def test_group_modify_vcpu_ratio(vc):
    out = _Ganeti3(vc, "gnt-group", "modify", "--ipolicy-vcpu-ratio=3.5",
                   "default")
    assert "Modified node group default\n - ipolicy -> {'vcpu-ratio': 3.5}" \
        in out
    assert "    vcpu-ratio: 3.5\n" in _Ganeti3(vc, "gnt-group", "info",
                                               "default")
    _Ganeti3(vc, "gnt-group", "modify", "--ipolicy-vcpu-ratio=default",
             "default")
    assert "vcpu-ratio" not in Config(vc)["nodegroups"][
        _GroupUuid(vc, "default")]["ipolicy"]


def _GroupUuid(cluster, name: str) -> str:
    (uuid, ) = [uuid for uuid, group in Config(cluster)["nodegroups"].items()
                if group["name"] == name]
    return uuid


# (arguments of gnt-node, exit code, a piece of the output)
_STORAGE_CHANGES = [
    (("modify-storage", "--allocatable=no", NODE2, "file", FILE_VDIR), 1,
     "Storage units of type 'file' can not be modified"),
    (("modify-storage", NODE2, "sharedfile", SHARED_VDIR), 0,
     "No changes to perform, exiting."),
    (("repair-storage", NODE2, "sharedfile", SHARED_VDIR), 1,
     "Storage units of type 'sharedfile' can not be repaired"),
    (("repair-storage", NODE2, "lvm-vg", "xenvg"), 1,
     "No disk template of storage type 'lvm-vg' is enabled in this"
     " cluster."),
    (("modify-storage", "--allocatable=yes", NODE2, "lvm-pv", "/dev/sda"),
     1, "No disk template of storage type 'lvm-vg' is enabled"),
    (("list-storage", "-t", "gluster"), 1,
     "No disk template of storage type 'gluster' is enabled"),
    (("repair-storage", NODE2, "rados", "x"), 1,
     "Unknown storage type: rados"),
]


@pytest.mark.parametrize("args, code, message", _STORAGE_CHANGES,
                         ids=[" ".join(args[:2]) for args, _, _
                              in _STORAGE_CHANGES])
def test_storage_changes_as_ganeti(vc, args, code, message):
    """Ganeti's storage commands and ours answer alike: no storage type
    here can be changed or repaired."""
    result = _Both(vc, "gnt-node", *args)
    assert result[0] == code and message in result[1], result


def test_instance_change_group(vc):
    """The allocator moves the instance to the other group's node (a
    sharedfile instance: by migration)."""
    _Ganeti3(vc, "gnt-group", "add", "g3move")
    source = PrimaryNode(vc, SHARED_INST)
    target = NODE2 if source == NODE1 else NODE1
    _Ganeti3(vc, "gnt-group", "assign-nodes", "g3move", target)
    try:
        out = _Ganeti3(vc, "gnt-instance", "change-group", "--to", "g3move",
                       SHARED_INST)
        assert "Instances to be moved: g3shared (to g3move)" in out
        assert "Instance 'g3shared' changed group successfully." in out
        assert PrimaryNode(vc, SHARED_INST) == target
        assert Field(vc, SHARED_INST, "status") == "running"
    finally:
        _Ganeti3(vc, "gnt-group", "assign-nodes", "default", target)
        _Ganeti3(vc, "gnt-group", "remove", "g3move")


def test_network_add_connect_list_info(vc):
    _Ganeti3(vc, "gnt-network", "add", "--network=192.0.2.0/24",
             "--gateway=192.0.2.1", "--add-reserved-ips=192.0.2.10",
             "--network6=2001:db8::/64", "--mac-prefix=aa:00:01", "g3net")
    try:
        _Ganeti3(vc, "gnt-network", "connect",
                 "--nic-parameters=mode=bridged,link=br0", "g3net",
                 "default")
        _, out = _Both(vc, "gnt-network", "list")
        assert re.search(r"g3net +192\.0\.2\.0/24 192\.0\.2\.1 +aa:00:01 +"
                         r"default \(bridged, br0, \)", out)
        _, out = _Both(vc, "gnt-network", "list", "--no-headers",
                       "--separator=|", "-o",
                       "name,free_count,reserved_count,group_cnt")
        assert out == "g3net|252|4|1\n"
        _, out = _Both(vc, "gnt-network", "info", "g3net")
        assert "  Subnet: 192.0.2.0/24\n  Gateway: 192.0.2.1\n" \
            "  IPv6 Subnet: 2001:db8::/64\n" in out
        assert "  connected to node groups:\n" \
            "    default (mode:bridged link:br0 vlan:)\n" in out
    finally:
        _Ganeti3(vc, "gnt-network", "disconnect", "g3net", "default")
        _Ganeti3(vc, "gnt-network", "remove", "g3net")
    assert "g3net" not in vc.Run("gnt-network", "list").stdout


def test_debug_test_jobqueue(vc):
    """Ganeti 3.0's own job queue test passes against our master daemon:
    a batch with a job of a priority clients may not use is refused
    whole, relative dependencies are resolved, and OpTestJqueue jobs
    notify it through their sockets in the expected states."""
    out = _Ganeti3(vc, "gnt-debug", "test-jobqueue")
    assert "Job dependency tests were successful\n" in out
    assert out.endswith("Job queue test successful\n")


def test_debug_test_osparams(vc):
    code, out = _Both(vc, "gnt-debug", "test-osparams",
                      "--os-parameters-secret", "pw=sesame")
    assert code == 0 and "Secret OS parameters: {'pw': 'sesame'}\n" in out
    code, out = _Both(vc, "gnt-debug", "test-osparams")
    assert code == 1 and "Opcode needs secret parameters" in out


def test_instance_add_private_and_secret_os_parameters(vc):
    _Ganeti3(vc, "gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
             "-n", NODE1, "-B", "memory=32", "--no-start",
             "--os-parameters-private=hostname=g3host",
             "--os-parameters-secret=message=sesame", *CHECKS, "g3secret")
    try:
        inst = [inst for inst in Config(vc)["instances"].values()
                if inst["name"] == "g3secret"][0]
        assert inst["osparams_private"] == {"hostname": "g3host"}
        assert "sesame" not in str(Config(vc))
    finally:
        vc.Run("gnt-instance", "remove", "-f", "g3secret")


def test_storage_diagnose_and_info(vc):
    """gnt-storage prints what Ganeti's does: the example provider on
    every node (valid), an empty directory on NODE2 only (invalid there,
    missing on NODE1)."""
    added = []
    for node in vc.nodes.values():
        added.append(node.NodePath(os.path.join(ES_DIR, "g3example")))
        shutil.copytree(EXAMPLE_PROVIDER, added[-1])
    added.append(vc.nodes[NODE2].NodePath(os.path.join(ES_DIR, "g3broken")))
    os.makedirs(added[-1])
    try:
        code, out = _Both(vc, "gnt-storage", "diagnose")
        assert code == 0
        assert "Provider: g3broken\n---\n  Node: node1.example.test," \
            " status: ExtStorage provider not found\n" in out
        assert "Provider: g3example\n---\n  Node: node1.example.test," \
            " status: valid (path: %s/g3example) [parameters: dir, loop]" \
            % ES_DIR in out
        code, out = _Both(vc, "gnt-storage", "info", "nosuch", "g3example")
        assert code == 0
        assert out.startswith("g3example:\n  - Valid for nodegroups:\n"
                              "      default\n  - Supported parameters:\n")
        assert out.endswith("nosuch: Not Found\n\n")
    finally:
        for path in added:
            shutil.rmtree(path)


def test_cluster_modify_etc_hosts(vc):
    for value, recorded in (("yes", True), ("no", False)):
        _Ganeti3(vc, "gnt-cluster", "modify", "--modify-etc-hosts", value)
        assert Config(vc)["cluster"]["modify_etc_hosts"] is recorded


@pytest.mark.parametrize("args", [
    ("gnt-group", "show-ispecs-cmd"),
    ("gnt-group", "show-ispecs-cmd", "--include-defaults", "default"),
    ("gnt-cluster", "show-ispecs-cmd"),
    ("gnt-cluster", "modify", "--vg-name=xenvg"),
    ("gnt-cluster", "modify", "--reserved-lvs=xenvg/a"),
    ("gnt-cluster", "modify", "--zeroing-image="),
], ids=lambda args: " ".join(args))
def test_commands_as_ganeti(vc, args):
    """Our client answers these as Ganeti's (the features behind the
    modify options are missing here: both refuse them)."""
    _Both(vc, *args)


def test_rejected_job_created_and_canceled(vc):
    """A job a REJECT rule applies to gets an id and is canceled (Ganeti's
    scheduler does so); a rule on a field no opcode has is refused."""
    out = _Ganeti3(vc, "gnt-filter", "add", "--action=REJECT",
                   "--predicates",
                   '[["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]]')
    uuid = out.strip()
    try:
        code, out = _Both(vc, "gnt-debug", "delay", "0")
        assert code == 1 and "Job was canceled" in out
        (job_id, ) = vc.Run("gnt-job", "list", "--no-headers", "-o", "id",
                            "--separator=|").stdout.split()[-1:]
        assert vc.Run("gnt-job", "list", "--no-headers", "-o",
                      "status,opresult", "--separator=|",
                      job_id).stdout.strip() == \
            "canceled|['Job canceled by filter rule %s']" % uuid
    finally:
        _Ganeti3(vc, "gnt-filter", "delete", uuid)
    result = vc.ganeti3.Run("gnt-filter", "add", "--predicates",
                            '[["opcode", ["=", "instance_nmae", "x"]]]',
                            check=False)
    assert result.returncode == 1
    assert 'Unknown field "instance_nmae"' in result.stdout + result.stderr


def _JobIdsMasked(result) -> list[str]:
    """A run's output lines, job ids replaced (each run has its own)."""
    return [re.sub(r"\b\d+\b", "N", line)
            for line in _Lines(result.stdout + result.stderr)]


def test_multi_instance_ops_as_ganeti(vc):
    """Selecting instances by tag and by node: Ganeti 3.0's client (over
    our classic LUXI queries) and ours act and print alike."""
    vc.Run("gnt-instance", "add-tags", FILE_INST, "g3multi")
    try:
        outputs = []
        for run in (vc.Run, vc.ganeti3.Run):
            for command in ("shutdown", "startup"):
                result = run("gnt-instance", command, "--force-multiple",
                             "--tags", "g3multi")
                assert result.returncode == 0, result
                outputs.append(_JobIdsMasked(result))
                assert Field(vc, FILE_INST, "status") == \
                    ("ADMIN_down" if command == "shutdown" else "running")
        assert outputs[:2] == outputs[2:]
        assert outputs[0] == ["Submitted jobs N",
                              "Waiting for job N for g3file ..."]
        code, out = _Both(vc, "gnt-instance", "reboot", "--force-multiple",
                          "--secondary", NODE1)
        assert code == 1 and \
            "Selection filter does not match any instances" in out
    finally:
        vc.Run("gnt-instance", "remove-tags", FILE_INST, "g3multi")


def test_node_powercycle_as_ganeti(vc):
    code, out = _Both(vc, "gnt-node", "powercycle", "--yes", NODE2)
    assert code == 1 and "OP_NODE_POWERCYCLE is not supported" in out


def test_job_list_archived_as_ganeti(vc):
    vc.Run("gnt-instance", "add-tags", FILE_INST, "g3archive")
    vc.Run("gnt-instance", "remove-tags", FILE_INST, "g3archive")
    job = vc.Run("gnt-job", "list", "--no-headers", "-o",
                 "id").stdout.split()[-1]
    _Ganeti3(vc, "gnt-job", "archive", job)
    code, out = _Both(vc, "gnt-job", "list", "--archived", "--no-headers",
                      "--separator=|", "-o", "id,summary")
    assert code == 0
    assert "%s|TAGS_DEL|Y\n" % job in out, out
