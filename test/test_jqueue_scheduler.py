"""Tests of the job queue's scheduler (ganeti.jqueue.scheduler) on its own.

Jobs are plain in-memory QueuedJobs; the test plays the workers, taking
jobs with ``NextJob`` and handing them back with ``JobLeftWorker``.
"""

import threading
import time

import pytest

from ganeti import constants, objects, opcodes
from ganeti.jqueue import scheduler
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode


class _Jobs:
    """The jobs the scheduler looks up, and the scheduler under test."""

    def __init__(self, max_running=10):
        self.jobs = {}
        self.sched = scheduler.Scheduler(self.jobs.get,
                                         lambda: list(self.jobs.values()),
                                         max_running)

    def New(self, priority=constants.OP_PRIO_DEFAULT, depends=None,
            reason=None):
        job_id = len(self.jobs) + 1
        op = opcodes.OpTestDelay(duration=0.01, priority=priority,
                                 depends=depends, reason=reason or [])
        job = QueuedJob(None, job_id, [QueuedOpCode(op)])
        self.jobs[job_id] = job
        return job

    def Next(self):
        return self.sched.NextJob(timeout=0.01)


def _Finish(job, status=constants.OP_STATUS_SUCCESS):
    job.MarkUnfinishedOps(status, None)


def _Rule(action, uuid, predicates=()):
    return objects.FilterRule(uuid=uuid, watermark=0, priority=0,
                              predicates=list(predicates), action=action,
                              reason_trail=[])


def test_priority_then_id():
    env = _Jobs(max_running=1)
    low = env.New(constants.OP_PRIO_LOW)
    normal1, high, normal2 = (env.New(), env.New(constants.OP_PRIO_HIGH),
                              env.New())
    env.sched.Enqueue([low, normal1, high, normal2])
    order = []
    while (job := env.Next()) is not None:
        order.append(job)
        _Finish(job)
        env.sched.JobLeftWorker(job)
    assert order == [high, normal1, normal2, low]


def test_running_limit_and_wakeup():
    env = _Jobs(max_running=2)
    jobs = [env.New() for _ in range(3)]
    env.sched.Enqueue(jobs)
    first, second = env.Next(), env.Next()
    assert (first, second) == (jobs[0], jobs[1])
    assert first.in_worker and env.sched.running == 2
    assert env.Next() is None
    env.sched.SetMaxRunning(3)
    assert env.Next() is jobs[2]
    # A worker blocked in NextJob is woken when a job is handed to it
    env.sched.SetMaxRunning(1)
    for job in (first, second, jobs[2]):
        _Finish(job)
        env.sched.JobLeftWorker(job)
    assert env.sched.running == 0 and not first.in_worker
    got = []
    waiter = threading.Thread(target=lambda: got.append(
        env.sched.NextJob(timeout=5)))
    waiter.start()
    time.sleep(0.05)
    late = env.New()
    env.sched.Enqueue([late])
    waiter.join(5)
    assert got == [late]


def test_stale_entries_skipped_and_priority_change():
    env = _Jobs(max_running=1)
    first, second = env.New(), env.New()
    env.sched.Enqueue([first, second])
    _Finish(first, constants.OP_STATUS_CANCELED)
    second.ops[0].priority = constants.OP_PRIO_HIGH
    env.sched.Requeue(second)
    third = env.New()
    env.sched.Enqueue([third])
    assert env.Next() is second
    # Requeue leaves a job a worker has alone
    env.sched.Requeue(second)
    _Finish(second)
    env.sched.JobLeftWorker(second)
    assert env.Next() is third
    assert env.Next() is None


def test_dependencies_wait_then_release():
    env = _Jobs()
    first = env.New()
    second = env.New(depends=[[first.id, [constants.JOB_STATUS_SUCCESS]]])
    env.sched.Enqueue([first, second])
    assert env.Next() is first
    assert env.Next() is second
    check = env.sched.CheckOpCode(second, second.ops[0])
    assert check == (False, None, scheduler.DEPS_WAIT, "job %d" % first.id)
    # The worker leaves the job waiting; it is not handed out again ...
    second.ops[0].status = constants.OP_STATUS_WAITING
    env.sched.JobLeftWorker(second)
    assert env.Next() is None
    # ... until its dependency finishes
    _Finish(first)
    env.sched.ReleaseDependents(first)
    env.sched.JobLeftWorker(first)
    assert env.Next() is second
    assert env.sched.CheckOpCode(second, second.ops[0]).deps == \
        scheduler.DEPS_OK


