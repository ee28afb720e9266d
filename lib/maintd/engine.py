"""What ganeti-maintd does at each poll: observe, follow jobs, act.

Every poll (at the diagnose collector's interval) reads the signed
self-diagnose report of each online node, and of each node with an open
incident (an evacuated node is offline but still reports), keeping only
what the cluster's HMAC key verifies. Then it follows the jobs of the
current round, forgets the incidents the admin acknowledged, and, once
the last round's jobs have all finished and the maintenance interval
(the configuration's ``roundDelay``) has passed, starts a new round for
the noted incidents, the most invasive one of each node. The state is
read from the configuration at the first poll and written back through
the master daemon after each poll that changed it.

An evacuation goes through the phases ``evacuating`` (the node
evacuation job and the jobs it submitted), ``offlining`` (one job
offlining the node and tagging it ``maintd:repairready:<id>``) and
``evacuated``; a failed job ends it in ``failed`` after tagging the
node ``maintd:repairfailed:<id>``. A live repair goes through
``repairing`` (one job running the report's white-listed repair command
on the node, OpRepairCommand with the report on its standard input, and
tagging the node ``maintd:repairready:<id>``; no command: the tagging
only) and ``repaired``; the command's output, or the error, is kept in
the incident's ``repair-output``. Every job carries the reason
``gnt:daemon:maintd`` with the incident's id.

Rounds follow design-maintd's order: evacuations first (at most one node
per node group in a round) and live repairs, then, with ``harep`` on
(gnt-cluster modify --maintd-harep), harep's repairs
(ganeti.maintd.autorepair) of instances on nodes without an incident,
then, with auto-balancing on, the rebalance planner's first moves (disk
moves only if allowed; with --auto-balance-dynamic-load also balancing
the CPU load the nodes' monds report) on the nodes none of these touch.

An incident the admin canceled (OpClusterRepairCancel, the
configuration's ``canceled`` list) goes to ``canceled``: its queued jobs
are canceled, nothing more is done for it, and it is forgotten once its
node no longer reports it.
"""

import logging
import time
import urllib.request
from typing import Any

from ganeti import (constants, errors, luxi, netutils, objects, opcodes,
                    pathutils, serializer, ssconf)
from ganeti.client import hbal
from ganeti.htools import balance
from ganeti.maintd import autorepair, state as mstate
from ganeti.monitoring import report

DIAGNOSE_PATH = "/1/report/%s/diagnose" % report.CATEGORY_NODE
_FETCH_TIMEOUT = 5.0
_NODE_FIELDS = ["name", "uuid", "offline", "pip", "tags"]
_EVACUATIONS = frozenset([constants.DIAGNOSE_EVACUATE,
                          constants.DIAGNOSE_EVACUATE_FAILOVER])
_JOB_FAILED = frozenset([constants.JOB_STATUS_ERROR,
                         constants.JOB_STATUS_CANCELED])

PHASE_EVACUATING = "evacuating"
PHASE_OFFLINING = "offlining"
PHASE_EVACUATED = "evacuated"
PHASE_FAILING = "failing"
PHASE_FAILED = "failed"
PHASE_REPAIRING = "repairing"
PHASE_REPAIRED = "repaired"
PHASE_CANCELED = "canceled"
# The phases waiting for jobs
_IN_FLIGHT = frozenset([PHASE_EVACUATING, PHASE_OFFLINING, PHASE_FAILING,
                        PHASE_REPAIRING])
# How invasive each action is: a round handles each node's most
# invasive noted incident
_INVASIVENESS = {constants.DIAGNOSE_LIVE_REPAIR: 1,
                 constants.DIAGNOSE_EVACUATE: 2,
                 constants.DIAGNOSE_EVACUATE_FAILOVER: 3}
# The job states in which canceling a job needs no cooperation
_CANCELABLE = frozenset([constants.JOB_STATUS_QUEUED,
                         constants.JOB_STATUS_WAITING])


