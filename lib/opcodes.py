"""Opcodes: the operations a job is made of.

Each opcode declares its parameters once, in ``OP_PARAMS``, as
``(name, default, check, doc)``. Validation at submission, the wire format
(a flat dict with ``OP_ID``), defaults, CLI options, RAPI bodies and the API
description all derive from that declaration.
"""

import copy
import ipaddress
import re
from typing import TYPE_CHECKING, Any, Callable

from ganeti import constants, errors, ht, impexp

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


class _AutoOpParamSlots(type):
    """Derives ``OP_ID`` and ``__slots__`` from the class declaration."""

    def __new__(mcs, name, bases, attrs):
        if name.startswith("Op") and name not in ("OpCode",):
            attrs["OP_ID"] = "OP_" + _OPID_RE.sub(r"\1_\2", name[2:]).upper()
        params = attrs.setdefault("OP_PARAMS", [])
        names = [p[0] for p in params]
        if len(set(names)) != len(names):
            raise errors.ProgrammerError("Duplicate parameter in %s" % name)
        attrs["__slots__"] = names
        return type.__new__(mcs, name, bases, attrs)


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

class OpClusterPostInit(OpCode):
    """Post-initialization of the cluster (run once after init)."""
    OP_RESULT = ht.TBool


class OpClusterDestroy(OpCode):
    """Destroy the cluster: the last step before the master leaves it."""
    OP_RESULT = ht.TNonEmptyString


class OpClusterQuery(OpCode):
    """Return the cluster information (the QueryClusterInfo dict)."""
    OP_RESULT = ht.TDict


class OpClusterRedistConf(OpCode):
    """Push the configuration and ssconf files to every node again."""
    OP_RESULT = ht.TNone


class OpClusterSetParams(OpCode):
    """Change cluster-wide parameters."""
    OP_PARAMS = [
        _PForce,
        ("candidate_pool_size", None, ht.TMaybe(ht.TStrictPositiveInt),
         "Number of master candidates the cluster keeps"),
        ("max_running_jobs", None, ht.TMaybe(ht.TStrictPositiveInt),
         "Maximal number of jobs running at the same time"),
        ("max_tracked_jobs", None, ht.TMaybe(ht.TStrictPositiveInt),
         "Maximal number of jobs tracked in the job queue"),
        ("mac_prefix", None,
         ht.TMaybe(ht.TRegex(r"^[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}$",
                             "MAC prefix (three hex octets)")),
         "MAC address prefix of new instances' NICs"),
        ("master_netdev", None, ht.TMaybe(ht.TString),
         "Network device of the master IP"),
        ("master_netmask", None, ht.TMaybe(ht.TInRange(0, 128)),
         "Netmask of the master IP"),
        ("enabled_hypervisors", None,
         ht.TMaybe(ht.TAnd(ht.TListOf(ht.TElemOf(constants.HYPER_TYPES)),
                           ht.TTrue)),
         "Hypervisors instances may use"),
        ("default_hypervisor", None,
         ht.TMaybe(ht.TElemOf(constants.HYPER_TYPES)),
         "Hypervisor new instances get by default (made the first of the"
         " enabled hypervisors)"),
        ("hvparams", None, ht.TMaybe(_THvParams),
         "Cluster-level hypervisor parameters, per hypervisor; the value"
         " \"default\" resets a parameter to its built-in default"),
        ("beparams", None, ht.TMaybe(_TParamsDict),
         "Cluster-level backend parameters"),
        ("ipolicy", None, ht.TMaybeDict,
         "Cluster-wide instance policy (the keys given replace the current"
         " ones)"),
        ("nicparams", None, ht.TMaybe(_TParamsDict),
         "Cluster-level NIC parameters"),
        ("ndparams", None, ht.TMaybe(_TParamsDict),
         "Cluster-level node parameters"),
        ("enabled_disk_templates", None,
         ht.TMaybe(ht.TAnd(ht.TListOf(ht.TElemOf(constants.DISK_TEMPLATES)),
                           ht.TTrue)),
         "Disk templates instances may use"),
        ("file_storage_dir", None, ht.TMaybe(ht.TString),
         "Directory for file-based instance disks"),
        ("shared_file_storage_dir", None, ht.TMaybe(ht.TString),
         "Directory for shared-file instance disks"),
        ("maintain_node_health", None, ht.TMaybeBool,
         "Whether the watcher keeps node health (shuts down stray"
         " instances)"),
        ("default_iallocator", None, ht.TMaybe(ht.TString),
         "Default instance allocator"),
        ("default_iallocator_params", None, ht.TMaybeDict,
         "Default parameters of the instance allocator, passed to the"
         " allocator program as --key=value"),
        ("os_hvp", None,
         ht.TMaybe(ht.TDictOf(ht.TNonEmptyString, _THvParams)),
         "Cluster-wide OS hypervisor parameter defaults, per OS and"
         " hypervisor"),
        ("osparams", None,
         ht.TMaybe(ht.TDictOf(ht.TNonEmptyString, ht.TDict)),
         "Cluster-wide OS parameter defaults, per OS"),
        ("hidden_os", None, _TOsListModifications,
         "Modify list of hidden operating systems: each modification must"
         " have two items, the operation and the OS name; the operation"
         " can be add or remove"),
        ("blacklisted_os", None, _TOsListModifications,
         "Modify list of blacklisted operating systems: each modification"
         " must have two items, the operation and the OS name; the"
         " operation can be add or remove"),
        _PHvState, _PDiskState,
        ("compression_tools", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Compression tools allowed for instance moves, exports and imports"
         " (must include gzip)"),
        _PUnsupported("vg_name", None, ht.TMaybe(ht.TString),
                      "Volume group of LVM-based disks", inactive=("", )),
        _PUnsupported("reserved_lvs", None,
                      ht.TMaybeListOf(ht.TNonEmptyString),
                      "Logical volumes cluster verify ignores"),
        _PUnsupported("drbd_helper", None, ht.TMaybe(ht.TString),
                      "DRBD usermode helper"),
        _PUnsupported("diskparams", None,
                      ht.TMaybe(ht.TDictOf(
                          ht.TElemOf(constants.DISK_TEMPLATES), ht.TDict)),
                      "Cluster-level disk parameters, per disk template"),
        _PUnsupported("osparams_private_cluster", None,
                      ht.TPrivate(ht.TMaybe(
                          ht.TDictOf(ht.TNonEmptyString, ht.TDict))),
                      "Cluster-wide private OS parameter defaults, per OS"),
        _PUnsupported("uid_pool", None, _TMaybeUidRanges,
                      "User-id pool of the instances' processes"),
        _PUnsupported("add_uids", None, _TMaybeUidRanges,
                      "User-id ranges added to the pool"),
        _PUnsupported("remove_uids", None, _TMaybeUidRanges,
                      "User-id ranges removed from the pool"),
        _PUnsupported("prealloc_wipe_disks", None, ht.TMaybeBool,
                      "Whether to wipe new disks before use",
                      inactive=(False, )),
        _PUnsupported("use_external_mip_script", None, ht.TMaybeBool,
                      "Whether to manage the master IP with an external"
                      " script", inactive=(False, )),
        _PUnsupported("modify_etc_hosts", None, ht.TMaybeBool,
                      "Whether to keep /etc/hosts of the nodes current",
                      inactive=(False, )),
        _PUnsupported("gluster_storage_dir", None, ht.TMaybe(ht.TString),
                      "Directory for Gluster-based instance disks",
                      inactive=("", )),
        _PUnsupported("install_image", None, ht.TMaybe(ht.TString),
                      "Image of the installation helper VM",
                      inactive=("", )),
        _PUnsupported("instance_communication_network", None,
                      ht.TMaybe(ht.TString),
                      "Network for communication between instances and"
                      " the cluster", inactive=("", )),
        _PUnsupported("zeroing_image", None, ht.TMaybe(ht.TString),
                      "Image of the VM zeroing the free space of disks",
                      inactive=("", )),
        _PUnsupported("enabled_user_shutdown", None, ht.TMaybeBool,
                      "Whether an instance's own shutdown is reported as"
                      " such", inactive=(False, )),
        ("enabled_data_collectors", None,
         ht.TMaybe(ht.TDictOf(ht.TString, ht.TBool)),
         "Data collectors of the monitoring daemon to enable or disable"),
        ("data_collector_interval", None,
         ht.TMaybe(ht.TDictOf(ht.TString, ht.TInt)),
         "Intervals of the monitoring daemon's data collectors"
         " (microseconds)"),
        ("diagnose_data_collector_filename", None, ht.TMaybe(ht.TString),
         "The self-diagnose command of the monitoring daemon, a file name"
         " in each node's white-list directory (empty: the built-in one,"
         " always reporting Ok)"),
    ]
    OP_RESULT = ht.TNone


