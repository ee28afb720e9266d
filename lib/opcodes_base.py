"""The opcode machinery: parameter declarations shared by many opcodes,
the checks of unsupported parameters, and BaseOpCode/OpCode, which turn
each opcode's ``OP_PARAMS`` into validation, defaults and the wire
format (see ganeti.opcodes for the opcodes themselves).
"""

import copy
import re
from typing import TYPE_CHECKING, Any, cast

from ganeti import constants, errors, ht

_OPID_RE = re.compile("([a-z])([A-Z])")

# (name, default, check, description) of an opcode parameter
_OpParam = tuple[str, Any, ht.Check, str]

# Parameters shared by many opcodes (declared once, reused by name)
_PDryRun = ("dry_run", None, ht.TMaybeBool,
            "Run checks only, don't execute")
_PDebugLevel = ("debug_level", None, ht.TMaybe(ht.TNonNegativeInt),
                "Debug level")
_POpPriority = ("priority", constants.OP_PRIO_DEFAULT,
                ht.TInRange(constants.OP_PRIO_HIGHEST,
                            constants.OP_PRIO_LOWEST),
                "Priority for opcode processing")
_PDependencies = (
    "depends", None,
    ht.TMaybe(ht.TListOf(ht.TTupleOf(
        ht.TOr(ht.TJobId, ht.TRelativeJobId),
        ht.TListOf(ht.TElemOf(constants.JOBS_FINALIZED))))),
    "Job dependencies: [job id, [statuses]] pairs; negative ids are"
    " relative to the job's own position in a batch submission")
_PComment = ("comment", None, ht.TMaybe(ht.TString),
             "Comment describing the purpose of the opcode")
_PReason: _OpParam = (
    "reason", [], ht.TListOf(ht.TAny),
    "Reason trail: list of [source, text, timestamp_ns]")

_PForce = ("force", False, ht.TBool, "Whether to force the operation")
_PTagKind = ("kind", ht.NoDefault, ht.TElemOf(constants.VALID_TAG_TYPES),
             "Kind of the tagged object")
# Ganeti's clients send "" for the cluster; other kinds refuse it (cmdlib)
_PTagName = ("name", None, ht.TMaybe(ht.TString),
             "Name of the tagged object (none or empty for the cluster)")
_PTags = ("tags", ht.NoDefault, ht.TListOf(ht.TNonEmptyString), "List of tags")
_PUseLocking = ("use_locking", False, ht.TBool,
                "Whether to use synchronization (refused for queries)")

_PNodeName = ("node_name", ht.NoDefault, ht.TNonEmptyString, "Node name")
_PNodeUuid = ("node_uuid", None, ht.TMaybeString,
              "Node UUID (filled in from node_name)")
_PGroupName = ("group_name", ht.NoDefault, ht.TObjectName,
               "Node group name")
_PErrorCodes = ("error_codes", False, ht.TBool,
                "Report findings in the machine-readable form"
                " (severity:code:kind:item:message)")
_PSkipChecks: _OpParam = (
    "skip_checks", [], ht.TListOf(ht.TNonEmptyString),
    "Verification checks to skip")
_PIgnoreErrors: _OpParam = (
    "ignore_errors", [], ht.TListOf(ht.TNonEmptyString),
    "Error codes to report as warnings")
_PVerbose = ("verbose", False, ht.TBool, "Verbose mode")
_PDebugSimulateErrors = ("debug_simulate_errors", False, ht.TBool,
                         "Report every check as failed (testing aid)")
_PVerifyClutter = ("verify_clutter", False, ht.TBool,
                   "Whether to check for files nobody should have left")
# Static resource states (stored, as Ganeti's htools read them)
_PHvState = ("hv_state", None, ht.TMaybeDict,
             "Static hypervisor state")
_PDiskState = ("disk_state", None, ht.TMaybeDict, "Static disk state")
# [[first uid, last uid], ...]
_TMaybeUidRanges = ht.TMaybeListOf(ht.TTupleOf(ht.TInt, ht.TInt))
_PConflictsCheck = ("conflicts_check", True, ht.TBool,
                    "Whether to check the NICs' IP addresses for conflicts"
                    " in their networks (NICs without a network have none)")
