"""Cluster watcher: keeps the node daemons and the instances running.

Run from cron on every node (doc/examples/ganeti.cron). On every node it
starts the node and monitoring daemons if they do not run or answer and
runs the executables of the watcher hooks directory; on the master it
also keeps the master, remote API and maintenance daemons answering,
archives old jobs and, in one child process per node group, restarts
instances that should run but are down (at most 5 tries, counted in the
group's state file), cleans up instances the user shut down,
re-activates the disks of instances whose secondary node rebooted and
verifies the group's disks. Every job it submits carries the reason
"gnt:watcher". It does nothing while the watcher is paused (gnt-cluster
watcher pause) and never runs twice at once.
"""

import errno
import logging
import optparse
import os
import re
import sys
import time
import urllib.request
from typing import Any, Callable

from ganeti import (cli, constants, daemon, errors, luxi, netutils,
                    objects, opcodes, pathutils, qlang, serializer, ssconf,
                    utils, vcluster)
from ganeti.backend import hooks as backend_hooks
from ganeti.rapi import client as rapi_client
from ganeti.rpc import node as rpc_node
from ganeti.utils import process, tunable
from ganeti.watcher import state

MAXTRIES = 5
BAD_STATES = frozenset([constants.INSTST_ERRORDOWN])
HELPLESS_STATES = frozenset([constants.INSTST_NODEDOWN,
                             constants.INSTST_NODEOFFLINE])
# Seconds between starting two group children (not to load the master)
CHILD_PROCESS_DELAY = 1.0
# How long a group child waits for the merged instance status file
INSTANCE_STATUS_LOCK_TIMEOUT = 10.0
# How long a daemon gets to answer the watcher's probe; the variable
# overrides it (utils.tunable)
_PROBE_TIMEOUT = 10
ENV_PROBE_TIMEOUT = "GANETI_WATCHER_PROBE_TIMEOUT"
_UUID_RE = re.compile(r"^[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-"
                      r"[a-f0-9]{12}$")


def _ProbeTimeout() -> float:
    """Seconds a daemon gets to answer a probe (_PROBE_TIMEOUT)."""
    return tunable.Seconds(ENV_PROBE_TIMEOUT, _PROBE_TIMEOUT)


class _NotMaster(Exception):
    """This node is not (or no longer) the master: nothing more to do."""


def BuildParser() -> optparse.OptionParser:
    """The watcher's options (Ganeti's names and defaults)."""
    parser = optparse.OptionParser(
        description="Run from cron every 5 minutes on every node: restarts"
        " the node daemons that should run and do not answer, and on the"
        " master the instances that should run but are down (5 tries),"
        " after cleaning up user-shut-down instances, re-activating disks"
        " of instances whose secondary node rebooted, verifying the disks of"
        " each node group and archiving old jobs. Does nothing while paused"
        " (gnt-cluster watcher pause). State: watcher.GROUP-UUID.data in"
        " the data directory; log: watcher.log.",
        usage="%prog [-d] [--job-age=AGE] [--ignore-pause]"
        " [--rapi-ip=IP] [--no-verify-disks]",
        version="%%prog (ganeti) %s" % constants.RELEASE_VERSION)
    parser.add_option("-d", "--debug", dest="debug", default=False,
                      action="store_true",
                      help="Log debug messages, also to standard error")
    parser.add_option("--node-group", dest="nodegroup", default=None,
                      help="Internal: the node group (UUID) a child of the"
                      " watcher works on")
    parser.add_option("-A", "--job-age", dest="job_age", default="6h",
                      help="Autoarchive jobs older than this age (default"
                      " 6 hours)")
    parser.add_option("--ignore-pause", dest="ignore_pause", default=False,
                      action="store_true",
                      help="Ignore cluster pause setting")
    parser.add_option("--wait-children", dest="wait_children",
                      action="store_true", default=True,
                      help="Wait for child processes (the default)")
    parser.add_option("--no-wait-children", dest="wait_children",
                      action="store_false",
                      help="Don't wait for child processes")
    parser.add_option("--no-verify-disks", dest="no_verify_disks",
                      default=False, action="store_true",
                      help="Do not verify disk status")
    parser.add_option("--rapi-ip", dest="rapi_ip", default=None,
                      help="Use this IP to talk to RAPI (default: where"
                      " ganeti-rapi binds by default, 127.0.0.1 or, in a"
                      " virtual cluster, the node's address)")
    return parser


