"""gnt-cluster: cluster-wide administration."""

import sys
from typing import Any

from ganeti import bootstrap, cli, constants, errors, opcodes, serializer
from ganeti.cli_opts import (
    ArgChoice, ArgUnknown, BACKEND_OPT, HVLIST_OPT, OpcodeOption,
    PRIORITY_OPT, DRY_RUN_OPT, SUBMIT_OPT, PRINT_JOBID_OPT, TAG_SRC_OPT,
    YES_DOIT_OPT, cli_option)

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
NICPARAMS_OPT = OpcodeOption(_SetParams, "nicparams", "-N",
                             "--nic-parameters", default={})
NDPARAMS_OPT = OpcodeOption(_SetParams, "ndparams", "--node-parameters",
                            default={})
SECONDARY_IP_OPT = cli_option("-s", "--secondary-ip", dest="secondary_ip",
                              default=None, metavar="ADDRESS",
                              help="Secondary IP address of the master")

_PARAM_OPTS = [CANDIDATE_POOL_SIZE_OPT, MAX_RUNNING_JOBS_OPT,
               MAC_PREFIX_OPT, MASTER_NETDEV_OPT, MASTER_NETMASK_OPT,
               ENABLED_HV_OPT, ENABLED_DISK_TEMPLATES_OPT,
               FILE_STORAGE_DIR_OPT, SHARED_FILE_STORAGE_DIR_OPT,
               BACKEND_OPT, HVLIST_OPT, NICPARAMS_OPT, NDPARAMS_OPT]


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
        candidate_pool_size=opts.candidate_pool_size,
        mac_prefix=opts.mac_prefix,
        max_running_jobs=opts.max_running_jobs)
    op = opcodes.OpClusterPostInit()
    cli.SubmitOpCode(op, opts=opts)
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


def MasterPing(opts: Any, args: list[str]) -> int:
    """Exit 0 if the master daemon answers."""
    try:
        cli.GetClient().QueryClusterInfo()
        return constants.EXIT_SUCCESS
    except errors.GenericError as err:
        cli.ToStderr("Error while pinging master: %s", err)
        return constants.EXIT_FAILURE


def _FormatDict(data: dict, indent: int) -> list[str]:
    lines = []
    for key in sorted(data):
        value = data[key]
        if isinstance(value, dict):
            lines.append("%s%s:" % (" " * indent, key))
            lines.extend(_FormatDict(value, indent + 2))
        else:
            if isinstance(value, (list, tuple)):
                value = ", ".join(str(v) for v in value)
            lines.append("%s%s: %s" % (" " * indent, key, value))
    return lines


def ShowClusterConfig(opts: Any, args: list[str]) -> int:
    """Print the cluster configuration, in Ganeti's layout."""
    info = cli.GetClient().QueryClusterInfo()
    sections: list[tuple[str, Any]] = [
        ("Cluster name", info["name"]),
        ("Cluster UUID", info["uuid"]),
        ("Creation time", cli.FormatTimestamp(info["ctime"])),
        ("Modification time", cli.FormatTimestamp(info["mtime"])),
        ("Master node", info["master"]),
        ("Architecture (this node)", "%s (%s)" % tuple(info["architecture"])),
        ("Tags", ", ".join(info["tags"]) or "(none)"),
        ("Default hypervisor", info["default_hypervisor"]),
        ("Enabled hypervisors", ", ".join(info["enabled_hypervisors"])),
        ("Hypervisor parameters", info["hvparams"]),
        ("Cluster parameters", {
            "candidate pool size": info["candidate_pool_size"],
            "maximal number of jobs running simultaneously":
                info["max_running_jobs"],
            "maximal number of jobs simultaneously tracked by the"
            " scheduler": info["max_tracked_jobs"],
            "master netdev": info["master_netdev"],
            "master netmask": info["master_netmask"],
            "mac prefix": info["mac_prefix"],
            "maintenance of node health": info["maintain_node_health"],
            "default instance allocator": info["default_iallocator"] or "",
            "enabled disk templates":
                ", ".join(info["enabled_disk_templates"]),
            "file storage path": info["file_storage_dir"],
            "shared file storage path": info["shared_file_storage_dir"],
        }),
        ("Default node parameters", info["ndparams"]),
        ("Default instance parameters", info["beparams"]),
        ("Default nic parameters", info["nicparams"]),
        ("Instance policy - limits for instances", info["ipolicy"]),
    ]
    for title, value in sections:
        if isinstance(value, dict):
            cli.ToStdout("%s:", title)
            for line in _FormatDict(value, 2):
                cli.ToStdout("%s", line)
        else:
            cli.ToStdout("%s: %s", title, value)
    return constants.EXIT_SUCCESS


def SetClusterParams(opts: Any, args: list[str]) -> int:
    """Change cluster parameters."""
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
        "hvparams": _HvParams(opts) or None,
        "beparams": opts.beparams or None,
        "nicparams": opts.nicparams or None,
        "ndparams": opts.ndparams or None,
    }
    params = {key: value for key, value in params.items()
              if value is not None}
    if not params:
        cli.ToStderr("Please give at least one of the parameters.")
        return constants.EXIT_FAILURE
    op = opcodes.OpClusterSetParams(**params)
    cli.SubmitOrSend(op, opts)
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


def RedistributeConfig(opts: Any, args: list[str]) -> int:
    cli.SubmitOrSend(opcodes.OpClusterRedistConf(), opts)
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


_JOB_OPTS = [SUBMIT_OPT, PRINT_JOBID_OPT, PRIORITY_OPT, DRY_RUN_OPT]

commands = {
    "init": (InitCluster, [ArgUnknown(min=1, max=1)],
             _PARAM_OPTS + [SECONDARY_IP_OPT],
             "[<opts>...] <cluster-name>",
             "Initialises a new cluster configuration"),
    "destroy": (DestroyCluster, [], [YES_DOIT_OPT], "", "Destroy cluster"),
    "redist-conf": (RedistributeConfig, [], _JOB_OPTS, "",
                    "Forces a push of the configuration file and ssconf"
                    " files to the nodes in the cluster"),
    "master-ping": (MasterPing, [], [], "", "Checks if the master is alive"),
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
    "modify": (SetClusterParams, [],
               _PARAM_OPTS + [MAX_TRACKED_JOBS_OPT, MAINTAIN_NODE_HEALTH_OPT,
                              DEFAULT_IALLOCATOR_OPT] + _JOB_OPTS,
               "[<opts>...]", "Alters the parameters of the cluster"),
    "dump-info": (DumpClusterInfo, [], [], "",
                  "Print the cluster information as JSON"),
}

aliases = {"masterfailover": "master-failover", "show": "info"}


def Main() -> int:
    return cli.GenericMain(commands, aliases=aliases)
