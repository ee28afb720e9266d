"""Ganeti instance administration: create, remove, start, stop, reboot,
list and show instances.

Some commands live in helper modules: info (_instance_info), the instance
selection of the commands acting on many (_instance_multi), and the ones
moving an instance or its disks (_instance_placement).
"""

import shlex
from typing import Any

from ganeti import cli, constants, errors, ht, opcodes, serializer
from ganeti.client import _instance_info, _instance_multi
from ganeti.client._instance_placement import (
    ALLOW_FAILOVER_OPT, AUTO_REPLACE_OPT, CLEANUP_OPT, DISKIDX_OPT,
    IGNORE_HVVERSIONS_OPT, NEW_SECONDARY_OPT, ON_PRIMARY_OPT,
    ON_SECONDARY_OPT, REPLACE_EARLY_RELEASE_OPT, REPLACE_IGNORE_IPOLICY_OPT,
    ChangeGroup, FailoverInstance, MigrateInstance, MoveInstance,
    ReplaceDisks)
from ganeti.parameters.hypervisors import HVC_GLOBALS
from ganeti.cli_opts import (
    ARGS_MANY_INSTANCES, ARGS_ONE_INSTANCE, ArgFile, ArgInstance,
    ArgUnknown, BACKEND_OPT, DISK_OPT, DISK_TEMPLATE_OPT, DRY_RUN_OPT,
    DST_NODE_OPT, EARLY_RELEASE_OPT,
    COMPRESS_OPT, SINGLE_NODE_OPT,
    FIELDS_OPT, FORCE_FILTER_OPT, FORCE_OPT, HYPERVISOR_OPT,
    IALLOCATOR_OPT, IGNORE_CONSIST_OPT, IGNORE_IPOLICY_OPT, MIGRATION_MODE_OPT,
    NET_OPT, NODE_PLACEMENT_OPT, NOHDR_OPT, NONLIVE_OPT,
    NOCONFLICTSCHECK_OPT, NORUNTIME_CHGS_OPT, NWSYNC_OPT, OSPARAMS_OPT,
    OSPARAMS_PRIVATE_OPT, OSPARAMS_SECRET_OPT, OS_OPT, OS_SIZE_OPT,
    OpcodeOption, PRINT_JOBID_OPT, PRIORITY_OPT, ParamsOption, ParseUnit,
    SEP_OPT,
    SHUTDOWN_TIMEOUT_OPT, SUBMIT_OPT, TAG_SRC_OPT, TO_GROUP_OPT, UNITS_OPT,
    VERBOSE_OPT, cli_option)

_Create = opcodes.OpInstanceCreate
_Startup = opcodes.OpInstanceStartup
_Shutdown = opcodes.OpInstanceShutdown
_Reboot = opcodes.OpInstanceReboot
_Remove = opcodes.OpInstanceRemove

# Ganeti's default list of fields for "list"
_LIST_DEF_FIELDS = ["name", "hypervisor", "os", "pnode", "status",
                    "oper_ram"]
# What a batch-create definition file holds
_INST_DATA_VAL = ht.TListOf(ht.TDict)

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
OPPORTUNISTIC_LOCKING_OPT = OpcodeOption(_Create, "opportunistic_locking",
                                         "--opportunistic-locking")
EXPLAIN_OPT = OpcodeOption(_Create, "explain", "--explain")
MEMBER_OF_OPT = OpcodeOption(_Create, "member_of", "--member-of",
                             action="append", metavar="VALUE")
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
STARTUP_HVPARAMS_OPT = ParamsOption(_Startup, "hvparams", "hypervisor",
                                    per_ident=False, exclude=HVC_GLOBALS)
STARTUP_BEPARAMS_OPT = ParamsOption(_Startup, "beparams", "backend")
REBOOT_TYPE_OPT = OpcodeOption(_Reboot, "reboot_type", "-t", "--type",
                               default=constants.INSTANCE_REBOOT_HARD,
                               metavar="<REBOOT>")
IGNORE_SECONDARIES_OPT = OpcodeOption(_Reboot, "ignore_secondaries",
                                      "--ignore-secondaries")