def ShouldPause() -> bool:
    return bool(utils.ReadWatcherPauseFile(pathutils.WATCHER_PAUSEFILE))


def _Reason(text: str) -> list[tuple[str, str, int]]:
    return [(constants.OPCODE_REASON_SRC_WATCHER, text, time.time_ns())]


# Daemons ---------------------------------------------------------------------

def _DaemonUtil(command: str, name: str) -> bool:
    result = process.RunCmd([sys.executable, pathutils.DAEMON_UTIL, command,
                             name])
    if result.failed:
        logging.error("daemon-util %s %s failed: %s", command, name,
                      result.output.strip())
    return not result.failed


def EnsureDaemon(name: str, probe: Callable[[], bool]) -> bool:
    """Start a daemon that does not run; restart it once if it runs but
    does not answer ``probe`` (a pid alone does not make it healthy)."""
    if not _DaemonUtil("start", name):
        return False
    if probe():
        return True
    logging.warning("%s is not responding, restarting it", name)
    _DaemonUtil("stop", name)
    if _DaemonUtil("start", name) and probe():
        return True
    logging.error("%s is not responding", name)
    return False


def IsNodedResponding(node: str) -> bool:
    """Whether this node's noded answers a version RPC."""
    runner = rpc_node.RpcRunner(rpc_node.StaticResolver(
        {node: netutils.GetHostIP(node)}))
    try:
        result = runner.CallProcedure("version", [node], [],
                                      read_timeout=_ProbeTimeout())[node]
    finally:
        runner.close()
    if result.fail_msg:
        logging.warning("Node daemon error: %s", result.fail_msg)
        return False
    return result.payload == constants.PROTOCOL_VERSION


def IsMasterdResponding() -> bool:
    """Whether the master daemon answers a LUXI query."""
    client = luxi.Client(connect_timeout=_ProbeTimeout(),
                         rw_timeout=_ProbeTimeout())
    try:
        client.QueryConfigValues(["master_node"])
    except errors.GenericError as err:
        logging.warning("Master daemon error: %s", err)
        return False
    finally:
        client.Close()
    return True


def IsRapiResponding(address: str) -> bool:
    """Whether the remote API answers ``GET /version`` with version 2;
    "401 Unauthorized" counts as an answer."""
    client = rapi_client.GanetiRapiClient(
        address, netutils.GetDaemonPort(constants.RAPI),
        curl_config_fn=rapi_client.GenericCurlConfig(
            proxy="", connect_timeout=_ProbeTimeout(),
            timeout=_ProbeTimeout()))
    try:
        version = client.GetVersion()
    except rapi_client.GanetiApiError as err:
        if err.code == 401:
            return True
        logging.warning("RAPI error: %s", err)
        return False
    logging.debug("Reported RAPI version %s", version)
    return version == constants.RAPI_VERSION


def IsVersionedHttpResponding(name: str, address: str) -> bool:
    """Whether mond or maintd (plain HTTP, JSON) answers ``GET /`` with
    its protocol versions, as both do."""
    url = "http://%s/" % netutils.FormatAddress(
        (address, netutils.GetDaemonPort(name)))
    try:
        with urllib.request.urlopen(url, timeout=_ProbeTimeout()) as answer:
            versions = serializer.LoadJson(answer.read())
    except (OSError, ValueError) as err:
        logging.warning("%s error at %s: %s", name, url, err)
        return False
    return isinstance(versions, list) and 1 in versions


def _DefaultRapiAddress() -> str:
    """Where ganeti-rapi listens when started without -b."""
    if vcluster.IsVirtual():
        return netutils.GetHostIP(netutils.GetMyName())
    return "127.0.0.1"


def RunWatcherHooks() -> None:
    """Run the executables of the watcher hooks directory, logging how
    each went (light work, e.g. starting extra daemons)."""
    try:
        results = backend_hooks.RunParts(pathutils.WATCHER_HOOKS_DIR,
                                   dict(os.environ))
    except OSError as err:
        logging.exception("RunParts %s failed: %s",
                          pathutils.WATCHER_HOOKS_DIR, err)
        return
    for name, status, output in results:
        if status == constants.HKR_SKIP:
            logging.debug("Watcher hook %s: skipped", name)
        elif status == constants.HKR_FAIL:
            logging.warning("Watcher hook %s: failed (output: %s)", name,
                            output)
        else:
            logging.debug("Watcher hook %s: success (output: %s)", name,
                          output)


