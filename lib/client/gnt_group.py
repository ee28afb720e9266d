"""Ganeti node group administration: add, remove, rename, list and change
node groups."""

from typing import Any

from ganeti import cli, constants, opcodes
from ganeti.cli_opts import (
    ARGS_MANY_GROUPS, ARGS_ONE_GROUP, ArgGroup, ArgNode, ArgUnknown,
    DRY_RUN_OPT, EARLY_RELEASE_OPT, FIELDS_OPT, FORCE_FILTER_OPT, FORCE_OPT,
    IALLOCATOR_OPT, INSTANCE_POLICY_OPTS, NOHDR_OPT, OpcodeOption,
    PRINT_JOBID_OPT, PRIORITY_OPT, ParamsOption, SEP_OPT, SUBMIT_OPT,
    TAG_SRC_OPT, TO_GROUP_OPT, VERBOSE_OPT, cli_option)
from ganeti.client.gnt_cluster import FormatIPolicyCommand

_SetParams = opcodes.OpGroupSetParams

# Ganeti's default list of fields for "list"
_LIST_DEF_FIELDS = ["name", "node_cnt", "pinst_cnt", "alloc_policy",
                    "ndparams"]

# Subcommands taking default arguments from GNT_GROUP_<CMD>
_ENV_OVERRIDE = frozenset(["list"])

ALLOC_POLICY_OPT = OpcodeOption(_SetParams, "alloc_policy", "--alloc-policy",
                                type="choice",
                                choices=list(constants.VALID_ALLOC_POLICIES),
                                metavar="<policy>")
NDPARAMS_OPT = ParamsOption(_SetParams, "ndparams", "node")
DISKPARAMS_OPT = ParamsOption(_SetParams, "diskparams", "disk")

_JOB_OPTS = [SUBMIT_OPT, PRINT_JOBID_OPT, PRIORITY_OPT, DRY_RUN_OPT]

_Evacuate = opcodes.OpGroupEvacuate
SEQUENTIAL_OPT = OpcodeOption(_Evacuate, "sequential", "--sequential")
FORCE_FAILOVER_OPT = OpcodeOption(_Evacuate, "force_failover",
                                  "--force-failover")


def _DiskParams(opts: Any) -> dict | None:
    return dict(opts.diskparams) or None


def AddGroup(opts: Any, args: list[str]) -> int:
    op = opcodes.OpGroupAdd(group_name=args[0], alloc_policy=opts.alloc_policy,
                            ndparams=opts.ndparams or None,
                            diskparams=_DiskParams(opts),
                            ipolicy=cli.BuildIPolicy(opts))
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def AssignNodes(opts: Any, args: list[str]) -> int:
    op = opcodes.OpGroupAssignNodes(group_name=args[0], nodes=args[1:],
                                    force=opts.force)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def _FmtDict(data: dict) -> str:
    if not data:
        return "(empty)"
    return ", ".join("%s=%s" % (key, value) for key, value in data.items())


def ListGroups(opts: Any, args: list[str]) -> int:
    fields = cli.ParseFields(opts.output, _LIST_DEF_FIELDS)
    fmtoverride = {
        "node_list": (",".join, False),
        "pinst_list": (",".join, False),
        "ndparams": (_FmtDict, False),
    }
    return cli.GenericList(constants.QR_GROUP, fields, args, None,
                           opts.separator, not opts.no_headers,
                           format_override=fmtoverride, verbose=opts.verbose,
                           force_filter=opts.force_filter)


def ListGroupFields(opts: Any, args: list[str]) -> int:
    return cli.GenericListFields(constants.QR_GROUP, args, opts.separator,
                                 not opts.no_headers)


def SetGroupParams(opts: Any, args: list[str]) -> int:
    """Change a group's parameters; print what changed."""
    ipolicy = cli.BuildIPolicy(opts, allow_reset=True)
    if opts.alloc_policy is None and not opts.ndparams and \
            not opts.diskparams and ipolicy is None:
        cli.ToStderr("Please give at least one of the parameters.")
        return constants.EXIT_FAILURE
    op = opcodes.OpGroupSetParams(group_name=args[0],
                                  alloc_policy=opts.alloc_policy,
                                  ndparams=opts.ndparams or None,
                                  diskparams=_DiskParams(opts),
                                  ipolicy=ipolicy)
    result = cli.SubmitOrSend(op, opts)
    if result:
        cli.ToStdout("Modified node group %s", args[0])
        for param, value in result:
            cli.ToStdout(" - %-5s -> %s", param, value)
    return constants.EXIT_SUCCESS


def RemoveGroup(opts: Any, args: list[str]) -> int:
    cli.SubmitOrSend(opcodes.OpGroupRemove(group_name=args[0]), opts)
    return constants.EXIT_SUCCESS


def RenameGroup(opts: Any, args: list[str]) -> int:
    group_name, new_name = args
    cli.SubmitOrSend(opcodes.OpGroupRename(group_name=group_name,
                                           new_name=new_name), opts)
    return constants.EXIT_SUCCESS


def EvacuateGroup(opts: Any, args: list[str]) -> int:
    """Move a group's instances to other groups and wait for the jobs."""
    (group_name,) = args
    cl = cli.GetClient()
    op = _Evacuate(group_name=group_name, iallocator=opts.iallocator,
                   target_groups=opts.to, early_release=opts.early_release,
                   sequential=opts.sequential,
                   force_failover=opts.force_failover)
    return cli.FollowUpJobsExit(
        op, opts, cl, "There were %s errors during the evacuation.",
        "All instances evacuated successfully.")


