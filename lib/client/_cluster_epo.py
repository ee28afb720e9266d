"""``gnt-cluster epo``: emergency power-off, and recovery from it.

As Ganeti's: the instances of the affected nodes are shut down (without
remembering it, so that ``--on`` starts them again), then the nodes with
an out-of-band program are powered off through it; nodes without one are
named and left to the admin. ``--on`` powers those nodes on, waits until
each node's node daemon answers and starts every instance once all its
nodes are back. The master is never powered off: without ``--all`` an EPO
including it is refused.
"""

import itertools
import time
from typing import Any

from ganeti import cli, constants, netutils, opcodes
from ganeti.cli_opts import (ALL_OPT, FORCE_OPT, OOB_TIMEOUT_OPT,
                             POWER_DELAY_OPT, SHUTDOWN_TIMEOUT_OPT,
                             cli_option)

# Ganeti's: how often and how long the nodes are pinged after --on
_EPO_PING_INTERVAL = 30
_EPO_PING_TIMEOUT = 1
_EPO_REACHABLE_TIMEOUT = 15 * 60

ON_OPT = cli_option("--on", default=False, action="store_true", dest="on",
                    help="Recover from an EPO")
GROUPS_OPT = cli_option("--groups", default=False, action="store_true",
                        dest="groups",
                        help="Arguments are node groups instead of nodes")
EPO_OPTS = [FORCE_OPT, ON_OPT, GROUPS_OPT, ALL_OPT, OOB_TIMEOUT_OPT,
            SHUTDOWN_TIMEOUT_OPT, POWER_DELAY_OPT]


def _OobPower(opts: Any, nodes: list[str], power: bool) -> bool:
    """Power nodes on or off through OOB; whether none failed."""
    op = opcodes.OpOobCommand(
        node_names=nodes,
        command=constants.OOB_POWER_ON if power else constants.OOB_POWER_OFF,
        ignore_status=True, timeout=opts.oob_timeout,
        power_delay=opts.power_delay)
    result = cli.SubmitOpCode(op, opts=opts)
    ok = True
    for (_, node_name), (status, _) in result:
        if status != constants.RS_NORMAL:
            ok = False
            cli.ToStderr("There was a problem changing power for %s, please"
                         " investigate", node_name)
    return ok


def _InstanceStart(opts: Any, instances: list[str], start: bool) -> bool:
    """Start or shut down instances, one job each; whether none failed."""
    if start:
        verbs = ("startup", "started", "starting")
    else:
        verbs = ("shutdown", "stopped", "stopping")
    jex = cli.JobExecutor(opts=opts)
    for name in instances:
        cli.ToStdout("Submit %s of instance %s", verbs[0], name)
        op: opcodes.OpCode
        if start:
            op = opcodes.OpInstanceStartup(instance_name=name)
        else:
            op = opcodes.OpInstanceShutdown(instance_name=name,
                                            timeout=opts.shutdown_timeout,
                                            no_remember=True)
        jex.QueueJob(name, op)
    results = jex.GetResults()
    bad = sum(1 for success, _ in results if not success)
    if bad:
        cli.ToStderr("There were errors while %s instances:\n"
                     "%d error(s) out of %d instance(s)", verbs[2], bad,
                     len(results))
        return False
    cli.ToStdout("All instances have been %s successfully", verbs[1])
    return True


def _StartReady(opts: Any, inst_map: dict[str, set[str]],
                nodes_up: set[str]) -> bool:
    """Start (and forget) the instances all of whose nodes are up."""
    ready = [name for name, nodes in inst_map.items()
             if not nodes - nodes_up]
    for name in ready:
        del inst_map[name]
    return _InstanceStart(opts, ready, True) if ready else True


