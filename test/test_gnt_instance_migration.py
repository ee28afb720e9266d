"""Failover, migration, change-group and node migration on a real
three-node virtual cluster (fake hypervisor).

A running fake instance is a state file in its node's FAKE_HV_DIR; a
migration must hand that file over to the target node, unchanged, through
the node RPCs. The sharedfile storage directory is one directory for all
nodes of the virtual cluster, as an NFS mount would be. Failures are
injected with the fake hypervisor's ``.fail-<step>`` marker files (see
ganeti.hypervisor.hv_fake).
"""

import hashlib
import os
import shutil

import pytest

from ganeti import constants, errors, objects, pathutils
from ganeti.hypervisor import hv_fake

from testutils_cluster import NoDefaultIAllocator
from testutils_instance import (CHECKS, FILE_VDIR, NODE1, NODE2, NODE3,
                                Config, FakeState, Fail, Field,
                                InstanceCluster, RemoveInstances)

pytestmark = pytest.mark.integration

SHARED_VDIR = "/srv/ganeti/shared-file-storage"
HOOK_RECORD = "migrate-hook.env"


def test_fake_hypervisor_handover(tmp_path):
    """The state file moves through the migration data; an undo on either
    side leaves the instance running on the source only."""
    src = hv_fake.FakeHypervisor(root_dir=str(tmp_path / "src"))
    dst = hv_fake.FakeHypervisor(root_dir=str(tmp_path / "dst"))
    inst = objects.Instance(name="hv1", primary_node="n1", hypervisor="fake",
                            uuid="u1", beparams={"maxmem": 128, "vcpus": 2})
    src.StartInstance(inst, [], False)
    src.BalloonInstanceMemory(inst, 96)
    info = src.MigrationInfo(inst)
    assert info == "0\n96\n2\n"
    dst.AcceptInstance(inst, info, "192.0.2.2", [])
    assert dst.ListInstances() == []
    src.MigrateInstance("cluster", inst, "192.0.2.2", True)
    assert src.GetMigrationStatus(inst) == {
        "status": constants.HV_MIGRATION_COMPLETED}
    src.FinalizeMigrationSource(inst, True, True)
    dst.FinalizeMigrationDst(inst, info, True)
    assert src.ListInstances() == [] and dst.ListInstances() == ["hv1"]
    assert dst.GetInstanceInfo("hv1")[2] == 96
    assert sorted(os.listdir(tmp_path / "dst")) == ["hv1"]

    # Back, failing: each step fails by its marker, the undo always works
    (tmp_path / "src" / ".fail-accept").touch()
    with pytest.raises(errors.HypervisorError, match="'accept'"):
        src.AcceptInstance(inst, info, "192.0.2.1", [])
    src.FinalizeMigrationDst(inst, info, False)
    dst.FinalizeMigrationSource(inst, False, True)
    assert dst.ListInstances() == ["hv1"] and src.ListInstances() == []
    (tmp_path / "dst" / ".fail-status").touch()
    assert dst.GetMigrationStatus(inst) == {
        "status": constants.HV_MIGRATION_FAILED}
    with pytest.raises(errors.HypervisorError, match="Invalid migration"):
        dst.AcceptInstance(objects.Instance(name="hv2"), "garbage", "x", [])
    with pytest.raises(errors.HypervisorError, match="already running"):
        dst.AcceptInstance(inst, info, "192.0.2.2", [])


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--enabled-disk-templates=diskless,file,sharedfile,"
                         "blockdev",
                         file_paths=(FILE_VDIR, SHARED_VDIR)) as cluster:
        os.makedirs(os.path.join(cluster.base, SHARED_VDIR.lstrip("/")))
        # The master records the environment of the migration post hooks
        hooks = cluster.NodePath(os.path.join(pathutils.HOOKS_BASE_DIR,
                                              "instance-migrate-post.d"))
        os.makedirs(hooks)
        script = os.path.join(hooks, "10-record")
        with open(script, "w", encoding="ascii") as fobj:
            fobj.write("#!/bin/sh\nenv > %s\n" % cluster.Path(HOOK_RECORD))
        os.chmod(script, 0o755)
        cluster.Run("gnt-group", "add", "g2")
        # Small disks are fine (no slow copies), small memory is not
        cluster.Run("gnt-cluster", "modify", "--ipolicy-bounds-specs",
                    "min:memory-size=128,cpu-count=1,disk-count=1,"
                    "disk-size=1,nic-count=1,spindle-use=1/"
                    "max:memory-size=32768,cpu-count=8,disk-count=16,"
                    "disk-size=1048576,nic-count=8,spindle-use=12")
        yield cluster