IGNORE_FAILURES_OPT = OpcodeOption(_Remove, "ignore_failures",
                                   "--ignore-failures")
SHOWCMD_OPT = cli_option("--show-cmd", dest="show_command", default=False,
                         action="store_true",
                         help="Show the command to connect instead of"
                         " running it (gnt-instance console always does)")

_JOB_OPTS = [SUBMIT_OPT, PRINT_JOBID_OPT, PRIORITY_OPT, DRY_RUN_OPT]
_MULTI_OPTS = [_instance_multi.FORCE_MULTI_OPT] + _instance_multi.SELECT_OPTS


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


def ParseNics(items: list[tuple]) -> list[dict]:
    """``--net N:mac=..,link=..`` values as opcode NICs."""
    return _IndexedDicts("NIC", items)


def AddInstance(opts: Any, args: list[str]) -> int:
    """Create an instance (the OpInstanceCreate opcode)."""
    if opts.node and opts.iallocator:
        raise errors.OpPrereqError("Specify either an iallocator (-I) or"
                                   " nodes (-n), not both",
                                   errors.ECODE_INVAL)
    # Without -n the allocator (-I, or the cluster's default) places it
    pnode, _, snode = (opts.node or "").partition(":")
    if opts.no_nics and opts.nics:
        raise errors.OpPrereqError("Cannot specify --net and --no-nics",
                                   errors.ECODE_INVAL)
    nics = [] if opts.no_nics else (_IndexedDicts("NIC", opts.nics) or [{}])
    if opts.disks and opts.sd_size is not None:
        raise errors.OpPrereqError("Please use either the '--disk' or"
                                   " '-s' option", errors.ECODE_INVAL)
    disks = ParseDisks(opts.disks) if opts.sd_size is None else \
        [{"size": opts.sd_size}]
    hypervisor, hvparams = opts.hypervisor or (None, {})
    if hvparams is None or hvparams is False:
        raise errors.OpPrereqError("Invalid hypervisor parameters for %s" %
                                   hypervisor, errors.ECODE_INVAL)
    op = opcodes.OpInstanceCreate(
        instance_name=args[0], mode=constants.INSTANCE_CREATE,
        disks=disks, nics=nics,
        disk_template=opts.disk_template, pnode=pnode or None,
        snode=snode or None, iallocator=opts.iallocator,
        opportunistic_locking=opts.opportunistic_locking,
        explain=opts.explain, member_of=opts.member_of,
        hypervisor=hypervisor, hvparams=hvparams, beparams=opts.beparams,
        os_type=opts.os, osparams=opts.osparams,
        osparams_private=opts.osparams_private,
        osparams_secret=opts.osparams_secret,
        force_variant=opts.force_variant, no_install=opts.no_install,
        name_check=opts.name_check, ip_check=opts.ip_check,
        file_storage_dir=opts.file_storage_dir, file_driver=opts.file_driver,
        start=opts.start, wait_for_sync=opts.wait_for_sync,
        tags=opts.tags.split(",") if opts.tags else [],
        ignore_ipolicy=opts.ignore_ipolicy,
        conflicts_check=opts.conflicts_check)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def BatchCreate(opts: Any, args: list[str]) -> int:
    """Create the instances a JSON file describes (a list of
    OpInstanceCreate parameter dicts), placed by one allocator run
    (OP_INSTANCE_MULTI_ALLOC), and wait for the creation jobs."""
    (json_filename,) = args
    cl = cli.GetClient()
    try:
        with open(json_filename) as fobj:
            instance_data = serializer.LoadJson(fobj.read())
    except (OSError, ValueError) as err:
        cli.ToStderr("Can't parse the instance definition file: %s" % err)
        return constants.EXIT_FAILURE
    if not _INST_DATA_VAL(instance_data):
        cli.ToStderr("The instance definition file is not %s" %
                     _INST_DATA_VAL)
        return constants.EXIT_FAILURE
    possible = {param[0] for param in _Create.GetAllParams()}
    instances = []
    for idx, inst in enumerate(instance_data):
        unknown = sorted(set(inst) - possible)
        if unknown:
            raise errors.OpPrereqError("Unknown fields in definition %s: %s"
                                       % (idx, ", ".join(unknown)),
                                       errors.ECODE_INVAL)
        create = _Create(**inst)
        create.Validate(False)
        instances.append(create)
    op = opcodes.OpInstanceMultiAlloc(iallocator=opts.iallocator,
                                      instances=instances)
    return cli.FollowUpJobsExit(
        op, opts, cl, "There were %s errors during the creation.",
        "All instances created successfully.")


