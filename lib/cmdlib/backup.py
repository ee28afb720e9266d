"""LUs of instance exports (gnt-backup), and the import half of instance
creation.

An export lives on one node, in ``pathutils.EXPORT_DIR/<instance>``:
Ganeti's config.ini describing the instance and one dump per disk, made by
the instance's OS export script on its primary node (compressed with
gzip) and sent over by the import/export transfers (ganeti.impexp). It is
built in a hidden directory and renamed into place once complete, so an
interrupted export is never listed. Importing creates a new instance
(OpInstanceCreate in import mode) and feeds each dump to the OS import
script on the new primary node, over the same transfers.
"""

import configparser
import logging
import os
from typing import Any, Callable

from ganeti import constants, errors, impexp, locking, objects, pathutils
from ganeti import query, utils, vcluster
from ganeti.cmdlib import operating_system
from ganeti.cmdlib.base import (ExpandInstanceUuidAndName,
                                ExpandNodeUuidAndName, LogicalUnit,
                                NoHooksLU)
from ganeti.cmdlib.instance_utils import (
    AssembledForOS, AssembleInstanceDisks, CheckCompressionTool,
    CheckNodeNotDrained, CheckNodeOnline, InstanceLU, RemoveInstance,
    ShutdownInstanceDisks, StartInstance)
from ganeti.impexp import master as impexp_master
from ganeti.parameters.base import OverrideParams
from ganeti.queryfields.exports import EXPORT_FIELDS

# How the OS export script's output is stored in the dumps
_DUMP_COMPRESSION = impexp.IEC_GZIP
# Ganeti writes missing values (a NIC without IP, ...) this way
_INI_NONE = "None"


def _ExportDirVPath(name: str) -> str:
    """The (virtual) directory of the export ``name`` on any node."""
    return os.path.join(vcluster.MakeVirtualPath(pathutils.EXPORT_DIR),
                        name)


# Listing ---------------------------------------------------------------------

def _SelectNodes(cfg: Any, names: list[str] | None) -> list[str]:
    """UUIDs of the named nodes (refusing unknown ones), or of all nodes."""
    if not names:
        nodes = sorted(cfg.GetAllNodesInfo().values(),
                       key=lambda node: utils.NiceSortKey(node.name))
        return [node.uuid for node in nodes]
    return list(dict.fromkeys(ExpandNodeUuidAndName(cfg, None, name)[0]
                              for name in names))


def _ListExports(lu: LogicalUnit, node_uuids: list[str]) -> list[tuple]:
    """``(node name, export name)`` rows, in node order.

    A node that gave no answer has one row, whose export is FS_OFFLINE
    (offline node) or FS_NODATA.
    """
    results = lu.rpc.call_export_list(node_uuids) if node_uuids else {}
    rows: list[tuple] = []
    for uuid in node_uuids:
        result = results[uuid]
        name = lu.cfg.GetNodeInfo(uuid).name
        if result.offline:
            rows.append((name, query.FS_OFFLINE))
        elif result.fail_msg:
            logging.warning("Can't list the exports of node %s: %s", name,
                            result.fail_msg)
            rows.append((name, query.FS_NODATA))
        else:
            rows.extend((name, export) for export in result.payload)
    return rows


class ExportQuery:
    """The ``export`` resource (served by LUQuery)."""

    FIELDS = EXPORT_FIELDS

    def __init__(self, lu: NoHooksLU):
        self.lu = lu

    def Query(self, fields: list[str], qfilter: Any) -> dict:
        names = query.RequestedNames(qfilter, namefield="node")
        rows = _ListExports(self.lu, _SelectNodes(self.lu.cfg, names))
        return query.Query(self.FIELDS, rows, fields,
                           qfilter if names is None else None,
                           hostname_fields=("node",))


