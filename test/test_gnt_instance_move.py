"""gnt-instance move on a real three-node virtual cluster.

Instances with ``file`` disks installed by the tinyimage OS are moved
between nodes: the disks are copied by the node-to-node transfers
(ganeti.impexp) and must arrive bit for bit, the source files must go,
the configuration must name the new node and the instance must run there
if it ran before. Refusals and a failed copy must leave the instance as
it was, and nothing of the transfers may stay behind.
"""

import hashlib
import os
import subprocess

import pytest

from ganeti import constants, opcodes, pathutils

from testutils_cluster import SMALL_IPOLICY_BOUNDS, WaitForJob
from testutils_instance import (CHECKS, FILE_VDIR, MIB, NODE1, NODE2, NODE3,
                                DiskPaths, FakeState, Fail, FindInstance,
                                InstanceCluster, NodeUuid, PrimaryNode)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--ipolicy-bounds-specs",
                         SMALL_IPOLICY_BOUNDS) as cluster:
        yield cluster


@pytest.fixture
def inst(vc):
    """A running file instance on node2 (two disks, OS installed)."""
    vc.Run("gnt-instance", "add", "-t", "file", "-o", "tinyimage",
           "-n", NODE2, "--disk", "0:size=16M", "--disk", "1:size=4M",
           "-B", "maxmem=32,minmem=32", *CHECKS, "mv1")
    yield "mv1"
    vc.Run("gnt-instance", "remove", "-f", "mv1", check=False)
    _CheckNoTransfers(vc)


def _Sha256(path):
    with open(path, "rb") as fobj:
        return hashlib.file_digest(fobj, "sha256").hexdigest()