# Lifecycle -----------------------------------------------------------------

def RemoveInstance(opts: Any, args: list[str]) -> int:
    """Stop an instance and remove it with its disks (asks unless -f)."""
    name = args[0]
    if not opts.force:
        question = ("This will remove the volumes of the instance %s"
                    " (including mirrors), thus removing all the data"
                    " of the instance. Continue?" % name)
        if not cli.AskUser(question, skip_option=FORCE_OPT):
            return constants.EXIT_FAILURE
    op = opcodes.OpInstanceRemove(instance_name=name,
                                  ignore_failures=opts.ignore_failures,
                                  shutdown_timeout=opts.shutdown_timeout)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def _StartupOp(opts: Any, name: str) -> opcodes.OpInstanceStartup:
    return opcodes.OpInstanceStartup(
        instance_name=name, force=opts.force,
        ignore_offline_nodes=opts.ignore_offline_nodes,
        hvparams=opts.hvparams, beparams=opts.beparams,
        no_remember=opts.no_remember, startup_paused=opts.startup_paused)


def _ShutdownOp(opts: Any, name: str) -> opcodes.OpInstanceShutdown:
    return opcodes.OpInstanceShutdown(
        instance_name=name, force=opts.force,
        ignore_offline_nodes=opts.ignore_offline_nodes,
        timeout=opts.timeout, no_remember=opts.no_remember)


def _RebootOp(opts: Any, name: str) -> opcodes.OpInstanceReboot:
    return opcodes.OpInstanceReboot(
        instance_name=name, reboot_type=opts.reboot_type,
        ignore_secondaries=opts.ignore_secondaries,
        shutdown_timeout=opts.shutdown_timeout)


# Disks ---------------------------------------------------------------------

_Grow = opcodes.OpInstanceGrowDisk
_Activate = opcodes.OpInstanceActivateDisks

ABSOLUTE_OPT = OpcodeOption(_Grow, "absolute", "--absolute")
IGNORE_SIZE_OPT = OpcodeOption(_Activate, "ignore_size", "--ignore-size")
WFSYNC_OPT = OpcodeOption(_Activate, "wait_for_sync", "--wait-for-sync")


def ActivateDisks(opts: Any, args: list[str]) -> int:
    """Activate an instance's disks; prints node:disk/N:device lines."""
    op = opcodes.OpInstanceActivateDisks(instance_name=args[0],
                                         ignore_size=opts.ignore_size,
                                         wait_for_sync=opts.wait_for_sync)
    for host, iv_name, dev_path in cli.SubmitOrSend(op, opts):
        cli.ToStdout("%s:%s:%s", host, iv_name, dev_path)
    return constants.EXIT_SUCCESS


def DeactivateDisks(opts: Any, args: list[str]) -> int:
    op = opcodes.OpInstanceDeactivateDisks(instance_name=args[0],
                                           force=opts.force)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def _ParseRecreateDisks(items: list[tuple]) -> list[tuple[int, dict]]:
    """``--disk N[:size=..,mode=..]`` values as ``[(index, changes)]``."""
    result = []
    for ident, params in items:
        try:
            idx = int(ident)
        except (TypeError, ValueError):
            raise errors.OpPrereqError("Invalid disk index passed: %s" %
                                       ident, errors.ECODE_INVAL) from None
        if not isinstance(params, dict):
            raise errors.OpPrereqError("Invalid disk/%d value: expected dict,"
                                       " got %s" % (idx, params),
                                       errors.ECODE_INVAL)
        params = dict(params)
        if "size" in params:
            try:
                params["size"] = ParseUnit(params["size"])
            except errors.UnitParseError as err:
                raise errors.OpPrereqError("Invalid disk size for disk %d:"
                                           " %s" % (idx, err),
                                           errors.ECODE_INVAL) from None
        if "spindles" in params:
            try:
                params["spindles"] = int(params["spindles"])
            except (TypeError, ValueError) as err:
                raise errors.OpPrereqError("Invalid spindles for disk %d: %s"
                                           % (idx, err),
                                           errors.ECODE_INVAL) from None
        result.append((idx, params))
    return result


