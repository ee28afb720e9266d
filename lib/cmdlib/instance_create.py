"""gnt-instance add and import: LUInstanceCreate, and the parsing of the
disk and NIC descriptions it shares with the multi-instance allocation.

OS calls get the instance through operating_system.InstanceOsRpcDict.
Instance creation is all-or-nothing: when any step after the first disk
was created fails, the disks are removed again and the configuration keeps
no trace of the instance; when the master daemon dies meanwhile, its next
start removes them (see creation_intents).
"""

import logging
import os
from typing import Any, Callable

from ganeti import constants, errors, locking, netutils, objects
from ganeti.cmdlib import backup, creation_intents, operating_system
from ganeti.cmdlib import network as cmdlib_network
from ganeti.cmdlib.allocator import (AllocatorName, CheckNodesMemberOf,
                                     InstanceAllocRequest, RunAllocator)
from ganeti.cmdlib.base import ExpandNodeUuidAndName, LogicalUnit
from ganeti.cmdlib.cluster import CheckHvParamsOnNodes, HypervisorClass
from ganeti.cmdlib.instance import _IpInUse, _ResolveInstanceName
from ganeti.cmdlib.instance_policy import CheckIPolicySpec, CheckNodeVcpuRatio
from ganeti.cmdlib.instance_utils import (
    AssembleInstanceDisks, AssembledForOS, BuildInstanceHookEnv,
    CheckMinMaxMem, CheckNodeFreeDisk, CheckNodeFreeMemory,
    CheckNodeNotDrained, CheckNodeOnline, CheckNodeVmCapable, ConvertBeParams,
    ConvertHvParams, CreateDisks, GenerateMAC, DrbdLogicalId, RemoveDisks,
    ShutdownInstanceDisks, StartInstance, UsedMacs, WaitForSync)

_DISK_KEYS = frozenset(["size", "mode", "name", "adopt"]) | \
    constants.IDISK_LVM_PARAMS
_NIC_KEYS = frozenset(["mac", "ip", "mode", "link", "vlan", "name",
                       "network"])


def ParseDisks(disks: list[dict], template: str) -> list[dict]:
    """Check the disk descriptions; sizes in MiB, mode filled in."""
    if template == constants.DT_DISKLESS:
        if disks:
            raise errors.OpPrereqError("Disk template %s does not allow"
                                       " disks" % template,
                                       errors.ECODE_INVAL)
        return []
    if not disks:
        raise errors.OpPrereqError("Disk template %s needs at least one"
                                   " disk" % template, errors.ECODE_INVAL)
    adopted = [bool(disk.get("adopt")) for disk in disks]
    if any(adopted):
        if template not in constants.DTS_MAY_ADOPT:
            raise errors.OpPrereqError("Disk adoption is not supported for"
                                       " the '%s' disk template" % template,
                                       errors.ECODE_INVAL)
        if not all(adopted):
            raise errors.OpPrereqError("Either all disks are adopted or none"
                                       " is", errors.ECODE_INVAL)
    elif template in constants.DTS_MUST_ADOPT:
        raise errors.OpPrereqError("Disk template %s requires disk adoption,"
                                   " but no 'adopt' parameter given" %
                                   template, errors.ECODE_INVAL)
    result = []
    for idx, disk in enumerate(disks):
        unknown = sorted(set(disk) - _DISK_KEYS)
        if unknown:
            raise errors.OpPrereqError("Unknown disk parameter(s) for disk %d:"
                                       " %s" % (idx, ", ".join(unknown)),
                                       errors.ECODE_INVAL)
        mode = disk.get("mode") or objects.DISK_RDWR
        if mode not in objects.DISK_ACCESS_SET:
            raise errors.OpPrereqError("Invalid disk access mode '%s'" % mode,
                                       errors.ECODE_INVAL)
        size = disk.get("size")
        if disk.get("adopt"):
            if size is not None:
                raise errors.OpPrereqError("Disk %d: the size of an adopted"
                                           " disk is the device's, don't give"
                                           " one" % idx, errors.ECODE_INVAL)
        elif size is None:
            raise errors.OpPrereqError("Missing disk size for disk %d" % idx,
                                       errors.ECODE_INVAL)
        else:
            try:
                size = int(size)
            except (TypeError, ValueError):
                raise errors.OpPrereqError("Invalid disk size '%s'" % size,
                                           errors.ECODE_INVAL) from None
            if size <= 0:
                raise errors.OpPrereqError("Invalid disk size '%s'" % size,
                                           errors.ECODE_INVAL)
        name = disk.get("name")
        if name is not None and (not isinstance(name, str) or
                                 name.lower() == constants.VALUE_NONE):
            name = None
        result.append({"size": size, "mode": mode, "name": name or None,
                       "adopt": disk.get("adopt")})
    return result


