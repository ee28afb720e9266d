"""The fields of the node group resource: the group's configuration, its
members and its parameters merged with the cluster's.
"""

from typing import Any, Callable

from ganeti import constants, objects
from ganeti.query import FieldTable, _NDParamFields, _ObjectFields


class GroupQueryData:
    """What the group fields are computed from, gathered once per query.

    ``nodes``/``instances`` map group UUIDs to the (sorted) names of the
    group's nodes and of the instances whose primary node is in it.
    """

    def __init__(self, groups: list[objects.NodeGroup],
                 cluster: objects.Cluster, nodes: dict[str, list[str]],
                 instances: dict[str, list[str]]):
        self.groups = groups
        self.cluster = cluster
        self.nodes = nodes
        self.instances = instances

    def Items(self) -> list["GroupItem"]:
        return [GroupItem(self, group) for group in self.groups]


class GroupItem:
    """One row of a group query: the group and the query's data."""

    __slots__ = ("ctx", "group")

    def __init__(self, ctx: GroupQueryData, group: objects.NodeGroup):
        self.ctx = ctx
        self.group = group

    def NDParams(self) -> dict:
        return self.ctx.cluster.SimpleFillND(self.group.ndparams)


def _BuildGroupFields() -> FieldTable:
    def attr(name: str) -> Callable[[GroupItem], Any]:
        return lambda item: getattr(item.group, name)

    def members(kind: str) -> Callable[[GroupItem], list[str]]:
        return lambda item: list(getattr(item.ctx, kind).get(
            item.group.uuid, []))

    table: FieldTable = {
        "name": ("Group", constants.QFT_TEXT, attr("name"), "Group name"),
        "alloc_policy": ("AllocPolicy", constants.QFT_TEXT,
                         attr("alloc_policy"), "Allocation policy for group"),
        "node_cnt": ("Nodes", constants.QFT_NUMBER,
                     lambda item: len(members("nodes")(item)),
                     "Number of nodes"),
        "node_list": ("NodeList", constants.QFT_OTHER, members("nodes"),
                      "List of nodes"),
        "pinst_cnt": ("Instances", constants.QFT_NUMBER,
                      lambda item: len(members("instances")(item)),
                      "Number of primary instances"),
        "pinst_list": ("InstanceList", constants.QFT_OTHER,
                       members("instances"), "List of primary instances"),
        "ndparams": ("NDParams", constants.QFT_OTHER,
                     lambda item: item.NDParams(), "Node parameters"),
        "custom_ndparams": ("CustomNDParams", constants.QFT_OTHER,
                            lambda item: dict(item.group.ndparams or {}),
                            "Custom node parameters"),
        "diskparams": ("DiskParameters", constants.QFT_OTHER,
                       lambda item: item.ctx.cluster.SimpleFillDP(
                           item.group.diskparams),
                       "Disk parameters (merged)"),
        "custom_diskparams": ("CustomDiskParameters", constants.QFT_OTHER,
                              lambda item: dict(item.group.diskparams or {}),
                              "Custom disk parameters"),
        "ipolicy": ("InstancePolicy", constants.QFT_OTHER,
                    lambda item: item.ctx.cluster.SimpleFillIPolicy(
                        item.group.ipolicy),
                    "Instance policy limitations (merged)"),
        "custom_ipolicy": ("CustomInstancePolicy", constants.QFT_OTHER,
                           lambda item: dict(item.group.ipolicy or {}),
                           "Custom instance policy limitations"),
    }
    table.update(_NDParamFields(lambda item: item.NDParams()))
    table.update(_ObjectFields("Group", "group"))
    return table


GROUP_FIELDS = _BuildGroupFields()
