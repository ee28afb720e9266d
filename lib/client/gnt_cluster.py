"""Ganeti cluster administration: cluster-wide commands."""

import os
import stat
import sys
import time
from typing import Any

from ganeti import (bootstrap, cli, constants, errors, impexp, objects,
                    opcodes, pathutils, serializer, ssconf, vcluster)
from ganeti.backend import verify as backend_verify
from ganeti.cli_opts import (
    ARGS_MANY_INSTANCES, ArgChoice, ArgCommand, ArgFile, ArgHost, ArgSuggest,
    ArgUnknown, CONFIRM_OPT, FORCE_OPT, INSTANCE_POLICY_OPTS,
    IPOLICY_BOUNDS_OPT, IPOLICY_STD_OPT, NODE_LIST_OPT, VERBOSE_OPT,
    OpcodeOption, ParamsOption,
    PRIORITY_OPT, DRY_RUN_OPT, SUBMIT_OPT, PRINT_JOBID_OPT, TAG_SRC_OPT,
    YES_DOIT_OPT, cli_option)
from ganeti.client import _cluster_crypto, _cluster_epo, hbal, hspace
from ganeti.rpc import node as rpc_node
from ganeti.utils import uidpool

_SetParams = opcodes.OpClusterSetParams

# Options of init and modify, derived from the OpClusterSetParams declaration
CANDIDATE_POOL_SIZE_OPT = OpcodeOption(_SetParams, "candidate_pool_size",
                                       "-C", "--candidate-pool-size")
MAX_RUNNING_JOBS_OPT = OpcodeOption(_SetParams, "max_running_jobs",
                                    "--max-running-jobs")
MAX_TRACKED_JOBS_OPT = OpcodeOption(_SetParams, "max_tracked_jobs",
                                    "--max-tracked-jobs")
MAC_PREFIX_OPT = OpcodeOption(_SetParams, "mac_prefix", "-m",
                              "--mac-prefix")
MASTER_NETDEV_OPT = OpcodeOption(_SetParams, "master_netdev",
                                 "--master-netdev")
MASTER_NETMASK_OPT = OpcodeOption(_SetParams, "master_netmask",
                                  "--master-netmask")
ENABLED_HV_OPT = OpcodeOption(_SetParams, "enabled_hypervisors",
                              "--enabled-hypervisors")
ENABLED_DISK_TEMPLATES_OPT = OpcodeOption(_SetParams,
                                          "enabled_disk_templates",
                                          "--enabled-disk-templates")
FILE_STORAGE_DIR_OPT = OpcodeOption(_SetParams, "file_storage_dir",
                                    "--file-storage-dir")
SHARED_FILE_STORAGE_DIR_OPT = OpcodeOption(_SetParams,
                                           "shared_file_storage_dir",
                                           "--shared-file-storage-dir")
MAINTAIN_NODE_HEALTH_OPT = OpcodeOption(_SetParams, "maintain_node_health",
                                        "--maintain-node-health",
                                        type="bool", action="store")
DEFAULT_IALLOCATOR_OPT = OpcodeOption(_SetParams, "default_iallocator",
                                      "--default-iallocator")
DEFAULT_IALLOCATOR_PARAMS_OPT = OpcodeOption(
    _SetParams, "default_iallocator_params", "--default-iallocator-params",
    type="keyval", metavar="PARAM=VALUE,...")
NICPARAMS_OPT = ParamsOption(_SetParams, "nicparams", "nic")
NDPARAMS_OPT = ParamsOption(_SetParams, "ndparams", "node")
DISKPARAMS_OPT = ParamsOption(_SetParams, "diskparams", "disk")
DEFAULT_HV_OPT = OpcodeOption(_SetParams, "default_hypervisor",
                              "--default-hypervisor")
# --hypervisor-defaults and --defaults are design-2.0's names
HVPARAMS_OPT = ParamsOption(_SetParams, "hvparams", "hypervisor",
                            "--hypervisor-defaults")
BEPARAMS_OPT = ParamsOption(_SetParams, "beparams", "backend", "--defaults")
ENABLED_DATA_COLLECTORS_OPT = cli_option(
    "--enabled-data-collectors", dest="enabled_data_collectors",
    type="keyval", default={}, metavar="COLLECTOR=BOOL,...",
    help="Deactivate or reactivate a data collector for reporting, in the"
    " format collector=bool, where collector is one of %s" %
    ", ".join(sorted(constants.DATA_COLLECTOR_NAMES)))
DATA_COLLECTOR_INTERVAL_OPT = cli_option(
    "--data-collector-interval", dest="data_collector_interval",
    type="keyval", default={}, metavar="COLLECTOR=SECONDS,...",
    help="Set collection intervals in seconds of data collectors.")
DIAGNOSE_DATA_COLLECTOR_FILENAME_OPT = OpcodeOption(
    _SetParams, "diagnose_data_collector_filename",
    "--diagnose-data-collector-filename", metavar="FILENAME")
PLACEMENT_REQUIRED_PREFIX_OPT = OpcodeOption(
    _SetParams, "placement_required_prefix", "--placement-required-prefix",
    metavar="PREFIX")
PLACEMENT_FORBIDDEN_PREFIX_OPT = OpcodeOption(
    _SetParams, "placement_default_forbidden_prefix",
    "--placement-default-forbidden-prefix", metavar="PREFIX")
MAINT_INTERVAL_OPT = OpcodeOption(_SetParams, "maint_round_delay",
                                  "--maintenance-interval",
                                  metavar="SECONDS")
MAINT_BALANCE_OPT = OpcodeOption(_SetParams, "maint_balance",
                                 "--auto-balance-cluster", type="bool",
                                 action="store", metavar="yes|no")
MAINT_BALANCE_THRESHOLD_OPT = OpcodeOption(
    _SetParams, "maint_balance_threshold", "--auto-balance-threshold",
    metavar="CLUSTERSCORE")
UIDPOOL_OPT = OpcodeOption(_SetParams, "uid_pool", "--uid-pool",
                           type="uidpool", metavar="UID[-UID],...")
ADD_UIDS_OPT = OpcodeOption(_SetParams, "add_uids", "--add-uids",
                            type="uidpool", metavar="UID[-UID],...")
