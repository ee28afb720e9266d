"""Tests of job filter rules and rate limits (ganeti.jqueue.filters).

Rule evaluation and the admission state are tested on real queued jobs;
the queue integration runs a real JobQueue with a real configuration and
its worker threads (OP_TEST_DELAY on the master needs no node daemon).
"""

import threading
import time

import pytest

from ganeti import constants, errors, jqueue, locking, objects, opcodes
from ganeti.jqueue import filters
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode

from testutils_config import MakeConfig

_ALL = ["jobid", [">=", "id", 0]]


def _Rule(action, predicates=(), priority=0, watermark=0, uuid=None):
    return objects.FilterRule(uuid=uuid or objects.NewUUID(),
                              watermark=watermark, priority=priority,
                              predicates=list(predicates), action=action,
                              reason_trail=[])


def _Op(reason=(), **kwargs):
    kwargs.setdefault("duration", 0.01)
    return opcodes.OpTestDelay(reason=[list(entry) for entry in reason],
                               **kwargs)


def _Job(job_id, *ops):
    return QueuedJob(None, job_id, [QueuedOpCode(op) for op in ops or
                                    [_Op()]])


def _Applying(rules, job):
    rule = filters.ApplyingRule(filters.CompileChain(rules),
                                filters.JobView.FromJob(job))
    return None if rule is None else rule.uuid


# Evaluation order ------------------------------------------------------------

def test_order_priority_then_watermark_then_uuid():
    late = _Rule("PAUSE", [_ALL], priority=1, uuid="a")
    first = _Rule("ACCEPT", [_ALL], priority=0, watermark=7, uuid="z")
    assert _Applying([late, first], _Job(1)) == "z"
    lower_mark = _Rule("REJECT", [_ALL], priority=0, watermark=3, uuid="y")
    assert _Applying([late, first, lower_mark], _Job(1)) == "y"
    same_mark = _Rule("PAUSE", [_ALL], priority=0, watermark=3, uuid="b")
    assert _Applying([late, first, lower_mark, same_mark], _Job(1)) == "b"


def test_continue_never_applies_and_no_match_accepts():
    cont = _Rule("CONTINUE", [_ALL], priority=0, uuid="c")
    pause = _Rule("PAUSE", [["jobid", ["==", "id", 2]]], priority=5,
                  uuid="p")
    assert _Applying([cont, pause], _Job(2)) == "p"
    assert _Applying([cont, pause], _Job(3)) is None
    assert _Applying([], _Job(3)) is None


def test_all_predicates_must_match_and_empty_matches_everything():
    both = _Rule("PAUSE", [["jobid", ["<", "id", 10]],
                           ["opcode", ["==", "OP_ID", "OP_TEST_DELAY"]]])
    assert _Applying([both], _Job(5)) == both.uuid
    assert _Applying([both], _Job(15)) is None
    empty = _Rule("REJECT")
    assert _Applying([empty], _Job(15)) == empty.uuid


# Predicates ------------------------------------------------------------------

def test_jobid_watermark():
    rule = _Rule("REJECT", [["jobid", [">", "id", "watermark"]]],
                 watermark=10)
    assert _Applying([rule], _Job(10)) is None
    assert _Applying([rule], _Job(11)) == rule.uuid


def test_opcode_fields_any_opcode_and_missing_or_null_values():
    rule = _Rule("PAUSE", [["opcode", ["&", ["==", "OP_ID", "OP_TEST_DELAY"],
                                       [">", "duration", 5]]]])
    assert _Applying([rule], _Job(1, _Op(), _Op(duration=10))) == rule.uuid
    assert _Applying([rule], _Job(1, _Op(), _Op())) is None
    # A parameter of other opcodes than the job's
    missing = _Rule("PAUSE", [["opcode", ["==", "instance_name", "i1"]]])
    negated = _Rule("PAUSE", [["opcode", ["!", ["==", "instance_name",
                                                "i1"]]]])
    null = _Rule("PAUSE", [["opcode", ["==", "comment", "x"]]])
    for rule in (missing, negated, null):
        assert _Applying([rule], _Job(1)) is None
    nested = _Rule("PAUSE", [["opcode", ["==", "on_nodes", []]]])
    # Lists only compare through "=[]"; a mismatched comparison is false
    assert _Applying([nested], _Job(1)) is None
    contains = _Rule("PAUSE", [["opcode", ["=[]", "on_nodes", "n1"]]])
    assert _Applying([contains], _Job(1, _Op(on_nodes=["n1"]))) == \
        contains.uuid


