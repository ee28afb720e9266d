"""Ganeti network administration: add, remove, list, change, connect and
disconnect IP networks (Ganeti 3.0's gnt-network)."""

import textwrap
from typing import Any

from ganeti import cli, constants, errors, objects, opcodes
from ganeti.cli_opts import (
    ARGS_MANY_NETWORKS, ARGS_ONE_NETWORK, ArgGroup, ArgNetwork, ArgUnknown,
    DRY_RUN_OPT, FIELDS_OPT, FORCE_OPT, NOCONFLICTSCHECK_OPT, NOHDR_OPT,
    PRINT_JOBID_OPT, PRIORITY_OPT, SEP_OPT, SUBMIT_OPT, TAG_SRC_OPT,
    VERBOSE_OPT, cli_option)

# Ganeti's default list of fields for "list"
_LIST_DEF_FIELDS = ["name", "network", "gateway", "mac_prefix", "group_list",
                    "tags"]

# Ganeti's options; addresses stay strings, lists are comma-separated
NETWORK_OPT = cli_option("--network", dest="network", default=None,
                         help="IP network in CIDR notation")
GATEWAY_OPT = cli_option("--gateway", dest="gateway", default=None,
                         help="IP address of the router (gateway)")
ADD_RESERVED_IPS_OPT = cli_option("--add-reserved-ips",
                                  dest="add_reserved_ips", default=None,
                                  help="Comma-separated list of reserved IPs"
                                  " to add")
REMOVE_RESERVED_IPS_OPT = cli_option("--remove-reserved-ips",
                                     dest="remove_reserved_ips", default=None,
                                     help="Comma-delimited list of reserved"
                                     " IPs to remove")
NETWORK6_OPT = cli_option("--network6", dest="network6", default=None,
                          help="IP network in CIDR notation")
GATEWAY6_OPT = cli_option("--gateway6", dest="gateway6", default=None,
                          help="IP6 address of the router (gateway)")
MAC_PREFIX_OPT = cli_option("-m", "--mac-prefix", dest="mac_prefix",
                            default=None, metavar="PREFIX",
                            help="Specify the mac prefix for the instance IP"
                            " addresses, in the format XX:XX:XX")
TAG_ADD_OPT = cli_option("--tags", dest="tags", default=None,
                         help="Comma-separated list of network tags")
NIC_PARAMS_OPT = cli_option("-N", "--nic-parameters", dest="nicparams",
                            type="keyval", default={},
                            metavar="PARAM=VALUE,...",
                            help="NIC parameters of the network in the"
                            " groups. Keys: mode, link, vlan.")

_JOB_OPTS = [SUBMIT_OPT, PRINT_JOBID_OPT, PRIORITY_OPT, DRY_RUN_OPT]


def _SplitIps(value: str | None) -> list[str] | None:
    """A comma-separated option: None if not given, [] if empty."""
    if value is None:
        return None
    return [ip.strip() for ip in value.split(",") if ip.strip()]


def AddNetwork(opts: Any, args: list[str]) -> int:
    (network_name,) = args
    if opts.network is None:
        raise errors.OpPrereqError("The --network option must be given",
                                   errors.ECODE_INVAL)
    op = opcodes.OpNetworkAdd(
        network_name=network_name, network=opts.network,
        gateway=opts.gateway, network6=opts.network6,
        gateway6=opts.gateway6, mac_prefix=opts.mac_prefix,
        add_reserved_ips=_SplitIps(opts.add_reserved_ips),
        conflicts_check=opts.conflicts_check,
        tags=opts.tags.split(",") if opts.tags else [])
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def _Groups(groups: list[str]) -> list[str]:
    """The groups named, or all groups (by UUID) if none are."""
    if groups:
        return groups
    return [uuid for (uuid,) in cli.QueryRows(constants.QR_GROUP, ["uuid"],
                                              [])]


def ConnectNetwork(opts: Any, args: list[str]) -> int:
    """Connect the network to each group (all if none is named), one job
    per group as Ganeti does."""
    nicparams = objects.FillDict(objects.NICC_DEFAULTS, opts.nicparams)
    cl = cli.GetClient()
    for group in _Groups(args[1:]):
        op = opcodes.OpNetworkConnect(
            group_name=group, network_name=args[0],
            network_mode=nicparams[objects.NIC_MODE],
            network_link=nicparams[objects.NIC_LINK],
            network_vlan=nicparams[objects.NIC_VLAN],
            conflicts_check=opts.conflicts_check)
        cli.SubmitOpCode(op, cl=cl, opts=opts)
    return constants.EXIT_SUCCESS


