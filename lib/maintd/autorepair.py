"""Auto-repair of instances by tags, harep's rules (``man harep``).

Repairs are opt-in: the tag ``ganeti:watcher:autorepair:<type>`` on an
instance, its node group or the cluster allows repairs up to ``<type>``
(``fix-storage`` < ``migrate`` < ``failover`` < ``reinstall``); the
nearest object having such tags decides, and among several on one object
the least destructive wins; ``...:suspend`` (forever) or
``...:suspend:<unix time>`` (until then) on an object stops repairs
there, winning over that object's enable tags.

A repair's state is kept in one instance tag: while its jobs run
``...:pending:<type>:<uuid>:<time>:<job+job...>``, then
``...:result:<type>:<uuid>:<time>:<success|failure|enoperm>:<jobs>``
(``enoperm``: the repair needed is beyond what the policy allows). The
earliest failure sticks (no more repairs until the admin removes its
tag); two pending repairs of one instance are an error. Starting a new
repair, or finishing one, removes the instance's older state tags.

What is broken is read from the nodes being offline (or drained, which
harep cannot tell apart): a drbd instance with both nodes offline is
recreated and reinstalled (``reinstall``), one with its primary offline
failed over (``failover``), one with its secondary offline gets a new
secondary (``fix-storage``); a plain instance with its primary offline
is recreated and reinstalled. Other templates are never repaired.

``PlanInstance`` turns one instance's tags and nodes into the actions of
one harep pass; ``harep`` runs them once, ganeti-maintd in its rounds.
"""

import time
import uuid as uuidlib
from typing import Any, Callable, NamedTuple

from ganeti import constants, errors, opcodes

HEALTHY = "Healthy"
NEEDS_REPAIR = "Needs repair"
PENDING = "Pending repair"
FAILED = "Failed repair"

_RANK = {name: rank for rank, name in enumerate(constants.AUTO_REPAIR_TYPES)}
# How harep orders a repair's tags (pending, then the results in the order
# of its AutoRepairResult type): the last one decides
_RESULT_RANK = {None: 0, constants.AUTO_REPAIR_SUCCESS: 1,
                constants.AUTO_REPAIR_FAILURE: 2,
                constants.AUTO_REPAIR_ENOPERM: 3}


class RepairData(NamedTuple):
    """One repair as its state tag records it."""
    kind: str
    uuid: str
    time: int
    jobs: tuple[int, ...]
    result: str | None

    @property
    def tag(self) -> str:
        """The tag recording this repair (harep's ``updateTag``)."""
        fields = [self.kind, self.uuid, str(self.time)]
        if self.result is None:
            prefix = constants.AUTO_REPAIR_TAG_PENDING
        else:
            prefix = constants.AUTO_REPAIR_TAG_RESULT
            fields.append(self.result)
        fields.append("+".join(str(job) for job in self.jobs))
        return prefix + ":".join(fields)


def _ChompPrefix(prefix: str, text: str) -> str | None:
    """``text`` without ``prefix``; the prefix without its trailing colon
    matches too (as harep's chompPrefix), leaving the empty string."""
    if text.startswith(prefix):
        return text[len(prefix):]
    if text == prefix[:-1]:
        return ""
    return None


def ParseStateTag(tag: str) -> RepairData | None:
    """The repair a pending or result tag records; None for other tags
    and for malformed ones."""
    fields: list[str] | None = None
    result = None
    rest = _ChompPrefix(constants.AUTO_REPAIR_TAG_PENDING, tag)
    if rest is not None:
        fields = rest.split(":")
        if len(fields) != 4:
            return None
    else:
        rest = _ChompPrefix(constants.AUTO_REPAIR_TAG_RESULT, tag)
        if rest is None:
            return None
        fields = rest.split(":")
        if len(fields) != 5:
            return None
        result = fields.pop(3)
        if result not in constants.AUTO_REPAIR_ALL_RESULTS:
            return None
    kind, repair_id, stamp, jobs = fields
    if kind not in _RANK:
        return None
    try:
        return RepairData(kind, repair_id, int(stamp),
                          tuple(int(job) for job in jobs.split("+") if job),
                          result)
    except ValueError:
        return None


class Policy(NamedTuple):
    """What the tags allow: ``enabled`` up to ``kind``, or ``suspended``
    (``until`` None: forever)."""
    suspended: bool
    kind: str | None = None
    until: int | None = None