REMOVE_UIDS_OPT = OpcodeOption(_SetParams, "remove_uids", "--remove-uids",
                               type="uidpool", metavar="UID[-UID],...")
USER_SHUTDOWN_OPT = OpcodeOption(_SetParams, "enabled_user_shutdown",
                                 "--user-shutdown", type="bool",
                                 action="store", metavar="yes|no")
COMPRESSION_TOOLS_OPT = OpcodeOption(
    _SetParams, "compression_tools", "--compression-tools",
    metavar="TOOL,...",
    help="Comma-separated list of compression tools allowed for instance"
    " moves, exports and imports (must include gzip; empty: the default,"
    " %s)" % ",".join(impexp.IEC_DEFAULT_TOOLS))
# Accepted as in Ganeti, only recorded: this cluster manages neither
NO_ETC_HOSTS_OPT = cli_option("--no-etc-hosts", dest="modify_etc_hosts",
                              default=True, action="store_false",
                              help="Don't modify /etc/hosts")
NO_SSH_INIT_OPT = cli_option("--no-ssh-init", dest="modify_ssh_setup",
                             default=True, action="store_false",
                             help="Don't initialize SSH keys")
NOVOTING_OPT = cli_option("--no-voting", dest="no_voting", default=False,
                          action="store_true",
                          help="Skip node agreement check (dangerous)")
SECONDARY_IP_OPT = cli_option("-s", "--secondary-ip", dest="secondary_ip",
                              default=None, metavar="ADDRESS",
                              help="Secondary IP address of the master")

_PARAM_OPTS = [CANDIDATE_POOL_SIZE_OPT, MAX_RUNNING_JOBS_OPT,
               MAC_PREFIX_OPT, MASTER_NETDEV_OPT, MASTER_NETMASK_OPT,
               ENABLED_HV_OPT, ENABLED_DISK_TEMPLATES_OPT,
               FILE_STORAGE_DIR_OPT, SHARED_FILE_STORAGE_DIR_OPT,
               BEPARAMS_OPT, HVPARAMS_OPT, NICPARAMS_OPT,
               NDPARAMS_OPT, IPOLICY_STD_OPT, UIDPOOL_OPT,
               USER_SHUTDOWN_OPT, COMPRESSION_TOOLS_OPT] + INSTANCE_POLICY_OPTS


def _FormatSpecs(specs: dict) -> str:
    return ",".join("%s=%s" % item for item in sorted(specs.items()))


def FormatIPolicyCommand(ipolicy: dict, isgroup: bool) -> str:
    """The --ipolicy-*-specs options giving ``ipolicy``'s specs, each
    preceded by a space (Ganeti's PrintIPolicyCommand: only the specs, and
    a group's policy has no std specs)."""
    parts = []
    std = ipolicy.get(objects.ISPECS_STD)
    if std and not isgroup:
        parts.append(" %s %s" % (IPOLICY_STD_OPT.get_opt_string(),
                                 _FormatSpecs(std)))
    bounds = ["%s:%s/%s:%s" % (
        objects.ISPECS_MIN, _FormatSpecs(pair[objects.ISPECS_MIN]),
        objects.ISPECS_MAX, _FormatSpecs(pair[objects.ISPECS_MAX]))
        for pair in ipolicy.get(objects.ISPECS_MINMAX, [])
        if pair.get(objects.ISPECS_MIN) and pair.get(objects.ISPECS_MAX)]
    if bounds:
        parts.append(" %s %s" % (IPOLICY_BOUNDS_OPT.get_opt_string(),
                                 "//".join(bounds)))
    return "".join(parts)


def _CompressionTools(opts: Any) -> list[str] | None:
    """The option's tools; an empty value means the default ones."""
    if opts.compression_tools == []:
        return list(impexp.IEC_DEFAULT_TOOLS)
    return opts.compression_tools


def _HvParams(opts: Any) -> dict:
    return {hv: params for hv, params in (opts.hvparams or [])}


def InitCluster(opts: Any, args: list[str]) -> int:
    """Create the cluster with this node as master and start its daemons."""
    bootstrap.InitCluster(
        cluster_name=args[0],
        master_netdev=opts.master_netdev or constants.DEFAULT_MASTER_NETDEV,
        master_netmask=opts.master_netmask,
        secondary_ip=opts.secondary_ip,
        enabled_hypervisors=opts.enabled_hypervisors,
        enabled_disk_templates=opts.enabled_disk_templates,
        file_storage_dir=opts.file_storage_dir,
        shared_file_storage_dir=opts.shared_file_storage_dir,
        hvparams=_HvParams(opts), beparams=opts.beparams,
        nicparams=opts.nicparams, ndparams=opts.ndparams,
        diskparams=dict(opts.diskparams),
        candidate_pool_size=opts.candidate_pool_size,
        mac_prefix=opts.mac_prefix,
        max_running_jobs=opts.max_running_jobs,
        ipolicy=cli.BuildIPolicy(opts),
        uid_pool=opts.uid_pool,
        compression_tools=_CompressionTools(opts),
        modify_etc_hosts=opts.modify_etc_hosts,
        modify_ssh_setup=opts.modify_ssh_setup,
        enabled_user_shutdown=bool(opts.enabled_user_shutdown))
    op = opcodes.OpClusterPostInit()
    cli.SubmitOpCode(op, opts=opts)
    if opts.default_iallocator is not None or \
            opts.default_iallocator_params:
        # Cluster parameters the configuration gets through the master
        cli.SubmitOpCode(opcodes.OpClusterSetParams(
            default_iallocator=opts.default_iallocator,
            default_iallocator_params=opts.default_iallocator_params or None),
            opts=opts)
    return constants.EXIT_SUCCESS


def DestroyCluster(opts: Any, args: list[str]) -> int:
    """Destroy the cluster; only with --yes-do-it."""
    if not opts.yes_do_it:
        cli.ToStderr("Destroying a cluster is irreversible. If you really"
                     " want to destroy this cluster, supply the --yes-do-it"
                     " option.")
        return constants.EXIT_FAILURE
    op = opcodes.OpClusterDestroy()
    master_name = cli.SubmitOpCode(op, opts=opts)
    bootstrap.FinalizeClusterDestroy(master_name)
    return constants.EXIT_SUCCESS


