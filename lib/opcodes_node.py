"""The node opcodes: adding, changing, evacuating nodes, their storage
units and commands run on them (part of ganeti.opcodes, which re-exports
them; see it for how parameters are declared)."""

from ganeti import constants, ht
from ganeti.opcodes_base import (
    OpCode, _PAllowRuntimeChgs, _PDiskState, _PForce, _PHvState,
    _PIAllocFromDesc, _PIgnoreIpolicy, _PMemberOf, _PMigrationLive,
    _PMigrationMode, _PMigrationTargetNode, _PMigrationTargetNodeUuid,
    _PNodeName, _PNodeUuid, _PUnsupported, _PUseLocking, _TJobIdListOnly)


class OpNodeAdd(OpCode):
    """Add a node to the cluster (or re-add a known one)."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName,
        ("primary_ip", None, ht.TMaybeString,
         "Primary IP address (resolved from the name if not given)"),
        ("secondary_ip", None, ht.TMaybeString,
         "Secondary IP address (the primary one if not given)"),
        ("readd", False, ht.TBool,
         "Whether the node is already in the configuration and is re-added"),
        ("group", None, ht.TMaybeString,
         "Node group of the new node (the default group if not given)"),
        ("master_capable", None, ht.TMaybeBool,
         "Whether the node may become master or master candidate"),
        ("vm_capable", None, ht.TMaybeBool,
         "Whether the node may host instances"),
        ("ndparams", None, ht.TMaybeDict, "Node parameters"),
        ("join_key", None, ht.TMaybeString,
         "Join key printed by the new node's noded (CERT-PIN:SECRET); it"
         " authorises the master to hand over the cluster's certificate."
         " Without it, the node must already hold the cluster certificate"),
        _PHvState, _PDiskState,
        _PUnsupported("node_setup", False, ht.TBool,
                      "Whether to set up the node's SSH access (nodes join"
                      " with a join key here)"),
    ]
    OP_RESULT = ht.TNone


class OpNodeRemove(OpCode):
    """Remove a node from the cluster."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [_PNodeName, _PNodeUuid]
    OP_RESULT = ht.TNone


class OpNodeSetParams(OpCode):
    """Change a node's flags and parameters."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName, _PNodeUuid, _PForce,
        ("master_candidate", None, ht.TMaybeBool,
         "Whether the node should become a master candidate"),
        ("offline", None, ht.TMaybeBool,
         "Whether the node should be marked offline"),
        ("drained", None, ht.TMaybeBool,
         "Whether the node should be marked drained"),
        ("auto_promote", False, ht.TBool,
         "Whether to promote other nodes to master candidate if this"
         " change leaves the candidate pool short"),
        ("master_capable", None, ht.TMaybeBool,
         "Whether the node may become master or master candidate"),
        ("vm_capable", None, ht.TMaybeBool,
         "Whether the node may host instances"),
        ("secondary_ip", None, ht.TMaybeString, "New secondary IP address"),
        ("ndparams", None, ht.TMaybeDict, "Node parameters"),
        ("powered", None, ht.TMaybeBool,
         "Whether the node is powered (out-of-band management)"),
        _PHvState, _PDiskState,
        ("add_aggregates", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Aggregates (names or UUIDs) to add the node to"),
        ("remove_aggregates", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Aggregates (names or UUIDs) to remove the node from"),
    ]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString, ht.TAny))


class OpNodeQueryStorage(OpCode):
    """Report the storage units of nodes (gnt-node list-storage)."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("storage_type", None,
         ht.TMaybe(ht.TElemOf(constants.STORAGE_TYPES)),
         "Storage type (that of the first enabled disk template if not"
         " given)"),
        ("nodes", [], ht.TListOf(ht.TNonEmptyString),
         "Nodes to query (all if empty)"),
        ("name", None, ht.TMaybeString, "Storage unit name"),
    ]
    OP_RESULT = ht.TListOf(ht.TListOf(ht.TAny))


