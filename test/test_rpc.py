"""Node RPC end to end: RpcRunner/RpcClient against real noded processes."""

import http.client
import io
import os
import socket
import ssl
import stat
import sys
import threading
import time
import uuid
from typing import Any

import pycurl
import pytest

from ganeti import constants, errors, pathutils, rpc_defs
from ganeti import serializer, backend
from ganeti.http import server as http_server
from ganeti.rpc import client as rpc_client
from ganeti.rpc import node as rpc_node
from ganeti.utils import process, x509

import testutils_node

pytestmark = [pytest.mark.integration, pytest.mark.noded_cluster(nodes=3)]


def _Names(cluster):
    return [node.name for node in cluster.nodes]


def _RawPost(cluster, node, procedure, body, cert_file=None,
             timeout_ms=5000):
    """One request with plain pycurl; returns (curl error, status, body)."""
    curl = pycurl.Curl()
    buf = io.BytesIO()
    curl.setopt(pycurl.URL, "https://%s:%d/%s" % (node.ip, cluster.port,
                                                  procedure))
    curl.setopt(pycurl.PROXY, "")
    curl.setopt(pycurl.CAINFO, cluster.cert_file)
    curl.setopt(pycurl.SSL_VERIFYHOST, 0)
    if cert_file is not None:
        curl.setopt(pycurl.SSLCERT, cert_file)
        curl.setopt(pycurl.SSLKEY, cert_file)
    curl.setopt(pycurl.POSTFIELDS, body)
    curl.setopt(pycurl.WRITEDATA, buf)
    curl.setopt(pycurl.TIMEOUT_MS, timeout_ms)
    try:
        curl.perform()
    except pycurl.error as err:
        return err.args[0], None, None
    finally:
        status = curl.getinfo(pycurl.RESPONSE_CODE)
        curl.close()
    return 0, status, buf.getvalue()


def test_rpc_defs_match_backend():
    assert len(rpc_defs.CALLS_BY_NAME) == len(rpc_defs.CALLS)
    for call in rpc_defs.CALLS:
        assert call.kind in (rpc_defs.CALL_SINGLE, rpc_defs.CALL_MULTI)
        assert callable(backend.PROCEDURES[call.name]), call.name
        assert callable(getattr(rpc_node.RpcRunner, "call_" + call.name))
    # Nothing else is callable through noded
    assert set(backend.PROCEDURES) == {
        *rpc_defs.CALLS_BY_NAME, *rpc_defs.JOIN_CALLS_BY_NAME}


def test_version(noded_cluster, noded_runner):
    results = noded_runner.call_version(_Names(noded_cluster))
    assert set(results) == set(_Names(noded_cluster))
    for name, result in results.items():
        assert result.fail_msg is None, result.fail_msg
        assert result.payload == constants.PROTOCOL_VERSION
        assert result.node == name
        assert result.call == "version"
        assert not result.offline


def test_calls_run_in_parallel(noded_cluster, noded_runner):
    start = time.monotonic()
    results = noded_runner.call_test_delay(_Names(noded_cluster), 0.6)
    elapsed = time.monotonic() - start
    assert all(res.fail_msg is None for res in results.values())
    assert 0.6 <= elapsed < 0.6 * len(noded_cluster.nodes)


def test_offline_node_not_contacted(noded_cluster):
    trap = socket.socket()
    trap.bind((testutils_node.RandomLoopbackAddress(), noded_cluster.port))
    trap.listen(5)
    trap.setblocking(False)
    node = noded_cluster.nodes[0]
    rpc = rpc_node.RpcRunner(
        rpc_node.StaticResolver({node.name: node.ip,
                                 "down": trap.getsockname()[0]},
                                offline=["down"]),
        cert_file=noded_cluster.cert_file, port=noded_cluster.port)
    try:
        results = rpc.call_version([node.name, "down"])
    finally:
        rpc.close()
    assert results[node.name].fail_msg is None
    assert results["down"].offline
    assert results["down"].fail_msg == "Node is marked offline"
    assert results["down"].payload is None
    with pytest.raises(BlockingIOError):
        trap.accept()
    trap.close()


