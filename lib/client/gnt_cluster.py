"""Ganeti cluster administration: cluster-wide commands."""

import os
import stat
import sys
import time
from typing import Any

from ganeti import (cli, constants, errors, objects, opcodes, serializer,
                    ssconf)
from ganeti.cli_opts import (
    ARGS_MANY_INSTANCES, ArgChoice, ArgCommand, ArgFile, ArgHost, ArgSuggest,
    ArgUnknown, CONFIRM_OPT, FORCE_OPT, IPOLICY_BOUNDS_OPT, IPOLICY_STD_OPT,
    NODE_LIST_OPT, VERBOSE_OPT, OpcodeOption, PRIORITY_OPT, DRY_RUN_OPT,
    ROMAN_OPT, SUBMIT_OPT, PRINT_JOBID_OPT, TAG_SRC_OPT, YES_DOIT_OPT,
    cli_option)
from ganeti.client import (_cluster_crypto, _cluster_epo, _cluster_info,
                           _cluster_params, hbal, hspace)
from ganeti.rpc import node as rpc_node

NOVOTING_OPT = cli_option("--no-voting", dest="no_voting", default=False,
                          action="store_true",
                          help="Skip node agreement check (dangerous)")


def _FormatSpecs(specs: dict) -> str:
    return ",".join("%s=%s" % item for item in sorted(specs.items()))


def FormatIPolicyCommand(ipolicy: dict, isgroup: bool) -> str:
    """The --ipolicy-*-specs options giving ``ipolicy``'s specs, each
    preceded by a space (Ganeti's PrintIPolicyCommand: only the specs, and
    a group's policy has no std specs)."""
    parts = []
    std = ipolicy.get(objects.ISPECS_STD)
    if std and not isgroup:
        parts.append(" %s %s" % (IPOLICY_STD_OPT.get_opt_string(),
                                 _FormatSpecs(std)))
    bounds = ["%s:%s/%s:%s" % (
        objects.ISPECS_MIN, _FormatSpecs(pair[objects.ISPECS_MIN]),
        objects.ISPECS_MAX, _FormatSpecs(pair[objects.ISPECS_MAX]))
        for pair in ipolicy.get(objects.ISPECS_MINMAX, [])
        if pair.get(objects.ISPECS_MIN) and pair.get(objects.ISPECS_MAX)]
    if bounds:
        parts.append(" %s %s" % (IPOLICY_BOUNDS_OPT.get_opt_string(),
                                 "//".join(bounds)))
    return "".join(parts)


def DestroyCluster(opts: Any, args: list[str]) -> int:
    """Destroy the cluster; only with --yes-do-it."""
    if not opts.yes_do_it:
        cli.ToStderr("Destroying a cluster is irreversible. If you really"
                     " want to destroy this cluster, supply the --yes-do-it"
                     " option.")
        return constants.EXIT_FAILURE
    # The node-side machinery (backend, config, pycurl): imported by the
    # few commands that need it, off every gnt-cluster start-up
    from ganeti import bootstrap
    op = opcodes.OpClusterDestroy()
    master_name = cli.SubmitOpCode(op, opts=opts)
    bootstrap.FinalizeClusterDestroy(master_name)
    return constants.EXIT_SUCCESS


def ShowClusterVersion(opts: Any, args: list[str]) -> int:
    info = cli.GetClient().QueryClusterInfo()
    cli.ToStdout("Software version: %s", info["software_version"])
    cli.ToStdout("Internode protocol: %s", info["protocol_version"])
    cli.ToStdout("Configuration format: %s", info["config_version"])
    cli.ToStdout("OS api version: %s", info["os_api_version"])
    cli.ToStdout("Export interface: %s", info["export_version"])
    cli.ToStdout("VCS version: %s", info["vcs_version"])
    return constants.EXIT_SUCCESS


