"""Cluster balancer: hbal-compatible rebalancing of a node group.

The cluster is read live from the master daemon: the input message of
an instance allocator (``OP_TEST_ALLOCATOR`` direction "in"), the same
data the built-in allocator sees. The moves come from
``ganeti.htools.balance``; they are printed in hbal's format and, with
-X, submitted as hbal does: one job per move, the jobs of a job set in
parallel, the job sets one after the other, stopping at the first set
with a failed job. ``gnt-cluster rebalance`` is this same command. With
-U, --mond or --mond-data the nodes' dynamic load is balanced too
(``ganeti.htools.utilisation``); the monds are asked from here.
"""

import logging
import sys
import time
from optparse import OptionParser
from typing import Any, Callable

from ganeti import (cli, constants, errors, luxi, netutils, opcodes,
                    serializer)
from ganeti.cli_opts import (DEBUG_OPT, PRIORITY_OPT, REASON_OPT,
                             CliOption, cli_option)
from ganeti.htools import balance, display, model, moves, utilisation
from ganeti.htools.model import Cluster, Failure

# Name of the (never created) instance of the probe request whose input
# message describes the cluster
_PROBE_NAME = "htools-cluster-probe"
_FETCH_TIMEOUT = 5.0
_REPORT_ALL_PATH = "/1/report/all"

GROUP_OPT = cli_option("-G", "--group", dest="group", default=None,
                       metavar="GROUP",
                       help="Node group (name or UUID) to work on; needed"
                       " when the cluster has several")
MAX_CPU_OPT = cli_option("--max-cpu", dest="max_cpu", type="float",
                         default=None, metavar="RATIO",
                         help="Maximum virtual to physical CPU ratio (the"
                         " instance policy's by default)")
MIN_GAIN_OPT = cli_option("-g", "--min-gain", dest="min_gain",
                          type="float", default=balance.Options().min_gain,
                          metavar="DELTA",
                          help="Minimum score gain of a move once the score"
                          " is below --min-gain-limit (default: %default)")
MIN_GAIN_LIMIT_OPT = cli_option(
    "--min-gain-limit", dest="min_gain_limit", type="float",
    default=balance.Options().min_gain_limit, metavar="SCORE",
    help="Score below which --min-gain applies (default: %default)")
MIN_SCORE_OPT = cli_option("-e", "--min-score", dest="min_score",
                           type="float", default=balance.Options().min_score,
                           metavar="SCORE",
                           help="Score that is good enough: no balancing"
                           " below it (default: %default)")
MAX_LENGTH_OPT = cli_option("-l", "--max-length", dest="max_length",
                            type="int", default=-1, metavar="N",
                            help="Stop after N moves (-1: no limit)")
NO_DISK_MOVES_OPT = cli_option("--no-disk-moves", dest="no_disk_moves",
                               default=False, action="store_true",
                               help="Only fail over or migrate, never"
                               " replace disks")
EVAC_MODE_OPT = cli_option("--evac-mode", dest="evac_mode", default=False,
                           action="store_true",
                           help="Only move instances on offline or drained"
                           " nodes")
IGNORE_SOFT_ERRORS_OPT = cli_option(
    "--ignore-soft-errors", dest="ignore_soft_errors", default=False,
    action="store_true",
    help="Ignore soft errors (instance policy, CPU ratio, exclusion tags)"
    " when moving")
PRINT_COMMANDS_OPT = cli_option("-C", "--print-commands",
                                dest="print_commands", default=False,
                                action="store_true",
                                help="Print the gnt-instance commands of the"
                                " moves, per job set")
EXEC_OPT = cli_option("-X", "--exec", dest="execute", default=False,
                      action="store_true",
                      help="Submit the moves as jobs and wait for them")
LUXI_OPT = cli_option("-L", "--luxi", dest="luxi", default=False,
                      action="store_true",
                      help="Read the cluster from the master daemon (always"
                      " done; accepted for hbal compatibility; -L<path>"
                      " names its socket)")
