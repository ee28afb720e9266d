"""Ganeti OS definition administration: list, show, diagnose and modify
the cluster's OS definitions."""

from typing import Any

from ganeti import cli, constants, objects, opcodes, utils
from ganeti.cli_opts import (
    ArgOs, DRY_RUN_OPT, NOHDR_OPT, OSPARAMS_OPT, PRINT_JOBID_OPT,
    PRIORITY_OPT, SUBMIT_OPT, ParamsOption, cli_option)
from ganeti.parameters.hypervisors import HVC_GLOBALS

_YORNO = "yes|no"

# The OS's own hypervisor parameters (of os_hvp), per hypervisor
OS_HVPARAMS_OPT = ParamsOption(opcodes.OpClusterSetParams, "os_hvp",
                               "hypervisor", dest="hvparams",
                               exclude=HVC_GLOBALS)

HID_OS_OPT = cli_option("--hidden", dest="hidden", type="bool",
                        default=None, metavar=_YORNO,
                        help="Sets the hidden flag on the OS")

BLK_OS_OPT = cli_option("--blacklisted", dest="blacklisted", type="bool",
                        default=None, metavar=_YORNO,
                        help="Sets the blacklisted flag on the OS")


def _Diagnose(opts: Any, fields: list[str]) -> list[list]:
    return cli.SubmitOpCode(opcodes.OpOsDiagnose(output_fields=fields,
                                                 names=[]), opts=opts)


def ListOS(opts: Any, args: list[str]) -> int:
    """List the valid, visible OSes (one line per variant)."""
    rows: list[list[str]] = []
    for name, variants in _Diagnose(opts, ["name", "variants"]):
        rows.extend([os_name] for os_name
                    in objects.OS.NamesWithVariants(name, variants))
    headers = None if opts.no_headers else {"name": "Name"}
    for line in cli.GenerateTable(headers, ["name"], None, rows):
        cli.ToStdout("%s", line)
    return constants.EXIT_SUCCESS


def _FormatParams(params: dict, indent: str) -> None:
    if not params:
        cli.ToStdout("%s(none)", indent)
    for key in sorted(params):
        cli.ToStdout("%s%s: %s", indent, key, params[key])


def ShowOSInfo(opts: Any, args: list[str]) -> int:
    """Show everything known about the given (default: all) OSes."""
    fields = ["name", "valid", "variants", "parameters", "api_versions",
              "blacklisted", "hidden", "os_hvp", "osparams", "trusted"]
    wanted = list(args)
    for (name, valid, variants, parameters, api_versions, blacklisted,
         hidden, os_hvp, osparams, trusted) in _Diagnose(opts, fields):
        if args:
            if name not in wanted:
                continue
            wanted.remove(name)
        cli.ToStdout("%s:", name)
        cli.ToStdout("  - valid: %s", valid)
        cli.ToStdout("  - hidden: %s", hidden)
        cli.ToStdout("  - blacklisted: %s", blacklisted)
        if valid:
            cli.ToStdout("  - API versions:")
            for version in sorted(api_versions):
                cli.ToStdout("    - %s", version)
            cli.ToStdout("  - variants:")
            for variant in variants:
                cli.ToStdout("    - %s", variant)
            cli.ToStdout("  - parameters:")
            for pname, pdesc in parameters:
                cli.ToStdout("    - %s: %s", pname, pdesc)
            cli.ToStdout("  - trusted: %s", trusted)
        cli.ToStdout("  - hypervisor parameters:")
        if not os_hvp:
            cli.ToStdout("    (none)")
        for hv_name in sorted(os_hvp):
            cli.ToStdout("    - %s:", hv_name)
            _FormatParams(os_hvp[hv_name], "      ")
        cli.ToStdout("  - OS parameters:")
        _FormatParams(osparams, "    ")
        cli.ToStdout("")
    if wanted:
        cli.ToStderr("OS(es) not found: %s", ", ".join(wanted))
        return constants.EXIT_FAILURE
    return constants.EXIT_SUCCESS


def _OsStatus(status: bool, diagnose: str) -> str:
    return "valid" if status else "invalid - %s" % diagnose


