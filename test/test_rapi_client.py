"""ganeti.rapi.client against a recording HTTPS server and the real daemon.

The unit tests check each method's request (method, path, query, body)
and how answers and failures map to return values and exceptions; the
end-to-end test drives ganeti-rapi on a one-node virtual cluster.
"""

import base64
import os
import subprocess
import sys
import threading
import time
import urllib.parse

import pycurl
import pytest

from ganeti import http as ghttp
from ganeti import constants, pathutils, serializer
from ganeti.http import server
from ganeti.rapi import client, client_base
from ganeti.utils import x509

from testutils_cluster import DAEMONS, VirtualCluster

pytestmark = pytest.mark.integration


def _ErrorBody(status: int, message: str) -> tuple[dict[str, str], bytes]:
    """RAPI's error body format."""
    body = {"code": status, "message": ghttp.StatusPhrase(status),
            "explain": message}
    return ({ghttp.HTTP_CONTENT_TYPE: ghttp.HTTP_APP_JSON},
            serializer.DumpJsonBytes(body))


class _Recorder:
    """Handler recording requests and answering from a queue.

    ``answers`` holds (status, body bytes) for the next requests; when it
    is empty the answer is 200 with ``default`` as JSON.
    """

    def __init__(self):
        self.requests = []
        self.answers = []
        self.default = None

    def __call__(self, method, target, headers, body):
        path, _, query = target.partition("?")
        self.requests.append({
            "method": method,
            "path": path,
            "query": urllib.parse.parse_qsl(query, keep_blank_values=True),
            "headers": headers,
            "body": serializer.LoadJson(body) if body else None,
        })
        if self.answers:
            status, data = self.answers.pop(0)
        else:
            status, data = 200, serializer.DumpJsonBytes(self.default)
        if status != 200 and isinstance(data, str):
            raise _StatusError(status, data)
        return status, {ghttp.HTTP_CONTENT_TYPE: ghttp.HTTP_APP_JSON}, data

    def Answer(self, status: int, data) -> None:
        """Queue an answer; a str for an error status becomes its explain."""
        if not isinstance(data, (bytes, str)):
            data = serializer.DumpJsonBytes(data)
        self.answers.append((status, data))


class _StatusError(ghttp.HttpException):
    def __init__(self, status: int, message: str):
        self.code = status
        super().__init__(message)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rapi-certs")
    own = str(tmp / "rapi.pem")
    other = str(tmp / "other.pem")
    x509.GenerateSelfSignedSslCert(own, common_name="rapi.example.test",
                                   validity_days=1)
    x509.GenerateSelfSignedSslCert(other, validity_days=1)
    return own, other


@pytest.fixture(scope="module")
def _server(certs):
    recorder = _Recorder()
    srv = server.HttpServer("127.0.0.1", 0, recorder, ssl_cert_file=certs[0],
                            error_formatter=_ErrorBody, idle_timeout=2.0)
    srv.start()
    try:
        yield srv, recorder
    finally:
        srv.shutdown()


@pytest.fixture
def rapi(_server):
    """(client, recorder) with a clean recorder for each test."""
    srv, recorder = _server
    recorder.requests.clear()
    recorder.answers.clear()
    recorder.default = None
    host, port = srv.server_address
    rclient = client.GanetiRapiClient(
        host, port, username="admin", password="s3cret:x",
        curl_config_fn=client.GenericCurlConfig(proxy="", timeout=10))
    return rclient, recorder


def _Features(*features):
    return (200, serializer.DumpJsonBytes(list(features)))


ALL_FEATURES = [client.INST_CREATE_REQV1, client.INST_REINSTALL_REQV1,
                client.NODE_MIGRATE_REQV1, client.NODE_EVAC_RES1]

