"""ganeti-rapi against a real two-node virtual cluster, over real HTTPS.

Every resource is exercised with good and bad input through
http.client (and a few through Ganeti's RAPI client); jobs are waited
for through /2/jobs/[id]/wait.
"""

import base64
import hashlib
import http.client
import json
import os
import signal
import socket
import ssl
import time

import pytest

from ganeti import constants, opcodes, pathutils
from ganeti.rapi import client as rapi_client
from ganeti.rapi import connector

from testutils_cluster import VirtualCluster

pytestmark = pytest.mark.integration

ADMIN = ("admin", "s3cret")
READER = ("reader", "readpw")
NOBODY = ("nobody", "nopw")
HA1USER = ("hauser", "hapw")
USERS = """# RAPI users of the test cluster
admin {CLEARTEXT}s3cret write
reader readpw read
nobody nopw
hauser {ha1}%s read,write
short
""" % hashlib.md5(b"hauser:Ganeti Remote API:hapw").hexdigest()

NODE2 = "node2.example.test"


class Rapi:
    """The RAPI daemon of the cluster's master, as an HTTPS client sees it."""

    def __init__(self, cluster: VirtualCluster, port: int):
        self.cluster = cluster
        self.host = cluster.node_ip
        self.port = port
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE

    def Connection(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port,
                                           context=self.context, timeout=30)

    def Request(self, method: str, path: str, body=None, user=None,
                headers=None, raw=None, conn=None):
        """Send a request; returns (status, headers, decoded JSON body)."""
        hdrs = dict(headers or {})
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        if user is not None:
            hdrs["Authorization"] = "Basic " + base64.b64encode(
                ("%s:%s" % user).encode()).decode()
        own = conn is None
        conn = conn or self.Connection()
        try:
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            payload = resp.read()
        finally:
            if own:
                conn.close()
        result = json.loads(payload) if payload else None
        return resp.status, resp.headers, result

    def Ok(self, method: str, path: str, body=None, user=ADMIN, **kwargs):
        status, _, result = self.Request(method, path, body=body, user=user,
                                         **kwargs)
        assert status == 200, (method, path, status, result)
        return result

    def Error(self, code: int, method: str, path: str, body=None,
              user=ADMIN, **kwargs) -> str:
        status, headers, result = self.Request(method, path, body=body,
                                               user=user, **kwargs)
        assert status == code, (method, path, status, result)
        assert headers["Content-Type"] == "application/json"
        assert result["code"] == code and "explain" in result
        return result["message"]

    def WaitJob(self, job_id: int, timeout: float = 60) -> str:
        """Wait for a job through the wait resource; return its status."""
        assert isinstance(job_id, int)
        deadline = time.monotonic() + timeout
        info = None
        while time.monotonic() < deadline:
            result = self.Ok("GET", "/2/jobs/%d/wait" % job_id,
                             {"fields": ["status"],
                              "previous_job_info": info,
                              "previous_log_serial": None})
            if result is None:
                continue
            info = result["job_info"]
            if info[0] in constants.JOBS_FINALIZED:
                return info[0]
        raise AssertionError("job %d did not finish" % job_id)

    def Job(self, method: str, path: str, body=None,
            expected: str = constants.JOB_STATUS_SUCCESS, **kwargs) -> dict:
        """Submit a job and wait for it; returns the job's details."""
        job_id = self.Ok(method, path, body, **kwargs)
        status = self.WaitJob(job_id)
        job = self.Ok("GET", "/2/jobs/%d" % job_id)
        assert status == expected, job
        return job



@pytest.fixture(scope="module")
def rapi():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        cluster.AddNode(NODE2)
        with open(cluster.NodePath(pathutils.RAPI_USERS_FILE), "w",
                  encoding="utf-8") as fobj:
            fobj.write(USERS)
        # gnt-cluster init started ganeti-rapi on the master's address
        port = constants.DEFAULT_RAPI_PORT
        yield Rapi(cluster, port)
    finally:
        cluster.Cleanup()


def _Tag(name: str) -> str:
    return "%s-%d" % (name, time.monotonic_ns())


# Basics ----------------------------------------------------------------------

def test_legacy_version_features_info(rapi):
    assert rapi.Ok("GET", "/", user=None) is None
    assert rapi.Ok("GET", "/2", user=None) is None
    assert rapi.Ok("GET", "/version", user=None) == constants.RAPI_VERSION
    assert rapi.Ok("GET", "/2/features", user=None) == \
        connector.GetFeatures()
    info = rapi.Ok("GET", "/2/info", user=None)
    assert info["name"] == rapi.cluster.cluster_name
    assert info["master"] == rapi.cluster.node
    # GET_ALIASES: Ganeti's old names are kept next to the new ones
    assert info["vg_name"] == info["volume_group_name"]
    assert info["drbd_helper"] == info["drbd_usermode_helper"]


