"""Ganeti node administration: add, remove, list and change nodes."""

from typing import Any

from ganeti import cli, config, constants, errors, opcodes, utils
from ganeti.cli_opts import (
    ARGS_MANY_NODES, ARGS_ONE_NODE, ArgChoice, ArgHost, ArgNode, ArgUnknown,
    CONFIRM_OPT, DRY_RUN_OPT, DST_NODE_OPT, EARLY_RELEASE_OPT, FIELDS_OPT,
    FORCE_FILTER_OPT, FORCE_OPT,
    IALLOCATOR_OPT, IGNORE_CONSIST_OPT, IGNORE_IPOLICY_OPT, MIGRATION_MODE_OPT,
    MigrationModeFromOpts, NOHDR_OPT, NONLIVE_OPT, NORUNTIME_CHGS_OPT,
    OOB_TIMEOUT_OPT, OpcodeOption, POWER_DELAY_OPT, PRINT_JOBID_OPT,
    PRIORITY_OPT, ParamsOption, SEP_OPT,
    SUBMIT_OPT, TAG_SRC_OPT, UNITS_OPT, VERBOSE_OPT, cli_option)
from ganeti.monitoring import drbd

_Add = opcodes.OpNodeAdd
_SetParams = opcodes.OpNodeSetParams

# Ganeti's default list of fields for "list"
_LIST_DEF_FIELDS = ["name", "dtotal", "dfree", "mtotal", "mnode", "mfree",
                    "pinst_cnt", "sinst_cnt"]

# Subcommands taking default arguments from GNT_NODE_<CMD>
_ENV_OVERRIDE = frozenset(["list"])

_YES_NO = "yes|no"

# What failover and powercycle exit with when not confirmed (Ganeti's,
# rather than its EXIT_CONFIRMATION)
_EXIT_DECLINED = 2

# Options derived from the opcode declarations
SECONDARY_IP_OPT = OpcodeOption(_Add, "secondary_ip", "-s", "--secondary-ip",
                                metavar="ADDRESS")
READD_OPT = OpcodeOption(_Add, "readd", "--readd")
NODEGROUP_OPT = OpcodeOption(_Add, "group", "-g", "--node-group",
                             metavar="GROUP")
JOIN_KEY_OPT = OpcodeOption(_Add, "join_key", "--join-key", metavar="KEY")
ADD_NDPARAMS_OPT = ParamsOption(_Add, "ndparams", "node")
CAPAB_MASTER_OPT = OpcodeOption(_SetParams, "master_capable",
                                "--master-capable", type="bool",
                                action="store", metavar=_YES_NO)
CAPAB_VM_OPT = OpcodeOption(_SetParams, "vm_capable", "--vm-capable",
                            type="bool", action="store", metavar=_YES_NO)
MC_OPT = OpcodeOption(_SetParams, "master_candidate", "-C",
                      "--master-candidate", type="bool", action="store",
                      metavar=_YES_NO)
OFFLINE_OPT = OpcodeOption(_SetParams, "offline", "-O", "--offline",
                           type="bool", action="store", metavar=_YES_NO)
DRAINED_OPT = OpcodeOption(_SetParams, "drained", "-D", "--drained",
                           type="bool", action="store", metavar=_YES_NO)
AUTO_PROMOTE_OPT = OpcodeOption(_SetParams, "auto_promote",
                                "--auto-promote")
NEW_SECONDARY_IP_OPT = OpcodeOption(_SetParams, "secondary_ip", "-s",
                                    "--secondary-ip", metavar="ADDRESS")
NDPARAMS_OPT = ParamsOption(_SetParams, "ndparams", "node")
NODE_POWERED_OPT = OpcodeOption(_SetParams, "powered", "--node-powered",
                                type="bool", action="store", metavar=_YES_NO)
ADD_AGGREGATES_OPT = OpcodeOption(_SetParams, "add_aggregates",
                                  "--add-aggregates", metavar="AGG,...")
