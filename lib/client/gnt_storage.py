"""Ganeti ExtStorage administration: diagnose the ExtStorage providers of
the nodes and show their parameters."""

from typing import Any

from ganeti import cli, constants, opcodes, utils
from ganeti.cli_opts import ARGS_NONE, ArgUnknown, PRIORITY_OPT


def _Diagnose(opts: Any, fields: list[str]) -> list[list]:
    return cli.SubmitOpCode(opcodes.OpExtStorageDiagnose(
        output_fields=fields, names=[]), opts=opts)


def ShowExtStorageInfo(opts: Any, args: list[str]) -> int:
    """Per provider (all, or those named): the node groups it is valid
    for and its parameters; named providers not found are listed last."""
    result = _Diagnose(opts, ["name", "nodegroup_status", "parameters"])
    if not result:
        cli.ToStderr("Can't get the ExtStorage providers list")
        return constants.EXIT_FAILURE
    missing = list(args)
    for name, groups, parameters in result:
        if args:
            if name not in missing:
                continue
            missing.remove(name)
        cli.ToStdout("%s:", name)
        valid = utils.NiceSort(group for group, ok in groups.items() if ok)
        if valid:
            cli.ToStdout("  - Valid for nodegroups:")
            for group in valid:
                cli.ToStdout("      %s", group)
            cli.ToStdout("  - Supported parameters:")
            for pname, description in parameters:
                cli.ToStdout("      %s: %s", pname, description)
        else:
            cli.ToStdout("  - Invalid for all nodegroups")
        cli.ToStdout("")
    for name in missing:
        cli.ToStdout("%s: Not Found", name)
        cli.ToStdout("")
    return constants.EXIT_SUCCESS


def _NodeStatus(entries: list) -> tuple[bool, str]:
    """Whether a provider is valid on a node, and Ganeti's description
    (the first directory it was found in counts)."""
    if not entries:
        return False, "ExtStorage provider not found"
    path, valid, why, parameters = entries[0]
    text = "%s (path: %s)" % ("valid" if valid else "invalid - %s" % why,
                              path)
    if parameters:
        text += " [parameters: %s]" % ", ".join(param[0]
                                                for param in parameters)
    else:
        text += " [no parameters]"
    return valid, text


def DiagnoseExtStorage(opts: Any, args: list[str]) -> int:
    """Per provider: its status on each node (valid ones first), then on
    each node group (valid ones first)."""
    result = _Diagnose(opts, ["name", "node_status", "nodegroup_status"])
    if not result:
        cli.ToStderr("Can't get the list of ExtStorage providers")
        return constants.EXIT_FAILURE
    for name, nodes, groups in result:
        statuses = {node: _NodeStatus(entries)
                    for node, entries in nodes.items()}
        cli.ToStdout("Provider: %s", name)
        cli.ToStdout("---")
        for want in (True, False):
            for node in utils.NiceSort(node for node, (valid, _) in
                                       statuses.items() if valid is want):
                cli.ToStdout("  Node: %s, status: %s", node,
                             statuses[node][1])
        cli.ToStdout("  --")
        for want in (True, False):
            for group in utils.NiceSort(group
                                        for group, valid in groups.items()
                                        if bool(valid) is want):
                cli.ToStdout("  For nodegroup: %s --> %s", group,
                             "valid" if want else "invalid")
        cli.ToStdout("")
    return constants.EXIT_SUCCESS


commands = {
    "diagnose": (
        DiagnoseExtStorage, ARGS_NONE, [PRIORITY_OPT],
        "", "Diagnose all ExtStorage providers"),
    "info": (
        ShowExtStorageInfo, [ArgUnknown()], [PRIORITY_OPT],
        "[<provider>...]", "Show info about ExtStorage providers"),
}


def Main() -> int:
    return cli.GenericMain(commands)