def test_unknown_path_and_method(rapi):
    assert rapi.Error(404, "GET", "/2/nosuch") == "Not Found"
    rapi.Error(404, "GET", "/3/info")
    rapi.Error(404, "GET", "/2/nodes/bad%20name")
    rapi.Error(404, "GET", "/2/jobs/abc")
    message = rapi.Error(501, "POST", "/2/info?bulk=1")
    assert message == "Method POST is unsupported for path /2/info"
    rapi.Error(501, "DELETE", "/2/nodes")
    # Unsupported methods are refused before authentication
    rapi.Error(501, "PUT", "/version", user=None)


def test_keepalive_and_access_log(rapi):
    conn = rapi.Connection()
    try:
        for _ in range(3):
            status, headers, result = rapi.Request("GET", "/version",
                                                   conn=conn)
            assert (status, result) == (200, 2)
            assert headers["Connection"] == "keep-alive"
    finally:
        conn.close()
    rapi.Request("GET", "/2/info?marker=access-log")
    # The line is written right after the answer is sent
    deadline = time.monotonic() + 10
    while True:
        with open(rapi.cluster.NodePath(pathutils.LOG_RAPI_ACCESS),
                  encoding="utf-8") as fobj:
            if '"GET /2/info?marker=access-log" 200 ' in fobj.read():
                break
        assert time.monotonic() < deadline, "no access log line"
        time.sleep(0.05)
    assert os.path.exists(rapi.cluster.NodePath(
        pathutils.GetLogFilename("rapi-daemon")))


# Authentication and request checks ------------------------------------------

def test_write_needs_authentication(rapi):
    status, headers, result = rapi.Request("POST", "/2/groups",
                                           {"name": "nope"})
    assert status == 401
    assert headers["WWW-Authenticate"] == \
        'Basic realm="Ganeti Remote API"'
    assert result["code"] == 401
    rapi.Error(401, "POST", "/2/groups", {"name": "nope"},
               user=("admin", "wrong"))
    rapi.Error(401, "POST", "/2/groups", {"name": "nope"},
               user=("ghost", "s3cret"))
    rapi.Error(401, "POST", "/2/groups", {"name": "nope"},
               user=("short", ""))
    # Valid users lacking the "write" option
    rapi.Error(403, "POST", "/2/groups", {"name": "nope"}, user=READER)
    rapi.Error(403, "PUT", "/2/tags?tag=x", user=NOBODY)
    rapi.Error(403, "DELETE", "/2/jobs/1", user=NOBODY)
    rapi.Error(403, "GET", "/2/jobs/1/wait", {"fields": ["id"]},
               user=READER)
    # Digest is not supported; malformed Basic credentials are refused
    rapi.Error(401, "POST", "/2/groups", {"name": "nope"}, user=None,
               headers={"Authorization": 'Digest username="admin"'})
    rapi.Error(400, "POST", "/2/groups", {"name": "nope"}, user=None,
               headers={"Authorization": "Basic !!!"})
    rapi.Error(400, "POST", "/2/groups", {"name": "nope"}, user=None,
               headers={"Authorization": "Basic " +
                        base64.b64encode(b"nocolon").decode()})
    # {HA1} passwords (scheme case-insensitive)
    assert isinstance(rapi.Ok("PUT", "/2/tags?tag=x&dry-run=1",
                              user=HA1USER), int)


def test_reads_are_open_but_credentials_are_checked(rapi):
    assert rapi.Ok("GET", "/2/nodes", user=None)
    assert rapi.Ok("GET", "/2/nodes", user=NOBODY)
    # Credentials sent with an open request must still be valid
    rapi.Error(401, "GET", "/2/nodes", user=("admin", "wrong"))
    # Query results may be sensitive: read or write users only
    rapi.Error(401, "GET", "/2/query/node?fields=name", user=None)
    rapi.Error(403, "GET", "/2/query/node?fields=name", user=NOBODY)
    assert rapi.Ok("GET", "/2/query/node?fields=name", user=READER)
    assert rapi.Ok("PUT", "/2/query/node", {"fields": ["name"]},
                   user=READER)


