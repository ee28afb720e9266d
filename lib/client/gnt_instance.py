"""gnt-instance: create, remove, start, stop, reboot, list and show
instances."""

from typing import Any

from ganeti import cli, constants, errors, opcodes
from ganeti.cli_opts import (
    ALL_OPT, ARGS_MANY_INSTANCES, ARGS_ONE_INSTANCE, ArgInstance, ArgUnknown,
    BACKEND_OPT, DISK_OPT, DISK_TEMPLATE_OPT, DRY_RUN_OPT, FIELDS_OPT,
    FORCE_FILTER_OPT, FORCE_OPT, HVOPTS_OPT, HYPERVISOR_OPT, NET_OPT,
    NODE_PLACEMENT_OPT, NOHDR_OPT, OS_OPT, OSPARAMS_OPT, OpcodeOption,
    PRINT_JOBID_OPT, PRIORITY_OPT, SEP_OPT, SHUTDOWN_TIMEOUT_OPT, SUBMIT_OPT,
    TAG_SRC_OPT, UNITS_OPT, VERBOSE_OPT, ParseUnit, cli_option)

_Create = opcodes.OpInstanceCreate
_Startup = opcodes.OpInstanceStartup
_Shutdown = opcodes.OpInstanceShutdown
_Reboot = opcodes.OpInstanceReboot
_Remove = opcodes.OpInstanceRemove

# Ganeti's default list of fields for "list"
_LIST_DEF_FIELDS = ["name", "hypervisor", "os", "pnode", "status",
                    "oper_ram"]

# Subcommands taking default arguments from GNT_INSTANCE_<CMD>
_ENV_OVERRIDE = frozenset(["list"])

NOSTART_OPT = OpcodeOption(_Create, "start", "--no-start")
NOINSTALL_OPT = OpcodeOption(_Create, "no_install", "--no-install")
NONAMECHECK_OPT = OpcodeOption(_Create, "name_check", "--no-name-check")
NOIPCHECK_OPT = OpcodeOption(_Create, "ip_check", "--no-ip-check")
FILESTORE_DIR_OPT = OpcodeOption(_Create, "file_storage_dir",
                                 "--file-storage-dir", metavar="<DIR>")
FILESTORE_DRIVER_OPT = OpcodeOption(_Create, "file_driver", "--file-driver",
                                    metavar="<DRIVER>",
                                    type="choice",
                                    choices=sorted(constants.FILE_DRIVER))
FORCE_VARIANT_OPT = OpcodeOption(_Create, "force_variant",
                                 "--force-variant")
NONICS_OPT = cli_option("--no-nics", default=False, action="store_true",
                        help="Create the instance without network"
                        " interfaces")
TAGS_OPT = cli_option("--tags", dest="tags", default=None,
                      help="Comma-separated list of instance tags")
IGNORE_OFFLINE_OPT = OpcodeOption(_Startup, "ignore_offline_nodes",
                                  "--ignore-offline")
NOREMEMBER_OPT = OpcodeOption(_Startup, "no_remember", "--no-remember")
STARTUP_PAUSED_OPT = OpcodeOption(_Startup, "startup_paused", "--paused")
SHUTDOWN_TIMEOUT_STOP_OPT = OpcodeOption(_Shutdown, "timeout", "--timeout",
                                         metavar="<SECONDS>")
REBOOT_TYPE_OPT = cli_option(
    "-t", "--type", dest="reboot_type", default=constants.INSTANCE_REBOOT_HARD,
    choices=sorted(constants.REBOOT_TYPES), metavar="<REBOOT>",
    help="Type of reboot: soft/hard/full")
IGNORE_SECONDARIES_OPT = OpcodeOption(_Reboot, "ignore_secondaries",
                                      "--ignore-secondaries")
IGNORE_FAILURES_OPT = OpcodeOption(_Remove, "ignore_failures",
                                   "--ignore-failures")
STATIC_OPT = cli_option("-s", "--static", dest="static", default=False,
                        action="store_true",
                        help="Only show configuration data, not runtime"
                        " data")

_JOB_OPTS = [SUBMIT_OPT, PRINT_JOBID_OPT, PRIORITY_OPT, DRY_RUN_OPT]


# Creation ------------------------------------------------------------------

