"""Integration tests of a one-node cluster: real noded and masterd processes.

Covers gnt-cluster init, jobs through LUXI and the CLI, LUXI fault
handling, and recovery after the master daemon is killed.
"""

import os
import signal
import socket
import time

import pytest

from ganeti import constants, errors, luxi, opcodes, pathutils, serializer

from testutils_cluster import VirtualCluster, WaitForJob

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vcluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        yield cluster
    finally:
        cluster.Cleanup()


def _Delay(duration=0.01, **kwargs):
    return opcodes.OpTestDelay(duration=duration, **kwargs)


def _RawLuxi(cluster, payload: bytes) -> dict:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(cluster.master_socket)
    try:
        sock.sendall(payload)
        data = b""
        while not data.endswith(constants.LUXI_EOM):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        return serializer.LoadJson(data.rstrip(constants.LUXI_EOM))
    finally:
        sock.close()


def test_init_creates_layout_and_daemons(vcluster):
    for path in (pathutils.CLUSTER_CONF_FILE, pathutils.NODED_CERT_FILE,
                 pathutils.SsconfFileName("cluster_name"),
                 pathutils.SsconfFileName("master_node"),
                 pathutils.JOB_QUEUE_VERSION_FILE,
                 pathutils.GetLogFilename("master-daemon"),
                 pathutils.GetLogFilename("node-daemon")):
        assert os.path.exists(vcluster.NodePath(path)), path
    assert vcluster.Pid("ganeti-masterd") and vcluster.Pid("ganeti-noded")
    with open(vcluster.NodePath(pathutils.SsconfFileName("master_node")),
              encoding="utf-8") as fobj:
        assert fobj.read().strip() == vcluster.node
    mode = os.stat(vcluster.master_socket).st_mode & 0o777
    assert mode == constants.SOCKET_MODE
    result = vcluster.Run("gnt-cluster", "getmaster")
    assert result.stdout.strip() == vcluster.node
    # A second init must refuse and leave the cluster alone
    result = vcluster.Run("gnt-cluster", "init", vcluster.cluster_name,
                          check=False)
    assert result.returncode == 1
    assert "already initialised" in result.stderr


def test_delay_job_through_cli_and_rpc(vcluster):
    result = vcluster.Run("gnt-debug", "delay", "-n", vcluster.node, "0.2")
    assert result.returncode == 0
    result = vcluster.Run("gnt-job", "list", "--no-headers",
                          "--separator=|", "-o", "id,status,summary")
    rows = [line.split("|") for line in result.stdout.splitlines()]
    assert ["success", "TEST_DELAY(0.2)"] in [row[1:] for row in rows]


def test_cli_refuses_negative_delay(vcluster):
    # No delay at all is one, as in Ganeti
    vcluster.Run("gnt-debug", "delay", "0")
    result = vcluster.Run("gnt-debug", "delay", "--", "-1", check=False)
    assert result.returncode == 1
    assert "duration" in result.stderr


def test_submit_prints_job_id(vcluster):
    result = vcluster.Run("gnt-debug", "delay", "--submit", "0.01")
    assert result.returncode == 0
    job_id = int(result.stderr.strip().split()[-1])
    result = vcluster.Run("gnt-job", "wait", str(job_id))
    info = vcluster.Run("gnt-job", "info", str(job_id)).stdout
    assert "Job ID: %d" % job_id in info
    assert "Status: success" in info


def test_cluster_info_modify_and_tags(vcluster):
    vcluster.Run("gnt-cluster", "modify", "--candidate-pool-size", "7",
                 "--max-running-jobs", "30", "-B", "maxmem=256")
    info = vcluster.Luxi().QueryClusterInfo()
    assert info["candidate_pool_size"] == 7
    assert info["max_running_jobs"] == 30
    assert info["beparams"]["default"]["maxmem"] == 256
    result = vcluster.Run("gnt-cluster", "modify", "-B", "maxmem=lots",
                          check=False)
    assert result.returncode == 1 and "maxmem" in result.stderr
    result = vcluster.Run("gnt-cluster", "modify", "--candidate-pool-size",
                          "0", check=False)
    assert result.returncode != 0
    vcluster.Run("gnt-cluster", "add-tags", "web", "prod")
    assert vcluster.Run("gnt-cluster", "list-tags").stdout.split() == \
        ["prod", "web"]
    vcluster.Run("gnt-cluster", "remove-tags", "prod")
    assert vcluster.Luxi().QueryTags("cluster", "") == ["web"]
    result = vcluster.Run("gnt-cluster", "add-tags", "bad tag!", check=False)
    assert result.returncode == 1 and "bad tag!" in result.stderr
    info = vcluster.Run("gnt-cluster", "info").stdout
    assert "Cluster name: %s" % vcluster.cluster_name in info
    assert "Master node: %s" % vcluster.node in info


