"""The instance operation resources of ganeti-rapi on a real cluster.

Three nodes (fake hypervisor, the shipped tinyimage OS, file storage
allowed below the cluster's directory) and one empty extra node group;
every resource is driven through the shipped RAPI client over real HTTPS
as a user with write access, its job waited for and its effect checked in
the configuration and on the nodes. Requests the client can't send (legacy
forms, DELETE of an export) go through http.client.
"""

import json
import os
import time

import pytest

from ganeti import constants, errors, pathutils
from ganeti.rapi import client as rapi_client

from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (ADMIN, CHECKS, MIB, NODE1, NODE2, NODE3,
                                READER, DiskPaths, FakeState, FindInstance,
                                InstanceCluster, PrimaryNode, RapiClient,
                                RapiRequest, RemoveInstances)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         rapi_users=True) as cluster:
        cluster.Run("gnt-group", "add", "g2")
        yield cluster


@pytest.fixture(scope="module")
def rclient(vc):
    return RapiClient(vc, ADMIN)


def _Wait(rclient, job_id, expected=constants.JOB_STATUS_SUCCESS):
    """Wait (the server-side wait) for a job; return its details."""
    deadline = time.monotonic() + 120
    info = None
    while time.monotonic() < deadline:
        change = rclient.WaitForJobChange(job_id, ["status"], info, None)
        if change is not None:
            info = change["job_info"]
            if info[0] in constants.JOBS_FINALIZED:
                break
    job = rclient.GetJobStatus(job_id)
    assert job["status"] == expected, (job["status"], job["opresult"])
    return job


def _BadRequest(call, *args, **kwargs):
    """The message of a request answered with 400."""
    with pytest.raises(rapi_client.GanetiApiError) as err:
        call(*args, **kwargs)
    assert err.value.code == 400, str(err.value)
    return str(err.value)


def _AddFile(cluster, name, node, *extra):
    cluster.Run("gnt-instance", "add", "-t", "file", "-n", node,
                "-B", "maxmem=32,minmem=32", "--disk", "0:size=4M", *extra,
                *CHECKS, name)


def _Remove(cluster, *names):
    RemoveInstances(cluster, *names, extra=("--shutdown-timeout=0", ))


def test_features_and_paths(vc, rclient):
    features = rclient.GetFeatures()
    assert rapi_client.INST_REINSTALL_REQV1 in features
    assert rapi_client.NODE_MIGRATE_REQV1 in features
    status, answer = RapiRequest(vc, "POST", "/2/instances/x/disk/a/grow", {})
    assert status == 404, answer
    status, answer = RapiRequest(vc, "GET", "/2/instances/x/modify")
    assert status == 501, answer
    # A query job: an unknown instance is the job's error
    job = _Wait(rclient, rclient.GetInstanceInfo("nosuch"),
                constants.JOB_STATUS_ERROR)
    assert "nosuch" in json.dumps(job["opresult"])


