"""Submitting jobs to the master daemon and following them: the opcode
options every tool shares (``--submit``, ``--dry-run``, ``--priority``,
``--reason``), polling with the job's log on stdout and several jobs at
once.
"""

import itertools
import os
import sys
import time
from typing import Any, Callable, Sequence

from ganeti import constants, errors, luxi
from ganeti.cli_format import FormatLogMessage
from ganeti.cli_output import FormatError, ToStderr, ToStdout

# Binary and subcommand being run (set by cli.GenericMain), for the
# reason trail
_invocation: tuple[str, str] | None = None


def SetInvocation(invocation: tuple[str, str] | None) -> None:
    """Record the binary and subcommand being run (None when done)."""
    global _invocation  # pylint: disable=global-statement
    _invocation = invocation


def GetClient() -> luxi.Client:
    """A LUXI client for the master daemon (honours FORCE_LUXI_SOCKET)."""
    return luxi.Client()


def _SetOpParam(op: Any, name: str, value: Any) -> None:
    if isinstance(op, dict):
        op[name] = value
    else:
        setattr(op, name, value)


def _ReasonTrail(opts: Any) -> list[tuple[str, str, int]]:
    trail = []
    reason = getattr(opts, "reason", None)
    if reason:
        trail.append((constants.OPCODE_REASON_SRC_USER, reason,
                      time.time_ns()))
    if _invocation is not None:
        binary, cmd = _invocation
    else:
        binary = os.path.basename(sys.argv[0]) if sys.argv else ""
        cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    trail.append(("%s:%s" % (constants.OPCODE_REASON_SRC_CLIENT, binary), cmd,
                  time.time_ns()))
    return trail


def SetGenericOpcodeOpts(opcode_list: Sequence, options: Any) -> None:
    """Apply --dry-run, --priority, -d and --reason to opcodes.

    Opcodes may be opcode objects or wire dicts.
    """
    if not options:
        return
    for op in opcode_list:
        _SetOpParam(op, "debug_level", getattr(options, "debug", 0) or 0)
        if hasattr(options, "dry_run"):
            _SetOpParam(op, "dry_run", bool(options.dry_run))
        priority = getattr(options, "priority", None)
        if priority is not None:
            _SetOpParam(op, "priority", priority)
        _SetOpParam(op, "reason", _ReasonTrail(options))


def SendJob(ops: Sequence, cl: luxi.Client | None = None) -> int:
    """Submit a job without waiting; return its id."""
    if cl is None:
        cl = GetClient()
    return cl.SubmitJob(ops)


class JobPollReportCbBase:
    """Receives what PollJob learns about a job."""

    def ReportLogMessage(self, job_id: int, serial: int, timestamp: list,
                         log_type: str, log_msg: Any) -> None:
        """A new entry in the job's log."""

    def ReportNotChanged(self, job_id: int, status: str | None) -> None:
        """A wait ended without news."""


class FeedbackFnJobPollReportCb(JobPollReportCbBase):
    """Hands each log entry to ``feedback_fn((timestamp, type, message))``."""

    def __init__(self, feedback_fn: Callable):
        self.feedback_fn = feedback_fn

    def ReportLogMessage(self, job_id: int, serial: int, timestamp: list,
                         log_type: str, log_msg: Any) -> None:
        self.feedback_fn((timestamp, log_type, log_msg))


class StdioJobPollReportCb(JobPollReportCbBase):
    """Prints log entries on stdout and why a job is not progressing."""

    def __init__(self) -> None:
        self.notified_queued = False
        self.notified_waitlock = False

    def ReportLogMessage(self, job_id: int, serial: int, timestamp: list,
                         log_type: str, log_msg: Any) -> None:
        sec, usec = timestamp
        ToStdout("%s %s", time.ctime(sec + usec / 1e6),
                 FormatLogMessage(log_type, log_msg))

    def ReportNotChanged(self, job_id: int, status: str | None) -> None:
        if status == constants.JOB_STATUS_QUEUED and \
                not self.notified_queued:
            ToStderr("Job %s is waiting in queue", job_id)
            self.notified_queued = True
        elif status == constants.JOB_STATUS_WAITING and \
                not self.notified_waitlock:
            ToStderr("Job %s is trying to acquire all necessary locks",
                     job_id)
            self.notified_waitlock = True


_POLL_END_STATUSES = frozenset([
    constants.JOB_STATUS_SUCCESS, constants.JOB_STATUS_ERROR,
    constants.JOB_STATUS_CANCELING, constants.JOB_STATUS_CANCELED])


