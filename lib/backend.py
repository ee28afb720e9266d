"""Procedures run by the node daemon on behalf of the master.

One function per procedure of ganeti.rpc_defs, with the same name; noded
calls them with the decoded JSON arguments and sends back the return
value. Expected failures raise errors.GenericError (the message goes back
to the caller); anything else is a bug and is logged with a traceback.

Paths arrive as virtual paths (see vcluster) and are localized here. Every
procedure that writes files restricts where, since any holder of the
cluster certificate can call it.
"""

import base64
import binascii
import configparser
import hashlib
import hmac
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from io import StringIO
from typing import Any, Callable, NoReturn

from ganeti import (constants, errors, hypervisor, impexp, netutils,
                    objects, pathutils, serializer, ssconf, vcluster)
from ganeti.hypervisor import hv_base
from ganeti.impexp import node as impexp_node
from ganeti.monitoring import diagnose
from ganeti import storage
from ganeti.storage import filestorage
from ganeti.utils import io, process

_SSCONF_KEY_RE = re.compile(r"^[a-z0-9_]+$")
_SSCONF_FILE_MODE = 0o444
_BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
_MIB = 1024 * 1024


def _Fail(msg: str, *args) -> NoReturn:
    """Log and raise an expected failure; its message is sent back."""
    if args:
        msg = msg % args
    logging.error("%s", msg)
    raise errors.GenericError(msg)


def _DecodeContent(content: Any) -> bytes:
    """Decode file content sent as ``[encoding, data]``."""
    if not (isinstance(content, (list, tuple)) and len(content) == 2 and
            isinstance(content[1], str)):
        _Fail("Invalid file content, expected [encoding, data]")
    encoding, data = content
    if encoding == constants.RPC_ENCODING_NONE:
        return data.encode("utf-8")
    if encoding == constants.RPC_ENCODING_ZLIB_BASE64:
        try:
            return zlib.decompress(base64.b64decode(data, validate=True))
        except (binascii.Error, zlib.error) as err:
            _Fail("Can't decode file content: %s", err)
    _Fail("Unknown content encoding %r", encoding)


def _LocalPath(vpath: Any) -> str:
    """Localize a virtual path received from another node."""
    if not isinstance(vpath, str) or not os.path.isabs(vpath):
        _Fail("Invalid path %r, expected an absolute path", vpath)
    if "\0" in vpath:
        _Fail("Invalid path %r", vpath)
    return os.path.normpath(vcluster.LocalizeVirtualPath(vpath))


def _QueuePath(vpath: Any) -> str:
    """Localize a path that must be inside the job queue directory."""
    path = _LocalPath(vpath)
    if not io.IsBelowDir(pathutils.QUEUE_DIR, path):
        _Fail("Refusing to touch %s: not in the job queue directory %s",
              vpath, vcluster.MakeVirtualPath(pathutils.QUEUE_DIR))
    return path


def version() -> int:
    """The RPC protocol version, for the master's compatibility check."""
    return constants.PROTOCOL_VERSION


def _FileStorageInfo(vpath: str) -> dict[str, Any]:
    """Size and free space (MiB) of a file storage directory.

    A missing or unusable directory gives None sizes and an "error" entry
    rather than failing the whole node_info call.
    """
    _LocalPath(vpath)  # refuses a malformed path
    # The shared directory is where every node of a virtual cluster sees
    # it, not below the node root (filestorage.LocalizeStoragePath)
    try:
        shared = ssconf.SimpleStore().GetSharedFileStorageDir()
    except errors.ConfigurationError:
        shared = ""
    template = constants.DT_SHARED_FILE \
        if shared and os.path.normpath(vpath) == os.path.normpath(shared) \
        else constants.DT_FILE
    path = filestorage.LocalizeStoragePath(vpath, template)
    info: dict[str, Any] = {"type": template, "name": vpath}
    try:
        stat = os.statvfs(path)
    except OSError as err:
        info.update(storage_size=None, storage_free=None,
                    error="Can't get space of %s: %s" % (vpath, err.strerror))
        return info
    info.update(storage_size=stat.f_blocks * stat.f_frsize // _MIB,
                storage_free=stat.f_bavail * stat.f_frsize // _MIB)
    return info


def node_info(storage_dirs: list[str], hv_names: list[str]) -> dict[str, Any]:
    """Memory, CPU, storage and hypervisor information of this node.

    ``storage_dirs`` are (virtual) file storage directories, the default
    one if empty. Each hypervisor reports the node as it sees it (the
    fake hypervisor subtracts its instances' memory); the top-level
    figures are the host's.
    """
    if not isinstance(storage_dirs, list) or not isinstance(hv_names, list):
        _Fail("node_info expects two lists")
    hvs = {name: _GetHypervisor(name) for name in hv_names}
    if not storage_dirs:
        storage_dirs = [vcluster.MakeVirtualPath(
            pathutils.DEFAULT_FILE_STORAGE_DIR)]
    host = hv_base.GetLinuxNodeInfo()
    result: dict[str, Any] = {
        "name": netutils.GetMyName(),
        "bootid": io.ReadOneLineFile(_BOOT_ID_FILE),
        "storage": [_FileStorageInfo(path) for path in storage_dirs],
        "hv": {name: hv.GetNodeInfo() for name, hv in hvs.items()},
    }
    result.update(host)
    return result


def test_delay(duration: float) -> None:
    """Sleep on the node; lets tests exercise timeouts and concurrency."""
    if (isinstance(duration, bool) or
            not isinstance(duration, (int, float)) or duration < 0):
        _Fail("Invalid sleep duration %r, must be a non-negative number",
              duration)
    time.sleep(duration)


def jobqueue_update(file_name: str, content: list) -> None:
    """Replicate a job queue file written by the master.

    Creates the file's directory if it is missing: a purge removes the
    archive's subdirectories, and a resynchronisation then sends archived
    jobs into them.
    """
    path = _QueuePath(file_name)
    os.makedirs(os.path.dirname(path), mode=constants.JOB_QUEUE_DIRS_PERMS,
                exist_ok=True)
    io.WriteFile(path, data=_DecodeContent(content),
                 mode=constants.JOB_QUEUE_FILES_PERMS)


def jobqueue_rename(rename: list[list[str]]) -> None:
    """Rename job queue files (archiving), creating directories as needed.

    All pairs are checked before anything is renamed. A pair already
    renamed (old gone, new there) counts as done, so the call can be
    repeated.
    """
    if not isinstance(rename, list) or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2
            for pair in rename):
        _Fail("jobqueue_rename expects a list of [old, new] pairs")
    pairs = [(_QueuePath(old), _QueuePath(new)) for old, new in rename]
    for old, new in pairs:
        if not os.path.exists(old) and os.path.exists(new):
            continue
        io.RenameFile(old, new, mkdir=True,
                      mkdir_mode=constants.JOB_QUEUE_DIRS_PERMS)


def jobqueue_purge() -> None:
    """Remove the job files, serial, version and archive; keep the lock."""
    for name in os.listdir(pathutils.QUEUE_DIR):
        path = os.path.join(pathutils.QUEUE_DIR, name)
        if path == pathutils.JOB_QUEUE_LOCK_FILE:
            continue
        if path == pathutils.JOB_QUEUE_ARCHIVE_DIR:
            for entry in os.listdir(path):
                entry_path = os.path.join(path, entry)
                if os.path.islink(entry_path) or \
                        not os.path.isdir(entry_path):
                    io.RemoveFile(entry_path)
                else:
                    shutil.rmtree(entry_path)
        elif not os.path.isdir(path) or os.path.islink(path):
            io.RemoveFile(path)


def jobqueue_set_drain_flag(flag: bool) -> None:
    """Set or clear the flag that makes the queue refuse new jobs."""
    if flag:
        io.WriteFile(pathutils.JOB_QUEUE_DRAIN_FILE, data="",
                     mode=constants.JOB_QUEUE_FILES_PERMS)
    else:
        io.RemoveFile(pathutils.JOB_QUEUE_DRAIN_FILE)


def set_watcher_pause(until: Any) -> None:
    """Pause the watcher until a Unix time, or (None) let it run again."""
    if until is None:
        io.RemoveFile(pathutils.WATCHER_PAUSEFILE)
        return
    if isinstance(until, bool) or not isinstance(until, (int, float)):
        _Fail("Duration must be numeric")
    io.WriteFile(pathutils.WATCHER_PAUSEFILE, data="%d\n" % until,
                 mode=0o644)


def write_ssconf_files(values: dict[str, str]) -> None:
    """Write the ssconf files (one value per file).

    Keys and values are all checked before anything is written.
    """
    if not isinstance(values, dict):
        _Fail("write_ssconf_files expects a dictionary")
    for key, value in values.items():
        if not _SSCONF_KEY_RE.match(key):
            _Fail("Invalid ssconf key %r", key)
        if not isinstance(value, str):
            _Fail("Value of ssconf key %s must be a string, not %r", key,
                  value)
    for key, value in values.items():
        io.WriteFile(pathutils.SsconfFileName(key), data=value,
                     mode=_SSCONF_FILE_MODE)


def upload_file(file_name: str, content: list, mode: int) -> None:
    """Write one of the cluster-wide files distributed by the master."""
    path = _LocalPath(file_name)
    if path not in pathutils.GetUploadableFiles():
        _Fail("Refusing to write %s: not one of the files that may be"
              " uploaded", file_name)
    if isinstance(mode, bool) or not isinstance(mode, int) or \
            not 0 <= mode <= 0o7777:
        _Fail("Invalid file mode %r", mode)
    if path == pathutils.CLUSTER_CONF_FILE:
        # It holds private OS parameters: never readable by more than root,
        # whatever mode an older master asks for
        mode &= constants.CONFIG_FILE_MODE
    io.WriteFile(path, data=_DecodeContent(content), mode=mode)


# Seconds a daemon restart waits, so that noded's answer is sent first
_RESTART_DELAY = 1.0


def node_restart_daemons(daemons: list[str]) -> None:
    """Restart those of the daemons that run, in the background, after a
    short delay.

    Run detached (its own session), so restarting the node daemon does not
    kill the restart; the caller waits for the daemons to answer again.
    """
    if not (isinstance(daemons, list) and daemons and
            set(daemons) <= set(constants.DAEMONS_LOGBASE)):
        _Fail("Invalid daemons to restart: %r", daemons)
    script = ("import subprocess, sys, time\n"
              "time.sleep(%r)\n"
              "for name in sys.argv[2:]:\n"
              "    if subprocess.call([sys.executable, sys.argv[1], 'check',"
              " name]):\n"
              "        continue\n"
              "    for action in ('stop', 'start'):\n"
              "        subprocess.call([sys.executable, sys.argv[1], action,"
              " name])\n"
              % _RESTART_DELAY)
    subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, "-c", script, pathutils.DAEMON_UTIL] + daemons,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)


