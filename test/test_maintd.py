"""ganeti-maintd on a virtual cluster: real daemons, real HTTP, real jobs.

A node whose self-diagnose command reports ``evacuate`` has its (fake)
instances moved by the cluster's allocator, is offlined and tagged
``maintd:repairready:<id>``; the incident is forgotten and the node
brought back once the tag is removed and the node reports Ok.
``evacuate-failover`` moves the instances without migrating them. With
auto-balancing on, maintd submits the rebalance planner's moves. A forged
report is ignored, maintd refuses to run on a non-master node, and its
state lives in the configuration, so the maintd of a new master carries
on after a master failover.
"""

import http.server
import json
import os
import threading
import time
import urllib.request

import pytest

from ganeti import constants, pathutils, serializer
from ganeti.monitoring import report

from testutils_instance import (CHECKS, NODE1, NODE2, NODE3, FakeState,
                                Field, InstanceCluster, RemoveInstances)

pytestmark = pytest.mark.integration

_DIAG = "diag"


@pytest.fixture(scope="module")
def vc():
    """Three nodes running mond (diagnose every second) and a maintd with
    no pause between rounds (the cluster's maintenance interval)."""
    with InstanceCluster("--enabled-disk-templates=diskless",
                         file_paths=()) as cluster:
        cluster.Run("gnt-cluster", "modify", "--data-collector-interval",
                    "diagnose=1")
        for node in cluster.nodes.values():
            _WriteDiagnose(node, "Ok")
        cluster.Run("gnt-cluster", "modify",
                    "--diagnose-data-collector-filename", _DIAG)
        for node in cluster.nodes.values():
            node.Run("daemon-util", "start", "ganeti-mond")
        cluster.Run("gnt-cluster", "modify", "--maintenance-interval", "0")
        cluster.Run("daemon-util", "start", "ganeti-maintd")
        yield cluster


def _WriteDiagnose(node, status: str) -> None:
    """The node's white-listed diagnose command reports ``status``."""
    directory = node.NodePath(pathutils.NODE_DIAGNOSE_COMMANDS_DIR)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    path = os.path.join(directory, _DIAG)
    output = json.dumps({"status": status, "command": "",
                         "details": {"disk": "sdb"}})
    with open(path + ".tmp", "w", encoding="utf-8") as fobj:
        fobj.write("#!/bin/sh\necho '%s'\n" % output)
    os.chmod(path + ".tmp", 0o755)
    os.rename(path + ".tmp", path)


def _Maintd(cluster, path: str):
    url = "http://%s:%d%s" % (cluster.cluster_ip,
                              constants.DEFAULT_MAINTD_PORT, path)
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.headers["Content-Type"] == "application/json"
        return json.loads(answer.read())


def _Wait(predicate, timeout: float = 60, what: str = ""):
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError("Timed out waiting for %s" % what)
        time.sleep(0.3)


def _NodeInfo(cluster, name: str) -> tuple[str, str, list[str]]:
    """(uuid, offline, tags) of a node."""
    out = cluster.Run("gnt-node", "list", "--no-headers", "--separator=|",
                      "-o", "uuid,offline,tags", name).stdout.strip()
    uuid, offline, tags = out.split("|")
    return uuid, offline, [tag for tag in tags.split(",") if tag]


def _MaintdLog(cluster) -> str:
    with open(cluster.NodePath(pathutils.GetLogFilename(
            constants.DAEMONS_LOGBASE[constants.MAINTD])),
            encoding="utf-8") as fobj:
        return fobj.read()


def _ConfigMaintenance(node) -> dict:
    """The maintenance section of a node's copy of config.data."""
    with open(node.NodePath(pathutils.CLUSTER_CONF_FILE),
              encoding="utf-8") as fobj:
        return json.load(fobj)["maintenance"]


def _JobOps(cluster, job_ids) -> list[str]:
    return [op["OP_ID"] for (ops, ) in cluster.Luxi().QueryJobs(
        job_ids, ["ops"]) for op in ops]


def _Acknowledge(cluster, node, incident) -> None:
    """The node is repaired: it reports Ok and the admin removes the
    repairready tag; maintd forgets the incident, the node comes back."""
    _WriteDiagnose(node, constants.DIAGNOSE_OK)
    cluster.Run("gnt-node", "remove-tags", node.name, incident["tag"])
    _Wait(lambda: incident["id"] not in
          [inc["id"] for inc in _Maintd(cluster, "/1/status")], 60,
          "the incident to go")
    _Wait(lambda: _NodeInfo(cluster, node.name)[1] == "N", 60,
          "the node online")


