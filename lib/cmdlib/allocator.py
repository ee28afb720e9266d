"""Running instance allocators from LUs, and OP_TEST_ALLOCATOR.

The message, running and checking are ganeti.masterd.iallocator's; this
module picks the allocator (the opcode's or the cluster's default) and
reports its explanation to the job.
"""

from typing import Any, Callable, Iterable

from ganeti import constants, errors, objects, opcodes
from ganeti.cmdlib.base import LogicalUnit, NoHooksLU
from ganeti.masterd import iallocator
from ganeti.placement import cluster as pcluster
from ganeti.placement.search import MemberOf

# "-I ." names the cluster's default allocator (Ganeti's shortcut)
DEFAULT_IALLOCATOR_SHORTCUT = "."


def AllocatorName(lu: LogicalUnit, name: str | None) -> str:
    """The allocator to run: ``name`` or the cluster's default."""
    name = name or lu.cfg.GetClusterInfo().default_iallocator
    if not name:
        raise errors.OpPrereqError(
            "No iallocator or node given and no cluster-wide default"
            " iallocator found; please specify either an iallocator or a"
            " node, or set a cluster-wide default iallocator",
            errors.ECODE_INVAL)
    return name


def CheckIAllocatorOrNode(lu: LogicalUnit, iallocator_slot: str,
                          node_slot: str) -> None:
    """Ganeti's rule for an opcode taking an allocator or a node: not
    both; with neither (or ``-I .``) the cluster's default allocator is
    put in ``iallocator_slot``."""
    node = getattr(lu.op, node_slot, None)
    ialloc = getattr(lu.op, iallocator_slot, None)
    if node == []:
        node = None
    if node is not None and ialloc is not None:
        raise errors.OpPrereqError("Do not specify both, iallocator and node",
                                   errors.ECODE_INVAL)
    if (node is None and ialloc is None) or \
            ialloc == DEFAULT_IALLOCATOR_SHORTCUT:
        setattr(lu.op, iallocator_slot, AllocatorName(lu, None))


def RunAllocator(lu: LogicalUnit, req: iallocator.IARequest, name: str,
                 explain: bool = False) -> iallocator.IAllocator:
    """Run allocator ``name`` on ``req``; the checked answer.

    With ``explain`` the allocator's explanation goes to the job's
    feedback (``gnt-instance add --explain`` prints it).
    """
    ial = iallocator.IAllocator(lu.cfg, lu.rpc, req)
    ial.Run(name, explain=explain)
    if explain and ial.explanation:
        lu.LogInfo("Explanation of iallocator '%s':\n%s", name,
                   ial.explanation)
    return ial


class LUTestAllocator(NoHooksLU):
    """Show an allocator's input message (in) or its answer (out)."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        # The message is a snapshot; nothing is changed
        self.needed_locks = {}

    def _AllocRequest(self, name: str) -> iallocator.IAReqInstanceAlloc:
        op = self.op
        cluster = self.cfg.GetClusterInfo()
        missing = [key for key in ("memory", "disks", "os", "vcpus")
                   if getattr(op, key) is None]
        if missing:
            raise errors.OpPrereqError("Missing attribute(s) %s for"
                                       " allocation" % ", ".join(missing),
                                       errors.ECODE_INVAL)
        return iallocator.IAReqInstanceAlloc(
            name=name, memory=op.memory,
            disk_template=(op.disk_template or
                           cluster.enabled_disk_templates[0]),
            vcpus=op.vcpus, spindle_use=op.spindle_use, disks=op.disks,
            nics=op.nics or [], os=op.os, tags=op.tags,
            hypervisor=op.hypervisor or cluster.primary_hypervisor,
            group_name=op.group_name)

    def _Request(self) -> iallocator.IARequest:
        op = self.op
        if op.mode == constants.IALLOCATOR_MODE_ALLOC:
            return self._AllocRequest(op.name)
        if op.mode == constants.IALLOCATOR_MODE_MULTI_ALLOC:
            return iallocator.IAReqMultiInstanceAlloc(
                [self._AllocRequest("%s%d" % (op.name, idx))
                 for idx in range(op.count)])
        if op.mode == constants.IALLOCATOR_MODE_ALLOCATE_SECONDARY:
            return iallocator.IAReqInstanceAllocateSecondary(op.name)
        if op.mode == constants.IALLOCATOR_MODE_RELOC:
            inst = self.cfg.GetInstanceInfoByName(op.name)
            if inst is None:
                raise errors.OpPrereqError("Instance '%s' not known" %
                                           op.name, errors.ECODE_NOENT)
            return iallocator.IAReqRelocate(
                inst.uuid, list(self.cfg.GetInstanceSecondaryNodes(
                    inst.uuid)))
        if not op.instances:
            raise errors.OpPrereqError("Missing instances for %s" % op.mode,
                                       errors.ECODE_INVAL)
        if op.mode == constants.IALLOCATOR_MODE_NODE_EVAC:
            return iallocator.IAReqNodeEvac(
                op.instances, op.evac_mode or constants.NODE_EVAC_ALL)
        # The protocol names target groups by UUID (hail looks them up
        # so); Ganeti passes the user's words through unchanged
        return iallocator.IAReqGroupChange(
            op.instances, [self.cfg.LookupNodeGroup(group)
                           for group in op.target_groups or []])

    def CheckPrereq(self) -> None:
        self.req = self._Request()

    def Exec(self, feedback_fn: Callable[[str], None]) -> str:
        ial = iallocator.IAllocator(self.cfg, self.rpc, self.req)
        if self.op.direction == constants.IALLOCATOR_DIR_IN:
            return ial.in_text
        name = AllocatorName(self, self.op.iallocator)
        ial.Run(name, explain=self.op.explain, validate=False)
        return ial.out_text


def _MemberOf(lu: LogicalUnit, values: list[str],
              tags: Iterable[str] | None) -> dict[str, str]:
    """An opcode's ``member_of`` with aggregate names made UUIDs, plus the
    cluster's reservation defaults for an instance with ``tags`` (None:
    several instances, to which they are not applied); each value with
    how a refusal names it."""
    cluster = lu.cfg.GetClusterInfo()
    resolved = pcluster.ResolveMemberOf(values, cluster,
                                        lu.cfg.GetAllNodeGroupsInfo())
    result = {value: "member_of '%s'" % given
              for value, given in zip(resolved, values)}
    if tags is not None:
        result.update(pcluster.ReservationMemberOf(cluster, tags))
    return result


def ResolveMemberOf(lu: LogicalUnit, values: list[str],
                    tags: Iterable[str] | None) -> list[str]:
    """The ``member_of`` the allocator is asked for (see _MemberOf)."""
    return list(_MemberOf(lu, values, tags))


def InstancesReservationMemberOf(lu: LogicalUnit, instances: Iterable[Any]
                                 ) -> dict[str, list[str]]:
    """The cluster's reservation defaults of each of several instances
    moved by one request (name -> ``member_of`` values; instances without
    any left out): unlike the opcode's own ``member_of``, they depend on
    each instance's tags."""
    cluster = lu.cfg.GetClusterInfo()
    result = {}
    for inst in instances:
        values = list(pcluster.ReservationMemberOf(cluster, inst.GetTags()))
        if values:
            result[inst.name] = values
    return result