def ShowClusterVersion(opts: Any, args: list[str]) -> int:
    info = cli.GetClient().QueryClusterInfo()
    cli.ToStdout("Software version: %s", info["software_version"])
    cli.ToStdout("Internode protocol: %s", info["protocol_version"])
    cli.ToStdout("Configuration format: %s", info["config_version"])
    cli.ToStdout("OS api version: %s", info["os_api_version"])
    cli.ToStdout("Export interface: %s", info["export_version"])
    cli.ToStdout("VCS version: %s", info["vcs_version"])
    return constants.EXIT_SUCCESS


def ShowClusterMaster(opts: Any, args: list[str]) -> int:
    """Print the master node's name (from ssconf, works without masterd)."""
    cli.ToStdout("%s", bootstrap.GetMasterName())
    return constants.EXIT_SUCCESS


def MasterFailover(opts: Any, args: list[str]) -> int:
    """Make this node (a master candidate) the master."""
    if opts.no_voting and not opts.yes_do_it:
        usertext = ("This will perform the failover even if most other nodes"
                    " are down, or if this node is outdated. This is"
                    " dangerous as it can lead to a non-consistent cluster."
                    " Check the gnt-cluster(8) man page before proceeding."
                    " Continue?")
        if not cli.AskUser(usertext, skip_option=YES_DOIT_OPT):
            return constants.EXIT_FAILURE
    try:
        bootstrap.MasterFailover(no_voting=opts.no_voting,
                                 feedback_fn=cli.ToStdout)
    except errors.NotMasterError as err:
        cli.ToStderr("Failover refused: %s", err)
        return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def ActivateMasterIp(opts: Any, args: list[str]) -> int:
    """Add the master IP on the master node."""
    cli.SubmitOpCode(opcodes.OpClusterActivateMasterIp(), opts=opts)
    return constants.EXIT_SUCCESS


def DeactivateMasterIp(opts: Any, args: list[str]) -> int:
    """Remove the master IP from the master node (asks first)."""
    if not opts.confirm:
        usertext = ("This will disable the master IP. All the open"
                    " connections to the master IP will be closed. To"
                    " reach the master you will need to use its node IP."
                    " Continue?")
        if not cli.AskUser(usertext, skip_option=CONFIRM_OPT):
            return constants.EXIT_FAILURE
    cli.SubmitOpCode(opcodes.OpClusterDeactivateMasterIp(), opts=opts)
    return constants.EXIT_SUCCESS


def MasterPing(opts: Any, args: list[str]) -> int:
    """Exit 0 if the master daemon answers."""
    try:
        cli.GetClient().QueryClusterInfo()
        return constants.EXIT_SUCCESS
    except errors.GenericError as err:
        cli.ToStderr("Error while pinging master: %s", err)
        return constants.EXIT_FAILURE


def _FormatGroupedParams(params: dict) -> dict:
    """Parameters grouped by hypervisor, OS, template...: values as text,
    as Ganeti prints them (integers stay integers)."""
    return {key: _FormatGroupedParams(value) if isinstance(value, dict)
            else str(value) for key, value in params.items()}


def _SearchPath(paths: list[str]) -> str:
    """Search directories as the cluster names them (without the node root
    of a virtual cluster, like the storage paths)."""
    return ", ".join(vcluster.MakeVirtualPath(path) for path in paths)


def ShowClusterConfig(opts: Any, args: list[str]) -> int:
    """Print the cluster configuration, in Ganeti's layout and order."""
    info = cli.GetClient().QueryClusterInfo()
    enabled_hvs = info["enabled_hypervisors"]
    cluster_params = [
        ("candidate pool size", info["candidate_pool_size"]),
        ("maximal number of jobs running simultaneously",
         info["max_running_jobs"]),
        ("maximal number of jobs simultaneously tracked by the scheduler",
         info["max_tracked_jobs"]),
        ("mac prefix", info["mac_prefix"]),
        ("master netdev", info["master_netdev"]),
        ("master netmask", info["master_netmask"]),
        ("use external master IP address setup script",
         info["use_external_mip_script"]),
        ("lvm volume group", info["volume_group_name"] or ""),
        ("lvm reserved volumes",
         ", ".join(info["reserved_lvs"]) or "(none)"),
        ("drbd usermode helper", info["drbd_usermode_helper"] or ""),
        ("file storage path", info["file_storage_dir"]),
        ("shared file storage path", info["shared_file_storage_dir"]),
        ("gluster storage path", info["gluster_storage_dir"]),
        ("maintenance of node health", info["maintain_node_health"]),
        ("uid pool", uidpool.FormatUidPool(info["uid_pool"])),
        ("default instance allocator", info["default_iallocator"] or ""),
        ("default instance allocator parameters",
         info["default_iallocator_params"]),
        ("primary ip version", info["primary_ip_version"]),
        ("preallocation wipe disks", info["prealloc_wipe_disks"]),
        ("OS search path", _SearchPath(pathutils.OS_SEARCH_PATH)),
        ("ExtStorage Providers search path",
         _SearchPath(pathutils.ES_SEARCH_PATH)),
        ("enabled disk templates",
         ", ".join(info["enabled_disk_templates"])),
        ("install image", info["install_image"]),
        ("instance communication network",
         info["instance_communication_network"]),
        ("zeroing image", info["zeroing_image"]),
        ("compression tools", info["compression_tools"]),
        ("enabled user shutdown", info["enabled_user_shutdown"]),
        ("modify ssh setup", info["modify_ssh_setup"]),
        ("ssh_key_type", info["ssh_key_type"]),
        ("ssh_key_bits", info["ssh_key_bits"]),
    ]
    cli.PrintGenericInfo([
        ("Cluster name", info["name"]),
        ("Cluster UUID", info["uuid"]),
        ("Creation time", cli.FormatTimestamp(info["ctime"])),
        ("Modification time", cli.FormatTimestamp(info["mtime"])),
        ("Master node", info["master"]),
        ("Architecture (this node)", "%s (%s)" % tuple(info["architecture"])),
        ("Tags", ", ".join(sorted(info["tags"])) or "(none)"),
        ("Default hypervisor", info["default_hypervisor"]),
        ("Enabled hypervisors", ", ".join(enabled_hvs)),
        ("Hypervisor parameters", _FormatGroupedParams(
            {hv: params for hv, params in info["hvparams"].items()
             if hv in enabled_hvs})),
        ("OS-specific hypervisor parameters",
         _FormatGroupedParams(info["os_hvp"])),
        ("OS parameters", _FormatGroupedParams(info["osparams"])),
        ("Hidden OSes", ", ".join(info["hidden_os"])),
        ("Blacklisted OSes", ", ".join(info["blacklisted_os"])),
        ("Cluster parameters", cluster_params),
        ("Default node parameters", _FormatGroupedParams(info["ndparams"])),
        ("Default instance parameters",
         _FormatGroupedParams(info["beparams"])),
        ("Default nic parameters", _FormatGroupedParams(info["nicparams"])),
        ("Default disk parameters",
         _FormatGroupedParams(info["diskparams"])),
        ("Instance policy - limits for instances",
         cli.FormatPolicyInfo(info["ipolicy"], info["ipolicy"], True)),
        ("Data collectors", _FormatDataCollectors(info)),
        # Not in Ganeti 3.0, whose data collectors are all built in
        ("Diagnose data collector filename",
         info["diagnose_data_collector_filename"] or "(built-in)"),
        ("Placement", [
            ("required aggregate metadata prefix",
             info["placement_required_prefix"] or "(none)"),
            ("default forbidden aggregate metadata prefix",
             info["placement_default_forbidden_prefix"] or "(none)"),
        ]),
        ("Maintenance daemon", [
            ("maintenance interval", info["maint_round_delay"]),
            ("auto balancing", info["maint_balance"]),
            ("auto balancing threshold", info["maint_balance_threshold"]),
        ]),
    ])
    return constants.EXIT_SUCCESS


