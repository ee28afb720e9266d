"""LUs answering queries of the node and group resources.

``OpQuery`` dispatches on the resource to a query class that gathers what
the fields of the resource's table (in the registry, queryfields) need:
config objects always, live node data only when a live field is requested
or filtered on; ``OpQueryFields`` reads the registry only. masterd runs
these opcodes directly (without the queue) for the LUXI
``Query``/``QueryFields`` calls.
"""

from typing import Any, Callable

from ganeti import constants, errors, query, queryfields, utils
from ganeti.cmdlib import backup, instance_query, operating_system
from ganeti.cmdlib import network as cmdlib_network
from ganeti.cmdlib.base import (ExpandNodeUuidAndName, NoHooksLU,
                                 SelectQueryItems)
from ganeti.queryfields import filters as qf_filters
from ganeti.queryfields import groups as qf_groups
from ganeti.queryfields import networks as qf_networks
from ganeti.queryfields import nodes as qf_nodes
from ganeti.rpc import node as rpc_node


def _QueryError(err: errors.ParameterError) -> errors.OpPrereqError:
    return errors.OpPrereqError(str(err), errors.ECODE_INVAL)


class _NodeQuery:
    """The ``node`` resource."""

    FIELDS = queryfields.FIELDS[constants.QR_NODE]

    def __init__(self, lu: NoHooksLU):
        self.cfg = lu.cfg
        self.rpc = lu.rpc
        self.lu = lu

    def _Nodes(self, qfilter: Any) -> tuple[list, Any]:
        """The nodes to look at and the filter still to apply to them."""
        return SelectQueryItems(
            qfilter, lambda: self.cfg.GetAllNodesInfo().values(),
            lambda name: ExpandNodeUuidAndName(self.cfg, None, name)[0],
            self.cfg.GetNodeInfo)

    def _InstanceMaps(self) -> tuple[dict, dict]:
        """Each node's primary and secondary instance names, in name
        order; read from one uncopied view (every node query, also
        maintd's and the watcher's polls, needs all instances)."""
        primary: dict[str, list[str]] = {}
        secondary: dict[str, list[str]] = {}
        view = self.cfg.GetView()
        for inst in view.InstancesByName():
            primary.setdefault(inst.primary_node, []).append(inst.name)
            seen = {inst.primary_node}
            for disk_uuid in inst.disks:
                disk = view.disks.get(disk_uuid)
                for node_uuid in (disk.nodes if disk else None) or ():
                    if node_uuid not in seen:
                        seen.add(node_uuid)
                        secondary.setdefault(node_uuid, []).append(inst.name)
        return primary, secondary

    def _StorageDirs(self) -> list[str] | None:
        """The file storage directory instances use, if any is enabled."""
        cluster = self.cfg.GetClusterInfo()
        templates = cluster.enabled_disk_templates
        for template, path in (
                (constants.DT_FILE, cluster.file_storage_dir),
                (constants.DT_SHARED_FILE, cluster.shared_file_storage_dir)):
            if template in templates and path:
                return [rpc_node.EncodeVirtualPath(path)]
        return None

    def _LiveData(self, nodes: list) -> tuple[dict, bool]:
        """node_info answers of the online vm_capable nodes that gave one.

        Nodes that fail are left out (their live fields show "no data");
        offline ones are not contacted at all. The primary hypervisor's
        figures replace the host's, as Ganeti's legacy node info does:
        its free memory is what instances may still take (the fake
        hypervisor's instances hold some), so that mtotal = mnode + mfree
        + the running instances' memory, as the htools check.
        """
        targets = [node.uuid for node in nodes
                   if node.vm_capable and not node.offline]
        storage_dirs = self._StorageDirs()
        if not targets:
            return {}, storage_dirs is not None
        hv_names = [self.cfg.GetClusterInfo().primary_hypervisor]
        results = self.rpc.call_node_info(targets, storage_dirs or [],
                                          hv_names)
        live = {}
        for uuid, result in results.items():
            if result.fail_msg or not isinstance(result.payload, dict):
                self.lu.LogWarning("Can't get data for node %s: %s",
                                   result.node, result.fail_msg)
                continue
            payload = dict(result.payload)
            hv_info = (payload.get("hv") or {}).get(hv_names[0])
            if isinstance(hv_info, dict):
                payload.update(hv_info)
            live[uuid] = payload
        return live, storage_dirs is not None

    def Query(self, fields: list[str], qfilter: Any) -> dict:
        nodes, remaining_filter = self._Nodes(qfilter)
        wanted = set(fields) | query.FilterFields(remaining_filter)
        live_data, storage = None, False
        if wanted & qf_nodes.NODE_LIVE_FIELDS:
            live_data, storage = self._LiveData(nodes)
        primary, secondary = self._InstanceMaps()
        data = qf_nodes.NodeQueryData(
            nodes, self.cfg.GetMasterNode(), self.cfg.GetAllNodeGroupsInfo(),
            self.cfg.GetClusterInfo(), primary, secondary,
            live_data=live_data, storage=storage)
        return query.Query(self.FIELDS, data.Items(), fields,
                           remaining_filter,
                           hostname_fields=qf_nodes.NODE_HOSTNAME_FIELDS)


