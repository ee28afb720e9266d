"""What the writes of instances and their disks change.

Each function computes, from a snapshot and the write's time, the
``(changes, new cluster or None)`` of one ConfigWriter write (see
ConfigWriter._Modify): the instance, its disks and the pools they use
change together, so that no reader sees one without the others.
"""

import os
from typing import Any

from ganeti import constants, errors
from ganeti.config import pools
from ganeti.config.snapshot import Snapshot, Stamp
from ganeti.objects import Cluster, Disk, Instance

Changes = tuple[dict[str, dict[str, Any]], Cluster | None]


def _GetInstance(snap: Snapshot, inst_uuid: str) -> Instance:
    inst = snap.data.instances.get(inst_uuid)
    if inst is None:
        raise errors.ConfigurationError("Unknown instance %s" % inst_uuid)
    return inst


def _RenumberedDisks(snap: Snapshot, disk_uuids: list[str], start: int,
                     now: float, changes: dict[str, Any]) -> None:
    """Give disks from ``start`` on the iv_name matching their index."""
    for idx in range(start, len(disk_uuids)):
        uuid = disk_uuids[idx]
        disk = changes.get(uuid) or snap.data.disks[uuid]
        iv_name = "disk/%d" % idx
        if disk.iv_name != iv_name:
            if uuid not in changes:
                disk = disk.Copy()
                Stamp(disk, now, new=False)
            disk.iv_name = iv_name
            changes[uuid] = disk


def Added(snap: Snapshot, now: float, new_inst: Instance,
          new_disks: list[Disk]) -> Changes:
    """Add ``new_inst`` with its ``new_disks`` (copies, completed here:
    UUIDs, stamps, the instance's disk list, the disks' iv_names)."""
    for obj in [new_inst] + new_disks:
        if obj.uuid is None:
            obj.uuid = snap.UnusedUUID()
    if not new_inst.disks:
        new_inst.disks = [disk.uuid for disk in new_disks]
    if new_inst.uuid in snap.data.instances:
        raise errors.ConfigurationError("%s already exists" %
                                        new_inst.Describe())
    # Creations need not hold the BGL (opportunistic locking): the name
    # and MACs are checked again against this snapshot
    new_macs = {nic.mac for nic in new_inst.nics or ()}
    for other in snap.data.instances.values():
        if other.name == new_inst.name:
            raise errors.ConfigurationError(
                "Instance name %s is already in use" % other.name)
        taken = new_macs & {nic.mac for nic in other.nics or ()}
        if taken:
            raise errors.ConfigurationError(
                "MAC address %s is already in use by instance %s" %
                (", ".join(sorted(taken)), other.name))
    added = {}
    for disk in new_disks:
        if disk.uuid in snap.data.disks or disk.uuid in added:
            raise errors.ConfigurationError("Disk %s already exists" %
                                            disk.uuid)
        if disk.uuid not in new_inst.disks:
            raise errors.ConfigurationError(
                "Disk %s is not used by %s" %
                (disk.uuid, new_inst.Describe()))
        disk.UpgradeConfig()
        Stamp(disk, now, new=True)
        added[disk.uuid] = disk
    new_inst.UpgradeConfig()
    Stamp(new_inst, now, new=True)
    _RenumberedDisks(snap, new_inst.disks, 0, now, added)
    changes: dict[str, dict[str, Any]] = {
        "instances": {new_inst.uuid: new_inst}, "disks": added}
    changes.update(pools.PoolChanges(snap, None, new_inst, now))
    return changes, None


def Removed(snap: Snapshot, now: float, inst_uuid: str) -> Changes:
    """Remove an instance and its disks, giving back its network port,
    its drbd disks' ports and its NICs' addresses."""
    inst = _GetInstance(snap, inst_uuid)
    changes: dict[str, dict[str, Any]] = {
        "instances": {inst_uuid: None},
        "disks": {uuid: None for uuid in inst.disks}}
    changes.update(pools.PoolChanges(snap, inst, None, now))
    # drbd disks give their port back too (logical id's third)
    ports = {snap.data.disks[uuid].logical_id[2] for uuid in inst.disks
             if snap.data.disks[uuid].dev_type == constants.DT_DRBD8}
    if inst.network_port is not None:
        ports.add(inst.network_port)
    if not ports:
        return changes, None
    return changes, pools.ReturnPorts(snap, ports, now)


