"""The two ends of the data in a transfer process (see ganeti.impexp and
ganeti.impexp.transfer): the Source an export reads (a file, a disk or a
command's output) and the Destination an import writes, keeping the holes
of regular files; and the removal of what a failed import created.
"""

import errno
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
from typing import IO, Any, Callable

from ganeti import errors, impexp, objects, pathutils, storage, vcluster
from ganeti.impexp import sparse
from ganeti.impexp.sparse import CHUNK_SIZE
from ganeti.storage import base as storage_base
from ganeti.utils import io

# Zero blocks of this size (at multiples of it) are left as holes
_SPARSE_BLOCK = 64 * 1024
_ZERO_BLOCK = bytes(_SPARSE_BLOCK)
_ZERO_CHUNK = memoryview(bytes(CHUNK_SIZE))


class TransferError(Exception):
    """A failure of the transfer; the message goes to the status."""


def _BackupPath(vpath: str) -> str:
    """The local path of an IEIO_FILE argument, which must lie below the
    backup directory, also after resolving symbolic links."""
    path = os.path.normpath(vcluster.LocalizeVirtualPath(vpath))
    if not io.IsBelowDir(os.path.realpath(pathutils.EXPORT_DIR),
                         os.path.realpath(path)):
        raise TransferError("Refusing file %s: not below the backup"
                            " directory %s" %
                            (vpath, vcluster.MakeVirtualPath(
                                pathutils.EXPORT_DIR)))
    return path


def _DiskPath(disk_dict: dict) -> str:
    """The device of a disk on this node (it assembles the disk)."""
    try:
        disk = objects.Disk.FromDict(dict(disk_dict))
        path = storage.Assemble(disk).dev_path
        assert path is not None, "an assembled disk has a path"
        return path
    except errors.GenericError as err:
        raise TransferError("Cannot open disk %s: %s" %
                            (disk_dict.get("iv_name") or
                             disk_dict.get("uuid"), err)) from err


def _StartCommand(args: dict, **kwargs: Any) -> subprocess.Popen:
    env = args.get("env")
    try:
        return subprocess.Popen(args["argv"], env=env, cwd="/",
                                close_fds=True, start_new_session=True,
                                **kwargs)
    except OSError as err:
        raise TransferError("Can't execute %s: %s" %
                            (args["argv"][0], err.strerror)) from err


def _CheckExecutable(args: dict) -> None:
    """Fail early (before the RPC answers) for a command that can't run."""
    program = args["argv"][0]
    path = program if "/" in program else shutil.which(
        program, path=(args.get("env") or os.environ).get("PATH"))
    if not path or not os.access(path, os.X_OK):
        raise TransferError("Command %s not found or not executable" %
                            program)


def _WaitCommand(proc: subprocess.Popen, argv: list[str],
                 timeout: float) -> None:
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _KillCommand(proc)
        raise TransferError("Command %s did not finish within %s seconds" %
                            (argv[0], timeout)) from None
    if code < 0:
        raise TransferError("Command %s was terminated by signal %d" %
                            (argv[0], -code))
    if code:
        raise TransferError("Command %s exited with exit code %d" %
                            (argv[0], code))


