"""LUs adding, changing, removing, connecting and disconnecting networks,
and the network checks of instances' NICs.

A network is an IPv4 subnet with an address pool (see ganeti.network);
connecting it to a node group gives it the NIC mode, link and VLAN its
NICs get in that group. Messages are Ganeti 3.0's.
"""

import re
from typing import Any, Callable

from ganeti import constants, errors, locking, network, objects, utils
from ganeti.cmdlib.base import LogicalUnit
from ganeti.cmdlib.group import GroupInstances, LockedGroupInstances

_MAC_PREFIX_RE = re.compile(r"^([0-9a-f]{2}:){2}[0-9a-f]{2}$", re.I)


def NormalizeMacPrefix(prefix: str) -> str:
    """A three-octet MAC prefix, lower case; OpPrereqError if invalid."""
    if not _MAC_PREFIX_RE.match(prefix):
        raise errors.OpPrereqError("Invalid MAC address prefix '%s'" % prefix,
                                   errors.ECODE_INVAL)
    return prefix.lower()


def LookupNetwork(cfg: Any, name: str) -> str:
    """UUID of a network given by name or UUID (Ganeti's error if none)."""
    uuid = cfg.LookupNetwork(name)
    if uuid is None:
        raise errors.OpPrereqError("Network '%s' not found" % name,
                                   errors.ECODE_NOENT)
    return uuid


def GroupNetParams(cfg: Any, net_uuid: str, node_uuid: str) -> dict | None:
    """The NIC parameters of a network in a node's group, None if the
    network is not connected there."""
    group = cfg.GetNodeGroup(cfg.GetNodeInfo(node_uuid).group)
    params = group.networks.get(net_uuid)
    return None if params is None else dict(params)


def MacPrefix(cfg: Any, net_uuid: str | None) -> str:
    """The prefix of generated MACs: the network's, else the cluster's."""
    if net_uuid is not None:
        prefix = cfg.GetNetwork(net_uuid).mac_prefix
        if prefix:
            return prefix
    return cfg.GetClusterInfo().mac_prefix


def CheckForConflictingIp(cfg: Any, ip: str | None, node_uuid: str) -> None:
    """Refuse an IP of a NIC without network that lies in a network
    connected to the node's group."""
    if ip is None:
        return
    group = cfg.GetNodeGroup(cfg.GetNodeInfo(node_uuid).group)
    for net_uuid in group.networks:
        net = cfg.GetNetwork(net_uuid)
        if network.AddressPool(net).Contains(ip):
            raise errors.OpPrereqError("The requested IP address (%s) belongs"
                                       " to network %s, but the target NIC"
                                       " does not." % (ip, net.name),
                                       errors.ECODE_STATE)


def TakeNicIp(cfg: Any, net_uuid: str, ip: str, check: bool,
              unavailable: str) -> str:
    """The address a NIC on a network gets: the first free one of the pool
    for "pool", else ``ip`` if the pool has it free (with ``check``: nor
    externally reserved). The configuration reserves it when the instance
    is written; ``unavailable`` is the refusal's message format (ip,
    network name)."""
    net = cfg.GetNetwork(net_uuid)
    pool = network.AddressPool(net)
    if ip.lower() == constants.NIC_IP_POOL:
        try:
            return pool.GenerateFree()
        except errors.AddressPoolError:
            raise errors.OpPrereqError("Unable to get a free IP from the"
                                       " address pool",
                                       errors.ECODE_STATE) from None
    try:
        taken = pool.IsReserved(ip) or (check and
                                        pool.IsReserved(ip, external=True))
    except errors.AddressPoolError:
        taken = True
    if taken:
        raise errors.OpPrereqError(unavailable % (ip, net.name),
                                   errors.ECODE_NOTUNIQUE)
    return ip


def NicAddress(lu: Any, ip: str | None, net_uuid: str | None,
               node_uuid: str, check: bool, unavailable: str) -> str | None:
    """The address of a NIC with a new (ip, network) pair on a node.

    On a network: taken from its pool for "pool", else checked free there
    (see TakeNicIp). Without network: "pool" is refused, and with
    ``check`` an address in a network of the node's group too.
    """
    if net_uuid is None:
        if ip == constants.NIC_IP_POOL:
            raise errors.OpPrereqError("ip=pool, but no network found",
                                       errors.ECODE_INVAL)
        if check:
            CheckForConflictingIp(lu.cfg, ip, node_uuid)
        return ip
    if ip is None:
        return None
    address = TakeNicIp(lu.cfg, net_uuid, ip, check, unavailable)
    if ip == constants.NIC_IP_POOL:
        lu.LogInfo("Chose IP %s from network %s", address,
                   lu.cfg.GetNetwork(net_uuid).name)
    return address