def _HvFile(cluster, node, name):
    return FakeState(cluster.nodes[node], name)


def _RunsOn(cluster, name):
    """The nodes whose fake hypervisor runs the instance."""
    return sorted(node for node in cluster.nodes
                  if os.path.exists(_HvFile(cluster, node, name)))


def _Add(cluster, name, node, *extra, template="diskless", memory=64):
    """An instance without OS; small, the policy of its group ignored."""
    cluster.Run("gnt-instance", "add", "-t", template, "-n", node,
                "--no-install", "--ignore-ipolicy", "-B",
                "memory=%d" % memory, *extra, *CHECKS, name)


def test_migrate_and_failover_diskless(vc):
    _Add(vc, "mig1", NODE1)
    try:
        state = open(_HvFile(vc, NODE1, "mig1"), encoding="ascii").read()
        out = vc.Run("gnt-instance", "migrate", "-f", "-n", NODE2,
                     "mig1").stdout
        assert "* memory transfer complete" in out, out
        assert _RunsOn(vc, "mig1") == [NODE2]
        with open(_HvFile(vc, NODE2, "mig1"), encoding="ascii") as fobj:
            assert fobj.read() == state
        assert Field(vc, "mig1", "pnode,status,oper_ram") == \
            "%s|running|64" % NODE2
        with open(vc.Path(HOOK_RECORD), encoding="ascii") as fobj:
            env = dict(line.split("=", 1) for line in
                       fobj.read().splitlines() if "=" in line)
        assert env["GANETI_OLD_PRIMARY"] == NODE1
        assert env["GANETI_NEW_PRIMARY"] == NODE2
        assert env["GANETI_MIGRATE_LIVE"] == "True"
        assert env["GANETI_MIGRATE_CLEANUP"] == "False"
        # The post phase also sees the instance as it is now
        assert env["GANETI_INSTANCE_PRIMARY"] == NODE1
        assert env["GANETI_POST_INSTANCE_PRIMARY"] == NODE2

        vc.Run("gnt-instance", "migrate", "-f", "--non-live", "-n", NODE1,
               "mig1")
        with open(vc.Path(HOOK_RECORD), encoding="ascii") as fobj:
            assert "GANETI_MIGRATE_LIVE=False" in fobj.read()
        assert _RunsOn(vc, "mig1") == [NODE1]

        out = vc.Run("gnt-instance", "failover", "-f", "-n", NODE3,
                     "mig1").stdout
        assert "* starting the instance on the target node %s" % NODE3 \
            in out, out
        assert _RunsOn(vc, "mig1") == [NODE3]
        assert Field(vc, "mig1", "pnode,status") == "%s|running" % NODE3

        # A stopped instance only changes its configuration
        vc.Run("gnt-instance", "stop", "mig1")
        vc.Run("gnt-instance", "failover", "-f", "-n", NODE2, "mig1")
        assert _RunsOn(vc, "mig1") == []
        assert Field(vc, "mig1", "pnode,status") == "%s|ADMIN_down" % NODE2
        out = Fail(vc, "gnt-instance", "migrate", "-f", "-n", NODE1,
                   "mig1")
        assert "Can't migrate, please use failover: instance mig1 is not" \
            " running on node %s" % NODE2 in out, out
        vc.Run("gnt-instance", "migrate", "-f", "--allow-failover", "-n",
               NODE1, "mig1")
        assert _RunsOn(vc, "mig1") == []
        assert Field(vc, "mig1", "pnode,status") == "%s|ADMIN_down" % NODE1
    finally:
        RemoveInstances(vc, "mig1")


