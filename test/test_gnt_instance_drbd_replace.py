"""replace-disks -p/-s/-a and disk template conversions file <-> drbd on
a real virtual cluster.

The copy made anew (a new image file, another inode) must end up holding
the same data as the device the instance writes to, also while a writer
keeps writing through it during the replacement; a conversion must keep
the disk's data.
"""

import hashlib
import os

from ganeti import constants

import test_gnt_instance_drbd as drbd_tests
from testutils_cluster import WaitFor
from testutils_instance import (CHECKS, NODE2, NODE3, Config, DiskPaths,
                                FindInstance, NodeUuid, PrimaryNode,
                                RemoveInstances)
from test_gnt_instance_drbd import (SIZE, _Add, _Contents, _Device, _Image,
                                    _Write, _Writer)

pytestmark = drbd_tests.pytestmark
# The drbd tests' cluster (a module fixture: one cluster for this module)
vc = drbd_tests.vc


def _DeviceDigest(path):
    with open(path, "rb") as fobj:
        return hashlib.sha256(fobj.read()).hexdigest()


def _ReplaceWhileWriting(cluster, name, flag):
    """replace-disks with ``flag`` while a writer writes through the
    device; returns the output and the device's final checksum."""
    _, (disk, ) = FindInstance(cluster, name)
    device = _Device(cluster, cluster.node, disk)
    writer = _Writer(device)
    writer.start()
    try:
        out = cluster.Run("gnt-instance", "replace-disks", flag, name,
                          timeout=180).stdout
    finally:
        writer.stop.set()
        writer.join()
    assert writer.passes > 0
    return out, _DeviceDigest(device)


def _CheckSteps(out, name):
    for line in ("Replacing disk(s) 0 for instance '%s'" % name,
                 "STEP 1/6 Check device existence",
                 "STEP 3/6 Allocate new storage",
                 "STEP 5/6 Sync devices",
                 "Instance %s's disks are in sync" % name,
                 "STEP 6/6 Removing old storage"):
        assert line in out, out


def _CheckReplaced(cluster, name, node, old_inode, digest):
    """``node``'s image is a new file, nothing set aside is left, the
    configuration is unchanged and both copies hold the device's data."""
    _, (disk, ) = FindInstance(cluster, name)
    assert disk["nodes"] == [NodeUuid(cluster, cluster.node),
                             NodeUuid(cluster, NODE2)]
    image = _Image(cluster, node, disk)
    assert os.stat(image).st_ino != old_inode
    directory = os.path.dirname(image)
    assert sorted(entry for entry in os.listdir(directory)
                  if entry.startswith(disk["uuid"])) == \
        [os.path.basename(image)]
    info = cluster.Run("gnt-instance", "info", name).stdout
    assert "in sync, status ok" in info, info
    cluster.Run("gnt-instance", "shutdown", name, timeout=120)
    for each in (cluster.node, NODE2):
        assert _Contents(_Image(cluster, each, disk)) == digest


def test_replace_on_secondary_while_writing(vc):
    _Add(vc, "drbdr1", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "drbdr1")
        old_inode = os.stat(_Image(vc, NODE2, disk)).st_ino
        out, digest = _ReplaceWhileWriting(vc, "drbdr1", "-s")
        _CheckSteps(out, "drbdr1")
        assert "Current secondary node: %s" % NODE2 in out, out
        _CheckReplaced(vc, "drbdr1", NODE2, old_inode, digest)
    finally:
        RemoveInstances(vc, "drbdr1")


def test_replace_on_primary_while_writing(vc):
    _Add(vc, "drbdr2", vc.node, NODE2)
    try:
        _, (disk, ) = FindInstance(vc, "drbdr2")
        _Write(_Device(vc, vc.node, disk), "before")
        old_inode = os.stat(_Image(vc, vc.node, disk)).st_ino
        out, digest = _ReplaceWhileWriting(vc, "drbdr2", "-p")
        _CheckSteps(out, "drbdr2")
        assert PrimaryNode(vc, "drbdr2") == vc.node
        _CheckReplaced(vc, "drbdr2", vc.node, old_inode, digest)
    finally:
        RemoveInstances(vc, "drbdr2")


def test_replace_auto(vc):
    _Add(vc, "drbdr3", vc.node, NODE2)
    try:
        out = vc.Run("gnt-instance", "replace-disks", "-a", "--disks", "0",
                     "drbdr3", check=False)
        assert out.returncode != 0
        assert "Cannot specify disks when using automatic mode" in \
            out.stderr, out.stderr
        out = vc.Run("gnt-instance", "replace-disks", "-a", "drbdr3").stdout
        assert "No disks need replacement for instance 'drbdr3'" in out, out
        _, (disk, ) = FindInstance(vc, "drbdr3")
        device = _Device(vc, vc.node, disk)
        _Write(device, "auto")
        # The secondary's image is lost while its server still holds it
        image = _Image(vc, NODE2, disk)
        os.unlink(image)
        out = vc.Run("gnt-instance", "replace-disks", "-a", "drbdr3",
                     timeout=180).stdout
        _CheckSteps(out, "drbdr3")
        assert "Adding storage on %s for disk/0" % NODE2 in out, out
        digest = _DeviceDigest(device)
        _CheckReplaced(vc, "drbdr3", NODE2, None, digest)
        # Stopped: Ganeti wants the disks activated first
        out = vc.Run("gnt-instance", "replace-disks", "-a", "drbdr3",
                     check=False)
        assert out.returncode != 0
        assert "Please run activate-disks on instance drbdr3 first" in \
            out.stderr, out.stderr
    finally:
        RemoveInstances(vc, "drbdr3")