_TMaybePrivateDict = ht.TPrivate(ht.TMaybeDict)
# Instance placement, shared by the instance and node opcodes
_PIgnoreIpolicy = ("ignore_ipolicy", False, ht.TBool,
                   "Whether to ignore instance policy violations")
_PMigrationMode = ("mode", None,
                   ht.TMaybe(ht.TElemOf(constants.HT_MIGRATION_MODES)),
                   "Migration mode (the hypervisor's migration_mode if not"
                   " given)")
_PMigrationLive = ("live", None, ht.TMaybeBool,
                   "Legacy setting for live migration, do not use")
_PMigrationTargetNode = ("target_node", None, ht.TMaybeString,
                         "Target node for instance migration/failover")
_PMigrationTargetNodeUuid = ("target_node_uuid", None, ht.TMaybeString,
                             "Target node UUID for instance"
                             " migration/failover")
_PAllowRuntimeChgs = ("allow_runtime_changes", True, ht.TBool,
                      "Allow runtime changes (eg. memory ballooning)")
_PMemberOf: tuple = (
    "member_of", [], ht.TListOf(ht.TNonEmptyString),
    "Aggregates the instance's nodes must be in or out of, as Placement's"
    " member_of values (all must hold): an aggregate (name or UUID),"
    " 'in:A,B' (any of them), '!A' or '!in:A,B' (none of them); nodes given"
    " explicitly must satisfy them too")


def _PIAllocFromDesc(desc: str) -> tuple:
    """The ``iallocator`` parameter, with the opcode's own description."""
    return ("iallocator", None, ht.TMaybeString, desc)


class _UnsupportedCheck(ht.Check):
    """The check of a parameter whose feature this cluster does not have.

    Ganeti's clients send every parameter of an opcode, defaults included,
    so such a parameter is declared and accepted while it is unset or set
    to one of ``inactive``, the values turning the feature off (what this
    cluster always does); any other value is refused by ``Validate`` with
    an error naming it.
    """

    __slots__ = ("inactive", )
    inactive: tuple


class _UnsupportedPrivateCheck(_UnsupportedCheck, ht.PrivateCheck):
    """An unsupported parameter whose value must not be shown."""

    __slots__ = ()


def _PUnsupported(name: str, default: Any, check: ht.Check, doc: str,
                  inactive: tuple = ()) -> _OpParam:
    """Declare a parameter of Ganeti's whose feature is missing here;
    ``inactive``: the values that turn the feature off, also accepted
    (``gnt-cluster modify --user-shutdown=no``)."""
    klass = (_UnsupportedPrivateCheck if isinstance(check, ht.PrivateCheck)
             else _UnsupportedCheck)
    unsupported = klass(check, str(check), check.kind)
    unsupported.inactive = inactive
    return (name, default, unsupported,
            "%s (not supported: only the default is accepted)" % doc)


def _IsUnset(value: Any, default: Any) -> bool:
    """Whether a value leaves a parameter as if it was not given.

    Ganeti's clients send empty containers where the declared default is
    None (e.g. osparams_private as an empty dict), and None for "not set".
    """
    unset: tuple[Any, ...] = (None, {}, [])
    return value == default or (value in unset and default in unset)


def _IsInactive(value: Any, inactive: tuple) -> bool:
    """Whether a value is one of ``inactive`` (by type too: 0 is no False).
    """
    return any(type(value) is type(off) and value == off
               for off in inactive)


_PExplain = ("explain", False, ht.TBool,
             "Report the instance allocator's explanation of its choice")

# {"jobs": [[submitted, job id or error], ...]}: follow-up jobs of an LU
_TJobIdList = ht.TListOf(ht.TTupleOf(ht.TBool,
                                     ht.TOr(ht.TJobId, ht.TString)))
