"""End-to-end tests of job filters through gnt-filter on a real cluster.

A one-node virtual cluster (real masterd and noded) runs the examples of
design-optables, rate limits (by rule and ad hoc by reason) and restarts
of the master daemon; jobs are OP_TEST_DELAY jobs from gnt-debug. How
many jobs ran at once is measured from the jobs' own start and end
timestamps: a job's [start, end] lies within the time it held its slot,
so the measured overlap never exceeds the real one.
"""

import concurrent.futures
import json
import signal
import time

import pytest

from ganeti import constants

from testutils_cluster import VirtualCluster, WaitForJob

pytestmark = pytest.mark.integration

_DRAIN = '[["jobid", [">", "id", "watermark"]]]'
_ANY_JOB = '[["jobid", [">=", "id", 0]]]'


@pytest.fixture(scope="module")
def vcluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        cluster.Run("gnt-cluster", "modify", "--max-running-jobs", "25")
        yield cluster
    finally:
        cluster.Cleanup()


@pytest.fixture
def cluster(vcluster):
    """The cluster, with every filter rule removed after the test."""
    yield vcluster
    for uuid in _Filters(vcluster):
        vcluster.Run("gnt-filter", "delete", uuid)


def _Filters(cluster):
    return cluster.Run("gnt-filter", "list", "--no-headers", "-o",
                       "uuid").stdout.split()


def _AddFilter(cluster, *options):
    return cluster.Run("gnt-filter", "add", *options).stdout.strip()


def _Delay(cluster, duration, *options):
    """Submit a delay job; its id."""
    result = cluster.Run("gnt-debug", "delay", "--submit", "--print-jobid",
                         *options, str(duration))
    return int(result.stdout.split()[0])


def _DelayMany(cluster, count, duration, *options):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda _: _Delay(cluster, duration, *options),
                             range(count)))


def _JobFields(cluster, job_id, fields):
    result = cluster.Run("gnt-job", "list", "--no-headers", "--separator=|",
                         "-o", ",".join(fields), str(job_id))
    return result.stdout.rstrip("\n").split("|")


def _MaxOverlap(cluster, job_ids):
    """Most of the jobs running at one time, from their timestamps."""
    events = []
    for start, end in cluster.Luxi().QueryJobs(job_ids,
                                               ["start_ts", "end_ts"]):
        events.append((start[0] + start[1] / 1e6, 1))
        events.append((end[0] + end[1] / 1e6, -1))
    current = peak = 0
    for _, delta in sorted(events):
        current += delta
        peak = max(peak, current)
    return peak


def _WaitAll(cluster, job_ids, status=constants.JOB_STATUS_SUCCESS):
    client = cluster.Luxi()
    for job_id in job_ids:
        assert WaitForJob(client, job_id) == status, job_id


def test_cli_add_list_info_replace_delete(cluster):
    uuid = _AddFilter(cluster, "--priority=3", "--predicates", _DRAIN,
                      "--action", "RATE_LIMIT 4", "--reason", "why not")
    result = cluster.Run("gnt-filter", "list", "--separator=|")
    header, row = result.stdout.splitlines()
    assert header == "UUID|Watermark|Priority|Predicates|Action|ReasonTrail"
    fields = row.split("|")
    assert fields[0] == uuid and fields[2] == "3"
    assert json.loads(fields[3]) == json.loads(_DRAIN)
    assert fields[4] == "RATE_LIMIT 4"
    trail = json.loads(fields[5])
    assert [entry[:2] for entry in trail] == [["gnt:user", "why not"],
                                              ["luxid", ""]]
    info = cluster.Run("gnt-filter", "info", uuid).stdout.splitlines()
    assert info[:6] == ["UUID: %s" % uuid, "  Watermark: %s" % fields[1],
                        "  Priority: 3", "  Predicates:",
                        "    - " + json.dumps(json.loads(_DRAIN)[0],
                                              separators=(",", ":")),
                        "  Action: RATE_LIMIT 4"]
    assert info[6] == "  Reason trail:" and len(info) == 9
    fields = cluster.Run("gnt-filter", "list-fields", "--no-headers").stdout
    assert [line.split()[0] for line in fields.splitlines()] == [
        "action", "predicates", "priority", "reason_trail", "uuid",
        "watermark"]
    # A replacement is whole: options left out take their defaults
    job_id = _Delay(cluster, 0.01)
    cluster.Run("gnt-filter", "replace", "--action=ACCEPT", uuid)
    assert cluster.Run("gnt-filter", "list", "--no-headers", "-o",
                       "priority,action,predicates,watermark",
                       uuid).stdout.split() == ["0", "ACCEPT", "[]",
                                                str(job_id)]
    assert cluster.Run("gnt-filter", "replace", "my-rule").stdout.strip() \
        == "my-rule"
    cluster.Run("gnt-filter", "delete", uuid)
    assert _Filters(cluster) == ["my-rule"]
    result = cluster.Run("gnt-filter", "delete", uuid, check=False)
    assert result.returncode == 1 and uuid in result.stderr


