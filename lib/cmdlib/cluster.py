"""LUs operating on the cluster as a whole."""

import platform
from typing import Any, Callable

from ganeti import constants, errors, locking, objects
from ganeti.cmdlib.base import ForceParamDict, NoHooksLU
from ganeti.cmdlib.node import AdjustCandidatePool

# QueryClusterInfo keys taken verbatim from the cluster object
_CLUSTER_ATTRS = [
    "enabled_hypervisors", "hvparams", "os_hvp",
    "beparams",
    "osparams", "ipolicy", "nicparams", "ndparams", "diskparams",
    "candidate_pool_size", "max_running_jobs", "max_tracked_jobs",
    "mac_prefix", "master_netdev", "master_netmask",
    "use_external_mip_script", "volume_group_name", "drbd_usermode_helper",
    "file_storage_dir", "shared_file_storage_dir", "gluster_storage_dir",
    "maintain_node_health", "ctime", "mtime", "uuid", "uid_pool",
    "default_iallocator", "default_iallocator_params", "reserved_lvs",
    "prealloc_wipe_disks", "hidden_os", "blacklisted_os",
    "enabled_disk_templates", "install_image",
    "instance_communication_network", "zeroing_image", "compression_tools",
    "enabled_user_shutdown", "modify_ssh_setup", "ssh_key_type",
    "ssh_key_bits",
]


# platform.architecture() runs the "file" command: ask once
_ARCHITECTURE = ["64bits" if platform.architecture()[0] == "64bit"
                 else "32bits", platform.machine()]


def BuildClusterInfo(cfg: Any) -> dict:
    """The QueryClusterInfo / OP_CLUSTER_QUERY dict (Ganeti's keys)."""
    cluster = cfg.GetClusterInfo()
    result = {
        "software_version": constants.RELEASE_VERSION,
        "protocol_version": constants.PROTOCOL_VERSION,
        "config_version": constants.CONFIG_VERSION,
        "os_api_version": max(constants.OS_API_VERSIONS),
        "export_version": constants.EXPORT_VERSION,
        "vcs_version": constants.VCS_VERSION,
        "architecture": list(_ARCHITECTURE),
        "name": cluster.cluster_name,
        "master": cfg.GetMasterNodeName(),
        "default_hypervisor": cluster.primary_hypervisor,
        "tags": sorted(cluster.GetTags()),
        "primary_ip_version": (constants.IP6_VERSION
                               if cluster.primary_ip_family ==
                               constants.IP6_FAMILY
                               else constants.IP4_VERSION),
        "enabled_data_collectors": {
            name: value.get("active", True)
            for name, value in (cluster.data_collectors or {}).items()},
        "data_collector_interval": {
            name: value.get("interval")
            for name, value in (cluster.data_collectors or {}).items()},
    }
    for attr in _CLUSTER_ATTRS:
        value = getattr(cluster, attr, None)
        if isinstance(value, (set, frozenset)):
            value = sorted(value)
        result[attr] = value
    return result


class LUClusterQuery(NoHooksLU):
    """Return the cluster information."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> dict:
        return BuildClusterInfo(self.cfg)


class LUClusterPostInit(NoHooksLU):
    """Run once after cluster init; nothing to do without hooks yet."""

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> bool:
        return True


class LUClusterDestroy(NoHooksLU):
    """Check that the cluster can be destroyed and name its master.

    The caller (gnt-cluster destroy) then stops the daemons and makes the
    master leave the cluster; the LU itself changes nothing, so a refusal
    leaves the cluster intact.
    """

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def CheckPrereq(self) -> None:
        master = self.cfg.GetMasterNode()
        nodes = self.cfg.GetNodeList()
        if len(nodes) != 1 or nodes[0] != master:
            raise errors.OpPrereqError(
                "There are still %d node(s) in this cluster" %
                (len(nodes) - 1), errors.ECODE_INVAL)
        instances = self.cfg.GetInstanceList()
        if instances:
            raise errors.OpPrereqError(
                "There are still %d instance(s) in this cluster" %
                len(instances), errors.ECODE_INVAL)

    def Exec(self, feedback_fn: Callable[[str], None]) -> str:
        return self.cfg.GetMasterNodeName()


class LUClusterRedistConf(NoHooksLU):
    """Push the configuration, ssconf and cluster files to all nodes again."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {locking.LEVEL_NODE: locking.ALL_SET}
        self.share_locks[locking.LEVEL_NODE] = 1

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self.cfg.Update(self.cfg.GetClusterInfo(), feedback_fn)
        self.context.replicator.Redistribute(feedback_fn)


_SIMPLE_PARAMS = ["candidate_pool_size", "max_running_jobs",
                  "max_tracked_jobs", "mac_prefix", "master_netdev",
                  "master_netmask", "file_storage_dir",
                  "shared_file_storage_dir", "maintain_node_health",
                  "default_iallocator", "enabled_disk_templates"]


class LUClusterSetParams(NoHooksLU):
    """Change cluster parameters (those that exist so far)."""

    def CheckArguments(self) -> None:
        for name, table in (("beparams", objects.BE_PARAMETERS),
                            ("nicparams", objects.NIC_PARAMETERS),
                            ("ndparams", objects.ND_PARAMETERS)):
            value = getattr(self.op, name)
            if value:
                setattr(self.op, name, ForceParamDict(table, value, name))
        if self.op.hvparams:
            unknown = set(self.op.hvparams) - set(constants.HYPER_TYPES)
            if unknown:
                raise errors.OpPrereqError(
                    "Unknown hypervisor(s) in hvparams: %s" %
                    ", ".join(sorted(unknown)), errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        cluster = self.cfg.GetClusterInfo()
        for name in _SIMPLE_PARAMS:
            value = getattr(self.op, name)
            if value is not None:
                setattr(cluster, name, value)
        if self.op.enabled_hypervisors is not None:
            cluster.enabled_hypervisors = self.op.enabled_hypervisors
        if self.op.hvparams:
            for hv_name, params in self.op.hvparams.items():
                cluster.hvparams.setdefault(hv_name, {}).update(params)
        if self.op.beparams:
            cluster.beparams.setdefault(constants.PP_DEFAULT, {}).update(
                self.op.beparams)
        if self.op.nicparams:
            cluster.nicparams.setdefault(constants.PP_DEFAULT, {}).update(
                self.op.nicparams)
        if self.op.ndparams:
            cluster.ndparams.update(self.op.ndparams)
        self.cfg.Update(cluster, feedback_fn)
        if self.op.candidate_pool_size is not None:
            # A bigger pool is filled now; a smaller one only reports the
            # surplus (candidates are never demoted automatically)
            AdjustCandidatePool(self, [])
        if self.op.max_running_jobs is not None:
            self.context.jobqueue.WakeWorkers()


def MasterIpParams(cfg: Any) -> dict:
    """What the master IP procedures need, from the configuration."""
    cluster = cfg.GetClusterInfo()
    return {"ip": cluster.master_ip, "netmask": cluster.master_netmask,
            "netdev": cluster.master_netdev,
            "ip_family": cluster.primary_ip_family}


class LUClusterActivateMasterIp(NoHooksLU):
    """Add the master IP on the master node."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self.rpc.call_node_activate_master_ip(
            self.cfg.GetMasterNode(), MasterIpParams(self.cfg)).Raise(
                "Could not activate the master IP")


class LUClusterDeactivateMasterIp(NoHooksLU):
    """Remove the master IP from the master node."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self.rpc.call_node_deactivate_master_ip(
            self.cfg.GetMasterNode(), MasterIpParams(self.cfg)).Raise(
                "Could not deactivate the master IP")