class OpClusterVerify(OpCode):
    """Verify the cluster: submits one config job and one job per group."""
    OP_PARAMS = [
        _PDebugSimulateErrors, _PErrorCodes, _PSkipChecks, _PIgnoreErrors,
        _PVerbose,
        ("group_name", None, ht.TMaybeString,
         "Verify only this node group"),
        _PVerifyClutter,
    ]
    OP_RESULT = ht.TDict


class OpClusterVerifyConfig(OpCode):
    """Verify the cluster-wide configuration and master candidates."""
    OP_PARAMS = [_PDebugSimulateErrors, _PErrorCodes, _PIgnoreErrors,
                 _PVerbose]
    OP_RESULT = ht.TBool


class OpClusterVerifyGroup(OpCode):
    """Verify the nodes of one node group."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName, _PDebugSimulateErrors, _PErrorCodes,
                 _PSkipChecks, _PIgnoreErrors, _PVerbose, _PVerifyClutter]
    OP_RESULT = ht.TBool


class OpClusterVerifyDisks(OpCode):
    """Verify the disks of the cluster: one follow-up job per node group."""
    OP_PARAMS = [
        ("group_name", None, ht.TMaybeString,
         "Verify only the disks of this node group"),
    ]
    OP_RESULT = _TJobIdListOnly


class OpGroupVerifyDisks(OpCode):
    """Find the instances of a node group whose disks need activating or
    are missing."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName]
    # (node -> error, [instances to activate], instance -> [[node, volume]])
    OP_RESULT = ht.TTupleOf(
        ht.TDictOf(ht.TString, ht.TString), ht.TListOf(ht.TString),
        ht.TDictOf(ht.TString, ht.TListOf(ht.TListOf(ht.TString))))


class OpClusterConfigQuery(OpCode):
    """Return configuration values of the cluster, one per field."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
    ]
    OP_RESULT = ht.TList


class OpClusterRename(OpCode):
    """Rename the cluster."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [("name", ht.NoDefault, ht.TNonEmptyString,
                  "New cluster name")]
    OP_RESULT = ht.TNonEmptyString


class OpClusterRenewCrypto(OpCode):
    """Renew the cluster's certificates and keys."""
    OP_PARAMS = [
        ("node_certificates", False, ht.TBool,
         "Whether to renew the nodes' certificates"),
        ("renew_ssh_keys", False, ht.TBool,
         "Whether to renew the nodes' SSH keys"),
        ("ssh_key_type", None, ht.TMaybe(ht.TElemOf(["rsa", "ecdsa", "dsa"])),
         "Type of the new SSH keys"),
        ("ssh_key_bits", None, ht.TMaybe(ht.TStrictPositiveInt),
         "Length of the new SSH keys (bits)"),
        _PVerbose,
        ("debug", False, ht.TBool, "Debug mode"),
    ]
    OP_RESULT = ht.TNone


class OpClusterRepairDiskSizes(OpCode):
    """Record the actual sizes of instances' disks in the configuration."""
    OP_DSC_FIELD = "instances"
    OP_PARAMS = [
        ("instances", [], ht.TListOf(ht.TNonEmptyString),
         "Instances to check (all if empty)"),
    ]
    # [(instance, disk index, field, new size), ...]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString,
                                       ht.TNonNegativeInt,
                                       ht.TNonEmptyString,
                                       ht.TNonNegativeInt))


class OpClusterActivateMasterIp(OpCode):
    """Activate the master IP on the master node."""
    OP_RESULT = ht.TNone


class OpClusterDeactivateMasterIp(OpCode):
    """Deactivate the master IP on the master node."""
    OP_RESULT = ht.TNone


# Aggregates (Placement's: named sets of nodes; each node group is one) -----

# A name usable in member_of ("in:A,B", "!C"): no comma, no leading "!"
_TAggregateName = ht.TRegex(r"^(?!!|in:)[^,\s]{1,255}$",
                            "aggregate name (no commas or whitespace, not"
                            " starting with \"!\" or \"in:\")")
_PAggregateName = ("name", ht.NoDefault, _TAggregateName, "Aggregate name")


class OpClusterAggregateAdd(OpCode):
    """Create a named aggregate (its UUID is Placement's aggregate)."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [
        _PAggregateName,
        ("metadata", {}, ht.TDictOf(ht.TNonEmptyString, ht.TString),
         "Metadata of the aggregate, e.g. reservation=<id>"),
    ]
    OP_RESULT = ht.TNonEmptyString


class OpClusterAggregateRemove(OpCode):
    """Remove a named aggregate (refused while nodes are in it)."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [_PAggregateName]
    OP_RESULT = ht.TNone