# (call, method, path, query, body); the answer is the default (None)
REQUESTS = [
    (lambda c: c.GetVersion(), "GET", "/version", [], None),
    (lambda c: c.GetOperatingSystems(), "GET", "/2/os", [], None),
    (lambda c: c.GetInfo(reason="why"), "GET", "/2/info",
     [("reason", "why")], None),
    (lambda c: c.RedistributeConfig(), "PUT", "/2/redistribute-config", [],
     None),
    (lambda c: c.ModifyCluster(vg_name="xenvg", reason="r"), "PUT",
     "/2/modify", [("reason", "r")], {"vg_name": "xenvg"}),
    (lambda c: c.GetClusterTags(), "GET", "/2/tags", [], None),
    (lambda c: c.AddClusterTags(["a", "b c"], dry_run=True), "PUT", "/2/tags",
     [("tag", "a"), ("tag", "b c"), ("dry-run", "1")], None),
    (lambda c: c.DeleteClusterTags(["a"], reason="x"), "DELETE", "/2/tags",
     [("tag", "a"), ("reason", "x")], None),
    (lambda c: c.GetInstance("inst1"), "GET", "/2/instances/inst1", [], None),
    (lambda c: c.GetInstanceInfo("inst1", static=False), "GET",
     "/2/instances/inst1/info", [("static", "0")], None),
    (lambda c: c.DeleteInstance("inst1", dry_run=True, shutdown_timeout=5),
     "DELETE", "/2/instances/inst1", [("dry-run", "1")],
     {"shutdown_timeout": 5}),
    (lambda c: c.ModifyInstance("inst1", beparams={"vcpus": 2}), "PUT",
     "/2/instances/inst1/modify", [], {"beparams": {"vcpus": 2}}),
    (lambda c: c.ActivateInstanceDisks("inst1", ignore_size=True), "PUT",
     "/2/instances/inst1/activate-disks", [("ignore_size", "1")], None),
    (lambda c: c.DeactivateInstanceDisks("inst1", force=True), "PUT",
     "/2/instances/inst1/deactivate-disks", [("force", "1")], None),
    (lambda c: c.RecreateInstanceDisks("inst1", disks=[0], nodes=["n1"]),
     "POST", "/2/instances/inst1/recreate-disks", [],
     {"disks": [0], "nodes": ["n1"]}),
    (lambda c: c.GrowInstanceDisk("inst1", 1, 1024, wait_for_sync=False),
     "POST", "/2/instances/inst1/disk/1/grow", [],
     {"amount": 1024, "wait_for_sync": False}),
    (lambda c: c.GetInstanceTags("inst1"), "GET", "/2/instances/inst1/tags",
     [], None),
    (lambda c: c.AddInstanceTags("inst1", ["t"]), "PUT",
     "/2/instances/inst1/tags", [("tag", "t")], None),
    (lambda c: c.DeleteInstanceTags("inst1", ["t"], dry_run=True), "DELETE",
     "/2/instances/inst1/tags", [("tag", "t"), ("dry-run", "1")], None),
    (lambda c: c.RebootInstance("inst1", reboot_type="soft",
                                ignore_secondaries=False, dry_run=True,
                                shutdown_timeout=30),
     "POST", "/2/instances/inst1/reboot",
     [("type", "soft"), ("ignore_secondaries", "0"), ("dry-run", "1")],
     {"shutdown_timeout": 30}),
    (lambda c: c.ShutdownInstance("inst1", no_remember=True, timeout=10),
     "PUT", "/2/instances/inst1/shutdown", [("no_remember", "1")],
     {"timeout": 10}),
    (lambda c: c.StartupInstance("inst1", dry_run=True, reason="boot"), "PUT",
     "/2/instances/inst1/startup", [("dry-run", "1"), ("reason", "boot")],
     None),
    (lambda c: c.ReplaceInstanceDisks("inst1", disks=[0, 2],
                                      mode=client.REPLACE_DISK_CHG,
                                      remote_node="n2", early_release=True),
     "POST", "/2/instances/inst1/replace-disks",
     [("mode", "replace_new_secondary"), ("disks", "0,2"),
      ("remote_node", "n2"), ("early_release", "1")], None),
    (lambda c: c.PrepareExport("inst1", "remote"), "PUT",
     "/2/instances/inst1/prepare-export", [("mode", "remote")], None),
    (lambda c: c.ExportInstance("inst1", "local", "node2", shutdown=True),
     "PUT", "/2/instances/inst1/export", [],
     {"mode": "local", "destination": "node2", "shutdown": True}),
    (lambda c: c.MigrateInstance("inst1", mode="live", cleanup=False), "PUT",
     "/2/instances/inst1/migrate", [], {"mode": "live", "cleanup": False}),
    (lambda c: c.FailoverInstance("inst1", target_node="n2"), "PUT",
     "/2/instances/inst1/failover", [], {"target_node": "n2"}),
    (lambda c: c.RenameInstance("inst1", "inst2", ip_check=False), "PUT",
     "/2/instances/inst1/rename", [],
     {"new_name": "inst2", "ip_check": False}),
    (lambda c: c.GetInstanceConsole("inst1"), "GET",
     "/2/instances/inst1/console", [], None),
    (lambda c: c.GetJobStatus(17), "GET", "/2/jobs/17", [], None),
    (lambda c: c.WaitForJobChange(17, ["status"], None, 3), "GET",
     "/2/jobs/17/wait", [],
     {"fields": ["status"], "previous_job_info": None,
      "previous_log_serial": 3}),
    (lambda c: c.CancelJob(17), "DELETE", "/2/jobs/17", [], None),
    (lambda c: c.GetNode("node1.example.test"), "GET",
     "/2/nodes/node1.example.test", [], None),
    (lambda c: c.GetNodeRole("n1"), "GET", "/2/nodes/n1/role", [], None),
    (lambda c: c.SetNodeRole("n1", client.NODE_ROLE_DRAINED, force=True,
                             auto_promote=False),
     "PUT", "/2/nodes/n1/role", [("auto-promote", "0"), ("force", "1")],
     "drained"),
    (lambda c: c.PowercycleNode("n1", force=True), "POST",
     "/2/nodes/n1/powercycle", [("force", "1")], None),
    (lambda c: c.ModifyNode("n1", offline=True, reason="maint"), "POST",
     "/2/nodes/n1/modify", [("reason", "maint")], {"offline": True}),
    (lambda c: c.GetNodeStorageUnits("n1", "lvm-vg", "name,size"), "GET",
     "/2/nodes/n1/storage",
     [("storage_type", "lvm-vg"), ("output_fields", "name,size")], None),
    (lambda c: c.ModifyNodeStorageUnits("n1", "lvm-pv", "/dev/sda",
                                        allocatable=False),
     "PUT", "/2/nodes/n1/storage/modify",
     [("storage_type", "lvm-pv"), ("name", "/dev/sda"),
      ("allocatable", "0")], None),
    (lambda c: c.RepairNodeStorageUnits("n1", "lvm-vg", "xenvg"), "PUT",
     "/2/nodes/n1/storage/repair",
     [("storage_type", "lvm-vg"), ("name", "xenvg")], None),
    (lambda c: c.GetNodeTags("n1"), "GET", "/2/nodes/n1/tags", [], None),
    (lambda c: c.AddNodeTags("n1", ["a", "b"]), "PUT", "/2/nodes/n1/tags",
     [("tag", "a"), ("tag", "b")], ["a", "b"]),
    (lambda c: c.DeleteNodeTags("n1", ["a"], dry_run=True), "DELETE",
     "/2/nodes/n1/tags", [("tag", "a"), ("dry-run", "1")], None),
    (lambda c: c.GetNetwork("net1"), "GET", "/2/networks/net1", [], None),
    (lambda c: c.CreateNetwork("net1", "10.0.0.0/24", gateway="10.0.0.1",
                               add_reserved_ips="10.0.0.2,10.0.0.3",
                               tags="a,b", dry_run=True),
     "POST", "/2/networks", [("dry-run", "1")],
     {"network_name": "net1", "network": "10.0.0.0/24",
      "gateway": "10.0.0.1", "network6": None, "gateway6": None,
      "mac_prefix": None, "add_reserved_ips": ["10.0.0.2", "10.0.0.3"],
      "tags": ["a", "b"]}),
    (lambda c: c.ConnectNetwork("net1", "default", "bridged", "br0"), "PUT",
     "/2/networks/net1/connect", [],
     {"group_name": "default", "network_mode": "bridged",
      "network_link": "br0", "network_vlan": ""}),
    (lambda c: c.DisconnectNetwork("net1", "default"), "PUT",
     "/2/networks/net1/disconnect", [], {"group_name": "default"}),
    (lambda c: c.ModifyNetwork("net1", gateway="10.0.0.254"), "PUT",
     "/2/networks/net1/modify", [], {"gateway": "10.0.0.254"}),
    (lambda c: c.DeleteNetwork("net1", dry_run=True), "DELETE",
     "/2/networks/net1", [("dry-run", "1")], None),
    (lambda c: c.GetNetworkTags("net1"), "GET", "/2/networks/net1/tags", [],
     None),
    (lambda c: c.AddNetworkTags("net1", ["x"]), "PUT",
     "/2/networks/net1/tags", [("tag", "x")], None),
    (lambda c: c.DeleteNetworkTags("net1", ["x"]), "DELETE",
     "/2/networks/net1/tags", [("tag", "x")], None),
    (lambda c: c.GetGroup("default"), "GET", "/2/groups/default", [], None),
    (lambda c: c.CreateGroup("g1", alloc_policy="preferred", dry_run=True,
                             reason="new"),
     "POST", "/2/groups", [("dry-run", "1"), ("reason", "new")],
     {"name": "g1", "alloc_policy": "preferred"}),
    (lambda c: c.CreateGroup("g1"), "POST", "/2/groups", [],
     {"name": "g1", "alloc_policy": None}),
    (lambda c: c.ModifyGroup("g1", alloc_policy="last_resort"), "PUT",
     "/2/groups/g1/modify", [], {"alloc_policy": "last_resort"}),
    (lambda c: c.DeleteGroup("g1", dry_run=True), "DELETE", "/2/groups/g1",
     [("dry-run", "1")], None),
    (lambda c: c.RenameGroup("g1", "g2"), "PUT", "/2/groups/g1/rename", [],
     {"new_name": "g2"}),
    (lambda c: c.AssignGroupNodes("g1", ["n1", "n2"], force=True,
                                  dry_run=True),
     "PUT", "/2/groups/g1/assign-nodes", [("force", "1"), ("dry-run", "1")],
     {"nodes": ["n1", "n2"]}),
    (lambda c: c.GetGroupTags("g1"), "GET", "/2/groups/g1/tags", [], None),
    (lambda c: c.AddGroupTags("g1", ["t"], reason="r"), "PUT",
     "/2/groups/g1/tags", [("tag", "t"), ("reason", "r")], None),
    (lambda c: c.DeleteGroupTags("g1", ["t"]), "DELETE", "/2/groups/g1/tags",
     [("tag", "t")], None),
    (lambda c: c.Query("node", ["name", "offline"]), "PUT", "/2/query/node",
     [], {"fields": ["name", "offline"]}),
    (lambda c: c.Query("instance", ["name"], ["=", "name", "i1"]), "PUT",
     "/2/query/instance", [],
     {"fields": ["name"], "qfilter": ["=", "name", "i1"],
      "filter": ["=", "name", "i1"]}),
    (lambda c: c.QueryFields("node"), "GET", "/2/query/node/fields", [],
     None),
    (lambda c: c.QueryFields("group", ["name", "uuid"]), "GET",
     "/2/query/group/fields", [("fields", "name,uuid")], None),
    (lambda c: c.GetFilter("f-uuid"), "GET", "/2/filters/f-uuid", [], None),
    (lambda c: c.DeleteFilter("f-uuid"), "DELETE", "/2/filters/f-uuid", [],
     {}),
    (lambda c: c.GetInstance("odd name/x"), "GET",
     "/2/instances/odd%20name%2Fx", [], None),
]