def FetchDiagnose(address: str, key: bytes, port: int | None = None
                  ) -> dict[str, Any] | None:
    """The verified diagnose data a node's mond reports, None (and logged)
    if it can't be had or its signature is missing or wrong."""
    if port is None:
        port = netutils.GetDaemonPort(constants.MOND)
    url = "http://%s:%d%s" % (address, port, DIAGNOSE_PATH)
    try:
        with urllib.request.urlopen(url, timeout=_FETCH_TIMEOUT) as answer:
            rep = serializer.LoadJson(answer.read())
    except (OSError, ValueError) as err:
        logging.warning("Can't read the diagnose report at %s: %s", url, err)
        return None
    try:
        data = report.VerifyReport(rep, key)["data"]
    except errors.SignatureError as err:
        logging.warning("Ignoring the diagnose report at %s: %s", url, err)
        return None
    if not isinstance(data, dict) or \
            data.get("status") not in constants.DIAGNOSE_STATUSES:
        logging.warning("Ignoring the diagnose report at %s: not a"
                        " diagnose result: %r", url, data)
        return None
    return data


def _RepairOutput(incident: dict[str, Any], opresult: list[Any] | None
                  ) -> str:
    """What the repair job of a live repair gave: the command's output,
    or the error that ended the job."""
    if not incident["original"].get("command"):
        return ""
    result = (opresult or [None])[0]
    if isinstance(result, str):
        return result
    error = errors.GetEncodedError(result)
    if error is not None:
        return "%s: %s" % (error.__class__.__name__, error.args[0])
    return "no result (%r)" % (result, )


def _Reason(incident_id: str) -> list[list[Any]]:
    return [[constants.OPCODE_REASON_SRC_MAINTD, incident_id,
             time.time_ns()]]


