"""LUs adding, removing and changing nodes, and the master candidate pool.

A node's master candidate, drained and offline flags are mutually
exclusive: together with being the master they form one role (design-2.0,
"Node flags"). The cluster keeps ``candidate_pool_size`` candidates where
enough eligible nodes exist (online, not drained, master capable): adding
a node promotes it while the pool is short, removing one or taking one out
of the pool promotes replacements, and demoting a candidate that would
leave the pool short needs ``auto_promote``. Nodes are never demoted to
shrink a pool that is larger than wanted.
"""

import logging
from typing import Any, Callable

from ganeti import (bootstrap, constants, errors, locking, netutils, objects,
                    utils)
from ganeti.cmdlib.base import (ExpandNodeUuidAndName, LogicalUnit,
                                NoHooksLU, RunPostHook)
from ganeti.parameters.base import ForceParamDict, GetUpdatedParams
from ganeti.placement import cluster as pcluster
from ganeti.placement import model as pmodel
from ganeti.rpc import node as rpc_node


def AdjustCandidatePool(lu: Any, exceptions: list[str]) -> None:
    """Fill the candidate pool, excluding ``exceptions``, and sync the new
    candidates so that they hold the configuration and queue at once."""
    promoted = lu.cfg.MaintainCandidatePool(exceptions)
    if promoted:
        lu.LogInfo("Promoted nodes to master candidate role: %s",
                   ", ".join(node.name for node in promoted))
        for node in promoted:
            lu.context.SyncNode(node.uuid)
    mc_now, mc_should, _ = lu.cfg.GetMasterCandidateStats(exceptions)
    if mc_now > mc_should:
        lu.LogInfo("Note: more nodes are candidates (%d) than desired (%d)",
                   mc_now, mc_should)


def _DecideSelfPromotion(cfg: Any, exceptions: list[str] | None = None
                         ) -> bool:
    """Whether a node becoming eligible should join the candidate pool.

    The node is not counted yet (new, or ``exceptions``, or not eligible
    before the change), hence one more possible candidate.
    """
    pool_size = cfg.GetClusterInfo().candidate_pool_size
    mc_now, mc_should, _ = cfg.GetMasterCandidateStats(exceptions)
    return mc_now < min(mc_should + 1, pool_size)


def _DirectRunner(addresses: dict[str, str],
                  offline: list[str] | None = None) -> rpc_node.RpcRunner:
    """An RPC runner for nodes the configuration cannot be asked about.

    Nodes not (yet, or no longer) in the configuration, and offline nodes
    that must be contacted anyway, are addressed by name and IP.
    """
    return rpc_node.RpcRunner(rpc_node.StaticResolver(addresses,
                                                      offline=offline or ()))


def _CheckNodeVersion(name: str, address: str, msg: str,
                      prereq: bool) -> None:
    """Check that a node's noded answers with our protocol version."""
    runner = _DirectRunner({name: address})
    try:
        result = runner.call_version([name])[name]
    finally:
        runner.close()
    result.Raise(msg, prereq=prereq, ecode=errors.ECODE_ENVIRON)
    if result.payload != constants.PROTOCOL_VERSION:
        text = ("Version mismatch master version %s, node version %s" %
                (constants.PROTOCOL_VERSION, result.payload))
        if prereq:
            raise errors.OpPrereqError(text, errors.ECODE_ENVIRON)
        raise errors.OpExecError(text)
    logging.info("Communication to node %s fine, protocol version %s",
                 name, result.payload)


def _CheckIPConflicts(cfg: Any, addresses: set[str],
                      skip_uuid: str | None) -> None:
    for node in cfg.GetAllNodesInfo().values():
        if node.uuid == skip_uuid:
            continue
        if addresses & {node.primary_ip, node.secondary_ip}:
            raise errors.OpPrereqError("New node ip address(es) conflict"
                                       " with existing node %s" % node.name,
                                       errors.ECODE_NOTUNIQUE)


def _CheckSecondaryIP(address: str) -> None:
    if not netutils.IsValidIP4(address):
        raise errors.OpPrereqError("Secondary IP (%s) needs to be a valid"
                                   " IPv4 address" % address,
                                   errors.ECODE_INVAL)


def _SetStaticStates(node: objects.Node, op: Any) -> None:
    """Record the static hypervisor and disk states an opcode gives."""
    if op.hv_state:
        node.hv_state_static = op.hv_state
    if op.disk_state:
        node.disk_state_static = op.disk_state


