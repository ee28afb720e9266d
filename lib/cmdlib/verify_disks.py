"""LUs of ``gnt-cluster verify-disks``: which instances need their disks
activated again, and which miss the storage of a disk.

As in Ganeti, only instances whose disks are active are looked at. The
storage a node can miss is its own: a ``file`` disk's file on the
primary, a drbd disk's image on both nodes (shared, adopted and external
storage is the admin's). A drbd side that is not assembled, not served
or whose mirror is gone needs activate-disks, which the client runs for
each such instance that misses nothing.
"""

import os
from typing import Any, Callable

from ganeti import constants, locking, objects, opcodes
from ganeti.cmdlib.base import NoHooksLU, ResultWithJobs
from ganeti.cmdlib.group import GroupInstances, LockedGroupInstances
from ganeti.storage import drbd

# Templates whose storage lives on the nodes holding the disk
_LOCAL_STORAGE = frozenset([constants.DT_FILE, constants.DT_DRBD8])


class LUClusterVerifyDisks(NoHooksLU):
    """Submit one disk verification job per node group (or for one)."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.share_locks = dict.fromkeys(locking.LEVELS, 1)
        if self.op.group_name:
            groups: Any = [self.cfg.LookupNodeGroup(self.op.group_name)]
        else:
            groups = locking.ALL_SET
        self.needed_locks = {locking.LEVEL_NODEGROUP: groups}

    def Exec(self, feedback_fn: Callable[[str], None]) -> ResultWithJobs:
        instances = self.cfg.GetAllInstancesInfo()
        if instances and all(
                self.cfg.GetInstanceDiskTemplate(uuid) == constants.DT_EXT
                for uuid in instances):
            # Ganeti's rule: external storage has no verification interface
            return ResultWithJobs([])
        return ResultWithJobs(
            [[opcodes.OpGroupVerifyDisks(group_name=group)]
             for group in sorted(self.glm.list_owned(
                 locking.LEVEL_NODEGROUP))])


class LUGroupVerifyDisks(NoHooksLU):
    """Report, for the instances with a node in the group, the nodes that
    did not answer, the instances to activate and the missing volumes
    (``[node, path]`` per instance)."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.group_uuid = self.cfg.LookupNodeGroup(self.op.group_name)
        self.share_locks = dict.fromkeys(locking.LEVELS, 1)
        self.needed_locks = {locking.LEVEL_INSTANCE: [],
                             locking.LEVEL_NODEGROUP: [self.group_uuid],
                             locking.LEVEL_NODE: []}

    def DeclareLocks(self, level: int) -> None:
        if level == locking.LEVEL_INSTANCE:
            # Checked again in CheckPrereq, once everything is locked
            self.needed_locks[level] = GroupInstances(self.cfg,
                                                      self.group_uuid)
        elif level == locking.LEVEL_NODE:
            nodes = set(self.cfg.GetNodeGroup(self.group_uuid).members)
            for uuid in self.glm.list_owned(locking.LEVEL_INSTANCE):
                nodes.update(self.cfg.GetInstanceNodes(uuid))
            self.needed_locks[level] = sorted(nodes)

    def CheckPrereq(self) -> None:
        uuids = LockedGroupInstances(self, self.group_uuid,
                                     self.op.group_name)
        self.instances = [inst for inst in map(self.cfg.GetInstanceInfo,
                                               uuids)
                          if inst.disks_active]

    def _Volume(self, disk: objects.Disk) -> str:
        """The path of the disk's storage on a node holding it."""
        if disk.dev_type == constants.DT_DRBD8:
            return drbd.ImagePath(self.cfg.GetClusterInfo().file_storage_dir,
                                  disk.uuid)
        return os.path.normpath(disk.logical_id[1])

    def _ByNode(self, select: Callable[[objects.Disk], bool]
                ) -> dict[str, list[tuple[objects.Instance, objects.Disk]]]:
        """The selected disks of the instances, by node holding them."""
        result: dict[str, list[tuple[objects.Instance, objects.Disk]]] = {}
        for inst in self.instances:
            for disk in self.cfg.GetInstanceDisks(inst.uuid):
                if select(disk):
                    for node_uuid in disk.nodes or [inst.primary_node]:
                        result.setdefault(node_uuid, []).append((inst, disk))
        return result

    def _Call(self, call: Callable, node_uuid: str, disks: list,
              node_errors: dict[str, str]) -> Any:
        """The payload of a node's answer; None (and the node's error
        recorded) if it failed, None as well for an offline node."""
        result = call(node_uuid, [disk.ToDict() for disk in disks])
        if result.offline:
            return None
        if result.fail_msg:
            self.LogWarning("Error verifying the disks on node %s: %s",
                            self.cfg.GetNodeInfo(node_uuid).name,
                            result.fail_msg)
            node_errors[self.cfg.GetNodeInfo(node_uuid).name] = \
                result.fail_msg
            return None
        return result.payload

    def Exec(self, feedback_fn: Callable[[str], None]) -> list:
        node_errors: dict[str, str] = {}
        to_activate: set[str] = set()
        missing: dict[str, list[list[str]]] = {}
        by_node = self._ByNode(lambda disk: disk.dev_type in _LOCAL_STORAGE)
        for node_uuid, items in sorted(by_node.items()):
            dims = self._Call(self.rpc.call_blockdev_getdimensions,
                              node_uuid, [disk for _, disk in items],
                              node_errors)
            if dims is None:
                continue
            node_name = self.cfg.GetNodeInfo(node_uuid).name
            for (inst, disk), dim in zip(items, dims):
                if dim is None:
                    missing.setdefault(inst.name, []).append(
                        [node_name, self._Volume(disk)])
        by_node = self._ByNode(
            lambda disk: disk.dev_type == constants.DT_DRBD8)
        for node_uuid, items in sorted(by_node.items()):
            if self.cfg.GetNodeInfo(node_uuid).name in node_errors:
                continue
            faulty = self._Call(self.rpc.call_drbd_needs_activation,
                                node_uuid, [disk for _, disk in items],
                                node_errors)
            to_activate.update(inst.name for inst, disk in items
                               if disk.uuid in (faulty or ()))
        return [node_errors, sorted(to_activate), missing]
