"""The job queue: durable jobs, scheduling, execution and waiting.

``JobQueue`` is what the master daemon and the LUs talk to; it wires three
parts that each work (and are tested) on their own:

- the store (jqueue.store): job files, the serial, the archive, the
  replication hooks and the live jobs kept in memory;
- the scheduler (jqueue.scheduler): priorities, dependencies, filter rules
  and rate limits, the running-jobs limit;
- the executor (jqueue.executor): worker threads running opcodes,
  cancellation, change notification for WaitForJobChange.

Locking: each job has its own lock, held while its state changes and its
file is written, and taken by waiters and queries, so nobody sees a state
that is not on disk yet. Writes of different jobs run in parallel, which
lets their fsyncs share journal commits. The scheduler's lock guards its
heap, waiters and counters and may be held while a job lock is taken,
never the other way round; the store's lock guards the job table and the
id counter and nothing is taken while it is held. No lock is global to
the queue.
"""

import time
from typing import Any, Callable

from ganeti import constants, errors, opcodes, pathutils
from ganeti.jqueue import jobs as _jobs
from ganeti.jqueue.executor import Executor
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode, TimeStampNow
from ganeti.jqueue.scheduler import Scheduler
from ganeti.jqueue.store import JobStore
from ganeti.utils import tunable

__all__ = ["JobQueue", "QueuedJob", "QueuedOpCode", "TimeStampNow"]

# Seconds a stopping queue (masterd's) waits for its running jobs; the
# variable overrides them (utils.tunable)
SHUTDOWN_TIMEOUT = 10.0
ENV_SHUTDOWN_TIMEOUT = "GANETI_JOB_SHUTDOWN_TIMEOUT"


def _LoadOps(ops: Any) -> list[opcodes.OpCode]:
    """A submitted job's opcodes, validated."""
    if not isinstance(ops, list) or not ops:
        raise errors.OpPrereqError("A job needs a non-empty list of"
                                   " opcodes", errors.ECODE_INVAL)
    result = []
    for index, data in enumerate(ops):
        op = opcodes.OpCode.LoadOpCode(data)
        op.Validate(True)
        if op.priority not in constants.OP_PRIO_SUBMIT_VALID:
            raise errors.OpPrereqError(
                "Opcode %d (%s) has invalid priority %s, must be one of"
                " %s" % (index, op.OP_ID, op.priority,
                         sorted(constants.OP_PRIO_SUBMIT_VALID)),
                errors.ECODE_INVAL)
        result.append(op)
    return result


def _ResolveRelativeDeps(position: int, batch_ids: list[int],
                         ops: list[opcodes.OpCode]) -> None:
    """Turn relative dependencies (-N: N jobs earlier) into job ids.

    Checks every opcode before changing any, so a refused job keeps its
    opcodes as they were submitted.
    """
    resolved_ops: list[tuple[opcodes.OpCode, list]] = []
    for op in ops:
        if not op.depends:
            continue
        resolved = []
        for dep_id, statuses in op.depends:
            dep_id = int(dep_id)
            if dep_id < 0:
                if -dep_id > position:
                    raise errors.OpPrereqError(
                        "Unable to resolve relative job ID %d" % dep_id,
                        errors.ECODE_INVAL)
                dep_id = batch_ids[position + dep_id]
            resolved.append([dep_id, statuses])
        resolved_ops.append((op, resolved))
    for op, resolved in resolved_ops:
        op.depends = resolved


