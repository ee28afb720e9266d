"""The state and the prerequisite checks of a failover or migration.

Ganeti's TLMigrateInstance.CheckPrereq and what it builds on: the target
node (the secondary, the allocator's or the one named), the memory there,
the mode (live or not, or a fallback to a failover) and whether the disk
template lets the instance move. TLMigrateInstance (instance_migration)
adds the execution.
"""

from typing import Any, Callable

from ganeti import constants, errors, locking, objects
from ganeti.cmdlib.allocator import (
    CheckIAllocatorOrNode, CheckNodesMemberOf, ResolveMemberOf, RunAllocator)
from ganeti.cmdlib.base import ExpandNodeUuidAndName
from ganeti.cmdlib.cluster import CheckHvParamsOnNodes, HypervisorClass
from ganeti.cmdlib.instance_policy import (
    CalculateGroupIPolicy, CheckTargetNodeIPolicy)
from ganeti.cmdlib.instance_utils import (
    CheckNodeFreeDisk, CheckNodeFreeMemory, CheckNodeNotDrained,
    CheckNodeOnline, CheckNodeVmCapable, InstanceLU, InstanceRuntimeInfo,
    SetInstancePrimaryNode)
from ganeti.masterd import iallocator


class MigrationChecks:
    """The state of TLMigrateInstance and its CheckPrereq."""

    def __init__(self, lu: InstanceLU, cleanup: bool, failover: bool,
                 fallback: bool, ignore_consistency: bool,
                 allow_runtime_changes: bool, shutdown_timeout: int,
                 ignore_ipolicy: bool, ignore_hvversions: bool):
        self.lu = lu
        self.cfg = lu.cfg
        self.rpc = lu.rpc
        self.cleanup = cleanup
        self.failover = failover
        self.fallback = fallback
        self.ignore_consistency = ignore_consistency
        self.allow_runtime_changes = allow_runtime_changes
        self.shutdown_timeout = shutdown_timeout
        self.ignore_ipolicy = ignore_ipolicy
        self.ignore_hvversions = ignore_hvversions
        self.live = False
        # Set by CheckPrereq, which runs before anything reads them
        self.instance: objects.Instance
        self.source_node_uuid: str
        self.target_node_uuid: str
        self.current_mem = 0
        self.tgt_free_mem = 0
        self.migration_info: Any = None
        # file disks, copied to the target by the hypervisor
        self.copy_disks = False
        self.target_disks: list[objects.Disk] = []
        # drbd: the disks are on the source and the target already
        self.int_mirror = False
        self.feedback_fn: Callable[[str], None] = lambda msg: None

    # Checks ----------------------------------------------------------------

    def _What(self) -> str:
        return "failovers" if self.failover else "migrations"

    def CheckPrereq(self) -> None:
        lu = self.lu
        op = lu.op
        instance = self.instance = lu.instance
        cluster = self.cfg.GetClusterInfo()
        self.source_node_uuid = instance.primary_node
        if (not self.cleanup and not self.failover and self.fallback and
                instance.admin_state != objects.ADMINST_UP):
            lu.LogInfo("Instance is marked down or offline, fallback"
                       " allowed, switching to failover")
            self.failover = True
        template = self.cfg.GetInstanceDiskTemplate(instance.uuid)
        self.copy_disks = (
            template == constants.DT_FILE and
            HypervisorClass(instance.hypervisor).CAN_MIGRATE_STORAGE)
        self._CheckTemplate(template)
        self.int_mirror = template in constants.DTS_INT_MIRROR
        if template not in constants.DTS_EXT_MIRROR and \
                not self.copy_disks and not self.int_mirror:
            raise errors.OpPrereqError(
                "Instance's disk layout '%s' is not supported by this"
                " version" % template, errors.ECODE_STATE)
        if self.int_mirror:
            target = self._SecondaryTarget(template)
        else:
            CheckIAllocatorOrNode(lu, "iallocator", "target_node")
            if op.iallocator:
                self._RunAllocator()
            target = op.target_node_uuid
        self.target_node_uuid = target
        CheckNodesMemberOf(lu, op.member_of, [target], instance.GetTags())
        if target == instance.primary_node:
            raise errors.OpPrereqError(
                "Cannot migrate instance %s to its primary (%s)" %
                (instance.name, self.cfg.GetNodeNames([target])[0]),
                errors.ECODE_STATE)
        self._CheckTarget(cluster)
        if not (self.failover or self.cleanup):
            self._CheckRunning()
        if self.cleanup:
            CheckNodeOnline(lu, self.source_node_uuid)
        elif not self.failover or \
                instance.admin_state == objects.ADMINST_UP:
            filled_be = cluster.FillBE(instance)
            if self.failover:
                reason = "failing over instance %s" % instance.name
                needed = filled_be[objects.BE_MAXMEM]
            else:
                reason = "migrating instance %s" % instance.name
                needed = filled_be[objects.BE_MINMEM]
            self.tgt_free_mem = CheckNodeFreeMemory(
                lu, target, reason, needed, instance.hypervisor)
        else:
            lu.LogInfo("Not checking memory on the target node as the"
                       " instance will not be started")
        self.live = False
        if not self.failover:
            mode = op.mode
            if op.live is not None:
                mode = (constants.HT_MIGRATION_LIVE if op.live
                        else constants.HT_MIGRATION_NONLIVE)
            hvparams = cluster.FillHV(instance)
            if mode is None:
                mode = hvparams.get(objects.HV_MIGRATION_MODE,
                                    constants.HT_MIGRATION_LIVE)
            self.live = mode == constants.HT_MIGRATION_LIVE
            unsafe = HypervisorClass(instance.hypervisor) \
                .LiveMigrationUnsafe(hvparams)
            if self.live and unsafe:
                # Nothing may be lost: a longer pause is the lesser evil
                lu.LogWarning("Migrating instance %s non-live: %s",
                              instance.name, unsafe)
                self.live = False
        # A fallback to a failover was decided on the way
        self._CheckTemplate(template)
        if self.copy_disks and not self.cleanup:
            CheckNodeFreeDisk(lu, target,
                              sum(disk.size for disk in self._Disks()),
                              instance.hypervisor)

    def _SecondaryTarget(self, template: str) -> str:
        """An internally mirrored instance moves to its secondary only."""
        lu = self.lu
        secondaries = self.cfg.GetInstanceSecondaryNodes(self.instance.uuid)
        if not secondaries:
            raise errors.ConfigurationError("No secondary node but using"
                                            " %s disk template" % template)
        if lu.op.iallocator or (lu.op.target_node_uuid and
                                lu.op.target_node_uuid != secondaries[0]):
            raise errors.OpPrereqError(
                "Instances with disk template %s cannot be %s to arbitrary"
                " nodes (neither an iallocator nor a target node can be"
                " passed)" % (template, "failed over" if self.failover
                              else "migrated"), errors.ECODE_INVAL)
        lu.op.target_node_uuid = secondaries[0]
        lu.op.target_node = self._NodeName(secondaries[0])
        return secondaries[0]

    def _RunAllocator(self) -> None:
        """The target chosen by the allocator's ``relocate`` answer (only
        the locks of the source and the target are kept)."""
        lu = self.lu
        req = iallocator.IAReqRelocate(
            self.instance.uuid, [self.instance.primary_node],
            member_of=ResolveMemberOf(lu, lu.op.member_of,
                                      self.instance.GetTags()))
        ial = RunAllocator(lu, req, lu.op.iallocator)
        lu.op.target_node_uuid, lu.op.target_node = ExpandNodeUuidAndName(
            self.cfg, None, ial.result[0])
        lu.LogInfo("Selected nodes for instance %s via iallocator %s: %s",
                   self.instance.name, lu.op.iallocator,
                   ", ".join(ial.result))
        keep = {self.instance.primary_node, lu.op.target_node_uuid}
        for level in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            unneeded = lu.glm.list_owned(level) - keep
            if unneeded:
                lu.glm.release(level, sorted(unneeded))

    def _CheckTemplate(self, template: str) -> None:
        """Only externally mirrored disks, and file disks the hypervisor
        copies during a migration, can change their node."""
        if template in constants.DTS_MIRRORED or \
                (self.copy_disks and not self.failover):
            return
        raise errors.OpPrereqError(
            "Instance's disk layout '%s' does not allow %s" %
            (template, self._What()), errors.ECODE_STATE)

    def _CheckTarget(self, cluster: objects.Cluster) -> None:
        """The target node must be usable and fit the instance."""
        lu = self.lu
        instance = self.instance
        target = self.target_node_uuid
        node = self.cfg.GetNodeInfo(target)
        CheckNodeOnline(lu, target)
        if not self.cleanup:
            CheckNodeNotDrained(lu, target)
        CheckNodeVmCapable(lu, target)
        CheckTargetNodeIPolicy(
            lu, CalculateGroupIPolicy(cluster,
                                      self.cfg.GetNodeGroup(node.group)),
            instance, node, self.cfg, ignore=self.ignore_ipolicy)
        CheckHvParamsOnNodes(lu, [target], instance.hypervisor,
                             cluster.FillHV(instance))
        if (not self.cleanup and not self.failover and
                cluster.FillBE(instance)[objects.BE_ALWAYS_FAILOVER]):
            lu.LogInfo("Instance configured to always failover; fallback"
                       " to failover")
            self.failover = True

    def _CheckRunning(self) -> None:
        """A migration needs the instance running on its source node."""
        lu = self.lu
        instance = self.instance
        CheckNodeOnline(lu, self.source_node_uuid)
        info = InstanceRuntimeInfo(lu, instance)
        if info:
            self.current_mem = int(info["memory"])
            return
        if self.fallback:
            lu.LogInfo("Can't migrate, instance offline, fallback to"
                       " failover")
            self.failover = True
            return
        raise errors.OpPrereqError(
            "Can't migrate, please use failover: instance %s is not"
            " running on node %s" %
            (instance.name, self._NodeName(self.source_node_uuid)),
            errors.ECODE_STATE)

    # Helpers ---------------------------------------------------------------

    def _NodeName(self, node_uuid: str) -> str:
        return self.cfg.GetNodeNames([node_uuid])[0]

    def _RpcInstance(self) -> dict:
        return self.cfg.GetClusterInfo().InstanceRpcDict(self.instance)

    def _Disks(self) -> list[objects.Disk]:
        return self.cfg.GetInstanceDisks(self.instance.uuid)

    def _SwitchPrimary(self) -> None:
        self.instance = SetInstancePrimaryNode(self.lu, self.instance.uuid,
                                               self.target_node_uuid)
