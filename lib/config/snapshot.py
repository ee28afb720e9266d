"""The published states of the configuration and how a write derives one.

A Snapshot holds one configuration (never modified once published) with
indexes kept up to date incrementally, so that a write costs in
proportion to what it changes: ``Apply`` builds the next snapshot,
sharing every unchanged object, container and index with the old one.
"""

from typing import Any

from ganeti import errors, objects
from ganeti.objects import (Cluster, ConfigData, Disk, FilterRule,
                            Instance, Maintenance, Network, Node, NodeGroup)

CONTAINERS = ("disks", "filters", "instances", "networks", "nodegroups",
              "nodes")
NAMED_CONTAINERS = ("instances", "networks", "nodegroups", "nodes")
# The objects stored in config.data, each under its UUID
Stored = Cluster | Disk | FilterRule | Instance | Network | NodeGroup | Node
CONTAINER_OF_CLASS: dict[type, str] = {
    Disk: "disks", FilterRule: "filters", Instance: "instances",
    Network: "networks", NodeGroup: "nodegroups", Node: "nodes",
}


class Snapshot:
    """One published state of the configuration; its data is never modified.

    Besides the data it holds indexes kept up to date incrementally:
    ``names[container][name] -> uuid``, ``disk_owner[disk] -> instance``
    and ``order[container]``, the sorted UUIDs (the order in the file).
    Derived views (ssconf values, group members) are computed on first use.
    """

    __slots__ = ("data", "names", "disk_owner", "order", "ssconf",
                 "members", "instances_by_name")

    def __init__(self, data: ConfigData, names: dict, disk_owner: dict,
                 order: dict):
        self.data = data
        self.names = names
        self.disk_owner = disk_owner
        self.order = order
        self.ssconf: dict[str, str] | None = None
        self.members: dict[str, list[str]] | None = None
        self.instances_by_name: tuple[Instance, ...] | None = None

    def Container(self, name: str) -> dict:
        return getattr(self.data, name)

    def GroupMembers(self) -> dict[str, list[str]]:
        if self.members is None:
            members: dict[str, list[str]] = {
                uuid: [] for uuid in self.data.nodegroups}
            for node in self.data.nodes.values():
                members.setdefault(node.group, []).append(node.uuid)
            for uuids in members.values():
                uuids.sort()
            self.members = members
        return self.members

    def UnusedUUID(self) -> str:
        """A new UUID not used by any object of this configuration."""
        while True:
            uuid = objects.NewUUID()
            if (uuid != self.data.cluster.uuid and
                    not any(uuid in self.Container(c) for c in CONTAINERS)):
                return uuid


def BuildSnapshot(data: ConfigData) -> tuple[Snapshot, list[str]]:
    """Index a freshly loaded configuration; returns problems found."""
    problems = []
    names: dict[str, dict[str, str]] = {}
    for container in NAMED_CONTAINERS:
        index: dict[str, str] = {}
        for uuid, obj in getattr(data, container).items():
            if obj.name in index:
                problems.append("duplicate %s name %r (%s and %s)" %
                                (container, obj.name, index[obj.name], uuid))
                continue
            index[obj.name] = uuid
        names[container] = index
    disk_owner: dict[str, str] = {}
    for uuid, inst in data.instances.items():
        for disk_uuid in inst.disks:
            if disk_uuid in disk_owner:
                problems.append("disk %s used by instances %s and %s" %
                                (disk_uuid, disk_owner[disk_uuid], uuid))
                continue
            disk_owner[disk_uuid] = uuid
    order = {container: sorted(getattr(data, container))
             for container in CONTAINERS}
    return Snapshot(data, names, disk_owner, order), problems