def _DataCollectorParams(opts: Any) -> tuple[dict | None, dict | None]:
    """The opcode's enabled_data_collectors and data_collector_interval
    (microseconds) from the options' "name=bool" and "name=seconds"."""
    enabled = {name: str(value).lower().startswith("t")
               for name, value in opts.enabled_data_collectors.items()}
    try:
        intervals = {name: int(1e6 * float(value)) for name, value
                     in opts.data_collector_interval.items()}
    except ValueError:
        raise errors.OpPrereqError(
            "Can't transform all values to integers: %s" %
            opts.data_collector_interval, errors.ECODE_INVAL) from None
    return enabled or None, intervals or None


def _FormatDataCollectors(info: dict) -> dict:
    """Ganeti's "Data collectors" section: activity and interval."""
    intervals = info["data_collector_interval"]
    return {name: {"active": active,
                   "interval": "%.3fs" % (intervals[name] / 1e6)}
            for name, active in info["enabled_data_collectors"].items()}


def SetClusterParams(opts: Any, args: list[str]) -> int:
    """Change cluster parameters."""
    enabled_collectors, collector_intervals = _DataCollectorParams(opts)
    params = {
        "candidate_pool_size": opts.candidate_pool_size,
        "max_running_jobs": opts.max_running_jobs,
        "max_tracked_jobs": opts.max_tracked_jobs,
        "mac_prefix": opts.mac_prefix,
        "master_netdev": opts.master_netdev,
        "master_netmask": opts.master_netmask,
        "enabled_hypervisors": opts.enabled_hypervisors,
        "enabled_disk_templates": opts.enabled_disk_templates,
        "file_storage_dir": opts.file_storage_dir,
        "shared_file_storage_dir": opts.shared_file_storage_dir,
        "maintain_node_health": opts.maintain_node_health,
        "default_iallocator": opts.default_iallocator,
        "default_iallocator_params": opts.default_iallocator_params,
        "default_hypervisor": opts.default_hypervisor,
        "hvparams": _HvParams(opts) or None,
        "beparams": opts.beparams or None,
        "ipolicy": cli.BuildIPolicy(opts),
        "nicparams": opts.nicparams or None,
        "ndparams": opts.ndparams or None,
        "diskparams": dict(opts.diskparams) or None,
        "enabled_data_collectors": enabled_collectors,
        "data_collector_interval": collector_intervals,
        "diagnose_data_collector_filename":
            opts.diagnose_data_collector_filename,
        "placement_required_prefix": opts.placement_required_prefix,
        "placement_default_forbidden_prefix":
            opts.placement_default_forbidden_prefix,
        "maint_round_delay": opts.maint_round_delay,
        "maint_balance": opts.maint_balance,
        "maint_balance_threshold": opts.maint_balance_threshold,
        "uid_pool": opts.uid_pool,
        "add_uids": opts.add_uids,
        "remove_uids": opts.remove_uids,
        "compression_tools": _CompressionTools(opts),
        "enabled_user_shutdown": opts.enabled_user_shutdown,
    }
    params = {key: value for key, value in params.items()
              if value is not None}
    if not params:
        cli.ToStderr("Please give at least one of the parameters.")
        return constants.EXIT_FAILURE
    op = opcodes.OpClusterSetParams(**params)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def ShowCreateCommand(opts: Any, args: list[str]) -> int:
    """Print the ``gnt-cluster init`` command line giving the cluster's
    instance policy specs (as Ganeti, nothing else of the cluster)."""
    info = cli.GetClient().QueryClusterInfo()
    cli.ToStdout("gnt-cluster init%s %s",
                 FormatIPolicyCommand(info["ipolicy"], False), info["name"])
    return constants.EXIT_SUCCESS


def RenameCluster(opts: Any, args: list[str]) -> int:
    """Rename the cluster (its master IP follows the new name)."""
    client = cli.GetClient()
    (old_name, ) = client.QueryConfigValues(["cluster_name"])
    new_name = args[0]
    if not opts.force and not cli.AskUser(
            "This will rename the cluster from '%s' to '%s'. If you are"
            " connected over the network to the cluster name, the operation"
            " is very dangerous as the IP address will be removed from the"
            " node and the change may not go through. Continue?" %
            (old_name, new_name)):
        return constants.EXIT_FAILURE
    result = cli.SubmitOpCode(opcodes.OpClusterRename(name=new_name),
                              cl=client, opts=opts)
    if result:
        cli.ToStdout("Cluster renamed from '%s' to '%s'", old_name, result)
    return constants.EXIT_SUCCESS


