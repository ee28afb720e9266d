"""LUs working on the disks of an existing instance: grow, activate,
deactivate and recreate them.

Only drbd disks are mirrored (file, sharedfile, blockdev and ext keep a
disk on the primary node or on storage every node sees): activate-disks
and grow-disk can wait for their resync; for grow-disk ``wait_for_sync``
also decides, as in Ganeti, whether it shuts down again a disk it had to
activate.
The configuration records each disk's size in MiB; growing and
recreating keep it equal to the device's.
"""

import collections
from typing import Any, Callable

from ganeti import constants, errors, locking, objects
from ganeti.cmdlib.allocator import (CheckNodesMemberOf, ResolveMemberOf,
                                     RunAllocator)
from ganeti.cmdlib.base import ExpandNodeUuidAndName
from ganeti.cmdlib.instance_policy import (
    CalculateGroupIPolicy, ComputeIPolicySpecViolation)
from ganeti.cmdlib.instance_utils import (
    INSTANCE_NOT_RUNNING, AssembleInstanceDisks, CheckInstanceState,
    CheckNodeFreeDisk, CheckNodeOnline, CheckNodeVmCapable,
    GetInstanceInfoText, InstanceLU, InstanceRunning, RemoveDisks,
    SetDisksActive, SetInstancePrimaryNode, ShutdownInstanceDisks,
    WaitForSync)
from ganeti.masterd import iallocator
from ganeti.utils.text import FormatUnit


def _FindDisk(disks: list[objects.Disk], idx: int) -> objects.Disk:
    """The disk with index ``idx``, refusing an index out of range."""
    if not 0 <= idx < len(disks):
        raise errors.OpPrereqError("Invalid disk index: %d (instance has disks"
                                   " 0 to %d)" % (idx, len(disks) - 1),
                                   errors.ECODE_INVAL)
    return disks[idx]


class LUInstanceGrowDisk(InstanceLU):
    """Grow one disk of an instance, running or not.

    The device grows on every node holding it, first in a dry run on all
    of them so that one refusing node leaves every device unchanged.
    """

    HPATH = "disk-grow"

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"DISK": self.op.disk, "AMOUNT": self.op.amount,
                "ABSOLUTE": self.op.absolute}

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        for node_uuid in self.cfg.GetInstanceNodes(instance.uuid):
            CheckNodeOnline(self, node_uuid)
        template = self.cfg.GetInstanceDiskTemplate(instance.uuid)
        if template not in constants.DTS_GROWABLE:
            raise errors.OpPrereqError("Instance's disk layout %s does not"
                                       " support growing" % template,
                                       errors.ECODE_INVAL)
        self.disk = _FindDisk(self.cfg.GetInstanceDisks(instance.uuid),
                              self.op.disk)
        if self.op.absolute:
            self.target = self.op.amount
            self.delta = self.target - self.disk.size
            if self.delta < 0:
                raise errors.OpPrereqError(
                    "Requested size (%s) is smaller than current disk size"
                    " (%s)" % (FormatUnit(self.target, "h"),
                               FormatUnit(self.disk.size, "h")),
                    errors.ECODE_STATE)
        else:
            self.delta = self.op.amount
            self.target = self.disk.size + self.delta
        self.disk_nodes = self.disk.nodes or [instance.primary_node]
        if template in (constants.DT_FILE, constants.DT_DRBD8):
            for node_uuid in self.disk_nodes:
                CheckNodeFreeDisk(self, node_uuid, self.delta,
                                  instance.hypervisor)
        self._CheckIPolicy(template)
        # Also while it runs: a drbd device grows by being exported anew
        # (see storage.drbd), which the fake hypervisor does not hold open
        # and KVM's NBD client connects to again (hypervisor.hv_kvm)
        self.running = InstanceRunning(self, instance)

    def _CheckIPolicy(self, template: str) -> None:
        """Refuse (or with ignore_ipolicy, warn about) a target size the
        policy of the primary node's group does not allow."""
        cfg = self.cfg
        group = cfg.GetNodeGroup(self.pnode.group)
        sizes = [self.target if disk.uuid == self.disk.uuid else disk.size
                 for disk in cfg.GetInstanceDisks(self.instance.uuid)]
        violations = ComputeIPolicySpecViolation(
            CalculateGroupIPolicy(cfg.GetClusterInfo(), group), None, None,
            len(sizes), None, sizes, None, template)
        if not violations:
            return
        msg = "Growing disk %s violates policy: %s" % (self.op.disk,
                                                       ", ".join(violations))
        if self.op.ignore_ipolicy:
            self.LogWarning("%s", msg)
        else:
            raise errors.OpPrereqError(msg, errors.ECODE_INVAL)

    def _Grow(self, node_uuids: list[str], dryrun: bool, backingstore: bool,
              what: str) -> None:
        for node_uuid in node_uuids:
            result = self.rpc.call_blockdev_grow(
                node_uuid, self.disk.ToDict(), self.delta, dryrun,
                backingstore, False)
            result.Raise("%s failed to node %s" %
                         (what, self.cfg.GetNodeInfo(node_uuid).name))

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance, disk = self.instance, self.disk
        AssembleInstanceDisks(self, instance, [disk])
        feedback_fn("Growing disk %s of instance '%s' by %s to %s" %
                    (self.op.disk, instance.name,
                     FormatUnit(self.delta, "h"),
                     FormatUnit(self.target, "h")))
        self._Grow(self.disk_nodes, True, True, "Dry-run grow request")
        self._Grow(self.disk_nodes, False, True, "Grow request")
        # The logical layer on top of the storage lives on the primary only
        self._Grow([instance.primary_node], False, False, "Grow request")
        disk.size = self.target
        self.cfg.Update(disk, feedback_fn)
        if self.op.wait_for_sync and \
                not WaitForSync(self, instance, [disk]):
            self.LogWarning("Disk syncing has not returned a good status;"
                            " check the instance")
        if instance.disks_active or self.running:
            return
        if self.op.wait_for_sync:
            ShutdownInstanceDisks(self, instance, [disk])
        else:
            self.LogWarning("Not shutting down the disk even if the instance"
                            " is not supposed to be running because no wait"
                            " for sync mode was requested")