def GenericPollJob(job_id: int, cl: luxi.Client,
                   reporter: JobPollReportCbBase) -> list:
    """Follow a job to its end; return its opcode results or raise.

    A failed opcode's encoded error is re-raised as its own class, so the
    user sees e.g. the OpPrereqError text of the LU.
    """
    prev_job_info = None
    prev_log_serial = None
    status = None
    while True:
        result = cl.WaitForJobChangeOnce(job_id, ["status"], prev_job_info,
                                         prev_log_serial)
        if not result:
            raise errors.JobLost("Job with id %s lost" % job_id)
        if result == constants.JOB_NOTCHANGED:
            reporter.ReportNotChanged(job_id, status)
            continue
        job_info, log_entries = result
        (status, ) = job_info
        if log_entries:
            for serial, timestamp, log_type, message in log_entries:
                reporter.ReportLogMessage(job_id, serial, timestamp,
                                          log_type, message)
                prev_log_serial = max(prev_log_serial or 0, serial)
        elif status in _POLL_END_STATUSES:
            break
        elif job_info == prev_job_info:
            # luxid answers an expired wait with the unchanged state
            reporter.ReportNotChanged(job_id, status)
        prev_job_info = job_info

    jobs = cl.QueryJobs([job_id], ["status", "opstatus", "opresult"])
    if not jobs or jobs[0] is None or jobs[0][0] is None:
        raise errors.JobLost("Job with id %s lost" % job_id)
    status, opstatus, opresult = jobs[0]
    if status == constants.JOB_STATUS_SUCCESS:
        return opresult
    if status in (constants.JOB_STATUS_CANCELING,
                  constants.JOB_STATUS_CANCELED):
        raise errors.JobCanceled("Job was canceled")
    has_ok = False
    for idx, (op_status, msg) in enumerate(zip(opstatus, opresult)):
        if op_status == constants.OP_STATUS_SUCCESS:
            has_ok = True
        elif op_status == constants.OP_STATUS_ERROR:
            errors.MaybeRaise(msg)
            if has_ok:
                raise errors.OpExecError("partial failure (opcode %d): %s" %
                                         (idx, msg))
            raise errors.OpExecError(str(msg))
    raise errors.OpExecError(str(opresult))


def PollJob(job_id: int, cl: luxi.Client | None = None,
            feedback_fn: Callable | None = None,
            reporter: JobPollReportCbBase | None = None) -> list:
    """Wait for a job, printing its log (or passing it to ``feedback_fn``).

    Returns the list of opcode results.
    """
    if cl is None:
        cl = GetClient()
    if reporter is None:
        reporter = (FeedbackFnJobPollReportCb(feedback_fn) if feedback_fn
                    else StdioJobPollReportCb())
    elif feedback_fn:
        raise errors.ProgrammerError("Can't specify reporter and feedback"
                                     " function")
    return GenericPollJob(job_id, cl, reporter)


def SubmitOpCode(op: Any, cl: luxi.Client | None = None,
                 feedback_fn: Callable | None = None, opts: Any = None,
                 reporter: JobPollReportCbBase | None = None) -> Any:
    """Run one opcode as a job, wait for it and return its result."""
    if cl is None:
        cl = GetClient()
    SetGenericOpcodeOpts([op], opts)
    job_id = SendJob([op], cl=cl)
    if getattr(opts, "print_jobid", False):
        ToStdout("%d", job_id)
    return PollJob(job_id, cl=cl, feedback_fn=feedback_fn,
                   reporter=reporter)[0]


def SubmitOrSend(op: Any, opts: Any, cl: luxi.Client | None = None,
                 feedback_fn: Callable | None = None) -> Any:
    """Run an opcode, or with ``--submit`` only submit it.

    After a bare submission JobSubmittedException is raised; GenericMain
    reports it as "JobID: <n>" on stderr and exits 0.
    """
    if opts is not None and getattr(opts, "submit_only", False):
        job = [op]
        SetGenericOpcodeOpts(job, opts)
        job_id = SendJob(job, cl=cl)
        if getattr(opts, "print_jobid", False):
            ToStdout("%d", job_id)
        raise errors.JobSubmittedException(job_id)
    return SubmitOpCode(op, cl=cl, feedback_fn=feedback_fn, opts=opts)


