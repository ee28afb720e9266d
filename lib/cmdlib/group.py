"""LUs adding, changing, renaming, removing and evacuating node groups.

Every node belongs to exactly one group; the cluster always has at least
one (``default``, created by init). Groups are locked by UUID, so a rename
needs no lock change.
"""

from typing import Any, Callable

from ganeti import constants, errors, locking, objects, opcodes, utils
from ganeti.cmdlib.allocator import (InstancesReservationMemberOf,
                                     LoadNodeEvacResult, RunAllocator)
from ganeti.cmdlib.base import (ExpandNodeUuidAndName, LogicalUnit,
                                NoHooksLU, ResultWithJobs)
from ganeti.masterd import iallocator
from ganeti.parameters.base import ForceParamDict, GetUpdatedParams
from ganeti.parameters.families import UpdatedDiskParams


def _LookupGroup(cfg: Any, name: str) -> str | None:
    try:
        return cfg.LookupNodeGroup(name)
    except errors.OpPrereqError:
        return None


def _CheckDiskParams(diskparams: dict) -> None:
    try:
        objects.CheckDiskParams(diskparams, "group disk")
    except errors.TypeEnforcementError as err:
        raise errors.OpPrereqError(str(err), errors.ECODE_INVAL)


def _CheckIPolicy(cluster: objects.Cluster, ipolicy: dict) -> None:
    """The group's overrides must be valid, and so must the merged policy."""
    try:
        objects.CheckIPolicy(ipolicy, complete=False)
        objects.CheckIPolicy(cluster.SimpleFillIPolicy(ipolicy),
                             complete=True)
    except errors.TypeEnforcementError as err:
        raise errors.OpPrereqError("Invalid instance policy: %s" % err,
                                   errors.ECODE_INVAL)


def _UpdatedIPolicy(old: dict, changes: dict) -> dict:
    """A group's policy overrides with ``changes``; None/"default" reset."""
    result = dict(old)
    for key, value in changes.items():
        if value is None or value == constants.VALUE_DEFAULT:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def GroupInstances(cfg: Any, group_uuid: str) -> list[str]:
    """UUIDs of the instances with a node in the group."""
    members = set(cfg.GetNodeGroup(group_uuid).members)
    return sorted(uuid for uuid in cfg.GetAllInstancesInfo()
                  if members & set(cfg.GetInstanceNodes(uuid)))


def LockedGroupInstances(lu: LogicalUnit, group_uuid: str,
                         group_name: str) -> list[str]:
    """GroupInstances, checked against the instance locks the LU holds
    (they were declared before the group was locked, so the group's
    instances may have changed in between)."""
    uuids = GroupInstances(lu.cfg, group_uuid)
    if set(uuids) != lu.glm.list_owned(locking.LEVEL_INSTANCE):
        raise errors.OpPrereqError(
            "Instances of node group '%s' changed since locks were"
            " acquired; retry the operation" % group_name,
            errors.ECODE_STATE)
    return uuids


class _GroupLU(LogicalUnit):
    """A hooked LU on one existing group, locked by name.

    Hooks run on the master unless a subclass says otherwise; the
    environment names the group.
    """

    HTYPE = constants.HTYPE_GROUP
    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.group_uuid = self.cfg.LookupNodeGroup(self.op.group_name)
        self.needed_locks = {locking.LEVEL_NODEGROUP: [self.group_uuid]}

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"GROUP_NAME": self.op.group_name}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        master = self.cfg.GetMasterNode()
        return ([master], [master])


class LUGroupAdd(_GroupLU):
    """Add a node group."""

    HPATH = "group-add"

    def CheckArguments(self) -> None:
        if self.op.ndparams:
            self.op.ndparams = ForceParamDict(objects.ND_PARAMETERS,
                                              self.op.ndparams, "group node")
        if self.op.diskparams:
            self.op.diskparams = UpdatedDiskParams({}, self.op.diskparams)
            _CheckDiskParams(self.op.diskparams)

    def ExpandNames(self) -> None:
        # The new group's lock is created (held) in Exec
        self.needed_locks = {}

    def CheckPrereq(self) -> None:
        existing = _LookupGroup(self.cfg, self.op.group_name)
        if existing is not None:
            raise errors.OpPrereqError("Desired group name '%s' already exists"
                                       " as a node group (UUID: %s)" %
                                       (self.op.group_name, existing),
                                       errors.ECODE_EXISTS)
        if self.op.ipolicy:
            _CheckIPolicy(self.cfg.GetClusterInfo(), self.op.ipolicy)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        group = objects.NodeGroup(
            name=self.op.group_name, uuid=self.cfg.GenerateUniqueID(),
            alloc_policy=(self.op.alloc_policy or
                          constants.ALLOC_POLICY_PREFERRED),
            ndparams=self.op.ndparams or {},
            diskparams=self.op.diskparams or {},
            ipolicy=self.op.ipolicy or {},
            hv_state_static=self.op.hv_state or {},
            disk_state_static=self.op.disk_state or {})
        # Lock first: once the group is in the configuration, other jobs
        # may want to lock it
        self.glm.add(locking.LEVEL_NODEGROUP, group.uuid, acquired=True)
        try:
            self.cfg.AddNodeGroup(group, feedback_fn)
        except Exception:
            self.glm.remove(locking.LEVEL_NODEGROUP, group.uuid)
            raise