class LUInstanceActivateDisks(InstanceLU):
    """Assemble an instance's disks on its primary node (no hooks).

    Returns ``[(node name, iv_name, device path)]``; the path is the
    node's own. ``ignore_size`` is accepted as in Ganeti: assembling
    never depends on the recorded size. ``wait_for_sync`` waits for the
    drbd mirrors to be in sync (an error if one stays degraded).
    """

    HPATH = None

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        CheckNodeOnline(self, self.instance.primary_node)

    def Exec(self, feedback_fn: Callable[[str], None]) -> list[tuple]:
        instance = self.instance
        disks = self.cfg.GetInstanceDisks(instance.uuid)
        devices = AssembleInstanceDisks(self, instance, disks)
        SetDisksActive(self, instance.uuid, True)
        if self.op.wait_for_sync and not WaitForSync(self, instance, disks):
            SetDisksActive(self, instance.uuid, False)
            raise errors.OpExecError("Some disks of the instance are"
                                     " degraded!")
        return [(self.pnode.name, disk.iv_name, path)
                for disk, (_, path) in zip(disks, devices)]


class LUInstanceDeactivateDisks(InstanceLU):
    """Shut an instance's disks down (no hooks); ``force`` skips the check
    that the instance does not run."""

    HPATH = None

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        if not self.op.force and InstanceRunning(self, self.instance):
            raise errors.OpPrereqError("Instance is running, can't shutdown"
                                       " block devices", errors.ECODE_STATE)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        ShutdownInstanceDisks(self, instance,
                              self.cfg.GetInstanceDisks(instance.uuid))
        SetDisksActive(self, instance.uuid, False)


