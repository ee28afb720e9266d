"""Ganeti master daemon: LUXI server, job queue and locks in one process.

Clients (CLI, RAPI) talk LUXI over the Unix sockets ``ganeti-master`` and
``ganeti-query``; each connection gets a thread and may carry several
requests. Jobs run in the queue's worker threads, reaching nodes only
through noded RPC.
"""

import functools
import logging
import optparse
import os
import socketserver
import threading
from typing import Any, Callable

from ganeti import (bootstrap, config, constants, daemon, errors, locking,
                    luxi, mcpu, netutils, objects, opcodes, pathutils, qlang,
                    query, utils)
from ganeti import jqueue, queryfields
from ganeti.cmdlib import cluster as cmdlib_cluster
from ganeti.cmdlib import creation_intents
from ganeti.jqueue import filters as jqueue_filters
from ganeti.masterd import replication
from ganeti.placement import store as placement_store
from ganeti.rpc import node as rpc_node


class GanetiContext:
    """What LUs and the queue share: config, locks, RPC, the queue."""

    def __init__(self, cfg: config.ConfigWriter, queue_dir: str):
        self.cfg = cfg
        self.my_name = netutils.GetMyName()
        self.glm = locking.GanetiLockManager(
            cfg.GetNodeList(), list(cfg.GetAllNodeGroupsInfo()),
            cfg.GetInstanceList(), list(cfg.GetAllNetworksInfo()))
        self.rpc = rpc_node.RpcRunner(self._ResolveNodes,
                                      address_fn=self._ReplicationAddress,
                                      diskparams_fn=self._DiskParams)
        self.replicator = replication.Replicator(
            cfg, self.rpc, cfg.GetMasterNode(), queue_dir=queue_dir,
            is_drained=lambda: self.jobqueue.IsDrained())
        cfg.AddWriteHook(self.replicator.ConfigChanged)
        self.jobqueue = jqueue.JobQueue(
            self, queue_dir=queue_dir,
            replicate_fn=self.replicator.ReplicateQueueFile,
            rename_fn=self.replicator.ReplicateQueueRenames)

    def _ResolveNodes(self, names: list[str]) -> list[tuple]:
        result = []
        for name in names:
            uuid = self.cfg.ExpandNodeName(name)
            node = self.cfg.GetNodeInfo(uuid) if uuid else None
            if node is None:
                raise errors.OpPrereqError("Node '%s' not known" % name,
                                           errors.ECODE_NOENT)
            result.append((node.name, node.primary_ip, node.offline))
        return result

    def _ReplicationAddress(self, name: str) -> tuple[str, str]:
        """A node's UUID and the address its drbd peers reach it on."""
        uuid = self.cfg.ExpandNodeName(name)
        node = self.cfg.GetNodeInfo(uuid) if uuid else None
        if node is None:
            raise errors.OpPrereqError("Node '%s' not known" % name,
                                       errors.ECODE_NOENT)
        return node.uuid, node.secondary_ip or node.primary_ip

    def _DiskParams(self, name: str) -> dict[str, dict]:
        """The disk parameters per template in a node's group."""
        uuid = self.cfg.ExpandNodeName(name)
        node = self.cfg.GetNodeInfo(uuid) if uuid else None
        group = self.cfg.GetNodeGroup(node.group) if node else None
        return self.cfg.GetClusterInfo().SimpleFillDP(
            group.diskparams if group else None)

    # Node membership (called by the node LUs, which hold the BGL) ---------
    def AddNode(self, node: objects.Node) -> None:
        """Add a node to the config and locks, and bring its copies up."""
        self.cfg.AddNode(node)
        for level in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            self.glm.add(level, node.uuid)
        self.SyncNode(node.uuid)

    def ReaddNode(self, node: objects.Node) -> None:
        """A re-added node (already updated in the config) gets everything."""
        self.SyncNode(node.uuid)

    def RemoveNode(self, node_uuid: str) -> None:
        """Drop a node from the config and its locks."""
        self.cfg.RemoveNode(node_uuid)
        for level in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            self.glm.remove(level, node_uuid)

    def SyncNode(self, node_uuid: str,
                 timeout: float = constants.RPC_TMO_URGENT) -> None:
        """Push config, queue (for candidates) and ssconf to a node now.

        If the push fails it is retried in the background; the caller goes
        on (the node is just not up to date yet).
        """
        if not self.replicator.SyncNode(node_uuid):
            self.replicator.WaitSynced(timeout, node_uuid)


