"""Framework of the gnt-* command line tools.

Every tool is a table of subcommands run by :func:`GenericMain`, which
parses options, checks argument counts, sets up logging and turns Ganeti
errors into Ganeti's messages and exit codes. Job-submitting commands go
through :func:`SubmitOrSend`/:func:`SubmitOpCode`, listing commands through
:func:`GenericList`, so all tools behave alike (``--submit``, ``-o``,
``--separator``, exit code 14 for unknown fields, ...).
"""

import errno
import itertools
import logging
import os
import re
import shlex
import sys
import textwrap
import time
from optparse import Option, OptionParser, TitledHelpFormatter
from typing import Any, Callable, Iterable, NoReturn, Sequence

from ganeti import (constants, errors, luxi, opcodes, pathutils, qlang,
                    vcluster)
from ganeti.cli_opts import *  # noqa: F401,F403 (re-exported API)
from ganeti.cli_opts import COMMON_OPTS, ArgCommand, SplitKeyVal
from ganeti.parameters import families
from ganeti.utils.text import FormatUnit, TryToRoman

# Results of FormatQueryResult
QR_NORMAL, QR_UNKNOWN, QR_INCOMPLETE = range(3)

# Value shown for a query field whose status is not "normal"
_RS_DESCRIPTION = {
    constants.RS_UNKNOWN: ("(unknown)", "??"),
    constants.RS_NODATA: ("(nodata)", "?"),
    constants.RS_OFFLINE: ("(offline)", "*"),
    constants.RS_UNAVAIL: ("(unavail)", "-"),
}

# Binary and subcommand being run, for the reason trail
_invocation: tuple[str, str] | None = None


# Output ----------------------------------------------------------------------

def _ToStream(stream: Any, txt: str, *args: Any) -> None:
    try:
        stream.write((txt % args) if args else txt)
        stream.write("\n")
        stream.flush()
    except OSError as err:
        # The reader went away (e.g. "| head"); nothing more to say
        if err.errno != errno.EPIPE:
            raise


def ToStdout(txt: str, *args: Any) -> None:
    """Print a line to stdout (``txt % args`` when args are given)."""
    _ToStream(sys.stdout, txt, *args)


def ToStderr(txt: str, *args: Any) -> None:
    """Print a line to stderr (``txt % args`` when args are given)."""
    _ToStream(sys.stderr, txt, *args)


def _AskUserOn(infile: Any, outfile: Any, text: str,
               choices: list[tuple]) -> Any:
    chars = [entry[0] for entry in choices]
    chars[-1] = "[%s]" % chars[-1]
    chars.append("?")
    answers = {entry[0]: entry[1] for entry in choices}
    while True:
        outfile.write(text)
        outfile.write("\n")
        outfile.write("/".join(chars))
        outfile.write(": ")
        outfile.flush()
        line = infile.readline().strip().lower()
        # End of input or a bare Enter: the default (bracketed) answer
        if not line:
            return choices[-1][1]
        if line in answers:
            return answers[line]
        if line == "?":
            for entry in choices:
                outfile.write(" %s - %s\n" % (entry[0], entry[2]))
            outfile.write("\n")


def AskUser(text: str, choices: list[tuple] | None = None,
            skip_option: Option | None = None) -> Any:
    """Ask a question on the terminal; without one, the last choice wins.

    ``choices`` are ``(char, return value, help)``; the default is yes/no
    returning True/False with "no" as the default answer. Reading the
    terminal rather than stdin lets confirmations work in pipelines.
    Without a terminal the question and the answer taken are printed on
    stderr (Ganeti prints nothing, so a script saw a bare failure), with
    ``skip_option``, the option that makes the command not ask, if any
    (e.g. FORCE_OPT).
    """
    if choices is None:
        choices = [("y", True, "Perform the operation"),
                   ("n", False, "Do not perform the operation")]
    if not choices or not isinstance(choices, list):
        raise errors.ProgrammerError("Invalid choices argument to AskUser")
    for entry in choices:
        if not isinstance(entry, tuple) or len(entry) < 3 or entry[0] == "?":
            raise errors.ProgrammerError("Invalid choices element to AskUser")
    text = "\n".join(textwrap.fill(line, 70, replace_whitespace=False)
                     for line in text.splitlines())
    try:
        tty = open("/dev/tty", "r+", encoding="utf-8")
    except OSError:
        char, answer, description = choices[-1][:3]
        ToStderr("%s\nNo terminal to ask on: answering '%s' (%s).%s", text,
                 char, description,
                 " Use %s to skip this question." % skip_option
                 if skip_option else "")
        return answer
    with tty:
        return _AskUserOn(tty, tty, text, choices)