class OpClusterAggregateRename(OpCode):
    """Rename a named aggregate (its UUID stays)."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [
        _PAggregateName,
        ("new_name", ht.NoDefault, _TAggregateName, "New aggregate name"),
    ]
    OP_RESULT = ht.TNonEmptyString


class OpClusterAggregateQuery(OpCode):
    """The aggregates (named ones and node groups') with their nodes."""
    OP_PARAMS = [
        ("names", [], ht.TListOf(ht.TNonEmptyString),
         "Aggregates to show, by name or UUID (all if empty)"),
    ]
    OP_RESULT = ht.TListOf(ht.TDict)


# Nodes -----------------------------------------------------------------------

class OpNodeAdd(OpCode):
    """Add a node to the cluster (or re-add a known one)."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName,
        ("primary_ip", None, ht.TMaybeString,
         "Primary IP address (resolved from the name if not given)"),
        ("secondary_ip", None, ht.TMaybeString,
         "Secondary IP address (the primary one if not given)"),
        ("readd", False, ht.TBool,
         "Whether the node is already in the configuration and is re-added"),
        ("group", None, ht.TMaybeString,
         "Node group of the new node (the default group if not given)"),
        ("master_capable", None, ht.TMaybeBool,
         "Whether the node may become master or master candidate"),
        ("vm_capable", None, ht.TMaybeBool,
         "Whether the node may host instances"),
        ("ndparams", None, ht.TMaybeDict, "Node parameters"),
        ("join_key", None, ht.TMaybeString,
         "Join key printed by the new node's noded (CERT-PIN:SECRET); it"
         " authorises the master to hand over the cluster's certificate."
         " Without it, the node must already hold the cluster certificate"),
        _PHvState, _PDiskState,
        _PUnsupported("node_setup", False, ht.TBool,
                      "Whether to set up the node's SSH access (nodes join"
                      " with a join key here)"),
    ]
    OP_RESULT = ht.TNone


class OpNodeRemove(OpCode):
    """Remove a node from the cluster."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [_PNodeName, _PNodeUuid]
    OP_RESULT = ht.TNone


class OpNodeSetParams(OpCode):
    """Change a node's flags and parameters."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName, _PNodeUuid, _PForce,
        ("master_candidate", None, ht.TMaybeBool,
         "Whether the node should become a master candidate"),
        ("offline", None, ht.TMaybeBool,
         "Whether the node should be marked offline"),
        ("drained", None, ht.TMaybeBool,
         "Whether the node should be marked drained"),
        ("auto_promote", False, ht.TBool,
         "Whether to promote other nodes to master candidate if this"
         " change leaves the candidate pool short"),
        ("master_capable", None, ht.TMaybeBool,
         "Whether the node may become master or master candidate"),
        ("vm_capable", None, ht.TMaybeBool,
         "Whether the node may host instances"),
        ("secondary_ip", None, ht.TMaybeString, "New secondary IP address"),
        ("ndparams", None, ht.TMaybeDict, "Node parameters"),
        ("powered", None, ht.TMaybeBool,
         "Whether the node is powered (out-of-band management)"),
        _PHvState, _PDiskState,
        ("add_aggregates", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Aggregates (names or UUIDs) to add the node to"),
        ("remove_aggregates", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Aggregates (names or UUIDs) to remove the node from"),
    ]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString, ht.TAny))


class OpNodeQueryStorage(OpCode):
    """Report the storage units of nodes (gnt-node list-storage)."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("storage_type", None,
         ht.TMaybe(ht.TElemOf(constants.STORAGE_TYPES)),
         "Storage type (that of the first enabled disk template if not"
         " given)"),
        ("nodes", [], ht.TListOf(ht.TNonEmptyString),
         "Nodes to query (all if empty)"),
        ("name", None, ht.TMaybeString, "Storage unit name"),
    ]
    OP_RESULT = ht.TListOf(ht.TListOf(ht.TAny))


class OpNodeMigrate(OpCode):
    """Migrate all primary instances of a node away (one job each)."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName, _PNodeUuid, _PMigrationMode, _PMigrationLive,
        _PMigrationTargetNode, _PMigrationTargetNodeUuid,
        _PAllowRuntimeChgs, _PIgnoreIpolicy,
        _PIAllocFromDesc("Iallocator for deciding the target node for"
                         " shared-storage instances"),
    ]
    OP_RESULT = _TJobIdListOnly


class OpNodeEvacuate(OpCode):
    """Move the instances off a node (one follow-up job each).

    Without an instance allocator, ``remote_node`` is also the target of
    the primary instances: this version has no internally mirrored disks,
    hence no secondaries to give a new node.
    """
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        ("early_release", False, ht.TBool,
         "Whether to release locks as soon as possible (only for"
         " internally mirrored disks)"),
        _PNodeName, _PNodeUuid,
        ("remote_node", None, ht.TMaybeString,
         "New secondary node; here also the new primary node of the"
         " primary instances (no instance allocator exists)"),
        ("remote_node_uuid", None, ht.TMaybeString,
         "New secondary node UUID (filled in from remote_node)"),
        _PIAllocFromDesc("Iallocator for computing solution"),
        ("mode", ht.NoDefault, ht.TElemOf(constants.NODE_EVAC_MODES),
         "Node evacuation mode (primary-only, secondary-only or all)"),
        ("ignore_soft_errors", None, ht.TMaybeBool,
         "Ignore soft htools errors"),
    ]
    OP_RESULT = _TJobIdListOnly


_PStorageType = ("storage_type", ht.NoDefault,
                 ht.TElemOf(constants.STORAGE_TYPES), "Storage type")
_PStorageName = ("name", None, ht.TMaybeString, "Storage unit name")


class OpNodeModifyStorage(OpCode):
    """Change the modifiable fields of a storage unit of a node."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName, _PNodeUuid, _PStorageType, _PStorageName,
        ("changes", ht.NoDefault, ht.TDict,
         "Field name -> new value"),
    ]
    OP_RESULT = ht.TNone


class OpRepairNodeStorage(OpCode):
    """Repair a storage unit of a node."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [
        _PNodeName, _PNodeUuid, _PStorageType, _PStorageName,
        ("ignore_consistency", False, ht.TBool,
         "Whether to ignore instances with faulty disks"),
    ]
    OP_RESULT = ht.TNone


class OpNodeQueryvols(OpCode):
    """Report the logical volumes of nodes (gnt-node volumes)."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("nodes", [], ht.TListOf(ht.TNonEmptyString),
         "Nodes to query (all if empty)"),
    ]
    OP_RESULT = ht.TList


class OpNodePowercycle(OpCode):
    """Power-cycle a node (not supported here)."""
    OP_DSC_FIELD = "node_name"
    OP_PARAMS = [_PNodeName, _PNodeUuid, _PForce]
    OP_RESULT = ht.TMaybeString