REMOVE_AGGREGATES_OPT = OpcodeOption(_SetParams, "remove_aggregates",
                                     "--remove-aggregates", metavar="AGG,...")
EVAC_MEMBER_OF_OPT = OpcodeOption(opcodes.OpNodeEvacuate, "member_of",
                                  "--member-of", action="append",
                                  metavar="VALUE")
EVAC_NODE_OPT = OpcodeOption(opcodes.OpNodeEvacuate, "remote_node", "-n",
                             "--new-secondary", dest="dst_node",
                             metavar="NODE")
IGNORE_SOFT_ERRORS_OPT = OpcodeOption(opcodes.OpNodeEvacuate,
                                      "ignore_soft_errors",
                                      "--ignore-soft-errors")
PRIMARY_ONLY_OPT = cli_option("-p", "--primary-only", default=False,
                              action="store_true",
                              help="Evacuate primary instances only")
SECONDARY_ONLY_OPT = cli_option("-s", "--secondary-only", default=False,
                                action="store_true",
                                help="Evacuate secondary instances only"
                                " (applies only to internally mirrored disk"
                                " templates, e.g. %s)" %
                                ", ".join(sorted(constants.DTS_INT_MIRROR)))

_JOB_OPTS = [SUBMIT_OPT, PRINT_JOBID_OPT, PRIORITY_OPT, DRY_RUN_OPT]

# volumes: Ganeti's columns and titles
_LIST_VOL_DEF_FIELDS = ["node", "phys", "vg", "name", "size", "instance"]
_LIST_VOL_HEADERS = {"node": "Node", "phys": "PhysDev", "vg": "VG",
                     "name": "Name", "size": "Size", "instance": "Instance"}
# list-storage: Ganeti's columns, titles and default field list
_LIST_STOR_HEADERS = {
    constants.SF_NODE: "Node",
    constants.SF_TYPE: "Type",
    constants.SF_NAME: "Name",
    constants.SF_SIZE: "Size",
    constants.SF_USED: "Used",
    constants.SF_FREE: "Free",
    constants.SF_ALLOCATABLE: "Allocatable",
}
_LIST_STOR_DEF_FIELDS = [constants.SF_NODE, constants.SF_TYPE,
                         constants.SF_NAME, constants.SF_SIZE,
                         constants.SF_USED, constants.SF_FREE,
                         constants.SF_ALLOCATABLE]
_STORAGE_SIZE_FIELDS = [constants.SF_SIZE, constants.SF_USED,
                        constants.SF_FREE]
# The storage types the commands take (Ganeti's); the master refuses
# those whose disk templates the cluster has not enabled, as Ganeti's does
_USER_STORAGE_TYPES = [constants.ST_FILE, constants.ST_LVM_PV,
                       constants.ST_LVM_VG, constants.ST_SHARED_FILE,
                       constants.ST_GLUSTER]
STORAGE_TYPE_OPT = OpcodeOption(
    opcodes.OpNodeQueryStorage, "storage_type", "-t", "--storage-type",
    type="choice", choices=_USER_STORAGE_TYPES, metavar="STORAGE_TYPE")
ALLOCATABLE_OPT = cli_option("--allocatable", dest="allocatable",
                             type="bool", default=None, metavar=_YES_NO,
                             help="Set the allocatable flag on a volume")


# Commands --------------------------------------------------------------------

def AddNode(opts: Any, args: list[str]) -> int:
    """Add a node (or re-add one with --readd)."""
    op = opcodes.OpNodeAdd(node_name=args[0], secondary_ip=opts.secondary_ip,
                           readd=opts.readd, group=opts.group,
                           master_capable=opts.master_capable,
                           vm_capable=opts.vm_capable,
                           ndparams=opts.ndparams or None,
                           join_key=opts.join_key)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def RemoveNode(opts: Any, args: list[str]) -> int:
    cli.SubmitOrSend(opcodes.OpNodeRemove(node_name=args[0]), opts)
    return constants.EXIT_SUCCESS