def node_leave_cluster() -> NoReturn:
    """Forget the cluster: configuration, ssconf, certificates, job queue.

    Raises QuitGanetiException, which tells noded to answer with success
    and then stop (without its certificate it could not serve anyway).
    """
    for name in os.listdir(pathutils.DATA_DIR):
        path = os.path.join(pathutils.DATA_DIR, name)
        if not os.path.isdir(path) or os.path.islink(path):
            io.RemoveFile(path)
    io.RemoveFile(pathutils.RAPI_USERS_FILE)
    jobqueue_purge()
    logging.info("Left the cluster, stopping the node daemon")
    raise errors.QuitGanetiException(True, "Shutdown scheduled")


_JOB_FILE_RE = re.compile(r"^job-(\d+)$")


def _HighestJobId() -> int:
    """The highest job id this node's queue copy knows (live or archived)."""
    highest = 0
    try:
        serial = io.ReadFile(os.path.join(pathutils.QUEUE_DIR, "serial"))
        highest = int(serial.strip() or 0)
    except (OSError, ValueError):
        pass
    dirs = [pathutils.QUEUE_DIR]
    try:
        dirs.extend(entry.path for entry in
                    os.scandir(pathutils.JOB_QUEUE_ARCHIVE_DIR)
                    if entry.is_dir())
    except OSError:
        pass
    for path in dirs:
        try:
            names = os.listdir(path)
        except OSError:
            continue
        for name in names:
            match = _JOB_FILE_RE.match(name)
            if match:
                highest = max(highest, int(match.group(1)))
    return highest