def RepairDiskSizes(opts: Any, args: list[str]) -> int:
    """Correct the recorded disk sizes; the job log lists each change."""
    cli.SubmitOpCode(opcodes.OpClusterRepairDiskSizes(instances=args),
                     opts=opts)
    return constants.EXIT_SUCCESS


def QueueOps(opts: Any, args: list[str]) -> int:
    """Drain, undrain or describe the job queue."""
    command = args[0]
    client = cli.GetClient()
    if command in ("drain", "undrain"):
        client.SetQueueDrainFlag(command == "drain")
    elif command == "info":
        (drained, ) = client.QueryConfigValues(["drain_flag"])
        cli.ToStdout("The drain flag is %s", "set" if drained else "unset")
    return constants.EXIT_SUCCESS


AGG_METADATA_OPT = OpcodeOption(opcodes.OpClusterAggregateAdd, "metadata",
                                "--metadata", metavar="KEY=VALUE,...",
                                # a bare KEY is given as "" (not True)
                                opcode_check=None)


def _ShowAggregates(opts: Any, names: list[str], verbose: bool) -> None:
    """``aggregate list`` (a table) or ``aggregate info`` (all details)."""
    result = cli.SubmitOpCode(opcodes.OpClusterAggregateQuery(names=names),
                              opts=opts)
    if not verbose:
        cli.ToStdout("%-20s %-36s %-5s %s", "Name", "UUID", "Group", "Nodes")
        for agg in result:
            cli.ToStdout("%-20s %-36s %-5s %s", agg["name"], agg["uuid"],
                         "Y" if agg["node_group"] else "N",
                         ",".join(agg["nodes"]))
        return
    for agg in result:
        cli.ToStdout("Aggregate: %s", agg["name"])
        cli.ToStdout("  UUID: %s", agg["uuid"])
        cli.ToStdout("  Node group: %s", cli.FormatBool(agg["node_group"]))
        cli.ToStdout("  Metadata:%s", "" if agg["metadata"] else " (none)")
        for key, value in sorted(agg["metadata"].items()):
            cli.ToStdout("    %s: %s", key, value)
        cli.ToStdout("  Nodes:%s", "" if agg["nodes"] else " (none)")
        for node in agg["nodes"]:
            cli.ToStdout("    - %s", node)


# Subcommand -> (arguments it takes, at least, at most)
_AGG_ARGS = {"add": (1, 1), "remove": (1, 1), "rename": (2, 2),
             "list": (0, None), "info": (0, None)}


def AggregateOps(opts: Any, args: list[str]) -> int:
    """Named aggregates of nodes (Placement's, for --member-of)."""
    command, rest = args[0], args[1:]
    least, most = _AGG_ARGS[command]
    if len(rest) < least or (most is not None and len(rest) > most):
        cli.ToStderr("Wrong number of arguments for 'aggregate %s'",
                     command)
        return constants.EXIT_FAILURE
    if command in ("list", "info"):
        _ShowAggregates(opts, rest, command == "info")
        return constants.EXIT_SUCCESS
    if command == "add":
        metadata = {key: "" if value is True else str(value)
                    for key, value in (opts.metadata or {}).items()}
        op: opcodes.OpCode = opcodes.OpClusterAggregateAdd(
            name=rest[0], metadata=metadata)
    elif command == "remove":
        op = opcodes.OpClusterAggregateRemove(name=rest[0])
    else:
        op = opcodes.OpClusterAggregateRename(name=rest[0],
                                              new_name=rest[1])
    result = cli.SubmitOrSend(op, opts)
    if command == "add" and result:
        cli.ToStdout("%s", result)
    return constants.EXIT_SUCCESS


def _ShowWatcherPause(until: float | None) -> None:
    if until is None or until < time.time():
        cli.ToStdout("The watcher is not paused.")
    else:
        cli.ToStdout("The watcher is paused until %s.", time.ctime(until))


def WatcherOps(opts: Any, args: list[str]) -> int:
    """Pause the watcher for a while, let it run again, or say which."""
    command = args[0]
    client = cli.GetClient()
    if command == "continue":
        client.SetWatcherPause(None)
        cli.ToStdout("The watcher is no longer paused.")
    elif command == "pause":
        if len(args) < 2:
            raise errors.OpPrereqError("Missing pause duration",
                                       errors.ECODE_INVAL)
        _ShowWatcherPause(client.SetWatcherPause(
            time.time() + cli.ParseTimespec(args[1])))
    else:
        (until, ) = client.QueryConfigValues(["watcher_pause"])
        _ShowWatcherPause(until)
    return constants.EXIT_SUCCESS


def RedistributeConfig(opts: Any, args: list[str]) -> int:
    cli.SubmitOrSend(opcodes.OpClusterRedistConf(), opts)
    return constants.EXIT_SUCCESS


def RepairCancel(opts: Any, args: list[str]) -> int:
    """Cancel a repair incident of ganeti-maintd (gnt-cluster
    repair-cancel ID)."""
    cli.SubmitOrSend(opcodes.OpClusterRepairCancel(incident_id=args[0]),
                     opts)
    return constants.EXIT_SUCCESS


def _TagsSource(opts: Any, args: list[str]) -> list[str]:
    tags = list(args)
    if opts.tags_source:
        if opts.tags_source == "-":
            text = sys.stdin.read()
        else:
            with open(opts.tags_source, encoding="utf-8") as fobj:
                text = fobj.read()
        tags.extend(line.strip() for line in text.splitlines()
                    if line.strip())
    if not tags:
        raise errors.OpPrereqError("No tags to add or remove",
                                   errors.ECODE_INVAL)
    return tags


def ListTags(opts: Any, args: list[str]) -> int:
    for tag in sorted(cli.GetClient().QueryTags(constants.TAG_CLUSTER, "")):
        cli.ToStdout("%s", tag)
    return constants.EXIT_SUCCESS