def test_sharedfile_data_follows_the_instance(vc):
    _Add(vc, "shr1", NODE1, "--disk", "0:size=8M", template="sharedfile")
    try:
        config = Config(vc)
        (inst, ) = [i for i in config["instances"].values()
                    if i["name"] == "shr1"]
        disk_uuid = inst["disks"][0]
        vpath = config["disks"][disk_uuid]["logical_id"][1]
        assert vpath.startswith(SHARED_VDIR + "/")
        image = os.path.join(vc.base, vpath.lstrip("/"))
        with open(image, "r+b") as fobj:
            fobj.write(os.urandom(1024 * 1024))
        with open(image, "rb") as fobj:
            checksum = hashlib.sha256(fobj.read()).hexdigest()

        vc.Run("gnt-instance", "migrate", "-f", "-n", NODE2, "shr1")
        assert _RunsOn(vc, "shr1") == [NODE2]
        config = Config(vc)
        node2_uuid = [uuid for uuid, node in config["nodes"].items()
                      if node["name"] == NODE2][0]
        assert config["instances"][inst["uuid"]]["primary_node"] == \
            node2_uuid
        assert config["disks"][disk_uuid]["nodes"] == [node2_uuid]
        assert Field(vc, "shr1", "snodes") == ""

        vc.Run("gnt-instance", "failover", "-f", "-n", NODE3, "shr1")
        assert _RunsOn(vc, "shr1") == [NODE3]
        with open(image, "rb") as fobj:
            assert hashlib.sha256(fobj.read()).hexdigest() == checksum
        assert Field(vc, "shr1", "pnode,status,disk.sizes") == \
            "%s|running|8" % NODE3
    finally:
        RemoveInstances(vc, "shr1")


def test_blockdev_instance_moves_between_nodes(vc, loop_device):
    vc.Run("gnt-instance", "add", "-t", "blockdev", "-n", NODE1,
           "--no-install", "--ignore-ipolicy", "-B", "memory=64", "--disk",
           "0:adopt=%s" % loop_device, *CHECKS, "blk1")
    try:
        vc.Run("gnt-instance", "migrate", "-f", "-n", NODE2, "blk1")
        assert _RunsOn(vc, "blk1") == [NODE2]
        vc.Run("gnt-instance", "failover", "-f", "-n", NODE3, "blk1")
        assert _RunsOn(vc, "blk1") == [NODE3]
        assert Field(vc, "blk1", "pnode,status,disk.sizes") == \
            "%s|running|4" % NODE3
    finally:
        RemoveInstances(vc, "blk1")


def test_refusals(vc):
    _Add(vc, "fil1", NODE1, "--disk", "0:size=4M", template="file")
    _Add(vc, "ref1", NODE1)
    try:
        for command, what in (("migrate", "migrations"),
                              ("failover", "failovers")):
            out = Fail(vc, "gnt-instance", command, "-f", "-n", NODE2,
                       "fil1")
            assert "Instance's disk layout 'file' does not allow %s" % \
                what in out, out
        with NoDefaultIAllocator(vc):
            out = Fail(vc, "gnt-instance", "migrate", "-f", "ref1")
        assert "No iallocator or node given" in out, out
        for args, message in [
                (("-I", "hail"), "iallocator module 'hail' not found"),
                (("-n", NODE1), "Cannot migrate instance ref1 to its"
                 " primary (%s)" % NODE1),
                (("-n", "nosuchnode"), "Node 'nosuchnode' not known"),
                (("-n", NODE2, "--non-live", "--migration-mode=live"),
                 "Only one of the --non-live and --migration-mode")]:
            out = Fail(vc, "gnt-instance", "migrate", "-f", *args, "ref1")
            assert message in out, (args, out)
        out = Fail(vc, "gnt-instance", "failover", "-f", "-I", "hail",
                   "-n", NODE2, "ref1")
        assert "Specify either an iallocator (-I), or a target node" in out

        for flag, message in (("-O", "Can't use offline node %s" % NODE3),
                              ("-D", "Can't use drained node %s" % NODE3)):
            vc.Run("gnt-node", "modify", flag, "yes", NODE3)
            try:
                for command in ("migrate", "failover"):
                    out = Fail(vc, "gnt-instance", command, "-f", "-n",
                               NODE3, "ref1")
                    assert message in out, out
            finally:
                vc.Run("gnt-node", "modify", flag, "no", NODE3)
        assert _RunsOn(vc, "ref1") == [NODE1]
        assert Field(vc, "ref1", "pnode") == NODE1
    finally:
        RemoveInstances(vc, "fil1", "ref1")


def test_memory_refusals(vc):
    huge = 1000000000
    _Add(vc, "big1", NODE2, "--no-start", memory=huge)
    try:
        # The hypervisor runs it, whatever its configured memory; starting
        # it then only marks it up
        with open(_HvFile(vc, NODE2, "big1"), "w", encoding="ascii") as fobj:
            fobj.write("0\n64\n1\n")
        vc.Run("gnt-instance", "startup", "big1")
        out = Fail(vc, "gnt-instance", "migrate", "-f", "-n", NODE1, "big1")
        assert "Not enough memory on node %s for migrating instance big1:" \
            " needed %d MiB, available" % (NODE1, huge) in out, out
        out = Fail(vc, "gnt-instance", "failover", "-f", "-n", NODE1,
                   "big1")
        assert "Not enough memory on node %s for failing over instance" \
            " big1: needed %d MiB, available" % (NODE1, huge) in out, out
        assert _RunsOn(vc, "big1") == [NODE2]
        assert Field(vc, "big1", "pnode,status") == "%s|running" % NODE2
    finally:
        RemoveInstances(vc, "big1")