def _KillCommand(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class Source:
    """What an export reads: a file, a disk or a command's output.

    It is checked at once but opened by Start, once the destination is
    connected: opening a FIFO waits for its writer. The holes of a
    regular file are reported rather than read (see Next).
    """

    def __init__(self, kind: str, args: Any, timeout: float):
        self.kind = kind
        self._args = args
        self._timeout = timeout
        self._proc: subprocess.Popen | None = None
        self._fobj: IO[bytes] | None = None
        self._sparse: sparse.SparseReader | None = None
        self._path: str | None = None
        self.size: int | None = None
        if kind == impexp.IEIO_COMMAND:
            _CheckExecutable(args)
            return
        self._path = _BackupPath(args) if kind == impexp.IEIO_FILE \
            else _DiskPath(args)
        try:
            st = os.stat(self._path)
        except OSError as err:
            raise TransferError("Cannot open %s: %s" %
                                (args if kind == impexp.IEIO_FILE
                                 else self._path, err.strerror)) from err
        if stat.S_ISREG(st.st_mode):
            self.size = st.st_size
        elif stat.S_ISBLK(st.st_mode):
            self.size = storage_base.GetPathSize(self._path)

    def Start(self) -> None:
        """Open the source, once the destination is there to take it."""
        if self.kind == impexp.IEIO_COMMAND:
            self._proc = _StartCommand(self._args, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE)
            self._fobj = self._proc.stdout
            return
        assert self._path is not None, "set for files and disks"
        try:
            fobj = self._fobj = open(self._path, "rb", buffering=0)
        except OSError as err:
            raise TransferError("Cannot open %s: %s" %
                                (self._path, err.strerror)) from err
        if stat.S_ISREG(os.fstat(fobj.fileno()).st_mode):
            self._sparse = sparse.SparseReader(fobj.fileno())

    @property
    def _open_fobj(self) -> IO[bytes]:
        if self._fobj is None:
            raise TransferError("The source is not open")
        return self._fobj

    def Next(self, buf: memoryview) -> tuple[int, int]:
        """``(count, 0)``: ``count`` bytes read into ``buf``; ``(0,
        length)``: a hole of ``length`` bytes (a regular file's only);
        ``(0, 0)``: the end of the data."""
        if self._sparse is not None:
            return self._sparse.Next(buf)
        return self._ReadInto(buf), 0

    def _ReadInto(self, buf: memoryview) -> int:
        """Fill ``buf`` as far as possible; 0 at the end of the data."""
        total = 0
        while total < len(buf):
            # A FileIO or a pipe's BufferedReader; typing.IO lacks readinto
            count = self._open_fobj.readinto(  # type: ignore[attr-defined]
                buf[total:])
            if not count:
                break
            total += count
        return total

    def Finish(self) -> None:
        """All data read: a command must have succeeded."""
        self._open_fobj.close()
        if self._proc is not None:
            _WaitCommand(self._proc, self._args["argv"], self._timeout)
            self._proc = None

    def Discard(self) -> None:
        if self._proc is not None:
            _KillCommand(self._proc)
            self._proc = None
        if self._fobj is not None:
            self._fobj.close()


class Destination:
    """What an import writes: a new file, a disk or a command's input.

    ``created`` lists what was created here (removed again on failure);
    ``on_created`` is told about it, so that it can be removed even if
    this process is killed.
    """

    def __init__(self, kind: str, args: Any, timeout: float,
                 on_created: Callable[[list[str]], None]):
        self.kind = kind
        self._args = args
        self._timeout = timeout
        self._on_created = on_created
        self._proc: subprocess.Popen | None = None
        self._fd: int | None = None
        self._regular = False
        self._hole = (0, 0)
        self.capacity: int | None = None
        self.created: list[str] = []
        if kind == impexp.IEIO_COMMAND:
            _CheckExecutable(args)
        elif kind == impexp.IEIO_FILE:
            self._CreateFile(_BackupPath(args))
        else:
            path = _DiskPath(args)
            try:
                self._fd = os.open(path, os.O_WRONLY)
            except OSError as err:
                raise TransferError("Cannot open %s for writing: %s" %
                                    (path, err.strerror)) from err
            self.capacity = storage_base.GetPathSize(path)
            self._regular = os.path.isfile(path)

    def _CreateFile(self, path: str) -> None:
        missing = []
        parent = os.path.dirname(path)
        while not os.path.isdir(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        try:
            for directory in reversed(missing):
                os.mkdir(directory, 0o750)
                self._Created(directory)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                               0o600)
        except OSError as err:
            RemoveCreated(self.created)
            if isinstance(err, FileExistsError):
                raise TransferError("Refusing to overwrite the existing file"
                                    " %s" % self._args) from None
            raise TransferError("Cannot create %s: %s" %
                                (self._args, err.strerror)) from err
        self._Created(path)
        self._regular = True

    def _Created(self, path: str) -> None:
        self.created.append(path)
        self._on_created(self.created)

    def Start(self) -> None:
        """Start the command, once the source is there to feed it."""
        if self.kind == impexp.IEIO_COMMAND:
            proc = self._proc = _StartCommand(
                self._args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            assert proc.stdin is not None, "started with stdin=PIPE"
            self._fd = proc.stdin.fileno()

    @property
    def _open_fd(self) -> int:
        if self._fd is None:
            raise TransferError("The destination is not open")
        return self._fd

    def _CheckCapacity(self, end: int) -> None:
        if self.capacity is not None and end > self.capacity:
            raise TransferError("The source has more data than the"
                                " destination disk holds (%d bytes)" %
                                self.capacity)

    def Write(self, data: memoryview | bytes, offset: int) -> None:
        """Write ``data`` at ``offset`` (the bytes written so far)."""
        self._CheckCapacity(offset + len(data))
        view = memoryview(data)
        if self._proc is not None:
            while view:
                view = view[os.write(self._open_fd, view):]
        elif not self._regular:
            self._PWrite(view, offset)
        else:
            self._WriteSparse(view, offset)

    def Zero(self, offset: int, length: int) -> None:
        """Make ``length`` bytes at ``offset`` read as zeros (a hole of
        the source): in a regular file only its data there is
        overwritten, so holes stay holes."""
        self._CheckCapacity(offset + length)
        end = offset + length
        if not self._regular:
            while offset < end:
                count = min(CHUNK_SIZE, end - offset)
                self.Write(_ZERO_CHUNK[:count], offset)
                offset += count
            return
        while offset < end:
            try:
                data = os.lseek(self._open_fd, offset, os.SEEK_DATA)
            except OSError as err:
                if err.errno == errno.ENXIO:
                    return
                raise
            if data >= end:
                return
            hole = min(os.lseek(self._open_fd, data, os.SEEK_HOLE), end)
            while data < hole:
                count = min(CHUNK_SIZE, hole - data)
                self._PWrite(_ZERO_CHUNK[:count], data)
                data += count
            offset = hole

    def _PWrite(self, view: memoryview, offset: int) -> None:
        while view:
            written = os.pwrite(self._open_fd, view, offset)
            offset += written
            view = view[written:]

    def _WriteSparse(self, view: memoryview, offset: int) -> None:
        """Write, but skip zero blocks (aligned to the file's offsets)
        that fall into holes of the file: those read as zeros already."""
        pending = pos = 0
        while pos < len(view):
            end = min(len(view),
                      pos + _SPARSE_BLOCK - (offset + pos) % _SPARSE_BLOCK)
            # Looking at both ends first keeps random data cheap
            if view[pos] == 0 and view[end - 1] == 0 and \
                    bytes(view[pos:end]) == _ZERO_BLOCK[:end - pos] and \
                    self._IsHole(offset + pos, end - pos):
                self._PWrite(view[pending:pos], offset + pending)
                pending = end
            pos = end
        self._PWrite(view[pending:], offset + pending)

    def _IsHole(self, offset: int, length: int) -> bool:
        """Whether a region of the file has no data (reads as zeros).

        Writes only go forward, so the hole found last stays one.
        """
        start, end = self._hole
        if not start <= offset < end:
            try:
                end = os.lseek(self._open_fd, offset, os.SEEK_DATA)
            except OSError as err:
                # ENXIO: no data from offset on; anything else: don't know
                end = sys.maxsize if err.errno == errno.ENXIO else offset
            self._hole = (offset, end)
        return offset + length <= end

    def Finish(self, size: int) -> None:
        """All data written: make it durable (and the file complete)."""
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._fd = None
            _WaitCommand(self._proc, self._args["argv"], self._timeout)
            self._proc = None
            return
        fd = self._open_fd
        if self._regular and os.fstat(fd).st_size < size:
            # Trailing zeros were skipped
            os.ftruncate(fd, size)
        os.fsync(fd)
        os.close(fd)
        self._fd = None

    def Discard(self) -> None:
        """Undo what was created; a disk stays (it is its owner's)."""
        if self._proc is not None:
            _KillCommand(self._proc)
            self._proc = None
        elif self._fd is not None:
            os.close(self._fd)
        self._fd = None
        RemoveCreated(self.created)
        self.created = []


def RemoveCreated(paths: list[str]) -> None:
    """Remove files and directories, newest first; a directory that
    others filled meanwhile stays."""
    for path in reversed(paths):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)
            else:
                os.unlink(path)
        except OSError as err:
            if err.errno not in (errno.ENOENT, errno.ENOTEMPTY):
                logging.warning("Cannot remove %s: %s", path, err.strerror)