def test_body_checks(rapi):
    message = rapi.Error(415, "POST", "/2/groups", raw=b'{"name": "x"}',
                         headers={"Content-Type": "text/plain"})
    assert message == "Unsupported Media Type"
    rapi.Error(415, "POST", "/2/groups", raw=b'{"name": "x"}')
    assert rapi.Error(400, "POST", "/2/groups", raw=b"{bad json",
                      headers={"Content-Type": "application/json"}) == \
        "Unable to parse JSON data"
    # Parameters after the media type are fine
    assert isinstance(rapi.Ok(
        "PUT", "/2/tags?tag=x&dry-run=1", raw=b"{}",
        headers={"Content-Type": "application/json; charset=utf-8"}), int)
    # Bodies over 10 MiB are refused before being read
    conn = rapi.Connection()
    try:
        conn.putrequest("POST", "/2/groups")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(10 * 1024 * 1024 + 1))
        conn.endheaders()
        resp = conn.getresponse()
        assert resp.status == 413
        assert json.loads(resp.read())["code"] == 413
    finally:
        conn.close()


def test_users_file_reread_on_sighup(rapi):
    users_file = rapi.cluster.NodePath(pathutils.RAPI_USERS_FILE)
    newbie = ("newbie", "fresh")
    rapi.Error(401, "PUT", "/2/tags?tag=x&dry-run=1", user=newbie)
    with open(users_file, encoding="utf-8") as fobj:
        original = fobj.read()
    try:
        with open(users_file, "a", encoding="utf-8") as fobj:
            fobj.write("newbie fresh write\n")
        os.kill(rapi.cluster.Pid(constants.RAPI), signal.SIGHUP)
        deadline = time.monotonic() + 10
        while rapi.Request("PUT", "/2/tags?tag=x&dry-run=1",
                           user=newbie)[0] != 200:
            assert time.monotonic() < deadline, "users file not re-read"
            time.sleep(0.1)
    finally:
        with open(users_file, "w", encoding="utf-8") as fobj:
            fobj.write(original)
        os.kill(rapi.cluster.Pid(constants.RAPI), signal.SIGHUP)


def test_boolean_arguments_must_be_integers(rapi):
    message = rapi.Error(400, "GET", "/2/nodes?bulk=yes")
    assert message == "Invalid value for the 'bulk' parameter"
    rapi.Error(400, "POST", "/2/groups?dry-run=true", {"name": "x"})
    rapi.Error(400, "GET", "/2/nodes?lock=1")


# Nodes -----------------------------------------------------------------------

def test_nodes(rapi):
    master = rapi.cluster.node
    nodes = rapi.Ok("GET", "/2/nodes")
    assert nodes == [{"id": name, "uri": "/2/nodes/%s" % name}
                     for name in sorted([master, NODE2])]
    bulk = rapi.Ok("GET", "/2/nodes?bulk=1")
    assert [node["name"] for node in bulk] == sorted([master, NODE2])
    node = rapi.Ok("GET", "/2/nodes/%s" % master)
    assert node["role"] == constants.NR_MASTER
    assert node["pip"] == rapi.cluster.node_ip
    assert node["secondary_ip"] == node["sip"]
    assert {"dtotal", "mfree", "group.uuid", "ndparams", "uuid",
            "tags"} <= set(node)
    # Short names are expanded, as everywhere in Ganeti
    assert rapi.Ok("GET", "/2/nodes/node1")["name"] == master
    assert "not known" in rapi.Error(404, "GET", "/2/nodes/nosuch")


def test_node_role(rapi):
    master = rapi.cluster.node
    assert rapi.Ok("GET", "/2/nodes/%s/role" % master) == "master"
    assert rapi.Ok("GET", "/2/nodes/%s/role" % NODE2) == "master-candidate"
    rapi.Error(404, "GET", "/2/nodes/nosuch/role")
    assert rapi.Error(400, "PUT", "/2/nodes/%s/role" % NODE2,
                      "master") == "Can't set 'master' role"
    assert "Body contents" in rapi.Error(400, "PUT",
                                         "/2/nodes/%s/role" % NODE2,
                                         {"role": "drained"})
    try:
        job = rapi.Job("PUT", "/2/nodes/%s/role?auto-promote=1" % NODE2,
                       "drained")
        op = job["ops"][0]
        assert op["OP_ID"] == "OP_NODE_SET_PARAMS"
        assert (op["node_name"], op["drained"], op["auto_promote"]) == \
            (NODE2, True, True)
        assert op["master_candidate"] is None and op["offline"] is None
        assert rapi.Ok("GET", "/2/nodes/%s/role" % NODE2) == "drained"
    finally:
        job = rapi.Job("PUT", "/2/nodes/%s/role?force=1" % NODE2,
                       "master-candidate")
    assert rapi.Ok("GET", "/2/nodes/%s/role" % NODE2) == "master-candidate"
    # The master's role changes only by failover: the job fails
    job = rapi.Job("PUT", "/2/nodes/%s/role" % master, "regular",
                   expected=constants.JOB_STATUS_ERROR)
    op = job["ops"][0]
    assert (op["master_candidate"], op["drained"], op["offline"]) == \
        (False, False, False)
    assert "master-failover" in str(job["opresult"])