class OpOobCommand(OpCode):
    """Run an out-of-band management command on nodes (not supported)."""
    OP_PARAMS = [
        ("node_names", [], ht.TListOf(ht.TNonEmptyString),
         "Nodes to run the command on (all if empty)"),
        ("node_uuids", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Node UUIDs (filled in from node_names)"),
        ("command", ht.NoDefault,
         ht.TElemOf(["health", "power-off", "power-on", "power-cycle",
                     "power-status"]),
         "Out-of-band command"),
        ("timeout", 60, ht.TInt,
         "Timeout of the out-of-band program (seconds)"),
        ("ignore_status", False, ht.TBool,
         "Whether to ignore the nodes' recorded power state"),
        ("power_delay", 2.0, ht.TNumber,
         "Delay between powering on successive nodes (seconds)"),
    ]
    OP_RESULT = ht.TListOf(ht.TListOf(ht.TTupleOf(ht.TInt, ht.TAny)))


class OpRestrictedCommand(OpCode):
    """Run a restricted command on nodes (not supported)."""
    OP_PARAMS = [
        _PUseLocking,
        ("nodes", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Nodes to run the command on"),
        ("node_uuids", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Node UUIDs (filled in from nodes)"),
        ("command", ht.NoDefault, ht.TNonEmptyString, "Command name"),
    ]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TBool, ht.TString))


# Node groups -----------------------------------------------------------------

_GROUP_PARAMS = [
    ("alloc_policy", None, ht.TMaybe(_TAllocPolicy),
     "Instance allocation policy (preferred, last_resort, unallocable)"),
    ("ndparams", None, ht.TMaybeDict, "Group-level node parameters"),
    ("diskparams", None, ht.TMaybe(ht.TDictOf(ht.TNonEmptyString, ht.TDict)),
     "Group-level disk parameters, per disk template"),
    ("ipolicy", None, ht.TMaybeDict, "Group-level instance policy"),
    _PHvState, _PDiskState,
]


class OpGroupAdd(OpCode):
    """Add a node group to the cluster."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName] + _GROUP_PARAMS
    OP_RESULT = ht.TNone


class OpGroupAssignNodes(OpCode):
    """Move nodes into a node group."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [
        _PGroupName, _PForce,
        ("nodes", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Names of the nodes to assign"),
        ("node_uuids", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "UUIDs of the nodes (filled in from nodes)"),
    ]
    OP_RESULT = ht.TNone


class OpGroupSetParams(OpCode):
    """Change the parameters of a node group."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName] + _GROUP_PARAMS
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString, ht.TAny))


class OpGroupRemove(OpCode):
    """Remove an empty node group."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [_PGroupName]
    OP_RESULT = ht.TNone


class OpGroupRename(OpCode):
    """Rename a node group."""
    OP_PARAMS = [
        _PGroupName,
        ("new_name", ht.NoDefault, ht.TObjectName, "New group name"),
    ]
    OP_RESULT = ht.TNonEmptyString


class OpGroupEvacuate(OpCode):
    """Move the instances of a node group to other groups (follow-up jobs
    of the allocator's change-group answer)."""
    OP_DSC_FIELD = "group_name"
    OP_PARAMS = [
        _PGroupName,
        ("early_release", False, ht.TBool,
         "Whether to release locks as soon as possible (only for"
         " internally mirrored disks)"),
        _PIAllocFromDesc("Iallocator for computing solution"),
        ("target_groups", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Destination group names or UUIDs"),
        ("sequential", False, ht.TBool, "Sequential job execution"),
        ("force_failover", False, ht.TBool,
         "Disallow migration moves and always use failovers"),
    ]
    OP_RESULT = _TJobIdListOnly


# Networks --------------------------------------------------------------------

def _IPCheck(parse: Callable[[str], Any], desc: str) -> ht.Check:
    """A string ``parse`` accepts (it raises ValueError otherwise)."""
    return ht.Check(lambda value: isinstance(value, str) and
                    parse(value) is not None, desc, "string")


_TIPv4Address = _IPCheck(ipaddress.IPv4Address, "IPv4 address")
_TIPv4Network = _IPCheck(
    lambda value: ipaddress.IPv4Network(value, strict=False), "IPv4 network")
_TIPv6Address = _IPCheck(ipaddress.IPv6Address, "IPv6 address")
_TIPv6Network = _IPCheck(
    lambda value: ipaddress.IPv6Network(value, strict=False), "IPv6 network")
_PNetworkName = ("network_name", ht.NoDefault, ht.TNonEmptyString,
                 "Network name")
_NETWORK_ADDRESS_PARAMS: list[_OpParam] = [
    ("gateway", None, ht.TMaybe(_TIPv4Address), "IPv4 gateway"),
    ("network6", None, ht.TMaybe(_TIPv6Network), "IPv6 subnet"),
    ("gateway6", None, ht.TMaybe(_TIPv6Address), "IPv6 gateway"),
    ("mac_prefix", None, ht.TMaybeString,
     "MAC address prefix of the network's NICs"),
    ("add_reserved_ips", None, ht.TMaybeListOf(_TIPv4Address),
     "IP addresses to reserve"),
]


class OpNetworkAdd(OpCode):
    """Add a network."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [
        _PNetworkName,
        ("network", ht.NoDefault, _TIPv4Network, "IPv4 subnet"),
    ] + _NETWORK_ADDRESS_PARAMS + [
        _PConflictsCheck,
        ("tags", [], ht.TListOf(ht.TNonEmptyString), "Network tags"),
    ]
    OP_RESULT = ht.TNone


class OpNetworkRemove(OpCode):
    """Remove a network."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [_PNetworkName, _PForce]
    OP_RESULT = ht.TNone


class OpNetworkSetParams(OpCode):
    """Change the parameters of a network."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [_PNetworkName] + _NETWORK_ADDRESS_PARAMS + [
        ("remove_reserved_ips", None, ht.TMaybeListOf(_TIPv4Address),
         "IP addresses to release"),
    ]
    OP_RESULT = ht.TNone


class OpNetworkConnect(OpCode):
    """Connect a network to a node group."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [
        ("group_name", ht.NoDefault, ht.TNonEmptyString, "Node group name"),
        _PNetworkName,
        ("network_mode", ht.NoDefault,
         ht.TElemOf(["pool", "openvswitch", "routed", "bridged"]),
         "NIC mode of the network in the group"),
        ("network_link", ht.NoDefault, ht.TNonEmptyString,
         "NIC link of the network in the group"),
        ("network_vlan", "", ht.TString,
         "VLAN of the network in the group"),
        _PConflictsCheck,
    ]
    OP_RESULT = ht.TNone


class OpNetworkDisconnect(OpCode):
    """Disconnect a network from a node group."""
    OP_DSC_FIELD = "network_name"
    OP_PARAMS = [
        ("group_name", ht.NoDefault, ht.TNonEmptyString, "Node group name"),
        _PNetworkName,
    ]
    OP_RESULT = ht.TNone


# Tags ------------------------------------------------------------------------

class OpTagsGet(OpCode):
    """Return the tags of an object."""
    OP_DSC_FIELD = "name"
    OP_PARAMS = [_PTagKind, _PUseLocking, _PTagName]
    OP_RESULT = ht.TListOf(ht.TNonEmptyString)


class OpTagsSearch(OpCode):
    """Search tags of all objects with a regular expression."""
    OP_DSC_FIELD = "pattern"
    OP_PARAMS = [("pattern", ht.NoDefault, ht.TNonEmptyString,
                  "Search pattern (regular expression)")]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString,
                                       ht.TNonEmptyString))


class OpTagsSet(OpCode):
    """Add tags to an object."""
    OP_PARAMS = [_PTagKind, _PTags, _PTagName]
    OP_RESULT = ht.TNone


class OpTagsDel(OpCode):
    """Remove tags from an object."""
    OP_PARAMS = [_PTagKind, _PTags, _PTagName]
    OP_RESULT = ht.TNone


# Queries ---------------------------------------------------------------------