def ConfirmOperation(names: list[str], list_type: str, text: str,
                     skip_option: Option | None = None,
                     extra: str = "") -> bool:
    """Ask to confirm an operation on several objects (Ganeti's wording),
    offering to view the list first when it is longer than 20; ``extra``
    is a warning put before the question."""
    msg = ("The %s will operate on %d %s.\n%sDo you want to continue?" %
           (text, len(names), list_type, extra))
    affected = "\nAffected %s:\n%s" % (list_type, "\n".join(
        "  %s" % name for name in names))
    choices = [("y", True, "Yes, execute the %s" % text),
               ("n", False, "No, abort the %s" % text)]
    if len(names) <= 20:
        return AskUser(msg + affected, choices, skip_option)
    choice = AskUser(msg, choices[:1] + [
        ("v", "v", "View the list of affected %s" % list_type)] +
        choices[1:], skip_option)
    if choice == "v":
        choice = AskUser(msg + affected, choices, skip_option)
    return choice


# Formatting helpers ----------------------------------------------------------

def FormatTime(val: Any, usecs: int | None = None) -> str:
    """Local time as "YYYY-MM-DD HH:MM:SS[.usec]", "N/A" if unset."""
    if val is None or isinstance(val, bool) or \
            not isinstance(val, (int, float)):
        return "N/A"
    result = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(val))
    if usecs is not None:
        result += ".%06d" % usecs
    return result


def FormatTimestamp(ts: Any) -> str:
    """Format a ``[sec, usec]`` (or seconds) timestamp; "?" if neither."""
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return FormatTime(ts)
    if not isinstance(ts, (tuple, list)) or len(ts) != 2:
        return "?"
    sec, usec = ts
    return FormatTime(sec, usecs=usec)


def FormatBool(value: bool) -> str:
    """Y/N, as in Ganeti's tables."""
    return "Y" if value else "N"


def FormatLogMessage(log_type: str, log_msg: Any) -> str:
    """Text of a job log entry."""
    if log_type != constants.ELOG_MESSAGE or not isinstance(log_msg, str):
        log_msg = str(log_msg)
    return log_msg


def ParseTimespec(value: str) -> int:
    """Parse "30", "30s", "5m", "2h", "1d" or "1w" into seconds."""
    value = str(value)
    if not value:
        raise errors.OpPrereqError("Empty time specification passed",
                                   errors.ECODE_INVAL)
    suffixes = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    multiplier = suffixes.get(value[-1])
    number = value if multiplier is None else value[:-1]
    if not number:
        raise errors.OpPrereqError("Invalid time specification (only suffix"
                                   " passed)", errors.ECODE_INVAL)
    try:
        return int(number) * (multiplier or 1)
    except ValueError as err:
        raise errors.OpPrereqError("Invalid time specification '%s'" % value,
                                   errors.ECODE_INVAL) from err


def ParseFields(selected: str | None, default: list[str]) -> list[str]:
    """Fields from ``-o``: None -> defaults, "+a,b" -> defaults + a, b."""
    if selected is None:
        return list(default)
    if selected.startswith("+"):
        return list(default) + selected[1:].split(",")
    return selected.split(",")