# Instances -------------------------------------------------------------------

class Instance:
    """What the group pass knows of an instance."""

    def __init__(self, name: str, uuid: str, status: str, admin_state: str,
                 disks_active: bool, snodes: list[str], disk_template: str):
        self.name = name
        self.uuid = uuid
        self.status = status
        self.admin_state = admin_state
        self.disks_active = disks_active
        self.snodes = snodes
        self.disk_template = disk_template

    def NeedsCleanup(self) -> bool:
        """Shut down by the user but still marked up: tell the config."""
        return (self.status == constants.INSTST_USERDOWN and
                self.admin_state != objects.ADMINST_DOWN)


class Node:
    def __init__(self, name: str, bootid: str | None, offline: bool,
                 secondaries: set[str]):
        self.name = name
        self.bootid = bootid
        self.offline = offline
        self.secondaries = secondaries


def _Submit(cl: luxi.Client, op: Any, text: str) -> Any:
    """Run one opcode as a job carrying the watcher's reason."""
    op.reason = _Reason(text)
    return cli.SubmitOpCode(op, cl=cl, feedback_fn=logging.debug)


def _CleanupInstance(cl: luxi.Client, notepad: state.WatcherState,
                     inst: Instance, locks: set[str]) -> None:
    if inst.name in locks or inst.uuid in locks:
        logging.info("Not cleaning up instance '%s', instance is locked",
                     inst.name)
        return
    if notepad.NumberOfCleanupAttempts(inst.name) > MAXTRIES:
        logging.warning("Not cleaning up instance '%s', retries exhausted",
                        inst.name)
        return
    logging.info("Instance '%s' was shutdown by the user, cleaning up"
                 " instance", inst.name)
    op = opcodes.OpInstanceShutdown(instance_name=inst.name,
                                    admin_state_source="user")
    try:
        _Submit(cl, op, "Cleaning up instance %s" % inst.name)
    except Exception:  # pylint: disable=broad-except
        logging.exception("Error while cleaning up instance '%s'",
                          inst.name)
        notepad.RecordCleanupAttempt(inst.name)
    else:
        notepad.RemoveInstance(inst.name)


def _CheckInstances(cl: luxi.Client, notepad: state.WatcherState,
                    instances: dict[str, Instance],
                    locks: set[str]) -> set[str]:
    """Restart the instances that are down by error; the names started."""
    notepad.MaintainInstanceList(list(instances))
    started = set()
    for inst in instances.values():
        if inst.NeedsCleanup():
            _CleanupInstance(cl, notepad, inst, locks)
        elif inst.status in BAD_STATES:
            tries = notepad.NumberOfRestartAttempts(inst.name)
            if tries > MAXTRIES:
                logging.warning("Not restarting instance '%s', retries"
                                " exhausted", inst.name)
                continue
            if tries == MAXTRIES:
                notepad.RecordRestartAttempt(inst.name)
                logging.error("Could not restart instance '%s' after %s"
                              " attempts, giving up", inst.name, MAXTRIES)
                continue
            logging.info("Restarting instance '%s' (attempt #%s)",
                         inst.name, tries + 1)
            try:
                _Submit(cl, opcodes.OpInstanceStartup(instance_name=inst.name,
                                                      force=False),
                        "Restarting instance %s" % inst.name)
            except Exception:  # pylint: disable=broad-except
                logging.exception("Error while restarting instance '%s'",
                                  inst.name)
            else:
                started.add(inst.name)
            notepad.RecordRestartAttempt(inst.name)
        elif notepad.NumberOfRestartAttempts(inst.name):
            notepad.RemoveInstance(inst.name)
            if inst.status not in HELPLESS_STATES:
                logging.info("Restart of instance '%s' succeeded", inst.name)
    return started


