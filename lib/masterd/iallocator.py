"""Instance allocators: the input message, running one, checking its answer.

An allocator gets the whole cluster as a protocol-version-2 message (the
layout Ganeti's allocators, hail included, read) plus one request, and
answers ``{"success", "info", "result"}``. External programs are run on
the master through noded (RPC ``iallocator_runner``), found by name in the
configured search path; the built-in ``halloc`` runs in-process. Every
answer is checked before use, so a broken allocator is an error naming it
and never a half-done operation.
"""

import importlib
import logging
from typing import Any

from ganeti import constants, errors, ht, objects, serializer
from ganeti.placement import cluster as pcluster
from ganeti.utils import tunable

# Opcodes an evacuation or group-change answer may contain
_EVAC_OPCODES = frozenset(["OP_INSTANCE_FAILOVER", "OP_INSTANCE_MIGRATE",
                           "OP_INSTANCE_REPLACE_DISKS"])
_TNevacMoved = ht.TListOf(ht.TTupleOf(
    ht.TNonEmptyString, ht.TNonEmptyString, ht.TListOf(ht.TNonEmptyString)))
_TNevacFailed = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString,
                                       ht.TMaybeString))
_TJobs = ht.TListOf(ht.TListOf(ht.TDict))
_TNevacResult = ht.TTupleOf(_TNevacMoved, _TNevacFailed, _TJobs)
_TMultiResult = ht.TTupleOf(
    ht.TListOf(ht.TTupleOf(ht.TNonEmptyString,
                           ht.TListOf(ht.TNonEmptyString))),
    ht.TListOf(ht.TNonEmptyString))

# Environment variable overriding constants.IALLOCATOR_TIMEOUT (seconds)
ENV_TIMEOUT = "GANETI_IALLOCATOR_TIMEOUT"


def _Timeout() -> float:
    """How long an allocator program may run."""
    return tunable.Seconds(ENV_TIMEOUT, constants.IALLOCATOR_TIMEOUT)


def DiskSpaceTotal(disks: list[dict], template: str) -> int:
    """Space (MiB) the disks need on a node: diskless and adopted
    devices take none, every other template their sizes."""
    if template in (constants.DT_DISKLESS, constants.DT_BLOCK):
        return 0
    return sum(int(disk.get("size") or 0) for disk in disks)


def _StorageDir(cluster: objects.Cluster, template: str) -> str | None:
    """The directory whose space the message reports for a template;
    drbd images live below the file storage directory (storage.drbd)."""
    return {constants.DT_FILE: cluster.file_storage_dir,
            constants.DT_DRBD8: cluster.file_storage_dir,
            constants.DT_SHARED_FILE:
            cluster.shared_file_storage_dir}.get(template)


class IARequest:
    """One allocator request: its type, the ``request`` part of the
    message and the check of the result."""

    MODE = ""
    RESULT_CHECK: Any = ht.TAny

    def GetRequest(self, cfg: Any) -> dict:
        raise NotImplementedError

    def Hypervisor(self, cfg: Any) -> str:
        """The hypervisor whose node data the message reports."""
        return cfg.GetClusterInfo().primary_hypervisor

    def DiskTemplate(self, cfg: Any) -> str:
        """The template whose storage the message reports."""
        return cfg.GetClusterInfo().enabled_disk_templates[0]

    def ExtraParams(self) -> dict:
        """Command line parameters of this request type."""
        return {}

    def ValidateResult(self, ia: "IAllocator", result: Any) -> None:
        """Raise ValueError saying why ``result`` is unusable."""
        if not self.RESULT_CHECK(result):
            raise ValueError("expected %s, got %r" %
                             (self.RESULT_CHECK, result))


