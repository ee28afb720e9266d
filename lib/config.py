"""The configuration store: config.data, held in memory, written durably.

Concurrency: the configuration is kept as an immutable snapshot. Readers
take the current snapshot without locking and hand out copies, so they
never wait for a write in progress (which includes an fsync). Writers are
serialized by the one internal lock; each builds a new snapshot sharing
every unchanged object with the old one, validates what changed, writes
the file, and only then publishes the new snapshot. A write that fails,
in validation or on disk, leaves both memory and the file as they were.

Speed: config.data is assembled from cached JSON fragments, one per
object (published objects are never modified in place, so a fragment
stays valid as long as its object is in the configuration); a write
re-encodes only the objects it replaces and splices them in. Validation
looks at the changed objects and at indexes (names, disk owners) kept up
to date incrementally. The file is byte-identical to a plain
``json.dumps(data, sort_keys=True, separators=(",", ":"))``.
"""

import json
import logging
import os
import re
import threading
import time
import types
from typing import Any, Callable, Iterable

from ganeti import constants, errors, netutils, network, objects, pathutils
from ganeti import ssconf, utils
from ganeti.placement import model as placement_model
from ganeti.placement import store as placement_store
from ganeti.utils import gcpause
from ganeti.objects import (Cluster, ConfigData, Disk, FilterRule,
                            Instance, Maintenance, Network, Node, NodeGroup)

# stdlib json is about twice as fast as simplejson here, and both produce
# the same text for these settings
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode

_CONTAINERS = ("disks", "filters", "instances", "networks", "nodegroups",
               "nodes")
_NAMED_CONTAINERS = ("instances", "networks", "nodegroups", "nodes")
# The objects stored in config.data, each under its UUID
_Stored = Cluster | Disk | FilterRule | Instance | Network | NodeGroup | Node
_CONTAINER_OF_CLASS: dict[type, str] = {
    Disk: "disks", FilterRule: "filters", Instance: "instances",
    Network: "networks", NodeGroup: "nodegroups", Node: "nodes",
}
# Top-level keys of config.data, in the (sorted) order they are written
_TOP_LEVEL_KEYS = ("cluster", "ctime", "disks", "filters", "instances",
                   "maintenance", "mtime", "networks", "nodegroups", "nodes",
                   "placement", "serial_no", "version")

WriteHook = Callable[["ConfigWriter", int], None]


class _StalePlacementState(Exception):
    """The Placement state changed since the writer read it."""


FeedbackFn = Callable[[str], None] | None


def SerializeConfig(data: ConfigData) -> str:
    """config.data text of a whole configuration (the plain dump)."""
    return _ENCODE(data.ToDict())


def NiceSortKey(name: str) -> list:
    """Sort key putting "node2" before "node10"."""
    parts = re.split(r"(\d+)", name)
    return [int(part) if idx % 2 else part for idx, part in enumerate(parts)]


def NiceSort(names: Any) -> list[str]:
    """``names`` sorted with NiceSortKey."""
    return sorted(names, key=NiceSortKey)


class _Snapshot:
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


class ConfigView:
    """One published configuration, read without copying.

    The ConfigWriter accessors return copies, which is what callers that
    change objects need; a query reads every instance and changes nothing,
    so it reads one view instead. The objects (and the mappings, which are
    read-only proxies) are those of the configuration itself: they must
    not be modified. Everything comes from the same configuration, even if
    it is changed meanwhile. Node groups have no ``members`` here.
    """

    __slots__ = ("_snap", "cluster", "nodes", "nodegroups", "instances",
                 "disks", "networks")

    def __init__(self, snap: "_Snapshot"):
        data = snap.data
        self._snap = snap
        self.cluster: Cluster = data.cluster
        self.nodes = types.MappingProxyType(data.nodes)
        self.nodegroups = types.MappingProxyType(data.nodegroups)
        self.instances = types.MappingProxyType(data.instances)
        self.disks = types.MappingProxyType(data.disks)
        self.networks = types.MappingProxyType(data.networks)

    def InstancesByName(self) -> tuple[Instance, ...]:
        """All instances, sorted by name (NiceSortKey)."""
        snap = self._snap
        if snap.instances_by_name is None:
            # Computed once per configuration, as the snapshot never changes
            snap.instances_by_name = tuple(sorted(
                snap.data.instances.values(),
                key=lambda inst: NiceSortKey(inst.name)))
        return snap.instances_by_name

    def InstanceDisks(self, inst: Instance) -> list[Disk]:
        """The instance's disks, in order."""
        disks = self._snap.data.disks
        return [disks[uuid] for uuid in inst.disks]


class _ContainerText:
    """Serialized form of one container (e.g. "instances") of a snapshot.

    ``entries`` holds one ``"uuid":{...}`` fragment per object, in file
    order, and ``pos`` the index of each UUID in it, so that replacing an
    object means re-encoding one fragment and splicing it in.
    """

    __slots__ = ("objs", "entries", "pos", "text")

    def __init__(self, objs: dict, entries: list[bytes], pos: dict[str, int],
                 text: bytes):
        self.objs = objs
        self.entries = entries
        self.pos = pos
        self.text = text


def _BuildSnapshot(data: ConfigData) -> tuple[_Snapshot, list[str]]:
    """Index a freshly loaded configuration; returns problems found."""
    problems = []
    names: dict[str, dict[str, str]] = {}
    for container in _NAMED_CONTAINERS:
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
             for container in _CONTAINERS}
    return _Snapshot(data, names, disk_owner, order), problems


class _Validator:
    """Checks a new snapshot, looking only at what a write changed.

    Whole-configuration scans happen only for removals of nodes, groups
    and networks (rare operations) to find remaining references.
    """

    def __init__(self, snap: _Snapshot):
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
        for other in _CONTAINERS:
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


def _Verify(snap: _Snapshot) -> list[str]:
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
    for container in _CONTAINERS:
        for uuid, obj in snap.Container(container).items():
            if getattr(obj, "uuid", None) != uuid:
                problems.append("%s %s is stored under UUID %s" %
                                (container, obj.uuid, uuid))
            run(lambda _, item: item.Validate(), obj)
            if container in _CHECK_CHANGED:
                run(_CHECK_CHANGED[container], obj)
            run(_Validator.CheckUniqueUUID, container, uuid)
    for container in _NAMED_CONTAINERS:
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


def _CopyIdentity(source: _Stored, target: _Stored) -> None:
    """Give the caller's object the UUID and stamps of the stored copy."""
    for name in ("uuid", "serial_no", "ctime", "mtime"):
        if name in source._SLOT_SET:
            setattr(target, name, getattr(source, name))


def _Stamp(obj: _Stored | Maintenance, now: float, new: bool) -> None:
    """Set serial number and timestamps of an object about to be stored."""
    if isinstance(obj, FilterRule):
        return
    if new:
        obj.serial_no = 1
        obj.ctime = now
    else:
        obj.serial_no = (obj.serial_no or 0) + 1
    obj.mtime = now