def _CheckDisks(cl: luxi.Client, notepad: state.WatcherState,
                nodes: dict[str, Node], instances: dict[str, Instance],
                started: set[str]) -> None:
    """Re-activate the disks of instances whose secondary node rebooted
    (its boot id changed), so their mirrors connect again."""
    rebooted: list[tuple[Node, str]] = []
    for node in nodes.values():
        if not node.bootid:
            if not node.offline:
                logging.debug("Node '%s' missing boot ID, skipping secondary"
                              " checks", node.name)
            continue
        if notepad.GetNodeBootID(node.name) != node.bootid:
            rebooted.append((node, node.bootid))
    for node, _ in rebooted:
        for name in sorted(node.secondaries):
            inst = instances.get(name)
            if inst is None:
                logging.info("Can't find instance '%s', maybe it was"
                             " ignored", name)
            elif not inst.disks_active:
                logging.info("Skipping disk activation for instance with not"
                             " activated disks '%s'", name)
            elif name in started:
                logging.debug("Skipping disk activation for instance '%s' as"
                              " it was already started", name)
            else:
                logging.info("Activating disks for instance '%s'", name)
                try:
                    _Submit(cl, opcodes.OpInstanceActivateDisks(
                        instance_name=name),
                        "Activating disks for instance %s" % name)
                except Exception:  # pylint: disable=broad-except
                    logging.exception("Error while activating disks for"
                                      " instance '%s'", name)
    for node, bootid in rebooted:
        notepad.SetNodeBootID(node.name, bootid)


def _VerifyDisks(cl: luxi.Client, uuid: str, nodes: dict[str, Node],
                 instances: dict[str, Instance]) -> None:
    """The group's verify-disks, then one job activating what it found."""
    op = opcodes.OpGroupVerifyDisks(group_name=uuid,
                                    priority=constants.OP_PRIO_LOW)
    op.reason = _Reason("Verifying disks of group %s" % uuid)
    job_id = cl.SubmitJob([op])
    ((_, offline_disk_instances, _), ) = cli.PollJob(
        job_id, cl=cl, feedback_fn=logging.debug)
    try:
        cl.ArchiveJob(job_id)
    except errors.GenericError:
        logging.exception("Error while archiving job %d", job_id)
    if not offline_disk_instances:
        logging.debug("Verify-disks reported no offline disks, nothing to"
                      " do")
        return
    job = []
    for name in offline_disk_instances:
        inst = instances.get(name)
        if inst is None:
            logging.info("Can't find instance '%s', maybe it was ignored",
                         name)
            continue
        if inst.status in HELPLESS_STATES or \
                any(nodes[snode].offline for snode in inst.snodes
                    if snode in nodes):
            logging.info("Skipping instance '%s' because it is in a helpless"
                         " state or has offline secondaries", name)
            continue
        act = opcodes.OpInstanceActivateDisks(instance_name=name)
        act.reason = _Reason("Activating disks for instance %s" % name)
        job.append(act)
    if job:
        try:
            cli.PollJob(cli.SendJob(job, cl=cl), cl=cl,
                        feedback_fn=logging.debug)
        except Exception:  # pylint: disable=broad-except
            logging.exception("Error while activating disks")


def _GetGroupData(cl: luxi.Client, uuid: str
                  ) -> tuple[dict[str, Node], dict[str, Instance], set[str]]:
    """The group's nodes and instances (split instances left out) and
    the instances locked right now."""
    prefix = "instance/"
    locks = {name[len(prefix):]
             for (_, name), (_, mode) in cl.Query(
                 constants.QR_LOCK, ["name", "mode"], None)["data"]
             if name.startswith(prefix) and mode}
    raw_instances = cl.Query(
        constants.QR_INSTANCE,
        ["name", "uuid", "status", "admin_state", "disks_active", "snodes",
         "pnode.group.uuid", "snodes.group.uuid", "disk_template"],
        [qlang.OP_EQUAL, "pnode.group.uuid", uuid])["data"]
    raw_nodes = cl.Query(constants.QR_NODE, ["name", "bootid", "offline"],
                         [qlang.OP_EQUAL, "group.uuid", uuid])["data"]
    instances = {}
    secondaries: dict[str, set[str]] = {}
    for row in raw_instances:
        (name, inst_uuid, status, admin_state, disks_active, snodes,
         pgroup, sgroups, template) = [value for _, value in row]
        snodes = snodes or []
        if snodes and set(sgroups or []) != {pgroup}:
            logging.error("Ignoring split instance '%s', primary group %s,"
                          " secondary groups %s", name, pgroup,
                          ", ".join(sgroups or []))
            continue
        instances[name] = Instance(name, inst_uuid, status, admin_state,
                                   bool(disks_active), snodes, template)
        for snode in snodes:
            secondaries.setdefault(snode, set()).add(name)
    nodes = {}
    for row in raw_nodes:
        name, bootid, offline = [value for _, value in row]
        nodes[name] = Node(name, bootid, bool(offline),
                           secondaries.get(name, set()))
    return nodes, instances, locks