def FormatError(err: BaseException) -> tuple[int, str]:
    """Turn an exception into ``(exit code, message)`` like Ganeti."""
    retcode = constants.EXIT_FAILURE
    msg = str(err)
    if isinstance(err, errors.ConfigurationError):
        logging.error("Corrupt configuration file: %s", msg)
        text = "Corrupt configuration file: %s\nAborting." % msg
        retcode = 2
    elif isinstance(err, errors.HooksAbort):
        lines = ["Failure: hooks execution failed:"]
        for entry in (err.args[0] if err.args else []):
            if not isinstance(entry, (list, tuple)) or len(entry) != 3:
                lines.append("  %s" % (entry, ))
                continue
            node, script, out = entry
            if out:
                lines.append("  node: %s, script: %s, output: %s" %
                             (node, script, out))
            else:
                lines.append("  node: %s, script: %s (no output)" %
                             (node, script))
        text = "\n".join(lines)
    elif isinstance(err, errors.HooksFailure):
        text = "Failure: hooks general failure: %s" % msg
    elif isinstance(err, errors.ResolverError):
        text = "Failure: can't resolve hostname '%s'" % \
            (err.args[0] if err.args else msg)
    elif isinstance(err, errors.OpPrereqError):
        if len(err.args) == 2:
            text = ("Failure: prerequisites not met for this operation:\n"
                    "error type: %s, error details:\n%s" %
                    (err.args[1], err.args[0]))
        else:
            text = ("Failure: prerequisites not met for this operation:\n%s"
                    % msg)
    elif isinstance(err, errors.OpExecError):
        text = "Failure: command execution error:\n%s" % msg
    elif isinstance(err, errors.TagError):
        text = "Failure: invalid tag(s) given:\n%s" % msg
    elif isinstance(err, errors.JobQueueDrainError):
        text = ("Failure: the job queue is marked for drain and doesn't"
                " accept new requests")
    elif isinstance(err, errors.JobQueueFull):
        text = ("Failure: the job queue is full and doesn't accept new job"
                " submissions until old jobs are archived")
    elif isinstance(err, errors.TypeEnforcementError):
        text = "Parameter Error: %s" % msg
    elif isinstance(err, errors.ParameterError):
        text = "Failure: unknown/wrong parameter name '%s'" % msg
    elif isinstance(err, errors.NoMasterError):
        text = ("Cannot communicate with the master daemon.\nIs it running"
                " and listening for connections?")
    elif isinstance(err, errors.TimeoutError):
        text = ("Timeout while talking to the master daemon. Jobs might have"
                " been submitted and will continue to run even if the call"
                " timed out. Useful commands in this situation are \"gnt-job"
                " list\", \"gnt-job cancel\" and \"gnt-job watch\". Error:\n"
                + msg)
    elif isinstance(err, errors.PermissionError):
        text = ("It seems you don't have permissions to connect to the"
                " master daemon.\nPlease retry as a different user.")
    elif isinstance(err, errors.ProtocolError):
        text = ("Unhandled protocol error while talking to the master"
                " daemon:\n%s" % msg)
    elif isinstance(err, errors.JobLost):
        text = "Error checking job status: %s" % msg
    elif isinstance(err, errors.QueryFilterParseError):
        details = err.GetDetails()
        if details and details[0] == err.args[0]:
            details = details[1:]
        text = "Error while parsing query filter: %s\n%s" % (
            err.args[0], "\n".join(details))
    elif isinstance(err, errors.GenericError):
        text = "Unhandled Ganeti error: %s" % msg
    elif isinstance(err, errors.JobSubmittedException):
        text = "JobID: %s" % (err.args[0] if err.args else msg)
        retcode = constants.EXIT_SUCCESS
    else:
        text = "Unhandled exception: %s" % msg
    return retcode, text.rstrip("\n")


# Argument parsing and GenericMain --------------------------------------------

class _ShowUsage(Exception):
    """Print the tool's usage; ``exit_error`` selects the exit code.

    ``message`` says what was wrong: Ganeti prints only the usage for an
    unknown command, which leaves a mistyped name unexplained.
    """

    def __init__(self, exit_error: bool, message: str | None = None):
        Exception.__init__(self)
        self.exit_error = exit_error
        self.message = message


class _ShowVersion(Exception):
    """Print the version and exit."""


class _ParserExit(Exception):
    """optparse wanted to exit (after --help or a usage error)."""

    def __init__(self, status: int):
        Exception.__init__(self, status)
        self.status = status


class _OptionParser(OptionParser):
    # optparse calls sys.exit; GenericMain returns exit codes instead
    def exit(self, status: int = 0, msg: str | None = None) -> NoReturn:
        if msg:
            sys.stderr.write(msg)
        raise _ParserExit(status)


def _FormatUsage(binary: str, commands: dict) -> list[str]:
    lines = ["Usage: %s {command} [options...] [argument...]" % binary,
             "%s <command> --help to see details, or man %s" %
             (binary, binary),
             "",
             "Commands:"]
    width = min(60, max(len(cmd) for cmd in commands))
    for cmd, (_, _, _, _, help_text) in sorted(commands.items()):
        help_lines = textwrap.wrap(help_text, 79 - 3 - width) or [""]
        lines.append(" %-*s - %s" % (width, cmd, help_lines[0]))
        lines.extend(" %-*s   %s" % (width, "", line)
                     for line in help_lines[1:])
    lines.append("")
    return lines


def _CheckArguments(cmd: str, args_def: list, args: list[str]) -> bool:
    """Check the number of arguments, printing Ganeti's message if wrong."""
    if args and not args_def:
        ToStderr("Error: Command %s expects no arguments", cmd)
        return False
    min_count = sum(arg.min or 0 for arg in args_def)
    for arg in args_def[:-1]:
        if arg.max is None:
            raise errors.ProgrammerError("Only the last argument can have"
                                         " max=None")
    bounded = bool(args_def) and args_def[-1].max is not None
    max_count = sum(arg.max for arg in args_def) if bounded else None
    if bounded and min_count == max_count and len(args) != min_count:
        ToStderr("Error: Command %s expects %d argument(s)", cmd, min_count)
        return False
    if max_count is not None and len(args) > max_count:
        ToStderr("Error: Command %s expects only %d argument(s)", cmd,
                 max_count)
        return False
    if len(args) < min_count:
        ToStderr("Error: Command %s expects at least %d argument(s)", cmd,
                 min_count)
        return False
    return True