def test_maintenance_settings(vc):
    """gnt-cluster modify sets maintd's settings in the configuration's
    maintenance section; gnt-cluster info shows them."""
    info = vc.Run("gnt-cluster", "info").stdout
    assert "Maintenance daemon:" in info
    assert "maintenance interval: 0" in info
    assert "auto balancing: False" in info
    assert "auto balancing threshold: %s" % \
        constants.MAINTD_DEFAULT_BALANCE_THRESHOLD in info
    vc.Run("gnt-cluster", "modify", "--auto-balance-cluster", "yes",
           "--auto-balance-threshold", "2.5")
    try:
        info = vc.Run("gnt-cluster", "info").stdout
        assert "auto balancing: True" in info
        assert "auto balancing threshold: 2.5" in info
        maint = _ConfigMaintenance(vc)
        assert (maint["roundDelay"], maint["balance"],
                maint["balanceThreshold"]) == (0, True, 2.5)
    finally:
        vc.Run("gnt-cluster", "modify", "--auto-balance-cluster", "no",
               "--auto-balance-threshold",
               str(constants.MAINTD_DEFAULT_BALANCE_THRESHOLD))
    result = vc.Run("gnt-cluster", "modify", "--maintenance-interval", "-1",
                    check=False)
    assert result.returncode != 0


def test_protocol_versions(vc):
    assert _Maintd(vc, "/") == [1]
    assert _Maintd(vc, "/1/status") == []
    assert _Maintd(vc, "/1/jobs") == []


def test_evacuate_offlines_and_tags(vc):
    node2 = vc.nodes[NODE2]
    for name in ("mt-a", "mt-b"):
        vc.Run("gnt-instance", "add", "-t", "diskless", "-n", NODE2,
               "--no-install", "--ignore-ipolicy", "-B", "memory=64",
               *CHECKS, name)
    uuid, _, _ = _NodeInfo(vc, NODE2)
    _WriteDiagnose(node2, constants.DIAGNOSE_EVACUATE)
    (incident, ) = _Wait(
        lambda: [inc for inc in _Maintd(vc, "/1/status")
                 if inc["repair-status"] == "completed"], 120,
        "the evacuation to complete")
    assert incident["node"] == uuid
    assert incident["original"] == {"status": "evacuate", "command": "",
                                    "details": {"disk": "sdb"}}
    assert incident["tag"] == "maintd:repairready:" + incident["id"]
    assert len(incident["jobs"]) >= 3
    _, offline, tags = _NodeInfo(vc, NODE2)
    assert offline == "Y"
    assert incident["tag"] in tags
    assert _Maintd(vc, "/1/evacuated") == [uuid]
    for name in ("mt-a", "mt-b"):
        out = vc.Run("gnt-instance", "list", "--no-headers", "-o", "pnode",
                     name).stdout.strip()
        assert out != NODE2
        assert not os.path.exists(FakeState(node2, name))
    # The jobs carry maintd's reason and the incident id
    job = vc.Run("gnt-job", "info", str(incident["jobs"][0])).stdout
    assert "gnt:daemon:maintd" in job and incident["id"] in job, job
    assert "OP_INSTANCE_MIGRATE" in _JobOps(vc, incident["jobs"])
    # The state is in the configuration, replicated to the candidates
    for node in (vc, vc.nodes[NODE3]):
        stored = _Wait(lambda node=node: _ConfigMaintenance(node)[
            "incidents"], 30, "the replicated state")
        assert [(inc["id"], inc["repair-status"]) for inc in stored] == \
            [(incident["id"], "completed")]
        assert _ConfigMaintenance(node)["evacuated"] == [uuid]

    # Acknowledged and fixed: forgotten, the node back online
    _WriteDiagnose(node2, constants.DIAGNOSE_OK)
    time.sleep(3)
    assert [inc["id"] for inc in _Maintd(vc, "/1/status")] == \
        [incident["id"]]
    vc.Run("gnt-node", "remove-tags", NODE2, incident["tag"])
    _Wait(lambda: _Maintd(vc, "/1/status") == [], 60, "the incident to go")
    _Wait(lambda: _NodeInfo(vc, NODE2)[1] == "N", 60, "the node online")


def test_evacuate_failover_does_not_migrate(vc):
    node3 = vc.nodes[NODE3]
    vc.Run("gnt-instance", "add", "-t", "diskless", "-n", NODE3,
           "--no-install", "--ignore-ipolicy", "-B", "memory=64",
           *CHECKS, "mf-a")
    _WriteDiagnose(node3, constants.DIAGNOSE_EVACUATE_FAILOVER)
    (incident, ) = _Wait(
        lambda: [inc for inc in _Maintd(vc, "/1/status")
                 if inc["repair-status"] == "completed"], 120,
        "the evacuation to complete")
    assert incident["original"]["status"] == "evacuate-failover"
    assert Field(vc, "mf-a", "pnode") != NODE3
    assert Field(vc, "mf-a", "status") == "running"
    assert not os.path.exists(FakeState(node3, "mf-a"))
    ops = _JobOps(vc, incident["jobs"])
    assert "OP_INSTANCE_FAILOVER" in ops, ops
    assert "OP_INSTANCE_MIGRATE" not in ops, ops
    assert _NodeInfo(vc, NODE3)[1] == "Y"
    _Acknowledge(vc, node3, incident)


