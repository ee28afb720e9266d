"""LUs removing and renaming instances and changing their node group;
creating them is instance_create's.

The name checks (resolving a new name, the IP check) are shared with
instance_create.
"""

import logging
import os
from typing import Any, Callable

from ganeti import constants, errors, locking, netutils, objects
from ganeti.cmdlib.allocator import (
    CheckIAllocatorOrNode, InstancesReservationMemberOf, LoadNodeEvacResult,
    RunAllocator)
from ganeti.cmdlib.base import ResultWithJobs
from ganeti.cmdlib.instance_utils import (
    INSTANCE_NOT_RUNNING, AssembledForOS, CheckInstanceState, CheckNodeOnline,
    GetInstanceInfoText, InstanceLU, RemoveInstance)
from ganeti.masterd import iallocator

# How long the IP check waits for an answer (seconds)
_IP_CHECK_TIMEOUT = 2.0


def _ResolveInstanceName(name: str) -> netutils.Hostname:
    """Resolve an instance name (name_check), saying how to do without."""
    try:
        return netutils.Hostname(name)
    except errors.ResolverError as err:
        raise errors.OpPrereqError(
            "Cannot resolve instance name '%s' (%s); to use the name as"
            " given, pass --no-name-check (and --no-ip-check, which needs"
            " the name check)" % (name, err.args[-1]),
            errors.ECODE_RESOLVER) from err


def _IpInUse(address: str) -> bool:
    """Whether something answers on ``address`` (noded's port)."""
    return netutils.TcpPing(address, netutils.GetDaemonPort(constants.NODED),
                            _IP_CHECK_TIMEOUT)


# Removal -------------------------------------------------------------------

class LUInstanceRemove(InstanceLU):
    """Stop an instance, destroy its disks and drop it from the config."""

    HPATH = "instance-remove"

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"SHUTDOWN_TIMEOUT": self.op.shutdown_timeout}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        ignore = self.op.ignore_failures
        logging.info("Shutting down instance %s on node %s", instance.name,
                     self.pnode.name)
        result = self.rpc.call_instance_shutdown(
            instance.primary_node,
            self.cfg.GetClusterInfo().InstanceRpcDict(instance),
            self.op.shutdown_timeout)
        if result.fail_msg:
            if not ignore:
                raise errors.OpExecError("Could not shutdown instance %s on"
                                         " node %s: %s" %
                                         (instance.name, self.pnode.name,
                                          result.fail_msg))
            feedback_fn("Warning: can't shutdown instance: %s" %
                        result.fail_msg)
        logging.info("Removing instance %s with its disks", instance.name)
        RemoveInstance(self, instance, ignore)


# Rename --------------------------------------------------------------------

class LUInstanceRename(InstanceLU):
    """Rename a stopped instance: configuration, file storage, OS.

    Locks are by UUID, so the instance keeps its lock; a concurrent job
    taking the new name meanwhile makes the configuration write fail.
    """

    HPATH = "instance-rename"

    def CheckArguments(self) -> None:
        if self.op.ip_check and not self.op.name_check:
            raise errors.OpPrereqError("IP address check requires a name"
                                       " check", errors.ECODE_INVAL)

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"INSTANCE_NEW_NAME": self.op.new_name}

    def _CheckNewName(self) -> None:
        """Resolve the new name (name_check) and refuse a name in use."""
        op = self.op
        if op.name_check:
            hostname = _ResolveInstanceName(op.new_name)
            op.new_name = hostname.name
            if op.ip_check and _IpInUse(hostname.ip):
                raise errors.OpPrereqError(
                    "IP %s of instance %s already in use" %
                    (hostname.ip, op.new_name), errors.ECODE_NOTUNIQUE)
        if op.new_name != self.instance.name and \
                self.cfg.GetInstanceInfoByName(op.new_name) is not None:
            raise errors.OpPrereqError("Instance '%s' is already in the"
                                       " cluster" % op.new_name,
                                       errors.ECODE_EXISTS)

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        CheckNodeOnline(self, instance.primary_node)
        CheckInstanceState(self, instance, INSTANCE_NOT_RUNNING,
                           "cannot rename")
        self._CheckNewName()
        self.file_disks = [disk for disk
                           in self.cfg.GetInstanceDisks(instance.uuid)
                           if disk.dev_type in constants.DTS_FILEBASED]
        enabled = self.cfg.GetClusterInfo().enabled_disk_templates
        for template in sorted({disk.dev_type for disk in self.file_disks}):
            if template not in enabled:
                raise errors.OpPrereqError(
                    "Disk template '%s' is not enabled in cluster. Enabled"
                    " disk templates are: %s" % (template,
                                                 ",".join(enabled)),
                    errors.ECODE_STATE)

    def _RenameFileStorage(self, disks: list[objects.Disk]) -> None:
        """Rename the directories of the file disks on the primary node
        (the configuration has the new paths already)."""
        new_paths = {disk.uuid: disk.logical_id[1] for disk in disks}
        moves = sorted({(os.path.dirname(disk.logical_id[1]),
                         os.path.dirname(new_paths[disk.uuid]),
                         disk.dev_type) for disk in self.file_disks})
        for old_dir, new_dir, template in moves:
            if old_dir == new_dir:
                continue
            result = self.rpc.call_file_storage_dir_rename(
                self.instance.primary_node, old_dir, new_dir, template)
            result.Raise("Could not rename on node %s directory '%s' to"
                         " '%s' (but the instance has been renamed in"
                         " Ganeti)" % (self.pnode.name, old_dir, new_dir))

    def _RunOsRename(self, instance: objects.Instance,
                     disks: list[objects.Disk], old_name: str) -> None:
        """Tell the disks and the OS the new name; failures are only
        warnings, the instance is renamed already."""
        with AssembledForOS(self, instance, disks) as os_instance:
            info = GetInstanceInfoText(instance)
            for disk in disks:
                for node_uuid in disk.nodes or [instance.primary_node]:
                    result = self.rpc.call_blockdev_setinfo(
                        node_uuid, disk.ToDict(), info)
                    if result.fail_msg:
                        self.LogWarning("Error setting info on node %s for"
                                        " disk %s: %s", result.node,
                                        disk.iv_name, result.fail_msg)
            result = self.rpc.call_instance_run_rename(
                instance.primary_node, os_instance, old_name,
                self.op.debug_level or 0)
            if result.fail_msg:
                self.LogWarning("Could not run OS rename script for instance"
                                " %s on node %s (but the instance has been"
                                " renamed in Ganeti): %s", instance.name,
                                self.pnode.name, result.fail_msg)

    def Exec(self, feedback_fn: Callable[[str], None]) -> str:
        old_name = self.instance.name
        self.cfg.RenameInstance(self.instance.uuid, self.op.new_name)
        renamed = self.cfg.GetInstanceInfo(self.instance.uuid)
        disks = self.cfg.GetInstanceDisks(renamed.uuid)
        self._RenameFileStorage(disks)
        if renamed.os:
            self._RunOsRename(renamed, disks, old_name)
        logging.info("Renamed instance %s to %s", old_name, renamed.name)
        return renamed.name