def ShowClusterMaster(opts: Any, args: list[str]) -> int:
    """Print the master node's name (from ssconf, works without masterd)."""
    cli.ToStdout("%s", ssconf.SimpleStore().GetMasterNode())
    return constants.EXIT_SUCCESS


def MasterFailover(opts: Any, args: list[str]) -> int:
    """Make this node (a master candidate) the master."""
    if opts.no_voting and not opts.yes_do_it:
        usertext = ("This will perform the failover even if most other nodes"
                    " are down, or if this node is outdated. This is"
                    " dangerous as it can lead to a non-consistent cluster."
                    " Check the gnt-cluster(8) man page before proceeding."
                    " Continue?")
        if not cli.AskUser(usertext, skip_option=YES_DOIT_OPT):
            return constants.EXIT_FAILURE
    from ganeti import bootstrap  # see DestroyCluster
    try:
        bootstrap.MasterFailover(no_voting=opts.no_voting,
                                 feedback_fn=cli.ToStdout)
    except errors.NotMasterError as err:
        cli.ToStderr("Failover refused: %s", err)
        return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def ActivateMasterIp(opts: Any, args: list[str]) -> int:
    """Add the master IP on the master node."""
    cli.SubmitOpCode(opcodes.OpClusterActivateMasterIp(), opts=opts)
    return constants.EXIT_SUCCESS


def DeactivateMasterIp(opts: Any, args: list[str]) -> int:
    """Remove the master IP from the master node (asks first)."""
    if not opts.confirm:
        usertext = ("This will disable the master IP. All the open"
                    " connections to the master IP will be closed. To"
                    " reach the master you will need to use its node IP."
                    " Continue?")
        if not cli.AskUser(usertext, skip_option=CONFIRM_OPT):
            return constants.EXIT_FAILURE
    cli.SubmitOpCode(opcodes.OpClusterDeactivateMasterIp(), opts=opts)
    return constants.EXIT_SUCCESS


def MasterPing(opts: Any, args: list[str]) -> int:
    """Exit 0 if the master daemon answers."""
    try:
        cli.GetClient().QueryClusterInfo()
        return constants.EXIT_SUCCESS
    except errors.GenericError as err:
        cli.ToStderr("Error while pinging master: %s", err)
        return constants.EXIT_FAILURE


def ShowCreateCommand(opts: Any, args: list[str]) -> int:
    """Print the ``gnt-cluster init`` command line giving the cluster's
    instance policy specs (as Ganeti, nothing else of the cluster)."""
    info = cli.GetClient().QueryClusterInfo()
    cli.ToStdout("gnt-cluster init%s %s",
                 FormatIPolicyCommand(info["ipolicy"], False), info["name"])
    return constants.EXIT_SUCCESS


def RenameCluster(opts: Any, args: list[str]) -> int:
    """Rename the cluster (its master IP follows the new name)."""
    client = cli.GetClient()
    (old_name, ) = client.QueryConfigValues(["cluster_name"])
    new_name = args[0]
    if not opts.force and not cli.AskUser(
            "This will rename the cluster from '%s' to '%s'. If you are"
            " connected over the network to the cluster name, the operation"
            " is very dangerous as the IP address will be removed from the"
            " node and the change may not go through. Continue?" %
            (old_name, new_name)):
        return constants.EXIT_FAILURE
    result = cli.SubmitOpCode(opcodes.OpClusterRename(name=new_name),
                              cl=client, opts=opts)
    if result:
        cli.ToStdout("Cluster renamed from '%s' to '%s'", old_name, result)
    return constants.EXIT_SUCCESS


def RepairDiskSizes(opts: Any, args: list[str]) -> int:
    """Correct the recorded disk sizes; the job log lists each change."""
    cli.SubmitOpCode(opcodes.OpClusterRepairDiskSizes(instances=args),
                     opts=opts)
    return constants.EXIT_SUCCESS