def test_auto_balance(vc):
    """A skewed cluster is balanced by maintd once auto-balancing is on,
    with the rebalance planner's moves and maintd's reason."""
    names = ["mb%d" % idx for idx in range(6)]
    for name in names:
        vc.Run("gnt-instance", "add", "-t", "diskless", "-n", NODE1,
               "--no-install", "-B", "memory=512", *CHECKS, name)
    last_job = max(job_id for (job_id, ) in
                   vc.Luxi().QueryJobs(None, ["id"]))
    vc.Run("gnt-cluster", "modify", "--auto-balance-cluster", "yes",
           "--auto-balance-threshold", "0")
    try:
        def _Moved():
            return [name for name in names
                    if Field(vc, name, "pnode") != NODE1]
        _Wait(lambda: len(_Moved()) >= 2, 120, "the balancing moves")
        jobs = [ops for job_id, ops in vc.Luxi().QueryJobs(
                    None, ["id", "ops"])
                if job_id > last_job and
                any(entry[0] == constants.OPCODE_REASON_SRC_MAINTD
                    for op in ops for entry in op["reason"])]
        assert jobs, "no balancing job of maintd"
        assert all(op["OP_ID"] in ("OP_INSTANCE_MIGRATE",
                                   "OP_INSTANCE_FAILOVER")
                   for ops in jobs for op in ops), jobs
    finally:
        vc.Run("gnt-cluster", "modify", "--auto-balance-cluster", "no",
               "--auto-balance-threshold",
               str(constants.MAINTD_DEFAULT_BALANCE_THRESHOLD))
        _Wait(lambda: _Maintd(vc, "/1/jobs") == [], 120, "the round's end")
        RemoveInstances(vc, *names)


class _ForgedMond(http.server.BaseHTTPRequestHandler):
    """A mond that signs its diagnose report with the wrong key."""

    def do_GET(self):  # pylint: disable=invalid-name
        rep = report.BuildReport(
            "diagnose", report.CATEGORY_NODE, report.KIND_STATUS,
            {"status": "evacuate", "command": "", "details": "forged"})
        body = serializer.DumpJsonBytes(report.SignReport(rep, b"wrongkey"))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


def test_forged_report_is_ignored(vc):
    node3 = vc.nodes[NODE3]
    node3.Run("daemon-util", "stop", "ganeti-mond")
    forged = http.server.ThreadingHTTPServer(
        (node3.node_ip, constants.DEFAULT_MOND_PORT), _ForgedMond)
    thread = threading.Thread(target=forged.serve_forever, daemon=True)
    thread.start()
    try:
        _Wait(lambda: "Ignoring the diagnose report at http://%s:" %
              node3.node_ip in _MaintdLog(vc), 30, "the forged report")
        time.sleep(2)
        assert all(inc["original"]["details"] != "forged"
                   for inc in _Maintd(vc, "/1/status"))
        assert _NodeInfo(vc, NODE3)[1] == "N"
    finally:
        forged.shutdown()
        forged.server_close()
        node3.Run("daemon-util", "start", "ganeti-mond")


def test_not_master_exits_11(vc):
    result = vc.nodes[NODE2].Run("ganeti-maintd", "-f", check=False)
    assert result.returncode == constants.EXIT_NOTMASTER, result.stderr
    assert "not the master" in result.stderr


def test_state_survives_master_failover(vc):
    """The maintd of a new master carries on with the same incidents (the
    state is in the replicated configuration, not in a file)."""
    node2 = vc.nodes[NODE2]
    _WriteDiagnose(node2, constants.DIAGNOSE_EVACUATE)
    (incident, ) = _Wait(
        lambda: [inc for inc in _Maintd(vc, "/1/status")
                 if inc["repair-status"] == "completed"], 120,
        "the evacuation to complete")
    vc.Run("daemon-util", "stop", "ganeti-maintd")
    _WriteDiagnose(node2, constants.DIAGNOSE_OK)
    vc.Run("gnt-node", "modify", "--offline=no", NODE2)
    node3 = vc.nodes[NODE3]
    node3.Run("gnt-cluster", "master-failover")
    node3.Run("daemon-util", "start", "ganeti-maintd")
    assert [(inc["id"], inc["repair-status"]) for inc in
            _Maintd(vc, "/1/status")] == [(incident["id"], "completed")]
    assert "Loaded 1 incidents from the configuration" in \
        _MaintdLog(node3)
    # The new maintd honours the old incident's acknowledgement
    node3.Run("gnt-node", "remove-tags", NODE2, incident["tag"])
    _Wait(lambda: _Maintd(vc, "/1/status") == [], 60, "the incident to go")