def _NicAddresses(inst: Instance | None) -> set[tuple[str, str]]:
    """(network UUID, IP) of an instance's NICs on a network with an IP."""
    return {(nic.network, nic.ip) for nic in (inst.nics if inst else ())
            if nic.network and nic.ip}


def _PoolChanges(snap: "_Snapshot", old: Instance | None,
                 new: Instance | None, now: float) -> dict[str, dict]:
    """The networks whose pools change when ``old`` becomes ``new``.

    The addresses of an instance's NICs are reserved in their networks'
    pools in the same write that stores the instance, so a pool always
    matches the NICs (an aborted job leaves nothing reserved); releases go
    first, so an address can move between NICs.
    """
    before, after = _NicAddresses(old), _NicAddresses(new)
    changed: dict[str, Network] = {}
    steps = [(False, pair) for pair in sorted(before - after)] + \
        [(True, pair) for pair in sorted(after - before)]
    for reserve, (net_uuid, ip) in steps:
        net = changed.get(net_uuid)
        if net is None:
            stored = snap.data.networks.get(net_uuid)
            if stored is None:
                continue  # an unknown network is the validator's to report
            net = changed[net_uuid] = stored.Copy()
        pool = network.AddressPool(net)
        try:
            if reserve:
                pool.Reserve(ip)
            elif pool.Contains(ip) and pool.IsReserved(ip):
                pool.Release(ip)
        except errors.AddressPoolError as err:
            raise errors.ConfigurationError(
                "Network %s: %s" % (net.name, err)) from None
    for net in changed.values():
        _Stamp(net, now, new=False)
    return {"networks": changed} if changed else {}


