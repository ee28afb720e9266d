"""Ganeti instance import/export: export instances, import them again,
list and remove exports."""

from typing import Any

from ganeti import cli, constants, errors, impexp, opcodes, qlang
from ganeti.cli_opts import (
    ARGS_NONE, ARGS_ONE_INSTANCE, ArgUnknown, BACKEND_OPT, COMPRESS_OPT,
    DISK_OPT, DISK_TEMPLATE_OPT, DRY_RUN_OPT, FIELDS_OPT, FORCE_OPT,
    HYPERVISOR_OPT, IGNORE_IPOLICY_OPT, NET_OPT, NOCONFLICTSCHECK_OPT,
    NODE_LIST_OPT, NODE_PLACEMENT_OPT, NOHDR_OPT, NWSYNC_OPT, OSPARAMS_OPT,
    OSPARAMS_PRIVATE_OPT, OSPARAMS_SECRET_OPT, OpcodeOption, PRINT_JOBID_OPT,
    PRIORITY_OPT, SEP_OPT, SHUTDOWN_TIMEOUT_OPT, SINGLE_NODE_OPT, SUBMIT_OPT,
    UNITS_OPT, VERBOSE_OPT, cli_option)
from ganeti.client import gnt_instance
from ganeti.client.gnt_instance import (
    FILESTORE_DIR_OPT, FILESTORE_DRIVER_OPT, NOIPCHECK_OPT, NONAMECHECK_OPT,
    NONICS_OPT, TAGS_OPT)

_Export = opcodes.OpBackupExport
_Create = opcodes.OpInstanceCreate

# Ganeti's default list of fields for "list"
_LIST_DEF_FIELDS = ["node", "export"]

NOSHUTDOWN_OPT = OpcodeOption(_Export, "shutdown", "--noshutdown",
                              action="store_false",
                              help="Don't shutdown the instance (unsafe)")
REMOVE_INSTANCE_OPT = OpcodeOption(_Export, "remove_instance",
                                   "--remove-instance")
IGNORE_REMOVE_FAILURES_OPT = OpcodeOption(_Export, "ignore_remove_failures",
                                          "--ignore-remove-failures")
TRANSPORT_COMPRESSION_OPT = cli_option(
    "--transport-compression", dest="transport_compression", type="string",
    default=impexp.IEC_NONE, metavar="<tool>",
    help="The compression mode to use during transport (none or one of"
    " the cluster's compression tools)")
SRC_NODE_OPT = OpcodeOption(_Create, "src_node", "--src-node",
                            metavar="<node>")
SRC_DIR_OPT = OpcodeOption(_Create, "src_path", "--src-dir",
                           dest="src_dir", metavar="<dir>")

_JOB_OPTS = [SUBMIT_OPT, PRINT_JOBID_OPT, PRIORITY_OPT, DRY_RUN_OPT]


def PrintExportList(opts: Any, args: list[str]) -> int:
    """List the exports of all nodes (or of the nodes given with -n)."""
    fields = cli.ParseFields(opts.output, _LIST_DEF_FIELDS)
    return cli.GenericList(constants.QR_EXPORT, fields, None, opts.units,
                           opts.separator, not opts.no_headers,
                           verbose=opts.verbose,
                           qfilter=qlang.MakeSimpleFilter("node",
                                                          opts.nodes))


def ListExportFields(opts: Any, args: list[str]) -> int:
    return cli.GenericListFields(constants.QR_EXPORT, args, opts.separator,
                                 not opts.no_headers)


