"""LU of ``gnt-cluster repair-disk-sizes``: record the sizes the disks
really have.

A disk's storage can change size behind the cluster's back (an image
grown or shrunk by hand, a failed grow-disk); later operations would
then trust a wrong size. As in Ganeti, each instance's primary node
reports the size of the instance's disks and every mismatch is written
back to the configuration, one log line and one result entry per change.
Spindles are not repaired: no storage of this cluster counts them.
"""

from typing import Any, Callable

from ganeti import locking, objects
from ganeti.cmdlib.base import ExpandInstanceUuidAndName, NoHooksLU

# [(instance name, disk index, field, new value)], the opcode's result
_Changes = list[tuple[str, int, str, int]]


class LUClusterRepairDiskSizes(NoHooksLU):
    """Correct the recorded sizes of the selected (default: all)
    instances' disks."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        # The instances are locked exclusively (their disks change), their
        # primary nodes' resources shared (only looked at), as in Ganeti
        self.share_locks = dict.fromkeys(locking.LEVELS, 0)
        self.share_locks[locking.LEVEL_NODE_RES] = 1
        if self.op.instances:
            wanted: Any = [ExpandInstanceUuidAndName(self.cfg, None, name)[0]
                           for name in self.op.instances]
            self.needed_locks = {locking.LEVEL_INSTANCE: wanted,
                                 locking.LEVEL_NODE_RES: []}
        else:
            self.needed_locks = {locking.LEVEL_INSTANCE: locking.ALL_SET,
                                 locking.LEVEL_NODE_RES: locking.ALL_SET}

    def DeclareLocks(self, level: int) -> None:
        if level == locking.LEVEL_NODE_RES and self.op.instances:
            self.needed_locks[level] = sorted(
                {inst.primary_node for inst in self._OwnedInstances()})

    def _OwnedInstances(self) -> list[objects.Instance]:
        """The locked instances still in the configuration."""
        found = (self.cfg.GetInstanceInfo(uuid) for uuid in
                 sorted(self.glm.list_owned(locking.LEVEL_INSTANCE)))
        return [inst for inst in found if inst is not None]

    def CheckPrereq(self) -> None:
        self.instances = self._OwnedInstances()

    def _ByPrimary(self) -> dict[str, list[tuple[objects.Instance, int,
                                                  objects.Disk]]]:
        """(instance, index, disk) of every disk, by primary node."""
        result: dict[str, list[tuple[objects.Instance, int,
                                     objects.Disk]]] = {}
        for inst in self.instances:
            for idx, disk in enumerate(self.cfg.GetInstanceDisks(inst.uuid)):
                result.setdefault(inst.primary_node, []).append(
                    (inst, idx, disk))
        return result

    def Exec(self, feedback_fn: Callable[[str], None]) -> _Changes:
        changed: _Changes = []
        for node_uuid, items in sorted(self._ByPrimary().items()):
            node_name = self.cfg.GetNodeInfo(node_uuid).name
            result = self.rpc.call_blockdev_getdimensions(
                node_uuid, [disk.ToDict() for _, _, disk in items])
            if result.fail_msg:
                self.LogWarning("Failure in blockdev_getdimensions call to"
                                " node %s, ignoring", node_name)
                continue
            if not isinstance(result.payload, list) or \
                    len(result.payload) != len(items):
                self.LogWarning("Invalid result from node %s, ignoring node"
                                " results", node_name)
                continue
            for (inst, idx, disk), dims in zip(items, result.payload):
                size = self._Size(inst, idx, dims)
                if size is None or size == disk.size:
                    continue
                self.LogInfo("Disk %d of instance %s has mismatched size,"
                             " correcting: recorded %d, actual %d", idx,
                             inst.name, disk.size, size)
                disk.size = size
                self.cfg.Update(disk, feedback_fn)
                changed.append((inst.name, idx, "size", size))
        return changed

    def _Size(self, inst: objects.Instance, idx: int,
              dims: Any) -> int | None:
        """The size in MiB a node reported for a disk (None, with a
        warning, if it reported none usable)."""
        if dims is None:
            self.LogWarning("Disk %d of instance %s did not return size"
                            " information, ignoring", idx, inst.name)
            return None
        if not isinstance(dims, (tuple, list)) or not dims or \
                not isinstance(dims[0], int):
            self.LogWarning("Disk %d of instance %s did not return valid"
                            " size information, ignoring", idx, inst.name)
            return None
        return dims[0] >> 20