class ConfigWriter:
    """The cluster configuration, loaded once and kept in memory.

    Every read accessor returns independent copies: callers may modify
    them freely and hand them back to Update. ``GetAll*Info`` therefore
    cost one copy per object.

    Every write method validates, writes config.data durably (atomic
    replace, fsynced) and then calls the write hooks, unless ``offline``.
    ``accept_foreign`` allows opening a configuration whose master is not
    this node (tools, tests, master failover).
    """

    def __init__(self, cfg_file: str = pathutils.CLUSTER_CONF_FILE,
                 offline: bool = False, accept_foreign: bool = False):
        self._cfg_file = cfg_file
        self._offline = offline
        self._lock = threading.Lock()
        self._hooks: tuple[WriteHook, ...] = ()
        # Serialized form of the published snapshot's cluster and
        # containers; used and replaced only under self._lock
        self._cluster_text: tuple[Cluster, bytes] | None = None
        self._maintenance_text: tuple[Maintenance, bytes] | None = None
        self._placement_text: tuple[dict, bytes] | None = None
        self._texts: dict[str, _ContainerText] = {}
        self._snap: _Snapshot = self._Load(accept_foreign)

    # Loading ---------------------------------------------------------------

    def _Load(self, accept_foreign: bool) -> _Snapshot:
        # Loading creates hundreds of thousands of containers, none of them
        # garbage; without this the cyclic collector rescans them over and
        # over, which costs a good part of the load time
        with gcpause.CyclicGcPaused():
            return self._LoadFile(accept_foreign)

    def _LoadFile(self, accept_foreign: bool) -> _Snapshot:
        try:
            text = utils.ReadFile(self._cfg_file)
        except OSError as err:
            raise errors.ConfigurationError("Cannot read configuration file"
                                            " %s: %s" % (self._cfg_file, err))
        try:
            raw = json.loads(text)
        except ValueError as err:
            raise errors.ConfigurationError("Configuration file %s is not"
                                            " valid JSON: %s" %
                                            (self._cfg_file, err))
        if not isinstance(raw, dict):
            raise errors.ConfigurationError("Configuration file %s does not"
                                            " hold an object" %
                                            self._cfg_file)
        version = raw.get("version")
        if version != constants.CONFIG_VERSION:
            raise errors.ConfigVersionMismatch(constants.CONFIG_VERSION,
                                               version)
        data = ConfigData.FromDict(raw)
        data.UpgradeConfig()
        snap, problems = _BuildSnapshot(data)
        for problem in problems:
            logging.warning("Configuration problem: %s", problem)
        master = data.nodes.get(data.cluster.master_node)
        if master is None:
            raise errors.ConfigurationError("Master node %s is not in the"
                                            " configuration" %
                                            data.cluster.master_node)
        if not accept_foreign and master.name != netutils.GetMyName():
            raise errors.ConfigurationError(
                "The configuration denotes node %s as master, while this"
                " node is %s; opening a foreign configuration is only"
                " possible with accept_foreign" %
                (master.name, netutils.GetMyName()))
        # Fill the serialization caches now so that the first write is as
        # fast as the following ones
        self._AssembleFile(snap, {})[1]()
        return snap

    # Reading ---------------------------------------------------------------

    def GetConfigSerial(self) -> int:
        """Serial number of the whole configuration."""
        return self._snap.data.serial_no

    def GetConfigFileName(self) -> str:
        """The file this configuration is kept in (state that belongs to
        the configuration lives beside it)."""
        return self._cfg_file

    def GetView(self) -> ConfigView:
        """The current configuration, uncopied and not to be modified."""
        return ConfigView(self._snap)

    def GetClusterInfo(self) -> Cluster:
        return self._snap.data.cluster.Copy()

    def GetMaintenance(self) -> Maintenance:
        """ganeti-maintd's settings and state."""
        return self._snap.data.maintenance.Copy()

    def GetClusterName(self) -> str:
        return self._snap.data.cluster.cluster_name

    def GetMasterNode(self) -> str:
        """UUID of the master node."""
        return self._snap.data.cluster.master_node

    def GetMasterNetworkParameters(self) -> dict:
        """What the master IP procedures of noded need."""
        cluster = self._snap.data.cluster
        return {"ip": cluster.master_ip, "netmask": cluster.master_netmask,
                "netdev": cluster.master_netdev,
                "ip_family": cluster.primary_ip_family}

    def GetMasterNodeName(self) -> str:
        snap = self._snap
        return snap.data.nodes[snap.data.cluster.master_node].name

    def GetMasterNodeInfo(self) -> Node:
        snap = self._snap
        return snap.data.nodes[snap.data.cluster.master_node].Copy()

    def GetNodeInfo(self, node_uuid: str) -> Node | None:
        node = self._snap.data.nodes.get(node_uuid)
        return None if node is None else node.Copy()

    def GetNodeInfoByName(self, name: str) -> Node | None:
        snap = self._snap
        uuid = snap.names["nodes"].get(name)
        return None if uuid is None else snap.data.nodes[uuid].Copy()

    def GetAllNodesInfo(self) -> dict[str, Node]:
        return {uuid: node.Copy()
                for uuid, node in self._snap.data.nodes.items()}

    def GetNodeList(self) -> list[str]:
        """UUIDs of all nodes."""
        return list(self._snap.order["nodes"])

    def GetOnlineNodeList(self) -> list[str]:
        snap = self._snap
        return [uuid for uuid in snap.order["nodes"]
                if not snap.data.nodes[uuid].offline]

    def GetMasterCandidateUuids(self) -> list[str]:
        """UUIDs of the master candidates (the master included)."""
        snap = self._snap
        return [uuid for uuid in snap.order["nodes"]
                if snap.data.nodes[uuid].master_candidate]

    @staticmethod
    def _CandidateStats(snap: _Snapshot,
                        exceptions: frozenset[str]) -> tuple[int, int, int]:
        mc_now = mc_max = 0
        for uuid, node in snap.data.nodes.items():
            if uuid in exceptions:
                continue
            if node.master_capable and not (node.offline or node.drained):
                mc_max += 1
            if node.master_candidate:
                mc_now += 1
        return (mc_now, min(mc_max, snap.data.cluster.candidate_pool_size),
                mc_max)

    def GetMasterCandidateStats(self, exceptions: Iterable[str] | None = None
                                ) -> tuple[int, int, int]:
        """``(mc_now, mc_should, mc_max)`` of the candidate pool.

        ``mc_now`` counts the candidates (the master included), ``mc_max``
        the nodes that could be one (online, not drained, master capable)
        and ``mc_should`` is the pool size capped by ``mc_max``. Nodes in
        ``exceptions`` (UUIDs) are left out, to judge the pool as it would
        be without them (a node being removed or demoted).
        """
        return self._CandidateStats(self._snap, frozenset(exceptions or ()))

    def GetNodeNames(self, node_uuids: list[str]) -> list[str]:
        """Names of nodes given by UUID; unknown UUIDs are an error."""
        nodes = self._snap.data.nodes
        try:
            return [nodes[uuid].name for uuid in node_uuids]
        except KeyError as err:
            raise errors.OpPrereqError("Unknown node %s" % err.args[0],
                                       errors.ECODE_NOENT)

    def GetNodeInstances(self, node_uuid: str) -> tuple[list[str], list[str]]:
        """UUIDs of the instances having the node as primary / secondary."""
        snap = self._snap
        primary, secondary = [], []
        for uuid in snap.order["instances"]:
            inst = snap.data.instances[uuid]
            if inst.primary_node == node_uuid:
                primary.append(uuid)
            elif node_uuid in self._InstanceNodes(snap, inst):
                secondary.append(uuid)
        return primary, secondary

    def _GroupCopy(self, snap: _Snapshot, group: NodeGroup) -> NodeGroup:
        result = group.Copy()
        result.members = list(snap.GroupMembers().get(group.uuid, []))
        return result

    def GetNodeGroup(self, group_uuid: str) -> NodeGroup | None:
        """A node group, with ``members`` filled in."""
        snap = self._snap
        group = snap.data.nodegroups.get(group_uuid)
        return None if group is None else self._GroupCopy(snap, group)

    def GetAllNodeGroupsInfo(self) -> dict[str, NodeGroup]:
        snap = self._snap
        return {uuid: self._GroupCopy(snap, group)
                for uuid, group in snap.data.nodegroups.items()}

    def LookupNodeGroup(self, target: str | None) -> str:
        """UUID of a group given by name or UUID.

        With None, the only group if there is exactly one.
        """
        snap = self._snap
        if target is None:
            if len(snap.data.nodegroups) != 1:
                raise errors.OpPrereqError("More than one node group exists;"
                                           " the group must be given",
                                           errors.ECODE_INVAL)
            return next(iter(snap.data.nodegroups))
        if target in snap.data.nodegroups:
            return target
        uuid = snap.names["nodegroups"].get(target)
        if uuid is None:
            raise errors.OpPrereqError("Node group '%s' not found" % target,
                                       errors.ECODE_NOENT)
        return uuid

    def GetInstanceInfo(self, inst_uuid: str) -> Instance | None:
        inst = self._snap.data.instances.get(inst_uuid)
        return None if inst is None else inst.Copy()

    def GetInstanceInfoByName(self, name: str) -> Instance | None:
        snap = self._snap
        uuid = snap.names["instances"].get(name)
        return None if uuid is None else snap.data.instances[uuid].Copy()

    def GetAllInstancesInfo(self) -> dict[str, Instance]:
        return {uuid: inst.Copy()
                for uuid, inst in self._snap.data.instances.items()}

    def GetInstanceList(self) -> list[str]:
        """UUIDs of all instances."""
        return list(self._snap.order["instances"])

    @staticmethod
    def _GetInstance(snap: _Snapshot, inst_uuid: str) -> Instance:
        inst = snap.data.instances.get(inst_uuid)
        if inst is None:
            raise errors.OpPrereqError("Unknown instance %s" % inst_uuid,
                                       errors.ECODE_NOENT)
        return inst

    def GetInstanceDisks(self, inst_uuid: str) -> list[Disk]:
        """The instance's disks, in order."""
        snap = self._snap
        inst = self._GetInstance(snap, inst_uuid)
        return [snap.data.disks[uuid].Copy() for uuid in inst.disks]

    def GetInstanceDiskTemplate(self, inst_uuid: str) -> str:
        """The disk template, derived from the disks' types."""
        snap = self._snap
        inst = self._GetInstance(snap, inst_uuid)
        if not inst.disks:
            return constants.DT_DISKLESS
        return snap.data.disks[inst.disks[0]].dev_type

    @staticmethod
    def _InstanceNodes(snap: _Snapshot, inst: Instance) -> list[str]:
        result = [inst.primary_node]
        for disk_uuid in inst.disks:
            disk = snap.data.disks.get(disk_uuid)
            for node_uuid in (disk.nodes if disk else ()) or ():
                if node_uuid not in result:
                    result.append(node_uuid)
        return result

    def GetInstanceNodes(self, inst_uuid: str) -> list[str]:
        """Primary node first, then the other nodes holding its disks."""
        snap = self._snap
        return self._InstanceNodes(snap, self._GetInstance(snap, inst_uuid))

    def GetInstanceSecondaryNodes(self, inst_uuid: str) -> list[str]:
        return self.GetInstanceNodes(inst_uuid)[1:]

    def GetDiskInfo(self, disk_uuid: str) -> Disk | None:
        disk = self._snap.data.disks.get(disk_uuid)
        return None if disk is None else disk.Copy()

    def GetAllDisksInfo(self) -> dict[str, Disk]:
        return {uuid: disk.Copy()
                for uuid, disk in self._snap.data.disks.items()}

    def GetNetwork(self, net_uuid: str) -> Network | None:
        net = self._snap.data.networks.get(net_uuid)
        return None if net is None else net.Copy()

    def GetAllNetworksInfo(self) -> dict[str, Network]:
        return {uuid: net.Copy()
                for uuid, net in self._snap.data.networks.items()}

    def LookupNetwork(self, target: str) -> str | None:
        """UUID of a network given by name or UUID, None if unknown."""
        snap = self._snap
        if target in snap.data.networks:
            return target
        return snap.names["networks"].get(target)

    def GetFilterRule(self, uuid: str) -> FilterRule | None:
        rule = self._snap.data.filters.get(uuid)
        return None if rule is None else rule.Copy()

    def GetFilterRules(self) -> dict[str, FilterRule]:
        return {uuid: rule.Copy()
                for uuid, rule in self._snap.data.filters.items()}

    @staticmethod
    def _ExpandName(snap: _Snapshot, container: str,
                    short_name: str) -> str | None:
        if short_name in snap.Container(container):
            return short_name
        names = snap.names[container]
        if short_name in names:
            return names[short_name]
        wanted = short_name.lower()
        exact = []
        prefix = []
        for name, uuid in names.items():
            lower = name.lower()
            if lower == wanted:
                exact.append(uuid)
            elif lower.startswith(wanted + "."):
                prefix.append(uuid)
        for candidates in (exact, prefix):
            if len(candidates) == 1:
                return candidates[0]
            if candidates:
                return None
        return None

    def ExpandNodeName(self, short_name: str) -> str | None:
        """UUID of a node given by UUID, name or unique short name."""
        return self._ExpandName(self._snap, "nodes", short_name)

    def ExpandInstanceName(self, short_name: str) -> str | None:
        """UUID of an instance given by UUID, name or unique short name."""
        return self._ExpandName(self._snap, "instances", short_name)

    def GetSsconfValues(self) -> dict[str, str]:
        """The values the master pushes to the nodes' ssconf files."""
        snap = self._snap
        if snap.ssconf is None:
            snap.ssconf = self._ComputeSsconf(snap)
        return dict(snap.ssconf)

    @staticmethod
    def _ComputeSsconf(snap: _Snapshot) -> dict[str, str]:
        data = snap.data
        cluster = data.cluster
        nodes = sorted(data.nodes.values(), key=lambda n: NiceSortKey(n.name))
        candidates = [node for node in nodes if node.master_candidate]

        def lines(items: Any) -> str:
            return "\n".join(items)

        return {
            ssconf.SS_CLUSTER_NAME: cluster.cluster_name,
            ssconf.SS_CLUSTER_TAGS: lines(sorted(cluster.GetTags())),
            ssconf.SS_FILE_STORAGE_DIR: cluster.file_storage_dir,
            ssconf.SS_SHARED_FILE_STORAGE_DIR:
                cluster.shared_file_storage_dir,
            ssconf.SS_MASTER_CANDIDATES: lines(n.name for n in candidates),
            ssconf.SS_MASTER_CANDIDATES_IPS:
                lines(n.primary_ip for n in candidates),
            ssconf.SS_MASTER_IP: cluster.master_ip,
            ssconf.SS_MASTER_NETDEV: cluster.master_netdev,
            ssconf.SS_MASTER_NETMASK: str(cluster.master_netmask),
            ssconf.SS_MASTER_NODE: data.nodes[cluster.master_node].name,
            ssconf.SS_NODE_LIST: lines(n.name for n in nodes),
            ssconf.SS_NODE_PRIMARY_IPS:
                lines("%s %s" % (n.name, n.primary_ip) for n in nodes),
            ssconf.SS_NODE_SECONDARY_IPS:
                lines("%s %s" % (n.name, n.secondary_ip) for n in nodes),
            ssconf.SS_NODE_VM_CAPABLE:
                lines("%s=%s" % (n.name, n.vm_capable) for n in nodes),
            ssconf.SS_OFFLINE_NODES: lines(n.name for n in nodes if n.offline),
            ssconf.SS_ONLINE_NODES:
                lines(n.name for n in nodes if not n.offline),
            ssconf.SS_PRIMARY_IP_FAMILY: str(cluster.primary_ip_family),
            ssconf.SS_INSTANCE_LIST: lines(NiceSort(snap.names["instances"])),
            ssconf.SS_RELEASE_VERSION: constants.RELEASE_VERSION,
            ssconf.SS_HYPERVISOR_LIST: lines(cluster.enabled_hypervisors),
            ssconf.SS_MAINTAIN_NODE_HEALTH: str(cluster.maintain_node_health),
            ssconf.SS_UID_POOL: ssconf.FormatUidPool(cluster.uid_pool),
            ssconf.SS_NODEGROUPS: lines(
                "%s %s" % (uuid, data.nodegroups[uuid].name)
                for uuid in snap.order["nodegroups"]),
            ssconf.SS_NETWORKS: lines(
                "%s %s" % (uuid, data.networks[uuid].name)
                for uuid in snap.order["networks"]),
            ssconf.SS_ENABLED_USER_SHUTDOWN:
                str(cluster.enabled_user_shutdown),
            ssconf.SS_DATA_COLLECTORS: lines(
                "%s %s %d" % (name, dc[constants.DATA_COLLECTOR_STATE_ACTIVE],
                              dc[constants.DATA_COLLECTOR_PARAMETER_INTERVAL])
                for name, dc in objects.FillDataCollectors(
                    cluster.data_collectors).items()),
            ssconf.SS_DIAGNOSE_DATA_COLLECTOR_FILENAME:
                cluster.diagnose_data_collector_filename,
        }

    def VerifyConfig(self) -> list[str]:
        """Check the whole configuration; returns the problems found."""
        return _Verify(self._snap)

    def GenerateUniqueID(self) -> str:
        """A new UUID not used by any object of the configuration."""
        snap = self._snap
        while True:
            uuid = objects.NewUUID()
            if (uuid != snap.data.cluster.uuid and
                    not any(uuid in snap.Container(c) for c in _CONTAINERS)):
                return uuid

    # Writing ---------------------------------------------------------------

    def AddWriteHook(self, fn: WriteHook) -> None:
        """Call ``fn(config_writer, new_serial)`` after each successful write.

        Hooks run outside the internal lock, in the writing thread; when
        writes overlap they may see a newer configuration than
        ``new_serial``. Their exceptions are logged and reported through
        the write's ``feedback_fn``, never raised: the write is done.
        """
        with self._lock:
            self._hooks = self._hooks + (fn,)

    def WriteConfig(self, feedback_fn: FeedbackFn = None) -> None:
        """Write the configuration again, with a new serial number."""
        self._Modify(lambda snap, now: ({}, None), feedback_fn)

    def Update(self, target: _Stored,
               feedback_fn: FeedbackFn = None) -> None:
        """Replace a stored object by ``target``, a modified copy of it.

        ``target`` must carry the serial number of the stored object
        (nobody else changed it since it was read); on success its
        ``serial_no`` and ``mtime`` are updated like the stored copy's.
        An instance's NIC addresses follow in their networks' pools.
        """
        stored: list[_Stored] = []

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            current: _Stored | None
            if isinstance(target, Cluster):
                current = snap.data.cluster
                container = None
            else:
                container = _CONTAINER_OF_CLASS.get(type(target))
                if container is None:
                    raise errors.ProgrammerError("Cannot update objects of"
                                                 " type %s" %
                                                 type(target).__name__)
                current = snap.Container(container).get(target.uuid)
                if current is None:
                    raise errors.ConfigurationError(
                        "Cannot update %s: it is not in the configuration" %
                        target.Describe())
            serial = getattr(target, "serial_no", None)
            current_serial = getattr(current, "serial_no", None)
            if serial != current_serial:
                raise errors.ConfigurationError(
                    "Cannot update %s: it was modified since it was read"
                    " (serial %s, now %s)" %
                    (target.Describe(), serial, current_serial))
            new = target.Copy()
            new.ClearDerived()
            _Stamp(new, now, new=False)
            stored.append(new)
            if container is None:
                return {}, new
            changes = {container: {new.uuid: new}}
            if isinstance(new, Instance) and isinstance(current, Instance):
                changes.update(_PoolChanges(snap, current, new, now))
            return changes, None

        self._Modify(prepare, feedback_fn)
        if not isinstance(target, FilterRule):
            _CopyIdentity(stored[0], target)

    def _AddObject(self, obj: _Stored, container: str,
                   feedback_fn: FeedbackFn) -> None:
        new = obj.Copy()
        new.ClearDerived()

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            if new.uuid is None:
                new.uuid = self.GenerateUniqueID()
            if new.uuid in snap.Container(container):
                raise errors.ConfigurationError("%s already exists" %
                                                new.Describe())
            new.UpgradeConfig()
            _Stamp(new, now, new=True)
            return {container: {new.uuid: new}}, None

        self._Modify(prepare, feedback_fn)
        _CopyIdentity(new, obj)

    def _RemoveObject(self, uuid: str, container: str,
                      feedback_fn: FeedbackFn,
                      extra: Callable[[_Snapshot, Any], dict] | None = None
                      ) -> None:
        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            current = snap.Container(container).get(uuid)
            if current is None:
                raise errors.ConfigurationError("Unknown %s %s" %
                                                (container[:-1], uuid))
            changes = extra(snap, current) if extra else {}
            changes.setdefault(container, {})[uuid] = None
            return changes, None

        self._Modify(prepare, feedback_fn)

    def AddNode(self, node: Node, feedback_fn: FeedbackFn = None) -> None:
        """Add a node; ``node.group`` must name an existing group.

        A missing UUID is generated; ``node`` gets its UUID, serial
        number and timestamps.
        """
        self._AddObject(node, "nodes", feedback_fn)

    def RemoveNode(self, node_uuid: str,
                   feedback_fn: FeedbackFn = None) -> None:
        """Remove a node that is neither master nor used by any instance;
        the Placement API's allocations against it go in the same write
        (``placement.model.WithoutProvider``)."""

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            if node_uuid not in snap.data.nodes:
                raise errors.ConfigurationError("Unknown node %s" %
                                                node_uuid)
            old = snap.data.placement
            new = (placement_model.WithoutProvider(old, node_uuid)
                   if old else None)
            if new is not None:
                new[placement_store.SERIAL] = placement_store.Serial(old) + 1
            return {"nodes": {node_uuid: None}}, new

        self._Modify(prepare, feedback_fn)

    def GetPlacementState(self) -> dict:
        """The Placement API's state (``placement.store``); not to be
        modified."""
        return self._snap.data.placement or {}

    def SetPlacementState(self, serial: int, data: dict,
                          feedback_fn: FeedbackFn = None) -> int | None:
        """Replace the Placement API's state if its serial is still
        ``serial`` (nobody replaced it since it was read); the new serial,
        or None if it was replaced meanwhile (nothing is written then)."""
        new = dict(data)
        new[placement_store.SERIAL] = serial + 1

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            if placement_store.Serial(snap.data.placement) != serial:
                raise _StalePlacementState()
            return {}, new

        try:
            self._Modify(prepare, feedback_fn)
        except _StalePlacementState:
            return None
        return serial + 1

    def MaintainCandidatePool(self, exceptions: Iterable[str] | None = None,
                              feedback_fn: FeedbackFn = None) -> list[Node]:
        """Promote nodes to master candidate until the pool is full.

        Eligible are online, undrained, master capable nodes not in
        ``exceptions``, taken in name order; all promotions are one write.
        Candidates are never demoted here: a pool larger than wanted only
        shrinks when an administrator demotes nodes. Returns copies of the
        promoted nodes (empty if the pool was full).
        """
        excluded = frozenset(exceptions or ())
        mc_now, mc_should, _ = self._CandidateStats(self._snap, excluded)
        if mc_now >= mc_should:
            return []
        promoted: list[Node] = []

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            del promoted[:]
            count, wanted, _ = self._CandidateStats(snap, excluded)
            for node in sorted(snap.data.nodes.values(),
                               key=lambda n: NiceSortKey(n.name)):
                if count >= wanted:
                    break
                if (node.master_candidate or node.offline or node.drained or
                        not node.master_capable or node.uuid in excluded):
                    continue
                new = node.Copy()
                new.master_candidate = True
                _Stamp(new, now, new=False)
                promoted.append(new)
                count += 1
            if count < wanted:
                logging.warning("Could not fill the master candidate pool"
                                " (%d of %d)", count, wanted)
            return {"nodes": {node.uuid: node for node in promoted}}, None

        self._Modify(prepare, feedback_fn)
        return [node.Copy() for node in promoted]

    def AssignGroupNodes(self, mods: list[tuple[str, str]],
                         feedback_fn: FeedbackFn = None) -> None:
        """Move nodes to other groups, ``[(node_uuid, group_uuid)]``, at once.

        One write, so that no configuration exists in which only some of
        the nodes moved.
        """
        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            changes: dict[str, Node] = {}
            for node_uuid, group_uuid in mods:
                node = changes.get(node_uuid) or snap.data.nodes.get(node_uuid)
                if node is None:
                    raise errors.ConfigurationError("Unknown node %s" %
                                                    node_uuid)
                if group_uuid not in snap.data.nodegroups:
                    raise errors.ConfigurationError("Unknown node group %s" %
                                                    group_uuid)
                if node.group == group_uuid:
                    continue
                if node_uuid not in changes:
                    node = node.Copy()
                    _Stamp(node, now, new=False)
                node.group = group_uuid
                changes[node_uuid] = node
            return {"nodes": changes}, None

        self._Modify(prepare, feedback_fn)

    def AddNodeGroup(self, group: NodeGroup,
                     feedback_fn: FeedbackFn = None) -> None:
        self._AddObject(group, "nodegroups", feedback_fn)

    def RemoveNodeGroup(self, group_uuid: str,
                        feedback_fn: FeedbackFn = None) -> None:
        """Remove an empty node group."""
        self._RemoveObject(group_uuid, "nodegroups", feedback_fn)

    def AddNetwork(self, net: Network, feedback_fn: FeedbackFn = None) -> None:
        self._AddObject(net, "networks", feedback_fn)

    def RemoveNetwork(self, net_uuid: str,
                      feedback_fn: FeedbackFn = None) -> None:
        """Remove a network no NIC or group uses."""
        self._RemoveObject(net_uuid, "networks", feedback_fn)

    def AddInstance(self, instance: Instance, disks: list[Disk] | None = None,
                    feedback_fn: FeedbackFn = None) -> None:
        """Add an instance together with its new ``disks``, in one write
        (its NICs' addresses reserved in their networks' pools).

        Disks without UUID get one. If ``instance.disks`` is empty it
        becomes the list of the given disks' UUIDs; otherwise it must list
        every given disk, and may name existing disks no instance uses.
        Each disk's ``iv_name`` becomes ``disk/<index>``. ``instance`` and
        ``disks`` get their UUIDs, serial numbers and timestamps.
        """
        new_inst = instance.Copy()
        new_disks = [disk.Copy() for disk in disks or ()]

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            for obj in [new_inst] + new_disks:
                if obj.uuid is None:
                    obj.uuid = self.GenerateUniqueID()
            if not new_inst.disks:
                new_inst.disks = [disk.uuid for disk in new_disks]
            if new_inst.uuid in snap.data.instances:
                raise errors.ConfigurationError("%s already exists" %
                                                new_inst.Describe())
            # Creations need not hold the BGL (opportunistic locking):
            # the name and MACs are checked again against this snapshot
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
                _Stamp(disk, now, new=True)
                added[disk.uuid] = disk
            new_inst.UpgradeConfig()
            _Stamp(new_inst, now, new=True)
            self._RenumberedDisks(snap, new_inst.disks, 0, now, added)
            changes = {"instances": {new_inst.uuid: new_inst},
                       "disks": added}
            changes.update(_PoolChanges(snap, None, new_inst, now))
            return changes, None

        self._Modify(prepare, feedback_fn)
        originals: list[_Stored] = [instance, *(disks or ())]
        copies: list[_Stored] = [new_inst, *new_disks]
        for orig, new in zip(originals, copies):
            _CopyIdentity(new, orig)
        for orig, new in zip(disks or (), new_disks):
            orig.iv_name = new.iv_name
        instance.disks = list(new_inst.disks)

    def RemoveInstance(self, inst_uuid: str,
                       feedback_fn: FeedbackFn = None) -> None:
        """Remove an instance and its disks; its network port and its
        drbd disks' ports go back to the cluster's pool, its NICs'
        addresses to their networks' pools."""
        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            inst = snap.data.instances.get(inst_uuid)
            if inst is None:
                raise errors.ConfigurationError("Unknown instance %s" %
                                                inst_uuid)
            changes = {"instances": {inst_uuid: None},
                       "disks": {uuid: None for uuid in inst.disks}}
            changes.update(_PoolChanges(snap, inst, None, now))
            # drbd disks give their port back too (logical id's third)
            ports = {snap.data.disks[uuid].logical_id[2]
                     for uuid in inst.disks
                     if snap.data.disks[uuid].dev_type == constants.DT_DRBD8}
            if inst.network_port is not None:
                ports.add(inst.network_port)
            if not ports:
                return changes, None
            cluster = snap.data.cluster.Copy()
            cluster.tcpudp_port_pool = sorted(
                set(cluster.tcpudp_port_pool) | ports)
            _Stamp(cluster, now, new=False)
            return changes, cluster

        self._Modify(prepare, feedback_fn)

    def AllocatePort(self, feedback_fn: FeedbackFn = None) -> int:
        """Take a network port for an instance, as Ganeti does: from the
        pool of returned ports first, else the next above the highest
        used one (up to LAST_DRBD_PORT)."""
        allocated: list[int] = []

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            cluster = snap.data.cluster.Copy()
            if cluster.tcpudp_port_pool:
                port = min(cluster.tcpudp_port_pool)
                cluster.tcpudp_port_pool = [
                    other for other in cluster.tcpudp_port_pool
                    if other != port]
            else:
                port = cluster.highest_used_port + 1
                if port > constants.LAST_DRBD_PORT:
                    raise errors.ConfigurationError(
                        "The highest used port is greater than %s. Aborting."
                        % constants.LAST_DRBD_PORT)
                cluster.highest_used_port = port
            _Stamp(cluster, now, new=False)
            allocated.append(port)
            return {}, cluster

        self._Modify(prepare, feedback_fn)
        return allocated[0]

    def ReleasePorts(self, ports: Iterable[int],
                     feedback_fn: FeedbackFn = None) -> None:
        """Give ports taken by AllocatePort back to the pool (a creation
        that failed before its instance was added)."""
        released = set(ports)

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            cluster = snap.data.cluster.Copy()
            cluster.tcpudp_port_pool = sorted(
                set(cluster.tcpudp_port_pool) | released)
            _Stamp(cluster, now, new=False)
            return {}, cluster

        self._Modify(prepare, feedback_fn)

    def RenameInstance(self, inst_uuid: str, new_name: str,
                       feedback_fn: FeedbackFn = None) -> None:
        """Rename an instance, with its file disks' paths, in one write.

        A file disk lives in a directory named after its instance
        (``<storage dir>/<instance>/<file>``): its logical_id moves to the
        new name's directory, which the caller renames on the node.
        """
        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            inst = snap.data.instances.get(inst_uuid)
            if inst is None:
                raise errors.ConfigurationError("Unknown instance %s" %
                                                inst_uuid)
            new_inst = inst.Copy()
            new_inst.name = new_name
            _Stamp(new_inst, now, new=False)
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
                _Stamp(disk, now, new=False)
                disk_changes[disk_uuid] = disk
            return {"instances": {inst_uuid: new_inst},
                    "disks": disk_changes}, None

        self._Modify(prepare, feedback_fn)

    def SetInstancePrimaryNode(self, inst_uuid: str, node_uuid: str,
                               feedback_fn: FeedbackFn = None) -> None:
        """Make ``node_uuid`` an instance's primary node, in one write.

        The disks follow: the old primary is replaced by the new node in
        each disk's nodes (swapped with it where the new node held the
        disk already: a mirrored disk's secondary), so no reader ever sees
        the instance on one node and its disks on another.
        """
        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            inst = snap.data.instances.get(inst_uuid)
            if inst is None:
                raise errors.ConfigurationError("Unknown instance %s" %
                                                inst_uuid)
            if node_uuid not in snap.data.nodes:
                raise errors.ConfigurationError("Unknown node %s" %
                                                node_uuid)
            old_node = inst.primary_node
            if old_node == node_uuid:
                return {}, None
            new_inst = inst.Copy()
            new_inst.primary_node = node_uuid
            _Stamp(new_inst, now, new=False)
            disk_changes = {}
            for disk_uuid in inst.disks:
                disk = snap.data.disks[disk_uuid]
                swap = {old_node: node_uuid, node_uuid: old_node}
                nodes = [swap.get(node, node) for node in disk.nodes or []]
                if nodes != disk.nodes:
                    disk = disk.Copy()
                    disk.nodes = nodes
                    _Stamp(disk, now, new=False)
                    disk_changes[disk_uuid] = disk
            return {"instances": {inst_uuid: new_inst},
                    "disks": disk_changes}, None

        self._Modify(prepare, feedback_fn)

    @staticmethod
    def _RenumberedDisks(snap: _Snapshot, disk_uuids: list[str],
                         start: int, now: float,
                         changes: dict[str, Any]) -> None:
        """Give disks from ``start`` on the iv_name matching their index."""
        for idx in range(start, len(disk_uuids)):
            uuid = disk_uuids[idx]
            disk = changes.get(uuid) or snap.data.disks[uuid]
            iv_name = "disk/%d" % idx
            if disk.iv_name != iv_name:
                if uuid not in changes:
                    disk = disk.Copy()
                    _Stamp(disk, now, new=False)
                disk.iv_name = iv_name
                changes[uuid] = disk

    def AddInstanceDisk(self, inst_uuid: str, disk: Disk,
                        idx: int | None = None,
                        feedback_fn: FeedbackFn = None) -> None:
        """Add a new disk to an instance at position ``idx`` (default: last).

        The disks' ``iv_name`` (``disk/N``) follow their new positions.
        """
        new_disk = disk.Copy()

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            inst = snap.data.instances.get(inst_uuid)
            if inst is None:
                raise errors.ConfigurationError("Unknown instance %s" %
                                                inst_uuid)
            if new_disk.uuid is None:
                new_disk.uuid = self.GenerateUniqueID()
            if new_disk.uuid in snap.data.disks:
                raise errors.ConfigurationError("Disk %s already exists" %
                                                new_disk.uuid)
            new_disk.UpgradeConfig()
            _Stamp(new_disk, now, new=True)
            new_inst = inst.Copy()
            pos = len(new_inst.disks) if idx is None else idx
            if not 0 <= pos <= len(new_inst.disks):
                raise errors.ConfigurationError("Invalid disk index %s" % idx)
            new_inst.disks.insert(pos, new_disk.uuid)
            _Stamp(new_inst, now, new=False)
            disk_changes = {new_disk.uuid: new_disk}
            self._RenumberedDisks(snap, new_inst.disks, pos, now,
                                  disk_changes)
            return {"instances": {inst_uuid: new_inst},
                    "disks": disk_changes}, None

        self._Modify(prepare, feedback_fn)
        _CopyIdentity(new_disk, disk)
        disk.iv_name = new_disk.iv_name

    def RemoveInstanceDisk(self, inst_uuid: str, disk_uuid: str,
                           feedback_fn: FeedbackFn = None) -> None:
        """Detach a disk from its instance and remove it."""
        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            inst = snap.data.instances.get(inst_uuid)
            if inst is None or disk_uuid not in inst.disks:
                raise errors.ConfigurationError("Instance %s has no disk %s" %
                                                (inst_uuid, disk_uuid))
            new_inst = inst.Copy()
            pos = new_inst.disks.index(disk_uuid)
            del new_inst.disks[pos]
            _Stamp(new_inst, now, new=False)
            disk_changes: dict[str, Any] = {}
            self._RenumberedDisks(snap, new_inst.disks, pos, now,
                                  disk_changes)
            disk_changes[disk_uuid] = None
            return {"instances": {inst_uuid: new_inst},
                    "disks": disk_changes}, None

        self._Modify(prepare, feedback_fn)

    def SetFilter(self, rule: FilterRule,
                  feedback_fn: FeedbackFn = None) -> None:
        """Add a filter rule, or replace the one with the same UUID."""
        new = rule.Copy()

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            if new.uuid is None:
                new.uuid = self.GenerateUniqueID()
            new.UpgradeConfig()
            return {"filters": {new.uuid: new}}, None

        self._Modify(prepare, feedback_fn)
        rule.uuid = new.uuid

    def RemoveFilter(self, uuid: str, feedback_fn: FeedbackFn = None) -> None:
        self._RemoveObject(uuid, "filters", feedback_fn)

    def UpdateMaintenance(self, values: dict[str, Any],
                          feedback_fn: FeedbackFn = None) -> None:
        """Set fields of the maintenance section (maintd's state, or the
        settings OpClusterSetParams changes); the others stay."""
        unknown = set(values) - Maintenance._SLOT_SET
        if unknown:
            raise errors.ProgrammerError("Unknown maintenance fields: %s" %
                                         ", ".join(sorted(unknown)))

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            new = snap.data.maintenance.Copy()
            for name, value in values.items():
                setattr(new, name, value)
            _Stamp(new, now, new=False)
            return {}, new

        self._Modify(prepare, feedback_fn)

    def CancelMaintenanceIncident(self, incident_id: str,
                                  feedback_fn: FeedbackFn = None) -> None:
        """Note that the admin canceled one of maintd's incidents; the
        canceled ids of incidents maintd already forgot are dropped."""

        def prepare(snap: _Snapshot, now: float) -> tuple[dict, Any]:
            new = snap.data.maintenance.Copy()
            known = [inc.get("id") for inc in new.incidents]
            if incident_id not in known:
                raise errors.ConfigurationError("Unknown incident %s" %
                                                incident_id)
            new.canceled = [inc_id for inc_id in known
                            if inc_id in new.canceled or
                            inc_id == incident_id]
            _Stamp(new, now, new=False)
            return {}, new

        self._Modify(prepare, feedback_fn)

    def _Modify(self, prepare: Callable[[_Snapshot, float], tuple[dict, Any]],
                feedback_fn: FeedbackFn) -> None:
        """Run one write: prepare changes, validate, write, publish, hooks.

        ``prepare(snapshot, now)`` returns ``(changes, new_top)``, where
        ``changes`` maps container to ``{uuid: object or None}`` (None
        removes) and ``new_top`` is the new Cluster, the new Maintenance
        section or the new Placement state (a dict), or None if none
        changes.
        """
        with self._lock:
            now = time.time()
            changes, top = prepare(self._snap, now)
            cluster = top if isinstance(top, Cluster) else None
            maintenance = top if isinstance(top, Maintenance) else None
            placement = top if isinstance(top, dict) else None
            new_snap = self._Apply(self._snap, changes, cluster, now,
                                   maintenance, placement)
            self._Validate(new_snap, changes, cluster)
            if maintenance is not None:
                maintenance.Validate()
            parts, commit_caches = self._AssembleFile(new_snap, changes)
            self._WriteFile(parts)
            commit_caches()
            self._snap = new_snap
            serial = new_snap.data.serial_no
            hooks = self._hooks
        self._RunHooks(hooks, serial, feedback_fn)

    @staticmethod
    def _Apply(old: _Snapshot, changes: dict[str, dict[str, Any]],
               cluster: Cluster | None, now: float,
               maintenance: Maintenance | None = None,
               placement: dict | None = None) -> _Snapshot:
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
               for container in _CONTAINERS})
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
                names[container] = ConfigWriter._UpdatedNames(
                    container, names[container], old_objs, items)
            setattr(new_data, container, objs)
        disk_owner = old.disk_owner
        if changes.get("instances"):
            disk_owner = ConfigWriter._UpdatedDiskOwners(
                data.instances, changes["instances"], disk_owner)
        snap = _Snapshot(new_data, names, disk_owner, order)
        if (cluster is None and
                all(names[c] is old.names[c] for c in names) and
                not any(changes.get(c) for c in ("nodes", "nodegroups",
                                                 "networks"))):
            snap.ssconf = old.ssconf
        if not changes.get("nodes") and not changes.get("nodegroups"):
            snap.members = old.members
        return snap

    @staticmethod
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

    @staticmethod
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

    @staticmethod
    def _Validate(snap: _Snapshot, changes: dict[str, dict[str, Any]],
                  cluster: Cluster | None) -> None:
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

    def _AssembleFile(self, snap: _Snapshot,
                      changes: dict[str, dict[str, Any]]
                      ) -> tuple[list[bytes], Callable[[], None]]:
        """config.data of ``snap`` as byte strings, from cached fragments.

        ``snap`` is the published snapshot with ``changes`` applied. New
        serialized forms go into the caches only when the returned commit
        function is called (after a successful write).
        """
        data = snap.data
        cluster_text = self._cluster_text
        if cluster_text is None or cluster_text[0] is not data.cluster:
            cluster_text = (data.cluster,
                            _ENCODE(data.cluster.ToDict()).encode("ascii"))
        values: dict[str, list[bytes]] = {"cluster": [cluster_text[1]]}
        maintenance_text = self._maintenance_text
        if data.maintenance is not None and (
                maintenance_text is None or
                maintenance_text[0] is not data.maintenance):
            maintenance_text = (data.maintenance, _ENCODE(
                data.maintenance.ToDict()).encode("ascii"))
        if maintenance_text is not None:
            values["maintenance"] = [maintenance_text[1]]
        placement_text = self._placement_text
        if data.placement is not None and (
                placement_text is None or
                placement_text[0] is not data.placement):
            placement_text = (data.placement,
                              _ENCODE(data.placement).encode("ascii"))
        if placement_text is not None:
            values["placement"] = [placement_text[1]]
        new_texts: dict[str, _ContainerText] = {}
        for container in _CONTAINERS:
            cached = self._texts.get(container)
            if cached is None or cached.objs is not snap.Container(container):
                cached = self._BuildContainerText(snap, container, cached,
                                                  changes.get(container))
                new_texts[container] = cached
            values[container] = [b"{", cached.text, b"}"]
        for key in ("ctime", "mtime", "serial_no", "version"):
            value = getattr(data, key)
            if value is not None:
                values[key] = [_ENCODE(value).encode("ascii")]
        parts: list[bytes] = []
        for key in _TOP_LEVEL_KEYS:
            if key in values:
                parts.append(b"%s%s:" % (b"," if parts else b"{",
                                         _ENCODE(key).encode("ascii")))
                parts.extend(values[key])
        parts.append(b"}")

        def commit() -> None:
            self._cluster_text = cluster_text
            self._maintenance_text = maintenance_text
            self._placement_text = placement_text
            self._texts.update(new_texts)

        return parts, commit

    def _BuildContainerText(self, snap: _Snapshot, container: str,
                            old: "_ContainerText | None",
                            items: dict[str, Any] | None) -> "_ContainerText":
        """Serialize a container, re-encoding only the changed objects.

        ``old`` is reused when it serializes the published snapshot's
        container, which ``items`` changed into the one of ``snap``.
        """
        objs = snap.Container(container)
        order = snap.order[container]

        def encode(uuid: str) -> bytes:
            return ("%s:%s" % (_ENCODE(uuid), _ENCODE(objs[uuid].ToDict()))
                    ).encode("ascii")

        # No cache exists (old is None) while the first snapshot loads
        if (old is None or items is None or
                old.objs is not self._snap.Container(container)):
            entries = [encode(uuid) for uuid in order]
            pos = {uuid: idx for idx, uuid in enumerate(order)}
        elif all(uuid in old.pos and obj is not None
                 for uuid, obj in items.items()):
            entries = list(old.entries)
            pos = old.pos
            for uuid in items:
                entries[pos[uuid]] = encode(uuid)
        else:
            entries = [encode(uuid) if uuid in items
                       else old.entries[old.pos[uuid]] for uuid in order]
            pos = {uuid: idx for idx, uuid in enumerate(order)}
        return _ContainerText(objs, entries, pos, b",".join(entries))

    def _WriteFile(self, parts: list[bytes]) -> None:
        try:
            utils.WriteFile(self._cfg_file, fn=lambda fobj: fobj.writelines(
                parts), mode=constants.CONFIG_FILE_MODE)
        except OSError as err:
            raise errors.ConfigurationError("Cannot write configuration file"
                                            " %s: %s" % (self._cfg_file, err))

    def _RunHooks(self, hooks: tuple[WriteHook, ...], serial: int,
                  feedback_fn: FeedbackFn) -> None:
        if self._offline:
            return
        for hook in hooks:
            try:
                hook(self, serial)
            except Exception as err:  # pylint: disable=broad-except
                logging.exception("Configuration write hook %r failed", hook)
                if feedback_fn is not None:
                    feedback_fn("Configuration write hook failed: %s" % err)