def RecreateDisks(opts: Any, args: list[str]) -> int:
    """Recreate an instance's missing disks, optionally on other nodes."""
    nodes = []
    if opts.node:
        if opts.iallocator:
            raise errors.OpPrereqError("At most one of either --nodes or"
                                       " --iallocator can be passed",
                                       errors.ECODE_INVAL)
        pnode, _, snode = opts.node.partition(":")
        nodes = [pnode] + ([snode] if snode else [])
    op = opcodes.OpInstanceRecreateDisks(
        instance_name=args[0], disks=_ParseRecreateDisks(opts.disks),
        nodes=nodes, iallocator=opts.iallocator)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def GrowDisk(opts: Any, args: list[str]) -> int:
    """Grow disk DISK of an instance by (or, --absolute, to) AMOUNT."""
    instance, disk, amount = args
    try:
        disk_index = int(disk)
    except ValueError as err:
        raise errors.OpPrereqError("Invalid disk index: %s" % err,
                                   errors.ECODE_INVAL) from None
    try:
        size = ParseUnit(amount)
    except errors.UnitParseError:
        raise errors.OpPrereqError("Can't parse the given amount '%s'" %
                                   amount, errors.ECODE_INVAL) from None
    op = opcodes.OpInstanceGrowDisk(instance_name=instance, disk=disk_index,
                                    amount=size,
                                    wait_for_sync=opts.wait_for_sync,
                                    absolute=opts.absolute,
                                    ignore_ipolicy=opts.ignore_ipolicy)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


# Modification --------------------------------------------------------------

_SetParams = opcodes.OpInstanceSetParams

OFFLINE_INST_OPT = cli_option("--offline", dest="offline_inst",
                              default=False, action="store_true",
                              help="Marks the instance as offline")
ONLINE_INST_OPT = cli_option("--online", dest="online_inst", default=False,
                             action="store_true",
                             help="Marks the instance as online")
RUNTIME_MEM_OPT = OpcodeOption(_SetParams, "runtime_mem", "-m",
                               "--runtime-memory", type="unit",
                               metavar="<size>")
MODIFY_HVPARAMS_OPT = ParamsOption(_SetParams, "hvparams", "hypervisor",
                                   per_ident=False, exclude=HVC_GLOBALS)
MODIFY_BEPARAMS_OPT = ParamsOption(_SetParams, "beparams", "backend")
NEW_PRIMARY_OPT = OpcodeOption(_SetParams, "pnode", "--new-primary",
                               metavar="<node>")
_DEVICE_ACTIONS = (constants.DDM_ADD, constants.DDM_MODIFY,
                   constants.DDM_REMOVE)


def ConvertDeviceMods(what: str, mods: list[tuple]) -> list[list]:
    """``--disk``/``--net`` values of modify as opcode changes.

    "add:..." and "remove" work on the end of the list (index -1);
    "N:..." modifies device N, and "N:add,..." or "N:remove" name the
    operation explicitly. Disk sizes are parsed (M, G, T suffixes).
    """
    result = []
    for ident, params in mods:
        if not isinstance(params, dict):
            raise errors.OpPrereqError("Invalid %s specification '%s'" %
                                       (what, ident), errors.ECODE_INVAL)
        params = dict(params)
        if ident in (constants.DDM_ADD, constants.DDM_REMOVE):
            action, ident = ident, -1
        else:
            given = [name for name in _DEVICE_ACTIONS if name in params]
            if len(given) > 1:
                raise errors.OpPrereqError(
                    "Cannot do more than one of the following operations at"
                    " the same time: %s" % ", ".join(_DEVICE_ACTIONS),
                    errors.ECODE_INVAL)
            action = given[0] if given else constants.DDM_MODIFY
            for name in given:
                del params[name]
        if action == constants.DDM_REMOVE and params:
            raise errors.OpPrereqError("Not accepting parameters on removal",
                                       errors.ECODE_INVAL)
        if what == "disk" and "size" in params:
            try:
                params["size"] = ParseUnit(params["size"])
            except errors.UnitParseError as err:
                raise errors.OpPrereqError("Invalid disk size for disk %s:"
                                           " %s" % (ident, err),
                                           errors.ECODE_INVAL) from None
        result.append([action, ident, params])
    return result