_TJobIdListOnly = ht.TStrictDict(True, True, {"jobs": _TJobIdList})
_TAllocPolicy = ht.TElemOf(constants.VALID_ALLOC_POLICIES)
_TParamsDict = ht.TDictOf(ht.TNonEmptyString, ht.TAny)
_THvParams = ht.TDictOf(ht.TNonEmptyString, ht.TDict)
# [[DDM_ADD|DDM_REMOVE, os_name], ...] (hidden_os, blacklisted_os)
_TOsListModifications = ht.TMaybeListOf(
    ht.TTupleOf(ht.TElemOf(constants.DDMS_VALUES), ht.TNonEmptyString))


# OP_ID -> class of every opcode the ganeti.opcodes modules declare
OP_MAPPING: dict[str, type["OpCode"]] = {}


class _AutoOpParamSlots(type):
    """Derives ``OP_ID`` and ``__slots__`` from the class declaration, and
    registers the opcodes of ganeti.opcodes* in OP_MAPPING."""

    def __new__(mcs, name, bases, attrs):
        opcode = name.startswith("Op") and name not in ("OpCode",)
        if opcode:
            attrs["OP_ID"] = "OP_" + _OPID_RE.sub(r"\1_\2", name[2:]).upper()
        params = attrs.setdefault("OP_PARAMS", [])
        names = [p[0] for p in params]
        if len(set(names)) != len(names):
            raise errors.ProgrammerError("Duplicate parameter in %s" % name)
        attrs["__slots__"] = names
        cls = type.__new__(mcs, name, bases, attrs)
        if opcode and attrs.get("__module__", "").startswith(
                "ganeti.opcodes"):
            OP_MAPPING[attrs["OP_ID"]] = cast("type[OpCode]", cls)
        return cls


class BaseOpCode(metaclass=_AutoOpParamSlots):
    """Parameter container that validates against its declaration."""

    OP_ID: str
    OP_PARAMS: list = []

    if TYPE_CHECKING:
        # The parameters are declared in OP_PARAMS, not as attributes
        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(self, **kwargs: Any):
        known = self._ParamNames()
        for key, value in kwargs.items():
            if key not in known:
                raise TypeError("%s has no parameter %r" %
                                (self.__class__.__name__, key))
            setattr(self, key, value)

    @classmethod
    def GetAllParams(cls) -> list[tuple]:
        """All declared parameters, including inherited ones."""
        result = []
        for klass in reversed(cls.__mro__):
            result.extend(vars(klass).get("OP_PARAMS", []))
        return result

    @classmethod
    def _ParamNames(cls) -> frozenset[str]:
        return frozenset(p[0] for p in cls.GetAllParams())

    def __getstate__(self) -> dict:
        """The wire/storage form: every parameter that has a value."""
        state = {}
        for name, _, _, _ in self.GetAllParams():
            if hasattr(self, name):
                state[name] = getattr(self, name)
        return state

    def RedactedState(self) -> dict:
        """``__getstate__`` with private parameters' values hidden.

        The form for everything outside the running job (job files, job
        queries, logs): a dict keeps its keys, each value <redacted>.
        """
        state = self.__getstate__()
        for name in self._PrivateParamNames():
            value = state.get(name)
            if isinstance(value, dict):
                state[name] = dict.fromkeys(value, constants.REDACTED)
            elif value is not None:
                state[name] = constants.REDACTED
        return state

    def RedactedParams(self) -> list[str]:
        """The private parameters whose values were redacted.

        An opcode read back from its job file (after a masterd restart) has
        lost them and must not run with ``<redacted>`` as values.
        """
        result = []
        for name in self._PrivateParamNames():
            value = getattr(self, name, None)
            values = value.values() if isinstance(value, dict) else [value]
            if constants.REDACTED in values:
                result.append(name)
        return result

    @classmethod
    def _PrivateParamNames(cls) -> list[str]:
        return [name for name, _, check, _ in cls.GetAllParams()
                if isinstance(check, ht.PrivateCheck)]

    def __setstate__(self, state: dict) -> None:
        if not isinstance(state, dict):
            raise ValueError("Invalid data to __setstate__: expected dict,"
                             " got %s" % type(state))
        known = self._ParamNames()
        for name, value in state.items():
            if name in known:
                setattr(self, name, value)

    def Validate(self, set_defaults: bool) -> None:
        """Check every parameter, filling in defaults if asked.

        Raises OpPrereqError naming the opcode and parameter, so a bad job
        is refused at submission with a message the user can act on.
        """
        for name, default, check, _ in self.GetAllParams():
            if not hasattr(self, name):
                if default is ht.NoDefault:
                    raise errors.OpPrereqError(
                        "Parameter '%s.%s' missing value" %
                        (self.OP_ID, name), errors.ECODE_INVAL)
                if set_defaults:
                    setattr(self, name, copy.deepcopy(default))
                continue
            value = getattr(self, name)
            if not check(value):
                shown = (constants.REDACTED
                         if isinstance(check, ht.PrivateCheck) else
                         repr(value))
                raise errors.OpPrereqError(
                    "Parameter '%s.%s' fails validation: got %s, expected"
                    " %s" % (self.OP_ID, name, shown, check),
                    errors.ECODE_INVAL)
            if isinstance(check, _UnsupportedCheck) and \
                    not _IsUnset(value, default) and \
                    not _IsInactive(value, check.inactive):
                raise errors.OpPrereqError(
                    "Parameter '%s.%s' is not supported by this cluster;"
                    " only its default (%s) is accepted" %
                    (self.OP_ID, name, " or ".join(
                        map(repr, (default, ) + check.inactive))),
                    errors.ECODE_INVAL)

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and
                self.__getstate__() == other.__getstate__())

    def __repr__(self) -> str:
        return "%s(%s)" % (self.__class__.__name__, ", ".join(
            "%s=%r" % item for item in sorted(self.RedactedState().items())))


