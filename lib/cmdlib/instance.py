"""LUs removing and renaming instances; creating them is
instance_create's.

The name checks (resolving a new name, the IP check) are shared with
instance_create.
"""

import logging
import os
from typing import Any, Callable

from ganeti import constants, errors, netutils, objects
from ganeti.cmdlib.instance_utils import (
    INSTANCE_NOT_RUNNING, AssembledForOS, CheckInstanceState, CheckNodeOnline,
    GetInstanceInfoText, InstanceLU, RemoveInstance)

# How long the IP check waits for an answer (seconds)
_IP_CHECK_TIMEOUT = 2.0


def _ResolveInstanceName(name: str) -> netutils.Hostname:
    """Resolve an instance name (name_check), saying how to do without."""
    try:
        return netutils.Hostname(name)
    except errors.ResolverError as err:
        raise errors.OpPrereqError(
            "Cannot resolve instance name '%s' (%s); to use the name as"
            " given, pass --no-name-check (and --no-ip-check, which needs"
            " the name check)" % (name, err.args[-1]),
            errors.ECODE_RESOLVER) from err


def _IpInUse(address: str) -> bool:
    """Whether something answers on ``address`` (noded's port)."""
    return netutils.TcpPing(address, netutils.GetDaemonPort(constants.NODED),
                            _IP_CHECK_TIMEOUT)


# Removal -------------------------------------------------------------------

class LUInstanceRemove(InstanceLU):
    """Stop an instance, destroy its disks and drop it from the config."""

    HPATH = "instance-remove"

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"SHUTDOWN_TIMEOUT": self.op.shutdown_timeout}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        ignore = self.op.ignore_failures
        logging.info("Shutting down instance %s on node %s", instance.name,
                     self.pnode.name)
        result = self.rpc.call_instance_shutdown(
            instance.primary_node,
            self.cfg.GetClusterInfo().InstanceRpcDict(instance),
            self.op.shutdown_timeout)
        if result.fail_msg:
            if not ignore:
                raise errors.OpExecError("Could not shutdown instance %s on"
                                         " node %s: %s" %
                                         (instance.name, self.pnode.name,
                                          result.fail_msg))
            feedback_fn("Warning: can't shutdown instance: %s" %
                        result.fail_msg)
        logging.info("Removing instance %s with its disks", instance.name)
        RemoveInstance(self, instance, ignore)


# Rename --------------------------------------------------------------------

class LUInstanceRename(InstanceLU):
    """Rename a stopped instance: configuration, file storage, OS.

    Locks are by UUID, so the instance keeps its lock; a concurrent job
    taking the new name meanwhile makes the configuration write fail.
    """

    HPATH = "instance-rename"

    def CheckArguments(self) -> None:
        if self.op.ip_check and not self.op.name_check:
            raise errors.OpPrereqError("IP address check requires a name"
                                       " check", errors.ECODE_INVAL)

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"INSTANCE_NEW_NAME": self.op.new_name}

    def _CheckNewName(self) -> None:
        """Resolve the new name (name_check) and refuse a name in use."""
        op = self.op
        if op.name_check:
            hostname = _ResolveInstanceName(op.new_name)
            op.new_name = hostname.name
            if op.ip_check and _IpInUse(hostname.ip):
                raise errors.OpPrereqError(
                    "IP %s of instance %s already in use" %
                    (hostname.ip, op.new_name), errors.ECODE_NOTUNIQUE)
        if op.new_name != self.instance.name and \
                self.cfg.GetInstanceInfoByName(op.new_name) is not None:
            raise errors.OpPrereqError("Instance '%s' is already in the"
                                       " cluster" % op.new_name,
                                       errors.ECODE_EXISTS)

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        CheckNodeOnline(self, instance.primary_node)
        CheckInstanceState(self, instance, INSTANCE_NOT_RUNNING,
                           "cannot rename")
        self._CheckNewName()
        self.file_disks = [disk for disk
                           in self.cfg.GetInstanceDisks(instance.uuid)
                           if disk.dev_type in constants.DTS_FILEBASED]
        enabled = self.cfg.GetClusterInfo().enabled_disk_templates
        for template in sorted({disk.dev_type for disk in self.file_disks}):
            if template not in enabled:
                raise errors.OpPrereqError(
                    "Disk template '%s' is not enabled in cluster. Enabled"
                    " disk templates are: %s" % (template,
                                                 ",".join(enabled)),
                    errors.ECODE_STATE)

    def _RenameFileStorage(self, disks: list[objects.Disk]) -> None:
        """Rename the directories of the file disks on the primary node
        (the configuration has the new paths already)."""
        new_paths = {disk.uuid: disk.logical_id[1] for disk in disks}
        moves = sorted({(os.path.dirname(disk.logical_id[1]),
                         os.path.dirname(new_paths[disk.uuid]),
                         disk.dev_type) for disk in self.file_disks})
        for old_dir, new_dir, template in moves:
            if old_dir == new_dir:
                continue
            result = self.rpc.call_file_storage_dir_rename(
                self.instance.primary_node, old_dir, new_dir, template)
            result.Raise("Could not rename on node %s directory '%s' to"
                         " '%s' (but the instance has been renamed in"
                         " Ganeti)" % (self.pnode.name, old_dir, new_dir))

    def _RunOsRename(self, instance: objects.Instance,
                     disks: list[objects.Disk], old_name: str) -> None:
        """Tell the disks and the OS the new name; failures are only
        warnings, the instance is renamed already."""
        with AssembledForOS(self, instance, disks) as os_instance:
            info = GetInstanceInfoText(instance)
            for disk in disks:
                for node_uuid in disk.nodes or [instance.primary_node]:
                    result = self.rpc.call_blockdev_setinfo(
                        node_uuid, disk.ToDict(), info)
                    if result.fail_msg:
                        self.LogWarning("Error setting info on node %s for"
                                        " disk %s: %s", result.node,
                                        disk.iv_name, result.fail_msg)
            result = self.rpc.call_instance_run_rename(
                instance.primary_node, os_instance, old_name,
                self.op.debug_level or 0)
            if result.fail_msg:
                self.LogWarning("Could not run OS rename script for instance"
                                " %s on node %s (but the instance has been"
                                " renamed in Ganeti): %s", instance.name,
                                self.pnode.name, result.fail_msg)

    def Exec(self, feedback_fn: Callable[[str], None]) -> str:
        old_name = self.instance.name
        self.cfg.RenameInstance(self.instance.uuid, self.op.new_name)
        renamed = self.cfg.GetInstanceInfo(self.instance.uuid)
        disks = self.cfg.GetInstanceDisks(renamed.uuid)
        self._RenameFileStorage(disks)
        if renamed.os:
            self._RunOsRename(renamed, disks, old_name)
        logging.info("Renamed instance %s to %s", old_name, renamed.name)
        return renamed.name
