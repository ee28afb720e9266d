"""The configuration store: config.data, held in memory, written durably.

Concurrency: the configuration is kept as an immutable snapshot
(``snapshot``). Readers take the current snapshot without locking and
hand out copies (``reader``), so they never wait for a write in progress
(which includes an fsync). Writers are serialized by the one internal
lock of ConfigWriter; each builds a new snapshot sharing every unchanged
object with the old one, validates what changed (``verify``), writes the
file (``serialization``), and only then publishes the new snapshot. A
write that fails, in validation or on disk, leaves both memory and the
file as they were.
"""

import logging
import os
import threading
import time
import types
from typing import Any, Callable, Iterable

from ganeti import constants, errors, netutils, objects, pathutils, utils
from ganeti.config import instances, pools, reader, serialization, verify
from ganeti.config.snapshot import (CONTAINER_OF_CLASS, Apply, BuildSnapshot,
                                    CopyIdentity, Snapshot, Stamp, Stored)
from ganeti.placement import model as placement_model
from ganeti.placement import store as placement_store
from ganeti.utils import gcpause
from ganeti.objects import (Cluster, ConfigData, Disk, FilterRule,
                            Instance, Maintenance, Network, Node, NodeGroup)

WriteHook = Callable[["ConfigWriter", int], None]


class _StalePlacementState(Exception):
    """The Placement state changed since the writer read it."""


FeedbackFn = Callable[[str], None] | None


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

    def __init__(self, snap: Snapshot):
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
                key=lambda inst: utils.NiceSortKey(inst.name)))
        return snap.instances_by_name

    def InstanceDisks(self, inst: Instance) -> list[Disk]:
        """The instance's disks, in order."""
        disks = self._snap.data.disks
        return [disks[uuid] for uuid in inst.disks]