class OpQuery(OpCode):
    """Query a resource with the query language."""
    OP_DSC_FIELD = "what"
    OP_PARAMS = [
        ("what", ht.NoDefault, ht.TNonEmptyString, "Resource to query"),
        _PUseLocking,
        ("fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("qfilter", None, ht.TMaybe(ht.TList), "Query filter"),
    ]
    OP_RESULT = ht.TDict


class OpQueryFields(OpCode):
    """Describe the fields of a resource."""
    OP_DSC_FIELD = "what"
    OP_PARAMS = [
        ("what", ht.NoDefault, ht.TNonEmptyString, "Resource to query"),
        ("fields", None, ht.TMaybe(ht.TListOf(ht.TNonEmptyString)),
         "Requested fields; all if not given"),
    ]
    OP_RESULT = ht.TDict


# Operating systems -----------------------------------------------------------

class OpOsDiagnose(OpCode):
    """Report the OS definitions of the cluster's nodes."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("names", [], ht.TListOf(ht.TNonEmptyString),
         "Which operating systems to diagnose"),
    ]
    OP_RESULT = ht.TListOf(ht.TListOf(ht.TAny))


class OpExtStorageDiagnose(OpCode):
    """Report the ExtStorage providers of the cluster's nodes."""
    OP_PARAMS = [
        ("output_fields", ht.NoDefault, ht.TListOf(ht.TNonEmptyString),
         "Requested fields"),
        ("names", [], ht.TListOf(ht.TNonEmptyString),
         "Which ExtStorage providers to diagnose"),
    ]
    OP_RESULT = ht.TListOf(ht.TListOf(ht.TAny))


# Instances -------------------------------------------------------------------

_PInstanceName = ("instance_name", ht.NoDefault, ht.THostname,
                  "Instance name")
_PInstanceUuid = ("instance_uuid", None, ht.TMaybeString,
                  "Instance UUID (filled in from instance_name)")
_PShutdownTimeout = ("shutdown_timeout", constants.DEFAULT_SHUTDOWN_TIMEOUT,
                     ht.TNonNegativeInt,
                     "How long to wait for the instance to shut down cleanly"
                     " before forcing it off (seconds)")
_PIgnoreOfflineNodes = ("ignore_offline_nodes", False, ht.TBool,
                        "Whether to ignore offline nodes")
_PNoRemember = ("no_remember", False, ht.TBool,
                "Do not remember the state change (the admin state stays)")


def _PInstanceCommunication(default: bool | None) -> _OpParam:
    return _PUnsupported("instance_communication", default, ht.TMaybeBool,
                         "Whether to give the instance a NIC for"
                         " communication with the cluster")


_PCompress = ("compress", impexp.IEC_NONE, ht.TNonEmptyString,
              "Compression of the data on its way between nodes: none or"
              " one of the cluster's compression tools")
# {"size": MiB, "mode": rw|ro, "name": ..., "adopt": device path}
_TDiskSpec = ht.TDictOf(ht.TElemOf(["size", "mode", "name", "adopt"]),
                        ht.TAny)
# {"mac": auto|generate|MAC, "ip": ...|pool, "mode": ..., "link": ...,
#  "vlan": ..., "name": ..., "network": name or UUID}
_TNicSpec = ht.TDictOf(ht.TElemOf(["mac", "ip", "mode", "link", "vlan",
                                   "name", "network"]), ht.TAny)


class OpInstanceCreate(OpCode):
    """Create an instance: its disks, its OS and its configuration."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName,
        ("mode", constants.INSTANCE_CREATE,
         ht.TElemOf(constants.INSTANCE_CREATE_MODES),
         "Instance creation mode: create, or import (from an export made"
         " by OpBackupExport; remote-import is not supported)"),
        _PConflictsCheck,
        _PUnsupported("forthcoming", False, ht.TBool,
                      "Whether to only reserve the resources of the"
                      " instance (a forthcoming instance)"),
        _PUnsupported("commit", False, ht.TBool,
                      "Whether to turn a forthcoming instance into a real"
                      " one"),
        _PUnsupported("identify_defaults", False, ht.TBool,
                      "Whether to reset the parameters equal to the"
                      " cluster defaults to their defaults"),
        _PUnsupported("osparams_private", None, _TMaybePrivateDict,
                      "Private OS parameters for the instance"),
        _PUnsupported("osparams_secret", None, _TMaybePrivateDict,
                      "Secret OS parameters for the OS scripts"),
        _PInstanceCommunication(False),
        _PUnsupported("helper_startup_timeout", None, ht.TMaybe(ht.TInt),
                      "Startup timeout of the installation helper VM"),
        _PUnsupported("helper_shutdown_timeout", None, ht.TMaybe(ht.TInt),
                      "Shutdown timeout of the installation helper VM"),
        _PUnsupported("source_handshake", None, ht.TMaybe(ht.TList),
                      "Remote import: signed handshake of the source"
                      " cluster"),
        _PUnsupported("source_x509_ca", None, ht.TMaybeString,
                      "Remote import: X509 CA of the source cluster"),
        _PUnsupported("source_instance_name", None, ht.TMaybeString,
                      "Remote import: instance name on the source cluster"),
        _PUnsupported("source_shutdown_timeout",
                      constants.DEFAULT_SHUTDOWN_TIMEOUT, ht.TNonNegativeInt,
                      "Remote import: how long the source waits for the"
                      " instance to shut down"),
        ("disks", ht.NoDefault, ht.TListOf(_TDiskSpec),
         "Disk descriptions: size (MiB), mode (rw or ro), name and, for"
         " templates adopting existing devices, adopt (the device path)"),
        ("nics", ht.NoDefault, ht.TListOf(_TNicSpec),
         "NIC descriptions: mac (auto, generate or an address), ip, mode,"
         " link, vlan and name"),
        ("disk_template", None,
         ht.TMaybe(ht.TElemOf(constants.DISK_TEMPLATES)),
         "Disk template (the cluster's first enabled one if not given)"),
        ("pnode", None, ht.TMaybeString, "Primary node"),
        ("pnode_uuid", None, ht.TMaybeString,
         "Primary node UUID (filled in from pnode)"),
        ("snode", None, ht.TMaybeString,
         "Secondary node (mirrored templates only)"),
        ("snode_uuid", None, ht.TMaybeString,
         "Secondary node UUID (filled in from snode)"),
        _PUnsupported("group_name", None, ht.TMaybeString,
                      "Node group the instance allocator places the"
                      " instance in"),
        _PIAllocFromDesc("Iallocator for deciding which node(s) to use"
                         " (the cluster's default when no node is given)"),
        ("opportunistic_locking", False, ht.TBool,
         "Whether to employ opportunistic locking for nodes, meaning nodes"
         " already locked by another opcode won't be considered for instance"
         " allocation (only when an iallocator is used)"),
        _PExplain,
        ("member_of", [], ht.TListOf(ht.TNonEmptyString),
         "Aggregates the instance's nodes must be in or out of, as"
         " Placement's member_of values (all must hold): an aggregate"
         " (name or UUID), 'in:A,B' (any of them), '!A' or '!in:A,B' (none"
         " of them); nodes given explicitly must satisfy them too"),
        ("hypervisor", None, ht.TMaybe(ht.TElemOf(constants.HYPER_TYPES)),
         "Hypervisor (the cluster's default if not given)"),
        ("hvparams", {}, ht.TDict, "Hypervisor parameters for the instance"),
        ("beparams", {}, ht.TDict, "Backend parameters for the instance"),
        ("os_type", None, ht.TMaybeString,
         "Operating system (name or name+variant)"),
        ("osparams", {}, ht.TDict, "OS parameters for the instance"),
        ("force_variant", False, ht.TBool,
         "Whether to accept an OS variant the OS does not list"),
        ("no_install", None, ht.TMaybeBool,
         "Do not install the OS (the disks stay empty)"),
        ("name_check", True, ht.TBool,
         "Whether to resolve and check the instance's name"),
        ("ip_check", True, ht.TBool,
         "Whether to check the instance's IP address for conflicts (requires"
         " name_check)"),
        ("file_storage_dir", None, ht.TMaybeString,
         "Directory for the disk files, relative to the cluster's file"
         " storage directory"),
        ("file_driver", None,
         ht.TMaybe(ht.TElemOf(constants.FILE_DRIVER)),
         "Driver for file-based disks"),
        ("start", True, ht.TBool,
         "Whether to start the instance after creation"),
        ("wait_for_sync", True, ht.TBool,
         "Whether to wait for the first sync of mirrored disks (otherwise"
         " only degraded ones abort the creation)"),
        ("tags", [], ht.TListOf(ht.TNonEmptyString), "Instance tags"),
        _PIgnoreIpolicy,
        ("src_node", None, ht.TMaybeString,
         "Import: node holding the export (searched on all nodes if not"
         " given)"),
        ("src_node_uuid", None, ht.TMaybeString,
         "Import: UUID of the source node (filled in from src_node)"),
        ("src_path", None, ht.TMaybeString,
         "Import: the export, by name or as the path of its directory on"
         " the source node (the instance name if not given)"),
        _PCompress,
    ]
    OP_RESULT = ht.TListOf(ht.TNonEmptyString)


# Instance creation opcodes inside OpInstanceMultiAlloc (objects in memory,
# wire dicts in jobs and on LUXI, as Ganeti has them)
_TInstanceCreateOps = ht.WithDesc("list of OpInstanceCreate", "array")(
    ht.TListOf(ht.Check(lambda v: isinstance(v, OpInstanceCreate),
                        "OpInstanceCreate")))
_TStringList = ht.TListOf(ht.TNonEmptyString)


class OpInstanceMultiAlloc(OpCode):
    """Create several instances: one allocator run places them all, then
    one creation job each (the nodes filled in)."""
    OP_PARAMS = [
        ("opportunistic_locking", False, ht.TBool,
         "Whether to employ opportunistic locking for nodes, meaning nodes"
         " already locked by another opcode won't be considered for instance"
         " allocation (only when an iallocator is used)"),
        _PIAllocFromDesc("Iallocator for deciding the nodes of the instances"
                         " (the cluster's default when they name none)"),
        ("instances", [], _TInstanceCreateOps,
         "List of instance create opcodes describing the instances to"
         " allocate"),
    ]
    OP_RESULT = ht.TStrictDict(True, True, {
        "jobs": _TJobIdList,
        "allocatable": _TStringList, "failed": _TStringList})

    def __getstate__(self) -> dict:
        state = OpCode.__getstate__(self)
        if "instances" in state:
            state["instances"] = [
                inst.__getstate__() if isinstance(inst, OpCode) else inst
                for inst in state["instances"]]
        return state

    def RedactedState(self) -> dict:
        state = OpCode.RedactedState(self)
        if isinstance(getattr(self, "instances", None), list):
            state["instances"] = [
                inst.RedactedState() if isinstance(inst, OpCode) else inst
                for inst in self.instances]
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state, dict) and \
                isinstance(state.get("instances"), list):
            state = dict(state)
            state["instances"] = [_LoadInstanceCreate(inst)
                                  for inst in state["instances"]]
        OpCode.__setstate__(self, state)

    def Validate(self, set_defaults: bool) -> None:
        """Also validates each creation opcode (Ganeti's recursion)."""
        OpCode.Validate(self, set_defaults)
        for inst in self.instances:
            inst.Validate(set_defaults)


def _LoadInstanceCreate(data: Any) -> Any:
    """An OpInstanceCreate from its wire dict (OP_ID optional)."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    op_id = data.setdefault("OP_ID", OpInstanceCreate.OP_ID)
    if op_id != OpInstanceCreate.OP_ID:
        raise errors.OpPrereqError("Instances to allocate must be %s, not %s"
                                   % (OpInstanceCreate.OP_ID, op_id),
                                   errors.ECODE_INVAL)
    return OpCode.LoadOpCode(data)


class OpInstanceRemove(OpCode):
    """Remove an instance: stop it, destroy its disks, forget it."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout,
        ("ignore_failures", False, ht.TBool,
         "Whether to go on (and remove the instance from the configuration)"
         " when stopping it or removing its disks fails"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceStartup(OpCode):
    """Start an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PForce, _PIgnoreOfflineNodes,
        ("hvparams", {}, ht.TDict,
         "Temporary hypervisor parameters, for this start only"),
        ("beparams", {}, ht.TDict,
         "Temporary backend parameters, for this start only"),
        _PNoRemember,
        ("startup_paused", False, ht.TBool, "Pause the instance at startup"),
        _PShutdownTimeout,
    ]
    OP_RESULT = ht.TNone


class OpInstanceShutdown(OpCode):
    """Stop an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PForce, _PIgnoreOfflineNodes,
        ("timeout", constants.DEFAULT_SHUTDOWN_TIMEOUT, ht.TNonNegativeInt,
         "How long to wait for the instance to shut down cleanly before"
         " forcing it off (seconds)"),
        _PNoRemember,
        ("admin_state_source", None,
         ht.TMaybe(ht.TElemOf(["admin", "user"])),
         "Who is shutting the instance down (admin or user)"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceReboot(OpCode):
    """Reboot an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout,
        ("ignore_secondaries", False, ht.TBool,
         "Whether to start the instance even if its secondary disks fail"),
        ("reboot_type", ht.NoDefault, ht.TElemOf(constants.REBOOT_TYPES),
         "How to reboot: soft (inside the instance), hard (stop and start"
         " the instance) or full (also restart its disks)"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceQueryData(OpCode):
    """Detailed data of instances: configuration and runtime state."""
    OP_PARAMS = [
        _PUseLocking,
        ("instances", [], ht.TListOf(ht.TNonEmptyString),
         "Instance names (all instances if empty)"),
        ("static", False, ht.TBool,
         "Whether to only return configuration data without querying the"
         " nodes"),
    ]
    OP_RESULT = ht.TDictOf(ht.TNonEmptyString, ht.TDict)


# Instance modification (modify, rename, reinstall, console) ------------------

_TDeviceModIdent = ht.TOr(ht.TInt, ht.TNonEmptyString)
# [[add|modify|remove, index (-1: the last) or name, {params}], ...], or
# Ganeti's legacy form [[add|remove|index, {params}], ...]
_TDeviceMods = ht.WithDesc(
    "list of [operation (add, modify, remove), index or name, parameters]"
    " (or legacy [add, remove or index, parameters])", "array")(
    ht.TOr(ht.TListOf(ht.TTupleOf(
               ht.TElemOf([constants.DDM_ADD, constants.DDM_MODIFY,
                           constants.DDM_REMOVE]),
               _TDeviceModIdent, ht.TDict)),
           ht.TListOf(ht.TTupleOf(
               ht.TOr(ht.TElemOf([constants.DDM_ADD, constants.DDM_REMOVE]),
                      ht.TInt),
               ht.TDict))))


class OpInstanceSetParams(OpCode):
    """Change the parameters, disks and NICs of an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PForce,
        ("force_variant", False, ht.TBool,
         "Whether to accept an OS variant the OS does not list"),
        ("nics", [], _TDeviceMods,
         "NIC changes; parameters: mac (auto or generate for a new"
         " address), ip, mode, link, vlan, name. NICs are added and removed"
         " at the end of the list only"),
        ("disks", [], _TDeviceMods,
         "Disk changes; parameters: size (MiB) and, for blockdev, adopt"
         " (the device path) or, for ext, provider when adding; mode and"
         " name. Disks are added and removed at the end of the list only"),
        ("beparams", {}, ht.TDict,
         "Backend parameters changed for the instance (\"default\" removes"
         " one)"),
        ("runtime_mem", None, ht.TMaybe(ht.TStrictPositiveInt),
         "New memory (MiB) of the running instance, set by ballooning"),
        ("hvparams", {}, ht.TDict,
         "Hypervisor parameters changed for the instance (\"default\""
         " removes one)"),
        ("pnode", None, ht.TMaybeString,
         "New primary node of a stopped instance whose disks are already"
         " there (file-based templates)"),
        ("pnode_uuid", None, ht.TMaybeString,
         "New primary node UUID (filled in from pnode)"),
        ("disk_template", None,
         ht.TMaybe(ht.TElemOf(constants.DISK_TEMPLATES)),
         "Disk template to convert the stopped instance's disks to"
         " (between file and drbd)"),
        ("remote_node", None, ht.TMaybeString,
         "Secondary node (conversion to drbd)"),
        ("remote_node_uuid", None, ht.TMaybeString,
         "Secondary node UUID (filled in from remote_node)"),
        ("file_driver", None, ht.TMaybe(ht.TElemOf(constants.FILE_DRIVER)),
         "Driver for file-based disks (conversion to file)"),
        ("file_storage_dir", None, ht.TMaybeString,
         "Directory below the cluster's file storage directory for the"
         " disk files (conversion to file)"),
        ("wait_for_sync", True, ht.TBool,
         "Whether to wait for the new mirrors to sync (conversion to"
         " drbd)"),
        ("os_name", None, ht.TMaybeString,
         "New operating system of the instance (not installed: the disks"
         " stay as they are)"),
        ("osparams", None, ht.TMaybeDict,
         "OS parameters changed for the instance (\"default\" removes one)"),
        ("offline", None, ht.TMaybeBool,
         "Whether to mark the instance offline (true) or online, stopped"
         " (false)"),
        _PIgnoreIpolicy, _PConflictsCheck,
        ("hotplug_if_possible", False, ht.TBool,
         "Whether to apply device changes to the running instance where"
         " hotplug is possible (it never is here: they apply at the next"
         " start)"),
        _PUnsupported("hotplug", False, ht.TBool,
                      "Whether to apply device changes to the running"
                      " instance (hotplug)"),
        _PUnsupported("ext_params", {}, ht.TDict,
                      "Parameters of ext-template disks"),
        _PUnsupported("osparams_private", None, _TMaybePrivateDict,
                      "Private OS parameters changed for the instance"),
        _PInstanceCommunication(None),
        _PUnsupported("iallocator", None, ht.TMaybeString,
                      "Iallocator choosing the secondary node of a"
                      " conversion to drbd"),
    ]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString, ht.TAny))


class OpInstanceRename(OpCode):
    """Rename a stopped instance (configuration, storage, OS)."""
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("new_name", ht.NoDefault, ht.THostname, "New instance name"),
        ("name_check", True, ht.TBool,
         "Whether to resolve the new name (and use the resolved one)"),
        ("ip_check", True, ht.TBool,
         "Whether to refuse a new name whose IP address answers already"
         " (needs name_check)"),
    ]
    OP_RESULT = ht.TNonEmptyString