def DiagnoseOS(opts: Any, args: list[str]) -> int:
    """Per-node status of every OS; exit 1 if any is invalid anywhere."""
    fields = ["name", "valid", "variants", "node_status", "hidden",
              "blacklisted"]
    has_bad = False
    for (os_name, _, variants, node_data, hidden,
         blacklisted) in _Diagnose(opts, fields):
        nodes_valid: dict[str, str] = {}
        nodes_bad: dict[str, str] = {}
        nodes_hidden: dict[str, list[str]] = {}
        for node_name, entries in node_data.items():
            nodes_hidden[node_name] = []
            if not entries:
                nodes_bad[node_name] = "OS not found"
                continue
            path, status, diagnose, node_variants, _, api, _ = entries[0]
            msg = "%s (path: %s)" % (_OsStatus(status, diagnose), path)
            if api:
                msg += " [API versions: %s]" % ", ".join(map(str, api))
            if node_variants:
                msg += " [variants: %s]" % ", ".join(node_variants)
            if status:
                nodes_valid[node_name] = msg
            else:
                nodes_bad[node_name] = msg
            for entry in entries[1:]:
                nodes_hidden[node_name].append(
                    "    [hidden] path: %s, status: %s" %
                    (entry[0], _OsStatus(entry[1], entry[2])))
        if nodes_valid and not nodes_bad:
            status_text = "valid"
        else:
            status_text = "invalid" if not nodes_valid else "partial valid"
            has_bad = True
        header = "OS: %s [global status: %s]" % (os_name, status_text)
        if hidden:
            header += " [hidden]"
        if blacklisted:
            header += " [blacklisted]"
        cli.ToStdout("%s", header)
        if variants:
            cli.ToStdout("  Variants: [%s]", ", ".join(variants))
        for msg_map in (nodes_valid, nodes_bad):
            for node_name in sorted(msg_map, key=utils.NiceSortKey):
                cli.ToStdout("  Node: %s, status: %s", node_name,
                             msg_map[node_name])
                for line in nodes_hidden[node_name]:
                    cli.ToStdout("%s", line)
        cli.ToStdout("")
    return constants.EXIT_FAILURE if has_bad else constants.EXIT_SUCCESS


def ModifyOS(opts: Any, args: list[str]) -> int:
    """Change an OS's cluster-level parameters and flags."""
    os_name = args[0]
    os_hvp = {os_name: dict(opts.hvparams)} if opts.hvparams else None
    osparams = {os_name: opts.osparams} if opts.osparams else None
    hidden = blacklisted = None
    if opts.hidden is not None:
        hidden = [[constants.DDM_ADD if opts.hidden
                   else constants.DDM_REMOVE, os_name]]
    if opts.blacklisted is not None:
        blacklisted = [[constants.DDM_ADD if opts.blacklisted
                        else constants.DDM_REMOVE, os_name]]
    if not (os_hvp or osparams or hidden or blacklisted):
        cli.ToStderr("At least one of OS parameters or hypervisor parameters"
                     " must be passed")
        return constants.EXIT_FAILURE
    op = opcodes.OpClusterSetParams(os_hvp=os_hvp, osparams=osparams,
                                    hidden_os=hidden,
                                    blacklisted_os=blacklisted)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


commands = {
    "list": (ListOS, [], [NOHDR_OPT, PRIORITY_OPT], "",
             "Lists all valid operating systems on the cluster"),
    "diagnose": (DiagnoseOS, [], [PRIORITY_OPT], "",
                 "Diagnose all operating systems"),
    "info": (ShowOSInfo, [ArgOs()], [PRIORITY_OPT], "[<os>...]",
             "Show detailed information about operating systems"),
    "modify": (ModifyOS, [ArgOs(min=1, max=1)],
               [OS_HVPARAMS_OPT, OSPARAMS_OPT, DRY_RUN_OPT, PRIORITY_OPT,
                HID_OS_OPT, BLK_OS_OPT, SUBMIT_OPT, PRINT_JOBID_OPT],
               "<os>", "Modify the OS parameters"),
}

aliases = {
    "show": "info",
}


def Main() -> int:
    return cli.GenericMain(commands, aliases=aliases)
