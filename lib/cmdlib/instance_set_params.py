"""gnt-instance modify: LUInstanceSetParams.

Everything is checked in CheckPrereq, against copies of the instance, its
disks and its NICs. Exec then first does what can fail on a node and be
undone (creating the new disks, ballooning), and only afterwards removes
disks and writes the configuration: a refusal, or a node failing early,
leaves the instance as it was.

Disks and NICs are stacks (design-2.0 "Notes about device
removal/addition"): they are added and removed at the end of their list
only, so that no device changes its index (their forms and checks are in
instance_device_mods). Most changes take effect at the next start of the
instance; only the runtime memory changes at once.
"""

import os
from typing import Any, Callable

from ganeti import constants, errors, locking, objects
from ganeti.cmdlib import network as cmdlib_network
from ganeti.cmdlib import operating_system
from ganeti.cmdlib.allocator import CheckNodesMemberOf
from ganeti.cmdlib.base import ExpandNodeUuidAndName
from ganeti.cmdlib.cluster import CheckHvParamsOnNodes, HypervisorClass
from ganeti.cmdlib.instance_convert import (CheckConversionArguments,
                                            DiskTemplateConversion)
from ganeti.cmdlib.instance_device_mods import (
    _DISK_ADD_KEYS, _DISK_MODIFY_KEYS, _NIC_PARAM_KEYS, MAX_DISKS, MAX_NICS,
    UpgradeDeviceMods, _AddIndex, _CheckLast, _CheckNicParams, _DeviceName,
    _DiskMode, _DiskSize, _FindItem, _ValidateDeviceNames)
from ganeti.cmdlib.instance_policy import CheckIPolicySpec
from ganeti.cmdlib.instance_utils import (
    INSTANCE_NOT_RUNNING, BuildInstanceHookEnv, CheckInstanceState,
    CheckMinMaxMem, CheckNodeFreeDisk, CheckNodeFreeMemory, CheckNodeOnline,
    CheckNodeVmCapable, ConvertHvParams, CreateDisks, DrbdLogicalId,
    GenerateMAC, InstanceLU, InstanceRuntimeInfo, RemoveDisks,
    SetInstancePrimaryNode, ShutdownInstanceDisks, UsedMacs, WaitForSync)
from ganeti.parameters.base import GetUpdatedParams

# Templates whose primary node may change: the disks, if any, are files
# the administrator put on the new node
_PNODE_TEMPLATES = constants.DTS_FILEBASED | {constants.DT_DISKLESS}
_MIB = 1024 * 1024
# The runtime information not asked for yet
_NOT_ASKED = object()


