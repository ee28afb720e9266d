"""The job queue: durable jobs, scheduling, execution and waiting.

One JSON file per job (``queue/job-N``), replaced atomically and durably
before a state change is reported to anyone. Jobs are kept in memory while
they are in the queue directory (archived ones are read from disk on
demand). A pool of worker threads runs jobs by priority, then id, within
the cluster's ``max_running_jobs``; jobs whose dependencies are unresolved
wait outside the pool. Waiters (WaitForJobChange) sleep on a per-job
condition and are woken by every change, so no one polls.

Locking: each job has its own lock, held while its state changes and its
file is written, and taken by waiters and queries, so nobody sees a state
that is not on disk yet. Writes of different jobs run in parallel, which
lets their fsyncs share journal commits. The queue lock only guards the
queue's own structures (job table, ready heap, dependency waiters,
counters) and is never taken while a job lock is held.
"""

import errno
import fcntl
import heapq
import logging
import os
import re
import threading
import time
from typing import Any, Callable

from ganeti import constants, errors, mcpu, opcodes, pathutils, serializer
from ganeti import utils
from ganeti.jqueue import filters as _filters
from ganeti.jqueue import jobs as _jobs
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode, TimeStampNow

_JOB_FILE_RE = re.compile(r"^job-(\d+)$")

__all__ = ["JobQueue", "QueuedJob", "QueuedOpCode", "TimeStampNow"]


class _CancelJob(Exception):
    """The job was canceled while waiting for locks."""


class _OpExecCallbacks(mcpu.OpExecCbBase):
    """Connects the processor to the queue for one opcode."""

    def __init__(self, queue: "JobQueue", job: QueuedJob, op: QueuedOpCode):
        self._queue = queue
        self._job = job
        self._op = op

    def NotifyStart(self) -> None:
        with self._job.lock:
            if self._op.status == constants.OP_STATUS_CANCELING:
                raise _CancelJob()
            self._op.status = constants.OP_STATUS_RUNNING
            self._op.exec_timestamp = TimeStampNow()
            self._queue.UpdateJobUnlocked(self._job)

    def Feedback(self, *args: Any) -> None:
        if len(args) == 1:
            log_type, message = constants.ELOG_MESSAGE, args[0]
        else:
            log_type, message = args
        with self._job.lock:
            self._job.log_serial += 1
            self._op.log.append((self._job.log_serial, TimeStampNow(),
                                 log_type, message))
            self._job.Notify()

    def CurrentPriority(self) -> int:
        return self._op.priority

    def ChangePriority(self, priority: int) -> None:
        with self._job.lock:
            self._op.priority = priority
            self._job.Notify()

    def CheckCancel(self) -> None:
        with self._job.lock:
            if self._op.status == constants.OP_STATUS_CANCELING:
                raise _CancelJob()

    def SubmitManyJobs(self, jobs: list[list]) -> list:
        return self._queue.SubmitManyJobs(jobs)


