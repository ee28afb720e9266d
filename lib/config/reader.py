"""The read side of the configuration store: copies of the published
configuration, taken without locking.

Readers take the current snapshot and copy from it, so they never wait
for a write in progress; everything one accessor returns comes from the
same configuration.
"""

from typing import Any, Iterable

from ganeti import constants, errors, objects, ssconf, utils
from ganeti.config import verify
from ganeti.config.snapshot import Snapshot
from ganeti.objects import (Cluster, Disk, FilterRule, Instance, Maintenance,
                            Network, Node, NodeGroup)


class ConfigReader:
    """The accessors of ConfigWriter; each returns independent copies that
    callers may modify freely and hand back to ConfigWriter.Update
    (``GetAll*Info`` therefore cost one copy per object)."""

    _cfg_file: str
    # The published configuration, replaced (never modified) by writes
    _snap: Snapshot

    def GetConfigSerial(self) -> int:
        """Serial number of the whole configuration."""
        return self._snap.data.serial_no

    def GetConfigFileName(self) -> str:
        """The file this configuration is kept in (state that belongs to
        the configuration lives beside it)."""
        return self._cfg_file

    def GetClusterInfo(self) -> Cluster:
        return self._snap.data.cluster.Copy()

    def GetMaintenance(self) -> Maintenance:
        """ganeti-maintd's settings and state."""
        return self._snap.data.maintenance.Copy()

    def GetClusterName(self) -> str:
        return self._snap.data.cluster.cluster_name

    def GetMasterNode(self) -> str:
        """UUID of the master node."""
        return self._snap.data.cluster.master_node

    def GetMasterNetworkParameters(self) -> dict:
        """What the master IP procedures of noded need."""
        cluster = self._snap.data.cluster
        return {"ip": cluster.master_ip, "netmask": cluster.master_netmask,
                "netdev": cluster.master_netdev,
                "ip_family": cluster.primary_ip_family}

    def GetMasterNodeName(self) -> str:
        snap = self._snap
        return snap.data.nodes[snap.data.cluster.master_node].name

    def GetMasterNodeInfo(self) -> Node:
        snap = self._snap
        return snap.data.nodes[snap.data.cluster.master_node].Copy()

    def GetNodeInfo(self, node_uuid: str) -> Node | None:
        node = self._snap.data.nodes.get(node_uuid)
        return None if node is None else node.Copy()

    def GetNodeInfoByName(self, name: str) -> Node | None:
        snap = self._snap
        uuid = snap.names["nodes"].get(name)
        return None if uuid is None else snap.data.nodes[uuid].Copy()

    def GetAllNodesInfo(self) -> dict[str, Node]:
        return {uuid: node.Copy()
                for uuid, node in self._snap.data.nodes.items()}

    def GetNodeList(self) -> list[str]:
        """UUIDs of all nodes."""
        return list(self._snap.order["nodes"])

    def GetOnlineNodeList(self) -> list[str]:
        snap = self._snap
        return [uuid for uuid in snap.order["nodes"]
                if not snap.data.nodes[uuid].offline]

    def GetMasterCandidateUuids(self) -> list[str]:
        """UUIDs of the master candidates (the master included)."""
        snap = self._snap
        return [uuid for uuid in snap.order["nodes"]
                if snap.data.nodes[uuid].master_candidate]

    @staticmethod
    def _CandidateStats(snap: Snapshot,
                        exceptions: frozenset[str]) -> tuple[int, int, int]:
        mc_now = mc_max = 0
        for uuid, node in snap.data.nodes.items():
            if uuid in exceptions:
                continue
            if node.master_capable and not (node.offline or node.drained):
                mc_max += 1
            if node.master_candidate:
                mc_now += 1
        return (mc_now, min(mc_max, snap.data.cluster.candidate_pool_size),
                mc_max)

    def GetMasterCandidateStats(self, exceptions: Iterable[str] | None = None
                                ) -> tuple[int, int, int]:
        """``(mc_now, mc_should, mc_max)`` of the candidate pool.

        ``mc_now`` counts the candidates (the master included), ``mc_max``
        the nodes that could be one (online, not drained, master capable)
        and ``mc_should`` is the pool size capped by ``mc_max``. Nodes in
        ``exceptions`` (UUIDs) are left out, to judge the pool as it would
        be without them (a node being removed or demoted).
        """
        return self._CandidateStats(self._snap, frozenset(exceptions or ()))

    def GetNodeNames(self, node_uuids: list[str]) -> list[str]:
        """Names of nodes given by UUID; unknown UUIDs are an error."""
        nodes = self._snap.data.nodes
        try:
            return [nodes[uuid].name for uuid in node_uuids]
        except KeyError as err:
            raise errors.OpPrereqError("Unknown node %s" % err.args[0],
                                       errors.ECODE_NOENT)

    def GetNodeInstances(self, node_uuid: str) -> tuple[list[str], list[str]]:
        """UUIDs of the instances having the node as primary / secondary."""
        snap = self._snap
        primary, secondary = [], []
        for uuid in snap.order["instances"]:
            inst = snap.data.instances[uuid]
            if inst.primary_node == node_uuid:
                primary.append(uuid)
            elif node_uuid in self._InstanceNodes(snap, inst):
                secondary.append(uuid)
        return primary, secondary

    def _GroupCopy(self, snap: Snapshot, group: NodeGroup) -> NodeGroup:
        result = group.Copy()
        result.members = list(snap.GroupMembers().get(group.uuid, []))
        return result

    def GetNodeGroup(self, group_uuid: str) -> NodeGroup | None:
        """A node group, with ``members`` filled in."""
        snap = self._snap
        group = snap.data.nodegroups.get(group_uuid)
        return None if group is None else self._GroupCopy(snap, group)

    def GetAllNodeGroupsInfo(self) -> dict[str, NodeGroup]:
        snap = self._snap
        return {uuid: self._GroupCopy(snap, group)
                for uuid, group in snap.data.nodegroups.items()}

    def LookupNodeGroup(self, target: str | None) -> str:
        """UUID of a group given by name or UUID.

        With None, the only group if there is exactly one.
        """
        snap = self._snap
        if target is None:
            if len(snap.data.nodegroups) != 1:
                raise errors.OpPrereqError("More than one node group exists;"
                                           " the group must be given",
                                           errors.ECODE_INVAL)
            return next(iter(snap.data.nodegroups))
        if target in snap.data.nodegroups:
            return target
        uuid = snap.names["nodegroups"].get(target)
        if uuid is None:
            raise errors.OpPrereqError("Node group '%s' not found" % target,
                                       errors.ECODE_NOENT)
        return uuid

    def GetInstanceInfo(self, inst_uuid: str) -> Instance | None:
        inst = self._snap.data.instances.get(inst_uuid)
        return None if inst is None else inst.Copy()

    def GetInstanceInfoByName(self, name: str) -> Instance | None:
        snap = self._snap
        uuid = snap.names["instances"].get(name)
        return None if uuid is None else snap.data.instances[uuid].Copy()

    def GetAllInstancesInfo(self) -> dict[str, Instance]:
        return {uuid: inst.Copy()
                for uuid, inst in self._snap.data.instances.items()}

    def GetInstanceList(self) -> list[str]:
        """UUIDs of all instances."""
        return list(self._snap.order["instances"])

    @staticmethod
    def _GetInstance(snap: Snapshot, inst_uuid: str) -> Instance:
        inst = snap.data.instances.get(inst_uuid)
        if inst is None:
            raise errors.OpPrereqError("Unknown instance %s" % inst_uuid,
                                       errors.ECODE_NOENT)
        return inst

    def GetInstanceDisks(self, inst_uuid: str) -> list[Disk]:
        """The instance's disks, in order."""
        snap = self._snap
        inst = self._GetInstance(snap, inst_uuid)
        return [snap.data.disks[uuid].Copy() for uuid in inst.disks]

    def GetInstanceDiskTemplate(self, inst_uuid: str) -> str:
        """The disk template, derived from the disks' types."""
        snap = self._snap
        inst = self._GetInstance(snap, inst_uuid)
        if not inst.disks:
            return constants.DT_DISKLESS
        return snap.data.disks[inst.disks[0]].dev_type

    @staticmethod
    def _InstanceNodes(snap: Snapshot, inst: Instance) -> list[str]:
        result = [inst.primary_node]
        for disk_uuid in inst.disks:
            disk = snap.data.disks.get(disk_uuid)
            for node_uuid in (disk.nodes if disk else ()) or ():
                if node_uuid not in result:
                    result.append(node_uuid)
        return result

    def GetInstanceNodes(self, inst_uuid: str) -> list[str]:
        """Primary node first, then the other nodes holding its disks."""
        snap = self._snap
        return self._InstanceNodes(snap, self._GetInstance(snap, inst_uuid))

    def GetInstanceSecondaryNodes(self, inst_uuid: str) -> list[str]:
        return self.GetInstanceNodes(inst_uuid)[1:]

    def GetDiskInfo(self, disk_uuid: str) -> Disk | None:
        disk = self._snap.data.disks.get(disk_uuid)
        return None if disk is None else disk.Copy()

    def GetAllDisksInfo(self) -> dict[str, Disk]:
        return {uuid: disk.Copy()
                for uuid, disk in self._snap.data.disks.items()}

    def GetNetwork(self, net_uuid: str) -> Network | None:
        net = self._snap.data.networks.get(net_uuid)
        return None if net is None else net.Copy()

    def GetAllNetworksInfo(self) -> dict[str, Network]:
        return {uuid: net.Copy()
                for uuid, net in self._snap.data.networks.items()}

    def LookupNetwork(self, target: str) -> str | None:
        """UUID of a network given by name or UUID, None if unknown."""
        snap = self._snap
        if target in snap.data.networks:
            return target
        return snap.names["networks"].get(target)

    def GetFilterRule(self, uuid: str) -> FilterRule | None:
        rule = self._snap.data.filters.get(uuid)
        return None if rule is None else rule.Copy()

    def GetFilterRules(self) -> dict[str, FilterRule]:
        return {uuid: rule.Copy()
                for uuid, rule in self._snap.data.filters.items()}

    @staticmethod
    def _ExpandName(snap: Snapshot, container: str,
                    short_name: str) -> str | None:
        if short_name in snap.Container(container):
            return short_name
        names = snap.names[container]
        if short_name in names:
            return names[short_name]
        wanted = short_name.lower()
        exact = []
        prefix = []
        for name, uuid in names.items():
            lower = name.lower()
            if lower == wanted:
                exact.append(uuid)
            elif lower.startswith(wanted + "."):
                prefix.append(uuid)
        for candidates in (exact, prefix):
            if len(candidates) == 1:
                return candidates[0]
            if candidates:
                return None
        return None

    def ExpandNodeName(self, short_name: str) -> str | None:
        """UUID of a node given by UUID, name or unique short name."""
        return self._ExpandName(self._snap, "nodes", short_name)

    def ExpandInstanceName(self, short_name: str) -> str | None:
        """UUID of an instance given by UUID, name or unique short name."""
        return self._ExpandName(self._snap, "instances", short_name)

    def GetSsconfValues(self) -> dict[str, str]:
        """The values the master pushes to the nodes' ssconf files."""
        snap = self._snap
        if snap.ssconf is None:
            snap.ssconf = self._ComputeSsconf(snap)
        return dict(snap.ssconf)

    @staticmethod
    def _ComputeSsconf(snap: Snapshot) -> dict[str, str]:
        data = snap.data
        cluster = data.cluster
        nodes = sorted(data.nodes.values(),
                       key=lambda n: utils.NiceSortKey(n.name))
        candidates = [node for node in nodes if node.master_candidate]

        def lines(items: Any) -> str:
            return "\n".join(items)

        return {
            ssconf.SS_CLUSTER_NAME: cluster.cluster_name,
            ssconf.SS_CLUSTER_TAGS: lines(sorted(cluster.GetTags())),
            ssconf.SS_FILE_STORAGE_DIR: cluster.file_storage_dir,
            ssconf.SS_SHARED_FILE_STORAGE_DIR:
                cluster.shared_file_storage_dir,
            ssconf.SS_MASTER_CANDIDATES: lines(n.name for n in candidates),
            ssconf.SS_MASTER_CANDIDATES_IPS:
                lines(n.primary_ip for n in candidates),
            ssconf.SS_MASTER_IP: cluster.master_ip,
            ssconf.SS_MASTER_NETDEV: cluster.master_netdev,
            ssconf.SS_MASTER_NETMASK: str(cluster.master_netmask),
            ssconf.SS_MASTER_NODE: data.nodes[cluster.master_node].name,
            ssconf.SS_NODE_LIST: lines(n.name for n in nodes),
            ssconf.SS_NODE_PRIMARY_IPS:
                lines("%s %s" % (n.name, n.primary_ip) for n in nodes),
            ssconf.SS_NODE_SECONDARY_IPS:
                lines("%s %s" % (n.name, n.secondary_ip) for n in nodes),
            ssconf.SS_NODE_VM_CAPABLE:
                lines("%s=%s" % (n.name, n.vm_capable) for n in nodes),
            ssconf.SS_OFFLINE_NODES: lines(n.name for n in nodes if n.offline),
            ssconf.SS_ONLINE_NODES:
                lines(n.name for n in nodes if not n.offline),
            ssconf.SS_PRIMARY_IP_FAMILY: str(cluster.primary_ip_family),
            ssconf.SS_INSTANCE_LIST:
                lines(utils.NiceSort(snap.names["instances"])),
            ssconf.SS_RELEASE_VERSION: constants.RELEASE_VERSION,
            ssconf.SS_HYPERVISOR_LIST: lines(cluster.enabled_hypervisors),
            ssconf.SS_MAINTAIN_NODE_HEALTH: str(cluster.maintain_node_health),
            ssconf.SS_UID_POOL: ssconf.FormatUidPool(cluster.uid_pool),
            ssconf.SS_NODEGROUPS: lines(
                "%s %s" % (uuid, data.nodegroups[uuid].name)
                for uuid in snap.order["nodegroups"]),
            ssconf.SS_NETWORKS: lines(
                "%s %s" % (uuid, data.networks[uuid].name)
                for uuid in snap.order["networks"]),
            ssconf.SS_ENABLED_USER_SHUTDOWN:
                str(cluster.enabled_user_shutdown),
            ssconf.SS_DATA_COLLECTORS: lines(
                "%s %s %d" % (name, dc[constants.DATA_COLLECTOR_STATE_ACTIVE],
                              dc[constants.DATA_COLLECTOR_PARAMETER_INTERVAL])
                for name, dc in objects.FillDataCollectors(
                    cluster.data_collectors).items()),
            ssconf.SS_DIAGNOSE_DATA_COLLECTOR_FILENAME:
                cluster.diagnose_data_collector_filename,
        }

    def VerifyConfig(self) -> list[str]:
        """Check the whole configuration; returns the problems found."""
        return verify.Verify(self._snap)

    def GenerateUniqueID(self) -> str:
        """A new UUID not used by any object of the configuration."""
        return self._snap.UnusedUUID()
