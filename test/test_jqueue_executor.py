"""Tests of the job queue's executor (ganeti.jqueue.executor) on its own.

Real worker threads run real opcodes (OP_TEST_DELAY) through the processor
with a real configuration and lock manager, fed by a real scheduler; the
store is replaced by a list recording each write, so what is persisted and
when can be checked.
"""

import threading
import time

import pytest

from ganeti import constants, locking, opcodes
from ganeti.jqueue import executor as _executor
from ganeti.jqueue import scheduler as _scheduler
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode

from testutils_config import MakeConfig


def _Op(**params):
    """An OP_TEST_DELAY as submission leaves it (defaults filled in)."""
    op = opcodes.OpCode.LoadOpCode(dict(params, OP_ID="OP_TEST_DELAY"))
    op.Validate(True)
    return op


class _Context:
    def __init__(self, cfg):
        self.cfg = cfg
        self.glm = locking.GanetiLockManager(cfg.GetNodeList(), [], [], [])
        self.rpc = None


class _Env:
    """An executor with its scheduler; ``writes`` holds what was written."""

    def __init__(self, tmp_path, max_running=10):
        self.ctx = _Context(MakeConfig(str(tmp_path)))
        self.jobs = {}
        self.writes = []
        self.unlocked_writes = []
        self.sched = _scheduler.Scheduler(self.jobs.get,
                                          lambda: list(self.jobs.values()),
                                          max_running)
        self.exe = _executor.Executor(self.ctx, self.sched, self._Write,
                                      self._Submit)

    def _Write(self, job):
        if not job.lock.locked():
            self.unlocked_writes.append(job.id)
        self.writes.append((job.id, [op.status for op in job.ops]))

    def _Submit(self, jobs):
        return [[False, "not here"] for _ in jobs]

    def New(self, *ops):
        job_id = len(self.jobs) + 1
        job = QueuedJob(self, job_id, [QueuedOpCode(op) for op in ops or
                                       [_Op(duration=0.01)]])
        self.jobs[job_id] = job
        self.sched.Enqueue([job])
        return job

    def Wait(self, job, timeout=10.0):
        deadline = time.monotonic() + timeout
        info = None
        while time.monotonic() < deadline:
            info, _ = self.exe.WaitForJobChange(job, ["status"], info, 0, 1.0)
            if info[0] in constants.JOBS_FINALIZED:
                return info[0]
        raise AssertionError("job %s did not finish" % job.id)

    def WritesOf(self, job):
        return [statuses for job_id, statuses in self.writes
                if job_id == job.id]


@pytest.fixture
def env(tmp_path):
    envs = []

    def make(max_running=10, workers=4):
        env = _Env(tmp_path, max_running)
        env.exe.Start(workers)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.sched.Shutdown()
        env.exe.Shutdown(list(env.jobs.values()), 5)


def test_states_written_under_the_job_lock(env):
    env = env()
    job = env.New(_Op(duration=0.01),
                  _Op(duration=0.01))
    assert env.Wait(job) == constants.JOB_STATUS_SUCCESS
    assert env.WritesOf(job) == [["running", "queued"],
                                 ["success", "queued"],
                                 ["success", "running"],
                                 ["success", "success"]]
    assert env.unlocked_writes == []
    assert job.start_timestamp and job.end_timestamp
    assert env.sched.running == 0 and not job.in_worker


def test_failing_opcode_fails_the_rest(env):
    env = env()
    job = env.New(_Op(duration=0.01,
                                      on_nodes=["nosuch.example.test"]),
                  _Op(duration=0.01))
    assert env.Wait(job) == constants.JOB_STATUS_ERROR
    first, second = job.ops
    assert first.result[0] == "OpPrereqError"
    assert second.result == ["OpExecError", ["Preceding opcode failed"]]
    assert env.WritesOf(job)[-1] == ["error", "error"]


def test_cancel_pending_and_refuse_running(env):
    env = env(max_running=1)
    running = env.New(_Op(duration=0.3))
    queued = env.New()
    deadline = time.monotonic() + 5
    while running.CalcStatus() != constants.JOB_STATUS_RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert env.exe.CancelJob(queued) == [True, "Job 2 canceled"]
    assert env.WritesOf(queued) == [["canceled"]]
    assert env.exe.CancelJob(queued) == \
        [False, "Job 2 is no longer waiting in the queue"]
    assert env.exe.CancelJob(running) == \
        [False, "Job 1 is running and cannot be canceled"]
    assert env.Wait(running) == constants.JOB_STATUS_SUCCESS


