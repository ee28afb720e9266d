"""Job filter rules (design-optables) and ad-hoc rate limiting.

Filter rules live in the configuration (so they are written atomically and
replicated with it); this module validates them, evaluates them against
jobs and keeps the admission state the queue's scheduler consults.

A rule's predicates are ``[name, expression]`` pairs whose expression is a
query-language filter in wire form (``query.CompileFilter``), evaluated
over a per-predicate field table: ``jobid`` has the field ``id`` (the
string ``"watermark"`` in a value position stands for the rule's
watermark), ``opcode`` every parameter of an opcode including ``OP_ID``
(dotted names reach into nested dicts) and ``reason`` the ``source``,
``reason`` and ``timestamp`` of a reason trail entry. ``opcode`` and
``reason`` hold if any opcode or entry of the job satisfies the
expression. As in Ganeti, a missing field, a null value or a comparison
of incompatible values makes the expression false rather than an error
(the query engine would let missing values pass).

Rules are ordered by (priority, watermark, uuid); the first rule whose
predicates all match and whose action is not CONTINUE applies to a job.
What applies to a job only changes with the rules, so it is cached on the
job per rules version and the predicates are compiled once per version.

Ad-hoc rate limiting: a reason trail text ``rate-limit:N:...`` (N > 0)
puts the job in the bucket named by the whole text; at most N jobs of a
bucket run at once.
"""

import functools
import json
import logging
import re
import time
from typing import Any, Callable, Iterable

from ganeti import constants, errors, objects, opcodes, query
from ganeti.queryfields.filters import FILTER_FIELDS, GetRules, SortKey

# Reason source appended to a rule's trail when it is stored (as luxid does)
FILTER_REASON_SRC = "luxid"

_RATE_LIMIT_RE = re.compile(r"^rate-limit:(\d+):")

# Operators combining sub-expressions; every other operator is a leaf
# ``[op, field, value...]``
_COMBINATORS = frozenset(["&", "|", "!"])

_WATERMARK = "watermark"


def _Show(value: Any) -> str:
    """A value in error messages, as the JSON the client sent."""
    return json.dumps(value, default=repr)


# Predicate evaluation --------------------------------------------------------

class _MissingField(Exception):
    """An expression names a field the item does not have."""


# Stands for null parameter values, which compare with nothing
_NULL = object()


def _OpField(name: str) -> Callable[[dict], Any]:
    def get(opdict: dict) -> Any:
        if name in opdict:
            value = opdict[name]
        else:
            value = opdict
            for part in name.split("."):
                if not isinstance(value, dict) or part not in value:
                    raise _MissingField(name)
                value = value[part]
        return _NULL if value is None else value
    return get


@functools.cache
def _OpcodeParameters() -> frozenset[str]:
    """``OP_ID`` and the name of every parameter of any opcode."""
    return frozenset(["OP_ID"] + [
        param[0] for op_class in opcodes.OP_MAPPING.values()
        for param in op_class.GetAllParams()])


class _OpcodeFields:
    """Field table of the ``opcode`` predicate: ``OP_ID`` and any opcode's
    parameters (``a.b.c`` for nested values), looked up late.

    Opcodes differ in their parameters: a name a job's opcode lacks fails
    the expression at evaluation, but a name no opcode has is refused
    when the rule is compiled.
    """

    def __contains__(self, name: Any) -> bool:
        return isinstance(name, str) and \
            name.split(".")[0] in _OpcodeParameters()

    def __getitem__(self, name: str) -> query.FieldDef:
        return (name, constants.QFT_OTHER, _OpField(name), "")


_JOBID_FIELDS: query.FieldTable = {
    "id": ("ID", constants.QFT_NUMBER, lambda job_id: job_id, "Job ID"),
}
_REASON_FIELDS: query.FieldTable = {
    "source": ("Source", constants.QFT_TEXT, lambda entry: entry[0],
               "Reason source"),
    "reason": ("Reason", constants.QFT_TEXT, lambda entry: entry[1],
               "Reason text"),
    "timestamp": ("Timestamp", constants.QFT_NUMBER, lambda entry: entry[2],
                  "Reason timestamp (nanoseconds)"),
}