def QueueOps(opts: Any, args: list[str]) -> int:
    """Drain, undrain or describe the job queue."""
    command = args[0]
    client = cli.GetClient()
    if command in ("drain", "undrain"):
        client.SetQueueDrainFlag(command == "drain")
    elif command == "info":
        (drained, ) = client.QueryConfigValues(["drain_flag"])
        cli.ToStdout("The drain flag is %s", "set" if drained else "unset")
    return constants.EXIT_SUCCESS


AGG_METADATA_OPT = OpcodeOption(opcodes.OpClusterAggregateAdd, "metadata",
                                "--metadata", metavar="KEY=VALUE,...",
                                # a bare KEY is given as "" (not True)
                                opcode_check=None)


def _ShowAggregates(opts: Any, names: list[str], verbose: bool) -> None:
    """``aggregate list`` (a table) or ``aggregate info`` (all details)."""
    result = cli.SubmitOpCode(opcodes.OpClusterAggregateQuery(names=names),
                              opts=opts)
    if not verbose:
        cli.ToStdout("%-20s %-36s %-5s %s", "Name", "UUID", "Group", "Nodes")
        for agg in result:
            cli.ToStdout("%-20s %-36s %-5s %s", agg["name"], agg["uuid"],
                         "Y" if agg["node_group"] else "N",
                         ",".join(agg["nodes"]))
        return
    for agg in result:
        cli.ToStdout("Aggregate: %s", agg["name"])
        cli.ToStdout("  UUID: %s", agg["uuid"])
        cli.ToStdout("  Node group: %s", cli.FormatBool(agg["node_group"]))
        cli.ToStdout("  Metadata:%s", "" if agg["metadata"] else " (none)")
        for key, value in sorted(agg["metadata"].items()):
            cli.ToStdout("    %s: %s", key, value)
        cli.ToStdout("  Nodes:%s", "" if agg["nodes"] else " (none)")
        for node in agg["nodes"]:
            cli.ToStdout("    - %s", node)


# Subcommand -> (arguments it takes, at least, at most)
_AGG_ARGS = {"add": (1, 1), "remove": (1, 1), "rename": (2, 2),
             "list": (0, None), "info": (0, None)}


def AggregateOps(opts: Any, args: list[str]) -> int:
    """Named aggregates of nodes (Placement's, for --member-of)."""
    command, rest = args[0], args[1:]
    least, most = _AGG_ARGS[command]
    if len(rest) < least or (most is not None and len(rest) > most):
        cli.ToStderr("Wrong number of arguments for 'aggregate %s'",
                     command)
        return constants.EXIT_FAILURE
    if command in ("list", "info"):
        _ShowAggregates(opts, rest, command == "info")
        return constants.EXIT_SUCCESS
    if command == "add":
        metadata = {key: "" if value is True else str(value)
                    for key, value in (opts.metadata or {}).items()}
        op: opcodes.OpCode = opcodes.OpClusterAggregateAdd(
            name=rest[0], metadata=metadata)
    elif command == "remove":
        op = opcodes.OpClusterAggregateRemove(name=rest[0])
    else:
        op = opcodes.OpClusterAggregateRename(name=rest[0],
                                              new_name=rest[1])
    result = cli.SubmitOrSend(op, opts)
    if command == "add" and result:
        cli.ToStdout("%s", result)
    return constants.EXIT_SUCCESS


def _ShowWatcherPause(until: float | None) -> None:
    if until is None or until < time.time():
        cli.ToStdout("The watcher is not paused.")
    else:
        cli.ToStdout("The watcher is paused until %s.", time.ctime(until))


def WatcherOps(opts: Any, args: list[str]) -> int:
    """Pause the watcher for a while, let it run again, or say which."""
    command = args[0]
    client = cli.GetClient()
    if command == "continue":
        client.SetWatcherPause(None)
        cli.ToStdout("The watcher is no longer paused.")
    elif command == "pause":
        if len(args) < 2:
            raise errors.OpPrereqError("Missing pause duration",
                                       errors.ECODE_INVAL)
        _ShowWatcherPause(client.SetWatcherPause(
            time.time() + cli.ParseTimespec(args[1])))
    else:
        (until, ) = client.QueryConfigValues(["watcher_pause"])
        _ShowWatcherPause(until)
    return constants.EXIT_SUCCESS


