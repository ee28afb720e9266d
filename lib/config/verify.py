"""Checks of the configuration: of what a write changes, and of the whole.

A write validates only the objects it adds, changes or removes (with the
snapshot's indexes); whole-configuration scans happen only for removals
of nodes, groups and networks (rare) and for VerifyConfig.
"""

from typing import Any, Callable

from ganeti import errors
from ganeti.config.snapshot import CONTAINERS, NAMED_CONTAINERS, Snapshot
from ganeti.objects import Cluster, Disk, Instance, Node, NodeGroup


class _Validator:
    """Checks a new snapshot, looking only at what a write changed."""

    def __init__(self, snap: Snapshot):
        self.snap = snap
        self.data = snap.data

    def Fail(self, msg: str, *args: Any) -> None:
        raise errors.ConfigurationError(msg % args)

    def CheckCluster(self, cluster: Cluster) -> None:
        cluster.Validate()
        missing = [hv for hv in cluster.enabled_hypervisors
                   if hv not in cluster.hvparams]
        if missing:
            self.Fail("Enabled hypervisors %s have no parameters",
                      ", ".join(missing))
        aggregates = cluster.aggregates or {}
        names = [agg["name"] for agg in aggregates.values()]
        if len(names) != len(set(names)):
            self.Fail("Duplicate aggregate names: %s", ", ".join(
                sorted({name for name in names if names.count(name) > 1})))
        for node in self.data.nodes.values():
            self._CheckNodeAggregates(node, aggregates)

    def _CheckNodeAggregates(self, node: Node, aggregates: dict) -> None:
        unknown = [uuid for uuid in node.aggregates or ()
                   if uuid not in aggregates]
        if unknown:
            self.Fail("Node %s: aggregate %s does not exist", node.name,
                      ", ".join(unknown))

    def CheckMaster(self) -> None:
        master = self.data.cluster.master_node
        node = self.data.nodes.get(master)
        if node is None:
            self.Fail("Master node %s does not exist", master)

    def CheckUniqueUUID(self, container: str, uuid: str) -> None:
        if uuid == self.data.cluster.uuid:
            self.Fail("UUID %s is the cluster's", uuid)
        for other in CONTAINERS:
            if other != container and uuid in self.snap.Container(other):
                self.Fail("UUID %s is already used in %s", uuid, other)

    def CheckNode(self, node: Node) -> None:
        if node.group not in self.data.nodegroups:
            self.Fail("Node %s: group %s does not exist", node.name,
                      node.group)
        self._CheckNodeAggregates(node, self.data.cluster.aggregates or {})

    def CheckNodeRemoval(self, uuid: str) -> None:
        if uuid == self.data.cluster.master_node:
            self.Fail("Node %s is the master node and cannot be removed",
                      uuid)
        for inst in self.data.instances.values():
            if inst.primary_node == uuid:
                self.Fail("Node %s is still the primary node of instance %s",
                          uuid, inst.name)
        for disk in self.data.disks.values():
            if uuid in (disk.nodes or ()):
                self.Fail("Node %s still holds disk %s", uuid, disk.uuid)

    def CheckNodeGroup(self, group: NodeGroup) -> None:
        for net_uuid in group.networks:
            if net_uuid not in self.data.networks:
                self.Fail("Group %s: network %s does not exist", group.name,
                          net_uuid)

    def CheckNodeGroupRemoval(self, uuid: str) -> None:
        for node in self.data.nodes.values():
            if node.group == uuid:
                self.Fail("Group %s still contains node %s", uuid, node.name)

    def CheckInstance(self, inst: Instance) -> None:
        if inst.primary_node not in self.data.nodes:
            self.Fail("Instance %s: primary node %s does not exist",
                      inst.name, inst.primary_node)
        for disk_uuid in inst.disks:
            if disk_uuid not in self.data.disks:
                self.Fail("Instance %s: disk %s does not exist", inst.name,
                          disk_uuid)
        for nic in inst.nics:
            if nic.network and nic.network not in self.data.networks:
                self.Fail("Instance %s: network %s does not exist",
                          inst.name, nic.network)

    def CheckDisk(self, disk: Disk) -> None:
        self._CheckDiskNodes(disk)

    def _CheckDiskNodes(self, disk: Disk) -> None:
        for node_uuid in disk.nodes or ():
            if node_uuid not in self.data.nodes:
                self.Fail("Disk %s: node %s does not exist", disk.uuid,
                          node_uuid)
        for child in disk.children or ():
            self._CheckDiskNodes(child)

    def CheckDiskRemoval(self, uuid: str) -> None:
        owner = self.snap.disk_owner.get(uuid)
        if owner is not None:
            self.Fail("Disk %s is still used by instance %s", uuid, owner)

    def CheckNetworkRemoval(self, uuid: str) -> None:
        for inst in self.data.instances.values():
            for nic in inst.nics:
                if nic.network == uuid:
                    self.Fail("Network %s is still used by instance %s",
                              uuid, inst.name)
        for group in self.data.nodegroups.values():
            if uuid in group.networks:
                self.Fail("Network %s is still connected to group %s", uuid,
                          group.name)


