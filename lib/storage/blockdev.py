"""Disk template ``blockdev``: adopted, existing block devices.

A blockdev disk's logical_id is ``["manual", path]``. Ganeti never creates
or destroys these devices, it only uses them, and only devices the cluster
allows: the path must match one of the shell patterns in the cluster-wide
allow-list pathutils.BLOCKDEV_PATHS_FILE (one per line, ``#`` comments,
distributed like file-storage-paths), or constants.ADOPTABLE_BLOCKDEV_PATTERNS
(``/dev/disk/*`` and ``/dev/loop*``) if there is no such file. Device paths
are the host's, also on a virtual cluster (devices are not per node root).
"""

import fnmatch
import os
import stat

from ganeti import constants, errors, pathutils
from ganeti.storage import base
from ganeti.utils import io


def GetAdoptablePatterns() -> list[str]:
    """The allowed device patterns: the allow-list file's or the defaults."""
    try:
        text = io.ReadFile(pathutils.BLOCKDEV_PATHS_FILE)
    except FileNotFoundError:
        return list(constants.ADOPTABLE_BLOCKDEV_PATTERNS)
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def CheckAdoptablePath(path: str) -> None:
    """Refuse a device path the cluster does not allow to adopt.

    Used by the master before adopting and by each node before touching
    the device. Raises OpPrereqError naming the path.
    """
    if not isinstance(path, str) or not os.path.isabs(path) or \
            os.path.normpath(path) != path or "\0" in path:
        raise errors.OpPrereqError("Invalid block device path %r, expected"
                                   " a normalized absolute path" % (path,),
                                   errors.ECODE_INVAL)
    patterns = GetAdoptablePatterns()
    if not any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns):
        raise errors.OpPrereqError(
            "Device %s lies outside the adoptable block device paths (%s)"
            " and cannot be adopted" % (path, ", ".join(patterns) or "none"),
            errors.ECODE_INVAL)
    real = os.path.realpath(path)
    if not io.IsBelowDir("/dev", real):
        raise errors.OpPrereqError("Full path '%s' of %s lies outside /dev" %
                                   (real, path), errors.ECODE_INVAL)


class PersistentBlockDevice(base.BlockDev):
    """An adopted block device; removing the disk leaves the device alone."""

    def __init__(self, unique_id, children, size, params, dyn_params,
                 name=None, uuid=None):
        super().__init__(unique_id, children, size, params, dyn_params,
                         name=name, uuid=uuid)
        driver, path = self.unique_id
        if driver != constants.BLOCKDEV_DRIVER_MANUAL:
            base.ThrowError("Invalid block device driver %r of %s, expected"
                            " %r", driver, path,
                            constants.BLOCKDEV_DRIVER_MANUAL)
        try:
            CheckAdoptablePath(path)
        except errors.OpPrereqError as err:
            base.ThrowError("%s", err.args[0])
        self.path = path

    @classmethod
    def Create(cls, unique_id, children, size, spindles, params, excl_stor,
               dyn_params, name=None, uuid=None) -> "PersistentBlockDevice":
        """Adopt the device: it must exist and be a block device."""
        if excl_stor:
            base.ThrowError("Exclusive storage is not supported by the %s"
                            " template", constants.DT_BLOCK)
        dev = cls(unique_id, children, size, params, dyn_params, name=name,
                  uuid=uuid)
        dev.Assemble()
        return dev

    def Remove(self) -> None:
        """The device belongs to the administrator; only forget it."""
        self.dev_path = None
        self.attached = False

    def Attach(self) -> bool:
        """Usable if the path exists and is a block device."""
        try:
            mode = os.stat(self.path).st_mode
        except OSError:
            mode = 0
        self.attached = stat.S_ISBLK(mode)
        self.dev_path = self.path if self.attached else None
        return self.attached

    def Assemble(self) -> None:
        if not self.Attach():
            base.ThrowError("Cannot find block device %s (missing or not a"
                            " block device)", self.path)

    def Grow(self, amount, dryrun, backingstore, excl_stor) -> None:
        base.CheckGrowAmount(amount, self.path)
        base.ThrowError("Grow is not supported for adopted block devices"
                        " (%s)", self.path)