@pytest.mark.parametrize("call,method,path,query,body", REQUESTS,
                         ids=[entry[2] + ":" + str(i)
                              for i, entry in enumerate(REQUESTS)])
def test_request(rapi, call, method, path, query, body):
    rclient, recorder = rapi
    recorder.default = 42
    assert call(rclient) == 42
    (request, ) = recorder.requests
    assert request["method"] == method
    assert request["path"] == path
    assert request["query"] == query
    assert request["body"] == body


def test_headers_and_auth(rapi):
    rclient, recorder = rapi
    rclient.GetInfo()
    headers = recorder.requests[0]["headers"]
    assert headers["Accept"] == "application/json"
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"] == client.GanetiRapiClient.USER_AGENT
    scheme, credentials = headers["Authorization"].split()
    assert scheme == "Basic"
    assert base64.b64decode(credentials) == b"admin:s3cret:x"


def test_anonymous(_server):
    srv, recorder = _server
    recorder.requests.clear()
    recorder.default = 2
    host, port = srv.server_address
    rclient = client.GanetiRapiClient(
        host, port, curl_config_fn=client.GenericCurlConfig(proxy=""))
    assert rclient.GetVersion() == 2
    assert "Authorization" not in recorder.requests[0]["headers"]


def test_credentials_checked():
    with pytest.raises(client.Error, match="Password not specified"):
        client.GanetiRapiClient("localhost", username="user")
    with pytest.raises(client.Error, match="without username"):
        client.GanetiRapiClient("localhost", password="pw")


