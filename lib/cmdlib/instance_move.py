"""LUInstanceMove: move an instance to another node by copying its disks.

For disks that live on one node only (DTS_COPYABLE): the instance is
shut down, its disks are created on the target node and their data copied
there by node-to-node transfers (ganeti.impexp, checksums compared), then
the configuration names the target as the primary node, the source disks
are removed and the instance is started on the target if it is marked up.
Until the configuration changes, a failure removes the target disks again
and restarts the instance on its source node if it was running there, so
the instance stays as it was.
"""

from typing import Any, Callable

from ganeti import constants, errors, impexp, locking, objects
from ganeti.cmdlib.allocator import CheckNodesMemberOf
from ganeti.cmdlib.base import ExpandNodeUuidAndName
from ganeti.cmdlib.instance_policy import (CalculateGroupIPolicy,
                                           CheckTargetNodeIPolicy)
from ganeti.cmdlib.instance_utils import (
    CheckCompressionTool, CheckNodeFreeDisk, CheckNodeFreeMemory,
    CheckNodeNotDrained, CheckNodeOnline, CheckNodeVmCapable,
    GetInstanceInfoText, InstanceLU, InstanceRuntimeInfo, RemoveDisks,
    SetInstancePrimaryNode, ShutdownInstanceDisks, StartInstance)
from ganeti.impexp import master as impexp_master


