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

from ganeti import config, constants, errors, qlang, query
from ganeti.cmdlib.base import NoHooksLU

# Indexes in a node_status entry: the os_diagnose answer without the name,
# [path, valid, reason, variants, parameters, api_versions, trusted]
_NS_STATUS = 1
_NS_VARIANTS = 3
_NS_PARAMS = 4
_NS_API = 5
_NS_TRUSTED = 6


class OsInfo:
    """One OS as seen by the whole cluster (a row of the os query)."""

    __slots__ = ("name", "valid", "hidden", "blacklisted", "variants",
                 "api_versions", "parameters", "node_status", "os_hvp",
                 "osparams", "trusted")

    def __init__(self, name: str, node_status: dict[str, list],
                 cluster: Any):
        self.name = name
        self.node_status = node_status
        self.hidden = name in (cluster.hidden_os or [])
        self.blacklisted = name in (cluster.blacklisted_os or [])
        self.os_hvp = dict((cluster.os_hvp or {}).get(name, {}))
        self.osparams = dict((cluster.osparams or {}).get(name, {}))
        self.valid = True
        self.trusted = True
        variants: set[str] | None = None
        params: set[tuple[str, str]] | None = None
        api: set[int] | None = None
        for entries in node_status.values():
            if not entries or not entries[0][_NS_STATUS]:
                self.valid = False
                break
            first = entries[0]
            node_params = {tuple(pair) for pair in first[_NS_PARAMS]}
            if variants is None:
                variants = set(first[_NS_VARIANTS])
                params = node_params
                api = set(first[_NS_API])
            else:
                variants &= set(first[_NS_VARIANTS])
                params &= node_params
                api &= set(first[_NS_API])
            self.trusted = self.trusted and bool(first[_NS_TRUSTED])
        if not self.valid:
            variants, params, api = set(), set(), set()
        self.variants = sorted(variants or [])
        self.parameters = [list(pair) for pair in sorted(params or [])]
        self.api_versions = sorted(api or [])


def _BuildOsFields() -> query.FieldTable:
    def attr(name: str) -> Callable[[OsInfo], Any]:
        return lambda info: getattr(info, name)

    return {
        "name": ("Name", constants.QFT_TEXT, attr("name"),
                 "Operating system name"),
        "valid": ("Valid", constants.QFT_BOOL, attr("valid"),
                  "Whether operating system definition is valid"),
        "hidden": ("Hidden", constants.QFT_BOOL, attr("hidden"),
                   "Whether operating system is hidden"),
        "blacklisted": ("Blacklisted", constants.QFT_BOOL,
                        attr("blacklisted"),
                        "Whether operating system is blacklisted"),
        "variants": ("Variants", constants.QFT_OTHER, attr("variants"),
                     "Operating system variants"),
        "api_versions": ("ApiVersions", constants.QFT_OTHER,
                         attr("api_versions"),
                         "Operating system API versions"),
        "parameters": ("Parameters", constants.QFT_OTHER,
                       attr("parameters"),
                       "Operating system parameters"),
        "node_status": ("NodeStatus", constants.QFT_OTHER,
                        attr("node_status"),
                        "Status from node, one [path, valid, reason,"
                        " variants, parameters, api_versions, trusted]"
                        " entry per directory the OS was found in"),
        "os_hvp": ("OsHypervisorParams", constants.QFT_OTHER, attr("os_hvp"),
                   "Operating system specific hypervisor parameters"),
        "osparams": ("OsParameters", constants.QFT_OTHER, attr("osparams"),
                     "Operating system specific parameters"),
        "trusted": ("Trusted", constants.QFT_BOOL, attr("trusted"),
                    "Whether this OS is trusted"),
    }


OS_FIELDS = _BuildOsFields()


def DiagnoseOSes(lu: NoHooksLU) -> dict[str, dict[str, list]]:
    """``{os name: {node name: [entries]}}`` from the online vm nodes.

    Every node that answered gets an entry for every OS any node has
    (empty where the OS is missing); nodes that failed are left out with
    a warning.
    """
    nodes = [node for node in lu.cfg.GetAllNodesInfo().values()
             if node.vm_capable and not node.offline]
    nodes.sort(key=lambda node: config.NiceSortKey(node.name))
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
                          key=lambda item: config.NiceSortKey(item[0]))]

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


def CheckOSParams(lu: NoHooksLU, required: bool, node_uuids: list[str],
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
