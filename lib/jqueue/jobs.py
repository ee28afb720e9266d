"""Jobs and opcodes as the queue holds them, and their on-disk form.

The serialized form is Ganeti's job file layout (ids as integers,
timestamps as ``[sec, usec]``), so job files can be read by Ganeti's tools.
"""

import threading
import time
from typing import Any

from ganeti import constants, errors, opcodes
from ganeti.queryfields.jobs import JOB_FIELDS

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

    # Read from a job file, which holds no private value
    RedactedState = __getstate__

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
        self.result: Any = None
        self.log: list = []
        self.priority = getattr(op, "priority", constants.OP_PRIO_DEFAULT)
        self.job_id: int | None = None
        self.start_timestamp: list[int] | None = None
        self.exec_timestamp: list[int] | None = None
        self.end_timestamp: list[int] | None = None

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
            # Private parameters stay in memory for the run, out of files
            "input": self.input.RedactedState(),
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
        self.received_timestamp: list[int] | None = TimeStampNow()
        self.start_timestamp: list[int] | None = None
        self.end_timestamp: list[int] | None = None
        self.log_serial = 0
        self.archived = False
        # Scheduler state (jqueue.scheduler, under its lock): whether a
        # worker has the job, the cached filter evaluation (jqueue.filters);
        # and why a pending job is held back (read lock-free)
        self.in_worker = False
        self.filter_state = None
        self.wait_reason: str | None = None
        # Protects the job's state and its file; waiters sleep on it. The
        # scheduler lock may be held while taking it, never the other way
        # round.
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

    # State snapshots (the job lock must be held) -----------------------------
    def SaveState(self) -> tuple:
        """What a state change may alter, for ``RestoreState``."""
        return (self.start_timestamp, self.end_timestamp,
                [(op.status, op.result, op.priority, op.start_timestamp,
                  op.exec_timestamp, op.end_timestamp) for op in self.ops])

    def RestoreState(self, state: tuple) -> None:
        """Undo a change whose write failed: memory must equal the file."""
        self.start_timestamp, self.end_timestamp, ops = state
        for op, saved in zip(self.ops, ops):
            (op.status, op.result, op.priority, op.start_timestamp,
             op.exec_timestamp, op.end_timestamp) = saved

    # Change notification (the job lock must be held) -------------------------
    def Notify(self) -> None:
        self._change_cond.notify_all()

    def WaitForChange(self, timeout: float) -> None:
        self._change_cond.wait(timeout)

    # Status ------------------------------------------------------------------
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