def DisconnectNetwork(opts: Any, args: list[str]) -> int:
    cl = cli.GetClient()
    for group in _Groups(args[1:]):
        op = opcodes.OpNetworkDisconnect(group_name=group,
                                         network_name=args[0])
        cli.SubmitOpCode(op, cl=cl, opts=opts)
    return constants.EXIT_SUCCESS


def _FmtGroupList(groups: list) -> str:
    return ", ".join("%s (%s, %s, %s)" % tuple(group) for group in groups)


def ListNetworks(opts: Any, args: list[str]) -> int:
    fields = cli.ParseFields(opts.output, _LIST_DEF_FIELDS)
    fmtoverride = {
        "group_list": (_FmtGroupList, False),
        "inst_list": (",".join, False),
        "tags": (",".join, False),
    }
    return cli.GenericList(constants.QR_NETWORK, fields, args, None,
                           opts.separator, not opts.no_headers,
                           verbose=opts.verbose, format_override=fmtoverride)


def ListNetworkFields(opts: Any, args: list[str]) -> int:
    return cli.GenericListFields(constants.QR_NETWORK, args, opts.separator,
                                 not opts.no_headers)


_INFO_FIELDS = ["name", "network", "gateway", "network6", "gateway6",
                "mac_prefix", "free_count", "reserved_count", "map",
                "group_list", "inst_list", "external_reservations",
                "serial_no", "uuid"]


def _NicsOnNetwork(instance: str, net_uuid: str) -> str:
    """"index:ip" of the instance's NICs on the network."""
    ((ips, networks),) = cli.QueryRows(constants.QR_INSTANCE,
                                       ["nic.ips", "nic.networks"],
                                       [instance])
    return ", ".join("%d:%s" % (idx, ip)
                     for idx, (ip, net) in enumerate(zip(ips, networks))
                     if net == net_uuid)


def ShowNetworkConfig(opts: Any, args: list[str]) -> int:
    """Print the networks as Ganeti's "gnt-network info" does."""
    for (name, network, gateway, network6, gateway6, mac_prefix, free_count,
         reserved_count, mapping, group_list, instances, ext_res, serial,
         uuid) in cli.QueryRows(constants.QR_NETWORK, _INFO_FIELDS, args):
        size = free_count + reserved_count
        cli.ToStdout("Network name: %s", name)
        cli.ToStdout("UUID: %s", uuid)
        cli.ToStdout("Serial number: %d", serial)
        cli.ToStdout("  Subnet: %s", network)
        cli.ToStdout("  Gateway: %s", gateway)
        cli.ToStdout("  IPv6 Subnet: %s", network6)
        cli.ToStdout("  IPv6 Gateway: %s", gateway6)
        cli.ToStdout("  Mac Prefix: %s", mac_prefix)
        cli.ToStdout("  Size: %d", size)
        cli.ToStdout("  Free: %d (%.2f%%)", free_count,
                     100 * float(free_count) / float(size))
        cli.ToStdout("  Usage map:")
        for idx in range(0, len(mapping), 64):
            cli.ToStdout("     %s %s %d", str(idx).rjust(4),
                         mapping[idx:idx + 64].ljust(64), idx + 63)
        cli.ToStdout("         (X) used    (.) free")
        if ext_res:
            cli.ToStdout("  externally reserved IPs:")
            for line in textwrap.wrap(ext_res, width=64):
                cli.ToStdout("    %s", line)
        if group_list:
            cli.ToStdout("  connected to node groups:")
            for group, mode, link, vlan in group_list:
                cli.ToStdout("    %s (mode:%s link:%s vlan:%s)", group, mode,
                             link, vlan)
        else:
            cli.ToStdout("  not connected to any node group")
        if instances:
            cli.ToStdout("  used by %d instances:", len(instances))
            for inst in instances:
                cli.ToStdout("    %s: %s", inst, _NicsOnNetwork(inst, uuid))
        else:
            cli.ToStdout("  not used by any instances")
    return constants.EXIT_SUCCESS


