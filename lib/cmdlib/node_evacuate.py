"""LUNodeEvacuate: the instances off a node, by follow-up jobs."""

from typing import Any, Callable

from ganeti import constants, errors, locking, objects, opcodes
from ganeti.cmdlib.allocator import (
    CheckIAllocatorOrNode, CheckNodesMemberOf, InstancesReservationMemberOf,
    LoadNodeEvacResult, ResolveMemberOf, RunAllocator)
from ganeti.cmdlib.base import (
    ExpandNodeUuidAndName, LogicalUnit, ResultWithJobs)
from ganeti.cmdlib.cluster import HypervisorClass
from ganeti.cmdlib.instance_utils import (
    CheckNodeNotDrained, CheckNodeOnline, CheckNodeVmCapable)
from ganeti.masterd import iallocator


class LUNodeEvacuate(LogicalUnit):
    """Move the instances off a node, one follow-up job each.

    With an instance allocator (the opcode's, or the cluster's default
    when no node is named) its ``node-evacuate`` answer gives the jobs,
    within the node's group. Otherwise the admin names the new node,
    Ganeti's ``remote_node``: the new secondary of the drbd instances
    the node is secondary of (replace-disks, as Ganeti), and, unlike
    Ganeti, the new node of the primary instances, each moved the least
    disruptive way its disks allow: a migration (falling back to a
    failover) when they are externally mirrored, a failover when it is
    stopped, a live migration when the hypervisor copies its ``file``
    disks, else a move copying them; a drbd primary migrates to its
    secondary and the named node becomes its new secondary.
    """

    HPATH = "node-evacuate"
    HTYPE = constants.HTYPE_NODE
    REQ_BGL = False

    def CheckArguments(self) -> None:
        CheckIAllocatorOrNode(self, "iallocator", "remote_node")

    def ExpandNames(self) -> None:
        op = self.op
        op.node_uuid, op.node_name = ExpandNodeUuidAndName(
            self.cfg, op.node_uuid, op.node_name)
        if op.remote_node is not None:
            op.remote_node_uuid, op.remote_node = ExpandNodeUuidAndName(
                self.cfg, op.remote_node_uuid, op.remote_node)
            if op.remote_node_uuid == op.node_uuid:
                raise errors.OpPrereqError(
                    "Can not use evacuated node %s as the target node" %
                    op.node_name, errors.ECODE_INVAL)
        # Only looks: the follow-up jobs take their own locks
        self.share_locks[locking.LEVEL_INSTANCE] = 1
        self.share_locks[locking.LEVEL_NODE] = 1
        nodes = {op.node_uuid}
        if op.iallocator:
            # The allocator moves instances within the node's group
            group = self.cfg.GetNodeInfo(op.node_uuid).group
            nodes.update(self.cfg.GetNodeGroup(group).members)
        self.needed_locks = {
            locking.LEVEL_INSTANCE: self._Instances(),
            locking.LEVEL_NODE: sorted(nodes),
        }

    def _Instances(self) -> list[str]:
        """UUIDs of the node's instances the mode selects."""
        primary, secondary = self.cfg.GetNodeInstances(self.op.node_uuid)
        if self.op.mode == constants.NODE_EVAC_PRI:
            return primary
        if self.op.mode == constants.NODE_EVAC_SEC:
            return secondary
        return primary + secondary

    def CheckPrereq(self) -> None:
        op = self.op
        self.instance_uuids = self._Instances()
        self.instance_member_of: dict[str, list[str]] = {}
        owned = self.glm.list_owned(locking.LEVEL_INSTANCE)
        names = sorted(self.cfg.GetInstanceInfo(uuid).name
                       for uuid in self.instance_uuids)
        if set(self.instance_uuids) != set(owned):
            # A locked instance may have been removed meanwhile
            locked = sorted(inst.name for inst in
                            map(self.cfg.GetInstanceInfo, owned) if inst)
            raise errors.OpPrereqError(
                "Instances on node '%s' changed since locks were acquired,"
                " current instances are '%s', used to be '%s'; retry the"
                " operation" % (op.node_name, ", ".join(names),
                                ", ".join(locked)), errors.ECODE_STATE)
        if not names:
            self.LogInfo("No instances to evacuate from node '%s'",
                         op.node_name)
            return
        self.LogInfo("Evacuating instances from node '%s': %s",
                     op.node_name, ", ".join(names))
        instances = [self.cfg.GetInstanceInfo(uuid)
                     for uuid in self.instance_uuids]
        if op.iallocator:
            # The allocator's answer says what can move where; the
            # cluster's reservation defaults differ by instance
            self.instance_member_of = InstancesReservationMemberOf(
                self, instances)
            return
        target = op.remote_node_uuid
        for inst in sorted(instances, key=lambda inst: inst.name):
            CheckNodesMemberOf(self, op.member_of, [target], inst.GetTags(),
                               inst.name)
        CheckNodeOnline(self, target)
        CheckNodeNotDrained(self, target)
        CheckNodeVmCapable(self, target)
        for inst in instances:
            if inst.primary_node == target:
                raise errors.OpPrereqError(
                    "Node %s is the primary node of instance %s, cannot use"
                    " it as secondary" % (op.remote_node, inst.name),
                    errors.ECODE_INVAL)
            if (op.mode != constants.NODE_EVAC_PRI and
                    inst.primary_node == op.node_uuid and
                    target in self.cfg.GetInstanceSecondaryNodes(inst.uuid)):
                raise errors.OpPrereqError(
                    "Node %s is the secondary node of instance %s, cannot"
                    " use it as the new secondary" % (op.remote_node,
                                                      inst.name),
                    errors.ECODE_INVAL)
        stuck = sorted(
            "%s (%s)" % (inst.name, template) for inst, template in
            ((inst, self.cfg.GetInstanceDiskTemplate(inst.uuid))
             for inst in instances if inst.primary_node == op.node_uuid)
            if template not in constants.DTS_MIRRORED and
            template not in constants.DTS_COPYABLE)
        if stuck:
            raise errors.OpPrereqError(
                "Unable to evacuate instances %s: their disk layout allows"
                " neither migration nor move" % ", ".join(stuck),
                errors.ECODE_STATE)

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"NODE_NAME": self.op.node_name,
                "EVAC_MODE": self.op.mode,
                "REMOTE_NODE": self.op.remote_node or ""}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        master = self.cfg.GetMasterNode()
        return [master], [master]

    def _MoveOps(self, uuid: str) -> list[opcodes.OpCode]:
        """The opcodes moving one instance to the target node.

        A drbd primary moves to its secondary (hail's ``failover``), the
        target becoming the new secondary unless it is that already
        (``FailoverAndReplace``).
        """
        instance = self.cfg.GetInstanceInfo(uuid)
        template = self.cfg.GetInstanceDiskTemplate(uuid)
        target = self.op.remote_node
        new_secondary = opcodes.OpInstanceReplaceDisks(
            instance_name=instance.name, remote_node=target, disks=[],
            mode=constants.REPLACE_DISK_CHG,
            early_release=self.op.early_release)
        if instance.primary_node != self.op.node_uuid:
            # The node is the secondary of a drbd instance
            return [new_secondary]
        running = instance.admin_state == objects.ADMINST_UP
        if template in constants.DTS_INT_MIRROR:
            ops: list[opcodes.OpCode] = [
                opcodes.OpInstanceMigrate(instance_name=instance.name,
                                          allow_failover=True)
                if running else
                opcodes.OpInstanceFailover(instance_name=instance.name)]
            if self.op.remote_node_uuid not in \
                    self.cfg.GetInstanceSecondaryNodes(uuid):
                ops.append(new_secondary)
            return ops
        if template in constants.DTS_EXT_MIRROR:
            if running:
                return [opcodes.OpInstanceMigrate(
                    instance_name=instance.name, target_node=target,
                    allow_failover=True)]
            return [opcodes.OpInstanceFailover(instance_name=instance.name,
                                               target_node=target)]
        if (running and template == constants.DT_FILE and
                HypervisorClass(instance.hypervisor).CAN_MIGRATE_STORAGE):
            return [opcodes.OpInstanceMigrate(instance_name=instance.name,
                                              target_node=target)]
        return [opcodes.OpInstanceMove(instance_name=instance.name,
                                       target_node=target)]

    def Exec(self, feedback_fn: Callable[[str], None]) -> ResultWithJobs:
        op = self.op
        if not self.instance_uuids:
            return ResultWithJobs([])
        if not op.iallocator:
            return ResultWithJobs([self._MoveOps(uuid)
                                   for uuid in self.instance_uuids])
        req = iallocator.IAReqNodeEvac(
            [self.cfg.GetInstanceInfo(uuid).name
             for uuid in self.instance_uuids], op.mode,
            ignore_soft_errors=bool(op.ignore_soft_errors),
            member_of=ResolveMemberOf(self, op.member_of, None),
            instance_member_of=self.instance_member_of)
        ial = RunAllocator(self, req, op.iallocator)
        return ResultWithJobs(LoadNodeEvacResult(self, ial.result,
                                                 op.early_release, True))