def _HookEnv(name: str, subnet: str, gateway: str | None,
             network6: str | None, gateway6: str | None,
             mac_prefix: str | None, tags: Any) -> dict[str, str]:
    """Ganeti's hook environment of a network (set values only)."""
    env = {"NETWORK_NAME": name}
    for key, value in (("SUBNET", subnet), ("GATEWAY", gateway),
                       ("SUBNET6", network6), ("GATEWAY6", gateway6),
                       ("MAC_PREFIX", mac_prefix)):
        if value:
            env["NETWORK_" + key] = value
    if tags:
        env["NETWORK_TAGS"] = " ".join(sorted(tags))
    return env


class _NetworkLU(LogicalUnit):
    """A hooked LU on one network; hooks run on the master."""

    HTYPE = constants.HTYPE_NETWORK
    REQ_BGL = False

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        master = self.cfg.GetMasterNode()
        return ([master], [master])


class LUNetworkAdd(_NetworkLU):
    """Add a network with its address pool."""

    HPATH = "network-add"

    def CheckArguments(self) -> None:
        if self.op.mac_prefix:
            self.op.mac_prefix = NormalizeMacPrefix(self.op.mac_prefix)
        for tag in self.op.tags:
            try:
                objects.ValidateTag(tag)
            except errors.TagError as err:
                raise errors.OpPrereqError(str(err), errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        # The new network's lock is created (held) in Exec
        self.needed_locks = {}

    def CheckPrereq(self) -> None:
        existing = self.cfg.LookupNetwork(self.op.network_name)
        if existing is not None:
            raise errors.OpPrereqError("Desired network name '%s' already"
                                       " exists as a network (UUID: %s)" %
                                       (self.op.network_name, existing),
                                       errors.ECODE_EXISTS)

    def BuildHooksEnv(self) -> dict[str, Any]:
        op = self.op
        return _HookEnv(op.network_name, op.network, op.gateway, op.network6,
                        op.gateway6, op.mac_prefix, op.tags)

    def _ReserveClusterIps(self, pool: network.AddressPool) -> None:
        """Reserve the nodes' and the master's addresses in the pool."""
        for node in self.cfg.GetAllNodesInfo().values():
            for ip in (node.primary_ip, node.secondary_ip):
                if not pool.Contains(ip):
                    continue
                try:
                    pool.Reserve(ip, external=True)
                    self.LogInfo("Reserved IP address of node '%s' (%s)",
                                 node.name, ip)
                except errors.AddressPoolError as err:
                    self.LogWarning("Cannot reserve IP address '%s' of node"
                                    " '%s': %s", ip, node.name, err)
        master_ip = self.cfg.GetClusterInfo().master_ip
        if pool.Contains(master_ip):
            try:
                pool.Reserve(master_ip, external=True)
                self.LogInfo("Reserved cluster master IP address (%s)",
                             master_ip)
            except errors.AddressPoolError as err:
                self.LogWarning("Cannot reserve cluster master IP address"
                                " (%s): %s", master_ip, err)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        op = self.op
        net = objects.Network(name=op.network_name, network=op.network,
                              gateway=op.gateway, network6=op.network6,
                              gateway6=op.gateway6, mac_prefix=op.mac_prefix,
                              tags=set(op.tags),
                              uuid=self.cfg.GenerateUniqueID())
        try:
            pool = network.AddressPool.InitializeNetwork(net)
        except errors.AddressPoolError as err:
            raise errors.OpExecError("Cannot create IP address pool for"
                                     " network '%s': %s" %
                                     (op.network_name, err))
        if op.conflicts_check:
            self._ReserveClusterIps(pool)
        for ip in op.add_reserved_ips or ():
            try:
                pool.Reserve(ip, external=True)
            except errors.AddressPoolError as err:
                raise errors.OpExecError("Cannot reserve IP address '%s': %s"
                                         % (ip, err))
        # Lock first: once in the configuration, other jobs may lock it
        self.glm.add(locking.LEVEL_NETWORK, net.uuid, acquired=True)
        try:
            self.cfg.AddNetwork(net, feedback_fn)
        except Exception:
            self.glm.remove(locking.LEVEL_NETWORK, net.uuid)
            raise


class LUNetworkRemove(_NetworkLU):
    """Remove a network connected to no group."""

    HPATH = "network-remove"

    def ExpandNames(self) -> None:
        self.network_uuid = LookupNetwork(self.cfg, self.op.network_name)
        self.share_locks[locking.LEVEL_NODEGROUP] = 1
        self.needed_locks = {locking.LEVEL_NETWORK: [self.network_uuid],
                             locking.LEVEL_NODEGROUP: locking.ALL_SET}

    def CheckPrereq(self) -> None:
        groups = [group.name
                  for group in self.cfg.GetAllNodeGroupsInfo().values()
                  if self.network_uuid in group.networks]
        if groups:
            self.LogWarning("Network '%s' is connected to the following node"
                            " groups: %s" % (self.op.network_name,
                                             ", ".join(utils.NiceSort(
                                                 groups))))
            raise errors.OpPrereqError("Network still connected",
                                       errors.ECODE_STATE)

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"NETWORK_NAME": self.op.network_name}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self.cfg.RemoveNetwork(self.network_uuid, feedback_fn)
        self.remove_locks[locking.LEVEL_NETWORK] = [self.network_uuid]