def _IndexedDicts(what: str, items: list[tuple]) -> list[dict]:
    """``--disk``/``--net`` values ``[(index, params), ...]`` as a list.

    Indices must form 0..n-1 (given in any order), each at most once.
    """
    result: dict[int, dict] = {}
    for ident, params in items:
        try:
            idx = int(ident)
        except (TypeError, ValueError):
            raise errors.OpPrereqError("Invalid %s index passed: %s" %
                                       (what, ident), errors.ECODE_INVAL)
        if idx < 0 or idx in result:
            raise errors.OpPrereqError("Invalid %s index passed: %s" %
                                       (what, ident), errors.ECODE_INVAL)
        if not isinstance(params, dict):
            raise errors.OpPrereqError("Invalid %s specification for index"
                                       " %d" % (what, idx),
                                       errors.ECODE_INVAL)
        result[idx] = params
    if sorted(result) != list(range(len(result))):
        raise errors.OpPrereqError("Missing %s index %d" %
                                   (what, min(set(range(len(result))) -
                                              set(result))),
                                   errors.ECODE_INVAL)
    return [result[idx] for idx in range(len(result))]


def ParseDisks(items: list[tuple]) -> list[dict]:
    """``--disk N:size=SIZE,mode=..,name=..`` values as opcode disks."""
    disks = _IndexedDicts("disk", items)
    for idx, disk in enumerate(disks):
        if "size" in disk:
            try:
                disk["size"] = ParseUnit(disk["size"])
            except errors.UnitParseError as err:
                raise errors.OpPrereqError("Invalid disk size for disk %d:"
                                           " %s" % (idx, err),
                                           errors.ECODE_INVAL) from None
    return disks


def AddInstance(opts: Any, args: list[str]) -> int:
    """Create an instance (the OpInstanceCreate opcode)."""
    if not opts.node:
        raise errors.OpPrereqError("A primary node must be given with -n",
                                   errors.ECODE_INVAL)
    pnode, _, snode = opts.node.partition(":")
    if opts.no_nics and opts.nics:
        raise errors.OpPrereqError("Cannot specify --net and --no-nics",
                                   errors.ECODE_INVAL)
    nics = [] if opts.no_nics else (_IndexedDicts("NIC", opts.nics) or [{}])
    hypervisor, hvparams = opts.hypervisor or (None, {})
    if hvparams is None or hvparams is False:
        raise errors.OpPrereqError("Invalid hypervisor parameters for %s" %
                                   hypervisor, errors.ECODE_INVAL)
    op = opcodes.OpInstanceCreate(
        instance_name=args[0], mode=constants.INSTANCE_CREATE,
        disks=ParseDisks(opts.disks), nics=nics,
        disk_template=opts.disk_template, pnode=pnode, snode=snode or None,
        hypervisor=hypervisor, hvparams=hvparams, beparams=opts.beparams,
        os_type=opts.os, osparams=opts.osparams,
        force_variant=opts.force_variant, no_install=opts.no_install,
        name_check=opts.name_check, ip_check=opts.ip_check,
        file_storage_dir=opts.file_storage_dir, file_driver=opts.file_driver,
        start=opts.start,
        tags=opts.tags.split(",") if opts.tags else [])
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


# Lifecycle -----------------------------------------------------------------

def RemoveInstance(opts: Any, args: list[str]) -> int:
    """Stop an instance and remove it with its disks (asks unless -f)."""
    name = args[0]
    if not opts.force:
        question = ("This will remove the volumes of the instance %s"
                    " (including mirrors), thus removing all the data"
                    " of the instance. Continue?" % name)
        if not cli.AskUser(question):
            return constants.EXIT_CONFIRMATION
    op = opcodes.OpInstanceRemove(instance_name=name,
                                  ignore_failures=opts.ignore_failures,
                                  shutdown_timeout=opts.shutdown_timeout)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def _RunForEach(opts: Any, args: list[str], make_op: Any) -> int:
    """Submit one job per named instance, in order; fail on the first
    failure."""
    if not args:
        raise errors.OpPrereqError("No instance selected",
                                   errors.ECODE_INVAL)
    for name in args:
        cli.SubmitOrSend(make_op(name), opts)
    return constants.EXIT_SUCCESS


def StartupInstance(opts: Any, args: list[str]) -> int:
    return _RunForEach(opts, args, lambda name: opcodes.OpInstanceStartup(
        instance_name=name, force=opts.force,
        ignore_offline_nodes=opts.ignore_offline_nodes,
        hvparams=opts.hvparams, beparams=opts.beparams,
        no_remember=opts.no_remember, startup_paused=opts.startup_paused))


def ShutdownInstance(opts: Any, args: list[str]) -> int:
    return _RunForEach(opts, args, lambda name: opcodes.OpInstanceShutdown(
        instance_name=name, force=opts.force,
        ignore_offline_nodes=opts.ignore_offline_nodes,
        timeout=opts.timeout, no_remember=opts.no_remember))


def RebootInstance(opts: Any, args: list[str]) -> int:
    return _RunForEach(opts, args, lambda name: opcodes.OpInstanceReboot(
        instance_name=name, reboot_type=opts.reboot_type,
        ignore_secondaries=opts.ignore_secondaries,
        shutdown_timeout=opts.shutdown_timeout))


