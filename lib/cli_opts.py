"""Command line options and argument definitions shared by the gnt-* tools.

Option names, destinations and defaults follow Ganeti's ``cli_opts`` so that
command modules read like Ganeti's and users get the same flags. Options
for opcode parameters are built with :func:`OpcodeOption`, which takes
the help text, default and type from the opcode declaration; the
dictionary options of parameter families (-B, -H, -N, -D,
--node-parameters) with :func:`ParamsOption`, which adds the family's
valid keys to the help.
"""

import copy
import functools
from optparse import Option, OptionValueError
from typing import Any, Iterable, Mapping, NamedTuple

from ganeti import constants, errors, ht, impexp, opcodes
from ganeti.parameters import families, hypervisors
from ganeti.utils.text import ParseUnit

__all__ = [
    # Argument definitions
    "ArgChoice", "ArgCommand", "ArgFile", "ArgFilter", "ArgGroup", "ArgHost",
    "ArgInstance", "ArgJobId", "ArgNetwork", "ArgNode", "ArgOs",
    "ArgSuggest", "ArgUnknown",
    "ARGS_NONE", "ARGS_MANY_INSTANCES", "ARGS_MANY_NODES", "ARGS_MANY_GROUPS",
    "ARGS_MANY_FILTERS", "ARGS_MANY_NETWORKS", "ARGS_ONE_INSTANCE",
    "ARGS_ONE_NODE", "ARGS_ONE_GROUP", "ARGS_ONE_FILTER", "ARGS_ONE_NETWORK",
    # Option machinery
    "CliOption", "cli_option", "OpcodeOption", "ParamsOption", "NO_PREFIX",
    "UN_PREFIX",
    "check_bool", "check_ident_key_val", "check_key_val", "check_list",
    "check_maybefloat", "check_priority", "check_unit",
    "MigrationModeFromOpts", "ParseUnit",
    "SplitKeyVal",
    # Options
    "ALL_OPT", "BACKEND_OPT", "COMMON_OPTS", "CONFIRM_OPT", "DEBUG_OPT",
    "COMPRESS_OPT", "DISK_OPT", "DISK_TEMPLATE_OPT", "DRY_RUN_OPT",
    "EARLY_RELEASE_OPT", "DST_NODE_OPT", "FIELDS_OPT", "FORCE_FILTER_OPT",
    "FORCE_OPT", "HYPERVISOR_OPT", "IALLOCATOR_OPT",
    "IGNORE_CONSIST_OPT", "IGNORE_IPOLICY_OPT", "INSTANCE_POLICY_OPTS",
    "INTERVAL_OPT", "IPOLICY_BOUNDS_OPT", "IPOLICY_DT_OPT",
    "IPOLICY_SPINDLE_RATIO_OPT", "IPOLICY_STD_OPT", "IPOLICY_VCPU_RATIO_OPT",
    "NOCONFLICTSCHECK_OPT",
    "MIGRATION_MODE_OPT", "NET_OPT", "NODE_LIST_OPT", "NODE_PLACEMENT_OPT",
    "NOHDR_OPT", "NONLIVE_OPT", "NORUNTIME_CHGS_OPT", "NWSYNC_OPT",
    "OOB_TIMEOUT_OPT", "OS_OPT", "POWER_DELAY_OPT",
    "OSPARAMS_OPT", "OSPARAMS_PRIVATE_OPT", "OSPARAMS_SECRET_OPT",
    "PRINT_JOBID_OPT", "PRIORITY_OPT",
    "REASON_OPT", "ROMAN_OPT", "SEP_OPT", "SHUTDOWN_TIMEOUT_OPT",
    "SINGLE_NODE_OPT",
    "SUBMIT_OPT", "TAG_SRC_OPT", "TO_GROUP_OPT", "UNITS_OPT", "VERBOSE_OPT",
    "YES_DOIT_OPT",
]