def AddTags(opts: Any, args: list[str]) -> int:
    op = opcodes.OpTagsSet(kind=constants.TAG_CLUSTER,
                           tags=_TagsSource(opts, args))
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def RemoveTags(opts: Any, args: list[str]) -> int:
    op = opcodes.OpTagsDel(kind=constants.TAG_CLUSTER,
                           tags=_TagsSource(opts, args))
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def SearchTags(opts: Any, args: list[str]) -> int:
    op = opcodes.OpTagsSearch(pattern=args[0])
    for path, tag in sorted(cli.SubmitOpCode(op, opts=opts)):
        cli.ToStdout("%s %s", path, tag)
    return constants.EXIT_SUCCESS


def DumpClusterInfo(opts: Any, args: list[str]) -> int:
    """Print the cluster info as JSON (machine-readable ``info``)."""
    cli.ToStdout("%s", serializer.DumpJson(cli.GetClient().QueryClusterInfo(),
                                           indent=True).rstrip())
    return constants.EXIT_SUCCESS


_Verify = opcodes.OpClusterVerify
ERROR_CODES_OPT = OpcodeOption(_Verify, "error_codes", "--error-codes")
DEBUG_SIMERR_OPT = OpcodeOption(_Verify, "debug_simulate_errors",
                                "--debug-simulate-errors")
# Repeatable, each one code or a comma-separated list of codes
IGNORE_ERRORS_OPT = OpcodeOption(_Verify, "ignore_errors", "-I",
                                 "--ignore-errors", action="append",
                                 type="list", metavar="CODE[,CODE...]")
NODEGROUP_OPT = OpcodeOption(_Verify, "group_name", "-g", "--node-group",
                             metavar="<nodegroup>")
NONPLUS1_OPT = cli_option("--no-nplus1-mem", dest="skip_nplusone_mem",
                          default=False, action="store_true",
                          help="Skip N+1 memory redundancy tests")
SHOW_MACHINE_OPT = cli_option("-M", dest="show_machine_names", default=False,
                              action="store_true",
                              help="Show machine name for every line in"
                              " output")
FAILURE_ONLY_OPT = cli_option("--failure-only", default=False,
                              action="store_true",
                              help="Hide successful results and show"
                              " failures only (determined by the exit code)")


def VerifyCluster(opts: Any, args: list[str]) -> int:
    """Run the verification jobs and show their findings.

    Exit 1 if a job failed or found an error (warnings don't count).
    """
    cl = cli.GetClient()
    op = opcodes.OpClusterVerify(
        verbose=opts.verbose, error_codes=opts.error_codes,
        debug_simulate_errors=opts.debug_simulate_errors,
        ignore_errors=[code for codes in opts.ignore_errors
                       for code in codes],
        skip_checks=([constants.VERIFY_NPLUSONE_MEM]
                     if opts.skip_nplusone_mem else []),
        group_name=opts.group_name)
    result = cli.SubmitOpCode(op, cl=cl, opts=opts)
    jex = cli.JobExecutor(cl=cl, opts=opts)
    for status, job_id in result["jobs"]:
        jex.AddJobId(None, status, job_id)
    results = jex.GetResults()
    bad_jobs = sum(1 for success, _ in results if not success)
    bad_results = sum(1 for success, op_results in results
                      if success and not (len(op_results) == 1 and
                                          op_results[0]))
    if bad_jobs:
        cli.ToStdout("%s job(s) failed while verifying the cluster.",
                     bad_jobs)
    if bad_jobs or bad_results:
        return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def VerifyDisks(opts: Any, args: list[str]) -> int:
    """Activate the disks that need it; list the missing volumes.

    One job per node group finds the instances; each of them without a
    missing volume gets activate-disks. Exit 1 if a node could not be
    asked, an activation failed or a volume is missing. Ganeti prints
    missing logical volumes as ``/dev/VG/LV``; the volumes here are files,
    shown by their path.
    """
    cl = cli.GetClient()
    op = opcodes.OpClusterVerifyDisks(group_name=opts.group_name)
    result = cli.SubmitOpCode(op, cl=cl, opts=opts)
    jex = cli.JobExecutor(cl=cl, opts=opts)
    for status, job_id in result["jobs"]:
        jex.AddJobId(None, status, job_id)
    retcode = constants.EXIT_SUCCESS
    for status, job_result in jex.GetResults():
        if not status:
            cli.ToStdout("Job failed: %s", job_result)
            continue
        ((bad_nodes, instances, missing), ) = job_result
        for node, text in bad_nodes.items():
            cli.ToStdout("Error gathering data on node %s: %s", node,
                         text[-400:])
            retcode = constants.EXIT_FAILURE
            cli.ToStdout("You need to fix these nodes first before fixing"
                         " instances")
        for name in instances:
            if name in missing:
                continue
            try:
                cli.ToStdout("Activating disks for instance '%s'", name)
                cli.SubmitOpCode(opcodes.OpInstanceActivateDisks(
                    instance_name=name), opts=opts, cl=cl)
            except errors.GenericError as err:
                nret, msg = cli.FormatError(err)
                retcode |= nret
                cli.ToStderr("Error activating disks for instance %s: %s",
                             name, msg)
        if missing:
            for name, volumes in sorted(missing.items()):
                if all(node in bad_nodes for node, _ in volumes):
                    cli.ToStdout("Instance %s cannot be verified as it lives"
                                 " on broken nodes", name)
                    continue
                cli.ToStdout("Instance %s has missing logical volumes:",
                             name)
                for node, volume in sorted(volumes):
                    cli.ToStdout("\t%s%s %s",
                                 "broken node " if node in bad_nodes else "",
                                 node, volume)
            cli.ToStdout("You need to replace or recreate disks for all the"
                         " above instances if this message persists after"
                         " fixing broken nodes.")
            retcode = constants.EXIT_FAILURE
        elif not instances:
            cli.ToStdout("No disks need to be activated.")
    return retcode


def _ExpandNodeName(name: str, known: list[str]) -> str:
    """A node given by full or unique short name (before the first dot)."""
    if name in known:
        return name
    matches = [node for node in known if node.startswith(name + ".")]
    if len(matches) != 1:
        raise errors.OpPrereqError("Node '%s' not known" % name,
                                   errors.ECODE_NOENT)
    return matches[0]