def test_list_results(rapi):
    rclient, recorder = rapi
    recorder.Answer(200, [{"id": "n1", "uri": "/2/nodes/n1"},
                          {"id": "n2", "uri": "/2/nodes/n2"}])
    assert rclient.GetNodes() == ["n1", "n2"]
    recorder.Answer(200, [{"name": "n1", "offline": False}])
    assert rclient.GetNodes(bulk=True, reason="r") == [{"name": "n1",
                                                        "offline": False}]
    assert recorder.requests[1]["query"] == [("bulk", "1"), ("reason", "r")]
    recorder.Answer(200, [{"id": "i1", "uri": "/2/instances/i1"}])
    assert rclient.GetInstances() == ["i1"]
    recorder.Answer(200, [{"name": "default", "uri": "/2/groups/default"}])
    assert rclient.GetGroups() == ["default"]
    recorder.Answer(200, [{"name": "net1", "uri": "/2/networks/net1"}])
    assert rclient.GetNetworks() == ["net1"]
    recorder.Answer(200, [{"uuid": "u1", "uri": "/2/filters/u1"}])
    assert rclient.GetFilters() == ["u1"]
    # Job ids come back as ints whether the server sends ints or strings
    recorder.Answer(200, [{"id": "3", "uri": "/2/jobs/3"},
                          {"id": 4, "uri": "/2/jobs/4"}])
    assert rclient.GetJobs() == [3, 4]
    recorder.Answer(200, [{"id": 3, "status": "success"}])
    assert rclient.GetJobs(bulk=True) == [{"id": 3, "status": "success"}]
    assert [r["path"] for r in recorder.requests] == [
        "/2/nodes", "/2/nodes", "/2/instances", "/2/groups", "/2/networks",
        "/2/filters", "/2/jobs", "/2/jobs"]
    assert recorder.requests[-1]["query"] == [("bulk", "1")]