def test_reason_any_entry_with_regexp():
    rule = _Rule("ACCEPT", [["reason", ["=~", "reason",
                                        "maintenance pink bunny"]]])
    plain = _Job(1, _Op(reason=[("gnt:user", "other", 1)]))
    tagged = _Job(2, _Op(), _Op(reason=[
        ("gnt:client:gnt-debug", "delay", 1),
        ("gnt:user", "the maintenance pink bunny 7", 2)]))
    assert _Applying([rule], plain) is None
    assert _Applying([rule], tagged) == rule.uuid
    by_source = _Rule("PAUSE", [["reason", ["&", ["==", "source", "gnt:user"],
                                            [">", "timestamp", 1]]]])
    assert _Applying([by_source], plain) is None
    assert _Applying([by_source], tagged) == by_source.uuid


def test_rate_limit_buckets():
    reasons = [("gnt:user", "rate-limit:7:operation pink bunny", 1),
               ("gnt:user", "rate-limit:3:a:b", 2),
               ("gnt:user", "rate-limit:0:zero", 3),
               ("gnt:user", "rate-limit:x:bad", 4),
               ("gnt:user", "rate-limit:5", 5)]
    assert filters.RateLimitBuckets(reasons) == {
        "rate-limit:7:operation pink bunny": 7, "rate-limit:3:a:b": 3}


# Validation ------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    ((-1, [], "ACCEPT", []), "priority -1"),
    (("1", [], "ACCEPT", []), 'priority "1"'),
    ((0, [], "DROP", []), 'action "DROP"'),
    ((0, [], ["RATE_LIMIT", 0], []), 'action ["RATE_LIMIT", 0]'),
    ((0, [["job", ["==", "id", 1]]], "ACCEPT", []), '"job"'),
    ((0, [["jobid", ["==", "name", 1]]], "ACCEPT", []), "name"),
    ((0, [["jobid", ["==", "id", "later"]]], "ACCEPT", []), "later"),
    ((0, [["reason", ["~~", "reason", "x"]]], "ACCEPT", []), "~~"),
    ((0, [["opcode", "OP_ID"]], "ACCEPT", []), '"OP_ID"'),
    # A field no opcode has (a nested one: its first part counts)
    ((0, [["opcode", ["==", "no_such_param", 1]]], "ACCEPT", []),
     'Unknown field "no_such_param"'),
    ((0, [["opcode", ["==", "instance.name", 1]]], "ACCEPT", []),
     'Unknown field "instance.name"'),
    ((0, {}, "ACCEPT", []), "predicates {}"),
    ((0, [], "ACCEPT", [["gnt:user", "x"]]), '["gnt:user", "x"]'),
])
def test_make_rule_names_bad_part(args, message):
    with pytest.raises(errors.OpPrereqError) as err:
        filters.MakeRule(None, *args, watermark=0)
    assert message in err.value.args[0]
    assert err.value.args[1] == errors.ECODE_INVAL


def test_make_rule_normalizes():
    rule = filters.MakeRule("u1", 3, [("opcode", ["==", "OP_ID", "X"])],
                            ("RATE_LIMIT", 4), [("gnt:user", "why", 5)], 9)
    rule.Validate()
    assert rule.ToDict() == {
        "uuid": "u1", "watermark": 9, "priority": 3,
        "predicates": [["opcode", ["==", "OP_ID", "X"]]],
        "action": ["RATE_LIMIT", 4], "reason_trail": [["gnt:user", "why", 5]]}