class LUBackupQuery(NoHooksLU):
    """The exports of the nodes: node name -> export names, or False for
    a node that did not answer."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        if self.op.use_locking:
            raise errors.OpPrereqError("Queries with locking are not"
                                       " supported", errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> dict:
        result: dict[str, Any] = {}
        for node, export in _ListExports(
                self, _SelectNodes(self.cfg, self.op.nodes)):
            if isinstance(export, query.FieldStatus):
                result[node] = False
            else:
                result.setdefault(node, []).append(export)
        return result


# Export ----------------------------------------------------------------------

def _CheckLocalMode(mode: str) -> None:
    if mode != constants.EXPORT_MODE_LOCAL:
        raise errors.OpPrereqError("Export mode '%s' is not supported (only"
                                   " '%s' is)" %
                                   (mode, constants.EXPORT_MODE_LOCAL),
                                   errors.ECODE_INVAL)


class LUBackupPrepare(NoHooksLU):
    """Prepare an export: a local one needs nothing beyond the checks."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        _CheckLocalMode(self.op.mode)

    def ExpandNames(self) -> None:
        self.op.instance_uuid, self.op.instance_name = \
            ExpandInstanceUuidAndName(self.cfg, self.op.instance_uuid,
                                      self.op.instance_name)
        self.needed_locks = {locking.LEVEL_INSTANCE: [self.op.instance_uuid]}

    def CheckPrereq(self) -> None:
        instance = self.cfg.GetInstanceInfo(self.op.instance_uuid)
        CheckNodeOnline(self, instance.primary_node)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        return None


def _ExportInstanceDict(cluster: objects.Cluster,
                        instance: objects.Instance) -> dict:
    """The instance as finalize_export describes it: filled parameters,
    the public and private OS parameters apart."""
    result = cluster.InstanceRpcDict(instance)
    filled = cluster.SimpleFillOS(instance.os, instance.osparams,
                                  instance.osparams_private)
    private = set(instance.osparams_private or {})
    defaults = cluster.osparams_private_cluster or {}
    for os_name in (objects.OS.GetName(instance.os), instance.os):
        private.update(defaults.get(os_name) or {})
    result["osparams"] = {key: value for key, value in filled.items()
                          if key not in private}
    result["osparams_private"] = {key: value for key, value
                                  in filled.items() if key in private}
    return result