class IAReqInstanceAlloc(IARequest):
    """Nodes for a new instance (``allocate``)."""

    MODE = constants.IALLOCATOR_MODE_ALLOC
    RESULT_CHECK = ht.TListOf(ht.TNonEmptyString)

    def __init__(self, name: str, disk_template: str, memory: int,
                 vcpus: int, spindle_use: int, disks: list[dict],
                 nics: list[dict], os: str, tags: list[str],
                 hypervisor: str, group_name: str | None = None,
                 node_whitelist: list[str] | None = None,
                 member_of: list[str] | None = None):
        self.name = name
        self.disk_template = disk_template
        self.memory = memory
        self.vcpus = vcpus
        self.spindle_use = spindle_use
        self.disks = disks
        self.nics = nics
        self.os = os
        self.tags = tags
        self.hypervisor = hypervisor
        self.group_name = group_name
        self.node_whitelist = node_whitelist
        # Resolved (aggregate UUIDs only), see pcluster.ResolveMemberOf
        self.member_of = member_of

    def RequiredNodes(self) -> int:
        return 2 if self.disk_template in constants.DTS_INT_MIRROR else 1

    def Hypervisor(self, cfg: Any) -> str:
        return self.hypervisor

    def DiskTemplate(self, cfg: Any) -> str:
        return self.disk_template

    def GetRequest(self, cfg: Any) -> dict:
        disks = [{"size": int(disk.get("size") or 0),
                  "mode": disk.get("mode") or objects.DISK_RDWR,
                  "spindles": disk.get("spindles"),
                  "dev_type": self.disk_template} for disk in self.disks]
        request = {
            "name": self.name, "disk_template": self.disk_template,
            "group_name": self.group_name, "tags": list(self.tags),
            "os": self.os, "vcpus": self.vcpus, "memory": self.memory,
            "spindle_use": self.spindle_use, "disks": disks,
            "disk_space_total": DiskSpaceTotal(disks, self.disk_template),
            "nics": self.nics, "required_nodes": self.RequiredNodes(),
            "hypervisor": self.hypervisor,
        }
        if self.node_whitelist is not None:
            request["restrict-to-nodes"] = list(self.node_whitelist)
        _WithMemberOf(request, self.member_of)
        return request

    def ValidateResult(self, ia: "IAllocator", result: Any) -> None:
        super().ValidateResult(ia, result)
        if len(result) != self.RequiredNodes():
            raise ValueError("%d node(s) returned, %d required" %
                             (len(result), self.RequiredNodes()))
        if len(set(result)) != len(result):
            raise ValueError("the same node returned twice: %s" %
                             ", ".join(result))
        ia.CheckUsableNodes(result, self.node_whitelist, self.group_name)


class IAReqInstanceAllocateSecondary(IARequest):
    """A secondary node for an instance (``allocate-secondary``)."""

    MODE = constants.IALLOCATOR_MODE_ALLOCATE_SECONDARY
    RESULT_CHECK = ht.TNonEmptyString

    def __init__(self, name: str):
        self.name = name

    def GetRequest(self, cfg: Any) -> dict:
        return {"name": self.name}

    def ValidateResult(self, ia: "IAllocator", result: Any) -> None:
        super().ValidateResult(ia, result)
        ia.CheckUsableNodes([result], None, None)


class IAReqMultiInstanceAlloc(IARequest):
    """Nodes for several new instances (``multi-allocate``)."""

    MODE = constants.IALLOCATOR_MODE_MULTI_ALLOC
    RESULT_CHECK = _TMultiResult

    def __init__(self, instances: list[IAReqInstanceAlloc]):
        self.instances = instances

    def Hypervisor(self, cfg: Any) -> str:
        return self.instances[0].hypervisor if self.instances else \
            super().Hypervisor(cfg)

    def DiskTemplate(self, cfg: Any) -> str:
        return self.instances[0].disk_template if self.instances else \
            super().DiskTemplate(cfg)

    def GetRequest(self, cfg: Any) -> dict:
        return {"instances": [req.GetRequest(cfg)
                              for req in self.instances]}

    def ValidateResult(self, ia: "IAllocator", result: Any) -> None:
        super().ValidateResult(ia, result)
        by_name = {req.name: req for req in self.instances}
        allocated, failed = result
        names = [name for name, _ in allocated] + list(failed)
        if sorted(names) != sorted(by_name):
            raise ValueError("the instances allocated and failed (%s) are"
                             " not the ones requested (%s)" %
                             (", ".join(sorted(names)),
                              ", ".join(sorted(by_name))))
        for name, nodes in allocated:
            req = by_name[name]
            if len(nodes) != req.RequiredNodes():
                raise ValueError("%d node(s) returned for instance %s, %d"
                                 " required" % (len(nodes), name,
                                                req.RequiredNodes()))
            ia.CheckUsableNodes(nodes, req.node_whitelist, req.group_name)