class LUGroupAssignNodes(NoHooksLU):
    """Move nodes into a group.

    Moving a node whose instances then have nodes in several groups
    ("split" DRBD instances) needs ``force``.
    """

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.group_uuid = self.cfg.LookupNodeGroup(self.op.group_name)
        pairs = [ExpandNodeUuidAndName(self.cfg, None, name)
                 for name in self.op.nodes]
        self.op.node_uuids = list(dict.fromkeys(uuid for uuid, _ in pairs))
        self.op.nodes = [name for _, name in pairs]
        self.needed_locks = {locking.LEVEL_NODEGROUP: [self.group_uuid],
                             locking.LEVEL_NODE: self.op.node_uuids}

    def _SourceGroups(self) -> set[str]:
        return {self.cfg.GetNodeInfo(uuid).group
                for uuid in self.op.node_uuids}

    def DeclareLocks(self, level: int) -> None:
        if level == locking.LEVEL_NODEGROUP:
            # Not locked yet, so checked again in CheckPrereq
            self.needed_locks[level] = sorted({self.group_uuid} |
                                              self._SourceGroups())

    def CheckPrereq(self) -> None:
        expected = {self.group_uuid} | self._SourceGroups()
        owned = self.glm.list_owned(locking.LEVEL_NODEGROUP)
        if not expected <= owned:
            raise errors.OpPrereqError(
                "Nodes changed groups since locks were acquired, current"
                " groups are '%s', used to be '%s'; retry the operation" %
                (", ".join(sorted(expected)), ", ".join(sorted(owned))),
                errors.ECODE_STATE)
        new_splits, previous_splits = self._SplitInstances()
        if not new_splits:
            return
        names = ", ".join(utils.NiceSort(new_splits))
        if not self.op.force:
            raise errors.OpPrereqError("The following instances get split by"
                                       " this change and --force was not"
                                       " given: %s" % names,
                                       errors.ECODE_STATE)
        self.LogWarning("This operation will split the following instances:"
                        " %s", names)
        if previous_splits:
            self.LogWarning("In addition, these already-split instances"
                            " continue to be split across groups: %s",
                            ", ".join(utils.NiceSort(previous_splits)))

    def _SplitInstances(self) -> tuple[list[str], list[str]]:
        """Names of the DRBD instances newly split by the move, and of
        those split before that stay split."""
        nodes = self.cfg.GetAllNodesInfo()
        moved = set(self.op.node_uuids)
        new_splits: list[str] = []
        previous_splits: list[str] = []
        for uuid, inst in self.cfg.GetAllInstancesInfo().items():
            if self.cfg.GetInstanceDiskTemplate(uuid) != constants.DT_DRBD8:
                continue
            inst_nodes = self.cfg.GetInstanceNodes(uuid)
            before = {nodes[node].group for node in inst_nodes}
            after = {self.group_uuid if node in moved else nodes[node].group
                     for node in inst_nodes}
            if len(after) > 1:
                (previous_splits if len(before) > 1
                 else new_splits).append(inst.name)
        return new_splits, previous_splits

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self.cfg.AssignGroupNodes([(uuid, self.group_uuid)
                                   for uuid in self.op.node_uuids],
                                  feedback_fn)