class LUInstanceChangeGroup(InstanceLU):
    """Move an instance to a node of another node group.

    The instance allocator's (``-I``, else the cluster's default)
    ``change-group`` answer gives the follow-up jobs: a migration (falling
    back to a failover for a stopped instance) for externally mirrored
    disks; for drbd ones a new secondary in the target group, a migration
    to it and another new secondary there; an instance move (copying the
    disks) for plain and file ones.
    """

    HPATH = "instance-change-group"

    def ExpandNames(self) -> None:
        super().ExpandNames()
        # The groups asked for (None: any other group); CheckPrereq turns
        # them into target_uuids, the groups actually considered
        self.requested_uuids: list[str] | None = None
        self.target_uuids: list[str] = []
        if self.op.target_groups:
            self.requested_uuids = sorted({self.cfg.LookupNodeGroup(name)
                                           for name in self.op.target_groups})
        self.needed_locks[locking.LEVEL_NODEGROUP] = []
        # Only looks: the follow-up job takes its own locks
        for level in (locking.LEVEL_INSTANCE, locking.LEVEL_NODEGROUP,
                      locking.LEVEL_NODE):
            self.share_locks[level] = 1

    def _InstanceGroups(self) -> set[str]:
        return {self.cfg.GetNodeInfo(node).group
                for node in self.cfg.GetInstanceNodes(self.op.instance_uuid)}

    def DeclareLocks(self, level: int) -> None:
        if level == locking.LEVEL_NODEGROUP:
            # Not locked yet, so checked again in CheckPrereq
            groups = (set(self.requested_uuids) if self.requested_uuids
                      else set(self.cfg.GetAllNodeGroupsInfo()))
            self.needed_locks[level] = sorted(groups |
                                              self._InstanceGroups())
        elif level == locking.LEVEL_NODE:
            nodes = set(self.cfg.GetInstanceNodes(self.op.instance_uuid))
            for group in self.glm.list_owned(locking.LEVEL_NODEGROUP):
                nodes.update(self.cfg.GetNodeGroup(group).members)
            self.needed_locks[level] = sorted(nodes)

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        owned_groups = self.glm.list_owned(locking.LEVEL_NODEGROUP)
        inst_groups = self._InstanceGroups()
        if not inst_groups <= owned_groups:
            raise errors.OpPrereqError(
                "Instance %s's node groups changed since locks were"
                " acquired, current groups are '%s', owning groups '%s';"
                " retry the operation" %
                (instance.name, ", ".join(sorted(inst_groups)),
                 ", ".join(sorted(owned_groups))), errors.ECODE_STATE)
        if self.requested_uuids:
            conflicts = inst_groups & set(self.requested_uuids)
            if conflicts:
                raise errors.OpPrereqError(
                    "Can't use group(s) '%s' as targets, they are used by"
                    " the instance '%s'" %
                    (", ".join(self._GroupNames(conflicts)), instance.name),
                    errors.ECODE_INVAL)
            targets = set(self.requested_uuids)
        else:
            targets = owned_groups - inst_groups
        if not targets:
            raise errors.OpPrereqError("There are no possible target groups",
                                       errors.ECODE_INVAL)
        self.target_uuids = sorted(targets)
        self.template = self.cfg.GetInstanceDiskTemplate(instance.uuid)
        if self.template not in constants.DTS_MIRRORED and \
                self.template not in constants.DTS_COPYABLE:
            raise errors.OpPrereqError(
                "Instance's disk layout '%s' does not allow changing the"
                " node group" % self.template, errors.ECODE_STATE)
        # no node can be named: -I, "-I ." or neither is the default
        CheckIAllocatorOrNode(self, "iallocator", "target_node")

    def _GroupNames(self, uuids: Any) -> list[str]:
        return sorted(self.cfg.GetNodeGroup(uuid).name for uuid in uuids)

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"TARGET_GROUPS": " ".join(self.target_uuids)}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        master = self.cfg.GetMasterNode()
        return [master], [master]

    def Exec(self, feedback_fn: Callable[[str], None]) -> ResultWithJobs:
        req = iallocator.IAReqGroupChange(
            [self.instance.name], self.target_uuids,
            instance_member_of=InstancesReservationMemberOf(
                self, [self.instance]))
        ial = RunAllocator(self, req, self.op.iallocator)
        return ResultWithJobs(LoadNodeEvacResult(
            self, ial.result, self.op.early_release, False))