def _TransferProcesses(cluster):
    """Transfer processes of this cluster still alive."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as fobj:
                cmdline = fobj.read().decode("utf-8", "replace")
        except OSError:
            continue
        if "ganeti.impexp.transfer" in cmdline and cluster.base in cmdline:
            found.append(cmdline.replace("\0", " "))
    return found


def _CheckNoTransfers(cluster):
    assert not _TransferProcesses(cluster)
    for node in cluster.nodes.values():
        tdir = node.NodePath(pathutils.IMPORT_EXPORT_DIR)
        assert not os.path.exists(tdir) or os.listdir(tdir) == []


def test_move_running_instance(vc, inst):
    node2, node3 = vc.nodes[NODE2], vc.nodes[NODE3]
    sources = DiskPaths(vc, inst, NODE2)
    checksums = [_Sha256(path) for path in sources]
    assert os.path.exists(FakeState(node2, inst))

    result = vc.Run("gnt-instance", "move", "-f", "-n", NODE3, inst)
    assert "checksum verified" in result.stdout + result.stderr

    config_inst, disks = FindInstance(vc, inst)
    node3_uuid = NodeUuid(vc, NODE3)
    assert config_inst["primary_node"] == node3_uuid
    assert [disk["nodes"] for disk in disks] == [[node3_uuid]] * 2
    targets = DiskPaths(vc, inst, NODE3)
    assert [_Sha256(path) for path in targets] == checksums
    assert [os.path.getsize(path) for path in targets] == [16 * MIB,
                                                           4 * MIB]
    for path in sources:
        assert not os.path.exists(path)
    assert not os.path.exists(os.path.dirname(sources[0]))
    assert not os.path.exists(FakeState(node2, inst))
    assert os.path.exists(FakeState(node3, inst))
    out = vc.Run("gnt-instance", "list", "--no-headers", "-o",
                 "pnode,status", inst).stdout.split()
    assert out == [NODE3, "running"]
    _CheckNoTransfers(vc)


def test_move_stopped_instance_compressed(vc, inst):
    node3 = vc.nodes[NODE3]
    vc.Run("gnt-instance", "shutdown", "--timeout=5", inst)
    sources = DiskPaths(vc, inst, NODE2)
    checksums = [_Sha256(path) for path in sources]
    allocated = os.stat(sources[0]).st_blocks * 512
    assert allocated < 8 * MIB
    vc.Run("gnt-instance", "move", "-f", "--compress=gzip",
           "--shutdown-timeout=5", "-n", NODE1, inst)
    targets = DiskPaths(vc, inst, NODE1)
    assert [_Sha256(path) for path in targets] == checksums
    # The copy keeps the file disks sparse (up to the 64 KiB blocks the
    # data starts or ends in)
    assert os.stat(targets[0]).st_blocks * 512 <= allocated + MIB
    assert os.stat(targets[1]).st_blocks == 0
    assert not os.path.exists(FakeState(vc, inst))
    assert not os.path.exists(FakeState(node3, inst))
    out = vc.Run("gnt-instance", "list", "--no-headers", "-o",
                 "pnode,status", inst).stdout.split()
    assert out == [NODE1, "ADMIN_down"]
    _CheckNoTransfers(vc)


def test_diskless_move(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
           "-n", NODE2, "-B", "maxmem=32,minmem=32", *CHECKS, "mv2")
    try:
        vc.Run("gnt-instance", "move", "-f", "-n", NODE3, "mv2")
        assert os.path.exists(FakeState(vc.nodes[NODE3], "mv2"))
        assert not os.path.exists(FakeState(vc.nodes[NODE2], "mv2"))
        out = vc.Run("gnt-instance", "list", "--no-headers", "-o",
                     "pnode,status", "mv2").stdout.split()
        assert out == [NODE3, "running"]
    finally:
        vc.Run("gnt-instance", "remove", "-f", "mv2")


def _CheckUnchanged(vc, inst, checksums):
    assert PrimaryNode(vc, inst) == NODE2
    assert [_Sha256(path) for path in DiskPaths(vc, inst, NODE2)] == \
        checksums
    assert os.path.exists(FakeState(vc.nodes[NODE2], inst))
    target_dir = vc.nodes[NODE3].NodePath(os.path.join(FILE_VDIR, inst))
    assert not os.path.exists(target_dir)
    _CheckNoTransfers(vc)


def test_refusals(vc, inst):
    checksums = [_Sha256(path) for path in DiskPaths(vc, inst, NODE2)]
    out = Fail(vc, "gnt-instance", "move", "-f", "-n", NODE2, inst)
    assert "Instance %s is already on the node %s" % (inst, NODE2) in out
    out = Fail(vc, "gnt-instance", "move", "-f", "-n", "nosuchnode", inst)
    assert "nosuchnode" in out
    out = Fail(vc, "gnt-instance", "move", "-f", "--compress=lzma", "-n",
               NODE3, inst)
    assert "Compression tool not allowed" in out
    vc.Run("gnt-node", "modify", "-O", "yes", NODE3)
    try:
        out = Fail(vc, "gnt-instance", "move", "-f", "-n", NODE3, inst)
        assert "Can't use offline node %s" % NODE3 in out, out
    finally:
        vc.Run("gnt-node", "modify", "-O", "no", NODE3)
    _CheckUnchanged(vc, inst, checksums)


def test_not_enough_disk(vc, inst):
    """The target's file storage is a 8 MiB file system: 20 MiB won't go.
    """
    storage = vc.nodes[NODE3].NodePath(FILE_VDIR)
    os.makedirs(storage, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m",
                              "tmpfs", storage], capture_output=True,
                             check=False)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small file system here: %s" %
                    mounted.stderr.decode().strip())
    try:
        checksums = [_Sha256(path) for path in DiskPaths(vc, inst, NODE2)]
        out = Fail(vc, "gnt-instance", "move", "-f", "-n", NODE3, inst)
        assert "Not enough disk space on target node %s for file storage:" \
            " required 20 MiB, available 8 MiB" % NODE3 in out, out
        _CheckUnchanged(vc, inst, checksums)
    finally:
        subprocess.run(["umount", storage], check=True)


def test_failed_copy_leaves_instance_as_it_was(vc, inst):
    """The source disk holds more than its configured size: the target
    disk can't take it, so the copy fails after the instance was stopped.
    """
    sources = DiskPaths(vc, inst, NODE2)
    os.truncate(sources[1], 5 * MIB)
    try:
        checksums = [_Sha256(path) for path in sources]
        out = Fail(vc, "gnt-instance", "move", "-f", "-n", NODE3, inst)
        assert "Errors during disk copy: Transfer of disk/1 failed: import" \
            " on node %s: The source has more data than the destination" \
            " disk holds" % NODE3 in out, out
        _CheckUnchanged(vc, inst, checksums)
        out = vc.Run("gnt-instance", "list", "--no-headers", "-o",
                     "pnode,status", inst).stdout.split()
        assert out == [NODE2, "running"]
    finally:
        os.truncate(sources[1], 4 * MIB)



def test_target_group_policy(vc, inst):
    """A node of a group whose policy the instance violates is refused,
    unless the policy is ignored."""
    client = vc.Luxi()
    specs = {"memory-size": 16, "cpu-count": 1, "disk-count": 1,
             "disk-size": 1, "nic-count": 1, "spindle-use": 1}
    job = client.SubmitJob([opcodes.OpGroupAdd(
        group_name="tiny", ipolicy={"std": specs, "minmax": [
            {"min": specs, "max": dict(specs, **{"disk-count": 4,
                                                 "disk-size": 64})}]})])
    assert WaitForJob(client, job) == constants.JOB_STATUS_SUCCESS
    vc.Run("gnt-group", "assign-nodes", "-f", "tiny", NODE3)
    try:
        checksums = [_Sha256(path) for path in DiskPaths(vc, inst, NODE2)]
        out = Fail(vc, "gnt-instance", "move", "-f", "-n", NODE3, inst)
        assert "Instance does not meet target node group's (tiny) instance" \
            " policy: memory-size value 32 is not in range [16, 16]" in out
        _CheckUnchanged(vc, inst, checksums)
        out = vc.Run("gnt-instance", "move", "-f", "--ignore-ipolicy", "-n",
                     NODE3, inst)
        assert "does not meet target node group's" in out.stdout + out.stderr
        assert [_Sha256(path) for path in DiskPaths(vc, inst, NODE3)] == \
            checksums
    finally:
        vc.Run("gnt-group", "assign-nodes", "-f", "default", NODE3)
        vc.Run("gnt-group", "remove", "tiny")