def test_failover_from_unreachable_node(vc):
    node2 = vc.nodes[NODE2]
    _Add(vc, "off1", NODE2)
    node2.KillDaemon("ganeti-noded")
    try:
        out = Fail(vc, "gnt-instance", "failover", "-f", "-n", NODE3,
                   "off1")
        assert "Could not shutdown instance off1 on node %s" % NODE2 in out
        assert Field(vc, "off1", "pnode") == NODE2
        out = vc.Run("gnt-instance", "failover", "-f",
                     "--ignore-consistency", "-n", NODE3, "off1").stdout
        assert "please make sure node %s is down" % NODE2 in out, out
        assert Field(vc, "off1", "pnode,status") == "%s|running" % NODE3
        assert os.path.exists(_HvFile(vc, NODE3, "off1"))
    finally:
        node2.StartNoded()
        # The unreachable node still "runs" it: the admin's job
        if os.path.exists(_HvFile(vc, NODE2, "off1")):
            os.unlink(_HvFile(vc, NODE2, "off1"))
        RemoveInstances(vc, "off1")


@pytest.mark.parametrize("node,step,message", [
    (NODE2, "accept", "Could not pre-migrate instance rb1"),
    (NODE1, "migrate", "Could not migrate instance rb1"),
    (NODE1, "status", "Could not migrate instance rb1: hypervisor returned"
     " failure"),
])
def test_failed_migration_is_rolled_back(vc, node, step, message):
    _Add(vc, "rb1", NODE1, "--disk", "0:size=4M", template="sharedfile")
    marker = _HvFile(vc, node, ".fail-%s" % step)
    try:
        state = open(_HvFile(vc, NODE1, "rb1"), encoding="ascii").read()
        open(marker, "w").close()
        out = Fail(vc, "gnt-instance", "migrate", "-f", "-n", NODE2, "rb1")
        assert message in out, out
        assert "Simulated failure of migration step '%s'" % step in out or \
            step == "status", out
        assert _RunsOn(vc, "rb1") == [NODE1]
        with open(_HvFile(vc, NODE1, "rb1"), encoding="ascii") as fobj:
            assert fobj.read() == state
        assert not os.path.exists(_HvFile(vc, NODE2, ".incoming-rb1"))
        assert Field(vc, "rb1", "pnode,status") == "%s|running" % NODE1
        os.unlink(marker)
        vc.Run("gnt-instance", "migrate", "-f", "-n", NODE2, "rb1")
        assert _RunsOn(vc, "rb1") == [NODE2]
    finally:
        if os.path.exists(marker):
            os.unlink(marker)
        RemoveInstances(vc, "rb1")


def test_cleanup_after_interrupted_migration(vc):
    _Add(vc, "cln1", NODE1)
    try:
        # The migration finished, but the master died before recording it
        os.rename(_HvFile(vc, NODE1, "cln1"), _HvFile(vc, NODE2, "cln1"))
        assert Field(vc, "cln1", "pnode,status") == \
            "%s|ERROR_wrongnode" % NODE1
        out = vc.Run("gnt-instance", "migrate", "-f", "--cleanup", "-n",
                     NODE2, "cln1").stdout
        assert "* instance running on secondary node (%s), updating" \
            " config" % NODE2 in out, out
        assert Field(vc, "cln1", "pnode,status") == "%s|running" % NODE2

        # Interrupted before the handover: the target keeps a leftover
        incoming = _HvFile(vc, NODE3, ".incoming-cln1")
        with open(incoming, "w", encoding="ascii") as fobj:
            fobj.write("0\n64\n1\n")
        out = vc.Run("gnt-instance", "migrate", "-f", "--cleanup", "-n",
                     NODE3, "cln1").stdout
        assert "* instance confirmed to be running on its primary node" \
            " (%s)" % NODE2 in out, out
        assert not os.path.exists(incoming)
        assert Field(vc, "cln1", "pnode") == NODE2

        shutil.copy(_HvFile(vc, NODE2, "cln1"), _HvFile(vc, NODE3, "cln1"))
        out = Fail(vc, "gnt-instance", "migrate", "-f", "--cleanup", "-n",
                   NODE3, "cln1")
        assert "Instance seems to be running on two nodes" in out, out
        for node in (NODE2, NODE3):
            os.unlink(_HvFile(vc, node, "cln1"))
        out = Fail(vc, "gnt-instance", "migrate", "-f", "--cleanup", "-n",
                   NODE3, "cln1")
        assert "Instance does not seem to be running at all" in out, out
        assert Field(vc, "cln1", "pnode") == NODE2
    finally:
        RemoveInstances(vc, "cln1")