class _GroupQuery:
    """The ``group`` resource."""

    FIELDS = queryfields.FIELDS[constants.QR_GROUP]

    def __init__(self, lu: NoHooksLU):
        self.cfg = lu.cfg

    def _Groups(self, qfilter: Any) -> tuple[list, Any]:
        return SelectQueryItems(
            qfilter, lambda: self.cfg.GetAllNodeGroupsInfo().values(),
            self.cfg.LookupNodeGroup, self.cfg.GetNodeGroup)

    def Query(self, fields: list[str], qfilter: Any) -> dict:
        groups, remaining_filter = self._Groups(qfilter)
        nodes = self.cfg.GetAllNodesInfo()
        members: dict[str, list[str]] = {}
        for node in nodes.values():
            members.setdefault(node.group, []).append(node.name)
        instances: dict[str, list[str]] = {}
        for inst in self.cfg.GetAllInstancesInfo().values():
            node = nodes.get(inst.primary_node)
            if node is not None:
                instances.setdefault(node.group, []).append(inst.name)
        for names in list(members.values()) + list(instances.values()):
            names.sort(key=utils.NiceSortKey)
        data = qf_groups.GroupQueryData(groups, self.cfg.GetClusterInfo(),
                                        members, instances)
        return query.Query(self.FIELDS, data.Items(), fields,
                           remaining_filter)


class _FilterQuery:
    """The ``filter`` resource: the job filter rules, in evaluation order."""

    FIELDS = queryfields.FIELDS[constants.QR_FILTER]

    def __init__(self, lu: NoHooksLU):
        self.cfg = lu.cfg

    def Query(self, fields: list[str], qfilter: Any) -> dict:
        uuids = query.RequestedNames(qfilter, namefield="uuid")
        rules = qf_filters.GetRules(self.cfg, uuids)
        return query.Query(self.FIELDS, rules, fields,
                           qfilter if uuids is None else None)


class _NetworkQuery:
    """The ``network`` resource."""

    FIELDS = queryfields.FIELDS[constants.QR_NETWORK]

    def __init__(self, lu: NoHooksLU):
        self.cfg = lu.cfg

    def _LookupNetwork(self, name: str) -> str:
        return cmdlib_network.LookupNetwork(self.cfg, name)

    def Query(self, fields: list[str], qfilter: Any) -> dict:
        networks, remaining_filter = SelectQueryItems(
            qfilter, lambda: self.cfg.GetAllNetworksInfo().values(),
            self._LookupNetwork, self.cfg.GetNetwork)
        items = qf_networks.NetworkItems(
            networks, list(self.cfg.GetAllNodeGroupsInfo().values()),
            list(self.cfg.GetAllInstancesInfo().values()))
        return query.Query(self.FIELDS, items, fields, remaining_filter)


# Resource name -> query class (constructed with the LU)
_QUERIES: dict[str, Callable[[NoHooksLU], Any]] = {
    constants.QR_NODE: _NodeQuery,
    constants.QR_GROUP: _GroupQuery,
    constants.QR_FILTER: _FilterQuery,
    constants.QR_NETWORK: _NetworkQuery,
    constants.QR_OS: operating_system.OsQuery,
    constants.QR_INSTANCE: instance_query.InstanceQuery,
    constants.QR_EXPORT: backup.ExportQuery,
}


def _GetQueryClass(what: str) -> Callable[[NoHooksLU], Any]:
    try:
        return _QUERIES[what]
    except KeyError:
        raise errors.OpPrereqError("Resource type '%s' unknown" % what,
                                   errors.ECODE_INVAL) from None


class LUQuery(NoHooksLU):
    """Query a resource; reads one consistent configuration, no locks."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        self._impl_class = _GetQueryClass(self.op.what)
        if self.op.use_locking:
            raise errors.OpPrereqError("Queries with locking are not"
                                       " supported", errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> dict:
        try:
            return self._impl_class(self).Query(self.op.fields,
                                                self.op.qfilter)
        except errors.ParameterError as err:
            raise _QueryError(err)


class LUQueryFields(NoHooksLU):
    """Describe the fields of a resource."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        _GetQueryClass(self.op.what)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> dict:
        return query.QueryFields(queryfields.GetFields(self.op.what),
                                 self.op.fields)