def ExportInstance(opts: Any, args: list[str]) -> int:
    """Export an instance to the node given with -n."""
    if not opts.node:
        raise errors.OpPrereqError("Target node must be specified",
                                   errors.ECODE_INVAL)
    op = opcodes.OpBackupExport(
        instance_name=args[0], target_node=opts.node,
        compress=opts.transport_compression, shutdown=opts.shutdown,
        shutdown_timeout=opts.shutdown_timeout,
        remove_instance=opts.remove_instance,
        ignore_remove_failures=opts.ignore_remove_failures)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def ImportInstance(opts: Any, args: list[str]) -> int:
    """Create an instance from an export (OpInstanceCreate, import mode).

    What is not given on the command line (disks, NICs, hypervisor and
    parameters) comes from the export; the instance is not started.
    """
    if not opts.node:
        raise errors.OpPrereqError("A primary node must be given with -n",
                                   errors.ECODE_INVAL)
    pnode, _, snode = opts.node.partition(":")
    if opts.no_nics and opts.nics:
        raise errors.OpPrereqError("Cannot specify --net and --no-nics",
                                   errors.ECODE_INVAL)
    hypervisor, hvparams = opts.hypervisor or (None, {})
    if hvparams is None or hvparams is False:
        raise errors.OpPrereqError("Invalid hypervisor parameters for %s" %
                                   hypervisor, errors.ECODE_INVAL)
    op = opcodes.OpInstanceCreate(
        instance_name=args[0], mode=constants.INSTANCE_IMPORT,
        disks=gnt_instance.ParseDisks(opts.disks),
        nics=gnt_instance.ParseNics(opts.nics),
        disk_template=opts.disk_template, pnode=pnode, snode=snode or None,
        hypervisor=hypervisor, hvparams=hvparams, beparams=opts.beparams,
        osparams=opts.osparams, osparams_private=opts.osparams_private,
        osparams_secret=opts.osparams_secret, name_check=opts.name_check,
        ip_check=opts.ip_check, file_storage_dir=opts.file_storage_dir,
        file_driver=opts.file_driver, start=False,
        tags=opts.tags.split(",") if opts.tags else [],
        ignore_ipolicy=opts.ignore_ipolicy,
        conflicts_check=opts.conflicts_check,
        wait_for_sync=opts.wait_for_sync, src_node=opts.src_node,
        src_path=opts.src_dir, compress=opts.compress)
    cli.SubmitOrSend(op, opts)
    return constants.EXIT_SUCCESS


def RemoveExport(opts: Any, args: list[str]) -> int:
    """Remove the exports of an instance from every node."""
    cli.SubmitOrSend(opcodes.OpBackupRemove(instance_name=args[0]), opts)
    return constants.EXIT_SUCCESS


_IMPORT_OPTS = [
    DISK_TEMPLATE_OPT, NODE_PLACEMENT_OPT, DISK_OPT, NET_OPT, NONICS_OPT,
    HYPERVISOR_OPT, BACKEND_OPT, OSPARAMS_OPT, OSPARAMS_PRIVATE_OPT,
    OSPARAMS_SECRET_OPT, NONAMECHECK_OPT,
    NOIPCHECK_OPT, FILESTORE_DIR_OPT, FILESTORE_DRIVER_OPT, TAGS_OPT,
    IGNORE_IPOLICY_OPT, SRC_DIR_OPT, SRC_NODE_OPT, COMPRESS_OPT,
    NOCONFLICTSCHECK_OPT, NWSYNC_OPT,
]

commands = {
    "list": (PrintExportList, ARGS_NONE,
             [NODE_LIST_OPT, NOHDR_OPT, SEP_OPT, UNITS_OPT, FIELDS_OPT,
              VERBOSE_OPT],
             "", "Lists instance exports available in the ganeti cluster"),
    "list-fields": (ListExportFields, [ArgUnknown()], [NOHDR_OPT, SEP_OPT],
                    "[fields...]", "Lists all available fields for exports"),
    "export": (ExportInstance, ARGS_ONE_INSTANCE,
               [FORCE_OPT, SINGLE_NODE_OPT, TRANSPORT_COMPRESSION_OPT,
                NOSHUTDOWN_OPT, SHUTDOWN_TIMEOUT_OPT, REMOVE_INSTANCE_OPT,
                IGNORE_REMOVE_FAILURES_OPT] + _JOB_OPTS,
               "-n <node-name> [opts...] <instance-name>",
               "Exports an instance to an image"),
    "import": (ImportInstance, ARGS_ONE_INSTANCE, _IMPORT_OPTS + _JOB_OPTS,
               "[...] -t disk-type -n node[:secondary-node] <instance-name>",
               "Imports an instance from an exported image"),
    "remove": (RemoveExport, [ArgUnknown(min=1, max=1)], _JOB_OPTS,
               "<instance-name>",
               "Remove exports of named instance from the filesystem."),
}


def Main() -> int:
    return cli.GenericMain(commands)