# Listing -------------------------------------------------------------------

def ListInstances(opts: Any, args: list[str]) -> int:
    fields = cli.ParseFields(opts.output, _LIST_DEF_FIELDS)
    joined = (lambda values: ",".join(str(value) for value in values),
              False)
    fmtoverride = dict.fromkeys(
        ["tags", "disk.sizes", "nic.macs", "nic.ips", "nic.modes",
         "nic.links", "nic.bridges", "nic.names", "nic.uuids", "snodes",
         "snodes.group", "snodes.group.uuid", "disk.names", "disk.uuids"],
        joined)
    return cli.GenericList(constants.QR_INSTANCE, fields, args, opts.units,
                           opts.separator, not opts.no_headers,
                           format_override=fmtoverride, verbose=opts.verbose,
                           force_filter=opts.force_filter)


def ListInstanceFields(opts: Any, args: list[str]) -> int:
    return cli.GenericListFields(constants.QR_INSTANCE, args, opts.separator,
                                 not opts.no_headers)


_INFO_FIELDS = ["name", "uuid", "serial_no", "ctime", "mtime",
                "admin_state", "oper_state", "pnode", "pnode.group",
                "pnode.group.uuid", "snodes", "os", "osparams",
                "custom_osparams", "network_port", "hypervisor", "hvparams",
                "custom_hvparams", "beparams", "custom_beparams",
                "disk_template", "nic.macs", "nic.ips", "nic.modes",
                "nic.links", "nic.vlans", "nic.names", "nic.uuids",
                "disk.sizes", "disk.names", "disk.uuids", "tags"]


def _FormatNics(macs: list, ips: list, modes: list, links: list,
                vlans: list, names: list, uuids: list) -> list:
    return [{"nic/%d" % idx: [("MAC", mac), ("IP", ip), ("mode", mode),
                              ("link", link), ("vlan", vlan),
                              ("name", name), ("UUID", uuid)]}
            for idx, (mac, ip, mode, link, vlan, name, uuid)
            in enumerate(zip(macs, ips, modes, links, vlans, names, uuids))]


def _FormatDisks(template: str, sizes: list, names: list,
                 uuids: list) -> list:
    return [{"disk/%d" % idx: [("type", template),
                               ("size", cli.FormatUnit(size, "h")),
                               ("name", name), ("UUID", uuid)]}
            for idx, (size, name, uuid) in enumerate(zip(sizes, names,
                                                         uuids))]


def _FormatInstanceInfo(row: list, static: bool) -> list[tuple[str, Any]]:
    info = dict(zip(_INFO_FIELDS, row))
    if static or info["oper_state"] is None:
        state = "configured to be %s" % info["admin_state"]
    else:
        state = "configured to be %s, actual state is %s" % (
            info["admin_state"], "up" if info["oper_state"] else "down")
    nodes = [[("primary", info["pnode"]),
              ("group", "%s (UUID %s)" % (info["pnode.group"],
                                         info["pnode.group.uuid"]))],
             [("secondaries", ", ".join(info["snodes"] or []))]]
    return [
        ("Instance name", info["name"]),
        ("UUID", info["uuid"]),
        ("Serial number", info["serial_no"]),
        ("Creation time", cli.FormatTime(info["ctime"])),
        ("Modification time", cli.FormatTime(info["mtime"])),
        ("State", state),
        ("Nodes", nodes),
        ("Operating system", info["os"]),
        ("Operating system parameters",
         cli.FormatParamsDictInfo(info["custom_osparams"] or {},
                              info["osparams"] or {})),
        ("Allocated network port", info["network_port"]),
        ("Hypervisor", info["hypervisor"]),
        ("Hypervisor parameters",
         cli.FormatParamsDictInfo(info["custom_hvparams"] or {},
                              info["hvparams"] or {})),
        ("Back-end parameters",
         cli.FormatParamsDictInfo(info["custom_beparams"] or {},
                              info["beparams"] or {})),
        ("NICs", _FormatNics(info["nic.macs"], info["nic.ips"],
                             info["nic.modes"], info["nic.links"],
                             info["nic.vlans"], info["nic.names"],
                             info["nic.uuids"])),
        ("Disk template", info["disk_template"]),
        ("Disks", _FormatDisks(info["disk_template"], info["disk.sizes"],
                               info["disk.names"], info["disk.uuids"])),
        ("Tags", ", ".join(info["tags"] or [])),
    ]