def _SubstituteWatermark(expr: Any, watermark: int) -> Any:
    """Replace ``"watermark"`` in the value positions of an expression."""
    if not isinstance(expr, list) or not expr:
        return expr
    op, args = expr[0], expr[1:]
    if op in _COMBINATORS:
        return [op] + [_SubstituteWatermark(sub, watermark) for sub in args]
    return [op] + args[:1] + [watermark if arg == _WATERMARK else arg
                              for arg in args[1:]]


def _Holds(test: Callable[[Any], bool], item: Any) -> bool:
    try:
        return test(item)
    except (_MissingField, errors.ParameterError, TypeError):
        return False


class JobView:
    """What predicates look at in a job, extracted once per job."""

    __slots__ = ("job_id", "ops", "reasons", "buckets")

    def __init__(self, job_id: int, opdicts: Iterable[Any]):
        self.job_id = job_id
        self.ops = [op for op in opdicts if isinstance(op, dict)]
        self.reasons = [tuple(entry) for op in self.ops
                        for entry in (op.get("reason") or [])
                        if isinstance(entry, (list, tuple)) and
                        len(entry) == 3]
        self.buckets = RateLimitBuckets(self.reasons)

    @classmethod
    def FromJob(cls, job: Any) -> "JobView":
        return cls(job.id, [op.input.__getstate__() for op in job.ops])


def RateLimitBuckets(reasons: Iterable[tuple]) -> dict[str, int]:
    """Ad-hoc rate-limit buckets (reason text -> limit) of reason entries."""
    buckets = {}
    for entry in reasons:
        text = entry[1]
        if not isinstance(text, str):
            continue
        match = _RATE_LIMIT_RE.match(text)
        if match and int(match.group(1)) > 0:
            buckets[text] = int(match.group(1))
    return buckets


def _CompilePredicate(predicate: Any,
                      watermark: int) -> Callable[[JobView], bool]:
    """Compile one ``[name, expression]``; ParameterError names the fault."""
    if not (isinstance(predicate, (list, tuple)) and len(predicate) == 2 and
            isinstance(predicate[0], str) and
            predicate[0] in objects.FILTER_PREDICATES):
        raise errors.ParameterError(
            "Invalid predicate %s: expected [name, expression] with name one"
            " of %s" % (_Show(predicate), ", ".join(sorted(
                objects.FILTER_PREDICATES))))
    name, expr = predicate
    if not isinstance(expr, list) or not expr:
        raise errors.ParameterError("Invalid expression %s in predicate %s:"
                                    " expected a non-empty list" %
                                    (_Show(expr), _Show(name)))
    if name == "jobid":
        test = query.CompileFilter(_JOBID_FIELDS,
                                   _SubstituteWatermark(expr, watermark))
        return lambda view: _Holds(test, view.job_id)
    if name == "opcode":
        test = query.CompileFilter(_OpcodeFields(), expr)
        return lambda view: any(_Holds(test, op) for op in view.ops)
    test = query.CompileFilter(_REASON_FIELDS, expr)
    return lambda view: any(_Holds(test, entry) for entry in view.reasons)


class CompiledRule:
    """A filter rule ready for evaluation."""

    __slots__ = ("uuid", "action", "limit", "predicates")

    def __init__(self, rule: objects.FilterRule):
        self.uuid = rule.uuid
        self.limit: int | None
        if isinstance(rule.action, list):
            self.action, self.limit = rule.action[0], int(rule.action[1])
        else:
            self.action, self.limit = rule.action, None
        self.predicates = [_CompilePredicate(pred, rule.watermark)
                           for pred in rule.predicates]

    def Matches(self, view: JobView) -> bool:
        return all(pred(view) for pred in self.predicates)


