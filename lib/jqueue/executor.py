"""The job queue's executor: worker threads, cancellation, change waits.

A pool of worker threads takes jobs from the scheduler (jqueue.scheduler)
and runs their opcodes through the processor (mcpu). Every state change is
made under the job's lock and written (``write_fn``, the store's) before
the lock is released, so nobody sees a state that is not on disk yet;
then the job's waiters (WaitForJobChange) are woken. Each job has its own
lock, so writes of different jobs, and their fsyncs, run in parallel.

A change whose write fails (a full queue disk) is undone in memory, so
that the job always shows what its file says. A client's request then
fails with the error; a change a worker makes after the fact (an opcode
ran) is retried until the disk accepts it again.
"""

import logging
import threading
import time
from typing import Any, Callable

from ganeti import constants, errors, mcpu
from ganeti.jqueue import scheduler as _scheduler
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode, TimeStampNow


# Seconds between attempts to write a job while the disk refuses it
# (doubling, capped)
_WRITE_RETRY_MIN = 0.5
_WRITE_RETRY_MAX = 5.0


class _CancelJob(Exception):
    """The job was canceled while waiting for locks."""


class _QueueStopped(Exception):
    """The queue shut down while a job's change waited for disk space."""


class _OpExecCallbacks(mcpu.OpExecCbBase):
    """Connects the processor to the executor for one opcode."""

    def __init__(self, executor: "Executor", job: QueuedJob,
                 op: QueuedOpCode, submit_fn: Callable[[list], list]):
        self._executor = executor
        self._job = job
        self._op = op
        self._submit = submit_fn

    def NotifyStart(self) -> None:
        def start() -> None:
            if self._op.status == constants.OP_STATUS_CANCELING:
                raise _CancelJob()
            self._op.status = constants.OP_STATUS_RUNNING
            self._op.exec_timestamp = TimeStampNow()
        self._executor.ChangeJobDurably(self._job, start)

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
        self._stopped = threading.Event()
        self._workers: list[threading.Thread] = []

    def Start(self, num_workers: int) -> None:
        """Start the worker threads (daemon threads: see ``Shutdown``)."""
        self._workers = [threading.Thread(target=self._WorkerLoop,
                                          name="jq-worker-%d" % i,
                                          daemon=True)
                         for i in range(num_workers)]
        for worker in self._workers:
            worker.start()

    # State changes -----------------------------------------------------------
    def ChangeJobUnlocked(self, job: QueuedJob,
                          change: Callable[[], None]) -> None:
        """Apply ``change`` to a job, persist it and wake its waiters.

        The caller holds the job's lock. If ``change`` raises or the write
        fails (JobQueueError), the job is put back as its file has it.
        """
        saved = job.SaveState()
        try:
            change()
            self._write(job)
        except BaseException:
            job.RestoreState(saved)
            raise
        job.Notify()

    def ChangeJobDurably(self, job: QueuedJob,
                         change: Callable[[], None]) -> None:
        """``ChangeJobUnlocked`` for a worker: wait until the disk takes it.

        Takes the job's lock; between attempts it is released, so queries
        and waiters go on seeing the job as its file has it. Raises
        _QueueStopped if the queue shuts down first (the file then decides
        what the next start makes of the job).
        """
        delay = _WRITE_RETRY_MIN
        failed = False
        while True:
            with job.lock:
                try:
                    self.ChangeJobUnlocked(job, change)
                except errors.JobQueueError as err:
                    if not failed:
                        logging.error("%s; job %d waits until it can be"
                                      " written", err, job.id)
                    failed = True
                else:
                    break
            if self._stopped.wait(delay):
                raise _QueueStopped()
            delay = min(delay * 2, _WRITE_RETRY_MAX)
        if failed:
            logging.info("Job %d written again", job.id)

    @staticmethod
    def _Finish(job: QueuedJob, status: str | None,
                result: Any) -> Callable[[], None]:
        """The change finalizing a job (unfinished opcodes get ``status``).

        The caller releases dependent jobs after it is made
        (``Scheduler.ReleaseDependents``), which takes the scheduler lock.
        """
        def finish() -> None:
            if status is not None:
                job.MarkUnfinishedOps(status, result)
            job.end_timestamp = TimeStampNow()
        return finish

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
            except _QueueStopped:
                logging.info("Job %d left as its file has it at shutdown",
                             job.id)
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
                finish: Callable[[], None] | None = None
                if op.status == constants.OP_STATUS_CANCELING:
                    finish = self._Finish(job, constants.OP_STATUS_CANCELED,
                                          "Job canceled by request")
                elif (check.rejected is not None and
                      job.start_timestamp is None):
                    finish = self._Finish(job, constants.OP_STATUS_CANCELED,
                                          "Job canceled by filter rule %s" %
                                          check.rejected)
                elif check.paused:
                    return
                elif check.deps == _scheduler.DEPS_FAIL:
                    finish = self._Finish(job, constants.OP_STATUS_ERROR,
                                          errors.EncodeException(
                                              errors.OpExecError(
                                                  check.message)))
                else:
                    op.status = constants.OP_STATUS_WAITING
                    if check.deps == _scheduler.DEPS_WAIT:
                        job.wait_reason = check.message
                        job.Notify()
                        return
                    op.start_timestamp = TimeStampNow()
                    if job.start_timestamp is None:
                        job.start_timestamp = op.start_timestamp
                    job.Notify()
            if finish is not None:
                # Written outside the lock section: it may wait for space
                self.ChangeJobDurably(job, finish)
                break
            if not self._RunOpCode(proc, job, op):
                break
        self._scheduler.ReleaseDependents(job)

    def _RunOpCode(self, proc: mcpu.Processor, job: QueuedJob,
                   op: QueuedOpCode) -> bool:
        """Run one opcode; False if the job ended (error or cancel).

        The opcode's outcome and, after the last one, the job's end are
        written as one change: the job is never seen finished before its
        file says so.
        """
        cbs = _OpExecCallbacks(self, job, op, self._submit)
        try:
            result = proc.ExecOpCode(op.input, cbs)
        except _QueueStopped:
            raise
        except _CancelJob:
            self.ChangeJobDurably(job, self._Finish(
                job, constants.OP_STATUS_CANCELED, "Job canceled by request"))
            return False
        except Exception as err:  # pylint: disable=broad-except
            if not isinstance(err, errors.GenericError):
                logging.exception("Error in opcode %s of job %d",
                                  op.input.OP_ID, job.id)
            else:
                logging.info("Opcode %s of job %d failed: %s",
                             op.input.OP_ID, job.id, err)
            finish = self._Finish(job, constants.OP_STATUS_ERROR,
                                  errors.EncodeException(errors.OpExecError(
                                      "Preceding opcode failed")))
            error = errors.EncodeException(err)

            def fail() -> None:
                op.status = constants.OP_STATUS_ERROR
                op.result = error
                op.end_timestamp = TimeStampNow()
                finish()
            self.ChangeJobDurably(job, fail)
            return False

        def succeed() -> None:
            op.status = constants.OP_STATUS_SUCCESS
            op.result = result
            op.end_timestamp = TimeStampNow()
            if op is job.ops[-1]:
                job.end_timestamp = op.end_timestamp
        self.ChangeJobDurably(job, succeed)
        return True

    # Cancellation ------------------------------------------------------------
    def CancelJob(self, job: QueuedJob) -> list:
        """Cancel a job that has not started running opcodes.

        A job outside a worker is canceled at once; one in a worker (waiting
        for locks, or just picked up) is marked canceling and its worker
        cancels it before the opcode runs. A failed write raises
        JobQueueError, the job left as it was.
        """
        with self._scheduler.lock:
            with job.lock:
                status = job.CalcStatus()
                if status in (constants.JOB_STATUS_QUEUED,
                              constants.JOB_STATUS_WAITING):
                    if job.in_worker:
                        self.ChangeJobUnlocked(job, lambda: (
                            job.MarkUnfinishedOps(
                                constants.OP_STATUS_CANCELING, None)))
                        return [True, "Job %s will be canceled" % job.id]
                    self.ChangeJobUnlocked(job, self._Finish(
                        job, constants.OP_STATUS_CANCELED,
                        "Job canceled by request"))
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
                try:
                    self.ChangeJobUnlocked(job, self._Finish(
                        job, constants.OP_STATUS_CANCELED,
                        "Job canceled by filter rule %s" % rule))
                except errors.JobQueueError as err:
                    # Its worker checks the rules again before it runs
                    logging.warning("Job %d not canceled yet: %s", job.id,
                                    err)
                    continue
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
        self._stopped.set()
        for job in jobs:
            with job.lock:
                job.Notify()
        deadline = time.monotonic() + timeout
        for worker in self._workers:
            worker.join(max(deadline - time.monotonic(), 0))