# Reference checks of added or changed objects (after obj.Validate())
_CHECK_CHANGED: dict[str, Callable[[_Validator, Any], None]] = {
    "nodes": _Validator.CheckNode,
    "nodegroups": _Validator.CheckNodeGroup,
    "instances": _Validator.CheckInstance,
    "disks": _Validator.CheckDisk,
}
_CHECK_REMOVED = {
    "nodes": _Validator.CheckNodeRemoval,
    "nodegroups": _Validator.CheckNodeGroupRemoval,
    "disks": _Validator.CheckDiskRemoval,
    "networks": _Validator.CheckNetworkRemoval,
}


def Verify(snap: Snapshot) -> list[str]:
    """Every problem of a whole configuration, as messages."""
    problems = []
    validator = _Validator(snap)
    data = snap.data

    def run(fn: Callable, *args: Any) -> None:
        try:
            fn(validator, *args)
        except errors.ConfigurationError as err:
            problems.append(str(err))

    run(_Validator.CheckCluster, data.cluster)
    run(_Validator.CheckMaster)
    for container in CONTAINERS:
        for uuid, obj in snap.Container(container).items():
            if getattr(obj, "uuid", None) != uuid:
                problems.append("%s %s is stored under UUID %s" %
                                (container, obj.uuid, uuid))
            run(lambda _, item: item.Validate(), obj)
            if container in _CHECK_CHANGED:
                run(_CHECK_CHANGED[container], obj)
            run(_Validator.CheckUniqueUUID, container, uuid)
    for container in NAMED_CONTAINERS:
        seen: dict[str, str] = {}
        for uuid, obj in snap.Container(container).items():
            if obj.name in seen:
                problems.append("duplicate %s name %r (%s and %s)" %
                                (container, obj.name, seen[obj.name], uuid))
            seen[obj.name] = uuid
    owners: dict[str, str] = {}
    for uuid, inst in data.instances.items():
        for disk_uuid in inst.disks:
            if disk_uuid in owners:
                problems.append("disk %s used by instances %s and %s" %
                                (disk_uuid, owners[disk_uuid], uuid))
            owners[disk_uuid] = uuid
    return problems


def ValidateChanges(snap: Snapshot, changes: dict[str, dict[str, Any]],
                    cluster: Cluster | None) -> None:
    """Check the objects ``changes`` (and a new ``cluster``) put into
    ``snap``; ConfigurationError on the first problem."""
    validator = _Validator(snap)
    if cluster is not None:
        validator.CheckCluster(cluster)
    validator.CheckMaster()
    for container, items in changes.items():
        for uuid, obj in items.items():
            if obj is None:
                check = _CHECK_REMOVED.get(container)
                if check is not None:
                    check(validator, uuid)
                continue
            if obj.uuid != uuid:
                raise errors.ConfigurationError(
                    "%s is stored under UUID %s" % (obj.Describe(), uuid))
            validator.CheckUniqueUUID(container, uuid)
            obj.Validate()
            check_changed = _CHECK_CHANGED.get(container)
            if check_changed is not None:
                check_changed(validator, obj)