def ListNodes(opts: Any, args: list[str]) -> int:
    fields = cli.ParseFields(opts.output, _LIST_DEF_FIELDS)
    fmtoverride = dict.fromkeys(["pinst_list", "sinst_list", "tags"],
                                (",".join, False))
    return cli.GenericList(constants.QR_NODE, fields, args, opts.units,
                           opts.separator, not opts.no_headers,
                           format_override=fmtoverride, verbose=opts.verbose,
                           force_filter=opts.force_filter)


def ListNodeFields(opts: Any, args: list[str]) -> int:
    return cli.GenericListFields(constants.QR_NODE, args, opts.separator,
                                 not opts.no_headers)


_INFO_FIELDS = ["name", "pip", "sip", "pinst_list", "sinst_list",
                "master_candidate", "drained", "offline", "master_capable",
                "vm_capable", "powered", "group", "ndparams",
                "custom_ndparams"]


def _FormatNodeInfo(row: list) -> list[tuple[str, Any]]:
    (name, primary_ip, secondary_ip, pinst, sinst, is_mc, drained, offline,
     master_capable, vm_capable, powered, group, ndparams,
     custom_ndparams) = row
    info = [("Node name", name), ("primary ip", primary_ip),
            ("secondary ip", secondary_ip), ("master candidate", is_mc),
            ("drained", drained), ("offline", offline)]
    if powered is not None:
        info.append(("powered", powered))
    info += [("master_capable", master_capable),
             ("vm_capable", vm_capable), ("group", group)]
    if vm_capable:
        info += [("primary for instances", utils.NiceSort(pinst or [])),
                 ("secondary for instances", utils.NiceSort(sinst or []))]
    info.append(("node parameters",
                 cli.FormatParamsDictInfo(custom_ndparams or {},
                                      ndparams or {})))
    return info


def ShowNodeConfig(opts: Any, args: list[str]) -> int:
    """Show the nodes' flags, addresses, instances and parameters."""
    cli.PrintGenericInfo([_FormatNodeInfo(row) for row in
                      cli.QueryRows(constants.QR_NODE, _INFO_FIELDS, args)])
    return constants.EXIT_SUCCESS


def SetNodeParams(opts: Any, args: list[str]) -> int:
    """Change a node's flags and parameters; print what changed."""
    changes = [opts.master_candidate, opts.drained, opts.offline,
               opts.master_capable, opts.vm_capable, opts.secondary_ip,
               opts.ndparams or None, opts.powered, opts.add_aggregates,
               opts.remove_aggregates]
    if all(change is None for change in changes):
        cli.ToStderr("Please give at least one of the parameters.")
        return constants.EXIT_FAILURE
    op = opcodes.OpNodeSetParams(
        node_name=args[0], master_candidate=opts.master_candidate,
        offline=opts.offline, drained=opts.drained,
        master_capable=opts.master_capable, vm_capable=opts.vm_capable,
        secondary_ip=opts.secondary_ip, force=opts.force,
        ndparams=opts.ndparams or None, auto_promote=opts.auto_promote,
        powered=opts.powered, add_aggregates=opts.add_aggregates,
        remove_aggregates=opts.remove_aggregates)
    result = cli.SubmitOrSend(op, opts)
    if result:
        cli.ToStdout("Modified node %s", args[0])
        for param, value in result:
            cli.ToStdout(" - %-5s -> %s", param, value)
    return constants.EXIT_SUCCESS


def ListStorage(opts: Any, args: list[str]) -> int:
    """List the storage units (file storage directories) of nodes."""
    fields = cli.ParseFields(opts.output, _LIST_STOR_DEF_FIELDS)
    op = opcodes.OpNodeQueryStorage(nodes=args,
                                    storage_type=opts.storage_type,
                                    output_fields=fields)
    output = cli.SubmitOpCode(op, opts=opts)
    for row in output:
        for idx, field in enumerate(fields):
            if field == constants.SF_ALLOCATABLE:
                row[idx] = cli.FormatBool(row[idx])
    headers = None if opts.no_headers else _LIST_STOR_HEADERS
    for line in cli.GenerateTable(headers=headers, fields=fields,
                                  separator=opts.separator, data=output,
                                  numfields=_STORAGE_SIZE_FIELDS,
                                  unitfields=_STORAGE_SIZE_FIELDS,
                                  units=opts.units):
        cli.ToStdout("%s", line)
    return constants.EXIT_SUCCESS