def _WaitAndStart(opts: Any, addresses: dict[str, str],
                  inst_map: dict[str, set[str]]) -> bool:
    """Start instances as their nodes' node daemons answer again."""
    port = netutils.GetDaemonPort(constants.NODED)
    down = dict(addresses)
    up: set[str] = set()
    success = True
    deadline = time.monotonic() + _EPO_REACHABLE_TIMEOUT
    while True:
        if not _StartReady(opts, inst_map, up):
            success = False
        if not down:
            return success
        if time.monotonic() > deadline:
            cli.ToStderr("Time exceeded while waiting for nodes to become"
                         " reachable again:\n  - %s", "  - ".join(down))
            return False
        start = time.monotonic()
        for name, address in down.items():
            if netutils.TcpPing(address, port, _EPO_PING_TIMEOUT,
                                live_port_needed=True):
                cli.ToStdout("Node %s became available", name)
                up.add(name)
                del down[name]
                break
        else:
            time.sleep(max(0.0, start + _EPO_PING_INTERVAL -
                           time.monotonic()))


def _EpoOn(opts: Any, addresses: dict[str, str], nodes: list[str],
           inst_map: dict[str, set[str]]) -> int:
    if nodes and not _OobPower(opts, nodes, True):
        cli.ToStderr("Not all nodes seem to get back up, investigate and"
                     " start manually if needed")
    cli.ToStdout("Waiting until all nodes are available again")
    if not _WaitAndStart(opts, addresses, dict(inst_map)):
        cli.ToStderr("Please investigate and start stopped instances"
                     " manually")
        return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def _EpoOff(opts: Any, nodes: list[str],
            inst_map: dict[str, set[str]]) -> int:
    if not _InstanceStart(opts, list(inst_map), False):
        cli.ToStderr("Please investigate and stop instances manually before"
                     " continuing")
        return constants.EXIT_FAILURE
    if nodes and not _OobPower(opts, nodes, False):
        return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def Epo(opts: Any, args: list[str]) -> int:
    """Emergency power-off of nodes (or groups, or the cluster), or the
    recovery from it with --on."""
    if opts.groups and opts.show_all:
        cli.ToStderr("Only one of --groups or --all are allowed")
        return constants.EXIT_FAILURE
    if args and opts.show_all:
        cli.ToStderr("Arguments in combination with --all are not allowed")
        return constants.EXIT_FAILURE
    client = cli.GetClient()
    if opts.groups:
        names = list(itertools.chain.from_iterable(
            row[0] for row in client.QueryGroups(args, ["node_list"],
                                                 False)))
    else:
        names = args
    rows = client.QueryNodes(names, ["name", "master", "pinst_list",
                                     "sinst_list", "powered", "offline",
                                     "pip"], False)
    addresses = {row[0]: row[6] for row in rows}
    nodes = []
    # Instance -> the nodes (but the master) it waits for after --on
    inst_map: dict[str, set[str]] = {}
    for name, master, pinsts, sinsts, powered, offline, _ in rows:
        if not offline:
            for inst in pinsts + sinsts:
                waits_for = inst_map.setdefault(inst, set())
                if not master:
                    waits_for.add(name)
        if master and opts.on:
            # The master runs this very command
            continue
        if master and not opts.show_all:
            cli.ToStderr("%s is the master node, please do a master-failover"
                         " to another node not affected by the EPO or use"
                         " --all if you intend to shutdown the whole"
                         " cluster", name)
            return constants.EXIT_FAILURE
        if powered is None:
            cli.ToStdout("Node %s does not support out-of-band handling, it"
                         " can not be handled in a fully automated manner",
                         name)
        elif powered == opts.on:
            cli.ToStdout("Node %s is already in desired power state,"
                         " skipping", name)
        elif not offline or powered:
            nodes.append(name)
    if not (opts.force or cli.ConfirmOperation(list(addresses), "nodes",
                                               "epo", skip_option=FORCE_OPT)):
        return constants.EXIT_FAILURE
    if opts.on:
        return _EpoOn(opts, addresses, nodes, inst_map)
    return _EpoOff(opts, nodes, inst_map)