def RedistributeConfig(opts: Any, args: list[str]) -> int:
    cli.SubmitOrSend(opcodes.OpClusterRedistConf(), opts)
    return constants.EXIT_SUCCESS


def RepairCancel(opts: Any, args: list[str]) -> int:
    """Cancel a repair incident of ganeti-maintd (gnt-cluster
    repair-cancel ID)."""
    cli.SubmitOrSend(opcodes.OpClusterRepairCancel(incident_id=args[0]),
                     opts)
    return constants.EXIT_SUCCESS


def _TagsSource(opts: Any, args: list[str]) -> list[str]:
    tags = list(args)
    if opts.tags_source:
        if opts.tags_source == "-":
            text = sys.stdin.read()
        else:
            with open(opts.tags_source, encoding="utf-8") as fobj:
                text = fobj.read()
        tags.extend(line.strip() for line in text.splitlines()
                    if line.strip())
    if not tags:
        raise errors.OpPrereqError("No tags to add or remove",
                                   errors.ECODE_INVAL)
    return tags


def ListTags(opts: Any, args: list[str]) -> int:
    for tag in sorted(cli.GetClient().QueryTags(constants.TAG_CLUSTER, "")):
        cli.ToStdout("%s", tag)
    return constants.EXIT_SUCCESS


def AddTags(opts: Any, args: list[str]) -> int:
    op = opcodes.OpTagsSet(kind=constants.TAG_CLUSTER,
                           tags=_TagsSource(opts, args))
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def RemoveTags(opts: Any, args: list[str]) -> int:
    op = opcodes.OpTagsDel(kind=constants.TAG_CLUSTER,
                           tags=_TagsSource(opts, args))
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def SearchTags(opts: Any, args: list[str]) -> int:
    op = opcodes.OpTagsSearch(pattern=args[0])
    for path, tag in sorted(cli.SubmitOpCode(op, opts=opts)):
        cli.ToStdout("%s %s", path, tag)
    return constants.EXIT_SUCCESS


def DumpClusterInfo(opts: Any, args: list[str]) -> int:
    """Print the cluster info as JSON (machine-readable ``info``)."""
    cli.ToStdout("%s", serializer.DumpJson(cli.GetClient().QueryClusterInfo(),
                                           indent=True).rstrip())
    return constants.EXIT_SUCCESS


_Verify = opcodes.OpClusterVerify
ERROR_CODES_OPT = OpcodeOption(_Verify, "error_codes", "--error-codes")
DEBUG_SIMERR_OPT = OpcodeOption(_Verify, "debug_simulate_errors",
                                "--debug-simulate-errors")
# Repeatable, each one code or a comma-separated list of codes
IGNORE_ERRORS_OPT = OpcodeOption(_Verify, "ignore_errors", "-I",
                                 "--ignore-errors", action="append",
                                 type="list", metavar="CODE[,CODE...]")
NODEGROUP_OPT = OpcodeOption(_Verify, "group_name", "-g", "--node-group",
                             metavar="<nodegroup>")
# Accepted as in Ganeti; nothing to check here, which manages no SSH keys
VERIFY_CLUTTER_OPT = OpcodeOption(_Verify, "verify_clutter",
                                  "--verify-ssh-clutter")
NONPLUS1_OPT = cli_option("--no-nplus1-mem", dest="skip_nplusone_mem",
                          default=False, action="store_true",
                          help="Skip N+1 memory redundancy tests")
SHOW_MACHINE_OPT = cli_option("-M", dest="show_machine_names", default=False,
                              action="store_true",
                              help="Show machine name for every line in"
                              " output")
