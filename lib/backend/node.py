"""The node itself: version and resources, the job queue and ssconf
copies, uploaded files, daemon restarts, the master role and its IP,
joining and leaving the cluster.
"""

import hmac
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from typing import Any, NoReturn

from ganeti import (constants, errors, netutils, pathutils, serializer, ssconf,
                    vcluster)
from ganeti.hypervisor import hv_base
from ganeti.storage import filestorage
from ganeti.utils import io, process
from ganeti.backend.common import (DecodeContent, Fail, LocalPath,
                                   QueuePath)
from ganeti.backend.instance import GetHypervisor


_SSCONF_KEY_RE = re.compile(r"^[a-z0-9_]+$")
_SSCONF_FILE_MODE = 0o444
_BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
_MIB = 1024 * 1024


def version() -> int:
    """The RPC protocol version, for the master's compatibility check."""
    return constants.PROTOCOL_VERSION


def _FileStorageInfo(vpath: str) -> dict[str, Any]:
    """Size and free space (MiB) of a file storage directory.

    A missing or unusable directory gives None sizes and an "error" entry
    rather than failing the whole node_info call.
    """
    LocalPath(vpath)  # refuses a malformed path
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
        Fail("node_info expects two lists")
    hvs = {name: GetHypervisor(name) for name in hv_names}
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
        Fail("Invalid sleep duration %r, must be a non-negative number",
              duration)
    time.sleep(duration)


def jobqueue_update(file_name: str, content: list) -> None:
    """Replicate a job queue file written by the master.

    Creates the file's directory if it is missing: a purge removes the
    archive's subdirectories, and a resynchronisation then sends archived
    jobs into them.
    """
    path = QueuePath(file_name)
    os.makedirs(os.path.dirname(path), mode=constants.JOB_QUEUE_DIRS_PERMS,
                exist_ok=True)
    io.WriteFile(path, data=DecodeContent(content),
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
        Fail("jobqueue_rename expects a list of [old, new] pairs")
    pairs = [(QueuePath(old), QueuePath(new)) for old, new in rename]
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
        Fail("Duration must be numeric")
    io.WriteFile(pathutils.WATCHER_PAUSEFILE, data="%d\n" % until,
                 mode=0o644)


def write_ssconf_files(values: dict[str, str]) -> None:
    """Write the ssconf files (one value per file).

    Keys and values are all checked before anything is written.
    """
    if not isinstance(values, dict):
        Fail("write_ssconf_files expects a dictionary")
    for key, value in values.items():
        if not _SSCONF_KEY_RE.match(key):
            Fail("Invalid ssconf key %r", key)
        if not isinstance(value, str):
            Fail("Value of ssconf key %s must be a string, not %r", key,
                  value)
    for key, value in values.items():
        io.WriteFile(pathutils.SsconfFileName(key), data=value,
                     mode=_SSCONF_FILE_MODE)


def upload_file(file_name: str, content: list, mode: int) -> None:
    """Write one of the cluster-wide files distributed by the master."""
    path = LocalPath(file_name)
    if path not in pathutils.GetUploadableFiles():
        Fail("Refusing to write %s: not one of the files that may be"
              " uploaded", file_name)
    if isinstance(mode, bool) or not isinstance(mode, int) or \
            not 0 <= mode <= 0o7777:
        Fail("Invalid file mode %r", mode)
    if path == pathutils.CLUSTER_CONF_FILE:
        # It holds private OS parameters: never readable by more than root,
        # whatever mode an older master asks for
        mode &= constants.CONFIG_FILE_MODE
    io.WriteFile(path, data=DecodeContent(content), mode=mode)


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
        Fail("Invalid daemons to restart: %r", daemons)
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
            Fail("Could not stop %s: %s", name, result.output.strip())


def node_start_master() -> None:
    """Start the master daemons (masterd votes before it serves)."""
    for name in constants.MASTER_DAEMONS:
        result = process.RunCmd([pathutils.DAEMON_UTIL, "start", name])
        if result.failed:
            Fail("Could not start %s: %s", name, result.output.strip())


def _CheckMasterParams(params: Any) -> tuple[str, int, str]:
    if not isinstance(params, dict):
        Fail("Invalid master IP parameters %r", params)
    address, netmask = params.get("ip"), params.get("netmask")
    netdev = params.get("netdev")
    if not (isinstance(address, str) and netutils.IsValidIP4(address)):
        Fail("Invalid master IP %r", address)
    if isinstance(netmask, bool) or not isinstance(netmask, int) or \
            not 0 <= netmask <= 32:
        Fail("Invalid master netmask %r", netmask)
    if not (isinstance(netdev, str) and re.match(r"^[\w.:@-]{1,15}$",
                                                 netdev)):
        Fail("Invalid master network device %r", netdev)
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
        Fail("Cannot list the addresses of %s: %s", netdev,
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
        Fail("Could not add the master IP %s to %s: %s", address, netdev,
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
        Fail("Could not remove the master IP %s from %s: %s", address,
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
        Fail("This is the master node, refusing to demote it")
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
        Fail("This node has no join key; is it already in a cluster?")
    expected_secret = expected.rpartition(":")[2]
    if not (isinstance(secret, str) and
            hmac.compare_digest(secret.encode("utf-8"),
                                expected_secret.encode("utf-8"))):
        Fail("Wrong join secret")
    if not isinstance(files, dict) or \
            pathutils.NODED_CERT_FILE not in {LocalPath(p) for p in files}:
        Fail("node_join needs the cluster certificate")
    decoded = []
    for vpath, spec in files.items():
        path = LocalPath(vpath)
        if path not in _JoinFiles():
            Fail("Refusing to write %s: not a file a joining node gets",
                  vpath)
        if not (isinstance(spec, (list, tuple)) and len(spec) == 2 and
                isinstance(spec[0], int) and 0 <= spec[0] <= 0o7777):
            Fail("Invalid file specification for %s", vpath)
        decoded.append((path, spec[0], DecodeContent(spec[1])))
    decoded.sort(key=lambda item: item[0] == pathutils.NODED_CERT_FILE)
    write_ssconf_files(ssconf_values)
    storage_dirs = [ssconf_values.get(key) for key in ("file_storage_dir",
                                                "shared_file_storage_dir")]
    io.EnsureDirs([(LocalPath(vpath), 0o750)
                   for vpath in storage_dirs if vpath])
    for path, mode, data in decoded:
        io.WriteFile(path, data=data, mode=mode)
    io.RemoveFile(pathutils.NODED_JOIN_KEY_FILE)
    io.RemoveFile(pathutils.NODED_JOIN_CERT_FILE)
    logging.info("Joined the cluster %s", ssconf_values.get("cluster_name"))