class LUNodeAdd(LogicalUnit):
    """Add a node, or re-add (``readd``) one the configuration knows.

    The node's noded must serve with the cluster certificate: it already
    holds it, or the master hands it over with the join key first.
    """

    HPATH = "node-add"
    HTYPE = constants.HTYPE_NODE

    _NFLAGS = ("master_capable", "vm_capable")

    def CheckArguments(self) -> None:
        name = self.op.node_name
        if self.op.primary_ip is None:
            try:
                self.op.primary_ip = netutils.GetHostIP(name)
            except errors.ResolverError as err:
                raise errors.OpPrereqError("Cannot resolve node name '%s':"
                                           " %s" % (name, err.args[-1]),
                                           errors.ECODE_RESOLVER)
        elif not netutils.IsValidIP4(self.op.primary_ip):
            raise errors.OpPrereqError("Primary IP (%s) needs to be a valid"
                                       " IPv4 address" % self.op.primary_ip,
                                       errors.ECODE_INVAL)
        if self.op.secondary_ip is not None:
            _CheckSecondaryIP(self.op.secondary_ip)
        if self.op.readd and name == self.cfg.GetMasterNodeName():
            raise errors.OpPrereqError("Cannot readd the master node",
                                       errors.ECODE_STATE)
        if self.op.readd and self.op.group:
            raise errors.OpPrereqError("Cannot pass a node group when a node"
                                       " is being readded",
                                       errors.ECODE_INVAL)
        if self.op.ndparams:
            self.op.ndparams = ForceParamDict(objects.ND_PARAMETERS,
                                              self.op.ndparams, "node")

    def ExpandNames(self) -> None:
        # The BGL (held exclusively) covers the new node: it has no lock yet
        self.needed_locks = {}

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {
            "OP_TARGET": self.op.node_name,
            "NODE_NAME": self.op.node_name,
            "NODE_PIP": self.op.primary_ip,
            "NODE_SIP": self.op.secondary_ip,
            "MASTER_CAPABLE": str(self.op.master_capable),
            "VM_CAPABLE": str(self.op.vm_capable),
        }

    def BuildHooksNodes(self) -> tuple[list[str], list[str], list[str]]:
        # The node itself runs only the post hooks, named: before Exec it
        # is not (or, re-added, not yet again) a working member
        nodes = [uuid for uuid in self.cfg.GetNodeList()
                 if self.existing is None or uuid != self.existing.uuid]
        return (nodes, nodes, [self.op.node_name])

    def CheckPrereq(self) -> None:
        name = self.op.node_name
        existing = self.cfg.GetNodeInfoByName(name)
        if existing is not None and not self.op.readd:
            raise errors.OpPrereqError("Node %s is already in the"
                                       " configuration" % name,
                                       errors.ECODE_EXISTS)
        if existing is None and self.op.readd:
            raise errors.OpPrereqError("Node %s is not in the configuration" %
                                       name, errors.ECODE_NOENT)
        if self.op.secondary_ip is None:
            # A re-added node keeps its secondary IP
            self.op.secondary_ip = (existing.secondary_ip if existing
                                    else self.op.primary_ip)
        primary_ip, secondary_ip = self.op.primary_ip, self.op.secondary_ip
        if existing is not None and existing.secondary_ip != secondary_ip:
            raise errors.OpPrereqError("Readded node doesn't have the same IP"
                                       " address configuration as before",
                                       errors.ECODE_INVAL)
        _CheckIPConflicts(self.cfg, {primary_ip, secondary_ip},
                          existing.uuid if existing else None)

        for attr in self._NFLAGS:
            if getattr(self.op, attr) is None:
                setattr(self.op, attr,
                        getattr(existing, attr) if existing else True)
        if existing is not None and not self.op.vm_capable:
            primary, secondary = self.cfg.GetNodeInstances(existing.uuid)
            if primary or secondary:
                raise errors.OpPrereqError(
                    "Node %s being re-added with vm_capable flag set to"
                    " false, but it already holds instances" % name,
                    errors.ECODE_STATE)

        master = self.cfg.GetMasterNodeInfo()
        master_singlehomed = master.secondary_ip == master.primary_ip
        if master_singlehomed != (secondary_ip == primary_ip):
            if master_singlehomed:
                raise errors.OpPrereqError("The master has no secondary ip but"
                                           " the new node has one",
                                           errors.ECODE_INVAL)
            raise errors.OpPrereqError("The master has a secondary ip but the"
                                       " new node doesn't have one",
                                       errors.ECODE_INVAL)

        if existing is not None:
            self.group_uuid = existing.group
        else:
            self.group_uuid = self.cfg.LookupNodeGroup(self.op.group)
        self.master_candidate = bool(self.op.master_capable) and \
            _DecideSelfPromotion(self.cfg,
                                 [existing.uuid] if existing else None)
        self.existing = existing
        if not self.op.join_key:
            self._CheckVersion(prereq=True)

    def _CheckVersion(self, prereq: bool) -> None:
        msg = "Can't get version information from node %s" % \
            self.op.node_name
        if not self.op.join_key:
            msg += (" (without a join key the node must already hold the"
                    " cluster certificate)")
        _CheckNodeVersion(self.op.node_name, self.op.primary_ip, msg, prereq)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        if self.op.join_key:
            bootstrap.JoinNode(self.op.node_name, self.op.primary_ip,
                               self.op.join_key)
            self._CheckVersion(prereq=False)
        if self.existing is not None:
            self._Readd(feedback_fn)
            return
        node = objects.Node(
            name=self.op.node_name, primary_ip=self.op.primary_ip,
            secondary_ip=self.op.secondary_ip,
            master_candidate=self.master_candidate, offline=False,
            drained=False, group=self.group_uuid,
            master_capable=self.op.master_capable,
            vm_capable=self.op.vm_capable, ndparams=self.op.ndparams or {},
            powered=True)
        _SetStaticStates(node, self.op)
        if node.master_candidate:
            self.LogInfo("Node will be a master candidate")
        self.context.AddNode(node)

    def _Readd(self, feedback_fn: Callable[[str], None]) -> None:
        node = self.cfg.GetNodeInfo(self.existing.uuid)
        # Reset before anything else: an offline node gets no RPC at all
        node.offline = False
        node.drained = False
        self.LogInfo("Readding a node, the offline/drained flags were reset")
        node.master_candidate = self.master_candidate
        node.primary_ip = self.op.primary_ip
        node.powered = True
        for attr in self._NFLAGS:
            setattr(node, attr, getattr(self.op, attr))
        if self.op.ndparams:
            node.ndparams = self.op.ndparams
        _SetStaticStates(node, self.op)
        if node.master_candidate:
            self.LogInfo("Node will be a master candidate")
        self.cfg.Update(node, feedback_fn)
        self.context.ReaddNode(node)
        if not node.master_candidate:
            # Copies from an earlier time as candidate must not linger
            result = self.rpc.call_node_demote_from_mc(node.uuid)
            if result.fail_msg:
                self.LogWarning("Node failed to demote itself from master"
                                " candidate status: %s", result.fail_msg)