def test_cancel_job_waiting_for_locks(env):
    env = env()
    glm = env.ctx.glm
    node = env.ctx.cfg.GetNodeList()[0]
    glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL], shared=1)
    glm.acquire(locking.LEVEL_NODE, [node])
    try:
        job = env.New(_Op(duration=0.01, no_locks=False,
                                          on_nodes=["node1.example.test"]))
        deadline = time.monotonic() + 5
        while job.CalcStatus() != constants.JOB_STATUS_WAITING:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert env.exe.CancelJob(job) == [True, "Job 1 will be canceled"]
        assert job.CalcStatus() == constants.JOB_STATUS_CANCELING
        # The worker notices between two lock attempts
        assert env.Wait(job) == constants.JOB_STATUS_CANCELED
    finally:
        glm.release(locking.LEVEL_NODE)
        glm.release(locking.LEVEL_CLUSTER)
    assert env.WritesOf(job) == [["canceling"], ["canceled"]]


def test_dependent_job_runs_after_its_dependency(env):
    env = env()
    first = env.New(_Op(duration=0.2))
    second = env.New(_Op(
        duration=0.01, depends=[[first.id, [constants.JOB_STATUS_SUCCESS]]]))
    deadline = time.monotonic() + 5
    while second.wait_reason != "job %d" % first.id:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert env.Wait(second) == constants.JOB_STATUS_SUCCESS
    assert tuple(second.start_timestamp) >= tuple(first.end_timestamp)
    # A canceled dependency releases its waiter, which then fails
    blocker = env.New(_Op(duration=1.5))
    waiting = env.New(_Op(duration=0.01,
                                          depends=[[blocker.id + 2, []]]))
    dep = env.New(_Op(
        duration=0.01, depends=[[blocker.id, []]]))
    while waiting.wait_reason != "job %d" % dep.id:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    while dep.wait_reason != "job %d" % blocker.id:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert env.exe.CancelJob(dep)[0]
    assert env.Wait(waiting) == constants.JOB_STATUS_SUCCESS


def test_cancel_rejected_leaves_jobs_in_workers(env):
    env = env(max_running=1)
    running = env.New(_Op(duration=0.2))
    queued = env.New()
    while not running.in_worker:
        time.sleep(0.01)
    env.exe.CancelRejected([(running, "r1"), (queued, "r1")])
    assert env.Wait(queued) == constants.JOB_STATUS_CANCELED
    assert queued.ops[0].result == "Job canceled by filter rule r1"
    assert env.Wait(running) == constants.JOB_STATUS_SUCCESS


def test_wait_for_change_wakes_times_out_and_sees_log(env):
    env = env()
    job = env.New(_Op(duration=0.1, repeat=2))
    info, _ = env.exe.WaitForJobChange(job, ["status"], None, 0, 5)
    while info[0] != constants.JOB_STATUS_SUCCESS:
        before = time.monotonic()
        info, _ = env.exe.WaitForJobChange(job, ["status"], info, 0, 5)
        assert time.monotonic() - before < 1.0
    # Finalized: answers at once, with the log entries newer than asked
    _, entries = env.exe.WaitForJobChange(job, ["status"], info, 1, 5)
    assert [entry[0] for entry in entries] == [2]
    assert entries[0][3] == " - INFO: Test delay iteration 1/1"
    pending = QueuedJob(None, 99, [QueuedOpCode(
        _Op(duration=1))])
    start = time.monotonic()
    assert env.exe.WaitForJobChange(pending, ["status"], ["queued"], 0,
                                    0.2) == [["queued"], []]
    assert time.monotonic() - start >= 0.2


def test_shutdown_wakes_waiters_and_stops_workers(env):
    env = env()
    job = QueuedJob(None, 99, [QueuedOpCode(_Op(duration=1))])
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(
        env.exe.WaitForJobChange(job, ["status"], ["queued"], 0, 30)))
    waiter.start()
    time.sleep(0.05)
    start = time.monotonic()
    env.sched.Shutdown()
    env.exe.Shutdown([job], 5)
    waiter.join(5)
    assert answers == [[["queued"], []]]
    assert time.monotonic() - start < 2
    assert not any(worker.is_alive() for worker in env.exe._workers)