def _StorageType(name: str) -> str:
    """A storage type named on the command line, checked as Ganeti's."""
    if name not in _USER_STORAGE_TYPES:
        raise errors.OpPrereqError("Unknown storage type: %s" % name,
                                   errors.ECODE_INVAL)
    return name


def ModifyStorage(opts: Any, args: list[str]) -> int:
    """Change a storage unit of a node (gnt-node modify-storage NODE TYPE
    NAME); without a change, nothing is done."""
    node_name, storage_type, name = args
    changes = {}
    if opts.allocatable is not None:
        changes[constants.SF_ALLOCATABLE] = opts.allocatable
    op = opcodes.OpNodeModifyStorage(node_name=node_name,
                                     storage_type=_StorageType(storage_type),
                                     name=name, changes=changes)
    if not changes:
        cli.ToStderr("No changes to perform, exiting.")
        return constants.EXIT_SUCCESS
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def RepairStorage(opts: Any, args: list[str]) -> int:
    """Repair a storage unit of a node (gnt-node repair-storage NODE TYPE
    NAME)."""
    node_name, storage_type, name = args
    cli.SubmitOrSend(opcodes.OpRepairNodeStorage(
        node_name=node_name, storage_type=_StorageType(storage_type),
        name=name, ignore_consistency=opts.ignore_consistency), opts)
    return constants.EXIT_SUCCESS


_POWER_COMMANDS = ["on", "off", "cycle", "status"]
# Power commands that ask first (unless -f) and need nodes named
_OOB_COMMAND_ASK = frozenset([constants.OOB_POWER_OFF,
                              constants.OOB_POWER_CYCLE])
_OOB_HEADERS = {"node": "Node", "status": "Status"}

IGNORE_STATUS_OPT = OpcodeOption(opcodes.OpOobCommand, "ignore_status",
                                 "--ignore-status",
                                 help="Ignore the Node(s) offline status"
                                 " (potentially DANGEROUS)")


def _PrintOobTable(opts: Any, rows: list[list[str]]) -> None:
    headers = None if opts.no_headers else _OOB_HEADERS
    for line in cli.GenerateTable(headers, ["node", "status"],
                                  opts.separator, rows):
        cli.ToStdout(line)


def PowerNode(opts: Any, args: list[str]) -> int:
    """Power nodes on, off or cycle, or show their power state, through
    their out-of-band program; powering off marks them offline first
    (unless --ignore-status)."""
    command, nodes = args[0], args[1:]
    if command not in _POWER_COMMANDS:
        cli.ToStderr("power subcommand %s not supported." % command)
        return constants.EXIT_FAILURE
    oob_command = "power-%s" % command
    if oob_command in _OOB_COMMAND_ASK:
        if not nodes:
            cli.ToStderr("Please provide at least one node for this command")
            return constants.EXIT_FAILURE
        if not opts.force and not cli.ConfirmOperation(
                nodes, "nodes", "power %s" % command, skip_option=FORCE_OPT):
            return constants.EXIT_FAILURE
    ops: list[opcodes.OpCode] = []
    if not opts.ignore_status and oob_command == constants.OOB_POWER_OFF:
        ops.extend(opcodes.OpNodeSetParams(node_name=node, offline=True,
                                           auto_promote=opts.auto_promote)
                   for node in nodes)
    ops.append(opcodes.OpOobCommand(node_names=nodes, command=oob_command,
                                    ignore_status=opts.ignore_status,
                                    timeout=opts.oob_timeout,
                                    power_delay=opts.power_delay))
    cli.SetGenericOpcodeOpts(ops, opts)
    result = cli.PollJob(cli.SendJob(ops))[-1]
    errs = 0
    rows = []
    for (_, node_name), (status, payload) in result:
        if status != constants.RS_NORMAL:
            errs += 1
            rows.append([node_name, cli.FormatResultError(status, True)])
        elif oob_command == constants.OOB_POWER_STATUS:
            rows.append([node_name,
                         "powered" if payload[
                             constants.OOB_POWER_STATUS_POWERED]
                         else "unpowered"])
        else:
            rows.append([node_name, "invoked"])
    _PrintOobTable(opts, rows)
    return constants.EXIT_FAILURE if errs else constants.EXIT_SUCCESS


