"""Ganeti job filter rule administration: the job queue's filter rules
(design-optables).

The commands talk to the master daemon directly (QueryFilters,
ReplaceFilter, DeleteFilter) instead of submitting jobs, so that rules can
be changed while the queue is blocked.
"""

import time
from optparse import Option, OptionValueError
from typing import Any

from ganeti import cli, constants, objects, serializer
from ganeti.cli_opts import (
    ARGS_MANY_FILTERS, ARGS_NONE, ARGS_ONE_FILTER, ArgUnknown, CliOption,
    FIELDS_OPT, NOHDR_OPT, SEP_OPT, VERBOSE_OPT)

# Also the fields "info" shows, in this order
_LIST_DEF_FIELDS = ["uuid", "watermark", "priority", "predicates", "action",
                    "reason_trail"]


def _CheckJson(option: Option, opt: str, value: str) -> Any:
    try:
        return serializer.LoadJson(value)
    except ValueError as err:
        raise OptionValueError("option %s: invalid JSON %r: %s" %
                               (opt, value, err)) from err


def _CheckFilterAction(option: Option, opt: str, value: str) -> Any:
    """``ACCEPT``, ``PAUSE``, ``REJECT``, ``CONTINUE`` or ``RATE_LIMIT n``."""
    words = value.split()
    if len(words) == 1 and words[0] in objects.FILTER_SIMPLE_ACTIONS:
        return words[0]
    if len(words) == 2 and words[0] == objects.FILTER_RATE_LIMIT and \
            words[1].isdigit() and int(words[1]) > 0:
        return [objects.FILTER_RATE_LIMIT, int(words[1])]
    raise OptionValueError(
        "option %s: invalid action %r, must be one of %s or \"%s n\" with n"
        " a positive integer" %
        (opt, value, ", ".join(sorted(objects.FILTER_SIMPLE_ACTIONS)),
         objects.FILTER_RATE_LIMIT))


class _FilterOption(CliOption):
    """Options taking JSON or a filter action."""

    TYPES = CliOption.TYPES + ("json", "filteraction")
    TYPE_CHECKER = dict(CliOption.TYPE_CHECKER, json=_CheckJson,
                        filteraction=_CheckFilterAction)


FILTER_PRIORITY_OPT = _FilterOption(
    "--priority", dest="filter_priority", default=0, type="int",
    metavar="PRIORITY",
    help="Priority for filter processing (a non-negative integer; rules with"
    " lower numbers are evaluated first)")
FILTER_PREDICATES_OPT = _FilterOption(
    "--predicates", dest="filter_predicates", default=[], type="json",
    metavar="PREDICATES",
    help="Predicate list for filter processing, as JSON, e.g."
    " '[[\"jobid\", [\">\", \"id\", \"watermark\"]]]'; predicates are"
    " \"jobid\", \"opcode\" and \"reason\" with a query filter each")
FILTER_ACTION_OPT = _FilterOption(
    "--action", dest="filter_action", default=objects.FILTER_CONTINUE,
    type="filteraction", metavar="ACTION",
    help="Action for filter processing: ACCEPT, PAUSE, REJECT, CONTINUE"
    " (the default) or \"RATE_LIMIT n\"")

_RULE_OPTS = [FILTER_ACTION_OPT, FILTER_PREDICATES_OPT, FILTER_PRIORITY_OPT]


def _Json(value: Any) -> str:
    return serializer.DumpJson(value)


def _FormatAction(action: Any) -> str:
    """An action as --action takes it (``RATE_LIMIT 10``)."""
    if isinstance(action, list):
        return " ".join(str(part) for part in action)
    return str(action)


_LIST_FORMAT = {
    "predicates": (_Json, False),
    "action": (_FormatAction, False),
    "reason_trail": (_Json, False),
}


def _ReasonTrail(opts: Any) -> list:
    """The rule's initial reason trail: the user's --reason, if any."""
    if not opts.reason:
        return []
    return [[constants.OPCODE_REASON_SRC_USER, opts.reason, time.time_ns()]]


