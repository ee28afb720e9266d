"""gnt-cluster info: the cluster's configuration in Ganeti's layout."""

from typing import Any

from ganeti import cli, constants, pathutils, vcluster
from ganeti.utils import text, uidpool


def _FormatGroupedParams(params: dict, roman: bool = False) -> dict:
    """Parameters grouped by hypervisor, OS, template...: values as text,
    as Ganeti prints them; with ``roman`` integers in roman numerals."""
    return {key: _FormatGroupedParams(value, roman)
            if isinstance(value, dict) else
            text.TryToRoman(value) if roman and isinstance(value, int)
            else str(value) for key, value in params.items()}


def _SearchPath(paths: list[str]) -> str:
    """Search directories as the cluster names them (without the node root
    of a virtual cluster, like the storage paths)."""
    return ", ".join(vcluster.MakeVirtualPath(path) for path in paths)


def ShowClusterConfig(opts: Any, args: list[str]) -> int:
    """Print the cluster configuration, in Ganeti's layout and order."""
    info = cli.GetClient().QueryClusterInfo()
    roman = opts.roman_integers

    def _Int(key: str) -> Any:
        return text.TryToRoman(info[key], roman)

    def _Grouped(params: dict) -> dict:
        return _FormatGroupedParams(params, roman)

    enabled_hvs = info["enabled_hypervisors"]
    cluster_params = [
        ("candidate pool size", _Int("candidate_pool_size")),
        ("maximal number of jobs running simultaneously",
         _Int("max_running_jobs")),
        ("maximal number of jobs simultaneously tracked by the scheduler",
         _Int("max_tracked_jobs")),
        ("mac prefix", info["mac_prefix"]),
        ("master netdev", info["master_netdev"]),
        ("master netmask", _Int("master_netmask")),
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
        ("primary ip version", _Int("primary_ip_version")),
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
        ("Hypervisor parameters", _Grouped(
            {hv: params for hv, params in info["hvparams"].items()
             if hv in enabled_hvs})),
        ("OS-specific hypervisor parameters", _Grouped(info["os_hvp"])),
        ("OS parameters", _Grouped(info["osparams"])),
        ("Hidden OSes", ", ".join(info["hidden_os"])),
        ("Blacklisted OSes", ", ".join(info["blacklisted_os"])),
        ("Cluster parameters", cluster_params),
        ("Default node parameters", _Grouped(info["ndparams"])),
        ("Default instance parameters", _Grouped(info["beparams"])),
        ("Default nic parameters", _Grouped(info["nicparams"])),
        ("Default disk parameters", _Grouped(info["diskparams"])),
        ("Instance policy - limits for instances",
         cli.FormatPolicyInfo(info["ipolicy"], info["ipolicy"], True,
                              roman)),
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
            ("auto balancing disk moves", info["maint_balance_disk_moves"]),
            ("auto balancing dynamic load",
             info["maint_balance_dynamic_load"]),
            ("harep", info["maint_harep"]),
        ]),
    ])
    return constants.EXIT_SUCCESS


def _FormatDataCollectors(info: dict) -> dict:
    """Ganeti's "Data collectors" section: activity and interval."""
    intervals = info["data_collector_interval"]
    return {name: {"active": active,
                   "interval": "%.3fs" % (intervals[name] / 1e6)}
            for name, active in info["enabled_data_collectors"].items()}