def Health(opts: Any, args: list[str]) -> int:
    """Show the health items the nodes' out-of-band programs report."""
    op = opcodes.OpOobCommand(node_names=args, command=constants.OOB_HEALTH,
                              timeout=opts.oob_timeout)
    result = cli.SubmitOpCode(op, opts=opts)
    errs = 0
    rows = []
    for (_, node_name), (status, payload) in result:
        if status != constants.RS_NORMAL:
            errs += 1
            rows.append([node_name, cli.FormatResultError(status, True)])
            continue
        for idx, (item, item_status) in enumerate(payload):
            rows.append([node_name if idx == 0 else "",
                         "%s=%s" % (item, item_status)])
    _PrintOobTable(opts, rows)
    return constants.EXIT_FAILURE if errs else constants.EXIT_SUCCESS


def ListVolumes(opts: Any, args: list[str]) -> int:
    """List the LVM logical volumes of nodes, as Ganeti's table.

    These nodes have no LVM (the plain and drbd templates are not
    supported), so the table is empty; scripts parsing Ganeti's output
    still find its header and exit code.
    """
    fields = cli.ParseFields(opts.output, _LIST_VOL_DEF_FIELDS)
    op = opcodes.OpNodeQueryvols(nodes=args, output_fields=fields)
    output = cli.SubmitOpCode(op, opts=opts)
    headers = None if opts.no_headers else _LIST_VOL_HEADERS
    for line in cli.GenerateTable(headers=headers, fields=fields,
                                  separator=opts.separator, data=output,
                                  numfields=["size"], unitfields=["size"],
                                  units=opts.units):
        cli.ToStdout("%s", line)
    return constants.EXIT_SUCCESS


def MigrateNode(opts: Any, args: list[str]) -> int:
    """Migrate the primary instances of a node away, one job each, and
    wait for them."""
    cl = cli.GetClient()
    ((node, pinst), ) = cli.QueryRows(constants.QR_NODE,
                                      ["name", "pinst_list"], args)
    if not pinst:
        cli.ToStdout("No primary instances on node %s, exiting.", node)
        return constants.EXIT_SUCCESS
    pinst = utils.NiceSort(pinst)
    if not (opts.force or
            cli.AskUser("Migrate instance(s) %s?" % ", ".join(pinst),
                        skip_option=FORCE_OPT)):
        return constants.EXIT_CONFIRMATION
    op = opcodes.OpNodeMigrate(node_name=args[0],
                               mode=MigrationModeFromOpts(opts),
                               iallocator=opts.iallocator,
                               target_node=opts.dst_node,
                               allow_runtime_changes=opts.allow_runtime_chgs,
                               ignore_ipolicy=opts.ignore_ipolicy)
    return cli.FollowUpJobsExit(
        op, opts, cl, "There were %s errors during the node migration.",
        "All instances migrated successfully.")