def test_node_modify(rapi):
    path = "/2/nodes/%s/modify" % NODE2
    job = rapi.Job("POST", path, {"ndparams": {"spindle_count": 3}})
    assert job["ops"][0]["node_name"] == NODE2
    node = rapi.Ok("GET", "/2/nodes/%s" % NODE2)
    assert node["ndparams"]["spindle_count"] == 3
    assert "Invalid body parameters" in rapi.Error(400, "POST", path,
                                                   {"bogus": 1})
    assert "Invalid body parameters" in rapi.Error(
        400, "POST", path, {"ndparams": "notadict"})
    assert "Can't overwrite static parameters node_name" in rapi.Error(
        400, "POST", path, {"node_name": "other"})
    assert "Body contents" in rapi.Error(400, "POST", path, ["list"])


def test_node_storage(rapi):
    """Ganeti's storage resources: a query job (write access, as it takes
    locks) and the change and repair jobs, refused here as in Ganeti."""
    master = rapi.cluster.node
    path = "/2/nodes/%s/storage" % master
    rapi.Error(403, "GET", path + "?output_fields=name", user=READER)
    assert "output_fields" in rapi.Error(400, "GET", path)
    job = rapi.Job("GET", path + "?storage_type=file"
                   "&output_fields=name,allocatable")
    op = job["ops"][0]
    assert (op["OP_ID"], op["nodes"], op["storage_type"]) == \
        ("OP_NODE_QUERY_STORAGE", [master], "file")
    (rows, ) = job["opresult"]
    assert rows == [[pathutils.DEFAULT_FILE_STORAGE_DIR, True]]
    assert "Missing the required 'name' parameter" in rapi.Error(
        400, "PUT", path + "/modify?storage_type=file")
    job = rapi.Job("PUT", path + "/modify?storage_type=file&name=x"
                   "&allocatable=0", expected=constants.JOB_STATUS_ERROR)
    assert job["ops"][0]["changes"] == {"allocatable": False}
    assert "Storage units of type 'file' can not be modified" in \
        str(job["opresult"])
    job = rapi.Job("PUT", path + "/repair?storage_type=lvm-vg&name=xenvg",
                   expected=constants.JOB_STATUS_ERROR)
    assert job["ops"][0]["OP_ID"] == "OP_REPAIR_NODE_STORAGE"
    assert "No disk template of storage type 'lvm-vg' is enabled" in \
        str(job["opresult"])


def test_node_powercycle(rapi):
    """The route is Ganeti's; the job fails as nodes are power-cycled only
    out-of-band here."""
    job = rapi.Job("POST", "/2/nodes/%s/powercycle?force=1" % NODE2,
                   expected=constants.JOB_STATUS_ERROR)
    op = job["ops"][0]
    assert (op["OP_ID"], op["node_name"], op["force"]) == \
        ("OP_NODE_POWERCYCLE", NODE2, True)
    assert "gnt-node power cycle" in str(job["opresult"])


def test_node_tags(rapi):
    path = "/2/nodes/%s/tags" % NODE2
    tag1, tag2 = _Tag("a"), _Tag("b")
    rapi.Job("PUT", "%s?tag=%s&tag=%s" % (path, tag1, tag2))
    assert {tag1, tag2} <= set(rapi.Ok("GET", path, user=None))
    rapi.Job("PUT", "%s?tag=%s&dry-run=1" % (path, _Tag("dry")))
    rapi.Job("DELETE", "%s?tag=%s" % (path, tag1))
    tags = rapi.Ok("GET", path)
    assert tag2 in tags and tag1 not in tags and \
        not any(t.startswith("dry") for t in tags)
    assert "nosuch" in rapi.Error(404, "GET", "/2/nodes/nosuch/tags")
    # Names are checked when the job runs
    rapi.Job("PUT", "/2/nodes/nosuch/tags?tag=x",
             expected=constants.JOB_STATUS_ERROR)


# Cluster ---------------------------------------------------------------------

def test_cluster_tags_and_reason(rapi):
    tag = _Tag("cluster")
    job = rapi.Job("PUT", "/2/tags?tag=%s&reason=testing%%20tags" % tag)
    op = job["ops"][0]
    assert (op["OP_ID"], op["kind"], op["name"], op["tags"]) == \
        ("OP_TAGS_SET", "cluster", None, [tag])
    sources = [entry[0] for entry in op["reason"]]
    assert op["reason"][0][:2] == ["gnt:user", "testing tags"]
    assert "gnt:library:rlib2:tags" in sources
    assert tag in rapi.Ok("GET", "/2/tags")
    assert tag in rapi.Ok("GET", "/2/info")["tags"]
    rapi.Job("DELETE", "/2/tags?tag=%s" % tag)
    assert tag not in rapi.Ok("GET", "/2/tags")


