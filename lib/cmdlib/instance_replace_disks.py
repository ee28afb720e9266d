"""Replace the disks of a drbd instance (Ganeti's replace-disks).

Two kinds of replacement, both while the instance runs:

* On the same nodes (``-p``, ``-s``, ``-a``): one node's copy of the
  chosen disks is made anew and fully copied from the other node. The
  configuration does not change; the old image is set aside on that node
  and deleted once the pair is in sync again. ``-a`` picks the node
  whose local disk is faulty (its image gone), Ganeti's automatic mode.
* To a new secondary node (``replace_new_secondary``, by name or by an
  allocator): the new node creates and serves an empty replica, the
  primary's mirror moves to it and copies the whole disk, and only once
  it is in sync the configuration names the new secondary and the old
  one's image goes. An interruption before that leaves the old pair in
  the configuration, which the next activation connects again: the
  configuration never names a secondary that does not hold the data.
"""

from typing import Any, Callable

from ganeti import constants, errors, locking, objects
from ganeti.cmdlib.allocator import (CheckIAllocatorOrNode,
                                     CheckNodesMemberOf, ResolveMemberOf,
                                     RunAllocator)
from ganeti.cmdlib.base import ExpandNodeUuidAndName
from ganeti.cmdlib.instance_utils import (
    AssembleInstanceDisks, CheckNodeFreeDisk, CheckNodeNotDrained,
    CheckNodeOnline, CheckNodeVmCapable, DrbdMinors,
    GetInstanceInfoText, InstanceLU, SettledMirrorStatus,
    ShutdownInstanceDisks, WaitForSync)
from ganeti.masterd import iallocator

_STEPS = 6


