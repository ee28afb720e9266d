"""The OS definitions of the cluster: the ``os`` query resource and
LUOsDiagnose, plus the checks the cluster and instance LUs run against
the nodes' OS definitions.

OS definitions live on the nodes (each node has its own search path), so
every query asks the online vm_capable nodes (``os_diagnose`` RPC) and
combines their answers: an OS is valid only if it is valid on every node
that answered, and its variants, parameters and API versions are those
all nodes agree on.
"""

from typing import Any, Callable

from ganeti import constants, errors, qlang, query, utils
from ganeti.cmdlib.base import LogicalUnit, NoHooksLU
from ganeti.queryfields.oses import OS_FIELDS, OsInfo


def DiagnoseOSes(lu: NoHooksLU) -> dict[str, dict[str, list]]:
    """``{os name: {node name: [entries]}}`` from the online vm nodes.

    Every node that answered gets an entry for every OS any node has
    (empty where the OS is missing); nodes that failed are left out with
    a warning.
    """
    nodes = [node for node in lu.cfg.GetAllNodesInfo().values()
             if node.vm_capable and not node.offline]
    nodes.sort(key=lambda node: utils.NiceSortKey(node.name))
    if not nodes:
        return {}
    results = lu.rpc.call_os_diagnose([node.uuid for node in nodes])
    answers = {}
    for node in nodes:
        result = results[node.uuid]
        if result.fail_msg or not isinstance(result.payload, list):
            lu.LogWarning("Can't get the OS list of node %s: %s", node.name,
                          result.fail_msg or "invalid answer")
            continue
        answers[node.name] = result.payload
    all_os: dict[str, dict[str, list]] = {}
    for node_name, payload in answers.items():
        for entry in payload:
            name = entry[0]
            if name not in all_os:
                all_os[name] = {other: [] for other in answers}
            all_os[name][node_name].append(list(entry[1:]))
    return all_os


class OsQuery:
    """The ``os`` resource (served by LUQuery and LUOsDiagnose)."""

    FIELDS = OS_FIELDS

    def __init__(self, lu: NoHooksLU):
        self.lu = lu

    def Items(self) -> list[OsInfo]:
        cluster = self.lu.cfg.GetClusterInfo()
        return [OsInfo(name, status, cluster) for name, status
                in sorted(DiagnoseOSes(self.lu).items(),
                          key=lambda item: utils.NiceSortKey(item[0]))]

    def Query(self, fields: list[str], qfilter: Any) -> dict:
        return query.Query(self.FIELDS, self.Items(), fields, qfilter)


def _DiagnoseFilter(fields: list[str], names: list[str]) -> list | None:
    """Ganeti's implicit filter of OpOsDiagnose.

    Invalid, hidden and blacklisted OSes are left out unless the
    corresponding field is requested (then the caller sees the flag).
    """
    parts = []
    if names:
        parts.append([qlang.OP_OR] + [[qlang.OP_EQUAL, "name", name]
                                      for name in names])
    if "valid" not in fields:
        parts.append([qlang.OP_TRUE, "valid"])
    if "hidden" not in fields:
        parts.append([qlang.OP_NOT, [qlang.OP_TRUE, "hidden"]])
    if "blacklisted" not in fields:
        parts.append([qlang.OP_NOT, [qlang.OP_TRUE, "blacklisted"]])
    if not parts:
        return None
    return [qlang.OP_AND] + parts


class LUOsDiagnose(NoHooksLU):
    """Report the OS definitions as rows of the requested fields."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        unknown = [name for name in self.op.output_fields
                   if name not in OS_FIELDS]
        if unknown:
            raise errors.OpPrereqError("Unknown output fields selected: %s"
                                       % ", ".join(unknown),
                                       errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> list[list]:
        fields = self.op.output_fields
        match = query.CompileFilter(OS_FIELDS,
                                    _DiagnoseFilter(fields, self.op.names))
        getters = [OS_FIELDS[name][2] for name in fields]
        return [[get(info) for get in getters]
                for info in OsQuery(self).Items() if match(info)]


def CheckOSParams(lu: LogicalUnit, required: bool, node_uuids: list[str],
                  os_name: str, osparams: dict,
                  force_variant: bool = False) -> None:
    """Have the nodes validate an OS and its (filled) parameters.

    Offline and non-vm_capable nodes are skipped; a node lacking the OS
    only skips the validation unless ``required``.
    """
    nodes = [lu.cfg.GetNodeInfo(uuid) for uuid in node_uuids]
    targets = [node.uuid for node in nodes
               if node is not None and node.vm_capable and not node.offline]
    if not targets:
        return
    results = lu.rpc.call_os_validate(
        targets, required, os_name, [constants.OS_VALIDATE_PARAMETERS],
        osparams, force_variant)
    for uuid in targets:
        result = results[uuid]
        result.Raise("OS Parameters validation failed on node %s" %
                     result.node, prereq=True, ecode=errors.ECODE_INVAL)
        if not result.payload:
            lu.LogInfo("OS %s not found on node %s, validation skipped",
                       os_name, result.node)


def UpdateParams(old: dict, update: dict) -> dict:
    """``old`` with ``update`` applied; None or "default" removes a key."""
    result = dict(old)
    for key, value in update.items():
        if value is None or value == constants.VALUE_DEFAULT:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def ApplyOsListModifications(current: list[str], mods: list,
                             desc: str,
                             feedback_fn: Callable[[str], None]) -> list[str]:
    """Apply ``[[DDM_ADD|DDM_REMOVE, os_name], ...]`` to an OS list."""
    result = list(current)
    for action, os_name in mods:
        if action == constants.DDM_ADD:
            if os_name in result:
                feedback_fn("OS %s already in %s, ignoring" % (os_name, desc))
            else:
                result.append(os_name)
        elif os_name not in result:
            feedback_fn("OS %s not found in %s, ignoring" % (os_name, desc))
        else:
            result.remove(os_name)
    return result


def InstanceOsRpcDict(cluster: Any, instance: Any,
                      disks: list[dict]) -> dict:
    """The instance as the OS RPCs (instance_os_add, ...) take it.

    Cluster.InstanceRpcDict plus the filled OS parameters and ``disks``,
    the instance's disk dicts in order, each with ``dev_path`` (the
    device or image file on the primary node, as the storage layer
    reports it).
    """
    result = cluster.InstanceRpcDict(instance)
    result["osparams"] = cluster.SimpleFillOS(instance.os, instance.osparams,
                                              instance.osparams_private)
    result.pop("osparams_private", None)
    result["disks"] = disks
    return result
