"""Opcodes: the operations a job is made of.

Each opcode declares its parameters once, in ``OP_PARAMS``, as
``(name, default, check, doc)``. Validation at submission, the wire format
(a flat dict with ``OP_ID``), defaults, CLI options, RAPI bodies and the API
description all derive from that declaration.

The opcodes live in modules by the resource they act on (opcodes_instance,
opcodes_cluster, opcodes_node, opcodes_group, opcodes_network; tags,
queries, OS and test opcodes here); this module is their one name space:
``opcodes.OpInstanceCreate``, and ``OP_MAPPING`` holds all of them.
"""

from ganeti import constants, ht
from ganeti.opcodes_base import (  # noqa: F401 (re-exported)
    BaseOpCode, OP_MAPPING, OpCode, _PExplain, _PTagKind, _PTagName, _PTags,
    _PUseLocking, _TMaybePrivateDict)
# In this order, OP_MAPPING lists the opcodes as it always did: instances,
# cluster, nodes, groups, networks, then the ones below
from ganeti.opcodes_instance import *  # noqa: F401,F403 (re-exported)
from ganeti.opcodes_cluster import *  # noqa: F401,F403 (re-exported)
from ganeti.opcodes_node import *  # noqa: F401,F403 (re-exported)
from ganeti.opcodes_group import *  # noqa: F401,F403 (re-exported)
from ganeti.opcodes_network import *  # noqa: F401,F403 (re-exported)


# Tags ------------------------------------------------------------------------

class OpTagsGet(OpCode):
    """Return the tags of an object."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [_PTagKind, _PUseLocking, _PTagName]
    OP_RESULT = ht.TListOf(ht.TNonEmptyString)


class OpTagsSearch(OpCode):
    """Search tags of all objects with a regular expression."""
    OP_DSC_FIELD = "pattern"
    OP_PARAMS = [("pattern", ht.NoDefault, ht.TNonEmptyString,
                  "Search pattern (regular expression)")]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString,
                                       ht.TNonEmptyString))


class OpTagsSet(OpCode):
    """Add tags to an object."""
    OP_PARAMS = [_PTagKind, _PTags, _PTagName]
    OP_RESULT = ht.TNone


class OpTagsDel(OpCode):
    """Remove tags from an object."""
    OP_PARAMS = [_PTagKind, _PTags, _PTagName]
    OP_RESULT = ht.TNone


# Queries ---------------------------------------------------------------------

class OpQuery(OpCode):
    """Query a resource with the query language."""
    OP_DSC_FIELD = "what"
    OP_PARAMS = [
        ("what", ht.NoDefault, ht.TNonEmptyString, "Resource to query"),
        _PUseLocking,
        ("fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("qfilter", None, ht.TMaybe(ht.TList), "Query filter"),
    ]
    OP_RESULT = ht.TDict


class OpQueryFields(OpCode):
    """Describe the fields of a resource."""
    OP_DSC_FIELD = "what"
    OP_PARAMS = [
        ("what", ht.NoDefault, ht.TNonEmptyString, "Resource to query"),
        ("fields", None, ht.TMaybe(ht.TListOf(ht.TNonEmptyString)),
         "Requested fields; all if not given"),
    ]
    OP_RESULT = ht.TDict


# Operating systems -----------------------------------------------------------

class OpOsDiagnose(OpCode):
    """Report the OS definitions of the cluster's nodes."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("names", [], ht.TListOf(ht.TNonEmptyString),
         "Which operating systems to diagnose"),
    ]
    OP_RESULT = ht.TListOf(ht.TListOf(ht.TAny))