class LUNodeRemove(LogicalUnit):
    """Remove a node; it then forgets the cluster and stops its noded."""

    HPATH = "node-remove"
    HTYPE = constants.HTYPE_NODE

    def ExpandNames(self) -> None:
        self.op.node_uuid, self.op.node_name = ExpandNodeUuidAndName(
            self.cfg, self.op.node_uuid, self.op.node_name)
        # Exclusively: the node's locks are deleted with it
        self.needed_locks = {locking.LEVEL_NODE: [self.op.node_uuid],
                             locking.LEVEL_NODE_RES: [self.op.node_uuid]}

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"OP_TARGET": self.op.node_name,
                "NODE_NAME": self.op.node_name}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        nodes = [uuid for uuid in self.cfg.GetNodeList()
                 if uuid != self.op.node_uuid]
        return (nodes, nodes)

    def CheckPrereq(self) -> None:
        self.node = self.cfg.GetNodeInfo(self.op.node_uuid)
        if self.node.uuid == self.cfg.GetMasterNode():
            raise errors.OpPrereqError("Node is the master node, failover to"
                                       " another node is required",
                                       errors.ECODE_INVAL)
        primary, secondary = self.cfg.GetNodeInstances(self.node.uuid)
        if primary or secondary:
            inst = self.cfg.GetInstanceInfo((primary + secondary)[0])
            raise errors.OpPrereqError("Instance %s is still running on the"
                                       " node, please remove first" %
                                       inst.name, errors.ECODE_INVAL)
        placement = self.cfg.GetPlacementState()
        pmodel.CheckNodeRemovable(placement, self.node.uuid, self.node.name)
        self.placement_below = sorted(
            p["name"] for p in pmodel.ProvidersUnder(placement,
                                                     self.node.uuid))

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        node = self.node
        logging.info("Removing node %s from the cluster", node.name)
        if self.placement_below:
            self.LogInfo("Removing the Placement resource providers under"
                         " the node: %s", ", ".join(self.placement_below))
        AdjustCandidatePool(self, [node.uuid])
        # The node's own post hooks, while it is still reachable
        RunPostHook(self, node.uuid)
        self.context.RemoveNode(node.uuid)
        # Not in the configuration any more: address the node directly
        runner = _DirectRunner({node.name: node.primary_ip},
                               offline=[node.name] if node.offline else None)
        try:
            result = runner.call_node_leave_cluster(node.name)
        finally:
            runner.close()
        if result.fail_msg:
            self.LogWarning("Errors encountered on the remote node while"
                            " leaving the cluster: %s", result.fail_msg)