def _NodeRunner(names: list[str], with_master: bool
                ) -> tuple[list[str], str, rpc_node.RpcRunner]:
    """Online nodes (all or ``names``), the master and an RPC runner.

    Runs on the master, which holds the cluster certificate, and takes
    the nodes and their addresses from ssconf, so no daemon but the
    nodes' noded is needed. Offline nodes are skipped with a note.
    """
    ss = ssconf.SimpleStore()
    try:
        master, myself = ssconf.GetMasterAndMyself(ss)
        known = ss.GetNodeList()
        offline = set(ss.GetOfflineNodeList())
        addresses = dict(line.split(" ", 1)
                         for line in ss.GetNodePrimaryIPList())
    except errors.ConfigurationError as err:
        raise errors.OpPrereqError("This node is not part of a cluster: %s"
                                   % err, errors.ECODE_ENVIRON) from err
    if master != myself:
        raise errors.OpPrereqError("This command must run on the master"
                                   " node (%s)" % master,
                                   errors.ECODE_ENVIRON)
    wanted = set(_ExpandNodeName(name, known) for name in names)
    selected = [node for node in known if not wanted or node in wanted]
    skipped = [node for node in selected if node in offline]
    if skipped:
        cli.ToStderr("Note: skipping offline node(s): %s",
                     ", ".join(skipped))
    nodes = [node for node in selected if node not in offline and
             (with_master or node != master)]
    return nodes, master, rpc_node.RpcRunner(
        rpc_node.StaticResolver(addresses, offline))


_COMMAND_SEPARATOR = "-" * 48


def _PrintCommandResult(opts: Any, name: str, exit_code: int,
                        output: str) -> None:
    cli.ToStdout(_COMMAND_SEPARATOR)
    if opts.show_machine_names:
        for line in output.splitlines():
            cli.ToStdout("%s: %s", name, line)
    else:
        cli.ToStdout("node: %s", name)
        cli.ToStdout("%s", output)
    cli.ToStdout("return code = %s", exit_code)


def RunClusterCommand(opts: Any, args: list[str]) -> int:
    """Run a shell command on the nodes, showing each node's output.

    The master runs it last (after the others, which run in parallel), so
    that a command disrupting it doesn't cut the others short. Exit 1 if
    a node could not be reached; the commands' own exit codes are only
    shown.
    """
    command = " ".join(args)
    nodes, master, runner = _NodeRunner(opts.nodes, True)
    others = [node for node in nodes if node != master]
    last = [master] if master in nodes else []
    try:
        results = runner.call_run_command(others, command) if others else {}
        if last:
            results.update(runner.call_run_command(last, command))
    finally:
        runner.close()
    exit_code = constants.EXIT_SUCCESS
    for name in others + last:
        result = results[name]
        if result.fail_msg:
            cli.ToStdout(_COMMAND_SEPARATOR)
            cli.ToStdout("node: %s", name)
            cli.ToStdout("Failure while running the command: %s",
                         result.fail_msg)
            exit_code = constants.EXIT_FAILURE
            continue
        node_exit_code, output = result.payload
        if opts.failure_only and node_exit_code == constants.EXIT_SUCCESS:
            continue
        _PrintCommandResult(opts, name, node_exit_code, output)
    return exit_code


def ClusterCopyFile(opts: Any, args: list[str]) -> int:
    """Copy a file (content and mode) to the other online nodes.

    Only paths allowed by the master's and each node's copyfile allow-list
    (pathutils.COPYFILE_PATHS_FILE) are written. Exit 1 if any copy
    failed.
    """
    filename = os.path.abspath(args[0])
    if not os.path.isfile(filename):
        raise errors.OpPrereqError("No such filename '%s'" % filename,
                                   errors.ECODE_INVAL)
    vpath = rpc_node.EncodeVirtualPath(filename)
    backend_verify.CheckCopyfileTarget(vpath)
    with open(filename, "rb") as fobj:
        content = fobj.read()
        mode = stat.S_IMODE(os.fstat(fobj.fileno()).st_mode)
    nodes, _, runner = _NodeRunner(opts.nodes, False)
    try:
        results = (runner.call_copyfile_upload(nodes, vpath, content, mode)
                   if nodes else {})
    finally:
        runner.close()
    exit_code = constants.EXIT_SUCCESS
    for name in nodes:
        if results[name].fail_msg:
            cli.ToStderr("Copy of file %s to node %s failed: %s", filename,
                         name, results[name].fail_msg)
            exit_code = constants.EXIT_FAILURE
    return exit_code


_JOB_OPTS = [SUBMIT_OPT, PRINT_JOBID_OPT, PRIORITY_OPT, DRY_RUN_OPT]