# Key prefixes in key=value lists: "no_key" sets False, "-key" sets None
NO_PREFIX = "no_"
UN_PREFIX = "-"


# Argument definitions --------------------------------------------------------

class _Argument:
    """A positional argument: how many (min..max, max None = unbounded)."""

    def __init__(self, min: int = 0, max: int | None = None):  # noqa: A002
        # Ganeti's keyword names, kept for compatibility of command tables
        self.min = min
        self.max = max

    def __repr__(self) -> str:
        return "<%s min=%s max=%s>" % (self.__class__.__name__, self.min,
                                       self.max)


class ArgSuggest(_Argument):
    """An argument with suggested (not enforced) values."""

    def __init__(self, min: int = 0, max: int | None = None,  # noqa: A002
                 choices: list[str] | None = None):
        _Argument.__init__(self, min=min, max=max)
        self.choices = choices or []


class ArgChoice(ArgSuggest):
    """An argument that must be one of ``choices``."""


class ArgUnknown(_Argument):
    """An argument of no particular kind."""


class ArgInstance(_Argument):
    """Instance name."""


class ArgNode(_Argument):
    """Node name."""


class ArgGroup(_Argument):
    """Node group name."""


class ArgNetwork(_Argument):
    """Network name."""


class ArgJobId(_Argument):
    """Job id."""


class ArgFile(_Argument):
    """File path."""


class ArgCommand(_Argument):
    """A command (with its own arguments; stops option parsing)."""


class ArgHost(_Argument):
    """Host name."""


class ArgOs(_Argument):
    """OS name."""


class ArgFilter(_Argument):
    """Job filter UUID."""


ARGS_NONE: list = []
ARGS_MANY_INSTANCES = [ArgInstance()]
ARGS_MANY_NODES = [ArgNode()]
ARGS_MANY_GROUPS = [ArgGroup()]
ARGS_MANY_FILTERS = [ArgFilter()]
ARGS_ONE_INSTANCE = [ArgInstance(min=1, max=1)]
ARGS_ONE_NODE = [ArgNode(min=1, max=1)]
ARGS_ONE_GROUP = [ArgGroup(min=1, max=1)]
ARGS_ONE_FILTER = [ArgFilter(min=1, max=1)]
ARGS_MANY_NETWORKS = [ArgNetwork()]
ARGS_ONE_NETWORK = [ArgNetwork(min=1, max=1)]


# Value parsers ---------------------------------------------------------------

def _UnescapeAndSplit(text: str, sep: str = ",") -> list[str]:
    # "a\,b,c" -> ["a,b", "c"]; a backslash escapes the next character
    result = []
    current = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            nxt = next(chars, None)
            if nxt is None:
                current.append(char)
            elif nxt == sep:
                current.append(nxt)
            else:
                current.extend((char, nxt))
        elif char == sep:
            result.append("".join(current))
            current = []
        else:
            current.append(char)
    result.append("".join(current))
    return result


def SplitKeyVal(opt: str, data: str, parse_prefixes: bool = True) -> dict:
    """Parse "a=1,b=x,c,no_d,-e" into a dict.

    With ``parse_prefixes``, a bare key means True, "no_key" False and
    "-key" None (reset to the default), Ganeti's syntax for -B/-H/-O.
    """
    result: dict[str, Any] = {}
    if not data:
        return result
    for elem in _UnescapeAndSplit(data):
        val: str | bool | None
        if "=" in elem:
            key, val = elem.split("=", 1)
        elif parse_prefixes:
            if elem.startswith(NO_PREFIX):
                key, val = elem[len(NO_PREFIX):], False
            elif elem.startswith(UN_PREFIX):
                key, val = elem[len(UN_PREFIX):], None
            else:
                key, val = elem, True
        else:
            raise errors.ParameterError("Missing value for key '%s' in option"
                                        " %s" % (elem, opt))
        if key in result:
            raise errors.ParameterError("Duplicate key '%s' in option %s" %
                                        (key, opt))
        result[key] = val
    return result