def test_cluster_modify(rapi):
    old = rapi.Ok("GET", "/2/info")["candidate_pool_size"]
    try:
        rapi.Job("PUT", "/2/modify", {"candidate_pool_size": old + 2})
        assert rapi.Ok("GET", "/2/info")["candidate_pool_size"] == old + 2
    finally:
        rapi.Job("PUT", "/2/modify", {"candidate_pool_size": old})
    assert rapi.Error(403, "PUT", "/2/modify",
                      {"compression_tools": ["gzip"]}) == \
        "The parameter compression_tools cannot be set via RAPI"
    assert "candidate_pool_size" in rapi.Error(
        400, "PUT", "/2/modify", {"candidate_pool_size": -1})
    rapi.Job("PUT", "/2/redistribute-config")
    rapi.Error(501, "POST", "/2/redistribute-config")


# Node groups -----------------------------------------------------------------

def test_group_lifecycle(rapi):
    name = "grp%d" % (time.monotonic_ns() % 100000)
    job = rapi.Job("POST", "/2/groups", {"name": name,
                                         "alloc_policy": "last_resort"})
    assert job["ops"][0]["group_name"] == name
    assert {"name": name, "uri": "/2/groups/%s" % name} in \
        rapi.Ok("GET", "/2/groups")
    bulk = {group["name"]: group for group in
            rapi.Ok("GET", "/2/groups?bulk=1")}
    assert bulk[name]["alloc_policy"] == "last_resort"
    group = rapi.Ok("GET", "/2/groups/%s" % name)
    assert (group["node_cnt"], group["node_list"]) == (0, [])
    assert {"ipolicy", "custom_ndparams", "uuid", "serial_no"} <= set(group)

    rapi.Job("PUT", "/2/groups/%s/modify" % name,
             {"custom_ndparams": {"spindle_count": 4},
              "alloc_policy": "preferred"})
    group = rapi.Ok("GET", "/2/groups/%s" % name)
    assert group["custom_ndparams"] == {"spindle_count": 4}
    assert group["alloc_policy"] == "preferred"

    tag = _Tag("g")
    rapi.Job("PUT", "/2/groups/%s/tags?tag=%s" % (name, tag))
    assert rapi.Ok("GET", "/2/groups/%s/tags" % name) == [tag]

    rapi.Job("PUT", "/2/groups/%s/assign-nodes?force=1" % name,
             {"nodes": [NODE2]})
    assert rapi.Ok("GET", "/2/groups/%s" % name)["node_list"] == [NODE2]
    rapi.Job("PUT", "/2/groups/default/assign-nodes?force=1",
             {"nodes": [NODE2]})

    new_name = name + "x"
    rapi.Job("PUT", "/2/groups/%s/rename" % name, {"new_name": new_name})
    rapi.Error(404, "GET", "/2/groups/%s" % name)
    rapi.Job("DELETE", "/2/groups/%s?dry-run=1" % new_name)
    assert rapi.Ok("GET", "/2/groups/%s" % new_name)["name"] == new_name
    job = rapi.Job("DELETE", "/2/groups/%s" % new_name, {"ignored": 1})
    assert job["ops"][0]["OP_ID"] == "OP_GROUP_REMOVE"
    rapi.Error(404, "GET", "/2/groups/%s" % new_name)


def test_group_bad_input(rapi):
    assert "renamed to 'group_name', but both are specified" in rapi.Error(
        400, "POST", "/2/groups", {"name": "a", "group_name": "b"})
    assert "group_name" in rapi.Error(400, "POST", "/2/groups", {})
    assert "alloc_policy" in rapi.Error(
        400, "POST", "/2/groups", {"name": "x", "alloc_policy": "bogus"})
    assert "dry_run" in rapi.Error(400, "POST", "/2/groups",
                                   {"name": "x", "dry_run": True})
    assert "new_name" in rapi.Error(400, "PUT", "/2/groups/default/rename",
                                    {})
    assert "nodes" in rapi.Error(400, "PUT",
                                 "/2/groups/default/assign-nodes",
                                 {"nodes": "notalist"})
    assert "not found" in rapi.Error(404, "GET", "/2/groups/nosuch")
    rapi.Error(404, "GET", "/2/groups/nosuch/tags")
    # A job for an unknown group is accepted and fails
    rapi.Job("PUT", "/2/groups/nosuch/rename", {"new_name": "y"},
             expected=constants.JOB_STATUS_ERROR)


