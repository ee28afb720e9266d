"""Cluster verification on the node, gnt-cluster command and copyfile,
and the out-of-band program.
"""

import hashlib
import logging
import os
import time
from typing import Any

from ganeti import (constants, errors, hypervisor, netutils, pathutils,
                    serializer, ssconf, vcluster)
from ganeti.monitoring import diagnose
from ganeti.storage import drbd_daemon, filestorage
from ganeti.utils import io, process
from ganeti.backend.common import DecodeContent, Fail, LocalPath
from ganeti.backend.instance import GetHypervisor


_NV_CHECKS = frozenset([constants.NV_FILELIST, constants.NV_TIME,
                        constants.NV_VERSION, constants.NV_HYPERVISOR,
                        constants.NV_ACCEPTED_STORAGE_PATHS,
                        constants.NV_FILE_STORAGE_PATH,
                        constants.NV_SHARED_FILE_STORAGE_PATH,
                        constants.NV_FILE_STORAGE_FILES,
                        constants.NV_HVINFO, constants.NV_DRBDLIST])


def _FileChecksum(path: str) -> str | None:
    """SHA-256 of a file as hex; None if the file can't be read."""
    try:
        with open(path, "rb") as fobj:
            return hashlib.file_digest(fobj, "sha256").hexdigest()
    except FileNotFoundError:
        return None
    except OSError as err:
        logging.warning("Cannot compute the checksum of %s: %s", path, err)
        return None


def node_verify(checks: dict, cluster_name: str) -> dict[str, Any]:
    """Report what the master compares when verifying the cluster.

    The node only collects; the master judges, comparing the answers of
    all nodes with each other and with its own state. Files are reported
    by the virtual paths asked for, with None for a missing file.
    """
    if not isinstance(checks, dict):
        Fail("node_verify expects a dictionary of checks")
    unknown = set(checks) - _NV_CHECKS
    if unknown:
        Fail("Unknown verification check(s): %s", ", ".join(sorted(unknown)))
    try:
        my_cluster = ssconf.SimpleStore().GetClusterName()
    except errors.ConfigurationError:
        my_cluster = None
    if my_cluster is not None and my_cluster != cluster_name:
        Fail("This node belongs to cluster %s, not %s", my_cluster,
              cluster_name)
    result: dict[str, Any] = {}
    if constants.NV_VERSION in checks:
        result[constants.NV_VERSION] = [constants.PROTOCOL_VERSION,
                                        constants.RELEASE_VERSION]
    if constants.NV_FILELIST in checks:
        files = checks[constants.NV_FILELIST]
        if not isinstance(files, list):
            Fail("The %s check expects a list of paths",
                  constants.NV_FILELIST)
        result[constants.NV_FILELIST] = {
            vpath: _FileChecksum(LocalPath(vpath)) for vpath in files}
    if constants.NV_TIME in checks:
        result[constants.NV_TIME] = time.time()
    if constants.NV_HYPERVISOR in checks:
        result[constants.NV_HYPERVISOR] = _VerifyHypervisors(
            checks[constants.NV_HYPERVISOR])
    if checks.get(constants.NV_ACCEPTED_STORAGE_PATHS) == \
            netutils.GetMyName():
        result[constants.NV_ACCEPTED_STORAGE_PATHS] = \
            _WrongFileStoragePaths()
    for key, template in (
            (constants.NV_FILE_STORAGE_PATH, constants.DT_FILE),
            (constants.NV_SHARED_FILE_STORAGE_PATH, constants.DT_SHARED_FILE)):
        if checks.get(key):
            problem = _CheckFileStorageDir(checks[key], template)
            if problem:
                result[key] = problem
    if constants.NV_FILE_STORAGE_FILES in checks:
        result[constants.NV_FILE_STORAGE_FILES] = _ListFileStorage(
            checks[constants.NV_FILE_STORAGE_FILES])
    if constants.NV_HVINFO in checks:
        # A broken hypervisor is NV_HYPERVISOR's finding; the N+1 check
        # then reports the missing memory figure
        try:
            result[constants.NV_HVINFO] = GetHypervisor(
                checks[constants.NV_HVINFO]).GetNodeInfo()
        except (errors.HypervisorError, OSError) as err:
            logging.warning("Can't get the hypervisor's node data: %s", err)
            result[constants.NV_HVINFO] = None
    if constants.NV_DRBDLIST in checks:
        result[constants.NV_DRBDLIST] = drbd_daemon.RunningDisks()
    return result


