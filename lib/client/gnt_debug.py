"""Ganeti debugging and testing commands: tools for testing and debugging
the cluster."""

import time
from typing import Any

from ganeti import cli, constants, errors, opcodes, serializer, utils
from ganeti.cli_opts import (
    ARGS_NONE, ArgFile, ArgUnknown, DRY_RUN_OPT, FIELDS_OPT, INTERVAL_OPT,
    NOHDR_OPT, OSPARAMS_SECRET_OPT, OpcodeOption, PRINT_JOBID_OPT,
    PRIORITY_OPT, SEP_OPT, SUBMIT_OPT, VERBOSE_OPT, cli_option)
from ganeti.client._debug_jqueue import TestJobqueue

_Delay = opcodes.OpTestDelay

_LIST_LOCKS_DEF_FIELDS = ["name", "mode", "owner", "pending"]

_DELAY_OPTS = [
    OpcodeOption(_Delay, "on_master", "--no-master", action="store_false",
                 help="Do not sleep in the master code"),
    OpcodeOption(_Delay, "on_master", "--on-master", action="store_true",
                 help="Sleep in the master code (the default)"),
    OpcodeOption(_Delay, "on_nodes", "-n", action="append", metavar="NODE",
                 help="Select nodes to sleep on (can be given several"
                 " times)"),
    OpcodeOption(_Delay, "repeat", "-r", "--repeat"),
    OpcodeOption(_Delay, "interruptible", "-i", "--interruptible"),
    # As in Ganeti, the command takes the locks unless told not to
    OpcodeOption(_Delay, "no_locks", "-l", "--no-locks", default=False,
                 help="Don't take locks while performing the delay"),
    DRY_RUN_OPT, PRIORITY_OPT, SUBMIT_OPT, PRINT_JOBID_OPT,
]


def Delay(opts: Any, args: list[str]) -> int:
    """Submit an OP_TEST_DELAY job (and wait for it unless --submit)."""
    try:
        duration = float(args[0])
    except ValueError as err:
        raise errors.OpPrereqError("Invalid duration '%s': must be a number"
                                   " of seconds" % args[0],
                                   errors.ECODE_INVAL) from err
    op = _Delay(duration=duration, on_master=opts.on_master,
                on_nodes=opts.on_nodes, repeat=opts.repeat,
                interruptible=opts.interruptible, no_locks=opts.no_locks)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


_Alloc = opcodes.OpTestAllocator
_IALLOCATOR_OPTS = [
    OpcodeOption(_Alloc, "direction", "--dir",
                 default=constants.IALLOCATOR_DIR_IN,
                 type="choice",
                 choices=sorted(constants.VALID_IALLOCATOR_DIRECTIONS)),
    OpcodeOption(_Alloc, "mode", "-m", "--mode",
                 default=constants.IALLOCATOR_MODE_ALLOC,
                 type="choice",
                 choices=sorted(constants.VALID_IALLOCATOR_MODES)),
    OpcodeOption(_Alloc, "memory", "--memory", default=128),
    cli_option("--disks", dest="disks", default="4096,4096",
               help="Comma-separated list of disk sizes (MiB)"),
    cli_option("--nics", dest="nics", default="00:11:22:33:44:55",
               help="Comma-separated list of NICs, each mac/ip/bridge"),
    OpcodeOption(_Alloc, "disk_template", "-t", "--disk-template"),
    OpcodeOption(_Alloc, "vcpus", "-p", "--vcpus", default=1),
    OpcodeOption(_Alloc, "os", "-o", "--os-type", default="busybox"),
    OpcodeOption(_Alloc, "iallocator", "-I", "--iallocator"),
    cli_option("--tags", dest="tags", default="",
               help="Comma-separated list of tags"),
    OpcodeOption(_Alloc, "hypervisor", "-H", "--hypervisor"),
    OpcodeOption(_Alloc, "evac_mode", "--evac-mode",
                 default=constants.NODE_EVAC_ALL,
                 type="choice", choices=sorted(constants.NODE_EVAC_MODES)),
    cli_option("--target-groups", dest="target_groups", default="",
               help="Comma-separated list of target node groups"),
    OpcodeOption(_Alloc, "spindle_use", "--spindle-use"),
    OpcodeOption(_Alloc, "count", "--count"),
    OpcodeOption(_Alloc, "group_name", "--group"),
    OpcodeOption(_Alloc, "explain", "--explain"),
    DRY_RUN_OPT, PRIORITY_OPT,
]