# Admission state -------------------------------------------------------------

def test_rate_limit_rule_counts_jobs_running_at_addition():
    state = filters.JobFilters()
    jobs = [_Job(i) for i in range(1, 6)]
    for job in jobs[:3]:
        assert state.TryStart(job)
    limit = _Rule(["RATE_LIMIT", 2], [_ALL], uuid="lim")
    assert state.SetRules([limit]) == []
    assert not state.TryStart(jobs[3])
    assert jobs[3].wait_reason == "rate limit of filter lim"
    # Still two running: nothing may start yet
    assert state.Finished(jobs[0]) == [jobs[3]]
    assert not state.TryStart(jobs[3])
    assert state.Finished(jobs[1]) == [jobs[3]]
    assert state.TryStart(jobs[3])
    assert jobs[3].wait_reason is None
    assert not state.TryStart(jobs[4])


def test_pause_and_reject_hold_until_rules_change():
    pause = _Rule("PAUSE", [["jobid", ["==", "id", 1]]], uuid="p")
    reject = _Rule("REJECT", [["jobid", ["==", "id", 2]]], uuid="r")
    state = filters.JobFilters([pause, reject])
    paused, rejected, free = _Job(1), _Job(2), _Job(3)
    assert not state.TryStart(paused)
    assert paused.wait_reason == "filter p (PAUSE)"
    assert not state.TryStart(rejected)
    assert state.RejectingRule(rejected) == "r"
    assert state.PausingRule(paused) == "p"
    assert state.TryStart(free)
    assert state.Finished(free) == []
    assert sorted(job.id for job in state.SetRules([])) == [1, 2]
    assert state.TryStart(paused) and state.TryStart(rejected)


def test_ad_hoc_buckets_need_room_in_every_bucket():
    state = filters.JobFilters()
    two = ("gnt:user", "rate-limit:2:x", 1)
    other = ("gnt:user", "rate-limit:3:x", 1)
    first, second = _Job(1, _Op([two])), _Job(2, _Op([two]))
    both = _Job(3, _Op([two]), _Op([other]))
    only_other = _Job(4, _Op([other]))
    assert state.TryStart(first) and state.TryStart(second)
    assert not state.TryStart(both)
    assert both.wait_reason == "rate-limit bucket rate-limit:2:x"
    assert state.TryStart(only_other)
    assert state.Finished(first) == [both]
    assert state.TryStart(both)


# Queue integration -----------------------------------------------------------

class _Context:
    def __init__(self, cfg):
        self.cfg = cfg
        self.glm = locking.GanetiLockManager(cfg.GetNodeList(), [], [], [])
        self.rpc = None
        self.jobqueue = None


@pytest.fixture
def env(tmp_path):
    cfg = MakeConfig(str(tmp_path))
    cluster = cfg.GetClusterInfo()
    cluster.max_running_jobs = 10
    cfg.Update(cluster, None)
    ctx = _Context(cfg)
    queue = jqueue.JobQueue(ctx, queue_dir=str(tmp_path / "queue"),
                            num_workers=10)
    ctx.jobqueue = queue
    yield ctx
    queue.Shutdown(timeout=5)


def _Submit(queue, *ops, **kwargs):
    return queue.SubmitJob([op.__getstate__() for op in ops or [_Op()]],
                           **kwargs)


def _Replace(ctx, action, predicates=(), uuid=None, priority=0):
    return filters.ReplaceFilter(ctx.cfg, ctx.jobqueue, uuid, priority,
                                 list(predicates), action,
                                 [["gnt:user", "test", 1]])


def _Wait(queue, job_id, timeout=10.0):
    deadline = time.monotonic() + timeout
    info = None
    while time.monotonic() < deadline:
        info, _ = queue.WaitForJobChange(job_id, ["status"], info, None, 1.0)
        if info[0] in constants.JOBS_FINALIZED:
            return info[0]
    raise AssertionError("job %s did not finish" % job_id)


