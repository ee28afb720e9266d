"""Opcodes: the operations a job is made of.

Each opcode declares its parameters once, in ``OP_PARAMS``, as
``(name, default, check, doc)``. Validation at submission, the wire format
(a flat dict with ``OP_ID``), defaults, CLI options, RAPI bodies and the API
description all derive from that declaration.
"""

import ipaddress
from typing import Any, Callable

from ganeti import constants, ht
from ganeti.opcodes_base import (  # noqa: F401 (re-exported)
    BaseOpCode, OP_MAPPING, OpCode, _OpParam, _PAllowRuntimeChgs,
    _PConflictsCheck, _PDebugSimulateErrors, _PDiskState, _PErrorCodes,
    _PExplain, _PForce, _PGroupName, _PHvState, _PIAllocFromDesc,
    _PIgnoreErrors, _PIgnoreIpolicy, _PMigrationLive, _PMigrationMode,
    _PMemberOf, _PMigrationTargetNode, _PMigrationTargetNodeUuid,
    _PNodeName,
    _PNodeUuid, _PSkipChecks, _PTagKind, _PTagName, _PTags, _PUnsupported,
    _PUseLocking, _PVerbose, _PVerifyClutter, _TAllocPolicy, _THvParams,
    _TJobIdListOnly, _TMaybePrivateDict, _TMaybeUidRanges,
    _TOsListModifications, _TParamsDict)
from ganeti.opcodes_instance import *  # noqa: F401,F403 (re-exported)


class OpClusterPostInit(OpCode):
    """Post-initialization of the cluster (run once after init)."""
    OP_RESULT = ht.TBool


class OpClusterDestroy(OpCode):
    """Destroy the cluster: the last step before the master leaves it."""
    OP_RESULT = ht.TNonEmptyString


class OpClusterQuery(OpCode):
    """Return the cluster information (the QueryClusterInfo dict)."""
    OP_RESULT = ht.TDict


class OpClusterRedistConf(OpCode):
    """Push the configuration and ssconf files to every node again."""
    OP_RESULT = ht.TNone


class OpClusterRepairCancel(OpCode):
    """Cancel a repair incident of ganeti-maintd: it takes no action for
    it any more and forgets it once the node no longer reports it."""
    OP_DSC_FIELD = "incident_id"
    OP_PARAMS = [
        ("incident_id", ht.NoDefault, ht.TNonEmptyString,
         "Identifier of the incident (as ganeti-maintd's /1/status lists"
         " it)"),
    ]
    OP_RESULT = ht.TNone


