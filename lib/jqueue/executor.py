"""The job queue's executor: worker threads, cancellation, change waits.

A pool of worker threads takes jobs from the scheduler (jqueue.scheduler)
and runs their opcodes through the processor (mcpu). Every state change is
made under the job's lock and written (``write_fn``, the store's) before
the lock is released, so nobody sees a state that is not on disk yet;
then the job's waiters (WaitForJobChange) are woken. Each job has its own
lock, so writes of different jobs, and their fsyncs, run in parallel.
"""

import logging
import threading
import time
from typing import Any, Callable

from ganeti import constants, errors, mcpu
from ganeti.jqueue import scheduler as _scheduler
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode, TimeStampNow


class _CancelJob(Exception):
    """The job was canceled while waiting for locks."""


class _OpExecCallbacks(mcpu.OpExecCbBase):
    """Connects the processor to the executor for one opcode."""

    def __init__(self, executor: "Executor", job: QueuedJob,
                 op: QueuedOpCode, submit_fn: Callable[[list], list]):
        self._executor = executor
        self._job = job
        self._op = op
        self._submit = submit_fn

    def NotifyStart(self) -> None:
        with self._job.lock:
            if self._op.status == constants.OP_STATUS_CANCELING:
                raise _CancelJob()
            self._op.status = constants.OP_STATUS_RUNNING
            self._op.exec_timestamp = TimeStampNow()
            self._executor.UpdateJobUnlocked(self._job)

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
        return self._submit(jobs)


class Executor:
    """Runs the jobs the scheduler hands out, and lets clients wait.

    ``write_fn`` persists a job (called with its lock held);
    ``submit_fn`` submits jobs for an opcode (SubmitManyJobs' answer).
    """

    def __init__(self, context: Any, scheduler: _scheduler.Scheduler,
                 write_fn: Callable[[QueuedJob], None],
                 submit_fn: Callable[[list], list]):
        self._context = context
        self._scheduler = scheduler
        self._write = write_fn
        self._submit = submit_fn
        self._shutdown = False
        self._workers: list[threading.Thread] = []

    def Start(self, num_workers: int) -> None:
        """Start the worker threads (daemon threads: see ``Shutdown``)."""
        self._workers = [threading.Thread(target=self._WorkerLoop,
                                          name="jq-worker-%d" % i,
                                          daemon=True)
                         for i in range(num_workers)]
        for worker in self._workers:
            worker.start()

    # State changes (the job lock held) ---------------------------------------
    def UpdateJobUnlocked(self, job: QueuedJob) -> None:
        """Persist a job's new state and wake its waiters."""
        self._write(job)
        job.Notify()

    def _FinishJobUnlocked(self, job: QueuedJob, status: str | None,
                           result: Any) -> None:
        """Finalize a job and persist it.

        The caller releases dependent jobs afterwards
        (``Scheduler.ReleaseDependents``), which takes the scheduler lock.
        """
        if status is not None:
            job.MarkUnfinishedOps(status, result)
        job.end_timestamp = TimeStampNow()
        self.UpdateJobUnlocked(job)

    # Workers -----------------------------------------------------------------
    def _WorkerLoop(self) -> None:
        thread = threading.current_thread()
        idle_name = thread.name
        while True:
            job = self._scheduler.NextJob()
            if job is None:
                return
            thread.name = "job/%d" % job.id
            try:
                self._RunJob(job)
            except Exception:  # pylint: disable=broad-except
                logging.exception("Unhandled error while processing job %s",
                                  job.id)
            finally:
                thread.name = idle_name
                self._scheduler.JobLeftWorker(job)

    def _RunJob(self, job: QueuedJob) -> None:
        proc = mcpu.Processor(self._context, job.id)
        with job.lock:
            if job.CalcStatus() in constants.JOBS_FINALIZED:
                return  # canceled while it was being picked up
        for op in job.ops:
            if op.status in constants.OPS_FINALIZED:
                continue
            check = self._scheduler.CheckOpCode(job, op)
            with job.lock:
                if op.status == constants.OP_STATUS_CANCELING:
                    self._FinishJobUnlocked(job, constants.OP_STATUS_CANCELED,
                                            "Job canceled by request")
                    break
                if check.rejected is not None and job.start_timestamp is None:
                    self._FinishJobUnlocked(job, constants.OP_STATUS_CANCELED,
                                            "Job canceled by filter rule %s"
                                            % check.rejected)
                    break
                if check.paused:
                    return
                if check.deps == _scheduler.DEPS_FAIL:
                    self._FinishJobUnlocked(job, constants.OP_STATUS_ERROR,
                                            errors.EncodeException(
                                                errors.OpExecError(
                                                    check.message)))
                    break
                op.status = constants.OP_STATUS_WAITING
                if check.deps == _scheduler.DEPS_WAIT:
                    job.wait_reason = check.message
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
        self._scheduler.ReleaseDependents(job)

    def _RunOpCode(self, proc: mcpu.Processor, job: QueuedJob,
                   op: QueuedOpCode) -> bool:
        """Run one opcode; False if the job ended (error or cancel)."""
        cbs = _OpExecCallbacks(self, job, op, self._submit)
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

    # Cancellation ------------------------------------------------------------
    def CancelJob(self, job: QueuedJob) -> list:
        """Cancel a job that has not started running opcodes.

        A job outside a worker is canceled at once; one in a worker (waiting
        for locks, or just picked up) is marked canceling and its worker
        cancels it before the opcode runs.
        """
        with self._scheduler.lock:
            with job.lock:
                status = job.CalcStatus()
                if status in (constants.JOB_STATUS_QUEUED,
                              constants.JOB_STATUS_WAITING):
                    if job.in_worker:
                        job.MarkUnfinishedOps(constants.OP_STATUS_CANCELING,
                                              None)
                        self.UpdateJobUnlocked(job)
                        return [True, "Job %s will be canceled" % job.id]
                    self._FinishJobUnlocked(job, constants.OP_STATUS_CANCELED,
                                            "Job canceled by request")
                elif status == constants.JOB_STATUS_CANCELING:
                    return [True, "Job %s will be canceled" % job.id]
                elif status == constants.JOB_STATUS_RUNNING:
                    return [False, "Job %s is running and cannot be"
                            " canceled" % job.id]
                else:
                    return [False, "Job %s is no longer waiting in the"
                            " queue" % job.id]
        self._scheduler.ReleaseDependents(job)
        return [True, "Job %s canceled" % job.id]

    def CancelRejected(self, rejected: list[tuple]) -> None:
        """Cancel ``(job, rule uuid)`` pending jobs a REJECT rule applies to.

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
            self._scheduler.ReleaseDependents(job)

    # Change notification -----------------------------------------------------
    def WaitForJobChange(self, job: QueuedJob, fields: list[str],
                         prev_job_info: Any, prev_log_serial: int,
                         timeout: float) -> list:
        """Block until the job differs from what the caller has seen.

        Returns ``[job_info, new_log_entries]``: at once if the job is
        finalized (or archived), else on its next change or, after
        ``timeout`` seconds or at shutdown, its current state (the log
        entries then left out).
        """
        deadline = time.monotonic() + timeout
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

    def Shutdown(self, jobs: list[QueuedJob], timeout: float) -> None:
        """Wake the waiters of ``jobs``; wait up to ``timeout`` for workers.

        The scheduler must have been shut down first, so that workers take
        no new job.
        """
        self._shutdown = True
        for job in jobs:
            with job.lock:
                job.Notify()
        deadline = time.monotonic() + timeout
        for worker in self._workers:
            worker.join(max(deadline - time.monotonic(), 0))