class LUBackupExport(InstanceLU):
    """Export an instance to a node: its disks' dumps and its description.

    All nodes are locked: the instance's earlier exports, wherever they
    are, are removed once the new one is complete.
    """

    HPATH = "instance-export"

    def CheckArguments(self) -> None:
        _CheckLocalMode(self.op.mode)
        CheckCompressionTool(self, self.op.compress)

    def ExpandNames(self) -> None:
        super().ExpandNames()
        self.op.target_node_uuid, self.op.target_node = \
            ExpandNodeUuidAndName(self.cfg, self.op.target_node_uuid,
                                  self.op.target_node)
        self.needed_locks[locking.LEVEL_NODE] = locking.ALL_SET

    def DeclareLocks(self, level: int) -> None:
        if level == locking.LEVEL_NODE_RES:
            super().DeclareLocks(level)

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {
            "EXPORT_MODE": self.op.mode,
            "EXPORT_NODE": self.op.target_node,
            "EXPORT_DO_SHUTDOWN": self.op.shutdown,
            "SHUTDOWN_TIMEOUT": self.op.shutdown_timeout,
            "REMOVE_INSTANCE": str(bool(self.op.remove_instance)),
        }

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        pre, post = super().BuildHooksNodes()
        target = self.op.target_node_uuid
        if target not in pre:
            pre, post = pre + [target], post + [target]
        return pre, post

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        op = self.op
        instance = self.instance
        CheckNodeOnline(self, instance.primary_node)
        if op.remove_instance and not op.shutdown and \
                instance.admin_state == objects.ADMINST_UP:
            raise errors.OpPrereqError("Can not remove instance without"
                                       " shutting it down before",
                                       errors.ECODE_STATE)
        self.dst_node = self.cfg.GetNodeInfo(op.target_node_uuid)
        CheckNodeOnline(self, self.dst_node.uuid)
        CheckNodeNotDrained(self, self.dst_node.uuid)
        self.disks = self.cfg.GetInstanceDisks(instance.uuid)
        if not self.disks:
            raise errors.OpPrereqError("Instance '%s' has no disks, there"
                                       " is nothing to export" %
                                       instance.name, errors.ECODE_INVAL)

    def _Transfers(self, block_devices: list[list],
                   compression: str) -> list[impexp_master.DiskTransfer]:
        """One transfer per disk, from the OS export script (or, for an
        instance without OS, the disk itself) into the unfinished export."""
        instance = self.instance
        tmpdir = vcluster.MakeVirtualPath(
            pathutils.ExportTempDir(instance.name))
        os_instance = None
        if instance.os:
            os_instance = operating_system.InstanceOsRpcDict(
                self.cfg.GetClusterInfo(), instance,
                [dict(disk_dict, dev_path=path)
                 for disk_dict, path in block_devices])
        transfers = []
        for idx, (disk_dict, _) in enumerate(block_devices):
            if os_instance is None:
                source = (impexp.IEIO_RAW_DISK, disk_dict)
            else:
                result = self.rpc.call_os_transfer_command(
                    instance.primary_node, os_instance, impexp.IEM_EXPORT,
                    idx, compression, self.op.debug_level or 0)
                result.Raise("Cannot export disk/%d of instance %s" %
                             (idx, instance.name))
                source = (impexp.IEIO_COMMAND, result.payload)
            transfers.append(impexp_master.DiskTransfer(
                "disk/%d" % idx, source[0], source[1], impexp.IEIO_FILE,
                os.path.join(tmpdir, disk_dict["uuid"])))
        return transfers

    def _Discard(self) -> None:
        """Remove the unfinished export from the target node."""
        result = self.rpc.call_export_discard(self.dst_node.uuid,
                                              self.instance.name)
        if result.fail_msg:
            self.LogWarning("Could not remove the unfinished export of %s"
                            " on node %s: %s", self.instance.name,
                            self.dst_node.name, result.fail_msg)

    def _TransferDisks(self, feedback_fn: Callable[[str], None],
                       keep_disks: bool, compression: str) -> list[bool]:
        """Send each disk's dump to the unfinished export; whether each
        arrived intact. ``keep_disks`` leaves the disks assembled (for an
        instance that keeps running)."""
        instance = self.instance
        target = self.dst_node
        block_devices = AssembleInstanceDisks(self, instance, self.disks)
        try:
            feedback_fn("Exporting %d disk(s) of %s to node %s" %
                        (len(self.disks), instance.name, target.name))
            results = impexp_master.TransferInstanceData(
                self.rpc, feedback_fn, instance.primary_node, target.uuid,
                target.secondary_ip or target.primary_ip, self.op.compress,
                instance.name, self._Transfers(block_devices, compression))
        finally:
            if not keep_disks:
                ShutdownInstanceDisks(self, instance, self.disks)
        for result in results:
            if not result.success:
                self.LogWarning("Export of %s of instance %s failed: %s",
                                result.name, instance.name, result.error)
        return [result.success for result in results]

    def _ExportDisks(self, feedback_fn: Callable[[str], None],
                     keep_disks: bool) -> tuple[bool, list[bool]]:
        """Transfer the disks and finalize the export on the target node;
        an export that fails in any way is discarded there."""
        instance = self.instance
        target = self.dst_node
        compression = (_DUMP_COMPRESSION if instance.os
                       else impexp.IEC_NONE)
        self.rpc.call_export_discard(target.uuid, instance.name).Raise(
            "Cannot remove an unfinished export of %s on node %s" %
            (instance.name, target.name))
        fin_ok = False
        try:
            dresults = self._TransferDisks(feedback_fn, keep_disks,
                                           compression)
            if all(dresults):
                feedback_fn("Finalizing export on %s" % target.name)
                result = self.rpc.call_finalize_export(
                    target.uuid,
                    _ExportInstanceDict(self.cfg.GetClusterInfo(), instance),
                    [disk.ToDict() for disk in self.disks], compression)
                fin_ok = not result.fail_msg
                if result.fail_msg:
                    self.LogWarning("Could not finalize export for instance"
                                    " %s on node %s: %s", instance.name,
                                    target.name, result.fail_msg)
        finally:
            if not fin_ok:
                self._Discard()
        return fin_ok, dresults

    def _CleanupExports(self, feedback_fn: Callable[[str], None]) -> None:
        """Remove the instance's exports from every other node."""
        name = self.instance.name
        nodes = [uuid for uuid in self.cfg.GetNodeList()
                 if uuid != self.dst_node.uuid]
        if not nodes:
            return
        feedback_fn("Removing old exports for instance %s" % name)
        for uuid, result in self.rpc.call_export_list(nodes).items():
            if result.fail_msg or name not in result.payload:
                continue
            msg = self.rpc.call_export_remove(uuid, name).fail_msg
            if msg:
                self.LogWarning("Could not remove older export for instance"
                                " %s on node %s: %s", name, result.node, msg)

    def Exec(self, feedback_fn: Callable[[str], None]
             ) -> tuple[bool, list[bool]]:
        instance = self.instance
        op = self.op
        was_up = instance.admin_state == objects.ADMINST_UP
        if op.shutdown:
            feedback_fn("Shutting down instance %s" % instance.name)
            result = self.rpc.call_instance_shutdown(
                instance.primary_node,
                self.cfg.GetClusterInfo().InstanceRpcDict(instance),
                op.shutdown_timeout)
            result.Raise("Could not shutdown instance %s on node %s" %
                         (instance.name, self.pnode.name))
        keep_running = was_up and not op.shutdown
        fin_ok = False
        dresults: list[bool] = []
        try:
            fin_ok, dresults = self._ExportDisks(
                feedback_fn, keep_running or instance.disks_active)
        finally:
            removing = fin_ok and all(dresults) and op.remove_instance
            if was_up and op.shutdown and not removing:
                feedback_fn("Starting instance %s" % instance.name)
                StartInstance(self, instance)
        if not (fin_ok and all(dresults)):
            failures = []
            if all(dresults):
                failures.append("export finalization")
            else:
                failures.append("disk export: disk(s) %s" % ", ".join(
                    str(idx) for idx, ok in enumerate(dresults) if not ok))
            raise errors.OpExecError("Export failed, errors in %s" %
                                     ", ".join(failures))
        if op.remove_instance:
            feedback_fn("Removing instance %s" % instance.name)
            RemoveInstance(self, instance, op.ignore_remove_failures)
        self._CleanupExports(feedback_fn)
        return fin_ok, dresults