class LuxiHandler:
    """Implements the LUXI methods on top of the context."""

    def __init__(self, context: GanetiContext):
        self.context = context
        self.queue = context.jobqueue
        # Method name -> implementation; arguments and results are JSON
        self._methods: dict[str, Callable[..., Any]] = {
            luxi.REQ_SUBMIT_JOB: lambda ops: self.queue.SubmitJob(ops),
            luxi.REQ_SUBMIT_JOB_TO_DRAINED_QUEUE:
                lambda ops: self.queue.SubmitJob(ops, to_drained=True),
            luxi.REQ_SUBMIT_MANY_JOBS: self.queue.SubmitManyJobs,
            luxi.REQ_WAIT_FOR_JOB_CHANGE: self._WaitForJobChange,
            luxi.REQ_QUERY_JOBS: self.queue.QueryJobs,
            luxi.REQ_CANCEL_JOB: lambda job_id, kill=False:
                self.queue.CancelJob(_JobId(job_id), kill),
            luxi.REQ_ARCHIVE_JOB:
                lambda job_id: self.queue.ArchiveJob(_JobId(job_id)),
            luxi.REQ_AUTO_ARCHIVE_JOBS: self._AutoArchive,
            luxi.REQ_CHANGE_JOB_PRIORITY: lambda job_id, prio:
                self.queue.ChangeJobPriority(_JobId(job_id), prio),
            luxi.REQ_SET_DRAIN_FLAG: self._SetDrainFlag,
            luxi.REQ_QUERY_CONFIG_VALUES: self._QueryConfigValues,
            luxi.REQ_QUERY_CLUSTER_INFO:
                lambda: cmdlib_cluster.BuildClusterInfo(context.cfg),
            luxi.REQ_QUERY_TAGS: self._QueryTags,
            luxi.REQ_QUERY: self._Query,
            luxi.REQ_QUERY_FIELDS: self._QueryFields,
            luxi.REQ_QUERY_EXPORTS: self._QueryExports,
            luxi.REQ_QUERY_INSTANCES:
                functools.partial(self._ClassicQuery, constants.QR_INSTANCE),
            luxi.REQ_QUERY_NODES:
                functools.partial(self._ClassicQuery, constants.QR_NODE),
            luxi.REQ_QUERY_GROUPS:
                functools.partial(self._ClassicQuery, constants.QR_GROUP),
            luxi.REQ_QUERY_NETWORKS:
                functools.partial(self._ClassicQuery, constants.QR_NETWORK),
            luxi.REQ_SET_WATCHER_PAUSE: self._SetWatcherPause,
            luxi.REQ_SET_MAINTENANCE_STATE: self._SetMaintenanceState,
            luxi.REQ_PICKUP_JOB: self._PickupJob,
            # Filter changes bypass the queue, so they work when it is
            # blocked (design-optables)
            luxi.REQ_QUERY_FILTERS: lambda uuids, fields:
                jqueue_filters.QueryFilters(context.cfg, uuids, fields),
            luxi.REQ_REPLACE_FILTER:
                lambda uuid, priority, predicates, action, reason:
                jqueue_filters.ReplaceFilter(context.cfg, self.queue, uuid,
                                             priority, predicates, action,
                                             reason),
            luxi.REQ_DELETE_FILTER: lambda uuid:
                jqueue_filters.DeleteFilter(context.cfg, self.queue, uuid),
            # The Placement API's writes bypass the queue too: they are
            # requests answered at once, checked by compare and set
            luxi.REQ_QUERY_PLACEMENT_STATE: lambda known_serial:
                placement_store.ConfigSource(context.cfg).Load(known_serial),
            luxi.REQ_SET_PLACEMENT_STATE: lambda serial, data:
                placement_store.ConfigSource(context.cfg).Save(serial, data),
        }

    def Dispatch(self, method: str, args: list) -> Any:
        """Run one LUXI method; exceptions become encoded error replies."""
        fn = self._methods.get(method)
        if fn is None:
            raise errors.ProtocolError("Unknown method '%s'" % method)
        try:
            return fn(*args)
        except TypeError as err:
            raise errors.ProtocolError("Wrong arguments for method '%s': %s"
                                       % (method, err))

    def _WaitForJobChange(self, job_id: Any, fields: list, prev_info: Any,
                          prev_serial: Any, timeout: float) -> Any:
        return self.queue.WaitForJobChange(_JobId(job_id), fields, prev_info,
                                           prev_serial, timeout)

    def _AutoArchive(self, age: float, timeout: float | None = None) -> list:
        if timeout is None:
            timeout = (constants.LUXI_DEF_RWTO - 1) // 2
        return self.queue.AutoArchiveJobs(age, timeout)

    def _SetDrainFlag(self, drain: Any) -> bool:
        if not isinstance(drain, bool):
            raise errors.OpPrereqError("Drain flag must be a boolean",
                                       errors.ECODE_INVAL)
        self.queue.SetDrainFlag(drain)
        self.context.replicator.ReplicateDrainFlag(drain)
        return True

    def _QueryConfigValues(self, fields: list) -> list:
        cfg = self.context.cfg
        values = {
            "cluster_name": cfg.GetClusterName,
            "master_node": cfg.GetMasterNodeName,
            "drain_flag": self.queue.IsDrained,
            "watcher_pause": lambda: utils.ReadWatcherPauseFile(
                pathutils.WATCHER_PAUSEFILE),
            "modify_ssh_setup":
                lambda: cfg.GetClusterInfo().modify_ssh_setup,
            "ssh_key_type": lambda: cfg.GetClusterInfo().ssh_key_type,
            "ssh_key_bits": lambda: cfg.GetClusterInfo().ssh_key_bits,
            "maintenance": lambda: cfg.GetMaintenance().ToDict(),
        }
        return [values[f]() if f in values else None for f in fields]

    def _SetWatcherPause(self, until: Any) -> Any:
        """Write the watcher pause to the master and the master
        candidates, as Ganeti does; nodes that fail are only logged."""
        if until is not None and (isinstance(until, bool) or
                                  not isinstance(until, (int, float))):
            raise errors.OpPrereqError("Watcher pause must be a Unix time"
                                       " or null, not %r" % (until, ),
                                       errors.ECODE_INVAL)
        cfg = self.context.cfg
        nodes = [node.uuid for node in cfg.GetAllNodesInfo().values()
                 if node.master_candidate and not node.offline]
        results = self.context.rpc.call_set_watcher_pause(nodes, until)
        for result in results.values():
            if result.fail_msg:
                logging.warning("Could not set the watcher pause on node"
                                " %s: %s", result.node, result.fail_msg)
        return until

    def _SetMaintenanceState(self, state: Any) -> bool:
        """Store ganeti-maintd's state in the configuration (replicated
        with it); like filters, this bypasses the job queue, so maintd's
        bookkeeping never waits behind the jobs it follows."""
        if not isinstance(state, dict) or \
                not set(state) <= set(objects.Maintenance.STATE_FIELDS):
            raise errors.OpPrereqError(
                "Maintenance state must be a dictionary with keys among %s"
                % ", ".join(objects.Maintenance.STATE_FIELDS),
                errors.ECODE_INVAL)
        try:
            self.context.cfg.UpdateMaintenance(state)
        except errors.ConfigurationError as err:
            raise errors.OpPrereqError("Invalid maintenance state: %s" % err,
                                       errors.ECODE_INVAL) from err
        return True

    def _QueryTags(self, kind: str, name: str) -> list:
        op = opcodes.OpTagsGet(kind=kind, name=name or None)
        return mcpu.ExecuteWithoutQueue(self.context, op)

    def _Query(self, what: str, fields: list, qfilter: Any) -> dict:
        if what == constants.QR_LOCK:
            return self.context.glm.QueryLocks(fields)
        if what == constants.QR_JOB:
            try:
                # Job rows are read under each job's lock: only states
                # already written to disk are reported
                return query.Query(queryfields.FIELDS[constants.QR_JOB],
                                   self._Jobs(fields, qfilter), fields,
                                   qfilter,
                                   item_lock=lambda job: job.lock)
            except errors.ParameterError as err:
                raise errors.OpPrereqError(str(err), errors.ECODE_INVAL)
        return mcpu.ExecuteWithoutQueue(self.context, opcodes.OpQuery(
            what=what, fields=fields, qfilter=qfilter))

    def _QueryExports(self, nodes: list | None,
                      use_locking: bool = False) -> list:
        """Rows of ``[node, export]`` (null export: the node did not
        answer), as Ganeti 3's luxid answers this classic query."""
        return self._ClassicQuery(constants.QR_EXPORT, nodes,
                                  ["node", "export"], use_locking,
                                  namefield="node")

    def _ClassicQuery(self, what: str, names: list | None, fields: list,
                      use_locking: bool, namefield: str = "name") -> list:
        """The query of Ganeti's classic LUXI methods (QueryInstances,
        ...): rows of values, null where a value is unavailable, and an
        unknown field refused instead of reported, as luxid does."""
        if use_locking:
            raise errors.OpPrereqError("Sync queries are not allowed",
                                       errors.ECODE_INVAL)
        result = self._Query(what, fields,
                             qlang.MakeSimpleFilter(namefield, names))
        unknown = [fdef["name"] for fdef in result["fields"]
                   if fdef["kind"] == constants.QFT_UNKNOWN]
        if unknown:
            raise errors.OpPrereqError("Unknown output fields selected: %s"
                                       % ", ".join(unknown),
                                       errors.ECODE_INVAL)
        return [[value for _, value in row] for row in result["data"]]

    def _QueryFields(self, what: str, fields: list | None) -> dict:
        if what == constants.QR_LOCK:
            return {"fields": self.context.glm.QueryLocks(
                fields or ["name", "mode", "owner", "pending"])["fields"]}
        if what == constants.QR_JOB:
            return query.QueryFields(queryfields.FIELDS[constants.QR_JOB],
                                     fields)
        return mcpu.ExecuteWithoutQueue(self.context, opcodes.OpQueryFields(
            what=what, fields=fields))

    def _Jobs(self, fields: list, qfilter: Any) -> list:
        """The jobs a query looks at, as Ganeti's luxid: those its filter
        names (live or archived), else the live ones and, if it asks for
        the "archived" field, the archived ones."""
        ids = _RequestedJobIds(qfilter)
        if ids is None:
            ids = self.queue.GetJobIds(archived="archived" in fields)
        jobs = [self.queue.GetJob(i) for i in ids]
        return [job for job in jobs if job]

    @staticmethod
    def _PickupJob(job_id: Any) -> None:
        raise errors.ProgrammerError("PickupJob is for internal use only")