def test_dry_run_and_depends(rapi):
    name = "dry%d" % (time.monotonic_ns() % 100000)
    job = rapi.Job("POST", "/2/groups?dry-run=1", {"name": name})
    assert job["ops"][0]["dry_run"] is True
    rapi.Error(404, "GET", "/2/groups/%s" % name)
    first = rapi.Ok("PUT", "/2/tags?tag=dep&dry-run=1")
    job = rapi.Job("POST", "/2/groups?dry-run=1",
                   {"name": name, "depends": [[first, ["success"]]]})
    assert job["ops"][0]["depends"] == [[first, ["success"]]]


# Jobs ------------------------------------------------------------------------

def test_jobs(rapi):
    job_id = rapi.Ok("PUT", "/2/tags?tag=j&dry-run=1")
    assert isinstance(job_id, int)
    rapi.WaitJob(job_id)
    jobs = rapi.Ok("GET", "/2/jobs")
    assert {"id": job_id, "uri": "/2/jobs/%d" % job_id} in jobs
    assert all(isinstance(job["id"], int) for job in jobs)
    bulk = {job["id"]: job for job in rapi.Ok("GET", "/2/jobs?bulk=1")}
    assert set(bulk[job_id]) == {"id", "ops", "status", "summary",
                                 "opstatus", "received_ts", "start_ts",
                                 "end_ts"}
    job = rapi.Ok("GET", "/2/jobs/%d" % job_id)
    assert (job["id"], job["status"], job["summary"]) == \
        (job_id, "success", ["TAGS_SET"])
    assert {"oplog", "opresult"} <= set(job)
    rapi.Error(404, "GET", "/2/jobs/999999")
    # Finished jobs can't be canceled
    result = rapi.Ok("DELETE", "/2/jobs/%d" % job_id)
    assert result[0] is False and isinstance(result[1], str)


def test_job_wait_and_cancel(rapi):
    # A job waiting for another one can be canceled
    luxi = rapi.cluster.Luxi()
    try:
        delay = luxi.SubmitJob([opcodes.OpTestDelay(duration=1.0)])
    finally:
        luxi.Close()
    waiting = rapi.Ok("POST", "/2/groups?dry-run=1",
                      {"name": "w", "depends": [[delay, ["success"]]]})
    result = rapi.Ok("DELETE", "/2/jobs/%d" % waiting)
    assert result[0] is True, result
    assert rapi.WaitJob(waiting) == constants.JOB_STATUS_CANCELED
    blocker = rapi.Ok("PUT", "/2/tags?tag=w&dry-run=1")
    rapi.WaitJob(blocker)
    # Waiting on a finished job with its final state answers at once
    path = "/2/jobs/%d/wait" % blocker
    final = rapi.Ok("GET", path, {"fields": ["status", "id"]})
    assert final["job_info"] == ["success", blocker]
    again = rapi.Ok("GET", path, {"fields": ["status", "id"],
                                  "previous_job_info": final["job_info"],
                                  "previous_log_serial": 0})
    assert again["job_info"] == final["job_info"]
    assert "fields" in rapi.Error(400, "GET", path, {})
    assert "should be a list" in rapi.Error(400, "GET", path,
                                            {"fields": "status"})
    assert "previous_job_info" in rapi.Error(
        400, "GET", path, {"fields": [], "previous_job_info": 1})
    assert "previous_log_serial" in rapi.Error(
        400, "GET", path, {"fields": [], "previous_log_serial": "1"})
    rapi.Error(404, "GET", "/2/jobs/999999/wait", {"fields": ["status"]})
    rapi.Error(400, "GET", path, {"fields": ["bogus"]})


# Queries ---------------------------------------------------------------------

def test_query(rapi):
    result = rapi.Ok("GET", "/2/query/node?fields=name,role")
    assert [field["name"] for field in result["fields"]] == ["name", "role"]
    assert sorted(row[0][1] for row in result["data"]) == \
        sorted([rapi.cluster.node, NODE2])
    result = rapi.Ok("PUT", "/2/query/node",
                     {"fields": ["name", "role"],
                      "qfilter": ["=", "name", NODE2]})
    assert result["data"] == [[[constants.RS_NORMAL, NODE2],
                               [constants.RS_NORMAL, "C"]]]
    legacy = rapi.Ok("PUT", "/2/query/node?fields=name",
                     {"filter": ["=", "name", NODE2]})
    assert legacy["data"] == [[[constants.RS_NORMAL, NODE2]]]
    jobs = rapi.Ok("GET", "/2/query/job?fields=id,status")
    assert jobs["data"]
    assert rapi.Error(400, "GET", "/2/query/node") == \
        "Missing 'fields' query argument"
    rapi.Error(400, "PUT", "/2/query/node", {"qfilter": ["=", "name"]})
    rapi.Error(400, "PUT", "/2/query/node",
               {"fields": ["name"], "qfilter": ["~~", "name", "x"]})
    rapi.Error(404, "GET", "/2/query/cluster?fields=name")
    rapi.Error(404, "GET", "/2/query/bogus?fields=name")