def _WithMemberOf(request: dict, member_of: list[str] | None) -> dict:
    """Our extension of allocate, relocate and node-evacuate requests:
    Placement ``member_of`` values (aggregate UUIDs), ANDed, that the
    chosen nodes must satisfy."""
    if member_of:
        request["member_of"] = list(member_of)
    return request


class IAReqRelocate(IARequest):
    """A new secondary node for a mirrored instance (``relocate``)."""

    MODE = constants.IALLOCATOR_MODE_RELOC
    RESULT_CHECK = ht.TListOf(ht.TNonEmptyString)

    def __init__(self, inst_uuid: str, relocate_from_node_uuids: list[str],
                 member_of: list[str] | None = None):
        self.inst_uuid = inst_uuid
        self.relocate_from_node_uuids = relocate_from_node_uuids
        self.member_of = member_of

    def Hypervisor(self, cfg: Any) -> str:
        return cfg.GetInstanceInfo(self.inst_uuid).hypervisor

    def DiskTemplate(self, cfg: Any) -> str:
        return cfg.GetInstanceDiskTemplate(self.inst_uuid)

    def GetRequest(self, cfg: Any) -> dict:
        instance = cfg.GetInstanceInfo(self.inst_uuid)
        disks = cfg.GetInstanceDisks(self.inst_uuid)
        # A diskless instance counts as mirrored (Ganeti's AllDiskOfType)
        if any(disk.dev_type not in constants.DTS_MIRRORED
               for disk in disks):
            raise errors.OpPrereqError("Can't relocate non-mirrored"
                                       " instances", errors.ECODE_INVAL)
        request = {
            "name": instance.name,
            "disk_space_total": DiskSpaceTotal(
                [{"size": disk.size} for disk in disks],
                cfg.GetInstanceDiskTemplate(self.inst_uuid)),
            "required_nodes": 1,
            "relocate_from": cfg.GetNodeNames(self.relocate_from_node_uuids),
        }
        return _WithMemberOf(request, self.member_of)

    def ValidateResult(self, ia: "IAllocator", result: Any) -> None:
        super().ValidateResult(ia, result)
        if len(result) != 1:
            raise ValueError("%d node(s) returned, 1 required" % len(result))
        ia.CheckUsableNodes(result, None, None)
        instance = ia.cfg.GetInstanceInfo(self.inst_uuid)
        old = {ia.cfg.GetNodeInfo(uuid).group for uuid
               in self.relocate_from_node_uuids + [instance.primary_node]}
        new = ia.cfg.GetNodeInfoByName(result[0]).group
        if new not in old:
            raise ValueError("node %s is in another node group than the"
                             " instance's" % result[0])


