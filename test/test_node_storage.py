"""gnt-node list-storage / volumes and the storage and hypervisor checks
of gnt-cluster verify, on a real 2-node virtual cluster.

Both nodes get the file-storage-paths allow-list and the cluster's file
storage directory, as an admin sets up a node for file storage.
"""

import os
import shutil

import pytest

from ganeti import constants, opcodes, pathutils

from testutils_cluster import VirtualCluster, WaitForJob

pytestmark = pytest.mark.integration

NODE1 = "node1.example.test"
NODE2 = "node2.example.test"
FILE_DIR = "/srv/ganeti/file-storage"
SHARED_DIR = "/srv/ganeti/shared-file-storage"
ALLOW_LIST = "%s\n%s\n" % (FILE_DIR, SHARED_DIR)
MIB = 1024 * 1024


def _WriteAllowList(node, text):
    path = node.NodePath(pathutils.FILE_STORAGE_PATHS_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fobj:
        fobj.write(text)


@pytest.fixture(scope="module")
def cluster():
    vc = VirtualCluster()
    try:
        _WriteAllowList(vc, ALLOW_LIST)
        vc.Init()
        node2 = vc.AddNode(NODE2)
        _WriteAllowList(node2, ALLOW_LIST)
        os.makedirs(node2.NodePath(FILE_DIR), exist_ok=True)
        yield vc
    finally:
        vc.Cleanup()


def _Lines(result):
    return result.stdout.splitlines()


def _Table(cluster, *args):
    result = cluster.Run("gnt-node", "list-storage", "--separator=|",
                         "--no-headers", *args)
    return [line.split("|") for line in _Lines(result)]


def test_default_columns_on_both_nodes(cluster):
    lines = _Lines(cluster.Run("gnt-node", "list-storage"))
    assert lines[0].split() == ["Node", "Type", "Name", "Size", "Used",
                                "Free", "Allocatable"]
    rows = [line.split() for line in lines[1:]]
    assert [row[0] for row in rows] == [NODE1, NODE2]
    for row in rows:
        assert row[1:3] == ["file", FILE_DIR]
        assert row[6] == "Y"
        # Human-readable units by default
        assert row[3][-1] in "MGT" and row[5][-1] in "MGT"


def test_sizes_in_mebibytes(cluster):
    node2 = cluster.nodes[NODE2]
    image = node2.NodePath(FILE_DIR + "/inst1/disk0")
    os.makedirs(os.path.dirname(image))
    try:
        with open(image, "wb") as fobj:
            fobj.write(b"\0" * (3 * MIB))
        rows = _Table(cluster, "-o", "node,name,size,used,free",
                      "--units=m")
    finally:
        shutil.rmtree(os.path.dirname(image))
    assert [row[:2] for row in rows] == [[NODE1, FILE_DIR],
                                         [NODE2, FILE_DIR]]
    used = {row[0]: int(row[3]) for row in rows}
    assert used == {NODE1: 0, NODE2: 3}
    stat = os.statvfs(node2.NodePath(FILE_DIR))
    size = stat.f_blocks * stat.f_frsize // MIB
    free = stat.f_bavail * stat.f_frsize // MIB
    for row in rows:
        assert int(row[2]) == size
        # Other processes may write meanwhile
        assert abs(int(row[4]) - free) < 1024


def test_fields_units_and_node_selection(cluster):
    rows = _Table(cluster, "-o", "free,allocatable,type", "--units=g",
                  NODE2)
    assert len(rows) == 1
    free, allocatable, stype = rows[0]
    assert float(free) > 0 and "." in free
    assert (allocatable, stype) == ("Y", "file")
    lines = _Lines(cluster.Run("gnt-node", "list-storage", "-o",
                               "+node", "--separator=,", NODE1))
    assert lines[0] == "Node,Type,Name,Size,Used,Free,Allocatable,Node"
    assert lines[1].startswith(NODE1 + ",file," + FILE_DIR + ",")


def test_refusals(cluster):
    result = cluster.Run("gnt-node", "list-storage", "-o", "name,bogus",
                         check=False)
    assert result.returncode != 0
    assert "Unknown output fields selected: bogus" in result.stderr
    result = cluster.Run("gnt-node", "list-storage", "nosuch.example.test",
                         check=False)
    assert result.returncode != 0
    assert "Node 'nosuch.example.test' not known" in result.stderr
    result = cluster.Run("gnt-node", "list-storage", "-t", "sharedfile",
                         check=False)
    assert result.returncode != 0
    assert ("No disk template of storage type 'sharedfile' is enabled"
            in result.stderr)
    # Ganeti's storage types are taken; the master refuses those this
    # cluster has no template of, with Ganeti's message
    for stype, checked in (("lvm-vg", "lvm-vg"), ("lvm-pv", "lvm-vg"),
                           ("gluster", "gluster")):
        result = cluster.Run("gnt-node", "list-storage", "-t", stype,
                             check=False)
        assert result.returncode != 0
        assert ("No disk template of storage type '%s' is enabled" %
                checked) in result.stderr
    result = cluster.Run("gnt-node", "list-storage", "-t", "rados",
                         check=False)
    assert result.returncode != 0 and "invalid choice" in result.stderr


# (command and arguments, exit code, message) as Ganeti 3.0 answers them
_STORAGE_CHANGES = [
    (("modify-storage", "--allocatable=no", NODE2, "file", FILE_DIR), 1,
     "Storage units of type 'file' can not be modified"),
    (("repair-storage", NODE2, "file", FILE_DIR), 1,
     "Storage units of type 'file' can not be repaired"),
    (("repair-storage", "--ignore-consistency", NODE2, "sharedfile", "x"), 1,
     "Storage units of type 'sharedfile' can not be repaired"),
    (("modify-storage", "--allocatable=yes", NODE2, "lvm-pv", "/dev/sda"),
     1, "No disk template of storage type 'lvm-vg' is enabled"),
    (("repair-storage", NODE2, "lvm-vg", "xenvg"), 1,
     "No disk template of storage type 'lvm-vg' is enabled"),
    (("modify-storage", NODE2, "bogus", "x"), 1,
     "Unknown storage type: bogus"),
    (("repair-storage", "nosuch.example.test", "lvm-vg", "xenvg"), 1,
     "Node 'nosuch.example.test' not known"),
    (("modify-storage", NODE2, "file", FILE_DIR), 0,
     "No changes to perform, exiting."),
]


@pytest.mark.parametrize("args, code, message", _STORAGE_CHANGES,
                         ids=[" ".join(args[:2]) for args, _, _
                              in _STORAGE_CHANGES])
def test_modify_and_repair_storage(cluster, args, code, message):
    """No storage type here can be changed or repaired (Ganeti changes
    only LVM PVs and repairs LVM VGs): Ganeti's checks and messages."""
    result = cluster.Run("gnt-node", *args, check=False)
    assert result.returncode == code
    assert message in result.stderr


def test_lvm_storage_changes_refused(cluster):
    """Past Ganeti's checks (a template of LVM's storage type enabled),
    the change is refused as these nodes have no LVM; a field Ganeti
    does not change is refused first."""
    client = cluster.Luxi()
    job = client.SubmitJob([opcodes.OpNodeModifyStorage(
        node_name=NODE2, storage_type="lvm-pv", name="/dev/sda",
        changes={"size": 1, "allocatable": False})])
    assert WaitForJob(client, job) == constants.JOB_STATUS_ERROR
    assert "The following fields can not be modified for storage units of" \
        " type 'lvm-pv': ['size']" in str(client.QueryJobs(
            [job], ["opresult"])[0][0])
    cluster.Run("gnt-cluster", "modify",
                "--enabled-disk-templates=file,diskless,drbd")
    try:
        for args, verb in ((("modify-storage", "--allocatable=no", NODE2,
                             "lvm-pv", "/dev/sda"), "modified"),
                           (("repair-storage", NODE2, "lvm-vg", "xenvg"),
                            "repaired")):
            result = cluster.Run("gnt-node", *args, check=False)
            assert result.returncode == 1
            assert "can not be %s on this cluster: its nodes have no LVM" \
                % verb in result.stderr
    finally:
        cluster.Run("gnt-cluster", "modify",
                    "--enabled-disk-templates=file,diskless")


def test_shared_file_storage(cluster):
    shared = os.path.join(cluster.base, SHARED_DIR.lstrip("/"))
    os.makedirs(shared, exist_ok=True)
    cluster.Run("gnt-cluster", "modify",
                "--enabled-disk-templates=file,sharedfile,diskless")
    try:
        rows = _Table(cluster, "-t", "sharedfile", "-o", "node,type,name")
    finally:
        cluster.Run("gnt-cluster", "modify",
                    "--enabled-disk-templates=file,diskless")
    assert rows == [[NODE1, "sharedfile", SHARED_DIR],
                    [NODE2, "sharedfile", SHARED_DIR]]


def test_unreachable_storage_is_a_warning(cluster):
    node2 = cluster.nodes[NODE2]
    allow_list = node2.NodePath(pathutils.FILE_STORAGE_PATHS_FILE)
    os.rename(allow_list, allow_list + ".away")
    try:
        result = cluster.Run("gnt-node", "list-storage", "-o", "node")
    finally:
        os.rename(allow_list + ".away", allow_list)
    # The job's warning is part of the output, before the table
    assert _Lines(result)[-2:] == ["Node", NODE1]
    assert ("WARNING: Can't get storage data from node %s: No paths are"
            " valid" % NODE2) in result.stdout


def test_volumes_is_an_empty_table(cluster):
    """No node has LVM: Ganeti's table, headers only, for scripts that
    parse it."""
    result = cluster.Run("gnt-node", "volumes")
    assert result.stdout == "Node PhysDev VG Name Size Instance\n"
    result = cluster.Run("gnt-node", "volumes", "--separator=|", "-o",
                         "name,size", NODE1)
    assert result.stdout == "Name|Size\n"
    result = cluster.Run("gnt-node", "volumes", "-o", "name,color",
                         check=False)
    assert result.returncode == 1 and "color" in result.stderr


# gnt-cluster verify ----------------------------------------------------------

def _Verify(cluster):
    result = cluster.Run("gnt-cluster", "verify", "--error-codes",
                         check=False)
    findings = [line.split("  - ", 1)[1] for line in
                result.stdout.splitlines() if "  - " in line]
    return result.returncode, findings


def test_verify_clean(cluster):
    assert _Verify(cluster) == (0, [])


def test_verify_reports_broken_hypervisor(cluster):
    node2 = cluster.nodes[NODE2]
    hv_dir = node2.NodePath(pathutils.FAKE_HV_DIR)
    shutil.rmtree(hv_dir)
    # A file where the fake hypervisor keeps its state: it can't work
    with open(hv_dir, "w", encoding="utf-8") as fobj:
        fobj.write("not a directory\n")
    try:
        code, findings = _Verify(cluster)
    finally:
        os.unlink(hv_dir)
        os.makedirs(hv_dir)
    assert code != 0
    hv_findings = [item for item in findings if ":ENODEHV:" in item]
    # As Ganeti: the failed check, and the missing memory figure the N+1
    # check needs
    assert len(hv_findings) == 2, findings
    assert hv_findings[0].startswith(
        "ERROR:ENODEHV:node:%s:hypervisor fake verify failure: 'Error while"
        " checking hypervisor: " % NODE2)
    assert hv_findings[1] == \
        "ERROR:ENODEHV:node:%s:rpc call to node failed (hvinfo)" % NODE2
    assert _Verify(cluster) == (0, [])


def test_verify_reports_unusable_file_storage_dir(cluster):
    node2 = cluster.nodes[NODE2]
    _WriteAllowList(node2, "/srv/other\n")
    try:
        code, findings = _Verify(cluster)
    finally:
        _WriteAllowList(node2, ALLOW_LIST)
    assert code != 0
    assert ("ERROR:ENODEFILESTORAGEPATHUNUSABLE:node:%s:The configured file"
            " storage path is unusable: Path '%s' is not acceptable for file"
            " storage (allowed: /srv/other)" % (NODE2, FILE_DIR)) in findings
    # The allow-lists differ, which the file comparison sees too
    assert any(item.startswith("ERROR:ECLUSTERFILECHECK:cluster:None:File"
                               " /etc/ganeti/file-storage-paths found with 2"
                               " different checksums") for item in findings)

    os.rmdir(node2.NodePath(FILE_DIR))
    try:
        code, findings = _Verify(cluster)
    finally:
        os.makedirs(node2.NodePath(FILE_DIR))
    assert code != 0
    assert findings == [
        "ERROR:ENODEFILESTORAGEPATHUNUSABLE:node:%s:The configured file"
        " storage path is unusable: Path '%s' is not existing or not a"
        " directory." % (NODE2, FILE_DIR)]


def test_verify_reports_forbidden_allow_list_entries(cluster):
    lists = [node.NodePath(pathutils.FILE_STORAGE_PATHS_FILE)
             for node in cluster.nodes.values()]
    for node in cluster.nodes.values():
        _WriteAllowList(node, ALLOW_LIST + "/usr\nrelative/path\n")
    try:
        code, findings = _Verify(cluster)
    finally:
        for node in cluster.nodes.values():
            _WriteAllowList(node, ALLOW_LIST)
    assert all(os.path.exists(path) for path in lists)
    assert code != 0
    # Only the master's list is judged: it is the one distributed
    assert findings == [
        "ERROR:ENODEFILESTORAGEPATHS:node:%s:Found forbidden file storage"
        " paths: /usr, relative/path" % NODE1]
