"""File helpers: atomic, durable writes and tolerant reads.

Every file that must survive a crash (config, job files, ssconf, certificates)
is written through WriteFile, which writes a temporary file in the same
directory, fsyncs it, renames it over the target and fsyncs the directory.
"""

import errno
import fcntl
import os
import tempfile
import time
from typing import Callable, Literal, overload

from ganeti import errors

# How often a waiting LockFile tries again
_LOCK_RETRY_INTERVAL = 0.1


def FsyncDirectory(path: str) -> None:
    """Make a rename or unlink in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def WriteFile(file_name: str, data: str | bytes | None = None,
              fn: Callable | None = None, mode: int = 0o644,
              fsync: bool = True, mkdir: bool = False,
              dir_fsync: bool | None = None) -> None:
    """Atomically replace ``file_name`` with ``data`` (or what ``fn`` writes).

    ``fn``, if given, is called with the open binary file object instead of
    writing ``data``. With ``fsync`` the data and the directory entry are
    flushed to disk before returning (``dir_fsync`` can turn the latter off
    where the caller batches it). Nothing is left behind on failure.
    """
    if (data is None) == (fn is None):
        raise ValueError("Exactly one of data and fn must be given")
    dirname, basename = os.path.split(file_name)
    if mkdir:
        os.makedirs(dirname, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + basename + ".", suffix=".tmp",
                               dir=dirname)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fobj:
            if fn is not None:
                fn(fobj)
            elif isinstance(data, str):
                fobj.write(data.encode("utf-8"))
            elif data is not None:
                fobj.write(data)
            fobj.flush()
            if fsync:
                os.fsync(fobj.fileno())
        os.rename(tmp, file_name)
    except BaseException:
        RemoveFile(tmp)
        raise
    if fsync if dir_fsync is None else dir_fsync:
        FsyncDirectory(dirname or ".")


@overload
def ReadFile(file_name: str, binary: Literal[False] = False) -> str: ...


@overload
def ReadFile(file_name: str, binary: Literal[True]) -> bytes: ...


def ReadFile(file_name: str, binary: bool = False) -> str | bytes:
    """Return the contents of a file (bytes with ``binary``)."""
    with open(file_name, "rb" if binary else "r",
              encoding=None if binary else "utf-8") as fobj:
        return fobj.read()


def ReadOneLineFile(file_name: str, strict: bool = False) -> str:
    """Return the first non-empty line of a file, stripped."""
    lines = [line for line in ReadFile(file_name).splitlines() if line.strip()]
    if not lines:
        raise ValueError("File %s is empty" % file_name)
    if strict and len(lines) > 1:
        raise ValueError("File %s has more than one line" % file_name)
    return lines[0].strip()


def ReadWatcherPauseFile(file_name: str,
                         now: float | None = None) -> int | None:
    """Until when the watcher is paused (a Unix time), None if it is not.

    The file holds the time as an integer; a time already past, a missing
    or unreadable file mean the watcher runs.
    """
    try:
        until = int(ReadOneLineFile(file_name))
    except (OSError, ValueError):
        return None
    if until <= (time.time() if now is None else now):
        return None
    return until


def RemoveFile(file_name: str) -> bool:
    """Remove a file; a missing file is not an error. Returns if removed."""
    try:
        os.unlink(file_name)
        return True
    except FileNotFoundError:
        return False


def RenameFile(old: str, new: str, mkdir: bool = False,
               mkdir_mode: int = 0o750, fsync: bool = False) -> None:
    """Rename, creating the target directory first if asked."""
    try:
        os.rename(old, new)
    except OSError as err:
        if not (mkdir and err.errno == errno.ENOENT):
            raise
        os.makedirs(os.path.dirname(new), mode=mkdir_mode, exist_ok=True)
        os.rename(old, new)
    if fsync:
        FsyncDirectory(os.path.dirname(new) or ".")
        if os.path.dirname(old) != os.path.dirname(new):
            FsyncDirectory(os.path.dirname(old) or ".")


def EnsureDirs(dirs: list[tuple[str, int]]) -> None:
    """Create directories with the given modes; fix existing ones' modes."""
    for path, mode in dirs:
        os.makedirs(path, mode=mode, exist_ok=True)
        os.chmod(path, mode)


def ListVisibleFiles(path: str) -> list[str]:
    """Names in ``path`` that do not start with a dot."""
    return [name for name in os.listdir(path) if not name.startswith(".")]


def IsBelowDir(root: str, other_path: str) -> bool:
    """Whether ``other_path`` is strictly below ``root`` once normalised."""
    root = os.path.normpath(root)
    other = os.path.normpath(other_path)
    if root == "/":
        return other != "/"
    return other.startswith(root + "/")


def LockFile(path: str, timeout: float = 0) -> int:
    """Open (creating it) and exclusively lock ``path``; its descriptor.

    The lock (flock) lasts until the descriptor is closed, and a process
    that dies releases it, so it marks "someone is doing this" without
    stale leftovers. Waits up to ``timeout`` seconds for another holder;
    LockError if it still holds the lock then.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise errors.LockError(
                        "%s is locked by another process" % path) from None
                time.sleep(_LOCK_RETRY_INTERVAL)
    except BaseException:
        os.close(fd)
        raise
