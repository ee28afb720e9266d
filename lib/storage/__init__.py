"""Instance storage on the nodes: one BlockDev class per disk template.

The node daemon goes through the functions here (Ganeti's bdev entry
points), which pick the class from the disk's ``dev_type``:

* ``Create(disk, excl_stor)``: create the storage of a new disk;
* ``GetDevice(disk)``: the device of an existing disk (not assembled);
* ``Assemble(disk)``: the device, made usable (``dev_path`` set);
* ``GetStorageUnit(su_name, su_args)``: a storage unit to list.

``drbd`` is built from QEMU's block layer (see storage.drbd); ``plain``
(no LVM on these nodes) is refused with BlockDeviceError.
"""

from ganeti import constants, errors, objects
from ganeti.storage import base, blockdev, drbd, extstorage, filestorage

DEV_MAP: dict[str, type[base.BlockDev]] = {
    constants.DT_FILE: filestorage.FileStorage,
    constants.DT_SHARED_FILE: filestorage.SharedFileStorage,
    constants.DT_BLOCK: blockdev.PersistentBlockDevice,
    constants.DT_EXT: extstorage.ExtStorageDevice,
    constants.DT_DRBD8: drbd.DRBD8Dev,
}


def _DeviceClass(disk: objects.Disk) -> type[base.BlockDev]:
    cls = DEV_MAP.get(disk.dev_type)
    if cls is None:
        base.ThrowError("Disk type %r of disk %s is not supported on this"
                        " node (supported: %s)", disk.dev_type,
                        disk.iv_name or disk.uuid,
                        ", ".join(sorted(DEV_MAP)))
    if disk.children:
        base.ThrowError("Disk %s of type %s can't have child disks",
                        disk.iv_name or disk.uuid, disk.dev_type)
    return cls


def GetDevice(disk: objects.Disk) -> base.BlockDev:
    """The device of an existing disk, without attaching it."""
    cls = _DeviceClass(disk)
    return cls(disk.logical_id, [], disk.size, disk.params,
               disk.dynamic_params, name=disk.name, uuid=disk.uuid)


def Assemble(disk: objects.Disk) -> base.BlockDev:
    """The device of a disk, made usable."""
    dev = GetDevice(disk)
    dev.Assemble()
    return dev


def Create(disk: objects.Disk, excl_stor: bool) -> base.BlockDev:
    """Create the storage of a new disk and return its device."""
    cls = _DeviceClass(disk)
    return cls.Create(disk.logical_id, [], disk.size, disk.spindles,
                      disk.params, excl_stor, disk.dynamic_params,
                      name=disk.name, uuid=disk.uuid)


_STORAGE_UNITS = {
    constants.ST_FILE: constants.DT_FILE,
    constants.ST_SHARED_FILE: constants.DT_SHARED_FILE,
}


def GetStorageUnit(su_name: str,
                   su_args: list) -> filestorage.FileStorageUnit:
    """A storage unit of a type that can be listed (file storage).

    ``su_args`` is ``[directory]`` (a virtual path) for file storage.
    """
    template = _STORAGE_UNITS.get(su_name)
    if template is None:
        raise errors.StorageError("Storage units of type %r can't be listed"
                                  " (supported: %s)" %
                                  (su_name, ", ".join(sorted(_STORAGE_UNITS))))
    if not isinstance(su_args, (list, tuple)) or len(su_args) != 1:
        raise errors.StorageError("Storage units of type %s need one"
                                  " argument, the directory, not %r" %
                                  (su_name, su_args))
    try:
        return filestorage.FileStorageUnit(su_args[0], template)
    except errors.FileStoragePathError as err:
        raise errors.StorageError(str(err)) from None