def SetNetworkParams(opts: Any, args: list[str]) -> int:
    changes = {
        "gateway": opts.gateway,
        "add_reserved_ips": _SplitIps(opts.add_reserved_ips),
        "remove_reserved_ips": _SplitIps(opts.remove_reserved_ips),
        "mac_prefix": opts.mac_prefix,
        "gateway6": opts.gateway6,
        "network6": opts.network6,
    }
    if all(value is None for value in changes.values()):
        cli.ToStderr("Please give at least one of the parameters.")
        return constants.EXIT_FAILURE
    cli.SubmitOrSend(opcodes.OpNetworkSetParams(network_name=args[0],
                                                **changes), opts)
    return constants.EXIT_SUCCESS


def RemoveNetwork(opts: Any, args: list[str]) -> int:
    (network_name,) = args
    cli.SubmitOrSend(opcodes.OpNetworkRemove(network_name=network_name,
                                             force=opts.force), opts)
    return constants.EXIT_SUCCESS


commands = {
    "add": (AddNetwork, ARGS_ONE_NETWORK,
            [NETWORK_OPT, GATEWAY_OPT, ADD_RESERVED_IPS_OPT, MAC_PREFIX_OPT,
             NETWORK6_OPT, GATEWAY6_OPT, NOCONFLICTSCHECK_OPT, TAG_ADD_OPT]
            + _JOB_OPTS,
            "<network-name>", "Add a new IP network to the cluster"),
    "list": (ListNetworks, ARGS_MANY_NETWORKS,
             [NOHDR_OPT, SEP_OPT, FIELDS_OPT, VERBOSE_OPT],
             "[<network-name>...]",
             "Lists the IP networks in the cluster. The available fields can"
             " be shown using the \"list-fields\" command (see the man page"
             " for details). The default list is (in order): %s." %
             ", ".join(_LIST_DEF_FIELDS)),
    "list-fields": (ListNetworkFields, [ArgUnknown()], [NOHDR_OPT, SEP_OPT],
                    "[<fields>...]", "Lists all available fields for"
                    " networks"),
    "info": (ShowNetworkConfig, ARGS_MANY_NETWORKS, [], "[<network>...]",
             "Show information about the network(s)"),
    "modify": (SetNetworkParams, ARGS_ONE_NETWORK,
               [ADD_RESERVED_IPS_OPT, REMOVE_RESERVED_IPS_OPT, GATEWAY_OPT,
                MAC_PREFIX_OPT, NETWORK6_OPT, GATEWAY6_OPT] + _JOB_OPTS,
               "<network>", "Alters the parameters of a network"),
    "connect": (ConnectNetwork, [ArgNetwork(min=1, max=1), ArgGroup()],
                [NOCONFLICTSCHECK_OPT, PRIORITY_OPT, NIC_PARAMS_OPT],
                "<network> [<group>...]",
                "Map a given network to the specified node group with given"
                " mode and link (netparams)"),
    "disconnect": (DisconnectNetwork, [ArgNetwork(min=1, max=1), ArgGroup()],
                   [PRIORITY_OPT], "<network> [<group>...]",
                   "Unmap a given network from a specified node group"),
    "remove": (RemoveNetwork, ARGS_ONE_NETWORK, [FORCE_OPT] + _JOB_OPTS,
               "[--dry-run] <network>",
               "Remove an (empty) network from the cluster"),
    "list-tags": (cli.ListTags, ARGS_ONE_NETWORK, [], "<network>",
                  "List the tags of the given network"),
    "add-tags": (cli.AddTags, [ArgNetwork(min=1, max=1), ArgUnknown()],
                 [TAG_SRC_OPT] + _JOB_OPTS, "<network> <tag>...",
                 "Add tags to the given network"),
    "remove-tags": (cli.RemoveTags, [ArgNetwork(min=1, max=1), ArgUnknown()],
                    [TAG_SRC_OPT] + _JOB_OPTS, "<network> <tag>...",
                    "Remove tags from given network"),
}


def Main() -> int:
    return cli.GenericMain(commands,
                           override={"tag_type": constants.TAG_NETWORK})