class ConfigWriter(reader.ConfigReader):
    """The cluster configuration, loaded once and kept in memory.

    Every read accessor (ConfigReader) returns independent copies.
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
        # Serialized form of the published snapshot; used and replaced
        # only under self._lock
        self._text = serialization.FileText()
        self._snap = self._Load(accept_foreign)

    # Loading ---------------------------------------------------------------

    def _Load(self, accept_foreign: bool) -> Snapshot:
        # Loading creates hundreds of thousands of containers, none of them
        # garbage; without this the cyclic collector rescans them over and
        # over, which costs a good part of the load time
        with gcpause.CyclicGcPaused():
            return self._LoadFile(accept_foreign)

    def _LoadFile(self, accept_foreign: bool) -> Snapshot:
        data = serialization.ReadConfigFile(self._cfg_file)
        snap, problems = BuildSnapshot(data)
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
        self._text.Assemble(snap, {}, None)[1]()
        return snap

    # Reading (the copying accessors are ConfigReader's) --------------------

    def GetView(self) -> ConfigView:
        """The current configuration, uncopied and not to be modified."""
        return ConfigView(self._snap)

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

    def Update(self, target: Stored,
               feedback_fn: FeedbackFn = None) -> None:
        """Replace a stored object by ``target``, a modified copy of it.

        ``target`` must carry the serial number of the stored object
        (nobody else changed it since it was read); on success its
        ``serial_no`` and ``mtime`` are updated like the stored copy's.
        An instance's NIC addresses follow in their networks' pools.
        """
        stored: list[Stored] = []

        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
            current: Stored | None
            if isinstance(target, Cluster):
                current = snap.data.cluster
                container = None
            else:
                container = CONTAINER_OF_CLASS.get(type(target))
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
            Stamp(new, now, new=False)
            stored.append(new)
            if container is None:
                return {}, new
            changes = {container: {new.uuid: new}}
            if isinstance(new, Instance) and isinstance(current, Instance):
                changes.update(pools.PoolChanges(snap, current, new, now))
            return changes, None

        self._Modify(prepare, feedback_fn)
        if not isinstance(target, FilterRule):
            CopyIdentity(stored[0], target)

    def _AddObject(self, obj: Stored, container: str,
                   feedback_fn: FeedbackFn) -> None:
        new = obj.Copy()
        new.ClearDerived()

        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
            if new.uuid is None:
                new.uuid = snap.UnusedUUID()
            if new.uuid in snap.Container(container):
                raise errors.ConfigurationError("%s already exists" %
                                                new.Describe())
            new.UpgradeConfig()
            Stamp(new, now, new=True)
            return {container: {new.uuid: new}}, None

        self._Modify(prepare, feedback_fn)
        CopyIdentity(new, obj)

    def _RemoveObject(self, uuid: str, container: str,
                      feedback_fn: FeedbackFn,
                      extra: Callable[[Snapshot, Any], dict] | None = None
                      ) -> None:
        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
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
        the Placement API's allocations against it and providers under it
        go in the same write (``placement.model.WithoutProvider``), unless
        those providers have allocations (OpPrereqError)."""

        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
            if node_uuid not in snap.data.nodes:
                raise errors.ConfigurationError("Unknown node %s" %
                                                node_uuid)
            old = snap.data.placement
            if old:
                placement_model.CheckNodeRemovable(
                    old, node_uuid, snap.data.nodes[node_uuid].name)
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

        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
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

        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
            del promoted[:]
            count, wanted, _ = self._CandidateStats(snap, excluded)
            for node in sorted(snap.data.nodes.values(),
                               key=lambda n: utils.NiceSortKey(n.name)):
                if count >= wanted:
                    break
                if (node.master_candidate or node.offline or node.drained or
                        not node.master_capable or node.uuid in excluded):
                    continue
                new = node.Copy()
                new.master_candidate = True
                Stamp(new, now, new=False)
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
        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
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
                    Stamp(node, now, new=False)
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
        self._Modify(lambda snap, now: instances.Added(snap, now, new_inst,
                                                       new_disks),
                     feedback_fn)
        originals: list[Stored] = [instance, *(disks or ())]
        copies: list[Stored] = [new_inst, *new_disks]
        for orig, new in zip(originals, copies):
            CopyIdentity(new, orig)
        for orig, new in zip(disks or (), new_disks):
            orig.iv_name = new.iv_name
        instance.disks = list(new_inst.disks)

    def RemoveInstance(self, inst_uuid: str,
                       feedback_fn: FeedbackFn = None) -> None:
        """Remove an instance and its disks; its network port and its
        drbd disks' ports go back to the cluster's pool, its NICs'
        addresses to their networks' pools."""
        self._Modify(lambda snap, now: instances.Removed(snap, now, inst_uuid),
                     feedback_fn)

    def AllocatePort(self, feedback_fn: FeedbackFn = None) -> int:
        """Take a network port for an instance, as Ganeti does: from the
        pool of returned ports first, else the next above the highest
        used one (up to LAST_DRBD_PORT)."""
        allocated: list[int] = []

        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
            port, cluster = pools.TakePort(snap, now)
            allocated.append(port)
            return {}, cluster

        self._Modify(prepare, feedback_fn)
        return allocated[0]

    def ReleasePorts(self, ports: Iterable[int],
                     feedback_fn: FeedbackFn = None) -> None:
        """Give ports taken by AllocatePort back to the pool (a creation
        that failed before its instance was added)."""
        released = set(ports)
        self._Modify(lambda snap, now: ({}, pools.ReturnPorts(
            snap, released, now)), feedback_fn)

    def RenameInstance(self, inst_uuid: str, new_name: str,
                       feedback_fn: FeedbackFn = None) -> None:
        """Rename an instance, with its file disks' paths, in one write.

        A file disk lives in a directory named after its instance
        (``<storage dir>/<instance>/<file>``): its logical_id moves to the
        new name's directory, which the caller renames on the node.
        """
        self._Modify(lambda snap, now: instances.Renamed(snap, now, inst_uuid,
                                                         new_name),
                     feedback_fn)

    def SetInstancePrimaryNode(self, inst_uuid: str, node_uuid: str,
                               feedback_fn: FeedbackFn = None) -> None:
        """Make ``node_uuid`` an instance's primary node, in one write.

        The disks follow: the old primary is replaced by the new node in
        each disk's nodes (swapped with it where the new node held the
        disk already: a mirrored disk's secondary), so no reader ever sees
        the instance on one node and its disks on another.
        """
        self._Modify(lambda snap, now: instances.PrimaryNodeSet(
            snap, now, inst_uuid, node_uuid), feedback_fn)

    def AddInstanceDisk(self, inst_uuid: str, disk: Disk,
                        idx: int | None = None,
                        feedback_fn: FeedbackFn = None) -> None:
        """Add a new disk to an instance at position ``idx`` (default: last).

        The disks' ``iv_name`` (``disk/N``) follow their new positions.
        """
        new_disk = disk.Copy()
        self._Modify(lambda snap, now: instances.DiskAdded(
            snap, now, inst_uuid, new_disk, idx), feedback_fn)
        CopyIdentity(new_disk, disk)
        disk.iv_name = new_disk.iv_name

    def RemoveInstanceDisk(self, inst_uuid: str, disk_uuid: str,
                           feedback_fn: FeedbackFn = None) -> None:
        """Detach a disk from its instance and remove it."""
        self._Modify(lambda snap, now: instances.DiskRemoved(
            snap, now, inst_uuid, disk_uuid), feedback_fn)

    def SetFilter(self, rule: FilterRule,
                  feedback_fn: FeedbackFn = None) -> None:
        """Add a filter rule, or replace the one with the same UUID."""
        new = rule.Copy()

        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
            if new.uuid is None:
                new.uuid = snap.UnusedUUID()
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

        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
            new = snap.data.maintenance.Copy()
            for name, value in values.items():
                setattr(new, name, value)
            Stamp(new, now, new=False)
            return {}, new

        self._Modify(prepare, feedback_fn)

    def CancelMaintenanceIncident(self, incident_id: str,
                                  feedback_fn: FeedbackFn = None) -> None:
        """Note that the admin canceled one of maintd's incidents; the
        canceled ids of incidents maintd already forgot are dropped."""

        def prepare(snap: Snapshot, now: float) -> tuple[dict, Any]:
            new = snap.data.maintenance.Copy()
            known = [inc.get("id") for inc in new.incidents]
            if incident_id not in known:
                raise errors.ConfigurationError("Unknown incident %s" %
                                                incident_id)
            new.canceled = [inc_id for inc_id in known
                            if inc_id in new.canceled or
                            inc_id == incident_id]
            Stamp(new, now, new=False)
            return {}, new

        self._Modify(prepare, feedback_fn)

    def _Modify(self, prepare: Callable[[Snapshot, float], tuple[dict, Any]],
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
            new_snap = Apply(self._snap, changes, cluster, now, maintenance,
                             placement)
            verify.ValidateChanges(new_snap, changes, cluster)
            if maintenance is not None:
                maintenance.Validate()
            parts, commit_caches = self._text.Assemble(new_snap, changes,
                                                       self._snap)
            serialization.WriteConfigFile(self._cfg_file, parts)
            commit_caches()
            self._snap = new_snap
            serial = new_snap.data.serial_no
            hooks = self._hooks
        self._RunHooks(hooks, serial, feedback_fn)

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
        Stamp(obj, now, new=True)
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
    problems = verify.Verify(BuildSnapshot(data)[0])
    if problems:
        raise errors.ConfigurationError("Invalid initial configuration: %s" %
                                        "; ".join(problems))
    serialization.WriteConfigFile(
        cfg_file, [serialization.SerializeConfig(data).encode("ascii")])
    return data