def _FileDigest(path):
    with open(path, "rb") as fobj:
        return hashlib.sha256(fobj.read()).hexdigest()


def test_convert_file_to_drbd_and_back(vc):
    vc.Run("gnt-instance", "add", "-t", "file", "-n", vc.node, "--disk",
           "0:size=%dM,name=data" % SIZE, "--no-install", "--no-start",
           "--ignore-ipolicy", "-B", "memory=64", *CHECKS, "drbdc1",
           timeout=120)
    try:
        (path, ) = DiskPaths(vc, "drbdc1", vc.node)
        _Write(path, "file data")
        digest = _FileDigest(path)
        out = vc.Run("gnt-instance", "modify", "-t", "drbd", "drbdc1",
                     check=False)
        assert out.returncode != 0
        assert "Changing the disk template to a mirrored one requires" \
            " specifying a secondary node" in out.stderr, out.stderr
        vc.Run("gnt-instance", "startup", "drbdc1", timeout=120)
        out = vc.Run("gnt-instance", "modify", "-t", "drbd", "-n", NODE2,
                     "drbdc1", check=False)
        assert "cannot change disk template" in out.stderr, out.stderr
        vc.Run("gnt-instance", "shutdown", "drbdc1", timeout=120)

        out = vc.Run("gnt-instance", "modify", "-t", "drbd", "-n", NODE2,
                     "drbdc1", timeout=180).stdout
        for line in ("Converting disk template from 'file' to 'drbd'",
                     " - copying data from disk 0 (file), size %dM" % SIZE,
                     "Instance drbdc1's disks are in sync",
                     " - disk_template -> drbd"):
            assert line in out, out
        assert not os.path.exists(path)
        _, (disk, ) = FindInstance(vc, "drbdc1")
        assert disk["dev_type"] == constants.DT_DRBD8
        assert disk["name"] == "data" and disk["size"] == SIZE
        assert disk["nodes"] == [NodeUuid(vc, vc.node), NodeUuid(vc, NODE2)]
        out = vc.Run("gnt-instance", "list", "--no-headers", "-o",
                     "disk_template,snodes", "drbdc1").stdout.split()
        assert out == ["drbd", NODE2]
        for node in (vc.node, NODE2):
            assert _Contents(_Image(vc, node, disk)) == digest
        port = disk["logical_id"][2]
        vc.Run("gnt-instance", "startup", "drbdc1", timeout=120)
        with open(_Device(vc, vc.node, disk), "rb") as fobj:
            assert hashlib.sha256(fobj.read()).hexdigest() == digest
        vc.Run("gnt-instance", "shutdown", "drbdc1", timeout=120)

        out = vc.Run("gnt-instance", "modify", "-t", "file", "drbdc1",
                     timeout=180).stdout
        assert "Converting disk template from 'drbd' to 'file'" in out, out
        _, (disk2, ) = FindInstance(vc, "drbdc1")
        assert disk2["dev_type"] == constants.DT_FILE
        assert disk2["nodes"] == [NodeUuid(vc, vc.node)]
        for node in (vc.node, NODE2):
            assert not os.path.exists(_Image(vc, node, disk))
        assert port in Config(vc)["cluster"]["tcpudp_port_pool"]
        (path, ) = DiskPaths(vc, "drbdc1", vc.node)
        assert _FileDigest(path) == digest
    finally:
        RemoveInstances(vc, "drbdc1")


def _Tags(cluster, name):
    return cluster.Run("gnt-instance", "list-tags", name).stdout.split()


def test_harep_replaces_an_offline_secondary(vc):
    """harep (Ganeti's auto-repair tags): an instance allowed to be
    repaired up to ``migrate`` whose secondary is offline gets a new
    secondary from the allocator (``fix-storage``), tagged pending with
    the repair's job; the next run tags the result."""
    _Add(vc, "drbdh1", vc.node, NODE2, "--tags",
         "ganeti:watcher:autorepair:migrate")
    vc.Run("gnt-node", "modify", "--offline", "yes", "--auto-promote", NODE2)
    try:
        out = vc.Run("harep", "--job-delay", "0").stdout
        assert "Executing fix-storage repair on drbdh1" in out, out
        (pending, ) = [tag for tag in _Tags(vc, "drbdh1")
                       if tag.startswith("ganeti:watcher:autorepair:"
                                         "pending:fix-storage:")]
        job_id = int(pending.rsplit(":", 1)[1])
        WaitFor(lambda: vc.Luxi().QueryJobs([job_id], ["status"])[0][0]
                in constants.JOBS_FINALIZED, 180, "the repair job")
        out = vc.Run("harep").stdout
        assert 'Moving drbdh1 from "Pending repair" to "Healthy"' in out, out
        tags = _Tags(vc, "drbdh1")
        assert pending not in tags
        assert [tag for tag in tags if ":result:" in tag][0].endswith(
            ":success:%d" % job_id), tags
        _, (disk, ) = FindInstance(vc, "drbdh1")
        assert disk["nodes"] == [NodeUuid(vc, vc.node), NodeUuid(vc, NODE3)]
    finally:
        vc.Run("gnt-node", "modify", "--offline", "no", NODE2)
        RemoveInstances(vc, "drbdh1")