def _ParseArgs(binary: str, argv: list[str], commands: dict, aliases: dict,
               env_override: Iterable[str]) -> tuple:
    if len(argv) < 2:
        raise _ShowUsage(exit_error=True)
    cmd = argv[1]
    if cmd == "--version":
        raise _ShowVersion()
    if cmd in ("--help", "-h"):
        raise _ShowUsage(exit_error=False)
    if cmd not in commands and cmd not in aliases:
        raise _ShowUsage(exit_error=True,
                         message="Error: Unknown command '%s'" % cmd)
    if cmd in aliases:
        if aliases[cmd] not in commands:
            raise errors.ProgrammerError("Alias '%s' maps to non-existing"
                                         " command '%s'" % (cmd, aliases[cmd]))
        cmd = aliases[cmd]

    if cmd in env_override:
        env_name = ("%s_%s" % (binary.replace("-", "_"), cmd)).upper()
        env_args = os.environ.get(env_name)
        if env_args:
            argv = argv[:2] + shlex.split(env_args) + argv[2:]

    func, args_def, parser_opts, usage, description = commands[cmd]
    parser = _OptionParser(option_list=list(parser_opts) + COMMON_OPTS,
                           description=description,
                           formatter=TitledHelpFormatter(),
                           prog=binary,
                           usage="%%prog %s %s" % (cmd, usage))
    # A trailing command ("gnt-cluster command ls -l") keeps its options
    if any(isinstance(arg, ArgCommand) for arg in args_def):
        parser.disable_interspersed_args()
    options, args = parser.parse_args(args=argv[2:])
    if not _CheckArguments(cmd, args_def, args):
        return None, None, None, cmd
    return func, options, args, cmd


class _LoggingSetup:
    """Logging of one command run: commands.log and (with -d) stderr."""

    def __init__(self, binary: str, debug: int):
        self._root = logging.getLogger()
        self._old_level = self._root.level
        self._handlers: list[logging.Handler] = []
        fmt = logging.Formatter(
            "%%(asctime)s: %s pid=%%(process)d %%(module)s:%%(lineno)s"
            " %%(levelname)s %%(message)s" % binary)
        stderr_handler = logging.StreamHandler(sys.stderr)
        stderr_handler.setFormatter(fmt)
        stderr_handler.setLevel(logging.NOTSET if debug else logging.CRITICAL)
        self._handlers.append(stderr_handler)
        try:
            file_handler = logging.FileHandler(pathutils.LOG_COMMANDS,
                                               encoding="utf-8")
        except OSError:
            # Not installed, or not allowed to write the log: that's fine
            pass
        else:
            file_handler.setFormatter(fmt)
            file_handler.setLevel(logging.DEBUG if debug else logging.INFO)
            self._handlers.append(file_handler)
        self._root.setLevel(logging.DEBUG)
        for handler in self._handlers:
            self._root.addHandler(handler)

    def Close(self) -> None:
        for handler in self._handlers:
            self._root.removeHandler(handler)
            handler.close()
        self._root.setLevel(self._old_level)


def GenericMain(commands: dict, aliases: dict | None = None,
                env_override: Iterable[str] | None = None,
                override: dict | None = None,
                argv: list[str] | None = None) -> int:
    """Run the subcommand named on the command line; return the exit code.

    ``commands`` maps a name to ``(fn, argdefs, options, usage, help)`` and
    ``fn(opts, args)`` returns the exit code. ``override`` sets option
    values (e.g. the tag kind of a tool), ``env_override`` names the
    subcommands that take default arguments from ``GNT_<BINARY>_<CMD>``.
    """
    global _invocation  # pylint: disable=global-statement
    if argv is None:
        argv = sys.argv
    binary = os.path.basename(argv[0]) if argv and argv[0] else \
        "<unknown program>"
    aliases = aliases or {}
    env_override = frozenset(env_override or ())
    try:
        func, options, args, cmd = _ParseArgs(binary, list(argv), commands,
                                              aliases, env_override)
    except _ShowVersion:
        ToStdout("%s (ganeti) %s", binary, constants.RELEASE_VERSION)
        return constants.EXIT_SUCCESS
    except _ShowUsage as err:
        for line in _FormatUsage(binary, commands):
            ToStdout(line)
        if err.message:
            ToStderr(err.message)
        return constants.EXIT_FAILURE if err.exit_error else \
            constants.EXIT_SUCCESS
    except _ParserExit as err:
        return err.status
    except errors.ParameterError as err:
        ToStderr(FormatError(err)[1])
        return constants.EXIT_FAILURE
    if func is None:
        return constants.EXIT_FAILURE

    for key, val in (override or {}).items():
        setattr(options, key, val)
    _invocation = (binary, cmd)
    log_setup = _LoggingSetup(binary, options.debug)
    logging.debug("Command line: %s", shlex.join(argv))
    try:
        result = func(options, args)
    except (errors.GenericError, errors.JobSubmittedException) as err:
        if isinstance(err, errors.NoMasterError):
            err = _ExplainNoMaster(err)
        result, err_msg = FormatError(err)
        logging.debug("Error during command processing", exc_info=True)
        ToStderr(err_msg)
    except KeyboardInterrupt:
        result = constants.EXIT_FAILURE
        ToStderr("Aborted. Note that if the operation created any jobs, they"
                 " might have been submitted and will continue to run in the"
                 " background.")
    except BrokenPipeError:
        result = constants.EXIT_FAILURE
    finally:
        log_setup.Close()
        _invocation = None
    return result