@pytest.mark.parametrize("options, message", [
    (["--action", "RATE_LIMIT 0"], "invalid action 'RATE_LIMIT 0'"),
    (["--action", "DROP"], "invalid action 'DROP'"),
    (["--predicates", "[["], "invalid JSON '[['"),
    (["--priority", "high"], "invalid integer value: 'high'"),
])
def test_cli_refuses_bad_options(cluster, options, message):
    result = cluster.Run("gnt-filter", "add", *options, check=False)
    assert result.returncode == 2
    assert message in result.stderr


@pytest.mark.parametrize("options, message", [
    (["--priority=-1"], "Invalid filter priority -1"),
    (["--predicates", '[["jobid", ["=~", "id", "x"]]]'], '"=~", "id"'),
    (["--predicates", '[["name", ["==", "id", 1]]]'],
     'Invalid predicate ["name"'),
    # No opcode has such a parameter
    (["--predicates", '[["opcode", ["=", "instance_nmae", "web1"]]]'],
     'Unknown field "instance_nmae"'),
])
def test_server_refuses_bad_rules(cluster, options, message):
    result = cluster.Run("gnt-filter", "add", *options, check=False)
    assert result.returncode == 1
    assert message in result.stderr
    assert _Filters(cluster) == []


def _Rejected(cluster, uuid):
    """A new job, which the REJECT rule ``uuid`` cancels (as in Ganeti:
    created, then canceled)."""
    result = cluster.Run("gnt-debug", "delay", "--print-jobid", "0.01",
                         check=False)
    assert result.returncode == 1
    assert "Job was canceled" in result.stderr
    job_id = int(result.stdout.split()[0])
    assert _JobFields(cluster, job_id, ["status", "opresult"]) == \
        ["canceled", "['Job canceled by filter rule %s']" % uuid]


def test_drain_rejects_new_jobs(cluster):
    running = _Delay(cluster, 0.5)
    uuid = _AddFilter(cluster, "--predicates", _DRAIN, "--action", "REJECT")
    _Rejected(cluster, uuid)
    # Jobs up to the watermark are not affected
    _WaitAll(cluster, [running])
    cluster.Run("gnt-filter", "delete", uuid)
    _WaitAll(cluster, [_Delay(cluster, 0.01)])


def test_soft_drain_pauses_new_jobs(cluster):
    earlier = _Delay(cluster, 0.5)
    uuid = _AddFilter(cluster, "--predicates", _DRAIN, "--action", "PAUSE")
    later = _Delay(cluster, 0.01)
    _WaitAll(cluster, [earlier])
    assert _JobFields(cluster, later, ["status", "waiting_for"]) == \
        ["queued", "filter %s (PAUSE)" % uuid]
    info = cluster.Run("gnt-job", "info", str(later)).stdout
    assert "  Waiting for: filter %s (PAUSE)\n" % uuid in info
    cluster.Run("gnt-filter", "delete", uuid)
    _WaitAll(cluster, [later])
    assert _JobFields(cluster, later, ["waiting_for"]) == ["-"]