def _WriteInstanceStatus(path: str, data: list[tuple[str, str]]) -> None:
    utils.WriteFile(path, data="".join("%s %s\n" % entry
                                       for entry in sorted(data)),
                    mkdir=True)


def _MergeInstanceStatus(groups: list[str]) -> None:
    """Merge the groups' instance status files into the node's one (the
    newest file wins for an instance seen in two groups)."""
    path = pathutils.INSTANCE_STATUS_FILE
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        fd = utils.LockFile(path + ".lock", INSTANCE_STATUS_LOCK_TIMEOUT)
    except errors.LockError:
        logging.error("Can't acquire lock on instance status file '%s',"
                      " not updating", path)
        return
    try:
        data: dict[str, tuple[float, str]] = {}
        for group in groups:
            group_file = pathutils.WATCHER_GROUP_INSTANCE_STATUS_FILE % group
            try:
                mtime = os.stat(group_file).st_mtime
                lines = utils.ReadFile(group_file).splitlines()
            except OSError as err:
                if err.errno == errno.ENOENT:
                    logging.error("Can't read '%s', does not exist (yet)",
                                  group_file)
                continue
            for line in lines:
                name, _, status = line.partition(" ")
                if name and data.get(name, (-1.0, ""))[0] < mtime:
                    data[name] = (mtime, status)
        _WriteInstanceStatus(path, [(name, status) for name, (_, status)
                                    in data.items()])
    finally:
        os.close(fd)


def _KnownGroups() -> list[str]:
    return [line.split(None, 1)[0]
            for line in ssconf.SimpleStore().GetNodegroupList()
            if line.strip()]


def _CheckMaster(cl: luxi.Client) -> None:
    (master, ) = cl.QueryConfigValues(["master_node"])
    if master != netutils.GetMyName():
        raise _NotMaster()


def _GroupWatcher(opts: optparse.Values, group_uuid: str) -> int:
    """The pass over one node group (a child of the global watcher)."""
    group_uuid = group_uuid.lower()
    if not _UUID_RE.match(group_uuid):
        raise errors.GenericError("Node group parameter (--node-group) must"
                                  " be given a UUID, got '%s'" % group_uuid)
    logging.info("Watcher for node group '%s'", group_uuid)
    known_groups = _KnownGroups()
    if group_uuid not in known_groups:
        raise errors.GenericError("Node group '%s' is not known by ssconf" %
                                  group_uuid)
    state_path = pathutils.WATCHER_GROUP_STATE_FILE % group_uuid
    logging.debug("Using state file %s", state_path)
    fd = state.OpenStateFile(state_path)
    if fd is None:
        return constants.EXIT_FAILURE
    notepad = state.WatcherState(fd)
    try:
        client = cli.GetClient()
        _CheckMaster(client)
        nodes, instances, locks = _GetGroupData(client, group_uuid)
        _WriteInstanceStatus(
            pathutils.WATCHER_GROUP_INSTANCE_STATUS_FILE % group_uuid,
            [(inst.name, inst.status) for inst in instances.values()])
        _MergeInstanceStatus(known_groups)
        started = _CheckInstances(client, notepad, instances, locks)
        _CheckDisks(client, notepad, nodes, instances, started)
        # External storage offers nothing to verify
        only_ext = all(inst.disk_template == constants.DT_EXT
                       for inst in instances.values())
        if not opts.no_verify_disks and not only_ext:
            _VerifyDisks(client, group_uuid, nodes, instances)
    except Exception as err:
        logging.info("Not updating status file due to failure: %s", err)
        raise
    else:
        notepad.Save(state_path)
    finally:
        notepad.Close()
    return constants.EXIT_SUCCESS


# The global pass -------------------------------------------------------------