class JobQueue:
    """The queue of one master daemon (owns the queue directory)."""

    def __init__(self, context: Any, queue_dir: str = pathutils.QUEUE_DIR,
                 replicate_fn: Callable[[str, str], None] | None = None,
                 rename_fn: Callable[[list], None] | None = None,
                 num_workers: int = constants.JOBQUEUE_THREADS):
        self.context = context
        self._dir = queue_dir
        self._archive_dir = os.path.join(queue_dir, "archive")
        self._replicate = replicate_fn
        self._replicate_rename = rename_fn
        self.lock = threading.Lock()
        self._work_cond = threading.Condition(self.lock)
        self._jobs: dict[int, QueuedJob] = {}
        self._ready: list[tuple[int, int]] = []   # heap of (priority, id)
        self._dep_waiters: dict[int, set[int]] = {}
        self._running = 0
        self._max_running = self._ReadMaxRunning()
        # Filter rules and rate limits: which queued jobs may start
        self._filters = _filters.JobFilters()
        self._shutdown = False
        # Serializes writes of the serial file (outside the queue lock)
        self._serial_lock = threading.Lock()
        self._serial_written = 0
        self._lock_fd = self._AcquireQueueLock()
        utils.EnsureDirs([(self._dir, constants.SECURE_DIR_MODE),
                          (self._archive_dir, constants.SECURE_DIR_MODE)])
        self._CheckVersion()
        self._last_serial = self._ReadSerial()
        with self.lock:
            self._LoadJobs()
        self.UpdateFilters()
        self._workers = [threading.Thread(target=self._WorkerLoop,
                                          name="jq-worker-%d" % i,
                                          daemon=True)
                         for i in range(num_workers)]
        for worker in self._workers:
            worker.start()

    # Start-up ------------------------------------------------------------------
    def _AcquireQueueLock(self) -> int:
        os.makedirs(self._dir, mode=constants.SECURE_DIR_MODE, exist_ok=True)
        fd = os.open(os.path.join(self._dir, "lock"),
                     os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EAGAIN, errno.EACCES):
                raise errors.JobQueueError(
                    "Job queue %s is locked by another master daemon" %
                    self._dir)
            raise
        return fd

    def _CheckVersion(self) -> None:
        path = os.path.join(self._dir, "version")
        try:
            version = int(utils.ReadOneLineFile(path))
        except FileNotFoundError:
            utils.WriteFile(path, data="%d\n" % constants.JOB_QUEUE_VERSION,
                            mode=constants.JOB_QUEUE_FILES_PERMS)
            return
        except ValueError as err:
            raise errors.JobQueueError("Bad job queue version file: %s" % err)
        if version != constants.JOB_QUEUE_VERSION:
            raise errors.JobQueueError("Found job queue version %d, expected"
                                       " %d" % (version,
                                                constants.JOB_QUEUE_VERSION))

    def _ReadSerial(self) -> int:
        """Last used job id: the serial file, or higher ids found on disk.

        The serial file is written without fsync; the job files are durable,
        so after a crash the highest id on disk is authoritative.
        """
        try:
            serial = int(utils.ReadOneLineFile(
                os.path.join(self._dir, "serial")))
        except (FileNotFoundError, ValueError):
            serial = 0
        ids = [int(m.group(1)) for m in map(_JOB_FILE_RE.match,
                                            os.listdir(self._dir)) if m]
        archive_dirs = [int(d) for d in os.listdir(self._archive_dir)
                        if d.isdigit()]
        if archive_dirs:
            top = os.path.join(self._archive_dir, str(max(archive_dirs)))
            ids.extend(int(m.group(1)) for m in
                       map(_JOB_FILE_RE.match, os.listdir(top)) if m)
        return max([serial] + ids)

    def _LoadJobs(self) -> None:
        """Load live jobs; fail interrupted ones, re-queue queued ones."""
        for name in sorted(os.listdir(self._dir)):
            match = _JOB_FILE_RE.match(name)
            if not match:
                continue
            job_id = int(match.group(1))
            path = os.path.join(self._dir, name)
            try:
                job = QueuedJob.Restore(self, serializer.LoadJson(
                    utils.ReadFile(path)))
                if job.id != job_id:
                    raise ValueError("file holds job %s" % job.id)
            except Exception as err:  # pylint: disable=broad-except
                logging.error("Job file %s is corrupted: %s", path, err)
                job = self._ReplaceCorruptJob(job_id, path, err)
            self._jobs[job_id] = job
            self._RecoverJob(job)

    def _ReplaceCorruptJob(self, job_id: int, path: str,
                           err: Exception) -> QueuedJob:
        """Keep the bad file aside and report the job as failed."""
        utils.RenameFile(path, "%s.corrupt-%d" % (path, int(time.time())))
        op = QueuedOpCode(_jobs.InvalidOpCode(
            {"OP_ID": _jobs.INVALID_OP_ID}))
        job = QueuedJob(self, job_id, [op])
        job.MarkUnfinishedOps(constants.OP_STATUS_ERROR, errors.EncodeException(
            errors.JobFileCorrupted("Job file %s is corrupted: %s" %
                                    (path, err))))
        job.end_timestamp = TimeStampNow()
        self._WriteJob(job)
        return job

    def _RecoverJob(self, job: QueuedJob) -> None:
        status = job.CalcStatus()
        if status in constants.JOBS_FINALIZED:
            return
        started = any(op.status in (constants.OP_STATUS_RUNNING,
                                    constants.OP_STATUS_SUCCESS)
                      for op in job.ops)
        if status == constants.JOB_STATUS_CANCELING:
            job.MarkUnfinishedOps(constants.OP_STATUS_CANCELED,
                                  "Job canceled by request")
        elif status == constants.JOB_STATUS_RUNNING or started:
            job.MarkUnfinishedOps(constants.OP_STATUS_ERROR,
                                  errors.EncodeException(errors.OpExecError(
                                      constants.JOB_LOST_MESSAGE)))
        else:
            for op in job.ops:
                op.status = constants.OP_STATUS_QUEUED
            self._Enqueue(job)
            return
        job.end_timestamp = TimeStampNow()
        self._WriteJob(job)

    # Persistence ----------------------------------------------------------------
    def _WriteJob(self, job: QueuedJob) -> None:
        path = pathutils.JobFileName(job.id, queue_dir=self._dir)
        data = serializer.DumpJson(job.Serialize())
        utils.WriteFile(path, data=data, mode=constants.JOB_QUEUE_FILES_PERMS)
        if self._replicate is not None:
            self._replicate(path, data)

    def UpdateJobUnlocked(self, job: QueuedJob) -> None:
        """Persist a job's new state and wake its waiters (job lock held)."""
        self._WriteJob(job)
        job.Notify()

    def _AllocateIds(self, count: int) -> list[int]:
        """Reserve job ids (queue lock held); see _WriteSerial."""
        first = self._last_serial + 1
        self._last_serial += count
        return list(range(first, first + count))

    def _WriteSerial(self) -> None:
        """Record the last used id, outside the queue lock.

        Written without fsync: after a crash the job files, which are
        durable, tell the highest id (see _ReadSerial). Concurrent writers
        only ever move the file forward.
        """
        with self._serial_lock:
            with self.lock:
                serial = self._last_serial
            if serial <= self._serial_written:
                return
            path = os.path.join(self._dir, "serial")
            data = "%d\n" % serial
            utils.WriteFile(path, data=data,
                            mode=constants.JOB_QUEUE_FILES_PERMS, fsync=False)
            self._serial_written = serial
            if self._replicate is not None:
                self._replicate(path, data)

    # Submission -------------------------------------------------------------------
    def IsDrained(self) -> bool:
        return os.path.exists(os.path.join(self._dir, "drain"))

    def SetDrainFlag(self, drain: bool) -> bool:
        """Create or remove the drain flag file."""
        path = os.path.join(self._dir, "drain")
        if drain:
            utils.WriteFile(path, data="", mode=constants.JOB_QUEUE_FILES_PERMS)
        else:
            utils.RemoveFile(path)
        return True

    @staticmethod
    def _LoadOps(ops: Any) -> list[opcodes.OpCode]:
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

    def SubmitJob(self, ops: Any, to_drained: bool = False) -> int:
        """Validate, store and enqueue one job; returns its id."""
        (result, ) = self._SubmitJobs([self._LoadOps(ops)], to_drained)
        if isinstance(result, errors.GenericError):
            raise result
        return result

    def SubmitManyJobs(self, jobs: Any) -> list:
        """Submit several jobs; per job ``[True, id]`` or ``[False, msg]``.

        Relative dependencies (negative ids) refer to jobs earlier in the
        same submission.
        """
        loaded: list = []
        for ops in jobs:
            try:
                loaded.append(self._LoadOps(ops))
            except errors.GenericError as err:
                loaded.append(err)
        good = [ops for ops in loaded if not isinstance(ops, Exception)]
        results = iter(self._SubmitJobs(good, False) if good else [])
        answer = []
        for item in loaded:
            if not isinstance(item, Exception):
                item = next(results)
            answer.append([False, str(item)] if isinstance(item, Exception)
                          else [True, item])
        return answer

    def _SubmitJobs(self, all_ops: list[list],
                    to_drained: bool) -> list[int | errors.GenericError]:
        """Store and enqueue jobs; per job its id, or why it was refused.

        A job a REJECT filter rule applies to is refused before it is
        written (its id stays unused).
        """
        with self.lock:
            if self._shutdown:
                raise errors.JobQueueError("Job queue is shutting down")
            if not to_drained and self.IsDrained():
                raise errors.JobQueueDrainError("Job queue is drained,"
                                                " refusing job")
            ids = self._AllocateIds(len(all_ops))
        jobs = []
        results: list[int | errors.GenericError] = []
        for job_id, ops in zip(ids, all_ops):
            self._ResolveRelativeDeps(job_id, ids, ops)
            for index, op in enumerate(ops):
                op.reason = list(op.reason) + [[
                    "%s:%s" % (constants.OPCODE_REASON_SRC_OPCODE,
                               op.OP_ID[3:].lower()),
                    "job=%d;index=%d" % (job_id, index), time.time_ns()]]
            job = QueuedJob(self, job_id, [QueuedOpCode(op) for op in ops])
            rule = self._filters.RejectingRule(job)
            if rule is not None:
                results.append(errors.OpPrereqError(
                    "Job rejected by filter rule %s" % rule,
                    errors.ECODE_STATE))
                continue
            # Durable before anyone learns the id; not yet visible to others
            self._WriteJob(job)
            jobs.append(job)
            results.append(job_id)
        self._WriteSerial()
        with self.lock:
            for job in jobs:
                self._jobs[job.id] = job
                self._Enqueue(job)
            # A REJECT rule may have been added since the check above
            rejected = self._RejectedJobs(jobs)
        self._CancelRejected(rejected)
        return results

    @staticmethod
    def _ResolveRelativeDeps(job_id: int, batch_ids: list[int],
                             ops: list[opcodes.OpCode]) -> None:
        position = batch_ids.index(job_id)
        for op in ops:
            if not op.depends:
                continue
            resolved = []
            for dep_id, statuses in op.depends:
                dep_id = int(dep_id)
                if dep_id < 0:
                    if -dep_id > position:
                        raise errors.OpPrereqError(
                            "Relative job dependency %d out of range" %
                            dep_id, errors.ECODE_INVAL)
                    dep_id = batch_ids[position + dep_id]
                resolved.append([dep_id, statuses])
            op.depends = resolved

    # Scheduling --------------------------------------------------------------------
    def _Enqueue(self, job: QueuedJob) -> None:
        """Make a job eligible for a worker (lock held)."""
        heapq.heappush(self._ready, (job.CalcPriority(), job.id))
        self._work_cond.notify()

    def _ReadMaxRunning(self) -> int:
        try:
            return self.context.cfg.GetClusterInfo().max_running_jobs
        except AttributeError:
            return constants.DEFAULT_MAX_RUNNING_JOBS

    def WakeWorkers(self) -> None:
        """Re-read the running-job limit (after it was changed)."""
        limit = self._ReadMaxRunning()
        with self.lock:
            self._max_running = limit
            self._work_cond.notify_all()

    def _PopRunnable(self) -> QueuedJob | None:
        """Next job to run, skipping stale heap entries (lock held)."""
        while self._ready:
            priority, job_id = heapq.heappop(self._ready)
            job = self._jobs.get(job_id)
            if job is None or job.CalcStatus() not in (
                    constants.JOB_STATUS_QUEUED, constants.JOB_STATUS_WAITING):
                continue
            if job.in_worker:
                continue
            if priority != job.CalcPriority():
                heapq.heappush(self._ready, (job.CalcPriority(), job_id))
                continue
            if not self._filters.TryStart(job):
                continue  # held back until its rule or bucket allows it
            return job
        return None

    def _ReadFilterRules(self) -> list:
        try:
            return list(self.context.cfg.GetFilterRules().values())
        except AttributeError:
            return []

    def UpdateFilters(self) -> None:
        """Apply the configuration's current filter rules (after a change).

        Held jobs are evaluated again and queued jobs that a REJECT rule
        now applies to are canceled.
        """
        with self.lock:
            # Read under the lock so that concurrent updates apply in order
            for job in self._filters.SetRules(self._ReadFilterRules()):
                self._Enqueue(job)
            rejected = self._RejectedJobs(list(self._jobs.values()))
            self._work_cond.notify_all()
        self._CancelRejected(rejected)

    def HighestJobId(self) -> int:
        """The last job id allocated (the watermark of a new filter rule)."""
        with self.lock:
            return self._last_serial

    def _RejectedJobs(self, jobs: list[QueuedJob]) -> list[tuple]:
        """``(job, rule uuid)`` of pending jobs to cancel (lock held)."""
        if not self._filters.has_reject:
            return []
        result = []
        for job in jobs:
            if job.in_worker or job.CalcStatus() not in (
                    constants.JOB_STATUS_QUEUED, constants.JOB_STATUS_WAITING):
                continue
            rule = self._filters.RejectingRule(job)
            if rule is not None:
                result.append((job, rule))
        return result

    def _CancelRejected(self, rejected: list[tuple]) -> None:
        """Cancel jobs rejected by a filter rule (queue lock not held).

        A job a worker picked up meanwhile is left to the worker, which
        checks the rules before each opcode (``in_worker`` is set before
        the worker takes the job lock).
        """
        for job, rule in rejected:
            with job.lock:
                if job.in_worker or job.CalcStatus() not in (
                        constants.JOB_STATUS_QUEUED,
                        constants.JOB_STATUS_WAITING):
                    continue
                self._FinishJobUnlocked(job, constants.OP_STATUS_CANCELED,
                                        "Job canceled by filter rule %s" %
                                        rule)
            self._ReleaseDependents(job)

    def _WorkerLoop(self) -> None:
        thread = threading.current_thread()
        idle_name = thread.name
        while True:
            with self.lock:
                while True:
                    if self._shutdown:
                        return
                    if self._running < self._max_running:
                        job = self._PopRunnable()
                        if job is not None:
                            break
                    self._work_cond.wait()
                self._running += 1
                job.in_worker = True
            thread.name = "job/%d" % job.id
            try:
                self._RunJob(job)
            except Exception:  # pylint: disable=broad-except
                logging.exception("Unhandled error while processing job %s",
                                  job.id)
            finally:
                thread.name = idle_name
                with self.lock:
                    self._running -= 1
                    job.in_worker = False
                    for held in self._filters.Finished(job):
                        self._Enqueue(held)
                    # A dependency may have finished while this worker still
                    # held the job; its wake-up was skipped, so re-check
                    if (job.CalcStatus() not in constants.JOBS_FINALIZED and
                            not any(job.id in waiters for waiters in
                                    self._dep_waiters.values())):
                        self._Enqueue(job)
                    self._work_cond.notify()

    def _DependencyState(self, op: QueuedOpCode) -> tuple[str, str | None]:
        """("ok"|"wait"|"fail", message) for an opcode's dependencies.

        The message of "wait" names the job waited for.
        """
        for dep_id, statuses in (op.input.depends or []):
            dep_id = int(dep_id)
            dep = self._jobs.get(dep_id)
            if dep is None:
                dep_status = self._ArchivedJobStatus(dep_id)
                if dep_status is None:
                    return "fail", "Dependency job %d not found" % dep_id
            else:
                dep_status = dep.CalcStatus()
            if dep_status not in constants.JOBS_FINALIZED:
                self._dep_waiters.setdefault(dep_id, set()).add(op.job_id)
                return "wait", "job %d" % dep_id
            if statuses and dep_status not in statuses:
                return "fail", ("Dependency job %d finished with status '%s',"
                                " not one of '%s' as required" %
                                (dep_id, dep_status, "', '".join(statuses)))
        return "ok", None

    def _ArchivedJobStatus(self, job_id: int) -> str | None:
        job = self._LoadArchived(job_id)
        return job.CalcStatus() if job is not None else None

    def _RunJob(self, job: QueuedJob) -> None:
        proc = mcpu.Processor(self.context, job.id)
        with job.lock:
            if job.CalcStatus() in constants.JOBS_FINALIZED:
                return  # canceled while it was being picked up
        for op in job.ops:
            if op.status in constants.OPS_FINALIZED:
                continue
            with self.lock:
                # Rules added since the job was picked: a PAUSE stops it
                # before its next opcode (the worker loop then holds it
                # back until the rule goes), a REJECT cancels it if it has
                # not started yet
                paused = self._filters.PausingRule(job) is not None
                rejected = self._filters.RejectingRule(job)
                state, message = (("ok", None) if paused
                                  else self._DependencyState(op))
            with job.lock:
                if op.status == constants.OP_STATUS_CANCELING:
                    self._FinishJobUnlocked(job, constants.OP_STATUS_CANCELED,
                                            "Job canceled by request")
                    break
                if rejected is not None and job.start_timestamp is None:
                    self._FinishJobUnlocked(job, constants.OP_STATUS_CANCELED,
                                            "Job canceled by filter rule %s"
                                            % rejected)
                    break
                if paused:
                    return
                if state == "fail":
                    self._FinishJobUnlocked(job, constants.OP_STATUS_ERROR,
                                            errors.EncodeException(
                                                errors.OpExecError(message)))
                    break
                op.status = constants.OP_STATUS_WAITING
                if state == "wait":
                    job.wait_reason = message
                    job.Notify()
                    return
                op.start_timestamp = TimeStampNow()
                if job.start_timestamp is None:
                    job.start_timestamp = op.start_timestamp
                job.Notify()
            if not self._RunOpCode(proc, job, op):
                break
        else:
            with job.lock:
                self._FinishJobUnlocked(job, None, None)
        self._ReleaseDependents(job)

    def _RunOpCode(self, proc: mcpu.Processor, job: QueuedJob,
                   op: QueuedOpCode) -> bool:
        """Run one opcode; False if the job ended (error or cancel)."""
        cbs = _OpExecCallbacks(self, job, op)
        try:
            result = proc.ExecOpCode(op.input, cbs)
        except _CancelJob:
            with job.lock:
                self._FinishJobUnlocked(job, constants.OP_STATUS_CANCELED,
                                        "Job canceled by request")
            return False
        except Exception as err:  # pylint: disable=broad-except
            if not isinstance(err, errors.GenericError):
                logging.exception("Error in opcode %s of job %d",
                                  op.input.OP_ID, job.id)
            else:
                logging.info("Opcode %s of job %d failed: %s",
                             op.input.OP_ID, job.id, err)
            with job.lock:
                op.status = constants.OP_STATUS_ERROR
                op.result = errors.EncodeException(err)
                op.end_timestamp = TimeStampNow()
                self._FinishJobUnlocked(job, constants.OP_STATUS_ERROR,
                                        errors.EncodeException(
                                            errors.OpExecError(
                                                "Preceding opcode failed")))
            return False
        with job.lock:
            op.status = constants.OP_STATUS_SUCCESS
            op.result = result
            op.end_timestamp = TimeStampNow()
            if op is not job.ops[-1]:
                self.UpdateJobUnlocked(job)
        return True

    def _FinishJobUnlocked(self, job: QueuedJob, status: str | None,
                           result: Any) -> None:
        """Finalize a job and persist it (job lock held).

        The caller releases dependent jobs afterwards (_ReleaseDependents),
        which needs the queue lock.
        """
        if status is not None:
            job.MarkUnfinishedOps(status, result)
        job.end_timestamp = TimeStampNow()
        self.UpdateJobUnlocked(job)

    def _ReleaseDependents(self, job: QueuedJob) -> None:
        """Let jobs waiting for a finished job be scheduled again."""
        with self.lock:
            for waiter_id in self._dep_waiters.pop(job.id, ()):
                waiter = self._jobs.get(waiter_id)
                if waiter is not None:
                    self._Enqueue(waiter)

    # Job control ---------------------------------------------------------------------
    def CancelJob(self, job_id: int, kill: bool = False) -> list:
        """Cancel a job that has not started running opcodes."""
        del kill  # threads cannot be killed; running jobs are refused
        with self.lock:
            job = self._jobs.get(job_id)
            if job is None:
                return [False, "Job %s not found" % job_id]
            with job.lock:
                status = job.CalcStatus()
                if status in (constants.JOB_STATUS_QUEUED,
                              constants.JOB_STATUS_WAITING):
                    if not job.in_worker:
                        self._FinishJobUnlocked(
                            job, constants.OP_STATUS_CANCELED,
                            "Job canceled by request")
                        canceled = True
                    else:
                        job.MarkUnfinishedOps(constants.OP_STATUS_CANCELING,
                                              None)
                        self.UpdateJobUnlocked(job)
                        return [True, "Job %s will be canceled" % job_id]
                elif status == constants.JOB_STATUS_CANCELING:
                    return [True, "Job %s will be canceled" % job_id]
                elif status == constants.JOB_STATUS_RUNNING:
                    return [False, "Job %s is running and cannot be"
                            " canceled" % job_id]
                else:
                    return [False, "Job %s is no longer waiting in the"
                            " queue" % job_id]
        if canceled:
            self._ReleaseDependents(job)
        return [True, "Job %s canceled" % job_id]

    def ChangeJobPriority(self, job_id: int, priority: int) -> list:
        """Change the priority of a job's unfinished opcodes."""
        if not (constants.OP_PRIO_HIGHEST <= priority <=
                constants.OP_PRIO_LOWEST):
            raise errors.OpPrereqError("Invalid priority %r" % (priority, ),
                                       errors.ECODE_INVAL)
        with self.lock:
            job = self._jobs.get(job_id)
            if job is None:
                return [False, "Job %s not found" % job_id]
            with job.lock:
                if job.CalcStatus() in constants.JOBS_FINALIZED:
                    return [False, "Job %s is finished" % job_id]
                for op in job.ops:
                    if op.status not in constants.OPS_FINALIZED:
                        op.priority = priority
                self.UpdateJobUnlocked(job)
            if not job.in_worker:
                self._Enqueue(job)
            return [True, "Priorities of pending opcodes for job %s have"
                    " been changed to %s" % (job_id, priority)]

    def _ArchiveUnlocked(self, jobs: list[QueuedJob]) -> int:
        renames = []
        for job in jobs:
            old = pathutils.JobFileName(job.id, queue_dir=self._dir)
            new = pathutils.JobFileName(job.id, archived=True,
                                        queue_dir=self._dir)
            utils.RenameFile(old, new, mkdir=True,
                             mkdir_mode=constants.SECURE_DIR_MODE)
            renames.append((old, new))
            del self._jobs[job.id]
        if renames:
            utils.FsyncDirectory(self._dir)
            if self._replicate_rename is not None:
                self._replicate_rename(renames)
        return len(renames)

    def ArchiveJob(self, job_id: int) -> bool:
        """Move a finished job to the archive."""
        with self.lock:
            job = self._jobs.get(job_id)
            if job is None or job.CalcStatus() not in \
                    constants.JOBS_FINALIZED:
                return False
            return self._ArchiveUnlocked([job]) == 1

    def AutoArchiveJobs(self, age: float, timeout: float) -> list[int]:
        """Archive finished jobs older than ``age`` seconds (all if < 0)."""
        deadline = time.monotonic() + timeout
        now = time.time()
        archived = 0
        with self.lock:
            candidates = [job for job in self._jobs.values()
                          if job.CalcStatus() in constants.JOBS_FINALIZED]
            remaining = len(self._jobs)
            batch = []
            for job in sorted(candidates, key=lambda j: j.id):
                if time.monotonic() > deadline:
                    break
                end = job.end_timestamp or job.received_timestamp
                if age < 0 or (end and end[0] < now - age):
                    batch.append(job)
                if len(batch) >= 10:
                    archived += self._ArchiveUnlocked(batch)
                    batch = []
            archived += self._ArchiveUnlocked(batch)
            remaining -= archived
        return [archived, remaining]

    # Queries ---------------------------------------------------------------------
    def _LoadArchived(self, job_id: int) -> QueuedJob | None:
        path = pathutils.JobFileName(job_id, archived=True,
                                     queue_dir=self._dir)
        try:
            job = QueuedJob.Restore(self, serializer.LoadJson(
                utils.ReadFile(path)))
        except (OSError, ValueError):
            return None
        job.archived = True
        return job

    def GetJob(self, job_id: int) -> QueuedJob | None:
        """A live job, or an archived one loaded from disk (read-only)."""
        with self.lock:
            job = self._jobs.get(job_id)
        if job is None:
            job = self._LoadArchived(job_id)
        return job

    def GetJobIds(self) -> list[int]:
        with self.lock:
            return sorted(self._jobs)

    def QueryJobs(self, job_ids: list | None, fields: list[str]) -> list:
        """Old-style query: one row of field values per job (None if gone)."""
        _jobs.CheckJobFields(fields)
        if job_ids is None:
            job_ids = self.GetJobIds()
        rows = []
        for job_id in job_ids:
            job = self.GetJob(int(job_id))
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
        timeout = min(max(timeout, 0), constants.LUXI_WFJC_TIMEOUT)
        deadline = time.monotonic() + timeout
        prev_log_serial = prev_log_serial or 0
        with self.lock:
            job = self._jobs.get(job_id)
        if job is None:
            archived = self._LoadArchived(job_id)
            if archived is None:
                raise errors.JobLost("Job %s not found" % job_id)
            return [archived.GetInfo(fields),
                    archived.GetLogEntries(prev_log_serial)]
        with job.lock:
            while True:
                info = job.GetInfo(fields)
                log_entries = job.GetLogEntries(prev_log_serial)
                if (info != prev_job_info or log_entries or
                        job.CalcStatus() in constants.JOBS_FINALIZED):
                    return [info, log_entries]
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._shutdown:
                    return [info, []]
                job.WaitForChange(remaining)

    def GetQueueStats(self) -> dict:
        """Counts for ``gnt-cluster queue info``."""
        with self.lock:
            counts: dict[str, int] = {}
            for job in list(self._jobs.values()):
                status = job.CalcStatus()
                counts[status] = counts.get(status, 0) + 1
            return {"drained": self.IsDrained(), "jobs": len(self._jobs),
                    "running": self._running, "by_status": counts}

    # Shutdown ---------------------------------------------------------------------
    def Shutdown(self, timeout: float = 10.0) -> None:
        """Stop picking up jobs; wait for running ones up to ``timeout``.

        Jobs still running afterwards are failed at the next start, since
        their file says running; every file on disk is complete either way.
        """
        with self.lock:
            self._shutdown = True
            self._work_cond.notify_all()
            jobs = list(self._jobs.values())
        for job in jobs:
            with job.lock:
                job.Notify()
        deadline = time.monotonic() + timeout
        for worker in self._workers:
            worker.join(max(deadline - time.monotonic(), 0))
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