class LUInstanceMove(InstanceLU):
    """Move an instance by copying its disks to another node."""

    HPATH = "instance-move"

    def CheckArguments(self) -> None:
        CheckCompressionTool(self, self.op.compress)

    def ExpandNames(self) -> None:
        super().ExpandNames()
        self.op.target_node_uuid, self.op.target_node = \
            ExpandNodeUuidAndName(self.cfg, self.op.target_node_uuid,
                                  self.op.target_node)

    def DeclareLocks(self, level: int) -> None:
        super().DeclareLocks(level)
        if level in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES) and \
                self.op.target_node_uuid not in self.needed_locks[level]:
            self.needed_locks[level] = (list(self.needed_locks[level]) +
                                        [self.op.target_node_uuid])

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"TARGET_NODE": self.op.target_node,
                "SHUTDOWN_TIMEOUT": self.op.shutdown_timeout}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        nodes = [self.cfg.GetMasterNode(), self.source_uuid,
                 self.op.target_node_uuid]
        return nodes, nodes

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        self.source_uuid = instance.primary_node
        self.disks = self.cfg.GetInstanceDisks(instance.uuid)
        for idx, disk in enumerate(self.disks):
            if disk.dev_type not in constants.DTS_COPYABLE:
                raise errors.OpPrereqError(
                    "Instance disk %d has disk type %s and is not suitable"
                    " for copying" % (idx, disk.dev_type),
                    errors.ECODE_STATE)
        target = self.cfg.GetNodeInfo(self.op.target_node_uuid)
        if target.uuid == instance.primary_node:
            raise errors.OpPrereqError("Instance %s is already on the node"
                                       " %s" % (instance.name, target.name),
                                       errors.ECODE_STATE)
        CheckNodesMemberOf(self, self.op.member_of, [target.uuid],
                           instance.GetTags())
        CheckNodeOnline(self, target.uuid)
        CheckNodeNotDrained(self, target.uuid)
        CheckNodeVmCapable(self, target.uuid)
        # The data is read there, even if the instance can't be stopped
        CheckNodeOnline(self, instance.primary_node)
        cluster = self.cfg.GetClusterInfo()
        CheckTargetNodeIPolicy(
            self, CalculateGroupIPolicy(cluster,
                                        self.cfg.GetNodeGroup(target.group)),
            instance, target, self.cfg, ignore=self.op.ignore_ipolicy)
        file_space = sum(disk.size for disk in self.disks
                         if disk.dev_type == constants.DT_FILE)
        if file_space:
            CheckNodeFreeDisk(self, target.uuid, file_space,
                              instance.hypervisor)
        if instance.admin_state == objects.ADMINST_UP:
            CheckNodeFreeMemory(self, target.uuid,
                                "failing over instance %s" % instance.name,
                                cluster.FillBE(instance)[objects.BE_MAXMEM],
                                instance.hypervisor)
        else:
            self.LogInfo("Not checking memory on the secondary node as"
                         " instance will not be started")

    def _IsRunning(self, instance: objects.Instance) -> bool:
        """Whether the source runs the instance (unknown counts as no)."""
        try:
            return bool(InstanceRuntimeInfo(self, instance))
        except errors.OpPrereqError as err:
            self.LogWarning("Cannot tell whether instance %s runs: %s",
                            instance.name, err)
            return False

    def _Shutdown(self, instance: objects.Instance,
                  source: objects.Node) -> None:
        self.LogInfo("Shutting down instance %s on source node %s",
                     instance.name, source.name)
        result = self.rpc.call_instance_shutdown(
            source.uuid, self.cfg.GetClusterInfo().InstanceRpcDict(instance),
            self.op.shutdown_timeout)
        if not result.fail_msg:
            return
        if not self.op.ignore_consistency:
            raise errors.OpExecError("Could not shutdown instance %s on node"
                                     " %s: %s" % (instance.name, source.name,
                                                  result.fail_msg))
        self.LogWarning("Could not shutdown instance %s on node %s."
                        " Proceeding anyway. Please make sure node %s is"
                        " down. Error details: %s", instance.name,
                        source.name, source.name, result.fail_msg)

    def _CopyDisks(self, instance: objects.Instance, source: objects.Node,
                   target: objects.Node, target_disks: list[objects.Disk],
                   created: list[objects.Disk],
                   feedback_fn: Callable[[str], None]) -> None:
        """Create the disks on the target and copy the data into them."""
        for disk in target_disks:
            result = self.rpc.call_blockdev_create(
                target.uuid, disk.ToDict(), disk.size, instance.name, True,
                GetInstanceInfoText(instance), False)
            result.Raise("Can't create block device %s on node %s for"
                         " instance %s" % (disk.iv_name, target.name,
                                           instance.name))
            created.append(disk)
        feedback_fn("* copying %d disk(s) from %s to %s" %
                    (len(target_disks), source.name, target.name))
        transfers = [impexp_master.DiskTransfer(
            "disk/%d" % idx, impexp.IEIO_RAW_DISK, disk.ToDict(),
            impexp.IEIO_RAW_DISK, target_disk.ToDict())
            for idx, (disk, target_disk) in enumerate(zip(self.disks,
                                                          target_disks))]
        results = impexp_master.TransferInstanceData(
            self.rpc, feedback_fn, source.uuid, target.uuid,
            target.secondary_ip or target.primary_ip, self.op.compress,
            instance.name, transfers)
        errs = [result.error or "unknown error" for result in results
                if not result.success]
        if errs:
            raise errors.OpExecError("Errors during disk copy: %s" %
                                     ", ".join(errs))
        ShutdownInstanceDisks(self, instance, target_disks,
                              node_uuid=target.uuid)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        source = self.cfg.GetNodeInfo(self.source_uuid)
        target = self.cfg.GetNodeInfo(self.op.target_node_uuid)
        running = self._IsRunning(instance)
        self._Shutdown(instance, source)
        target_disks = []
        for disk in self.disks:
            target_disk = disk.Copy()
            target_disk.nodes = [target.uuid]
            target_disks.append(target_disk)
        created: list[objects.Disk] = []
        try:
            if target_disks:
                self._CopyDisks(instance, source, target, target_disks,
                                created, feedback_fn)
        except Exception:
            self.LogWarning("Some disks failed to copy, aborting")
            RemoveDisks(self, instance.name, created)
            if running:
                self.LogInfo("Restarting instance %s on node %s",
                             instance.name, source.name)
                try:
                    StartInstance(self, instance)
                except errors.OpExecError as err:
                    self.LogWarning("Could not restart instance %s on node"
                                    " %s: %s", instance.name, source.name,
                                    err)
            raise
        instance = SetInstancePrimaryNode(self, instance.uuid, target.uuid)
        if self.disks:
            self.LogInfo("Removing the disks on the original node")
            RemoveDisks(self, instance.name, self.disks)
        if instance.admin_state == objects.ADMINST_UP:
            self.LogInfo("Starting instance %s on node %s", instance.name,
                         target.name)
            StartInstance(self, instance)