DYNU_FILE_OPT = cli_option("-U", "--dynu-file", dest="dynu_file",
                           default=None, metavar="FILE",
                           help="Import dynamic utilisation data from the"
                           " given FILE (lines of 'instance cpu mem disk"
                           " net')")
IGNORE_DYNU_OPT = cli_option("--ignore-dynu", dest="ignore_dynu",
                             default=False, action="store_true",
                             help="Ignore any dynamic utilisation"
                             " information")
MOND_OPT = cli_option("--mond", dest="mond", type="bool", default=False,
                      metavar="yes|no",
                      help="Pass either 'yes' or 'no' to query all MonDs"
                      " (their CPU load)")
MOND_DATA_OPT = cli_option("--mond-data", dest="mond_data", default=None,
                           metavar="FILE",
                           help="Import data provided by MonDs from the"
                           " given FILE")

PRINT_NODES_OPT = cli_option("-p", "--print-nodes", dest="print_nodes",
                             default=False, action="store_true",
                             help="Print the initial and final node list"
                             " (-p<FIELDS>, --print-nodes=<FIELDS>: these"
                             " fields, or +<FIELDS> more than the default)")
PRINT_INSTANCES_OPT = cli_option("--print-instances", dest="print_instances",
                                 default=False, action="store_true",
                                 help="Print the initial and final instance"
                                 " map")
OFFLINE_OPT = cli_option("-O", "--offline", dest="offline_nodes",
                         default=[], action="append", metavar="NODE",
                         help="Set node as offline (repeatable)")
MIN_DISK_OPT = cli_option("--min-disk", dest="min_disk", type="float",
                          default=0.0, metavar="RATIO",
                          help="Minimum free disk space for nodes (between"
                          " 0 and 1) [%default]")

REBALANCE_OPTS = [GROUP_OPT, MAX_CPU_OPT, MIN_GAIN_OPT, MIN_GAIN_LIMIT_OPT,
                  MIN_SCORE_OPT, MAX_LENGTH_OPT, NO_DISK_MOVES_OPT,
                  EVAC_MODE_OPT, IGNORE_SOFT_ERRORS_OPT, DYNU_FILE_OPT,
                  IGNORE_DYNU_OPT, MOND_OPT, MOND_DATA_OPT,
                  PRINT_COMMANDS_OPT, EXEC_OPT, LUXI_OPT, PRIORITY_OPT]

# hbal's short names of the elementary steps of each move kind
_MOVE_CODES = {
    moves.FAILOVER: "f",
    moves.FAILOVER_TO_ANY: "fa:%s",
    moves.FAILOVER_AND_REPLACE: "f r:%s",
    moves.REPLACE_SECONDARY: "r:%s",
    moves.REPLACE_AND_FAILOVER: "r:%s f",
    moves.REPLACE_PRIMARY: "f r:%s f",
}


def Client(opts: Any) -> luxi.Client:
    """The LUXI client of the master daemon, at the socket -L<path>
    named if any."""
    return luxi.Client(getattr(opts, "luxi_address", None))


def ClusterMessage(opts: Any, disk_template: str | None = None,
                   cl: Any = None) -> dict:
    """The cluster as an allocator sees it, from the master daemon.

    The storage figures are those of ``disk_template`` (default: the
    cluster's first enabled template).
    """
    if cl is None:
        cl = Client(opts)
    op = opcodes.OpTestAllocator(
        direction=constants.IALLOCATOR_DIR_IN,
        mode=constants.IALLOCATOR_MODE_ALLOC, name=_PROBE_NAME, memory=0,
        vcpus=1, disks=[], nics=[], os="none", disk_template=disk_template)
    return serializer.LoadJson(cli.SubmitOpCode(op, cl=cl, opts=opts))