def CheckNodesMemberOf(lu: LogicalUnit, values: list[str],
                       node_uuids: list[str],
                       tags: Iterable[str] | None,
                       instance_name: str | None = None) -> None:
    """Nodes the admin chose must satisfy ``member_of`` too: the
    constraint holds however the nodes are picked. Refusals name the
    value as given (and the instance, when one opcode moves several)."""
    given = _MemberOf(lu, values, tags)
    if not given:
        return
    member_of = MemberOf(list(given))
    whose = " for instance %s" % instance_name if instance_name else ""
    for uuid in node_uuids:
        node = lu.cfg.GetNodeInfo(uuid)
        failed = member_of.Failed(pcluster.NodeAggregates(node))
        if failed is not None:
            raise errors.OpPrereqError(
                "Node %s is excluded%s by %s" % (node.name, whose,
                                                 given[failed]),
                errors.ECODE_INVAL)


def InstanceAllocRequest(lu: LogicalUnit, op: Any, disks: list[dict],
                         nics: list[dict], filled_be: dict, hypervisor: str,
                         node_whitelist: list[str] | None
                         ) -> iallocator.IAReqInstanceAlloc:
    """The ``allocate`` request of an instance creation opcode."""
    cluster = lu.cfg.GetClusterInfo()
    nic_data = []
    for nic in nics:
        filled = cluster.SimpleFillNIC(nic.get("nicparams") or {})
        entry = {"mac": nic.get("mac"), "ip": nic.get("ip"),
                 "mode": filled[objects.NIC_MODE],
                 "link": filled[objects.NIC_LINK]}
        if filled[objects.NIC_MODE] == objects.NIC_MODE_BRIDGED:
            entry["bridge"] = filled[objects.NIC_LINK]
        nic_data.append(entry)
    return iallocator.IAReqInstanceAlloc(
        name=op.instance_name, disk_template=op.disk_template,
        memory=filled_be[objects.BE_MAXMEM],
        vcpus=filled_be[objects.BE_VCPUS],
        spindle_use=filled_be[objects.BE_SPINDLE_USE],
        disks=[{"size": disk.get("size") or 0, "mode": disk.get("mode")}
               for disk in disks],
        nics=nic_data, os=op.os_type or "", tags=list(op.tags),
        hypervisor=hypervisor, node_whitelist=node_whitelist,
        member_of=ResolveMemberOf(lu, op.member_of, op.tags))


def LoadNodeEvacResult(lu: LogicalUnit, result: list, early_release: bool,
                       use_nodes: bool) -> list[list[opcodes.OpCode]]:
    """The jobs of a checked ``node-evacuate``/``change-group`` answer.

    Instances the allocator could not move fail the whole operation
    before any job is submitted (Ganeti's rule), so an evacuation is
    never half-planned. ``use_nodes`` logs the target nodes rather than
    the groups.
    """
    moved, failed, jobs = result
    if failed:
        reasons = ", ".join("%s (%s)" % (name, reason)
                            for name, reason in failed)
        lu.LogWarning("Unable to evacuate instances %s", reasons)
        raise errors.OpExecError("Unable to evacuate instances %s" % reasons)
    if moved:
        groups = lu.cfg.GetAllNodeGroupsInfo()
        lu.LogInfo("Instances to be moved: %s", ", ".join(
            "%s (to %s)" % (name, ", ".join(nodes) if use_nodes else
                            getattr(groups.get(group), "name", group))
            for name, group, nodes in moved))
    result_jobs = []
    for job in jobs:
        ops = []
        for data in job:
            op = opcodes.OpCode.LoadOpCode(data)
            if early_release and "early_release" in op._ParamNames():
                op.early_release = True
            ops.append(op)
        result_jobs.append(ops)
    return result_jobs