class LUInstanceSetParams(InstanceLU):
    """Change the parameters, disks, NICs, OS or state of an instance.

    The result lists the changes as ``(what, new value)`` pairs, as
    Ganeti's does (e.g. ``("be/maxmem", 512)``, ``("disk/1", "remove")``).
    """

    HPATH = "instance-modify"

    def CheckArguments(self) -> None:
        op = self.op
        if not (op.nics or op.disks or op.disk_template or op.hvparams or
                op.beparams or op.os_name or op.osparams or
                op.offline is not None or op.runtime_mem or op.pnode):
            raise errors.OpPrereqError("No changes submitted",
                                       errors.ECODE_INVAL)
        op.disks = UpgradeDeviceMods("disk", op.disks)
        op.nics = UpgradeDeviceMods("NIC", op.nics)
        for kind, mods in (("disk", op.disks), ("NIC", op.nics)):
            for action, _, params in mods:
                if action == constants.DDM_REMOVE and params:
                    raise errors.OpPrereqError("No settings should be passed"
                                               " when removing a %s" % kind,
                                               errors.ECODE_INVAL)
        for action, _, params in op.nics:
            _CheckNicParams(action, params)
        if op.pnode and op.disks:
            raise errors.OpPrereqError("Changing the primary node and the"
                                       " disks at the same time is not"
                                       " supported", errors.ECODE_INVAL)
        if op.pnode:
            op.pnode_uuid, op.pnode = ExpandNodeUuidAndName(
                self.cfg, op.pnode_uuid, op.pnode)
        if op.disk_template:
            CheckConversionArguments(self)
        self._conversion: DiskTemplateConversion | None = None
        self._applied = False
        self._runtime: Any = _NOT_ASKED

    def DeclareLocks(self, level: int) -> None:
        super().DeclareLocks(level)
        if level not in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            return
        for node_uuid in (self.op.pnode_uuid, self.op.remote_node_uuid):
            if node_uuid and node_uuid not in self.needed_locks[level]:
                self.needed_locks[level] = (list(self.needed_locks[level]) +
                                            [node_uuid])

    # Checks ----------------------------------------------------------------

    def _Runtime(self) -> dict[str, Any] | None:
        """The instance's runtime information on its primary node ({} if
        it does not run), None if that node is offline; asked once."""
        if self._runtime is _NOT_ASKED:
            self._runtime = (None if self.pnode.offline else
                             InstanceRuntimeInfo(self, self.instance))
        return self._runtime

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        cluster = self.cfg.GetClusterInfo()
        self.template = self.cfg.GetInstanceDiskTemplate(instance.uuid)
        self.target_node = instance.primary_node
        if self.op.pnode_uuid and \
                self.op.pnode_uuid != instance.primary_node:
            self._CheckNewPrimary()
            self.target_node = self.op.pnode_uuid
        if self.op.disk_template:
            self._conversion = DiskTemplateConversion(self, self.template)
            self._conversion.CheckPrereq()
        self._PrepareDisks()
        self._PrepareHvParams(cluster)
        self._PrepareBeParams(cluster)
        self._PrepareOs(cluster)
        self._CheckMemory(cluster)
        self._PrepareNics(cluster)
        self._CheckIPolicy(cluster)
        if self.op.offline is not None:
            if self.op.offline:
                msg = "can't change to offline without being down first"
            else:
                msg = ("can't change to online (down) without being offline"
                       " first")
            CheckInstanceState(self, instance, INSTANCE_NOT_RUNNING, msg)

    def _CheckNewPrimary(self) -> None:
        """The instance must be stopped (unless forced) and its disks
        already present on the new node."""
        instance = self.instance
        node = self.cfg.GetNodeInfo(self.op.pnode_uuid)
        if self.template not in _PNODE_TEMPLATES:
            raise errors.OpPrereqError(
                "Can't change the primary node of instance %s: its disk"
                " template %s is not one of %s" %
                (instance.name, self.template,
                 ", ".join(sorted(_PNODE_TEMPLATES))), errors.ECODE_INVAL)
        # A new node: the cluster's reservation defaults apply
        CheckNodesMemberOf(self, [], [node.uuid], instance.GetTags())
        CheckNodeOnline(self, node.uuid)
        CheckNodeVmCapable(self, node.uuid)
        if not self.op.force:
            if self._Runtime() is None:
                self.LogWarning("Primary node %s is offline, can't check"
                                " that instance %s is stopped",
                                self.pnode.name, instance.name)
            elif self._Runtime():
                raise errors.OpPrereqError("Instance is still running on %s"
                                           % self.pnode.name,
                                           errors.ECODE_STATE)
        disks = self.cfg.GetInstanceDisks(instance.uuid)
        if not disks:
            return
        result = self.rpc.call_blockdev_getdimensions(
            node.uuid, [disk.ToDict() for disk in disks])
        result.Raise("Can't look for the disks of instance %s on node %s" %
                     (instance.name, node.name), prereq=True,
                     ecode=errors.ECODE_ENVIRON)
        for disk, dims in zip(disks, result.payload or []):
            if not dims:
                raise errors.OpPrereqError(
                    "Can't change the primary node of instance %s to %s:"
                    " disk %s (%s) not found on that node" %
                    (instance.name, node.name, disk.iv_name,
                     disk.logical_id[1]), errors.ECODE_STATE)

    # Disks

    def _PrepareDisks(self) -> None:
        """Plan the disk changes on a copy of the disk list.

        ``_disk_plan`` holds ``(operation, disk)`` in order, the disks to
        add fully built; ``new_disks`` is the list as it will be.
        """
        self.new_disks = self.cfg.GetInstanceDisks(self.instance.uuid)
        self._disk_plan: list[tuple[str, objects.Disk]] = []
        self._disk_chgdesc: list[tuple[str, Any]] = []
        if not self.op.disks:
            return
        if self.template == constants.DT_DISKLESS:
            raise errors.OpPrereqError("Disk operations not supported for"
                                       " diskless instances",
                                       errors.ECODE_INVAL)
        disks = self.new_disks
        for action, ident, params in self.op.disks:
            if action == constants.DDM_ADD:
                idx = _AddIndex("disk", ident, disks)
                disk = self._NewDisk(idx, params, disks[0])
                disks.append(disk)
                # Described once the size of adopted devices is known
                self._disk_chgdesc.append(("disk/%d" % idx, disk))
            elif action == constants.DDM_REMOVE:
                idx = _FindItem("disk", ident, disks)
                _CheckLast("disk", idx, disks)
                if len(disks) == 1:
                    raise errors.OpPrereqError("Cannot remove the last disk"
                                               " of an instance",
                                               errors.ECODE_INVAL)
                disk = disks.pop(idx)
                self._disk_chgdesc.append(("disk/%d" % idx, "remove"))
            else:
                idx = _FindItem("disk", ident, disks)
                disk = disks[idx]
                self._ModifyDisk(idx, disk, params)
            self._disk_plan.append((action, disk))
        _ValidateDeviceNames("disk", disks)
        if len(disks) > MAX_DISKS:
            raise errors.OpPrereqError("Instance has too many disks (%d),"
                                       " cannot add more" % MAX_DISKS,
                                       errors.ECODE_STATE)
        if any(action == constants.DDM_REMOVE
               for action, _ in self._disk_plan):
            CheckInstanceState(self, self.instance, INSTANCE_NOT_RUNNING,
                               "cannot remove disks")
        added = [disk for action, disk in self._disk_plan
                 if action == constants.DDM_ADD]
        if added:
            self._CheckNewDisks(added)
        self._disk_chgdesc = [
            (what, "add:size=%s,mode=%s" % (change.size, change.mode)
             if isinstance(change, objects.Disk) else change)
            for what, change in self._disk_chgdesc]

    def _NewDisk(self, idx: int, params: dict,
                 model: objects.Disk) -> objects.Disk:
        """The disk ``params`` describe, next to the instance's others
        (same template, directory, file driver, drbd pair)."""
        template = self.template
        extra = sorted(set(params) - _DISK_ADD_KEYS)
        if extra and template != constants.DT_EXT:
            raise errors.OpPrereqError("Unknown disk parameter(s) for disk"
                                       " %d: %s" % (idx, ", ".join(extra)),
                                       errors.ECODE_INVAL)
        adopt = params.get("adopt")
        if adopt and template not in constants.DTS_MAY_ADOPT:
            raise errors.OpPrereqError("Disk adoption is not supported for"
                                       " the '%s' disk template" % template,
                                       errors.ECODE_INVAL)
        if not adopt and template in constants.DTS_MUST_ADOPT:
            raise errors.OpPrereqError("Disk template %s requires disk"
                                       " adoption, but no 'adopt' parameter"
                                       " given" % template,
                                       errors.ECODE_INVAL)
        provider = params.get("provider")
        if template == constants.DT_EXT and not provider:
            raise errors.OpPrereqError("Missing provider for template '%s'" %
                                       constants.DT_EXT, errors.ECODE_INVAL)
        if provider is not None and template != constants.DT_EXT:
            raise errors.OpPrereqError("The 'provider' option is only valid"
                                       " for the %s disk template, not %s" %
                                       (constants.DT_EXT, template),
                                       errors.ECODE_INVAL)
        if adopt:
            if params.get("size") is not None:
                raise errors.OpPrereqError("Disk %d: the size of an adopted"
                                           " disk is the device's, don't"
                                           " give one" % idx,
                                           errors.ECODE_INVAL)
            size = 0
        elif params.get("size") is None:
            raise errors.OpPrereqError("Required disk parameter 'size'"
                                       " missing", errors.ECODE_INVAL)
        else:
            size = _DiskSize(params["size"])
        uuid = self.cfg.GenerateUniqueID()
        disk_params: dict[str, Any] = {}
        nodes = [self.target_node]
        if template in constants.DTS_FILEBASED:
            logical_id = [model.logical_id[0],
                          os.path.join(os.path.dirname(model.logical_id[1]),
                                       "%s.disk%d" % (uuid, idx))]
        elif template == constants.DT_BLOCK:
            logical_id = [constants.BLOCKDEV_DRIVER_MANUAL, adopt]
        elif template == constants.DT_EXT:
            logical_id = [provider, "%s.disk%d" % (uuid, idx)]
            disk_params = {key: params[key] for key in extra}
        elif template == constants.DT_DRBD8:
            # On the instance's pair; its port and minors are taken in
            # Exec (_AllocateDrbd), when no check can refuse any more
            logical_id = []
            nodes = nodes + [node for node in model.nodes
                             if node != self.target_node]
        else:
            raise errors.OpPrereqError("Adding disks to instances with disk"
                                       " template %s is not supported" %
                                       template, errors.ECODE_INVAL)
        return objects.Disk(
            dev_type=template, size=size,
            mode=_DiskMode(params.get("mode") or objects.DISK_RDWR),
            name=_DeviceName(params.get("name")), logical_id=logical_id,
            nodes=nodes, iv_name="disk/%d" % idx,
            params=disk_params, uuid=uuid)

    def _ModifyDisk(self, idx: int, disk: objects.Disk, params: dict) -> None:
        if "size" in params:
            raise errors.OpPrereqError("Disk size change not possible, use"
                                       " grow-disk", errors.ECODE_INVAL)
        bad = sorted(set(params) - _DISK_MODIFY_KEYS)
        if bad:
            raise errors.OpPrereqError(
                "Can't change disk parameter(s) %s of disk %d (only %s can"
                " be changed)" % (", ".join(bad), idx,
                                  " and ".join(sorted(_DISK_MODIFY_KEYS))),
                errors.ECODE_INVAL)
        if "mode" in params:
            disk.mode = _DiskMode(params["mode"])
            self._disk_chgdesc.append(("disk.mode/%d" % idx, disk.mode))
        if "name" in params:
            disk.name = _DeviceName(params["name"])
            self._disk_chgdesc.append(("disk.name/%d" % idx, disk.name))

    def _CheckNewDisks(self, added: list[objects.Disk]) -> None:
        """The new disks' nodes (both of a drbd pair) must be able to
        hold them: space for files and images, the devices to adopt
        present and not in use."""
        node = self.cfg.GetNodeInfo(self.target_node)
        for node_uuid in added[0].nodes:
            CheckNodeOnline(self, node_uuid)
        if self.template in (constants.DT_FILE, constants.DT_DRBD8):
            kept = {disk.uuid for disk in self.new_disks}
            size = sum(disk.size for disk in added if disk.uuid in kept)
            for node_uuid in added[0].nodes:
                CheckNodeFreeDisk(self, node_uuid, size,
                                  self.instance.hypervisor)
        adopted = [disk for disk in added
                   if disk.dev_type == constants.DT_BLOCK]
        if adopted:
            self._MeasureAdopted(node, adopted)
        running = self._Runtime()
        self._keep_new_disks_active = (self.instance.disks_active or
                                       bool(running))

    def _MeasureAdopted(self, node: objects.Node,
                        disks: list[objects.Disk]) -> None:
        """Adopted devices keep their size; refuse one that is missing or
        already some instance's disk."""
        in_use: dict[str, str] = {}
        for inst in self.cfg.GetAllInstancesInfo().values():
            for disk in self.cfg.GetInstanceDisks(inst.uuid):
                if disk.dev_type == constants.DT_BLOCK and \
                        node.uuid in (disk.nodes or []):
                    in_use[disk.logical_id[1]] = inst.name
        for disk in disks:
            path = disk.logical_id[1]
            if path in in_use:
                raise errors.OpPrereqError("Block device %s on node %s is"
                                           " already used by instance %s" %
                                           (path, node.name, in_use[path]),
                                           errors.ECODE_NOTUNIQUE)
            in_use[path] = self.instance.name
        result = self.rpc.call_blockdev_getdimensions(
            node.uuid, [disk.ToDict() for disk in disks])
        result.Raise("Cannot get the sizes of the adopted devices",
                     prereq=True, ecode=errors.ECODE_ENVIRON)
        for disk, dims in zip(disks, result.payload or []):
            if not dims:
                raise errors.OpPrereqError("Cannot find the adopted device %s"
                                           " on node %s" %
                                           (disk.logical_id[1], node.name),
                                           errors.ECODE_NOENT)
            disk.size = int(dims[0]) // _MIB

    # Parameters

    def _PrepareHvParams(self, cluster: objects.Cluster) -> None:
        instance = self.instance
        self.hv_inst = instance.hvparams
        if not self.op.hvparams:
            return
        hv_name = instance.hypervisor
        # Names, types and global parameters are refused here
        ConvertHvParams(hv_name, self.op.hvparams)
        self.hv_inst = GetUpdatedParams(
            instance.hvparams, self.op.hvparams,
            HypervisorClass(hv_name).PARAMETERS, "%s hypervisor" % hv_name)
        hv_new = cluster.SimpleFillHV(hv_name, instance.os, self.hv_inst)
        try:
            HypervisorClass(hv_name).CheckParameterSyntax(hv_new)
        except errors.HypervisorError as err:
            raise errors.OpPrereqError(str(err), errors.ECODE_INVAL) from None
        CheckHvParamsOnNodes(self, self._Nodes(), hv_name, hv_new)

    def _PrepareBeParams(self, cluster: objects.Cluster) -> None:
        instance = self.instance
        self.be_old = cluster.FillBE(instance)
        self.be_inst = instance.beparams
        self._be_chgdesc: list[tuple[str, Any]] = []
        if not self.op.beparams:
            self.be_new = self.be_old
            return
        self.be_inst = GetUpdatedParams(instance.beparams, self.op.beparams,
                                        objects.BE_PARAMETERS, "backend")
        self.be_new = cluster.SimpleFillBE(self.be_inst)
        CheckMinMaxMem(self.be_new)
        for key in self.op.beparams:
            stored = (objects.BE_MAXMEM if key == objects.BE_MEMORY
                      else key)
            self._be_chgdesc.append(
                ("be/%s" % key,
                 self.be_inst.get(stored, constants.VALUE_DEFAULT)))

    def _PrepareOs(self, cluster: objects.Cluster) -> None:
        """A new OS is checked on the (new) primary node unless forced;
        new OS parameters always, against the OS the instance will have
        (its current one when forced, as in Ganeti)."""
        op = self.op
        instance = self.instance
        self.os_inst = instance.osparams
        if op.osparams:
            self.os_inst = operating_system.UpdateParams(instance.osparams,
                                                         op.osparams)
        if not (op.osparams or (op.os_name and not op.force)):
            return
        os_name = op.os_name if op.os_name and not op.force else instance.os
        if not os_name:
            raise errors.OpPrereqError("OS parameters given without an OS",
                                       errors.ECODE_INVAL)
        operating_system.CheckOSParams(
            self, True, self._Nodes(), os_name,
            cluster.SimpleFillOS(os_name, self.os_inst), op.force_variant)

    def _CheckMemory(self, cluster: objects.Cluster) -> None:
        """A higher maximum memory must fit the primary node (counting
        what the running instance already has), unless forced; the
        runtime memory must be in the instance's range and fit too."""
        op = self.op
        instance = self.instance
        node = self.cfg.GetNodeInfo(self.target_node)
        maxmem = self.be_new[objects.BE_MAXMEM]
        if op.beparams and not op.force and \
                maxmem > self.be_old[objects.BE_MAXMEM]:
            if node.offline:
                self.LogWarning("Node %s is offline, can't check its free"
                                " memory", node.name)
            else:
                current = (0 if node.uuid != instance.primary_node
                           else int((self._Runtime() or {}).get("memory", 0)))
                if maxmem > current:
                    CheckNodeFreeMemory(
                        self, node.uuid, "the new maximum memory of instance"
                        " %s" % instance.name, maxmem - current,
                        instance.hypervisor)
        if not op.runtime_mem:
            return
        CheckNodeOnline(self, instance.primary_node)
        info = self._Runtime()
        if not info:
            raise errors.OpPrereqError("Instance %s is not running" %
                                       instance.name, errors.ECODE_STATE)
        minmem = self.be_new[objects.BE_MINMEM]
        if not op.force and not minmem <= op.runtime_mem <= maxmem:
            raise errors.OpPrereqError(
                "Instance %s must have memory between %d and %d MB of memory"
                " unless --force is given" % (instance.name, minmem, maxmem),
                errors.ECODE_INVAL)
        delta = op.runtime_mem - int(info["memory"])
        if delta > 0:
            CheckNodeFreeMemory(self, instance.primary_node,
                                "ballooning memory for instance %s" %
                                instance.name, delta, instance.hypervisor)

    # NICs

    def _PrepareNics(self, cluster: objects.Cluster) -> None:
        """Plan the NIC changes on copies; ``new_nics`` is None without
        any."""
        self.new_nics: list[objects.NIC] | None = None
        self._nic_chgdesc: list[tuple[str, Any]] = []
        if not self.op.nics:
            return
        self._other_macs = UsedMacs(self.cfg, exclude=self.instance.uuid)
        nics = [nic.Copy() for nic in self.instance.nics]
        for action, ident, params in self.op.nics:
            if action == constants.DDM_ADD:
                idx = _AddIndex("NIC", ident, nics)
                nics.append(self._NewNic(idx, params, nics, cluster))
            elif action == constants.DDM_REMOVE:
                idx = _FindItem("NIC", ident, nics)
                _CheckLast("NIC", idx, nics)
                del nics[idx]
                self._nic_chgdesc.append(("NIC/%d" % idx, "remove"))
            else:
                idx = _FindItem("NIC", ident, nics)
                self._ModifyNic(idx, nics[idx], params, nics, cluster)
        _ValidateDeviceNames("NIC", nics)
        if len(nics) > MAX_NICS:
            raise errors.OpPrereqError("Instance has too many network"
                                       " interfaces (%d), cannot add more" %
                                       MAX_NICS, errors.ECODE_STATE)
        self.new_nics = nics

    def _TakeMac(self, requested: str, nics: list[objects.NIC],
                 own: objects.NIC | None, net_uuid: str | None) -> str:
        """The MAC a new or changed NIC gets: a generated one (with its
        network's prefix), or the one requested if no other NIC in the
        cluster has it."""
        used = self._other_macs | {nic.mac for nic in nics if nic is not own}
        if requested in (constants.VALUE_AUTO, constants.VALUE_GENERATE):
            return GenerateMAC(cmdlib_network.MacPrefix(self.cfg, net_uuid),
                               used)
        if requested in used:
            raise errors.OpPrereqError("MAC address '%s' already in use in"
                                       " cluster" % requested,
                                       errors.ECODE_NOTUNIQUE)
        return requested

    @staticmethod
    def _CheckRoutedIp(nic: objects.NIC, filled: dict) -> None:
        if filled[objects.NIC_MODE] == objects.NIC_MODE_ROUTED and \
                not nic.ip:
            raise errors.OpPrereqError("Cannot set the NIC IP address to None"
                                       " on a routed NIC if not attached to"
                                       " a network", errors.ECODE_INVAL)

    def _NicNetwork(self, params: dict, old: str | None) -> str | None:
        """UUID of the network a NIC is to be on (``old`` if unchanged)."""
        if "network" not in params:
            return old
        if params["network"] is None:
            return None
        return cmdlib_network.LookupNetwork(self.cfg, params["network"])

    def _NetworkIp(self, ip: str | None, net_uuid: str | None) -> str | None:
        return cmdlib_network.NicAddress(
            self, ip, net_uuid, self.instance.primary_node,
            self.op.conflicts_check, "IP %s not available in network %s")

    def _NetParams(self, net_uuid: str) -> dict:
        """A network's NIC parameters in the primary node's group."""
        netparams = cmdlib_network.GroupNetParams(
            self.cfg, net_uuid, self.instance.primary_node)
        if netparams is None:
            raise errors.OpPrereqError(
                "No netparams found for the network %s, probably not"
                " connected" % self.cfg.GetNetwork(net_uuid).name,
                errors.ECODE_INVAL)
        return netparams

    def _NewNic(self, idx: int, params: dict, nics: list[objects.NIC],
                cluster: objects.Cluster) -> objects.NIC:
        net_uuid = self._NicNetwork(params, None)
        if net_uuid is not None:
            nicparams = self._NetParams(net_uuid)
        else:
            nicparams = GetUpdatedParams(
                {}, {key: params[key] for key in _NIC_PARAM_KEYS
                     if key in params},
                objects.NIC_PARAMETERS, "NIC")
        requested = params.get("mac", constants.VALUE_AUTO)
        nic = objects.NIC(
            mac=self._TakeMac(requested, nics, None, net_uuid),
            ip=self._NetworkIp(params.get("ip"), net_uuid),
            name=params.get("name"), network=net_uuid,
            nicparams=nicparams, uuid=self.cfg.GenerateUniqueID())
        filled = cluster.SimpleFillNIC(nicparams)
        self._CheckRoutedIp(nic, filled)
        self._nic_chgdesc.append(
            ("nic.%d" % idx, "add:mac=%s,ip=%s,mode=%s,link=%s,network=%s" %
             (nic.mac, nic.ip, filled[objects.NIC_MODE],
              filled[objects.NIC_LINK], nic.network)))
        return nic

    def _ModifyNic(self, idx: int, nic: objects.NIC, params: dict,
                   nics: list[objects.NIC], cluster: objects.Cluster) -> None:
        net_uuid = self._NicNetwork(params, nic.network)
        if "mac" in params:
            nic.mac = self._TakeMac(params["mac"], nics, nic, net_uuid)
        update = {key: params[key] for key in _NIC_PARAM_KEYS
                  if key in params}
        ip = params.get("ip", nic.ip)
        if (ip, net_uuid) != (nic.ip, nic.network):
            params["ip"] = self._NetworkIp(ip, net_uuid)
            if net_uuid != nic.network:
                params["network"] = net_uuid
                nic.nicparams = (self._NetParams(net_uuid)
                                 if net_uuid else {})
        elif nic.network is not None and update.keys() & {objects.NIC_MODE,
                                                          objects.NIC_LINK}:
            raise errors.OpPrereqError("Not allowed to change link or mode of"
                                       " a NIC that is connected to a"
                                       " network", errors.ECODE_INVAL)
        for key in ("mac", "ip", "name", "network"):
            if key in params:
                if key != "mac":
                    setattr(nic, key, params[key])
                self._nic_chgdesc.append(("nic.%s/%d" % (key, idx),
                                          getattr(nic, key)))
        if nic.network is not None:
            update = {}
        if update:
            nic.nicparams = GetUpdatedParams(nic.nicparams, update,
                                             objects.NIC_PARAMETERS, "NIC")
        filled = cluster.SimpleFillNIC(nic.nicparams)
        for key in update:
            self._nic_chgdesc.append(("nic.%s/%d" % (key, idx),
                                      filled[key]))
        self._CheckRoutedIp(nic, filled)

    def _CheckIPolicy(self, cluster: objects.Cluster) -> None:
        """The changed specs must fit the policy of the primary node's
        group (Ganeti checks both memory bounds)."""
        op = self.op
        if not (op.disks or op.nics or op.beparams):
            return
        group = self.cfg.GetNodeInfo(self.target_node).group
        nics = self.new_nics if self.new_nics is not None \
            else self.instance.nics
        spec: dict[str, Any] = {
            objects.ISPEC_DISK_SIZE: [disk.size for disk in self.new_disks],
            objects.ISPEC_DISK_COUNT: len(self.new_disks),
            objects.ISPEC_NIC_COUNT: len(nics),
        }
        mem_sizes = [None]
        if op.beparams:
            spec[objects.ISPEC_CPU_COUNT] = self.be_new[objects.BE_VCPUS]
            spec[objects.ISPEC_SPINDLE_USE] = \
                self.be_new[objects.BE_SPINDLE_USE]
            mem_sizes = sorted({self.be_new[objects.BE_MAXMEM],
                                self.be_new[objects.BE_MINMEM]})
        for mem_size in mem_sizes:
            spec[objects.ISPEC_MEM_SIZE] = mem_size
            CheckIPolicySpec(self, group, spec, self.template,
                             op.ignore_ipolicy)

    def _Nodes(self) -> list[str]:
        """The instance's nodes as they will be (new primary first)."""
        nodes = self.cfg.GetInstanceNodes(self.instance.uuid)
        return [self.target_node] + [node for node in nodes
                                     if node not in (self.target_node,
                                                     self.instance
                                                     .primary_node)]

    # Hooks -----------------------------------------------------------------

    def _ExtraHookEnv(self) -> dict[str, Any]:
        env: dict[str, Any] = {}
        if self.op.disk_template:
            env["NEW_DISK_TEMPLATE"] = self.op.disk_template
        if self.op.runtime_mem:
            env["RUNTIME_MEMORY"] = self.op.runtime_mem
        return env

    def BuildHooksEnv(self) -> dict[str, Any]:
        """Before the change, the memory, CPUs and NICs are described as
        they will be (as Ganeti does); afterwards everything is."""
        if self._applied:
            return super().BuildHooksEnv()
        proposed = self.instance.Copy()
        proposed.beparams = self.be_inst
        if self.new_nics is not None:
            proposed.nics = self.new_nics
        env = BuildInstanceHookEnv(self, proposed)
        env.update(self._ExtraHookEnv())
        return env

    # Execution -------------------------------------------------------------

    def _AllocateDrbd(self, added: list[objects.Disk]) -> None:
        """Give the new drbd disks their port and minors, as creation
        does (DrbdLogicalId)."""
        minors: dict[str, set[int]] = {}
        for disk in added:
            if disk.dev_type == constants.DT_DRBD8:
                disk.logical_id = DrbdLogicalId(self.cfg, disk.nodes[0],
                                                disk.nodes[1], minors)

    def _DropNewDisks(self, added: list[objects.Disk],
                      created: list[objects.Disk]) -> None:
        """Undo _CreateNewDisks: remove what was created, give the ports
        back."""
        RemoveDisks(self, self.instance.name, created)
        ports = [disk.logical_id[2] for disk in added
                 if disk.dev_type == constants.DT_DRBD8 and disk.logical_id]
        if ports:
            self.cfg.ReleasePorts(ports)

    def _CreateNewDisks(self) -> list[objects.Disk]:
        """Create the added disks on their nodes, the mirrored ones in
        sync (a first look only without ``wait_for_sync``); on a failure
        remove the ones created before and raise.

        They stay active if the instance's disks are; the running
        instance sees them at its next start (no hotplug).
        """
        instance = self.instance
        added = [disk for action, disk in self._disk_plan
                 if action == constants.DDM_ADD]
        created: list[objects.Disk] = []
        if not added:
            return created
        try:
            self._AllocateDrbd(added)
            CreateDisks(self, instance, added, created,
                        first_idx=len(self.new_disks) - len(added))
            mirrored = [disk for disk in added
                        if disk.dev_type in constants.DTS_INT_MIRROR]
            if mirrored and not WaitForSync(
                    self, instance, mirrored,
                    oneshot=not self.op.wait_for_sync):
                raise errors.OpExecError("Failed to sync disks of %s" %
                                         instance.name)
        except Exception:
            self._DropNewDisks(added, created)
            raise
        if not self._keep_new_disks_active:
            ShutdownInstanceDisks(self, instance, created)
        return created

    def _ApplyDiskPlan(self) -> None:
        uuid = self.instance.uuid
        for action, disk in self._disk_plan:
            if action == constants.DDM_ADD:
                self.cfg.AddInstanceDisk(uuid, disk)
            elif action == constants.DDM_REMOVE:
                RemoveDisks(self, self.instance.name, [disk])
                self.cfg.RemoveInstanceDisk(uuid, disk.uuid)
            else:
                self.cfg.Update(disk)

    def Exec(self, feedback_fn: Callable[[str], None]) -> list[tuple]:
        self._applied = True
        op = self.op
        instance = self.instance
        result: list[tuple[str, Any]] = []
        created = self._CreateNewDisks()
        if op.runtime_mem:
            answer = self.rpc.call_instance_balloon_memory(
                instance.primary_node,
                self.cfg.GetClusterInfo().InstanceRpcDict(instance),
                op.runtime_mem)
            if answer.fail_msg:
                self._DropNewDisks(created, created)
                answer.Raise("Cannot modify instance runtime memory")
            result.append(("runtime_memory", op.runtime_mem))
        self._ApplyDiskPlan()
        result.extend(self._disk_chgdesc)
        if self._conversion is not None:
            self._conversion.Exec(feedback_fn)
            result.append(("disk_template", op.disk_template))
        if self.target_node != instance.primary_node:
            SetInstancePrimaryNode(self, instance.uuid, self.target_node)
        instance = self.cfg.GetInstanceInfo(instance.uuid)
        if self.new_nics is not None:
            instance.nics = self.new_nics
            result.extend(self._nic_chgdesc)
        if op.hvparams:
            instance.hvparams = self.hv_inst
            result.extend(("hv/%s" % key,
                           self.hv_inst.get(key, constants.VALUE_DEFAULT))
                          for key in op.hvparams)
        if op.beparams:
            instance.beparams = self.be_inst
            result.extend(self._be_chgdesc)
        if op.os_name:
            instance.os = op.os_name
        if op.osparams:
            instance.osparams = self.os_inst
            result.extend(("os/%s" % key, value)
                          for key, value in op.osparams.items())
        if op.offline is not None:
            instance.admin_state = (objects.ADMINST_OFFLINE if op.offline
                                    else objects.ADMINST_DOWN)
            instance.admin_state_source = objects.ADMIN_SOURCE
            result.append(("admin_state", instance.admin_state))
        self.cfg.Update(instance, feedback_fn)
        return result