def test_modify_info_console_reinstall_rename(vc, rclient):
    _AddFile(vc, "ops1", NODE2, "-o", "tinyimage")
    try:
        job = _Wait(rclient, rclient.ModifyInstance(
            "ops1", custom_beparams={"vcpus": 2}, reason="more cpu"))
        assert job["ops"][0]["beparams"] == {"vcpus": 2}
        assert FindInstance(vc, "ops1")[0]["beparams"]["vcpus"] == 2
        assert "beparams" in _BadRequest(rclient.ModifyInstance, "ops1",
                                         beparams="lots")

        job = _Wait(rclient, rclient.GetInstanceInfo("ops1"))
        info = job["opresult"][0]["ops1"]
        assert (info["run_state"], info["config_state"], info["pnode"],
                info["disk_template"], info["be_instance"]["vcpus"],
                info["be_actual"]["maxmem"]) == \
            ("up", "up", NODE2, "file", 2, 32)
        (disk, ) = info["disks"]
        # Ganeti's status 7-tuple of the disk on its primary node
        assert (disk["iv_name"], disk["size"], disk["pstatus"][1:],
                disk["sstatus"]) == \
            ("disk/0", 4, [None, None, None, None, False,
                           constants.LDS_OKAY], None)
        assert disk["pstatus"][0].endswith(disk["logical_id"][1])
        inst, _ = FindInstance(vc, "ops1")
        assert info["nics"][0][3] == inst["nics"][0]["mac"]
        job = _Wait(rclient, rclient.GetInstanceInfo("ops1", static=True))
        info = job["opresult"][0]["ops1"]
        assert (info["run_state"], info["disks"][0]["pstatus"]) == \
            (None, None)

        console = RapiClient(vc, READER).GetInstanceConsole("ops1")
        assert (console["instance"], console["kind"], console["message"]) \
            == ("ops1", constants.CONS_MESSAGE,
                "Console not available for fake hypervisor")
        (row, ) = rclient.Query("instance", ["console"],
                                ["=", "name", "ops1"])["data"]
        assert row == [[constants.RS_NORMAL, console]]

        # Reinstalling is one job: shutdown, reinstall, startup
        job = _Wait(rclient, rclient.ReinstallInstance(
            "ops1", os="tinyimage", osparams={"message": "again"}))
        assert [op["OP_ID"] for op in job["ops"]] == [
            "OP_INSTANCE_SHUTDOWN", "OP_INSTANCE_REINSTALL",
            "OP_INSTANCE_STARTUP"]
        inst, _ = FindInstance(vc, "ops1")
        assert (inst["osparams"], inst["admin_state"]) == \
            ({"message": "again"}, "up")
        assert os.path.exists(FakeState(vc.nodes[NODE2], "ops1"))
        assert "osparams" in _BadRequest(rclient.ReinstallInstance, "ops1",
                                         osparams="message=x")
        status, answer = RapiRequest(vc, "POST", "/2/instances/ops1/reinstall",
                                     {"start": "no"})
        assert (status, answer["message"]) == \
            (400, "'start' parameter: Type is 'str', but 'bool' is"
             " expected")
        status, answer = RapiRequest(vc, "POST",
                                     "/2/instances/ops1/reinstall?nostartup=1",
                                     {"start": True})
        assert (status, answer["message"]) == \
            (400, "Can't combine query and body parameters")
        # The form before version 1 of the request: query arguments
        status, job_id = RapiRequest(vc, "POST",
                                     "/2/instances/ops1/reinstall?nostartup=1")
        assert status == 200
        job = _Wait(rclient, job_id)
        assert len(job["ops"]) == 2
        assert FindInstance(vc, "ops1")[0]["admin_state"] == "down"
        with pytest.raises(rapi_client.GanetiApiError) as err:
            rclient.GetInstanceConsole("ops1")
        assert err.value.code == 503
        assert rclient.Query("instance", ["console"], ["=", "name", "ops1"])[
            "data"] == [[[constants.RS_UNAVAIL, None]]]

        job = _Wait(rclient, rclient.RenameInstance(
            "ops1", "ops1r", ip_check=False, name_check=False))
        assert job["opresult"] == ["ops1r"]
        assert rclient.GetInstances() == ["ops1r"]
        assert os.path.exists(DiskPaths(vc, "ops1r", NODE2)[0])
        assert "new_name" in _BadRequest(rclient.RenameInstance, "ops1r",
                                         "")
    finally:
        _Remove(vc, "ops1", "ops1r")


def test_disks(vc, rclient):
    _AddFile(vc, "dsk1", NODE2, "--no-install", "--no-start")
    try:
        _Wait(rclient, rclient.GrowInstanceDisk("dsk1", 0, 4))
        assert FindInstance(vc, "dsk1")[1][0]["size"] == 8
        assert os.path.getsize(DiskPaths(vc, "dsk1", NODE2)[0]) == 8 * MIB
        assert "amount" in _BadRequest(rclient.GrowInstanceDisk, "dsk1", 0,
                                       "much")

        job = _Wait(rclient, rclient.ActivateInstanceDisks(
            "dsk1", ignore_size=True))
        assert job["ops"][0]["ignore_size"] is True
        assert FindInstance(vc, "dsk1")[0]["disks_active"] is True
        _Wait(rclient, rclient.DeactivateInstanceDisks("dsk1", force=True))
        assert FindInstance(vc, "dsk1")[0]["disks_active"] is False

        # Recreated on another node, which becomes the primary
        _Wait(rclient, rclient.RecreateInstanceDisks("dsk1", nodes=[NODE3]))
        assert PrimaryNode(vc, "dsk1") == NODE3
        assert os.path.getsize(DiskPaths(vc, "dsk1", NODE3)[0]) == 8 * MIB
        assert "disks" in _BadRequest(rclient.RecreateInstanceDisks, "dsk1",
                                      disks=["first"])
    finally:
        _Remove(vc, "dsk1")