def _DefaultValues(params: dict) -> dict:
    """"default" in any case resets a parameter, as in Ganeti."""
    return {key: (constants.VALUE_DEFAULT if isinstance(value, str) and
                  value.lower() == constants.VALUE_DEFAULT else value)
            for key, value in params.items()}


def SetInstanceParams(opts: Any, args: list[str]) -> int:
    """Change an instance's parameters; print what changed."""
    if not (opts.nics or opts.disks or opts.disk_template or opts.hvparams or
            opts.beparams or opts.os or opts.osparams or opts.offline_inst or
            opts.online_inst or opts.runtime_mem or opts.pnode):
        cli.ToStderr("Please give at least one of the parameters.")
        return constants.EXIT_FAILURE
    if (opts.file_driver or opts.file_storage_dir) and \
            opts.disk_template not in constants.DTS_FILEBASED:
        cli.ToStderr("Specifying file-based configuration arguments requires"
                     " converting to a file-based disk template")
        return constants.EXIT_FAILURE
    if opts.offline_inst and opts.online_inst:
        raise errors.OpPrereqError("Can't use --offline and --online at the"
                                   " same time", errors.ECODE_INVAL)
    offline = True if opts.offline_inst else (False if opts.online_inst
                                               else None)
    op = opcodes.OpInstanceSetParams(
        instance_name=args[0], nics=ConvertDeviceMods("NIC", opts.nics),
        disks=ConvertDeviceMods("disk", opts.disks),
        hvparams=_DefaultValues(opts.hvparams),
        beparams=_DefaultValues(opts.beparams),
        runtime_mem=opts.runtime_mem, pnode=opts.pnode, os_name=opts.os,
        osparams=opts.osparams or None, force_variant=opts.force_variant,
        force=opts.force, offline=offline,
        ignore_ipolicy=opts.ignore_ipolicy,
        disk_template=opts.disk_template, remote_node=opts.node,
        file_driver=opts.file_driver, file_storage_dir=opts.file_storage_dir,
        wait_for_sync=opts.wait_for_sync,
        conflicts_check=opts.conflicts_check)
    result = cli.SubmitOrSend(op, opts)
    if result:
        cli.ToStdout("Modified instance %s", args[0])
        for param, value in result:
            cli.ToStdout(" - %-5s -> %s", param, value)
        cli.ToStdout("Please don't forget that most parameters take effect"
                     " only at the next (re)start of the instance initiated"
                     " by ganeti; restarting from within the instance will"
                     " not be enough.")
        if opts.hvparams:
            cli.ToStdout("Note that changing hypervisor parameters without"
                         " performing a restart might lead to a crash while"
                         " performing a live migration. This will be"
                         " addressed in future Ganeti versions.")
    return constants.EXIT_SUCCESS


# Rename, reinstall, console ------------------------------------------------

def RenameInstance(opts: Any, args: list[str]) -> int:
    """Rename a stopped instance (asks first without the name check,
    unless forced)."""
    if not opts.name_check and not opts.force:
        if not cli.AskUser("As you disabled the check of the DNS entry,"
                           " please verify that '%s' is a FQDN. Continue?" %
                           args[1]):
            return constants.EXIT_FAILURE
    op = opcodes.OpInstanceRename(instance_name=args[0], new_name=args[1],
                                  name_check=opts.name_check,
                                  ip_check=opts.ip_check)
    result = cli.SubmitOrSend(op, opts)
    if result:
        cli.ToStdout("Instance '%s' renamed to '%s'", args[0], result)
    return constants.EXIT_SUCCESS


