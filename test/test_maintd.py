"""ganeti-maintd on a virtual cluster: real daemons, real HTTP, real jobs.

A node whose self-diagnose command reports ``evacuate`` has its (fake)
instances moved by the cluster's allocator, is offlined and tagged
``maintd:repairready:<id>``; the incident is forgotten and the node
brought back once the tag is removed and the node reports Ok. A forged
report is ignored, and maintd refuses to run on a non-master node.
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

from testutils_instance import (CHECKS, NODE2, NODE3, FakeState,
                                InstanceCluster)

pytestmark = pytest.mark.integration

_DIAG = "diag"


@pytest.fixture(scope="module")
def vc():
    """Three nodes running mond (diagnose every second) and a maintd with
    no pause between rounds."""
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
        cluster.Run("daemon-util", "start", "ganeti-maintd",
                    "--maintenance-interval=0")
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

    # Acknowledged and fixed: forgotten, the node back online
    _WriteDiagnose(node2, constants.DIAGNOSE_OK)
    time.sleep(3)
    assert [inc["id"] for inc in _Maintd(vc, "/1/status")] == \
        [incident["id"]]
    vc.Run("gnt-node", "remove-tags", NODE2, incident["tag"])
    _Wait(lambda: _Maintd(vc, "/1/status") == [], 60, "the incident to go")
    _Wait(lambda: _NodeInfo(vc, NODE2)[1] == "N", 60, "the node online")


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