FAILURE_ONLY_OPT = cli_option("--failure-only", default=False,
                              action="store_true",
                              help="Hide successful results and show"
                              " failures only (determined by the exit code)")


def VerifyCluster(opts: Any, args: list[str]) -> int:
    """Run the verification jobs and show their findings.

    Exit 1 if a job failed or found an error (warnings don't count).
    """
    cl = cli.GetClient()
    op = opcodes.OpClusterVerify(
        verbose=opts.verbose, error_codes=opts.error_codes,
        debug_simulate_errors=opts.debug_simulate_errors,
        ignore_errors=[code for codes in opts.ignore_errors
                       for code in codes],
        skip_checks=([constants.VERIFY_NPLUSONE_MEM]
                     if opts.skip_nplusone_mem else []),
        group_name=opts.group_name, verify_clutter=opts.verify_clutter)
    result = cli.SubmitOpCode(op, cl=cl, opts=opts)
    jex = cli.JobExecutor(cl=cl, opts=opts)
    for status, job_id in result["jobs"]:
        jex.AddJobId(None, status, job_id)
    results = jex.GetResults()
    bad_jobs = sum(1 for success, _ in results if not success)
    bad_results = sum(1 for success, op_results in results
                      if success and not (len(op_results) == 1 and
                                          op_results[0]))
    if bad_jobs:
        cli.ToStdout("%s job(s) failed while verifying the cluster.",
                     bad_jobs)
    if bad_jobs or bad_results:
        return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def VerifyDisks(opts: Any, args: list[str]) -> int:
    """Activate the disks that need it; list the missing volumes.

    One job per node group finds the instances; each of them without a
    missing volume gets activate-disks. Exit 1 if a node could not be
    asked, an activation failed or a volume is missing. Ganeti prints
    missing logical volumes as ``/dev/VG/LV``; the volumes here are files,
    shown by their path.
    """
    cl = cli.GetClient()
    op = opcodes.OpClusterVerifyDisks(group_name=opts.group_name)
    result = cli.SubmitOpCode(op, cl=cl, opts=opts)
    jex = cli.JobExecutor(cl=cl, opts=opts)
    for status, job_id in result["jobs"]:
        jex.AddJobId(None, status, job_id)
    retcode = constants.EXIT_SUCCESS
    for status, job_result in jex.GetResults():
        if not status:
            cli.ToStdout("Job failed: %s", job_result)
            continue
        ((bad_nodes, instances, missing), ) = job_result
        for node, text in bad_nodes.items():
            cli.ToStdout("Error gathering data on node %s: %s", node,
                         text[-400:])
            retcode = constants.EXIT_FAILURE
            cli.ToStdout("You need to fix these nodes first before fixing"
                         " instances")
        for name in instances:
            if name in missing:
                continue
            try:
                cli.ToStdout("Activating disks for instance '%s'", name)
                cli.SubmitOpCode(opcodes.OpInstanceActivateDisks(
                    instance_name=name), opts=opts, cl=cl)
            except errors.GenericError as err:
                nret, msg = cli.FormatError(err)
                retcode |= nret
                cli.ToStderr("Error activating disks for instance %s: %s",
                             name, msg)
        if missing:
            for name, volumes in sorted(missing.items()):
                if all(node in bad_nodes for node, _ in volumes):
                    cli.ToStdout("Instance %s cannot be verified as it lives"
                                 " on broken nodes", name)
                    continue
                cli.ToStdout("Instance %s has missing logical volumes:",
                             name)
                for node, volume in sorted(volumes):
                    cli.ToStdout("\t%s%s %s",
                                 "broken node " if node in bad_nodes else "",
                                 node, volume)
            cli.ToStdout("You need to replace or recreate disks for all the"
                         " above instances if this message persists after"
                         " fixing broken nodes.")
            retcode = constants.EXIT_FAILURE
        elif not instances:
            cli.ToStdout("No disks need to be activated.")
    return retcode