class OpInstanceReinstall(OpCode):
    """Reinstall the OS of a stopped instance on its disks."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("os_type", None, ht.TMaybeString,
         "New operating system (name or name+variant); the current one if"
         " not given"),
        ("force_variant", False, ht.TBool,
         "Whether to accept an OS variant the OS does not list"),
        ("osparams", None, ht.TMaybeDict,
         "OS parameters changed for the instance (\"default\" removes one)"),
        ("osparams_private", None, ht.TPrivate(ht.TMaybeDict),
         "Private OS parameters changed for the instance (\"default\""
         " removes one)"),
        ("osparams_secret", None, ht.TPrivate(ht.TMaybeDict),
         "Secret OS parameters: given to the OS scripts of this reinstall"
         " only, never stored"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceConsole(OpCode):
    """Describe how to reach the console of a running instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [_PInstanceName, _PInstanceUuid]
    OP_RESULT = ht.TDict


# Instance disks (grow, activate, deactivate, recreate) -----------------------

class OpInstanceActivateDisks(OpCode):
    """Assemble an instance's disks on its primary node."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("ignore_size", False, ht.TBool,
         "Whether to ignore the recorded size of the disks when activating"
         " them (for a configuration out of step with the devices)"),
        ("wait_for_sync", False, ht.TBool,
         "Whether to wait for the disks to synchronize"),
    ]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString,
                                       ht.TNonEmptyString, ht.TMaybeString))


class OpInstanceDeactivateDisks(OpCode):
    """Shut an instance's disks down."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [_PInstanceName, _PInstanceUuid, _PForce]
    OP_RESULT = ht.TNone