class OpClusterSetParams(OpCode):
    """Change cluster-wide parameters."""
    OP_PARAMS = [
        _PForce,
        ("candidate_pool_size", None, ht.TMaybe(ht.TStrictPositiveInt),
         "Number of master candidates the cluster keeps"),
        ("max_running_jobs", None, ht.TMaybe(ht.TStrictPositiveInt),
         "Maximal number of jobs running at the same time"),
        ("max_tracked_jobs", None, ht.TMaybe(ht.TStrictPositiveInt),
         "Maximal number of jobs tracked in the job queue"),
        ("mac_prefix", None,
         ht.TMaybe(ht.TRegex(r"^[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}$",
                             "MAC prefix (three hex octets)")),
         "MAC address prefix of new instances' NICs"),
        ("master_netdev", None, ht.TMaybe(ht.TString),
         "Network device of the master IP"),
        ("master_netmask", None, ht.TMaybe(ht.TInRange(0, 128)),
         "Netmask of the master IP"),
        ("enabled_hypervisors", None,
         ht.TMaybe(ht.TAnd(ht.TListOf(ht.TElemOf(constants.HYPER_TYPES)),
                           ht.TTrue)),
         "Hypervisors instances may use"),
        ("default_hypervisor", None,
         ht.TMaybe(ht.TElemOf(constants.HYPER_TYPES)),
         "Hypervisor new instances get by default (made the first of the"
         " enabled hypervisors)"),
        ("hvparams", None, ht.TMaybe(_THvParams),
         "Cluster-level hypervisor parameters, per hypervisor; the value"
         " \"default\" resets a parameter to its built-in default"),
        ("beparams", None, ht.TMaybe(_TParamsDict),
         "Cluster-level backend parameters"),
        ("ipolicy", None, ht.TMaybeDict,
         "Cluster-wide instance policy (the keys given replace the current"
         " ones)"),
        ("nicparams", None, ht.TMaybe(_TParamsDict),
         "Cluster-level NIC parameters"),
        ("ndparams", None, ht.TMaybe(_TParamsDict),
         "Cluster-level node parameters"),
        ("diskparams", None,
         ht.TMaybe(ht.TDictOf(ht.TNonEmptyString, _TParamsDict)),
         "Cluster-level disk parameters, per disk template; the value"
         " \"default\" resets a parameter to its built-in default"),
        ("enabled_disk_templates", None,
         ht.TMaybe(ht.TAnd(ht.TListOf(ht.TElemOf(constants.DISK_TEMPLATES)),
                           ht.TTrue)),
         "Disk templates instances may use"),
        ("file_storage_dir", None, ht.TMaybe(ht.TString),
         "Directory for file-based instance disks"),
        ("shared_file_storage_dir", None, ht.TMaybe(ht.TString),
         "Directory for shared-file instance disks"),
        ("maintain_node_health", None, ht.TMaybeBool,
         "Whether the watcher keeps node health (shuts down stray"
         " instances)"),
        ("default_iallocator", None, ht.TMaybe(ht.TString),
         "Default instance allocator"),
        ("default_iallocator_params", None, ht.TMaybeDict,
         "Default parameters of the instance allocator, passed to the"
         " allocator program as --key=value"),
        ("os_hvp", None,
         ht.TMaybe(ht.TDictOf(ht.TNonEmptyString, _THvParams)),
         "Cluster-wide OS hypervisor parameter defaults, per OS and"
         " hypervisor"),
        ("osparams", None,
         ht.TMaybe(ht.TDictOf(ht.TNonEmptyString, ht.TDict)),
         "Cluster-wide OS parameter defaults, per OS"),
        ("hidden_os", None, _TOsListModifications,
         "Modify list of hidden operating systems: each modification must"
         " have two items, the operation and the OS name; the operation"
         " can be add or remove"),
        ("blacklisted_os", None, _TOsListModifications,
         "Modify list of blacklisted operating systems: each modification"
         " must have two items, the operation and the OS name; the"
         " operation can be add or remove"),
        _PHvState, _PDiskState,
        ("compression_tools", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Compression tools allowed for instance moves, exports and imports"
         " (must include gzip)"),
        ("placement_required_prefix", None, ht.TMaybe(ht.TString),
         "Aggregate metadata prefix (e.g. reservation:): an instance tag"
         " starting with it requires an aggregate with that metadata key"
         " (\"\": off)"),
        ("placement_default_forbidden_prefix", None, ht.TMaybe(ht.TString),
         "Aggregate metadata prefix (e.g. reservation:): aggregates with a"
         " metadata key starting with it are forbidden to instances with"
         " no tag starting with it (\"\": off)"),
        _PUnsupported("vg_name", None, ht.TMaybe(ht.TString),
                      "Volume group of LVM-based disks", inactive=("", )),
        _PUnsupported("reserved_lvs", None,
                      ht.TMaybeListOf(ht.TNonEmptyString),
                      "Logical volumes cluster verify ignores"),
        _PUnsupported("drbd_helper", None, ht.TMaybe(ht.TString),
                      "DRBD usermode helper"),
        _PUnsupported("osparams_private_cluster", None,
                      ht.TPrivate(ht.TMaybe(
                          ht.TDictOf(ht.TNonEmptyString, ht.TDict))),
                      "Cluster-wide private OS parameter defaults, per OS"),
        ("uid_pool", None, _TMaybeUidRanges,
         "User-id pool of the instances' processes (stored and distributed"
         " in ssconf; no hypervisor here draws from it)"),
        ("add_uids", None, _TMaybeUidRanges,
         "User-id ranges added to the pool"),
        ("remove_uids", None, _TMaybeUidRanges,
         "User-id ranges removed from the pool (each exactly as in it)"),
        _PUnsupported("prealloc_wipe_disks", None, ht.TMaybeBool,
                      "Whether to wipe new disks before use",
                      inactive=(False, )),
        _PUnsupported("use_external_mip_script", None, ht.TMaybeBool,
                      "Whether to manage the master IP with an external"
                      " script", inactive=(False, )),
        ("modify_etc_hosts", None, ht.TMaybeBool,
         "Whether the cluster should keep /etc/hosts of the nodes current"
         " (recorded only: this cluster does not manage /etc/hosts)"),
        _PUnsupported("gluster_storage_dir", None, ht.TMaybe(ht.TString),
                      "Directory for Gluster-based instance disks",
                      inactive=("", )),
        _PUnsupported("install_image", None, ht.TMaybe(ht.TString),
                      "Image of the installation helper VM",
                      inactive=("", )),
        _PUnsupported("instance_communication_network", None,
                      ht.TMaybe(ht.TString),
                      "Network for communication between instances and"
                      " the cluster", inactive=("", )),
        _PUnsupported("zeroing_image", None, ht.TMaybe(ht.TString),
                      "Image of the VM zeroing the free space of disks",
                      inactive=("", )),
        _PUnsupported("enabled_user_shutdown", None, ht.TMaybeBool,
                      "Whether an instance's own shutdown is reported as"
                      " such", inactive=(False, )),
        ("enabled_data_collectors", None,
         ht.TMaybe(ht.TDictOf(ht.TString, ht.TBool)),
         "Data collectors of the monitoring daemon to enable or disable"),
        ("data_collector_interval", None,
         ht.TMaybe(ht.TDictOf(ht.TString, ht.TInt)),
         "Intervals of the monitoring daemon's data collectors"
         " (microseconds)"),
        ("diagnose_data_collector_filename", None, ht.TMaybe(ht.TString),
         "The self-diagnose command of the monitoring daemon, a file name"
         " in each node's white-list directory (empty: the built-in one,"
         " always reporting Ok)"),
        ("maint_round_delay", None, ht.TMaybe(ht.TNonNegativeInt),
         "Minimal time in seconds between the starts of two rounds of the"
         " maintenance daemon"),
        ("maint_balance", None, ht.TMaybeBool,
         "Whether the maintenance daemon balances the cluster"),
        ("maint_balance_threshold", None,
         ht.TMaybe(ht.TNonNegativeNumber),
         "Cluster score above which the maintenance daemon balances the"
         " cluster"),
        ("maint_balance_disk_moves", None, ht.TMaybeBool,
         "Whether the maintenance daemon's balancing may move disks"
         " (replace secondaries) or only fail over and migrate"),
        ("maint_balance_dynamic_load", None, ht.TMaybeBool,
         "Whether the maintenance daemon's balancing takes the nodes'"
         " dynamic load (CPU load from their monitoring daemons) into"
         " account"),
        ("maint_harep", None, ht.TMaybeBool,
         "Whether the maintenance daemon repairs instances as harep does"
         " (the ganeti:watcher:autorepair tags)"),
    ]
    OP_RESULT = ht.TNone