def test_unknown_node_address(noded_runner):
    result = noded_runner.call_version(["no-such-node"])["no-such-node"]
    assert not result.offline
    assert "No address" in result.fail_msg


def test_single_node_call_and_raise(noded_cluster, noded_runner):
    node = noded_cluster.nodes[0]
    result = noded_runner.call_jobqueue_purge(node.name)
    assert isinstance(result, rpc_client.RpcResult)
    result.Raise("purge")
    bad = noded_runner.call_test_delay([node.name], -1)[node.name]
    with pytest.raises(errors.OpExecError, match="^delay: Invalid sleep"):
        bad.Raise("delay")
    with pytest.raises(errors.OpPrereqError) as err:
        bad.Raise("delay", prereq=True, ecode=errors.ECODE_INVAL)
    assert err.value.args[1] == errors.ECODE_INVAL


def test_multi_call_needs_list(noded_runner):
    with pytest.raises(errors.ProgrammerError):
        noded_runner.call_version("node1")
    with pytest.raises(TypeError):
        noded_runner.call_test_delay(["node1"])


def test_client_with_other_cert_rejected(noded_cluster, tmp_path):
    other = str(tmp_path / "other.pem")
    x509.GenerateSelfSignedSslCert(other, validity_days=1)
    node = noded_cluster.nodes[0]
    body = serializer.DumpJsonBytes([True])
    drain_file = node.Path(pathutils.JOB_QUEUE_DRAIN_FILE)
    for cert in (other, None):
        code, status, _ = _RawPost(noded_cluster, node,
                                   "jobqueue_set_drain_flag",
                                   body, cert_file=cert)
        assert code != 0 and status in (None, 0)
        assert not os.path.exists(drain_file)
    # The right certificate gets through with the same request
    code, status, answer = _RawPost(noded_cluster, node,
                                    "jobqueue_set_drain_flag",
                                    body, cert_file=noded_cluster.cert_file)
    assert (code, status) == (0, 200)
    assert serializer.LoadJson(answer) == [True, None]
    assert os.path.exists(drain_file)
    os.unlink(drain_file)


def test_runner_with_other_cert_fails(noded_cluster, tmp_path):
    other = str(tmp_path / "other.pem")
    x509.GenerateSelfSignedSslCert(other, validity_days=1)
    rpc = noded_cluster.Runner(cert_file=other)
    try:
        results = rpc.call_version(_Names(noded_cluster))
    finally:
        rpc.close()
    for result in results.values():
        assert result.fail_msg and "Error while talking" in result.fail_msg


def test_timeout(noded_cluster, noded_runner):
    node = noded_cluster.nodes[1]
    start = time.monotonic()
    result = noded_runner.CallProcedure("test_delay", [node.name], [3],
                                        read_timeout=0.3)[node.name]
    assert time.monotonic() - start < 1.5
    assert "timed out" in result.fail_msg
    assert node.name in result.fail_msg


def test_unknown_procedure(noded_cluster, noded_runner):
    node = noded_cluster.nodes[0]
    results = noded_runner.client.Call(
        "no_such_procedure", [(node.name, node.name, node.ip, False)],
        noded_cluster.port, b"[]", 10)
    assert "HTTP 404" in results[node.name].fail_msg
    with pytest.raises(errors.ProgrammerError):
        noded_runner.CallProcedure("no_such_procedure", [node.name], [])


def test_wrong_argument_count(noded_cluster, noded_runner):
    node = noded_cluster.nodes[0]
    results = noded_runner.client.Call(
        "version", [(node.name, node.name, node.ip, False)],
        noded_cluster.port, b"[1, 2]", 10)
    assert "takes 0 arguments" in results[node.name].fail_msg