class OpInstanceRecreateDisks(OpCode):
    """Recreate an instance's missing disks, possibly on other nodes."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("disks", [],
         ht.TOr(ht.TListOf(ht.TNonNegativeInt),
                ht.TListOf(ht.TTupleOf(ht.TNonNegativeInt, ht.TDict))),
         "List of disk indexes (deprecated) or a list of tuples containing"
         " a disk index and a possibly empty dictionary with disk parameter"
         " changes (size, mode, spindles); all disks if empty"),
        ("nodes", [], ht.TListOf(ht.TNonEmptyString),
         "New instance nodes, if relocation is desired"),
        ("node_uuids", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "New instance node UUIDs (filled in from nodes)"),
        _PIAllocFromDesc("Iallocator for deciding new nodes"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceGrowDisk(OpCode):
    """Grow a disk of an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("wait_for_sync", True, ht.TBool,
         "Whether to wait for the disk to synchronize"),
        ("disk", ht.NoDefault, ht.TNonNegativeInt, "Disk index"),
        ("amount", ht.NoDefault, ht.TNonNegativeInt,
         "Amount of disk space to add (megabytes)"),
        ("absolute", False, ht.TBool,
         "Whether the amount parameter is an absolute target or a relative"
         " one"),
        _PIgnoreIpolicy,
    ]
    OP_RESULT = ht.TNone



# Instance placement (failover, migrate, move, change-group) ------------------

_PIgnoreConsistency = ("ignore_consistency", False, ht.TBool,
                       "Whether to ignore disk consistency (and a source"
                       " node that can't shut the instance down)")


class OpInstanceFailover(OpCode):
    """Stop an instance, make another node its primary and start it there.
    """
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout,
        _PIgnoreConsistency, _PMigrationTargetNode,
        _PMigrationTargetNodeUuid, _PIgnoreIpolicy,
        _PIAllocFromDesc("Iallocator for deciding the target node for"
                         " shared-storage instances"),
        ("cleanup", False, ht.TBool,
         "Whether a previously failed failover should be cleaned up"
         " (not supported: clean up with a migration)"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceMigrate(OpCode):
    """Move a running instance to another node without stopping it."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PMigrationMode, _PMigrationLive,
        _PMigrationTargetNode, _PMigrationTargetNodeUuid,
        _PAllowRuntimeChgs, _PIgnoreIpolicy,
        ("cleanup", False, ht.TBool,
         "Whether a previously failed migration should be cleaned up"),
        _PIAllocFromDesc("Iallocator for deciding the target node for"
                         " shared-storage instances"),
        ("allow_failover", False, ht.TBool,
         "Whether we can fallback to failover if migration is not"
         " possible"),
        ("ignore_hvversions", False, ht.TBool,
         "Whether to migrate between hypervisor versions the hypervisor"
         " does not consider safe"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceMove(OpCode):
    """Move an instance to another node by copying its disks (it is shut
    down meanwhile)."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout, _PIgnoreIpolicy,
        ("target_node", ht.NoDefault, ht.TNonEmptyString, "Target node"),
        ("target_node_uuid", None, ht.TMaybeString,
         "Target node UUID (filled in from target_node)"),
        _PIgnoreConsistency, _PCompress,
    ]
    OP_RESULT = ht.TNone


class OpInstanceReplaceDisks(OpCode):
    """Make the copies of a drbd instance's disks anew, or move them to
    another secondary node, while the instance runs."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("early_release", False, ht.TBool,
         "Whether to release locks as soon as possible"),
        _PIgnoreIpolicy,
        ("mode", ht.NoDefault, ht.TElemOf(constants.REPLACE_MODES),
         "Replacement mode"),
        ("disks", [], ht.TListOf(ht.Check(
            lambda value: ht.TNonNegativeInt(value) and value < 16,
            "disk index (0 to 15)", "integer")),
         "Disk indexes (all disks if empty)"),
        ("remote_node", None, ht.TMaybeString,
         "New secondary node (replace_new_secondary)"),
        ("remote_node_uuid", None, ht.TMaybeString,
         "New secondary node UUID (filled in from remote_node)"),
        _PIAllocFromDesc("Iallocator for deciding the new secondary node"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceChangeGroup(OpCode):
    """Move an instance to a node of another node group (follow-up job)."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("early_release", False, ht.TBool,
         "Whether to release locks as soon as possible (only for"
         " internally mirrored disks)"),
        _PIAllocFromDesc("Iallocator for computing solution"),
        ("target_groups", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Destination group names or UUIDs (defaults to \"all but current"
         " group\")"),
    ]
    OP_RESULT = _TJobIdListOnly


# Backups (export, import, list, remove) --------------------------------------

_PExportMode = ("mode", constants.EXPORT_MODE_LOCAL,
                ht.TElemOf(constants.EXPORT_MODES),
                "Export mode (only \"local\", to a node of the cluster, is"
                " supported)")