def CompileChain(rules: Iterable[objects.FilterRule]) -> list[CompiledRule]:
    """The rules that can apply to jobs, in evaluation order.

    CONTINUE rules never apply, so they are left out. A rule that does not
    compile (only possible in a hand-edited configuration) is logged and
    ignored rather than stopping the queue.
    """
    chain = []
    for rule in sorted(rules, key=SortKey):
        if rule.action == objects.FILTER_CONTINUE:
            continue
        try:
            chain.append(CompiledRule(rule))
        except (errors.ParameterError, TypeError, ValueError,
                IndexError) as err:
            logging.error("Ignoring invalid filter rule %s: %s", rule.uuid,
                          err)
    return chain


def ApplyingRule(chain: list[CompiledRule],
                 view: JobView) -> CompiledRule | None:
    """The first matching rule of ``chain``; None means ACCEPT."""
    for rule in chain:
        if rule.Matches(view):
            return rule
    return None


# Validation and the LUXI methods ---------------------------------------------

def _CheckPriority(priority: Any) -> int:
    if not isinstance(priority, int) or isinstance(priority, bool) or \
            priority < 0:
        raise errors.OpPrereqError("Invalid filter priority %s: must be a"
                                   " non-negative integer" % _Show(priority),
                                   errors.ECODE_INVAL)
    return priority


def _CheckAction(action: Any) -> Any:
    if isinstance(action, str) and action in objects.FILTER_SIMPLE_ACTIONS:
        return action
    if isinstance(action, (list, tuple)) and len(action) == 2 and \
            action[0] == objects.FILTER_RATE_LIMIT and \
            isinstance(action[1], int) and \
            not isinstance(action[1], bool) and action[1] > 0:
        return [objects.FILTER_RATE_LIMIT, action[1]]
    raise errors.OpPrereqError(
        "Invalid filter action %s: must be one of %s or [\"%s\", n] with n a"
        " positive integer" %
        (_Show(action), ", ".join(sorted(objects.FILTER_SIMPLE_ACTIONS)),
         objects.FILTER_RATE_LIMIT), errors.ECODE_INVAL)


def _CheckPredicates(predicates: Any) -> list:
    if not isinstance(predicates, (list, tuple)):
        raise errors.OpPrereqError("Invalid filter predicates %s: must be a"
                                   " list" % _Show(predicates),
                                   errors.ECODE_INVAL)
    result = []
    for predicate in predicates:
        try:
            _CompilePredicate(predicate, 0)
        except errors.ParameterError as err:
            raise errors.OpPrereqError("Invalid filter predicate: %s" % err,
                                       errors.ECODE_INVAL) from err
        result.append([predicate[0], predicate[1]])
    return result


def _CheckReason(reason: Any) -> list:
    if not isinstance(reason, (list, tuple)):
        raise errors.OpPrereqError("Invalid filter reason trail %s: must be a"
                                   " list" % _Show(reason), errors.ECODE_INVAL)
    result = []
    for entry in reason:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 3 and
                isinstance(entry[0], str) and isinstance(entry[1], str) and
                isinstance(entry[2], (int, float)) and
                not isinstance(entry[2], bool)):
            raise errors.OpPrereqError(
                "Invalid reason trail entry %s: must be [source, reason,"
                " timestamp]" % _Show(entry), errors.ECODE_INVAL)
        result.append(list(entry))
    return result


def MakeRule(uuid: str | None, priority: Any, predicates: Any, action: Any,
             reason: Any, watermark: int) -> objects.FilterRule:
    """Validate a rule's parts; OpPrereqError names the bad one."""
    if uuid is not None and (not isinstance(uuid, str) or not uuid.strip()):
        raise errors.OpPrereqError("Invalid filter UUID %s" % _Show(uuid),
                                   errors.ECODE_INVAL)
    return objects.FilterRule(
        uuid=uuid, watermark=watermark, priority=_CheckPriority(priority),
        predicates=_CheckPredicates(predicates), action=_CheckAction(action),
        reason_trail=_CheckReason(reason))