class OpCode(BaseOpCode):
    """An operation with the parameters common to every opcode."""

    OP_ID = "OP_ABSTRACT"
    # Parameter whose value goes into the summary, e.g. INSTANCE_STARTUP(i1)
    OP_DSC_FIELD: str | None = None
    # Declared type of the LU's result (checked after execution)
    OP_RESULT: ht.Check | None = None
    WITH_LU = True
    OP_PARAMS = [_PDryRun, _PDebugLevel, _POpPriority, _PDependencies,
                 _PComment, _PReason]

    def __getstate__(self) -> dict:
        state = BaseOpCode.__getstate__(self)
        state["OP_ID"] = self.OP_ID
        return state

    @classmethod
    def LoadOpCode(cls, data: Any) -> "OpCode":
        """Build an opcode from its wire dict (no validation)."""
        if not isinstance(data, dict):
            raise errors.OpPrereqError("Invalid data to LoadOpCode (%s)" %
                                       type(data).__name__,
                                       errors.ECODE_INVAL)
        op_id = data.get("OP_ID")
        op_class = OP_MAPPING.get(op_id) if isinstance(op_id, str) else None
        if op_class is None:
            raise errors.OpPrereqError("Unknown opcode '%s'" % (op_id,),
                                       errors.ECODE_INVAL)
        unknown = set(data) - op_class._ParamNames() - {"OP_ID"}
        if unknown:
            raise errors.OpPrereqError(
                "Unknown parameter(s) for %s: %s" %
                (op_id, ", ".join(sorted(unknown))), errors.ECODE_INVAL)
        op = op_class()
        op.__setstate__({k: v for k, v in data.items() if k != "OP_ID"})
        return op

    def Summary(self) -> str:
        """Short description, e.g. ``TEST_DELAY(1.0)``."""
        text = self.OP_ID[3:]
        field = self.OP_DSC_FIELD
        if field and getattr(self, field, None) is not None:
            value = getattr(self, field)
            if isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            text += "(%s)" % value
        return text

    def TinySummary(self) -> str:
        """Summary with common prefixes shortened (for tables)."""
        for prefix, short in (("INSTANCE_", "I_"), ("NODE_", "N_"),
                              ("GROUP_", "G_"), ("CLUSTER_", "C_")):
            summary = self.Summary()
            if summary.startswith(prefix):
                return short + summary[len(prefix):]
        return self.Summary()


# Cluster ---------------------------------------------------------------------