# Roles as (master_candidate, drained, offline)
_ROLE_CANDIDATE, _ROLE_DRAINED, _ROLE_OFFLINE, _ROLE_REGULAR = range(4)
_F2R = {
    (True, False, False): _ROLE_CANDIDATE,
    (False, True, False): _ROLE_DRAINED,
    (False, False, True): _ROLE_OFFLINE,
    (False, False, False): _ROLE_REGULAR,
}
_R2F = {role: flags for flags, role in _F2R.items()}
_FLAGS = ("master_candidate", "drained", "offline")


class LUNodeSetParams(LogicalUnit):
    """Change a node's role flags, capabilities, secondary IP, parameters.

    The result lists what changed as ``(parameter, new value)`` pairs,
    values as text (``("master_candidate", "False")``).
    """

    HPATH = "node-modify"
    HTYPE = constants.HTYPE_NODE

    REQ_BGL = False

    def CheckArguments(self) -> None:
        self.op.node_uuid, self.op.node_name = ExpandNodeUuidAndName(
            self.cfg, self.op.node_uuid, self.op.node_name)
        all_mods = [self.op.offline, self.op.master_candidate,
                    self.op.drained, self.op.master_capable,
                    self.op.vm_capable, self.op.secondary_ip,
                    self.op.ndparams, self.op.powered,
                    self.op.hv_state, self.op.disk_state,
                    self.op.add_aggregates, self.op.remove_aggregates]
        if all(mod is None for mod in all_mods):
            raise errors.OpPrereqError("Please pass at least one"
                                       " modification", errors.ECODE_INVAL)
        if [getattr(self.op, attr) for attr in _FLAGS].count(True) > 1:
            raise errors.OpPrereqError("Can't set the node into more than one"
                                       " state at the same time",
                                       errors.ECODE_INVAL)
        self.might_demote = (self.op.master_candidate is False or
                             self.op.offline is True or
                             self.op.drained is True or
                             self.op.master_capable is False)
        if self.op.secondary_ip is not None:
            _CheckSecondaryIP(self.op.secondary_ip)
        # Promoting replacements changes other nodes: lock them all
        self.lock_all = self.op.auto_promote and self.might_demote

    def ExpandNames(self) -> None:
        nodes = locking.ALL_SET if self.lock_all else [self.op.node_uuid]
        self.needed_locks = {locking.LEVEL_NODE: nodes,
                             locking.LEVEL_NODE_RES: nodes}

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {
            "OP_TARGET": self.op.node_name,
            "MASTER_CANDIDATE": str(self.op.master_candidate),
            "OFFLINE": str(self.op.offline),
            "DRAINED": str(self.op.drained),
            "MASTER_CAPABLE": str(self.op.master_capable),
            "VM_CAPABLE": str(self.op.vm_capable),
        }

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        nodes = [self.cfg.GetMasterNode(), self.op.node_uuid]
        return (nodes, nodes)

    def CheckPrereq(self) -> None:
        node = self.cfg.GetNodeInfo(self.op.node_uuid)
        op = self.op
        is_master = node.uuid == self.cfg.GetMasterNode()
        if is_master and (op.master_candidate is not None or
                          op.drained is not None or op.offline is not None):
            raise errors.OpPrereqError("The master role can be changed only"
                                       " via master-failover",
                                       errors.ECODE_INVAL)
        if is_master and op.master_capable is False:
            raise errors.OpPrereqError("The master node must stay master"
                                       " capable", errors.ECODE_INVAL)
        if op.master_candidate and not node.master_capable and \
                not op.master_capable:
            raise errors.OpPrereqError("Node %s is not master capable, cannot"
                                       " make it a master candidate" %
                                       node.name, errors.ECODE_STATE)
        primary, secondary = self.cfg.GetNodeInstances(node.uuid)
        if op.vm_capable is False and (primary or secondary):
            raise errors.OpPrereqError("Node %s hosts instances, cannot unset"
                                       " the vm_capable flag" % node.name,
                                       errors.ECODE_STATE)
        if op.offline and primary:
            raise errors.OpPrereqError(
                "Can't set node %s offline: it is the primary node of"
                " instance(s) %s" % (node.name, ", ".join(
                    self.cfg.GetInstanceInfo(uuid).name
                    for uuid in primary)), errors.ECODE_STATE)
        if node.master_candidate and self.might_demote and \
                not self.lock_all:
            mc_remaining, mc_should, _ = \
                self.cfg.GetMasterCandidateStats([node.uuid])
            if mc_remaining < mc_should:
                raise errors.OpPrereqError(
                    "Not enough master candidates, please pass auto promote"
                    " option to allow promotion (--auto-promote or RAPI"
                    " auto_promote=True)", errors.ECODE_STATE)

        self.old_flags = (node.master_candidate, node.drained, node.offline)
        self.old_role = _F2R[self.old_flags]
        for attr in _FLAGS:
            if getattr(op, attr) is False and not getattr(node, attr):
                self.LogInfo("Ignoring request to unset flag %s, already"
                             " unset", attr)
                setattr(op, attr, None)
        self._CheckPowered(node)
        self._DecidePromotion(node)
        self.new_role = self._NewRole()
        if self.old_role == _ROLE_OFFLINE and self.new_role != _ROLE_OFFLINE:
            _CheckNodeVersion(node.name, node.primary_ip,
                              "Node %s is being de-offlined but fails to"
                              " report its version" % node.name, True)
            self.LogWarning("Transitioning node from offline to online state"
                            " without using re-add. Please make sure the"
                            " node is healthy!")
        if op.secondary_ip is not None:
            self._CheckNewSecondaryIP(node)
        if op.ndparams:
            self.new_ndparams = GetUpdatedParams(
                node.ndparams, op.ndparams, objects.ND_PARAMETERS, "node")
        self.new_aggregates = self._NewAggregates(node)

    def _NewAggregates(self, node: objects.Node) -> list[str] | None:
        """The node's named aggregates after the change (None: none
        asked). Its group's aggregate is implied, not listed."""
        if self.op.add_aggregates is None and \
                self.op.remove_aggregates is None:
            return None
        cluster = self.cfg.GetClusterInfo()
        current = set(node.aggregates or ())
        add = {pcluster.LookupNamedAggregate(cluster, name)
               for name in self.op.add_aggregates or ()}
        remove = {pcluster.LookupNamedAggregate(cluster, name)
                  for name in self.op.remove_aggregates or ()}
        if add & remove:
            raise errors.OpPrereqError(
                "Aggregate(s) %s both added and removed" % ", ".join(
                    sorted(cluster.aggregates[uuid]["name"]
                           for uuid in add & remove)), errors.ECODE_INVAL)
        for uuid in sorted(remove - current):
            self.LogInfo("Node is not in aggregate %s",
                         cluster.aggregates[uuid]["name"])
        return sorted((current | add) - remove)

    def _CheckPowered(self, node: objects.Node) -> None:
        group = self.cfg.GetNodeGroup(node.group)
        ndparams = self.cfg.GetClusterInfo().FillND(node, group)
        if ndparams.get(objects.ND_OOB_PROGRAM):
            if self.op.offline is False and not (node.powered or
                                                 self.op.powered):
                raise errors.OpPrereqError("Node %s needs to be turned on"
                                           " before its offline status can"
                                           " be reset" % node.name,
                                           errors.ECODE_STATE)
        elif self.op.powered is not None:
            raise errors.OpPrereqError("Unable to change powered state for"
                                       " node %s as it does not support"
                                       " out-of-band handling" % node.name,
                                       errors.ECODE_STATE)

    def _DecidePromotion(self, node: objects.Node) -> None:
        """Join the pool when becoming eligible; leave it when incapable."""
        op = self.op

        def after(attr: str) -> bool:
            value = getattr(op, attr)
            return getattr(node, attr) if value is None else value

        becomes_eligible = (
            op.drained is False or op.offline is False or
            (op.master_capable and not node.master_capable))
        will_be_eligible = (after("master_capable") and
                            not after("drained") and not after("offline"))
        if (becomes_eligible and will_be_eligible and
                op.master_candidate is None and
                _DecideSelfPromotion(self.cfg)):
            op.master_candidate = True
            self.LogInfo("Auto-promoting node to master candidate")
        if op.master_capable is False and node.master_candidate:
            self.LogInfo("Demoting from master candidate")
            op.master_candidate = False

    def _NewRole(self) -> int:
        op = self.op
        if op.master_candidate:
            return _ROLE_CANDIDATE
        if op.drained:
            return _ROLE_DRAINED
        if op.offline:
            return _ROLE_OFFLINE
        if False in (op.master_candidate, op.drained, op.offline):
            # Unsetting the one flag that is set
            return _ROLE_REGULAR
        return self.old_role

    def _CheckNewSecondaryIP(self, node: objects.Node) -> None:
        master = self.cfg.GetMasterNodeInfo()
        master_singlehomed = master.secondary_ip == master.primary_ip
        new_ip = self.op.secondary_ip
        forced = self.op.force and node.uuid == master.uuid
        if master_singlehomed and new_ip != node.primary_ip:
            if not forced:
                raise errors.OpPrereqError(
                    "Changing the secondary ip on a single-homed cluster"
                    " requires the --force option to be passed, and the"
                    " target node to be the master", errors.ECODE_INVAL)
            self.LogWarning("Transitioning from single-homed to multi-homed"
                            " cluster; all nodes will require a secondary IP"
                            " address")
        elif not master_singlehomed and new_ip == node.primary_ip:
            if not forced:
                raise errors.OpPrereqError(
                    "Cannot set the secondary IP to be the same as the"
                    " primary IP on a multi-homed cluster, unless the"
                    " --force option is passed, and the target node is the"
                    " master", errors.ECODE_INVAL)
            self.LogWarning("Transitioning from multi-homed to single-homed"
                            " cluster; secondary IP addresses will have to be"
                            " removed")
        _CheckIPConflicts(self.cfg, {new_ip}, node.uuid)

    def Exec(self, feedback_fn: Callable[[str], None]) -> list:
        node = self.cfg.GetNodeInfo(self.op.node_uuid)
        result: list[tuple[str, str]] = []
        if self.op.ndparams:
            node.ndparams = self.new_ndparams
            result.append(("ndparams", str(node.ndparams)))
        if self.op.powered is not None:
            node.powered = self.op.powered
            result.append(("powered", str(node.powered)))
        _SetStaticStates(node, self.op)
        for attr in ("master_capable", "vm_capable"):
            value = getattr(self.op, attr)
            if value is not None:
                setattr(node, attr, value)
                result.append((attr, str(value)))
        if self.op.secondary_ip is not None:
            node.secondary_ip = self.op.secondary_ip
            result.append(("secondary_ip", self.op.secondary_ip))
        if self.new_aggregates is not None:
            node.aggregates = self.new_aggregates or None
            names = self.cfg.GetClusterInfo().aggregates or {}
            result.append(("aggregates", ",".join(
                sorted(names[uuid]["name"] for uuid in self.new_aggregates))))
        if self.new_role != self.old_role:
            new_flags = _R2F[self.new_role]
            for old, new, desc in zip(self.old_flags, new_flags, _FLAGS):
                if old != new:
                    result.append((desc, str(new)))
            node.master_candidate, node.drained, node.offline = new_flags
        self.cfg.Update(node, feedback_fn)

        if self.new_role != self.old_role:
            if (self.old_role == _ROLE_CANDIDATE and
                    self.new_role != _ROLE_OFFLINE):
                # Only now: the configuration no longer sends it copies
                res = self.rpc.call_node_demote_from_mc(node.uuid)
                if res.fail_msg:
                    self.LogWarning("Node failed to demote itself: %s",
                                    res.fail_msg)
            if self.lock_all:
                AdjustCandidatePool(self, [node.uuid])
            if self.new_role == _ROLE_CANDIDATE:
                self.context.SyncNode(node.uuid)
        return result