_INFO_FIELDS = ["name", "ndparams", "custom_ndparams", "diskparams",
                "custom_diskparams", "ipolicy", "custom_ipolicy"]


def GroupInfo(opts: Any, args: list[str]) -> int:
    """Show the groups' parameters, marking inherited values."""
    infos = []
    for (name, ndparams, custom_ndparams, diskparams, custom_diskparams,
         ipolicy, custom_ipolicy) in cli.QueryRows(constants.QR_GROUP,
                                               _INFO_FIELDS, args):
        infos.append([
            ("Node group", name),
            ("Node parameters",
             cli.FormatParamsDictInfo(custom_ndparams or {}, ndparams or {})),
            ("Disk parameters",
             cli.FormatParamsDictInfo(custom_diskparams or {},
                                  diskparams or {})),
            ("Instance policy",
             cli.FormatPolicyInfo(custom_ipolicy or {}, ipolicy, False)),
        ])
    cli.PrintGenericInfo(infos)
    return constants.EXIT_SUCCESS


INCLUDE_DEFAULTS_OPT = cli_option("--include-defaults",
                                  dest="include_defaults", default=False,
                                  action="store_true",
                                  help="Include default values")


def ShowCreateCommand(opts: Any, args: list[str]) -> int:
    """Print per group the ``gnt-group add`` command line giving its
    instance policy bounds (as Ganeti: nothing else of the group; with
    --include-defaults the bounds it inherits too)."""
    field = "ipolicy" if opts.include_defaults else "custom_ipolicy"
    for name, ipolicy in cli.QueryRows(constants.QR_GROUP, ["name", field],
                                       args):
        cli.ToStdout("gnt-group add%s %s",
                     FormatIPolicyCommand(ipolicy or {}, True), name)
    return constants.EXIT_SUCCESS


commands = {
    "add": (AddGroup, ARGS_ONE_GROUP,
            [ALLOC_POLICY_OPT, NDPARAMS_OPT, DISKPARAMS_OPT] + _JOB_OPTS +
            INSTANCE_POLICY_OPTS,
            "<group_name>", "Add a new node group to the cluster"),
    "assign-nodes": (AssignNodes, [ArgGroup(min=1, max=1), ArgNode(min=1)],
                     [FORCE_OPT] + _JOB_OPTS, "<group_name> <node>...",
                     "Assign nodes to a group"),
    "list": (ListGroups, ARGS_MANY_GROUPS,
             [NOHDR_OPT, SEP_OPT, FIELDS_OPT, VERBOSE_OPT, FORCE_FILTER_OPT],
             "[<group_name>...]",
             "Lists the node groups in the cluster. The available fields can"
             " be shown using the \"list-fields\" command (see the man page"
             " for details). The default list is (in order): %s." %
             ", ".join(_LIST_DEF_FIELDS)),
    "list-fields": (ListGroupFields, [ArgUnknown()], [NOHDR_OPT, SEP_OPT],
                    "[fields...]",
                    "Lists all available fields for node groups"),
    "modify": (SetGroupParams, ARGS_ONE_GROUP,
               [ALLOC_POLICY_OPT, NDPARAMS_OPT, DISKPARAMS_OPT] + _JOB_OPTS +
               INSTANCE_POLICY_OPTS,
               "<group_name>", "Alters the parameters of a node group"),
    "remove": (RemoveGroup, ARGS_ONE_GROUP, _JOB_OPTS,
               "[--dry-run] <group-name>",
               "Remove an (empty) node group from the cluster"),
    "rename": (RenameGroup, [ArgGroup(min=2, max=2)], _JOB_OPTS,
               "[--dry-run] <group-name> <new-name>", "Rename a node group"),
    "evacuate": (EvacuateGroup, ARGS_ONE_GROUP,
                 [TO_GROUP_OPT, IALLOCATOR_OPT, EARLY_RELEASE_OPT,
                  SEQUENTIAL_OPT, FORCE_FAILOVER_OPT] + _JOB_OPTS,
                 "[-I <iallocator>] [--to <group>] <source-group>",
                 "Evacuate all instances within a group"),
    "info": (GroupInfo, ARGS_MANY_GROUPS, [], "[<group_name>...]",
             "Show group information"),
    "show-ispecs-cmd": (ShowCreateCommand, ARGS_MANY_GROUPS,
                        [INCLUDE_DEFAULTS_OPT],
                        "[--include-defaults] [<group>...]",
                        "Show the command line to re-create a group"),
    "list-tags": (cli.ListTags, ARGS_ONE_GROUP, [], "<group_name>",
                  "List the tags of the given group"),
    "add-tags": (cli.AddTags, [ArgGroup(min=1, max=1), ArgUnknown()],
                 [TAG_SRC_OPT] + _JOB_OPTS, "<group_name> tag...",
                 "Add tags to the given group"),
    "remove-tags": (cli.RemoveTags, [ArgGroup(min=1, max=1), ArgUnknown()],
                    [TAG_SRC_OPT] + _JOB_OPTS, "<group_name> tag...",
                    "Remove tags from the given group"),
}


def Main() -> int:
    return cli.GenericMain(commands,
                           override={"tag_type": constants.TAG_NODEGROUP},
                           env_override=_ENV_OVERRIDE)