def _NoneOr(value: str) -> str | None:
    """An optional setting: "none" unsets it."""
    return None if value == constants.VALUE_NONE else value


class LUNetworkSetParams(_NetworkLU):
    """Change a network's gateways, IPv6 subnet, MAC prefix and external
    reservations."""

    HPATH = "network-modify"

    def CheckArguments(self) -> None:
        if self.op.gateway and (self.op.add_reserved_ips or
                                self.op.remove_reserved_ips):
            raise errors.OpPrereqError("Cannot modify gateway and reserved"
                                       " ips at once", errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.network_uuid = LookupNetwork(self.cfg, self.op.network_name)
        self.needed_locks = {locking.LEVEL_NETWORK: [self.network_uuid]}

    def CheckPrereq(self) -> None:
        op = self.op
        self.network = self.cfg.GetNetwork(self.network_uuid)
        self.pool = network.AddressPool(self.network)
        self.gateway = self.network.gateway
        if op.gateway:
            self.gateway = _NoneOr(op.gateway)
            if self.gateway and self.pool.IsReserved(self.gateway):
                raise errors.OpPrereqError("Gateway IP address '%s' is"
                                           " already reserved" %
                                           self.gateway, errors.ECODE_STATE)
        self.mac_prefix = self.network.mac_prefix
        if op.mac_prefix:
            self.mac_prefix = _NoneOr(op.mac_prefix)
            if self.mac_prefix:
                self.mac_prefix = NormalizeMacPrefix(self.mac_prefix)
        self.network6 = (_NoneOr(op.network6) if op.network6
                         else self.network.network6)
        self.gateway6 = (_NoneOr(op.gateway6) if op.gateway6
                         else self.network.gateway6)

    def BuildHooksEnv(self) -> dict[str, Any]:
        return _HookEnv(self.op.network_name, self.network.network,
                        self.gateway, self.network6, self.gateway6,
                        self.mac_prefix, self.network.tags)

    def _ChangeGateway(self) -> None:
        old = self.network.gateway
        if self.gateway == old:
            self.LogWarning("Gateway is already %s", self.gateway)
            return
        if self.gateway:
            self.pool.Reserve(self.gateway, external=True)
        if old:
            self.pool.Release(old, external=True)
        self.network.gateway = self.gateway

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        op = self.op
        try:
            if op.gateway:
                self._ChangeGateway()
            for ip in op.add_reserved_ips or ():
                try:
                    self.pool.Reserve(ip, external=True)
                except errors.AddressPoolError as err:
                    self.LogWarning("Cannot reserve IP address %s: %s",
                                    ip, err)
            for ip in op.remove_reserved_ips or ():
                if ip == self.network.gateway:
                    self.LogWarning("Cannot unreserve Gateway's IP")
                    continue
                try:
                    self.pool.Release(ip, external=True)
                except errors.AddressPoolError as err:
                    self.LogWarning("Cannot release IP address %s: %s",
                                    ip, err)
            if op.mac_prefix:
                self.network.mac_prefix = self.mac_prefix
            if op.network6:
                self.network.network6 = self.network6
            if op.gateway6:
                self.network.gateway6 = self.gateway6
            self.pool.Validate()
        except errors.AddressPoolError as err:
            raise errors.OpExecError("Cannot modify network '%s': %s" %
                                     (op.network_name, err))
        self.cfg.Update(self.network, feedback_fn)


def _NetworkConflictCheck(lu: LogicalUnit, check_fn: Callable[[Any], bool],
                          action: str, instances: list[Any]) -> None:
    """Refuse (Ganeti's message, with a warning naming them) if NICs of
    ``instances`` match ``check_fn``."""
    conflicts = []
    for inst in instances:
        matching = [(idx, nic.ip) for idx, nic in enumerate(inst.nics)
                    if check_fn(nic)]
        if matching:
            conflicts.append((inst.name, matching))
    if not conflicts:
        return
    lu.LogWarning("IP addresses from network '%s', which is about to %s node"
                  " group '%s', are in use: %s" % (
                      lu.op.network_name, action, lu.op.group_name,
                      ", ".join("%s: %s" % (name, ", ".join(
                          "nic%s/%s" % (idx, ip) for idx, ip in details))
                          for name, details in conflicts)))
    raise errors.OpPrereqError("Conflicting IP addresses found; "
                               " remove/modify the corresponding network"
                               " interfaces", errors.ECODE_STATE)


class _GroupNetworkLU(LogicalUnit):
    """Connect or disconnect: the group locked, its instances shared."""

    HTYPE = constants.HTYPE_NETWORK
    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.network_uuid = LookupNetwork(self.cfg, self.op.network_name)
        self.group_uuid = self.cfg.LookupNodeGroup(self.op.group_name)
        self.needed_locks = {locking.LEVEL_INSTANCE: [],
                             locking.LEVEL_NODEGROUP: [self.group_uuid],
                             locking.LEVEL_NETWORK: [self.network_uuid]}
        self.share_locks[locking.LEVEL_INSTANCE] = 1
        self.share_locks[locking.LEVEL_NETWORK] = 1

    def DeclareLocks(self, level: int) -> None:
        if level == locking.LEVEL_INSTANCE:
            # Checked again in CheckPrereq, once the group is locked
            self.needed_locks[level] = GroupInstances(self.cfg,
                                                      self.group_uuid)

    def _GroupInstances(self) -> list[objects.Instance]:
        uuids = LockedGroupInstances(self, self.group_uuid,
                                     self.op.group_name)
        return sorted((self.cfg.GetInstanceInfo(uuid) for uuid in uuids),
                      key=lambda inst: utils.NiceSortKey(inst.name))

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        nodes = self.cfg.GetNodeGroup(self.group_uuid).members
        return (nodes, nodes)


class LUNetworkConnect(_GroupNetworkLU):
    """Connect a network to a node group with a NIC mode, link and VLAN."""

    HPATH = "network-connect"

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"GROUP_NAME": self.op.group_name,
                "GROUP_NETWORK_MODE": self.op.network_mode,
                "GROUP_NETWORK_LINK": self.op.network_link,
                "GROUP_NETWORK_VLAN": self.op.network_vlan}

    def CheckPrereq(self) -> None:
        instances = self._GroupInstances()
        self.netparams = {objects.NIC_MODE: self.op.network_mode,
                          objects.NIC_LINK: self.op.network_link,
                          objects.NIC_VLAN: self.op.network_vlan}
        try:
            objects.CheckParamDict(objects.NIC_PARAMETERS, self.netparams,
                                   "NIC")
        except errors.TypeEnforcementError as err:
            raise errors.OpPrereqError(str(err), errors.ECODE_INVAL)
        self.group = self.cfg.GetNodeGroup(self.group_uuid)
        self.connected = self.network_uuid in self.group.networks
        if self.connected:
            self.LogWarning("Network '%s' is already mapped to group '%s'" %
                            (self.op.network_name, self.group.name))
        elif self.op.conflicts_check:
            pool = network.AddressPool(self.cfg.GetNetwork(self.network_uuid))
            _NetworkConflictCheck(self, lambda nic: pool.Contains(nic.ip),
                                  "connect to", instances)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        if not self.connected:
            self.group.networks[self.network_uuid] = self.netparams
            self.cfg.Update(self.group, feedback_fn)


