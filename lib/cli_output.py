"""What the gnt-* tools say to the user: lines on stdout and stderr,
questions and Ganeti's messages for errors.
"""

import errno
import logging
import sys
import textwrap
from optparse import Option
from typing import Any

from ganeti import constants, errors


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