def test_upload_file_whitelist(noded_cluster, noded_runner):
    node = noded_cluster.nodes[0]
    result = noded_runner.call_upload_file([node.name], "/etc/passwd", "evil",
                                           0o644)[node.name]
    assert "Refusing to write /etc/passwd" in result.fail_msg
    assert not os.path.exists(node.root + "/etc/passwd")
    users = pathutils.RAPI_USERS_FILE
    result = noded_runner.call_upload_file([node.name], users,
                                           "admin secret write",
                                           0o640)[node.name]
    assert result.fail_msg is None
    local = node.Path(users)
    with open(local, encoding="utf-8") as fobj:
        assert fobj.read() == "admin secret write"
    assert stat.S_IMODE(os.stat(local).st_mode) == 0o640


def test_jobqueue_update_refuses_traversal(noded_cluster, noded_runner):
    node = noded_cluster.nodes[0]
    for vpath in (pathutils.QUEUE_DIR + "/../../../../etc/passwd",
                  pathutils.QUEUE_DIR + "/../config.data",
                  pathutils.QUEUE_DIR, "relative/job-1"):
        result = noded_runner.call_jobqueue_update([node.name], vpath,
                                                   "x")[node.name]
        assert "Refusing" in result.fail_msg or "Invalid path" in \
            result.fail_msg, result.fail_msg
    assert not os.path.exists(node.root + "/etc/passwd")
    assert not os.path.exists(node.Path(pathutils.CLUSTER_CONF_FILE))


def test_jobqueue_procedures(noded_cluster, noded_runner):
    names = _Names(noded_cluster)
    job = pathutils.JobFileName(17)
    big = "".join("line %d\n" % i for i in range(2000))
    results = noded_runner.call_jobqueue_update(names, job, big)
    assert all(res.fail_msg is None for res in results.values())
    noded_runner.call_jobqueue_update(names, pathutils.JOB_QUEUE_SERIAL_FILE,
                                      "17")
    for node in noded_cluster.nodes:
        local = node.Path(job)
        with open(local, encoding="utf-8") as fobj:
            assert fobj.read() == big
        assert stat.S_IMODE(os.stat(local).st_mode) == \
            constants.JOB_QUEUE_FILES_PERMS

    archived = pathutils.JobFileName(17, archived=True)
    results = noded_runner.call_jobqueue_rename(names, [[job, archived]])
    assert all(res.fail_msg is None for res in results.values())
    node = noded_cluster.nodes[0]
    assert os.path.exists(node.Path(archived))
    assert not os.path.exists(node.Path(job))
    # Repeatable (it goes over kept-alive connections): the same rename
    # again is a success that changes nothing
    results = noded_runner.call_jobqueue_rename(names, [[job, archived]])
    assert all(res.fail_msg is None for res in results.values())
    assert os.path.exists(node.Path(archived))
    result = noded_runner.call_jobqueue_rename(
        [node.name], [[archived, "/etc/x"]])[node.name]
    assert "Refusing" in result.fail_msg

    lock = node.Path(pathutils.JOB_QUEUE_LOCK_FILE)
    open(lock, "w", encoding="ascii").close()
    assert noded_runner.call_jobqueue_purge(node.name).fail_msg is None
    assert sorted(os.listdir(node.Path(pathutils.QUEUE_DIR))) == \
        ["archive", "lock"]
    assert os.listdir(node.Path(pathutils.JOB_QUEUE_ARCHIVE_DIR)) == []

    drain = node.Path(pathutils.JOB_QUEUE_DRAIN_FILE)
    noded_runner.call_jobqueue_set_drain_flag([node.name], True)
    assert os.path.exists(drain)
    noded_runner.call_jobqueue_set_drain_flag([node.name], False)
    assert not os.path.exists(drain)


def test_write_ssconf_files(noded_cluster, noded_runner):
    node = noded_cluster.nodes[2]
    values = {"cluster_name": "cluster.example.test",
              "node_list": "node1\nnode2\n"}
    result = noded_runner.call_write_ssconf_files([node.name],
                                                  values)[node.name]
    assert result.fail_msg is None
    for key, value in values.items():
        with open(node.Path(pathutils.SsconfFileName(key)),
                  encoding="utf-8") as fobj:
            assert fobj.read() == value
    result = noded_runner.call_write_ssconf_files(
        [node.name], {"ok_key": "x", "../evil": "y"})[node.name]
    assert "Invalid ssconf key" in result.fail_msg
    assert not os.path.exists(node.Path(pathutils.SsconfFileName("ok_key")))


