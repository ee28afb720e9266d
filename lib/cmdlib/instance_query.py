"""The ``instance`` query resource: gathering the live data, and the
instance data of gnt-instance info.

The field table and what its fields are computed from are in
queryfields.instances.
"""

from typing import Any, Callable

from ganeti import config, constants, errors, locking, objects, query
from ganeti.cmdlib.base import (ExpandInstanceUuidAndName, NoHooksLU,
                                 SelectQueryItems)
from ganeti.cmdlib.instance_utils import InstanceRuntimeInfo
from ganeti.queryfields.instances import (INSTANCE_FIELDS,
                                          INSTANCE_HOSTNAME_FIELDS,
                                          INSTANCE_LIVE_FIELDS,
                                          InstanceQueryData)


class InstanceQuery:
    """The ``instance`` resource (served by LUQuery)."""

    FIELDS = INSTANCE_FIELDS

    def __init__(self, lu: NoHooksLU):
        self.cfg = lu.cfg
        self.rpc = lu.rpc
        self.lu = lu

    def _Instances(self, view: config.ConfigView,
                   qfilter: Any) -> tuple[list, Any]:
        if query.RequestedNames(qfilter) is None:
            # All of them, in the name order the view keeps
            return list(view.InstancesByName()), qfilter
        return SelectQueryItems(
            qfilter, view.instances.values,
            lambda name: ExpandInstanceUuidAndName(self.cfg, None, name)[0],
            view.instances.get)

    def _LiveData(self, view: config.ConfigView) -> tuple[dict, set, set]:
        """Runtime information of the instances from all online vm nodes.

        Returns (live data by instance UUID, UUIDs of instances running on
        a node other than their primary, UUIDs of nodes that failed).
        """
        cluster = view.cluster
        nodes = [node for node in view.nodes.values()
                 if node.vm_capable and not node.offline]
        live: dict[str, dict] = {}
        wrong_node: set[str] = set()
        bad_nodes: set[str] = set()
        if not nodes:
            return live, wrong_node, bad_nodes
        hv_names = list(cluster.enabled_hypervisors)
        all_hvparams = {name: cluster.GetHVDefaults(name)
                        for name in hv_names}
        results = self.rpc.call_all_instances_info(
            [node.uuid for node in nodes], hv_names, all_hvparams)
        by_name = {inst.name: inst for inst in view.instances.values()}
        for node in nodes:
            result = results[node.uuid]
            if result.fail_msg or not isinstance(result.payload, dict):
                self.lu.LogWarning("Can't get instance data from node %s:"
                                   " %s", node.name, result.fail_msg)
                bad_nodes.add(node.uuid)
                continue
            for name, info in result.payload.items():
                inst = by_name.get(name)
                if inst is None:
                    continue
                if inst.primary_node == node.uuid:
                    live[inst.uuid] = info
                else:
                    wrong_node.add(inst.uuid)
                    live.setdefault(inst.uuid, info)
        return live, wrong_node, bad_nodes

    def _Consoles(self, view: config.ConfigView,
                  instances: list[objects.Instance],
                  live: dict[str, dict]) -> dict[str, dict]:
        """How to reach the consoles of the running instances (each asked
        of its primary node); instances whose node fails are left out."""
        consoles = {}
        for inst in instances:
            node = view.nodes.get(inst.primary_node)
            if not live.get(inst.uuid) or node is None:
                continue
            group = view.nodegroups.get(node.group)
            result = self.rpc.call_instance_console_info(
                node.uuid, view.cluster.InstanceRpcDict(inst), node.ToDict(),
                group.ToDict() if group is not None else None)
            if result.fail_msg or not isinstance(result.payload, dict):
                self.lu.LogWarning("Can't get the console of instance %s:"
                                   " %s", inst.name, result.fail_msg)
                continue
            consoles[inst.uuid] = result.payload
        return consoles

    def Query(self, fields: list[str], qfilter: Any) -> dict:
        # One view for the whole query: consistent, and nothing is copied
        view = self.cfg.GetView()
        instances, remaining_filter = self._Instances(view, qfilter)
        wanted = set(fields) | query.FilterFields(remaining_filter)
        live = wrong_node = bad_nodes = consoles = None
        if wanted & INSTANCE_LIVE_FIELDS:
            live, wrong_node, bad_nodes = self._LiveData(view)
            # A live field: the console is asked of running instances only
            if "console" in wanted:
                consoles = self._Consoles(view, instances, live)
        data = InstanceQueryData(instances, view, live, wrong_node,
                                 bad_nodes, consoles)
        return query.Query(self.FIELDS, data.Items(), fields,
                           remaining_filter,
                           hostname_fields=INSTANCE_HOSTNAME_FIELDS)