def FailoverNode(opts: Any, args: list[str]) -> int:
    """Fail over the primary instances of a node, one job each, and wait
    for them (Ganeti's messages; unlike Ganeti, failures exit 1)."""
    cl = cli.GetClient()
    ((node, pinst), ) = cl.QueryNodes(args, ["name", "pinst_list"], False)
    if not pinst:
        cli.ToStderr("No primary instances on node %s, exiting.", node)
        return constants.EXIT_SUCCESS
    pinst = utils.NiceSort(pinst)
    if not (opts.force or cli.AskUser(
            "Fail over instance(s) %s?" %
            ",".join("'%s'" % name for name in pinst),
            skip_option=FORCE_OPT)):
        return _EXIT_DECLINED
    jex = cli.JobExecutor(cl=cl, opts=opts)
    for name in pinst:
        jex.QueueJob(name, opcodes.OpInstanceFailover(
            instance_name=name, ignore_consistency=opts.ignore_consistency,
            iallocator=opts.iallocator))
    results = jex.GetResults()
    bad_cnt = sum(1 for success, _ in results if not success)
    if bad_cnt:
        cli.ToStdout("There were errors during the failover:\n"
                     "%d error(s) out of %d instance(s).", bad_cnt,
                     len(results))
        return constants.EXIT_FAILURE
    cli.ToStdout("All %d instance(s) failed over successfully.",
                 len(results))
    return constants.EXIT_SUCCESS


def PowercycleNode(opts: Any, args: list[str]) -> int:
    """Hard power-cycle a node through its node daemon (asks unless
    --yes); the master only with --force."""
    node = args[0]
    if not (opts.confirm or cli.AskUser(
            "Are you sure you want to hard powercycle node %s?" % node,
            skip_option=CONFIRM_OPT)):
        return _EXIT_DECLINED
    result = cli.SubmitOrSend(opcodes.OpNodePowercycle(node_name=node,
                                                       force=opts.force),
                              opts)
    if result:
        cli.ToStderr("%s", result)
    return constants.EXIT_SUCCESS


def EvacuateNode(opts: Any, args: list[str]) -> int:
    """Move the instances off a node, one job each, and wait for them.

    Unlike Ganeti, ``-n`` does not restrict the evacuation to secondary
    instances: without an instance allocator it names the new node of
    the primary instances too.
    """
    if opts.primary_only and opts.secondary_only:
        raise errors.OpPrereqError("Only one of the --primary-only and"
                                   " --secondary-only options can be passed",
                                   errors.ECODE_INVAL)
    if opts.primary_only:
        mode = constants.NODE_EVAC_PRI
    elif opts.secondary_only:
        mode = constants.NODE_EVAC_SEC
    else:
        mode = constants.NODE_EVAC_ALL
    fields = []
    if not opts.secondary_only:
        fields.append("pinst_list")
    if not opts.primary_only:
        fields.append("sinst_list")
    cl = cli.GetClient()
    instances = {name for row in cli.QueryRows(constants.QR_NODE, fields,
                                               args)
                 for names in row for name in names or []}
    if not instances:
        cli.ToStderr("No instances to evacuate on node(s) %s, exiting.",
                     ", ".join(args))
        return constants.EXIT_SUCCESS
    if not (opts.force or
            cli.AskUser("Relocate instance(s) %s from node(s) %s?" %
                        (", ".join(utils.NiceSort(instances)),
                         ", ".join(args)), skip_option=FORCE_OPT)):
        return constants.EXIT_CONFIRMATION
    op = opcodes.OpNodeEvacuate(node_name=args[0], mode=mode,
                                remote_node=opts.dst_node,
                                iallocator=opts.iallocator,
                                early_release=opts.early_release,
                                ignore_soft_errors=opts.ignore_soft_errors,
                                member_of=opts.member_of)
    return cli.FollowUpJobsExit(
        op, opts, cl, "There were %s errors during the evacuation.",
        "All instances evacuated successfully.")