class OpBackupQuery(OpCode):
    """List the exports of the nodes (node name -> export names)."""
    OP_PARAMS = [
        _PUseLocking,
        ("nodes", [], ht.TListOf(ht.TNonEmptyString),
         "Empty list to query all nodes, node names otherwise"),
    ]
    OP_RESULT = ht.TDictOf(ht.TNonEmptyString,
                           ht.TOr(ht.TAnd(ht.TBool, ht.TElemOf([False])),
                                  ht.TListOf(ht.TNonEmptyString)))


class OpBackupPrepare(OpCode):
    """Prepare an instance for an export (nothing to do for local ones)."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [_PInstanceName, _PInstanceUuid, _PExportMode]
    OP_RESULT = ht.TMaybeDict


class OpBackupExport(OpCode):
    """Export an instance's disks and configuration to a node."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout, _PCompress,
        ("target_node", ht.NoDefault, ht.TNonEmptyString,
         "Node the export is written to"),
        ("target_node_uuid", None, ht.TMaybeString,
         "Target node UUID (filled in from target_node)"),
        ("shutdown", True, ht.TBool,
         "Whether to shut the instance down during the export (a running"
         " instance is started again afterwards)"),
        ("remove_instance", False, ht.TBool,
         "Whether to remove the instance after a successful export"),
        ("ignore_remove_failures", False, ht.TBool,
         "Whether to ignore failures while removing the instance"),
        _PExportMode,
        _PUnsupported("x509_key_name", None, ht.TMaybe(ht.TList),
                      "Remote export: name of the X509 key"),
        _PUnsupported("destination_x509_ca", None, ht.TMaybeString,
                      "Remote export: X509 CA of the destination"),
        _PUnsupported("zero_free_space", False, ht.TBool,
                      "Whether to zero the free space of the disks first"),
        _PUnsupported("zeroing_timeout_fixed", None, ht.TMaybe(ht.TInt),
                      "Fixed part of the zeroing timeout"),
        _PUnsupported("zeroing_timeout_per_mib", None,
                      ht.TMaybe(ht.TNumber),
                      "Per-MiB part of the zeroing timeout"),
        _PUnsupported("long_sleep", False, ht.TBool,
                      "Whether to allow long instance shutdowns during"
                      " exports (zeroing)"),
    ]
    OP_RESULT = ht.TTupleOf(ht.TBool, ht.TListOf(ht.TBool))


class OpBackupRemove(OpCode):
    """Remove the exports of an instance from every node."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [_PInstanceName, _PInstanceUuid]
    OP_RESULT = ht.TNone


# Testing ---------------------------------------------------------------------

class OpTestAllocator(OpCode):
    """Build an instance allocator's input message, or run the allocator
    on it (``direction`` in or out); the result is the text."""
    OP_DSC_FIELD = "iallocator"
    OP_PARAMS = [
        ("direction", ht.NoDefault,
         ht.TElemOf(constants.VALID_IALLOCATOR_DIRECTIONS),
         "Show the input message (in) or run the allocator on it (out)"),
        ("mode", ht.NoDefault,
         ht.TElemOf(constants.VALID_IALLOCATOR_MODES),
         "Request type"),
        ("name", ht.NoDefault, ht.TNonEmptyString,
         "Instance name (allocate, relocate, allocate-secondary)"),
        ("nics", None, ht.TMaybeListOf(ht.TDict),
         "NICs of the instance: mac, ip, bridge"),
        ("disks", None, ht.TMaybeListOf(ht.TDict),
         "Disks of the instance: size, mode"),
        ("hypervisor", None, ht.TMaybeString,
         "Hypervisor (the cluster's default if not given)"),
        ("iallocator", None, ht.TMaybeString,
         "Allocator to run (the cluster's default if not given)"),
        ("tags", [], ht.TListOf(ht.TNonEmptyString), "Instance tags"),
        ("memory", None, ht.TMaybe(ht.TNonNegativeInt), "Memory (MiB)"),
        ("vcpus", None, ht.TMaybe(ht.TNonNegativeInt), "Virtual CPUs"),
        ("os", None, ht.TMaybeString, "Operating system"),
        ("disk_template", None, ht.TMaybeString, "Disk template"),
        ("instances", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Instances (node-evacuate, change-group)"),
        ("evac_mode", None, ht.TMaybe(ht.TElemOf(constants.NODE_EVAC_MODES)),
         "Evacuation mode (node-evacuate)"),
        ("target_groups", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Target node groups (change-group)"),
        ("spindle_use", 1, ht.TNonNegativeInt, "Spindles used"),
        ("count", 1, ht.TStrictPositiveInt,
         "Number of instances (multi-allocate)"),
        ("group_name", None, ht.TMaybeString, "Node group to allocate in"),
        _PExplain,
    ]
    OP_RESULT = ht.TString


class OpTestDelay(OpCode):
    """Sleep for a while on the master and/or nodes (tests, benchmarks)."""
    OP_DSC_FIELD = "duration"
    OP_PARAMS = [
        ("duration", ht.NoDefault, ht.TPositiveNumber,
         "Duration in seconds (must be positive)"),
        ("on_master", True, ht.TBool, "Whether to sleep on the master"),
        ("on_nodes", [], ht.TListOf(ht.TNonEmptyString),
         "Nodes to sleep on"),
        ("on_node_uuids", None, ht.TMaybe(ht.TListOf(ht.TNonEmptyString)),
         "UUIDs of the nodes to sleep on (filled from on_nodes)"),
        ("repeat", 0, ht.TNonNegativeInt,
         "How many extra times to repeat the sleep"),
        ("interruptible", False, ht.TBool,
         "Whether the delay can be interrupted"),
        ("no_locks", True, ht.TBool,
         "Run without taking the node locks"),
    ]
    OP_RESULT = ht.TNone


class OpTestJqueue(OpCode):
    """Exercise the job queue: notifications through a socket, log
    messages, failure (gnt-debug test-jobqueue)."""
    OP_PARAMS = [
        ("notify_waitlock", False, ht.TBool,
         "Whether to notify the client while waiting for locks"),
        ("notify_exec", False, ht.TBool,
         "Whether to notify the client when executing"),
        ("log_messages", [], ht.TListOf(ht.TString),
         "Messages to log, each announced to the client"),
        ("fail", False, ht.TBool, "Whether to fail at the end"),
    ]
    OP_RESULT = ht.TBool


class OpTestOsParams(OpCode):
    """Show the secret OS parameters it was given (tests their transport
    and redaction)."""
    OP_PARAMS = [
        ("osparams_secret", None, _TMaybePrivateDict,
         "Secret OS parameters"),
    ]
    OP_RESULT = ht.TNone


class OpTestDummy(OpCode):
    """Log messages, fail or submit jobs as asked (tests of the queue)."""
    OP_PARAMS = [
        ("result", ht.NoDefault, ht.TAny, "Result of the opcode"),
        ("messages", ht.NoDefault, ht.TAny, "Messages to log"),
        ("fail", ht.NoDefault, ht.TAny, "Whether to fail"),
        ("submit_jobs", ht.NoDefault, ht.TAny,
         "Jobs to submit as follow-ups (a list of lists of opcodes)"),
    ]
    OP_RESULT = ht.TAny


def _BuildMapping() -> dict[str, type[OpCode]]:
    mapping = {}
    for obj in list(globals().values()):
        if (isinstance(obj, type) and issubclass(obj, OpCode) and
                obj is not OpCode):
            mapping[obj.OP_ID] = obj
    return mapping


OP_MAPPING = _BuildMapping()
