"""Ganeti job queue administration: inspect and manage jobs in the
queue."""

from typing import Any, Callable

from ganeti import cli, constants, errors, luxi, qlang
from ganeti.cli_opts import (
    ArgJobId, ArgSuggest, ArgUnknown, FIELDS_OPT, FORCE_FILTER_OPT,
    FORCE_OPT, NOHDR_OPT, PRIORITY_OPT, SEP_OPT, VERBOSE_OPT, YES_DOIT_OPT,
    cli_option)

_LIST_DEF_FIELDS = ["id", "status", "summary"]

_PENDING_OPT = cli_option("--pending", default=None, action="store_const",
                          dest="status_filter",
                          const=constants.JOBS_PENDING,
                          help="Select jobs pending execution or being"
                          " cancelled")
_RUNNING_OPT = cli_option("--running", default=None, action="store_const",
                          dest="status_filter",
                          const=frozenset([constants.JOB_STATUS_RUNNING]),
                          help="Show jobs currently running only")
_ERROR_OPT = cli_option("--error", default=None, action="store_const",
                        dest="status_filter",
                        const=frozenset([constants.JOB_STATUS_ERROR]),
                        help="Show failed jobs only")
_FINISHED_OPT = cli_option("--finished", default=None, action="store_const",
                           dest="status_filter",
                           const=constants.JOBS_FINALIZED,
                           help="Show finished jobs only")
_QUEUED_OPT = cli_option("--queued", default=None, action="store_const",
                         dest="status_filter",
                         const=frozenset([constants.JOB_STATUS_QUEUED]),
                         help="Select queued jobs only")
_WAITING_OPT = cli_option("--waiting", default=None, action="store_const",
                          dest="status_filter",
                          const=frozenset([constants.JOB_STATUS_WAITING]),
                          help="Select waiting jobs only")
_ARCHIVED_OPT = cli_option("--archived", default=False, action="store_true",
                           dest="archived",
                           help="Include archived jobs in list (slow and"
                           " expensive)")
_KILL_OPT = cli_option("--kill", default=False, action="store_true",
                       dest="kill",
                       help="Kill running jobs with SIGKILL instead of"
                       " SIGTERM")


def _FormatSummary(value: list) -> str:
    return ",".join(str(item) for item in value)


def _FormatTimestamps(value: list) -> str:
    return ", ".join(cli.FormatTimestamp(ts) for ts in value)


_JOB_LIST_FORMAT: dict[str, tuple[Callable[[Any], str], bool]] = {
    "summary": (_FormatSummary, False),
    "waiting_for": (lambda value: value or "-", False),
}
_JOB_LIST_FORMAT.update(dict.fromkeys(
    ["opstart", "opexec", "opend"], (_FormatTimestamps, False)))
_JOB_LIST_FORMAT.update(dict.fromkeys(
    ["received_ts", "start_ts", "end_ts"], (cli.FormatTimestamp, False)))


def _ParseJobIds(args: list[str]) -> list[int]:
    try:
        return [int(arg) for arg in args]
    except ValueError as err:
        raise errors.OpPrereqError("Invalid job ID passed: %s" % err,
                                   errors.ECODE_INVAL) from err


def _StatusFilter(statuses: frozenset | None) -> list | None:
    return qlang.MakeSimpleFilter("status",
                                  sorted(statuses) if statuses else None)


def ListJobs(opts: Any, args: list[str]) -> int:
    """List jobs (all, the given ids, or those matching a status option)."""
    fields = cli.ParseFields(opts.output, _LIST_DEF_FIELDS)
    # The master lists archived jobs when the "archived" field is asked for
    if opts.archived and "archived" not in fields:
        fields.append("archived")
    return cli.GenericList(constants.QR_JOB, fields, args, None,
                           opts.separator, not opts.no_headers,
                           format_override=_JOB_LIST_FORMAT,
                           verbose=opts.verbose,
                           force_filter=opts.force_filter, namefield="id",
                           qfilter=_StatusFilter(opts.status_filter),
                           isnumeric=True)


