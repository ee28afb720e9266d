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
import hashlib
import hmac
import logging
import os
import re
import shutil
import time
import zlib
from typing import Any, NoReturn

from ganeti import (constants, errors, netutils, pathutils, serializer, ssconf,
                    vcluster)
from ganeti.utils import io, process

_SSCONF_KEY_RE = re.compile(r"^[a-z0-9_]+$")
_SSCONF_FILE_MODE = 0o444
_BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
_MEMINFO_FILE = "/proc/meminfo"
_CPUINFO_FILE = "/proc/cpuinfo"
_NUMA_NODES_DIR = "/sys/devices/system/node"
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


def _ReadMeminfo() -> dict[str, int]:
    """/proc/meminfo as a dict of sizes in bytes."""
    values = {}
    for line in io.ReadFile(_MEMINFO_FILE).splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            scale = 1024 if fields[1:] == ["kB"] else 1
            values[key] = int(fields[0]) * scale
    return values


def _CpuInfo() -> dict[str, int]:
    sockets = set()
    for line in io.ReadFile(_CPUINFO_FILE).splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "physical id":
            sockets.add(value.strip())
    try:
        nodes = [name for name in os.listdir(_NUMA_NODES_DIR)
                 if re.match(r"^node\d+$", name)]
    except FileNotFoundError:
        nodes = []
    return {
        "cpu_total": os.cpu_count() or 1,
        "cpu_nodes": max(len(nodes), 1),
        "cpu_sockets": max(len(sockets), 1),
    }


def _HostInfo() -> dict[str, int]:
    """Memory (MiB) and CPUs of the host.

    Free memory counts page cache and buffers, which the kernel gives back
    when an instance needs them; dom0 memory is what the host itself uses.
    """
    meminfo = _ReadMeminfo()
    total = meminfo["MemTotal"]
    free = meminfo.get("MemAvailable")
    if free is None:
        free = (meminfo.get("MemFree", 0) + meminfo.get("Buffers", 0) +
                meminfo.get("Cached", 0))
    info = {
        "memory_total": total // _MIB,
        "memory_free": free // _MIB,
        "memory_dom0": (total - free) // _MIB,
    }
    info.update(_CpuInfo())
    return info


def _FileStorageInfo(vpath: str) -> dict[str, Any]:
    """Size and free space (MiB) of a file storage directory.

    A missing or unusable directory gives None sizes and an "error" entry
    rather than failing the whole node_info call.
    """
    path = _LocalPath(vpath)
    info = {"type": constants.DT_FILE, "name": vpath}
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
    one if empty. All supported hypervisors see the host's memory, so
    their entries equal the host figures (the fake hypervisor has no
    instances consuming memory).
    """
    if not isinstance(storage_dirs, list) or not isinstance(hv_names, list):
        _Fail("node_info expects two lists")
    for name in hv_names:
        if name not in constants.HYPER_TYPES:
            _Fail("Unknown hypervisor %r", name)
    if not storage_dirs:
        storage_dirs = [vcluster.MakeVirtualPath(
            pathutils.DEFAULT_FILE_STORAGE_DIR)]
    host = _HostInfo()
    result: dict[str, Any] = {
        "name": netutils.GetMyName(),
        "bootid": io.ReadOneLineFile(_BOOT_ID_FILE),
        "storage": [_FileStorageInfo(path) for path in storage_dirs],
        "hv": {name: dict(host) for name in hv_names},
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
    """Replicate a job queue file written by the master."""
    path = _QueuePath(file_name)
    io.WriteFile(path, data=_DecodeContent(content),
                 mode=constants.JOB_QUEUE_FILES_PERMS)


def jobqueue_rename(rename: list[list[str]]) -> None:
    """Rename job queue files (archiving), creating directories as needed.

    All pairs are checked before anything is renamed.
    """
    if not isinstance(rename, list) or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2
            for pair in rename):
        _Fail("jobqueue_rename expects a list of [old, new] pairs")
    pairs = [(_QueuePath(old), _QueuePath(new)) for old, new in rename]
    for old, new in pairs:
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
    io.WriteFile(path, data=_DecodeContent(content), mode=mode)


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
    """Stop the master daemons, RAPI then masterd (either may be stopped)."""
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
                      pathutils.CLUSTER_DOMAIN_SECRET_FILE])


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
                        constants.NV_VERSION])


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
    return result


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