def _ExpandNodeName(name: str, known: list[str]) -> str:
    """A node given by full or unique short name (before the first dot)."""
    if name in known:
        return name
    matches = [node for node in known if node.startswith(name + ".")]
    if len(matches) != 1:
        raise errors.OpPrereqError("Node '%s' not known" % name,
                                   errors.ECODE_NOENT)
    return matches[0]


def _NodeRunner(names: list[str], with_master: bool
                ) -> tuple[list[str], str, rpc_node.RpcRunner]:
    """Online nodes (all or ``names``), the master and an RPC runner.

    Runs on the master, which holds the cluster certificate, and takes
    the nodes and their addresses from ssconf, so no daemon but the
    nodes' noded is needed. Offline nodes are skipped with a note.
    """
    ss = ssconf.SimpleStore()
    try:
        master, myself = ssconf.GetMasterAndMyself(ss)
        known = ss.GetNodeList()
        offline = set(ss.GetOfflineNodeList())
        addresses = dict(line.split(" ", 1)
                         for line in ss.GetNodePrimaryIPList())
    except errors.ConfigurationError as err:
        raise errors.OpPrereqError("This node is not part of a cluster: %s"
                                   % err, errors.ECODE_ENVIRON) from err
    if master != myself:
        raise errors.OpPrereqError("This command must run on the master"
                                   " node (%s)" % master,
                                   errors.ECODE_ENVIRON)
    wanted = set(_ExpandNodeName(name, known) for name in names)
    selected = [node for node in known if not wanted or node in wanted]
    skipped = [node for node in selected if node in offline]
    if skipped:
        cli.ToStderr("Note: skipping offline node(s): %s",
                     ", ".join(skipped))
    nodes = [node for node in selected if node not in offline and
             (with_master or node != master)]
    return nodes, master, rpc_node.RpcRunner(
        rpc_node.StaticResolver(addresses, offline))


_COMMAND_SEPARATOR = "-" * 48


def _PrintCommandResult(opts: Any, name: str, exit_code: int,
                        output: str) -> None:
    cli.ToStdout(_COMMAND_SEPARATOR)
    if opts.show_machine_names:
        for line in output.splitlines():
            cli.ToStdout("%s: %s", name, line)
    else:
        cli.ToStdout("node: %s", name)
        cli.ToStdout("%s", output)
    cli.ToStdout("return code = %s", exit_code)


def RunClusterCommand(opts: Any, args: list[str]) -> int:
    """Run a shell command on the nodes, showing each node's output.

    The master runs it last (after the others, which run in parallel), so
    that a command disrupting it doesn't cut the others short. Exit 1 if
    a node could not be reached; the commands' own exit codes are only
    shown.
    """
    command = " ".join(args)
    nodes, master, runner = _NodeRunner(opts.nodes, True)
    others = [node for node in nodes if node != master]
    last = [master] if master in nodes else []
    try:
        results = runner.call_run_command(others, command) if others else {}
        if last:
            results.update(runner.call_run_command(last, command))
    finally:
        runner.close()
    exit_code = constants.EXIT_SUCCESS
    for name in others + last:
        result = results[name]
        if result.fail_msg:
            cli.ToStdout(_COMMAND_SEPARATOR)
            cli.ToStdout("node: %s", name)
            cli.ToStdout("Failure while running the command: %s",
                         result.fail_msg)
            exit_code = constants.EXIT_FAILURE
            continue
        node_exit_code, output = result.payload
        if opts.failure_only and node_exit_code == constants.EXIT_SUCCESS:
            continue
        _PrintCommandResult(opts, name, node_exit_code, output)
    return exit_code