class _IAReqEvacBase(IARequest):
    """Answers are ``[moved, failed, jobs]`` with jobs of opcodes."""

    RESULT_CHECK = _TNevacResult
    # The opcodes its jobs may contain
    OPCODES = _EVAC_OPCODES
    # Instance name -> its own further member_of values (the cluster's
    # reservation defaults, which depend on the instance's tags)
    instance_member_of: dict[str, list[str]] | None = None

    def _WithInstanceMemberOf(self, request: dict) -> dict:
        if self.instance_member_of:
            request["instance_member_of"] = {
                name: list(values)
                for name, values in self.instance_member_of.items()}
        return request

    def ValidateResult(self, ia: "IAllocator", result: Any) -> None:
        super().ValidateResult(ia, result)
        from ganeti import opcodes  # the request layer is below opcodes'
        moved, _, jobs = result
        for inst_name, _, nodes in moved:
            if ia.cfg.GetInstanceInfoByName(inst_name) is None:
                raise ValueError("unknown instance %s moved" % inst_name)
            ia.CheckUsableNodes(nodes, None, None)
        for job in jobs:
            for op_data in job:
                op_id = op_data.get("OP_ID")
                if op_id not in self.OPCODES:
                    raise ValueError("opcode %r is not one of %s" %
                                     (op_id, ", ".join(sorted(
                                         self.OPCODES))))
                try:
                    opcodes.OpCode.LoadOpCode(op_data).Validate(False)
                except (errors.GenericError, TypeError, ValueError) as err:
                    raise ValueError("invalid opcode %s: %s" %
                                     (op_id, err)) from None


class IAReqNodeEvac(_IAReqEvacBase):
    """Moves emptying nodes of instances (``node-evacuate``)."""

    MODE = constants.IALLOCATOR_MODE_NODE_EVAC

    def __init__(self, instances: list[str], evac_mode: str,
                 ignore_soft_errors: bool = False,
                 member_of: list[str] | None = None,
                 instance_member_of: dict[str, list[str]] | None = None):
        self.instances = instances
        self.evac_mode = evac_mode
        self.ignore_soft_errors = ignore_soft_errors
        self.member_of = member_of
        self.instance_member_of = instance_member_of

    def GetRequest(self, cfg: Any) -> dict:
        return self._WithInstanceMemberOf(_WithMemberOf(
            {"instances": list(self.instances),
             "evac_mode": self.evac_mode}, self.member_of))

    def ExtraParams(self) -> dict:
        return {"ignore-soft-errors": None} if self.ignore_soft_errors \
            else {}


class IAReqGroupChange(_IAReqEvacBase):
    """Moves of instances to other node groups (``change-group``)."""

    MODE = constants.IALLOCATOR_MODE_CHG_GROUP
    # plain and file instances change group by a copy of their disks
    OPCODES = _EVAC_OPCODES | {"OP_INSTANCE_MOVE"}

    def __init__(self, instances: list[str], target_groups: list[str],
                 instance_member_of: dict[str, list[str]] | None = None):
        self.instances = instances
        self.target_groups = target_groups
        self.instance_member_of = instance_member_of

    def _First(self, cfg: Any) -> objects.Instance | None:
        return cfg.GetInstanceInfoByName(self.instances[0]) \
            if self.instances else None

    def Hypervisor(self, cfg: Any) -> str:
        inst = self._First(cfg)
        return inst.hypervisor if inst else super().Hypervisor(cfg)

    def DiskTemplate(self, cfg: Any) -> str:
        # the storage a copied plain or file instance needs on the target
        inst = self._First(cfg)
        return cfg.GetInstanceDiskTemplate(inst.uuid) if inst else \
            super().DiskTemplate(cfg)

    def GetRequest(self, cfg: Any) -> dict:
        return self._WithInstanceMemberOf(
            {"instances": list(self.instances),
             "target_groups": list(self.target_groups)})