class _Line:
    """One move as hbal prints it, with its gnt-instance commands."""

    def __init__(self, cluster: Cluster, step: balance.Step,
                 alias: Callable[[str], str]) -> None:
        move = step.move
        inst = cluster.instances[move.instance]
        self.name = alias(move.instance)
        self.old = _NodeText(alias, inst.pnode, inst.snode)
        applied = moves.ApplyMove(cluster, move, strict=False)
        if isinstance(applied, Failure):
            raise errors.ProgrammerError("Planned move %s cannot be"
                                         " replayed: %s" %
                                         (move.Describe(), applied.text))
        self.new = _NodeText(alias, inst.pnode, inst.snode)
        self.step = step
        # A replace-disks target is the new secondary, a failover-to-any
        # one the new primary
        code = _MOVE_CODES[move.kind]
        self.code = code % alias(move.target or "") if "%s" in code \
            else code
        mig = "%s -f" % ("migrate" if inst.runs else "failover")
        self.commands = []
        for op in moves.MoveOpcodes(move):
            if op["OP_ID"] == "OP_INSTANCE_REPLACE_DISKS":
                self.commands.append("replace-disks -n %s %s" %
                                     (alias(op["remote_node"]), self.name))
            elif "target_node" in op:
                self.commands.append("%s -n %s %s" % (
                    mig, alias(op["target_node"]), self.name))
            else:
                self.commands.append("%s %s" % (mig, self.name))


def _LookupNode(names: list[str], key: str) -> str | None:
    """The node ``key`` names (the htools' ``lookupName``): the exact
    name, else the only one it is the first components of."""
    if key in names:
        return key
    found = [name for name in names if name.startswith(key + ".")]
    return found[0] if len(found) == 1 else None


def ApplyNodeOptions(opts: Any, message: dict) -> dict | None:
    """A copy of the cluster message with hbal's and hspace's node
    options (their ``setNodeStatus``): -O's nodes offline, --min-disk's
    free disk ratio. None, after Ganeti's error message, when -O names
    no node or several.

    An -O node is marked drained: out of placement and scoring with its
    resources kept, as Ganeti's ``Node.setOffline`` does (a node the
    cluster has offline reports none).
    """
    nodes = message["nodes"]
    wanted = getattr(opts, "offline_nodes", None) or []
    found = {key: _LookupNode(list(nodes), key) for key in wanted}
    # named in Ganeti's order (the last given first)
    wrong = [key for key in reversed(wanted) if found[key] is None]
    if wrong:
        cli.ToStderr("Error: wrong node name(s) set as offline: %s\n",
                     ",".join(wrong))
        return None
    result = dict(message, nodes=dict(nodes))
    for name in found.values():
        assert name is not None
        result["nodes"][name] = dict(nodes[name], drained=True)
    min_disk = getattr(opts, "min_disk", 0.0)
    if min_disk:
        result[model.MIN_DISK_KEY] = min_disk
    return result


def PrintNodes(opts: Any, title: str, cluster: Cluster,
               initial: Cluster | None = None,
               names: list[str] | None = None) -> None:
    """With -p, the node list as the htools print it (to stderr)."""
    if not getattr(opts, "print_nodes", False):
        return
    fields = display.NodeFields(getattr(opts, "node_fields", None))
    cli.ToStderr("")
    cli.ToStderr("%s status:", title)
    for line in display.NodeTable(cluster, fields, initial, names):
        cli.ToStderr("%s", line)
    cli.ToStderr("")


def _PrintInstances(opts: Any, title: str, cluster: Cluster,
                    nodes: list[str]) -> None:
    """With --print-instances, hbal's instance map (to stderr)."""
    if not getattr(opts, "print_instances", False):
        return
    cli.ToStderr("")
    cli.ToStderr("%s instance map:", title)
    for line in display.InstanceTable(cluster, nodes):
        cli.ToStderr("%s", line)


def _NodeText(alias: Callable[[str], str], pnode: str | None,
              snode: str | None) -> str:
    text = alias(pnode or "")
    return "%s:%s" % (text, alias(snode)) if snode else text


def FetchMondReports(addresses: dict[str, str], port: int
                     ) -> dict[str, list[Any]]:
    """Node name -> its mond's ``/1/report/all``, for the nodes (name ->
    address) whose mond answered; the others are logged and left out."""
    import urllib.request  # ~10 ms; only --mond needs it
    result = {}
    for name, address in sorted(addresses.items()):
        url = "http://%s:%d%s" % (address, port, _REPORT_ALL_PATH)
        try:
            with urllib.request.urlopen(url, timeout=_FETCH_TIMEOUT) as answer:
                reports = serializer.LoadJson(answer.read())
        except (OSError, ValueError) as err:
            logging.warning("Can't read the reports of node %s at %s: %s",
                            name, url, err)
            continue
        if isinstance(reports, list):
            result[name] = reports
        else:
            logging.warning("Ignoring the reports of node %s: not a list",
                            name)
    return result