def _SplitIdentKeyVal(opt: str, value: str,
                      parse_prefixes: bool) -> tuple[str, Any]:
    ident, rest = (value.split(":", 1) if ":" in value else (value, ""))
    if parse_prefixes and ident.startswith(NO_PREFIX):
        if rest:
            raise errors.ParameterError("Cannot pass options when removing"
                                        " parameter groups: %s" % value)
        return ident[len(NO_PREFIX):], False
    # "-0:..." is not a reset of group "0": negative indices are allowed
    if (parse_prefixes and ident.startswith(UN_PREFIX) and
            (len(ident) <= len(UN_PREFIX) or
             not ident[len(UN_PREFIX)].isdigit())):
        if rest:
            raise errors.ParameterError("Cannot specify values when removing"
                                        " parameter groups: %s" % value)
        return ident[len(UN_PREFIX):], None
    return ident, SplitKeyVal(opt, rest, parse_prefixes)


def _Converter(fn):
    # optparse wants OptionValueError; our parsers raise Ganeti errors
    @functools.wraps(fn)
    def wrapper(option: Option, opt: str, value: str) -> Any:
        try:
            return fn(option, opt, value)
        except (errors.ParameterError, errors.UnitParseError) as err:
            raise OptionValueError("option %s: %s" % (opt, err)) from err
    return wrapper


@_Converter
def check_ident_key_val(option: Option, opt: str, value: str) -> tuple:
    """"ident:k=v,..." (e.g. "kvm:acpi=no", "0:size=10G") -> (ident, dict)."""
    return _SplitIdentKeyVal(opt, value, True)


@_Converter
def check_key_val(option: Option, opt: str, value: str) -> dict:
    """"k=v,k2,no_k3,-k4" -> dict."""
    return SplitKeyVal(opt, value, True)


@_Converter
def check_unit(option: Option, opt: str, value: str) -> int:
    """A size in MiB, with an optional M/G/T suffix."""
    try:
        return ParseUnit(value)
    except errors.UnitParseError as err:
        raise OptionValueError("option %s: invalid unit value '%s': %s" %
                               (opt, value, err)) from err


@_Converter
def check_bool(option: Option, opt: str, value: str) -> bool:
    """yes/no, true/false."""
    lowered = value.lower()
    if lowered in ("false", "no"):
        return False
    if lowered in ("true", "yes"):
        return True
    raise errors.ParameterError("Invalid boolean value '%s'" % value)


@_Converter
def check_list(option: Option, opt: str, value: str) -> list[str]:
    """Comma-separated list (backslash escapes a comma)."""
    if not value:
        return []
    return _UnescapeAndSplit(value)


@_Converter
def check_uid_pool(option: Option, opt: str,
                   value: str) -> list[tuple[int, int]]:
    """Uids and uid ranges, "1000-1999,3000" -> [(1000, 1999), (3000, 3000)].
    """
    from ganeti.utils import uidpool  # rarely needed; kept off start-up
    try:
        return uidpool.ParseUidPool(value)
    except errors.OpPrereqError as err:
        raise errors.ParameterError(err.args[0]) from None


@_Converter
def check_priority(option: Option, opt: str, value: str) -> int:
    """A job priority by name (low, normal, high) -> its number."""
    try:
        return constants.OP_PRIO_NAMES[value]
    except KeyError:
        raise errors.ParameterError(
            "invalid priority '%s' (one of %s)" %
            (value, ", ".join(sorted(constants.OP_PRIO_NAMES)))) from None


@_Converter
def check_maybefloat(option: Option, opt: str, value: str) -> float | None:
    """A float, or "none" for None."""
    if value.lower() == constants.VALUE_NONE:
        return None
    try:
        return float(value)
    except ValueError as err:
        raise errors.ParameterError("invalid number '%s'" % value) from err