class LUInstanceQueryData(NoHooksLU):
    """Detailed data of instances: configuration and runtime state.

    The configuration comes from one view of it; unless ``static``, the
    primary node tells whether the instance runs and each disk's node
    whether it has the disk (its size and spindles there). Nothing is
    locked unless ``use_locking`` (shared instance locks).
    """

    REQ_BGL = False

    def ExpandNames(self) -> None:
        # UUID -> name of the instances asked for (None: all of them)
        self.wanted: dict[str, str] | None = None
        if self.op.instances:
            self.wanted = dict(ExpandInstanceUuidAndName(self.cfg, None, name)
                               for name in self.op.instances)
        self.needed_locks = {}
        if self.op.use_locking:
            self.needed_locks[locking.LEVEL_INSTANCE] = \
                list(self.wanted) if self.wanted is not None \
                else locking.ALL_SET
            self.share_locks[locking.LEVEL_INSTANCE] = 1

    def CheckPrereq(self) -> None:
        self.view = self.cfg.GetView()
        if self.wanted is None:
            self.instances = list(self.view.InstancesByName())
            return
        self.instances = []
        for uuid, name in self.wanted.items():
            inst = self.view.instances.get(uuid)
            if inst is None:
                raise errors.OpPrereqError("Instance '%s' not known" % name,
                                           errors.ECODE_NOENT)
            self.instances.append(inst)

    def Exec(self, feedback_fn: Callable[[str], None]) -> dict[str, dict]:
        return {inst.name: self._InstanceData(inst)
                for inst in self.instances}

    def _NodeName(self, uuid: str) -> str:
        node = self.view.nodes.get(uuid)
        return node.name if node is not None else uuid

    def _GroupOf(self, node_uuid: str) -> tuple[Any, Any]:
        """(UUID, name) of a node's group."""
        node = self.view.nodes.get(node_uuid)
        group = self.view.nodegroups.get(node.group) if node else None
        if group is None:
            return None, None
        return group.uuid, group.name

    def _RunState(self, inst: objects.Instance) -> str:
        if InstanceRuntimeInfo(self, inst):
            return "up"
        if inst.admin_state == objects.ADMINST_UP:
            return "down"
        return inst.admin_state

    def _BlockdevStatus(self, inst: objects.Instance, disk: objects.Disk,
                        node_uuid: str | None) -> list | None:
        """Ganeti's status 7-tuple of a disk on a node, or None (not
        asked, node offline, or the disk not active there)."""
        node = self.view.nodes.get(node_uuid) if node_uuid else None
        if self.op.static or node is None or node.offline:
            return None
        result = self.rpc.call_blockdev_find(node.uuid, disk.ToDict())
        result.Raise("Can't compute disk status for %s" % inst.name)
        return result.payload

    def _DiskData(self, inst: objects.Instance,
                  disks: list[objects.Disk]) -> list[dict]:
        """Ganeti's per-disk dict: ``pstatus``/``sstatus`` are the status
        on the primary and the secondary node; drbd disks get
        ``drbd_info`` and their secret is hidden in ``logical_id``."""
        data = []
        for disk in disks:
            logical_id = list(disk.logical_id)
            drbd_info = None
            snode = next((uuid for uuid in disk.nodes or ()
                          if uuid != inst.primary_node), None)
            if disk.dev_type == constants.DT_DRBD8:
                pnode_uuid, snode_uuid, port, minor_a, minor_b = \
                    logical_id[:5]
                if pnode_uuid != inst.primary_node:
                    snode_uuid = pnode_uuid
                    minor_a, minor_b = minor_b, minor_a
                snode = snode_uuid
                drbd_info = {
                    "primary_node": self._NodeName(inst.primary_node),
                    "primary_minor": minor_a,
                    "secondary_node": self._NodeName(snode_uuid),
                    "secondary_minor": minor_b,
                    "port": port,
                }
                logical_id[-1] = None
            data.append({
                "iv_name": disk.iv_name,
                "dev_type": disk.dev_type,
                "logical_id": logical_id,
                "drbd_info": drbd_info,
                "pstatus": self._BlockdevStatus(inst, disk,
                                                inst.primary_node),
                "sstatus": self._BlockdevStatus(inst, disk, snode),
                "children": [],
                "mode": disk.mode,
                "size": disk.size,
                "spindles": disk.spindles,
                "name": disk.name,
                "uuid": disk.uuid,
            })
        return data

    def _NicData(self, inst: objects.Instance) -> list[tuple]:
        """(name, uuid, ip, mac, mode, link, vlan, network, network data)
        of each NIC, with the cluster's defaults filled in."""
        nics = []
        for nic in inst.nics:
            filled = self.view.cluster.SimpleFillNIC(nic.nicparams)
            network = self.view.networks.get(nic.network) \
                if nic.network else None
            nics.append((nic.name, nic.uuid, nic.ip, nic.mac,
                         filled[objects.NIC_MODE], filled[objects.NIC_LINK],
                         filled.get(objects.NIC_VLAN, ""), nic.network,
                         network.ToDict() if network is not None else None))
        return nics

    def _InstanceData(self, inst: objects.Instance) -> dict[str, Any]:
        cluster = self.view.cluster
        pnode = self.view.nodes.get(inst.primary_node)
        disks = [self.view.disks[uuid] for uuid in inst.disks]
        snodes = list(dict.fromkeys(
            uuid for disk in disks for uuid in disk.nodes or ()
            if uuid != inst.primary_node))
        run_state = None
        if pnode is not None and pnode.offline and not self.op.static:
            self.LogWarning("Primary node %s is marked offline, returning"
                            " static information only for instance %s",
                            pnode.name, inst.name)
        elif not self.op.static:
            run_state = self._RunState(inst)
        pgroup_uuid, pgroup_name = self._GroupOf(inst.primary_node)
        sgroups = [self._GroupOf(uuid) for uuid in snodes]
        return {
            "name": inst.name,
            "config_state": inst.admin_state,
            "run_state": run_state,
            "pnode": self._NodeName(inst.primary_node),
            "pnode_group_uuid": pgroup_uuid,
            "pnode_group_name": pgroup_name,
            "snodes": [self._NodeName(uuid) for uuid in snodes],
            "snodes_group_uuids": [uuid for uuid, _ in sgroups],
            "snodes_group_names": [name for _, name in sgroups],
            "os": inst.os,
            "nics": self._NicData(inst),
            "disk_template": (disks[0].dev_type if disks
                              else constants.DT_DISKLESS),
            "disks": self._DiskData(inst, disks),
            "hypervisor": inst.hypervisor,
            "network_port": inst.network_port,
            "hv_instance": dict(inst.hvparams),
            "hv_actual": cluster.FillHV(inst),
            "be_instance": dict(inst.beparams),
            "be_actual": cluster.FillBE(inst),
            "os_instance": dict(inst.osparams),
            "os_actual": cluster.SimpleFillOS(inst.os, inst.osparams),
            "serial_no": inst.serial_no,
            "mtime": inst.mtime,
            "ctime": inst.ctime,
            "uuid": inst.uuid,
        }
