"""gnt-debug test-jobqueue: the job queue checked end to end from a client.

Three parts, as Ganeti's command has them: jobs with a priority a client
may not submit are refused (alone and in a batch); relative dependencies
are refused in a single job and resolved and obeyed in a batch; and
OpTestJqueue jobs (one opcode, several, failing, partly failing) show the
client the job's status at each step through their notification sockets,
deliver their log messages in order and end with the expected statuses.
"""

import logging
import socket
import time
from typing import Any

from ganeti import cli, constants, errors, opcodes

_Delay = opcodes.OpTestDelay
_Jqueue = opcodes.OpTestJqueue

# Seconds the client gives the LU's notification socket
_SOCKET_TIMEOUT = 30.0

# The OpTestJqueue runs: (announcement, number of opcodes, index of the
# failing opcode or None)
_RUNS = [
    ("Testing job success", 1, None),
    ("Testing multiple successful opcodes", 2, None),
    ("Testing job failure", 1, 0),
    ("Testing partial job failure", 4, 2),
]


def _ExpectRefused(opts: Any, what: str, submit: Any) -> None:
    """``submit()`` must be refused (raise GenericError)."""
    try:
        submit()
    except errors.GenericError as err:
        if opts.debug:
            cli.ToStdout("Ignoring error for '%s' test: %s", what, err)
        return
    raise errors.OpExecError("Submitting %s did not fail when it should"
                             % what)


def _TestSubmission(opts: Any) -> None:
    """Priorities outside OP_PRIO_SUBMIT_VALID are refused at submission,
    wherever the opcode is in its job and the job in its batch."""
    cli.ToStdout("Testing job submission")
    valid = constants.OP_PRIO_SUBMIT_VALID
    # The extremes, and next to them and to each valid priority
    extremes = {constants.OP_PRIO_LOWEST, constants.OP_PRIO_HIGHEST}
    bad = (extremes | {prio + offset for prio in valid | extremes
                       for offset in (-1, 1)}) - valid
    cl = cli.GetClient()
    for priority in sorted(bad):
        for before, after in ((0, 0), (3, 0), (0, 3), (4, 2)):
            ops = ([_Delay(duration=0) for _ in range(before)] +
                   [_Delay(duration=0, priority=priority)] +
                   [_Delay(duration=0) for _ in range(after)])
            what = "an opcode with priority %s" % priority
            _ExpectRefused(opts, what, lambda ops=ops: cl.SubmitJob(ops))
            good = [_Delay(duration=0), _Delay(duration=0, dry_run=True)]
            _ExpectRefused(opts, "a batch with " + what,
                           lambda ops=ops: cl.SubmitManyJobs([good, ops]))
    cli.ToStdout("Job submission tests were successful")


def _TestDependencies(opts: Any) -> None:
    """A single job cannot depend on a relative id; in a batch, relative
    ids become the earlier jobs' ids and the jobs run in that order."""
    cli.ToStdout("Testing job dependencies")
    cl = cli.GetClient()
    _ExpectRefused(opts, "a single job with a relative dependency",
                   lambda: cl.SubmitJob([_Delay(duration=0,
                                                depends=[[-1, None]])]))
    success = [constants.JOB_STATUS_SUCCESS]
    # (relative dependency or None, the batch index it must resolve to)
    deps = [(None, None), (-1, 0), (-2, 0), (None, None), (-2, 2)]
    jobs = [[_Delay(duration=1,
                    depends=[] if rel is None else
                    [[rel, [] if idx == 1 else success]])]
            for idx, (rel, _) in enumerate(deps)]
    submitted = cl.SubmitManyJobs(jobs)
    if any(not success for success, _ in submitted):
        raise errors.OpExecError("Job submission failed: %s" % submitted)
    job_ids = [job_id for _, job_id in submitted]
    jex = cli.JobExecutor(cl=cl, opts=opts)
    for job_id in job_ids:
        jex.AddJobId(None, True, job_id)
    results = jex.GetResults()
    if not all(ok for ok, _ in results):
        raise errors.OpExecError("At least one of the submitted jobs"
                                 " failed: %s" % results)
    rows = cl.QueryJobs(job_ids, ["opexec", "ops"])
    for idx, (_, target) in enumerate(deps):
        if target is None:
            continue
        depends = rows[idx][1][0]["depends"]
        if len(depends) != 1 or depends[0][0] != job_ids[target]:
            raise errors.OpExecError("Job %s's opcode doesn't depend on job"
                                     " %s: %s" % (idx, job_ids[target],
                                                  depends))
    started = [tuple(opexec[0]) for opexec, _ in rows]
    if not (started[0] <= started[1] and
            started[0] <= started[2] <= started[4]):
        raise errors.OpExecError("Jobs did not run in the right order: %s"
                                 % rows)
    cli.ToStdout("Job dependency tests were successful")