class LUBackupRemove(NoHooksLU):
    """Remove an instance's exports from every node.

    Also for an instance removed since: its exports are found by the
    (full) name they were made under.
    """

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {locking.LEVEL_NODE: locking.ALL_SET}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        uuid = self.cfg.ExpandInstanceName(self.op.instance_name)
        name = (self.op.instance_name if uuid is None
                else self.cfg.GetInstanceInfo(uuid).name)
        found = False
        results = self.rpc.call_export_list(self.cfg.GetNodeList())
        for node_uuid, result in results.items():
            if result.fail_msg:
                self.LogWarning("Failed to query node %s (continuing): %s",
                                result.node, result.fail_msg)
                continue
            if name not in result.payload:
                continue
            found = True
            msg = self.rpc.call_export_remove(node_uuid, name).fail_msg
            if msg:
                self.LogWarning("Could not remove export for instance %s on"
                                " node %s: %s", name, result.node, msg)
        if uuid is None and not found:
            feedback_fn("Export not found. If trying to remove an export"
                        " belonging to a deleted instance please use its"
                        " Fully Qualified Domain Name.")


# Import ----------------------------------------------------------------------

def _IniValue(value: str | None) -> str | None:
    """A value as Ganeti writes it to config.ini; "None" means none."""
    return None if value in (None, _INI_NONE) else value