def ReinstallInstance(opts: Any, args: list[str]) -> int:
    """Reinstall the OS of stopped instances (asks unless -f, or for
    several instances unless --force-multiple)."""
    client = cli.GetClient()
    names, multi_on = _instance_multi.SelectInstances(opts, args, client)
    os_msg = ("change the OS to '%s'" % opts.os if opts.os
              else "keep the same OS")
    if multi_on:
        if not (opts.force_multi or cli.ConfirmOperation(
                names, "instances", "reinstall",
                skip_option=_instance_multi.FORCE_MULTI_OPT,
                extra="Note: this will remove *all* data for the below"
                " instances! It will %s.\n" % os_msg)):
            return constants.EXIT_FAILURE
    elif not (opts.force or opts.force_multi):
        if not cli.AskUser("This will reinstall the instance '%s' (and %s)"
                           " which removes all data. Continue?" %
                           (names[0], os_msg), skip_option=FORCE_OPT):
            return constants.EXIT_FAILURE
    return _instance_multi.RunJobs(
        opts, names, lambda name: opcodes.OpInstanceReinstall(
            instance_name=name, os_type=opts.os,
            force_variant=opts.force_variant, osparams=opts.osparams,
            osparams_private=opts.osparams_private,
            osparams_secret=opts.osparams_secret), multi_on, client)


def _SshConsoleCommand(console: dict) -> str:
    """The ssh command line reaching an "ssh" console, shell-quoted."""
    command = console.get("command") or ""
    if not isinstance(command, str):
        command = shlex.join(str(arg) for arg in command)
    argv = ["ssh", "-oEscapeChar=none", "-oBatchMode=yes",
            "-oCheckHostIp=no", "-t"]
    if console.get("port"):
        argv.extend(["-p", str(console["port"])])
    host = console.get("host") or ""
    argv.append("%s@%s" % (console["user"], host) if console.get("user")
                else host)
    argv.append(command)
    return shlex.join(argv)


def FormatConsole(console: dict) -> str:
    """What gnt-instance console prints for an InstanceConsole dict."""
    kind = console.get("kind")
    if kind == constants.CONS_MESSAGE:
        return console.get("message") or ""
    if kind == constants.CONS_VNC:
        return ("Instance %s has VNC listening on %s:%s (display %s),"
                " URL <vnc://%s:%s/>" %
                (console.get("instance"), console.get("host"),
                 console.get("port"), console.get("display"),
                 console.get("host"), console.get("port")))
    if kind == constants.CONS_SPICE:
        return "Instance %s has SPICE listening on %s:%s" % (
            console.get("instance"), console.get("host"), console.get("port"))
    if kind == constants.CONS_SSH:
        return _SshConsoleCommand(console)
    raise errors.GenericError("Unknown console type '%s'" % kind)


def ConnectToInstanceConsole(opts: Any, args: list[str]) -> int:
    """Show how to reach the console of a running instance.

    For an "ssh" console Ganeti runs the ssh command unless --show-cmd is
    given. This implementation always prints the command instead, so the
    command needs no terminal (and works in scripts and tests): run the
    printed command to connect. --show-cmd is accepted for compatibility.
    """
    op = opcodes.OpInstanceConsole(instance_name=args[0])
    cli.ToStdout("%s", FormatConsole(cli.SubmitOpCode(op, opts=opts)))
    return constants.EXIT_SUCCESS


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


_ADD_OPTS = [
    DISK_TEMPLATE_OPT, NODE_PLACEMENT_OPT, OS_OPT, DISK_OPT, OS_SIZE_OPT,
    NET_OPT, NONICS_OPT, HYPERVISOR_OPT, BACKEND_OPT, OSPARAMS_OPT,
    OSPARAMS_PRIVATE_OPT, OSPARAMS_SECRET_OPT, NOSTART_OPT,
    NOINSTALL_OPT, NONAMECHECK_OPT, NOIPCHECK_OPT, FILESTORE_DIR_OPT,
    FILESTORE_DRIVER_OPT, FORCE_VARIANT_OPT, TAGS_OPT, IGNORE_IPOLICY_OPT,
    IALLOCATOR_OPT, OPPORTUNISTIC_LOCKING_OPT, EXPLAIN_OPT, MEMBER_OF_OPT,
    NWSYNC_OPT, NOCONFLICTSCHECK_OPT,
]