class OpClusterVerify(OpCode):
    """Verify the cluster: submits one config job and one job per group."""
    OP_PARAMS = [
        _PDebugSimulateErrors, _PErrorCodes, _PSkipChecks, _PIgnoreErrors,
        _PVerbose,
        ("group_name", None, ht.TMaybeString,
         "Verify only this node group"),
        _PVerifyClutter,
    ]
    OP_RESULT = ht.TDict


class OpClusterVerifyConfig(OpCode):
    """Verify the cluster-wide configuration and master candidates."""
    OP_PARAMS = [_PDebugSimulateErrors, _PErrorCodes, _PIgnoreErrors,
                 _PVerbose]
    OP_RESULT = ht.TBool


class OpClusterVerifyGroup(OpCode):
    """Verify the nodes of one node group."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName, _PDebugSimulateErrors, _PErrorCodes,
                 _PSkipChecks, _PIgnoreErrors, _PVerbose, _PVerifyClutter]
    OP_RESULT = ht.TBool


class OpClusterVerifyDisks(OpCode):
    """Verify the disks of the cluster: one follow-up job per node group."""
    OP_PARAMS = [
        ("group_name", None, ht.TMaybeString,
         "Verify only the disks of this node group"),
    ]
    OP_RESULT = _TJobIdListOnly


class OpGroupVerifyDisks(OpCode):
    """Find the instances of a node group whose disks need activating or
    are missing."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName]
    # (node -> error, [instances to activate], instance -> [[node, volume]])
    OP_RESULT = ht.TTupleOf(
        ht.TDictOf(ht.TString, ht.TString), ht.TListOf(ht.TString),
        ht.TDictOf(ht.TString, ht.TListOf(ht.TListOf(ht.TString))))