def test_api_error(rapi):
    rclient, recorder = rapi
    recorder.Answer(404, "Node nosuch does not exist")
    with pytest.raises(client.GanetiApiError) as err:
        rclient.GetNode("nosuch")
    assert err.value.code == 404
    assert str(err.value) == "404 Not Found: Node nosuch does not exist"

    recorder.Answer(401, "Authentication required")
    with pytest.raises(client.GanetiApiError) as err:
        rclient.CreateGroup("g")
    assert err.value.code == 401
    assert not isinstance(err.value, client.CertificateError)


def test_non_json_error(rapi):
    rclient, recorder = rapi
    recorder.Answer(502, b"<html>Bad gateway</html>")
    with pytest.raises(client.GanetiApiError) as err:
        rclient.GetInfo()
    assert err.value.code == 502
    assert str(err.value) == "<html>Bad gateway</html>"


def test_invalid_json_success(rapi):
    rclient, recorder = rapi
    recorder.Answer(200, b"{not json")
    with pytest.raises(client.GanetiApiError, match="Invalid JSON") as err:
        rclient.GetInfo()
    assert err.value.code == 200


def test_empty_answer(rapi):
    rclient, recorder = rapi
    recorder.Answer(200, b"")
    assert rclient.GetInfo() is None


def test_features(rapi):
    rclient, recorder = rapi
    recorder.answers.append(_Features(*ALL_FEATURES))
    assert rclient.GetFeatures() == ALL_FEATURES
    assert recorder.requests[0]["path"] == "/2/features"
    # Servers older than the resource: no optional features
    recorder.Answer(404, "no such resource")
    assert rclient.GetFeatures() == []
    recorder.Answer(500, "broken")
    with pytest.raises(client.GanetiApiError):
        rclient.GetFeatures()


def test_create_instance(rapi):
    rclient, recorder = rapi
    recorder.answers.append(_Features(*ALL_FEATURES))
    recorder.default = 7
    assert rclient.CreateInstance("create", "inst1", "plain",
                                  [{"size": 1024}], [{}], dry_run=True,
                                  reason="r", os="debootstrap") == 7
    request = recorder.requests[1]
    assert (request["method"], request["path"]) == ("POST", "/2/instances")
    assert request["query"] == [("dry-run", "1"), ("reason", "r")]
    assert request["body"] == {
        "__version__": 1, "mode": "create", "name": "inst1",
        "disk_template": "plain", "disks": [{"size": 1024}], "nics": [{}],
        "os": "debootstrap"}

    recorder.answers.append(_Features())
    with pytest.raises(client.GanetiApiError, match="version 1"):
        rclient.CreateInstance("create", "inst1", "plain", [], [])
    assert len(recorder.requests) == 3