class JobQueue:
    """The queue of one master daemon (owns the queue directory)."""

    def __init__(self, context: Any, queue_dir: str = pathutils.QUEUE_DIR,
                 replicate_fn: Callable[[str, str], None] | None = None,
                 rename_fn: Callable[[list], None] | None = None,
                 num_workers: int = constants.JOBQUEUE_THREADS):
        self.context = context
        self._store = JobStore(queue_dir, replicate_fn, rename_fn, owner=self)
        self._scheduler = Scheduler(self._store.GetJob, self._store.LiveJobs,
                                    self._ReadMaxRunning())
        self._executor = Executor(context, self._scheduler,
                                  self._store.WriteJob, self.SubmitManyJobs)
        self._scheduler.Enqueue(self._store.LoadJobs())
        self.UpdateFilters()
        self._executor.Start(num_workers)

    # Configuration -----------------------------------------------------------
    def _ReadMaxRunning(self) -> int:
        try:
            return self.context.cfg.GetClusterInfo().max_running_jobs
        except AttributeError:
            return constants.DEFAULT_MAX_RUNNING_JOBS

    def _ReadFilterRules(self) -> list:
        try:
            return list(self.context.cfg.GetFilterRules().values())
        except AttributeError:
            return []

    def WakeWorkers(self) -> None:
        """Re-read the running-job limit (after it was changed)."""
        self._scheduler.SetMaxRunning(self._ReadMaxRunning())

    def UpdateFilters(self) -> None:
        """Apply the configuration's current filter rules (after a change).

        Held jobs are evaluated again and queued jobs that a REJECT rule
        now applies to are canceled.
        """
        self._executor.CancelRejected(
            self._scheduler.SetRules(self._ReadFilterRules))

    def HighestJobId(self) -> int:
        """The last job id allocated (the watermark of a new filter rule)."""
        return self._store.HighestJobId()

    # Submission --------------------------------------------------------------
    def IsDrained(self) -> bool:
        return self._store.IsDrained()

    def SetDrainFlag(self, drain: bool) -> bool:
        """Create or remove the drain flag file."""
        self._store.SetDrainFlag(drain)
        return True

    def SubmitJob(self, ops: Any, to_drained: bool = False) -> int:
        """Validate, store and enqueue one job; returns its id."""
        (result, ) = self._SubmitJobs([_LoadOps(ops)], to_drained)
        if isinstance(result, errors.GenericError):
            raise result
        return result

    def SubmitManyJobs(self, jobs: Any) -> list:
        """Submit several jobs; per job ``[True, id]`` or ``[False, msg]``.

        As in Ganeti 3.0, a job whose opcodes do not load (unknown opcode,
        invalid parameter or priority) refuses the whole submission; a
        job with an unresolvable relative dependency is refused alone;
        jobs a REJECT filter rule applies to are created and canceled.
        Relative dependencies (negative ids) refer to jobs earlier in the
        same submission, refused ones included.
        """
        if not isinstance(jobs, list):
            raise errors.OpPrereqError("A list of jobs is needed",
                                       errors.ECODE_INVAL)
        loaded = [_LoadOps(ops) for ops in jobs]
        if not loaded:
            return []
        # The message alone, as Ganeti answers (no error code tuple)
        return [[False, str(item.args[0] if item.args else item)]
                if isinstance(item, Exception) else [True, item]
                for item in self._SubmitJobs(loaded, False)]

    def _SubmitJobs(self, all_ops: list[list[opcodes.OpCode]],
                    to_drained: bool) -> list[int | errors.GenericError]:
        """Store and enqueue jobs; per job its id, or why it was refused
        (its id stays unused).

        Once a job file cannot be written (disk full), the rest of the
        submission is refused with the same error; the jobs written before
        it are kept and run.
        """
        if self._scheduler.shutting_down:
            raise errors.JobQueueError("Job queue is shutting down")
        if not to_drained and self._store.IsDrained():
            raise errors.JobQueueDrainError("Job queue is drained,"
                                            " refusing job")
        ids = self._store.AllocateIds(len(all_ops))
        # Every job is checked before any is written: a job answered as
        # refused must never be found on disk (and run after a restart)
        checked = [self._PrepareJob(position, ids, ops)
                   for position, ops in enumerate(all_ops)]
        jobs: list[QueuedJob] = []
        results: list[int | errors.GenericError] = []
        write_error: errors.JobQueueError | None = None
        for item in checked:
            if not isinstance(item, QueuedJob):
                results.append(item)
            elif write_error is not None:
                results.append(write_error)
            else:
                # Durable before anyone learns the id; not yet visible
                try:
                    self._store.WriteJob(item)
                except errors.JobQueueError as err:
                    write_error = err
                    results.append(err)
                else:
                    jobs.append(item)
                    results.append(item.id)
        if jobs:
            self._store.WriteSerial()
        self._store.AddJobs(jobs)
        # Jobs a REJECT rule applies to are canceled, as Ganeti's
        # scheduler does
        self._executor.CancelRejected(self._scheduler.Admit(jobs))
        return results

    def _PrepareJob(self, position: int, batch_ids: list[int],
                    ops: list[opcodes.OpCode]
                    ) -> QueuedJob | errors.GenericError:
        """The job at ``position`` of a submission, or why it is refused:
        relative dependencies pointing before the submission (Ganeti
        answers those per job, too).

        A job a REJECT filter rule applies to is not refused: as in
        Ganeti, it is written and then canceled (``Admit``), so that its
        id refers to a job.
        """
        job_id = batch_ids[position]
        try:
            _ResolveRelativeDeps(position, batch_ids, ops)
        except errors.OpPrereqError as err:
            return err
        for index, op in enumerate(ops):
            op.reason = list(op.reason) + [[
                "%s:%s" % (constants.OPCODE_REASON_SRC_OPCODE,
                           op.OP_ID[3:].lower()),
                "job=%d;index=%d" % (job_id, index), time.time_ns()]]
        return QueuedJob(self, job_id, [QueuedOpCode(op) for op in ops])

    # Job control -------------------------------------------------------------
    def CancelJob(self, job_id: int, kill: bool = False) -> list:
        """Cancel a job that has not started running opcodes."""
        del kill  # threads cannot be killed; running jobs are refused
        job = self._store.GetLiveJob(job_id)
        if job is None:
            return [False, "Job %s not found" % job_id]
        return self._executor.CancelJob(job)

    def ChangeJobPriority(self, job_id: int, priority: int) -> list:
        """Change the priority of a job's unfinished opcodes."""
        if not (constants.OP_PRIO_HIGHEST <= priority <=
                constants.OP_PRIO_LOWEST):
            raise errors.OpPrereqError("Invalid priority %r" % (priority, ),
                                       errors.ECODE_INVAL)
        job = self._store.GetLiveJob(job_id)
        if job is None:
            return [False, "Job %s not found" % job_id]
        def change() -> None:
            for op in job.ops:
                if op.status not in constants.OPS_FINALIZED:
                    op.priority = priority
        with job.lock:
            if job.CalcStatus() in constants.JOBS_FINALIZED:
                return [False, "Job %s is finished" % job_id]
            self._executor.ChangeJobUnlocked(job, change)
        self._scheduler.Requeue(job)
        return [True, "Priorities of pending opcodes for job %s have"
                " been changed to %s" % (job_id, priority)]

    def ArchiveJob(self, job_id: int) -> bool:
        """Move a finished job to the archive."""
        return self._store.ArchiveJob(job_id)

    def AutoArchiveJobs(self, age: float, timeout: float) -> list[int]:
        """Archive finished jobs older than ``age`` seconds (all if < 0)."""
        return self._store.AutoArchiveJobs(age, timeout)

    # Queries -----------------------------------------------------------------
    def GetJob(self, job_id: int) -> QueuedJob | None:
        """A live job, or an archived one loaded from disk (read-only)."""
        return self._store.GetJob(job_id)

    def GetJobIds(self, archived: bool = False) -> list[int]:
        """The live jobs' ids, with ``archived`` the archived ones too
        (read from disk: slow with a big archive)."""
        ids = self._store.JobIds()
        if archived:
            ids = sorted(set(ids).union(self._store.ArchivedJobIds()))
        return ids

    def QueryJobs(self, job_ids: list | None, fields: list[str]) -> list:
        """Old-style query: one row of field values per job (None if gone)."""
        _jobs.CheckJobFields(fields)
        if job_ids is None:
            job_ids = self.GetJobIds()
        rows: list[list | None] = []
        for job_id in job_ids:
            job = self._store.GetJob(int(job_id))
            if job is None:
                rows.append(None)
                continue
            with job.lock:
                rows.append(job.GetInfo(fields))
        return rows

    def WaitForJobChange(self, job_id: int, fields: list[str],
                         prev_job_info: Any, prev_log_serial: int | None,
                         timeout: float) -> Any:
        """Block until the job differs from what the caller has seen.

        Returns ``[job_info, new_log_entries]``; on timeout the current
        state (possibly unchanged). A job that does not exist raises
        JobLost.
        """
        _jobs.CheckJobFields(fields)
        job = self._store.GetJob(job_id)
        if job is None:
            raise errors.JobLost("Job %s not found" % job_id)
        return self._executor.WaitForJobChange(
            job, fields, prev_job_info, prev_log_serial or 0,
            min(max(timeout, 0), constants.LUXI_WFJC_TIMEOUT))

    def GetQueueStats(self) -> dict:
        """Counts for ``gnt-cluster queue info``."""
        jobs = self._store.LiveJobs()
        counts: dict[str, int] = {}
        for job in jobs:
            status = job.CalcStatus()
            counts[status] = counts.get(status, 0) + 1
        return {"drained": self._store.IsDrained(), "jobs": len(jobs),
                "running": self._scheduler.running, "by_status": counts}

    # Shutdown ----------------------------------------------------------------
    def Shutdown(self, timeout: float | None = None) -> None:
        """Stop picking up jobs; wait for running ones up to ``timeout``
        (default SHUTDOWN_TIMEOUT, or what ENV_SHUTDOWN_TIMEOUT sets).

        Jobs still running afterwards are failed at the next start, since
        their file says running; every file on disk is complete either way.
        """
        if timeout is None:
            timeout = tunable.Seconds(ENV_SHUTDOWN_TIMEOUT, SHUTDOWN_TIMEOUT)
        self._scheduler.Shutdown()
        self._executor.Shutdown(self._store.LiveJobs(), timeout)
        self._store.Close()
