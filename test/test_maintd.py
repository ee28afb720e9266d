"""ganeti-maintd on a virtual cluster: real daemons, real HTTP, real jobs.

A node whose self-diagnose command reports ``evacuate`` has its (fake)
instances moved by the cluster's allocator, is offlined and tagged
``maintd:repairready:<id>``; the incident is forgotten and the node
brought back once the tag is removed and the node reports Ok.
``evacuate-failover`` moves the instances without migrating them.
``live-repair`` runs the node's white-listed repair command with the
report on its standard input (a command that is not white-listed fails
the incident). A job filter pausing maintd's reason holds its round; a
canceled incident is left alone. With auto-balancing on, maintd submits
the rebalance planner's moves. A forged report is ignored, maintd
refuses to run on a non-master node, and its state lives in the
configuration, so the maintd master-failover starts on the new master
carries on.
"""

import contextlib
import fcntl
import http.server
import json
import re
import os
import threading
import time
import urllib.request

import pytest

from ganeti import constants, pathutils, serializer
from ganeti.monitoring import report

from testutils_cluster import WaitFor
from testutils_instance import (CHECKS, NODE1, NODE2, NODE3, FakeState,
                                Field, InstanceCluster, RapiClient,
                                RemoveInstances)

pytestmark = pytest.mark.integration

_DIAG = "diag"


@pytest.fixture(scope="module")
def vc():
    """Three nodes running mond (diagnose every second) and a maintd with
    no pause between rounds (the cluster's maintenance interval)."""
    with InstanceCluster("--enabled-disk-templates=diskless",
                         file_paths=(), rapi_users=True) as cluster:
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


def _WriteCommand(directory: str, name: str, script: str) -> None:
    """A white-listed command: root's, executable, writable by root only."""
    os.makedirs(directory, mode=0o755, exist_ok=True)
    path = os.path.join(directory, name)
    with open(path + ".tmp", "w", encoding="utf-8") as fobj:
        fobj.write("#!/bin/sh\n" + script)
    os.chmod(path + ".tmp", 0o755)
    os.rename(path + ".tmp", path)


def _WriteDiagnose(node, status: str, command: str = "") -> None:
    """The node's white-listed diagnose command reports ``status`` (and
    the repair ``command``)."""
    output = json.dumps({"status": status, "command": command,
                         "details": {"disk": "sdb"}})
    _WriteCommand(node.NodePath(pathutils.NODE_DIAGNOSE_COMMANDS_DIR),
                  _DIAG, "echo '%s'\n" % output)


def _WriteRepair(node, name: str, marker: str) -> None:
    """A white-listed repair command copying its standard input to
    ``marker`` and saying what it did."""
    _WriteCommand(node.NodePath(pathutils.NODE_REPAIR_COMMANDS_DIR), name,
                  "cat > '%s'\necho 'swapped sdb'\n" % marker)