def MondUtilisation(message: dict, port: int | None = None
                    ) -> dict[str, tuple[float, ...]] | None:
    """The instances' utilisation from the online nodes' monitoring
    daemons (see ``utilisation.UtilisationFromMond``)."""
    if port is None:
        port = netutils.GetDaemonPort(constants.MOND)
    addresses = {name: info["primary_ip"]
                 for name, info in message["nodes"].items()
                 if not info.get("offline") and info.get("primary_ip")}
    return utilisation.UtilisationFromMond(
        message, FetchMondReports(addresses, port))


def _Utilisation(opts: Any, message: dict
                 ) -> dict[str, tuple[float, ...]] | None:
    """The dynamic utilisation the options ask for, None for none: the
    -U file's, overridden per instance by the MonDs' (--mond-data's
    without asking them); --ignore-dynu takes precedence."""
    if opts.ignore_dynu:
        return None
    util = None
    if opts.dynu_file:
        util = utilisation.ReadUtilisation(opts.dynu_file)
    mond = None
    if opts.mond_data:
        mond = utilisation.UtilisationFromMond(
            message, utilisation.ReadMondData(opts.mond_data))
    elif opts.mond:
        mond = MondUtilisation(message)
    if mond is not None:
        util = dict(util or {})
        for name, values in mond.items():
            util[name] = values[:1] + util.get(name, values)[1:]
    return util


def _Lines(cluster: Cluster, plan: balance.Plan,
           alias: Callable[[str], str]) -> dict[balance.Step, _Line]:
    """Per step, its line: the steps replayed on a freshly loaded
    ``cluster``, which ends in the final state. Names are shown as hbal
    shows them (``display.Aliases``; its commands work so: gnt-* commands
    take unique short names)."""
    return {step: _Line(cluster, step, alias) for step in plan.steps}


def FormatSolution(lines: list[_Line], with_gain: bool, ilen: int,
                   nlen: int) -> list[str]:
    """hbal's step lines (``printSolutionLine``): position, instance, old
    => new nodes, score after the move (``with_gain``: and the change it
    brings), moves; the instance column ``ilen`` wide, the nodes' ``2 *
    nlen + 1`` (the longest names of the group's instances and nodes)."""
    nlen = 2 * nlen + 1
    result = []
    for pos, line in enumerate(lines, 1):
        gain = " %+12.8f" % -line.step.gain if with_gain else ""
        result.append("  %3d. %-*s %-*s => %-*s %12.8f%s a=%s" %
                      (pos, ilen, line.name, nlen, line.old,
                       nlen, line.new, line.step.after, gain, line.code))
    return result


def FormatCommands(plan: balance.Plan,
                   lines: dict[balance.Step, _Line]) -> list[str]:
    """hbal's -C output: the commands per job set and job."""
    result = ["Commands to run to reach the above solution:"]
    for setno, jobset in enumerate(plan.jobsets, 1):
        result += ["  ", "  echo jobset %d, %d jobs" % (setno, len(jobset))]
        for jobno, step in enumerate(jobset, 1):
            result.append("    echo job %d/%d" % (setno, jobno))
            result += ["    gnt-instance %s" % command
                       for command in lines[step].commands]
    return result