class ImportSource:
    """The export an instance is created from (OpInstanceCreate in import
    mode).

    Reading it completes the opcode: the OS always comes from the export,
    and so do the disks, NICs, hypervisor, parameters and tags the opcode
    does not give. The NICs keep their MAC addresses only when the
    instance keeps its name.
    """

    def __init__(self, lu: LogicalUnit):
        op = lu.op
        CheckCompressionTool(lu, op.compress)
        self.node_uuid, self.path = self._Locate(lu)
        self.node_name = lu.cfg.GetNodeInfo(self.node_uuid).name
        op.src_node_uuid, op.src_node = self.node_uuid, self.node_name
        op.src_path = self.path
        CheckNodeOnline(lu, self.node_uuid)
        result = lu.rpc.call_export_info(self.node_uuid, self.path)
        result.Raise("No export or invalid export found in dir %s" %
                     self.path, prereq=True, ecode=errors.ECODE_INVAL)
        self.info = configparser.RawConfigParser()
        try:
            self.info.read_string(result.payload)
        except configparser.Error as err:
            raise errors.OpPrereqError("Invalid export in %s on node %s: %s"
                                       % (self.path, op.src_node, err),
                                       errors.ECODE_INVAL) from None
        self._CheckVersion()
        self.old_name = self._Get(constants.INISECT_INS, "name")
        self.compression = self._Get(constants.INISECT_EXP, "compression",
                                     impexp.IEC_NONE)
        if self.compression not in impexp.IEC_ALL:
            raise errors.OpPrereqError(
                "Unsupported compression '%s' of the export in %s" %
                (self.compression, self.path), errors.ECODE_INVAL)
        self.dumps: list[str] = []
        while self.info.has_option(constants.INISECT_INS,
                                   "disk%d_dump" % len(self.dumps)):
            self.dumps.append(self.info.get(constants.INISECT_INS,
                                            "disk%d_dump" % len(self.dumps)))
        self._ApplyParams(lu)

    @staticmethod
    def _Locate(lu: LogicalUnit) -> tuple[str, str]:
        """The source node and (virtual) export path; without a source
        node the export is searched on every node."""
        op = lu.op
        path = op.src_path or op.instance_name
        if op.src_node is not None:
            node_uuid, _ = ExpandNodeUuidAndName(lu.cfg, op.src_node_uuid,
                                                 op.src_node)
            return node_uuid, (path if os.path.isabs(path)
                               else _ExportDirVPath(path))
        if os.path.isabs(path):
            raise errors.OpPrereqError("Importing an instance from a path"
                                       " requires a source node option",
                                       errors.ECODE_INVAL)
        nodes = _SelectNodes(lu.cfg, None)
        for node, export in _ListExports(lu, nodes):
            if export == path:
                return (lu.cfg.GetNodeInfoByName(node).uuid,
                        _ExportDirVPath(path))
        raise errors.OpPrereqError("No export found for relative path %s" %
                                   path, errors.ECODE_INVAL)

    def _Get(self, section: str, option: str,
             default: str | None = None) -> str | None:
        return self.info.get(section, option, fallback=default)

    def _CheckVersion(self) -> None:
        version = self._Get(constants.INISECT_EXP, "version")
        try:
            valid = (version is not None and
                     int(version) == constants.EXPORT_VERSION)
        except ValueError:
            valid = False
        if not valid:
            raise errors.OpPrereqError("Wrong export version %s (wanted %d)" %
                                       (version, constants.EXPORT_VERSION),
                                       errors.ECODE_ENVIRON)

    def _Section(self, section: str) -> dict[str, str]:
        """The parameters of a section; one written as "None" (no value)
        is left out, so that it keeps its default."""
        if not self.info.has_section(section):
            return {}
        return {key: value for key, value in self.info.items(section)
                if _IniValue(value) is not None}

    def _ExportedDisks(self) -> list[dict]:
        ins = constants.INISECT_INS
        disks: list[dict] = []
        while self.info.has_option(ins, "disk%d_size" % len(disks)):
            idx = len(disks)
            try:
                size = self.info.getint(ins, "disk%d_size" % idx)
            except ValueError:
                raise errors.OpPrereqError(
                    "Invalid size of disk %d in the export in %s" %
                    (idx, self.path), errors.ECODE_INVAL) from None
            disks.append({"size": size,
                          "name": _IniValue(self._Get(ins, "disk%d_name" %
                                                      idx))})
        return disks

    def _ExportedNics(self, keep_macs: bool) -> list[dict]:
        ins = constants.INISECT_INS
        nics: list[dict] = []
        while self.info.has_option(ins, "nic%d_mac" % len(nics)):
            prefix = "nic%d_" % len(nics)
            keys = ["ip", "name"] + sorted(objects.NIC_PARAMETERS)
            if keep_macs:
                keys.append("mac")
            nic = {key: _IniValue(self._Get(ins, prefix + key))
                   for key in keys}
            nics.append({key: value for key, value in nic.items()
                         if value is not None})
        return nics

    def _CheckDiskSizes(self, disks: list[dict]) -> None:
        """Given disks must hold the exported ones."""
        for idx, (disk, exported) in enumerate(zip(disks,
                                                   self._ExportedDisks())):
            size = disk.get("size")
            if isinstance(size, int) and size < exported["size"]:
                raise errors.OpPrereqError(
                    "Disk %d (%d MiB) is smaller than the exported disk"
                    " (%d MiB)" % (idx, size, exported["size"]),
                    errors.ECODE_INVAL)

    def _ApplyParams(self, lu: LogicalUnit) -> None:
        op = lu.op
        exp_os = self._Get(constants.INISECT_EXP, "os")
        op.os_type = exp_os or None
        if not exp_os:
            op.no_install = True
        if op.disks:
            self._CheckDiskSizes(op.disks)
        else:
            op.disks = self._ExportedDisks()
        if not op.nics:
            op.nics = self._ExportedNics(op.instance_name == self.old_name)
        tags = self._Get(constants.INISECT_INS, "tags")
        if not op.tags and tags:
            op.tags = tags.split()
        exp_hv = self._Get(constants.INISECT_INS, "hypervisor")
        if op.hypervisor is None:
            op.hypervisor = exp_hv
        if op.hypervisor == exp_hv:
            op.hvparams = dict(self._Section(constants.INISECT_HYP),
                               **op.hvparams)
        op.beparams = OverrideParams(objects.BE_PARAMETERS,
                                     self._Section(constants.INISECT_BEP),
                                     op.beparams)
        op.osparams = dict(self._Section(constants.INISECT_OSP),
                           **op.osparams)
        op.osparams_private = dict(
            self._Section(constants.INISECT_OSP_PRIVATE),
            **(op.osparams_private or {}))

    def HookEnv(self) -> dict[str, str]:
        """Ganeti's import variables of the instance-add hooks."""
        return {
            "SRC_NODE": self.node_name,
            "SRC_PATH": self.path,
            "SRC_IMAGES": " ".join(os.path.join(self.path, dump)
                                   for dump in self.dumps),
        }

    def ImportDisks(self, lu: LogicalUnit, instance: objects.Instance,
                    disks: list[objects.Disk],
                    feedback_fn: Callable[[str], None]) -> None:
        """Write the dumps to the new instance's disks (the OS import
        script, or the disks themselves for an instance without OS); a
        disk beyond the exported ones stays empty.

        An instance imported under a new name gets the OS rename script
        run afterwards, as in Ganeti; its failure is only a warning.
        """
        count = min(len(disks), len(self.dumps))
        if not count:
            return
        feedback_fn("* running the instance OS import scripts...")
        images = [os.path.join(self.path, dump)
                  for dump in self.dumps[:count]]
        if not instance.os:
            if self.compression != impexp.IEC_NONE:
                raise errors.OpExecError(
                    "The export in %s holds %s-compressed OS dumps, which"
                    " need an OS import script" %
                    (self.path, self.compression))
            self._Transfer(lu, instance, feedback_fn, [
                impexp_master.DiskTransfer(
                    "disk/%d" % idx, impexp.IEIO_FILE, image,
                    impexp.IEIO_RAW_DISK, disks[idx].ToDict())
                for idx, image in enumerate(images)])
            return
        debug = lu.op.debug_level or 0
        with AssembledForOS(lu, instance, disks,
                            lu.op.osparams_secret) as os_instance:
            transfers = []
            for idx, image in enumerate(images):
                result = lu.rpc.call_os_transfer_command(
                    instance.primary_node, os_instance, impexp.IEM_IMPORT,
                    idx, self.compression, debug)
                result.Raise("Cannot import disk/%d of instance %s" %
                             (idx, instance.name))
                transfers.append(impexp_master.DiskTransfer(
                    "disk/%d" % idx, impexp.IEIO_FILE, image,
                    impexp.IEIO_COMMAND, result.payload))
            self._Transfer(lu, instance, feedback_fn, transfers)
            if self.old_name and self.old_name != instance.name:
                result = lu.rpc.call_instance_run_rename(
                    instance.primary_node, os_instance, self.old_name, debug)
                if result.fail_msg:
                    lu.LogWarning("Failed to run rename script for %s on"
                                  " node %s: %s", instance.name,
                                  result.node, result.fail_msg)

    def _Transfer(self, lu: LogicalUnit, instance: objects.Instance,
                  feedback_fn: Callable[[str], None],
                  transfers: list[impexp_master.DiskTransfer]) -> None:
        pnode = lu.cfg.GetNodeInfo(instance.primary_node)
        results = impexp_master.TransferInstanceData(
            lu.rpc, feedback_fn, self.node_uuid, pnode.uuid,
            pnode.secondary_ip or pnode.primary_ip, lu.op.compress,
            instance.name, transfers)
        failed = [result for result in results if not result.success]
        if failed:
            raise errors.OpExecError(
                "Import of instance %s from %s on node %s failed: %s" %
                (instance.name, self.path, self.node_name,
                 "; ".join("%s: %s" % (result.name, result.error)
                           for result in failed)))
