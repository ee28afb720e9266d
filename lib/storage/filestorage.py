"""Disk templates ``file`` and ``sharedfile``: disks as image files.

A file disk's logical_id is ``[driver, path]`` with ``path`` a virtual
path (see vcluster) below the cluster's file storage directory (ssconf
``file_storage_dir``) or shared file storage directory (ssconf
``shared_file_storage_dir``). Every node refuses a path that is not also
at or below an entry of its allow-list, pathutils.FILE_STORAGE_PATHS_FILE
(Ganeti's ``file-storage-paths``: one absolute path per line, ``#``
comments), so the holder of the cluster certificate can't make noded
create or delete files elsewhere.

Virtual clusters: ``file`` paths are localized below the node's root like
every other path. ``sharedfile`` paths name a directory every node sees,
so they are localized below the directory holding all node roots (the
virtual cluster's base directory) instead: with node roots
``/tmp/c/node1`` and ``/tmp/c/node2``, ``/srv/ganeti/shared-file-storage``
is ``/tmp/c/srv/ganeti/shared-file-storage`` for both nodes. On a real
node both are the path itself.
"""

import errno
import logging
import math
import os

from ganeti import constants, errors, pathutils, ssconf, vcluster
from ganeti.storage import base
from ganeti.utils import io

_MIB = 1024 * 1024
_DIR_MODE = 0o750
_FILE_MODE = 0o600

# Allow-list entries containing one of these can't be used: a file
# storage directory must never hold the system's own files
_FORBIDDEN_PATHS = frozenset([
    "/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/root",
    "/run", "/sbin", "/sys", "/usr", "/usr/bin", "/usr/lib", "/usr/sbin",
    "/usr/local", "/var", "/var/lib", "/var/run", "/var/log",
])


def LocalizeStoragePath(vpath: str, template: str) -> str:
    """The local path of a virtual file storage path (see module doc)."""
    root = vcluster.GetRootDirectory()
    if template == constants.DT_SHARED_FILE and root:
        return os.path.dirname(root) + os.path.normpath(vpath)
    return vcluster.LocalizeVirtualPath(os.path.normpath(vpath))


def ComputeWrongFileStoragePaths(paths: list[str]) -> list[str]:
    """The entries that may not be file storage paths.

    Relative paths and paths at or above a system directory are wrong.
    """
    return sorted(path for path in paths
                  if not os.path.isabs(path) or
                  any(os.path.normpath(path) == forbidden or
                      io.IsBelowDir(path, forbidden)
                      for forbidden in _FORBIDDEN_PATHS))


def LoadAllowedFileStoragePaths(filename: str) -> list[str]:
    """The usable (virtual) paths of an allow-list file; [] without it."""
    try:
        text = io.ReadFile(filename)
    except FileNotFoundError:
        return []
    entries = [line.strip() for line in text.splitlines()]
    entries = [os.path.normpath(line) if os.path.isabs(line) else line
               for line in entries if line and not line.startswith("#")]
    wrong = ComputeWrongFileStoragePaths(entries)
    if wrong:
        logging.warning("Ignoring unusable file storage paths in %s: %s",
                        filename, ", ".join(wrong))
    return [path for path in entries if path not in wrong]


def CheckFileStoragePathAcceptance(vpath: str,
                                   exact_match_ok: bool = False) -> None:
    """Refuse a (virtual) path not below an entry of the allow-list.

    Raises errors.FileStoragePathError naming the path.
    """
    filename = pathutils.FILE_STORAGE_PATHS_FILE
    allowed = LoadAllowedFileStoragePaths(filename)
    if not allowed:
        raise errors.FileStoragePathError(
            "No paths are valid or path file '%s' does not exist" %
            vcluster.MakeVirtualPath(filename))
    vpath = os.path.normpath(vpath)
    for entry in allowed:
        if io.IsBelowDir(entry, vpath) or (exact_match_ok and entry == vpath):
            return
    raise errors.FileStoragePathError(
        "Path '%s' is not acceptable for file storage (allowed: %s)" %
        (vpath, ", ".join(allowed)))


