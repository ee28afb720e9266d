"""Query fields of the ``job`` resource (items are jqueue QueuedJob).

Here, below the job queue, so that every reader of the field tables
(LUXI, RAPI, the OpenAPI document) finds them in one registry.
"""

from typing import Any

from ganeti import constants


def _LocksWaitedFor(job: Any) -> list[str]:
    """Names of the locks the job's worker is queued for."""
    glm = getattr(getattr(job.queue, "context", None), "glm", None)
    if glm is None:
        return []
    owner = "job/%d" % job.id
    rows = glm.QueryLocks(["name", "pending"])["data"]
    return [name for (_, name), (_, pending) in rows
            if any(owner in threads for _, threads in pending)]


def _WaitingFor(job: Any) -> str | None:
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
    "priority": ("Priority", constants.QFT_NUMBER,
                 lambda job: job.CalcPriority(),
                 "Current job priority"),
    "archived": ("Archived", constants.QFT_BOOL, lambda job: job.archived,
                 "Whether job is archived"),
    "ops": ("OpCodes", constants.QFT_OTHER,
            lambda job: [op.input.RedactedState() for op in job.ops],
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
