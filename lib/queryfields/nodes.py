"""The fields of the node resource: the node's configuration, its role,
instance counts and live data from the node_info RPC.
"""

from typing import Any, Callable

from ganeti import constants, objects
from ganeti.query import (FS_NODATA, FS_OFFLINE, FS_UNAVAIL, FieldStatus,
                          FieldTable, _NDParamFields, _ObjectFields)


class NodeQueryData:
    """What the node fields are computed from, gathered once per query.

    ``primary``/``secondary`` map node UUIDs to the (sorted) names of the
    instances using the node; ``live_data`` maps node UUIDs to their
    ``node_info`` RPC answer, for the nodes that gave one (None if no live
    field was asked for). ``storage`` says whether the answers' first
    storage entry is the one instances use (dtotal/dfree).
    """

    def __init__(self, nodes: list[objects.Node], master_uuid: str,
                 groups: dict[str, objects.NodeGroup],
                 cluster: objects.Cluster, primary: dict[str, list[str]],
                 secondary: dict[str, list[str]],
                 live_data: dict[str, dict] | None = None,
                 storage: bool = True):
        self.nodes = nodes
        self.master_uuid = master_uuid
        self.groups = groups
        self.cluster = cluster
        self.primary = primary
        self.secondary = secondary
        self.live_data = live_data
        self.storage = storage

    def Items(self) -> list["NodeItem"]:
        return [NodeItem(self, node) for node in self.nodes]


class NodeItem:
    """One row of a node query: the node and the query's data."""

    __slots__ = ("ctx", "node", "group", "_ndparams")

    def __init__(self, ctx: NodeQueryData, node: objects.Node):
        self.ctx = ctx
        self.node = node
        self.group = ctx.groups.get(node.group)
        self._ndparams: Any = None

    def NDParams(self) -> Any:
        """The node's effective parameters (cluster, group, node)."""
        if self.group is None:
            return FS_UNAVAIL
        if self._ndparams is None:
            self._ndparams = self.ctx.cluster.FillND(self.node, self.group)
        return self._ndparams

    def Live(self) -> Any:
        """The node's live data, or why there is none."""
        if self.node.offline:
            return FS_OFFLINE
        if not self.node.vm_capable:
            return FS_UNAVAIL
        live = (self.ctx.live_data or {}).get(self.node.uuid)
        return FS_NODATA if live is None else live


def GetNodeRole(node: objects.Node, master_uuid: str) -> str:
    """The node's role letter (NR_*): the flags seen as one status."""
    if node.uuid == master_uuid:
        return constants.NR_MASTER
    if node.master_candidate:
        return constants.NR_MCANDIDATE
    if node.drained:
        return constants.NR_DRAINED
    if node.offline:
        return constants.NR_OFFLINE
    return constants.NR_REGULAR


def _LiveField(kind: str, get_raw: Callable[[NodeItem, dict], Any]
               ) -> Callable[[NodeItem], Any]:
    def get(item: NodeItem) -> Any:
        live = item.Live()
        if isinstance(live, FieldStatus):
            return live
        value = get_raw(item, live)
        if value is None:
            return FS_UNAVAIL
        if kind == constants.QFT_TEXT:
            return value
        try:
            return int(value)
        except (TypeError, ValueError):
            return FS_UNAVAIL
    return get


def _LiveValue(key: str) -> Callable[[NodeItem, dict], Any]:
    return lambda _, live: live.get(key)


def _StorageValue(key: str) -> Callable[[NodeItem, dict], Any]:
    def get(item: NodeItem, live: dict) -> Any:
        storage = live.get("storage") or []
        if not item.ctx.storage or not storage:
            return None
        return storage[0].get(key)
    return get


def _NodeLiveFields() -> FieldTable:
    simple = {
        "bootid": ("BootID", constants.QFT_TEXT, "bootid",
                   "Random UUID renewed for each system reboot, can be used"
                   " for detecting reboots by tracking changes"),
        "cnodes": ("CNodes", constants.QFT_NUMBER, "cpu_nodes",
                   "Number of NUMA domains on node (if exported by"
                   " hypervisor)"),
        "cnos": ("CNOs", constants.QFT_NUMBER, "cpu_dom0",
                 "Number of logical processors used by the node OS (dom0"
                 " for Xen)"),
        "csockets": ("CSockets", constants.QFT_NUMBER, "cpu_sockets",
                     "Number of physical CPU sockets (if exported by"
                     " hypervisor)"),
        "ctotal": ("CTotal", constants.QFT_NUMBER, "cpu_total",
                   "Number of logical processors"),
        "mfree": ("MFree", constants.QFT_UNIT, "memory_free",
                  "Memory available for instance allocations"),
        "mnode": ("MNode", constants.QFT_UNIT, "memory_dom0",
                  "Amount of memory used by node (dom0 for Xen)"),
        "mtotal": ("MTotal", constants.QFT_UNIT, "memory_total",
                   "Total amount of memory of physical machine"),
        "spfree": ("SpFree", constants.QFT_NUMBER, "spindles_free",
                   "Available spindles in volume group (exclusive storage"
                   " only)"),
        "sptotal": ("SpTotal", constants.QFT_NUMBER, "spindles_total",
                    "Total spindles in volume group (exclusive storage"
                    " only)"),
    }
    table: FieldTable = {
        name: (title, kind, _LiveField(kind, _LiveValue(key)), doc)
        for name, (title, kind, key, doc) in simple.items()}
    table["dfree"] = ("DFree", constants.QFT_UNIT,
                      _LiveField(constants.QFT_UNIT,
                                 _StorageValue("storage_free")),
                      "Available storage space in storage unit")
    table["dtotal"] = ("DTotal", constants.QFT_UNIT,
                       _LiveField(constants.QFT_UNIT,
                                  _StorageValue("storage_size")),
                       "Total storage space in storage unit used for"
                       " instance disk allocation")
    return table