def _WaitField(queue, job_id, field, wanted, timeout=10.0):
    """Wait for a field that changes without a job update (scheduler
    state), checking often."""
    deadline = time.monotonic() + timeout
    while True:
        (value, ) = queue.QueryJobs([job_id], [field])[0]
        if value == wanted:
            return
        assert time.monotonic() < deadline, (job_id, field, value)
        time.sleep(0.01)


def test_replace_query_delete(env):
    queue = env.jobqueue
    job_id = _Submit(queue)
    _Wait(queue, job_id)
    uuid = _Replace(env, ["RATE_LIMIT", 3], [_ALL], priority=2)
    (row, ) = filters.QueryFilters(env.cfg, None, ["uuid", "watermark",
                                                   "priority", "action",
                                                   "reason_trail"])
    assert row[:4] == [uuid, job_id, 2, ["RATE_LIMIT", 3]]
    assert row[4][0] == ["gnt:user", "test", 1]
    assert row[4][1][:2] == [filters.FILTER_REASON_SRC, ""]
    # Replacing keeps the UUID and sets the watermark anew
    _Wait(queue, _Submit(queue))
    assert _Replace(env, "PAUSE", uuid=uuid) == uuid
    assert filters.QueryFilters(env.cfg, [uuid], ["watermark", "action"]) \
        == [[job_id + 1, "PAUSE"]]
    assert _Replace(env, "ACCEPT", uuid="my-own-uuid") == "my-own-uuid"
    filters.DeleteFilter(env.cfg, queue, uuid)
    with pytest.raises(errors.OpPrereqError, match=uuid):
        filters.DeleteFilter(env.cfg, queue, uuid)
    with pytest.raises(errors.OpPrereqError, match="not found: %s" % uuid):
        filters.QueryFilters(env.cfg, [uuid], ["uuid"])
    with pytest.raises(errors.OpPrereqError, match="bogus"):
        filters.QueryFilters(env.cfg, None, ["uuid", "bogus"])
    with pytest.raises(errors.OpPrereqError, match="must be a list"):
        filters.QueryFilters(env.cfg, "my-own-uuid", ["uuid"])


def test_reject_cancels_queued_and_new_jobs(env):
    """As in Ganeti, a new job a REJECT rule applies to is created and
    canceled: its id refers to a job."""
    queue = env.jobqueue
    blocker_cluster = env.cfg.GetClusterInfo()
    blocker_cluster.max_running_jobs = 1
    env.cfg.Update(blocker_cluster, None)
    queue.WakeWorkers()
    blocker = _Submit(queue, _Op(duration=0.5))
    queued = [_Submit(queue) for _ in range(3)]
    uuid = _Replace(env, "REJECT", [["jobid", [">", "id", blocker]]])
    for job_id in queued:
        assert _Wait(queue, job_id) == constants.JOB_STATUS_CANCELED
        (result, ) = queue.QueryJobs([job_id], ["opresult"])[0]
        assert result == ["Job canceled by filter rule %s" % uuid]
    new = [_Submit(queue)]
    ((submitted, job_id), ) = queue.SubmitManyJobs([[_Op().__getstate__()]])
    assert submitted
    new.append(job_id)
    for job_id in new:
        assert _Wait(queue, job_id) == constants.JOB_STATUS_CANCELED
        assert queue.QueryJobs([job_id], ["opresult"])[0] == [
            ["Job canceled by filter rule %s" % uuid]]
    assert _Wait(queue, blocker) == constants.JOB_STATUS_SUCCESS


def test_pause_stops_before_next_opcode_and_resumes(env):
    queue = env.jobqueue
    job_id = _Submit(queue, _Op(duration=0.5), _Op())
    _WaitField(queue, job_id, "opstatus", ["running", "queued"])
    uuid = _Replace(env, "PAUSE", [["jobid", ["==", "id", job_id]]])
    _WaitField(queue, job_id, "waiting_for", "filter %s (PAUSE)" % uuid)
    assert queue.QueryJobs([job_id], ["status", "opstatus"])[0] == \
        ["queued", ["success", "queued"]]
    filters.DeleteFilter(env.cfg, queue, uuid)
    assert _Wait(queue, job_id) == constants.JOB_STATUS_SUCCESS