def _ReplaceFilter(opts: Any, uuid: str | None) -> int:
    result = cli.GetClient().ReplaceFilter(
        uuid, opts.filter_priority, opts.filter_predicates,
        opts.filter_action, _ReasonTrail(opts))
    cli.ToStdout("%s", result)
    return constants.EXIT_SUCCESS


def AddFilter(opts: Any, args: list[str]) -> int:
    """Add a filter rule and print its UUID."""
    return _ReplaceFilter(opts, None)


def ReplaceFilter(opts: Any, args: list[str]) -> int:
    """Replace a rule as a whole (unset options take their defaults).

    A rule with an unknown UUID is created under that UUID.
    """
    return _ReplaceFilter(opts, args[0])


def DeleteFilter(opts: Any, args: list[str]) -> int:
    """Remove a filter rule."""
    cli.GetClient().DeleteFilter(args[0])
    return constants.EXIT_SUCCESS


def ListFilters(opts: Any, args: list[str]) -> int:
    """List filter rules (all or the given ones) in evaluation order."""
    fields = cli.ParseFields(opts.output, _LIST_DEF_FIELDS)
    return cli.GenericList(constants.QR_FILTER, fields, args, None,
                           opts.separator, not opts.no_headers,
                           format_override=_LIST_FORMAT,
                           verbose=opts.verbose, namefield="uuid")


def ListFilterFields(opts: Any, args: list[str]) -> int:
    """List the fields of filter rules."""
    return cli.GenericListFields(constants.QR_FILTER, args, opts.separator,
                                 not opts.no_headers)


def ShowFilter(opts: Any, args: list[str]) -> int:
    """Print the rules (all or the given ones), one block each."""
    rows = cli.GetClient().QueryFilters(args or None, _LIST_DEF_FIELDS)
    for uuid, watermark, priority, predicates, action, trail in rows:
        cli.ToStdout("UUID: %s", uuid)
        cli.ToStdout("  Watermark: %s", watermark)
        cli.ToStdout("  Priority: %s", priority)
        cli.ToStdout("  Predicates:")
        for predicate in predicates:
            cli.ToStdout("    - %s", _Json(predicate))
        cli.ToStdout("  Action: %s", _FormatAction(action))
        cli.ToStdout("  Reason trail:")
        for entry in trail:
            cli.ToStdout("    - %s", _Json(entry))
    return constants.EXIT_SUCCESS


commands = {
    "add": (
        AddFilter, ARGS_NONE, _RULE_OPTS,
        "[--priority=<priority>] [--predicates=<predicates>]"
        " [--action=<action>]",
        "Adds a new filter rule and prints its UUID"),
    "list": (
        ListFilters, ARGS_MANY_FILTERS,
        [NOHDR_OPT, SEP_OPT, FIELDS_OPT, VERBOSE_OPT],
        "[<filter-uuid>...]",
        "Lists the job filter rules. The available fields can be shown"
        " using the \"list-fields\" command (see the man page for details)."
        " The default field list is (in order): %s." %
        ", ".join(_LIST_DEF_FIELDS)),
    "list-fields": (
        ListFilterFields, [ArgUnknown()], [NOHDR_OPT, SEP_OPT],
        "[<fields>...]", "Lists all available fields for filters"),
    "info": (
        ShowFilter, ARGS_MANY_FILTERS, [], "[<filter-uuid>...]",
        "Shows information about the filter(s)"),
    "replace": (
        ReplaceFilter, ARGS_ONE_FILTER, _RULE_OPTS,
        "[--priority=<priority>] [--predicates=<predicates>]"
        " [--action=<action>] <filter-uuid>",
        "Replaces a filter as a whole (options not given take their"
        " defaults); creates it if the UUID is not known"),
    "delete": (
        DeleteFilter, ARGS_ONE_FILTER, [], "<filter-uuid>",
        "Removes a filter"),
}


def Main() -> int:
    return cli.GenericMain(commands)