class JobExecutor:
    """Submits several jobs at once and collects their results."""

    def __init__(self, cl: luxi.Client | None = None, verbose: bool = True,
                 opts: Any = None, feedback_fn: Callable | None = None):
        self.cl = cl if cl is not None else GetClient()
        self.verbose = verbose
        self.opts = opts
        self.feedback_fn = feedback_fn
        self.queue: list[tuple[int, str | None, Sequence]] = []
        # (index, submitted, job id or error, name)
        self.jobs: list[tuple[int, bool, Any, str | None]] = []
        self._counter = itertools.count()

    def QueueJob(self, name: str | None, *ops: Any) -> None:
        """Queue a job for submission by SubmitPending."""
        SetGenericOpcodeOpts(ops, self.opts)
        self.queue.append((next(self._counter), name, ops))

    def AddJobId(self, name: str | None, status: bool, job_id: Any) -> None:
        """Track a job submitted elsewhere."""
        self.jobs.append((next(self._counter), status, job_id, name))

    def SubmitPending(self, each: bool = False) -> None:
        """Submit the queued jobs (one SubmitManyJobs unless ``each``)."""
        results: list[tuple[bool, Any]]
        if each:
            results = [(True, self.cl.SubmitJob(ops))
                       for _, _, ops in self.queue]
        else:
            results = self.cl.SubmitManyJobs([ops for _, _, ops in
                                              self.queue])
        for (status, data), (idx, name, _) in zip(results, self.queue):
            self.jobs.append((idx, status, data, name))
        self.queue = []

    @staticmethod
    def _ForName(name: str | None) -> str:
        return " for %s" % name if name else ""

    def GetResults(self) -> list[tuple[bool, Any]]:
        """Wait for every job; return ``(success, result)`` in queue order."""
        if self.queue:
            self.SubmitPending()
        results = []
        if self.verbose:
            ok_jobs = [str(job[2]) for job in self.jobs if job[1]]
            if ok_jobs:
                ToStdout("Submitted jobs %s", ", ".join(ok_jobs))
        for idx, submitted, job_id, name in self.jobs:
            if not submitted:
                ToStderr("Failed to submit job%s: %s", self._ForName(name),
                         job_id)
                results.append((idx, False, job_id))
                continue
            ToStdout("Waiting for job %s%s ...", job_id, self._ForName(name))
            # The opcode results, or the error text
            job_result: list | str
            try:
                job_result = PollJob(job_id, cl=self.cl,
                                     feedback_fn=self.feedback_fn)
                success = True
            except errors.JobLost as err:
                job_result = FormatError(err)[1]
                ToStderr("Job %s%s has been archived, cannot check its"
                         " result", job_id, self._ForName(name))
                success = False
            except errors.GenericError as err:
                job_result = FormatError(err)[1]
                ToStderr("Job %s%s has failed: %s", job_id,
                         self._ForName(name), job_result)
                success = False
            results.append((idx, success, job_result))
        self.jobs = []
        results.sort(key=lambda item: item[0])
        return [(success, result) for _, success, result in results]

    def WaitOrShow(self, wait: bool) -> list[tuple[bool, Any]]:
        """GetResults, or (``wait`` false, as for ``--submit``) submit and
        print each job's id and name: ``(submitted, job id or error)``."""
        if wait:
            return self.GetResults()
        if self.queue:
            self.SubmitPending()
        for _, status, result, name in self.jobs:
            if status:
                ToStdout("%s: %s", result, name)
            else:
                ToStderr("Failure for %s: %s", name, result)
        return [(status, result) for _, status, result, _ in self.jobs]


def RunFollowUpJobs(op: Any, opts: Any, cl: luxi.Client) -> int | None:
    """Run an opcode whose result lists follow-up jobs (``{"jobs": [...]}``,
    as node migrate/evacuate and change-group answer) and wait for them.

    Returns how many of them failed, None for a dry run (no jobs).
    """
    result = SubmitOrSend(op, opts, cl=cl)
    if result is None:
        return None
    jex = JobExecutor(cl=cl, opts=opts)
    for status, job_id in result["jobs"]:
        jex.AddJobId(None, status, job_id)
    return sum(1 for success, _ in jex.GetResults() if not success)


def FollowUpJobsExit(op: Any, opts: Any, cl: luxi.Client, failure: str,
                     success: str) -> int:
    """RunFollowUpJobs, then the command's report and exit code:
    ``failure`` (with ``%s`` for the count of failed jobs) or ``success``.
    """
    bad_cnt = RunFollowUpJobs(op, opts, cl)
    if bad_cnt is None:
        # A dry run submits nothing
        return constants.EXIT_SUCCESS
    if bad_cnt:
        ToStdout(failure, bad_cnt)
        return constants.EXIT_FAILURE
    ToStdout(success)
    return constants.EXIT_SUCCESS