def test_query_fields(rapi):
    fields = rapi.Ok("GET", "/2/query/group/fields")["fields"]
    assert {"name", "alloc_policy", "node_cnt"} <= \
        {field["name"] for field in fields}
    fields = rapi.Ok("GET", "/2/query/node/fields?fields=name,bogus")
    assert [(f["name"], f["kind"]) for f in fields["fields"]] == \
        [("name", constants.QFT_TEXT), ("bogus", constants.QFT_UNKNOWN)]


# Job filters -----------------------------------------------------------------

def test_filters(rapi):
    uuid = rapi.Ok("POST", "/2/filters",
                   {"priority": 5, "predicates": [["reason", ["=",
                                                              "reason",
                                                              "nope"]]],
                    "action": "REJECT",
                    "reason": [["test", "rapi", 0]]})
    assert isinstance(uuid, str)
    try:
        assert {"uuid": uuid, "uri": "/2/filters/%s" % uuid} in \
            rapi.Ok("GET", "/2/filters")
        rule = rapi.Ok("GET", "/2/filters/%s" % uuid)
        assert (rule["uuid"], rule["priority"], rule["action"]) == \
            (uuid, 5, "REJECT")
        assert set(rule) == {"watermark", "priority", "predicates",
                             "action", "reason_trail", "uuid"}
        bulk = rapi.Ok("GET", "/2/filters?bulk=1")
        assert uuid in [item["uuid"] for item in bulk]
        assert rapi.Ok("PUT", "/2/filters/%s" % uuid,
                       {"priority": 7, "action": "CONTINUE"}) == uuid
        assert rapi.Ok("GET", "/2/filters/%s" % uuid)["priority"] == 7
        assert "doesn't support the parameter 'bogus'" in rapi.Error(
            400, "POST", "/2/filters", {"bogus": 1})
        assert "'priority' parameter" in rapi.Error(
            400, "POST", "/2/filters", {"priority": "high"})
        rapi.Error(400, "POST", "/2/filters", ["not", "a", "dict"])
        rapi.Error(401, "POST", "/2/filters", {}, user=None)
    finally:
        assert rapi.Ok("DELETE", "/2/filters/%s" % uuid) is None
    rapi.Error(404, "GET", "/2/filters/%s" % uuid)


# The master daemon's state ---------------------------------------------------

def test_drained_queue_and_unreachable_master(rapi):
    luxi = rapi.cluster.Luxi()
    try:
        luxi.SetQueueDrainFlag(True)
        assert rapi.Error(503, "PUT", "/2/tags?tag=x") == \
            "Job queue is drained, cannot submit"
    finally:
        luxi.SetQueueDrainFlag(False)
        luxi.Close()
    rapi.cluster.Run("daemon-util", "stop", constants.MASTERD)
    try:
        assert "Can't connect to master daemon" in \
            rapi.Error(502, "GET", "/2/info")
        # Resources not needing the master still work
        assert rapi.Ok("GET", "/version") == 2
    finally:
        rapi.cluster.Run("daemon-util", "start", constants.MASTERD)
    assert rapi.Ok("GET", "/2/info")["name"] == rapi.cluster.cluster_name


def test_refuses_to_start_outside_master(rapi):
    node = rapi.cluster.nodes[NODE2]
    result = node.Run("daemon-util", "start", constants.RAPI, check=False)
    assert result.returncode == constants.EXIT_NOTMASTER
    assert not node.IsRunning(constants.RAPI)


def test_openapi_document(rapi):
    doc = rapi.Ok("GET", "/2/openapi.json", user=None)
    assert doc["openapi"].startswith("3.")
    assert "/2/groups/{group_name}/rename" in doc["paths"]


# Ganeti's client -------------------------------------------------------------

