"""The cluster opcodes: the cluster's parameters, verification, master
IP and aggregates (part of ganeti.opcodes, which re-exports them; see it
for how parameters are declared)."""

from ganeti import constants, ht
from ganeti.opcodes_base import (
    OpCode, _PDebugSimulateErrors, _PDiskState, _PErrorCodes, _PForce,
    _PGroupName, _PHvState, _PIgnoreErrors, _PSkipChecks, _PUnsupported,
    _PVerbose, _PVerifyClutter, _THvParams, _TJobIdListOnly,
    _TMaybeUidRanges, _TOsListModifications, _TParamsDict)


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