def Renamed(snap: Snapshot, now: float, inst_uuid: str,
            new_name: str) -> Changes:
    """Rename an instance; its file disks' paths move to the new name's
    directory (``<storage dir>/<instance>/<file>``)."""
    inst = _GetInstance(snap, inst_uuid)
    new_inst = inst.Copy()
    new_inst.name = new_name
    Stamp(new_inst, now, new=False)
    disk_changes = {}
    for disk_uuid in inst.disks:
        disk = snap.data.disks[disk_uuid]
        if disk.dev_type not in constants.DTS_FILEBASED:
            continue
        disk = disk.Copy()
        driver, path = disk.logical_id
        disk.logical_id = [driver, os.path.join(
            os.path.dirname(os.path.dirname(path)), new_name,
            os.path.basename(path))]
        Stamp(disk, now, new=False)
        disk_changes[disk_uuid] = disk
    return {"instances": {inst_uuid: new_inst},
            "disks": disk_changes}, None


def PrimaryNodeSet(snap: Snapshot, now: float, inst_uuid: str,
                   node_uuid: str) -> Changes:
    """Make ``node_uuid`` an instance's primary node; in each disk's
    nodes the old primary is replaced by it (swapped with it where it
    held the disk already: a mirrored disk's secondary)."""
    inst = _GetInstance(snap, inst_uuid)
    if node_uuid not in snap.data.nodes:
        raise errors.ConfigurationError("Unknown node %s" % node_uuid)
    old_node = inst.primary_node
    if old_node == node_uuid:
        return {}, None
    new_inst = inst.Copy()
    new_inst.primary_node = node_uuid
    Stamp(new_inst, now, new=False)
    disk_changes = {}
    for disk_uuid in inst.disks:
        disk = snap.data.disks[disk_uuid]
        swap = {old_node: node_uuid, node_uuid: old_node}
        nodes = [swap.get(node, node) for node in disk.nodes or []]
        if nodes != disk.nodes:
            disk = disk.Copy()
            disk.nodes = nodes
            Stamp(disk, now, new=False)
            disk_changes[disk_uuid] = disk
    return {"instances": {inst_uuid: new_inst},
            "disks": disk_changes}, None


def DiskAdded(snap: Snapshot, now: float, inst_uuid: str, new_disk: Disk,
              idx: int | None) -> Changes:
    """Insert ``new_disk`` (a copy, completed here) at position ``idx``
    (default: last); the following disks' iv_names follow."""
    inst = _GetInstance(snap, inst_uuid)
    if new_disk.uuid is None:
        new_disk.uuid = snap.UnusedUUID()
    if new_disk.uuid in snap.data.disks:
        raise errors.ConfigurationError("Disk %s already exists" %
                                        new_disk.uuid)
    new_disk.UpgradeConfig()
    Stamp(new_disk, now, new=True)
    new_inst = inst.Copy()
    pos = len(new_inst.disks) if idx is None else idx
    if not 0 <= pos <= len(new_inst.disks):
        raise errors.ConfigurationError("Invalid disk index %s" % idx)
    new_inst.disks.insert(pos, new_disk.uuid)
    Stamp(new_inst, now, new=False)
    disk_changes = {new_disk.uuid: new_disk}
    _RenumberedDisks(snap, new_inst.disks, pos, now, disk_changes)
    return {"instances": {inst_uuid: new_inst},
            "disks": disk_changes}, None


def DiskRemoved(snap: Snapshot, now: float, inst_uuid: str,
                disk_uuid: str) -> Changes:
    """Detach a disk from its instance and remove it; a drbd disk's port
    goes back to the cluster's pool (as in Removed)."""
    inst = snap.data.instances.get(inst_uuid)
    if inst is None or disk_uuid not in inst.disks:
        raise errors.ConfigurationError("Instance %s has no disk %s" %
                                        (inst_uuid, disk_uuid))
    new_inst = inst.Copy()
    pos = new_inst.disks.index(disk_uuid)
    del new_inst.disks[pos]
    Stamp(new_inst, now, new=False)
    disk_changes: dict[str, Any] = {}
    _RenumberedDisks(snap, new_inst.disks, pos, now, disk_changes)
    disk_changes[disk_uuid] = None
    changes: dict[str, dict[str, Any]] = {
        "instances": {inst_uuid: new_inst}, "disks": disk_changes}
    disk = snap.data.disks[disk_uuid]
    if disk.dev_type != constants.DT_DRBD8:
        return changes, None
    return changes, pools.ReturnPorts(snap, [disk.logical_id[2]], now)