def test_waiting_for_dependency_and_lock(env):
    queue = env.jobqueue
    first = _Submit(queue, _Op(duration=0.3))
    second = _Submit(queue, _Op(depends=[[first, []]]))
    _WaitField(queue, second, "waiting_for", "job %d" % first)
    assert _Wait(queue, second) == constants.JOB_STATUS_SUCCESS
    assert queue.QueryJobs([second], ["waiting_for"]) == [[None]]
    glm = env.glm
    glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL], shared=0)
    try:
        blocked = _Submit(queue)
        _WaitField(queue, blocked, "waiting_for", "lock cluster/BGL")
    finally:
        glm.release(locking.LEVEL_CLUSTER)
    assert _Wait(queue, blocked) == constants.JOB_STATUS_SUCCESS


def test_rate_limit_and_bucket_bound_concurrency(env):
    queue = env.jobqueue
    _Replace(env, ["RATE_LIMIT", 2],
             [["opcode", ["==", "comment", "limited"]]])
    limited = [_Submit(queue, _Op(duration=0.1, comment="limited"))
               for _ in range(5)]
    bucket = [_Submit(queue, _Op([("gnt:user", "rate-limit:3:b", 1)],
                                 duration=0.1)) for _ in range(6)]
    for ids, limit in ((limited, 2), (bucket, 3)):
        for job_id in ids:
            assert _Wait(queue, job_id) == constants.JOB_STATUS_SUCCESS
        spans = queue.QueryJobs(ids, ["start_ts", "end_ts"])
        assert _MaxOverlap(spans) == limit


def _MaxOverlap(spans):
    """Most jobs running at one time, from their start and end stamps."""
    events = []
    for start, end in spans:
        events.append((start[0] + start[1] / 1e6, 1))
        events.append((end[0] + end[1] / 1e6, -1))
    current = peak = 0
    for _, delta in sorted(events, key=lambda event: (event[0], event[1])):
        current += delta
        peak = max(peak, current)
    return peak


def test_restart_applies_rules_to_restored_jobs(tmp_path):
    cfg = MakeConfig(str(tmp_path))
    ctx = _Context(cfg)
    queue_dir = str(tmp_path / "queue")
    ctx.jobqueue = jqueue.JobQueue(ctx, queue_dir=queue_dir, num_workers=2)
    pause = _Replace(ctx, "PAUSE", [_ALL], priority=1)
    paused = _Submit(ctx.jobqueue)
    _WaitField(ctx.jobqueue, paused, "waiting_for",
               "filter %s (PAUSE)" % pause)
    ctx.jobqueue.Shutdown(timeout=5)
    cfg.SetFilter(filters.MakeRule(None, 0, [_ALL], "REJECT", [], 0))
    ctx.jobqueue = jqueue.JobQueue(ctx, queue_dir=queue_dir, num_workers=2)
    try:
        assert _Wait(ctx.jobqueue, paused) == constants.JOB_STATUS_CANCELED
    finally:
        ctx.jobqueue.Shutdown(timeout=5)


def test_concurrent_submit_and_reject_leaves_no_queued_job(env):
    queue = env.jobqueue
    pause = _Replace(env, "PAUSE", [_ALL])
    submitted = []
    stop = threading.Event()

    def submit():
        while not stop.is_set():
            try:
                submitted.append(_Submit(queue))
            except errors.OpPrereqError:
                pass
    threads = [threading.Thread(target=submit) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.1)
    _Replace(env, "REJECT", [_ALL], priority=0, uuid=pause)
    time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join()
    assert submitted
    for job_id in submitted:
        assert _Wait(queue, job_id) == constants.JOB_STATUS_CANCELED
