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
import logging
import os
import re
import shutil
import time
import zlib
from typing import Any, NoReturn

from ganeti import constants, errors, netutils, pathutils, vcluster
from ganeti.utils import io

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