class CliOption(Option):
    """optparse Option with Ganeti's extra value types.

    ``opcode_check``, if set (OpcodeOption does), validates the converted
    value against the opcode parameter's declared check, so bad values are
    rejected while parsing with the declaration's own description.
    """

    ATTRS = Option.ATTRS + ["opcode_check"]
    TYPES = Option.TYPES + ("identkeyval", "keyval", "unit", "bool", "list",
                            "maybefloat", "priority", "uidpool")
    TYPE_CHECKER = dict(Option.TYPE_CHECKER)
    TYPE_CHECKER["identkeyval"] = check_ident_key_val
    TYPE_CHECKER["keyval"] = check_key_val
    TYPE_CHECKER["unit"] = check_unit
    TYPE_CHECKER["bool"] = check_bool
    TYPE_CHECKER["list"] = check_list
    TYPE_CHECKER["maybefloat"] = check_maybefloat
    TYPE_CHECKER["priority"] = check_priority
    TYPE_CHECKER["uidpool"] = check_uid_pool

    def take_action(self, action: str, dest: str, opt: str, value: Any,
                    values: Any, parser: Any) -> Any:
        # optparse appends to the default list itself, which would leak
        # values into later parses (and into the option's default)
        if action in ("append", "append_const") and \
                getattr(values, dest, None) is self.default and \
                isinstance(self.default, list):
            setattr(values, dest, list(self.default))
        return Option.take_action(self, action, dest, opt, value, values,
                                  parser)

    def check_value(self, opt: str, value: str) -> Any:
        result = Option.check_value(self, opt, value)
        check = getattr(self, "opcode_check", None)
        if check is not None and self.action == "store" and \
                not check(result):
            raise OptionValueError("option %s: invalid value %r (expected %s)"
                                   % (opt, value, check))
        return result


cli_option = CliOption

# Option value types for the ht "kind" of a parameter
_KIND_TO_TYPE = {
    "integer": "int",
    "number": "float",
    "string": "string",
    "array": "list",
    "object": "keyval",
}


def _ParamDecl(op_class: type[opcodes.BaseOpCode],
               param_name: str) -> tuple[Any, ht.Check, str]:
    """``(default, check, doc)`` of an opcode parameter."""
    for name, default, check, doc in op_class.GetAllParams():
        if name == param_name:
            return default, check, doc
    raise errors.ProgrammerError("Opcode %s has no parameter '%s'" %
                                 (op_class.__name__, param_name))


def OpcodeOption(op_class: type[opcodes.BaseOpCode], param_name: str,
                 *opt_strings: str, **overrides: Any) -> CliOption:
    """Build an option for one parameter of an opcode.

    The help text is the parameter's doc, the destination its name, the
    default its declared default (None for required parameters) and the
    value type follows its check: integer -> int, number -> float, array ->
    comma-separated list (or repeated option with ``action="append"``),
    object -> key=value list. A boolean becomes a flag: ``store_false`` when
    the long option is "--no-<name>" (negating the parameter), otherwise
    ``store_true``; a flag's help is the doc turned into an order (see
    :func:`_FlagHelp`). Keyword arguments override any of these.
    """
    default, check, doc = _ParamDecl(op_class, param_name)
    kwargs: dict[str, Any] = {
        "dest": param_name,
        "help": doc,
        "default": None if default is ht.NoDefault else copy.deepcopy(default),
    }
    action = overrides.get("action")
    if check.kind == "boolean":
        if action is None:
            negated = "--no-" + param_name.replace("_", "-")
            kwargs["action"] = ("store_false" if negated in opt_strings
                                else "store_true")
    elif action in (None, "store"):
        kwargs["type"] = _KIND_TO_TYPE.get(check.kind, "string")
        kwargs["opcode_check"] = check
    elif action == "append":
        kwargs["type"] = "string"
        if kwargs["default"] is None:
            kwargs["default"] = []
    kwargs.update(overrides)
    if "help" not in overrides and \
            kwargs.get("action") in ("store_true", "store_false"):
        kwargs["help"] = _FlagHelp(op_class, param_name, doc,
                                   kwargs["action"] == "store_false")
    return CliOption(*opt_strings, **kwargs)