def GetClusterStorageDir(template: str) -> str:
    """The cluster's (virtual) storage directory of a file template."""
    store = ssconf.SimpleStore(pathutils.DATA_DIR)
    try:
        if template == constants.DT_SHARED_FILE:
            path = store.GetSharedFileStorageDir()
        else:
            path = store.GetFileStorageDir()
    except errors.ConfigurationError as err:
        raise errors.FileStoragePathError(
            "The %s storage directory of the cluster is unknown on this"
            " node: %s" % (template, err)) from None
    if not path or not os.path.isabs(path):
        raise errors.FileStoragePathError(
            "The cluster has no valid %s storage directory (%r)" %
            (template, path))
    return os.path.normpath(path)


def CheckFileStoragePath(vpath: str, template: str) -> str:
    """Check a file disk's (virtual) path and return its local path.

    The path must be below the cluster's storage directory of the template
    and acceptable to the allow-list, and symbolic links must not lead
    out of the storage directory.
    """
    if not isinstance(vpath, str) or not os.path.isabs(vpath) or \
            "\0" in vpath:
        raise errors.FileStoragePathError("Invalid file storage path %r,"
                                          " expected an absolute path" %
                                          (vpath,))
    storage_dir = GetClusterStorageDir(template)
    if not io.IsBelowDir(storage_dir, vpath):
        raise errors.FileStoragePathError(
            "Path '%s' is not below the cluster's %s storage directory"
            " '%s'" % (vpath, template, storage_dir))
    CheckFileStoragePathAcceptance(vpath)
    path = LocalizeStoragePath(vpath, template)
    local_dir = LocalizeStoragePath(storage_dir, template)
    # Only what exists inside the storage directory can be a link out of it
    parent = os.path.dirname(path)
    while not os.path.lexists(parent) and io.IsBelowDir(local_dir, parent):
        parent = os.path.dirname(parent)
    if not io.IsBelowDir(local_dir, parent) or not os.path.exists(local_dir):
        return path
    real_dir = os.path.realpath(local_dir)
    real_parent = os.path.realpath(parent)
    if real_parent != real_dir and not io.IsBelowDir(real_dir, real_parent):
        raise errors.FileStoragePathError(
            "Path '%s' leads out of the %s storage directory '%s' through"
            " a symbolic link" % (vpath, template, storage_dir))
    return path


def BytesToMebibyte(value: int) -> int:
    """Bytes as MiB, rounded up (a partly used MiB counts as used)."""
    return int(math.ceil(value / _MIB))


def CalculateDirectorySize(path: str) -> int:
    """Apparent size (MiB) of the files below ``path``, as Ganeti counts."""
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                continue
    return BytesToMebibyte(total)


