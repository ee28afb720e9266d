"""LUs changing and repairing storage units, and listing LVM volumes.

Ganeti can modify only LVM physical volumes (their ``allocatable`` flag)
and repair only LVM volume groups; this cluster has no LVM storage, so
these LUs answer as Ganeti does for the storage types it has (file,
sharedfile): modification and repair are refused, and there are no
volumes to list.
"""

from typing import Callable, NoReturn

from ganeti import errors, locking
from ganeti.cmdlib.base import ExpandNodeUuidAndName, NoHooksLU

# The fields of gnt-node volumes (Ganeti's VF_*)
_VOLUME_FIELDS = frozenset(["node", "phys", "vg", "name", "size",
                            "instance"])
# The fields of gnt-storage diagnose
_EXTSTORAGE_FIELDS = frozenset(["name", "node_status", "nodegroup_status",
                                "parameters"])


def _CheckOutputFields(known: frozenset[str], selected: list[str]) -> None:
    unknown = [field for field in selected if field not in known]
    if unknown:
        raise errors.OpPrereqError("Unknown output fields selected: %s"
                                   % ",".join(unknown), errors.ECODE_INVAL)


class _StorageUnitLU(NoHooksLU):
    """Refuses to act on units of storage types that do not allow it."""

    REQ_BGL = False
    # Ganeti's verb for the operation ("modified", "repaired")
    VERB = ""

    def CheckArguments(self) -> NoReturn:
        self.op.node_uuid, self.op.node_name = ExpandNodeUuidAndName(
            self.cfg, self.op.node_uuid, self.op.node_name)
        raise errors.OpPrereqError("Storage units of type '%s' can not be"
                                   " %s" % (self.op.storage_type, self.VERB),
                                   errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> NoReturn:
        raise errors.ProgrammerError("%s must not run" % self.op.OP_ID)


class LUNodeModifyStorage(_StorageUnitLU):
    """Change a storage unit's fields (none are modifiable here)."""

    VERB = "modified"


class LURepairNodeStorage(_StorageUnitLU):
    """Repair a storage unit (no storage type here can be repaired)."""

    VERB = "repaired"


class LUNodeQueryvols(NoHooksLU):
    """The LVM volumes of nodes: none, as no node has LVM storage."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        _CheckOutputFields(_VOLUME_FIELDS, self.op.output_fields)

    def ExpandNames(self) -> None:
        self.share_locks = dict.fromkeys(locking.LEVELS, 1)
        wanted = ([ExpandNodeUuidAndName(self.cfg, None, name)[0]
                   for name in self.op.nodes]
                  if self.op.nodes else locking.ALL_SET)
        self.needed_locks = {locking.LEVEL_NODE: wanted}

    def Exec(self, feedback_fn: Callable[[str], None]) -> list:
        return []


class LUExtStorageDiagnose(NoHooksLU):
    """The ExtStorage providers of the nodes: none, as the nodes have no
    ExtStorage search path."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        _CheckOutputFields(_EXTSTORAGE_FIELDS, self.op.output_fields)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> list:
        return []