def ParseNics(nics: list[dict], instance_ip: str | None) -> list[dict]:
    """Check the NIC descriptions; MACs normalised, ips resolved."""
    result = []
    for idx, nic in enumerate(nics):
        unknown = sorted(set(nic) - _NIC_KEYS)
        if unknown:
            raise errors.OpPrereqError("Unknown NIC parameter(s) for NIC %d:"
                                       " %s" % (idx, ", ".join(unknown)),
                                       errors.ECODE_INVAL)
        mac = (nic.get("mac") or constants.VALUE_AUTO).lower()
        if mac not in (constants.VALUE_AUTO, constants.VALUE_GENERATE):
            if not objects.NIC._FIELD_CHECKS["mac"](mac):
                raise errors.OpPrereqError("Invalid MAC address specified:"
                                           " %s" % nic["mac"],
                                           errors.ECODE_INVAL)
        net = nic.get("network")
        if net is None or (isinstance(net, str) and
                           net.lower() == constants.VALUE_NONE):
            net = None
        elif nic.get(objects.NIC_MODE) is not None or \
                nic.get(objects.NIC_LINK) is not None:
            raise errors.OpPrereqError("If network is given, no mode or link"
                                       " is allowed to be passed",
                                       errors.ECODE_INVAL)
        ip = nic.get("ip")
        if ip is None or (isinstance(ip, str) and
                          ip.lower() == constants.VALUE_NONE):
            ip = None
        elif isinstance(ip, str) and ip.lower() == constants.VALUE_AUTO:
            if instance_ip is None:
                raise errors.OpPrereqError("IP address set to auto but name"
                                           " checks have been skipped",
                                           errors.ECODE_INVAL)
            ip = instance_ip
        elif isinstance(ip, str) and ip.lower() == constants.NIC_IP_POOL:
            # Taken from the pool once the primary node is known
            if net is None:
                raise errors.OpPrereqError("if ip=pool, parameter network"
                                           " must be passed too",
                                           errors.ECODE_INVAL)
            ip = constants.NIC_IP_POOL
        elif not netutils.IsValidIP(str(ip)):
            raise errors.OpPrereqError("Invalid IP address '%s'" % ip,
                                       errors.ECODE_INVAL)
        nicparams = {key: nic[key] for key in (objects.NIC_MODE,
                                                objects.NIC_LINK,
                                                objects.NIC_VLAN)
                     if nic.get(key) not in (None, "")}
        try:
            objects.CheckParamDict(objects.NIC_PARAMETERS, nicparams, "NIC")
        except errors.TypeEnforcementError as err:
            raise errors.OpPrereqError("NIC %d: %s" % (idx, err),
                                       errors.ECODE_INVAL) from None
        result.append({"mac": mac, "ip": ip, "nicparams": nicparams,
                       "name": nic.get("name") or None, "network": net})
    return result