def test_multi_alloc(rapi):
    rclient, recorder = rapi
    alloc = rclient.InstanceAllocation("create", "i1", "diskless", [], [],
                                       os="noop")
    rclient.InstancesMultiAlloc([alloc], dry_run=True,
                                opportunistic_locking=True)
    request = recorder.requests[0]
    assert request["path"] == "/2/instances-multi-alloc"
    assert request["query"] == [("dry-run", "1")]
    assert request["body"] == {"instances": [alloc],
                               "opportunistic_locking": True}


def test_feature_dependent_requests(rapi):
    rclient, recorder = rapi
    recorder.answers.append(_Features(*ALL_FEATURES))
    rclient.ReinstallInstance("inst1", os="debian", no_startup=True,
                              osparams={"a": "b"})
    assert recorder.requests[1]["body"] == {"start": False, "os": "debian",
                                            "osparams": {"a": "b"}}
    # Old servers take query parameters
    recorder.answers.append(_Features())
    rclient.ReinstallInstance("inst1", os="debian", no_startup=True)
    assert recorder.requests[3]["query"] == [("os", "debian"),
                                             ("nostartup", "1")]
    assert recorder.requests[3]["body"] is None
    recorder.answers.append(_Features())
    with pytest.raises(client.GanetiApiError, match="OS parameters"):
        rclient.ReinstallInstance("inst1", osparams={"a": "b"})

    recorder.requests.clear()
    recorder.answers.append(_Features(*ALL_FEATURES))
    rclient.MigrateNode("n1", mode="live", dry_run=True, target_node="n2")
    assert recorder.requests[1]["path"] == "/2/nodes/n1/migrate"
    assert recorder.requests[1]["query"] == [("dry-run", "1")]
    assert recorder.requests[1]["body"] == {"mode": "live",
                                            "target_node": "n2"}
    recorder.answers.append(_Features())
    rclient.MigrateNode("n1", mode="live")
    assert recorder.requests[3]["query"] == [("mode", "live")]

    recorder.requests.clear()
    recorder.answers.append(_Features(*ALL_FEATURES))
    rclient.EvacuateNode("n1", iallocator="hail", mode=client.NODE_EVAC_ALL,
                         early_release=False)
    assert recorder.requests[1]["path"] == "/2/nodes/n1/evacuate"
    assert recorder.requests[1]["body"] == {"iallocator": "hail",
                                            "mode": "all",
                                            "early_release": False}
    with pytest.raises(client.GanetiApiError, match="Only one of"):
        rclient.EvacuateNode("n1", iallocator="hail", remote_node="n2")
    recorder.answers.append(_Features())
    with pytest.raises(client.GanetiApiError, match="accept_old"):
        rclient.EvacuateNode("n1", remote_node="n2")


def test_filters(rapi):
    rclient, recorder = rapi
    recorder.default = "new-uuid"
    trail = [("user", "maintenance", 1)]
    before = time.time_ns()
    assert rclient.AddFilter(10, [["jobid", [">", "id", "watermark"]]],
                             "REJECT", reason_trail=trail) == "new-uuid"
    body = recorder.requests[0]["body"]
    assert recorder.requests[0]["method"] == "POST"
    assert recorder.requests[0]["path"] == "/2/filters"
    assert body["priority"] == 10
    assert body["action"] == "REJECT"
    assert body["predicates"] == [["jobid", [">", "id", "watermark"]]]
    assert body["reason"][0] == ["user", "maintenance", 1]
    assert body["reason"][1][:2] == ["gnt:client", ""]
    assert before <= body["reason"][1][2] <= time.time_ns()
    # The caller's list is left alone
    assert trail == [("user", "maintenance", 1)]

    rclient.ReplaceFilter("u1", 0, [], "ACCEPT")
    request = recorder.requests[1]
    assert (request["method"], request["path"]) == ("PUT", "/2/filters/u1")
    assert [entry[:2] for entry in request["body"]["reason"]] == [
        ["gnt:client", ""]]
    assert rclient.GetFilters(bulk=True) == "new-uuid"
    assert recorder.requests[2]["query"] == [("bulk", "1")]


def test_wait_for_job_completion(rapi):
    rclient, recorder = rapi
    for status in ("queued", "running", "success"):
        recorder.Answer(200, {"id": 5, "status": status})
    assert rclient.WaitForJobCompletion(5, period=0)
    assert len(recorder.requests) == 3

    recorder.Answer(200, {"id": 6, "status": "error"})
    assert not rclient.WaitForJobCompletion(6, period=0)
    # Unknown jobs: every field but the id is null
    recorder.Answer(200, {"id": 7, "status": None})
    assert not rclient.WaitForJobCompletion(7, period=0)

    recorder.requests.clear()
    recorder.default = {"id": 8, "status": "running"}
    assert not rclient.WaitForJobCompletion(8, period=0, retries=3)
    assert len(recorder.requests) == 3


