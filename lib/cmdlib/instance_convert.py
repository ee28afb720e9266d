"""Disk template conversion of a stopped instance (modify -t).

Between ``file`` and ``drbd``, the way Ganeti converts between templates
(its _ConvertInstanceDisks): new empty disks of the new template are
created, the data is copied from the old ones on the primary node
(blockdev_convert), a new drbd disk's secondary gets its copy through the
mirror, and only then does the configuration switch to the new disks and
the old ones go. A failure before the switch removes the new disks and
leaves the instance as it was. Unless ``wait_for_sync`` is off, the
switch waits for the new mirrors to be in sync, so that the
configuration never names a secondary that does not hold the data.
"""

import os
from typing import Callable

from ganeti import constants, errors, objects
from ganeti.cmdlib.allocator import CheckNodesMemberOf
from ganeti.cmdlib.base import ExpandNodeUuidAndName
from ganeti.cmdlib.instance_utils import (
    INSTANCE_DOWN, AssembleInstanceDisks, CheckInstanceState,
    CheckNodeFreeDisk, CheckNodeNotDrained, CheckNodeOnline,
    CheckNodeVmCapable, CreateDisks, DrbdLogicalId, InstanceLU, RemoveDisks,
    ShutdownInstanceDisks, WaitForSync)
from ganeti.utils import FormatUnit

# (from, to)
CONVERSIONS = frozenset([(constants.DT_FILE, constants.DT_DRBD8),
                         (constants.DT_DRBD8, constants.DT_FILE)])


def CheckConversionArguments(lu: InstanceLU) -> None:
    """Ganeti's argument checks of a conversion (before any lock)."""
    op = lu.op
    if op.disks:
        raise errors.OpPrereqError("Disk template conversion and other disk"
                                   " changes not supported at the same time",
                                   errors.ECODE_INVAL)
    if op.disk_template in constants.DTS_INT_MIRROR:
        if not (op.remote_node or op.remote_node_uuid):
            raise errors.OpPrereqError("Changing the disk template to a"
                                       " mirrored one requires specifying a"
                                       " secondary node", errors.ECODE_INVAL)
        op.remote_node_uuid, op.remote_node = ExpandNodeUuidAndName(
            lu.cfg, op.remote_node_uuid, op.remote_node)
    elif op.remote_node:
        lu.LogWarning("Changing the disk template to a non-mirrored one,"
                      " the secondary node will be ignored")
        op.remote_node = op.remote_node_uuid = None