_WHETHER_TO = "Whether to "


def _FlagHelp(op_class: type, param_name: str, doc: str,
              negated: bool) -> str:
    """Help of a flag that sets a boolean parameter.

    The parameter's doc says what True does ("Whether to start the
    instance"); a flag's help is the order: "Start the instance", or
    for a flag setting False, "Do not start the instance". A positive
    doc of another form stays as it is; a negating flag's cannot be
    negated reliably, so the option must then be given its own help.
    """
    if doc.startswith(_WHETHER_TO):
        order = doc[len(_WHETHER_TO):]
        return "Do not " + order if negated else order[:1].upper() + order[1:]
    if not negated:
        return doc
    raise errors.ProgrammerError(
        "Cannot negate the doc of %s.%s (%r): give the option a help"
        " text" % (op_class.__name__, param_name, doc))


class _ParamsFamily(NamedTuple):
    """A family of parameters set by a dictionary option (-B, -H, ...).

    ``tables`` maps an identifier (hypervisor, disk template) to its
    parameter table for families whose values are per identifier, or is
    the one parameter table.
    """

    opt_strings: tuple[str, ...]
    tables: Mapping[str, Any]
    ident_metavar: str | None = None


# Ganeti's option names for each family; keys from the parameters layer
_PARAMS_FAMILIES = {
    "backend": _ParamsFamily(("-B", "--backend-parameters"),
                             families.BE_PARAMETERS),
    "hypervisor": _ParamsFamily(("-H", "--hypervisor-parameters"),
                                hypervisors.HV_PARAMETERS, "HV"),
    "nic": _ParamsFamily(("-N", "--nic-parameters"),
                         families.NIC_PARAMETERS),
    "disk": _ParamsFamily(("-D", "--disk-parameters"),
                          families.DISK_PARAMETERS, "TEMPLATE"),
    "node": _ParamsFamily(("--node-parameters", ), families.ND_PARAMETERS),
}


def _KeysHelp(family: _ParamsFamily, exclude: Iterable[str]) -> str:
    """The valid keys of a family, per identifier where it has them."""
    skip = frozenset(exclude)

    def keys(table: Mapping[str, Any]) -> str:
        return ", ".join(sorted(set(table) - skip))
    if family.ident_metavar is None:
        return "Keys: %s." % keys(family.tables)
    per_ident = ["for %s: %s" % (ident, keys(table))
                 for ident, table in sorted(family.tables.items())
                 if keys(table)]
    return "Keys %s." % "; ".join(per_ident) if per_ident else "No keys."


def ParamsOption(op_class: type[opcodes.BaseOpCode], param_name: str,
                 family: str, *extra_opt_strings: str,
                 per_ident: bool | None = None, exclude: Iterable[str] = (),
                 **overrides: Any) -> CliOption:
    """Build the dictionary option (-B, -H, -N, -D, --node-parameters)
    setting an opcode parameter of a parameter family.

    The option names are the family's (plus ``extra_opt_strings``), the
    help is the parameter's doc followed by the family's valid keys (but
    ``exclude``). The value is "key=value,..." (a dict), or, with
    ``per_ident`` (the default for the per-hypervisor and per-template
    families), repeated "ident:key=value,..." (a list of pairs). Keyword
    arguments override the option's attributes.
    """
    fam = _PARAMS_FAMILIES[family]
    _, check, doc = _ParamDecl(op_class, param_name)
    if per_ident is None:
        per_ident = fam.ident_metavar is not None
    kwargs: dict[str, Any] = {"dest": param_name}
    if per_ident:
        if fam.ident_metavar is None:
            raise errors.ProgrammerError("Family %s has no identifiers" %
                                         family)
        kwargs.update(type="identkeyval", action="append", default=[],
                      metavar="%s:PARAM=VALUE,..." % fam.ident_metavar)
    else:
        kwargs.update(type="keyval", default={}, metavar="PARAM=VALUE,...",
                      opcode_check=check)
    kwargs["help"] = "%s. %s" % (doc, _KeysHelp(fam, exclude))
    kwargs.update(overrides)
    return CliOption(*(fam.opt_strings + extra_opt_strings), **kwargs)