class OpClusterConfigQuery(OpCode):
    """Return configuration values of the cluster, one per field."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
    ]
    OP_RESULT = ht.TList


class OpClusterRename(OpCode):
    """Rename the cluster."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [("name", ht.NoDefault, ht.TNonEmptyString,
                  "New cluster name")]
    OP_RESULT = ht.TNonEmptyString


class OpClusterRenewCrypto(OpCode):
    """Renew the cluster's certificates and keys."""
    OP_PARAMS = [
        ("node_certificates", False, ht.TBool,
         "Whether to renew the nodes' certificates"),
        ("renew_ssh_keys", False, ht.TBool,
         "Whether to renew the nodes' SSH keys"),
        ("ssh_key_type", None, ht.TMaybe(ht.TElemOf(["rsa", "ecdsa", "dsa"])),
         "Type of the new SSH keys"),
        ("ssh_key_bits", None, ht.TMaybe(ht.TStrictPositiveInt),
         "Length of the new SSH keys (bits)"),
        _PVerbose,
        ("debug", False, ht.TBool, "Debug mode"),
    ]
    OP_RESULT = ht.TNone


class OpClusterRepairDiskSizes(OpCode):
    """Record the actual sizes of instances' disks in the configuration."""
    OP_DSC_FIELD = "instances"
    OP_PARAMS = [
        ("instances", [], ht.TListOf(ht.TNonEmptyString),
         "Instances to check (all if empty)"),
    ]
    # [(instance, disk index, field, new size), ...]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString,
                                       ht.TNonNegativeInt,
                                       ht.TNonEmptyString,
                                       ht.TNonNegativeInt))


class OpClusterActivateMasterIp(OpCode):
    """Activate the master IP on the master node."""
    OP_RESULT = ht.TNone


class OpClusterDeactivateMasterIp(OpCode):
    """Deactivate the master IP on the master node."""
    OP_RESULT = ht.TNone


# Aggregates (Placement's: named sets of nodes; each node group is one) -----

# A name usable in member_of ("in:A,B", "!C"): no comma, no leading "!"
_TAggregateName = ht.TRegex(r"^(?!!|in:)[^,\s]{1,255}$",
                            "aggregate name (no commas or whitespace, not"
                            " starting with \"!\" or \"in:\")")
_PAggregateName = ("name", ht.NoDefault, _TAggregateName, "Aggregate name")


class OpClusterAggregateAdd(OpCode):
    """Create a named aggregate (its UUID is Placement's aggregate)."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [
        _PAggregateName,
        ("metadata", {}, ht.TDictOf(ht.TNonEmptyString, ht.TString),
         "Metadata of the aggregate, e.g. reservation=<id>"),
    ]
    OP_RESULT = ht.TNonEmptyString


class OpClusterAggregateRemove(OpCode):
    """Remove a named aggregate (refused while nodes are in it)."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [_PAggregateName]
    OP_RESULT = ht.TNone