def ClusterCopyFile(opts: Any, args: list[str]) -> int:
    """Copy a file (content and mode) to the other online nodes.

    Only paths allowed by the master's and each node's copyfile allow-list
    (pathutils.COPYFILE_PATHS_FILE) are written. Exit 1 if any copy
    failed.
    """
    filename = os.path.abspath(args[0])
    if not os.path.isfile(filename):
        raise errors.OpPrereqError("No such filename '%s'" % filename,
                                   errors.ECODE_INVAL)
    # ganeti.backend loads every node-side module: kept off start-up
    from ganeti.backend import verify as backend_verify
    vpath = rpc_node.EncodeVirtualPath(filename)
    backend_verify.CheckCopyfileTarget(vpath)
    with open(filename, "rb") as fobj:
        content = fobj.read()
        mode = stat.S_IMODE(os.fstat(fobj.fileno()).st_mode)
    nodes, _, runner = _NodeRunner(opts.nodes, False)
    try:
        results = (runner.call_copyfile_upload(nodes, vpath, content, mode)
                   if nodes else {})
    finally:
        runner.close()
    exit_code = constants.EXIT_SUCCESS
    for name in nodes:
        if results[name].fail_msg:
            cli.ToStderr("Copy of file %s to node %s failed: %s", filename,
                         name, results[name].fail_msg)
            exit_code = constants.EXIT_FAILURE
    return exit_code


_JOB_OPTS = [SUBMIT_OPT, PRINT_JOBID_OPT, PRIORITY_OPT, DRY_RUN_OPT]

