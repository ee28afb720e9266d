"""LUs of the cluster's named aggregates (gnt-cluster aggregate ...).

They change the cluster object only, under the Big Ganeti Lock held
exclusively, so they never race with a node joining or leaving one.
"""

from typing import Any, Callable

from ganeti import errors, objects
from ganeti.cmdlib.base import NoHooksLU
from ganeti.placement import cluster as pcluster


def _CheckNameFree(cfg: Any, name: str) -> None:
    """A new aggregate name must name nothing yet: no named aggregate and
    no node group (whose aggregates are looked up by name too)."""
    cluster = cfg.GetClusterInfo()
    if pcluster.FindNamedAggregate(cluster, name) is not None:
        raise errors.OpPrereqError("Aggregate '%s' already exists" % name,
                                   errors.ECODE_EXISTS)
    if any(group.name == name or uuid == name for uuid, group
           in cfg.GetAllNodeGroupsInfo().items()):
        raise errors.OpPrereqError("'%s' is a node group's name, already"
                                   " an aggregate" % name,
                                   errors.ECODE_EXISTS)


class LUClusterAggregateAdd(NoHooksLU):
    """Create a named aggregate; returns its UUID."""

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def CheckPrereq(self) -> None:
        _CheckNameFree(self.cfg, self.op.name)

    def Exec(self, feedback_fn: Callable[[str], None]) -> str:
        cluster = self.cfg.GetClusterInfo()
        uuid = self.cfg.GenerateUniqueID()
        aggregates = dict(pcluster.NamedAggregates(cluster))
        aggregates[uuid] = {"name": self.op.name,
                            "metadata": dict(self.op.metadata)}
        cluster.aggregates = aggregates
        self.cfg.Update(cluster, feedback_fn)
        return uuid


class LUClusterAggregateRemove(NoHooksLU):
    """Remove a named aggregate that no node is in."""

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def CheckPrereq(self) -> None:
        self.uuid = pcluster.LookupNamedAggregate(self.cfg.GetClusterInfo(),
                                                  self.op.name)
        members = [node.name for node in self.cfg.GetAllNodesInfo().values()
                   if self.uuid in (node.aggregates or ())]
        if members:
            raise errors.OpPrereqError(
                "Aggregate '%s' still contains node(s) %s; remove them"
                " first (gnt-node modify --remove-aggregates)" %
                (self.op.name, ", ".join(sorted(members))),
                errors.ECODE_STATE)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        cluster = self.cfg.GetClusterInfo()
        aggregates = dict(pcluster.NamedAggregates(cluster))
        del aggregates[self.uuid]
        cluster.aggregates = aggregates or None
        self.cfg.Update(cluster, feedback_fn)


class LUClusterAggregateRename(NoHooksLU):
    """Rename a named aggregate; returns the new name."""

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def CheckPrereq(self) -> None:
        self.uuid = pcluster.LookupNamedAggregate(self.cfg.GetClusterInfo(),
                                                  self.op.name)
        _CheckNameFree(self.cfg, self.op.new_name)

    def Exec(self, feedback_fn: Callable[[str], None]) -> str:
        cluster = self.cfg.GetClusterInfo()
        aggregates = dict(pcluster.NamedAggregates(cluster))
        aggregates[self.uuid] = dict(aggregates[self.uuid],
                                     name=self.op.new_name)
        cluster.aggregates = aggregates
        self.cfg.Update(cluster, feedback_fn)
        return self.op.new_name


def _Describe(uuid: str, name: str, metadata: dict, group: bool,
              nodes: list[objects.Node]) -> dict:
    return {"uuid": uuid, "name": name, "metadata": metadata,
            "node_group": group,
            "nodes": sorted(node.name for node in nodes)}


class LUClusterAggregateQuery(NoHooksLU):
    """Every aggregate (or those named), named ones first, with its
    metadata and nodes."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> list[dict]:
        view = self.cfg.GetView()
        nodes = list(view.nodes.values())
        result = []
        for uuid, agg in sorted(pcluster.NamedAggregates(view.cluster).items(),
                                key=lambda item: item[1]["name"]):
            result.append(_Describe(
                uuid, agg["name"], agg["metadata"], False,
                [node for node in nodes if uuid in (node.aggregates or ())]))
        for uuid, group in sorted(view.nodegroups.items(),
                                  key=lambda item: item[1].name):
            result.append(_Describe(
                uuid, group.name, {}, True,
                [node for node in nodes if node.group == uuid]))
        if not self.op.names:
            return result
        wanted = [pcluster.LookupAggregate(view.cluster, view.nodegroups,
                                           name) for name in self.op.names]
        by_uuid = {item["uuid"]: item for item in result}
        return [by_uuid[uuid] for uuid in wanted]
