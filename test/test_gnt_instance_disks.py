"""gnt-instance grow-disk, activate-disks, deactivate-disks and
recreate-disks on a real three-node virtual cluster (fake hypervisor).

Every node allows the cluster's file storage directory in its
file-storage-paths (as an administrator would set it up). File disks are
image files below the node's root, so each command's effect is checked on
the files themselves as well as in the configuration.
"""

import os

import pytest

from testutils_instance import (CHECKS, MIB, NODE1, NODE2, NODE3,
                                DiskPaths, FakeState, Fail, FindInstance,
                                InstanceCluster, NodeUuid)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster(os_image=False) as cluster:
        # Small instances; a disk may grow up to 600 MiB
        cluster.Run("gnt-cluster", "modify", "--ipolicy-bounds-specs",
                    "min:memory-size=16,cpu-count=1,disk-count=1,"
                    "disk-size=1,nic-count=1,spindle-use=1/"
                    "max:memory-size=4096,cpu-count=8,disk-count=4,"
                    "disk-size=600,nic-count=4,spindle-use=4",
                    "--ipolicy-std-specs", "disk-size=600")
        yield cluster


def _AddFileInstance(cluster, name, node, *extra):
    cluster.Run("gnt-instance", "add", "-t", "file", "--no-install",
                "--no-start", "-n", node, "-B", "maxmem=32,minmem=32",
                "--disk", "0:size=16M", "--disk", "1:size=8M", *extra,
                *CHECKS, name)


def _Write(path, offset, data):
    with open(path, "r+b") as fobj:
        fobj.seek(offset)
        fobj.write(data)


def _Read(path, offset, length):
    with open(path, "rb") as fobj:
        fobj.seek(offset)
        return fobj.read(length)


def test_grow_disk(vc):
    _AddFileInstance(vc, "grow1", NODE2)
    try:
        paths = DiskPaths(vc, "grow1", NODE2)
        _Write(paths[0], 0, b"keep me")

        # Stopped instance, relative growth with a unit
        vc.Run("gnt-instance", "grow-disk", "grow1", "0", "0.5g")
        assert os.stat(paths[0]).st_size == 528 * MIB
        assert _Read(paths[0], 0, 7) == b"keep me"
        _, disks = FindInstance(vc, "grow1")
        assert [disk["size"] for disk in disks] == [528, 8]

        # Running instance, absolute target; the other disk is untouched
        vc.Run("gnt-instance", "startup", "grow1")
        try:
            vc.Run("gnt-instance", "grow-disk", "--absolute",
                   "--no-wait-for-sync", "grow1", "1", "24")
            assert os.path.exists(FakeState(vc.nodes[NODE2], "grow1"))
        finally:
            vc.Run("gnt-instance", "shutdown", "--timeout=5", "grow1")
        assert [os.stat(path).st_size for path in paths] == \
            [528 * MIB, 24 * MIB]
        out = vc.Run("gnt-instance", "list", "--no-headers", "--units=m",
                     "--separator=|", "-o", "disk.sizes", "grow1").stdout
        assert out.strip() == "528,24"

        for args, message in [
                (("--absolute", "grow1", "1", "8"),
                 "Requested size (8M) is smaller than current disk size"
                 " (24M)"),
                (("--absolute", "grow1", "0", "0"),
                 "Requested size (0M) is smaller than current disk size"
                 " (528M)"),
                (("grow1", "2", "4"), "Invalid disk index: 2"),
                (("grow1", "x", "4"), "Invalid disk index"),
                (("grow1", "0", "12X"), "Can't parse the given amount '12X'"),
                (("grow1", "0", "100t"),
                 "Not enough disk space on target node %s" % NODE2),
                (("grow1", "0", "100"),
                 "Growing disk 0 violates policy: disk-size/0 value 628 is"
                 " not in range [1, 600]")]:
            out = Fail(vc, "gnt-instance", "grow-disk", *args)
            assert message in out, out
        # Nothing changed by the refusals
        assert [os.stat(path).st_size for path in paths] == \
            [528 * MIB, 24 * MIB]
        _, disks = FindInstance(vc, "grow1")
        assert [disk["size"] for disk in disks] == [528, 24]

        out = vc.Run("gnt-instance", "grow-disk", "--ignore-ipolicy",
                     "grow1", "0", "100").stdout
        assert "violates policy" in out
        assert os.stat(paths[0]).st_size == 628 * MIB
        assert FindInstance(vc, "grow1")[1][0]["size"] == 628
    finally:
        vc.Run("gnt-instance", "remove", "-f", "grow1")


def test_grow_disk_refuses_diskless(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
           "--no-start", "-n", NODE2, *CHECKS, "nodisk1")
    try:
        out = Fail(vc, "gnt-instance", "grow-disk", "nodisk1", "0", "1G")
        assert "Instance's disk layout diskless does not support growing" \
            in out, out
    finally:
        vc.Run("gnt-instance", "remove", "-f", "nodisk1")