def test_query_encoding():
    assert client_base._EncodeQuery([("a", True), ("b", False), ("c", None),
                                ("d", 3)]) == [("a", 1), ("b", 0), ("c", ""),
                                               ("d", 3)]
    with pytest.raises(ValueError, match="list"):
        client_base._EncodeQuery([("tags", ["a"])])


def test_certificate_verification(_server, certs):
    srv, recorder = _server
    recorder.default = 2
    host, port = srv.server_address

    def _Client(**kwargs):
        return client.GanetiRapiClient(
            host, port,
            curl_config_fn=client.GenericCurlConfig(proxy="", **kwargs))

    assert _Client(cafile=certs[0]).GetVersion() == 2
    with pytest.raises(client.CertificateError) as err:
        _Client(cafile=certs[1]).GetVersion()
    assert err.value.code == pycurl.E_PEER_FAILED_VERIFICATION
    # The certificate names rapi.example.test, not the address
    with pytest.raises(client.CertificateError):
        _Client(cafile=certs[0], verify_hostname=True).GetVersion()
    with pytest.raises(client.Error, match="CA bundle"):
        client.GenericCurlConfig(use_curl_cabundle=True, cafile=certs[0])


def test_connection_error():
    rclient = client.GanetiRapiClient(
        "127.0.0.1", 1,
        curl_config_fn=client.GenericCurlConfig(proxy="", connect_timeout=5))
    with pytest.raises(client.GanetiApiError) as err:
        rclient.GetVersion()
    assert err.value.code == pycurl.E_COULDNT_CONNECT
    assert not isinstance(err.value, client.CertificateError)


def test_curl_factory(_server):
    srv, recorder = _server
    recorder.default = 2
    handles = []

    def _Factory():
        handles.append(pycurl.Curl())
        return handles[-1]

    host, port = srv.server_address
    rclient = client.GanetiRapiClient(
        host, port, curl_factory=_Factory,
        curl_config_fn=client.GenericCurlConfig(proxy=""))
    assert rclient.GetVersion() == 2
    assert rclient.GetVersion() == 2
    assert len(handles) == 2


def test_uses_rapi_client():
    # Needs a single-threaded process, unlike this one with its servers
    code = ("from ganeti.rapi import client\n"
            "print(client.UsesRapiClient(lambda value: value * 2)(21))\n")
    result = subprocess.run([sys.executable, "-c", code], check=True,
                            capture_output=True, text=True, timeout=30)
    assert result.stdout == "42\n"

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        with pytest.raises(client.Error, match="threads"):
            client.UsesRapiClient(lambda: None)()
    finally:
        stop.set()
        thread.join()


# End-to-end against ganeti-rapi ------------------------------------------

_RAPI_DAEMON = os.path.join(DAEMONS, "ganeti-rapi")


@pytest.fixture(scope="module")
def rapi_cluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        users = cluster.NodePath(pathutils.RAPI_USERS_FILE)
        os.makedirs(os.path.dirname(users), exist_ok=True)
        with open(users, "w", encoding="utf-8") as fobj:
            fobj.write("# RAPI users\nadmin s3cret write\n"
                       "reader {CLEARTEXT}readpw read\n")
        # gnt-cluster init started ganeti-rapi on the master's address
        port = constants.DEFAULT_RAPI_PORT
        yield cluster, port
    finally:
        cluster.Cleanup()



def _ClusterClient(cluster, port, username="admin", password="s3cret"):
    return client.GanetiRapiClient(
        cluster.node_ip, port, username=username, password=password,
        curl_config_fn=client.GenericCurlConfig(
            proxy="", timeout=30,
            cafile=cluster.NodePath(pathutils.RAPI_CERT_FILE)))