def _ExplainNoMaster(err: errors.NoMasterError) -> errors.GenericError:
    """Why this node has no master socket, as Ganeti's GetClient says it.

    Usually the node is not (or, after a failover, no longer) the master;
    its ssconf names the node to run the command on instead. A socket
    forced by path (FORCE_LUXI_SOCKET) says nothing about this node.
    """
    if not err.args or err.args[0] not in (pathutils.MASTER_SOCKET,
                                           pathutils.QUERY_SOCKET):
        return err
    # Imported here: only this error path reads ssconf, and every gnt-*
    # start would otherwise load it (with netutils and uidpool)
    from ganeti import ssconf
    try:
        master, myself = ssconf.GetMasterAndMyself()
    except errors.ConfigurationError:
        return errors.OpPrereqError("Cluster not initialized or this machine"
                                    " is not part of a cluster",
                                    errors.ECODE_INVAL)
    if master == myself:
        return err
    how = ""
    if vcluster.IsVirtual():
        how = " (in this virtual cluster: with %s=%s %s=%s)" % (
            vcluster.ENV_ROOTDIR, vcluster.NodeRootDirectory(master),
            vcluster.ENV_HOSTNAME, master)
    return errors.OpPrereqError("This is not the master node, please connect"
                                " to node '%s'%s and rerun the command" %
                                (master, how), errors.ECODE_INVAL)


# Jobs ------------------------------------------------------------------------

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


# Tables ----------------------------------------------------------------------

def _FieldMatcher(patterns: Iterable[str] | None) -> Callable[[str], bool]:
    # Field names or regular expressions matching whole names (Ganeti's
    # FieldSet), e.g. "disk\.size/([0-9]+)"
    regexes = [re.compile("^%s$" % pattern) for pattern in (patterns or [])]
    return lambda field: any(rex.match(field) for rex in regexes)


def _AlignRows(rows: list[list[str]], align_right: list[bool],
               separator: str | None) -> list[str]:
    if separator is not None:
        return [separator.join(row) for row in rows]
    widths = [max((len(row[idx]) for row in rows), default=0)
              for idx in range(len(align_right))]
    if align_right and not align_right[-1]:
        # No padding after the last column
        widths[-1] = 0
    result = []
    for row in rows:
        cells = [value.rjust(width) if right else value.ljust(width)
                 for value, width, right in zip(row, widths, align_right)]
        result.append(" ".join(cells))
    return result


def GenerateTable(headers: dict | None, fields: list[str],
                  separator: str | None, data: Iterable,
                  numfields: Iterable[str] | None = None,
                  unitfields: Iterable[str] | None = None,
                  units: str | None = None) -> list[str]:
    """Format rows as text lines.

    ``headers`` maps field -> title (None or empty: no header line). Without
    a separator, columns are aligned (``numfields`` to the right); with one,
    values are joined by it. ``unitfields`` hold MiB sizes shown in
    ``units`` (default "h", or "m" with a separator). A row of None is
    shown as dashes.
    """
    if units is None:
        units = "m" if separator else "h"
    is_num = _FieldMatcher(numfields)
    is_unit = _FieldMatcher(unitfields)
    rows = []
    if headers:
        rows.append([str(headers.get(field, field)) for field in fields])
    for row in data:
        if row is None:
            rows.append(["-" for _ in fields])
            continue
        cells = []
        for field, val in zip(fields, row):
            if is_unit(field):
                try:
                    val = FormatUnit(int(val), units)
                except (TypeError, ValueError):
                    pass
            cells.append(str(val))
        rows.append(cells)
    return _AlignRows(rows, [is_num(field) for field in fields], separator)


class TableColumn:
    """A column of FormatTable: title, value formatter, alignment."""

    def __init__(self, title: str, fn: Callable[[Any], str],
                 align_right: bool):
        self.title = title
        self.format = fn
        self.align_right = align_right


def FormatTable(rows: Iterable[Sequence], columns: list[TableColumn],
                header: bool, separator: str | None) -> list[str]:
    """Format rows of raw values through their columns' formatters."""
    lines = [[col.title for col in columns]] if header else []
    for row in rows:
        lines.append([col.format(value) for value, col in zip(row, columns)])
    return _AlignRows(lines, [col.align_right for col in columns], separator)


