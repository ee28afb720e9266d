"""Jobs and opcodes as the queue holds them, and their on-disk form.

The serialized form is Ganeti's job file layout (ids as integers,
timestamps as ``[sec, usec]``), so job files can be read by Ganeti's tools.
"""

import threading
import time
from typing import Any

from ganeti import constants, errors, opcodes

INVALID_OP_ID = "OP_INVALID"


def TimeStampNow() -> list[int]:
    """The current time as ``[seconds, microseconds]``."""
    now = time.time()
    sec = int(now)
    return [sec, int((now - sec) * 1000000)]


class InvalidOpCode:
    """An opcode input that could not be parsed; kept as it was stored."""

    OP_ID = INVALID_OP_ID
    OP_RESULT = None
    priority = constants.OP_PRIO_DEFAULT
    depends = None

    def __init__(self, data: Any):
        self._data = data

    def __getstate__(self) -> Any:
        return self._data

    def Summary(self) -> str:
        return "INVALID_OP"

    TinySummary = Summary


def _LoadOpInput(data: Any) -> Any:
    try:
        return opcodes.OpCode.LoadOpCode(data)
    except errors.GenericError:
        return InvalidOpCode(data)


class QueuedOpCode:
    """One opcode of a job, with its status, result and log."""

    __slots__ = ["input", "status", "result", "log", "priority", "job_id",
                 "start_timestamp", "exec_timestamp", "end_timestamp"]

    def __init__(self, op: Any):
        self.input = op
        self.status = constants.OP_STATUS_QUEUED
        self.result = None
        self.log: list = []
        self.priority = getattr(op, "priority", constants.OP_PRIO_DEFAULT)
        self.job_id: int | None = None
        self.start_timestamp = None
        self.exec_timestamp = None
        self.end_timestamp = None

    @classmethod
    def Restore(cls, state: dict) -> "QueuedOpCode":
        obj = cls(_LoadOpInput(state["input"]))
        obj.status = state["status"]
        obj.result = state.get("result")
        obj.log = [tuple(entry) for entry in state.get("log", [])]
        obj.priority = state.get("priority", obj.priority)
        obj.start_timestamp = state.get("start_timestamp")
        obj.exec_timestamp = state.get("exec_timestamp")
        obj.end_timestamp = state.get("end_timestamp")
        return obj

    def Serialize(self) -> dict:
        return {
            "input": self.input.__getstate__(),
            "status": self.status,
            "result": self.result,
            "log": [list(entry) for entry in self.log],
            "priority": self.priority,
            "start_timestamp": self.start_timestamp,
            "exec_timestamp": self.exec_timestamp,
            "end_timestamp": self.end_timestamp,
        }


class QueuedJob:
    """A job: a list of opcodes run in order, and its change notification."""

    def __init__(self, queue: Any, job_id: int, ops: list[QueuedOpCode]):
        self.queue = queue
        self.id = job_id
        self.ops = ops
        for op in ops:
            op.job_id = job_id
        self.received_timestamp = TimeStampNow()
        self.start_timestamp = None
        self.end_timestamp = None
        self.log_serial = 0
        self.archived = False
        self.in_worker = False
        # Scheduler state: the cached filter evaluation (jqueue.filters,
        # queue lock) and why a pending job is held back (read lock-free)
        self.filter_state = None
        self.wait_reason: str | None = None
        # Protects the job's state and its file; waiters sleep on it. The
        # queue lock may be held while taking it, never the other way round.
        self.lock = threading.Lock()
        self._change_cond = threading.Condition(self.lock)

    @classmethod
    def Restore(cls, queue: Any, state: dict) -> "QueuedJob":
        ops = [QueuedOpCode.Restore(op) for op in state["ops"]]
        job = cls(queue, int(state["id"]), ops)
        job.received_timestamp = state.get("received_timestamp")
        job.start_timestamp = state.get("start_timestamp")
        job.end_timestamp = state.get("end_timestamp")
        job.log_serial = max([0] + [entry[0] for op in ops
                                    for entry in op.log])
        return job

    def Serialize(self) -> dict:
        return {
            "id": self.id,
            "ops": [op.Serialize() for op in self.ops],
            "received_timestamp": self.received_timestamp,
            "start_timestamp": self.start_timestamp,
            "end_timestamp": self.end_timestamp,
        }

    # Change notification (the job lock must be held) ----------------------------
    def Notify(self) -> None:
        self._change_cond.notify_all()

    def WaitForChange(self, timeout: float) -> None:
        self._change_cond.wait(timeout)

    # Status --------------------------------------------------------------------
    def CalcStatus(self) -> str:
        """Job status from its opcodes, as Ganeti computes it (§3.6)."""
        status = constants.JOB_STATUS_QUEUED
        all_success = True
        for op in self.ops:
            if op.status == constants.OP_STATUS_SUCCESS:
                continue
            all_success = False
            if op.status == constants.OP_STATUS_QUEUED:
                continue
            if op.status in (constants.OP_STATUS_ERROR,
                             constants.OP_STATUS_CANCELING,
                             constants.OP_STATUS_CANCELED):
                return op.status
            status = op.status
        if all_success:
            return constants.JOB_STATUS_SUCCESS
        return status

    def CalcPriority(self) -> int:
        """Highest priority (lowest number) among unfinished opcodes."""
        prios = [op.priority for op in self.ops
                 if op.status not in constants.OPS_FINALIZED]
        return min(prios) if prios else constants.OP_PRIO_DEFAULT

    def MarkUnfinishedOps(self, status: str, result: Any) -> None:
        """Set every unfinished opcode to ``status`` with ``result``."""
        for op in self.ops:
            if op.status in constants.OPS_FINALIZED:
                continue
            op.status = status
            op.result = result
            if status in constants.OPS_FINALIZED:
                op.end_timestamp = TimeStampNow()

    def GetLogEntries(self, newer_than: int) -> list:
        return [list(entry) for op in self.ops for entry in op.log
                if entry[0] > newer_than]

    def GetInfo(self, fields: list[str]) -> list:
        return [JOB_FIELDS[name][2](self) for name in fields]


