"""The processor: runs one opcode through its Logical Unit under locks.

Locks are acquired level by level (cluster, instance, nodegroup, node,
node-res, network), each attempt with a timeout. When an attempt times out
every lock is released, the opcode's priority is raised one step and the
attempt is retried with a longer timeout; the last attempt blocks. This
keeps a job holding some locks from starving others forever and lets the
job queue notice a cancellation between attempts.
"""

import logging
import time
from typing import Any, Callable

from ganeti import cmdlib, constants, errors, locking
from ganeti.cmdlib.base import LogicalUnit, ResultWithJobs
from ganeti.hooksmaster import HooksMaster


class LockAcquireTimeout(Exception):
    """Acquiring the locks of an opcode did not finish in time."""


def CalculateLockAttemptTimeouts() -> list[float | None]:
    """Timeouts of successive lock attempts; None means block."""
    timeouts: list[float | None] = []
    timeout = constants.LOCK_ATTEMPTS_MINWAIT
    total = 0.0
    while total < 4 * constants.LOCK_ATTEMPTS_MAXWAIT:
        timeouts.append(timeout)
        total += timeout
        timeout = min(timeout * 1.5, constants.LOCK_ATTEMPTS_MAXWAIT)
    timeouts.append(None)
    return timeouts


LOCK_ATTEMPT_TIMEOUTS = CalculateLockAttemptTimeouts()


class OpExecCbBase:
    """Callbacks from the processor to whoever runs the opcode (the queue)."""

    def NotifyStart(self) -> None:
        """All locks are held; Exec is about to run."""

    def Feedback(self, *args: Any) -> None:
        """A log message for the job: (type, message) or (message,)."""

    def CurrentPriority(self) -> int:
        return constants.OP_PRIO_DEFAULT

    def ChangePriority(self, priority: int) -> None:
        """The processor raised the opcode's priority after a timeout."""

    def CheckCancel(self) -> None:
        """Raise if the job was canceled while waiting for locks."""

    def SubmitManyJobs(self, jobs: list[list]) -> list:
        """Submit follow-up jobs; returns [[success, job id or error]]."""
        raise errors.ProgrammerError("Job submission not supported here")


