"""The examples of design-optables through RAPI, with the shipped client.

A one-node virtual cluster whose ganeti-rapi (started by gnt-cluster
init) serves /2/filters; jobs are submitted through RAPI as well
(cluster tags, OP_TAGS_SET, and node groups, OP_GROUP_ADD).
"""

import pytest

from ganeti import constants, pathutils
from ganeti.rapi import client as rapi_client

from testutils_cluster import VirtualCluster, WaitForJob

pytestmark = pytest.mark.integration

_DRAIN = [["jobid", [">", "id", "watermark"]]]
_TAGS_SET = [["opcode", ["==", "OP_ID", "OP_TAGS_SET"]]]


@pytest.fixture(scope="module")
def vcluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        with open(cluster.NodePath(pathutils.RAPI_USERS_FILE), "w",
                  encoding="utf-8") as fobj:
            fobj.write("admin secret write\n")
        yield cluster
    finally:
        cluster.Cleanup()


@pytest.fixture
def rapi(vcluster):
    """A client; every filter rule is removed after the test."""
    client = rapi_client.GanetiRapiClient(
        vcluster.node_ip, port=constants.DEFAULT_RAPI_PORT,
        username="admin", password="secret")
    yield client
    for uuid in client.GetFilters():
        client.DeleteFilter(uuid)


def _Status(vcluster, job_id):
    return vcluster.Luxi().QueryJobs([job_id], ["status"])[0][0]


def test_drain_by_watermark_rejects_new_jobs(vcluster, rapi):
    before = rapi.AddClusterTags(["before-drain"])
    uuid = rapi.AddFilter(0, _DRAIN, "REJECT")
    # Created and canceled, as in Ganeti
    rejected = rapi.AddClusterTags(["after-drain"])
    assert WaitForJob(vcluster.Luxi(), rejected) == \
        constants.JOB_STATUS_CANCELED
    assert WaitForJob(vcluster.Luxi(), before) == \
        constants.JOB_STATUS_SUCCESS
    rapi.DeleteFilter(uuid)
    assert rapi.WaitForJobCompletion(rapi.AddClusterTags(["after-drain"]),
                                     period=0.1)


def test_soft_drain_pauses_until_the_rule_goes(vcluster, rapi):
    uuid = rapi.AddFilter(0, _DRAIN, "PAUSE")
    job_id = rapi.AddClusterTags(["paused"])
    assert not rapi.WaitForJobCompletion(job_id, period=0.1, retries=5)
    assert _Status(vcluster, job_id) == constants.JOB_STATUS_QUEUED
    rapi.DeleteFilter(uuid)
    assert rapi.WaitForJobCompletion(job_id, period=0.1)


def test_maintenance_reason_is_exempt(vcluster, rapi):
    rapi.AddFilter(0, [["reason", ["=~", "reason", "maintenance pink"]]],
                   "ACCEPT")
    pause = rapi.AddFilter(1, _DRAIN, "PAUSE")
    other = rapi.AddClusterTags(["other"])
    maintenance = rapi.AddClusterTags(["maint"],
                                      reason="maintenance pink bunny")
    assert rapi.WaitForJobCompletion(maintenance, period=0.1)
    assert _Status(vcluster, other) == constants.JOB_STATUS_QUEUED
    rapi.DeleteFilter(pause)
    assert rapi.WaitForJobCompletion(other, period=0.1)


def test_reject_opcode_cancels_queued_jobs(vcluster, rapi):
    hold = rapi.AddFilter(5, [["jobid", [">=", "id", 0]]], "PAUSE")
    queued = rapi.AddClusterTags(["queued"])
    reject = rapi.AddFilter(1, _TAGS_SET, "REJECT")
    assert WaitForJob(vcluster.Luxi(), queued) == \
        constants.JOB_STATUS_CANCELED
    rapi.DeleteFilter(hold)
    refused = rapi.AddClusterTags(["refused"])
    assert WaitForJob(vcluster.Luxi(), refused) == \
        constants.JOB_STATUS_CANCELED
    assert rapi.GetJobStatus(refused)["opresult"] == [
        "Job canceled by filter rule %s" % reject]
    # Other opcodes are not affected
    assert rapi.WaitForJobCompletion(rapi.CreateGroup("rapi-filtered"),
                                     period=0.1)
    assert "queued" not in rapi.GetClusterTags()
