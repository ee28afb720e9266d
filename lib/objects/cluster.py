"""The cluster and its nodes and node groups: settings and the chains of
parameter defaults (cluster, group, node; cluster, OS, instance).
"""

# Field annotations stay strings: ConfigObject reads them, never evaluates
from __future__ import annotations

from typing import Any, Iterable

from ganeti import constants, errors, ht, impexp, pathutils
from ganeti.objects.base import (_TIMESTAMP_CHECKS, TaggableObject,
                                 _TAggregate, _TDictOfDicts, _TIPAddress,
                                 _TStringList)
from ganeti.objects.instance import NIC, Instance
from ganeti.parameters.base import CheckParamDict, ExpandAliases, FillDict
from ganeti.parameters.families import (
    BE_PARAMETERS, BEC_DEFAULTS, DISK_DT_DEFAULTS, DISK_PARAMETERS,
    IPOLICY_DEFAULTS, IPOLICY_DTS, ND_PARAMETERS, NDC_DEFAULTS, NIC_LINK,
    NIC_PARAMETERS, NICC_DEFAULTS, PP_DEFAULT, CheckDiskParams, CheckIPolicy,
    FillIPolicy, TPort)
from ganeti.parameters.hypervisors import (HVC_GLOBALS, CheckHvParams,
                                           HvDefaults)

ALLOC_POLICY_PREFERRED = constants.ALLOC_POLICY_PREFERRED
VALID_ALLOC_POLICIES = constants.VALID_ALLOC_POLICIES


class Node(TaggableObject):
    """A cluster node."""

    name: str
    primary_ip: str
    secondary_ip: str
    serial_no: int
    master_candidate: bool
    offline: bool
    drained: bool
    group: str
    master_capable: bool
    vm_capable: bool
    ndparams: dict[str, Any]
    powered: bool
    hv_state: dict[str, Any] | None
    hv_state_static: dict[str, Any]
    disk_state: dict[str, Any] | None
    disk_state_static: dict[str, Any]
    # UUIDs of the cluster aggregates the node is in, besides its group's
    # (unset, not stored, when none: older configurations stay as they are)
    aggregates: list[str] | None
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "name": ht.TNonEmptyString,
        "primary_ip": _TIPAddress,
        "secondary_ip": _TIPAddress,
        "master_candidate": ht.TBool,
        "offline": ht.TBool,
        "drained": ht.TBool,
        "group": ht.TNonEmptyString,
        "master_capable": ht.TBool,
        "vm_capable": ht.TBool,
        "ndparams": ht.TDict,
        "powered": ht.TBool,
        "hv_state": ht.TDict,
        "hv_state_static": ht.TDict,
        "disk_state": ht.TDict,
        "disk_state_static": ht.TDict,
        "aggregates": _TStringList,
    })
    _FIELD_DEFAULTS = {
        "master_candidate": False, "offline": False, "drained": False,
        "master_capable": True, "vm_capable": True, "powered": True,
        "ndparams": {}, "hv_state_static": {}, "disk_state_static": {},
    }
    _REQUIRED = frozenset(["name", "primary_ip", "uuid"])

    def UpgradeConfig(self) -> None:
        super().UpgradeConfig()
        if self.secondary_ip is None:
            self.secondary_ip = self.primary_ip

    def _ValidateParams(self) -> None:
        super()._ValidateParams()
        CheckParamDict(ND_PARAMETERS, self.ndparams or {}, "node")