def ReplaceFilter(cfg: Any, queue: Any, uuid: str | None, priority: Any,
                  predicates: Any, action: Any, reason: Any) -> str:
    """Add a rule (``uuid`` None or unknown) or replace one; its UUID.

    The watermark is the highest job id allocated so far, set anew on
    every replacement, and the queue re-evaluates its jobs at once.
    """
    rule = MakeRule(uuid, priority, predicates, action, reason,
                    queue.HighestJobId())
    rule.reason_trail.append([FILTER_REASON_SRC, "", time.time_ns()])
    cfg.SetFilter(rule)
    queue.UpdateFilters()
    return rule.uuid


def DeleteFilter(cfg: Any, queue: Any, uuid: Any) -> None:
    """Remove a rule; jobs it held back are re-evaluated."""
    if not isinstance(uuid, str) or cfg.GetFilterRule(uuid) is None:
        raise errors.OpPrereqError("Filter rule %s not found" % _Show(uuid),
                                   errors.ECODE_NOENT)
    try:
        cfg.RemoveFilter(uuid)
    except errors.ConfigurationError as err:
        raise errors.OpPrereqError("Filter rule %s not found" % _Show(uuid),
                                   errors.ECODE_NOENT) from err
    queue.UpdateFilters()


def QueryFilters(cfg: Any, uuids: list[str] | None, fields: Any) -> list:
    """Old-style query: one row of field values per rule."""
    if uuids is not None and not (isinstance(uuids, list) and
                                  all(isinstance(u, str) for u in uuids)):
        raise errors.OpPrereqError("Filter UUIDs must be a list of strings"
                                   " or null, not %s" % _Show(uuids),
                                   errors.ECODE_INVAL)
    if not isinstance(fields, list):
        raise errors.OpPrereqError("Filter fields must be a list",
                                   errors.ECODE_INVAL)
    unknown = [field for field in fields if field not in FILTER_FIELDS]
    if unknown:
        raise errors.OpPrereqError("Unknown output fields selected: %s" %
                                   ", ".join(map(str, unknown)),
                                   errors.ECODE_INVAL)
    getters = [FILTER_FIELDS[field][2] for field in fields]
    return [[get(rule) for get in getters] for rule in GetRules(cfg, uuids)]


# Scheduler state -------------------------------------------------------------

class _JobState:
    """A job's view and the rule applying to it under one rules version."""

    __slots__ = ("view", "version", "rule")

    def __init__(self, view: JobView):
        self.view = view
        self.version = -1
        self.rule: CompiledRule | None = None


def _RuleKey(uuid: str) -> str:
    return "rule:" + uuid


def _BucketKey(bucket: str) -> str:
    return "bucket:" + bucket