def _Execute(opts: Any, plan: balance.Plan,
             lines: dict[balance.Step, _Line]) -> int:
    """Submit the job sets in order, each set's jobs at once; stop at the
    first set with a failed job."""
    cl = Client(opts)
    for jobset, jobs in zip(plan.jobsets, plan.Jobs()):
        cli.ToStdout("Executing jobset for instances %s",
                     ", ".join(step.move.instance for step in jobset))
        # opts=None: the reason trail is set here, once per opcode
        jex = cli.JobExecutor(cl=cl, verbose=False, opts=None)
        for step, ops in zip(jobset, jobs):
            cli.SetGenericOpcodeOpts(ops, opts)
            for op in ops:
                op["reason"].append((constants.OPCODE_REASON_SRC_REBALANCE,
                                     "%s (score %.8f => %.8f)" %
                                     (lines[step].code, step.before,
                                      step.after), time.time_ns()))
            jex.QueueJob(step.move.instance, *ops)
        jex.SubmitPending()
        cli.ToStdout("Got job IDs %s", ", ".join(
            str(job[2]) for job in jex.jobs if job[1]))
        if not all(success for success, _ in jex.GetResults()):
            cli.ToStderr("A job of the job set failed; not continuing")
            return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def Rebalance(opts: Any, args: list[str]) -> int:
    """Compute (and with -X run) the moves that balance a node group."""
    return BalanceMessage(opts, ClusterMessage(opts))


def BalanceMessage(opts: Any, cluster_message: dict) -> int:
    """hbal on the cluster ``cluster_message`` describes."""
    message = ApplyNodeOptions(opts, cluster_message)
    if message is None:
        return constants.EXIT_FAILURE
    if not message["instances"]:
        cli.ToStdout("Cluster is empty, exiting.")
        return constants.EXIT_SUCCESS
    util = _Utilisation(opts, message)
    plan = balance.PlanBalance(message, group=opts.group, opts=balance.Options(
        min_gain=opts.min_gain, min_gain_limit=opts.min_gain_limit,
        min_score=opts.min_score, max_cpu=opts.max_cpu,
        no_disk_moves=opts.no_disk_moves, evac_mode=opts.evac_mode,
        max_length=opts.max_length,
        ignore_soft_errors=opts.ignore_soft_errors),
        util=util, workers=None)
    cli.ToStdout("Loaded %d nodes, %d instances", len(message["nodes"]),
                 len(message["instances"]))
    initial = Cluster(message, util)
    group = initial.FindGroup(plan.group)
    assert group is not None
    nodes = initial.GroupNodes(group)
    names = [node.name for node in nodes]
    cli.ToStdout("Group size %d nodes, %d instances", len(nodes),
                 sum(len(node.plist) for node in nodes))
    cli.ToStdout("Selected node group: %s", plan.group)
    # hbal's computeBadItems: online nodes failing N+1, their instances
    bad = [node for node in nodes if not node.offline and node.fail_n1]
    cli.ToStdout("Initial check done: %d bad nodes, %d bad instances.",
                 len(bad), len(set().union(*(node.plist | node.slist
                                             for node in bad))))
    if bad:
        cli.ToStdout("Cluster is not N+1 happy, continuing but no guarantee"
                     " that the cluster will end N+1 happy.")
    # getPolicyHealth: too many spindles in use or vCPUs per CPU (with
    # --max-cpu's ratio)
    violating = [node for node in nodes if node.inst_sp > node.hi_sp or
                 node.u_cpu / node.p_cpus > (node.vcpu_ratio
                                             if opts.max_cpu is None
                                             else opts.max_cpu)]
    if violating:
        cli.ToStdout("The cluster contains %d policy-violating nodes.",
                     len(violating))
        cli.ToStdout("Continuing, ignoring soft errors."
                     if opts.ignore_soft_errors else
                     "Continuing, but the set of moves might be too"
                     " restricted; consider using the --ignore-soft-errors"
                     " option.")
    _PrintInstances(opts, "Initial", initial, names)
    PrintNodes(opts, "Initial cluster", initial, names=names)
    cli.ToStdout("Initial score: %.8f", plan.initial_score)
    if plan.initial_score - plan.optimal_score < opts.min_score:
        cli.ToStdout("Cluster is already well balanced (initial score %s,\n"
                     "optimum score due to N+1 reservations %s,\n"
                     "minimum score %s).",
                     *(display.FormatGeneric(value) for value in
                       (plan.initial_score, plan.optimal_score,
                        opts.min_score)))
        cli.ToStdout("Nothing to do, exiting")
        return constants.EXIT_SUCCESS
    cli.ToStdout("Trying to minimize the CV...")
    final = Cluster(message, util)
    alias = display.Aliases(initial)
    lines = _Lines(final, plan, alias)
    ordered = [lines[step] for step in plan.steps]
    widths = (max((len(alias(name)) for node in nodes
                   for name in node.plist), default=0),
              max(len(alias(name)) for name in names))
    for text in FormatSolution(ordered, True, *widths):
        cli.ToStdout("%s", text)
    if not plan.steps:
        cli.ToStdout("No solution found")
    else:
        cli.ToStdout("Cluster score improved from %.8f to %.8f",
                     plan.initial_score, plan.final_score)
    # as hbal, also for no solution
    cli.ToStdout("Solution length=%d", len(plan.steps))
    if opts.print_commands:
        cli.ToStdout("")
        for text in FormatCommands(plan, lines):
            cli.ToStdout("%s", text)
    _PrintInstances(opts, "Final", final, names)
    PrintNodes(opts, "Final cluster", final, initial, names)
    if opts.execute and plan.steps:
        return _Execute(opts, plan, lines)
    return constants.EXIT_SUCCESS


