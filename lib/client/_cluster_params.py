"""gnt-cluster init and modify: their options, derived from the
OpClusterSetParams declaration where they set one of its parameters, and
the two commands building the cluster's parameters from them."""

from typing import Any

from ganeti import (cli, constants, errors, impexp, objects, opcodes,
                    utils)
from ganeti.cli_opts import (FORCE_OPT, INSTANCE_POLICY_OPTS,
                             IPOLICY_STD_OPT, OpcodeOption, ParamsOption,
                             cli_option)

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
                                      "-I", "--default-iallocator")
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
MAINT_BALANCE_DISK_MOVES_OPT = OpcodeOption(
    _SetParams, "maint_balance_disk_moves", "--auto-balance-disk-moves",
    type="bool", action="store", metavar="yes|no")
MAINT_BALANCE_DYNAMIC_LOAD_OPT = OpcodeOption(
    _SetParams, "maint_balance_dynamic_load", "--auto-balance-dynamic-load",
    type="bool", action="store", metavar="yes|no")
MAINT_HAREP_OPT = OpcodeOption(_SetParams, "maint_harep", "--maintd-harep",
                               type="bool", action="store", metavar="yes|no")
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
# /etc/hosts nor SSH
NO_ETC_HOSTS_OPT = cli_option("--no-etc-hosts", dest="modify_etc_hosts",
                              default=True, action="store_false",
                              help="Don't modify /etc/hosts")
MODIFY_ETC_HOSTS_OPT = OpcodeOption(_SetParams, "modify_etc_hosts",
                                    "--modify-etc-hosts", type="bool",
                                    action="store", metavar="yes|no")
NO_SSH_INIT_OPT = cli_option("--no-ssh-init", dest="modify_ssh_setup",
                             default=True, action="store_false",
                             help="Don't initialize SSH keys")
SECONDARY_IP_OPT = cli_option("-s", "--secondary-ip", dest="secondary_ip",
                              default=None, metavar="ADDRESS",
                              help="Secondary IP address of the master")

# Features this cluster lacks, under Ganeti's option names: the opcode's
# declaration accepts their default (or switched-off) value only
VG_NAME_OPT = OpcodeOption(_SetParams, "vg_name", "--vg-name",
                           metavar="VG")
RESERVED_LVS_OPT = OpcodeOption(_SetParams, "reserved_lvs",
                                "--reserved-lvs", metavar="LV,...")
DRBD_HELPER_OPT = OpcodeOption(_SetParams, "drbd_helper",
                               "--drbd-usermode-helper", metavar="PATH")
PREALLOC_WIPE_DISKS_OPT = OpcodeOption(
    _SetParams, "prealloc_wipe_disks", "--prealloc-wipe-disks",
    type="bool", action="store", metavar="yes|no")
USE_EXTERNAL_MIP_SCRIPT_OPT = OpcodeOption(
    _SetParams, "use_external_mip_script", "--use-external-mip-script",
    type="bool", action="store", metavar="yes|no")
GLUSTER_STORAGE_DIR_OPT = OpcodeOption(_SetParams, "gluster_storage_dir",
                                       "--gluster-storage-dir",
                                       metavar="DIR")
INSTALL_IMAGE_OPT = OpcodeOption(_SetParams, "install_image",
                                 "--install-image", metavar="IMAGE")
ZEROING_IMAGE_OPT = OpcodeOption(_SetParams, "zeroing_image",
                                 "--zeroing-image", metavar="IMAGE")
INSTANCE_COMMUNICATION_NETWORK_OPT = OpcodeOption(
    _SetParams, "instance_communication_network",
    "--instance-communication-network", metavar="NETWORK")
_LACKING_OPTS = [VG_NAME_OPT, DRBD_HELPER_OPT, PREALLOC_WIPE_DISKS_OPT,
                 USE_EXTERNAL_MIP_SCRIPT_OPT, INSTALL_IMAGE_OPT,
                 ZEROING_IMAGE_OPT]
_INIT_LACKING_OPTS = _LACKING_OPTS + [GLUSTER_STORAGE_DIR_OPT]

# Ganeti's --specs-* of init: per instance spec "min=N,max=N,std=N" (an
# alternative to --ipolicy-bounds-specs and --ipolicy-std-specs)
_SPLIT_SPECS = [
    ("--specs-mem-size", objects.ISPEC_MEM_SIZE, "Memory size"),
    ("--specs-cpu-count", objects.ISPEC_CPU_COUNT, "CPU count"),
    ("--specs-disk-count", objects.ISPEC_DISK_COUNT, "Disk count"),
    ("--specs-disk-size", objects.ISPEC_DISK_SIZE, "Disk size"),
    ("--specs-nic-count", objects.ISPEC_NIC_COUNT, "NIC count"),
]
# Specs given in MiB or with a unit
_SPLIT_SPECS_UNITS = frozenset([objects.ISPEC_MEM_SIZE,
                                objects.ISPEC_DISK_SIZE])