def InitConfig(version: int, cluster_config: Cluster,
               master_node_config: Node,
               cfg_file: str = pathutils.CLUSTER_CONF_FILE,
               nodegroup: NodeGroup | None = None) -> ConfigData:
    """Create the first config.data of a cluster (``gnt-cluster init``).

    The given objects are completed in place: UUIDs, serial numbers,
    timestamps and defaults. Without ``nodegroup`` a group named
    "default" is created. An existing file is never overwritten.
    """
    if os.path.exists(cfg_file):
        raise errors.ConfigurationError("Configuration file %s already"
                                        " exists" % cfg_file)
    now = time.time()
    if nodegroup is None:
        nodegroup = NodeGroup(name=constants.DEFAULT_GROUP_NAME)
    for obj in (cluster_config, master_node_config, nodegroup):
        if obj.uuid is None:
            obj.uuid = objects.NewUUID()
        _Stamp(obj, now, new=True)
    master_node_config.group = nodegroup.uuid
    master_node_config.master_candidate = True
    master_node_config.master_capable = True
    master_node_config.offline = False
    master_node_config.drained = False
    cluster_config.master_node = master_node_config.uuid
    for obj in (cluster_config, master_node_config, nodegroup):
        obj.UpgradeConfig()
    nodegroup.ClearDerived()
    maintenance = Maintenance(ctime=now, mtime=now)
    maintenance.UpgradeConfig()
    data = ConfigData(version=version, cluster=cluster_config,
                      nodes={master_node_config.uuid: master_node_config},
                      nodegroups={nodegroup.uuid: nodegroup}, instances={},
                      networks={}, disks={}, filters={},
                      maintenance=maintenance, serial_no=1, ctime=now,
                      mtime=now)
    problems = _Verify(_BuildSnapshot(data)[0])
    if problems:
        raise errors.ConfigurationError("Invalid initial configuration: %s" %
                                        "; ".join(problems))
    try:
        utils.WriteFile(cfg_file, data=SerializeConfig(data),
                        mode=constants.CONFIG_FILE_MODE)
    except OSError as err:
        raise errors.ConfigurationError("Cannot write configuration file"
                                        " %s: %s" % (cfg_file, err))
    return data