def GetFilesystemStats(path: str) -> tuple[int, int]:
    """Total and free space (MiB) of the file system holding ``path``."""
    st = os.statvfs(path)
    return (st.f_blocks * st.f_frsize // _MIB,
            st.f_bavail * st.f_frsize // _MIB)


class FileStorage(base.BlockDev):
    """A disk kept as a (sparse) image file; ``dev_path`` is the file."""

    TEMPLATE = constants.DT_FILE

    def __init__(self, unique_id, children, size, params, dyn_params,
                 name=None, uuid=None):
        super().__init__(unique_id, children, size, params, dyn_params,
                         name=name, uuid=uuid)
        driver, self.vpath = self.unique_id
        if driver not in constants.FILE_DRIVER:
            base.ThrowError("Invalid file driver %r of %s, expected one of"
                            " %s", driver, self.vpath,
                            ", ".join(sorted(constants.FILE_DRIVER)))
        self.driver = driver
        try:
            self.path = CheckFileStoragePath(self.vpath, self.TEMPLATE)
        except errors.FileStoragePathError as err:
            base.ThrowError("%s", err)

    @classmethod
    def Create(cls, unique_id, children, size, spindles, params, excl_stor,
               dyn_params, name=None, uuid=None) -> "FileStorage":
        """Create the image file (sparse, ``size`` MiB) and its directory.

        An existing file is never overwritten.
        """
        if excl_stor:
            base.ThrowError("Exclusive storage is not supported by the %s"
                            " template", cls.TEMPLATE)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            base.ThrowError("Invalid size %r, expected MiB", size)
        dev = cls(unique_id, children, size, params, dyn_params, name=name,
                  uuid=uuid)
        os.makedirs(os.path.dirname(dev.path), mode=_DIR_MODE,
                    exist_ok=True)
        try:
            fd = os.open(dev.path, os.O_RDWR | os.O_CREAT | os.O_EXCL,
                         _FILE_MODE)
        except FileExistsError:
            base.ThrowError("File already existing: %s", dev.vpath)
        except OSError as err:
            base.ThrowError("Cannot create %s: %s", dev.vpath, err.strerror)
        try:
            os.ftruncate(fd, size * _MIB)
        except OSError as err:
            os.close(fd)
            io.RemoveFile(dev.path)
            base.ThrowError("Cannot make %s %d MiB big: %s", dev.vpath, size,
                            err.strerror)
        os.close(fd)
        dev.Attach()
        return dev

    def Remove(self) -> None:
        """Delete the file, then its directories left empty.

        Directories are removed up to, not including, the cluster's
        storage directory, so a failed instance creation leaves nothing.
        """
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError as err:
            base.ThrowError("Cannot remove file '%s': %s", self.vpath,
                            err.strerror)
        self.dev_path = None
        self.attached = False
        local_dir = LocalizeStoragePath(
            GetClusterStorageDir(self.TEMPLATE), self.TEMPLATE)
        parent = os.path.dirname(self.path)
        while io.IsBelowDir(local_dir, parent):
            try:
                os.rmdir(parent)
            except OSError as err:
                if err.errno not in (errno.ENOTEMPTY, errno.EEXIST,
                                     errno.ENOENT):
                    logging.warning("Cannot remove directory %s: %s", parent,
                                    err.strerror)
                break
            parent = os.path.dirname(parent)

    def Attach(self) -> bool:
        """A file disk is usable when its file exists."""
        self.attached = os.path.isfile(self.path)
        self.dev_path = self.path if self.attached else None
        return self.attached

    def Assemble(self) -> None:
        if not self.Attach():
            base.ThrowError("File device '%s' does not exist", self.vpath)

    def Grow(self, amount, dryrun, backingstore, excl_stor) -> None:
        """Make the file ``amount`` MiB longer (sparse)."""
        amount = base.CheckGrowAmount(amount, self.vpath)
        if not self.Attach():
            base.ThrowError("File device '%s' does not exist", self.vpath)
        if dryrun or not backingstore:
            return
        current = base.GetPathSize(self.path)
        try:
            os.truncate(self.path, current + amount * _MIB)
        except OSError as err:
            base.ThrowError("Cannot grow %s by %d MiB: %s", self.vpath,
                            amount, err.strerror)
        self.size = (current + amount * _MIB) // _MIB


class SharedFileStorage(FileStorage):
    """A file disk in the directory every node sees (``sharedfile``)."""

    TEMPLATE = constants.DT_SHARED_FILE


class FileStorageUnit:
    """A file storage directory as a storage unit (gnt-node list-storage)."""

    def __init__(self, vpath: str, template: str):
        if not isinstance(vpath, str) or not os.path.isabs(vpath):
            raise errors.StorageError("Invalid storage directory %r" %
                                      (vpath,))
        self.vpath = os.path.normpath(vpath)
        CheckFileStoragePathAcceptance(self.vpath, exact_match_ok=True)
        self.path = LocalizeStoragePath(self.vpath, template)

    def List(self, name: str | None, fields: list[str]) -> list[list]:
        """One row (the directory) with the requested fields.

        ``name`` filters by unit name (the directory); sizes are MiB.
        """
        unknown = [field for field in fields
                   if field not in constants.VALID_STORAGE_FIELDS]
        if unknown:
            raise errors.StorageError("Unknown storage field(s): %s" %
                                      ", ".join(map(repr, unknown)))
        if name is not None and os.path.normpath(name) != self.vpath:
            return []
        if not os.path.isdir(self.path):
            raise errors.StorageError("File storage directory %s does not"
                                      " exist" % self.vpath)
        used = None
        if constants.SF_USED in fields:
            used = CalculateDirectorySize(self.path)
        size = free = None
        if constants.SF_SIZE in fields or constants.SF_FREE in fields:
            size, free = GetFilesystemStats(self.path)
        values = {constants.SF_NAME: self.vpath, constants.SF_USED: used,
                  constants.SF_SIZE: size, constants.SF_FREE: free,
                  constants.SF_ALLOCATABLE: True}
        return [[values[field] for field in fields]]
