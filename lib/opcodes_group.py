"""The node group opcodes (part of ganeti.opcodes, which re-exports
them; see it for how parameters are declared)."""

from ganeti import ht
from ganeti.opcodes_base import (
    OpCode, _PDiskState, _PForce, _PGroupName, _PHvState, _PIAllocFromDesc,
    _TAllocPolicy, _TJobIdListOnly)


_GROUP_PARAMS = [
    ("alloc_policy", None, ht.TMaybe(_TAllocPolicy),
     "Instance allocation policy (preferred, last_resort, unallocable)"),
    ("ndparams", None, ht.TMaybeDict, "Group-level node parameters"),
    ("diskparams", None, ht.TMaybe(ht.TDictOf(ht.TNonEmptyString, ht.TDict)),
     "Group-level disk parameters, per disk template"),
    ("ipolicy", None, ht.TMaybeDict, "Group-level instance policy"),
    _PHvState, _PDiskState,
]


class OpGroupAdd(OpCode):
    """Add a node group to the cluster."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName] + _GROUP_PARAMS
    OP_RESULT = ht.TNone


class OpGroupAssignNodes(OpCode):
    """Move nodes into a node group."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [
        _PGroupName, _PForce,
        ("nodes", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Names of the nodes to assign"),
        ("node_uuids", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "UUIDs of the nodes (filled in from nodes)"),
    ]
    OP_RESULT = ht.TNone


class OpGroupSetParams(OpCode):
    """Change the parameters of a node group."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName] + _GROUP_PARAMS
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString, ht.TAny))


class OpGroupRemove(OpCode):
    """Remove an empty node group."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName]
    OP_RESULT = ht.TNone


class OpGroupRename(OpCode):
    """Rename a node group."""
    OP_PARAMS = [
        _PGroupName,
        ("new_name", ht.NoDefault, ht.TObjectName, "New group name"),
    ]
    OP_RESULT = ht.TNonEmptyString


class OpGroupEvacuate(OpCode):
    """Move the instances of a node group to other groups (follow-up jobs
    of the allocator's change-group answer)."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [
        _PGroupName,
        ("early_release", False, ht.TBool,
         "Whether to release locks as soon as possible (only for"
         " internally mirrored disks)"),
        _PIAllocFromDesc("Iallocator for computing solution"),
        ("target_groups", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Destination group names or UUIDs"),
        ("sequential", False, ht.TBool, "Sequential job execution"),
        ("force_failover", False, ht.TBool,
         "Disallow migration moves and always use failovers"),
    ]
    OP_RESULT = _TJobIdListOnly
