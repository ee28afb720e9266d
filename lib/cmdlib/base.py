"""Base classes of the Logical Units.

An LU runs one opcode. The processor (mcpu) drives it through
CheckArguments, ExpandNames, DeclareLocks (per level), CheckPrereq and Exec,
holding the locks the LU declared in ``needed_locks`` while it runs.
"""

from typing import Any, Callable

from ganeti import constants, errors, locking, query, utils


class ResultWithJobs:
    """An LU result that asks the processor to submit follow-up jobs."""

    def __init__(self, jobs: list[list], **kwargs: Any):
        self.jobs = jobs
        self.other = kwargs


class LogicalUnit:
    """One operation, run under the locks it declares.

    Subclasses set ``needed_locks`` in ExpandNames (level -> list of names,
    or locking.ALL_SET), may refine a level in DeclareLocks, and set
    ``share_locks[level] = 1`` for shared acquisition. ``REQ_BGL`` makes
    the LU take the Big Ganeti Lock exclusively (it runs alone).
    """

    HPATH: str | None = None
    HTYPE: str | None = None
    REQ_BGL = True

    def __init__(self, processor: Any, op: Any, context: Any):
        self.proc = processor
        self.op = op
        self.context = context
        self.cfg = context.cfg
        self.rpc = context.rpc
        self.glm = context.glm
        # None until ExpandNames declares the locks (mcpu refuses an LU
        # that does not); typed for what the LU code reads after that
        self.needed_locks: dict[int, Any] = None  # type: ignore[assignment]
        self.share_locks = dict.fromkeys(locking.LEVELS, 0)
        self.opportunistic_locks = dict.fromkeys(locking.LEVELS, False)
        # Locks to remove after Exec (objects the LU deleted)
        self.remove_locks: dict = {}
        self.dry_run_result: Any = None
        self.CheckArguments()

    @classmethod
    def RequiresBGL(cls, op: Any) -> bool:
        """Whether ``op`` needs the Big Ganeti Lock exclusively."""
        return cls.REQ_BGL

    def CheckArguments(self) -> None:
        """Check the opcode's arguments beyond their declared types."""

    def ExpandNames(self) -> None:
        """Resolve names to uuids and declare ``needed_locks``."""
        raise NotImplementedError

    def DeclareLocks(self, level: int) -> None:
        """Compute the locks of ``level`` once the higher levels are held."""

    def CheckPrereq(self) -> None:
        """Check the state of the cluster with all locks held."""

    def Exec(self, feedback_fn: Callable[[str], None]) -> Any:
        """Do the operation and return its result."""
        raise NotImplementedError

    # Hooks (see ganeti.hooksmaster); only called when HPATH is set
    def BuildHooksEnv(self) -> dict[str, Any]:
        """The operation's hook variables, without the GANETI_ prefix.

        Called after CheckPrereq for the pre phase and again after Exec
        for the post phase, whose scripts get both (GANETI_POST_<key>).
        """
        raise NotImplementedError

    def BuildHooksNodes(self) -> tuple[list[str], ...]:
        """``(pre, post)`` node UUIDs that run the hooks, or ``(pre, post,
        post_names)`` with nodes by name that exist only after Exec."""
        raise NotImplementedError

    def PreparePostHookNodes(self, post_hook_node_uuids: list[str]
                             ) -> list[str]:
        """Change the post-hook nodes once Exec has run (by default, no)."""
        return post_hook_node_uuids

    def HooksCallBack(self, phase: str, hook_results: dict | None,
                      feedback_fn: Callable[[str], None],
                      lu_result: Any) -> Any:
        """See the hook results of a phase; returns the LU's result.

        ``hook_results`` maps node to the hooks_runner RPC result (None
        when no node ran hooks); ``lu_result`` is None for the pre phase.
        """
        return lu_result

    # Feedback helpers, shown in the job's log
    def LogInfo(self, message: str, *args: Any) -> None:
        self.proc.LogInfo(message, *args)

    def LogWarning(self, message: str, *args: Any) -> None:
        self.proc.LogWarning(message, *args)

    def LogStep(self, current: int, total: int, message: str) -> None:
        self.proc.LogStep(current, total, message)

    def LogEntry(self, log_type: str, payload: Any) -> None:
        """A job log entry of another type (constants.ELOG_*)."""
        self.proc.LogEntry(log_type, payload)