def test_node_info(noded_cluster, noded_runner):
    node = noded_cluster.nodes[0]
    result = noded_runner.call_node_info([node.name], [], [constants.HT_FAKE])
    info = result[node.name].payload
    assert info["name"] == node.name
    assert info["memory_total"] > 0 and info["memory_free"] >= 0
    assert info["hv"][constants.HT_FAKE]["memory_total"] == \
        info["memory_total"]
    assert len(info["bootid"]) == 36
    storage = info["storage"][0]
    assert storage["name"] == pathutils.DEFAULT_FILE_STORAGE_DIR
    os.makedirs(node.Path(pathutils.DEFAULT_FILE_STORAGE_DIR), exist_ok=True)
    storage = noded_runner.call_node_info([node.name], [], [])[node.name] \
        .payload["storage"][0]
    assert storage["storage_size"] > 0 and storage["storage_free"] >= 0
    bad = noded_runner.call_node_info([node.name], [], ["xen"])[node.name]
    assert "Unknown hypervisor" in bad.fail_msg


def test_keepalive_reuses_connections(noded_cluster):
    rpc = noded_cluster.Runner()
    try:
        for _ in range(5):
            results = rpc.call_version(_Names(noded_cluster))
            assert all(res.fail_msg is None for res in results.values())
        assert rpc.client.connections_opened == len(noded_cluster.nodes)
    finally:
        rpc.close()


def test_broken_call_is_reported_not_repeated(noded_cluster):
    """Issue 12, fault 1: a call not safe to repeat whose noded child dies
    fails at once; libcurl must not send it again on a new connection (it
    did when the call went over a kept-alive connection)."""
    node = noded_cluster.nodes[0]
    assert not rpc_defs.CALLS_BY_NAME["test_delay"].repeatable
    rpc = noded_cluster.Runner()
    try:
        # A kept-alive connection the next call could reuse
        assert rpc.call_version([node.name])[node.name].fail_msg is None
        results = {}
        caller = threading.Thread(target=lambda: results.update(
            rpc.call_test_delay([node.name], 3)))
        start = time.monotonic()
        caller.start()
        time.sleep(0.7)
        for child in testutils_node.ChildPids(node.NodedPid()):
            os.kill(child, 9)
        caller.join(10)
        elapsed = time.monotonic() - start
    finally:
        rpc.close()
    result = results[node.name]
    # libcurl did send it again on a new connection; the node refused it
    assert result.fail_msg and "reached the node a second time" in \
        result.fail_msg and "was not repeated" in result.fail_msg
    assert elapsed < 2.5


def test_call_id_runs_once(noded_cluster):
    """The node runs a call id once, whichever connection brings it."""
    node = noded_cluster.nodes[0]
    context = ssl.create_default_context(cafile=noded_cluster.cert_file)
    context.check_hostname = False
    context.load_cert_chain(noded_cluster.cert_file)
    call_id = uuid.uuid4().hex

    def _Post(path: str, call_id: str) -> tuple[int, Any]:
        conn = http.client.HTTPSConnection(node.ip, noded_cluster.port,
                                           context=context, timeout=10)
        try:
            conn.request("POST", path, body=b"[0.001]", headers={
                constants.RPC_CALL_ID_HEADER: call_id})
            response = conn.getresponse()
            body = response.read()
            return response.status, (serializer.LoadJson(body)
                                     if response.status == 200 else body)
        finally:
            conn.close()

    assert _Post("/test_delay", call_id) == (200, [True, None])
    status, (ok, msg) = _Post("/test_delay", call_id)
    assert (status, ok) == (200, False)
    assert "%s (test_delay) reached the node a second time" % call_id in msg
    assert _Post("/test_delay", uuid.uuid4().hex) == (200, [True, None])
    assert _Post("/test_delay", "../x")[0] == 400