# Common options -------------------------------------------------------------

DEBUG_OPT = cli_option("-d", "--debug", default=0, action="count",
                       help="Increase debugging level")

REASON_OPT = cli_option("--reason", default=None, dest="reason",
                        help="The reason for executing the command")

# Added to every subcommand by GenericMain
COMMON_OPTS = [DEBUG_OPT, REASON_OPT]

NOHDR_OPT = cli_option("--no-headers", default=False, action="store_true",
                       dest="no_headers",
                       help="Don't display column headers")

SEP_OPT = cli_option("--separator", default=None, action="store",
                     dest="separator",
                     help="Separator between output fields (defaults to one"
                     " space), also disables column alignment")

UNITS_OPT = cli_option("--units", default=None, dest="units",
                       choices=("h", "m", "g", "t"),
                       help="Specify units for output (one of h/m/g/t)")

FIELDS_OPT = cli_option("-o", "--output", dest="output", action="store",
                        type="string", metavar="FIELDS",
                        help="Comma separated list of output fields; with a"
                        " leading '+', the fields are added to the default"
                        " list")

FORCE_FILTER_OPT = cli_option("-F", "--filter", dest="force_filter",
                              action="store_true", default=False,
                              help="Whether command argument should be"
                              " treated as filter")

FORCE_OPT = cli_option("-f", "--force", dest="force", action="store_true",
                       default=False, help="Force the operation")

CONFIRM_OPT = cli_option("--yes", dest="confirm", action="store_true",
                         default=False, help="Do not require confirmation")

YES_DOIT_OPT = cli_option("--yes-do-it", "--ya-rly", dest="yes_do_it",
                          action="store_true", default=False,
                          help="Really execute the operation")

TAG_SRC_OPT = cli_option("--from", dest="tags_source", default=None,
                         metavar="FILE",
                         help="File with tag names (one per line, '-' for"
                         " stdin)")

SUBMIT_OPT = cli_option("--submit", dest="submit_only", default=False,
                        action="store_true",
                        help="Submit the job and return the job ID, but"
                        " don't wait for the job to finish")

PRINT_JOBID_OPT = cli_option("--print-jobid", dest="print_jobid",
                             default=False, action="store_true",
                             help="Additionally print the job as first line"
                             " on stdout (for scripting).")

# Options of the parameters every opcode has
DRY_RUN_OPT = OpcodeOption(opcodes.OpCode, "dry_run", "--dry-run")

VERBOSE_OPT = cli_option("-v", "--verbose", default=False,
                         action="store_true", help="Increase the verbosity")

# By name; None (not given) leaves the opcodes' own priority
PRIORITY_OPT = OpcodeOption(opcodes.OpCode, "priority", "--priority",
                            type="priority", default=None,
                            metavar="|".join(sorted(constants.OP_PRIO_NAMES)))

INTERVAL_OPT = cli_option("--interval", dest="interval", type="int",
                          default=None,
                          help="Interval between repetitions in seconds")

# The instance opcodes share one shutdown_timeout declaration
SHUTDOWN_TIMEOUT_OPT = OpcodeOption(opcodes.OpInstanceRemove,
                                    "shutdown_timeout", "--shutdown-timeout",
                                    metavar="<SECONDS>")

ALL_OPT = cli_option("--all", dest="show_all", default=False,
                     action="store_true", help="Apply to all objects")

ROMAN_OPT = cli_option("--roman", dest="roman_integers", default=False,
                       action="store_true",
                       help="Use roman numbers for positive integers")

