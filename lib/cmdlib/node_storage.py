"""LUs changing and repairing storage units, and listing LVM volumes.

Ganeti can modify only LVM physical volumes (their ``allocatable`` flag)
and repair only LVM volume groups. The checks and refusals are Ganeti's;
as these nodes have no LVM, a request that passes them is refused in the
end too, and there are no volumes to list.
"""

from typing import Callable, NoReturn

from ganeti import constants, errors, locking
from ganeti.cmdlib.base import ExpandNodeUuidAndName, NoHooksLU
from ganeti.cmdlib.node import CheckStorageTypeEnabled

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
    """Acts on a storage unit of a node: Ganeti's checks, then a refusal,
    as no storage type these nodes have allows the action."""

    REQ_BGL = False
    # Ganeti's verb for the operation ("modified", "repaired")
    VERB = ""

    def CheckArguments(self) -> None:
        self.op.node_uuid, self.op.node_name = ExpandNodeUuidAndName(
            self.cfg, self.op.node_uuid, self.op.node_name)
        if not self._Allowed():
            raise errors.OpPrereqError("Storage units of type '%s' can not"
                                       " be %s" % (self.op.storage_type,
                                                   self.VERB),
                                       errors.ECODE_INVAL)

    def _Allowed(self) -> bool:
        """Whether Ganeti allows the operation on the storage type."""
        raise NotImplementedError

    def ExpandNames(self) -> None:
        self.needed_locks = {locking.LEVEL_NODE: [self.op.node_uuid]}

    def CheckPrereq(self) -> NoReturn:
        CheckStorageTypeEnabled(self.cfg.GetClusterInfo(),
                                self.op.storage_type)
        raise errors.OpPrereqError("Storage units of type '%s' can not be %s"
                                   " on this cluster: its nodes have no LVM"
                                   % (self.op.storage_type, self.VERB),
                                   errors.ECODE_ENVIRON)

    def Exec(self, feedback_fn: Callable[[str], None]) -> NoReturn:
        raise errors.ProgrammerError("%s must not run" % self.op.OP_ID)


class LUNodeModifyStorage(_StorageUnitLU):
    """Change a storage unit's modifiable fields (an LVM PV's
    allocatable flag in Ganeti)."""

    VERB = "modified"

    def _Allowed(self) -> bool:
        modifiable = constants.MODIFIABLE_STORAGE_FIELDS.get(
            self.op.storage_type)
        if modifiable is None:
            return False
        diff = set(self.op.changes) - modifiable
        if diff:
            raise errors.OpPrereqError(
                "The following fields can not be modified for storage units"
                " of type '%s': %r" % (self.op.storage_type, sorted(diff)),
                errors.ECODE_INVAL)
        return True


class LURepairNodeStorage(_StorageUnitLU):
    """Repair a storage unit (an LVM VG's consistency in Ganeti)."""

    VERB = "repaired"

    def _Allowed(self) -> bool:
        return constants.SO_FIX_CONSISTENCY in \
            constants.VALID_STORAGE_OPERATIONS.get(self.op.storage_type, ())


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