class IAllocator:
    """The message for one request, and running an allocator on it.

    ``rpc`` is the LU's RPC runner: node data comes from the nodes'
    ``node_info``/``all_instances_info`` and external programs run on the
    master through ``iallocator_runner``. After :meth:`Run`, ``success``,
    ``info``, ``result`` and ``explanation`` hold the checked answer.
    """

    def __init__(self, cfg: Any, rpc: Any, req: IARequest):
        self.cfg = cfg
        self.rpc = rpc
        self.req = req
        self.success = False
        self.info = ""
        self.result: Any = None
        self.explanation: str | None = None
        self.out_text = ""
        self.in_data = self._BuildInputData()
        self.in_text = serializer.DumpJson(self.in_data)

    # The input message ---------------------------------------------------

    def _BuildInputData(self) -> dict:
        cfg = self.cfg
        cluster = cfg.GetClusterInfo()
        request = self.req.GetRequest(cfg)
        request["type"] = self.req.MODE
        groups = cfg.GetAllNodeGroupsInfo()
        nodes = cfg.GetAllNodesInfo()
        instances = cfg.GetAllInstancesInfo()
        filled_be = {uuid: cluster.FillBE(inst)
                     for uuid, inst in instances.items()}
        data = {
            "version": constants.IALLOCATOR_VERSION,
            "cluster_name": cluster.cluster_name,
            "cluster_tags": sorted(cluster.GetTags()),
            "enabled_hypervisors": list(cluster.enabled_hypervisors),
            "ipolicy": cluster.SimpleFillIPolicy(None),
            # Our extension: the names of the aggregates (UUID -> name)
            "aggregates": pcluster.AggregateNames(cluster, groups),
            "nodegroups": {
                uuid: {"name": group.name,
                       "alloc_policy": group.alloc_policy,
                       "networks": sorted(group.networks or {}),
                       "ipolicy": cluster.SimpleFillIPolicy(group.ipolicy),
                       "tags": sorted(group.GetTags())}
                for uuid, group in groups.items()},
            "nodes": self._NodeData(cluster, groups, nodes, instances,
                                    filled_be),
            "instances": self._InstanceData(cluster, instances, filled_be),
            "request": request,
        }
        return data

    def _NodeData(self, cluster: objects.Cluster, groups: dict, nodes: dict,
                  instances: dict, filled_be: dict) -> dict:
        """Static keys for every node, live ones for the online,
        undrained vm-capable nodes (as noded reports them)."""
        result = {}
        for node in nodes.values():
            group = groups.get(node.group)
            result[node.name] = {
                "tags": sorted(node.GetTags()),
                "primary_ip": node.primary_ip,
                "secondary_ip": node.secondary_ip,
                "offline": node.offline, "drained": node.drained,
                "master_candidate": node.master_candidate,
                "group": node.group,
                "aggregates": sorted(pcluster.NodeAggregates(node)),
                "master_capable": node.master_capable,
                "vm_capable": node.vm_capable,
                "ndparams": (cluster.FillND(node, group) if group is not None
                             else cluster.SimpleFillND(node.ndparams)),
            }
        live = [node for node in nodes.values()
                if node.vm_capable and not node.offline and not node.drained]
        if not live:
            return result
        hv_name = self.req.Hypervisor(self.cfg)
        storage_dir = _StorageDir(cluster, self.req.DiskTemplate(self.cfg))
        if storage_dir is None:
            # A template without storage (diskless) still reports the
            # cluster's: hail's capacity check fails over and re-creates
            # the existing instances on it, and finds no room in zeros
            storage_dir = next(
                (path for path in (_StorageDir(cluster, template) for template
                                   in cluster.enabled_disk_templates)
                 if path is not None), None)
        uuids = [node.uuid for node in live]
        node_infos = self.rpc.call_node_info(
            uuids, [storage_dir] if storage_dir else [], [hv_name])
        inst_infos = self.rpc.call_all_instances_info(
            uuids, list(cluster.enabled_hypervisors),
            {name: cluster.GetHVDefaults(name)
             for name in cluster.enabled_hypervisors})
        for node in live:
            node_infos[node.uuid].Raise(
                "Can't get data for node %s" % node.name, prereq=True,
                ecode=errors.ECODE_ENVIRON)
            inst_infos[node.uuid].Raise(
                "Can't get node instance info from node %s" % node.name,
                prereq=True, ecode=errors.ECODE_ENVIRON)
            result[node.name].update(self._DynamicNodeData(
                node, node_infos[node.uuid].payload, hv_name,
                storage_dir is not None, inst_infos[node.uuid].payload or {},
                instances, filled_be))
        return result

    @staticmethod
    def _DynamicNodeData(node: objects.Node, payload: dict, hv_name: str,
                         has_storage: bool, running: dict, instances: dict,
                         filled_be: dict) -> dict:
        hv_info = (payload.get("hv") or {}).get(hv_name) or {}

        def _Int(key: str) -> int:
            value = hv_info.get(key, payload.get(key))
            if not isinstance(value, int):
                raise errors.OpPrereqError(
                    "Node '%s' returned invalid value for '%s': %r" %
                    (node.name, key, value), errors.ECODE_ENVIRON)
            return value

        mem_free = _Int("memory_free")
        pri_mem = pri_up_mem = 0
        for uuid, inst in instances.items():
            if inst.primary_node != node.uuid:
                continue
            maxmem = filled_be[uuid][objects.BE_MAXMEM]
            pri_mem += maxmem
            if inst.admin_state == objects.ADMINST_UP:
                # Memory a stopped or ballooned instance will take back
                used = int((running.get(inst.name) or {}).get("memory", 0))
                mem_free -= max(0, maxmem - used)
                pri_up_mem += maxmem
        total_disk = free_disk = 0
        if has_storage:
            storage = (payload.get("storage") or [{}])[0]
            if not isinstance(storage.get("storage_free"), int):
                raise errors.OpPrereqError(
                    "Node '%s' didn't return space info: %s" %
                    (node.name, storage.get("error", "no data")),
                    errors.ECODE_ENVIRON)
            total_disk = storage["storage_size"]
            free_disk = storage["storage_free"]
        return {
            "total_memory": _Int("memory_total"),
            "reserved_memory": _Int("memory_dom0"),
            "free_memory": mem_free,
            "total_disk": total_disk, "free_disk": free_disk,
            "total_spindles": 0, "free_spindles": 0,
            "total_cpus": _Int("cpu_total"),
            "reserved_cpus": _Int("cpu_dom0"),
            "i_pri_memory": pri_mem, "i_pri_up_memory": pri_up_mem,
        }

    def _InstanceData(self, cluster: objects.Cluster, instances: dict,
                      filled_be: dict) -> dict:
        cfg = self.cfg
        result = {}
        for uuid, inst in instances.items():
            nics = []
            for nic in inst.nics:
                params = cluster.SimpleFillNIC(nic.nicparams)
                entry = {"mac": nic.mac, "ip": nic.ip,
                         "mode": params[objects.NIC_MODE],
                         "link": params[objects.NIC_LINK]}
                if params[objects.NIC_MODE] == objects.NIC_MODE_BRIDGED:
                    entry["bridge"] = params[objects.NIC_LINK]
                nics.append(entry)
            disks = cfg.GetInstanceDisks(uuid)
            template = cfg.GetInstanceDiskTemplate(uuid)
            be = filled_be[uuid]
            result[inst.name] = {
                "tags": sorted(inst.GetTags()),
                "admin_state": inst.admin_state,
                "vcpus": be[objects.BE_VCPUS],
                "memory": be[objects.BE_MAXMEM],
                "spindle_use": be[objects.BE_SPINDLE_USE],
                "os": inst.os,
                "nodes": cfg.GetNodeNames(
                    [inst.primary_node] +
                    cfg.GetInstanceSecondaryNodes(uuid)),
                "nics": nics,
                "disks": [{"dev_type": disk.dev_type, "size": disk.size,
                           "mode": disk.mode,
                           "spindles": getattr(disk, "spindles", None)}
                          for disk in disks],
                "disk_template": template,
                "disks_active": inst.disks_active,
                "hypervisor": inst.hypervisor,
                "disk_space_total": DiskSpaceTotal(
                    [{"size": disk.size} for disk in disks], template),
            }
        return result

    # Running -------------------------------------------------------------

    def Run(self, name: str, explain: bool = False,
            validate: bool = True) -> None:
        """Run allocator ``name`` and check its answer.

        Errors are OpPrereqError naming the allocator: it can't be found
        or run, fails, times out, prints no usable answer or an answer
        naming unusable nodes; an allocator saying it found no solution is
        ECODE_NORES with its ``info``.
        """
        message = self._RunBuiltin(name, explain)
        if message is None:
            params = dict(self.cfg.GetClusterInfo().default_iallocator_params
                          or {})
            params.update(self.req.ExtraParams())
            if explain:
                params["explain"] = None
            result = self.rpc.call_iallocator_runner(
                self.cfg.GetMasterNode(), name, self.in_text, params,
                _Timeout())
            result.Raise("Failure while running the iallocator '%s'" % name,
                         prereq=True, ecode=errors.ECODE_ENVIRON)
            self.out_text = result.payload
            if not validate:
                return
            try:
                message = serializer.LoadJson(self.out_text)
            except Exception as err:  # whatever the program printed
                raise errors.OpPrereqError(
                    "Can't parse the results of iallocator '%s': %s"
                    " (output %r)" % (name, err, self.out_text[:200]),
                    errors.ECODE_ENVIRON) from None
        elif not validate:
            self.out_text = serializer.DumpJson(message)
            return
        self._ProcessAnswer(name, message)

    def _RunBuiltin(self, name: str, explain: bool) -> dict | None:
        """The built-in allocator's answer, in-process (no fork); None
        for other allocators or while the built-in one is not there."""
        if name != constants.IALLOCATOR_BUILTIN:
            return None
        try:
            module = importlib.import_module("ganeti.htools.allocator")
        except ImportError:
            return None
        try:
            answer = module.Run(serializer.LoadJson(self.in_text),
                                explain=explain)
        except Exception as err:  # a bug there must not kill the job
            logging.exception("Built-in allocator failed")
            raise errors.OpPrereqError("iallocator '%s' failed: %s" %
                                       (name, err),
                                       errors.ECODE_ENVIRON) from None
        return answer

    def _ProcessAnswer(self, name: str, message: Any) -> None:
        if not isinstance(message, dict):
            raise errors.OpPrereqError("Can't parse the results of iallocator"
                                       " '%s': not a JSON object" % name,
                                       errors.ECODE_ENVIRON)
        if "nodes" in message and "result" not in message:
            message["result"] = message.pop("nodes")
        for key in ("success", "info", "result"):
            if key not in message:
                raise errors.OpPrereqError(
                    "Can't parse the results of iallocator '%s': missing"
                    " key '%s'" % (name, key), errors.ECODE_ENVIRON)
        self.success = bool(message["success"])
        self.info = str(message["info"])
        self.explanation = message.get("explanation")
        if not self.success:
            raise errors.OpPrereqError(
                "Can't compute nodes using iallocator '%s': %s" %
                (name, self.info), errors.ECODE_NORES)
        try:
            self.req.ValidateResult(self, message["result"])
        except ValueError as err:
            raise errors.OpPrereqError(
                "iallocator '%s' returned an invalid result: %s" %
                (name, err), errors.ECODE_ENVIRON) from None
        self.result = message["result"]
        if not self.out_text:
            self.out_text = serializer.DumpJson(message)

    def CheckUsableNodes(self, names: list[str],
                         whitelist: list[str] | None,
                         group_name: str | None) -> None:
        """Raise ValueError unless every node may take instances:
        existing, online, not drained, vm-capable, in an allocatable
        group (or the one named), among ``whitelist`` if given."""
        for name in names:
            node = self.cfg.GetNodeInfoByName(name)
            if node is None:
                raise ValueError("node %s does not exist" % name)
            if node.offline:
                raise ValueError("node %s is offline" % name)
            if node.drained:
                raise ValueError("node %s is drained" % name)
            if not node.vm_capable:
                raise ValueError("node %s is not vm-capable" % name)
            if whitelist is not None and name not in whitelist:
                raise ValueError("node %s was not offered (its lock could"
                                 " not be taken)" % name)
            group = self.cfg.GetNodeGroup(node.group)
            if group is None:
                raise ValueError("node %s has no node group" % name)
            if group_name is not None:
                if group.name != group_name:
                    raise ValueError("node %s is not in node group %s" %
                                     (name, group_name))
            elif group.alloc_policy == constants.ALLOC_POLICY_UNALLOCABLE:
                raise ValueError("node %s is in the unallocable node group"
                                 " %s" % (name, group.name))
