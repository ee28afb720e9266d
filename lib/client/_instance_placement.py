"""Moving an instance or its disks, with their options: gnt-instance
failover, migrate, move, replace-disks and change-group.

Failover, migration and move ask first unless ``--force`` is given;
change-group waits for the jobs the allocator's answer makes.
"""

from typing import Any

from ganeti import cli, constants, errors, opcodes
from ganeti.cli_opts import (FORCE_OPT, MigrationModeFromOpts,
                             OpcodeOption, cli_option)

_Migrate = opcodes.OpInstanceMigrate

CLEANUP_OPT = OpcodeOption(_Migrate, "cleanup", "--cleanup")
ALLOW_FAILOVER_OPT = OpcodeOption(_Migrate, "allow_failover",
                                  "--allow-failover")
IGNORE_HVVERSIONS_OPT = OpcodeOption(_Migrate, "ignore_hvversions",
                                     "--ignore-hvversions")


_Replace = opcodes.OpInstanceReplaceDisks
NEW_SECONDARY_OPT = OpcodeOption(_Replace, "remote_node", "-n",
                                 "--new-secondary", dest="dst_node",
                                 metavar="NODE")
ON_PRIMARY_OPT = cli_option("-p", "--on-primary", dest="on_primary",
                            default=False, action="store_true",
                            help="Replace the disk(s) on the primary node"
                            " (applies only to internally mirrored disk"
                            " templates, e.g. %s)" % constants.DT_DRBD8)
ON_SECONDARY_OPT = cli_option("-s", "--on-secondary", dest="on_secondary",
                              default=False, action="store_true",
                              help="Replace the disk(s) on the secondary"
                              " node (applies only to internally mirrored"
                              " disk templates, e.g. %s)" %
                              constants.DT_DRBD8)
AUTO_REPLACE_OPT = cli_option("-a", "--auto", dest="auto", default=False,
                              action="store_true",
                              help="Automatically replace faulty disks"
                              " (applies only to internally mirrored disk"
                              " templates, e.g. %s)" % constants.DT_DRBD8)
DISKIDX_OPT = cli_option("--disks", dest="disks", default=None,
                         help="Comma-separated list of disks indices to act"
                         " on (e.g. 0,2) (optional, defaults to all disks)")
REPLACE_EARLY_RELEASE_OPT = OpcodeOption(_Replace, "early_release",
                                         "--early-release")
REPLACE_IGNORE_IPOLICY_OPT = OpcodeOption(_Replace, "ignore_ipolicy",
                                          "--ignore-ipolicy")


def ReplaceDisks(opts: Any, args: list[str]) -> int:
    """Replace the disks of a drbd instance (one of -p, -s, -a, -n, -I)."""
    try:
        disks = [int(idx) for idx in opts.disks.split(",")] \
            if opts.disks else []
    except ValueError as err:
        raise errors.OpPrereqError("Invalid disk index passed: %s" % err,
                                   errors.ECODE_INVAL)
    choices = [opts.on_primary, opts.on_secondary, opts.auto,
               opts.dst_node is not None, opts.iallocator is not None]
    if choices.count(True) != 1:
        raise errors.OpPrereqError("One and only one of the -p, -s, -a, -n"
                                   " and -I options must be passed",
                                   errors.ECODE_INVAL)
    if opts.on_primary:
        mode = constants.REPLACE_DISK_PRI
    elif opts.on_secondary:
        mode = constants.REPLACE_DISK_SEC
    elif opts.auto:
        mode = constants.REPLACE_DISK_AUTO
        if disks:
            raise errors.OpPrereqError("Cannot specify disks when using"
                                       " automatic mode", errors.ECODE_INVAL)
    else:
        mode = constants.REPLACE_DISK_CHG
    op = opcodes.OpInstanceReplaceDisks(
        instance_name=args[0], disks=disks, remote_node=opts.dst_node,
        mode=mode, iallocator=opts.iallocator,
        early_release=opts.early_release,
        ignore_ipolicy=opts.ignore_ipolicy)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def _CheckTargetChoice(opts: Any) -> None:
    if opts.iallocator and opts.dst_node:
        raise errors.OpPrereqError("Specify either an iallocator (-I), or a"
                                   " target node (-n) but not both",
                                   errors.ECODE_INVAL)