def test_export_and_move(vc, rclient):
    _AddFile(vc, "exp1", NODE2, "--no-install", "--no-start")
    export_dir = vc.nodes[NODE3].NodePath(
        os.path.join(pathutils.EXPORT_DIR, "exp1"))
    try:
        job = _Wait(rclient, rclient.PrepareExport("exp1", "local"))
        assert job["opresult"] == [None]
        assert "mode" in _BadRequest(rclient.PrepareExport, "exp1", "tape")

        job = _Wait(rclient, rclient.ExportInstance("exp1", "local", NODE3,
                                                    shutdown=False))
        assert job["ops"][0]["target_node"] == NODE3
        assert os.path.isdir(export_dir)
        luxi_client = vc.Luxi()
        assert luxi_client.QueryExports([NODE3], False) == [[NODE3, "exp1"]]
        assert luxi_client.QueryExports([], False) == [[NODE3, "exp1"]]
        with pytest.raises(errors.OpPrereqError,
                           match="Sync queries are not allowed"):
            luxi_client.QueryExports([NODE3], True)
        assert "x509_key_name" in _BadRequest(
            rclient.ExportInstance, "exp1", "remote", NODE3,
            x509_key_name=["key", "salt"])
        status, job_id = RapiRequest(vc, "DELETE", "/2/instances/exp1/export")
        assert status == 200
        _Wait(rclient, job_id)
        assert not os.path.exists(export_dir)

        source = DiskPaths(vc, "exp1", NODE2)[0]
        _Wait(rclient, rclient.MoveInstance("exp1", NODE1,
                                            shutdown_timeout=5))
        assert PrimaryNode(vc, "exp1") == NODE1
        assert os.path.getsize(DiskPaths(vc, "exp1", NODE1)[0]) == 4 * MIB
        assert not os.path.exists(source)
        assert "target_node" in _BadRequest(rclient.MoveInstance, "exp1",
                                            ["node"])
    finally:
        _Remove(vc, "exp1")


def test_migration_and_groups(vc, rclient):
    vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
           "-n", NODE1, "-B", "maxmem=32,minmem=32", *CHECKS, "mig1")
    try:
        _Wait(rclient, rclient.MigrateInstance("mig1", target_node=NODE2))
        assert PrimaryNode(vc, "mig1") == NODE2
        assert os.path.exists(FakeState(vc.nodes[NODE2], "mig1"))
        assert "mode" in _BadRequest(rclient.MigrateInstance, "mig1",
                                     mode="sideways")

        _Wait(rclient, rclient.FailoverInstance("mig1", target_node=NODE3))
        assert PrimaryNode(vc, "mig1") == NODE3
        assert os.path.exists(FakeState(vc.nodes[NODE3], "mig1"))

        # The node's instances migrate in jobs of their own
        job = _Wait(rclient, rclient.MigrateNode(NODE3, target_node=NODE1))
        ((submitted, job_id), ) = job["opresult"][0]["jobs"]
        assert submitted
        _Wait(rclient, job_id)
        assert PrimaryNode(vc, "mig1") == NODE1
        status, answer = RapiRequest(
            vc, "POST", "/2/nodes/%s/migrate?live=1&mode=live" % NODE1)
        assert (status, answer["message"]) == \
            (400, "Only one of 'live' and 'mode' should be passed")

        vc.Run("gnt-group", "assign-nodes", "g2", NODE3)
        try:
            job = _Wait(rclient, rclient.ChangeInstanceGroup(
                "mig1", target_groups=["g2"]))
            ((submitted, job_id), ) = job["opresult"][0]["jobs"]
            _Wait(rclient, job_id)
            assert PrimaryNode(vc, "mig1") == NODE3
            assert os.path.exists(FakeState(vc.nodes[NODE3], "mig1"))
            assert "target_groups" in _BadRequest(
                rclient.ChangeInstanceGroup, "mig1", target_groups="g2")
        finally:
            vc.Run("gnt-group", "assign-nodes", "default", NODE3)
    finally:
        _Remove(vc, "mig1")