IALLOCATOR_OPT = cli_option("-I", "--iallocator", metavar="<NAME>",
                            dest="iallocator", default=None,
                            help="Select nodes for the instance automatically"
                            " using the <NAME> iallocator plugin")

NODE_PLACEMENT_OPT = cli_option("-n", "--node", dest="node",
                                metavar="<node>[:<secondary-node>]",
                                help="Target node and optional secondary node")

NODE_LIST_OPT = cli_option("-n", "--node", dest="nodes", default=[],
                           action="append", metavar="<node>",
                           help="Use only this node (can be used multiple"
                           " times, if not given defaults to all nodes)")

DST_NODE_OPT = cli_option("-n", "--target-node", dest="dst_node",
                          metavar="<node>", default=None,
                          help="Target node for the instance(s)")

SINGLE_NODE_OPT = cli_option("-n", "--node", dest="node", metavar="<node>",
                             default=None, help="Target node")

COMPRESS_OPT = cli_option("--compress", dest="compress", type="string",
                          default=impexp.IEC_NONE, metavar="<tool>",
                          help="The compression mode to use (none or one of"
                          " the cluster's compression tools)")

IGNORE_CONSIST_OPT = cli_option("--ignore-consistency",
                                dest="ignore_consistency",
                                action="store_true", default=False,
                                help="Ignore the consistency of the disks"
                                " (and a source node that can't shut the"
                                " instance down)")

NONLIVE_OPT = cli_option("--non-live", dest="live", default=True,
                         action="store_false",
                         help="Do a non-live migration (this usually means"
                         " freeze the instance, save the state, transfer"
                         " and only then resume running on the target"
                         " node)")

MIGRATION_MODE_OPT = cli_option("--migration-mode", dest="migration_mode",
                                default=None,
                                choices=sorted(constants.HT_MIGRATION_MODES),
                                help="Override default migration mode"
                                " (choose either live or non-live)")

NORUNTIME_CHGS_OPT = cli_option("--no-runtime-changes",
                                dest="allow_runtime_chgs", default=True,
                                action="store_false",
                                help="Don't allow runtime changes (memory"
                                " ballooning) of the instance(s)")


def MigrationModeFromOpts(opts: Any) -> str | None:
    """The migration mode of ``--non-live``/``--migration-mode`` (None:
    the hypervisor's default); both together are refused."""
    if not opts.live and opts.migration_mode is not None:
        raise errors.OpPrereqError("Only one of the --non-live and"
                                   " --migration-mode options can be passed",
                                   errors.ECODE_INVAL)
    if not opts.live:
        return constants.HT_MIGRATION_NONLIVE
    return opts.migration_mode


TO_GROUP_OPT = cli_option("--to", dest="to", metavar="<group>",
                          default=None, action="append",
                          help="Group to evacuate to (can be given multiple"
                          " times)")

DISK_TEMPLATE_OPT = cli_option("-t", "--disk-template", dest="disk_template",
                               metavar="TEMPL", default=None,
                               help="Disk template (e.g. file, plain,"
                               " diskless)")

OS_OPT = cli_option("-o", "--os-type", dest="os", metavar="<os>",
                    help="What OS to run")

# Parameters of a new instance (gnt-instance add, gnt-backup import);
# -H names the hypervisor too: "kvm:acpi=no", or just "kvm"
BACKEND_OPT = ParamsOption(opcodes.OpInstanceCreate, "beparams", "backend")
HYPERVISOR_OPT = ParamsOption(opcodes.OpInstanceCreate, "hvparams",
                              "hypervisor", dest="hypervisor",
                              action="store", default=None,
                              exclude=hypervisors.HVC_GLOBALS)

OSPARAMS_OPT = cli_option("-O", "--os-parameters", dest="osparams",
                          type="keyval", default={},
                          help="OS parameters")

OSPARAMS_PRIVATE_OPT = cli_option("--os-parameters-private",
                                  dest="osparams_private", type="keyval",
                                  default={},
                                  help="Private OS parameters (not shown by"
                                  " gnt-instance info)")