commands = {
    "init": (InitCluster, [ArgUnknown(min=1, max=1)],
             _PARAM_OPTS + [SECONDARY_IP_OPT, DISKPARAMS_OPT,
                            DEFAULT_IALLOCATOR_OPT,
                            DEFAULT_IALLOCATOR_PARAMS_OPT, NO_ETC_HOSTS_OPT,
                            NO_SSH_INIT_OPT],
             "[<opts>...] <cluster-name>",
             "Initialises a new cluster configuration"),
    "destroy": (DestroyCluster, [], [YES_DOIT_OPT], "", "Destroy cluster"),
    "redist-conf": (RedistributeConfig, [], _JOB_OPTS, "",
                    "Forces a push of the configuration file and ssconf"
                    " files to the nodes in the cluster"),
    "repair-cancel": (RepairCancel, [ArgUnknown(min=1, max=1)], _JOB_OPTS,
                      "<incident-id>",
                      "Cancels a repair incident of the maintenance daemon:"
                      " it takes no further action for it and forgets it"
                      " once the node no longer reports it"),
    "master-failover": (MasterFailover, [], [NOVOTING_OPT, YES_DOIT_OPT], "",
                        "Makes the current node the master"),
    "master-ping": (MasterPing, [], [], "", "Checks if the master is alive"),
    "activate-master-ip": (ActivateMasterIp, [], [], "",
                           "Activates the master IP"),
    "deactivate-master-ip": (DeactivateMasterIp, [], [CONFIRM_OPT], "",
                             "Deactivates the master IP"),
    "version": (ShowClusterVersion, [], [], "",
                "Shows the cluster version"),
    "getmaster": (ShowClusterMaster, [], [], "",
                  "Shows the cluster master"),
    "info": (ShowClusterConfig, [],
             [cli_option("--roman", dest="roman_integers", default=False,
                         action="store_true",
                         help="Use roman numbers for positive integers")],
             "[--roman]", "Show cluster configuration"),
    "list-tags": (ListTags, [], [], "", "List the tags of the cluster"),
    "add-tags": (AddTags, [ArgUnknown()], [TAG_SRC_OPT] + _JOB_OPTS,
                 "<tag>...", "Add tags to the cluster"),
    "remove-tags": (RemoveTags, [ArgUnknown()], [TAG_SRC_OPT] + _JOB_OPTS,
                    "<tag>...", "Remove tags from the cluster"),
    "search-tags": (SearchTags, [ArgUnknown(min=1, max=1)], [], "",
                    "Searches the tags on all objects on the cluster for a"
                    " given pattern (regex)"),
    "queue": (QueueOps, [ArgChoice(min=1, max=1,
                                   choices=["drain", "undrain", "info"])],
              [], "drain|undrain|info", "Change queue properties"),
    "watcher": (WatcherOps,
                [ArgChoice(min=1, max=1,
                           choices=["pause", "continue", "info"]),
                 ArgSuggest(min=0, max=1, choices=["30m", "1h", "4h"])],
                [], "{pause <timespec>|continue|info}",
                "Change watcher properties"),
    "aggregate": (AggregateOps,
                  [ArgChoice(min=1, max=1, choices=sorted(_AGG_ARGS)),
                   ArgUnknown()],
                  [AGG_METADATA_OPT] + _JOB_OPTS,
                  "add [--metadata KEY=VALUE,...] <name> | remove <name> |"
                  " rename <name> <new-name> | list [<name>...] |"
                  " info [<name>...]",
                  "Manages the named aggregates of nodes (each node group"
                  " is one too), which --member-of constrains allocations"
                  " to"),
    "modify": (SetClusterParams, [],
               _PARAM_OPTS + [MAX_TRACKED_JOBS_OPT, MAINTAIN_NODE_HEALTH_OPT,
                              DISKPARAMS_OPT, DEFAULT_IALLOCATOR_OPT,
                              DEFAULT_IALLOCATOR_PARAMS_OPT, DEFAULT_HV_OPT,
                              ENABLED_DATA_COLLECTORS_OPT,
                              DATA_COLLECTOR_INTERVAL_OPT,
                              DIAGNOSE_DATA_COLLECTOR_FILENAME_OPT,
                              MAINT_INTERVAL_OPT, MAINT_BALANCE_OPT,
                              MAINT_BALANCE_THRESHOLD_OPT,
                              PLACEMENT_REQUIRED_PREFIX_OPT,
                              PLACEMENT_FORBIDDEN_PREFIX_OPT,
                              ADD_UIDS_OPT, REMOVE_UIDS_OPT] +
               _JOB_OPTS,
               "[<opts>...]", "Alters the parameters of the cluster"),
    "rename": (RenameCluster, [ArgHost(min=1, max=1)],
               [FORCE_OPT, DRY_RUN_OPT], "<new-name>",
               "Renames the cluster"),
    "show-ispecs-cmd": (ShowCreateCommand, [], [], "",
                        "Show the command line to re-create the cluster"),
    "repair-disk-sizes": (RepairDiskSizes, ARGS_MANY_INSTANCES,
                          [DRY_RUN_OPT, PRIORITY_OPT],
                          "[<instance-name>...]",
                          "Updates mismatches in recorded disk sizes"),
    "dump-info": (DumpClusterInfo, [], [], "",
                  "Print the cluster information as JSON"),
    "verify": (VerifyCluster, [],
               [VERBOSE_OPT, DEBUG_SIMERR_OPT, ERROR_CODES_OPT, NONPLUS1_OPT,
                PRIORITY_OPT, NODEGROUP_OPT, IGNORE_ERRORS_OPT],
               "", "Does a check on the cluster configuration"),
    "verify-disks": (VerifyDisks, [], [PRIORITY_OPT, NODEGROUP_OPT], "",
                     "Does a check on the cluster disk status"),
    "command": (RunClusterCommand, [ArgCommand(min=1)],
                [NODE_LIST_OPT, SHOW_MACHINE_OPT, FAILURE_ONLY_OPT],
                "[-n node...] <command>",
                "Runs a command on all (or only some) nodes"),
    "copyfile": (ClusterCopyFile, [ArgFile(min=1, max=1)], [NODE_LIST_OPT],
                 "[-n node...] <filename>",
                 "Copies a file to all (or only some) nodes"),
    "epo": (_cluster_epo.Epo, [ArgUnknown()], _cluster_epo.EPO_OPTS,
            "[<opts>...] [args]",
            "Performs an emergency power-off on given args"),
    "renew-crypto": (_cluster_crypto.RenewCrypto, [],
                     _cluster_crypto.RENEW_CRYPTO_OPTS, "[<opts>...]",
                     "Renews cluster certificates, keys and secrets"),
    "rebalance": (hbal.Rebalance, [], hbal.REBALANCE_OPTS,
                  "[-G <group>] [-C] [-X] [<opts>...]",
                  "Computes instance moves that lower the cluster score"
                  " (as hbal does), prints them and with -X runs them"),
    "capacity": (hspace.ShowCapacity, [], hspace.CAPACITY_OPTS,
                 "[--memory <size>] [--disk <size>] [--vcpus <n>]"
                 " [--disk-template <template>] [--tiered-alloc]",
                 "Shows per node group how many more instances of a spec"
                 " (by default the policy's standard spec) fit and which"
                 " resource runs out first (as hspace does)"),
}

aliases = {"masterfailover": "master-failover", "show": "info"}


def Main() -> int:
    return cli.GenericMain(commands, aliases=aliases)
