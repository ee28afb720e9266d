"""Ganeti auto-repair tool: one harep pass over the instances, for cron.

The rules are those of ``ganeti.maintd.autorepair``: repairs only where
the ``ganeti:watcher:autorepair:<type>`` tags of the instance, its node
group or the cluster allow them, the state kept in the instance's
``ganeti:watcher:autorepair:pending:...`` and ``...:result:...`` tags.
Each run first follows the pending repairs (their jobs all over: a
result tag), then submits the repairs broken instances need, tagging
them pending with the repair's job id, and prints how many instances are
in which state. ganeti-maintd does the same in its rounds when
``gnt-cluster modify --maintd-harep yes`` is set.
"""

from optparse import OptionParser
from typing import Any

from ganeti import cli, constants, errors, luxi, opcodes
from ganeti.cli_opts import PRIORITY_OPT, cli_option
from ganeti.client import hbal
from ganeti.maintd import autorepair

JOB_DELAY_OPT = cli_option(
    "--job-delay", dest="job_delay", type="float", default=10.0,
    metavar="SECONDS",
    help="Delay the repair jobs by this much (a test delay opcode first),"
    " so that their instance is tagged before they take its locks"
    " (default: %default)")
DRY_RUN_OPT = cli_option(
    "--dry-run", dest="dry_run", default=False, action="store_true",
    help="Only show what would be done; nothing is submitted and no tag"
    " is changed")


def _Offline(cl: luxi.Client) -> set[str]:
    """The nodes harep treats as offline: offline or drained (harep can't
    tell them apart)."""
    return {name for name, offline, drained in
            cl.QueryNodes([], ["name", "offline", "drained"], False)
            if offline or drained}


def ReadInstances(cl: luxi.Client) -> list[autorepair.Instance]:
    """Every instance with the tags of its node group and the cluster."""
    group_tags = {uuid: list(tags) for uuid, tags in
                  cl.QueryGroups([], ["uuid", "tags"], False)}
    cluster_tags = list(cl.QueryTags(constants.TAG_CLUSTER, None))
    return [autorepair.Instance.FromQuery(row, group_tags, cluster_tags)
            for row in cl.QueryInstances([], autorepair.Instance.Fields(),
                                         False)]


def JobStatuses(cl: luxi.Client, job_ids: list[int]) -> list[str | None]:
    """The jobs' statuses, None for jobs the queue no longer knows."""
    return [row[0] if row else None
            for row in cl.QueryJobs(job_ids, ["status"])]


def _RunJob(cl: luxi.Client, ops: list[opcodes.OpCode], opts: Any) -> None:
    cli.SetGenericOpcodeOpts(ops, opts)
    cli.PollJob(cli.SendJob(ops, cl=cl), cl=cl)


def _Carry(cl: luxi.Client, action: autorepair.Action, opts: Any) -> None:
    """Carry out an action (with --dry-run: only say what it is)."""
    cli.ToStdout("%s", action.message)
    if action.repair is None:
        if not opts.dry_run:
            _RunJob(cl, action.TagOps(), opts)
        return
    repair_ops = list(action.repair.ops)
    if opts.job_delay > 0:
        repair_ops.insert(0, opcodes.OpTestDelay(duration=opts.job_delay,
                                                 on_master=True))
    if opts.dry_run:
        cli.ToStdout("Would submit a job: %s",
                     ", ".join(op.OP_ID for op in repair_ops))
        return
    cli.SetGenericOpcodeOpts(repair_ops, opts)
    job_id = int(cli.SendJob(repair_ops, cl=cl))
    tag = action.PendingTag([job_id])
    cli.ToStdout(">>> Adding the following tag to %s:\n%r", action.instance,
                 tag)
    _RunJob(cl, action.TagOps(tag), opts)


def Repair(opts: Any, _args: list[str]) -> int:
    """One harep pass (see the module doc)."""
    cl = cli.GetClient()
    instances = ReadInstances(cl)
    try:
        for inst in instances:
            autorepair.InitialState(inst.name, inst.tags)
    except errors.AutoRepairError as err:
        cli.ToStderr("Error: when parsing auto-repair tags: %s", err)
        return constants.EXIT_FAILURE
    offline = _Offline(cl)
    counts: dict[str, int] = {}
    for inst in instances:
        plan = autorepair.PlanInstance(
            inst, offline.__contains__,
            lambda jobs: JobStatuses(cl, jobs))
        for action in plan.actions:
            _Carry(cl, action, opts)
        counts[plan.state] = counts.get(plan.state, 0) + 1
    cli.ToStdout("---------------------")
    cli.ToStdout("Instance status count")
    cli.ToStdout("---------------------")
    for state in sorted(counts):
        cli.ToStdout("%s: %d", state, counts[state])
    return constants.EXIT_SUCCESS


def Parser() -> OptionParser:
    return hbal.BuildParser(
        "%prog [options...]",
        "Harep is the Ganeti auto-repair tool, meant to run from cron: it"
        " repairs the instances whose nodes are offline or drained (drbd:"
        " a new secondary, a failover, or recreated disks and a reinstall;"
        " plain: recreated disks and a reinstall) as far as the"
        " ganeti:watcher:autorepair:<type> tags of the instance, its node"
        " group or the cluster allow (fix-storage, migrate, failover,"
        " reinstall; each allows the ones before it; the nearest object"
        " decides, the least destructive of its tags wins;"
        " ganeti:watcher:autorepair:suspend[:<time>] stops repairs),"
        " keeping each repair's state in the instance's"
        " ganeti:watcher:autorepair:pending:... and"
        " ganeti:watcher:autorepair:result:... tags",
        [JOB_DELAY_OPT, DRY_RUN_OPT, hbal.LUXI_OPT, PRIORITY_OPT])


def Main() -> int:
    return hbal.RunProgram(Parser(), Repair)