commands = {
    "add": (AddInstance, ARGS_ONE_INSTANCE, _ADD_OPTS + _JOB_OPTS,
            "[...] -t disk-type {-n node[:secondary-node] | -I alloc}"
            " -o os-type"
            " <instance-name>",
            "Creates and adds a new instance to the cluster"),
    "remove": (RemoveInstance, ARGS_ONE_INSTANCE,
               [FORCE_OPT, SHUTDOWN_TIMEOUT_OPT, IGNORE_FAILURES_OPT] +
               _JOB_OPTS,
               "[-f] <instance-name>",
               "Shuts down the instance and removes it"),
    "startup": (_instance_multi.GenericManyOps("startup", _StartupOp),
                ARGS_MANY_INSTANCES,
                [FORCE_OPT, IGNORE_OFFLINE_OPT, STARTUP_HVPARAMS_OPT,
                 STARTUP_BEPARAMS_OPT, NOREMEMBER_OPT, STARTUP_PAUSED_OPT] +
                _MULTI_OPTS + _JOB_OPTS,
                "<instance-name>...", "Starts one or more instances"),
    "shutdown": (_instance_multi.GenericManyOps("shutdown", _ShutdownOp),
                 ARGS_MANY_INSTANCES,
                 [FORCE_OPT, IGNORE_OFFLINE_OPT, SHUTDOWN_TIMEOUT_STOP_OPT,
                  NOREMEMBER_OPT] + _MULTI_OPTS + _JOB_OPTS,
                 "<instance-name>...", "Stops one or more instances"),
    "reboot": (_instance_multi.GenericManyOps("reboot", _RebootOp),
               ARGS_MANY_INSTANCES,
               [REBOOT_TYPE_OPT, IGNORE_SECONDARIES_OPT,
                SHUTDOWN_TIMEOUT_OPT] + _MULTI_OPTS + _JOB_OPTS,
               "[-t soft|hard|full] <instance-name>...",
               "Reboots one or more instances"),
    "activate-disks": (ActivateDisks, ARGS_ONE_INSTANCE,
                       [SUBMIT_OPT, PRINT_JOBID_OPT, IGNORE_SIZE_OPT,
                        PRIORITY_OPT, WFSYNC_OPT],
                       "<instance-name>", "Activate an instance's disks"),
    "deactivate-disks": (DeactivateDisks, ARGS_ONE_INSTANCE,
                         [FORCE_OPT] + _JOB_OPTS, "[-f] <instance-name>",
                         "Deactivate an instance's disks"),
    "recreate-disks": (RecreateDisks, ARGS_ONE_INSTANCE,
                       [DISK_OPT, NODE_PLACEMENT_OPT, IALLOCATOR_OPT] +
                       _JOB_OPTS,
                       "[-n node[:secondary-node]] [--disk=N[:size=VAL]"
                       "[,mode=ro|rw]] <instance-name>",
                       "Recreate an instance's disks"),
    "replace-disks": (ReplaceDisks, ARGS_ONE_INSTANCE,
                      [DISKIDX_OPT, IALLOCATOR_OPT, NEW_SECONDARY_OPT,
                       ON_PRIMARY_OPT, ON_SECONDARY_OPT, AUTO_REPLACE_OPT,
                       REPLACE_EARLY_RELEASE_OPT,
                       REPLACE_IGNORE_IPOLICY_OPT] + _JOB_OPTS,
                      "[-s|-p|-a|-n NODE|-I NAME] <instance-name>",
                      "Replaces disks for the instance"),
    "grow-disk": (GrowDisk, [ArgInstance(min=1, max=1),
                             ArgUnknown(min=1, max=1),
                             ArgUnknown(min=1, max=1)],
                  [NWSYNC_OPT, ABSOLUTE_OPT, IGNORE_IPOLICY_OPT] +
                  _JOB_OPTS,
                  "[--no-wait-for-sync] [--absolute] <instance-name> <disk>"
                  " <size>",
                  "Grow an instance's disk"),
    "modify": (SetInstanceParams, ARGS_ONE_INSTANCE,
               [MODIFY_BEPARAMS_OPT, DISK_OPT, FORCE_OPT,
                MODIFY_HVPARAMS_OPT, NET_OPT,
                OS_OPT, FORCE_VARIANT_OPT, OSPARAMS_OPT, OFFLINE_INST_OPT,
                ONLINE_INST_OPT, IGNORE_IPOLICY_OPT, RUNTIME_MEM_OPT,
                NEW_PRIMARY_OPT, DISK_TEMPLATE_OPT, SINGLE_NODE_OPT,
                NWSYNC_OPT, FILESTORE_DRIVER_OPT,
                FILESTORE_DIR_OPT, NOCONFLICTSCHECK_OPT] + _JOB_OPTS,
               "<instance-name>", "Alters the parameters of an instance"),
    "rename": (RenameInstance,
               [ArgInstance(min=1, max=1), ArgUnknown(min=1, max=1)],
               [FORCE_OPT, NOIPCHECK_OPT, NONAMECHECK_OPT] + _JOB_OPTS,
               "<old-name> <new-name>", "Rename the instance"),
    "reinstall": (ReinstallInstance, ARGS_MANY_INSTANCES,
                  [FORCE_OPT, OS_OPT, FORCE_VARIANT_OPT, OSPARAMS_OPT,
                   OSPARAMS_PRIVATE_OPT, OSPARAMS_SECRET_OPT] +
                  _MULTI_OPTS + _JOB_OPTS,
                  "[-f] {--all | <instance-name>...}",
                  "Reinstall stopped instances"),
    "console": (ConnectToInstanceConsole, ARGS_ONE_INSTANCE,
                [SHOWCMD_OPT, PRIORITY_OPT],
                "[--show-cmd] <instance-name>",
                "Opens a console on the specified instance (prints the"
                " command to run)"),
    "failover": (FailoverInstance, ARGS_ONE_INSTANCE,
                 [FORCE_OPT, IGNORE_CONSIST_OPT, SHUTDOWN_TIMEOUT_OPT,
                  DST_NODE_OPT, IALLOCATOR_OPT, IGNORE_IPOLICY_OPT,
                  MEMBER_OF_OPT] + _JOB_OPTS,
                 "[-f] [-n <target-node>] <instance-name>",
                 "Stops the instance, changes its primary node and (if it"
                 " was originally running) starts it on the new node (any"
                 " node for shared storage)."),
    "migrate": (MigrateInstance, ARGS_ONE_INSTANCE,
                [FORCE_OPT, NONLIVE_OPT, MIGRATION_MODE_OPT, CLEANUP_OPT,
                 DST_NODE_OPT, IALLOCATOR_OPT, ALLOW_FAILOVER_OPT,
                 IGNORE_IPOLICY_OPT, IGNORE_HVVERSIONS_OPT,
                 NORUNTIME_CHGS_OPT, MEMBER_OF_OPT] + _JOB_OPTS,
                "[-f] [-n <target-node>] <instance-name>",
                "Migrate instance to another node (only for mirrored"
                " instances)"),
    "move": (MoveInstance, ARGS_ONE_INSTANCE,
             [FORCE_OPT, SINGLE_NODE_OPT, COMPRESS_OPT, SHUTDOWN_TIMEOUT_OPT,
              IGNORE_CONSIST_OPT, IGNORE_IPOLICY_OPT, MEMBER_OF_OPT] +
             _JOB_OPTS,
             "[-f] -n <node> <instance-name>",
             "Move instance to an arbitrary node (only for instances of"
             " type file and lv)"),
    "batch-create": (BatchCreate, [ArgFile(min=1, max=1)],
                     [IALLOCATOR_OPT] + _JOB_OPTS, "<instances.json>",
                     "Create a bunch of instances based on specs in the"
                     " file."),
    "change-group": (ChangeGroup, ARGS_ONE_INSTANCE,
                     [TO_GROUP_OPT, IALLOCATOR_OPT, EARLY_RELEASE_OPT] +
                     _JOB_OPTS,
                     "[-I <iallocator>] [--to <group>] <instance-name>",
                     "Change group of instance"),
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
    "info": (_instance_info.ShowInstanceConfig, ARGS_MANY_INSTANCES,
             _instance_info.INFO_OPTS,
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