class NodeGroup(TaggableObject):
    """A group of nodes sharing parameters and an allocation policy.

    ``members`` (node UUIDs) is derived from the nodes' ``group`` field and
    never stored.
    """

    name: str
    members: list[str]
    ndparams: dict[str, Any]
    diskparams: dict[str, dict[str, Any]]
    ipolicy: dict[str, Any]
    serial_no: int
    hv_state_static: dict[str, Any]
    disk_state_static: dict[str, Any]
    alloc_policy: str
    networks: dict[str, dict[str, Any]]
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "name": ht.TNonEmptyString,
        "members": _TStringList,
        "ndparams": ht.TDict,
        "diskparams": _TDictOfDicts,
        "ipolicy": ht.TDict,
        "hv_state_static": ht.TDict,
        "disk_state_static": ht.TDict,
        "alloc_policy": ht.TElemOf(VALID_ALLOC_POLICIES),
        "networks": _TDictOfDicts,
    })
    _FIELD_DEFAULTS = {
        "ndparams": {}, "diskparams": {}, "ipolicy": {},
        "hv_state_static": {}, "disk_state_static": {},
        "alloc_policy": ALLOC_POLICY_PREFERRED, "networks": {},
    }
    _REQUIRED = frozenset(["name", "uuid"])
    _DERIVED = frozenset(["members"])

    def _ValidateParams(self) -> None:
        super()._ValidateParams()
        CheckParamDict(ND_PARAMETERS, self.ndparams or {}, "group node")
        CheckDiskParams(self.diskparams or {}, "group disk")
        CheckIPolicy(self.ipolicy or {}, complete=False)
        for net_uuid, nicparams in (self.networks or {}).items():
            CheckParamDict(NIC_PARAMETERS, nicparams,
                           "network %s NIC" % net_uuid)

    def FillND(self, node: Node) -> dict:
        """The group's node parameters overridden by the node's."""
        return FillDict(self.ndparams or {}, node.ndparams)


def FillDataCollectors(settings: dict[str, dict[str, Any]] | None
                       ) -> dict[str, dict[str, Any]]:
    """Every data collector's settings, defaults (active, collected every
    MOND_TIME_INTERVAL seconds) where ``settings`` has none; as Ganeti,
    the interval is in microseconds."""
    defaults = {
        constants.DATA_COLLECTOR_STATE_ACTIVE: True,
        constants.DATA_COLLECTOR_PARAMETER_INTERVAL:
            constants.MOND_TIME_INTERVAL * 1000000,
    }
    return {name: FillDict(defaults, (settings or {}).get(name))
            for name in sorted(constants.DATA_COLLECTOR_NAMES)}