class LUInstanceRecreateDisks(InstanceLU):
    """Create again the storage of a stopped instance's missing disks.

    ``disks`` selects the disks (all by default) and may change their
    size and mode; ``nodes`` recreates all of them on other nodes, which
    then hold the instance (the old nodes keep whatever is left there).
    Disks that still exist on the target node are refused: their data
    would be lost.
    """

    HPATH = "instance-recreate-disks"

    _MODIFIABLE = frozenset(["size", "mode", "spindles"])

    def CheckArguments(self) -> None:
        op = self.op
        if op.disks and not isinstance(op.disks[0], (list, tuple)):
            op.disks = [(idx, {}) for idx in sorted(set(op.disks))]
        counts = collections.Counter(idx for idx, _ in op.disks)
        duplicates = sorted(idx for idx, count in counts.items() if count > 1)
        if duplicates:
            raise errors.OpPrereqError("Some disks have been specified more"
                                       " than once: %s" %
                                       ", ".join(map(str, duplicates)),
                                       errors.ECODE_INVAL)
        if op.iallocator and op.nodes:
            raise errors.OpPrereqError("Do not specify both, iallocator and"
                                       " node", errors.ECODE_INVAL)
        op.disks = [(idx, self._CheckChanges(idx, params))
                    for idx, params in op.disks]

    def _CheckChanges(self, idx: int, params: dict) -> dict:
        """The changes of disk ``idx``, converted and checked."""
        unsupported = sorted(set(params) - self._MODIFIABLE)
        if unsupported:
            raise errors.OpPrereqError("Parameters for disk %s try to change"
                                       " unmodifyable parameter(s): %s" %
                                       (idx, ", ".join(unsupported)),
                                       errors.ECODE_INVAL)
        if "spindles" in params:
            raise errors.OpPrereqError("Spindles in instance disks cannot be"
                                       " specified when exclusive storage is"
                                       " not active", errors.ECODE_INVAL)
        changes = dict(params)
        if "size" in changes:
            size = changes["size"]
            try:
                size = int(size)
            except (TypeError, ValueError):
                size = -1
            if isinstance(changes["size"], bool) or size <= 0:
                raise errors.OpPrereqError("Invalid disk size '%s' for disk"
                                           " %d" % (changes["size"], idx),
                                           errors.ECODE_INVAL)
            changes["size"] = size
        if "mode" in changes and \
                changes["mode"] not in objects.DISK_ACCESS_SET:
            raise errors.OpPrereqError("Invalid disk access mode '%s'" %
                                       changes["mode"], errors.ECODE_INVAL)
        return changes

    def ExpandNames(self) -> None:
        super().ExpandNames()
        op = self.op
        if op.nodes:
            expected = op.node_uuids or [None] * len(op.nodes)
            if len(expected) != len(op.nodes):
                raise errors.OpPrereqError("The node UUIDs don't match the"
                                           " nodes", errors.ECODE_INVAL)
            resolved = [ExpandNodeUuidAndName(self.cfg, uuid, name)
                        for uuid, name in zip(expected, op.nodes)]
            op.node_uuids = [uuid for uuid, _ in resolved]
            op.nodes = [name for _, name in resolved]

    def DeclareLocks(self, level: int) -> None:
        super().DeclareLocks(level)
        if level not in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            return
        extra = self.op.node_uuids or []
        if self.op.iallocator:
            # The allocator chooses among the primary node's group
            primary = self.cfg.GetInstanceInfo(
                self.op.instance_uuid).primary_node
            extra = self.cfg.GetNodeGroup(
                self.cfg.GetNodeInfo(primary).group).members
        if extra:
            self.needed_locks[level] = list(dict.fromkeys(
                self.needed_locks[level] + list(extra)))

    def _RunAllocator(self) -> None:
        """New nodes from the allocator: an ``allocate`` request for the
        instance as it is (Ganeti's workaround: no allocator relocates all
        of an instance's nodes at once)."""
        op, instance = self.op, self.instance
        cluster = self.cfg.GetClusterInfo()
        be_full = cluster.FillBE(instance)
        template = self.cfg.GetInstanceDiskTemplate(instance.uuid)
        req = iallocator.IAReqInstanceAlloc(
            name=instance.name, disk_template=template,
            memory=be_full[objects.BE_MAXMEM],
            vcpus=be_full[objects.BE_VCPUS],
            spindle_use=be_full[objects.BE_SPINDLE_USE],
            disks=[{"size": disk.size, "mode": disk.mode}
                   for disk in self.cfg.GetInstanceDisks(instance.uuid)],
            nics=[{}], os=instance.os, tags=sorted(instance.GetTags()),
            hypervisor=instance.hypervisor,
            member_of=ResolveMemberOf(self, [], instance.GetTags()))
        ial = RunAllocator(self, req, op.iallocator)
        resolved = [ExpandNodeUuidAndName(self.cfg, None, name)
                    for name in ial.result]
        op.node_uuids = [uuid for uuid, _ in resolved]
        op.nodes = [name for _, name in resolved]
        self.LogInfo("Selected nodes for instance %s via iallocator %s: %s",
                     instance.name, op.iallocator, ", ".join(op.nodes))
        keep = set(op.node_uuids) | {instance.primary_node}
        for level in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            unneeded = self.glm.list_owned(level) - keep
            if unneeded:
                self.glm.release(level, sorted(unneeded))

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        op, instance = self.op, self.instance
        if op.iallocator:
            self._RunAllocator()
        old_nodes = self.cfg.GetInstanceNodes(instance.uuid)
        if op.node_uuids:
            if len(op.node_uuids) != len(old_nodes):
                raise errors.OpPrereqError(
                    "Instance %s currently has %d nodes, but %d replacement"
                    " nodes were specified" % (instance.name, len(old_nodes),
                                               len(op.node_uuids)),
                    errors.ECODE_INVAL)
            # New nodes get the cluster's reservation defaults, however
            # they were chosen; the nodes it has already stay allowed
            CheckNodesMemberOf(self, [], [uuid for uuid in op.node_uuids
                                          if uuid not in old_nodes],
                               instance.GetTags())
            self.new_primary = op.node_uuids[0]
        else:
            self.new_primary = instance.primary_node
        CheckNodeOnline(self, self.new_primary)
        template = self.cfg.GetInstanceDiskTemplate(instance.uuid)
        if template == constants.DT_DISKLESS:
            raise errors.OpPrereqError("Instance '%s' has no disks" %
                                       instance.name, errors.ECODE_INVAL)
        if template in constants.DTS_MUST_ADOPT:
            raise errors.OpPrereqError(
                "Disk template %s can't recreate disks: its devices are"
                " adopted, not created" % template, errors.ECODE_INVAL)
        # A dead primary being replaced can't tell whether the instance runs
        if not (op.node_uuids and self.pnode.offline):
            CheckInstanceState(self, instance, INSTANCE_NOT_RUNNING,
                               "cannot recreate disks")
        disks = self.cfg.GetInstanceDisks(instance.uuid)
        changes = dict(op.disks) or {idx: {} for idx in range(len(disks))}
        maxidx = max(changes)
        if maxidx >= len(disks):
            raise errors.OpPrereqError("Invalid disk index '%s'" % maxidx,
                                       errors.ECODE_INVAL)
        if op.node_uuids:
            if sorted(changes) != list(range(len(disks))):
                raise errors.OpPrereqError("Can't recreate disks partially"
                                           " and change the nodes at the same"
                                           " time", errors.ECODE_INVAL)
            CheckNodeVmCapable(self, self.new_primary)
        # The disks as they will be created
        self.disks = []
        for idx in sorted(changes):
            disk = disks[idx]
            disk.size = changes[idx].get("size", disk.size)
            disk.mode = changes[idx].get("mode", disk.mode)
            disk.nodes = [self.new_primary]
            self.disks.append(disk)
        if template == constants.DT_FILE:
            CheckNodeFreeDisk(self, self.new_primary,
                              sum(disk.size for disk in self.disks),
                              instance.hypervisor)
        self._CheckMissing()

    def _CheckMissing(self) -> None:
        """Refuse disks whose storage exists on the target node."""
        node_name = self.cfg.GetNodeInfo(self.new_primary).name
        result = self.rpc.call_blockdev_getdimensions(
            self.new_primary, [disk.ToDict() for disk in self.disks])
        result.Raise("Can't check the disks on node %s" % node_name,
                     prereq=True, ecode=errors.ECODE_ENVIRON)
        existing = [disk.iv_name for disk, dims in
                    zip(self.disks, result.payload or []) if dims]
        if existing:
            raise errors.OpPrereqError(
                "Disk(s) %s of instance %s already exist on node %s; only"
                " missing disks can be recreated" %
                (", ".join(existing), self.instance.name, node_name),
                errors.ECODE_STATE)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        node_name = self.cfg.GetNodeInfo(self.new_primary).name
        created: list[objects.Disk] = []
        try:
            for disk in self.disks:
                feedback_fn("* recreating disk %s (%s) on node %s" %
                            (disk.iv_name, FormatUnit(disk.size, "h"),
                             node_name))
                result = self.rpc.call_blockdev_create(
                    self.new_primary, disk.ToDict(), disk.size, instance.name,
                    True, GetInstanceInfoText(instance), False)
                result.Raise("Can't create block device %s on node %s for"
                             " instance %s" % (disk.iv_name, node_name,
                                               instance.name))
                created.append(disk)
        except Exception:
            RemoveDisks(self, instance.name, created)
            raise
        for disk in self.disks:
            stored = self.cfg.GetDiskInfo(disk.uuid)
            if (stored.size, stored.mode) != (disk.size, disk.mode):
                stored.size, stored.mode = disk.size, disk.mode
                self.cfg.Update(stored, feedback_fn)
        if self.new_primary != instance.primary_node:
            SetInstancePrimaryNode(self, instance.uuid, self.new_primary)
            self.LogWarning("Changing the instance's nodes, you will have to"
                            " remove any disks left on the older nodes"
                            " manually")