def test_maintenance_reason_exempts_from_pause(cluster):
    _AddFilter(cluster, "--priority=0", "--action=ACCEPT", "--predicates",
               '[["reason", ["=~", "reason", "maintenance pink bunny"]]]')
    pause = _AddFilter(cluster, "--priority=1", "--action=PAUSE",
                       "--predicates", _DRAIN)
    other = _Delay(cluster, 0.01)
    maintenance = _Delay(cluster, 0.01, "--reason",
                         "maintenance pink bunny, step 1")
    _WaitAll(cluster, [maintenance])
    assert _JobFields(cluster, other, ["status", "waiting_for"]) == \
        ["queued", "filter %s (PAUSE)" % pause]
    cluster.Run("gnt-filter", "delete", pause)
    _WaitAll(cluster, [other])


def test_reject_opcode_cancels_queued_and_new(cluster):
    hold = _AddFilter(cluster, "--priority=5", "--action=PAUSE",
                      "--predicates", _ANY_JOB)
    queued = [_Delay(cluster, 0.01) for _ in range(2)]
    reject = _AddFilter(cluster, "--priority=1", "--action=REJECT",
                        "--predicates",
                        '[["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]]')
    _WaitAll(cluster, queued, status=constants.JOB_STATUS_CANCELED)
    for job_id in queued:
        assert _JobFields(cluster, job_id, ["opresult"]) == \
            ["['Job canceled by filter rule %s']" % reject]
    cluster.Run("gnt-filter", "delete", hold)
    _Rejected(cluster, reject)
    # Other opcodes still run
    cluster.Run("gnt-group", "add", "filtered-group")
    cluster.Run("gnt-group", "remove", "filtered-group")


def test_rate_limit_rule(cluster):
    hold = _AddFilter(cluster, "--priority=0", "--action=PAUSE",
                      "--predicates", _ANY_JOB)
    # One job more than the limit, long enough that the one held back
    # waits for seconds: a listing under load still sees it waiting
    jobs = _DelayMany(cluster, 11, 5.0)
    limit = _AddFilter(cluster, "--priority=1", "--action", "RATE_LIMIT 10",
                       "--predicates",
                       '[["opcode", ["==", "OP_ID", "OP_TEST_DELAY"]]]')
    cluster.Run("gnt-filter", "delete", hold)
    deadline = time.monotonic() + 10
    while "rate limit of filter %s" % limit not in cluster.Run(
            "gnt-job", "list", "--no-headers", "--separator=|", "-o",
            "waiting_for").stdout.splitlines():
        assert time.monotonic() < deadline, "rate limit never shown"
        time.sleep(0.05)
    _WaitAll(cluster, jobs)
    assert _MaxOverlap(cluster, jobs) == 10


def test_ad_hoc_rate_limit_bucket(cluster):
    hold = _AddFilter(cluster, "--action=PAUSE", "--predicates", _ANY_JOB)
    bucket = "rate-limit:2:filter test"
    jobs = _DelayMany(cluster, 6, 1.0, "--reason", bucket)
    free = _DelayMany(cluster, 3, 0.5)
    cluster.Run("gnt-filter", "delete", hold)
    # The scheduler notes the bucket on its next pass after the delete; the
    # last jobs wait for it about two seconds, one listing call catches it
    deadline = time.monotonic() + 10
    while "rate-limit bucket %s" % bucket not in cluster.Run(
            "gnt-job", "list", "--no-headers", "--separator=|", "-o",
            "waiting_for").stdout.splitlines():
        assert time.monotonic() < deadline, "bucket never shown"
        time.sleep(0.05)
    _WaitAll(cluster, jobs + free)
    assert _MaxOverlap(cluster, jobs) == 2
    assert _MaxOverlap(cluster, free) == 3


def test_rules_survive_masterd_restart(cluster):
    uuid = _AddFilter(cluster, "--action=PAUSE", "--predicates", _ANY_JOB,
                      "--reason", "restart test")
    before = cluster.Run("gnt-filter", "list", "--separator=|").stdout
    paused = _Delay(cluster, 0.01)
    cluster.KillDaemon("ganeti-masterd", signal.SIGTERM)
    cluster.StartMasterd()
    assert cluster.Run("gnt-filter", "list", "--separator=|").stdout == \
        before
    assert _JobFields(cluster, paused, ["status", "waiting_for"]) == \
        ["queued", "filter %s (PAUSE)" % uuid]
    cluster.Run("gnt-filter", "delete", uuid)
    _WaitAll(cluster, [paused])