def _ListFileStorage(vdirs: Any) -> dict[str, list[list]]:
    """What the file storage directories hold, for the orphan check:
    ``{directory: [[relative path, is a directory], ...]}`` (missing
    directories list nothing; at most NV_FILE_STORAGE_FILES_MAX each)."""
    if not isinstance(vdirs, list):
        Fail("The %s check expects a list of directories",
              constants.NV_FILE_STORAGE_FILES)
    result: dict[str, list[list]] = {}
    for vdir in vdirs:
        local = LocalPath(vdir)
        entries: list[list] = []
        for root, dirs, files in os.walk(local):
            rel = os.path.relpath(root, local)
            entries.extend([os.path.normpath(os.path.join(rel, name)), True]
                           for name in dirs)
            entries.extend([os.path.normpath(os.path.join(rel, name)), False]
                           for name in files)
            if len(entries) >= constants.NV_FILE_STORAGE_FILES_MAX:
                del entries[constants.NV_FILE_STORAGE_FILES_MAX:]
                break
        result[vdir] = entries
    return result


def _VerifyHypervisors(hvparams: Any) -> dict[str, str | None]:
    """Each hypervisor's own check with its filled parameters.

    ``hvparams`` maps hypervisor names to their parameters; a hypervisor
    that can't even be set up on this node is a problem too.
    """
    if not isinstance(hvparams, dict):
        Fail("The %s check expects a dictionary of hypervisor parameters",
              constants.NV_HYPERVISOR)
    result = {}
    for name, params in hvparams.items():
        try:
            result[name] = hypervisor.GetHypervisor(name).Verify(params)
        except (errors.HypervisorError, OSError) as err:
            result[name] = "Error while checking hypervisor: %s" % err
    return result


def _WrongFileStoragePaths() -> list[str]:
    """Entries of the file storage allow-list that may not be used."""
    try:
        text = io.ReadFile(pathutils.FILE_STORAGE_PATHS_FILE)
    except FileNotFoundError:
        return []
    entries = [line.strip() for line in text.splitlines()]
    return filestorage.ComputeWrongFileStoragePaths(
        [entry for entry in entries if entry and not entry.startswith("#")])


def _CheckFileStorageDir(vpath: Any, template: str) -> str | None:
    """Why the cluster's storage directory is unusable here, or None.

    It must be accepted by the allow-list, exist and be writable.
    """
    if not isinstance(vpath, str) or not os.path.isabs(vpath):
        return "Invalid storage directory %r" % (vpath,)
    try:
        filestorage.CheckFileStoragePathAcceptance(vpath,
                                                   exact_match_ok=True)
    except errors.FileStoragePathError as err:
        return str(err)
    path = filestorage.LocalizeStoragePath(vpath, template)
    if not os.path.isdir(path):
        return "Path '%s' is not existing or not a directory." % vpath
    if not os.access(path, os.W_OK):
        return "Path '%s' is not writable" % vpath
    return None


def run_command(command: str) -> list:
    """Run a shell command for gnt-cluster command; [exit code, output].

    The command runs from "/" with noded's environment (on a virtual
    cluster that names the node's root) and no input; the output is stdout
    followed by stderr. A command killed by a signal gets 128 + the signal
    number, as the shell reports it; one that times out is a failure.
    """
    if not isinstance(command, str) or not command.strip():
        Fail("Invalid command %r", command)
    logging.info("Running command requested by the master: %s", command)
    result = process.RunCmd(["/bin/sh", "-c", command], cwd="/",
                            timeout=constants.NODE_COMMAND_TIMEOUT)
    if result.timed_out:
        Fail("Command %r %s; output so far: %s", command, result.fail_reason,
              result.output)
    if result.signal is not None:
        return [128 + result.signal, result.output]
    return [result.exit_code, result.output]


def repair_command(command: str, input_data: str | None) -> str:
    """Run a white-listed live-repair command with ``input_data`` on its
    standard input (design-maintd); its output."""
    try:
        return diagnose.RunRepairCommand(command, input_data)
    except errors.CommandError as err:
        Fail("%s", err)


def run_oob(oob_program: str, command: str, remote_node: str,
            timeout: float) -> Any:
    """Run an out-of-band program as Ganeti's OOB protocol says:
    ``<program> <command> <node name>``, its standard output JSON (or
    nothing). A failed or timed-out run, or output that is not JSON, is a
    failure carrying the program's output."""
    if command not in constants.OOB_COMMANDS:
        Fail("Invalid out-of-band command %r", command)
    if not isinstance(oob_program, str) or not os.path.isabs(oob_program):
        Fail("Out-of-band program %r is not an absolute path", oob_program)
    logging.info("Running out-of-band command '%s' for node %s: %s", command,
                 remote_node, oob_program)
    result = process.RunCmd([oob_program, command, remote_node],
                            timeout=timeout)
    if result.failed:
        Fail("'%s' failed with reason '%s'; output: %s",
              " ".join(result.cmd), result.fail_reason, result.output)
    if not result.stdout.strip():
        return None
    try:
        return serializer.LoadJson(result.stdout)
    except ValueError as err:
        Fail("Out-of-band program %s returned invalid JSON: %s; output: %s",
              oob_program, err, result.stdout)


