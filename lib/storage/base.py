"""The block device abstraction noded uses for every disk template.

A BlockDev is one disk as one node sees it, built from the disk's
``logical_id`` (its ``unique_id`` here), size (MiB) and parameters. The
life cycle is Ganeti's: ``Create`` makes the storage, ``Assemble`` makes it
usable and sets ``dev_path`` (what the hypervisor opens), ``Shutdown``
undoes ``Assemble``, ``Remove`` destroys the storage. ``Attach`` only looks
whether the device is usable already. Failures raise
errors.BlockDeviceError with a message naming the device.
"""

import abc
import logging
import os
import stat
from typing import Any, NoReturn

from ganeti import constants, errors

_MIB = 1024 * 1024


def ThrowError(msg: str, *args: Any) -> NoReturn:
    """Log and raise a BlockDeviceError (the message reaches the user)."""
    if args:
        msg = msg % args
    logging.error("%s", msg)
    raise errors.BlockDeviceError(msg)


def CheckGrowAmount(amount: Any, what: str) -> int:
    """The grow amount (MiB) as an int; growing never shrinks a disk."""
    if isinstance(amount, bool) or not isinstance(amount, int):
        ThrowError("Invalid grow amount %r for %s, expected MiB as an"
                   " integer", amount, what)
    if amount < 0:
        ThrowError("Cannot shrink %s: the grow amount %d MiB is negative",
                   what, amount)
    return amount


def GetPathSize(path: str) -> int:
    """Size in bytes of a regular file or a block device."""
    try:
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):
            return st.st_size
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.lseek(fd, 0, os.SEEK_END)
        finally:
            os.close(fd)
    except OSError as err:
        ThrowError("Cannot get the size of %s: %s", path, err.strerror)


class BlockDev(abc.ABC):
    """One disk on this node; subclasses implement one storage type.

    ``children`` are the BlockDevs of the disk's child disks (none for the
    templates implemented here); ``name`` and ``uuid`` are the disk's,
    passed on to external storage providers.
    """

    def __init__(self, unique_id: Any, children: list["BlockDev"],
                 size: int, params: dict | None, dyn_params: dict | None,
                 name: str | None = None, uuid: str | None = None):
        if not isinstance(unique_id, (list, tuple)) or len(unique_id) != 2:
            ThrowError("Invalid logical id %r of %s, expected two elements",
                       unique_id, self.__class__.__name__)
        self.unique_id = tuple(unique_id)
        self._children = children or []
        self.size = size
        self.params = dict(params or {})
        self.dyn_params = dict(dyn_params or {})
        self.name = name
        self.uuid = uuid
        self.dev_path: str | None = None
        self.attached = False

    def __repr__(self) -> str:
        return "<%s %s, dev_path=%s>" % (self.__class__.__name__,
                                         list(self.unique_id), self.dev_path)

    @classmethod
    @abc.abstractmethod
    def Create(cls, unique_id: Any, children: list["BlockDev"], size: int,
               spindles: int | None, params: dict | None, excl_stor: bool,
               dyn_params: dict | None, name: str | None = None,
               uuid: str | None = None) -> "BlockDev":
        """Create the storage of a new disk and return its device."""

    @abc.abstractmethod
    def Remove(self) -> None:
        """Destroy the storage; a device that is already gone is fine."""

    @abc.abstractmethod
    def Attach(self) -> bool:
        """Whether the device is usable now; sets ``dev_path`` if so."""

    def Assemble(self) -> None:
        """Make the device usable (``dev_path`` set) or fail."""
        if not self.Attach():
            ThrowError("Cannot assemble %r: the device is not available",
                       self)

    def GetSyncStatus(self) -> tuple[float | None, float | None, bool, int]:
        """``(sync_percent, estimated_time, is_degraded, ldisk_status)``.

        Only mirrored templates sync; the others are never degraded.
        """
        return None, None, False, constants.LDS_OKAY

    def Find(self) -> str | None:
        """The path of this node's active side, None when not active."""
        return self.dev_path if self.Attach() else None

    def AssembleSecondary(self) -> None:
        """Take the secondary role of a mirrored disk (others: nothing)."""

    def Shutdown(self) -> None:
        """Make the device unused again (the data stays)."""

    def Grow(self, amount: int, dryrun: bool, backingstore: bool,
             excl_stor: bool) -> None:
        """Grow by ``amount`` MiB; ``dryrun`` only checks.

        ``backingstore`` is false for the pass that resizes only the upper
        layers of stacked devices, which these templates do not have.
        """
        ThrowError("Growing is not supported for %s devices",
                   self.__class__.__name__)

    def NeedsActivation(self) -> bool:
        """Whether this node's side needs activate-disks; only mirrored
        devices have a side that drops out while the instance runs."""
        return False

    def GetActualSize(self) -> int:
        """The size in bytes, as the storage reports it."""
        if not self.Attach():
            ThrowError("Cannot get the size of %r: the device is not"
                       " available", self)
        assert self.dev_path is not None, "attached without a path"
        return GetPathSize(self.dev_path)

    def GetActualDimensions(self) -> tuple[int, int | None]:
        """Size in bytes and spindles (None: not counted by this storage)."""
        return self.GetActualSize(), None

    def SetInfo(self, text: str) -> None:
        """Store metadata (the owner instance) with the device, if possible."""

    def GetUserspaceAccessUri(self, hypervisor: str) -> str | None:
        """A URI for user-space access (qemu), if the storage has one."""
        return None