class LUInstanceReplaceDisks(InstanceLU):
    """Move the mirror of a drbd instance's disks to a new secondary."""

    HPATH = "mirrors-replace"

    def CheckArguments(self) -> None:
        remote = self.op.remote_node or self.op.remote_node_uuid
        if self.op.mode == constants.REPLACE_DISK_CHG:
            if remote is None and self.op.iallocator is None:
                raise errors.OpPrereqError(
                    "When changing the secondary either an iallocator"
                    " script must be used or the new node given",
                    errors.ECODE_INVAL)
            if remote is not None and self.op.iallocator is not None:
                raise errors.OpPrereqError(
                    "Give either the iallocator or the new secondary, not"
                    " both", errors.ECODE_INVAL)
            if remote is None:
                # "-I ." names the cluster's default allocator
                CheckIAllocatorOrNode(self, "iallocator", "remote_node")
        elif remote is not None or self.op.iallocator is not None:
            raise errors.OpPrereqError(
                "The iallocator and new node options can only be used when"
                " changing the secondary node", errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        super().ExpandNames()
        if self.op.remote_node or self.op.remote_node_uuid:
            self.op.remote_node_uuid, self.op.remote_node = \
                ExpandNodeUuidAndName(self.cfg, self.op.remote_node_uuid,
                                      self.op.remote_node)

    def DeclareLocks(self, level: int) -> None:
        if level not in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            return
        if self.op.iallocator is not None:
            # Any node may become the secondary
            self.needed_locks[level] = locking.ALL_SET
            return
        self.needed_locks[level] = self.cfg.GetInstanceNodes(
            self.op.instance_uuid)
        if self.op.remote_node_uuid:
            self.needed_locks[level].append(self.op.remote_node_uuid)

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        if self.cfg.GetInstanceDiskTemplate(instance.uuid) != \
                constants.DT_DRBD8:
            raise errors.OpPrereqError("Can only run replace disks for"
                                       " DRBD8-based instances",
                                       errors.ECODE_INVAL)
        self.disks = self.cfg.GetInstanceDisks(instance.uuid)
        secondaries = [uuid for uuid in
                       self.cfg.GetInstanceNodes(instance.uuid)
                       if uuid != instance.primary_node]
        if len(secondaries) != 1:
            raise errors.OpPrereqError(
                "The instance has a strange layout, expected one secondary"
                " but found %d" % len(secondaries), errors.ECODE_FAULT)
        self.old_snode = secondaries[0]
        if self.op.disks and self.op.mode in (constants.REPLACE_DISK_AUTO,
                                              constants.REPLACE_DISK_CHG):
            raise errors.OpPrereqError("Cannot specify disks to be replaced",
                                       errors.ECODE_INVAL)
        for idx in self.op.disks:
            if idx >= len(self.disks):
                raise errors.OpPrereqError("Invalid disk index: %d" % idx,
                                           errors.ECODE_INVAL)
        # The node whose copies are made anew and the indexes of the disks
        self.target = self.old_snode
        self.replace = sorted(set(self.op.disks)) or \
            list(range(len(self.disks)))
        if self.op.mode != constants.REPLACE_DISK_CHG:
            CheckNodeOnline(self, instance.primary_node)
            CheckNodeOnline(self, self.old_snode)
            if self.op.mode == constants.REPLACE_DISK_PRI:
                self.target = instance.primary_node
            elif self.op.mode == constants.REPLACE_DISK_AUTO:
                self._FindFaulty()
            # The old image stays until the new one is in sync
            CheckNodeFreeDisk(self, self.target,
                              sum(self.disks[idx].size
                                  for idx in self.replace),
                              instance.hypervisor)
            return
        self._CheckNewSecondary()

    def _FindFaulty(self) -> None:
        """Ganeti's automatic mode: the disks whose local storage is
        faulty on one node (none: nothing to do; both: refused)."""
        instance = self.instance
        for idx, disk in enumerate(self.disks):
            for node_uuid in disk.nodes:
                self.LogInfo("Checking disk/%d on %s", idx,
                             self.cfg.GetNodeInfo(node_uuid).name)
                result = self.rpc.call_blockdev_find(node_uuid, disk.ToDict())
                if result.fail_msg or not result.payload:
                    raise errors.OpPrereqError(
                        "Please run activate-disks on instance %s first" %
                        instance.name, errors.ECODE_STATE)
        faulty = {}
        for node_uuid in (instance.primary_node, self.old_snode):
            result = self.rpc.call_blockdev_getmirrorstatus(
                node_uuid, [disk.ToDict() for disk in self.disks])
            result.Raise("Failed to get disk status from node %s" %
                         self.cfg.GetNodeInfo(node_uuid).name, prereq=True,
                         ecode=errors.ECODE_ENVIRON)
            faulty[node_uuid] = [idx for idx, status in
                                 enumerate(result.payload)
                                 if status[6] == constants.LDS_FAULTY]
        if faulty[instance.primary_node] and faulty[self.old_snode]:
            raise errors.OpPrereqError(
                "Instance %s has faulty disks on more than one node and can"
                " not be repaired automatically" % instance.name,
                errors.ECODE_STATE)
        if faulty[instance.primary_node]:
            self.target = instance.primary_node
        self.replace = faulty[self.target]

    def _CheckNewSecondary(self) -> None:
        instance = self.instance
        if self.op.iallocator is not None:
            self.op.remote_node_uuid = self._Allocate()
        new = self.op.remote_node_uuid
        if new == instance.primary_node:
            raise errors.OpPrereqError("The specified node is the primary"
                                       " node of the instance",
                                       errors.ECODE_INVAL)
        if new == self.old_snode:
            raise errors.OpPrereqError("The specified node is already the"
                                       " secondary node of the instance",
                                       errors.ECODE_INVAL)
        # The cluster's reservation defaults, however the node was chosen
        CheckNodesMemberOf(self, [], [new], instance.GetTags())
        CheckNodeOnline(self, instance.primary_node)
        CheckNodeOnline(self, new)
        CheckNodeNotDrained(self, new)
        CheckNodeVmCapable(self, new)
        CheckNodeFreeDisk(self, new, sum(disk.size for disk in self.disks),
                          instance.hypervisor)

    def _Allocate(self) -> str:
        """The allocator's new secondary (Ganeti's relocation request)."""
        req = iallocator.IAReqRelocate(
            inst_uuid=self.instance.uuid,
            relocate_from_node_uuids=[self.old_snode],
            member_of=ResolveMemberOf(self, [], self.instance.GetTags()))
        ial = RunAllocator(self, req, self.op.iallocator)
        if len(ial.result) != 1:
            raise errors.OpPrereqError(
                "Iallocator '%s' returned %d nodes for the new secondary,"
                " expected one" % (self.op.iallocator, len(ial.result)),
                errors.ECODE_FAULT)
        uuid, name = ExpandNodeUuidAndName(self.cfg, None, ial.result[0])
        self.LogInfo("Selected new secondary for instance '%s': %s",
                     self.instance.name, name)
        return uuid

    def _ExtraHookEnv(self) -> dict[str, Any]:
        new = self.op.remote_node_uuid
        return {
            "MODE": self.op.mode,
            "NEW_SECONDARY": self.cfg.GetNodeInfo(new).name if new else "",
            "OLD_SECONDARY": self.cfg.GetNodeInfo(self.old_snode).name,
        }

    def _NewDisks(self) -> list[objects.Disk]:
        """Copies of the disks naming the new secondary (and a minor free
        there) in place of the old one; port and secret stay."""
        new = self.op.remote_node_uuid
        taken: dict[str, set[int]] = {}
        result = []
        for disk in self.disks:
            (minor, ) = DrbdMinors(self.cfg, [new], taken)
            logical_id = list(disk.logical_id)
            slot = logical_id.index(self.old_snode)
            logical_id[slot] = new
            logical_id[slot + 3] = minor
            result.append(objects.Disk.FromDict(dict(
                disk.ToDict(), logical_id=logical_id,
                nodes=[new if uuid == self.old_snode else uuid
                       for uuid in disk.nodes])))
        return result

    def _Primary(self, disks: list[objects.Disk]) -> None:
        """Point the primary's mirrors at the secondary ``disks`` name."""
        for idx, disk in enumerate(disks):
            self.rpc.call_blockdev_assemble(
                self.instance.primary_node, disk.ToDict(),
                {"name": self.instance.name}, True, idx).Raise(
                    "Cannot change the peer of disk/%d" % idx)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        if not self.replace:
            feedback_fn("No disks need replacement for instance '%s'" %
                        instance.name)
            return
        feedback_fn("Replacing disk(s) %s for instance '%s'" %
                    (", ".join(map(str, self.replace)), instance.name))
        feedback_fn("Current primary node: %s" % self.pnode.name)
        feedback_fn("Current secondary node: %s" %
                    self.cfg.GetNodeInfo(self.old_snode).name)
        activate = not instance.disks_active
        if activate:
            AssembleInstanceDisks(self, instance, self.disks,
                                  ignore_secondaries=True)
        try:
            if self.op.mode == constants.REPLACE_DISK_CHG:
                new = self.op.remote_node_uuid
                self._Replace(new, self.cfg.GetNodeInfo(new).name)
            else:
                self._ReplaceInPlace()
        finally:
            if activate:
                ShutdownInstanceDisks(
                    self, instance,
                    self.cfg.GetInstanceDisks(instance.uuid))

    def _ReplaceInPlace(self) -> None:
        """Make the target node's copies anew from the other node's
        (Ganeti's _ExecDrbd8DiskOnly, same step names)."""
        instance = self.instance
        pnode = instance.primary_node
        on_primary = self.target == pnode
        other = self.old_snode if on_primary else pnode
        names = {uuid: self.cfg.GetNodeInfo(uuid).name
                 for uuid in (pnode, self.old_snode)}
        disks = [(idx, self.disks[idx]) for idx in self.replace]
        self.LogStep(1, _STEPS, "Check device existence")
        for idx, disk in disks:
            for node_uuid in (other, self.target):
                self.LogInfo("Checking disk/%d on %s", idx, names[node_uuid])
                result = self.rpc.call_blockdev_find(node_uuid,
                                                     disk.ToDict())
                if result.fail_msg or not result.payload:
                    raise errors.OpExecError(
                        "Can't find disk/%d on node %s: %s" %
                        (idx, names[node_uuid],
                         result.fail_msg or "disk not found"))
        self.LogStep(2, _STEPS, "Check peer consistency")
        for idx, _ in disks:
            self.LogInfo("Checking disk/%d consistency on node %s", idx,
                         names[other])
        # The primary knows both sides: whether its local data is sound
        # and whether the secondary has all of it
        def _Unsound(status: list) -> bool:
            return status[5] if on_primary \
                else status[6] != constants.LDS_OKAY

        result = SettledMirrorStatus(self.rpc, pnode,
                                     [disk.ToDict() for _, disk in disks],
                                     _Unsound)
        result.Raise("Can't get the disk status on node %s" % names[pnode])
        if any(_Unsound(status) for status in result.payload):
            raise errors.OpExecError(
                "Node %s has degraded storage, unsafe to replace disks for"
                " instance %s" % (names[other], instance.name))
        self.LogStep(3, _STEPS, "Allocate new storage")
        try:
            for idx, disk in disks:
                self.LogInfo("Adding storage on %s for disk/%d",
                             names[self.target], idx)
                if not on_primary:
                    self.LogInfo("Detaching %s drbd from its secondary",
                                 disk.iv_name)
                    self.rpc.call_drbd_disconnect_net(
                        pnode, [disk.ToDict()]).Raise(
                            "Can't detach disk/%d from its secondary" % idx)
                self.rpc.call_drbd_replace_image(
                    self.target, disk.ToDict(), on_primary).Raise(
                        "Can't replace the storage of disk/%d on node %s" %
                        (idx, names[self.target]))
        except Exception:
            # The pair as far as it goes, the secondary getting a full copy
            self._AttachPrimary(disks, best_effort=True)
            raise
        self.LogStep(4, _STEPS, "Changing drbd configuration")
        self._AttachPrimary(disks)
        self.LogStep(5, _STEPS, "Sync devices")
        if not WaitForSync(self, instance, [disk for _, disk in disks]):
            raise errors.OpExecError("Disks of instance %s are degraded" %
                                     instance.name)
        self.LogStep(6, _STEPS, "Removing old storage")
        for _, disk in disks:
            self.LogInfo("Remove old storage of %s", disk.iv_name)
            result = self.rpc.call_drbd_remove_replaced(self.target,
                                                        disk.ToDict())
            if result.fail_msg:
                self.LogWarning("Can't remove old storage: %s",
                                result.fail_msg)

    def _AttachPrimary(self, disks: list[tuple[int, objects.Disk]],
                       best_effort: bool = False) -> None:
        """Connect the primary's mirrors to the secondary; a replaced
        copy on either side makes it a full copy."""
        for idx, disk in disks:
            self.LogInfo("Adding new mirror component on %s",
                         self.cfg.GetNodeInfo(self.target).name)
            result = self.rpc.call_blockdev_assemble(
                self.instance.primary_node, disk.ToDict(),
                {"name": self.instance.name}, True, idx)
            if best_effort and result.fail_msg:
                self.LogWarning("Can't attach disk/%d to its secondary: %s",
                                idx, result.fail_msg)
            else:
                result.Raise("Can't attach disk/%d to its secondary" % idx)

    def _CheckPrimary(self) -> None:
        """Steps 1 and 2: the primary's disks are there, its local data
        sound (the old secondary may be dead)."""
        instance = self.instance
        self.LogStep(1, _STEPS, "Check device existence")
        self.LogInfo("Checking disk/* on %s", self.pnode.name)
        result = self.rpc.call_blockdev_getmirrorstatus(
            instance.primary_node, [disk.ToDict() for disk in self.disks])
        result.Raise("Can't get the disk status on node %s" %
                     self.pnode.name)
        self.LogStep(2, _STEPS, "Check peer consistency")
        for idx, status in enumerate(result.payload):
            if status[0] is None:
                raise errors.OpExecError("Can't find disk/%d on node %s" %
                                         (idx, self.pnode.name))
            if status[6] != constants.LDS_OKAY:
                raise errors.OpExecError(
                    "Node %s has degraded storage, unsafe to replace disks"
                    " for instance %s" % (self.pnode.name, instance.name))

    def _Replace(self, new: str, new_name: str) -> None:
        instance = self.instance
        self._CheckPrimary()
        self.LogStep(3, _STEPS, "Allocate new storage")
        new_disks = self._NewDisks()
        info = GetInstanceInfoText(instance)
        created: list[objects.Disk] = []
        moved = False
        try:
            for idx, disk in enumerate(new_disks):
                self.LogInfo("Adding new local storage on %s for disk/%d",
                             new_name, idx)
                self.rpc.call_blockdev_create(
                    new, disk.ToDict(), disk.size, instance.name, False,
                    info, False).Raise("Can't create disk/%d on node %s" %
                                       (idx, new_name))
                created.append(disk)
                self.rpc.call_blockdev_assemble(
                    new, disk.ToDict(), {"name": instance.name}, False,
                    idx).Raise("Can't serve disk/%d on node %s" %
                               (idx, new_name))
            self.LogStep(4, _STEPS, "Changing drbd configuration")
            self.LogInfo("Attaching primary drbds to new secondary"
                         " (standalone => connected)")
            moved = True
            self._Primary(new_disks)
            self.LogStep(5, _STEPS, "Sync devices")
            if not WaitForSync(self, instance, new_disks):
                raise errors.OpExecError("Disks of instance %s are degraded"
                                         " on the new secondary %s" %
                                         (instance.name, new_name))
        except Exception:
            self.LogWarning("Replacing the secondary failed, going back to"
                            " %s", self.cfg.GetNodeInfo(self.old_snode).name)
            if moved:
                self._Primary(self.disks)
            for disk in created:
                result = self.rpc.call_blockdev_remove(new, disk.ToDict())
                if result.fail_msg:
                    self.LogWarning("Can't remove new storage on %s: %s",
                                    new_name, result.fail_msg)
            raise
        old_disks = [disk.ToDict() for disk in self.disks]
        for disk, new_disk in zip(self.disks, new_disks):
            disk.logical_id = new_disk.logical_id
            disk.nodes = new_disk.nodes
            self.cfg.Update(disk, self.LogInfo)
        self.LogStep(6, _STEPS, "Removing old storage")
        old_name = self.cfg.GetNodeInfo(self.old_snode).name
        for idx, old in enumerate(old_disks):
            result = self.rpc.call_blockdev_remove(self.old_snode, old)
            if result.fail_msg:
                self.LogWarning("Can't remove old storage of disk/%d on %s:"
                                " %s", idx, old_name, result.fail_msg)
