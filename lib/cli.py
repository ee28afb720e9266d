"""Framework of the gnt-* command line tools.

Every tool is a table of subcommands run by :func:`GenericMain`, which
parses options, checks argument counts, sets up logging and turns Ganeti
errors into Ganeti's messages and exit codes. Job-submitting commands go
through :func:`SubmitOrSend`/:func:`SubmitOpCode`, listing commands through
:func:`GenericList`, so all tools behave alike (``--submit``, ``-o``,
``--separator``, exit code 14 for unknown fields, ...).

The tools use this module only: it re-exports the options (cli_opts),
the output (cli_output), the formatting (cli_format) and the job
(cli_jobs) helpers.
"""

import logging
import os
import shlex
import sys
import textwrap
from optparse import OptionParser, TitledHelpFormatter
from typing import Any, Iterable, NoReturn

from ganeti import (constants, errors, luxi, opcodes, pathutils, qlang,
                    vcluster)
from ganeti.cli_format import (  # noqa: F401 (re-exported API)
    QR_INCOMPLETE, QR_NORMAL, QR_UNKNOWN, FormatBool, FormatLogMessage,
    FormatParamsDictInfo, FormatPolicyInfo, FormatQueryResult,
    FormatResultError, FormatTable, FormatTime, FormatTimestamp,
    GenerateTable, PrintGenericInfo, TableColumn)
from ganeti.cli_jobs import (  # noqa: F401 (re-exported API)
    FeedbackFnJobPollReportCb, FollowUpJobsExit, GenericPollJob, GetClient,
    JobExecutor, JobPollReportCbBase, PollJob, RunFollowUpJobs, SendJob,
    SetGenericOpcodeOpts, SetInvocation, StdioJobPollReportCb, SubmitOpCode,
    SubmitOrSend)
from ganeti.cli_opts import *  # noqa: F401,F403 (re-exported API)
from ganeti.cli_opts import COMMON_OPTS, ArgCommand, SplitKeyVal
from ganeti.cli_output import (  # noqa: F401 (re-exported API)
    AskUser, ConfirmOperation, FormatError, ToStderr, ToStdout)
from ganeti.parameters import families
from ganeti.utils.text import FormatUnit  # noqa: F401 (re-exported API)


# Argument values -------------------------------------------------------------

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
    SetInvocation((binary, cmd))
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
        SetInvocation(None)
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


# Listing ---------------------------------------------------------------------

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


def QueryRows(resource: str, fields: list[str], names: list[str]) -> list:
    """Rows of plain values (None where a value is missing) of the named
    objects, all if no names are given."""
    result = GetClient().Query(resource, fields,
                                   qlang.MakeFilter(names or None, False))
    return [[value if status == constants.RS_NORMAL else None
             for status, value in row] for row in result["data"]]


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


# Instance policy options -----------------------------------------------------

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