def ShowInstanceConfig(opts: Any, args: list[str]) -> int:
    """Show the configuration (and state) of instances."""
    if not args and not opts.show_all:
        cli.ToStderr("No instance selected. Please pass in --all if you"
                     " want to query all instances.")
        return constants.EXIT_FAILURE
    if args and opts.show_all:
        cli.ToStderr("Cannot use --all if you specify instance names.")
        return constants.EXIT_FAILURE
    fields = list(_INFO_FIELDS)
    if opts.static:
        fields[fields.index("oper_state")] = "admin_up"
    rows = cli.QueryRows(constants.QR_INSTANCE, fields, args)
    if not rows:
        cli.ToStderr("No instances.")
        return constants.EXIT_FAILURE
    cli.PrintGenericInfo([_FormatInstanceInfo(row, opts.static)
                      for row in rows])
    return constants.EXIT_SUCCESS


_ADD_OPTS = [
    DISK_TEMPLATE_OPT, NODE_PLACEMENT_OPT, OS_OPT, DISK_OPT, NET_OPT,
    NONICS_OPT, HYPERVISOR_OPT, BACKEND_OPT, OSPARAMS_OPT, NOSTART_OPT,
    NOINSTALL_OPT, NONAMECHECK_OPT, NOIPCHECK_OPT, FILESTORE_DIR_OPT,
    FILESTORE_DRIVER_OPT, FORCE_VARIANT_OPT, TAGS_OPT,
]

commands = {
    "add": (AddInstance, ARGS_ONE_INSTANCE, _ADD_OPTS + _JOB_OPTS,
            "[...] -t disk-type -n node[:secondary-node] -o os-type"
            " <instance-name>",
            "Creates and adds a new instance to the cluster"),
    "remove": (RemoveInstance, ARGS_ONE_INSTANCE,
               [FORCE_OPT, SHUTDOWN_TIMEOUT_OPT, IGNORE_FAILURES_OPT] +
               _JOB_OPTS,
               "[-f] <instance-name>",
               "Shuts down the instance and removes it"),
    "startup": (StartupInstance, ARGS_MANY_INSTANCES,
                [FORCE_OPT, IGNORE_OFFLINE_OPT, HVOPTS_OPT, BACKEND_OPT,
                 NOREMEMBER_OPT, STARTUP_PAUSED_OPT] + _JOB_OPTS,
                "<instance-name>...", "Starts one or more instances"),
    "shutdown": (ShutdownInstance, ARGS_MANY_INSTANCES,
                 [FORCE_OPT, IGNORE_OFFLINE_OPT, SHUTDOWN_TIMEOUT_STOP_OPT,
                  NOREMEMBER_OPT] + _JOB_OPTS,
                 "<instance-name>...", "Stops one or more instances"),
    "reboot": (RebootInstance, ARGS_MANY_INSTANCES,
               [REBOOT_TYPE_OPT, IGNORE_SECONDARIES_OPT,
                SHUTDOWN_TIMEOUT_OPT] + _JOB_OPTS,
               "[-t soft|hard|full] <instance-name>...",
               "Reboots one or more instances"),
    "list": (ListInstances, ARGS_MANY_INSTANCES,
             [NOHDR_OPT, SEP_OPT, UNITS_OPT, FIELDS_OPT, VERBOSE_OPT,
              FORCE_FILTER_OPT],
             "[<instance-name>...]",
             "Lists the instances and their status. The available fields"
             " can be shown using the \"list-fields\" command (see the man"
             " page for details). The default field list is (in order):"
             " %s." % ", ".join(_LIST_DEF_FIELDS)),
    "list-fields": (ListInstanceFields, [ArgUnknown()], [NOHDR_OPT, SEP_OPT],
                    "[fields...]", "Lists all available fields for instances"),
    "info": (ShowInstanceConfig, ARGS_MANY_INSTANCES,
             [STATIC_OPT, ALL_OPT],
             "[-s] {--all | <instance-name>...}",
             "Show information on the specified instance(s)"),
    "list-tags": (cli.ListTags, ARGS_ONE_INSTANCE, [], "<instance-name>",
                  "List the tags of the given instance"),
    "add-tags": (cli.AddTags, [ArgInstance(min=1, max=1), ArgUnknown()],
                 [TAG_SRC_OPT] + _JOB_OPTS, "<instance-name> tag...",
                 "Add tags to the given instance"),
    "remove-tags": (cli.RemoveTags, [ArgInstance(min=1, max=1),
                                     ArgUnknown()],
                    [TAG_SRC_OPT] + _JOB_OPTS, "<instance-name> tag...",
                    "Remove tags from given instance"),
}

aliases = {"start": "startup", "stop": "shutdown", "show": "info"}


def Main() -> int:
    return cli.GenericMain(commands, aliases=aliases,
                           override={"tag_type": constants.TAG_INSTANCE},
                           env_override=_ENV_OVERRIDE)
