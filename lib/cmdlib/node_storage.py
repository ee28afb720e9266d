"""LUs changing and repairing storage units, listing LVM volumes, and
diagnosing ExtStorage providers.

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
    """The ExtStorage providers of the online vm-capable nodes, as rows of
    the requested fields (Ganeti's ExtStorageQuery).

    ``node_status`` is ``{node: [[path, valid, why not, parameters]]}``
    with every answering node, ``[]`` where the provider is missing (keyed
    by node name: Ganeti 3.0 keys it by node UUID, which its gnt-storage
    then prints as the node); ``nodegroup_status`` is ``{group: valid on
    all its answering nodes}``; ``parameters`` those of the provider's
    that every node reports, the provider valid everywhere.
    """

    REQ_BGL = False

    def CheckArguments(self) -> None:
        _CheckOutputFields(_EXTSTORAGE_FIELDS, self.op.output_fields)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def _ByProvider(self) -> tuple[dict[str, dict[str, list]], list[str]]:
        """{provider: {node uuid: [[path, valid, why, params]]}} and the
        answering nodes; a node failing the RPC is left out, so one down
        node makes no provider invalid."""
        nodes = [node.uuid for node in self.cfg.GetAllNodesInfo().values()
                 if not node.offline and node.vm_capable]
        results = self.rpc.call_extstorage_diagnose(nodes)
        good = [uuid for uuid in nodes if not results[uuid].fail_msg]
        providers: dict[str, dict[str, list]] = {}
        for uuid in good:
            for name, path, valid, why, params in results[uuid].payload or []:
                per_node = providers.setdefault(
                    name, {node: [] for node in good})
                per_node[uuid].append([path, valid, why, params])
        return providers, good

    def _Row(self, name: str, per_node: dict[str, list],
             good: list[str]) -> dict:
        groups = {}
        for group in self.cfg.GetAllNodeGroupsInfo().values():
            statuses = [bool(per_node[uuid]) and per_node[uuid][0][1]
                        for uuid in group.members if uuid in good]
            groups[group.name] = all(statuses)
        params: set[tuple] | None = None
        for entries in per_node.values():
            if not (entries and entries[0][1]):
                params = set()
                break
            node_params = {tuple(param) for param in entries[0][3]}
            params = node_params if params is None else params & node_params
        return {
            "name": name,
            "node_status": {self.cfg.GetNodeInfo(uuid).name: entries
                            for uuid, entries in per_node.items()},
            "nodegroup_status": groups,
            "parameters": sorted(list(param) for param in params or ()),
        }

    def Exec(self, feedback_fn: Callable[[str], None]) -> list:
        providers, good = self._ByProvider()
        names = sorted(providers)
        if self.op.names:
            names = [name for name in self.op.names if name in providers]
        fields = self.op.output_fields
        return [[row[field] for field in fields]
                for row in (self._Row(name, providers[name], good)
                            for name in names)]