def test_ganeti_rapi_client(rapi):
    client = rapi_client.GanetiRapiClient(rapi.host, port=rapi.port,
                                          username=ADMIN[0],
                                          password=ADMIN[1])
    assert client.GetVersion() == constants.RAPI_VERSION
    assert client.GetInfo()["name"] == rapi.cluster.cluster_name
    assert client.GetFeatures() == connector.GetFeatures()
    assert sorted(client.GetNodes()) == sorted([rapi.cluster.node, NODE2])
    assert client.GetNode(NODE2)["name"] == NODE2
    assert client.GetNodeRole(rapi.cluster.node) == "master"
    name = "cli%d" % (time.monotonic_ns() % 100000)
    job_id = client.CreateGroup(name, alloc_policy="preferred")
    assert client.WaitForJobCompletion(job_id, period=0.1)
    assert name in client.GetGroups()
    assert client.GetGroup(name)["name"] == name
    job_id = client.AddGroupTags(name, ["t1"])
    change = client.WaitForJobChange(job_id, ["id"], None, None)
    assert change["job_info"] == [job_id]
    assert client.WaitForJobCompletion(job_id, period=0.1)
    assert client.GetGroupTags(name) == ["t1"]
    job_id = client.DeleteGroup(name)
    assert client.WaitForJobCompletion(job_id, period=0.1)
    result = client.Query("node", ["name"], qfilter=["=", "name", NODE2])
    assert result["data"] == [[[constants.RS_NORMAL, NODE2]]]
    assert client.QueryFields("node", ["name"])["fields"][0]["name"] == \
        "name"
    with pytest.raises(rapi_client.GanetiApiError) as err:
        client.GetGroup("nosuch")
    assert err.value.code == 404
    reader = rapi_client.GanetiRapiClient(rapi.host, port=rapi.port,
                                          username=READER[0],
                                          password=READER[1])
    with pytest.raises(rapi_client.GanetiApiError) as err:
        reader.CreateGroup("never")
    assert err.value.code == 403


# Hostile input (issue 12) ----------------------------------------------------

def _LogText(cluster: VirtualCluster) -> str:
    text = []
    for dirpath, _, names in os.walk(cluster.NodePath(pathutils.LOG_DIR)):
        for name in names:
            with open(os.path.join(dirpath, name), encoding="utf-8",
                      errors="replace") as fobj:
                text.append(fobj.read())
    return "".join(text)


def test_private_os_parameters_are_redacted(rapi):
    """Neither an anonymous GET /2/jobs/N, gnt-job info, the job file nor a
    log shows private or secret OS parameters."""
    op = opcodes.OpInstanceReinstall(
        instance_name="nosuch.example.test",
        osparams_private={"pw": "hunter2-private"},
        osparams_secret={"key": "hunter2-secret"})
    job_id = int(rapi.cluster.Luxi().SubmitJob([op]))
    assert rapi.WaitJob(job_id) == constants.JOB_STATUS_ERROR
    status, _, job = rapi.Request("GET", "/2/jobs/%d" % job_id)
    assert status == 200
    assert job["ops"][0]["osparams_private"] == {"pw": constants.REDACTED}
    assert job["ops"][0]["osparams_secret"] == {"key": constants.REDACTED}
    info = rapi.cluster.Run("gnt-job", "info", str(job_id)).stdout
    assert constants.REDACTED in info
    with open(os.path.join(rapi.cluster.queue_dir, "job-%d" % job_id),
              encoding="utf-8") as fobj:
        job_file = fobj.read()
    for text in (json.dumps(job), info, job_file, _LogText(rapi.cluster)):
        assert "hunter2" not in text


def test_hostile_json_is_a_client_error(rapi):
    """Deep nesting and infinite numbers: 400 from RAPI, an encoded error
    from LUXI, and no traceback in the logs."""
    deep = b"[" * 5000 + b"]" * 5000
    for body in (deep, b'{"name": 1e400}', b'{"name": NaN}'):
        assert rapi.Error(400, "POST", "/2/groups", raw=body, headers={
            "Content-Type": "application/json"}) == \
            "Unable to parse JSON data"
    for msg in (b'{"method": "QueryJobs", "args": ' + deep + b"}",
                b'{"method": "QueryJobs", "args": [[1e400], []]}'):
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(30)
            sock.connect(rapi.cluster.master_socket)
            sock.sendall(msg + constants.LUXI_EOM)
            answer = b""
            while not answer.endswith(constants.LUXI_EOM):
                chunk = sock.recv(65536)
                assert chunk, "LUXI closed without a reply"
                answer += chunk
        reply = json.loads(answer[:-1])
        assert reply["success"] is False
    assert "Traceback" not in _LogText(rapi.cluster)


def test_names_are_checked_at_the_opcode(rapi):
    """A name that is a path never reaches the storage layer."""
    for name in ("../../etc", "a/b", ".."):
        message = rapi.Error(400, "POST", "/2/groups", {"name": name})
        assert "group_name" in message
    message = rapi.Error(400, "POST", "/2/instances", {
        "__version__": 1, "instance_name": "../../etc", "mode": "create",
        "disk_template": "file", "disks": [{"size": 64}], "nics": [],
        "os_type": "debootstrap", "pnode": NODE2})
    assert "instance_name" in message