def test_dependency_finished_while_still_in_worker():
    env = _Jobs()
    first = env.New()
    second = env.New(depends=[[first.id, []]])
    env.sched.Enqueue([second])
    assert env.Next() is second
    assert env.sched.CheckOpCode(second, second.ops[0]).deps == \
        scheduler.DEPS_WAIT
    # The release comes before the worker let go of the waiting job, and
    # the wake-up is lost (another worker skips the job still in a worker)
    _Finish(first)
    env.sched.ReleaseDependents(first)
    assert env.Next() is None
    second.ops[0].status = constants.OP_STATUS_WAITING
    env.sched.JobLeftWorker(second)
    job = env.Next()
    assert job is second
    assert env.sched.CheckOpCode(second, second.ops[0]).deps == \
        scheduler.DEPS_OK


@pytest.mark.parametrize("dep_status, wanted, message", [
    (None, [], "Dependency job 99 not found"),
    (constants.OP_STATUS_ERROR, [constants.JOB_STATUS_SUCCESS],
     "finished with status 'error', not one of 'success'"),
])
def test_dependency_failures(dep_status, wanted, message):
    env = _Jobs()
    dep_id = 99
    if dep_status is not None:
        dep = env.New()
        _Finish(dep, dep_status)
        dep_id = dep.id
        message = message.replace("99", str(dep_id))
    job = env.New(depends=[[dep_id, wanted]])
    check = env.sched.CheckOpCode(job, job.ops[0])
    assert check.deps == scheduler.DEPS_FAIL
    assert message in check.message


def test_pause_rule_holds_jobs_until_removed():
    env = _Jobs()
    job = env.New()
    env.sched.SetRules(lambda: [_Rule(objects.FILTER_PAUSE, "p")])
    env.sched.Enqueue([job])
    assert env.Next() is None
    assert job.wait_reason == "filter p (PAUSE)"
    assert env.sched.SetRules(lambda: []) == []
    assert env.Next() is job


def test_pause_rule_stops_a_picked_job():
    env = _Jobs()
    job = env.New()
    env.sched.Enqueue([job])
    assert env.Next() is job
    env.sched.SetRules(lambda: [_Rule(objects.FILTER_PAUSE, "p")])
    assert env.sched.CheckOpCode(job, job.ops[0]).paused


def test_reject_rule_reported_for_pending_jobs():
    env = _Jobs()
    picked, pending = env.New(), env.New()
    env.sched.Enqueue([picked, pending])
    assert env.Next() is picked
    rejected = env.sched.SetRules(lambda: [_Rule(objects.FILTER_REJECT, "r")])
    # The job in a worker is left to its worker's CheckOpCode
    assert rejected == [(pending, "r")]
    assert env.sched.CheckOpCode(picked, picked.ops[0]).rejected == "r"
    new = env.New()
    assert env.sched.Admit([new]) == [(new, "r")]


def test_rate_limit_bucket():
    env = _Jobs()
    reason = [["gnt:user", "rate-limit:1:x", 0]]
    first, second = env.New(reason=reason), env.New(reason=reason)
    other = env.New()
    env.sched.Enqueue([first, second, other])
    assert env.Next() is first
    assert env.Next() is other
    assert env.Next() is None
    assert second.wait_reason == "rate-limit bucket rate-limit:1:x"
    _Finish(first)
    env.sched.JobLeftWorker(first)
    assert env.Next() is second


def test_shutdown_wakes_blocked_workers():
    env = _Jobs()
    got = []
    waiter = threading.Thread(target=lambda: got.append(
        env.sched.NextJob()))
    waiter.start()
    time.sleep(0.05)
    env.sched.Shutdown()
    waiter.join(5)
    assert got == [None] and env.sched.shutting_down
    env.sched.Enqueue([env.New()])
    assert env.Next() is None