def _WaitForServer(rclient, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            rclient.GetVersion()
            return
        except client.GanetiApiError as err:
            if (err.code != pycurl.E_COULDNT_CONNECT or
                    time.monotonic() > deadline):
                raise
            time.sleep(0.1)


@pytest.mark.skipif(not os.path.exists(_RAPI_DAEMON),
                    reason="daemons/ganeti-rapi does not exist yet")
def test_end_to_end(rapi_cluster):
    cluster, port = rapi_cluster
    rclient = _ClusterClient(cluster, port)
    _WaitForServer(rclient)

    assert rclient.GetVersion() == 2
    # Features come with the instance and node resources that offer them
    assert set(rclient.GetFeatures()) <= set(ALL_FEATURES)
    info = rclient.GetInfo()
    assert info["name"] == cluster.cluster_name
    assert info["master"] == cluster.node

    nodes = rclient.GetNodes(bulk=True)
    assert [node["name"] for node in nodes] == [cluster.node]
    assert nodes[0]["role"] == "M"
    assert rclient.GetNodes() == [cluster.node]
    assert rclient.GetNode(cluster.node)["name"] == cluster.node
    assert rclient.GetNodeRole(cluster.node) == client.NODE_ROLE_MASTER

    job_id = rclient.CreateGroup("rapigroup", reason="client test")
    assert rclient.WaitForJobCompletion(job_id, period=0.2, retries=150)
    assert rclient.GetJobStatus(job_id)["status"] == client.JOB_STATUS_SUCCESS
    assert job_id in rclient.GetJobs()
    assert "rapigroup" in rclient.GetGroups()
    assert rclient.GetGroup("rapigroup")["name"] == "rapigroup"

    job_id = rclient.AddGroupTags("rapigroup", ["blue", "green"])
    assert rclient.WaitForJobCompletion(job_id, period=0.2, retries=150)
    assert sorted(rclient.GetGroupTags("rapigroup")) == ["blue", "green"]
    job_id = rclient.DeleteGroupTags("rapigroup", ["blue"])
    assert rclient.WaitForJobCompletion(job_id, period=0.2, retries=150)
    assert rclient.GetGroupTags("rapigroup") == ["green"]

    job_id = rclient.AddClusterTags(["ctag"])
    assert rclient.WaitForJobCompletion(job_id, period=0.2, retries=150)
    assert "ctag" in rclient.GetClusterTags()
    job_id = rclient.AddNodeTags(cluster.node, ["ntag"])
    assert rclient.WaitForJobCompletion(job_id, period=0.2, retries=150)
    assert rclient.GetNodeTags(cluster.node) == ["ntag"]

    result = rclient.Query("node", ["name"])
    assert [field["name"] for field in result["fields"]] == ["name"]
    assert result["data"] == [[[0, cluster.node]]]
    result = rclient.Query("group", ["name"], ["=", "name", "rapigroup"])
    assert result["data"] == [[[0, "rapigroup"]]]
    (field, ) = rclient.QueryFields("node", ["name"])["fields"]
    assert field["name"] == "name"

    job_id = rclient.RenameGroup("rapigroup", "rapigroup2")
    change = rclient.WaitForJobChange(job_id, ["status"], None, None)
    assert change["job_info"][0] in client.JOB_STATUS_ALL
    assert rclient.WaitForJobCompletion(job_id, period=0.2, retries=150)

    job_id = rclient.DeleteGroup("rapigroup2")
    assert rclient.WaitForJobCompletion(job_id, period=0.2, retries=150)
    assert rclient.GetGroups() == ["default"]

    uuid = rclient.AddFilter(5, [], "ACCEPT", reason_trail=[])
    assert rclient.GetFilters() == [uuid]
    rule = rclient.GetFilter(uuid)
    assert (rule["uuid"], rule["priority"], rule["action"]) == (uuid, 5,
                                                               "ACCEPT")
    assert ["gnt:client", ""] in [entry[:2] for entry in rule["reason_trail"]]
    assert rclient.ReplaceFilter(uuid, 7, [], "PAUSE") == uuid
    assert rclient.GetFilters(bulk=True)[0]["priority"] == 7
    rclient.DeleteFilter(uuid)
    assert rclient.GetFilters() == []

    with pytest.raises(client.GanetiApiError) as err:
        rclient.GetNode("nosuch.example.test")
    assert err.value.code == 404

    bad = _ClusterClient(cluster, port, password="wrong")
    with pytest.raises(client.GanetiApiError) as err:
        bad.CreateGroup("nogroup")
    assert err.value.code == 401
    # Credentials sent are checked even where none are needed
    with pytest.raises(client.GanetiApiError) as err:
        bad.GetInfo()
    assert err.value.code == 401
    # A read-only user may look but not change
    reader = _ClusterClient(cluster, port, username="reader",
                            password="readpw")
    assert reader.GetGroups()
    with pytest.raises(client.GanetiApiError) as err:
        reader.CreateGroup("nogroup")
    assert err.value.code == 403