class Engine:
    """The incidents' observer and the rounds' driver (one thread)."""

    def __init__(self, state: mstate.State,
                 luxi_address: str | None = None,
                 key_file: str = pathutils.CONFD_HMAC_KEY,
                 store: ssconf.SimpleStore | None = None):
        self.state = state
        self.maintenance_interval = float(constants.MAINTD_DEFAULT_ROUND_DELAY)
        self.balance = False
        self.balance_threshold = constants.MAINTD_DEFAULT_BALANCE_THRESHOLD
        self.balance_disk_moves = True
        self.balance_dynamic_load = False
        self.harep = False
        self._last_balance_check = 0.0
        self._luxi_address = luxi_address
        self._key_file = key_file
        self._store = store or ssconf.SimpleStore()
        self._client: luxi.Client | None = None
        # The incidents the admin canceled (the configuration's list)
        self._canceled: frozenset[str] = frozenset()

    def PollInterval(self) -> float:
        """Seconds between polls: the diagnose collector's interval."""
        try:
            settings = objects.FillDataCollectors(
                self._store.GetDataCollectors())
        except errors.ConfigurationError as err:
            logging.warning("Using the default collector interval: %s", err)
            settings = objects.FillDataCollectors({})
        return settings["diagnose"][
            constants.DATA_COLLECTOR_PARAMETER_INTERVAL] / 1e6

    def _Luxi(self) -> luxi.Client:
        if self._client is None:
            self._client = luxi.Client(address=self._luxi_address)
        return self._client

    def Step(self) -> None:
        """One poll: observe the nodes, follow the jobs, act; a master
        daemon that can't be reached is tried again at the next poll."""
        try:
            self._LoadSettings()
            nodes = self._Luxi().QueryNodes([], _NODE_FIELDS, False)
            by_uuid = {uuid: {"name": name, "offline": offline, "pip": pip,
                              "tags": set(tags)}
                       for name, uuid, offline, pip, tags in nodes}
            observed = self._Observe(by_uuid)
            self.state.NotePoll(by_uuid, observed)
            with self.state.lock:
                self._Note(by_uuid, observed)
                self._Cancel()
                self._Follow()
                self._Forget(by_uuid, observed)
                self._StartRound()
            self._Save()
        except (errors.LuxiError, errors.ProtocolError, errors.OpPrereqError,
                OSError) as err:
            logging.error("Maintenance step failed: %s", err)
            self._client = None

    def _LoadSettings(self) -> None:
        """The maintenance section of the configuration: the settings at
        every poll, the state once."""
        (maintenance, ) = self._Luxi().QueryConfigValues(["maintenance"])
        self.maintenance_interval = float(maintenance["roundDelay"])
        self.balance = maintenance["balance"]
        self.balance_threshold = maintenance["balanceThreshold"]
        self.balance_disk_moves = maintenance.get("balanceDiskMoves", True)
        self.balance_dynamic_load = maintenance.get("balanceDynamicLoad",
                                                    False)
        self.harep = maintenance.get("harep", False)
        self._canceled = frozenset(maintenance.get("canceled", []))
        if not self.state.loaded:
            self.state.FromConfig(maintenance)
            logging.info("Loaded %d incidents from the configuration",
                         len(self.state.incidents))

    def _Save(self) -> None:
        """Store the state in the configuration if it changed."""
        changes = self.state.Changes()
        if changes is not None:
            self._Luxi().SetMaintenanceState(changes)
            self.state.Stored(changes)

    def _Observe(self, nodes: dict[str, dict[str, Any]]
                 ) -> dict[str, dict[str, Any]]:
        """Node UUID -> verified diagnose data, for the nodes polled."""
        key = report.ReadHmacKey(self._key_file)
        with self.state.lock:
            open_nodes = {inc["node"] for inc in
                          self.state.incidents.values()}
        result = {}
        for uuid, node in nodes.items():
            if node["offline"] and uuid not in open_nodes:
                continue
            data = FetchDiagnose(node["pip"], key)
            if data is not None:
                result[uuid] = data
        return result

    def _Note(self, nodes: dict[str, dict[str, Any]],
              observed: dict[str, dict[str, Any]]) -> None:
        """A new, different diagnose object is a new incident."""
        known = [(inc["node"], inc["original"])
                 for inc in self.state.incidents.values()]
        for uuid, data in observed.items():
            if data["status"] == constants.DIAGNOSE_OK or \
                    (uuid, data) in known:
                continue
            incident = mstate.NewIncident(uuid, nodes[uuid]["name"], data)
            logging.info("New incident %s on node %s: %s", incident["id"],
                         incident["node-name"], data)
            self.state.incidents[incident["id"]] = incident

    def _Submit(self, incident: dict[str, Any],
                ops: list[opcodes.OpCode]) -> int:
        for op in ops:
            op.reason = _Reason(incident["id"])
        job_id = int(self._Luxi().SubmitJob(ops))
        logging.info("Incident %s: submitted job %s (%s)", incident["id"],
                     job_id, ", ".join(op.OP_ID for op in ops))
        incident["jobs"].append(job_id)
        if self.state.round is not None:
            self.state.round["jobs"].append(job_id)
        return job_id

    def _Fail(self, incident: dict[str, Any], why: str) -> None:
        logging.warning("Incident %s failed: %s", incident["id"], why)
        incident["repair-status"] = mstate.FAILED
        incident["tag"] = mstate.TAG_FAILED_PREFIX + incident["id"]
        incident["phase"] = PHASE_FAILING
        self._Submit(incident, [opcodes.OpTagsSet(
            kind=constants.TAG_NODE, name=incident["node-name"],
            tags=[incident["tag"]])])

    def _Follow(self) -> None:
        """Advance the incidents whose jobs finished."""
        for incident in list(self.state.incidents.values()):
            phase = incident["phase"]
            if phase not in _IN_FLIGHT:
                continue
            jobs = self._Luxi().QueryJobs(incident["jobs"],
                                          ["id", "status", "opresult"])
            statuses = []
            for job_id, status, opresult in filter(None, jobs):
                statuses.append(status)
                if phase == PHASE_REPAIRING and \
                        job_id == incident["jobs"][0] and \
                        status in constants.JOBS_FINALIZED:
                    incident["repair-output"] = _RepairOutput(incident,
                                                              opresult)
                if status == constants.JOB_STATUS_SUCCESS and \
                        phase == PHASE_EVACUATING:
                    for result in opresult or []:
                        if isinstance(result, dict):
                            self._AddFollowUps(incident,
                                               result.get("jobs", []))
            if len(statuses) < len(incident["jobs"]) or \
                    not all(status in constants.JOBS_FINALIZED
                            for status in statuses):
                continue
            failed = any(status in _JOB_FAILED for status in statuses) or \
                incident.pop("submit-error", None)
            if phase == PHASE_FAILING:
                incident["phase"] = PHASE_FAILED
            elif failed:
                self._Fail(incident, "a job of the repair failed")
            elif phase == PHASE_REPAIRING:
                incident["phase"] = PHASE_REPAIRED
                incident["repair-status"] = mstate.COMPLETED
                logging.info("Incident %s completed: node %s repaired",
                             incident["id"], incident["node-name"])
            elif phase == PHASE_EVACUATING:
                incident["phase"] = PHASE_OFFLINING
                self._Submit(incident, [
                    opcodes.OpNodeSetParams(node_name=incident["node-name"],
                                            offline=True),
                    opcodes.OpTagsSet(kind=constants.TAG_NODE,
                                      name=incident["node-name"],
                                      tags=[incident["tag"]])])
            else:
                incident["phase"] = PHASE_EVACUATED
                incident["repair-status"] = mstate.COMPLETED
                logging.info("Incident %s completed: node %s evacuated",
                             incident["id"], incident["node-name"])
        self._EndRoundIfDone()

    def _AddFollowUps(self, incident: dict[str, Any],
                      submitted: list[Any]) -> None:
        """The jobs the evacuation submitted belong to the incident."""
        for success, value in submitted:
            if not success:
                logging.warning("Incident %s: an evacuation job could not"
                                " be submitted: %s", incident["id"], value)
                incident["submit-error"] = True
            elif int(value) not in incident["jobs"]:
                incident["jobs"].append(int(value))
                if self.state.round is not None:
                    self.state.round["jobs"].append(int(value))

    def _EndRoundIfDone(self) -> None:
        current = self.state.round
        if current is None:
            return
        # The round's jobs of no incident: balancing and harep's
        others = current.get("balancing", []) + current.get("harep", [])
        if others and any(
                row and row[0] not in constants.JOBS_FINALIZED
                for row in self._Luxi().QueryJobs(others, ["status"])):
            return
        if not any(self.state.incidents.get(inc_id, {}).get("phase") in
                   _IN_FLIGHT for inc_id in current["incidents"]):
            current["finished"] = time.time()
            self.state.EndRound()

    def _Forget(self, nodes: dict[str, dict[str, Any]],
                observed: dict[str, dict[str, Any]]) -> None:
        """Forget what the admin acknowledged (design-maintd: a removed
        repairready tag once no longer observed, a removed repairfailed
        tag at once) and noted incidents no longer observed."""
        for incident in list(self.state.incidents.values()):
            uuid = incident["node"]
            node = nodes.get(uuid)
            gone_node = node is None
            seen = observed.get(uuid)
            still_seen = seen is None or seen == incident["original"]
            tag_gone = node is None or incident["tag"] not in node["tags"]
            phase = incident["phase"]
            if phase is None:
                forget = gone_node or not still_seen
            elif phase == PHASE_FAILED:
                forget = tag_gone
            elif phase in (PHASE_EVACUATED, PHASE_REPAIRED):
                forget = tag_gone and not still_seen
            elif phase == PHASE_CANCELED:
                forget = gone_node or not still_seen
            else:
                forget = gone_node
            if not forget:
                continue
            logging.info("Forgetting incident %s of node %s",
                         incident["id"], incident["node-name"])
            del self.state.incidents[incident["id"]]
            if phase == PHASE_EVACUATED and node is not None and \
                    node["offline"]:
                self._Submit(incident, [opcodes.OpNodeSetParams(
                    node_name=incident["node-name"], offline=False)])

    def _StartRound(self) -> None:
        """Start a round if the last one is over and the maintenance
        interval has passed, in design-maintd's order: per node the most
        invasive noted incident, evacuations first (one node per node
        group, so that no evacuation moves instances onto a node another
        one empties) and live repairs; then harep's repairs (if enabled)
        of instances on nodes without an incident, one per node; then the
        balancing moves (if enabled) on the nodes left. All the round's
        jobs are submitted at once."""
        if self.state.round is not None or \
                time.time() - self.state.last_round_start < \
                self.maintenance_interval:
            return
        todo = self._RoundIncidents()
        busy = {inc["node-name"] for inc in self.state.incidents.values()}
        affected = {inc["node-name"] for inc in self.state.incidents.values()
                    if inc["phase"] != PHASE_CANCELED}
        repairs = self._HarepActions(affected) if self.harep else []
        for action in repairs:
            busy |= action[1]
        balancing = self._BalanceJobs(busy)
        if not todo and not repairs and not balancing:
            return
        now = time.time()
        self.state.last_round_start = now
        self.state.round = {"started": now, "incidents": [], "jobs": []}
        for incident in todo:
            self.state.round["incidents"].append(incident["id"])
            incident["repair-status"] = mstate.PENDING
            if incident["original"]["status"] in _EVACUATIONS:
                incident["phase"] = PHASE_EVACUATING
                self._Submit(incident, self._EvacuationOps(incident))
            else:
                incident["phase"] = PHASE_REPAIRING
                self._Submit(incident, self._LiveRepairOps(incident))
        if todo:
            logging.info("Round started for incidents %s",
                         ", ".join(self.state.round["incidents"]))
        if repairs:
            self.state.round["harep"] = self._SubmitHarep(repairs)
            self.state.round["jobs"].extend(self.state.round["harep"])
        if balancing:
            job_ids = []
            for success, value in self._Luxi().SubmitManyJobs(balancing):
                if success:
                    job_ids.append(int(value))
                else:
                    logging.warning("A balancing job could not be"
                                    " submitted: %s", value)
            logging.info("Balancing: submitted jobs %s",
                         ", ".join(map(str, job_ids)))
            self.state.round["balancing"] = job_ids
            self.state.round["jobs"].extend(job_ids)

    def _RoundIncidents(self) -> list[dict[str, Any]]:
        """The incidents a new round handles: each node's most invasive
        noted one, at most one evacuation per node group."""
        chosen: dict[str, dict[str, Any]] = {}
        for incident in self.state.incidents.values():
            rank = _INVASIVENESS.get(incident["original"]["status"])
            if incident["phase"] is not None or rank is None:
                continue
            other = chosen.get(incident["node"])
            if other is None or \
                    rank > _INVASIVENESS[other["original"]["status"]]:
                chosen[incident["node"]] = incident
        groups = self._NodeGroups() if any(
            inc["original"]["status"] in _EVACUATIONS
            for inc in chosen.values()) else {}
        used: set[str | None] = set()
        result = []
        for incident in sorted(chosen.values(),
                               key=lambda inc: (-_INVASIVENESS[
                                   inc["original"]["status"]], inc["id"])):
            if incident["original"]["status"] in _EVACUATIONS:
                group = groups.get(incident["node-name"])
                if group in used:
                    continue
                used.add(group)
            result.append(incident)
        return result

    def _NodeGroups(self) -> dict[str, str]:
        """Node name -> node group UUID."""
        return dict(self._Luxi().QueryNodes([], ["name", "group.uuid"],
                                            False))

    def _HarepActions(self, affected: set[str]
                      ) -> list[tuple[list[autorepair.Action], set[str]]]:
        """harep's pass over the instances none of whose nodes has an
        incident: per instance its actions and its nodes; the instances
        to repair have no node in common."""
        cl = self._Luxi()
        group_tags = {uuid: list(tags) for uuid, tags in
                      cl.QueryGroups([], ["uuid", "tags"], False)}
        cluster_tags = list(cl.QueryTags(constants.TAG_CLUSTER, None))
        offline = {name for name, off, drained in
                   cl.QueryNodes([], ["name", "offline", "drained"], False)
                   if off or drained}
        taken: set[str] = set()
        result = []
        for row in cl.QueryInstances([], autorepair.Instance.Fields(),
                                     False):
            inst = autorepair.Instance.FromQuery(row, group_tags,
                                                 cluster_tags)
            nodes = {inst.pnode, *inst.snodes}
            if nodes & (affected | taken):
                continue
            try:
                plan = autorepair.PlanInstance(inst, offline.__contains__,
                                               self._JobStatuses)
            except errors.AutoRepairError as err:
                logging.warning("Not repairing: %s", err)
                continue
            if any(action.repair for action in plan.actions):
                taken |= nodes
            if plan.actions:
                result.append((plan.actions, nodes))
        return result

    def _JobStatuses(self, job_ids: list[int]) -> list[str | None]:
        return [found[0] if found else None for found in
                self._Luxi().QueryJobs(job_ids, ["status"])]

    def _SubmitHarep(self, repairs: list[tuple[list[autorepair.Action],
                                               set[str]]]) -> list[int]:
        """Submit harep's actions as harep does: a repair's job, then the
        job tagging its instance pending with the repair's job id; a
        tagging job for the other actions. The jobs' ids."""
        reason = [[constants.OPCODE_REASON_SRC_MAINTD, "harep",
                   time.time_ns()]]
        job_ids = []
        for actions, _ in repairs:
            for action in actions:
                logging.info("harep: %s", action.message)
                tag = None
                if action.repair is not None:
                    ops = list(action.repair.ops)
                    for op in ops:
                        op.reason = list(reason)
                    repair_job = int(self._Luxi().SubmitJob(ops))
                    job_ids.append(repair_job)
                    tag = action.PendingTag([repair_job])
                tag_ops = action.TagOps(tag)
                for op in tag_ops:
                    op.reason = list(reason)
                if tag_ops:
                    job_ids.append(int(self._Luxi().SubmitJob(tag_ops)))
        return job_ids

    @staticmethod
    def _LiveRepairOps(incident: dict[str, Any]) -> list[opcodes.OpCode]:
        """The job of a live repair: the report's repair command, if it
        names one, with the report on its standard input; then the
        repairready tag (a failed command fails the job before it)."""
        node = incident["node-name"]
        ops: list[opcodes.OpCode] = []
        command = incident["original"].get("command")
        if command:
            ops.append(opcodes.OpRepairCommand(
                node_name=node, command=command,
                input=serializer.DumpJson(incident["original"])))
        ops.append(opcodes.OpTagsSet(kind=constants.TAG_NODE, name=node,
                                     tags=[incident["tag"]]))
        return ops

    def _Cancel(self) -> None:
        """Stop acting on the incidents the admin canceled: their jobs
        still waiting to run are canceled, their phase ends."""
        for inc_id in self._canceled:
            incident = self.state.incidents.get(inc_id)
            if incident is None or incident["phase"] == PHASE_CANCELED:
                continue
            logging.info("Incident %s of node %s canceled", inc_id,
                         incident["node-name"])
            if incident["phase"] in _IN_FLIGHT:
                jobs = self._Luxi().QueryJobs(incident["jobs"],
                                              ["id", "status"])
                for job_id, status in filter(None, jobs):
                    if status in _CANCELABLE:
                        self._Luxi().CancelJob(job_id)
            incident["phase"] = PHASE_CANCELED
            incident["repair-status"] = mstate.CANCELED

    def _EvacuationOps(self, incident: dict[str, Any]
                       ) -> list[opcodes.OpCode]:
        """The job evacuating an incident's node. ``evacuate`` is a node
        evacuation (live migrations where possible); ``evacuate-failover``
        must not migrate (design-maintd), so the primary instances are
        failed over one after the other, as Ganeti's maintd turns the
        evacuation's migrations into failovers, and then the secondaries
        are moved (replacing disks never migrates). No allocator and no
        node: the cluster's default allocator picks the targets."""
        node = incident["node-name"]
        if incident["original"]["status"] == constants.DIAGNOSE_EVACUATE:
            return [opcodes.OpNodeEvacuate(node_name=node,
                                           mode=constants.NODE_EVAC_ALL)]
        instances = self._Luxi().QueryInstances([], ["name", "pnode"], False)
        ops: list[opcodes.OpCode] = [
            opcodes.OpInstanceFailover(instance_name=name)
            for name, pnode in instances if pnode == node]
        ops.append(opcodes.OpNodeEvacuate(node_name=node,
                                          mode=constants.NODE_EVAC_SEC))
        return ops

    def _BalanceJobs(self, busy: set[str]) -> list[list[dict[str, Any]]]:
        """The first job set of the rebalance planner (gnt-cluster
        rebalance's) for each node group whose score is above the
        threshold, with the configured allowance of disk moves and, if
        allowed, the nodes' dynamic load (the CPU load their monitoring
        daemons report), leaving out moves touching a ``busy`` node;
        nothing unless auto-balancing is on. The cluster is planned at
        most once per maintenance interval."""
        now = time.time()
        if not self.balance or \
                now - self._last_balance_check < self.maintenance_interval:
            return []
        self._last_balance_check = now
        options = balance.Options(min_score=self.balance_threshold,
                                  no_disk_moves=not self.balance_disk_moves)
        reason = [constants.OPCODE_REASON_SRC_MAINTD,
                  "auto-balancing the cluster", time.time_ns()]
        jobs = []
        try:
            message = hbal.ClusterMessage(None, cl=self._Luxi())
            groups = sorted(info["name"] for info in
                            message["nodegroups"].values())
            util = None
            if self.balance_dynamic_load:
                util = hbal.MondUtilisation(message)
                logging.info("Balancing %s dynamic load", "without"
                             if util is None else "with the nodes'")
            plans = [balance.PlanBalance(message, group=group, opts=options,
                                         util=util)
                     for group in groups]
        except errors.GenericError as err:
            logging.warning("Can't plan the balancing: %s", err)
            return []
        for group, plan in zip(groups, plans):
            if not plan.jobsets:
                continue
            logging.info("Balancing group %s: score %.8f, threshold %s",
                         group, plan.initial_score, self.balance_threshold)
            for step, ops in zip(plan.jobsets[0], plan.Jobs()[0]):
                if step.nodes & busy:
                    continue
                for op in ops:
                    op["reason"] = [list(reason)]
                jobs.append(ops)
        return jobs
