"""The self-diagnose data collector (design-maintd).

It runs the command the cluster configuration names
(``diagnose_data_collector_filename``), which the node must have
white-listed: a file of that name in NODE_DIAGNOSE_COMMANDS_DIR, that
directory and the file owned by root and writable by root only, the file
executable (Ganeti's rules for restricted commands and for this
collector). The command prints exactly one JSON object: ``status`` (one
of constants.DIAGNOSE_STATUSES), ``command`` (a string, the repair
command for live-repair) and ``details`` (anything); the report's data
is that object as printed, so the same output is the same event for
ganeti-maintd.

The empty name is the built-in diagnose, always "Ok". Anything else (a
name that is not a plain file name, a command that is missing or not
white-listed, that fails, crashes, outlives the collection interval or
prints anything but such an object) gives a failed report: status "Ok",
so that nobody repairs anything because of it, ``failed`` true and the
reason in ``details``. The report is signed with the cluster's HMAC key,
as ganeti-maintd acts on it.

The repair commands of ``live-repair`` (RunRepairCommand, run by noded
for maintd's OpRepairCommand) follow the same white-list rules in their
own directory, NODE_REPAIR_COMMANDS_DIR, and the other rules of Ganeti's
restricted commands: one at a time on a node (a lock file), and a
refused or failed one answered only after a delay, still holding the
lock, so that failures can't be provoked in quick succession.
"""

import contextlib
import logging
import os
import stat
import time
from collections.abc import Iterator
from typing import Any, Callable

from ganeti import constants, errors, pathutils, serializer, utils
from ganeti.monitoring import collectors, report
from ganeti.utils import process

# Ganeti's text for the built-in diagnose
BUILTIN_DETAILS = "No file specified for diagnose data collector"
_KEYS = frozenset(["status", "command", "details"])
# The most of a command's output quoted in a failure report
_MAX_QUOTE = 200


def _CheckOwnedByRoot(path: str, info: os.stat_result, what: str) -> None:
    if info.st_uid != 0 or info.st_gid != 0:
        raise errors.DataCollectorError("%s %s must be owned by root:root" %
                                        (what, path))
    if info.st_mode & 0o022:
        raise errors.DataCollectorError(
            "%s %s must be writable by its owner only" % (what, path))


def WhiteListedCommand(filename: str,
                       directory: str = pathutils.NODE_DIAGNOSE_COMMANDS_DIR,
                       what: str = "diagnose") -> str:
    """The path of a white-listed ``what`` command (diagnose or repair,
    each with its directory); DataCollectorError saying why if
    ``filename`` is none."""
    if filename in (".", "..") or "/" in filename or "\0" in filename:
        raise errors.DataCollectorError(
            "Invalid filename %r for the %s command: only file names in %s"
            " are allowed" % (filename, what, directory))
    try:
        dir_info = os.stat(directory)
    except OSError as err:
        raise errors.DataCollectorError(
            "The white-list directory %s of %s commands is missing: %s" %
            (directory, what, err.strerror)) from None
    if not stat.S_ISDIR(dir_info.st_mode):
        raise errors.DataCollectorError("%s is not a directory" % directory)
    _CheckOwnedByRoot(directory, dir_info, "The directory")
    path = os.path.join(directory, filename)
    try:
        info = os.stat(path)
    except OSError:
        raise errors.DataCollectorError(
            "The %s command %s is not white-listed: no such file in %s" %
            (what, filename, directory)) from None
    label = "The %s command" % what
    if not stat.S_ISREG(info.st_mode):
        raise errors.DataCollectorError("%s %s must be a regular file" %
                                        (label, path))
    _CheckOwnedByRoot(path, info, label)
    if not info.st_mode & stat.S_IXUSR:
        raise errors.DataCollectorError(
            "%s %s must be executable by its owner" % (label, path))
    return path


def _Quote(text: str) -> str:
    text = text.strip()
    if len(text) > _MAX_QUOTE:
        return repr(text[:_MAX_QUOTE]) + "..."
    return repr(text)


def ParseDiagnoseOutput(output: str) -> dict[str, Any]:
    """The diagnose object a command printed; DataCollectorError unless
    it printed exactly one valid one."""
    try:
        data = serializer.LoadJson(output)
    except ValueError as err:
        raise errors.DataCollectorError(
            "The diagnose command did not print one JSON object (%s): %s" %
            (err, _Quote(output))) from None
    if not isinstance(data, dict):
        raise errors.DataCollectorError(
            "The diagnose command printed %s, not a JSON object" %
            _Quote(output))
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise errors.DataCollectorError(
            "The diagnose command printed unknown keys: %s" %
            ", ".join(unknown))
    status = data.get("status")
    if status not in constants.DIAGNOSE_STATUSES:
        raise errors.DataCollectorError(
            "The diagnose command printed the unknown status %r (known: %s)"
            % (status, ", ".join(sorted(constants.DIAGNOSE_STATUSES))))
    if not isinstance(data.get("command", ""), str):
        raise errors.DataCollectorError(
            "The diagnose command printed a command that is not a string")
    return data