def _ReadCopyfilePrefixes() -> list[str]:
    """The allowed copyfile prefixes, as local paths; none without the file.

    The file lists one absolute (virtual) path per line; empty lines and
    lines starting with "#" are ignored.
    """
    try:
        text = io.ReadFile(pathutils.COPYFILE_PATHS_FILE)
    except FileNotFoundError:
        return []
    except OSError as err:
        logging.warning("Cannot read %s: %s", pathutils.COPYFILE_PATHS_FILE,
                        err)
        return []
    prefixes = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not os.path.isabs(line):
            logging.warning("Ignoring relative path %r in %s", line,
                            pathutils.COPYFILE_PATHS_FILE)
            continue
        prefixes.append(vcluster.LocalizeVirtualPath(line))
    return prefixes


def _IsAtOrBelow(prefix: str, path: str) -> bool:
    prefix = os.path.realpath(prefix)
    return path == prefix or io.IsBelowDir(prefix, path)


def CheckCopyfileTarget(vpath: str) -> str:
    """The local path gnt-cluster copyfile may write for virtual ``vpath``.

    Used on the master before sending and on each node before writing, so
    that every node decides with its own allow-list
    (pathutils.COPYFILE_PATHS_FILE). The target must be at or below a
    listed prefix and outside Ganeti's data directory (configuration,
    certificates, secrets, ssconf, queue) and the allow-lists themselves.
    Symbolic links in the target's directory are resolved before the
    comparison, so a link can't lead outside the allowed prefixes.
    Raises OpPrereqError naming the path.
    """
    if not isinstance(vpath, str) or not os.path.isabs(vpath) or \
            "\0" in vpath:
        raise errors.OpPrereqError("Invalid path %r, expected an absolute"
                                   " path" % (vpath,), errors.ECODE_INVAL)
    path = os.path.normpath(vcluster.LocalizeVirtualPath(vpath))
    resolved = os.path.join(os.path.realpath(os.path.dirname(path)),
                            os.path.basename(path))
    allow_list = vcluster.MakeVirtualPath(pathutils.COPYFILE_PATHS_FILE)
    for forbidden in (pathutils.DATA_DIR, pathutils.COPYFILE_PATHS_FILE,
                      pathutils.FILE_STORAGE_PATHS_FILE):
        if _IsAtOrBelow(forbidden, resolved):
            raise errors.OpPrereqError(
                "Refusing to copy to %s: Ganeti's own files (%s) can't be"
                " overwritten by copyfile" %
                (vpath, vcluster.MakeVirtualPath(forbidden)),
                errors.ECODE_INVAL)
    prefixes = _ReadCopyfilePrefixes()
    if not prefixes:
        raise errors.OpPrereqError(
            "Refusing to copy to %s: no path is allowed for copyfile (%s is"
            " missing or empty)" % (vpath, allow_list), errors.ECODE_INVAL)
    if not any(_IsAtOrBelow(prefix, resolved) for prefix in prefixes):
        raise errors.OpPrereqError(
            "Refusing to copy to %s: not below any path allowed in %s" %
            (vpath, allow_list), errors.ECODE_INVAL)
    return path


def copyfile_upload(file_name: str, content: list, mode: int) -> None:
    """Write a file for gnt-cluster copyfile (see CheckCopyfileTarget).

    The directory must exist, as for a copy over SSH.
    """
    try:
        path = CheckCopyfileTarget(file_name)
    except errors.OpPrereqError as err:
        Fail("%s", err.args[0])
    if isinstance(mode, bool) or not isinstance(mode, int) or \
            not 0 <= mode <= 0o7777:
        Fail("Invalid file mode %r", mode)
    data = DecodeContent(content)
    if not os.path.isdir(os.path.dirname(path)):
        Fail("Cannot write %s: directory %s does not exist", file_name,
              os.path.dirname(file_name))
    io.WriteFile(path, data=data, mode=mode)
    logging.info("Wrote %s (%d bytes, mode %04o) for copyfile", path,
                 len(data), mode)