def ObjectPolicy(tags: list[str], now: float) -> Policy | None:
    """The policy one object's tags set, None if they set none."""
    suspensions = [rest for rest in
                   (_ChompPrefix(constants.AUTO_REPAIR_TAG_SUSPENDED, tag)
                    for tag in tags) if rest is not None]
    if "" in suspensions:
        return Policy(True)
    future = [int(stamp) for stamp in suspensions
              if stamp.isdigit() and int(stamp) > now]
    if future:
        return Policy(True, until=max(future))
    enabled = [rest for rest in
               (_ChompPrefix(constants.AUTO_REPAIR_TAG_ENABLED, tag)
                for tag in tags) if rest in _RANK]
    if enabled:
        return Policy(False, kind=min(enabled, key=_RANK.__getitem__))
    return None


def EffectivePolicy(levels: list[list[str]], now: float) -> Policy | None:
    """The policy of the nearest object with one; ``levels`` are the
    tags of the instance, its node group and the cluster, in this
    order. None: repairs are not enabled."""
    for tags in levels:
        found = ObjectPolicy(tags, now)
        if found is not None:
            return found
    return None


class State(NamedTuple):
    """An instance's repair state from its tags: the state's name, the
    repair deciding it and the older state tags to remove."""
    name: str
    data: RepairData | None
    obsolete: list[str]


def InitialState(instance: str, tags: list[str]) -> State:
    """The state harep's ``setInitialState`` derives: the repairs grouped
    by id, oldest first; the first failure sticks, otherwise the newest
    decides (a result over the pending tag of the same repair). A second
    pending repair is an AutoRepairError."""
    groups: dict[str, list[RepairData]] = {}
    for tag in tags:
        data = ParseStateTag(tag)
        if data is not None and data.tag == tag:
            groups.setdefault(data.uuid, []).append(data)
    state = State(HEALTHY, None, [])
    for group in sorted(groups.values(),
                        key=lambda group: (min(d.time for d in group),
                                           group[0].uuid)):
        newest = max(group, key=lambda d: (_RESULT_RANK[d.result], d.time))
        if state.name == FAILED:
            continue
        if state.name == PENDING:
            assert state.data is not None
            raise errors.AutoRepairError(
                "An unfinished repair was found in instance %s: found tag"
                " %r, but older pending tag %r exists" %
                (instance, newest.tag, state.data.tag))
        obsolete = state.obsolete + ([state.data.tag] if state.data else [])
        if newest.result == constants.AUTO_REPAIR_FAILURE:
            name = FAILED
        elif newest.result is None:
            name = PENDING
        else:
            name = HEALTHY
        state = State(name, newest, obsolete)
    return state


class Broken(NamedTuple):
    """The repair an instance needs and its opcodes."""
    kind: str
    ops: list[opcodes.OpCode]


def _Reinstall(name: str) -> list[opcodes.OpCode]:
    return [opcodes.OpInstanceRecreateDisks(
                instance_name=name, iallocator=constants.IALLOCATOR_BUILTIN),
            opcodes.OpInstanceReinstall(instance_name=name)]


def DetectBroken(name: str, disk_template: str, pnode_offline: bool,
                 snode_offline: bool) -> Broken | None:
    """The repair an instance needs, from its nodes being offline
    (harep's ``detectBroken``); None if it needs none or harep can't
    repair its template. Targets come from the built-in allocator."""
    if disk_template == constants.DT_DRBD8:
        if pnode_offline and snode_offline:
            return Broken(constants.AUTO_REPAIR_REINSTALL, _Reinstall(name))
        if pnode_offline:
            return Broken(constants.AUTO_REPAIR_FAILOVER, [
                opcodes.OpInstanceFailover(instance_name=name)])
        if snode_offline:
            return Broken(constants.AUTO_REPAIR_FIX_STORAGE, [
                opcodes.OpInstanceReplaceDisks(
                    instance_name=name, mode=constants.REPLACE_DISK_CHG,
                    iallocator=constants.IALLOCATOR_BUILTIN)])
        return None
    if disk_template == constants.DT_PLAIN and pnode_offline:
        return Broken(constants.AUTO_REPAIR_REINSTALL, _Reinstall(name))
    return None


class Instance(NamedTuple):
    """What harep needs to know of an instance."""
    name: str
    disk_template: str
    pnode: str
    snodes: list[str]
    tags: list[str]
    group_tags: list[str]
    cluster_tags: list[str]

    @staticmethod
    def Fields() -> list[str]:
        """The instance query fields ``FromQuery`` reads, in order."""
        return ["name", "disk_template", "pnode", "snodes", "tags",
                "pnode.group.uuid"]

    @classmethod
    def FromQuery(cls, row: list[Any], group_tags: dict[str, list[str]],
                  cluster_tags: list[str]) -> "Instance":
        name, template, pnode, snodes, tags, group = row
        return cls(name, template, pnode, list(snodes or []),
                   list(tags or []), group_tags.get(group, []),
                   cluster_tags)