def _StartGroupChildren(cl: luxi.Client, opts: optparse.Values) -> None:
    """Fork one group watcher per node group; they inherit the lock."""
    groups = cl.QueryGroups([], ["name", "uuid"], False)
    cl.Close()
    children = []
    for idx, (name, uuid) in enumerate(groups):
        if idx:
            time.sleep(CHILD_PROCESS_DELAY)
        logging.debug("Spawning child for group %r (%s).", name, uuid)
        try:
            pid = os.fork()
        except OSError:
            logging.exception("Failed to fork for group %r (%s)", name, uuid)
            continue
        if pid == 0:
            os._exit(_RunPass(_GroupWatcher, opts, uuid))
        logging.debug("Started with PID %s", pid)
        children.append(pid)
    if opts.wait_children:
        for pid in children:
            logging.debug("Waiting for child PID %s", pid)
            _, status = os.waitpid(pid, 0)
            logging.debug("Child PID %s exited with status %s", pid,
                          os.waitstatus_to_exitcode(status))


def _GlobalWatcher(opts: optparse.Values) -> int:
    """The pass of every node; on the master it goes on to the groups."""
    master, myself = ssconf.GetMasterAndMyself()
    EnsureDaemon(constants.NODED, lambda: IsNodedResponding(myself))
    my_ip = netutils.GetHostIP(myself)
    EnsureDaemon(constants.MOND,
                 lambda: IsVersionedHttpResponding(constants.MOND, my_ip))
    RunWatcherHooks()
    if master != myself:
        logging.debug("Not master, exiting")
        return constants.EXIT_SUCCESS
    if not EnsureDaemon(constants.MASTERD, IsMasterdResponding):
        return constants.EXIT_FAILURE
    rapi_ip = opts.rapi_ip or _DefaultRapiAddress()
    logging.debug("Attempting to talk to remote API on %s", rapi_ip)
    EnsureDaemon(constants.RAPI, lambda: IsRapiResponding(rapi_ip))
    master_ip = ssconf.SimpleStore().GetMasterIP()
    EnsureDaemon(constants.MAINTD, lambda: IsVersionedHttpResponding(
        constants.MAINTD, master_ip))
    client = cli.GetClient()
    _CheckMaster(client)
    arch_count, left_count = client.AutoArchiveJobs(opts.job_age)
    logging.debug("Archived %s jobs, left %s", arch_count, left_count)
    _StartGroupChildren(client, opts)
    return constants.EXIT_SUCCESS


def _RunPass(fn: Callable[..., int], *args: Any) -> int:
    """Run a pass, turning its errors into Ganeti's exit codes."""
    try:
        return fn(*args)
    except (SystemExit, KeyboardInterrupt):
        raise
    except _NotMaster:
        logging.debug("Not master, exiting")
        return constants.EXIT_NOTMASTER
    except errors.ResolverError as err:
        logging.error("Cannot resolve hostname '%s', exiting", err.args[0])
        return constants.EXIT_NODESETUP_ERROR
    except errors.JobQueueFull:
        logging.error("Job queue is full, can't query cluster state")
    except errors.JobQueueDrainError:
        logging.error("Job queue is drained, can't maintain cluster state")
    except Exception as err:  # pylint: disable=broad-except
        logging.exception(str(err))
        return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def _AcquireLock() -> int | None:
    """The watcher lock's descriptor, None (logged) if another watcher
    holds it."""
    path = pathutils.WATCHER_LOCK_FILE
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return utils.LockFile(path)
    except (OSError, errors.LockError) as err:
        logging.error("Can't acquire lock on %s: %s", path, err)
        return None


def Main() -> int:
    parser = BuildParser()
    options, args = parser.parse_args()
    if args:
        # Exit 1 like every other program of the package, not optparse's 2
        parser.print_usage(sys.stderr)
        sys.stderr.write("%s: error: No arguments expected\n" %
                         parser.get_prog_name())
        return constants.EXIT_FAILURE
    try:
        options.job_age = cli.ParseTimespec(options.job_age)
    except errors.OpPrereqError as err:
        parser.error(str(err))
    os.makedirs(pathutils.LOG_DIR, exist_ok=True)
    daemon.SetupLogging(pathutils.LOG_WATCHER, "ganeti-watcher",
                        options.debug, options.debug)
    if ShouldPause() and not options.ignore_pause:
        logging.debug("Pause has been set, exiting")
        return constants.EXIT_SUCCESS
    # Held until this process and its group children have finished (they
    # inherit it), so a second watcher started meanwhile leaves at once
    lock_fd = _AcquireLock()
    if lock_fd is None:
        return constants.EXIT_SUCCESS
    if options.nodegroup is None:
        return _RunPass(_GlobalWatcher, options)
    return _RunPass(_GroupWatcher, options, options.nodegroup)