class LUGroupSetParams(_GroupLU):
    """Change a group's allocation policy and parameters.

    Returns the changed parameters as ``(name, new value)`` pairs.
    """

    HPATH = "group-modify"

    def CheckArguments(self) -> None:
        changes = [self.op.ndparams, self.op.diskparams, self.op.alloc_policy,
                   self.op.hv_state, self.op.disk_state, self.op.ipolicy]
        if all(change is None for change in changes):
            raise errors.OpPrereqError("Please pass at least one"
                                       " modification", errors.ECODE_INVAL)

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"GROUP_NAME": self.op.group_name,
                "NEW_ALLOC_POLICY": self.op.alloc_policy}

    def CheckPrereq(self) -> None:
        self.group = self.cfg.GetNodeGroup(self.group_uuid)
        if self.op.ndparams:
            self.new_ndparams = GetUpdatedParams(
                self.group.ndparams, self.op.ndparams,
                objects.ND_PARAMETERS, "group node")
        if self.op.diskparams:
            self.new_diskparams = UpdatedDiskParams(
                self.group.diskparams or {}, self.op.diskparams)
            _CheckDiskParams(self.new_diskparams)
        if self.op.ipolicy:
            self.new_ipolicy = _UpdatedIPolicy(self.group.ipolicy or {},
                                               self.op.ipolicy)
            _CheckIPolicy(self.cfg.GetClusterInfo(), self.new_ipolicy)

    def Exec(self, feedback_fn: Callable[[str], None]) -> list:
        group = self.group
        result: list[tuple[str, Any]] = []
        if self.op.ndparams:
            group.ndparams = self.new_ndparams
            result.append(("ndparams", str(group.ndparams)))
        if self.op.diskparams:
            group.diskparams = self.new_diskparams
            result.append(("diskparams", str(group.diskparams)))
        if self.op.alloc_policy:
            group.alloc_policy = self.op.alloc_policy
            result.append(("alloc_policy", group.alloc_policy))
        if self.op.hv_state:
            group.hv_state_static = self.op.hv_state
        if self.op.disk_state:
            group.disk_state_static = self.op.disk_state
        if self.op.ipolicy:
            group.ipolicy = self.new_ipolicy
            result.append(("ipolicy", str(group.ipolicy)))
        self.cfg.Update(group, feedback_fn)
        return result


class LUGroupRemove(_GroupLU):
    """Remove an empty group that is not the cluster's last one."""

    HPATH = "group-remove"

    def CheckPrereq(self) -> None:
        members = [node.name for node in self.cfg.GetAllNodesInfo().values()
                   if node.group == self.group_uuid]
        if members:
            raise errors.OpPrereqError("Group '%s' not empty, has the"
                                       " following nodes: %s" %
                                       (self.op.group_name,
                                        ", ".join(utils.NiceSort(members))),
                                       errors.ECODE_STATE)
        if len(self.cfg.GetAllNodeGroupsInfo()) == 1:
            raise errors.OpPrereqError("Group '%s' is the only group, cannot"
                                       " be removed" % self.op.group_name,
                                       errors.ECODE_STATE)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self.cfg.RemoveNodeGroup(self.group_uuid, feedback_fn)
        self.remove_locks[locking.LEVEL_NODEGROUP] = [self.group_uuid]


class LUGroupRename(_GroupLU):
    """Rename a group; returns the new name."""

    HPATH = "group-rename"

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"OLD_NAME": self.op.group_name,
                "NEW_NAME": self.op.new_name}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        # The master and the group's members
        master = self.cfg.GetMasterNode()
        nodes = [master] + [
            uuid for uuid, node in self.cfg.GetAllNodesInfo().items()
            if node.group == self.group_uuid and uuid != master]
        return (nodes, nodes)

    def CheckPrereq(self) -> None:
        clash = _LookupGroup(self.cfg, self.op.new_name)
        if clash is not None:
            raise errors.OpPrereqError("Desired new name '%s' clashes with"
                                       " existing node group (UUID: %s)" %
                                       (self.op.new_name, clash),
                                       errors.ECODE_EXISTS)

    def Exec(self, feedback_fn: Callable[[str], None]) -> str:
        group = self.cfg.GetNodeGroup(self.group_uuid)
        group.name = self.op.new_name
        self.cfg.Update(group, feedback_fn)
        return self.op.new_name


