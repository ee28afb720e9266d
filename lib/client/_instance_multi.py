"""Instance selection of gnt-instance startup, shutdown, reboot and
reinstall: by name (the default), the whole cluster, the instances of
nodes (as primary, secondary or either) or of tagged nodes, or tagged
instances, with Ganeti's options, confirmation and messages.

Acting on more than one instance (or on any selection not by name) asks
first unless ``--force-multiple`` is given, and runs one job per
instance, submitted together.
"""

import itertools
from typing import Any, Callable

from ganeti import cli, constants, errors, luxi
from ganeti.cli_opts import cli_option

EXPAND_CLUSTER = "cluster"
EXPAND_NODES_BOTH = "nodes"
EXPAND_NODES_PRI = "nodes-pri"
EXPAND_NODES_SEC = "nodes-sec"
EXPAND_NODES_BOTH_BY_TAGS = "nodes-by-tags"
EXPAND_NODES_PRI_BY_TAGS = "nodes-pri-by-tags"
EXPAND_NODES_SEC_BY_TAGS = "nodes-sec-by-tags"
EXPAND_INSTANCES = "instances"
EXPAND_INSTANCES_BY_TAGS = "instances-by-tags"

# Node modes: (by tags, take primary instances, take secondary instances)
_NODE_MODES = {
    EXPAND_NODES_BOTH: (False, True, True),
    EXPAND_NODES_PRI: (False, True, False),
    EXPAND_NODES_SEC: (False, False, True),
    EXPAND_NODES_BOTH_BY_TAGS: (True, True, True),
    EXPAND_NODES_PRI_BY_TAGS: (True, True, False),
    EXPAND_NODES_SEC_BY_TAGS: (True, False, True),
}

FORCE_MULTI_OPT = cli_option("--force-multiple", dest="force_multi",
                             help="Do not ask for confirmation when more"
                             " than one instance is affected",
                             action="store_true", default=False)


def _ModeOption(flag: str, mode: str, text: str) -> Any:
    return cli_option(flag, dest="multi_mode", help=text, const=mode,
                      action="store_const")


SELECT_OPTS = [
    _ModeOption("--node", EXPAND_NODES_BOTH,
                "Filter by nodes (primary and secondary)"),
    _ModeOption("--primary", EXPAND_NODES_PRI,
                "Filter by nodes (primary only)"),
    _ModeOption("--secondary", EXPAND_NODES_SEC,
                "Filter by nodes (secondary only)"),
    _ModeOption("--all", EXPAND_CLUSTER,
                "Select all instances in the cluster"),
    _ModeOption("--instance", EXPAND_INSTANCES,
                "Filter by instance name [default]"),
    _ModeOption("--node-tags", EXPAND_NODES_BOTH_BY_TAGS,
                "Filter by node tag"),
    _ModeOption("--pri-node-tags", EXPAND_NODES_PRI_BY_TAGS,
                "Filter by primary node tag"),
    _ModeOption("--sec-node-tags", EXPAND_NODES_SEC_BY_TAGS,
                "Filter by secondary node tag"),
    _ModeOption("--tags", EXPAND_INSTANCES_BY_TAGS,
                "Filter by instance tag"),
]


def ExpandMultiNames(mode: str, names: list[str],
                     client: luxi.Client) -> list[str]:
    """The instances a selection mode and its arguments (instance names,
    node names or tags) stand for, in Ganeti's order: per node, its
    primary instances before its secondary ones."""
    if mode == EXPAND_CLUSTER:
        if names:
            raise errors.OpPrereqError("Cluster filter mode takes no"
                                       " arguments", errors.ECODE_INVAL)
        return [row[0] for row in client.QueryInstances([], ["name"], False)]
    if mode in _NODE_MODES:
        by_tags, primary, secondary = _NODE_MODES[mode]
        if not names:
            raise errors.OpPrereqError("No node %s passed" %
                                       ("tags" if by_tags else "names"),
                                       errors.ECODE_INVAL)
        if by_tags:
            rows = [row for row in client.QueryNodes(
                [], ["name", "pinst_list", "sinst_list", "tags"], False)
                    if set(row[3]).intersection(names)]
        else:
            rows = client.QueryNodes(names, ["name", "pinst_list",
                                             "sinst_list"], False)
        return (list(itertools.chain.from_iterable(
                    row[1] for row in rows if primary)) +
                list(itertools.chain.from_iterable(
                    row[2] for row in rows if secondary)))
    if mode == EXPAND_INSTANCES:
        if not names:
            raise errors.OpPrereqError("No instance names passed",
                                       errors.ECODE_INVAL)
        return [row[0] for row in client.QueryInstances(names, ["name"],
                                                        False)]
    if mode == EXPAND_INSTANCES_BY_TAGS:
        if not names:
            raise errors.OpPrereqError("No instance tags passed",
                                       errors.ECODE_INVAL)
        return [row[0] for row in client.QueryInstances(
            [], ["name", "tags"], False) if set(row[1]).intersection(names)]
    raise errors.OpPrereqError("Unknown mode '%s'" % mode,
                               errors.ECODE_INVAL)


def _Selected(opts: Any, names: list[str]) -> tuple[list[str], bool]:
    if not names:
        raise errors.OpPrereqError("Selection filter does not match any"
                                   " instances", errors.ECODE_INVAL)
    return names, opts.multi_mode != EXPAND_INSTANCES or len(names) > 1


def _Expand(opts: Any, args: list[str], client: luxi.Client) -> list[str]:
    if opts.multi_mode is None:
        opts.multi_mode = EXPAND_INSTANCES
    return ExpandMultiNames(opts.multi_mode, args, client)


def SelectInstances(opts: Any, args: list[str],
                    client: luxi.Client) -> tuple[list[str], bool]:
    """The selected instances (none is an error) and whether the
    operation counts as acting on several: any selection not by name,
    or more than one name."""
    return _Selected(opts, _Expand(opts, args, client))


def RunJobs(opts: Any, names: list[str], make_op: Callable[[str], Any],
            multi_on: bool, client: luxi.Client) -> int:
    """One job per instance, submitted together; waited for (each one's
    failure reported) unless ``--submit``, which prints the job ids."""
    jex = cli.JobExecutor(verbose=multi_on, cl=client, opts=opts)
    for name in names:
        jex.QueueJob(name, make_op(name))
    results = jex.WaitOrShow(not opts.submit_only)
    if all(success for success, _ in results):
        return constants.EXIT_SUCCESS
    return constants.EXIT_FAILURE


def GenericManyOps(operation: str, make_op: Callable[[Any, str], Any]
                   ) -> Callable[[Any, list[str]], int]:
    """The command running ``make_op(opts, name)`` on the selected
    instances, asking first (unless ``--force-multiple``) when acting on
    several."""
    def command(opts: Any, args: list[str]) -> int:
        client = cli.GetClient()
        names = _Expand(opts, args, client)
        if not names and opts.multi_mode == EXPAND_CLUSTER:
            cli.ToStdout("Cluster is empty, no instances to %s", operation)
            return constants.EXIT_SUCCESS
        names, multi_on = _Selected(opts, names)
        if multi_on and not opts.force_multi and \
                not cli.ConfirmOperation(names, "instances", operation,
                                         skip_option=FORCE_MULTI_OPT):
            return constants.EXIT_FAILURE
        return RunJobs(opts, names, lambda name: make_op(opts, name),
                       multi_on, client)
    command.__doc__ = "%s the selected instances." % operation.capitalize()
    return command