def FailoverInstance(opts: Any, args: list[str]) -> int:
    """Stop an instance and start it on another node (asks unless -f)."""
    name = args[0]
    _CheckTargetChoice(opts)
    if not opts.force:
        # Refuses an unknown instance before asking about it
        cli.QueryRows(constants.QR_INSTANCE, ["name"], [name])
        if not cli.AskUser("Failover will happen to image %s. This requires"
                           " a shutdown of the instance. Continue?" % name,
                           skip_option=FORCE_OPT):
            return constants.EXIT_FAILURE
    op = opcodes.OpInstanceFailover(
        instance_name=name, ignore_consistency=opts.ignore_consistency,
        shutdown_timeout=opts.shutdown_timeout, iallocator=opts.iallocator,
        target_node=opts.dst_node, ignore_ipolicy=opts.ignore_ipolicy,
        member_of=opts.member_of)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def MigrateInstance(opts: Any, args: list[str]) -> int:
    """Move a running instance to another node (asks unless -f)."""
    name = args[0]
    _CheckTargetChoice(opts)
    mode = MigrationModeFromOpts(opts)
    if not opts.force:
        cli.QueryRows(constants.QR_INSTANCE, ["name"], [name])
        if opts.cleanup:
            question = ("Instance %s will be recovered from a failed"
                        " migration. Note that the migration procedure"
                        " (including cleanup)" % name)
        else:
            question = ("Instance %s will be migrated. Note that migration"
                        % name)
        question += (" might impact the instance if anything goes wrong"
                     " (e.g. due to bugs in the hypervisor). Continue?")
        if not cli.AskUser(question, skip_option=FORCE_OPT):
            return constants.EXIT_FAILURE
    op = opcodes.OpInstanceMigrate(
        instance_name=name, mode=mode, cleanup=opts.cleanup,
        iallocator=opts.iallocator, target_node=opts.dst_node,
        allow_failover=opts.allow_failover,
        allow_runtime_changes=opts.allow_runtime_chgs,
        ignore_ipolicy=opts.ignore_ipolicy,
        ignore_hvversions=opts.ignore_hvversions, member_of=opts.member_of)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def MoveInstance(opts: Any, args: list[str]) -> int:
    """Move an instance by copying its disks to a node (asks unless -f)."""
    name = args[0]
    if not opts.node:
        raise errors.OpPrereqError("A target node must be given with -n",
                                   errors.ECODE_INVAL)
    if not opts.force:
        cli.QueryRows(constants.QR_INSTANCE, ["name"], [name])
        if not cli.AskUser("Instance %s will be moved. This requires a"
                           " shutdown of the instance. Continue?" % name,
                           skip_option=FORCE_OPT):
            return constants.EXIT_FAILURE
    op = opcodes.OpInstanceMove(
        instance_name=name, target_node=opts.node, compress=opts.compress,
        shutdown_timeout=opts.shutdown_timeout,
        ignore_consistency=opts.ignore_consistency,
        ignore_ipolicy=opts.ignore_ipolicy, member_of=opts.member_of)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def ChangeGroup(opts: Any, args: list[str]) -> int:
    """Move an instance to another node group and wait for the move job."""
    name = args[0]
    cl = cli.GetClient()
    op = opcodes.OpInstanceChangeGroup(instance_name=name,
                                       iallocator=opts.iallocator,
                                       target_groups=opts.to,
                                       early_release=opts.early_release)
    return cli.FollowUpJobsExit(
        op, opts, cl, "There were %%s errors while changing group of"
        " instance '%s'." % name,
        "Instance '%s' changed group successfully." % name)