def _RequestedJobIds(qfilter: Any) -> list[int] | None:
    """The job ids a filter only selects by (``gnt-job list 3 5``)."""
    if not isinstance(qfilter, list) or not qfilter:
        return None
    parts = qfilter[1:] if qfilter[0] == qlang.OP_OR else [qfilter]
    ids = []
    for part in parts:
        if not (isinstance(part, list) and len(part) == 3 and
                part[0] in (qlang.OP_EQUAL, qlang.OP_EQUAL_LEGACY) and
                part[1] == "id" and isinstance(part[2], int) and
                not isinstance(part[2], bool)):
            return None
        ids.append(part[2])
    return ids or None


def _JobId(job_id: Any) -> int:
    try:
        return int(job_id)
    except (TypeError, ValueError):
        raise errors.OpPrereqError("Invalid job id %r" % (job_id, ),
                                   errors.ECODE_INVAL)


class _LuxiRequestHandler(socketserver.BaseRequestHandler):
    """One client connection: read ETX-framed requests, answer each."""

    server: "_LuxiServer"

    def handle(self) -> None:
        dispatcher = self.server.luxi_handler
        self._stream = luxi.MessageStream(self.request)
        while True:
            try:
                msg = self._stream.ReadMessage()
            except errors.ProtocolError as err:
                # Oversized message or broken framing: answer, then drop
                # the client, since the stream is out of sync
                self._Send(False, errors.EncodeException(err))
                return
            except OSError:
                return
            if msg is None:
                return
            self._Send(*self._Handle(dispatcher, msg))

    @staticmethod
    def _Handle(dispatcher: LuxiHandler, msg: bytes) -> tuple[bool, Any]:
        try:
            method, args, _ = luxi.ParseRequest(msg)
        except errors.ProtocolError as err:
            return False, str(err)
        try:
            return True, dispatcher.Dispatch(method, args)
        except errors.GenericError as err:
            logging.debug("LUXI %s failed: %s", method, err)
            return False, errors.EncodeException(err)
        except Exception as err:  # pylint: disable=broad-except
            logging.exception("Unexpected error in LUXI method %s", method)
            return False, errors.EncodeException(
                errors.GenericError("Internal error: %s" % err))

    def _Send(self, success: bool, result: Any) -> None:
        try:
            self._stream.WriteMessage(luxi.FormatResponse(success, result))
        except (OSError, TypeError, ValueError,
                errors.ProtocolError) as err:
            logging.warning("Cannot send LUXI reply: %s", err)