class OpExtStorageDiagnose(OpCode):
    """Report the ExtStorage providers of the cluster's nodes."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("names", [], ht.TListOf(ht.TNonEmptyString),
         "Which ExtStorage providers to diagnose"),
    ]
    OP_RESULT = ht.TListOf(ht.TListOf(ht.TAny))


# Instances -------------------------------------------------------------------

class OpTestAllocator(OpCode):
    """Build an instance allocator's input message, or run the allocator
    on it (``direction`` in or out); the result is the text."""
    OP_DSC_FIELD = "iallocator"
    OP_PARAMS = [
        ("direction", ht.NoDefault,
         ht.TElemOf(constants.VALID_IALLOCATOR_DIRECTIONS),
         "Show the input message (in) or run the allocator on it (out)"),
        ("mode", ht.NoDefault,
         ht.TElemOf(constants.VALID_IALLOCATOR_MODES),
         "Request type"),
        ("name", ht.NoDefault, ht.TNonEmptyString,
         "Instance name (allocate, relocate, allocate-secondary)"),
        ("nics", None, ht.TMaybeListOf(ht.TDict),
         "NICs of the instance: mac, ip, bridge"),
        ("disks", None, ht.TMaybeListOf(ht.TDict),
         "Disks of the instance: size, mode"),
        ("hypervisor", None, ht.TMaybeString,
         "Hypervisor (the cluster's default if not given)"),
        ("iallocator", None, ht.TMaybeString,
         "Allocator to run (the cluster's default if not given)"),
        ("tags", [], ht.TListOf(ht.TNonEmptyString), "Instance tags"),
        ("memory", None, ht.TMaybe(ht.TNonNegativeInt), "Memory (MiB)"),
        ("vcpus", None, ht.TMaybe(ht.TNonNegativeInt), "Virtual CPUs"),
        ("os", None, ht.TMaybeString, "Operating system"),
        ("disk_template", None, ht.TMaybeString, "Disk template"),
        ("instances", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Instances (node-evacuate, change-group)"),
        ("evac_mode", None, ht.TMaybe(ht.TElemOf(constants.NODE_EVAC_MODES)),
         "Evacuation mode (node-evacuate)"),
        ("target_groups", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Target node groups (change-group)"),
        ("spindle_use", 1, ht.TNonNegativeInt, "Spindles used"),
        ("count", 1, ht.TStrictPositiveInt,
         "Number of instances (multi-allocate)"),
        ("group_name", None, ht.TMaybeString, "Node group to allocate in"),
        _PExplain,
    ]
    OP_RESULT = ht.TString


class OpTestDelay(OpCode):
    """Sleep for a while on the master and/or nodes (tests, benchmarks)."""
    OP_DSC_FIELD = "duration"
    OP_PARAMS = [
        ("duration", ht.NoDefault, ht.TNonNegativeNumber,
         "Duration in seconds (0: none, as in Ganeti)"),
        ("on_master", True, ht.TBool, "Whether to sleep on the master"),
        ("on_nodes", [], ht.TListOf(ht.TNonEmptyString),
         "Nodes to sleep on"),
        ("on_node_uuids", None, ht.TMaybe(ht.TListOf(ht.TNonEmptyString)),
         "UUIDs of the nodes to sleep on (filled from on_nodes)"),
        ("repeat", 0, ht.TNonNegativeInt,
         "How many extra times to repeat the sleep"),
        ("interruptible", False, ht.TBool,
         "Whether the delay can be interrupted"),
        ("no_locks", True, ht.TBool,
         "Run without taking the node locks"),
    ]
    OP_RESULT = ht.TNone


class OpTestJqueue(OpCode):
    """Exercise the job queue: notifications through a socket, log
    messages, failure (gnt-debug test-jobqueue)."""
    OP_PARAMS = [
        ("notify_waitlock", False, ht.TBool,
         "Whether to notify the client while waiting for locks"),
        ("notify_exec", False, ht.TBool,
         "Whether to notify the client when executing"),
        ("log_messages", [], ht.TListOf(ht.TString),
         "Messages to log, each announced to the client"),
        ("fail", False, ht.TBool, "Whether to fail at the end"),
    ]
    OP_RESULT = ht.TBool


class OpTestOsParams(OpCode):
    """Show the secret OS parameters it was given (tests their transport
    and redaction)."""
    OP_PARAMS = [
        ("osparams_secret", None, _TMaybePrivateDict,
         "Secret OS parameters"),
    ]
    OP_RESULT = ht.TNone


class OpTestDummy(OpCode):
    """Log messages, fail or submit jobs as asked (tests of the queue)."""
    OP_PARAMS = [
        ("result", ht.NoDefault, ht.TAny, "Result of the opcode"),
        ("messages", ht.NoDefault, ht.TAny, "Messages to log"),
        ("fail", ht.NoDefault, ht.TAny, "Whether to fail"),
        ("submit_jobs", ht.NoDefault, ht.TAny,
         "Jobs to submit as follow-ups (a list of lists of opcodes)"),
    ]
    OP_RESULT = ht.TAny