def CheckStorageTypeEnabled(cluster: objects.Cluster,
                            storage_type: str) -> None:
    """Refuse a storage type no enabled disk template uses (LVM's physical
    volumes are those of its volume groups, as in Ganeti)."""
    if storage_type == constants.ST_LVM_PV:
        storage_type = constants.ST_LVM_VG
    templates = {template for template, stype
                 in constants.MAP_DISK_TEMPLATE_STORAGE_TYPE.items()
                 if stype == storage_type}
    if not templates & set(cluster.enabled_disk_templates):
        raise errors.OpPrereqError("No disk template of storage type '%s' is"
                                   " enabled in this cluster." % storage_type,
                                   errors.ECODE_STATE)


def GetStorageTypeArgs(cluster: objects.Cluster, storage_type: str) -> list:
    """The storage_list ``su_args`` of a type: its (virtual) directory."""
    if storage_type == constants.ST_FILE:
        return [rpc_node.EncodeVirtualPath(cluster.file_storage_dir)]
    if storage_type == constants.ST_SHARED_FILE:
        return [rpc_node.EncodeVirtualPath(cluster.shared_file_storage_dir)]
    return []


class LUNodeQueryStorage(NoHooksLU):
    """Rows of the requested fields for the storage units of nodes.

    Without a storage type, the type of the first enabled disk template
    is listed, as in Ganeti. Nodes that fail to answer are skipped with a
    warning, so one broken node does not hide the others.
    """

    REQ_BGL = False

    def CheckArguments(self) -> None:
        known = constants.VALID_STORAGE_FIELDS | {constants.SF_NODE,
                                                  constants.SF_TYPE}
        unknown = [field for field in self.op.output_fields
                   if field not in known]
        if unknown:
            raise errors.OpPrereqError("Unknown output fields selected: %s"
                                       % ",".join(unknown),
                                       errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.share_locks = dict.fromkeys(locking.LEVELS, 1)
        wanted: list[str] | None
        if self.op.nodes:
            wanted = [ExpandNodeUuidAndName(self.cfg, None, name)[0]
                      for name in self.op.nodes]
        else:
            wanted = locking.ALL_SET
        self.needed_locks = {locking.LEVEL_NODE: wanted}

    def CheckPrereq(self) -> None:
        cluster = self.cfg.GetClusterInfo()
        if self.op.storage_type:
            CheckStorageTypeEnabled(cluster, self.op.storage_type)
            self.storage_type = self.op.storage_type
        else:
            self.storage_type = constants.MAP_DISK_TEMPLATE_STORAGE_TYPE[
                cluster.enabled_disk_templates[0]]
        if self.storage_type not in constants.STS_REPORT_NODE_STORAGE:
            raise errors.OpPrereqError(
                "Storage reporting for storage type '%s' is not supported."
                " Please use the --storage-type option to specify one of the"
                " supported storage types (%s) or set the default disk"
                " template to one that supports storage reporting." %
                (self.storage_type,
                 ", ".join(sorted(constants.STS_REPORT_NODE_STORAGE))),
                errors.ECODE_INVAL)

    def Exec(self, feedback_fn: Callable[[str], None]) -> list[list]:
        # The name is always fetched: rows are sorted by it; node and type
        # are known here only
        fields = [constants.SF_NAME] + [
            field for field in self.op.output_fields
            if field not in (constants.SF_NAME, constants.SF_NODE,
                             constants.SF_TYPE)]
        field_idx = {name: idx for idx, name in enumerate(fields)}
        su_args = GetStorageTypeArgs(self.cfg.GetClusterInfo(),
                                     self.storage_type)
        node_uuids = list(self.glm.list_owned(locking.LEVEL_NODE))
        data = self.rpc.call_storage_list(node_uuids, self.storage_type,
                                          su_args, self.op.name, fields)
        result = []
        nodes = sorted((self.cfg.GetNodeInfo(uuid) for uuid in node_uuids),
                       key=lambda node: utils.NiceSortKey(node.name))
        for node in nodes:
            nresult = data[node.uuid]
            if nresult.offline:
                continue
            if nresult.fail_msg:
                self.LogWarning("Can't get storage data from node %s: %s",
                                node.name, nresult.fail_msg)
                continue
            rows = {row[0]: row for row in nresult.payload}
            for name in utils.NiceSort(rows):
                row = rows[name]
                out = []
                for field in self.op.output_fields:
                    if field == constants.SF_NODE:
                        out.append(node.name)
                    elif field == constants.SF_TYPE:
                        out.append(self.storage_type)
                    else:
                        out.append(row[field_idx[field]])
                result.append(out)
        return result