class _LuxiServer(socketserver.ThreadingMixIn,
                  socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, path: str, luxi_handler: LuxiHandler):
        utils.RemoveFile(path)
        self.luxi_handler = luxi_handler
        old_umask = os.umask(0o117)
        try:
            socketserver.UnixStreamServer.__init__(self, path,
                                                   _LuxiRequestHandler)
        finally:
            os.umask(old_umask)
        os.chmod(path, constants.SOCKET_MODE)


def CheckMasterd(options: Any, args: list) -> None:
    """Start only on the master, and only if the nodes agree.

    Without --no-voting, a majority of the nodes must name this node as
    master and none may hold a newer config or job queue (see
    bootstrap.CheckMasterVotes).
    """
    if args:
        raise errors.GenericError("Usage: ganeti-masterd [-f] [-d]"
                                  " [--no-voting [--yes-do-it]]")
    if not os.path.exists(pathutils.CLUSTER_CONF_FILE):
        raise errors.ConfigurationError(
            "Cluster configuration %s not found; is this node part of a"
            " cluster?" % pathutils.CLUSTER_CONF_FILE)
    cfg = config.ConfigWriter(accept_foreign=True)
    my_name = netutils.GetMyName()
    if cfg.GetMasterNodeName() != my_name:
        raise errors.NotMasterError(
            "This is not the master node: the configuration names '%s' as"
            " master, this node is '%s'" % (cfg.GetMasterNodeName(), my_name))
    if options.no_voting:
        if not options.yes_do_it:
            raise errors.GenericError(
                "--no-voting starts the master daemon even if the other"
                " nodes disagree, which can lead to two masters; add"
                " --yes-do-it if you are sure")
        logging.warning("Starting without voting (--no-voting)")
        return
    bootstrap.CheckMasterVotes(cfg, my_name)