def _DefaultFormatter(kind: str, unit: str) -> tuple[Callable, bool]:
    if kind == constants.QFT_UNIT:
        return (lambda value: FormatUnit(value, unit)), True
    if kind in (constants.QFT_NUMBER, constants.QFT_NUMBER_FLOAT):
        return str, True
    if kind == constants.QFT_BOOL:
        return FormatBool, False
    if kind == constants.QFT_TIMESTAMP:
        return FormatTime, False
    return str, False


def FormatResultError(status: int, verbose: bool) -> str:
    """How a result status other than RS_NORMAL is shown: "(unavail)",
    or with ``verbose`` false "-"."""
    verbose_text, short_text = _RS_DESCRIPTION.get(status, ("?", "?"))
    return verbose_text if verbose else short_text


def FormatQueryResult(result: dict, unit: str | None = None,
                      format_override: dict | None = None,
                      separator: str | None = None, header: bool = False,
                      verbose: bool = False) -> tuple[int, list[str]]:
    """Format a LUXI Query result; return ``(QR_* status, lines)``.

    ``format_override`` maps a field name to ``(fn, align_right)``.
    """
    if unit is None:
        unit = "m" if separator else "h"
    format_override = format_override or {}
    stats = {"unknown": False, "abnormal": False}

    def make_column(fdef: dict) -> TableColumn:
        fn, align_right = format_override.get(
            fdef["name"], _DefaultFormatter(fdef["kind"], unit))

        def fmt(cell: Sequence) -> str:
            status, value = cell
            if status == constants.RS_NORMAL:
                return str(fn(value))
            if status == constants.RS_UNKNOWN:
                stats["unknown"] = True
            else:
                stats["abnormal"] = True
            return FormatResultError(status, verbose)
        return TableColumn(fdef["title"], fmt, bool(align_right))

    columns = [make_column(fdef) for fdef in result["fields"]]
    lines = FormatTable(result["data"], columns, header, separator)
    if stats["unknown"] or any(fdef["kind"] == constants.QFT_UNKNOWN
                               for fdef in result["fields"]):
        status = QR_UNKNOWN
    elif stats["abnormal"]:
        status = QR_INCOMPLETE
    else:
        status = QR_NORMAL
    return status, lines


def _WarnUnknownFields(fdefs: list[dict]) -> bool:
    unknown = [fdef["name"] for fdef in fdefs
               if fdef["kind"] == constants.QFT_UNKNOWN]
    if unknown:
        ToStderr("Warning: Queried for unknown fields %s", ", ".join(unknown))
        return True
    return False


def GenericList(resource: str, fields: list[str], names: list[str] | None,
                unit: str | None, separator: str | None, header: bool,
                cl: luxi.Client | None = None,
                format_override: dict | None = None, verbose: bool = False,
                force_filter: bool = False, namefield: str | None = None,
                qfilter: list | None = None, isnumeric: bool = False) -> int:
    """Query ``resource`` over LUXI and print a table; return exit code.

    ``names`` are the command's arguments: names, globs or one filter text
    (qlang.MakeFilter); ``qfilter`` (e.g. from a status option) further
    restricts the rows. Unknown fields are reported and give
    EXIT_UNKNOWN_FIELD (14).
    """
    namefilter = qlang.MakeFilter(names or None, force_filter,
                                  namefield=namefield, isnumeric=isnumeric)
    if qfilter is None:
        qfilter = namefilter
    elif namefilter is not None:
        qfilter = [qlang.OP_AND, namefilter, qfilter]
    if cl is None:
        cl = GetClient()
    response = cl.Query(resource, fields, qfilter)
    found_unknown = _WarnUnknownFields(response["fields"])
    _, lines = FormatQueryResult(response, unit=unit, separator=separator,
                                 header=header,
                                 format_override=format_override,
                                 verbose=verbose)
    if lines:
        # One write: a large listing line by line costs a flush per line
        ToStdout("\n".join(lines))
    if found_unknown:
        return constants.EXIT_UNKNOWN_FIELD
    return constants.EXIT_SUCCESS


# How list-fields names the field kinds, as Ganeti's clients do
_QFT_NAMES = {
    constants.QFT_UNKNOWN: "Unknown",
    constants.QFT_TEXT: "Text",
    constants.QFT_BOOL: "Boolean",
    constants.QFT_NUMBER: "Number",
    constants.QFT_NUMBER_FLOAT: "Floating-point number",
    constants.QFT_UNIT: "Storage size",
    constants.QFT_TIMESTAMP: "Timestamp",
    constants.QFT_OTHER: "Custom",
}