class Cluster(TaggableObject):
    """Cluster-wide settings and parameter defaults."""

    cluster_name: str
    serial_no: int
    rsahostkeypub: str
    dsahostkeypub: str | None
    highest_used_port: int
    tcpudp_port_pool: list[int]
    mac_prefix: str
    volume_group_name: str
    reserved_lvs: list[str]
    drbd_usermode_helper: str
    file_storage_dir: str
    shared_file_storage_dir: str
    gluster_storage_dir: str
    enabled_disk_templates: list[str]
    prealloc_wipe_disks: bool
    master_node: str
    master_ip: str
    master_netdev: str
    master_netmask: int
    use_external_mip_script: bool
    primary_ip_family: int
    default_bridge: str | None
    default_hypervisor: str | None
    enabled_hypervisors: list[str]
    hvparams: dict[str, dict[str, Any]]
    os_hvp: dict[str, dict[str, dict[str, Any]]]
    beparams: dict[str, dict[str, Any]]
    osparams: dict[str, dict[str, Any]]
    osparams_private_cluster: dict[str, dict[str, Any]]
    nicparams: dict[str, dict[str, Any]]
    ndparams: dict[str, Any]
    diskparams: dict[str, dict[str, Any]]
    ipolicy: dict[str, Any]
    candidate_pool_size: int
    modify_etc_hosts: bool
    modify_ssh_setup: bool
    ssh_key_type: str
    ssh_key_bits: int
    maintain_node_health: bool
    uid_pool: list[tuple[int, int]]
    candidate_certs: dict[str, str]
    default_iallocator: str
    default_iallocator_params: dict[str, Any]
    hidden_os: list[str]
    blacklisted_os: list[str]
    hv_state_static: dict[str, Any]
    disk_state_static: dict[str, Any]
    max_running_jobs: int
    max_tracked_jobs: int
    install_image: str
    instance_communication_network: str
    zeroing_image: str
    compression_tools: list[str]
    enabled_user_shutdown: bool
    data_collectors: dict[str, dict[str, Any]]
    # The self-diagnose command of ganeti-mond ("": always "Ok")
    diagnose_data_collector_filename: str
    # The named aggregates: UUID -> {"name", "metadata"} (unset when none)
    aggregates: dict[str, dict[str, Any]] | None
    # The deployer flow of Placement's forbidden aggregates ("": off), see
    # placement.cluster.ReservationMemberOf
    placement_required_prefix: str
    placement_default_forbidden_prefix: str
    ctime: float
    mtime: float
    uuid: str
    _FIELD_CHECKS = dict(_TIMESTAMP_CHECKS, **{
        "cluster_name": ht.TNonEmptyString,
        "rsahostkeypub": ht.TString,
        "dsahostkeypub": ht.TString,
        "highest_used_port": TPort,
        "tcpudp_port_pool": ht.TListOf(TPort),
        "mac_prefix": ht.TRegex(r"^([0-9a-fA-F]{2}:){2}[0-9a-fA-F]{2}$",
                                "MAC prefix (three octets)"),
        "volume_group_name": ht.TString,
        "reserved_lvs": _TStringList,
        "drbd_usermode_helper": ht.TString,
        "file_storage_dir": ht.TString,
        "shared_file_storage_dir": ht.TString,
        "gluster_storage_dir": ht.TString,
        "enabled_disk_templates": ht.TAnd(
            ht.TSetOf(ht.TElemOf(DISK_PARAMETERS)),
            ht.Check(bool, "non-empty")),
        "prealloc_wipe_disks": ht.TBool,
        "master_node": ht.TNonEmptyString,
        "master_ip": _TIPAddress,
        "master_netdev": ht.TNonEmptyString,
        "master_netmask": ht.TInRange(0, 128),
        "use_external_mip_script": ht.TBool,
        "primary_ip_family": ht.TElemOf([constants.IP4_FAMILY,
                                         constants.IP6_FAMILY]),
        "enabled_hypervisors": ht.TAnd(
            ht.TSetOf(ht.TNonEmptyString), ht.Check(bool, "non-empty")),
        "hvparams": _TDictOfDicts,
        "os_hvp": ht.TDictOf(ht.TString, _TDictOfDicts),
        "beparams": _TDictOfDicts,
        "osparams": _TDictOfDicts,
        "osparams_private_cluster": _TDictOfDicts,
        "nicparams": _TDictOfDicts,
        "ndparams": ht.TDict,
        "diskparams": _TDictOfDicts,
        "ipolicy": ht.TDict,
        "candidate_pool_size": ht.TStrictPositiveInt,
        "modify_etc_hosts": ht.TBool,
        "modify_ssh_setup": ht.TBool,
        "ssh_key_type": ht.TElemOf(["rsa", "dsa", "ecdsa"]),
        "ssh_key_bits": ht.TStrictPositiveInt,
        "maintain_node_health": ht.TBool,
        "uid_pool": ht.TListOf(ht.TTupleOf(ht.TNonNegativeInt,
                                           ht.TNonNegativeInt)),
        "candidate_certs": ht.TDictOf(ht.TString, ht.TString),
        "default_iallocator": ht.TString,
        "default_iallocator_params": ht.TDict,
        "hidden_os": _TStringList,
        "blacklisted_os": _TStringList,
        "hv_state_static": ht.TDict,
        "disk_state_static": ht.TDict,
        "max_running_jobs": ht.TStrictPositiveInt,
        "max_tracked_jobs": ht.TStrictPositiveInt,
        "install_image": ht.TString,
        "instance_communication_network": ht.TString,
        "zeroing_image": ht.TString,
        "compression_tools": _TStringList,
        "enabled_user_shutdown": ht.TBool,
        "data_collectors": _TDictOfDicts,
        "diagnose_data_collector_filename": ht.TString,
        "aggregates": ht.TDictOf(ht.TNonEmptyString, _TAggregate),
        "placement_required_prefix": ht.TString,
        "placement_default_forbidden_prefix": ht.TString,
    })
    _FIELD_DEFAULTS = {
        "rsahostkeypub": "",
        "highest_used_port": constants.FIRST_DRBD_PORT - 1,
        "tcpudp_port_pool": [],
        "mac_prefix": constants.DEFAULT_MAC_PREFIX,
        "volume_group_name": "",
        "reserved_lvs": [],
        "drbd_usermode_helper": constants.DEFAULT_DRBD_HELPER,
        "file_storage_dir": pathutils.DEFAULT_FILE_STORAGE_DIR,
        "shared_file_storage_dir": pathutils.DEFAULT_SHARED_FILE_STORAGE_DIR,
        "gluster_storage_dir": "",
        "enabled_disk_templates": list(
            constants.DEFAULT_ENABLED_DISK_TEMPLATES),
        "prealloc_wipe_disks": False,
        "master_netdev": constants.DEFAULT_MASTER_NETDEV,
        "master_netmask": constants.DEFAULT_MASTER_NETMASK,
        "use_external_mip_script": False,
        "primary_ip_family": constants.IP4_FAMILY,
        "enabled_hypervisors": [constants.HT_FAKE],
        "hvparams": {constants.HT_FAKE: {}},
        "os_hvp": {},
        "osparams": {},
        "osparams_private_cluster": {},
        "candidate_pool_size": constants.MASTER_POOL_SIZE_DEFAULT,
        "modify_etc_hosts": True,
        "modify_ssh_setup": True,
        "ssh_key_type": "rsa",
        "ssh_key_bits": 2048,
        "maintain_node_health": False,
        "uid_pool": [],
        "candidate_certs": {},
        "default_iallocator": constants.IALLOCATOR_BUILTIN,
        "default_iallocator_params": {},
        "hidden_os": [],
        "blacklisted_os": [],
        "hv_state_static": {},
        "disk_state_static": {},
        "max_running_jobs": constants.DEFAULT_MAX_RUNNING_JOBS,
        "max_tracked_jobs": constants.DEFAULT_MAX_TRACKED_JOBS,
        "install_image": "",
        "instance_communication_network": "",
        "zeroing_image": "",
        "compression_tools": list(impexp.IEC_DEFAULT_TOOLS),
        "enabled_user_shutdown": False,
        "data_collectors": {},
        "diagnose_data_collector_filename": "",
        "placement_required_prefix": "",
        "placement_default_forbidden_prefix": "",
    }
    _REQUIRED = frozenset(["cluster_name", "master_node", "master_ip",
                           "enabled_hypervisors", "enabled_disk_templates"])

    def _Normalize(self) -> None:
        super()._Normalize()
        # JSON has no tuples; ranges are pairs in memory
        if isinstance(self.uid_pool, list):
            self.uid_pool = [tuple(item) if isinstance(item, list) else item
                             for item in self.uid_pool]

    def ToDict(self) -> dict:
        result = super().ToDict()
        if "uid_pool" in result:
            result["uid_pool"] = [list(item) for item in result["uid_pool"]]
        return result

    def UpgradeConfig(self) -> None:
        """Fill defaults and move legacy fields to their current place."""
        if self.default_hypervisor is not None:
            hvs = [hv for hv in (self.enabled_hypervisors or [])
                   if hv != self.default_hypervisor]
            self.enabled_hypervisors = [self.default_hypervisor] + hvs
            self.default_hypervisor = None
        super().UpgradeConfig()
        self.hvparams = self.hvparams or {}
        for hv_name in set(self.enabled_hypervisors or []) | \
                set(self.hvparams):
            self.hvparams[hv_name] = FillDict(HvDefaults(hv_name),
                                              self.hvparams.get(hv_name))
        self.beparams = self.beparams or {}
        self.beparams[PP_DEFAULT] = FillDict(
            BEC_DEFAULTS, ExpandAliases(BE_PARAMETERS,
                                        self.beparams.get(PP_DEFAULT) or {}))
        self.nicparams = self.nicparams or {}
        nic_defaults = FillDict(NICC_DEFAULTS,
                                self.nicparams.get(PP_DEFAULT))
        if self.default_bridge is not None:
            nic_defaults[NIC_LINK] = self.default_bridge
            self.default_bridge = None
        self.nicparams[PP_DEFAULT] = nic_defaults
        self.ndparams = FillDict(NDC_DEFAULTS, self.ndparams)
        self.diskparams = self.diskparams or {}
        for template, defaults in DISK_DT_DEFAULTS.items():
            self.diskparams[template] = FillDict(
                defaults, self.diskparams.get(template))
        if self.ipolicy is None:
            self.ipolicy = FillDict(IPOLICY_DEFAULTS, {
                IPOLICY_DTS: list(self.enabled_disk_templates)})
        else:
            self.ipolicy = FillIPolicy(IPOLICY_DEFAULTS, self.ipolicy)
        self.data_collectors = FillDataCollectors(self.data_collectors)

    def _ValidateParams(self) -> None:
        super()._ValidateParams()
        for group, params in (self.beparams or {}).items():
            CheckParamDict(BE_PARAMETERS, params, "cluster %s backend" % group)
        for group, params in (self.nicparams or {}).items():
            CheckParamDict(NIC_PARAMETERS, params, "cluster %s NIC" % group)
        CheckParamDict(ND_PARAMETERS, self.ndparams or {}, "cluster node")
        CheckDiskParams(self.diskparams or {}, "cluster disk")
        CheckIPolicy(self.ipolicy or {}, complete=True)
        for hv_name, params in (self.hvparams or {}).items():
            CheckHvParams(hv_name, params, "cluster hypervisor parameters")
        for os_name, hvs in (self.os_hvp or {}).items():
            for hv_name, params in hvs.items():
                CheckHvParams(hv_name, params,
                              "hypervisor parameters of OS %s" % os_name)
        for hv in HVC_GLOBALS:
            for os_name, hvs in (self.os_hvp or {}).items():
                for hv_name, params in hvs.items():
                    if hv in params:
                        raise errors.TypeEnforcementError(
                            "%s cannot be set per OS (%s, %s)" %
                            (hv, os_name, hv_name))

    @property
    def primary_hypervisor(self) -> str:
        """The first enabled hypervisor, used when none is given."""
        return self.enabled_hypervisors[0]

    def GetHVDefaults(self, hypervisor: str, os_name: str | None = None,
                      skip_keys: Iterable[str] | None = None) -> dict:
        """Cluster defaults for a hypervisor, with an OS's overrides.

        The hypervisor's built-in defaults fill whatever the cluster lacks,
        so the result is complete even for a hypervisor never enabled.
        """
        result = FillDict(HvDefaults(hypervisor),
                          (self.hvparams or {}).get(hypervisor), skip_keys)
        if os_name is not None:
            os_hvp = (self.os_hvp or {}).get(os_name, {}).get(hypervisor,
                                                              {})
            result = FillDict(result, os_hvp, skip_keys)
        return result

    def FillHV(self, instance: Instance, skip_globals: bool = False) -> dict:
        """Effective hypervisor parameters of an instance.

        Cluster defaults, then the OS's, then the instance's. The
        migration settings (HVC_GLOBALS) come from the cluster only and
        are left out entirely with ``skip_globals``.
        """
        skip_keys = HVC_GLOBALS if skip_globals else None
        defaults = self.GetHVDefaults(instance.hypervisor, instance.os,
                                      skip_keys)
        custom = {key: value for key, value
                  in (instance.hvparams or {}).items()
                  if key not in HVC_GLOBALS}
        return FillDict(defaults, custom, skip_keys)

    def SimpleFillHV(self, hypervisor: str, os_name: str | None,
                     hvparams: dict, skip_globals: bool = False) -> dict:
        """Like FillHV, for parameters not yet attached to an instance."""
        skip_keys = HVC_GLOBALS if skip_globals else None
        return FillDict(self.GetHVDefaults(hypervisor, os_name, skip_keys),
                        hvparams, skip_keys)

    def SimpleFillBE(self, beparams: dict | None) -> dict:
        """Cluster backend defaults overridden by ``beparams``."""
        return FillDict(FillDict(BEC_DEFAULTS,
                                 (self.beparams or {}).get(PP_DEFAULT)),
                        beparams)

    def FillBE(self, instance: Instance) -> dict:
        """Effective backend parameters of an instance."""
        return self.SimpleFillBE(instance.beparams)

    def InstanceRpcDict(self, instance: Instance,
                        hvparams: dict | None = None,
                        beparams: dict | None = None) -> dict:
        """The instance as sent to a node: parameters filled.

        Nodes know no defaults (design-2.0 "Default value application"),
        so hvparams, beparams and each NIC's nicparams are the effective
        values; ``hvparams``/``beparams`` override them for one call
        (e.g. starting with temporary parameters).
        """
        result = instance.ToDict()
        result["hvparams"] = self.FillHV(instance)
        if hvparams:
            result["hvparams"].update(hvparams)
        result["beparams"] = self.FillBE(instance)
        if beparams:
            result["beparams"].update(beparams)
        result["nics"] = [dict(nic, nicparams=self.SimpleFillNIC(
            nic.get("nicparams"))) for nic in result.get("nics", [])]
        return result

    def SimpleFillNIC(self, nicparams: dict | None) -> dict:
        """Cluster NIC defaults overridden by ``nicparams``."""
        return FillDict(FillDict(NICC_DEFAULTS,
                                 (self.nicparams or {}).get(PP_DEFAULT)),
                        nicparams)

    def FillNIC(self, nic: NIC, nodegroup: NodeGroup | None = None) -> dict:
        """Effective parameters of a NIC.

        A NIC on a network gets the network's parameters in the node
        group of its instance's primary node before its own.
        """
        defaults = self.SimpleFillNIC(None)
        if nic.network and nodegroup is not None:
            defaults = FillDict(defaults,
                                (nodegroup.networks or {}).get(nic.network))
        return FillDict(defaults, nic.nicparams)

    def SimpleFillND(self, ndparams: dict | None) -> dict:
        """Cluster node defaults overridden by ``ndparams``."""
        return FillDict(FillDict(NDC_DEFAULTS, self.ndparams), ndparams)

    def FillND(self, node: Node, nodegroup: NodeGroup) -> dict:
        """Effective node parameters: cluster, then group, then node."""
        return self.SimpleFillND(nodegroup.FillND(node))

    def SimpleFillDP(self, diskparams: dict | None) -> dict:
        """Per-template disk parameters: cluster's, then ``diskparams``."""
        diskparams = diskparams or {}
        result = {}
        for template, defaults in DISK_DT_DEFAULTS.items():
            cluster_dp = FillDict(defaults,
                                  (self.diskparams or {}).get(template))
            result[template] = FillDict(cluster_dp, diskparams.get(template))
        return result

    def SimpleFillIPolicy(self, ipolicy: dict | None) -> dict:
        """The cluster's instance policy with a group's overrides."""
        return FillIPolicy(FillIPolicy(IPOLICY_DEFAULTS, self.ipolicy),
                           ipolicy)

    def SimpleFillOS(self, os_name: str, os_params: dict | None,
                     os_params_private: dict | None = None) -> dict:
        """Effective OS parameters.

        Defaults for the OS without variant, then for ``os+variant``, then
        the given values; public and private parameters follow the same
        chain and may not share a key.
        """
        base_name = os_name.split("+", 1)[0]
        public = FillDict(FillDict((self.osparams or {}).get(base_name, {}),
                                   (self.osparams or {}).get(os_name)),
                          os_params)
        private_defaults = self.osparams_private_cluster or {}
        private = FillDict(FillDict(private_defaults.get(base_name, {}),
                                    private_defaults.get(os_name)),
                           os_params_private)
        duplicate = set(public) & set(private)
        if duplicate:
            raise errors.OpPrereqError(
                "OS parameters %s appear both as public and private" %
                ", ".join(sorted(duplicate)), errors.ECODE_INVAL)
        public.update(private)
        return public