class OpClusterAggregateRename(OpCode):
    """Rename a named aggregate (its UUID stays)."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [
        _PAggregateName,
        ("new_name", ht.NoDefault, _TAggregateName, "New aggregate name"),
    ]
    OP_RESULT = ht.TNonEmptyString


class OpClusterAggregateQuery(OpCode):
    """The aggregates (named ones and node groups') with their nodes."""
    OP_PARAMS = [
        ("names", [], ht.TListOf(ht.TNonEmptyString),
         "Aggregates to show, by name or UUID (all if empty)"),
    ]
    OP_RESULT = ht.TListOf(ht.TDict)


# Nodes -----------------------------------------------------------------------

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


# Node groups -----------------------------------------------------------------

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


# Networks --------------------------------------------------------------------

def _IPCheck(parse: Callable[[str], Any], desc: str) -> ht.Check:
    """A string ``parse`` accepts (it raises ValueError otherwise)."""
    return ht.Check(lambda value: isinstance(value, str) and
                    parse(value) is not None, desc, "string")


_TIPv4Address = _IPCheck(ipaddress.IPv4Address, "IPv4 address")
_TIPv4Network = _IPCheck(
    lambda value: ipaddress.IPv4Network(value, strict=False), "IPv4 network")
_TIPv6Address = _IPCheck(ipaddress.IPv6Address, "IPv6 address")
_TIPv6Network = _IPCheck(
    lambda value: ipaddress.IPv6Network(value, strict=False), "IPv6 network")
_PNetworkName = ("network_name", ht.NoDefault, ht.TNonEmptyString,
                 "Network name")
_NETWORK_ADDRESS_PARAMS: list[_OpParam] = [
    ("gateway", None, ht.TMaybe(_TIPv4Address), "IPv4 gateway"),
    ("network6", None, ht.TMaybe(_TIPv6Network), "IPv6 subnet"),
    ("gateway6", None, ht.TMaybe(_TIPv6Address), "IPv6 gateway"),
    ("mac_prefix", None, ht.TMaybeString,
     "MAC address prefix of the network's NICs"),
    ("add_reserved_ips", None, ht.TMaybeListOf(_TIPv4Address),
     "IP addresses to reserve"),
]


class OpNetworkAdd(OpCode):
    """Add a network."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [
        _PNetworkName,
        ("network", ht.NoDefault, _TIPv4Network, "IPv4 subnet"),
    ] + _NETWORK_ADDRESS_PARAMS + [
        _PConflictsCheck,
        ("tags", [], ht.TListOf(ht.TNonEmptyString), "Network tags"),
    ]
    OP_RESULT = ht.TNone


class OpNetworkRemove(OpCode):
    """Remove a network."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [_PNetworkName, _PForce]
    OP_RESULT = ht.TNone


class OpNetworkSetParams(OpCode):
    """Change the parameters of a network."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [_PNetworkName] + _NETWORK_ADDRESS_PARAMS + [
        ("remove_reserved_ips", None, ht.TMaybeListOf(_TIPv4Address),
         "IP addresses to release"),
    ]
    OP_RESULT = ht.TNone


class OpNetworkConnect(OpCode):
    """Connect a network to a node group."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [
        ("group_name", ht.NoDefault, ht.TNonEmptyString, "Node group name"),
        _PNetworkName,
        ("network_mode", ht.NoDefault,
         ht.TElemOf(["pool", "openvswitch", "routed", "bridged"]),
         "NIC mode of the network in the group"),
        ("network_link", ht.NoDefault, ht.TNonEmptyString,
         "NIC link of the network in the group"),
        ("network_vlan", "", ht.TString,
         "VLAN of the network in the group"),
        _PConflictsCheck,
    ]
    OP_RESULT = ht.TNone


class OpNetworkDisconnect(OpCode):
    """Disconnect a network from a node group."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [
        ("group_name", ht.NoDefault, ht.TNonEmptyString, "Node group name"),
        _PNetworkName,
    ]
    OP_RESULT = ht.TNone


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