def _Maintd(cluster, path: str):
    url = "http://%s:%d%s" % (cluster.cluster_ip,
                              constants.DEFAULT_MAINTD_PORT, path)
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.headers["Content-Type"] == "application/json"
        return json.loads(answer.read())




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
    WaitFor(lambda: incident["id"] not in
          [inc["id"] for inc in _Maintd(cluster, "/1/status")], 60,
          "the incident to go")
    WaitFor(lambda: _NodeInfo(cluster, node.name)[1] == "N", 60,
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
    assert "auto balancing disk moves: True" in info
    assert "harep: False" in info
    vc.Run("gnt-cluster", "modify", "--auto-balance-cluster", "yes",
           "--auto-balance-threshold", "2.5", "--auto-balance-disk-moves",
           "no", "--maintd-harep", "yes")
    try:
        info = vc.Run("gnt-cluster", "info").stdout
        assert "auto balancing: True" in info
        assert "auto balancing threshold: 2.5" in info
        assert "auto balancing disk moves: False" in info
        assert "harep: True" in info
        maint = _ConfigMaintenance(vc)
        assert (maint["roundDelay"], maint["balance"],
                maint["balanceThreshold"], maint["balanceDiskMoves"],
                maint["harep"]) == (0, True, 2.5, False, True)
    finally:
        vc.Run("gnt-cluster", "modify", "--auto-balance-cluster", "no",
               "--auto-balance-threshold",
               str(constants.MAINTD_DEFAULT_BALANCE_THRESHOLD),
               "--auto-balance-disk-moves", "yes", "--maintd-harep", "no")
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
    (incident, ) = WaitFor(
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
        stored = WaitFor(lambda node=node: _ConfigMaintenance(node)[
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
    WaitFor(lambda: _Maintd(vc, "/1/status") == [], 60, "the incident to go")
    WaitFor(lambda: _NodeInfo(vc, NODE2)[1] == "N", 60, "the node online")


def test_evacuate_failover_does_not_migrate(vc):
    node3 = vc.nodes[NODE3]
    vc.Run("gnt-instance", "add", "-t", "diskless", "-n", NODE3,
           "--no-install", "--ignore-ipolicy", "-B", "memory=64",
           *CHECKS, "mf-a")
    _WriteDiagnose(node3, constants.DIAGNOSE_EVACUATE_FAILOVER)
    (incident, ) = WaitFor(
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
        WaitFor(lambda: len(_Moved()) >= 2, 120, "the balancing moves")
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
        WaitFor(lambda: _Maintd(vc, "/1/jobs") == [], 120, "the round's end")
        RemoveInstances(vc, *names)


class _FakeMond(http.server.BaseHTTPRequestHandler):
    """A node's mond replaced by a test: answers what ``Report`` returns
    (404 for None)."""

    def Report(self) -> object:
        raise NotImplementedError

    def do_GET(self):  # pylint: disable=invalid-name
        answer = self.Report()
        if answer is None:
            self.send_error(404)
            return
        body = serializer.DumpJsonBytes(answer)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@contextlib.contextmanager
def _FakeMondOn(node, handler: type, **attributes):
    """Stop the node's mond and serve ``handler`` on its port instead
    (``attributes`` set on the server); the real mond again afterwards."""
    node.Run("daemon-util", "stop", "ganeti-mond")
    server = http.server.ThreadingHTTPServer(
        (node.node_ip, constants.DEFAULT_MOND_PORT), handler)
    for name, value in attributes.items():
        setattr(server, name, value)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        node.Run("daemon-util", "start", "ganeti-mond")


class _LoadMond(_FakeMond):
    """A mond whose only report is a CPU load (the server's ``cpu``)."""

    def Report(self) -> object:
        if self.path != "/1/report/all":
            return None
        cpu = self.server.cpu  # type: ignore[attr-defined]
        return [report.BuildReport(
            constants.DATA_COLLECTOR_CPU_LOAD, None, report.KIND_PERFORMANCE,
            {"cpu_number": 1, "cpus": [cpu], "cpu_total": cpu})]


def test_auto_balance_dynamic_load(vc):
    """With --auto-balance-dynamic-load maintd balances the CPU load the
    nodes' monds report: at a threshold just above the static score
    there is nothing to do, but the first node is busy, so an instance
    moves off it. MonD's data replaces the CPU metric only; the other
    three still count instances per node (hbal's default), so the fake
    load (eight CPUs' worth) outweighs the instance-count spread."""
    names = ["dl1a", "dl1b", "dl2", "dl3"]
    for name, node in zip(names, (NODE1, NODE1, NODE2, NODE3)):
        vc.Run("gnt-instance", "add", "-t", "diskless", "-n", node,
               "--no-install", "-B", "memory=256", *CHECKS, name)
    assert "auto balancing dynamic load: False" in \
        vc.Run("gnt-cluster", "info").stdout
    static = re.search(r"Initial score: ([0-9.]+)",
                       vc.Run("gnt-cluster", "rebalance").stdout)
    assert static
    threshold = "%.6f" % (float(static.group(1)) + 0.05)
    on_node1 = [name for name, pnode in (line.split("|") for line in vc.Run(
        "gnt-instance", "list", "--no-headers", "--separator=|", "-o",
        "name,pnode").stdout.split()) if pnode == NODE1]
    try:
        with contextlib.ExitStack() as stack:
            for node in vc.nodes.values():
                stack.enter_context(_FakeMondOn(
                    node, _LoadMond, cpu=8.0 if node.name == NODE1 else 0.0))
            _BalanceDynamicLoad(vc, threshold, on_node1)
    finally:
        WaitFor(lambda: _Maintd(vc, "/1/jobs") == [], 120, "the round's end")
        RemoveInstances(vc, *names)


def _BalanceDynamicLoad(vc, threshold: str, on_node1: list[str]) -> None:
    """The busy first node (fake monds) is balanced by hbal --mond and by
    maintd with the dynamic-load switch, and not without the load."""
    try:
        out = vc.Run("gnt-cluster", "rebalance", "-e", threshold).stdout
        assert "already well balanced" in out, out
        out = vc.Run("gnt-cluster", "rebalance", "-e", threshold, "--mond",
                     "yes").stdout
        assert re.search(r"  1\. (%s) +%s +=> " % (
            "|".join(on_node1), re.escape(NODE1)), out), out
        vc.Run("gnt-cluster", "modify", "--auto-balance-cluster", "yes",
               "--auto-balance-threshold", threshold,
               "--auto-balance-dynamic-load", "yes")
        assert "auto balancing dynamic load: True" in \
            vc.Run("gnt-cluster", "info").stdout
        WaitFor(lambda: any(Field(vc, name, "pnode") != NODE1
                            for name in on_node1), 120,
                "a move off the busy node")
        assert "Balancing with the nodes' dynamic load" in _MaintdLog(vc)
    finally:
        vc.Run("gnt-cluster", "modify", "--auto-balance-cluster", "no",
               "--auto-balance-threshold",
               str(constants.MAINTD_DEFAULT_BALANCE_THRESHOLD),
               "--auto-balance-dynamic-load", "no")


class _ForgedMond(_FakeMond):
    """A mond that signs its diagnose report with the wrong key."""

    def Report(self) -> object:
        rep = report.BuildReport(
            "diagnose", report.CATEGORY_NODE, report.KIND_STATUS,
            {"status": "evacuate", "command": "", "details": "forged"})
        return report.SignReport(rep, b"wrongkey")


def test_forged_report_is_ignored(vc):
    node3 = vc.nodes[NODE3]
    with _FakeMondOn(node3, _ForgedMond):
        WaitFor(lambda: "Ignoring the diagnose report at http://%s:" %
                node3.node_ip in _MaintdLog(vc), 30, "the forged report")
        time.sleep(2)
        assert all(inc["original"]["details"] != "forged"
                   for inc in _Maintd(vc, "/1/status"))
        assert _NodeInfo(vc, NODE3)[1] == "N"


def test_not_master_exits_11(vc):
    result = vc.nodes[NODE2].Run("ganeti-maintd", "-f", check=False)
    assert result.returncode == constants.EXIT_NOTMASTER, result.stderr
    assert "not the master" in result.stderr


def _LastPoll(cluster) -> float:
    """When maintd last polled the nodes, from its status page."""
    url = "http://%s:%d/status.html" % (cluster.cluster_ip,
                                        constants.DEFAULT_MAINTD_PORT)
    with urllib.request.urlopen(url, timeout=10) as answer:
        page = answer.read().decode("utf-8")
    found = re.search(r'<dd id="last-poll">([^<]*)</dd>', page)
    assert found, page
    try:
        return time.mktime(time.strptime(found.group(1),
                                         "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        return 0.0


def test_keeps_polling_after_the_master_daemon_restarts(vc):
    """Polls while the master daemon is down fail with a log line, not a
    traceback, and polling goes on once it is back."""
    vc.Run("daemon-util", "stop", "ganeti-masterd")
    try:
        WaitFor(lambda: "Maintenance step failed" in _MaintdLog(vc), 30,
              "a failed poll")
    finally:
        vc.Run("daemon-util", "start", "ganeti-masterd")
    restarted = time.time()
    WaitFor(lambda: _LastPoll(vc) > restarted, 30, "a poll after the restart")
    assert "Traceback" not in _MaintdLog(vc)


def _Incident(cluster, *statuses: str, node_uuid: str | None = None
              ) -> dict:
    """The one incident (of a node) in one of ``statuses``, once there is
    one."""
    (incident, ) = WaitFor(
        lambda: [inc for inc in _Maintd(cluster, "/1/status")
                 if inc["repair-status"] in statuses and
                 node_uuid in (None, inc["node"])], 60,
        "a %s incident" % "/".join(statuses))
    return incident


def _RepairOutput(cluster, incident_id: str) -> str:
    """The outcome of a live repair, as maintd stored it."""
    return WaitFor(lambda: [inc["repair-output"] for inc in
                          _ConfigMaintenance(cluster)["incidents"]
                          if inc["id"] == incident_id and
                          "repair-output" in inc], 30,
                 "the repair's outcome")[0]


def _PauseMaintd(cluster) -> str:
    """A job filter pausing maintd's jobs; its UUID."""
    predicates = [["reason", ["==", "source",
                              constants.OPCODE_REASON_SRC_MAINTD]]]
    return cluster.Run("gnt-filter", "add", "--predicates",
                       json.dumps(predicates), "--action",
                       "PAUSE").stdout.strip()


def _JobStatus(cluster, job_id: int) -> str:
    ((status, ), ) = cluster.Luxi().QueryJobs([job_id], ["status"])
    return status


def test_live_repair_runs_the_repair_command(vc, tmp_path):
    """The report's white-listed command runs on the node with the report
    on its standard input; the node stays online and is tagged
    repairready; the command's output is kept in the incident."""
    node3 = vc.nodes[NODE3]
    marker = str(tmp_path / "repair-input")
    _WriteRepair(node3, "fixdisk", marker)
    _WriteDiagnose(node3, constants.DIAGNOSE_LIVE_REPAIR, "fixdisk")
    incident = _Incident(vc, "completed")
    assert incident["original"] == {"status": "live-repair",
                                    "command": "fixdisk",
                                    "details": {"disk": "sdb"}}
    with open(marker, encoding="utf-8") as fobj:
        assert json.load(fobj) == incident["original"]
    assert _RepairOutput(vc, incident["id"]).strip() == "swapped sdb"
    assert _JobOps(vc, incident["jobs"]) == ["OP_REPAIR_COMMAND",
                                             "OP_TAGS_SET"]
    job = vc.Run("gnt-job", "info", str(incident["jobs"][0])).stdout
    assert "gnt:daemon:maintd" in job and incident["id"] in job, job
    _, offline, tags = _NodeInfo(vc, NODE3)
    assert offline == "N"
    assert incident["tag"] == "maintd:repairready:" + incident["id"]
    assert incident["tag"] in tags
    _Acknowledge(vc, node3, incident)


def test_live_repair_not_white_listed(vc, tmp_path):
    """A repair command that is not white-listed (writable by others) is
    never run: the incident fails and the node is tagged repairfailed;
    removing that tag forgets the incident."""
    node3 = vc.nodes[NODE3]
    marker = str(tmp_path / "repair-input")
    _WriteRepair(node3, "badfix", marker)
    os.chmod(os.path.join(node3.NodePath(
        pathutils.NODE_REPAIR_COMMANDS_DIR), "badfix"), 0o777)
    _WriteDiagnose(node3, constants.DIAGNOSE_LIVE_REPAIR, "badfix")
    incident = _Incident(vc, "failed")
    assert incident["tag"] == "maintd:repairfailed:" + incident["id"]
    # The refusal came only after the back-off delay
    ((start, end), ) = vc.Luxi().QueryJobs(incident["jobs"][:1],
                                           ["start_ts", "end_ts"])
    assert end[0] + end[1] / 1e6 - start[0] - start[1] / 1e6 >= \
        constants.REPAIR_COMMAND_FAIL_DELAY
    WaitFor(lambda: incident["tag"] in _NodeInfo(vc, NODE3)[2], 30,
          "the repairfailed tag")
    assert "must be writable by its owner only" in \
        _RepairOutput(vc, incident["id"])
    assert not os.path.exists(marker)
    _WriteDiagnose(node3, constants.DIAGNOSE_OK)
    vc.Run("gnt-node", "remove-tags", NODE3, incident["tag"])
    WaitFor(lambda: _Maintd(vc, "/1/status") == [], 60, "the incident to go")


def test_one_repair_command_at_a_time(vc, tmp_path):
    """A repair command waits while another one runs on its node (the
    node's repair lock, held here as a running command would)."""
    node3 = vc.nodes[NODE3]
    marker = str(tmp_path / "repair-input")
    _WriteRepair(node3, "fixdisk", marker)
    lock_path = node3.NodePath(pathutils.REPAIR_COMMAND_LOCK_FILE)
    os.makedirs(os.path.dirname(lock_path), exist_ok=True)
    with open(lock_path, "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _WriteDiagnose(node3, constants.DIAGNOSE_LIVE_REPAIR, "fixdisk")
        incident = _Incident(vc, "pending")
        WaitFor(lambda: _JobStatus(vc, incident["jobs"][0]) == "running",
                30, "the repair job to run")
        time.sleep(2)
        assert not os.path.exists(marker)
        assert _JobStatus(vc, incident["jobs"][0]) == "running"
    incident = _Incident(vc, "completed")
    assert os.path.exists(marker)
    _Acknowledge(vc, node3, incident)


def test_job_filter_holds_the_round(vc, tmp_path):
    """A filter pausing the jobs with maintd's reason holds its round
    (design-optables); the round goes on once the filter is gone."""
    node3 = vc.nodes[NODE3]
    marker = str(tmp_path / "repair-input")
    _WriteRepair(node3, "fixdisk", marker)
    rule = _PauseMaintd(vc)
    try:
        _WriteDiagnose(node3, constants.DIAGNOSE_LIVE_REPAIR, "fixdisk")
        incident = _Incident(vc, "pending")
        time.sleep(3)
        assert _JobStatus(vc, incident["jobs"][0]) == "queued"
        assert _Maintd(vc, "/1/jobs") == incident["jobs"]
        assert _Maintd(vc, "/1/status")[0]["repair-status"] == "pending"
        assert not os.path.exists(marker)
    finally:
        vc.Run("gnt-filter", "delete", rule)
    incident = _Incident(vc, "completed")
    assert os.path.exists(marker)
    _Acknowledge(vc, node3, incident)


def test_cancel(vc, tmp_path):
    """Canceled incidents (gnt-cluster repair-cancel, and the RAPI route)
    get no further action: their held jobs are canceled, nothing runs,
    no tag; they are forgotten once no longer reported."""
    markers = {}
    rule = _PauseMaintd(vc)
    try:
        for name in (NODE2, NODE3):
            markers[name] = str(tmp_path / ("repair-input-" + name))
            _WriteRepair(vc.nodes[name], "fixdisk", markers[name])
            _WriteDiagnose(vc.nodes[name], constants.DIAGNOSE_LIVE_REPAIR,
                           "fixdisk")
        # The second one may come after the round started: noted then
        incidents = {name: _Incident(vc, "pending", "noted",
                                     node_uuid=_NodeInfo(vc, name)[0])
                     for name in (NODE2, NODE3)}
        vc.Run("gnt-cluster", "repair-cancel", incidents[NODE2]["id"])
        client = RapiClient(vc)
        job_id = client.CancelRepairIncident(incidents[NODE3]["id"])
        assert client.WaitForJobCompletion(job_id, period=0.5, retries=120)
        for incident in incidents.values():
            _Incident(vc, "canceled", node_uuid=incident["node"])
            for job_id in incident["jobs"]:
                WaitFor(lambda job_id=job_id: _JobStatus(vc, job_id) ==
                      "canceled", 30, "the held job canceled")
    finally:
        vc.Run("gnt-filter", "delete", rule)
    time.sleep(3)
    for name, incident in incidents.items():
        assert not os.path.exists(markers[name])
        assert incident["tag"] not in _NodeInfo(vc, name)[2]
    assert sorted(inc["repair-status"] for inc in
                  _Maintd(vc, "/1/status")) == ["canceled", "canceled"]
    result = vc.Run("gnt-cluster", "repair-cancel", "no-such-incident",
                    check=False)
    assert result.returncode != 0
    assert "Unknown incident no-such-incident" in result.stderr
    for name in (NODE2, NODE3):
        _WriteDiagnose(vc.nodes[name], constants.DIAGNOSE_OK)
    WaitFor(lambda: _Maintd(vc, "/1/status") == [], 60, "the incidents to go")


def _FinishedJob(cluster, duration: float = 0.01, fail: bool = False) -> int:
    """The id of a finished job (a test delay; failing: on a node that
    does not exist)."""
    op = {"OP_ID": "OP_TEST_DELAY", "duration": duration}
    if fail:
        op["on_nodes"] = ["no-such-node"]
    job_id = int(cluster.Luxi().SubmitJob([op]))
    WaitFor(lambda: _JobStatus(cluster, job_id) in ("success", "error"), 30,
            "the job to finish")
    return job_id


def _Instances(cluster) -> list[str]:
    return cluster.Run("gnt-instance", "list", "--no-headers", "-o",
                       "name").stdout.split()


def _InstanceTags(cluster, name: str) -> list[str]:
    return cluster.Run("gnt-instance", "list-tags",
                       name).stdout.split()


def test_harep_finishes_pending_repairs(vc):
    """harep (the command, then maintd with --maintd-harep) follows the
    pending tags of Ganeti's auto-repair: a repair whose jobs all
    succeeded gets a result:success tag, one with a failed job a
    result:failure tag, the pending tag removed."""
    vc.Run("gnt-instance", "add", "-t", "diskless", "-n", NODE2,
           "--no-install", "--ignore-ipolicy", "-B", "memory=64",
           *CHECKS, "hr-a", "--tags",
           "ganeti:watcher:autorepair:fix-storage")
    vc.Run("gnt-instance", "add", "-t", "diskless", "-n", NODE2,
           "--no-install", "--ignore-ipolicy", "-B", "memory=64",
           *CHECKS, "hr-b")
    try:
        good = _FinishedJob(vc)
        pending = ("ganeti:watcher:autorepair:pending:fix-storage:"
                   "1f0e-aa:1700000000:%d" % good)
        vc.Run("gnt-instance", "add-tags", "hr-a", pending)
        out = vc.Run("harep").stdout
        assert 'Moving hr-a from "Pending repair" to "Healthy"' in out, out
        assert out.endswith("Instance status count\n---------------------\n"
                            "Healthy: %d\n" % len(_Instances(vc))), out
        (result, ) = [tag for tag in _InstanceTags(vc, "hr-a")
                      if ":result:" in tag]
        assert result.startswith("ganeti:watcher:autorepair:result:"
                                 "fix-storage:1f0e-aa:")
        assert result.endswith(":success:%d" % good)
        assert pending not in _InstanceTags(vc, "hr-a")
        # Nothing more to do: a second run changes nothing
        out = vc.Run("harep").stdout
        assert "Moving" not in out and "Executing" not in out, out

        # maintd does harep's duties once enabled
        bad = _FinishedJob(vc, fail=True)
        pending = ("ganeti:watcher:autorepair:pending:failover:"
                   "2b1c-bb:1700000000:%d+%d" % (good, bad))
        vc.Run("gnt-instance", "add-tags", "hr-b", pending)
        vc.Run("gnt-cluster", "modify", "--maintd-harep", "yes")
        try:
            WaitFor(lambda: "ganeti:watcher:autorepair:result:failover:"
                    "2b1c-bb:" in ",".join(_InstanceTags(vc, "hr-b")), 60,
                    "maintd's result tag")
        finally:
            vc.Run("gnt-cluster", "modify", "--maintd-harep", "no")
        (result, ) = [tag for tag in _InstanceTags(vc, "hr-b")
                      if tag.startswith("ganeti:watcher:autorepair:")]
        assert result.endswith(":failure:%d+%d" % (good, bad)), result
        WaitFor(lambda: _Maintd(vc, "/1/jobs") == [], 60, "the round's end")
        jobs = [ops for job_id, ops in vc.Luxi().QueryJobs(
                    None, ["id", "ops"]) if job_id > bad]
        assert any(entry[:2] == [constants.OPCODE_REASON_SRC_MAINTD,
                                 "harep"]
                   for ops in jobs for op in ops for entry in op["reason"])
        # A failed repair sticks: harep leaves the instance alone
        out = vc.Run("harep").stdout
        assert "Failed repair: 1" in out, out
    finally:
        RemoveInstances(vc, "hr-a", "hr-b")


def test_round_order_evacuation_then_harep(vc, tmp_path):
    """One round holds the evacuation of a node reporting ``evacuate``
    and harep's work (design-maintd's order: the evacuation first)."""
    node2, node3 = vc.nodes[NODE2], vc.nodes[NODE3]
    vc.Run("gnt-instance", "add", "-t", "diskless", "-n", NODE1,
           "--no-install", "--ignore-ipolicy", "-B", "memory=64",
           *CHECKS, "ro-a")
    marker = str(tmp_path / "repair-input")
    _WriteRepair(node3, "fixdisk", marker)
    rule = _PauseMaintd(vc)
    try:
        # A first round, held by the filter, while the work piles up
        _WriteDiagnose(node3, constants.DIAGNOSE_LIVE_REPAIR, "fixdisk")
        held = _Incident(vc, "pending")
        vc.Run("gnt-instance", "add-tags", "ro-a",
               "ganeti:watcher:autorepair:pending:migrate:3c2d-cc:"
               "1700000000:%d" % _FinishedJob(vc))
        vc.Run("gnt-cluster", "modify", "--maintd-harep", "yes")
        _WriteDiagnose(node2, constants.DIAGNOSE_EVACUATE)
        uuid2 = _NodeInfo(vc, NODE2)[0]
        evacuation = _Incident(vc, "noted", node_uuid=uuid2)
        time.sleep(2)
        assert _Maintd(vc, "/1/jobs") == held["jobs"]
    finally:
        vc.Run("gnt-filter", "delete", rule)
    try:
        WaitFor(lambda: any(evacuation["id"] in past["incidents"]
                            for past in _ConfigMaintenance(vc)[
                                "lastRounds"]), 120, "the second round")
        (second, ) = [past for past in _ConfigMaintenance(vc)["lastRounds"]
                      if evacuation["id"] in past["incidents"]]
        assert second["incidents"] == [evacuation["id"]]
        assert second["harep"], second
        evacuation = _Incident(vc, "completed", node_uuid=uuid2)
        assert min(evacuation["jobs"]) < min(second["harep"])
        assert any(tag.startswith("ganeti:watcher:autorepair:result:"
                                  "migrate:3c2d-cc:")
                   for tag in _InstanceTags(vc, "ro-a"))
    finally:
        vc.Run("gnt-cluster", "modify", "--maintd-harep", "no")
        RemoveInstances(vc, "ro-a")
    _Acknowledge(vc, node2, evacuation)
    _Acknowledge(vc, node3, _Incident(vc, "completed",
                                      node_uuid=held["node"]))


def test_state_survives_master_failover(vc):
    """master-failover stops maintd on the old master and starts it on
    the new one, which carries on with the same incidents (the state is
    in the replicated configuration, not in a file)."""
    node2 = vc.nodes[NODE2]
    _WriteDiagnose(node2, constants.DIAGNOSE_EVACUATE)
    (incident, ) = WaitFor(
        lambda: [inc for inc in _Maintd(vc, "/1/status")
                 if inc["repair-status"] == "completed"], 120,
        "the evacuation to complete")
    _WriteDiagnose(node2, constants.DIAGNOSE_OK)
    vc.Run("gnt-node", "modify", "--offline=no", NODE2)
    node3 = vc.nodes[NODE3]
    assert vc.IsRunning(constants.MAINTD)
    node3.Run("gnt-cluster", "master-failover")
    assert not vc.IsRunning(constants.MAINTD)
    assert node3.IsRunning(constants.MAINTD)
    WaitFor(lambda: [(inc["id"], inc["repair-status"]) for inc in
                   _Maintd(vc, "/1/status")] ==
          [(incident["id"], "completed")], 30, "the incident on node3")
    assert "Loaded 1 incidents from the configuration" in \
        _MaintdLog(node3)
    # The new maintd honours the old incident's acknowledgement
    node3.Run("gnt-node", "remove-tags", NODE2, incident["tag"])
    WaitFor(lambda: _Maintd(vc, "/1/status") == [], 60, "the incident to go")