class OpNodeMigrate(OpCode):
    """Migrate all primary instances of a node away (one job each)."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName, _PNodeUuid, _PMigrationMode, _PMigrationLive,
        _PMigrationTargetNode, _PMigrationTargetNodeUuid,
        _PAllowRuntimeChgs, _PIgnoreIpolicy,
        _PIAllocFromDesc("Iallocator for deciding the target node for"
                         " shared-storage instances"),
    ]
    OP_RESULT = _TJobIdListOnly


class OpNodeEvacuate(OpCode):
    """Move the instances off a node (one follow-up job each).

    Without an instance allocator, ``remote_node`` is also the target of
    the primary instances: this version has no internally mirrored disks,
    hence no secondaries to give a new node.
    """
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        ("early_release", False, ht.TBool,
         "Whether to release locks as soon as possible (only for"
         " internally mirrored disks)"),
        _PNodeName, _PNodeUuid,
        ("remote_node", None, ht.TMaybeString,
         "New secondary node; here also the new primary node of the"
         " primary instances (no instance allocator exists)"),
        ("remote_node_uuid", None, ht.TMaybeString,
         "New secondary node UUID (filled in from remote_node)"),
        _PIAllocFromDesc("Iallocator for computing solution"),
        ("mode", ht.NoDefault, ht.TElemOf(constants.NODE_EVAC_MODES),
         "Node evacuation mode (primary-only, secondary-only or all)"),
        ("ignore_soft_errors", None, ht.TMaybeBool,
         "Ignore soft htools errors"),
        _PMemberOf,
    ]
    OP_RESULT = _TJobIdListOnly


_PStorageType = ("storage_type", ht.NoDefault,
                 ht.TElemOf(constants.STORAGE_TYPES), "Storage type")
_PStorageName = ("name", None, ht.TMaybeString, "Storage unit name")


class OpNodeModifyStorage(OpCode):
    """Change the modifiable fields of a storage unit of a node."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName, _PNodeUuid, _PStorageType, _PStorageName,
        ("changes", ht.NoDefault, ht.TDict,
         "Field name -> new value"),
    ]
    OP_RESULT = ht.TNone


class OpRepairNodeStorage(OpCode):
    """Repair a storage unit of a node."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName, _PNodeUuid, _PStorageType, _PStorageName,
        ("ignore_consistency", False, ht.TBool,
         "Whether to ignore instances with faulty disks"),
    ]
    OP_RESULT = ht.TNone


class OpNodeQueryvols(OpCode):
    """Report the logical volumes of nodes (gnt-node volumes)."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("nodes", [], ht.TListOf(ht.TNonEmptyString),
         "Nodes to query (all if empty)"),
    ]
    OP_RESULT = ht.TList


class OpNodePowercycle(OpCode):
    """Power-cycle a node (not supported here)."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [_PNodeName, _PNodeUuid, _PForce]
    OP_RESULT = ht.TMaybeString


class OpOobCommand(OpCode):
    """Run an out-of-band management command on nodes (not supported)."""
    OP_PARAMS = [
        ("node_names", [], ht.TListOf(ht.TNonEmptyString),
         "Nodes to run the command on (all if empty)"),
        ("node_uuids", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Node UUIDs (filled in from node_names)"),
        ("command", ht.NoDefault,
         ht.TElemOf(["health", "power-off", "power-on", "power-cycle",
                     "power-status"]),
         "Out-of-band command"),
        ("timeout", 60, ht.TInt,
         "Timeout of the out-of-band program (seconds)"),
        ("ignore_status", False, ht.TBool,
         "Whether to ignore the nodes' recorded power state"),
        ("power_delay", 2.0, ht.TNumber,
         "Delay between powering on successive nodes (seconds)"),
    ]
    OP_RESULT = ht.TListOf(ht.TListOf(ht.TTupleOf(ht.TInt, ht.TAny)))


class OpRepairCommand(OpCode):
    """Run a node's white-listed repair command (ganeti-maintd's
    live-repair) with an input on its standard input."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        ("node_name", ht.NoDefault, ht.TNonEmptyString,
         "Node to run the command on"),
        ("command", ht.NoDefault, ht.TNonEmptyString,
         "Command name (a file in the node's node-repair-commands"
         " directory; no parameters)"),
        ("input", None, ht.TMaybe(ht.TString),
         "Input to be redirected to the standard input of the command"),
    ]
    OP_RESULT = ht.TString


class OpRestrictedCommand(OpCode):
    """Run a restricted command on nodes (not supported)."""
    OP_PARAMS = [
        _PUseLocking,
        ("nodes", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Nodes to run the command on"),
        ("node_uuids", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Node UUIDs (filled in from nodes)"),
        ("command", ht.NoDefault, ht.TNonEmptyString, "Command name"),
    ]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TBool, ht.TString))