class LUNetworkDisconnect(_GroupNetworkLU):
    """Disconnect a network from a node group none of whose instances'
    NICs use it."""

    HPATH = "network-disconnect"

    def BuildHooksEnv(self) -> dict[str, Any]:
        env = {"GROUP_NAME": self.op.group_name}
        if self.connected:
            env.update({
                "GROUP_NETWORK_MODE": self.netparams[objects.NIC_MODE],
                "GROUP_NETWORK_LINK": self.netparams[objects.NIC_LINK],
                "GROUP_NETWORK_VLAN": self.netparams.get(objects.NIC_VLAN,
                                                         ""),
            })
        return env

    def CheckPrereq(self) -> None:
        instances = self._GroupInstances()
        self.group = self.cfg.GetNodeGroup(self.group_uuid)
        self.connected = self.network_uuid in self.group.networks
        if not self.connected:
            self.LogWarning("Network '%s' is not mapped to group '%s'",
                            self.op.network_name, self.group.name)
            return
        _NetworkConflictCheck(
            self, lambda nic: nic.network == self.network_uuid,
            "disconnect from", instances)
        self.netparams = self.group.networks[self.network_uuid]

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        if self.connected:
            del self.group.networks[self.network_uuid]
            self.cfg.Update(self.group, feedback_fn)