def PrepMasterd(options: Any, args: list) -> dict:
    """Load state, recover the queue and bind the LUXI sockets."""
    cfg = config.ConfigWriter()
    context = GanetiContext(cfg, pathutils.QUEUE_DIR)
    handler = LuxiHandler(context)
    servers = [_LuxiServer(path, handler)
               for path in (pathutils.MASTER_SOCKET, pathutils.QUERY_SOCKET)]
    return {"context": context, "servers": servers}


def _RecoverCreations(context: GanetiContext) -> None:
    """Remove what creations interrupted by a crash left on the nodes.

    Runs under the exclusive BGL, as creations do, so that none of this
    process is under way and every record found is from a dead job.
    """
    context.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL])
    try:
        kept = creation_intents.RecoverCreations(context.cfg, context.rpc)
    finally:
        context.glm.release(locking.LEVEL_CLUSTER)
    if kept:
        logging.warning("%d interrupted instance creation(s) could not be"
                        " cleaned up; tried again at the next start", kept)


def ExecMasterd(options: Any, args: list, prep: dict,
                stop_event: threading.Event) -> None:
    """Serve LUXI until SIGTERM, then stop the queue cleanly."""
    threads = [threading.Thread(target=server.serve_forever,
                                kwargs={"poll_interval": 0.2},
                                name="luxi-%d" % i, daemon=True)
               for i, server in enumerate(prep["servers"])]
    if creation_intents.PendingRecords(prep["context"].cfg):
        threads.append(threading.Thread(
            target=_RecoverCreations, args=(prep["context"], ),
            name="creation-recovery", daemon=True))
    for thread in threads:
        thread.start()
    logging.info("Master daemon serving on %s", pathutils.MASTER_SOCKET)
    stop_event.wait()
    logging.info("Shutting down")
    for server in prep["servers"]:
        server.shutdown()
        server.server_close()
        utils.RemoveFile(server.server_address)
    prep["context"].jobqueue.Shutdown()
    prep["context"].replicator.Shutdown()
    logging.info("Master daemon stopped")


def BuildParser() -> optparse.OptionParser:
    """ganeti-masterd's options (its man page is generated from them)."""
    parser = optparse.OptionParser(
        description="The Ganeti master daemon runs on the master node. It"
        " serves the gnt-* commands and the remote API daemon (LUXI), keeps"
        " the cluster configuration and the job queue, and runs the jobs,"
        " reaching the nodes through ganeti-noded. It starts only if most"
        " nodes agree that this node is the master (see --no-voting).",
        usage="%prog [-f] [-d] [--no-voting [--yes-do-it]]",
        version="%%prog (ganeti) %s" % constants.RELEASE_VERSION)
    parser.add_option("--no-voting", dest="no_voting", action="store_true",
                      default=False,
                      help="Do not check that the nodes agree on this node"
                      " being the master and start the daemon"
                      " unconditionally")
    parser.add_option("--yes-do-it", dest="yes_do_it", action="store_true",
                      default=False,
                      help="Confirm --no-voting (non-interactive)")
    daemon.AddDaemonOptions(parser)
    return parser


def main() -> None:
    """Entry point of ganeti-masterd."""
    daemon.GenericMain(constants.MASTERD, BuildParser(), CheckMasterd,
                       PrepMasterd, ExecMasterd)

