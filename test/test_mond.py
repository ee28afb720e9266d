"""ganeti-mond on a virtual cluster: real daemons, real HTTP.

The endpoints and report format of Ganeti's monitoring daemon, the
collectors' settings from gnt-cluster modify, and the self-diagnose
collector: its white-list, each way a diagnose command can fail, and
the signature ganeti-maintd checks.
"""

import json
import os
import time
import urllib.error
import urllib.request

import pytest

from ganeti import constants, errors, pathutils, serializer
from ganeti.monitoring import report

pytestmark = pytest.mark.integration

NODE2 = "node2.example.test"
DIAGNOSE_PATH = "/1/report/node/diagnose"
_REPORT_KEYS = {"name", "version", "format_version", "timestamp", "category",
                "kind", "data"}


def _Get(node, path: str) -> tuple[int, str, bytes]:
    """(status, content type, body) of a GET to the node's mond."""
    url = "http://%s:%d%s" % (node.node_ip, constants.DEFAULT_MOND_PORT, path)
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return (answer.status, answer.headers["Content-Type"],
                    answer.read())
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


def _GetJson(node, path: str):
    status, content_type, body = _Get(node, path)
    assert status == 200, body
    assert content_type == "application/json"
    return json.loads(body)


def _WaitReport(node, path: str, predicate, timeout: float = 20):
    """The first report at ``path`` satisfying ``predicate``."""
    deadline = time.monotonic() + timeout
    while True:
        result = _GetJson(node, path)
        if predicate(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError("Last report of %s: %s" % (path, result))
        time.sleep(0.2)


def _Key(node) -> bytes:
    return report.ReadHmacKey(node.NodePath(pathutils.CONFD_HMAC_KEY))


@pytest.fixture(scope="module")
def _diagnose_filename(mond_cluster):
    """The cluster's diagnose command set to "diag" from the first test
    that writes one to the end of the module, where the built-in diagnose
    is configured again (each change is a job: set once, not per test)."""
    mond_cluster.Run("gnt-cluster", "modify",
                     "--diagnose-data-collector-filename", "diag")
    yield
    mond_cluster.Run("gnt-cluster", "modify",
                     "--diagnose-data-collector-filename", "")


@pytest.fixture
def diagnose_cmd(mond_cluster, _diagnose_filename):
    """write(script, mode) installs the master's diagnose command "diag"
    (white-listed) and returns the time it was written; removed at the
    end."""
    directory = mond_cluster.NodePath(pathutils.NODE_DIAGNOSE_COMMANDS_DIR)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    path = os.path.join(directory, "diag")

    def write(script: str, mode: int = 0o755) -> int:
        stamp = time.time_ns()
        with open(path + ".tmp", "w", encoding="utf-8") as fobj:
            fobj.write("#!/bin/sh\n" + script)
        os.chmod(path + ".tmp", mode)
        os.rename(path + ".tmp", path)
        return stamp

    yield write
    if os.path.exists(path):
        os.unlink(path)


def _DiagnoseAfter(cluster, stamp: int, predicate=lambda data: True):
    """The diagnose data of the first collection after ``stamp`` that
    satisfies ``predicate``, checked to be signed with the cluster key."""
    result = _WaitReport(cluster, DIAGNOSE_PATH,
                         lambda rep: rep["timestamp"] > stamp and
                         predicate(rep["data"]))
    assert report.VerifyReport(result, _Key(cluster))["data"] == \
        result["data"]
    return result["data"]


# The endpoints ---------------------------------------------------------------

def test_versions_and_null(mond_cluster):
    assert _GetJson(mond_cluster, "/") == [1]
    assert _GetJson(mond_cluster, "/1") is None


def test_list_collectors(mond_cluster):
    listed = _GetJson(mond_cluster, "/1/list/collectors")
    assert listed == [
        ["cpu-avg-load", "default", report.KIND_PERFORMANCE],
        ["diagnose", "node", report.KIND_STATUS],
        ["diskstats", "storage", report.KIND_PERFORMANCE],
        ["drbd", "storage", report.KIND_STATUS],
        # kvm is not enabled on this cluster: no inst-status-kvm
        ["inst-status-fake", "instance", report.KIND_STATUS],
        ["node-load", "node", report.KIND_PERFORMANCE],
    ]


def test_report_all_has_every_active_collector(mond_cluster):
    reports = _GetJson(mond_cluster, "/1/report/all")
    assert [rep["name"] for rep in reports] == [
        "cpu-avg-load", "diagnose", "diskstats", "drbd", "inst-status-fake",
        "node-load"]
    now = time.time_ns()
    for rep in reports:
        assert _REPORT_KEYS <= set(rep), rep
        assert rep["version"] == "B"
        assert rep["format_version"] == 1
        assert now - 120 * 10**9 < rep["timestamp"] <= now
    by_name = {rep["name"]: rep for rep in reports}
    cpu = by_name["cpu-avg-load"]
    assert cpu["category"] is None
    assert cpu["data"]["cpu_number"] == len(cpu["data"]["cpus"]) >= 1
    assert cpu["data"]["cpu_total"] >= 0
    disks = by_name["diskstats"]["data"]
    assert disks and {"major", "minor", "name", "readsNum",
                      "wIOmillis"} <= set(disks[0])
    load = by_name["node-load"]["data"]
    assert load["memory_total"] > 0 and len(load["load_average"]) == 3


@pytest.mark.parametrize("path, name", [
    ("/1/report/default/cpu-avg-load", "cpu-avg-load"),
    # Ganeti's man page: a collector without category under its own name
    ("/1/report/cpu-avg-load/cpu-avg-load", "cpu-avg-load"),
    ("/1/report/storage/diskstats", "diskstats"),
    ("/1/report/instance/inst-status-fake", "inst-status-fake"),
    ("/1/report/node/node-load", "node-load"),
    ("/1/report/node/diagnose?verbose=1", "diagnose"),
])
def test_one_report(mond_cluster, path, name):
    assert _GetJson(mond_cluster, path)["name"] == name


@pytest.mark.parametrize("path", [
    "/2", "/1/report", "/1/report/storage/cpu-avg-load",
    "/1/report/instance/inst-status-kvm", "/1/report/default/nothing",
    "/1/list", "/1/report/all/extra", "/index.html",
])
def test_anything_else_is_404_text(mond_cluster, path):
    status, content_type, body = _Get(mond_cluster, path)
    assert status == 404
    assert content_type.startswith("text/plain")
    assert body


def test_only_get(mond_cluster):
    request = urllib.request.Request(
        "http://%s:%d/1/report/all" % (mond_cluster.node_ip,
                                       constants.DEFAULT_MOND_PORT),
        data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=10)
    assert err.value.code == 405


def test_instance_status_of_the_hypervisor(mond_cluster):
    """A fake instance the hypervisor runs shows up (and goes) in the
    next collection."""
    node2 = mond_cluster.nodes[NODE2]
    state = node2.NodePath(os.path.join(pathutils.FAKE_HV_DIR, "inst1"))
    os.makedirs(os.path.dirname(state), exist_ok=True)
    with open(state, "w", encoding="ascii") as fobj:
        fobj.write("0\n128\n2\n")
    path = "/1/report/instance/inst-status-fake"
    rep = _WaitReport(node2, path, lambda rep: rep["data"]["instances"])
    assert rep["kind"] == report.KIND_STATUS
    assert rep["data"]["status"] == {"code": 0, "message": ""}
    (entry, ) = rep["data"]["instances"]
    assert entry["name"] == "inst1"
    assert (entry["memory"], entry["vcpus"]) == (128, 2)
    assert entry["actualState"] == "running"
    assert entry["status"]["code"] == report.STATUS_OK
    os.unlink(state)
    _WaitReport(node2, path, lambda rep: not rep["data"]["instances"])


# Settings from gnt-cluster modify -------------------------------------------

def test_disabled_collector_is_gone_until_enabled(mond_cluster):
    mond_cluster.Run("gnt-cluster", "modify", "--enabled-data-collectors",
                     "diskstats=false")
    try:
        info = mond_cluster.Run("gnt-cluster", "info").stdout
        assert "diskstats:\n    active: False" in info
        names = [entry[0] for entry in
                 _GetJson(mond_cluster, "/1/list/collectors")]
        assert "diskstats" not in names
        assert _Get(mond_cluster, "/1/report/storage/diskstats")[0] == 404
        # The other node got the setting too
        assert "diskstats" not in [
            rep["name"] for rep in
            _GetJson(mond_cluster.nodes[NODE2], "/1/report/all")]
    finally:
        mond_cluster.Run("gnt-cluster", "modify",
                         "--enabled-data-collectors", "diskstats=true")
    assert _GetJson(mond_cluster, "/1/report/storage/diskstats")["data"]


def test_interval_is_used(mond_cluster):
    info = mond_cluster.Run("gnt-cluster", "info").stdout
    assert "diagnose:\n    active: True\n    interval: 1.000s" in info
    first = _GetJson(mond_cluster, DIAGNOSE_PATH)["timestamp"]
    later = _WaitReport(mond_cluster, DIAGNOSE_PATH,
                        lambda rep: rep["timestamp"] > first)["timestamp"]
    # Collected every second, not every five
    assert later - first < 3 * 10**9


def test_new_interval_takes_effect_at_once(mond_cluster):
    path = "/1/report/storage/diskstats"
    stamp = time.time_ns()
    mond_cluster.Run("gnt-cluster", "modify", "--data-collector-interval",
                     "diskstats=3600")
    try:
        # The collections that follow the change, then none for an hour
        _WaitReport(mond_cluster, path, lambda rep: rep["timestamp"] > stamp)
        time.sleep(1)
        first = _GetJson(mond_cluster, path)["timestamp"]
        time.sleep(1.5)
        assert _GetJson(mond_cluster, path)["timestamp"] == first
        mond_cluster.Run("gnt-cluster", "modify",
                         "--data-collector-interval", "diskstats=0.5")
        _WaitReport(mond_cluster, path,
                    lambda rep: rep["timestamp"] > first, timeout=5)
    finally:
        mond_cluster.Run("gnt-cluster", "modify",
                         "--data-collector-interval", "diskstats=5")


@pytest.mark.parametrize("args, message", [
    (("--enabled-data-collectors", "nosuch=true"),
     "Data collector names not recognized: nosuch"),
    (("--data-collector-interval", "diagnose=0"), "above zero"),
    (("--data-collector-interval", "diagnose=soon"),
     "Can't transform all values to integers"),
    (("--diagnose-data-collector-filename", "/bin/true"),
     "without a path"),
    (("--diagnose-data-collector-filename", ".."), "without a path"),
])
def test_modify_refuses(mond_cluster, args, message):
    result = mond_cluster.Run("gnt-cluster", "modify", *args, check=False)
    assert result.returncode != 0
    assert message in result.stderr + result.stdout


# The self-diagnose collector -------------------------------------------------

def test_builtin_diagnose_is_ok_and_signed(mond_cluster):
    for node in mond_cluster.nodes.values():
        rep = _GetJson(node, DIAGNOSE_PATH)
        assert rep["category"] == "node"
        assert rep["kind"] == report.KIND_STATUS
        assert rep["data"] == {"status": "Ok", "command": "",
                               "details": "No file specified for diagnose"
                               " data collector"}
        # Every node signs with the same cluster key (node2 got it when
        # it joined)
        assert report.VerifyReport(rep, _Key(mond_cluster)) == \
            {name: value for name, value in rep.items() if name != "signed"}


def test_hmac_key_made_at_init_and_given_to_joining_nodes(mond_cluster):
    keys = {_Key(node) for node in mond_cluster.nodes.values()}
    assert len(keys) == 1 and len(keys.pop()) == 40
    path = mond_cluster.NodePath(pathutils.CONFD_HMAC_KEY)
    assert os.stat(path).st_mode & 0o777 == constants.SECURE_FILE_MODE
    # The same key on every node: cluster verify compares it
    mond_cluster.Run("gnt-cluster", "verify")


def test_signature_refuses_forgeries(mond_cluster):
    rep = _GetJson(mond_cluster, DIAGNOSE_PATH)
    key = _Key(mond_cluster)
    unsigned = {name: value for name, value in rep.items()
                if name != "signed"}
    with pytest.raises(errors.SignatureError):
        report.VerifyReport(unsigned, key)
    with pytest.raises(errors.SignatureError):
        report.VerifyReport(rep, b"0" * 40)
    forged = dict(rep, signed=dict(rep["signed"], msg=rep["signed"]["msg"]
                                   .replace('"Ok"', '"evacuate"')))
    with pytest.raises(errors.SignatureError):
        report.VerifyReport(forged, key)
    resigned = dict(rep, signed=serializer.SignJson(unsigned, b"other", "s"))
    with pytest.raises(errors.SignatureError):
        report.VerifyReport(resigned, key)


@pytest.mark.parametrize("status", sorted(constants.DIAGNOSE_STATUSES))
def test_diagnose_command_output_is_the_data(mond_cluster, diagnose_cmd,
                                             status):
    printed = {"status": status, "command": "fix-disk",
               "details": {"disk": "sdb", "slot": [1, 2]}}
    stamp = diagnose_cmd("echo '%s'\n" % json.dumps(printed))
    assert _DiagnoseAfter(mond_cluster, stamp,
                          lambda data: data == printed) == printed


def test_command_and_details_are_optional(mond_cluster, diagnose_cmd):
    stamp = diagnose_cmd("echo '{\"status\": \"evacuate\"}'\n")
    assert _DiagnoseAfter(mond_cluster, stamp,
                          lambda data: "failed" not in data) == \
        {"status": "evacuate"}


@pytest.mark.parametrize("script, message", [
    ("exit 3\n", "exited with exit code 3"),
    ("kill -SEGV $$\n", "terminated by signal SIGSEGV"),
    # sleep must not hold the output pipe: mond would wait for it too
    # (utils.process.RunCmd's kill grace)
    ("sleep 30 >/dev/null 2>&1\necho '{\"status\": \"evacuate\"}'\n",
     "timed out after 1.0 seconds"),
    ("echo 'all is fine'\n", "did not print one JSON object"),
    ("echo '{\"status\": \"evacuate\"} {\"status\": \"Ok\"}'\n",
     "did not print one JSON object"),
    ("echo '[\"evacuate\"]'\n", "not a JSON object"),
    ("echo '{\"status\": \"reboot\"}'\n",
     "the unknown status 'reboot'"),
    ("echo '{\"details\": 1}'\n", "the unknown status None"),
    ("echo '{\"status\": \"evacuate\", \"urgency\": 1}'\n",
     "unknown keys: urgency"),
    ("echo '{\"status\": \"live-repair\", \"command\": 5}'\n",
     "command that is not a string"),
])
def test_diagnose_failure_is_a_failed_report(mond_cluster, diagnose_cmd,
                                             script, message):
    stamp = diagnose_cmd(script)
    data = _DiagnoseAfter(mond_cluster, stamp,
                          lambda data: message in str(data.get("details")))
    # Never a request to repair anything
    assert data["status"] == "Ok" and data["failed"] is True
    assert data["command"] == ""


def test_missing_command(mond_cluster, diagnose_cmd):
    stamp = time.time_ns()
    data = _DiagnoseAfter(mond_cluster, stamp,
                          lambda data: data.get("failed"))
    assert "The diagnose command diag is not white-listed: no such file" \
        in data["details"]
    assert data["status"] == "Ok"


@pytest.mark.parametrize("mode, message", [
    (0o775, "must be writable by its owner only"),
    (0o757, "must be writable by its owner only"),
    (0o644, "must be executable by its owner"),
])
def test_white_list_violation_never_runs_the_command(
        mond_cluster, diagnose_cmd, tmp_path, mode, message):
    marker = tmp_path / "ran"
    stamp = diagnose_cmd("touch %s\necho '{\"status\": \"evacuate\"}'\n" %
                         marker, mode=mode)
    data = _DiagnoseAfter(mond_cluster, stamp,
                          lambda data: message in str(data.get("details")))
    assert data["status"] == "Ok" and data["failed"] is True
    assert not marker.exists()


def test_white_list_directory_must_be_safe(mond_cluster, diagnose_cmd,
                                           tmp_path):
    directory = mond_cluster.NodePath(pathutils.NODE_DIAGNOSE_COMMANDS_DIR)
    marker = tmp_path / "ran"
    stamp = diagnose_cmd("touch %s\necho '{\"status\": \"evacuate\"}'\n" %
                         marker)
    os.chmod(directory, 0o777)
    try:
        data = _DiagnoseAfter(
            mond_cluster, stamp,
            lambda data: "writable by its owner only" in
            str(data.get("details")))
    finally:
        os.chmod(directory, 0o755)
    assert data["status"] == "Ok" and data["failed"] is True
    assert not marker.exists()


def test_white_list_is_per_node(mond_cluster, diagnose_cmd):
    """The command is white-listed on the master only: node2 refuses to
    run it, the master runs it."""
    node2 = mond_cluster.nodes[NODE2]
    os.makedirs(node2.NodePath(pathutils.NODE_DIAGNOSE_COMMANDS_DIR),
                mode=0o755, exist_ok=True)
    stamp = diagnose_cmd("echo '{\"status\": \"live-repair\"}'\n")
    assert _DiagnoseAfter(mond_cluster, stamp,
                          lambda data: "failed" not in data) == \
        {"status": "live-repair"}
    data = _DiagnoseAfter(node2, stamp)
    assert data["failed"] is True and "not white-listed" in data["details"]


def test_mond_restarts_with_daemon_util(mond_cluster):
    node2 = mond_cluster.nodes[NODE2]
    pid = node2.Pid(constants.MOND)
    node2.Run("daemon-util", "stop", constants.MOND)
    assert node2.Run("daemon-util", "check", constants.MOND,
                     check=False).returncode == 1
    node2.Run("daemon-util", "start", constants.MOND)
    assert node2.Pid(constants.MOND) not in (0, pid)
    assert _GetJson(node2, "/") == [1]