def ListJobFields(opts: Any, args: list[str]) -> int:
    """List the fields a job query knows."""
    return cli.GenericListFields(constants.QR_JOB, args, opts.separator,
                                 not opts.no_headers)


def ArchiveJobs(opts: Any, args: list[str]) -> int:
    """Archive finished jobs by id."""
    client = cli.GetClient()
    rcode = constants.EXIT_SUCCESS
    for job_id in _ParseJobIds(args):
        if not client.ArchiveJob(job_id):
            cli.ToStderr("Failed to archive job with ID '%s'", job_id)
            rcode = constants.EXIT_FAILURE
    return rcode


def AutoArchiveJobs(opts: Any, args: list[str]) -> int:
    """Archive finished jobs older than AGE ("all" for every one)."""
    age = -1 if args[0] == "all" else cli.ParseTimespec(args[0])
    archived, left = cli.GetClient().AutoArchiveJobs(age)
    cli.ToStdout("Archived %s jobs, %s unchecked left", archived, left)
    return constants.EXIT_SUCCESS


def _MultiJobAction(opts: Any, args: list[str], cl: luxi.Client | None,
                    question: str,
                    action_fn: Callable[[luxi.Client, int], list]) -> int:
    """Apply an action to the given jobs or those with a status.

    Jobs selected by status are listed and confirmed first (unless
    --force), since the selection is not visible on the command line.
    """
    if bool(args) == (opts.status_filter is not None):
        raise errors.OpPrereqError("Either a status filter or job ID(s) must"
                                   " be specified", errors.ECODE_INVAL)
    if cl is None:
        cl = cli.GetClient()
    if opts.status_filter is not None:
        response = cl.Query(constants.QR_JOB, ["id", "status", "summary"],
                            _StatusFilter(opts.status_filter))
        jobs = [row[0][1] for row in response["data"]]
        if not jobs:
            raise errors.OpPrereqError("No jobs with the requested status"
                                       " have been found",
                                       errors.ECODE_STATE)
        if not opts.force:
            _, table = cli.FormatQueryResult(response, header=True,
                                             format_override=_JOB_LIST_FORMAT)
            for line in table:
                cli.ToStdout(line)
            if not cli.AskUser(question, skip_option=FORCE_OPT):
                return constants.EXIT_CONFIRMATION
    else:
        jobs = _ParseJobIds(args)
    result = constants.EXIT_SUCCESS
    for job_id in jobs:
        success, msg = action_fn(cl, job_id)
        if not success:
            result = constants.EXIT_FAILURE
        cli.ToStdout("%s", msg)
    return result


def CancelJobs(opts: Any, args: list[str]) -> int:
    """Cancel jobs; running ones are signalled (--kill: SIGKILL)."""
    if opts.kill:
        if not opts.yes_do_it:
            raise errors.OpPrereqError("The --kill option must be confirmed"
                                       " with --yes-do-it",
                                       errors.ECODE_INVAL)
        action_name = "KILL"
    else:
        action_name = "Cancel"
    return _MultiJobAction(opts, args, None,
                           "%s job(s) listed above?" % action_name,
                           lambda cl, job_id: cl.CancelJob(job_id,
                                                           kill=opts.kill))


def ChangePriority(opts: Any, args: list[str]) -> int:
    """Change the priority of queued or running jobs."""
    if opts.priority is None:
        cli.ToStderr("--priority option must be given.")
        return constants.EXIT_FAILURE
    priority = opts.priority
    return _MultiJobAction(opts, args, None,
                           "Change priority of job(s) listed above?",
                           lambda cl, job_id: cl.ChangeJobPriority(job_id,
                                                                   priority))


def _Delta(end: list, start: list) -> float:
    return end[0] - start[0] + (end[1] - start[1]) / 1e6