SPLIT_SPECS_OPTS = [
    cli_option(opt, dest="ispecs_" + spec.replace("-", "_"), type="keyval",
               default={}, metavar="min=N,max=N,std=N",
               help="%s specs: list of key=value, where key is one of min,"
               " max, std%s" % (title, " (in MiB or using a unit)"
                                if spec in _SPLIT_SPECS_UNITS else ""))
    for opt, spec, title in _SPLIT_SPECS]
PRIMARY_IP_VERSION_OPT = cli_option(
    "--primary-ip-version", dest="primary_ip_version", type="choice",
    choices=[str(constants.IP4_VERSION), str(constants.IP6_VERSION)],
    default=str(constants.IP4_VERSION), metavar="4|6",
    help="Cluster-wide IP version for the primary IP addresses (only 4"
    " here)")
SSH_KEY_TYPE_OPT = cli_option("--ssh-key-type", dest="ssh_key_type",
                              type="choice", choices=["rsa", "dsa", "ecdsa"],
                              default=None,
                              help="Type of the cluster's SSH keys"
                              " (recorded only: this cluster does not"
                              " manage SSH)")
SSH_KEY_BITS_OPT = cli_option("--ssh-key-bits", dest="ssh_key_bits",
                              type="int", default=None,
                              help="Size of the cluster's SSH keys in bits"
                              " (recorded only)")

_PARAM_OPTS = [CANDIDATE_POOL_SIZE_OPT, MAX_RUNNING_JOBS_OPT,
               MAC_PREFIX_OPT, MASTER_NETDEV_OPT, MASTER_NETMASK_OPT,
               ENABLED_HV_OPT, ENABLED_DISK_TEMPLATES_OPT,
               FILE_STORAGE_DIR_OPT, SHARED_FILE_STORAGE_DIR_OPT,
               BEPARAMS_OPT, HVPARAMS_OPT, NICPARAMS_OPT,
               NDPARAMS_OPT, IPOLICY_STD_OPT, UIDPOOL_OPT,
               USER_SHUTDOWN_OPT, COMPRESSION_TOOLS_OPT] + INSTANCE_POLICY_OPTS

INIT_OPTS = _PARAM_OPTS + [
    SECONDARY_IP_OPT, DISKPARAMS_OPT, DEFAULT_IALLOCATOR_OPT,
    DEFAULT_IALLOCATOR_PARAMS_OPT, MAINTAIN_NODE_HEALTH_OPT,
    NO_ETC_HOSTS_OPT, NO_SSH_INIT_OPT, PRIMARY_IP_VERSION_OPT,
    SSH_KEY_TYPE_OPT, SSH_KEY_BITS_OPT] + SPLIT_SPECS_OPTS + \
    _INIT_LACKING_OPTS
MODIFY_OPTS = _PARAM_OPTS + [
    MAX_TRACKED_JOBS_OPT, MAINTAIN_NODE_HEALTH_OPT, DISKPARAMS_OPT,
    DEFAULT_IALLOCATOR_OPT, DEFAULT_IALLOCATOR_PARAMS_OPT, DEFAULT_HV_OPT,
    ENABLED_DATA_COLLECTORS_OPT, DATA_COLLECTOR_INTERVAL_OPT,
    DIAGNOSE_DATA_COLLECTOR_FILENAME_OPT, MAINT_INTERVAL_OPT,
    MAINT_BALANCE_OPT, MAINT_BALANCE_THRESHOLD_OPT,
    MAINT_BALANCE_DISK_MOVES_OPT, MAINT_BALANCE_DYNAMIC_LOAD_OPT,
    MAINT_HAREP_OPT,
    PLACEMENT_REQUIRED_PREFIX_OPT, PLACEMENT_FORBIDDEN_PREFIX_OPT,
    ADD_UIDS_OPT, REMOVE_UIDS_OPT, MODIFY_ETC_HOSTS_OPT, FORCE_OPT,
    RESERVED_LVS_OPT, INSTANCE_COMMUNICATION_NETWORK_OPT] + _LACKING_OPTS


def _CompressionTools(opts: Any) -> list[str] | None:
    """The option's tools; an empty value means the default ones."""
    if opts.compression_tools == []:
        return list(impexp.IEC_DEFAULT_TOOLS)
    return opts.compression_tools


def _HvParams(opts: Any) -> dict:
    return {hv: params for hv, params in (opts.hvparams or [])}


def _Values(opts: Any, options: list) -> dict[str, Any]:
    """The options' values by destination, those given only."""
    result = {}
    for option in options:
        dest = option.dest
        assert dest is not None
        if getattr(opts, dest) not in (None, {}):
            result[dest] = getattr(opts, dest)
    return result