class Processor:
    """Runs opcodes for one job (one worker thread)."""

    def __init__(self, context: Any, ec_id: Any):
        self.context = context
        self._ec_id = ec_id
        self._cbs: OpExecCbBase | None = None

    @property
    def _callbacks(self) -> OpExecCbBase:
        """The callbacks of the opcode being executed."""
        if self._cbs is None:
            raise errors.ProgrammerError("No opcode is being executed")
        return self._cbs

    # Feedback ----------------------------------------------------------------
    def _Feedback(self, *args: Any) -> None:
        if self._cbs is not None:
            self._cbs.Feedback(*args)

    def LogInfo(self, message: str, *args: Any) -> None:
        logging.info(message, *args)
        self._Feedback(" - INFO: %s" % (message % args if args else message))

    def LogWarning(self, message: str, *args: Any) -> None:
        logging.warning(message, *args)
        self._Feedback(" - WARNING: %s" %
                       (message % args if args else message))

    def LogStep(self, current: int, total: int, message: str) -> None:
        self._Feedback("STEP %d/%d %s" % (current, total, message))

    def LogEntry(self, log_type: str, payload: Any) -> None:
        """A job log entry of a type other than a message."""
        self._Feedback(log_type, payload)

    # Execution ---------------------------------------------------------------
    def ExecOpCode(self, op: Any, cbs: OpExecCbBase | None = None) -> Any:
        """Execute ``op``, retrying lock acquisition with growing timeouts."""
        lu_class = cmdlib.GetLUClass(op.OP_ID)
        redacted = op.RedactedParams()
        if redacted:
            # Job files never hold private values: a job read back after a
            # restart has "<redacted>" in their place
            raise errors.OpPrereqError(
                "The values of %s were not kept across a restart of the"
                " master daemon; please re-submit the job" %
                ", ".join(redacted), errors.ECODE_INVAL)
        callbacks = self._cbs = cbs or OpExecCbBase()
        try:
            for timeout in LOCK_ATTEMPT_TIMEOUTS:
                callbacks.CheckCancel()
                try:
                    return self._ExecAttempt(lu_class, op, timeout)
                except LockAcquireTimeout:
                    priority = callbacks.CurrentPriority()
                    if priority > constants.OP_PRIO_HIGHEST:
                        callbacks.ChangePriority(priority - 1)
                    logging.debug("Lock attempt for %s timed out after %s s",
                                  op.OP_ID, timeout)
            raise errors.ProgrammerError("Blocking lock attempt returned")
        finally:
            self._cbs = None

    def _ExecAttempt(self, lu_class: type[LogicalUnit], op: Any,
                     timeout: float | None) -> Any:
        deadline = None if timeout is None else time.monotonic() + timeout
        glm = self.context.glm
        try:
            self._Acquire(locking.LEVEL_CLUSTER, [locking.BGL],
                          not lu_class.RequiresBGL(op), deadline, False)
            lu = lu_class(self, op, self.context)
            lu.ExpandNames()
            if lu.needed_locks is None:
                raise errors.ProgrammerError("%s did not declare its locks" %
                                             lu_class.__name__)
            for level in locking.LEVELS[1:]:
                lu.DeclareLocks(level)
                if level in lu.needed_locks:
                    self._Acquire(level, lu.needed_locks[level],
                                  lu.share_locks[level], deadline,
                                  lu.opportunistic_locks[level])
            return self._ExecLU(lu, op)
        finally:
            for level in reversed(locking.LEVELS):
                if glm.is_owned(level):
                    glm.release(level)

    def _Acquire(self, level: int, names: Any, shared: int,
                 deadline: float | None, opportunistic: bool) -> None:
        if names is not None and not names and not opportunistic:
            return
        timeout = None
        if deadline is not None:
            timeout = max(deadline - time.monotonic(), 0)
        acquired = self.context.glm.acquire(
            level, names, timeout=timeout, shared=shared,
            priority=self._callbacks.CurrentPriority(),
            opportunistic=opportunistic)
        if acquired is None:
            raise LockAcquireTimeout()

    def BuildHooksManager(self, lu: Any) -> HooksMaster:
        """The hooks of an LU, run through the nodes' hooks_runner RPC
        (looked up only when used: LUs without hooks need no RPC)."""
        def _RunHooks(nodes: list[str], hpath: str, phase: str,
                      env: dict[str, str]) -> dict:
            return lu.rpc.call_hooks_runner(nodes, hpath, phase, env)
        return HooksMaster.BuildFromLu(_RunHooks, lu)

    def _ExecLU(self, lu: Any, op: Any) -> Any:
        lu.CheckPrereq()
        # Pre hooks may veto a dry run too (as in Ganeti); post hooks
        # only follow a real execution
        hm = self.BuildHooksManager(lu)
        h_results = hm.RunPhase(constants.HOOKS_PHASE_PRE)
        lu.HooksCallBack(constants.HOOKS_PHASE_PRE, h_results,
                         self._Feedback, None)
        if op.dry_run:
            return lu.dry_run_result
        self._callbacks.NotifyStart()
        result = lu.Exec(self._Feedback)
        if isinstance(result, ResultWithJobs):
            result = self._SubmitResultJobs(op, result)
        h_results = hm.RunPhase(constants.HOOKS_PHASE_POST)
        result = lu.HooksCallBack(constants.HOOKS_PHASE_POST, h_results,
                                  self._Feedback, result)
        for level, names in lu.remove_locks.items():
            self.context.glm.remove(level, names)
        if op.OP_RESULT is not None and not op.OP_RESULT(result):
            raise errors.OpResultError(
                "%s returned a result of the wrong type (expected %s): %r" %
                (op.OP_ID, op.OP_RESULT, result))
        return result

    def _SubmitResultJobs(self, op: Any, result: ResultWithJobs) -> dict:
        """Submit an LU's follow-up jobs, which inherit the parent's
        priority, comment and reason trail (Ganeti's _SetBaseOpParams)."""
        jobs = [[_InheritBaseParams(op, child) for child in job]
                for job in result.jobs]
        jobs = self._callbacks.SubmitManyJobs(jobs)
        out = dict(result.other)
        out["jobs"] = jobs
        return out


def _InheritBaseParams(parent: Any, child: Any) -> dict:
    """A follow-up opcode's wire dict, with the parent's base parameters."""
    state = dict(child) if isinstance(child, dict) else child.__getstate__()
    for name in ("priority", "comment", "debug_level"):
        if state.get(name) is None and getattr(parent, name, None) is not None:
            state[name] = getattr(parent, name)
    state["reason"] = list(getattr(parent, "reason", None) or []) + \
        list(state.get("reason") or [])
    return state


def ExecuteWithoutQueue(context: Any, op: Any,
                        feedback: Callable[..., None] | None = None) -> Any:
    """Run one opcode directly (bootstrap and tests, no job queue)."""
    class _Cbs(OpExecCbBase):
        def Feedback(self, *args: Any) -> None:
            if feedback is not None:
                feedback(args[-1])
    op.Validate(True)
    return Processor(context, None).ExecOpCode(op, _Cbs())
