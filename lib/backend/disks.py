"""Instance storage (see ganeti.storage): disk devices, the mirrored
``drbd`` disks, storage units and file storage directories.
"""

import logging
import os
from typing import Any, Callable

from ganeti import constants, errors, objects, vcluster
from ganeti import storage
from ganeti.storage import extstorage, filestorage
from ganeti.backend.common import Fail


def _DiskFromDict(data: Any) -> objects.Disk:
    """A disk sent by the master."""
    if not isinstance(data, dict):
        Fail("Invalid disk %r, expected a dictionary", data)
    try:
        return objects.Disk.FromDict(dict(data))
    except errors.ConfigurationError as err:
        Fail("Invalid disk: %s", err)


def _DisksFromList(disks: Any) -> list[objects.Disk]:
    """The disks of a call taking a list of them."""
    if not isinstance(disks, list):
        Fail("Invalid disks %r, expected a list", disks)
    return [_DiskFromDict(data) for data in disks]


def _CheckFlag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        Fail("Invalid %s %r, expected true or false", name, value)
    return value


def blockdev_create(bdev: dict, size: int, owner: str, on_primary: bool,
                    info: str, excl_stor: bool) -> list:
    """Create a disk's storage of ``size`` MiB for instance ``owner``.

    On the primary node the new device is also assembled, as the OS
    scripts come next; ``info`` is stored as the device's metadata.
    """
    disk = _DiskFromDict(bdev)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        Fail("Invalid disk size %r, expected MiB", size)
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
        Fail("Invalid instance %r, expected a dictionary with a name",
              instance)
    if isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
        Fail("Invalid disk index %r", idx)
    try:
        if not _CheckFlag(on_primary, "on_primary"):
            storage.GetDevice(cf).AssembleSecondary()
            return None
        dev = storage.Assemble(cf)
    except errors.BlockDeviceError as err:
        Fail("Cannot assemble disk/%d of instance %s: %s", idx, name, err)
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
            Fail("Cannot get the status of disk %s: %s",
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
        Fail("Cannot find disk %s: %s", cf.iv_name or cf.uuid, err)
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
            Fail("Cannot get the status of disk %s: %s",
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
        Fail("Invalid disk metadata %r, expected a string", info)
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
            Fail("Cannot find disk %s: %s", disk.iv_name or disk.uuid, err)
        if not found or not dev.dev_path:
            Fail("Cannot copy %s disk %s: device not found",
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
        Fail("Copying %s to %s failed: %s", paths[0], paths[1], err)


def _Drbd(disk: objects.Disk) -> Any:
    """The drbd device of a disk sent by the master."""
    if disk.dev_type != constants.DT_DRBD8:
        Fail("Disk %s is not a drbd disk", disk.iv_name or disk.uuid)
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
            Fail("Cannot %s: %s", what % dev.uuid, err)
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


def extstorage_diagnose() -> list[list]:
    """The ExtStorage providers of this node (storage.extstorage), their
    paths as virtual paths."""
    return [[name, vcluster.MakeVirtualPath(path), *rest]
            for name, path, *rest in extstorage.Diagnose()]


def storage_list(su_name: str, su_args: list, name: str | None,
                 fields: list[str]) -> list[list]:
    """Rows of the requested fields for the storage units (file storage)."""
    if not isinstance(fields, list) or \
            not all(isinstance(field, str) for field in fields):
        Fail("Invalid storage fields %r, expected a list of names", fields)
    if name is not None and not isinstance(name, str):
        Fail("Invalid storage unit name %r", name)
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
        Fail("Invalid file disk template %r", template)
    try:
        old = filestorage.CheckFileStoragePath(old_file_storage_dir,
                                               template)
        new = filestorage.CheckFileStoragePath(new_file_storage_dir,
                                               template)
    except errors.FileStoragePathError as err:
        Fail("%s", err)
    if os.path.dirname(old) != os.path.dirname(new) or old == new:
        Fail("Cannot rename '%s' to '%s': only the last path component"
              " may change", old_file_storage_dir, new_file_storage_dir)
    if os.path.lexists(new):
        if os.path.lexists(old):
            Fail("Cannot rename '%s' to '%s': both locations exist",
                  old_file_storage_dir, new_file_storage_dir)
        return
    if os.path.islink(old) or not os.path.isdir(old):
        Fail("Specified storage dir '%s' is not a directory",
              old_file_storage_dir)
    try:
        os.rename(old, new)
    except OSError as err:
        Fail("Cannot rename '%s' to '%s': %s", old_file_storage_dir,
              new_file_storage_dir, err.strerror)
    logging.info("Renamed file storage directory %s to %s",
                 old_file_storage_dir, new_file_storage_dir)