class JobFilters:
    """Which queued jobs may start: filter rules and rate limits.

    The scheduler calls ``TryStart`` for the job it is about to run and
    ``Finished`` when the job leaves its worker (done, paused or waiting
    for a dependency). A job that may not start is held under the key of
    what blocks it (a rule or a bucket) and handed back for re-evaluation
    when that can change: its rule's or bucket's running job finished, or
    the rules changed. Every evaluation is thus linear in the queued jobs
    it touches, and predicates only run once per job and rules version.

    Everything must be called with the scheduler lock held. Jobs carry
    their cached state in ``job.filter_state`` and the reason they wait in
    ``job.wait_reason``.
    """

    def __init__(self, rules: Iterable[objects.FilterRule] = ()):
        # (version, chain), replaced as a whole
        self._rules: tuple[int, list[CompiledRule]] = (0, [])
        self.has_reject = False
        self._active: dict[int, Any] = {}
        self._rule_running: dict[str, int] = {}
        self._bucket_running: dict[str, int] = {}
        self._held: dict[str, dict[int, Any]] = {}
        self.SetRules(rules)

    def SetRules(self, rules: Iterable[objects.FilterRule]) -> list:
        """Install new rules; returns the held jobs to re-evaluate.

        Running jobs count towards the RATE_LIMIT rule that applies to
        them under the new rules, even if it was added after they started.
        """
        chain = CompileChain(rules)
        self._rules = (self._rules[0] + 1, chain)
        self.has_reject = any(rule.action == objects.FILTER_REJECT
                              for rule in chain)
        self._rule_running = {}
        for job in self._active.values():
            rule = self._State(job).rule
            if rule is not None and rule.limit is not None:
                self._rule_running[rule.uuid] = \
                    self._rule_running.get(rule.uuid, 0) + 1
        released = [job for held in self._held.values()
                    for job in held.values()]
        self._held = {}
        return released

    def _State(self, job: Any) -> _JobState:
        version, chain = self._rules
        state = job.filter_state
        if state is None:
            state = job.filter_state = _JobState(JobView.FromJob(job))
        if state.version != version:
            state.rule = ApplyingRule(chain, state.view)
            state.version = version
        return state

    def RejectingRule(self, job: Any) -> str | None:
        """UUID of the REJECT rule applying to a job, if any."""
        rule = self._State(job).rule
        if rule is not None and rule.action == objects.FILTER_REJECT:
            return rule.uuid
        return None

    def PausingRule(self, job: Any) -> str | None:
        """UUID of the PAUSE rule applying to a job, if any."""
        rule = self._State(job).rule
        if rule is not None and rule.action == objects.FILTER_PAUSE:
            return rule.uuid
        return None

    def _Blocker(self, state: _JobState) -> tuple[str, str] | None:
        """(hold key, wait reason) if the job may not start now."""
        rule = state.rule
        if rule is not None:
            if rule.action in (objects.FILTER_PAUSE, objects.FILTER_REJECT):
                return (_RuleKey(rule.uuid),
                        "filter %s (%s)" % (rule.uuid, rule.action))
            if rule.limit is not None and \
                    self._rule_running.get(rule.uuid, 0) >= rule.limit:
                return (_RuleKey(rule.uuid),
                        "rate limit of filter %s" % rule.uuid)
        for bucket, limit in state.view.buckets.items():
            if self._bucket_running.get(bucket, 0) >= limit:
                return _BucketKey(bucket), "rate-limit bucket %s" % bucket
        return None

    def TryStart(self, job: Any) -> bool:
        """Admit a job (counting it as running) or hold it back."""
        state = self._State(job)
        blocker = self._Blocker(state)
        if blocker is not None:
            key, job.wait_reason = blocker
            self._held.setdefault(key, {})[job.id] = job
            return False
        job.wait_reason = None
        self._active[job.id] = job
        rule = state.rule
        if rule is not None and rule.limit is not None:
            self._rule_running[rule.uuid] = \
                self._rule_running.get(rule.uuid, 0) + 1
        for bucket in state.view.buckets:
            self._bucket_running[bucket] = \
                self._bucket_running.get(bucket, 0) + 1
        return True

    def Finished(self, job: Any) -> list:
        """A job left its worker; returns the held jobs it may unblock."""
        if self._active.pop(job.id, None) is None:
            return []
        state = self._State(job)
        keys = []
        rule = state.rule
        if rule is not None and rule.limit is not None:
            self._rule_running[rule.uuid] -= 1
            keys.append(_RuleKey(rule.uuid))
        for bucket in state.view.buckets:
            self._bucket_running[bucket] -= 1
            if not self._bucket_running[bucket]:
                del self._bucket_running[bucket]
            keys.append(_BucketKey(bucket))
        return [held for key in keys
                for held in self._held.pop(key, {}).values()]