def Apply(old: Snapshot, changes: dict[str, dict[str, Any]],
          cluster: Cluster | None, now: float,
          maintenance: Maintenance | None = None,
          placement: dict | None = None) -> Snapshot:
    """The snapshot after ``changes``; the old one stays untouched.

    Indexes are copied only when the changes affect them, and derived
    views are carried over when their inputs did not change, so that
    the common write (one instance modified) stays cheap.
    """
    data = old.data
    new_data = ConfigData(
        version=data.version, cluster=cluster or data.cluster,
        maintenance=maintenance or data.maintenance,
        placement=data.placement if placement is None else placement,
        serial_no=(data.serial_no or 0) + 1, ctime=data.ctime, mtime=now,
        **{container: getattr(data, container)
           for container in CONTAINERS})
    names = dict(old.names)
    order = dict(old.order)
    for container, items in changes.items():
        if not items:
            continue
        old_objs = getattr(data, container)
        objs = dict(old_objs)
        for uuid, obj in items.items():
            if obj is None:
                objs.pop(uuid, None)
            else:
                objs[uuid] = obj
        if len(objs) != len(old_objs) or any(
                uuid not in old_objs for uuid in items):
            order[container] = sorted(objs)
        if container in names:
            names[container] = _UpdatedNames(container, names[container],
                                             old_objs, items)
        setattr(new_data, container, objs)
    disk_owner = old.disk_owner
    if changes.get("instances"):
        disk_owner = _UpdatedDiskOwners(data.instances, changes["instances"],
                                        disk_owner)
    snap = Snapshot(new_data, names, disk_owner, order)
    if (cluster is None and
            all(names[c] is old.names[c] for c in names) and
            not any(changes.get(c) for c in ("nodes", "nodegroups",
                                             "networks"))):
        snap.ssconf = old.ssconf
    if not changes.get("nodes") and not changes.get("nodegroups"):
        snap.members = old.members
    return snap


def _UpdatedNames(container: str, index: dict[str, str], old_objs: dict,
                  items: dict[str, Any]) -> dict[str, str]:
    """The name index after ``items``; the same dict if no name changed."""
    renamed = [uuid for uuid, obj in items.items()
               if (obj.name if obj is not None else None) !=
               (old_objs[uuid].name if uuid in old_objs else None)]
    if not renamed:
        return index
    index = dict(index)
    for uuid in renamed:
        current = old_objs.get(uuid)
        if current is not None and index.get(current.name) == uuid:
            del index[current.name]
    for uuid in renamed:
        obj = items[uuid]
        if obj is None:
            continue
        other = index.get(obj.name)
        if other is not None and other != uuid:
            raise errors.ConfigurationError(
                "%s name %r is already used by %s" %
                (container[:-1].capitalize(), obj.name, other))
        index[obj.name] = uuid
    return index


def _UpdatedDiskOwners(old_instances: dict, changed: dict,
                       disk_owner: dict) -> dict:
    copied = False
    for uuid, inst in changed.items():
        old = old_instances.get(uuid)
        old_disks = old.disks if old is not None else []
        new_disks = inst.disks if inst is not None else []
        if old_disks == new_disks:
            continue
        if not copied:
            disk_owner = dict(disk_owner)
            copied = True
        for disk_uuid in old_disks:
            if disk_owner.get(disk_uuid) == uuid:
                del disk_owner[disk_uuid]
    if not copied:
        return disk_owner
    for uuid, inst in changed.items():
        for disk_uuid in (inst.disks if inst is not None else ()):
            owner = disk_owner.get(disk_uuid)
            if owner is not None and owner != uuid:
                raise errors.ConfigurationError(
                    "Disk %s is already used by instance %s" %
                    (disk_uuid, owner))
            disk_owner[disk_uuid] = uuid
    return disk_owner


def CopyIdentity(source: Stored, target: Stored) -> None:
    """Give the caller's object the UUID and stamps of the stored copy."""
    for name in ("uuid", "serial_no", "ctime", "mtime"):
        if name in source._SLOT_SET:
            setattr(target, name, getattr(source, name))


def Stamp(obj: Stored | Maintenance, now: float, new: bool) -> None:
    """Set serial number and timestamps of an object about to be stored."""
    if isinstance(obj, FilterRule):
        return
    if new:
        obj.serial_no = 1
        obj.ctime = now
    else:
        obj.serial_no = (obj.serial_no or 0) + 1
    obj.mtime = now