def test_queue_drain(vcluster):
    vcluster.Run("gnt-cluster", "queue", "drain")
    try:
        assert "set" in vcluster.Run("gnt-cluster", "queue", "info").stdout
        result = vcluster.Run("gnt-debug", "delay", "0.01", check=False)
        assert result.returncode == 1 and "drain" in result.stderr
    finally:
        vcluster.Run("gnt-cluster", "queue", "undrain")
    vcluster.Run("gnt-debug", "delay", "0.01")


def test_luxi_bad_input_keeps_daemon_serving(vcluster):
    reply = _RawLuxi(vcluster, b"this is not json\x03")
    assert reply["success"] is False
    reply = _RawLuxi(vcluster, luxi.FormatRequest("NoSuchMethod", []) +
                     constants.LUXI_EOM)
    assert reply["success"] is False
    assert "NoSuchMethod" in str(reply["result"])
    reply = _RawLuxi(vcluster, luxi.FormatRequest("QueryJobs", [1]) +
                     constants.LUXI_EOM)
    assert reply["success"] is False
    reply = _RawLuxi(vcluster, luxi.FormatRequest(
        "SubmitJob", [[{"OP_ID": "OP_TEST_DELAY", "duration": "long"}]]) +
        constants.LUXI_EOM)
    assert reply["success"] is False
    assert reply["result"][0] == "OpPrereqError"
    assert "OP_TEST_DELAY.duration" in reply["result"][1][0]
    big = b'{"method": "QueryJobs", "args": ["' + \
        b"x" * (constants.LUXI_MAX_MESSAGE_SIZE + 10)
    reply = _RawLuxi(vcluster, big)
    assert reply["success"] is False
    assert "too large" in str(reply["result"])
    # Several requests on one connection, and the daemon still works
    client = vcluster.Luxi()
    job_id = client.SubmitJob([_Delay()])
    assert isinstance(job_id, int)
    assert WaitForJob(client, job_id) == "success"
    assert client.QueryJobs([job_id], ["id", "status"]) == \
        [[job_id, "success"]]
    with pytest.raises(errors.OpPrereqError):
        client.SubmitJob([{"OP_ID": "OP_UNKNOWN"}])


def test_locks_query(vcluster):
    result = vcluster.Run("gnt-debug", "locks")
    assert "cluster/BGL" in result.stdout


def test_kill_masterd_recovers_jobs(vcluster):
    client = vcluster.Luxi()
    client.SetQueueDrainFlag(False)
    running = client.SubmitJob([_Delay(30)])
    deadline = time.monotonic() + 10
    while client.QueryJobs([running], ["status"])[0][0] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # Fill the job slots so that later jobs stay queued
    cluster = client.QueryClusterInfo()
    fillers = [client.SubmitJob([_Delay(30)])
               for _ in range(cluster["max_running_jobs"] - 1)]
    queued = [client.SubmitJob([_Delay(0.01)]) for _ in range(3)]
    time.sleep(0.3)
    vcluster.KillDaemon("ganeti-masterd", signal.SIGKILL)
    # Every job file is complete JSON after the kill
    for job_id in [running] + fillers + queued:
        path = os.path.join(vcluster.queue_dir, "job-%d" % job_id)
        with open(path, encoding="utf-8") as fobj:
            assert serializer.LoadJson(fobj.read())["id"] == job_id
    vcluster.StartMasterd()
    client = vcluster.Luxi()
    assert WaitForJob(client, running) == "error"
    (result, ) = client.QueryJobs([running], ["opresult"])[0]
    assert constants.JOB_LOST_MESSAGE in result[0][1][0]
    for job_id in queued:
        assert WaitForJob(client, job_id) == "success"


def test_sigterm_leaves_readable_queue(vcluster):
    client = vcluster.Luxi()
    job_id = client.SubmitJob([_Delay(0.5)])
    vcluster.KillDaemon("ganeti-masterd", signal.SIGTERM)
    assert not os.path.exists(vcluster.master_socket)
    with open(os.path.join(vcluster.queue_dir, "job-%d" % job_id),
              encoding="utf-8") as fobj:
        serializer.LoadJson(fobj.read())
    vcluster.StartMasterd()
    assert WaitForJob(vcluster.Luxi(), job_id) in ("success", "error")


def test_second_masterd_refused(vcluster):
    result = vcluster.Run("ganeti-masterd", check=False)
    assert result.returncode == 1
    assert vcluster.Pid("ganeti-masterd")
    vcluster.Luxi().QueryClusterInfo()


def test_destroy():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        result = cluster.Run("gnt-cluster", "destroy", check=False)
        assert result.returncode == 1 and "--yes-do-it" in result.stderr
        assert cluster.Pid("ganeti-masterd")
        cluster.Run("gnt-cluster", "destroy", "--yes-do-it")
        assert not os.path.exists(
            cluster.NodePath(pathutils.CLUSTER_CONF_FILE))
        deadline = time.monotonic() + 10
        while cluster.Pid("ganeti-noded") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not cluster.Pid("ganeti-noded")
        assert not os.path.exists(cluster.master_socket)
    finally:
        cluster.Cleanup()