def GenericListFields(resource: str, fields: list[str] | None,
                      separator: str | None, header: bool,
                      cl: luxi.Client | None = None) -> int:
    """Print the fields of ``resource`` (the ``list-fields`` commands)."""
    if cl is None:
        cl = GetClient()
    response = cl.QueryFields(resource, fields or None)
    found_unknown = _WarnUnknownFields(response["fields"])
    columns = [TableColumn("Name", str, False),
               TableColumn("Type", str, False),
               TableColumn("Title", str, False),
               TableColumn("Description", str, False)]
    rows = [[fdef["name"], _QFT_NAMES.get(fdef["kind"], fdef["kind"]),
             fdef["title"], fdef.get("doc", "")]
            for fdef in response["fields"]]
    for line in FormatTable(rows, columns, header, separator):
        ToStdout(line)
    if found_unknown:
        return constants.EXIT_UNKNOWN_FIELD
    return constants.EXIT_SUCCESS


# Tags ------------------------------------------------------------------------

def _ExtractTagsObject(opts: Any, args: list[str]) -> tuple[str, str | None]:
    kind = getattr(opts, "tag_type", None)
    if kind is None:
        raise errors.ProgrammerError("The command did not set tag_type")
    if kind == constants.TAG_CLUSTER:
        return kind, None
    if kind in (constants.TAG_NODEGROUP, constants.TAG_NODE,
                constants.TAG_NETWORK, constants.TAG_INSTANCE):
        if not args:
            raise errors.OpPrereqError("no arguments passed to the command",
                                       errors.ECODE_INVAL)
        return kind, args.pop(0)
    raise errors.ProgrammerError("Unhandled tag type '%s'" % kind)


def _ExtendTags(opts: Any, args: list[str]) -> None:
    fname = getattr(opts, "tags_source", None)
    if fname is None:
        return
    if fname == "-":
        lines = sys.stdin.read().splitlines()
    else:
        with open(fname, encoding="utf-8") as fobj:
            lines = fobj.read().splitlines()
    args.extend(line.strip() for line in lines if line.strip())


def ListTags(opts: Any, args: list[str]) -> int:
    """Print the tags of the object named in ``args`` (kind from opts)."""
    kind, name = _ExtractTagsObject(opts, args)
    for tag in sorted(GetClient().QueryTags(kind, name)):
        ToStdout(tag)
    return constants.EXIT_SUCCESS


def AddTags(opts: Any, args: list[str]) -> int:
    """Add tags (from args and --from) to an object."""
    kind, name = _ExtractTagsObject(opts, args)
    _ExtendTags(opts, args)
    if not args:
        raise errors.OpPrereqError("No tags to be added", errors.ECODE_INVAL)
    SubmitOrSend(opcodes.OpTagsSet(kind=kind, name=name, tags=args), opts)
    return constants.EXIT_SUCCESS


def RemoveTags(opts: Any, args: list[str]) -> int:
    """Remove tags (from args and --from) from an object."""
    kind, name = _ExtractTagsObject(opts, args)
    _ExtendTags(opts, args)
    if not args:
        raise errors.OpPrereqError("No tags to be removed",
                                   errors.ECODE_INVAL)
    SubmitOrSend(opcodes.OpTagsDel(kind=kind, name=name, tags=args), opts)
    return constants.EXIT_SUCCESS


# Generic "info" output -------------------------------------------------------

def FormatParamsDictInfo(custom: dict, actual: dict,
                         roman: bool = False) -> dict:
    """Effective parameters for display: own values as they are, inherited
    ones as "default (<value>)"; integers in roman numerals with
    ``roman``."""
    result: dict[str, dict | str] = {}
    for key, value in actual.items():
        if isinstance(value, dict) and value:
            result[key] = FormatParamsDictInfo(custom.get(key) or {}, value,
                                               roman)
        elif key in custom:
            result[key] = str(TryToRoman(custom[key], roman))
        else:
            result[key] = "default (%s)" % (TryToRoman(value, roman), )
    return result


def _ISpecs(opt: str, text: str) -> dict:
    try:
        values = SplitKeyVal(opt, text, False)
        return {key: int(value) for key, value in values.items()}
    except (errors.ParameterError, ValueError) as err:
        raise errors.OpPrereqError("Invalid %s value %r: %s" %
                                   (opt, text, err), errors.ECODE_INVAL)