commands = {
    "init": (_cluster_params.InitCluster, [ArgUnknown(min=1, max=1)],
             _cluster_params.INIT_OPTS,
             "[<opts>...] <cluster-name>",
             "Initialises a new cluster configuration"),
    "destroy": (DestroyCluster, [], [YES_DOIT_OPT], "", "Destroy cluster"),
    "redist-conf": (RedistributeConfig, [], _JOB_OPTS, "",
                    "Forces a push of the configuration file and ssconf"
                    " files to the nodes in the cluster"),
    "repair-cancel": (RepairCancel, [ArgUnknown(min=1, max=1)], _JOB_OPTS,
                      "<incident-id>",
                      "Cancels a repair incident of the maintenance daemon:"
                      " it takes no further action for it and forgets it"
                      " once the node no longer reports it"),
    "master-failover": (MasterFailover, [], [NOVOTING_OPT, YES_DOIT_OPT], "",
                        "Makes the current node the master"),
    "master-ping": (MasterPing, [], [], "", "Checks if the master is alive"),
    "activate-master-ip": (ActivateMasterIp, [], [], "",
                           "Activates the master IP"),
    "deactivate-master-ip": (DeactivateMasterIp, [], [CONFIRM_OPT], "",
                             "Deactivates the master IP"),
    "version": (ShowClusterVersion, [], [], "",
                "Shows the cluster version"),
    "getmaster": (ShowClusterMaster, [], [], "",
                  "Shows the cluster master"),
    "info": (_cluster_info.ShowClusterConfig, [],
             [ROMAN_OPT],
             "[--roman]", "Show cluster configuration"),
    "list-tags": (ListTags, [], [], "", "List the tags of the cluster"),
    "add-tags": (AddTags, [ArgUnknown()], [TAG_SRC_OPT] + _JOB_OPTS,
                 "<tag>...", "Add tags to the cluster"),
    "remove-tags": (RemoveTags, [ArgUnknown()], [TAG_SRC_OPT] + _JOB_OPTS,
                    "<tag>...", "Remove tags from the cluster"),
    "search-tags": (SearchTags, [ArgUnknown(min=1, max=1)], [PRIORITY_OPT],
                    "",
                    "Searches the tags on all objects on the cluster for a"
                    " given pattern (regex)"),
    "queue": (QueueOps, [ArgChoice(min=1, max=1,
                                   choices=["drain", "undrain", "info"])],
              [], "drain|undrain|info", "Change queue properties"),
    "watcher": (WatcherOps,
                [ArgChoice(min=1, max=1,
                           choices=["pause", "continue", "info"]),
                 ArgSuggest(min=0, max=1, choices=["30m", "1h", "4h"])],
                [], "{pause <timespec>|continue|info}",
                "Change watcher properties"),
    "aggregate": (AggregateOps,
                  [ArgChoice(min=1, max=1, choices=sorted(_AGG_ARGS)),
                   ArgUnknown()],
                  [AGG_METADATA_OPT] + _JOB_OPTS,
                  "add [--metadata KEY=VALUE,...] <name> | remove <name> |"
                  " rename <name> <new-name> | list [<name>...] |"
                  " info [<name>...]",
                  "Manages the named aggregates of nodes (each node group"
                  " is one too), which --member-of constrains allocations"
                  " to"),
    "modify": (_cluster_params.SetClusterParams, [],
               _cluster_params.MODIFY_OPTS + _JOB_OPTS,
               "[<opts>...]", "Alters the parameters of the cluster"),
    "rename": (RenameCluster, [ArgHost(min=1, max=1)],
               [FORCE_OPT, DRY_RUN_OPT], "<new-name>",
               "Renames the cluster"),
    "show-ispecs-cmd": (ShowCreateCommand, [], [], "",
                        "Show the command line to re-create the cluster"),
    "repair-disk-sizes": (RepairDiskSizes, ARGS_MANY_INSTANCES,
                          [DRY_RUN_OPT, PRIORITY_OPT],
                          "[<instance-name>...]",
                          "Updates mismatches in recorded disk sizes"),
    "dump-info": (DumpClusterInfo, [], [], "",
                  "Print the cluster information as JSON"),
    "verify": (VerifyCluster, [],
               [VERBOSE_OPT, DEBUG_SIMERR_OPT, ERROR_CODES_OPT, NONPLUS1_OPT,
                PRIORITY_OPT, NODEGROUP_OPT, IGNORE_ERRORS_OPT,
                VERIFY_CLUTTER_OPT],
               "", "Does a check on the cluster configuration"),
    "verify-disks": (VerifyDisks, [], [PRIORITY_OPT, NODEGROUP_OPT], "",
                     "Does a check on the cluster disk status"),
    "command": (RunClusterCommand, [ArgCommand(min=1)],
                [NODE_LIST_OPT, SHOW_MACHINE_OPT, FAILURE_ONLY_OPT],
                "[-n node...] <command>",
                "Runs a command on all (or only some) nodes"),
    "copyfile": (ClusterCopyFile, [ArgFile(min=1, max=1)], [NODE_LIST_OPT],
                 "[-n node...] <filename>",
                 "Copies a file to all (or only some) nodes"),
    "epo": (_cluster_epo.Epo, [ArgUnknown()], _cluster_epo.EPO_OPTS,
            "[<opts>...] [args]",
            "Performs an emergency power-off on given args"),
    "renew-crypto": (_cluster_crypto.RenewCrypto, [],
                     _cluster_crypto.RENEW_CRYPTO_OPTS, "[<opts>...]",
                     "Renews cluster certificates, keys and secrets"),
    "rebalance": (hbal.Rebalance, [], hbal.REBALANCE_OPTS,
                  "[-G <group>] [-C] [-X] [<opts>...]",
                  "Computes instance moves that lower the cluster score"
                  " (as hbal does), prints them and with -X runs them"),
    "capacity": (hspace.ShowCapacity, [], hspace.CAPACITY_OPTS,
                 "[--memory <size>] [--disk <size>] [--vcpus <n>]"
                 " [--disk-template <template>]"
                 " [--tiered-alloc <disk,ram,cpu>] [--machine-readable]",
                 "Shows how many more instances of a spec (by default the"
                 " policy's standard spec) and of the tiered specs fit and"
                 " which resource runs out first (as hspace does)"),
}

aliases = {"masterfailover": "master-failover", "show": "info"}


def Main() -> int:
    return cli.GenericMain(commands, aliases=aliases)