class _Reporter(cli.StdioJobPollReportCb):
    """Answers an OpTestJqueue job's notifications, after checking the
    job's status at that point, and collects its test messages."""

    def __init__(self) -> None:
        super().__init__()
        self.job_id: int | None = None
        self.messages: list[str] = []
        # Messages received before the current start message
        self._start: int | None = None

    def ReportLogMessage(self, job_id: int, serial: int, timestamp: list,
                         log_type: str, log_msg: Any) -> None:
        if self.job_id is None:
            self.job_id = job_id
        elif self.job_id != job_id:
            raise errors.ProgrammerError("One reporter, several jobs")
        if log_type == constants.ELOG_JQUEUE_TEST:
            self._Notification(job_id, *log_msg)
        elif log_type == constants.ELOG_MESSAGE and \
                log_msg.startswith(constants.JQT_MSGPREFIX):
            if self._start is None:
                raise errors.OpExecError("Received a test message without a"
                                         " preceding start message")
            self.messages.append(log_msg[len(constants.JQT_MSGPREFIX):])
        else:
            super().ReportLogMessage(job_id, serial, timestamp, log_type,
                                     log_msg)

    def _Notification(self, job_id: int, path: str, test: str,
                      arg: Any) -> None:
        expected_status = {
            constants.JQT_EXPANDNAMES: constants.JOB_STATUS_WAITING,
            constants.JQT_EXEC: constants.JOB_STATUS_RUNNING,
            constants.JQT_LOGMSG: constants.JOB_STATUS_RUNNING,
            constants.JQT_STARTMSG: None,
        }
        if test not in expected_status:
            raise errors.OpExecError("Received invalid test message %s" %
                                     test)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(_SOCKET_TIMEOUT)
            logging.debug("Connecting to %s", path)
            sock.connect(path)
            ((status, ), ) = cli.GetClient().QueryJobs([job_id],
                                                       ["status"])
            wanted = expected_status[test]
            if wanted is not None and status != wanted:
                raise errors.OpExecError("Job status at '%s' is '%s', not"
                                         " '%s' as expected" %
                                         (test, status, wanted))
            if test == constants.JQT_STARTMSG:
                self._start = len(self.messages)
            elif test == constants.JQT_LOGMSG and \
                    len(self.messages) - (self._start or 0) != arg:
                raise errors.OpExecError("Received %s test messages when %s"
                                         " are expected" %
                                         (len(self.messages) -
                                          (self._start or 0), arg))


def _RunJqueueJob(opts: Any, title: str, count: int,
                  failing: int | None, messages: list[str]) -> None:
    """One OpTestJqueue job, checked from submission to final status."""
    cli.ToStdout("%s", title)
    ops = [_Jqueue(notify_waitlock=True, notify_exec=True,
                   log_messages=messages, fail=idx == failing)
           for idx in range(count)]
    cl = cli.GetClient()
    cli.SetGenericOpcodeOpts(ops, opts)
    job_id = cli.SendJob(ops, cl=cl)
    reporter = _Reporter()
    results = None
    try:
        results = cli.PollJob(job_id, cl=cl, reporter=reporter)
    except errors.OpExecError as err:
        if failing is None:
            raise
        cli.ToStdout("Ignoring error for 'job fail' test: %s", err)
    else:
        if failing is not None:
            raise errors.OpExecError("Job didn't fail when it should")
    ran = count if failing is None else failing + 1
    if failing is None and len(results or []) != count:
        raise errors.OpExecError("Received %s results (%s), expected %s" %
                                 (len(results or []), results, count))
    if reporter.messages != messages * ran:
        raise errors.OpExecError("Received test messages don't match input"
                                 " (input %r, received %r)" %
                                 (messages * ran, reporter.messages))
    if reporter.job_id != job_id:
        raise errors.OpExecError("Reported job ID %s doesn't match"
                                 " submission job ID %s" %
                                 (reporter.job_id, job_id))
    ((status, opstatus), ) = cl.QueryJobs([job_id], ["status", "opstatus"])
    if failing is None:
        want_status = constants.JOB_STATUS_SUCCESS
        want_ops = [constants.OP_STATUS_SUCCESS] * count
    else:
        want_status = constants.JOB_STATUS_ERROR
        want_ops = ([constants.OP_STATUS_SUCCESS] * failing +
                    [constants.OP_STATUS_ERROR] * (count - failing))
    if status != want_status or opstatus != want_ops:
        raise errors.OpExecError("Final job status is %s %s, not %s %s as"
                                 " expected" % (status, opstatus,
                                                want_status, want_ops))


def TestJobqueue(opts: Any, args: list[str]) -> int:
    """Run the job queue tests; any failure raises OpExecError."""
    _TestSubmission(opts)
    _TestDependencies(opts)
    for mode, (title, count, failing) in enumerate(_RUNS):
        messages = ["Testing mode %s" % mode, "Hello World", "A", "", "B",
                    "Foo|bar|baz", time.strftime("%Y-%m-%d_%H_%M_%S")]
        _RunJqueueJob(opts, title, count, failing, messages)
    cli.ToStdout("Job queue test successful")
    return constants.EXIT_SUCCESS