def _LocksWaitedFor(job: QueuedJob) -> list[str]:
    """Names of the locks the job's worker is queued for."""
    glm = getattr(getattr(job.queue, "context", None), "glm", None)
    if glm is None:
        return []
    owner = "job/%d" % job.id
    rows = glm.QueryLocks(["name", "pending"])["data"]
    return [name for (_, name), (_, pending) in rows
            if any(owner in threads for _, threads in pending)]


def _WaitingFor(job: QueuedJob) -> str | None:
    """What a pending job waits for (the waiting_for field).

    Runs under the job lock, so it only reads what the scheduler recorded
    (``wait_reason``) and, for a job in a worker, the lock manager.
    """
    status = job.CalcStatus()
    if status not in (constants.JOB_STATUS_QUEUED,
                      constants.JOB_STATUS_WAITING):
        return None
    if job.in_worker:
        locks = _LocksWaitedFor(job)
        return ", ".join("lock %s" % name for name in locks) or None
    return job.wait_reason


def _OpsField(attr: str):
    return lambda job: [getattr(op, attr) for op in job.ops]


# name -> (title, kind, getter, doc): the job resource's fields (§3.7)
JOB_FIELDS: dict[str, tuple] = {
    "id": ("ID", constants.QFT_NUMBER, lambda job: job.id, "Job ID"),
    "status": ("Status", constants.QFT_TEXT, lambda job: job.CalcStatus(),
               "Job status"),
    "priority": ("Prio", constants.QFT_NUMBER,
                 lambda job: job.CalcPriority(),
                 "Current job priority"),
    "archived": ("Archived", constants.QFT_BOOL, lambda job: job.archived,
                 "Whether job is archived"),
    "ops": ("OpCodes", constants.QFT_OTHER,
            lambda job: [op.input.__getstate__() for op in job.ops],
            "List of all opcodes"),
    "opresult": ("OpCode_result", constants.QFT_OTHER, _OpsField("result"),
                 "List of opcodes results"),
    "opstatus": ("OpCode_status", constants.QFT_OTHER, _OpsField("status"),
                 "List of opcodes status"),
    "oplog": ("OpCode_log", constants.QFT_OTHER,
              lambda job: [[list(e) for e in op.log] for op in job.ops],
              "List of opcode output logs"),
    "opstart": ("OpCode_start", constants.QFT_OTHER,
                _OpsField("start_timestamp"),
                "List of opcode start timestamps (before acquiring locks)"),
    "opexec": ("OpCode_exec", constants.QFT_OTHER,
               _OpsField("exec_timestamp"),
               "List of opcode execution start timestamps (after acquiring"
               " locks)"),
    "opend": ("OpCode_end", constants.QFT_OTHER, _OpsField("end_timestamp"),
              "List of opcode end timestamps"),
    "oppriority": ("OpCode_prio", constants.QFT_OTHER, _OpsField("priority"),
                   "List of opcode priorities"),
    "summary": ("Summary", constants.QFT_OTHER,
                lambda job: [op.input.Summary() for op in job.ops],
                "List of per-opcode summaries"),
    "received_ts": ("Received", constants.QFT_OTHER,
                    lambda job: job.received_timestamp,
                    "Timestamp of when job was received"),
    "start_ts": ("Start", constants.QFT_OTHER,
                 lambda job: job.start_timestamp,
                 "Timestamp of job start"),
    "end_ts": ("End", constants.QFT_OTHER, lambda job: job.end_timestamp,
               "Timestamp of job end"),
    "waiting_for": ("WaitingFor", constants.QFT_TEXT, _WaitingFor,
                    "Why a pending job does not run: \"filter <uuid>"
                    " (PAUSE)\", \"rate limit of filter <uuid>\","
                    " \"rate-limit bucket <reason>\", \"job <id>\" (a"
                    " dependency) or \"lock <name>\"; null if it is not"
                    " held back (or only waits for a free job slot)"),
}


def CheckJobFields(fields: Any) -> None:
    """Refuse unknown job fields, naming them."""
    if not isinstance(fields, list):
        raise errors.OpPrereqError("Job fields must be a list",
                                   errors.ECODE_INVAL)
    unknown = [f for f in fields if f not in JOB_FIELDS]
    if unknown:
        raise errors.OpPrereqError("Unknown output fields selected: %s" %
                                   ", ".join(str(f) for f in unknown),
                                   errors.ECODE_INVAL)