class LUInstanceCreate(LogicalUnit):
    """Create an instance: disks, OS installation, configuration, start.

    Runs alone (Big Ganeti Lock held exclusively): the new instance has no
    lock yet, and its name, MACs and disk paths must not be taken by a
    concurrent creation between the checks and the configuration update.
    With opportunistic locking (an allocator choosing among the nodes whose
    locks are free) creations run side by side instead: each holds its
    node's lock and the configuration refuses a second instance of the
    same name or MAC at the update.
    """

    HPATH = "instance-add"
    HTYPE = constants.HTYPE_INSTANCE
    REQ_BGL = True

    @classmethod
    def RequiresBGL(cls, op: Any) -> bool:
        # An import reads its export in CheckArguments, before any lock
        return not (op.opportunistic_locking and
                    op.mode == constants.INSTANCE_CREATE)

    def CheckArguments(self) -> None:
        op = self.op
        self._import = None
        if op.mode == constants.INSTANCE_IMPORT:
            # The export completes the arguments (OS, disks, NICs,
            # parameters); reading it this early is safe under the BGL
            self._import = backup.ImportSource(self)
        elif op.mode != constants.INSTANCE_CREATE:
            raise errors.OpPrereqError("Unsupported instance creation mode"
                                       " '%s'" % op.mode, errors.ECODE_INVAL)
        if op.ip_check and not op.name_check:
            raise errors.OpPrereqError("Cannot do IP address check without a"
                                       " name check", errors.ECODE_INVAL)
        if op.pnode and op.iallocator:
            raise errors.OpPrereqError("One and only one of iallocator and"
                                       " primary node must be given",
                                       errors.ECODE_INVAL)
        if not op.pnode:
            op.iallocator = AllocatorName(self, op.iallocator)
        elif op.opportunistic_locking:
            raise errors.OpPrereqError("Opportunistic locking is only"
                                       " available in combination with an"
                                       " instance allocator",
                                       errors.ECODE_INVAL)
        if not op.os_type and not op.no_install:
            raise errors.OpPrereqError("No guest OS specified",
                                       errors.ECODE_INVAL)
        if op.disk_template is None:
            op.disk_template = \
                self.cfg.GetClusterInfo().enabled_disk_templates[0]
        if op.snode is not None and \
                op.disk_template not in constants.DTS_INT_MIRROR:
            raise errors.OpPrereqError("Disk template %s does not use a"
                                       " secondary node" % op.disk_template,
                                       errors.ECODE_INVAL)
        if op.disk_template in constants.DTS_INT_MIRROR and op.pnode and \
                op.snode is None:
            raise errors.OpPrereqError("The networked disk templates need"
                                       " a mirror node", errors.ECODE_INVAL)
        if op.file_storage_dir is not None:
            if op.disk_template not in constants.DTS_FILEBASED:
                raise errors.OpPrereqError(
                    "A file storage directory is only valid for the file"
                    " based disk templates", errors.ECODE_INVAL)
            path = os.path.normpath(op.file_storage_dir)
            if os.path.isabs(path) or path.split("/")[0] == "..":
                raise errors.OpPrereqError(
                    "The file storage directory '%s' must be a path below"
                    " the cluster's file storage directory (relative, no"
                    " '..')" % op.file_storage_dir, errors.ECODE_INVAL)
        self._disks = ParseDisks(op.disks, op.disk_template)
        for tag in op.tags:
            try:
                objects.ValidateTag(tag)
            except errors.TagError as err:
                raise errors.OpPrereqError(str(err), errors.ECODE_INVAL)
        self._instance_ip = None
        if op.name_check:
            hostname = _ResolveInstanceName(op.instance_name)
            op.instance_name = hostname.name
            self._instance_ip = hostname.ip
        self._nics = ParseNics(op.nics, self._instance_ip)
        for spec in self._nics:
            if spec["network"] is not None:
                spec["network"] = cmdlib_network.LookupNetwork(
                    self.cfg, spec["network"])

    def ExpandNames(self) -> None:
        if self.cfg.GetInstanceInfoByName(self.op.instance_name) is not None:
            raise errors.OpPrereqError("Instance '%s' is already in the"
                                       " cluster" % self.op.instance_name,
                                       errors.ECODE_EXISTS)
        # The exclusive BGL covers everything this LU touches; without it
        # the allocator only sees the nodes whose locks could be taken
        self.needed_locks = {}
        self._snode_uuid: str | None = None
        if self.op.iallocator:
            if self.op.opportunistic_locking:
                self.needed_locks[locking.LEVEL_NODE] = locking.ALL_SET
                self.opportunistic_locks[locking.LEVEL_NODE] = True
            return
        self.op.pnode_uuid, self.op.pnode = ExpandNodeUuidAndName(
            self.cfg, self.op.pnode_uuid, self.op.pnode)
        if self.op.snode is not None:
            self._snode_uuid, self.op.snode = ExpandNodeUuidAndName(
                self.cfg, None, self.op.snode)

    def _DiskNodes(self) -> list[str]:
        """The nodes holding each disk: primary, then secondary."""
        return [self.op.pnode_uuid] + ([self._snode_uuid]
                                       if self._snode_uuid else [])

    def BuildHooksEnv(self) -> dict[str, Any]:
        op = self.op
        instance = objects.Instance(
            name=op.instance_name, primary_node=op.pnode_uuid,
            os=op.os_type or "", hypervisor=self.hypervisor,
            hvparams=self.hvparams, beparams=self.beparams,
            admin_state=(objects.ADMINST_UP if op.start
                         else objects.ADMINST_DOWN),
            nics=[objects.NIC(mac=spec["mac"], ip=spec["ip"],
                              nicparams=spec["nicparams"], name=spec["name"],
                              network=spec["network"])
                  for spec in self._nics],
            tags=set(op.tags))
        disks = [objects.Disk(dev_type=op.disk_template,
                              size=spec["size"] or 0, mode=spec["mode"],
                              name=spec["name"], nodes=self._DiskNodes())
                 for spec in self._disks]
        env = BuildInstanceHookEnv(self, instance, disks)
        env["INSTANCE_ADD_MODE"] = op.mode
        if self._import is not None:
            env.update(self._import.HookEnv())
        return env

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        nodes = [self.cfg.GetMasterNode()] + self._DiskNodes()
        return nodes, nodes

    def _CheckTemplate(self, cluster: objects.Cluster) -> None:
        template = self.op.disk_template
        if template not in cluster.enabled_disk_templates:
            raise errors.OpPrereqError(
                "Cannot create an instance with disk template '%s', as it is"
                " not enabled in the cluster. Enabled disk templates are:"
                " %s." % (template,
                          ",".join(cluster.enabled_disk_templates)),
                errors.ECODE_STATE)

    def _CheckParams(self, cluster: objects.Cluster) -> None:
        op = self.op
        self.hypervisor = op.hypervisor or cluster.primary_hypervisor
        if self.hypervisor not in cluster.enabled_hypervisors:
            raise errors.OpPrereqError(
                "Selected hypervisor (%s) not enabled in the cluster (%s)" %
                (self.hypervisor, ",".join(cluster.enabled_hypervisors)),
                errors.ECODE_STATE)
        self.hvparams = ConvertHvParams(self.hypervisor, op.hvparams)
        filled_hv = cluster.SimpleFillHV(self.hypervisor, op.os_type,
                                         self.hvparams)
        try:
            HypervisorClass(self.hypervisor).CheckParameterSyntax(filled_hv)
        except errors.HypervisorError as err:
            raise errors.OpPrereqError(str(err), errors.ECODE_INVAL) from None
        CheckHvParamsOnNodes(self, [op.pnode_uuid], self.hypervisor,
                             filled_hv)
        self.beparams = ConvertBeParams(op.beparams)
        self.filled_be = cluster.SimpleFillBE(self.beparams)
        CheckMinMaxMem(self.filled_be)
        if op.os_type:
            filled = cluster.SimpleFillOS(op.os_type, op.osparams,
                                          op.osparams_private)
            filled.update(op.osparams_secret or {})
            operating_system.CheckOSParams(
                self, True, [op.pnode_uuid], op.os_type, filled,
                op.force_variant)
        elif op.osparams or op.osparams_private or op.osparams_secret:
            raise errors.OpPrereqError("OS parameters given without an OS",
                                       errors.ECODE_INVAL)

    def _CheckNicNetworks(self) -> None:
        """NICs on a network get its parameters in the primary node's
        group and an address of its pool; other NICs' addresses must lie
        in no network of that group."""
        pnode = self.op.pnode_uuid
        for idx, nic in enumerate(self._nics):
            net_uuid = nic["network"]
            if net_uuid is not None:
                netparams = cmdlib_network.GroupNetParams(self.cfg, net_uuid,
                                                          pnode)
                if netparams is None:
                    raise errors.OpPrereqError(
                        "No netparams found for network %s. Probably not"
                        " connected to node's %s nodegroup" %
                        (self.cfg.GetNetwork(net_uuid).name,
                         self.cfg.GetNodeInfo(pnode).name),
                        errors.ECODE_INVAL)
                self.LogInfo("NIC/%d inherits netparams %s" %
                             (idx, list(netparams.values())))
                nic["nicparams"] = netparams
            nic["ip"] = cmdlib_network.NicAddress(
                self, nic["ip"], net_uuid, pnode, self.op.conflicts_check,
                "IP address %s already in use or does not belong to"
                " network %s")

    def _CheckNics(self, cluster: objects.Cluster) -> None:
        used = UsedMacs(self.cfg)
        for idx, nic in enumerate(self._nics):
            mac = nic["mac"]
            if mac in (constants.VALUE_AUTO, constants.VALUE_GENERATE):
                continue
            if mac in used:
                raise errors.OpPrereqError("MAC address %s already in use in"
                                           " cluster" % mac,
                                           errors.ECODE_NOTUNIQUE)
            used.add(mac)
            filled = cluster.SimpleFillNIC(nic["nicparams"])
            if filled[objects.NIC_MODE] == objects.NIC_MODE_ROUTED and \
                    not nic["ip"]:
                raise errors.OpPrereqError("Routed NIC mode requires an ip"
                                           " address (NIC %d)" % idx,
                                           errors.ECODE_INVAL)

    def _CheckIPolicy(self) -> None:
        """The instance must fit the policy of its primary node's group,
        and the node's CPUs its vcpu-ratio."""
        op = self.op
        filled_be = self.filled_be
        CheckIPolicySpec(self, self.cfg.GetNodeInfo(op.pnode_uuid).group, {
            objects.ISPEC_MEM_SIZE: filled_be[objects.BE_MAXMEM],
            objects.ISPEC_CPU_COUNT: filled_be[objects.BE_VCPUS],
            objects.ISPEC_DISK_SIZE: [disk["size"] for disk in self._disks],
            objects.ISPEC_NIC_COUNT: len(self._nics),
            objects.ISPEC_SPINDLE_USE: filled_be[objects.BE_SPINDLE_USE],
        }, op.disk_template, op.ignore_ipolicy)
        CheckNodeVcpuRatio(self, op.pnode_uuid, filled_be[objects.BE_VCPUS],
                           self.hypervisor, op.ignore_ipolicy)

    def _CheckFreeDisk(self, cluster: objects.Cluster) -> None:
        if self.op.disk_template == constants.DT_FILE:
            CheckNodeFreeDisk(self, self.op.pnode_uuid,
                              sum(disk["size"] for disk in self._disks),
                              self.hypervisor)

    def _Allocate(self, cluster: objects.Cluster) -> None:
        """Let the allocator choose the primary node (op.pnode)."""
        op = self.op
        whitelist = None
        if op.opportunistic_locking:
            owned = self.glm.list_owned(locking.LEVEL_NODE)
            whitelist = self.cfg.GetNodeNames(sorted(owned))
        req = InstanceAllocRequest(
            self, op, self._disks, self._nics,
            cluster.SimpleFillBE(ConvertBeParams(op.beparams)),
            op.hypervisor or cluster.primary_hypervisor, whitelist)
        ial = RunAllocator(self, req, op.iallocator, explain=op.explain)
        self.op.pnode_uuid, self.op.pnode = ExpandNodeUuidAndName(
            self.cfg, None, ial.result[0])
        if len(ial.result) > 1:
            self._snode_uuid, self.op.snode = ExpandNodeUuidAndName(
                self.cfg, None, ial.result[1])
        self.LogInfo("Selected nodes for instance %s via iallocator %s: %s",
                     op.instance_name, op.iallocator,
                     ", ".join(ial.result))
        if op.opportunistic_locking:
            others = self.glm.list_owned(locking.LEVEL_NODE) - \
                set(self._DiskNodes())
            if others:
                self.glm.release(locking.LEVEL_NODE, sorted(others))

    def CheckPrereq(self) -> None:
        op = self.op
        cluster = self.cfg.GetClusterInfo()
        self._CheckTemplate(cluster)
        if op.iallocator:
            self._Allocate(cluster)
        else:
            CheckNodesMemberOf(self, op.member_of, self._DiskNodes(),
                               op.tags)
        for node_uuid in self._DiskNodes():
            CheckNodeOnline(self, node_uuid)
            CheckNodeNotDrained(self, node_uuid)
            CheckNodeVmCapable(self, node_uuid)
        if op.disk_template in constants.DTS_INT_MIRROR and \
                self._snode_uuid is None:
            raise errors.OpPrereqError("The networked disk templates need"
                                       " a mirror node", errors.ECODE_INVAL)
        if self._snode_uuid == op.pnode_uuid:
            raise errors.OpPrereqError("The secondary node cannot be the"
                                       " primary node", errors.ECODE_INVAL)
        self._CheckParams(cluster)
        self._CheckNicNetworks()
        self._CheckNics(cluster)
        self._CheckIPolicy()
        if op.ip_check and self._instance_ip and \
                _IpInUse(self._instance_ip):
            raise errors.OpPrereqError("IP %s of instance %s already in use" %
                                       (self._instance_ip, op.instance_name),
                                       errors.ECODE_NOTUNIQUE)
        self._CheckFreeDisk(cluster)
        if op.start:
            CheckNodeFreeMemory(self, op.pnode_uuid,
                                "creating instance %s" % op.instance_name,
                                self.filled_be[objects.BE_MAXMEM],
                                self.hypervisor)

    def _DiskDir(self, cluster: objects.Cluster) -> str:
        base = (cluster.shared_file_storage_dir
                if self.op.disk_template == constants.DT_SHARED_FILE
                else cluster.file_storage_dir)
        parts = [base]
        if self.op.file_storage_dir:
            parts.append(os.path.normpath(self.op.file_storage_dir))
        parts.append(self.op.instance_name)
        return os.path.join(*parts)

    def _BuildDisks(self, cluster: objects.Cluster) -> list[objects.Disk]:
        template = self.op.disk_template
        result = []
        minors: dict[str, set[int]] = {}
        for idx, spec in enumerate(self._disks):
            uuid = self.cfg.GenerateUniqueID()
            if template in constants.DTS_FILEBASED:
                logical_id = [self.op.file_driver or constants.FD_LOOP,
                              os.path.join(self._DiskDir(cluster),
                                           "%s.disk%d" % (uuid, idx))]
            elif template == constants.DT_BLOCK:
                logical_id = [constants.BLOCKDEV_DRIVER_MANUAL,
                              spec["adopt"]]
            elif template == constants.DT_DRBD8:
                logical_id = DrbdLogicalId(self.cfg, self.op.pnode_uuid,
                                           self._snode_uuid or "", minors)
            else:
                raise errors.OpPrereqError("Disk template %s is not supported"
                                           " for new instances" % template,
                                           errors.ECODE_INVAL)
            result.append(objects.Disk(
                dev_type=template, size=spec["size"] or 0,
                mode=spec["mode"], name=spec["name"], logical_id=logical_id,
                nodes=self._DiskNodes(), iv_name="disk/%d" % idx,
                params={}, uuid=uuid))
        return result

    def _AdoptedSizes(self, disks: list[objects.Disk]) -> None:
        """Adopted devices keep their size: ask the node for it."""
        if self.op.disk_template not in constants.DTS_MUST_ADOPT:
            return
        result = self.rpc.call_blockdev_getdimensions(
            self.op.pnode_uuid, [disk.ToDict() for disk in disks])
        result.Raise("Cannot get the sizes of the adopted devices")
        for disk, dims in zip(disks, result.payload or []):
            if not dims:
                raise errors.OpExecError("Cannot find the adopted device %s"
                                         " on node %s" %
                                         (disk.logical_id[1], self.op.pnode))
            disk.size = int(dims[0]) // (1024 * 1024)

    def _BuildInstance(self, cluster: objects.Cluster,
                       disks: list[objects.Disk]) -> objects.Instance:
        op = self.op
        used = UsedMacs(self.cfg)
        nics = []
        for spec in self._nics:
            mac = spec["mac"]
            if mac in (constants.VALUE_AUTO, constants.VALUE_GENERATE):
                mac = GenerateMAC(cmdlib_network.MacPrefix(
                    self.cfg, spec["network"]), used)
            used.add(mac)
            nics.append(objects.NIC(mac=mac, ip=spec["ip"],
                                    nicparams=spec["nicparams"],
                                    name=spec["name"],
                                    network=spec["network"],
                                    uuid=self.cfg.GenerateUniqueID()))
        return objects.Instance(
            name=op.instance_name, primary_node=op.pnode_uuid,
            os=op.os_type or "", hypervisor=self.hypervisor,
            hvparams=self.hvparams, beparams=self.beparams,
            osparams=dict(op.osparams),
            osparams_private=dict(op.osparams_private or {}),
            admin_state=(objects.ADMINST_UP if op.start
                         else objects.ADMINST_DOWN),
            nics=nics, disks=[disk.uuid for disk in disks],
            disks_active=False, tags=set(op.tags),
            uuid=self.cfg.GenerateUniqueID())

    def _CreateDisks(self, instance: objects.Instance,
                     disks: list[objects.Disk],
                     created: list[objects.Disk]) -> None:
        """Create the disks on their nodes (CreateDisks)."""
        CreateDisks(self, instance, disks, created)
        if any(disk.dev_type in constants.DTS_INT_MIRROR for disk in disks):
            # Assembled again for the OS scripts and the start
            ShutdownInstanceDisks(self, instance, disks)

    def _WaitForMirrors(self, instance: objects.Instance,
                        disks: list[objects.Disk],
                        feedback_fn: Callable[[str], None]) -> None:
        """Ganeti's wait for the first sync of new mirrored disks (or,
        without wait_for_sync, one look); a degraded disk aborts."""
        AssembleInstanceDisks(self, instance, disks)
        try:
            if self.op.wait_for_sync:
                in_sync = WaitForSync(self, instance, disks)
            else:
                feedback_fn("* checking mirrors status")
                in_sync = WaitForSync(self, instance, disks, oneshot=True)
        finally:
            ShutdownInstanceDisks(self, instance, disks)
        if not in_sync:
            raise errors.OpExecError("There are some degraded disks for"
                                     " this instance")

    def _InstallOS(self, instance: objects.Instance,
                   disks: list[objects.Disk],
                   feedback_fn: Callable[[str], None]) -> None:
        feedback_fn("* running the instance OS create scripts...")
        with AssembledForOS(self, instance, disks,
                            self.op.osparams_secret) as os_instance:
            result = self.rpc.call_instance_os_add(
                instance.primary_node, os_instance, False,
                self.op.debug_level or 0)
            result.Raise("Could not add os for instance %s on node %s" %
                         (instance.name, self.op.pnode))

    def _ReleaseDiskPorts(self, disks: list[objects.Disk]) -> None:
        """Give back the ports _BuildDisks took, for disks never added."""
        self.cfg.ReleasePorts(disk.logical_id[2] for disk in disks
                              if disk.dev_type == constants.DT_DRBD8)

    def Exec(self, feedback_fn: Callable[[str], None]) -> list[str]:
        cluster = self.cfg.GetClusterInfo()
        disks = self._BuildDisks(cluster)
        try:
            self._AdoptedSizes(disks)
            instance = self._BuildInstance(cluster, disks)
            # Adopted devices are the administrator's: never removed on
            # recovery
            recorded = bool(disks) and \
                self.op.disk_template not in constants.DTS_MUST_ADOPT
            if recorded:
                creation_intents.Record(self.cfg, instance, disks)
        except Exception:
            self._ReleaseDiskPorts(disks)
            raise
        created: list[objects.Disk] = []
        added = False
        try:
            if disks:
                feedback_fn("* creating instance disks...")
            self._CreateDisks(instance, disks, created)
            if self.op.disk_template in constants.DTS_INT_MIRROR:
                self._WaitForMirrors(instance, disks, feedback_fn)
            if self._import is not None:
                self._import.ImportDisks(self, instance, disks, feedback_fn)
            elif self.op.os_type and not self.op.no_install and disks:
                self._InstallOS(instance, disks, feedback_fn)
            if self.hypervisor in constants.HTS_REQ_PORT:
                # Taken last: RemoveInstance gives it back on failure
                instance.network_port = self.cfg.AllocatePort()
            self.cfg.AddInstance(instance, disks)
            added = True
            if self.op.start:
                feedback_fn("* starting instance...")
                StartInstance(self, instance)
        except Exception:
            self.LogWarning("Creation of instance %s failed, removing what"
                            " was created", instance.name)
            if added:
                self.cfg.RemoveInstance(instance.uuid)
            else:
                self._ReleaseDiskPorts(disks)
            # A record whose disks could not all be removed stays for the
            # clean-up at the next master daemon start
            if RemoveDisks(self, instance.name, created) and recorded:
                creation_intents.Clear(self.cfg, instance.uuid)
            raise
        if recorded:
            creation_intents.Clear(self.cfg, instance.uuid)
        # Instance locks may only be added holding no node lock (those of
        # an opportunistic creation); the instance is complete by now
        if self.glm.is_owned(locking.LEVEL_NODE):
            self.glm.release(locking.LEVEL_NODE)
        self.glm.add(locking.LEVEL_INSTANCE, instance.uuid)
        logging.info("Created instance %s on node %s", instance.name,
                     self.op.pnode)
        return [self.op.pnode]