def RunDiagnose(filename: str, timeout: float) -> dict[str, Any]:
    """The diagnose object of the command ``filename`` (built-in if
    empty); DataCollectorError saying why there is none."""
    if not filename:
        return {"status": constants.DIAGNOSE_OK, "command": "",
                "details": BUILTIN_DETAILS}
    path = WhiteListedCommand(filename)
    try:
        result = process.RunCmd([path], cwd="/", timeout=timeout)
    except errors.CommandError as err:
        raise errors.DataCollectorError(str(err)) from None
    if result.failed:
        raise errors.DataCollectorError(
            "The diagnose command %s %s: %s" %
            (filename, result.fail_reason, _Quote(result.output)))
    return ParseDiagnoseOutput(result.stdout)


@contextlib.contextmanager
def _RepairLock(timeout: float) -> Iterator[None]:
    """Hold the node's repair command lock, waiting at most ``timeout``
    seconds for the command running; CommandError if it still runs."""
    path = pathutils.REPAIR_COMMAND_LOCK_FILE
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        fd = utils.LockFile(path, timeout)
    except errors.LockError:
        raise errors.CommandError(
            "Another repair command is still running on this node (waited"
            " %s seconds)" % timeout) from None
    try:
        yield
    finally:
        os.close(fd)


def RunRepairCommand(command: str, input_data: str | None,
                     timeout: float = constants.REPAIR_COMMAND_TIMEOUT,
                     lock_timeout: float =
                     constants.REPAIR_COMMAND_LOCK_TIMEOUT,
                     fail_delay: float = constants.REPAIR_COMMAND_FAIL_DELAY
                     ) -> str:
    """Run a live-repair command (design-maintd): white-listed in
    NODE_REPAIR_COMMANDS_DIR under the rules of the diagnose commands,
    no arguments, the diagnose object on its standard input, the only
    repair command running on the node. Its output is the result;
    CommandError (with the output) if it is not white-listed, fails or
    outlives ``timeout``, raised ``fail_delay`` seconds later."""
    with _RepairLock(lock_timeout):
        try:
            return _RunRepair(command, input_data, timeout)
        except errors.CommandError as err:
            logging.warning("%s; answering in %s seconds", err, fail_delay)
            time.sleep(fail_delay)
            raise


def _RunRepair(command: str, input_data: str | None, timeout: float) -> str:
    try:
        path = WhiteListedCommand(command, pathutils.NODE_REPAIR_COMMANDS_DIR,
                                  what="repair")
    except errors.DataCollectorError as err:
        raise errors.CommandError(str(err)) from None
    logging.info("Running the repair command %s", path)
    result = process.RunCmd([path], cwd="/", timeout=timeout,
                            input_data=input_data or "")
    if result.failed:
        raise errors.CommandError("The repair command %s %s: %s" %
                                  (command, result.fail_reason,
                                   _Quote(result.output)))
    return result.output


def FailedData(message: str) -> dict[str, Any]:
    """The data of a failed diagnose: no action asked for."""
    return {"status": constants.DIAGNOSE_OK, "command": "",
            "details": message, "failed": True}


class Diagnose(collectors.DataCollector):
    """The self-diagnose collector; ``filename_fn`` gives the configured
    command, ``key_fn`` the cluster's HMAC key (None: none to sign with).
    """

    NAME = constants.DATA_COLLECTOR_DIAGNOSE
    CATEGORY = report.CATEGORY_NODE
    KIND = report.KIND_STATUS

    def __init__(self, filename_fn: Callable[[], str],
                 key_fn: Callable[[], bytes | None]):
        self._filename_fn = filename_fn
        self._key_fn = key_fn
        self._last_error: str | None = None

    def Collect(self, interval: float) -> Any:
        try:
            data = RunDiagnose(self._filename_fn(), interval)
            self._last_error = None
            return data
        except errors.DataCollectorError as err:
            message = str(err)
            if message != self._last_error:
                logging.warning("Self-diagnose failed: %s", message)
            self._last_error = message
            return FailedData(message)

    def Report(self, interval: float) -> dict[str, Any]:
        unsigned = super().Report(interval)
        key = self._key_fn()
        if key is None:
            return unsigned
        return report.SignReport(unsigned, key)