def test_change_group(vc):
    vc.Run("gnt-group", "assign-nodes", "g2", NODE3)
    try:
        _Add(vc, "cg1", NODE1, memory=128)
        _Add(vc, "cg2", NODE2, "--no-start", memory=128)
        _Add(vc, "small1", NODE1)
        out = vc.Run("gnt-instance", "change-group", "--to", "g2",
                     "cg1").stdout
        assert "Instance 'cg1' changed group successfully." in out, out
        assert Field(vc, "cg1", "pnode,status,pnode.group") == \
            "%s|running|g2" % NODE3
        assert _RunsOn(vc, "cg1") == [NODE3]
        # Back to the only other group; a stopped instance fails over
        vc.Run("gnt-instance", "change-group", "cg1")
        assert Field(vc, "cg1", "pnode.group,status") == "default|running"
        vc.Run("gnt-instance", "change-group", "cg2")
        assert Field(vc, "cg2", "pnode,status") == "%s|ADMIN_down" % NODE3

        out = Fail(vc, "gnt-instance", "change-group", "--to", "default",
                   "cg1")
        assert "Can't use group(s) 'default' as targets, they are used by" \
            " the instance 'cg1'" in out, out
        out = Fail(vc, "gnt-instance", "change-group", "--to", "nosuch",
                   "cg1")
        assert "Node group 'nosuch' not found" in out, out

        # The target group's instance policy applies across groups
        out = Fail(vc, "gnt-instance", "migrate", "-f", "-n", NODE3,
                   "small1")
        assert "Instance does not meet target node group's (g2) instance" \
            " policy: memory-size value 64 is not in range" in out, out
        vc.Run("gnt-instance", "migrate", "-f", "--ignore-ipolicy", "-n",
               NODE3, "small1")
        assert _RunsOn(vc, "small1") == [NODE3]
    finally:
        RemoveInstances(vc, "cg1", "cg2", "small1")
        vc.Run("gnt-group", "assign-nodes", "default", NODE3)


def test_change_group_of_file_instance(vc):
    vc.Run("gnt-group", "assign-nodes", "g2", NODE3)
    try:
        _Add(vc, "cgf1", NODE1, "--disk", "0:size=4M", template="file",
             memory=128)
        # no -I: the default allocator answers (a copy of the disks)
        out = vc.Run("gnt-instance", "change-group", "cgf1").stdout
        assert "Instances to be moved: cgf1 (to g2)" in out, out
        assert "Instance 'cgf1' changed group successfully." in out, out
        assert Field(vc, "cgf1", "pnode,status,pnode.group") == \
            "%s|running|g2" % NODE3
        assert _RunsOn(vc, "cgf1") == [NODE3]
    finally:
        RemoveInstances(vc, "cgf1")
        vc.Run("gnt-group", "assign-nodes", "default", NODE3)


def test_node_migrate(vc):
    _Add(vc, "nm1", NODE2)
    _Add(vc, "nm2", NODE2, "--disk", "0:size=4M", template="sharedfile")
    try:
        with NoDefaultIAllocator(vc):
            out = Fail(vc, "gnt-node", "migrate", "-f", NODE2)
        assert "No iallocator or node given" in out, out
        out = vc.Run("gnt-node", "migrate", "-f", "-n", NODE3, NODE2).stdout
        assert "All instances migrated successfully." in out, out
        for name in ("nm1", "nm2"):
            assert Field(vc, name, "pnode,status") == \
                "%s|running" % NODE3
            assert _RunsOn(vc, name) == [NODE3]
        out = vc.Run("gnt-node", "migrate", "-f", "-n", NODE3, NODE2).stdout
        assert "No primary instances on node %s, exiting." % NODE2 in out

        vc.Run("gnt-instance", "stop", "nm1")
        out = Fail(vc, "gnt-node", "migrate", "-f", "-n", NODE1, NODE3)
        assert "There were 1 errors during the node migration." in out, out
        assert Field(vc, "nm2", "pnode") == NODE1
        assert Field(vc, "nm1", "pnode") == NODE3
    finally:
        RemoveInstances(vc, "nm1", "nm2")