class Action(NamedTuple):
    """One step of a harep pass for an instance, for the caller to carry
    out in order: change the instance's tags (``add`` and ``remove``), or
    submit ``repair``'s opcodes as one job and then tag the instance with
    ``PendingTag`` of the job's id, removing ``remove``."""
    instance: str
    add: str | None
    remove: list[str]
    repair: Broken | None = None
    repair_id: str = ""
    started: int = 0
    message: str = ""

    def PendingTag(self, job_ids: list[int]) -> str:
        """The pending tag of a repair submitted as ``job_ids``."""
        assert self.repair is not None
        return RepairData(self.repair.kind, self.repair_id, self.started,
                          tuple(job_ids), None).tag

    def TagOps(self, add: str | None = None) -> list[opcodes.OpCode]:
        """The opcodes changing the tags (``add`` overriding the
        action's own tag to add)."""
        add = add or self.add
        ops: list[opcodes.OpCode] = []
        if add:
            ops.append(opcodes.OpTagsSet(kind=constants.TAG_INSTANCE,
                                         name=self.instance, tags=[add]))
        if self.remove:
            ops.append(opcodes.OpTagsDel(kind=constants.TAG_INSTANCE,
                                         name=self.instance,
                                         tags=list(self.remove)))
        return ops


class Plan(NamedTuple):
    """An instance's actions in one pass and its state after them."""
    state: str
    actions: list[Action]


def PlanInstance(inst: Instance, offline: Callable[[str], bool],
                 job_statuses: Callable[[list[int]], list[str | None]],
                 now: float | None = None) -> Plan:
    """One harep pass over an instance: finish its pending repair if its
    jobs are all over, then, if it is healthy and broken, repair it as
    far as its policy allows (an ``enoperm`` result beyond that).
    ``offline`` tells whether a node counts as offline, ``job_statuses``
    gives the statuses of jobs (None for unknown ones, which count as
    failed)."""
    now = time.time() if now is None else now
    state = InitialState(inst.name, inst.tags)
    actions: list[Action] = []
    if state.name == PENDING:
        assert state.data is not None
        statuses = job_statuses(list(state.data.jobs))
        if any(status is not None and
               status not in constants.JOBS_FINALIZED
               for status in statuses):
            return Plan(PENDING, [])
        ok = all(status == constants.JOB_STATUS_SUCCESS
                 for status in statuses)
        result = constants.AUTO_REPAIR_SUCCESS if ok else \
            constants.AUTO_REPAIR_FAILURE
        done = state.data._replace(result=result, time=int(now))
        new_state = State(HEALTHY if ok else FAILED, done, [])
        actions.append(Action(inst.name, done.tag,
                              state.obsolete + [state.data.tag],
                              message="Moving %s from \"%s\" to \"%s\"" %
                              (inst.name, state.name, new_state.name)))
        state = new_state
    if state.name != HEALTHY:
        return Plan(state.name, actions)
    snode = inst.snodes[0] if inst.snodes else None
    broken = DetectBroken(inst.name, inst.disk_template, offline(inst.pnode),
                          snode is not None and offline(snode))
    if broken is None:
        return Plan(HEALTHY, actions)
    remove = state.obsolete + ([state.data.tag] if state.data else [])
    policy = EffectivePolicy([inst.tags, inst.group_tags, inst.cluster_tags],
                             now)
    if policy is None or policy.suspended:
        return Plan(HEALTHY, actions)
    assert policy.kind is not None
    repair_id = str(uuidlib.uuid4())
    if _RANK[broken.kind] > _RANK[policy.kind]:
        if state.data is not None and state.data.kind == broken.kind and \
                state.data.result == constants.AUTO_REPAIR_ENOPERM:
            # Refused before for the same reason: the tag stays as it is
            # (harep would write it anew at every run)
            return Plan(NEEDS_REPAIR, actions)
        refused = RepairData(broken.kind, repair_id, int(now), (),
                             constants.AUTO_REPAIR_ENOPERM)
        actions.append(Action(
            inst.name, refused.tag, remove,
            message="Not performing a repair of type %s on %s because only"
            " repairs up to %s are allowed" % (broken.kind, inst.name,
                                               policy.kind)))
        return Plan(NEEDS_REPAIR, actions)
    actions.append(Action(inst.name, None, remove, repair=broken,
                          repair_id=repair_id, started=int(now),
                          message="Executing %s repair on %s" %
                          (broken.kind, inst.name)))
    return Plan(PENDING, actions)
