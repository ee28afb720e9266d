"""OP_INSTANCE_MULTI_ALLOC: place several new instances in one allocator
run and submit one creation job each, the chosen nodes filled in.

Placing them together lets the allocator see each placement before the
next (a ``multi-allocate`` request), so a batch spreads over the cluster
instead of piling onto the node that looked emptiest to every single
creation; the instances that fit nowhere are reported, not created.
"""

from typing import Any, Callable

from ganeti import constants, errors, locking
from ganeti.cmdlib.allocator import InstanceAllocRequest, RunAllocator
from ganeti.cmdlib.base import ExpandNodeUuidAndName, NoHooksLU, \
    ResultWithJobs
from ganeti.cmdlib.instance_create import ParseDisks, ParseNics
from ganeti.cmdlib.instance_utils import ConvertBeParams
from ganeti.masterd import iallocator


class LUInstanceMultiAlloc(NoHooksLU):
    """Allocate nodes for several instances, then create them."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        op = self.op
        given = []
        for inst in op.instances:
            if inst.iallocator is not None:
                raise errors.OpPrereqError("iallocator are not allowed to be"
                                           " set on instance objects",
                                           errors.ECODE_INVAL)
            given.append(bool(inst.pnode))
            if inst.disk_template in constants.DTS_INT_MIRROR:
                given.append(bool(inst.snode))
        has_nodes = any(given)
        if all(given) ^ has_nodes:
            raise errors.OpPrereqError("There are instance objects providing"
                                       " pnode/snode while others do not",
                                       errors.ECODE_INVAL)
        if not has_nodes and op.iallocator is None:
            op.iallocator = self.cfg.GetClusterInfo().default_iallocator
            if not op.iallocator:
                raise errors.OpPrereqError(
                    "No iallocator or nodes on the instances given and no"
                    " cluster-wide default iallocator found; please specify"
                    " either an iallocator or nodes on the instances or set"
                    " a cluster-wide default iallocator", errors.ECODE_INVAL)
        if op.opportunistic_locking and not op.iallocator:
            raise errors.OpPrereqError("Opportunistic locking is only"
                                       " available in combination with an"
                                       " instance allocator",
                                       errors.ECODE_INVAL)
        names = [inst.instance_name for inst in op.instances]
        dups = sorted({name for name in names if names.count(name) > 1})
        if dups:
            raise errors.OpPrereqError("There are duplicate instance names:"
                                       " %s" % ", ".join(dups),
                                       errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        # Only looks: the creation jobs take their own locks
        self.share_locks = dict.fromkeys(locking.LEVELS, 1)
        self.needed_locks = {}
        if self.op.iallocator:
            self.needed_locks[locking.LEVEL_NODE] = locking.ALL_SET
            if self.op.opportunistic_locking:
                self.opportunistic_locks[locking.LEVEL_NODE] = True
            return
        nodes = []
        for inst in self.op.instances:
            inst.pnode_uuid, inst.pnode = ExpandNodeUuidAndName(
                self.cfg, inst.pnode_uuid, inst.pnode)
            nodes.append(inst.pnode_uuid)
            if inst.snode is not None:
                _, inst.snode = ExpandNodeUuidAndName(self.cfg, None,
                                                      inst.snode)
        self.needed_locks[locking.LEVEL_NODE] = sorted(set(nodes))

    def _Request(self, inst: Any, whitelist: list[str] | None
                 ) -> iallocator.IAReqInstanceAlloc:
        cluster = self.cfg.GetClusterInfo()
        if inst.disk_template is None:
            inst.disk_template = cluster.enabled_disk_templates[0]
        return InstanceAllocRequest(
            self, inst, ParseDisks(inst.disks, inst.disk_template),
            ParseNics(inst.nics, None),
            cluster.SimpleFillBE(ConvertBeParams(inst.beparams)),
            inst.hypervisor or cluster.primary_hypervisor, whitelist)

    def CheckPrereq(self) -> None:
        op = self.op
        self.allocated: list[tuple[str, list[str]]] = []
        self.failed: list[str] = []
        if op.iallocator:
            whitelist = None
            if op.opportunistic_locking:
                whitelist = self.cfg.GetNodeNames(
                    sorted(self.glm.list_owned(locking.LEVEL_NODE)))
            req = iallocator.IAReqMultiInstanceAlloc(
                [self._Request(inst, whitelist) for inst in op.instances])
            ial = RunAllocator(self, req, op.iallocator)
            allocated, self.failed = ial.result
            self.allocated = [(name, list(nodes))
                              for name, nodes in allocated]
        else:
            self.allocated = [(inst.instance_name, []) for inst in
                              op.instances]
        if op.dry_run:
            self.dry_run_result = dict(self._PartialResult(), jobs=[])

    def _PartialResult(self) -> dict[str, list[str]]:
        return {"allocatable": [name for name, _ in self.allocated],
                "failed": list(self.failed)}

    def Exec(self, feedback_fn: Callable[[str], None]) -> ResultWithJobs:
        by_name = {inst.instance_name: inst for inst in self.op.instances}
        jobs = []
        for name, nodes in self.allocated:
            inst = by_name[name]
            if nodes:
                inst.pnode_uuid, inst.pnode = ExpandNodeUuidAndName(
                    self.cfg, None, nodes[0])
                if len(nodes) > 1:
                    inst.snode = nodes[1]
            jobs.append([inst])
        if self.failed:
            feedback_fn("Instances the allocator could not place: %s" %
                        ", ".join(self.failed))
        return ResultWithJobs(jobs, **self._PartialResult())
