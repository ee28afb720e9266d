"""The job queue's scheduler: which pending job runs next, and when.

Jobs run by priority, then id, within the running-jobs limit; a job whose
dependencies are unresolved waits outside the ready heap until the job it
waits for finishes; filter rules and rate limits (jqueue.filters) hold jobs
back. Workers (jqueue.executor) block in ``NextJob`` and report back with
``JobLeftWorker``; nobody polls.

The scheduler lock guards the ready heap, the dependency waiters, the
running count and limit, the filter state and every job's ``in_worker``
flag. A job's lock may be taken while it is held, never the other way
round. Workers never hold it while they write job files; only canceling a
pending job does, so that no worker picks the job up meanwhile.
"""

import heapq
import itertools
import threading
from typing import Callable, Iterable, NamedTuple

from ganeti import constants
from ganeti.jqueue import filters as _filters
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode

_PENDING = (constants.JOB_STATUS_QUEUED, constants.JOB_STATUS_WAITING)

# Outcomes of a dependency check
DEPS_OK = "ok"
DEPS_WAIT = "wait"
DEPS_FAIL = "fail"


class OpCodeCheck(NamedTuple):
    """What the scheduler says about running a job's next opcode now.

    ``paused``: a PAUSE rule applies, the job leaves its worker;
    ``rejected``: the uuid of a REJECT rule applying (a job that has not
    started is canceled); ``deps``/``message``: DEPS_OK, DEPS_WAIT (message
    names the job waited for) or DEPS_FAIL (message says why).
    """
    paused: bool
    rejected: str | None
    deps: str
    message: str | None