def test_concurrent_threads(noded_cluster, noded_runner):
    failures = []

    def _Worker():
        for _ in range(10):
            results = noded_runner.call_version(_Names(noded_cluster))
            for res in results.values():
                if res.payload != constants.PROTOCOL_VERSION:
                    failures.append(res.fail_msg)

    threads = [threading.Thread(target=_Worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_pid_file_lock_refuses_second_noded(noded_cluster):
    node = noded_cluster.nodes[0]
    pid = node.NodedPid()
    result = node.Run([sys.executable, testutils_node.NODED, "-p",
                       str(testutils_node.RandomPort())])
    assert result.returncode == 1
    assert "locked by another process" in result.stderr
    assert node.NodedPid() == pid


def test_node_leave_cluster():
    with testutils_node.TestCluster(1) as test_cluster:
        node = test_cluster.nodes[0]
        test_cluster.StartNoded()
        pid = node.NodedPid()
        ssconf = node.Path(pathutils.SsconfFileName("cluster_name"))
        with open(ssconf, "w", encoding="ascii") as fobj:
            fobj.write("c")
        rpc = test_cluster.Runner()
        try:
            result = rpc.call_node_leave_cluster(node.name)
        finally:
            rpc.close()
        assert result.fail_msg is None
        assert result.payload == "Shutdown scheduled"
        deadline = time.monotonic() + 5
        while process.IsProcessAlive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not process.IsProcessAlive(pid)
        assert not os.path.exists(ssconf)
        assert not os.path.exists(node.Path(pathutils.NODED_CERT_FILE))
        assert not os.path.exists(node.pid_file)


def test_daemon_util():
    with testutils_node.TestCluster(1) as test_cluster:
        node = test_cluster.nodes[0]
        util = [sys.executable, testutils_node.DAEMON_UTIL]
        assert node.Run(util + ["check", constants.NODED]).returncode == 1
        result = node.Run(util + ["start", constants.NODED, "-p",
                                  str(test_cluster.port)])
        assert result.returncode == 0, result.stderr
        pid = node.NodedPid()
        assert pid
        assert node.Run(util + ["check", constants.NODED]).returncode == 0
        # Starting a running daemon is a no-op
        assert node.Run(util + ["start", constants.NODED]).returncode == 0
        assert node.NodedPid() == pid
        listing = node.Run(util + ["list"]).stdout
        assert "%s running %d" % (constants.NODED, pid) in listing
        assert node.Run(util + ["stop", constants.NODED]).returncode == 0
        assert not process.IsProcessAlive(pid)
        assert node.Run(util + ["check", constants.NODED]).returncode == 1
        assert node.Run(util + ["stop", constants.NODED]).returncode == 0
        assert node.Run(util + ["frobnicate"]).returncode == \
            constants.EXIT_USAGE


def test_client_verifies_server_certificate(noded_cluster, tmp_path):
    other = str(tmp_path / "other.pem")
    x509.GenerateSelfSignedSslCert(other, validity_days=1)
    # A server that accepts any client but has a foreign certificate
    srv = http_server.HttpServer(
        "127.0.0.1", 0, lambda *_: (200, {}, b"[true, 1]"),
        ssl_cert_file=other)
    srv.start()
    try:
        client = rpc_client.RpcClient(noded_cluster.cert_file)
        result = client.Call("version", [("n", "n", "127.0.0.1", False)],
                             srv.server_address[1], b"[]", 5)["n"]
        client.close()
    finally:
        srv.shutdown()
    assert result.fail_msg and "Error while talking" in result.fail_msg
    assert "curl error %d" % pycurl.E_PEER_FAILED_VERIFICATION in \
        result.fail_msg


def test_stopped_noded_children_stop_serving():
    with testutils_node.TestCluster(1) as test_cluster:
        node = test_cluster.nodes[0]
        test_cluster.StartNoded()
        rpc = test_cluster.Runner()
        try:
            assert rpc.call_version([node.name])[node.name].fail_msg is None
            node.StopNoded()
            # The kept-alive connection's child is still there, but must
            # not answer for a stopped daemon
            result = rpc.call_version([node.name])[node.name]
            # curl retried on a new connection, which nobody accepts
            assert result.fail_msg and "curl error %d" % \
                pycurl.E_COULDNT_CONNECT in result.fail_msg
        finally:
            rpc.close()


def test_hostile_json_bodies_are_client_errors(noded_cluster, noded_runner):
    """Nesting thousands deep and infinite numbers: a 400, not a 500."""
    node = noded_cluster.nodes[0]
    for body in (b"[" * 5000 + b"]" * 5000, b"[1e400]", b"[NaN]"):
        results = noded_runner.client.Call(
            "version", [(node.name, node.name, node.ip, False)],
            noded_cluster.port, body, 10)
        assert "HTTP 400" in results[node.name].fail_msg, body[:20]


def test_upload_file_keeps_config_private(noded_cluster, noded_runner):
    """config.data holds private OS parameters: 0600 whatever is asked."""
    node = noded_cluster.nodes[0]
    local = node.Path(pathutils.CLUSTER_CONF_FILE)
    existed = os.path.exists(local)
    old = open(local, "rb").read() if existed else None
    try:
        result = noded_runner.call_upload_file(
            [node.name], pathutils.CLUSTER_CONF_FILE, "{}",
            0o644)[node.name]
        assert result.fail_msg is None
        assert stat.S_IMODE(os.stat(local).st_mode) == 0o600
        assert constants.CONFIG_FILE_MODE == 0o600
    finally:
        if existed:
            with open(local, "wb") as fobj:
                fobj.write(old)
        else:
            os.unlink(local)


def test_annotate_disks_drbd_addresses_per_node():
    """Each node of a drbd disk is told its own and its peer's address;
    other disks and the caller's dicts are left alone."""
    addresses = {"n1": ("u1", "192.0.2.1"), "u1": ("u1", "192.0.2.1"),
                 "u2": ("u2", "198.51.100.2")}
    drbd_disk = {"dev_type": constants.DT_DRBD8, "uuid": "d",
                 "logical_id": ["u1", "u2", 11000, 0, 0, "s"]}
    file_disk = {"dev_type": constants.DT_FILE, "logical_id": ["loop", "/x"]}
    annotated = rpc_node.AnnotateDisks([drbd_disk, file_disk], "n1",
                                       addresses.__getitem__)
    assert annotated[0]["dynamic_params"] == {
        constants.DDP_LOCAL_IP: "192.0.2.1",
        constants.DDP_REMOTE_IP: "198.51.100.2"}
    assert "dynamic_params" not in annotated[1]
    assert "dynamic_params" not in drbd_disk
    on_peer = rpc_node.AnnotateDisks(drbd_disk, "u2", addresses.__getitem__)
    assert on_peer["dynamic_params"] == {
        constants.DDP_LOCAL_IP: "198.51.100.2",
        constants.DDP_REMOTE_IP: "192.0.2.1"}
    with pytest.raises(errors.ProgrammerError, match="holds no side"):
        rpc_node.AnnotateDisks(drbd_disk, "u3",
                               lambda node: ("u3", "203.0.113.3"))


def test_annotate_disks_fills_group_disk_parameters():
    """Each disk gets its template's disk parameters in its primary node's
    group, under its own overrides; children too, without addresses."""
    per_node = {"u1": {constants.DT_DRBD8: {"resync-rate": 100,
                                            "protocol": "C"},
                       constants.DT_FILE: {}},
                "u2": {constants.DT_DRBD8: {"resync-rate": 999}}}
    disk = {"dev_type": constants.DT_DRBD8, "nodes": ["u1", "u2"],
            "params": {"protocol": "B"},
            "children": [{"dev_type": constants.DT_FILE, "params": {}}]}
    on_secondary = rpc_node.AnnotateDisks(disk, "u2", None,
                                          per_node.__getitem__)
    assert on_secondary["params"] == {"resync-rate": 100, "protocol": "B"}
    assert on_secondary["children"][0]["params"] == {}
    assert "dynamic_params" not in on_secondary
    assert disk["params"] == {"protocol": "B"}