def test_activate_and_deactivate_disks(vc):
    _AddFileInstance(vc, "act1", NODE3)
    try:
        paths = DiskPaths(vc, "act1", NODE3)
        out = vc.Run("gnt-instance", "activate-disks", "--ignore-size",
                     "--wait-for-sync", "act1").stdout
        assert out.splitlines() == ["%s:disk/%d:%s" % (NODE3, idx, path)
                                    for idx, path in enumerate(paths)]
        assert FindInstance(vc, "act1")[0]["disks_active"] is True
        vc.Run("gnt-instance", "deactivate-disks", "act1")
        assert FindInstance(vc, "act1")[0]["disks_active"] is False

        # A running instance keeps its disks unless forced
        vc.Run("gnt-instance", "startup", "act1")
        vc.Run("gnt-instance", "activate-disks", "act1")
        out = Fail(vc, "gnt-instance", "deactivate-disks", "act1")
        assert "Instance is running, can't shutdown block devices" in out
        assert FindInstance(vc, "act1")[0]["disks_active"] is True
        vc.Run("gnt-instance", "deactivate-disks", "-f", "act1")
        assert FindInstance(vc, "act1")[0]["disks_active"] is False
        vc.Run("gnt-instance", "shutdown", "--timeout=5", "act1")

        # A missing disk can't be activated, and the flag stays off
        os.unlink(paths[1])
        out = Fail(vc, "gnt-instance", "activate-disks", "act1")
        assert "Cannot activate block device disk/1 of instance act1" in out
        assert "does not exist" in out
        assert FindInstance(vc, "act1")[0]["disks_active"] is False
    finally:
        vc.Run("gnt-instance", "remove", "-f", "act1")


def test_recreate_disks(vc):
    _AddFileInstance(vc, "rec1", NODE2)
    node2, node3 = vc.nodes[NODE2], vc.nodes[NODE3]
    try:
        paths = DiskPaths(vc, "rec1", NODE2)
        _Write(paths[0], 0, b"disk zero")
        out = Fail(vc, "gnt-instance", "recreate-disks", "rec1")
        assert "Disk(s) disk/0, disk/1 of instance rec1 already exist on" \
            " node %s" % NODE2 in out, out

        # Only the selected missing disk is created, empty, at its size
        _Write(paths[1], 0, b"lost")
        os.unlink(paths[1])
        vc.Run("gnt-instance", "recreate-disks", "--disk=1", "rec1")
        assert os.stat(paths[1]).st_size == 8 * MIB
        assert _Read(paths[1], 0, 4) == b"\0\0\0\0"
        assert _Read(paths[0], 0, 9) == b"disk zero"

        # Recreating may change the size and the mode
        os.unlink(paths[1])
        vc.Run("gnt-instance", "recreate-disks", "--disk=1:size=12M,mode=ro",
               "rec1")
        assert os.stat(paths[1]).st_size == 12 * MIB
        _, disks = FindInstance(vc, "rec1")
        assert [(disk["size"], disk["mode"]) for disk in disks] == \
            [(16, "rw"), (12, "ro")]

        for args, message in [
                (("--disk=0", "--disk=0"),
                 "Some disks have been specified more than once: 0"),
                (("--disk=7", ), "Invalid disk index '7'"),
                (("--disk=0:name=x", ),
                 "Parameters for disk 0 try to change unmodifyable"
                 " parameter(s): name"),
                (("--disk=0:spindles=2", ),
                 "Spindles in instance disks cannot be specified"),
                (("--disk=0:mode=rx", ), "Invalid disk access mode 'rx'"),
                (("--disk=1", "-n", NODE3),
                 "Can't recreate disks partially and change the nodes at"
                 " the same time"),
                (("-n", "%s:%s" % (NODE3, NODE1)),
                 "Instance rec1 currently has 1 nodes, but 2 replacement"
                 " nodes were specified"),
                (("-I", "hail"), "iallocator module 'hail' not found"),
                (("-n", "nosuchnode"), "Node 'nosuchnode' not known")]:
            out = Fail(vc, "gnt-instance", "recreate-disks", *args, "rec1")
            assert message in out, (args, out)

        # Not while it runs, whatever its admin state says
        vc.Run("gnt-instance", "startup", "rec1")
        out = Fail(vc, "gnt-instance", "recreate-disks", "-n", NODE3, "rec1")
        assert "Instance 'rec1' is marked to be up, cannot recreate disks" \
            in out, out
        vc.Run("gnt-instance", "shutdown", "--timeout=5", "rec1")
        with open(FakeState(node2, "rec1"), "w", encoding="ascii") as fobj:
            fobj.write("0\n32\n1\n")
        out = Fail(vc, "gnt-instance", "recreate-disks", "-n", NODE3, "rec1")
        assert "Instance rec1 is running, cannot recreate disks" in out, out
        os.unlink(FakeState(node2, "rec1"))

        # On another node: the instance moves there with new empty disks
        vc.Run("gnt-instance", "recreate-disks", "-n", NODE3, "rec1")
        inst, disks = FindInstance(vc, "rec1")
        node3_uuid = NodeUuid(vc, NODE3)
        assert inst["primary_node"] == node3_uuid
        assert [disk["nodes"] for disk in disks] == [[node3_uuid]] * 2
        new_paths = DiskPaths(vc, "rec1", NODE3)
        assert [os.stat(path).st_size for path in new_paths] == \
            [16 * MIB, 12 * MIB]
        assert _Read(new_paths[0], 0, 9) == b"\0" * 9
        # The old node keeps its files (the administrator removes them)
        assert _Read(paths[0], 0, 9) == b"disk zero"
        vc.Run("gnt-instance", "startup", "rec1")
        assert os.path.exists(FakeState(node3, "rec1"))
        vc.Run("gnt-instance", "shutdown", "--timeout=5", "rec1")
    finally:
        vc.Run("gnt-instance", "remove", "-f", "rec1")
    assert not any(os.path.exists(path) for path in new_paths)


def test_recreate_disks_refuses_diskless(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
           "--no-start", "-n", NODE2, *CHECKS, "nodisk2")
    try:
        out = Fail(vc, "gnt-instance", "recreate-disks", "nodisk2")
        assert "Instance 'nodisk2' has no disks" in out, out
    finally:
        vc.Run("gnt-instance", "remove", "-f", "nodisk2")