class Scheduler:
    """Admission of the queue's pending jobs to its workers.

    ``lookup_fn`` finds any job by id (live or archived; None if unknown),
    for dependencies; ``jobs_fn`` lists the live jobs, for filter rule
    changes. Both are called with the scheduler lock held.
    """

    def __init__(self, lookup_fn: Callable[[int], QueuedJob | None],
                 jobs_fn: Callable[[], list[QueuedJob]],
                 max_running: int = constants.DEFAULT_MAX_RUNNING_JOBS):
        self._lookup = lookup_fn
        self._live_jobs = jobs_fn
        # Public for the executor's cancellation, which must see in_worker
        # stable while it decides
        self.lock = threading.Lock()
        self._work_cond = threading.Condition(self.lock)
        # Heap of (priority, id, sequence, job); stale entries (job started,
        # finished, re-queued with another priority) are skipped when popped
        self._ready: list[tuple[int, int, int, QueuedJob]] = []
        self._sequence = itertools.count()
        self._dep_waiters: dict[int, dict[int, QueuedJob]] = {}
        self._running = 0
        self._max_running = max_running
        self._filters = _filters.JobFilters()
        self._shutdown = False

    @property
    def running(self) -> int:
        """Jobs in a worker now."""
        return self._running

    @property
    def shutting_down(self) -> bool:
        return self._shutdown

    # Pending jobs ------------------------------------------------------------
    def _Enqueue(self, job: QueuedJob) -> None:
        """Make a job eligible for a worker (lock held)."""
        heapq.heappush(self._ready, (job.CalcPriority(), job.id,
                                     next(self._sequence), job))
        self._work_cond.notify()

    def Enqueue(self, jobs: Iterable[QueuedJob]) -> None:
        """Schedule jobs loaded at start-up (checked against the rules by
        the next ``SetRules``)."""
        with self.lock:
            for job in jobs:
                self._Enqueue(job)

    def Admit(self, jobs: list[QueuedJob]) -> list[tuple]:
        """Schedule newly submitted jobs.

        Returns ``(job, rule uuid)`` of those a REJECT rule applies to,
        for the caller to cancel (``CancelRejected``): as in Ganeti, such
        a job is created and then canceled.
        """
        with self.lock:
            for job in jobs:
                self._Enqueue(job)
            return self._RejectedJobs(jobs)

    def Requeue(self, job: QueuedJob) -> None:
        """Re-sort a pending job after its priority changed."""
        with self.lock:
            if not job.in_worker:
                self._Enqueue(job)

    # Limits and rules --------------------------------------------------------
    def SetMaxRunning(self, limit: int) -> None:
        with self.lock:
            self._max_running = limit
            self._work_cond.notify_all()

    def SetRules(self, rules_fn: Callable[[], list]) -> list[tuple]:
        """Install the filter rules ``rules_fn`` returns.

        Held jobs are evaluated again; returns ``(job, rule uuid)`` of the
        pending jobs a REJECT rule now applies to, for the caller to cancel.
        The rules are read under the lock so that concurrent updates apply
        in order.
        """
        with self.lock:
            for job in self._filters.SetRules(rules_fn()):
                self._Enqueue(job)
            rejected = self._RejectedJobs(self._live_jobs())
            self._work_cond.notify_all()
        return rejected

    def _RejectedJobs(self, jobs: list[QueuedJob]) -> list[tuple]:
        """``(job, rule uuid)`` of pending jobs to cancel (lock held)."""
        if not self._filters.has_reject:
            return []
        result = []
        for job in jobs:
            if job.in_worker or job.CalcStatus() not in _PENDING:
                continue
            rule = self._filters.RejectingRule(job)
            if rule is not None:
                result.append((job, rule))
        return result

    # Workers -----------------------------------------------------------------
    def _PopRunnable(self) -> QueuedJob | None:
        """Next job to run, skipping stale heap entries (lock held)."""
        while self._ready:
            priority, _, _, job = heapq.heappop(self._ready)
            if job.in_worker or job.CalcStatus() not in _PENDING:
                continue
            if priority != job.CalcPriority():
                self._Enqueue(job)
                continue
            if not self._filters.TryStart(job):
                continue  # held back until its rule or bucket allows it
            return job
        return None

    def NextJob(self, timeout: float | None = None) -> QueuedJob | None:
        """Wait for a job a worker may run now and count it as running.

        None on shutdown, or when ``timeout`` seconds passed without one.
        """
        with self.lock:
            while True:
                if self._shutdown:
                    return None
                if self._running < self._max_running:
                    job = self._PopRunnable()
                    if job is not None:
                        break
                if not self._work_cond.wait(timeout):
                    return None
            self._running += 1
            job.in_worker = True
            return job

    def CheckOpCode(self, job: QueuedJob, op: QueuedOpCode) -> OpCodeCheck:
        """Whether a job's worker may start the opcode now (see OpCodeCheck).

        Rules added since the job was picked apply: a PAUSE stops it
        before its next opcode (the scheduler then holds it back until the
        rule goes), a REJECT cancels it if it has not started yet. A job
        waiting for another is woken by ``ReleaseDependents``.
        """
        with self.lock:
            paused = self._filters.PausingRule(job) is not None
            rejected = self._filters.RejectingRule(job)
            if paused:
                return OpCodeCheck(True, rejected, DEPS_OK, None)
            deps, message = self._DependencyState(job, op)
            return OpCodeCheck(False, rejected, deps, message)

    def _DependencyState(self, job: QueuedJob,
                         op: QueuedOpCode) -> tuple[str, str | None]:
        """(DEPS_*, message) for an opcode's dependencies (lock held)."""
        for dep_id, statuses in (op.input.depends or []):
            dep_id = int(dep_id)
            dep = self._lookup(dep_id)
            if dep is None:
                return DEPS_FAIL, "Dependency job %d not found" % dep_id
            dep_status = dep.CalcStatus()
            if dep_status not in constants.JOBS_FINALIZED:
                self._dep_waiters.setdefault(dep_id, {})[job.id] = job
                return DEPS_WAIT, "job %d" % dep_id
            if statuses and dep_status not in statuses:
                return DEPS_FAIL, ("Dependency job %d finished with status"
                                   " '%s', not one of '%s' as required" %
                                   (dep_id, dep_status, "', '".join(statuses)))
        return DEPS_OK, None

    def ReleaseDependents(self, job: QueuedJob) -> None:
        """Let jobs waiting for a finished job be scheduled again."""
        with self.lock:
            for waiter in self._dep_waiters.pop(job.id, {}).values():
                self._Enqueue(waiter)

    def JobLeftWorker(self, job: QueuedJob) -> None:
        """A worker is done with a job (finished, paused or waiting)."""
        with self.lock:
            self._running -= 1
            job.in_worker = False
            for held in self._filters.Finished(job):
                self._Enqueue(held)
            # A dependency may have finished while the worker still held
            # the job; its wake-up was skipped, so re-check
            if (job.CalcStatus() not in constants.JOBS_FINALIZED and
                    not any(job.id in waiters for waiters in
                            self._dep_waiters.values())):
                self._Enqueue(job)
            self._work_cond.notify()

    def Shutdown(self) -> None:
        """Hand out no more jobs; wake every waiting worker."""
        with self.lock:
            self._shutdown = True
            self._work_cond.notify_all()