def _CommaList(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def TestAllocator(opts: Any, args: list[str]) -> int:
    """Show an allocator's input message or run the allocator on it."""
    try:
        disks = [{"size": utils.ParseUnit(size), "mode": "rw"}
                 for size in _CommaList(opts.disks)]
    except errors.UnitParseError as err:
        raise errors.OpPrereqError("Invalid disks parameter '%s': %s" %
                                   (opts.disks, err),
                                   errors.ECODE_INVAL) from None
    nics = []
    for spec in _CommaList(opts.nics):
        parts = (spec.split("/") + [None, None])[:3]
        nics.append({"mac": parts[0], "ip": parts[1] or None,
                     "bridge": parts[2] or None})
    names = _CommaList(args[0])
    op = _Alloc(
        direction=opts.direction, mode=opts.mode, name=args[0],
        memory=opts.memory, disks=disks, nics=nics,
        disk_template=opts.disk_template, vcpus=opts.vcpus, os=opts.os,
        iallocator=opts.iallocator, tags=_CommaList(opts.tags),
        hypervisor=opts.hypervisor, evac_mode=opts.evac_mode,
        instances=names, target_groups=_CommaList(opts.target_groups),
        spindle_use=opts.spindle_use, count=opts.count,
        group_name=opts.group_name, explain=opts.explain)
    cli.ToStdout("%s", cli.SubmitOpCode(op, opts=opts))
    return constants.EXIT_SUCCESS


def _LoadOpList(fname: str) -> list[dict]:
    try:
        data = serializer.LoadJson(utils.ReadFile(fname))
    except (OSError, ValueError) as err:
        raise errors.OpPrereqError("Can't load opcodes from %s: %s" %
                                   (fname, err), errors.ECODE_INVAL) from err
    if not isinstance(data, list) or \
            not all(isinstance(op, dict) and "OP_ID" in op for op in data):
        raise errors.OpPrereqError("File %s must contain a list of opcode"
                                   " dictionaries (with \"OP_ID\")" % fname,
                                   errors.ECODE_INVAL)
    return data


def GenericOpCodes(opts: Any, args: list[str]) -> int:
    """Submit one job per file of serialized opcodes and wait for them."""
    jex = cli.JobExecutor(verbose=opts.verbose, opts=opts)
    job_cnt = 0
    op_cnt = 0
    if opts.timing_stats:
        cli.ToStdout("Loading...")
    for job_idx in range(opts.rep_job):
        for fname in args:
            ops = _LoadOpList(fname) * opts.rep_op
            # Each job gets its own copies (the reason trail is set per op)
            jex.QueueJob("file %s/%d" % (fname, job_idx),
                         *[dict(op) for op in ops])
            op_cnt += len(ops)
            job_cnt += 1
    start = time.time()
    if opts.timing_stats:
        cli.ToStdout("Submitting...")
    jex.SubmitPending(each=opts.each)
    submitted = time.time()
    if opts.timing_stats:
        cli.ToStdout("Executing...")
    results = jex.GetResults()
    done = time.time()
    if opts.timing_stats:
        cli.ToStdout("C:op     %4d", op_cnt)
        cli.ToStdout("C:job    %4d", job_cnt)
        cli.ToStdout("T:submit %4.4f", submitted - start)
        cli.ToStdout("T:exec   %4.4f", done - submitted)
        cli.ToStdout("T:total  %4.4f", done - start)
    if all(success for success, _ in results):
        return constants.EXIT_SUCCESS
    return constants.EXIT_FAILURE


def TestOsParams(opts: Any, args: list[str]) -> int:
    """Send secret OS parameters to the master, which shows them in the
    job's log: their transport is what is tested."""
    cli.SubmitOrSend(opcodes.OpTestOsParams(
        osparams_secret=opts.osparams_secret), opts)
    return constants.EXIT_SUCCESS


def _DashIfEmpty(fn: Any) -> Any:
    def wrapper(value: Any) -> str:
        if not value:
            return "-"
        return fn(value)
    return wrapper


def _FormatPending(value: list) -> str:
    return ", ".join("%s:%s" % (mode, ",".join(str(owner)
                                               for owner in owners))
                     for mode, owners in value)


_LOCKS_FORMAT = {
    "mode": (_DashIfEmpty(str), False),
    "owner": (_DashIfEmpty(lambda owners: ",".join(str(owner)
                                                   for owner in owners)),
              False),
    "pending": (_DashIfEmpty(_FormatPending), False),
}


def ListLocks(opts: Any, args: list[str]) -> int:
    """Show the locks of the master daemon (repeatedly with --interval)."""
    fields = cli.ParseFields(opts.output, _LIST_LOCKS_DEF_FIELDS)
    while True:
        ret = cli.GenericList(constants.QR_LOCK, fields, None, None,
                              opts.separator, not opts.no_headers,
                              format_override=_LOCKS_FORMAT,
                              verbose=opts.verbose)
        if ret != constants.EXIT_SUCCESS or not opts.interval:
            return ret
        cli.ToStdout("")
        time.sleep(opts.interval)


commands = {
    "delay": (
        Delay, [ArgUnknown(min=1, max=1)], _DELAY_OPTS,
        "[<opts>...] <duration>", "Executes a TestDelay OpCode"),
    "submit-job": (
        GenericOpCodes, [ArgFile(min=1)],
        [VERBOSE_OPT,
         cli_option("--op-repeat", type="int", default=1, dest="rep_op",
                    help="Repeat the opcode sequence this number of times"),
         cli_option("--job-repeat", type="int", default=1, dest="rep_job",
                    help="Repeat the job this number of times"),
         cli_option("--timing-stats", default=False, action="store_true",
                    help="Show timing stats"),
         cli_option("--each", default=False, action="store_true",
                    help="Submit each job separately"),
         DRY_RUN_OPT, PRIORITY_OPT],
        "<op-list-file>...",
        "Submits jobs built from json files containing a list of serialized"
        " opcodes"),
    "iallocator": (
        TestAllocator, [ArgUnknown(min=1, max=1)], _IALLOCATOR_OPTS,
        "[<opts>...] <instance>",
        "Builds an instance allocator's input message (--dir in) or runs"
        " the allocator on it (--dir out)"),
    "test-jobqueue": (
        TestJobqueue, ARGS_NONE, [PRIORITY_OPT],
        "", "Test a few aspects of the job queue"),
    "test-osparams": (
        TestOsParams, ARGS_NONE,
        [OSPARAMS_SECRET_OPT, SUBMIT_OPT, PRINT_JOBID_OPT],
        "[--os-parameters-secret <params>]",
        "Test secret os parameter transmission"),
    "locks": (
        ListLocks, [], [NOHDR_OPT, SEP_OPT, FIELDS_OPT, INTERVAL_OPT,
                        VERBOSE_OPT],
        "[--interval N]", "Show a list of locks in the master daemon"),
}


def Main() -> int:
    return cli.GenericMain(commands)
