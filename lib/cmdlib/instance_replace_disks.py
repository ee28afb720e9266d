"""Replace the disks of a drbd instance (Ganeti's replace-disks).

Only the move to a new secondary node (``replace_new_secondary``, by
name or by an allocator) is done here, while the instance runs: the new
node creates and serves an empty replica, the primary's mirror moves to
it and copies the whole disk, and only once it is in sync the
configuration names the new secondary and the old one's image goes. An
interruption before that leaves the old pair in the configuration,
which the next activation connects again: the configuration never names
a secondary that does not hold the data.
"""

from typing import Any, Callable

from ganeti import constants, errors, locking, objects
from ganeti.cmdlib.allocator import RunAllocator
from ganeti.cmdlib.base import ExpandNodeUuidAndName
from ganeti.cmdlib.instance_utils import (
    AssembleInstanceDisks, CheckNodeFreeDisk, CheckNodeNotDrained,
    CheckNodeOnline, CheckNodeVmCapable, DrbdMinors,
    GetInstanceInfoText, InstanceLU, ShutdownInstanceDisks, WaitForSync)
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
        elif remote is not None or self.op.iallocator is not None:
            raise errors.OpPrereqError(
                "The iallocator and new node options can only be used when"
                " changing the secondary node", errors.ECODE_INVAL)
        else:
            raise errors.OpPrereqError(
                "Replacing the copies on the same nodes (%s) is not"
                " supported; change the secondary node instead (%s)" %
                (self.op.mode, constants.REPLACE_DISK_CHG),
                errors.ECODE_INVAL)

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
            self.op.instance_uuid) + [self.op.remote_node_uuid]

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        if self.cfg.GetInstanceDiskTemplate(instance.uuid) != \
                constants.DT_DRBD8:
            raise errors.OpPrereqError("Can only run replace disks for"
                                       " DRBD8-based instances",
                                       errors.ECODE_INVAL)
        self.disks = self.cfg.GetInstanceDisks(instance.uuid)
        for idx in self.op.disks:
            if idx >= len(self.disks):
                raise errors.OpPrereqError("Invalid disk index: %d" % idx,
                                           errors.ECODE_INVAL)
        secondaries = [uuid for uuid in
                       self.cfg.GetInstanceNodes(instance.uuid)
                       if uuid != instance.primary_node]
        if len(secondaries) != 1:
            raise errors.OpPrereqError(
                "The instance has a strange layout, expected one secondary"
                " but found %d" % len(secondaries), errors.ECODE_FAULT)
        self.old_snode = secondaries[0]
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
            relocate_from_node_uuids=[self.old_snode])
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
        new = self.op.remote_node_uuid
        new_name = self.cfg.GetNodeInfo(new).name
        activate = not instance.disks_active
        if activate:
            AssembleInstanceDisks(self, instance, self.disks,
                                  ignore_secondaries=True)
        try:
            self._Replace(new, new_name)
        finally:
            if activate:
                ShutdownInstanceDisks(
                    self, instance,
                    self.cfg.GetInstanceDisks(instance.uuid))

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