def BuildParser(usage: str, description: str,
                options: list[CliOption]) -> OptionParser:
    """The option parser of an htools-compatible program."""
    parser = OptionParser(usage=usage, description=description,
                          option_class=CliOption,
                          version="%%prog (ganeti) %s" %
                          constants.RELEASE_VERSION)
    for option in options + [DEBUG_OPT, REASON_OPT]:
        parser.add_option(option)
    return parser


def RunProgram(parser: OptionParser, fn: Callable[[Any, list[str]], int],
               argv: list[str] | None = None) -> int:
    """Parse the command line and run ``fn`` with gnt-*'s error
    reporting (messages and exit codes as cli.FormatError gives them).
    The htools' ``-L<path>``/``--luxi=<path>`` (an optional argument,
    which optparse lacks) name the master's socket, ``-p<fields>``/
    ``--print-nodes=<fields>`` the fields of the node list."""
    opts, args = ParseArgs(parser, (sys.argv if argv is None else argv)[1:])
    if args:
        # A usage error, reported as gnt-* commands do
        cli.ToStderr("%s\n%s: error: unexpected arguments: %s",
                     parser.get_usage().strip(), parser.get_prog_name(),
                     " ".join(args))
        return constants.EXIT_FAILURE
    try:
        return fn(opts, args)
    except (errors.GenericError, errors.JobSubmittedException) as err:
        code, text = cli.FormatError(err)
        cli.ToStderr("%s", text)
        return code


def ParseArgs(parser: OptionParser, args: list[str]) -> tuple[Any, list]:
    """``parser.parse_args`` with the htools' optional arguments (see
    RunProgram) in ``opts.luxi_address`` and ``opts.node_fields``."""
    args = list(args)
    values: dict[str, str | None] = {"luxi_address": None,
                                     "node_fields": None}
    optional = [("--luxi=", "-L", "luxi_address"),
                ("--print-nodes=", "-p", "node_fields"),
                ("-p", "-p", "node_fields"), ("-L", "-L", "luxi_address")]
    for idx, arg in enumerate(args):
        if arg == "--":
            break
        for prefix, short, dest in optional:
            if arg.startswith(prefix) and len(arg) > len(prefix) and \
                    parser.has_option(short):
                values[dest] = arg[len(prefix):]
                args[idx] = short
                break
    opts, args = parser.parse_args(args)
    for dest, value in values.items():
        setattr(opts, dest, value)
    return opts, args


def Parser() -> OptionParser:
    return BuildParser("%prog [options...]",
                       "Computes a series of instance moves that lower the"
                       " score of a node group (see gnt-cluster rebalance),"
                       " prints them and with -X runs them",
                       REBALANCE_OPTS + [PRINT_NODES_OPT, PRINT_INSTANCES_OPT,
                                         OFFLINE_OPT, MIN_DISK_OPT])


def Main() -> int:
    return RunProgram(Parser(), Rebalance)