def ListDrbd(opts: Any, args: list[str]) -> int:
    """List the drbd minors of a node, from this node's configuration.

    Ganeti asks the local confd, which answers from the node's copy of
    the configuration (so on master candidates); this version has no
    confd and reads that copy itself: no job, no master daemon needed.
    """
    if len(args) != 1:
        cli.ToStderr("Please give one (and only one) node.")
        return constants.EXIT_FAILURE
    cfg = config.ConfigWriter(offline=True, accept_foreign=True)
    fields = ["node", "minor", "instance", "disk", "role", "peer"]
    headers = None if opts.no_headers else {
        "node": "Node", "minor": "Minor", "instance": "Instance",
        "disk": "Disk", "role": "Role", "peer": "PeerNode"}
    for line in cli.GenerateTable(headers, fields, opts.separator,
                                  sorted(drbd.NodeDrbdMap(
                                      cfg, args[0]).values()),
                                  numfields=["minor"]):
        cli.ToStdout(line)
    return constants.EXIT_SUCCESS


commands = {
    "add": (AddNode, [ArgHost(min=1, max=1)],
            [SECONDARY_IP_OPT, READD_OPT, NODEGROUP_OPT, CAPAB_MASTER_OPT,
             CAPAB_VM_OPT, ADD_NDPARAMS_OPT, JOIN_KEY_OPT] + _JOB_OPTS,
            "[-s ip] [--readd] [-g group] [--join-key key] <node_name>",
            "Add a node to the cluster"),
    "remove": (RemoveNode, ARGS_ONE_NODE, _JOB_OPTS, "<node_name>",
               "Removes a node from the cluster"),
    "list": (ListNodes, ARGS_MANY_NODES,
             [NOHDR_OPT, SEP_OPT, UNITS_OPT, FIELDS_OPT, VERBOSE_OPT,
              FORCE_FILTER_OPT],
             "[nodes...]",
             "Lists the nodes in the cluster. The available fields can be"
             " shown using the \"list-fields\" command (see the man page for"
             " details). The default field list is (in order): %s." %
             ", ".join(_LIST_DEF_FIELDS)),
    "list-fields": (ListNodeFields, [ArgUnknown()], [NOHDR_OPT, SEP_OPT],
                    "[fields...]", "Lists all available fields for nodes"),
    "info": (ShowNodeConfig, ARGS_MANY_NODES, [], "[<node_name>...]",
             "Show information about the node(s)"),
    "modify": (SetNodeParams, ARGS_ONE_NODE,
               [FORCE_OPT, MC_OPT, DRAINED_OPT, OFFLINE_OPT,
                CAPAB_MASTER_OPT, CAPAB_VM_OPT, NEW_SECONDARY_IP_OPT,
                AUTO_PROMOTE_OPT, NDPARAMS_OPT, NODE_POWERED_OPT,
                ADD_AGGREGATES_OPT, REMOVE_AGGREGATES_OPT] +
               _JOB_OPTS,
               "<node_name>", "Alters the parameters of a node"),
    "migrate": (MigrateNode, ARGS_ONE_NODE,
                [FORCE_OPT, NONLIVE_OPT, MIGRATION_MODE_OPT, DST_NODE_OPT,
                 IALLOCATOR_OPT, IGNORE_IPOLICY_OPT, NORUNTIME_CHGS_OPT] +
                _JOB_OPTS,
                "[-f] [-n <target-node>] <node_name>",
                "Migrate all the primary instances on a node away from it"
                " (only for mirrored instances)"),
    "failover": (FailoverNode, ARGS_ONE_NODE,
                 [FORCE_OPT, IGNORE_CONSIST_OPT, IALLOCATOR_OPT,
                  PRIORITY_OPT],
                 "[-f] <node>",
                 "Stops the primary instances on a node and start them on"
                 " their secondary node (only for instances with drbd disk"
                 " template)"),
    "powercycle": (PowercycleNode, ARGS_ONE_NODE,
                   [FORCE_OPT, CONFIRM_OPT] + _JOB_OPTS, "<node_name>",
                   "Tries to forcefully powercycle a node"),
    "list-drbd": (ListDrbd, ARGS_ONE_NODE, [NOHDR_OPT, SEP_OPT], "<node>",
                  "Query the list of used DRBD minors on the given node"),
    "evacuate": (EvacuateNode, ARGS_ONE_NODE,
                 [FORCE_OPT, IALLOCATOR_OPT, IGNORE_SOFT_ERRORS_OPT,
                  EVAC_NODE_OPT, EARLY_RELEASE_OPT, PRIMARY_ONLY_OPT,
                  SECONDARY_ONLY_OPT, EVAC_MEMBER_OF_OPT] + _JOB_OPTS,
                 "[-f] {-I <iallocator> | -n <dst>} [-p | -s] [options...]"
                 " <node>",
                 "Relocate the primary and/or secondary instances from a"
                 " node (with neither -I nor -n, the cluster's default"
                 " iallocator chooses); -n names the new node of the"
                 " primary instances too"),
    "volumes": (ListVolumes, ARGS_MANY_NODES,
                [NOHDR_OPT, SEP_OPT, UNITS_OPT, FIELDS_OPT, PRIORITY_OPT],
                "[<node_name>...]",
                "List logical volumes on node(s)"),
    "list-storage": (ListStorage, ARGS_MANY_NODES,
                     [NOHDR_OPT, SEP_OPT, UNITS_OPT, FIELDS_OPT,
                      STORAGE_TYPE_OPT, PRIORITY_OPT],
                     "[<node_name>...]",
                     "List physical volumes on node(s). The available"
                     " fields are (see the man page for details): %s." %
                     ", ".join(_LIST_STOR_DEF_FIELDS)),
    "modify-storage": (ModifyStorage,
                       [ArgNode(min=1, max=1),
                        ArgChoice(min=1, max=1, choices=sorted(
                            constants.MODIFIABLE_STORAGE_FIELDS)),
                        ArgUnknown(min=1, max=1)],
                       [ALLOCATABLE_OPT] + _JOB_OPTS,
                       "<node_name> <storage_type> <name>",
                       "Modify storage volume on a node"),
    "repair-storage": (RepairStorage,
                       [ArgNode(min=1, max=1),
                        ArgChoice(min=1, max=1, choices=sorted(
                            constants.VALID_STORAGE_OPERATIONS)),
                        ArgUnknown(min=1, max=1)],
                       [IGNORE_CONSIST_OPT] + _JOB_OPTS,
                       "<node_name> <storage_type> <name>",
                       "Repairs a storage volume on a node"),
    "power": (PowerNode,
              [ArgChoice(min=1, max=1, choices=_POWER_COMMANDS), ArgNode()],
              [SUBMIT_OPT, PRINT_JOBID_OPT, AUTO_PROMOTE_OPT, PRIORITY_OPT,
               IGNORE_STATUS_OPT, FORCE_OPT, NOHDR_OPT, SEP_OPT,
               OOB_TIMEOUT_OPT, POWER_DELAY_OPT],
              "on|off|cycle|status [<node_name>...]",
              "Change power state of node by calling out-of-band helper."),
    "health": (Health, ARGS_MANY_NODES,
               [NOHDR_OPT, SEP_OPT, PRIORITY_OPT, OOB_TIMEOUT_OPT],
               "[<node_name>...]",
               "List health of node(s) using out-of-band"),
    "list-tags": (cli.ListTags, ARGS_ONE_NODE, [], "<node_name>",
                  "List the tags of the given node"),
    "add-tags": (cli.AddTags, [ArgNode(min=1, max=1), ArgUnknown()],
                 [TAG_SRC_OPT] + _JOB_OPTS, "<node_name> tag...",
                 "Add tags to the given node"),
    "remove-tags": (cli.RemoveTags, [ArgNode(min=1, max=1), ArgUnknown()],
                    [TAG_SRC_OPT] + _JOB_OPTS, "<node_name> tag...",
                    "Remove tags from the given node"),
}

aliases = {"show": "info"}


def Main() -> int:
    return cli.GenericMain(commands, aliases=aliases,
                           override={"tag_type": constants.TAG_NODE},
                           env_override=_ENV_OVERRIDE)