def BuildIPolicy(opts: Any, allow_reset: bool = False) -> dict | None:
    """The instance policy changes given by the --ipolicy-* options.

    With ``allow_reset`` (a group's modify), "default" as the bounds or
    the disk templates resets them to the cluster's.
    """
    ipolicy: dict[str, Any] = {}
    bounds_text = opts.ipolicy_bounds_specs
    if allow_reset and bounds_text == constants.VALUE_DEFAULT:
        ipolicy[families.ISPECS_MINMAX] = constants.VALUE_DEFAULT
    elif bounds_text:
        minmax = []
        for pair in bounds_text.split("//"):
            bounds = {}
            for part in pair.split("/"):
                kind, _, specs = part.partition(":")
                if kind not in (families.ISPECS_MIN, families.ISPECS_MAX):
                    raise errors.OpPrereqError(
                        "Invalid --ipolicy-bounds-specs part %r, expected"
                        " min:... or max:..." % part, errors.ECODE_INVAL)
                bounds[kind] = _ISpecs("--ipolicy-bounds-specs", specs)
            minmax.append(bounds)
        ipolicy[families.ISPECS_MINMAX] = minmax
    if getattr(opts, "ipolicy_std_specs", None):
        ipolicy[families.ISPECS_STD] = {
            key: int(value) if str(value).isdigit() else value
            for key, value in opts.ipolicy_std_specs.items()}
    templates = opts.ipolicy_disk_templates
    if allow_reset and templates == [constants.VALUE_DEFAULT]:
        ipolicy[families.IPOLICY_DTS] = constants.VALUE_DEFAULT
    elif templates is not None:
        ipolicy[families.IPOLICY_DTS] = templates
    if opts.ipolicy_vcpu_ratio is not None:
        ipolicy[families.IPOLICY_VCPU_RATIO] = opts.ipolicy_vcpu_ratio
    if opts.ipolicy_spindle_ratio is not None:
        ipolicy[families.IPOLICY_SPINDLE_RATIO] = opts.ipolicy_spindle_ratio
    return ipolicy or None


def FormatPolicyInfo(custom: dict, effective: dict, iscluster: bool,
                     roman: bool = False) -> list[tuple[str, Any]]:
    """An instance policy for PrintGenericInfo, in Ganeti's layout:
    "bounds specs" (a ``min/N``, ``max/N`` pair per entry), the cluster's
    "std" specs, "allowed disk templates" and the ratios, inherited
    values marked "default (<value>)" (a group's; the cluster's policy is
    all its own)."""
    if iscluster:
        effective = custom
    own = bool(custom.get(families.ISPECS_MINMAX))
    minmax = (custom if own else effective)[families.ISPECS_MINMAX]
    bounds = [[("%s/%d" % (key, idx),
                FormatParamsDictInfo(specs[key] if own else {}, specs[key],
                                     roman))
               for key in (families.ISPECS_MIN, families.ISPECS_MAX)]
              for idx, specs in enumerate(minmax)]
    result: list[tuple[str, Any]] = [("bounds specs", bounds)]
    if iscluster:
        std = custom[families.ISPECS_STD]
        result.append((families.ISPECS_STD,
                       FormatParamsDictInfo(std, std, roman)))
    templates = custom.get(families.IPOLICY_DTS)
    result.append(("allowed disk templates",
                   ", ".join(templates) if templates is not None else
                   "default (%s)" %
                   ", ".join(effective[families.IPOLICY_DTS])))
    for key in (families.IPOLICY_SPINDLE_RATIO, families.IPOLICY_VCPU_RATIO):
        result.append((key, str(TryToRoman(custom.get(
            key, "default (%s)" % (TryToRoman(effective[key], roman),
                                   )), roman))))
    return result


def _SerializeInfo(lines: list[str], data: Any, level: int,
                   prefix: str) -> None:
    """Append ``data`` in Ganeti's YAML-like "info" layout.

    ``prefix`` is what precedes the first line (the key, or the list
    dash); lists of pairs are ordered mappings.
    """
    indent = "  " * level
    if isinstance(data, list) and data and isinstance(data[0], tuple):
        items = data
    elif isinstance(data, dict) and data:
        items = sorted(data.items())
    elif isinstance(data, list) and data:
        if prefix:
            lines.append(prefix.rstrip())
            prefix = indent
        for item in data:
            _SerializeInfo(lines, item, level + 1, prefix + "- ")
            prefix = indent
        return
    elif isinstance(data, (list, dict)):
        lines.append(prefix)
        return
    else:
        lines.append("%s%s" % (prefix, data))
        return
    if prefix.strip().endswith(":"):
        lines.append(prefix.rstrip())
        prefix = indent
    for key, value in items:
        _SerializeInfo(lines, value, level + 1, "%s%s: " % (prefix, key))
        prefix = indent


def PrintGenericInfo(data: list) -> None:
    """Print a list of objects, each a list of (key, value) pairs."""
    lines: list[str] = []
    _SerializeInfo(lines, data, 0, "")
    for line in lines:
        ToStdout("%s", line)


def QueryRows(resource: str, fields: list[str], names: list[str]) -> list:
    """Rows of plain values (None where a value is missing) of the named
    objects, all if no names are given."""
    result = GetClient().Query(resource, fields,
                                   qlang.MakeFilter(names or None, False))
    return [[value if status == constants.RS_NORMAL else None
             for status, value in row] for row in result["data"]]