def _ConfigSerial() -> int | None:
    """Serial number of this node's copy of the configuration, if any."""
    try:
        data = serializer.LoadJson(io.ReadFile(pathutils.CLUSTER_CONF_FILE))
        return int(data["serial_no"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def master_info() -> dict[str, Any]:
    """This node's view of the master role, for voting and failover.

    ``master_node`` comes from ssconf (what every node has);
    ``config_serial`` and ``job_serial`` tell how recent the node's copies
    of the configuration and the job queue are (candidates only).
    """
    try:
        master = ssconf.SimpleStore().GetMasterNode()
    except errors.ConfigurationError:
        master = None
    return {
        "node_name": netutils.GetMyName(),
        "master_node": master,
        "config_serial": _ConfigSerial(),
        "job_serial": _HighestJobId(),
    }


def node_stop_master() -> None:
    """Stop the master daemons, in reverse start order (any may be
    stopped already)."""
    for name in constants.MASTER_DAEMONS[::-1]:
        result = process.RunCmd([pathutils.DAEMON_UTIL, "stop", name])
        if result.failed:
            _Fail("Could not stop %s: %s", name, result.output.strip())


def node_start_master() -> None:
    """Start the master daemons (masterd votes before it serves)."""
    for name in constants.MASTER_DAEMONS:
        result = process.RunCmd([pathutils.DAEMON_UTIL, "start", name])
        if result.failed:
            _Fail("Could not start %s: %s", name, result.output.strip())


def _CheckMasterParams(params: Any) -> tuple[str, int, str]:
    if not isinstance(params, dict):
        _Fail("Invalid master IP parameters %r", params)
    address, netmask = params.get("ip"), params.get("netmask")
    netdev = params.get("netdev")
    if not (isinstance(address, str) and netutils.IsValidIP4(address)):
        _Fail("Invalid master IP %r", address)
    if isinstance(netmask, bool) or not isinstance(netmask, int) or \
            not 0 <= netmask <= 32:
        _Fail("Invalid master netmask %r", netmask)
    if not (isinstance(netdev, str) and re.match(r"^[\w.:@-]{1,15}$",
                                                 netdev)):
        _Fail("Invalid master network device %r", netdev)
    return address, netmask, netdev


def _LoopbackNoop(address: str, netdev: str) -> bool:
    """Whether the master IP needs no change: 127/8 is local on ``lo``.

    Virtual clusters on one machine use loopback addresses, which the
    kernel already routes locally; adding them would need root for nothing.
    """
    return netdev == "lo" and address.startswith("127.")


def _IpAddressPresent(address: str, netdev: str) -> bool:
    result = process.RunCmd(["ip", "-o", "-4", "address", "show", "dev",
                             netdev])
    if result.failed:
        _Fail("Cannot list the addresses of %s: %s", netdev,
              result.output.strip())
    return any(field.split("/")[0] == address
               for line in result.stdout.splitlines()
               for field in line.split())


def node_activate_master_ip(master_params: dict) -> None:
    """Add the master IP to the master network device (idempotent)."""
    address, netmask, netdev = _CheckMasterParams(master_params)
    if _LoopbackNoop(address, netdev) or _IpAddressPresent(address, netdev):
        return
    result = process.RunCmd(["ip", "address", "add",
                             "%s/%d" % (address, netmask), "dev", netdev,
                             "label", "%s:0" % netdev[:13]])
    if result.failed:
        _Fail("Could not add the master IP %s to %s: %s", address, netdev,
              result.output.strip())


def node_deactivate_master_ip(master_params: dict) -> None:
    """Remove the master IP from the master network device (idempotent)."""
    address, netmask, netdev = _CheckMasterParams(master_params)
    if _LoopbackNoop(address, netdev) or \
            not _IpAddressPresent(address, netdev):
        return
    result = process.RunCmd(["ip", "address", "del",
                             "%s/%d" % (address, netmask), "dev", netdev])
    if result.failed:
        _Fail("Could not remove the master IP %s from %s: %s", address,
              netdev, result.output.strip())


def node_demote_from_mc() -> None:
    """Drop the candidate's copies of the configuration and job queue.

    Refused on the master, whose copies are the originals.
    """
    try:
        master = ssconf.SimpleStore().GetMasterNode()
    except errors.ConfigurationError:
        master = None
    if master == netutils.GetMyName():
        _Fail("This is the master node, refusing to demote it")
    io.RemoveFile(pathutils.CLUSTER_CONF_FILE)
    jobqueue_purge()


def _JoinFiles() -> frozenset[str]:
    """The cluster files a joining node receives from the master."""
    return frozenset([pathutils.NODED_CERT_FILE, pathutils.RAPI_CERT_FILE,
                      pathutils.CLUSTER_DOMAIN_SECRET_FILE,
                      pathutils.CONFD_HMAC_KEY,
                      pathutils.RAPI_USERS_FILE,
                      pathutils.FILE_STORAGE_PATHS_FILE,
                      pathutils.BLOCKDEV_PATHS_FILE])


def node_join(secret: str, files: dict, ssconf_values: dict) -> None:
    """Become a cluster member: install what the master sends.

    Served only while the node is not in a cluster, to callers that know
    the join key's secret (shown on this node when noded started). Every
    file is checked before the first is written; the cluster certificate
    is written last, since its presence is what makes the node a member.
    """
    try:
        expected = io.ReadFile(pathutils.NODED_JOIN_KEY_FILE).strip()
    except OSError:
        _Fail("This node has no join key; is it already in a cluster?")
    expected_secret = expected.rpartition(":")[2]
    if not (isinstance(secret, str) and
            hmac.compare_digest(secret.encode("utf-8"),
                                expected_secret.encode("utf-8"))):
        _Fail("Wrong join secret")
    if not isinstance(files, dict) or \
            pathutils.NODED_CERT_FILE not in {_LocalPath(p) for p in files}:
        _Fail("node_join needs the cluster certificate")
    decoded = []
    for vpath, spec in files.items():
        path = _LocalPath(vpath)
        if path not in _JoinFiles():
            _Fail("Refusing to write %s: not a file a joining node gets",
                  vpath)
        if not (isinstance(spec, (list, tuple)) and len(spec) == 2 and
                isinstance(spec[0], int) and 0 <= spec[0] <= 0o7777):
            _Fail("Invalid file specification for %s", vpath)
        decoded.append((path, spec[0], _DecodeContent(spec[1])))
    decoded.sort(key=lambda item: item[0] == pathutils.NODED_CERT_FILE)
    write_ssconf_files(ssconf_values)
    storage_dirs = [ssconf_values.get(key) for key in ("file_storage_dir",
                                                "shared_file_storage_dir")]
    io.EnsureDirs([(_LocalPath(vpath), 0o750)
                   for vpath in storage_dirs if vpath])
    for path, mode, data in decoded:
        io.WriteFile(path, data=data, mode=mode)
    io.RemoveFile(pathutils.NODED_JOIN_KEY_FILE)
    io.RemoveFile(pathutils.NODED_JOIN_CERT_FILE)
    logging.info("Joined the cluster %s", ssconf_values.get("cluster_name"))


# Cluster verification, gnt-cluster command and copyfile ---------------------

_NV_CHECKS = frozenset([constants.NV_FILELIST, constants.NV_TIME,
                        constants.NV_VERSION, constants.NV_HYPERVISOR,
                        constants.NV_ACCEPTED_STORAGE_PATHS,
                        constants.NV_FILE_STORAGE_PATH,
                        constants.NV_SHARED_FILE_STORAGE_PATH,
                        constants.NV_FILE_STORAGE_FILES,
                        constants.NV_HVINFO])


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
        _Fail("node_verify expects a dictionary of checks")
    unknown = set(checks) - _NV_CHECKS
    if unknown:
        _Fail("Unknown verification check(s): %s", ", ".join(sorted(unknown)))
    try:
        my_cluster = ssconf.SimpleStore().GetClusterName()
    except errors.ConfigurationError:
        my_cluster = None
    if my_cluster is not None and my_cluster != cluster_name:
        _Fail("This node belongs to cluster %s, not %s", my_cluster,
              cluster_name)
    result: dict[str, Any] = {}
    if constants.NV_VERSION in checks:
        result[constants.NV_VERSION] = [constants.PROTOCOL_VERSION,
                                        constants.RELEASE_VERSION]
    if constants.NV_FILELIST in checks:
        files = checks[constants.NV_FILELIST]
        if not isinstance(files, list):
            _Fail("The %s check expects a list of paths",
                  constants.NV_FILELIST)
        result[constants.NV_FILELIST] = {
            vpath: _FileChecksum(_LocalPath(vpath)) for vpath in files}
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
            result[constants.NV_HVINFO] = _GetHypervisor(
                checks[constants.NV_HVINFO]).GetNodeInfo()
        except (errors.HypervisorError, OSError) as err:
            logging.warning("Can't get the hypervisor's node data: %s", err)
            result[constants.NV_HVINFO] = None
    return result


def _ListFileStorage(vdirs: Any) -> dict[str, list[list]]:
    """What the file storage directories hold, for the orphan check:
    ``{directory: [[relative path, is a directory], ...]}`` (missing
    directories list nothing; at most NV_FILE_STORAGE_FILES_MAX each)."""
    if not isinstance(vdirs, list):
        _Fail("The %s check expects a list of directories",
              constants.NV_FILE_STORAGE_FILES)
    result: dict[str, list[list]] = {}
    for vdir in vdirs:
        local = _LocalPath(vdir)
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
        _Fail("The %s check expects a dictionary of hypervisor parameters",
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
        _Fail("Invalid command %r", command)
    logging.info("Running command requested by the master: %s", command)
    result = process.RunCmd(["/bin/sh", "-c", command], cwd="/",
                            timeout=constants.NODE_COMMAND_TIMEOUT)
    if result.timed_out:
        _Fail("Command %r %s; output so far: %s", command, result.fail_reason,
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
        _Fail("%s", err)


def run_oob(oob_program: str, command: str, remote_node: str,
            timeout: float) -> Any:
    """Run an out-of-band program as Ganeti's OOB protocol says:
    ``<program> <command> <node name>``, its standard output JSON (or
    nothing). A failed or timed-out run, or output that is not JSON, is a
    failure carrying the program's output."""
    if command not in constants.OOB_COMMANDS:
        _Fail("Invalid out-of-band command %r", command)
    if not isinstance(oob_program, str) or not os.path.isabs(oob_program):
        _Fail("Out-of-band program %r is not an absolute path", oob_program)
    logging.info("Running out-of-band command '%s' for node %s: %s", command,
                 remote_node, oob_program)
    result = process.RunCmd([oob_program, command, remote_node],
                            timeout=timeout)
    if result.failed:
        _Fail("'%s' failed with reason '%s'; output: %s",
              " ".join(result.cmd), result.fail_reason, result.output)
    if not result.stdout.strip():
        return None
    try:
        return serializer.LoadJson(result.stdout)
    except ValueError as err:
        _Fail("Out-of-band program %s returned invalid JSON: %s; output: %s",
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
        _Fail("%s", err.args[0])
    if isinstance(mode, bool) or not isinstance(mode, int) or \
            not 0 <= mode <= 0o7777:
        _Fail("Invalid file mode %r", mode)
    data = _DecodeContent(content)
    if not os.path.isdir(os.path.dirname(path)):
        _Fail("Cannot write %s: directory %s does not exist", file_name,
              os.path.dirname(file_name))
    io.WriteFile(path, data=data, mode=mode)
    logging.info("Wrote %s (%d bytes, mode %04o) for copyfile", path,
                 len(data), mode)


# OS definitions (OS API 20, ganeti-os-interface) ----------------------------

# Files of an OS definition besides its scripts
_OS_TEXT_FILES = (constants.OS_API_FILE, constants.OS_VARIANTS_FILE,
                  constants.OS_PARAMETERS_FILE)
# The optional scripts; an OS lacking one can't do the matching operation
_OS_OPTIONAL_SCRIPTS = frozenset([constants.OS_SCRIPT_EXPORT,
                                  constants.OS_SCRIPT_IMPORT,
                                  constants.OS_SCRIPT_RENAME,
                                  constants.OS_SCRIPT_CREATE_UNTRUSTED])
# PATH of the scripts' (otherwise empty) environment, as for hooks
_OS_SCRIPT_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"
_OS_NAME_RE = re.compile(r"^[\w.+-]+$")
# Order in which an OS's scripts are checked (the first problem is reported)
_OS_SCRIPT_ORDER = (constants.OS_SCRIPT_CREATE, constants.OS_SCRIPT_VERIFY,
                    constants.OS_SCRIPT_IMPORT, constants.OS_SCRIPT_EXPORT,
                    constants.OS_SCRIPT_RENAME,
                    constants.OS_SCRIPT_CREATE_UNTRUSTED)


def _ReadOSList(path: str) -> list[str]:
    """Non-empty, non-comment lines of an OS definition's list file."""
    lines = []
    for line in io.ReadFile(path).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _OSApiVersions(os_dir: str) -> list[int] | str:
    """The API versions an OS declares, or why they can't be read."""
    path = os.path.join(os_dir, constants.OS_API_FILE)
    vpath = vcluster.MakeVirtualPath(path)
    try:
        lines = _ReadOSList(path)
    except FileNotFoundError:
        return "API version file '%s' not found" % vpath
    except OSError as err:
        return "Error while reading the API version file at %s: %s" % \
            (vpath, err.strerror)
    try:
        versions = sorted({int(line) for line in lines}, reverse=True)
    except ValueError:
        return "API version(s) can't be converted to integer: %s" % \
            ", ".join(lines)
    if not versions:
        return "API version file '%s' is empty" % vpath
    return versions


def _OSSearchPath() -> list[str]:
    return list(pathutils.OS_SEARCH_PATH)


def _TryOSFromDisk(name: str, base_dir: str | None = None
                   ) -> tuple[bool, objects.OS | str]:
    """Load the OS definition ``name`` (without variant) from disk.

    Returns ``(True, OS)``, or ``(False, reason)`` when the OS is missing
    or invalid; diagnose reports the reason.
    """
    if not _OS_NAME_RE.match(name) or name in (".", ".."):
        return False, "Invalid OS name %r" % name
    if base_dir is None:
        for top in _OSSearchPath():
            if os.path.isdir(os.path.join(top, name)):
                base_dir = top
                break
        else:
            return False, "Directory for OS %s not found in search path" % \
                name
    os_dir = os.path.join(base_dir, name)
    vdir = vcluster.MakeVirtualPath(os_dir)
    versions = _OSApiVersions(os_dir)
    if isinstance(versions, str):
        return False, versions
    if not constants.OS_API_VERSIONS.intersection(versions):
        return False, "API version mismatch for path '%s': found %s, want" \
            " %s." % (vdir, versions, sorted(constants.OS_API_VERSIONS))
    scripts: dict[str, str | None] = {}
    for script in _OS_SCRIPT_ORDER:
        if script == constants.OS_SCRIPT_VERIFY and \
                max(versions) < constants.OS_API_VERSION:
            scripts[script] = None
            continue
        path = os.path.join(os_dir, script)
        if not os.path.exists(path):
            if script in _OS_OPTIONAL_SCRIPTS:
                scripts[script] = None
                continue
            return False, "Script '%s' not found in OS dir %s" % (script,
                                                                  vdir)
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            return False, "Script '%s' under path '%s' is not an executable" \
                " regular file" % (script, vdir)
        scripts[script] = path
    try:
        variants = _ReadOSList(os.path.join(os_dir,
                                            constants.OS_VARIANTS_FILE))
    except FileNotFoundError:
        variants = []
    except OSError as err:
        return False, "Error while reading the OS variants file at %s: %s" % \
            (vdir, err.strerror)
    parameters = []
    if max(versions) >= constants.OS_API_VERSION:
        params_file = os.path.join(os_dir, constants.OS_PARAMETERS_FILE)
        try:
            lines = _ReadOSList(params_file)
        except FileNotFoundError:
            return False, "Parameters file '%s' not found" % \
                vcluster.MakeVirtualPath(params_file)
        except OSError as err:
            return False, "Error while reading the OS parameters file at" \
                " %s: %s" % (vcluster.MakeVirtualPath(params_file),
                             err.strerror)
        for line in lines:
            param, _, doc = line.partition(" ")
            if "\t" in param:
                param, _, rest = line.partition("\t")
                doc = rest
            parameters.append([param.strip(), doc.strip()])
    os_obj = objects.OS(
        name=name, path=os_dir, api_versions=versions,
        create_script=scripts[constants.OS_SCRIPT_CREATE],
        create_script_untrusted=scripts[constants.OS_SCRIPT_CREATE_UNTRUSTED],
        export_script=scripts[constants.OS_SCRIPT_EXPORT],
        import_script=scripts[constants.OS_SCRIPT_IMPORT],
        rename_script=scripts[constants.OS_SCRIPT_RENAME],
        verify_script=scripts[constants.OS_SCRIPT_VERIFY],
        supported_variants=variants, supported_parameters=parameters)
    return True, os_obj


def OSFromDisk(name: str, base_dir: str | None = None) -> objects.OS:
    """The OS definition ``name`` (variant ignored); fails if invalid."""
    _, result = _TryOSFromDisk(objects.OS.GetName(name), base_dir)
    if not isinstance(result, objects.OS):
        _Fail("%s", result)
    return result


def DiagnoseOS(top_dirs: list[str] | None = None) -> list[list]:
    """Every OS directory in the search path, valid or not.

    Each entry is ``[name, path, status, diagnose, variants, parameters,
    api_versions, trusted]`` (Ganeti's order); an invalid OS has status
    False, the reason as diagnose and empty lists. An OS found in several
    directories is reported once per directory, the first one winning.
    """
    result = []
    for top in top_dirs if top_dirs is not None else _OSSearchPath():
        try:
            names = sorted(os.listdir(top))
        except FileNotFoundError:
            continue
        except OSError as err:
            logging.warning("Can't list the OS directory %s: %s", top, err)
            continue
        for name in names:
            if not os.path.isdir(os.path.join(top, name)):
                continue
            _, os_obj = _TryOSFromDisk(name, base_dir=top)
            path = vcluster.MakeVirtualPath(os.path.join(top, name))
            if isinstance(os_obj, objects.OS):
                result.append([name, path, True, "",
                               os_obj.supported_variants,
                               os_obj.supported_parameters,
                               os_obj.api_versions, os_obj.is_trusted])
            else:
                result.append([name, path, False, os_obj, [], [], [], True])
    return result


def os_diagnose() -> list[list]:
    """The OS definitions of this node (see DiagnoseOS)."""
    return DiagnoseOS()


def OSCoreEnv(os_name: str, inst_os: objects.OS, os_params: dict,
              debug: int = 0) -> dict[str, str]:
    """The environment common to every script of an OS.

    ``os_name`` is the full ``name+variant``; ``os_params`` the filled OS
    parameters (public and private), each exported as ``OSP_<NAME>``.
    """
    result = {
        "PATH": _OS_SCRIPT_PATH,
        "OS_API_VERSION": "%d" % max(constants.OS_API_VERSIONS.intersection(
            inst_os.api_versions)),
        "OS_NAME": inst_os.name,
        "DEBUG_LEVEL": "%d" % debug,
    }
    variant = objects.OS.GetVariant(os_name)
    if variant or inst_os.supported_variants:
        result["OS_VARIANT"] = variant or inst_os.supported_variants[0]
    for name, value in (os_params or {}).items():
        result["OSP_%s" % name.upper().replace("-", "_")] = str(value)
    return result


def _DiskPath(disk: dict) -> str:
    """The local path of an instance disk sent by the master.

    The master sends each disk with ``dev_path``, the path that
    blockdev_assemble answered on this very node: device paths are
    node-local and only ever go back to the node that made them.
    """
    path = disk.get("dev_path")
    if not isinstance(path, str) or not os.path.isabs(path) or \
            "\0" in path:
        _Fail("Disk %s has no valid device path: %r",
              disk.get("uuid") or disk, path)
    return os.path.normpath(path)


def _DiskBackendType(disk: dict) -> str:
    if disk.get("dev_type") in (constants.DT_FILE, constants.DT_SHARED_FILE):
        driver = (disk.get("logical_id") or ["loop"])[0]
        return "file:%s" % driver
    return "block"


def OSEnvironment(instance: dict, inst_os: objects.OS,
                  debug: int = 0) -> dict[str, str]:
    """The environment of an OS script for an instance (OS API 20).

    ``instance`` is the instance as the master sends it: Instance.ToDict()
    with filled ``hvparams``, ``beparams``, ``osparams`` (and
    ``osparams_private``, and for one run ``osparams_secret``), the disk
    objects (with ``dev_path``) in ``disks`` and the NICs with filled
    ``nicparams`` in ``nics``.
    """
    params = dict(instance.get("osparams") or {})
    params.update(instance.get("osparams_private") or {})
    params.update(instance.get("osparams_secret") or {})
    result = OSCoreEnv(instance["os"], inst_os, params, debug)
    hvparams = instance.get("hvparams") or {}
    result.update({
        "INSTANCE_NAME": instance["name"],
        "INSTANCE_OS": instance["os"],
        "HYPERVISOR": instance["hypervisor"],
        "DISK_COUNT": "%d" % len(instance.get("disks") or []),
        "NIC_COUNT": "%d" % len(instance.get("nics") or []),
    })
    for idx, disk in enumerate(instance.get("disks") or []):
        prefix = "DISK_%d_" % idx
        result[prefix + "PATH"] = _DiskPath(disk)
        result[prefix + "ACCESS"] = disk.get("mode") or objects.DISK_RDWR
        result[prefix + "SIZE"] = "%d" % disk.get("size", 0)
        result[prefix + "UUID"] = disk.get("uuid") or ""
        if disk.get("name"):
            result[prefix + "NAME"] = disk["name"]
        result[prefix + "BACKEND_TYPE"] = _DiskBackendType(disk)
        if hvparams.get("disk_type"):
            result[prefix + "FRONTEND_TYPE"] = hvparams["disk_type"]
    for idx, nic in enumerate(instance.get("nics") or []):
        prefix = "NIC_%d_" % idx
        nicparams = nic.get("nicparams") or {}
        result[prefix + "MAC"] = nic["mac"]
        result[prefix + "UUID"] = nic.get("uuid") or ""
        if nic.get("name"):
            result[prefix + "NAME"] = nic["name"]
        if nic.get("ip"):
            result[prefix + "IP"] = nic["ip"]
        mode = nicparams.get(objects.NIC_MODE)
        if mode:
            result[prefix + "MODE"] = mode
        link = nicparams.get(objects.NIC_LINK)
        if link:
            result[prefix + "LINK"] = link
            if mode == objects.NIC_MODE_BRIDGED:
                result[prefix + "BRIDGE"] = link
        if nicparams.get(objects.NIC_VLAN):
            result[prefix + "VLAN"] = str(nicparams[objects.NIC_VLAN])
        if hvparams.get("nic_type"):
            result[prefix + "FRONTEND_TYPE"] = hvparams["nic_type"]
        for key, value in (nic.get("netinfo") or {}).items():
            if value is not None:
                result["%sNETWORK_%s" % (prefix, key.upper())] = \
                    " ".join(value) if isinstance(value, list) else str(value)
    for kind, values in (("BE", instance.get("beparams")), ("HV", hvparams)):
        for key, value in (values or {}).items():
            result["INSTANCE_%s_%s" % (kind, key)] = str(value)
    return result


def _InstanceLogName(kind: str, os_name: str, instance: str) -> str:
    """Log file of one OS script run: LOG_OS_DIR/kind-os-instance-time.log."""
    stamp = time.strftime("%Y-%m-%d_%H_%M_%S", time.gmtime())
    base = "%s-%s-%s-%s_%06d.log" % (kind, os_name, instance, stamp,
                                     int(time.time() * 1e6) % 1000000)
    return os.path.join(pathutils.LOG_OS_DIR, base.replace("/", "_"))


def _LogTail(path: str, lines: int = constants.OS_LOG_TAIL_LINES) -> str:
    try:
        with open(path, "rb") as fobj:
            fobj.seek(0, os.SEEK_END)
            fobj.seek(max(fobj.tell() - 64 * 1024, 0))
            data = fobj.read()
    except OSError as err:
        return "(can't read %s: %s)" % (path, err.strerror)
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def RunOSScript(script: str, env: dict[str, str], kind: str, os_name: str,
                instance: str, cwd: str, args: list[str] | None = None
                ) -> str:
    """Run an OS script, its stdout and stderr going to a new OS log.

    Returns the log file. A failure (non-zero exit, signal, timeout)
    fails the RPC with the reason and the last lines of the log, as
    Ganeti reports it ("OS create script failed (exited with exit code
    1), last lines in the log file: ...").
    """
    io.EnsureDirs([(pathutils.LOG_OS_DIR, 0o750)])
    logfile = _InstanceLogName(kind, os_name, instance)
    cmd = [script] + list(args or [])
    with open(logfile, "ab") as log:
        try:
            proc = subprocess.run(cmd, env=env, cwd=cwd,
                                  stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=log, close_fds=True,
                                  timeout=constants.OS_SCRIPT_TIMEOUT,
                                  check=False)
        except subprocess.TimeoutExpired:
            reason = "timed out after %d seconds" % constants.OS_SCRIPT_TIMEOUT
        except OSError as err:
            reason = "can't execute %s: %s" % (script, err.strerror)
        else:
            if proc.returncode == 0:
                return logfile
            if proc.returncode < 0:
                reason = "terminated by signal %d" % -proc.returncode
            else:
                reason = "exited with exit code %d" % proc.returncode
    _Fail("OS %s script failed (%s), last lines in the log file:\n%s",
          os.path.basename(script), reason, _LogTail(logfile))


def _CheckDebug(debug: Any) -> int:
    if isinstance(debug, bool) or not isinstance(debug, int) or debug < 0:
        _Fail("Invalid debug level %r", debug)
    return debug


def _CheckInstanceDict(instance: Any) -> None:
    if not isinstance(instance, dict) or not all(
            isinstance(instance.get(key), str) and instance[key]
            for key in ("name", "os", "hypervisor")):
        _Fail("Invalid instance %r: name, os and hypervisor are required",
              instance)


def _InstanceOS(instance: dict) -> objects.OS:
    inst_os = OSFromDisk(instance["os"])
    try:
        inst_os.CheckVariant(instance["os"])
    except errors.OpPrereqError as err:
        _Fail("%s", err.args[0])
    return inst_os


def instance_os_add(instance: dict, reinstall: bool, debug: int) -> None:
    """Install the instance's OS on its disks (the OS create script)."""
    _CheckInstanceDict(instance)
    inst_os = _InstanceOS(instance)
    env = OSEnvironment(instance, inst_os, _CheckDebug(debug))
    if reinstall:
        env["INSTANCE_REINSTALL"] = "1"
    RunOSScript(inst_os.create_script, env, "add", instance["os"],
                instance["name"], inst_os.path)


def instance_run_rename(instance: dict, old_name: str, debug: int) -> None:
    """Tell the instance's OS its new name (the OS rename script).

    Refused, before anything runs, when the OS has no rename script.
    """
    _CheckInstanceDict(instance)
    if not isinstance(old_name, str) or not old_name:
        _Fail("Invalid old instance name %r", old_name)
    inst_os = _InstanceOS(instance)
    if inst_os.rename_script is None:
        _Fail("OS %s does not support renaming instances (it has no %s"
              " script)", inst_os.name, constants.OS_SCRIPT_RENAME)
    env = OSEnvironment(instance, inst_os, _CheckDebug(debug))
    env["OLD_INSTANCE_NAME"] = old_name
    RunOSScript(inst_os.rename_script, env, "rename", instance["os"],
                instance["name"], inst_os.path)


def os_validate(required: bool, name: str, checks: list[str], params: dict,
                force_variant: bool) -> bool:
    """Check an OS (and its parameters) before it is used.

    Returns False when the OS is missing and not ``required``; otherwise
    fails unless the OS is valid, its variant suits it (unless
    ``force_variant``) and its verify script accepts ``params`` (for the
    "parameters" check).
    """
    if not isinstance(name, str) or not name:
        _Fail("Invalid OS name %r", name)
    if not isinstance(checks, list) or \
            set(checks) - constants.OS_VALIDATE_CALLS:
        _Fail("Unknown OS validation check(s) in %r", checks)
    if not isinstance(params, dict):
        _Fail("Invalid OS parameters %r", params)
    _, inst_os = _TryOSFromDisk(objects.OS.GetName(name))
    if not isinstance(inst_os, objects.OS):
        if required:
            _Fail("%s", inst_os)
        return False
    if not force_variant:
        try:
            inst_os.CheckVariant(name)
        except errors.OpPrereqError as err:
            _Fail("%s", err.args[0])
    if inst_os.verify_script is None:
        return True
    if constants.OS_VALIDATE_PARAMETERS in checks:
        known = {param for param, _ in inst_os.supported_parameters}
        unknown = sorted(set(params) - known)
        if unknown:
            _Fail("The following parameters are not supported by the OS"
                  " %s: %s", inst_os.name, ", ".join(unknown))
    env = OSCoreEnv(name, inst_os, params)
    RunOSScript(inst_os.verify_script, env, "verify", name,
                "validate", inst_os.path, args=list(checks))
    return True


# Hypervisors and instances ---------------------------------------------------

def _GetHypervisor(name: Any) -> hv_base.BaseHypervisor:
    try:
        return hypervisor.GetHypervisor(name)
    except errors.HypervisorError as err:
        _Fail("%s", err)


def _InstanceFromDict(data: Any) -> objects.Instance:
    """The instance sent by the master, which must have filled parameters.

    Nodes know no defaults: a dict lacking a hypervisor or backend
    parameter is refused rather than completed here.
    """
    if not isinstance(data, dict):
        _Fail("Invalid instance %r, expected a dictionary", data)
    try:
        instance = objects.Instance.FromDict(data)
    except errors.ConfigurationError as err:
        _Fail("Invalid instance: %s", err)
    if not isinstance(instance.name, str) or not instance.name:
        _Fail("Instance without a name")
    hv_class = type(_GetHypervisor(instance.hypervisor))
    try:
        hv_class.CheckParameterSyntax(instance.hvparams or {})
        objects.CheckParamDict(objects.BE_PARAMETERS,
                               instance.beparams or {}, "backend")
    except (errors.HypervisorError, errors.TypeEnforcementError) as err:
        _Fail("Instance %s: %s", instance.name, err)
    missing = sorted(set(objects.BE_PARAMETERS) -
                     set(instance.beparams or {}))
    if missing:
        _Fail("Instance %s: backend parameter(s) missing: %s",
              instance.name, ", ".join(missing))
    return instance


def _BlockDevicesFile(instance_name: str) -> str:
    if "/" in instance_name or instance_name.startswith("."):
        _Fail("Invalid instance name %r", instance_name)
    return os.path.join(pathutils.DISK_LINKS_DIR, instance_name)


def _BlockDevices(block_devices: Any) -> list[tuple[objects.Disk, str]]:
    """[[disk dict, device path], ...] as (Disk, path) pairs."""
    if not isinstance(block_devices, list):
        _Fail("Invalid block devices %r, expected a list", block_devices)
    result = []
    for entry in block_devices:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and
                isinstance(entry[0], dict) and isinstance(entry[1], str) and
                os.path.isabs(entry[1])):
            _Fail("Invalid block device %r, expected [disk, absolute path]",
                  entry)
        try:
            result.append((objects.Disk.FromDict(dict(entry[0])), entry[1]))
        except errors.ConfigurationError as err:
            _Fail("Invalid disk: %s", err)
    return result


def _SavedBlockDevices(instance_name: str) -> list:
    """The block devices the running instance was started with."""
    try:
        return serializer.LoadJson(io.ReadFile(
            _BlockDevicesFile(instance_name)))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as err:
        _Fail("Cannot read the block devices of %s: %s", instance_name, err)


def _IsRunning(hv: hv_base.BaseHypervisor,
               instance: objects.Instance) -> bool:
    try:
        return instance.name in hv.ListInstances(instance.hvparams)
    except errors.HypervisorError as err:
        _Fail("Cannot list the instances: %s", err)


def _IsUserDown(hv: hv_base.BaseHypervisor,
                instance: objects.Instance) -> bool:
    """Whether the guest powered itself off while its hypervisor process
    stays (Ganeti's USER_down): listed, but not running."""
    try:
        info = hv.GetInstanceInfo(instance.name, instance.hvparams)
    except errors.HypervisorError as err:
        _Fail("Cannot get information about %s: %s", instance.name, err)
    return info is not None and info[4] == constants.HV_INSTANCE_SHUTDOWN


def instance_start(instance: dict, block_devices: list,
                   startup_paused: bool) -> None:
    """Start an instance; starting a running instance is a no-op.

    An instance whose guest powered itself off (USER_down) is cleaned up
    and started again. The block devices are kept in DISK_LINKS_DIR while
    the instance runs, so that a hard reboot restarts it on the same
    devices.
    """
    inst = _InstanceFromDict(instance)
    devices = _BlockDevices(block_devices)
    hv = _GetHypervisor(inst.hypervisor)
    if _IsRunning(hv, inst):
        if not _IsUserDown(hv, inst):
            logging.info("Instance %s already running, not starting",
                         inst.name)
            return
        logging.info("Instance %s was shut down from inside, restarting it",
                     inst.name)
        try:
            hv.StopInstance(inst, force=True)
            hv.CleanupInstance(inst.name)
        except errors.HypervisorError as err:
            _Fail("Failed to clean up the shut down instance %s: %s",
                  inst.name, err)
    saved = _BlockDevicesFile(inst.name)
    io.EnsureDirs([(pathutils.DISK_LINKS_DIR, 0o750)])
    io.WriteFile(saved, data=serializer.DumpJson(block_devices))
    try:
        hv.StartInstance(inst, devices, bool(startup_paused))
    except errors.HypervisorError as err:
        io.RemoveFile(saved)
        _Fail("Hypervisor error: %s", err)
    logging.info("Started instance %s", inst.name)


_SHUTDOWN_POLL_INTERVAL = 1.0


def instance_shutdown(instance: dict, timeout: float) -> None:
    """Stop an instance: cleanly within ``timeout`` seconds, else forced.

    Stopping a stopped instance succeeds (its leftovers are cleaned up).
    """
    inst = _InstanceFromDict(instance)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or timeout < 0:
        _Fail("Invalid shutdown timeout %r", timeout)
    hv = _GetHypervisor(inst.hypervisor)
    deadline = time.monotonic() + timeout
    tried = False
    while _IsRunning(hv, inst) and time.monotonic() < deadline:
        try:
            hv.StopInstance(inst, retry=tried, timeout=int(timeout))
        except errors.HypervisorError as err:
            if _IsRunning(hv, inst):
                logging.warning("Clean shutdown of %s failed: %s", inst.name,
                                err)
        tried = True
        if _IsRunning(hv, inst):
            time.sleep(_SHUTDOWN_POLL_INTERVAL)
    if _IsRunning(hv, inst):
        logging.warning("Instance %s did not stop in %s seconds, forcing it",
                        inst.name, timeout)
        try:
            hv.StopInstance(inst, force=True)
        except errors.HypervisorError as err:
            _Fail("Failed to force stop instance %s: %s", inst.name, err)
        if _IsRunning(hv, inst):
            _Fail("Could not shutdown instance %s even by destroy",
                  inst.name)
    try:
        hv.CleanupInstance(inst.name)
    except errors.HypervisorError as err:
        logging.warning("Failed to clean up after instance %s: %s",
                        inst.name, err)
    io.RemoveFile(_BlockDevicesFile(inst.name))


def instance_reboot(instance: dict, reboot_type: str,
                    shutdown_timeout: float) -> None:
    """Reboot a running instance.

    Soft: inside the instance (the hypervisor's RebootInstance). Hard: stop
    and start again on the block devices it was started with. A full
    reboot also restarts the disks and is done by the master.
    """
    inst = _InstanceFromDict(instance)
    hv = _GetHypervisor(inst.hypervisor)
    if not _IsRunning(hv, inst):
        _Fail("Cannot reboot instance %s that is not running", inst.name)
    if reboot_type == constants.INSTANCE_REBOOT_SOFT:
        try:
            hv.RebootInstance(inst)
        except errors.HypervisorError as err:
            _Fail("Failed to soft reboot instance %s: %s", inst.name, err)
    elif reboot_type == constants.INSTANCE_REBOOT_HARD:
        block_devices = _SavedBlockDevices(inst.name)
        instance_shutdown(instance, shutdown_timeout)
        instance_start(instance, block_devices, False)
    else:
        _Fail("Invalid reboot_type received: %r", reboot_type)


def _InfoDict(info: hv_base.InstanceInfo) -> dict[str, Any]:
    _, _, memory, vcpus, state, cpu_time = info
    return {"memory": memory, "vcpus": vcpus, "state": state,
            "time": cpu_time}


def _HvParamsOf(all_hvparams: Any, name: str) -> dict | None:
    if not isinstance(all_hvparams, dict):
        _Fail("Invalid hypervisor parameters %r", all_hvparams)
    return all_hvparams.get(name)


def instance_info(instance_name: str, hname: str,
                  hvparams: dict | None) -> dict[str, Any]:
    """memory, vcpus, state and time of a running instance; {} if none."""
    hv = _GetHypervisor(hname)
    try:
        info = hv.GetInstanceInfo(instance_name, hvparams)
    except errors.HypervisorError as err:
        _Fail("Cannot get information about %s: %s", instance_name, err)
    return _InfoDict(info) if info is not None else {}


def all_instances_info(hv_names: list[str],
                       all_hvparams: dict) -> dict[str, dict]:
    """Runtime information of every instance, keyed by name.

    An instance reported by two hypervisors with different figures is an
    error (it can only run once).
    """
    if not isinstance(hv_names, list):
        _Fail("Invalid hypervisor list %r", hv_names)
    result: dict[str, dict] = {}
    for hname in hv_names:
        hv = _GetHypervisor(hname)
        try:
            infos = hv.GetAllInstancesInfo(_HvParamsOf(all_hvparams, hname))
        except errors.HypervisorError as err:
            _Fail("Cannot list the %s instances: %s", hname, err)
        for info in infos:
            value = _InfoDict(info)
            if info[0] in result and result[info[0]] != value:
                _Fail("Instance %s is running twice with different"
                      " parameters", info[0])
            result[info[0]] = value
    return result


def instance_list(hv_names: list[str], all_hvparams: dict) -> list[str]:
    """Names of the instances running on this node, sorted."""
    if not isinstance(hv_names, list):
        _Fail("Invalid hypervisor list %r", hv_names)
    names: set[str] = set()
    for hname in hv_names:
        hv = _GetHypervisor(hname)
        try:
            names.update(hv.ListInstances(_HvParamsOf(all_hvparams, hname)))
        except errors.HypervisorError as err:
            _Fail("Error enumerating instances (hypervisor %s): %s", hname,
                  err)
    return sorted(names)


def instance_balloon_memory(instance: dict, memory: int) -> None:
    """Change the memory of a running instance; no-op if it is stopped."""
    inst = _InstanceFromDict(instance)
    if isinstance(memory, bool) or not isinstance(memory, int) or \
            memory <= 0:
        _Fail("Invalid memory size %r", memory)
    hv = _GetHypervisor(inst.hypervisor)
    if not _IsRunning(hv, inst):
        logging.info("Instance %s is not running, cannot balloon", inst.name)
        return
    try:
        hv.BalloonInstanceMemory(inst, memory)
    except errors.HypervisorError as err:
        _Fail("Failed to balloon instance memory: %s", err)


def instance_console_info(instance: dict, primary_node: dict,
                          node_group: dict | None) -> dict[str, Any]:
    """How to reach the instance's console (InstanceConsole fields)."""
    inst = _InstanceFromDict(instance)
    try:
        node_obj = objects.Node.FromDict(dict(primary_node))
        group_obj = (objects.NodeGroup.FromDict(dict(node_group))
                     if node_group else None)
    except (errors.ConfigurationError, TypeError) as err:
        _Fail("Invalid node or group: %s", err)
    hv = _GetHypervisor(inst.hypervisor)
    return hv.GetInstanceConsole(inst, node_obj, group_obj, inst.hvparams,
                                 inst.beparams)


def hypervisor_validate_params(hvname: str, hvparams: dict) -> None:
    """Check filled parameters against this node (files, devices)."""
    hv = _GetHypervisor(hvname)
    try:
        hv.ValidateParameters(hvparams)
    except errors.HypervisorError as err:
        _Fail("Hypervisor parameter validation failed: %s", err)


def _MigrationStep(fn: Any, what: str, instance: objects.Instance,
                   *args: Any) -> Any:
    try:
        return fn(instance, *args)
    except errors.HypervisorError as err:
        _Fail("Failed to %s of instance %s: %s", what, instance.name, err)


def migration_info(instance: dict) -> str:
    """Data the target node needs to accept the instance."""
    inst = _InstanceFromDict(instance)
    hv = _GetHypervisor(inst.hypervisor)
    return _MigrationStep(hv.MigrationInfo, "get the migration info", inst)


def accept_instance(instance: dict, info: str, target: str,
                    block_devices: list) -> None:
    """Target side: prepare to receive the migrating instance.

    The block devices are kept as instance_start keeps them, so that the
    instance, once here, restarts on this node's devices.
    """
    inst = _InstanceFromDict(instance)
    devices = _BlockDevices(block_devices)
    hv = _GetHypervisor(inst.hypervisor)
    saved = _BlockDevicesFile(inst.name)
    io.EnsureDirs([(pathutils.DISK_LINKS_DIR, 0o750)])
    io.WriteFile(saved, data=serializer.DumpJson(block_devices))
    try:
        _MigrationStep(hv.AcceptInstance, "accept the migration", inst,
                       info, target, devices)
    except Exception:
        io.RemoveFile(saved)
        raise


def instance_migrate(cluster_name: str, instance: dict, target: str,
                     live: bool) -> None:
    """Source side: send the running instance to ``target``."""
    inst = _InstanceFromDict(instance)
    hv = _GetHypervisor(inst.hypervisor)
    if not _IsRunning(hv, inst):
        _Fail("Cannot migrate instance %s: not running on this node",
              inst.name)
    try:
        hv.MigrateInstance(cluster_name, inst, target, bool(live))
    except errors.HypervisorError as err:
        _Fail("Failed to migrate instance %s: %s", inst.name, err)


def instance_get_migration_status(instance: dict) -> dict[str, Any]:
    """Source side: progress of the migration ({"status": ...})."""
    inst = _InstanceFromDict(instance)
    hv = _GetHypervisor(inst.hypervisor)
    return _MigrationStep(hv.GetMigrationStatus,
                          "get the migration status", inst)


def finalize_migration_dst(instance: dict, info: str, success: bool) -> None:
    """Target side: take over the instance, or clean up after failure."""
    inst = _InstanceFromDict(instance)
    hv = _GetHypervisor(inst.hypervisor)
    if not success:
        io.RemoveFile(_BlockDevicesFile(inst.name))
    _MigrationStep(hv.FinalizeMigrationDst, "finalize the migration", inst,
                   info, bool(success))


def finalize_migration_src(instance: dict, success: bool, live: bool) -> None:
    """Source side: drop the migrated instance, or resume it."""
    inst = _InstanceFromDict(instance)
    hv = _GetHypervisor(inst.hypervisor)
    _MigrationStep(hv.FinalizeMigrationSource, "finalize the migration",
                   inst, bool(success), bool(live))
    if success:
        io.RemoveFile(_BlockDevicesFile(inst.name))


# Instance storage (see ganeti.storage) -------------------------------------

def _DiskFromDict(data: Any) -> objects.Disk:
    """A disk sent by the master."""
    if not isinstance(data, dict):
        _Fail("Invalid disk %r, expected a dictionary", data)
    try:
        return objects.Disk.FromDict(dict(data))
    except errors.ConfigurationError as err:
        _Fail("Invalid disk: %s", err)


def _DisksFromList(disks: Any) -> list[objects.Disk]:
    """The disks of a call taking a list of them."""
    if not isinstance(disks, list):
        _Fail("Invalid disks %r, expected a list", disks)
    return [_DiskFromDict(data) for data in disks]


def _CheckFlag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        _Fail("Invalid %s %r, expected true or false", name, value)
    return value


def blockdev_create(bdev: dict, size: int, owner: str, on_primary: bool,
                    info: str, excl_stor: bool) -> list:
    """Create a disk's storage of ``size`` MiB for instance ``owner``.

    On the primary node the new device is also assembled, as the OS
    scripts come next; ``info`` is stored as the device's metadata.
    """
    disk = _DiskFromDict(bdev)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        _Fail("Invalid disk size %r, expected MiB", size)
    disk.size = size
    dev = storage.Create(disk, _CheckFlag(excl_stor, "excl_stor"))
    if _CheckFlag(on_primary, "on_primary"):
        dev.Assemble()
    dev.SetInfo(info)
    logging.info("Created disk %s of %s: %r", disk.iv_name or disk.uuid,
                 owner, dev)
    return list(dev.unique_id)


def blockdev_remove(bdev: dict) -> None:
    """Destroy a disk's storage."""
    disk = _DiskFromDict(bdev)
    storage.GetDevice(disk).Remove()
    logging.info("Removed disk %s (%s)", disk.iv_name or disk.uuid,
                 disk.logical_id)


def blockdev_assemble(disk: dict, instance: dict, on_primary: bool,
                      idx: int) -> str | None:
    """Make disk ``idx`` of ``instance`` usable; returns the device path.

    On a secondary node only mirrored disks have something to do (serve
    the replica); the result is None there.
    """
    cf = _DiskFromDict(disk)
    name = instance.get("name") if isinstance(instance, dict) else None
    if not isinstance(name, str) or not name:
        _Fail("Invalid instance %r, expected a dictionary with a name",
              instance)
    if isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
        _Fail("Invalid disk index %r", idx)
    try:
        if not _CheckFlag(on_primary, "on_primary"):
            storage.GetDevice(cf).AssembleSecondary()
            return None
        dev = storage.Assemble(cf)
    except errors.BlockDeviceError as err:
        _Fail("Cannot assemble disk/%d of instance %s: %s", idx, name, err)
    return dev.dev_path


def blockdev_getmirrorstatus(disks: list) -> list:
    """Ganeti's status 7-tuple of each disk on this node.

    ``(dev_path, major, minor, sync_percent, estimated_time, is_degraded,
    ldisk_status)``; FUSE-exported devices have no major/minor (None).
    """
    result = []
    for disk in _DisksFromList(disks):
        try:
            dev = storage.GetDevice(disk)
            dev.Attach()
            percent, eta, degraded, ldisk = dev.GetSyncStatus()
        except errors.BlockDeviceError as err:
            _Fail("Cannot get the status of disk %s: %s",
                  disk.iv_name or disk.uuid, err)
        result.append([dev.dev_path, None, None, percent, eta, degraded,
                       ldisk])
    return result


def blockdev_find(disk: dict) -> list | None:
    """The status 7-tuple of one disk, or None when it is not active here.

    Ganeti's FindDevice: the primary's side is active when assembled, a
    drbd secondary's while it serves its replica (whose image is then the
    path reported).
    """
    cf = _DiskFromDict(disk)
    try:
        dev = storage.GetDevice(cf)
        path = dev.Find()
        if path is None:
            return None
        percent, eta, degraded, ldisk = dev.GetSyncStatus()
    except errors.BlockDeviceError as err:
        _Fail("Cannot find disk %s: %s", cf.iv_name or cf.uuid, err)
    return [path, None, None, percent, eta, degraded, ldisk]


def drbd_needs_activation(disks: list) -> list[str]:
    """UUIDs of the drbd disks activate-disks would repair on this node
    (Ganeti's DrbdNeedsActivation)."""
    result = []
    for disk in _DisksFromList(disks):
        try:
            if storage.GetDevice(disk).NeedsActivation():
                result.append(disk.uuid)
        except errors.BlockDeviceError as err:
            _Fail("Cannot get the status of disk %s: %s",
                  disk.iv_name or disk.uuid, err)
    return result


def blockdev_shutdown(disk: dict) -> None:
    """Undo blockdev_assemble (the data stays)."""
    storage.GetDevice(_DiskFromDict(disk)).Shutdown()


def blockdev_grow(disk: dict, amount: int, dryrun: bool, backingstore: bool,
                  excl_stor: bool) -> None:
    """Grow a disk by ``amount`` MiB; a negative amount is refused."""
    storage.GetDevice(_DiskFromDict(disk)).Grow(
        amount, _CheckFlag(dryrun, "dryrun"),
        _CheckFlag(backingstore, "backingstore"),
        _CheckFlag(excl_stor, "excl_stor"))


def blockdev_getdimensions(disks: list) -> list:
    """[size in bytes, spindles] per disk; None where it is unavailable."""
    result: list[list[int | None] | None] = []
    for disk in _DisksFromList(disks):
        try:
            result.append(list(storage.GetDevice(disk).GetActualDimensions()))
        except errors.BlockDeviceError as err:
            logging.warning("No dimensions of disk %s: %s",
                            disk.iv_name or disk.uuid, err)
            result.append(None)
    return result


def blockdev_setinfo(disk: dict, info: str) -> None:
    """Store metadata with a disk."""
    if not isinstance(info, str):
        _Fail("Invalid disk metadata %r, expected a string", info)
    storage.GetDevice(_DiskFromDict(disk)).SetInfo(info)


_CONVERT_CHUNK = 1024 * 1024


def blockdev_convert(src_disk: dict, target_disk: dict) -> None:
    """Copy the data of an assembled disk into a new one (Ganeti's
    BlockdevConvert, for disk template conversions).

    Both devices are read and written through their device paths. The
    target is new, hence zero: chunks of zeros are skipped.
    """
    paths = []
    for data in (src_disk, target_disk):
        disk = _DiskFromDict(data)
        try:
            dev = storage.GetDevice(disk)
            found = dev.Attach()
        except errors.BlockDeviceError as err:
            _Fail("Cannot find disk %s: %s", disk.iv_name or disk.uuid, err)
        if not found or not dev.dev_path:
            _Fail("Cannot copy %s disk %s: device not found",
                  "from" if data is src_disk else "to",
                  disk.iv_name or disk.uuid)
        paths.append(dev.dev_path)
    zero = bytes(_CONVERT_CHUNK)
    try:
        with open(paths[0], "rb") as src, open(paths[1], "r+b") as dst:
            while True:
                chunk = src.read(_CONVERT_CHUNK)
                if not chunk:
                    break
                if chunk != zero[:len(chunk)]:
                    dst.seek(src.tell() - len(chunk))
                    dst.write(chunk)
            dst.flush()
            os.fsync(dst.fileno())
    except OSError as err:
        _Fail("Copying %s to %s failed: %s", paths[0], paths[1], err)


def _Drbd(disk: objects.Disk) -> Any:
    """The drbd device of a disk sent by the master."""
    if disk.dev_type != constants.DT_DRBD8:
        _Fail("Disk %s is not a drbd disk", disk.iv_name or disk.uuid)
    return storage.GetDevice(disk)


def _EachDrbd(disks: Any, action: Callable[[Any], None],
              what: str) -> list:
    """Apply ``action`` to the drbd device of each disk the master sent;
    the devices, or the failure naming the disk (``what``: "open disk
    %s" and the like)."""
    devices = []
    for disk in _DisksFromList(disks):
        dev = _Drbd(disk)
        try:
            action(dev)
        except (errors.BlockDeviceError, errors.QmpError) as err:
            _Fail("Cannot %s: %s", what % dev.uuid, err)
        devices.append(dev)
    return devices


def drbd_disconnect_net(disks: list) -> None:
    """Primary of drbd disks: stop mirroring, forget the secondary's data."""
    _EachDrbd(disks, lambda dev: dev.DisconnectPeer(),
              "disconnect disk %s")


def blockdev_open(disks: list) -> list[str]:
    """The target of a migration: the device of each disk, opened while
    the source still writes to it (Ganeti's BlockdevOpen: drbd's
    dual-primary phase); returns the device paths."""
    opened = _EachDrbd(disks, lambda dev: dev.Open(), "open disk %s")
    return [dev.dev_path for dev in opened]


def blockdev_close(disks: list) -> None:
    """Undo blockdev_open on a target, or (Ganeti's BlockdevClose) make
    the source of a migration the secondary, once its peer is in sync."""
    _EachDrbd(disks, lambda dev: dev.Close(), "close disk %s")


def drbd_attach_net(disks: list) -> None:
    """The new primary after a migration: mirror to the closed source,
    which holds the same data (no copy)."""
    _EachDrbd(disks, lambda dev: dev.ConnectInSync(),
              "connect disk %s to its secondary")


def drbd_replace_image(disk: dict, on_primary: bool) -> None:
    """Put a new image in place of this node's copy of a drbd disk."""
    _Drbd(_DiskFromDict(disk)).ReplaceImage(
        _CheckFlag(on_primary, "on_primary"))


def drbd_remove_replaced(disk: dict) -> None:
    """Delete the image drbd_replace_image set aside."""
    _Drbd(_DiskFromDict(disk)).RemoveReplaced()


def storage_list(su_name: str, su_args: list, name: str | None,
                 fields: list[str]) -> list[list]:
    """Rows of the requested fields for the storage units (file storage)."""
    if not isinstance(fields, list) or \
            not all(isinstance(field, str) for field in fields):
        _Fail("Invalid storage fields %r, expected a list of names", fields)
    if name is not None and not isinstance(name, str):
        _Fail("Invalid storage unit name %r", name)
    return storage.GetStorageUnit(su_name, su_args).List(name, fields)


def file_storage_dir_rename(old_file_storage_dir: str,
                            new_file_storage_dir: str,
                            template: str) -> None:
    """Rename an instance's directory of file disks (instance rename).

    Both must be places for file disks (below the cluster's storage
    directory of ``template``, accepted by the allow-list, not through a
    symbolic link out of it) and siblings: only the last component, the
    instance name, changes. If only the new directory exists the rename
    was done before (a retried job) and nothing happens.
    """
    if template not in constants.DTS_FILEBASED:
        _Fail("Invalid file disk template %r", template)
    try:
        old = filestorage.CheckFileStoragePath(old_file_storage_dir,
                                               template)
        new = filestorage.CheckFileStoragePath(new_file_storage_dir,
                                               template)
    except errors.FileStoragePathError as err:
        _Fail("%s", err)
    if os.path.dirname(old) != os.path.dirname(new) or old == new:
        _Fail("Cannot rename '%s' to '%s': only the last path component"
              " may change", old_file_storage_dir, new_file_storage_dir)
    if os.path.lexists(new):
        if os.path.lexists(old):
            _Fail("Cannot rename '%s' to '%s': both locations exist",
                  old_file_storage_dir, new_file_storage_dir)
        return
    if os.path.islink(old) or not os.path.isdir(old):
        _Fail("Specified storage dir '%s' is not a directory",
              old_file_storage_dir)
    try:
        os.rename(old, new)
    except OSError as err:
        _Fail("Cannot rename '%s' to '%s': %s", old_file_storage_dir,
              new_file_storage_dir, err.strerror)
    logging.info("Renamed file storage directory %s to %s",
                 old_file_storage_dir, new_file_storage_dir)


# Instance exports (gnt-backup) ----------------------------------------------
# One directory per exported instance in pathutils.EXPORT_DIR: its
# description (constants.EXPORT_CONF_FILE, Ganeti's config.ini) and one
# dump per disk, named after the disk's UUID. The data transfers
# (ganeti.impexp) write the dumps into pathutils.ExportTempDir, which
# finalize_export completes and renames into place.

def _ExportName(name: Any) -> str:
    """An export (instance) name, usable as a directory name."""
    if not isinstance(name, str) or not name or "/" in name or \
            "\0" in name or name.startswith("."):
        _Fail("Invalid export name %r", name)
    return name


def export_list() -> list[str]:
    """Names of the complete exports on this node, sorted."""
    try:
        names = io.ListVisibleFiles(pathutils.EXPORT_DIR)
    except FileNotFoundError:
        _Fail("No exports directory")
    except OSError as err:
        _Fail("Cannot list the exports directory: %s", err.strerror)
    return sorted(name for name in names
                  if os.path.isdir(os.path.join(pathutils.EXPORT_DIR, name)))


def _ReadExportConfig(path: str) -> configparser.RawConfigParser:
    config = configparser.RawConfigParser()
    try:
        with open(os.path.join(path, constants.EXPORT_CONF_FILE),
                  encoding="utf-8") as fobj:
            config.read_file(fobj)
    except FileNotFoundError:
        _Fail("No export found in %s", vcluster.MakeVirtualPath(path))
    except (OSError, UnicodeDecodeError, configparser.Error) as err:
        _Fail("Cannot read the export in %s: %s",
              vcluster.MakeVirtualPath(path), err)
    if not (config.has_section(constants.INISECT_EXP) and
            config.has_section(constants.INISECT_INS)):
        _Fail("Export info file doesn't have the required fields")
    return config


def _DumpConfig(config: configparser.RawConfigParser) -> str:
    buf = StringIO()
    config.write(buf)
    return buf.getvalue()


def export_info(path: str) -> str:
    """The description (config.ini text) of the export in ``path``.

    ``path`` must be an export directory (directly below the exports
    directory): imports read only what exports wrote.
    """
    local = _LocalPath(path)
    if os.path.dirname(local) != os.path.normpath(pathutils.EXPORT_DIR):
        _Fail("Refusing to read %s: not an export directory of %s", path,
              vcluster.MakeVirtualPath(pathutils.EXPORT_DIR))
    _ExportName(os.path.basename(local))
    return _DumpConfig(_ReadExportConfig(local))


def export_remove(export: str) -> None:
    """Remove an export (its whole directory) from this node."""
    target = os.path.join(pathutils.EXPORT_DIR, _ExportName(export))
    try:
        shutil.rmtree(target)
    except OSError as err:
        _Fail("Error while removing the export: %s", err)
    logging.info("Removed the export %s", export)


def export_discard(instance_name: str) -> None:
    """Remove an unfinished export of an instance (none is fine)."""
    target = pathutils.ExportTempDir(_ExportName(instance_name))
    try:
        shutil.rmtree(target)
    except FileNotFoundError:
        return
    except OSError as err:
        _Fail("Cannot remove the unfinished export %s: %s",
              vcluster.MakeVirtualPath(target), err)
    logging.info("Discarded the unfinished export of %s", instance_name)


# The OS export script writes the disk to its stdout, which is compressed
# into the dump; the import script reads the decompressed dump from its
# stdin. Their stderr goes to an OS log, as for the other OS scripts.
_OS_EXPORT_SHELL = 'set -o pipefail; cd "$1" && "$2" 2>>"$3" | gzip -c -%d'
_OS_IMPORT_SHELL = 'set -o pipefail; cd "$1" && gzip -d -c | "$2" 2>>"$3"'
_OS_RAW_SHELL = 'cd "$1" && exec "$2" 2>>"$3"'


def os_transfer_command(instance: dict, mode: str, idx: int,
                        compression: str, debug: int) -> dict[str, Any]:
    """How a data transfer runs the OS export or import script of a disk.

    Returns the ``{"argv", "env"}`` of an impexp.IEIO_COMMAND source
    (export) or destination (import) for disk ``idx`` of ``instance`` (an
    OS RPC instance dict, disks with ``dev_path``), which only this node
    can run: the script, its environment and the device are this node's.
    ``compression`` is that of the dump (impexp.IEC_*): the export script's
    output is compressed with it, the import script's input decompressed.
    """
    _CheckInstanceDict(instance)
    if mode not in impexp.IEM_ALL:
        _Fail("Invalid transfer mode %r", mode)
    if compression not in impexp.IEC_ALL:
        _Fail("Unsupported compression %r (supported: %s)", compression,
              ", ".join(sorted(impexp.IEC_ALL)))
    disks = instance.get("disks") or []
    if isinstance(idx, bool) or not isinstance(idx, int) or \
            not 0 <= idx < len(disks):
        _Fail("Invalid disk index %r for instance %s", idx, instance["name"])
    inst_os = _InstanceOS(instance)
    export = mode == impexp.IEM_EXPORT
    script = inst_os.export_script if export else inst_os.import_script
    if script is None:
        _Fail("OS %s does not support %sing instances (it has no %s"
              " script)", inst_os.name, mode,
              constants.OS_SCRIPT_EXPORT if export
              else constants.OS_SCRIPT_IMPORT)
    env = OSEnvironment(instance, inst_os, _CheckDebug(debug))
    prefix = "EXPORT" if export else "IMPORT"
    device = _DiskPath(disks[idx])
    env.update({prefix + "_INDEX": "%d" % idx, prefix + "_DEVICE": device,
                prefix + "_DISK_PATH": device})
    if compression == impexp.IEC_NONE:
        shell = _OS_RAW_SHELL
    elif export:
        shell = _OS_EXPORT_SHELL % impexp.GZIP_LEVELS[compression]
    else:
        shell = _OS_IMPORT_SHELL
    io.EnsureDirs([(pathutils.LOG_OS_DIR, 0o750)])
    logfile = _InstanceLogName(mode, instance["os"], instance["name"])
    return {"argv": ["/bin/bash", "-c", shell, "ganeti-os-" + mode,
                     inst_os.path, script, logfile],
            "env": env}


def _ExportConfig(instance: dict, disks: list[dict], compression: str,
                  timestamp: int) -> configparser.RawConfigParser:
    """Ganeti's config.ini for an instance and its exported disks.

    Values are written as Ganeti writes them (``None`` for a missing
    NIC address), so exports stay interchangeable with Ganeti's.
    """
    beparams = instance.get("beparams") or {}
    config = configparser.RawConfigParser()
    config.add_section(constants.INISECT_EXP)
    for key, value in (("version", constants.EXPORT_VERSION),
                       ("timestamp", timestamp),
                       ("source", instance["primary_node"]),
                       ("os", instance["os"]),
                       ("compression", compression)):
        config.set(constants.INISECT_EXP, key, str(value))
    sect = constants.INISECT_INS
    config.add_section(sect)
    config.set(sect, "name", instance["name"])
    for key, param in (("maxmem", objects.BE_MAXMEM),
                       ("minmem", objects.BE_MINMEM),
                       ("memory", objects.BE_MAXMEM),
                       ("vcpus", objects.BE_VCPUS)):
        config.set(sect, key, "%d" % beparams[param])
    config.set(sect, "disk_template",
               disks[0]["dev_type"] if disks else constants.DT_DISKLESS)
    config.set(sect, "hypervisor", instance["hypervisor"])
    config.set(sect, "tags", " ".join(instance.get("tags") or []))
    nics = instance.get("nics") or []
    for idx, nic in enumerate(nics):
        for key in ("mac", "ip", "network", "name"):
            config.set(sect, "nic%d_%s" % (idx, key), str(nic.get(key)))
        nicparams = nic.get("nicparams") or {}
        for key in sorted(objects.NIC_PARAMETERS):
            config.set(sect, "nic%d_%s" % (idx, key),
                       str(nicparams.get(key)))
    config.set(sect, "nic_count", "%d" % len(nics))
    for idx, disk in enumerate(disks):
        config.set(sect, "disk%d_ivname" % idx, str(disk.get("iv_name")))
        config.set(sect, "disk%d_dump" % idx, disk["uuid"])
        config.set(sect, "disk%d_size" % idx, "%d" % disk["size"])
        config.set(sect, "disk%d_name" % idx, str(disk.get("name")))
    config.set(sect, "disk_count", "%d" % len(disks))
    for section, values, skip in (
            (constants.INISECT_HYP, instance.get("hvparams"),
             objects.HVC_GLOBALS),
            (constants.INISECT_BEP, beparams, frozenset()),
            (constants.INISECT_OSP, instance.get("osparams"), frozenset()),
            (constants.INISECT_OSP_PRIVATE,
             instance.get("osparams_private"), frozenset())):
        config.add_section(section)
        for key, value in sorted((values or {}).items()):
            if key not in skip:
                config.set(section, key, str(value))
    return config


def finalize_export(instance: dict, disks: list, compression: str) -> None:
    """Complete the export of an instance whose disks were transferred.

    ``instance`` is the instance with filled parameters (public and
    private OS parameters apart), ``disks`` its disk dicts in order, whose
    dumps (``<uuid>``, holding the data as ``compression`` says) must be
    in the instance's unfinished export. The description is written and
    the export replaces the instance's previous one on this node.
    """
    if not isinstance(instance, dict) or not all(
            isinstance(instance.get(key), str) and instance[key]
            for key in ("name", "hypervisor", "primary_node")) or \
            not isinstance(instance.get("os"), str):
        _Fail("Invalid instance to export: name, os, hypervisor and"
              " primary_node are required")
    name = _ExportName(instance["name"])
    if not isinstance(compression, str) or not compression:
        _Fail("Invalid compression %r", compression)
    if not isinstance(disks, list) or not all(
            isinstance(disk, dict) and isinstance(disk.get("size"), int) and
            isinstance(disk.get("dev_type"), str) for disk in disks):
        _Fail("Invalid disks %r, expected a list of disk dictionaries",
              disks)
    tmpdir = pathutils.ExportTempDir(name)
    for disk in disks:
        dump = os.path.join(tmpdir, _ExportName(disk.get("uuid")))
        if not os.path.isfile(dump):
            _Fail("The dump of disk %s of %s is missing from %s",
                  disk.get("iv_name") or disk["uuid"], name,
                  vcluster.MakeVirtualPath(tmpdir))
    try:
        text = _DumpConfig(_ExportConfig(instance, disks, compression,
                                         int(time.time())))
    except (KeyError, TypeError, ValueError) as err:
        _Fail("Invalid instance %s for an export: %r", name, err)
    io.EnsureDirs([(tmpdir, 0o750)])
    io.WriteFile(os.path.join(tmpdir, constants.EXPORT_CONF_FILE), data=text)
    final = os.path.join(pathutils.EXPORT_DIR, name)
    shutil.rmtree(final, ignore_errors=True)
    try:
        os.rename(tmpdir, final)
    except OSError as err:
        _Fail("Cannot move the export of %s into place: %s", name,
              err.strerror)
    io.FsyncDirectory(pathutils.EXPORT_DIR)
    logging.info("Finalized the export of %s (%d disk(s))", name,
                 len(disks))



# Node-to-node transfers (see ganeti.impexp) --------------------------------
# Each end runs in a process of its own; ganeti.impexp.node starts and
# controls it and checks the arguments.

def import_start(opts: dict, instance_name: str, component: str,
                 dest: list, address: str) -> dict[str, Any]:
    """Receive one stream into ``dest``; {name, address, port}."""
    return impexp_node.StartImport(opts, instance_name, component, dest,
                                   address)


def export_start(opts: dict, host: str, port: int, instance_name: str,
                 component: str, source: list) -> str:
    """Send ``source`` to the import at ``host``/``port``; its name."""
    return impexp_node.StartExport(opts, host, port, instance_name,
                                   component, source)


def impexp_status(names: list[str]) -> list[dict[str, Any] | None]:
    """The status of each named transfer (None if unknown)."""
    return impexp_node.GetStatus(names)


def impexp_abort(name: str) -> None:
    """Stop a transfer and discard the file its import wrote."""
    impexp_node.Abort(name)


def impexp_cleanup(name: str) -> None:
    """Forget a transfer, stopping it if it still runs (the data of a
    successful import stays)."""
    impexp_node.Cleanup(name)


# Hooks ----------------------------------------------------------------------
# Ganeti's run-parts rule for hook script names (so "x.sh" is skipped)
_HOOK_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
# How long a killed hook script gets to release its output pipe
_HOOK_KILL_WAIT = 5.0


def _RunHookScript(path: str, env: dict[str, str],
                   timeout: float) -> tuple[int, str]:
    """Run one hook script; (HKR_SUCCESS or HKR_FAIL, its output).

    The script runs in a session of its own so that a timeout kills what
    it started too: a leftover child would hold the output pipe open and
    keep the master waiting.
    """
    try:
        proc = subprocess.Popen([path], env=env, cwd="/",
                                stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, close_fds=True,
                                start_new_session=True)
    except OSError as err:
        return constants.HKR_FAIL, "Hook script execution error: %s" % err
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            output, _ = proc.communicate(timeout=_HOOK_KILL_WAIT)
        except subprocess.TimeoutExpired:
            # Something left the session and kept the pipe: drop the output
            if proc.stdout is not None:
                proc.stdout.close()
            proc.wait()
            output = b""
        text = output.decode("utf-8", "replace").strip()
        note = "(timed out after %g seconds)" % round(timeout, 1)
        return constants.HKR_FAIL, "%s\n%s" % (text, note) if text else note
    text = output.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        return constants.HKR_FAIL, text
    return constants.HKR_SUCCESS, text


def RunHooks(hpath: str, phase: str, env: dict[str, str],
             base_dir: str | None = None,
             script_timeout: float = constants.HOOKS_SCRIPT_TIMEOUT,
             phase_timeout: float = constants.HOOKS_PHASE_TIMEOUT
             ) -> list[list]:
    """Run the scripts of ``<base_dir>/<hpath>-<phase>.d`` in name order.

    Returns ``[script, HKR_*, output]`` per visible directory entry,
    ``script`` being ``<hpath>-<phase>.d/<name>``: entries whose name
    breaks the run-parts rule and non-executable files are skipped, a
    missing directory means no hooks. Scripts get ``env`` and nothing
    else, so they see the same environment whoever started noded. Once
    ``phase_timeout`` is used up the remaining scripts fail unrun, so the
    answer reaches the master before its RPC times out.
    """
    if base_dir is None:
        base_dir = pathutils.HOOKS_BASE_DIR
    subdir = "%s-%s.d" % (hpath, phase)
    try:
        return [["%s/%s" % (subdir, name), status, output]
                for name, status, output in RunParts(
                    os.path.join(base_dir, subdir), env, script_timeout,
                    phase_timeout)]
    except OSError as err:
        _Fail("Can't list hooks directory %s: %s",
              os.path.join(base_dir, subdir), err.strerror)


def RunParts(dir_name: str, env: dict[str, str],
             script_timeout: float = constants.HOOKS_SCRIPT_TIMEOUT,
             phase_timeout: float = constants.HOOKS_PHASE_TIMEOUT
             ) -> list[tuple[str, int, str]]:
    """Run a directory's executables in name order (run-parts).

    Returns ``(name, HKR_*, output)`` per visible entry; see RunHooks for
    the rules. A missing directory runs nothing; another listing error
    raises OSError. The hooks and the watcher's directory share them.
    """
    try:
        names = sorted(name for name in os.listdir(dir_name)
                       if not name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return []
    deadline = time.monotonic() + phase_timeout
    results = []
    for name in names:
        path = os.path.join(dir_name, name)
        if not (_HOOK_NAME_RE.match(name) and os.path.isfile(path) and
                os.access(path, os.X_OK)):
            results.append((name, constants.HKR_SKIP, ""))
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            results.append((name, constants.HKR_FAIL,
                            "Not run: the hooks of this phase took longer"
                            " than %g seconds" % phase_timeout))
            continue
        status, output = _RunHookScript(path, env,
                                        min(script_timeout, remaining))
        results.append((name, status, output))
    return results


def iallocator_runner(name: str, idata: str, ial_params: dict,
                      timeout: float) -> str:
    """Run an instance allocator on its input message; its stdout.

    The program is looked up by name (no path) in the allocator search
    path and gets the message as a file, then the parameters as
    ``--key=value`` (``--key`` for a None value), as Ganeti runs it.
    """
    if not isinstance(name, str) or not name or "/" in name or \
            name in (".", ".."):
        _Fail("Invalid iallocator name %r", name)
    if not isinstance(ial_params, dict) or not isinstance(idata, str):
        _Fail("iallocator_runner expects a string and a dict")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or timeout <= 0:
        _Fail("Invalid iallocator timeout %r", timeout)
    program = None
    for directory in pathutils.IALLOCATOR_SEARCH_PATH:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            program = path
            break
    if program is None:
        _Fail("iallocator module '%s' not found in the search path (%s)",
              name, ":".join(pathutils.IALLOCATOR_SEARCH_PATH))
    args = ["--%s" % key if value is None else "--%s=%s" % (key, value)
            for key, value in sorted(ial_params.items())]
    fd, input_file = tempfile.mkstemp(prefix="ganeti-iallocator.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fobj:
            fobj.write(idata)
        try:
            result = process.RunCmd([program, input_file] + args,
                                    timeout=timeout)
        except errors.CommandError as err:
            _Fail("iallocator module '%s' can't be run: %s", name, err)
    finally:
        os.unlink(input_file)
    if result.failed:
        _Fail("iallocator module '%s' failed: %s, output '%s'", name,
              result.fail_reason, (result.stdout + result.stderr).strip())
    return result.stdout


def hooks_runner(hpath: str, phase: str, env: dict) -> list[list]:
    """Run this node's hook scripts of one phase of an operation.

    ``GANETI_DATA_DIR`` arrives as a virtual path and is localized, so on
    a virtual cluster the scripts find this node's data directory.
    """
    if not isinstance(hpath, str) or not _HOOK_NAME_RE.match(hpath):
        _Fail("Invalid hooks path %r", hpath)
    if phase not in constants.HOOKS_PHASES:
        _Fail("Unknown hooks phase %r", phase)
    if not (isinstance(env, dict) and
            all(isinstance(key, str) and isinstance(value, str) and
                key and "=" not in key and "\0" not in key + value
                for key, value in env.items())):
        _Fail("Invalid hooks environment, expected a dict of strings")
    env = dict(env)
    if "GANETI_DATA_DIR" in env:
        env["GANETI_DATA_DIR"] = _LocalPath(env["GANETI_DATA_DIR"])
    return RunHooks(hpath, phase, env)