def _NodeGroupName(item: NodeItem) -> Any:
    return FS_UNAVAIL if item.group is None else item.group.name


def _NodePowered(item: NodeItem) -> Any:
    # Only nodes with out-of-band management know their power state
    ndparams = item.NDParams()
    if isinstance(ndparams, FieldStatus) or \
            not ndparams.get(objects.ND_OOB_PROGRAM):
        return FS_UNAVAIL
    return item.node.powered


def _MaybeUnavail(value: Any) -> Any:
    return FS_UNAVAIL if value is None else value


_ROLE_DOC = ("Node role; \"%s\" for master, \"%s\" for master candidate,"
             " \"%s\" for regular, \"%s\" for drained, \"%s\" for offline" %
             (constants.NR_MASTER, constants.NR_MCANDIDATE,
              constants.NR_REGULAR, constants.NR_DRAINED,
              constants.NR_OFFLINE))


def _BuildNodeFields() -> FieldTable:
    def attr(name: str) -> Callable[[NodeItem], Any]:
        return lambda item: getattr(item.node, name)

    table: FieldTable = {
        "name": ("Node", constants.QFT_TEXT, attr("name"), "Node name"),
        "pip": ("PrimaryIP", constants.QFT_TEXT, attr("primary_ip"),
                "Primary IP address"),
        "sip": ("SecondaryIP", constants.QFT_TEXT, attr("secondary_ip"),
                "Secondary IP address"),
        "master": ("IsMaster", constants.QFT_BOOL,
                   lambda item: item.node.uuid == item.ctx.master_uuid,
                   "Whether node is master"),
        "master_candidate": ("MasterC", constants.QFT_BOOL,
                             attr("master_candidate"),
                             "Whether node is a master candidate"),
        "master_capable": ("MasterCapable", constants.QFT_BOOL,
                           attr("master_capable"),
                           "Whether node can become a master candidate"),
        "offline": ("Offline", constants.QFT_BOOL, attr("offline"),
                    "Whether node is marked offline"),
        "drained": ("Drained", constants.QFT_BOOL, attr("drained"),
                    "Whether node is drained"),
        "vm_capable": ("VMCapable", constants.QFT_BOOL, attr("vm_capable"),
                       "Whether node can host instances"),
        "role": ("Role", constants.QFT_TEXT,
                 lambda item: GetNodeRole(item.node, item.ctx.master_uuid),
                 _ROLE_DOC),
        "group": ("Group", constants.QFT_TEXT, _NodeGroupName, "Node group"),
        "group.uuid": ("GroupUUID", constants.QFT_TEXT, attr("group"),
                       "UUID of node group"),
        "aggregates": ("Aggregates", constants.QFT_OTHER,
                       lambda item: list(item.node.aggregates or ()),
                       "UUIDs of the cluster aggregates the node is in,"
                       " besides its group's"),
        "pinst_cnt": ("Pinst", constants.QFT_NUMBER,
                      lambda item: len(item.ctx.primary.get(item.node.uuid,
                                                            [])),
                      "Number of instances with this node as primary"),
        "sinst_cnt": ("Sinst", constants.QFT_NUMBER,
                      lambda item: len(item.ctx.secondary.get(item.node.uuid,
                                                              [])),
                      "Number of instances with this node as secondary"),
        "pinst_list": ("PriInstances", constants.QFT_OTHER,
                       lambda item: list(item.ctx.primary.get(
                           item.node.uuid, [])),
                       "List of instances with this node as primary"),
        "sinst_list": ("SecInstances", constants.QFT_OTHER,
                       lambda item: list(item.ctx.secondary.get(
                           item.node.uuid, [])),
                       "List of instances with this node as secondary"),
        "ndparams": ("NodeParameters", constants.QFT_OTHER,
                     lambda item: item.NDParams(), "Merged node parameters"),
        "custom_ndparams": ("CustomNodeParameters", constants.QFT_OTHER,
                            lambda item: dict(item.node.ndparams or {}),
                            "Custom node parameters"),
        "powered": ("Powered", constants.QFT_BOOL, _NodePowered,
                    "Whether node is thought to be powered on"),
        "hv_state": ("HypervisorState", constants.QFT_OTHER,
                     lambda item: _MaybeUnavail(item.node.hv_state),
                     "Hypervisor state"),
        "disk_state": ("DiskState", constants.QFT_OTHER,
                       lambda item: _MaybeUnavail(item.node.disk_state),
                       "Disk state"),
    }
    table.update(_NDParamFields(lambda item: item.NDParams()))
    table.update(_ObjectFields("Node", "node"))
    table.update(_NodeLiveFields())
    return table


NODE_FIELDS = _BuildNodeFields()
# Fields whose values come from the nodes (node_info RPC)
NODE_LIVE_FIELDS = frozenset(_NodeLiveFields())
# Fields compared by name component in filters (MatchHostname)
NODE_HOSTNAME_FIELDS = frozenset(["name"])