class NoHooksLU(LogicalUnit):
    """An LU that runs no hooks."""

    HPATH = None
    HTYPE = None

    def BuildHooksEnv(self) -> dict[str, Any]:
        raise errors.ProgrammerError("BuildHooksEnv called for a NoHooksLU")

    def BuildHooksNodes(self) -> tuple[list[str], ...]:
        raise errors.ProgrammerError("BuildHooksNodes called for a"
                                     " NoHooksLU")


def RunPostHook(lu: LogicalUnit, node: str) -> None:
    """Run an LU's post hooks on one node now, during Exec.

    For a node the operation is about to take out of the cluster: after
    Exec it can no longer be reached. Failures are only reported.
    """
    hm = lu.proc.BuildHooksManager(lu)
    try:
        hm.RunPhase(constants.HOOKS_PHASE_POST, nodes=[node])
    except errors.GenericError as err:
        lu.LogWarning("Errors occurred running hooks on %s: %s", node, err)


def _ExpandUuidAndName(kind: str, expand_fn: Callable[[str], str | None],
                       get_fn: Callable[[str], Any],
                       expected_uuid: str | None,
                       name: str) -> tuple[str, str]:
    """Resolve a name (or uuid) given by the user to (uuid, name).

    ``expected_uuid`` (the opcode's *_uuid parameter, if set) must match:
    a job that names an object renamed and re-created since must not act
    on the new one.
    """
    uuid = expand_fn(name)
    if uuid is None:
        raise errors.OpPrereqError("%s '%s' not known" %
                                   (kind.capitalize(), name),
                                   errors.ECODE_NOENT)
    if expected_uuid is not None and uuid != expected_uuid:
        raise errors.OpPrereqError(
            "The %s's UUID '%s' does not match the expected UUID '%s' for"
            " %s '%s'" % (kind, uuid, expected_uuid, kind, name),
            errors.ECODE_NOENT)
    return uuid, get_fn(uuid).name


def ExpandNodeUuidAndName(cfg: Any, expected_uuid: str | None,
                          name: str) -> tuple[str, str]:
    """Resolve a node name (or uuid) given by the user to (uuid, name)."""
    return _ExpandUuidAndName("node", cfg.ExpandNodeName, cfg.GetNodeInfo,
                              expected_uuid, name)


def ExpandInstanceUuidAndName(cfg: Any, expected_uuid: str | None,
                              name: str) -> tuple[str, str]:
    """Resolve an instance name (or uuid) given by the user to (uuid, name)."""
    return _ExpandUuidAndName("instance", cfg.ExpandInstanceName,
                              cfg.GetInstanceInfo, expected_uuid, name)


def SelectQueryItems(qfilter: Any, all_items: Callable[[], Any],
                     lookup: Callable[[str], str],
                     get: Callable[[str], Any]) -> tuple[list, Any]:
    """The objects a query looks at, and the filter still to apply.

    A filter that only names objects selects them directly, in the
    requested order and without duplicates; ``lookup(name) -> uuid``
    raises for an unknown name, as Ganeti refuses those. Any other filter
    is applied to all objects, sorted by name.
    """
    names = query.RequestedNames(qfilter)
    if names is None:
        return sorted(all_items(),
                      key=lambda item: utils.NiceSortKey(item.name)), qfilter
    uuids = list(dict.fromkeys(lookup(name) for name in names))
    return [get(uuid) for uuid in uuids], None