OSPARAMS_SECRET_OPT = cli_option("--os-parameters-secret",
                                 dest="osparams_secret", type="keyval",
                                 default={},
                                 help="Secret OS parameters (neither logged"
                                 " nor saved; to be given again for every"
                                 " operation)")

DISK_OPT = cli_option("--disk", dest="disks", action="append",
                      type="identkeyval", default=[],
                      help="Disk parameters, e.g. 0:size=10G")

OS_SIZE_OPT = cli_option("-s", "--os-size", dest="sd_size",
                         help="Enforces a single-disk configuration using the"
                         " given disk size, in MiB unless a suffix is used",
                         default=None, type="unit", metavar="<size>")

NET_OPT = cli_option("--net", dest="nics", action="append",
                     type="identkeyval", default=[],
                     help="NIC parameters, e.g. 0:mac=auto,link=br0")

NWSYNC_OPT = cli_option("--no-wait-for-sync", dest="wait_for_sync",
                        default=True, action="store_false",
                        help="Don't wait for sync (DANGEROUS!)")

EARLY_RELEASE_OPT = cli_option("--early-release", dest="early_release",
                               default=False, action="store_true",
                               help="Release the locks on the secondary node"
                               " early")

# Out-of-band commands (gnt-node power|health, gnt-cluster epo)
OOB_TIMEOUT_OPT = OpcodeOption(opcodes.OpOobCommand, "timeout",
                               "--oob-timeout", dest="oob_timeout",
                               metavar="SECONDS")
POWER_DELAY_OPT = OpcodeOption(opcodes.OpOobCommand, "power_delay",
                               "--power-delay", metavar="SECONDS")

# Instance policy changes (gnt-cluster init/modify, gnt-group add/modify)
IPOLICY_BOUNDS_OPT = cli_option(
    "--ipolicy-bounds-specs", dest="ipolicy_bounds_specs", default=None,
    metavar="min:SPEC=N,...//max:SPEC=N,...",
    help="Allowed ranges of instance specs (%s), min and max pairs"
    " separated by //" % ", ".join(sorted(families.ISPEC_PARAMETERS)))
IPOLICY_STD_OPT = cli_option(
    "--ipolicy-std-specs", dest="ipolicy_std_specs", type="keyval",
    default=None, metavar="SPEC=N,...", help="Standard instance specs")
IPOLICY_DT_OPT = cli_option(
    "--ipolicy-disk-templates", dest="ipolicy_disk_templates", type="list",
    default=None, metavar="TEMPLATE,...",
    help="Disk templates instances may use")
IPOLICY_VCPU_RATIO_OPT = cli_option(
    "--ipolicy-vcpu-ratio", dest="ipolicy_vcpu_ratio", type="float",
    default=None, help="Maximum virtual to physical CPU ratio")
IPOLICY_SPINDLE_RATIO_OPT = cli_option(
    "--ipolicy-spindle-ratio", dest="ipolicy_spindle_ratio", type="float",
    default=None,
    help="Maximum instance spindle use per physical spindle")
# Ganeti's INSTANCE_POLICY_OPTS: a node group's policy has no std specs
INSTANCE_POLICY_OPTS = [IPOLICY_BOUNDS_OPT, IPOLICY_DT_OPT,
                        IPOLICY_VCPU_RATIO_OPT, IPOLICY_SPINDLE_RATIO_OPT]

# Instance and network opcodes share one conflicts_check declaration
NOCONFLICTSCHECK_OPT = OpcodeOption(opcodes.OpInstanceCreate,
                                    "conflicts_check", "--no-conflicts-check",
                                    help="Don't check for conflicting IPs")

# The instance and node opcodes share one ignore_ipolicy declaration
IGNORE_IPOLICY_OPT = OpcodeOption(opcodes.OpInstanceCreate, "ignore_ipolicy",
                                  "--ignore-ipolicy")