def _ResultItem(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "[%s]" % ", ".join(str(item) for item in value)
    return str(value)


def _FormatResult(msg: Callable[[int, str], None], result: Any) -> None:
    if result is None:
        msg(3, "No output data")
    elif isinstance(result, (tuple, list)):
        if not result:
            msg(3, "Result: empty sequence")
        else:
            msg(3, "Result:")
            for elem in result:
                msg(4, _ResultItem(elem))
    elif isinstance(result, dict):
        if not result:
            msg(3, "Result: empty dictionary")
        else:
            msg(3, "Result:")
            for key, val in result.items():
                msg(4, "%s: %s" % (key, _ResultItem(val)))
    else:
        msg(3, "Result: %s" % (result, ))


def _ShowOpcode(msg: Callable[[int, str], None], opcode: Any, result: Any,
                status: str, log: list, start: Any, exec_start: Any,
                end: Any) -> None:
    op_id = opcode.get("OP_ID", "INVALID_OP") if isinstance(opcode, dict) \
        else "INVALID_OP"
    msg(2, "- %s" % op_id)
    msg(3, "Status: %s" % status)
    for label, stamp, missing in (
            ("Processing start: ", start, "No processing start time"),
            ("Execution start:  ", exec_start, "No execution start time"),
            ("Processing end:   ", end, "No processing end time")):
        if isinstance(stamp, (tuple, list)):
            msg(3, label + cli.FormatTimestamp(stamp))
        else:
            msg(3, missing)
    msg(3, "Input fields:")
    if isinstance(opcode, dict):
        for key in sorted(opcode):
            if key == "OP_ID":
                continue
            val = opcode[key]
            if isinstance(val, (tuple, list)):
                val = ",".join(str(item) for item in val)
            msg(4, "%s: %s" % (key, val))
    _FormatResult(msg, result)
    msg(3, "Execution log:")
    for serial, log_ts, log_type, log_msg in log or []:
        msg(4, "%s:%s:%s %s" % (serial, cli.FormatTimestamp(log_ts), log_type,
                                cli.FormatLogMessage(log_type, log_msg)))


def ShowJobs(opts: Any, args: list[str]) -> int:
    """Print everything about the given jobs, opcode by opcode.

    A job that does not exist is named on stderr and makes the exit code
    1 (Ganeti 3.0 exits 0, so a script cannot tell a typo from success).
    """
    def msg(level: int, text: str) -> None:
        cli.ToStdout("%s%s", "  " * level, text)

    fields = ["id", "status", "ops", "opresult", "opstatus", "oplog",
              "opstart", "opexec", "opend", "received_ts", "start_ts",
              "end_ts", "waiting_for"]
    job_ids = _ParseJobIds(args)
    response = cli.GetClient().Query(constants.QR_JOB, fields,
                                     qlang.MakeSimpleFilter("id", job_ids))
    result = constants.EXIT_SUCCESS
    rows = {}
    for row in response["data"]:
        if row[0][0] == constants.RS_NORMAL:
            rows[row[0][1]] = row
    shown = 0
    for job_id in job_ids:
        row = rows.get(job_id)
        if row is None or row[1][0] != constants.RS_NORMAL:
            cli.ToStderr("Job ID %s not found", job_id)
            result = constants.EXIT_FAILURE
            continue
        if shown:
            msg(0, "")
        shown += 1
        (_, status, ops, opresult, opstatus, oplog, opstart, opexec, opend,
         recv_ts, start_ts, end_ts, waiting_for) = [value for _, value in row]
        msg(0, "- Job ID: %s" % job_id)
        msg(1, "Status: %s" % status)
        if waiting_for:
            # A filter rule, rate limit, dependency or lock holds it back
            msg(1, "Waiting for: %s" % waiting_for)
        if recv_ts is not None:
            msg(1, "Received:         %s" % cli.FormatTimestamp(recv_ts))
        else:
            msg(1, "Missing received timestamp (%s)" % (recv_ts, ))
        if start_ts is not None:
            delta = (" (delta %.6fs)" % _Delta(start_ts, recv_ts)
                     if recv_ts is not None else "")
            msg(1, "Processing start: %s%s" %
                (cli.FormatTimestamp(start_ts), delta))
        else:
            msg(1, "Processing start: unknown (%s)" % (start_ts, ))
        if end_ts is not None:
            delta = (" (delta %.6fs)" % _Delta(end_ts, start_ts)
                     if start_ts is not None else "")
            msg(1, "Processing end:   %s%s" %
                (cli.FormatTimestamp(end_ts), delta))
        else:
            msg(1, "Processing end:   unknown (%s)" % (end_ts, ))
        if end_ts is not None and recv_ts is not None:
            msg(1, "Total processing time: %.6f seconds" %
                _Delta(end_ts, recv_ts))
        else:
            msg(1, "Total processing time: N/A")
        msg(1, "Opcodes:")
        for op_data in zip(ops, opresult, opstatus, oplog, opstart, opexec,
                           opend):
            _ShowOpcode(msg, *op_data)
    return result


def WatchJob(opts: Any, args: list[str]) -> int:
    """Print a job's log as it arrives; exit status from its result."""
    job_id = _ParseJobIds(args)[0]
    header = "Output from job %s follows" % job_id
    cli.ToStdout(header)
    cli.ToStdout("-" * len(header))
    try:
        cli.PollJob(job_id)
    except errors.GenericError as err:
        retcode, text = cli.FormatError(err)
        cli.ToStderr("Job %s failed: %s", job_id, text)
        return retcode
    return constants.EXIT_SUCCESS


def WaitJob(opts: Any, args: list[str]) -> int:
    """Wait silently for a job; exit status from its result."""
    job_id = _ParseJobIds(args)[0]
    try:
        cli.PollJob(job_id, feedback_fn=lambda _: None)
    except errors.GenericError as err:
        retcode, text = cli.FormatError(err)
        cli.ToStderr("Job %s failed: %s", job_id, text)
        return retcode
    return constants.EXIT_SUCCESS


_STATUS_OPTS = [_PENDING_OPT, _QUEUED_OPT, _WAITING_OPT]

commands = {
    "list": (
        ListJobs, [ArgJobId()],
        [NOHDR_OPT, SEP_OPT, FIELDS_OPT, VERBOSE_OPT, FORCE_FILTER_OPT,
         _PENDING_OPT, _RUNNING_OPT, _ERROR_OPT, _FINISHED_OPT,
         _ARCHIVED_OPT],
        "[<job-id>...]",
        "Lists the jobs and their status. The available fields can be shown"
        " using the \"list-fields\" command (see the man page for details)."
        " The default field list is (in order): %s." %
        ", ".join(_LIST_DEF_FIELDS)),
    "list-fields": (
        ListJobFields, [ArgUnknown()], [NOHDR_OPT, SEP_OPT],
        "[<fields>...]", "Lists all available fields for jobs"),
    "archive": (
        ArchiveJobs, [ArgJobId(min=1)], [], "<job-id> [<job-id>...]",
        "Archive specified jobs"),
    "autoarchive": (
        AutoArchiveJobs,
        [ArgSuggest(min=1, max=1, choices=["1d", "1w", "4w", "all"])], [],
        "<age>", "Auto archive jobs older than the given age"),
    "cancel": (
        CancelJobs, [ArgJobId()],
        [FORCE_OPT, _KILL_OPT, YES_DOIT_OPT] + _STATUS_OPTS,
        "{[--force] [--kill --yes-do-it] {--pending | --queued | --waiting}"
        " | <job-id> [<job-id>...]}", "Cancel jobs"),
    "info": (
        ShowJobs, [ArgJobId(min=1)], [], "<job-id> [<job-id>...]",
        "Show detailed information about the specified jobs"),
    "wait": (
        WaitJob, [ArgJobId(min=1, max=1)], [], "<job-id>",
        "Wait for a job to finish"),
    "watch": (
        WatchJob, [ArgJobId(min=1, max=1)], [], "<job-id>",
        "Follows a job and prints its output as it arrives"),
    "change-priority": (
        ChangePriority, [ArgJobId()],
        [PRIORITY_OPT, FORCE_OPT] + _STATUS_OPTS,
        "--priority <priority> {[--force] {--pending | --queued | --waiting}"
        " | <job-id> [<job-id>...]}", "Change the priority of jobs"),
}

aliases = {"show": "info"}


def Main() -> int:
    return cli.GenericMain(commands, aliases=aliases)