class DiskTemplateConversion:
    """The conversion of ``lu.instance``'s disks to ``lu.op.disk_template``
    (checked in CheckPrereq, done in Exec)."""

    def __init__(self, lu: InstanceLU, old: str):
        self.lu = lu
        self.old = old
        self.new = lu.op.disk_template
        self.instance = lu.instance
        self.pnode = lu.instance.primary_node
        self.snode = lu.op.remote_node_uuid

    def CheckPrereq(self) -> None:
        lu = self.lu
        if self.new == self.old:
            raise errors.OpPrereqError("Instance already has disk template"
                                       " %s" % self.new, errors.ECODE_INVAL)
        if (self.old, self.new) not in CONVERSIONS:
            raise errors.OpPrereqError(
                "Conversion from the '%s' to the '%s' disk template is not"
                " supported (supported: %s)" %
                (self.old, self.new,
                 ", ".join("%s to %s" % pair for pair in sorted(CONVERSIONS))),
                errors.ECODE_INVAL)
        cluster = lu.cfg.GetClusterInfo()
        if self.new not in cluster.enabled_disk_templates:
            raise errors.OpPrereqError(
                "Disk template '%s' is not enabled for this cluster (enabled"
                " templates: %s)" %
                (self.new, ", ".join(cluster.enabled_disk_templates)),
                errors.ECODE_STATE)
        CheckInstanceState(lu, self.instance, INSTANCE_DOWN,
                           "cannot change disk template")
        size = sum(disk.size for disk in
                   lu.cfg.GetInstanceDisks(self.instance.uuid))
        nodes = [self.pnode]
        if self.new in constants.DTS_INT_MIRROR:
            if self.snode == self.pnode:
                raise errors.OpPrereqError(
                    "Given new secondary node %s is the same as the primary"
                    " node of the instance" % lu.op.remote_node,
                    errors.ECODE_STATE)
            # A new node: the cluster's reservation defaults apply
            CheckNodesMemberOf(lu, [], [self.snode],
                               self.instance.GetTags())
            CheckNodeOnline(lu, self.snode)
            CheckNodeNotDrained(lu, self.snode)
            CheckNodeVmCapable(lu, self.snode)
            nodes.append(self.snode)
        # Old and new disks coexist until the copy is done
        for node_uuid in nodes:
            CheckNodeFreeDisk(lu, node_uuid, size, self.instance.hypervisor)

    def _NewDisks(self, old_disks: list[objects.Disk]) -> list[objects.Disk]:
        """The new template's disks, sizes, modes and names kept."""
        cfg = self.lu.cfg
        op = self.lu.op
        minors: dict[str, set[int]] = {}
        result = []
        for idx, old in enumerate(old_disks):
            uuid = cfg.GenerateUniqueID()
            if self.new == constants.DT_DRBD8:
                logical_id = DrbdLogicalId(cfg, self.pnode, self.snode,
                                           minors)
                nodes = [self.pnode, self.snode]
            else:
                parts = [cfg.GetClusterInfo().file_storage_dir]
                if op.file_storage_dir:
                    parts.append(os.path.normpath(op.file_storage_dir))
                parts.append(self.instance.name)
                logical_id = [op.file_driver or constants.FD_LOOP,
                              os.path.join(*parts,
                                           "%s.disk%d" % (uuid, idx))]
                nodes = [self.pnode]
            result.append(objects.Disk(
                dev_type=self.new, size=old.size, mode=old.mode,
                name=old.name, logical_id=logical_id, nodes=nodes,
                iv_name="disk/%d" % idx, params={}, uuid=uuid))
        return result

    def _Populate(self, old_disks: list[objects.Disk],
                  new_disks: list[objects.Disk],
                  feedback_fn: Callable[[str], None]) -> None:
        feedback_fn("Populating the new empty disks of type '%s'..." %
                    self.new)
        AssembleInstanceDisks(self.lu, self.instance, old_disks,
                              ignore_secondaries=True)
        try:
            for idx, (old, new) in enumerate(zip(old_disks, new_disks)):
                feedback_fn(" - copying data from disk %d (%s), size %s" %
                            (idx, old.dev_type, FormatUnit(new.size, "h")))
                self.lu.rpc.call_blockdev_convert(
                    self.pnode, old.ToDict(), new.ToDict()).Raise(
                        "Error while converting the instance's template")
        finally:
            ShutdownInstanceDisks(self.lu, self.instance, old_disks)
        if self.new in constants.DTS_INT_MIRROR and \
                not WaitForSync(self.lu, self.instance, new_disks,
                                oneshot=not self.lu.op.wait_for_sync):
            raise errors.OpExecError("There are some degraded disks for"
                                     " this instance")

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        lu = self.lu
        cfg = lu.cfg
        uuid = self.instance.uuid
        old_disks = cfg.GetInstanceDisks(uuid)
        feedback_fn("Converting disk template from '%s' to '%s'" %
                    (self.old, self.new))
        if not ShutdownInstanceDisks(lu, self.instance, old_disks):
            raise errors.OpExecError("Cannot shutdown instance disks, unable"
                                     " to proceed with disk template"
                                     " conversion")
        feedback_fn("Generating new '%s' disk template..." % self.new)
        new_disks = self._NewDisks(old_disks)
        try:
            feedback_fn("Creating new empty disks of type '%s'..." %
                        self.new)
            # The primary's sides are assembled by their creation, for
            # the copy
            CreateDisks(lu, self.instance, new_disks)
            self._Populate(old_disks, new_disks, feedback_fn)
        except Exception:
            lu.LogInfo("The instance will not be affected, aborting"
                       " operation")
            lu.LogInfo("Removing newly created disks of type '%s'..." %
                       self.new)
            ShutdownInstanceDisks(lu, self.instance, new_disks)
            RemoveDisks(lu, self.instance.name, new_disks)
            cfg.ReleasePorts(disk.logical_id[2] for disk in new_disks
                             if disk.dev_type == constants.DT_DRBD8)
            raise
        ShutdownInstanceDisks(lu, self.instance, new_disks)
        feedback_fn("Detaching old disks (%s) from the instance and removing"
                    " them from cluster config" % self.old)
        for disk in old_disks:
            cfg.RemoveInstanceDisk(uuid, disk.uuid)
        feedback_fn("Adding new disks (%s) to cluster config and attaching"
                    " them to the instance" % self.new)
        for idx, disk in enumerate(new_disks):
            cfg.AddInstanceDisk(uuid, disk, idx=idx)
        feedback_fn("Removing old block devices of type '%s'..." % self.old)
        RemoveDisks(lu, self.instance.name, old_disks)