class LUGroupEvacuate(_GroupLU):
    """Move every instance of a group to other groups, as the follow-up
    jobs of the allocator's ``change-group`` answer (the opcode's
    allocator or the cluster's default)."""

    HPATH = "group-evacuate"

    def ExpandNames(self) -> None:
        op = self.op
        self.group_uuid = self.cfg.LookupNodeGroup(op.group_name)
        self.req_target_uuids = [self.cfg.LookupNodeGroup(name)
                                 for name in op.target_groups or []]
        if self.group_uuid in self.req_target_uuids:
            raise errors.OpPrereqError(
                "Group to be evacuated (%s) can not be used as a target"
                " group (targets are %s)" %
                (self.group_uuid, ", ".join(self.req_target_uuids)),
                errors.ECODE_INVAL)
        op.iallocator = op.iallocator or \
            self.cfg.GetClusterInfo().default_iallocator
        if not op.iallocator:
            raise errors.OpPrereqError("No iallocator was specified, neither"
                                       " in the opcode nor as a cluster-wide"
                                       " default", errors.ECODE_INVAL)
        # Only looks: the follow-up jobs take their own locks
        self.share_locks = dict.fromkeys(locking.LEVELS, 1)
        self.needed_locks = {locking.LEVEL_INSTANCE: [],
                             locking.LEVEL_NODEGROUP: [],
                             locking.LEVEL_NODE: []}

    def DeclareLocks(self, level: int) -> None:
        if level == locking.LEVEL_INSTANCE:
            # Checked again in CheckPrereq, once everything is locked
            self.needed_locks[level] = GroupInstances(self.cfg,
                                                      self.group_uuid)
        elif level == locking.LEVEL_NODEGROUP:
            self.needed_locks[level] = (
                sorted({self.group_uuid, *self.req_target_uuids})
                if self.req_target_uuids else locking.ALL_SET)
        elif level == locking.LEVEL_NODE:
            nodes: set[str] = set()
            for group in self.glm.list_owned(locking.LEVEL_NODEGROUP):
                nodes.update(self.cfg.GetNodeGroup(group).members)
            self.needed_locks[level] = sorted(nodes)

    def CheckPrereq(self) -> None:
        self.instance_uuids = LockedGroupInstances(self, self.group_uuid,
                                                   self.op.group_name)
        if self.req_target_uuids:
            self.target_uuids = self.req_target_uuids
        else:
            self.target_uuids = sorted(
                uuid for uuid in self.glm.list_owned(locking.LEVEL_NODEGROUP)
                if uuid != self.group_uuid)
            if not self.target_uuids:
                raise errors.OpPrereqError("There are no possible target"
                                           " groups", errors.ECODE_INVAL)

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"GROUP_NAME": self.op.group_name,
                "TARGET_GROUPS": " ".join(self.target_uuids)}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        nodes = [self.cfg.GetMasterNode()] + \
            list(self.cfg.GetNodeGroup(self.group_uuid).members)
        return nodes, nodes

    @staticmethod
    def _MigrateToFailover(op: opcodes.OpCode) -> opcodes.OpCode:
        """The failover doing what a migration opcode would."""
        if not isinstance(op, opcodes.OpInstanceMigrate):
            return op
        return opcodes.OpInstanceFailover(
            instance_name=op.instance_name,
            instance_uuid=getattr(op, "instance_uuid", None),
            target_node=getattr(op, "target_node", None),
            target_node_uuid=getattr(op, "target_node_uuid", None),
            ignore_ipolicy=getattr(op, "ignore_ipolicy", False))

    def Exec(self, feedback_fn: Callable[[str], None]) -> ResultWithJobs:
        op = self.op
        if not self.instance_uuids:
            self.LogInfo("No instances to evacuate from node group %s",
                         op.group_name)
            return ResultWithJobs([])
        instances = [self.cfg.GetInstanceInfo(uuid)
                     for uuid in self.instance_uuids]
        req = iallocator.IAReqGroupChange(
            [inst.name for inst in instances], self.target_uuids,
            instance_member_of=InstancesReservationMemberOf(self,
                                                            instances))
        ial = RunAllocator(self, req, op.iallocator)
        jobs = LoadNodeEvacResult(self, ial.result, op.early_release, False)
        self.LogInfo("Iallocator returned %s job(s) for evacuating node"
                     " group %s", len(jobs), op.group_name)
        if op.force_failover:
            self.LogInfo("Will insist on failovers")
            jobs = [[self._MigrateToFailover(job_op) for job_op in job]
                    for job in jobs]
        if op.sequential:
            self.LogInfo("Jobs will be submitted to run sequentially")
            for job in jobs[1:]:
                for job_op in job:
                    job_op.depends = [[-1, [constants.JOB_STATUS_ERROR,
                                            constants.JOB_STATUS_SUCCESS]]]
        return ResultWithJobs(jobs)