def _SplitSpecsIPolicy(opts: Any) -> dict | None:
    """The instance policy of init's options: --ipolicy-* as modify has
    them, or Ganeti's --specs-* completed with the default specs."""
    ipolicy = cli.BuildIPolicy(opts)
    values = _Values(opts, SPLIT_SPECS_OPTS)
    given = [(opt, spec, values[option.dest])
             for (opt, spec, _), option in zip(_SPLIT_SPECS,
                                               SPLIT_SPECS_OPTS)
             if option.dest in values]
    if not given:
        return ipolicy
    if opts.ipolicy_bounds_specs or opts.ipolicy_std_specs:
        raise errors.OpPrereqError("A --specs-xxx option cannot be specified"
                                   " together with any --ipolicy-xxx-specs"
                                   " option", errors.ECODE_INVAL)
    specs: dict[str, dict] = {objects.ISPECS_MIN: {}, objects.ISPECS_MAX: {},
                              objects.ISPECS_STD: {}}
    for opt, spec, values in given:
        for key, value in values.items():
            if key not in specs:
                raise errors.OpPrereqError(
                    "Invalid key '%s' in %s, expected one of min, max, std"
                    % (key, opt), errors.ECODE_INVAL)
            try:
                specs[key][spec] = (utils.ParseUnit(str(value))
                                    if spec in _SPLIT_SPECS_UNITS
                                    else int(value))
            except (ValueError, errors.UnitParseError) as err:
                raise errors.OpPrereqError("Invalid %s value '%s': %s" %
                                           (opt, value, err),
                                           errors.ECODE_INVAL) from None
    ipolicy = ipolicy or {}
    ipolicy[objects.ISPECS_MINMAX] = [{
        key: dict(objects.ISPECS_MINMAX_DEFAULTS[key], **specs[key])
        for key in (objects.ISPECS_MIN, objects.ISPECS_MAX)}]
    ipolicy[objects.ISPECS_STD] = dict(
        objects.IPOLICY_DEFAULTS[objects.ISPECS_STD],
        **specs[objects.ISPECS_STD])
    return ipolicy


def _CheckInitLacking(opts: Any) -> None:
    """Refuse, before anything is written, a feature this cluster lacks
    set to other than its default (the opcode's declaration says which
    values are accepted)."""
    opcodes.OpClusterSetParams(
        **_Values(opts, _INIT_LACKING_OPTS)).Validate(True)
    if opts.primary_ip_version != str(constants.IP4_VERSION):
        raise errors.OpPrereqError("Primary IP version %s is not supported"
                                   " by this cluster (only %d)" %
                                   (opts.primary_ip_version,
                                    constants.IP4_VERSION),
                                   errors.ECODE_INVAL)


def InitCluster(opts: Any, args: list[str]) -> int:
    """Create the cluster with this node as master and start its daemons."""
    _CheckInitLacking(opts)
    ipolicy = _SplitSpecsIPolicy(opts)
    # Imported here, as in gnt_cluster.DestroyCluster: off every start-up
    from ganeti import bootstrap
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
        ipolicy=ipolicy,
        uid_pool=opts.uid_pool,
        compression_tools=_CompressionTools(opts),
        modify_etc_hosts=opts.modify_etc_hosts,
        modify_ssh_setup=opts.modify_ssh_setup,
        ssh_key_type=opts.ssh_key_type, ssh_key_bits=opts.ssh_key_bits,
        enabled_user_shutdown=bool(opts.enabled_user_shutdown))
    op = opcodes.OpClusterPostInit()
    cli.SubmitOpCode(op, opts=opts)
    if opts.default_iallocator is not None or \
            opts.default_iallocator_params or \
            opts.maintain_node_health is not None:
        # Cluster parameters the configuration gets through the master
        cli.SubmitOpCode(opcodes.OpClusterSetParams(
            default_iallocator=opts.default_iallocator,
            default_iallocator_params=opts.default_iallocator_params or None,
            maintain_node_health=opts.maintain_node_health),
            opts=opts)
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
        "maint_balance_disk_moves": opts.maint_balance_disk_moves,
        "maint_balance_dynamic_load": opts.maint_balance_dynamic_load,
        "maint_harep": opts.maint_harep,
        "uid_pool": opts.uid_pool,
        "add_uids": opts.add_uids,
        "remove_uids": opts.remove_uids,
        "compression_tools": _CompressionTools(opts),
        "enabled_user_shutdown": opts.enabled_user_shutdown,
        "modify_etc_hosts": opts.modify_etc_hosts,
        "reserved_lvs": opts.reserved_lvs,
        "instance_communication_network":
            opts.instance_communication_network,
    }
    params.update(_Values(opts, _LACKING_OPTS))
    params = {key: value for key, value in params.items()
              if value is not None}
    if not params:
        cli.ToStderr("Please give at least one of the parameters.")
        return constants.EXIT_FAILURE
    op = opcodes.OpClusterSetParams(force=opts.force, **params)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS
