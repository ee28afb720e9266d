"""LUs operating on the cluster as a whole."""

import platform
from typing import Any, Callable

from ganeti import (constants, errors, hypervisor, impexp, locking, netutils,
                    objects, pathutils, utils)
from ganeti.cmdlib import operating_system
from ganeti.cmdlib.base import LogicalUnit, NoHooksLU, RunPostHook
from ganeti.cmdlib.node import AdjustCandidatePool
from ganeti.hypervisor import hv_base
from ganeti.parameters.base import GetUpdatedParams
from ganeti.parameters.families import UpdatedDiskParams
from ganeti.parameters.hypervisors import UpdatedHvParams
from ganeti.utils import uidpool

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
    "ssh_key_bits", "diagnose_data_collector_filename",
    "placement_required_prefix", "placement_default_forbidden_prefix",
]


# How long the check that a new master IP is free waits (seconds)
_RENAME_PING_TIMEOUT = 2.0

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
    }
    collectors = objects.FillDataCollectors(cluster.data_collectors)
    result["enabled_data_collectors"] = {
        name: value[constants.DATA_COLLECTOR_STATE_ACTIVE]
        for name, value in collectors.items()}
    result["data_collector_interval"] = {
        name: value[constants.DATA_COLLECTOR_PARAMETER_INTERVAL]
        for name, value in collectors.items()}
    maintenance = cfg.GetMaintenance()
    result["maint_round_delay"] = maintenance.roundDelay
    result["maint_balance"] = maintenance.balance
    result["maint_balance_threshold"] = maintenance.balanceThreshold
    result["maint_balance_disk_moves"] = maintenance.balanceDiskMoves
    result["maint_balance_dynamic_load"] = maintenance.balanceDynamicLoad
    result["maint_harep"] = maintenance.harep
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


class LUClusterPostInit(LogicalUnit):
    """Run once after cluster init: the master runs the cluster-init
    post hooks."""

    HPATH = "cluster-init"
    HTYPE = constants.HTYPE_CLUSTER

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"OP_TARGET": self.cfg.GetClusterName()}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        return ([], [self.cfg.GetMasterNode()])

    def Exec(self, feedback_fn: Callable[[str], None]) -> bool:
        return True


class LUClusterDestroy(LogicalUnit):
    """Check that the cluster can be destroyed and name its master.

    The caller (gnt-cluster destroy) then stops the daemons and makes the
    master leave the cluster; the LU itself changes nothing but running
    the master's post hooks, so a refusal leaves the cluster intact.
    """

    HPATH = "cluster-destroy"
    HTYPE = constants.HTYPE_CLUSTER

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"OP_TARGET": self.cfg.GetClusterName()}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        # Post hooks run in Exec, while the master is still one
        return ([], [])

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
        RunPostHook(self, self.cfg.GetMasterNode())
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


class LUClusterRepairCancel(NoHooksLU):
    """Cancel an incident of ganeti-maintd. The request is kept in the
    configuration's maintenance section, beside (not in) maintd's state,
    so that maintd, on this master or the next, picks it up at its next
    poll however its own writes interleave with this one."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        try:
            self.cfg.CancelMaintenanceIncident(self.op.incident_id,
                                               feedback_fn)
        except errors.ConfigurationError as err:
            raise errors.OpPrereqError(str(err), errors.ECODE_NOENT) from err


class LUClusterRenewCrypto(NoHooksLU):
    """The opcode part of ``gnt-cluster renew-crypto``.

    The client renews and distributes the files (see
    ganeti.client._cluster_crypto); every node's client certificate is the
    cluster certificate, so renewing the nodes' certificates leaves to
    check that each online node is reached with it.
    """

    REQ_BGL = False

    def CheckArguments(self) -> None:
        if self.op.renew_ssh_keys:
            raise errors.OpPrereqError(
                "renew_ssh_keys is not supported by this cluster: it does"
                " not manage the nodes' SSH keys", errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.needed_locks = {locking.LEVEL_NODE: locking.ALL_SET}
        self.share_locks[locking.LEVEL_NODE] = 1

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        if not self.op.node_certificates:
            return
        feedback_fn("Updating client SSL certificates.")
        node_uuids = self.cfg.GetOnlineNodeList()
        results = self.rpc.call_version(node_uuids)
        failed = ["%s: %s" % (self.cfg.GetNodeInfo(uuid).name,
                              results[uuid].fail_msg)
                  for uuid in node_uuids if results[uuid].fail_msg]
        if failed:
            raise errors.OpExecError("Nodes not reached with the cluster"
                                     " certificate: %s" % "; ".join(failed))


_SIMPLE_PARAMS = ["candidate_pool_size", "max_running_jobs",
                  "max_tracked_jobs", "mac_prefix", "master_netdev",
                  "master_netmask", "file_storage_dir",
                  "shared_file_storage_dir", "maintain_node_health",
                  # Recorded only: this cluster does not manage /etc/hosts
                  "modify_etc_hosts",
                  "default_iallocator", "default_iallocator_params",
                  "enabled_disk_templates", "compression_tools",
                  "diagnose_data_collector_filename",
                  "placement_required_prefix",
                  "placement_default_forbidden_prefix"]
# Opcode parameter -> field of the configuration's maintenance section
_MAINT_PARAMS = {"maint_round_delay": "roundDelay",
                 "maint_balance": "balance",
                 "maint_balance_threshold": "balanceThreshold",
                 "maint_balance_disk_moves": "balanceDiskMoves",
                 "maint_balance_dynamic_load": "balanceDynamicLoad",
                 "maint_harep": "harep"}
# Opcode parameter -> cluster attribute of the static resource states
_STATIC_STATES = {"hv_state": "hv_state_static",
                  "disk_state": "disk_state_static"}


def CheckDataCollectorParams(enabled: dict[str, bool] | None,
                             intervals: dict[str, int] | None,
                             diagnose_filename: str | None) -> None:
    """Refuse unknown data collectors, intervals that are not positive
    and a self-diagnose command that is not a plain file name (it is
    looked up in the nodes' white-list directory only)."""
    unknown = sorted((set(enabled or {}) | set(intervals or {})) -
                     constants.DATA_COLLECTOR_NAMES)
    if unknown:
        raise errors.OpPrereqError(
            "Data collector names not recognized: %s (known: %s)" %
            (", ".join(unknown),
             ", ".join(sorted(constants.DATA_COLLECTOR_NAMES))),
            errors.ECODE_INVAL)
    bad = sorted(name for name, value in (intervals or {}).items()
                 if value <= 0)
    if bad:
        raise errors.OpPrereqError(
            "Data collector intervals must be above zero: %s" %
            ", ".join(bad), errors.ECODE_INVAL)
    if diagnose_filename and ("/" in diagnose_filename or
                              diagnose_filename in (".", "..")):
        raise errors.OpPrereqError(
            "Invalid diagnose data collector filename %r: a file name in"
            " the node-diagnose-commands directory, without a path" %
            diagnose_filename, errors.ECODE_INVAL)


def HypervisorClass(hv_name: str) -> type[hv_base.BaseHypervisor]:
    """The class of a hypervisor this version implements, or
    OpPrereqError naming the unknown hypervisor."""
    try:
        return hypervisor.GetHypervisorClass(hv_name)
    except errors.HypervisorError as err:
        raise errors.OpPrereqError(str(err), errors.ECODE_INVAL) from None


def CheckHvParamsOnNodes(lu: Any, node_uuids: list[str], hv_name: str,
                         hvparams: dict) -> None:
    """Value check of filled hypervisor parameters on the vm-capable,
    online nodes (paths, devices: what only the node can judge)."""
    nodes = [uuid for uuid in node_uuids
             if lu.cfg.GetNodeInfo(uuid).vm_capable and
             not lu.cfg.GetNodeInfo(uuid).offline]
    if not nodes:
        return
    results = lu.rpc.call_hypervisor_validate_params(nodes, hv_name,
                                                     hvparams)
    for uuid in nodes:
        results[uuid].Raise("Hypervisor parameter validation failed on"
                            " node %s" % lu.cfg.GetNodeInfo(uuid).name,
                            prereq=True, ecode=errors.ECODE_INVAL)


class LUClusterSetParams(LogicalUnit):
    """Change cluster parameters (those that exist so far)."""

    HPATH = "cluster-modify"
    HTYPE = constants.HTYPE_CLUSTER

    def CheckArguments(self) -> None:
        hv_names = (list(self.op.hvparams or {}) +
                    list(self.op.enabled_hypervisors or []) +
                    ([self.op.default_hypervisor]
                     if self.op.default_hypervisor else []))
        for hv_name in hv_names:
            HypervisorClass(hv_name)
        for hvs in (self.op.os_hvp or {}).values():
            for hv_name in hvs:
                HypervisorClass(hv_name)
        if self.op.compression_tools is not None:
            impexp.CheckCompressionTools(self.op.compression_tools)
        for uid_ranges in (self.op.uid_pool, self.op.add_uids,
                           self.op.remove_uids):
            uidpool.CheckUidPool(uid_ranges or [])
        CheckDataCollectorParams(self.op.enabled_data_collectors,
                                 self.op.data_collector_interval,
                                 self.op.diagnose_data_collector_filename)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"OP_TARGET": self.cfg.GetClusterName()}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        master = self.cfg.GetMasterNode()
        return ([master], [master])

    def CheckPrereq(self) -> None:
        """Compute the new parameter dicts; every value is checked here.

        Cluster-level dicts are complete: a parameter reset with "default"
        (or None) gets its built-in default back.
        """
        cluster = self.cfg.GetClusterInfo()
        new: dict[str, Any] = {}
        enabled = list(self.op.enabled_hypervisors or
                       cluster.enabled_hypervisors)
        if self.op.default_hypervisor:
            if self.op.default_hypervisor not in enabled:
                raise errors.OpPrereqError(
                    "Default hypervisor %s is not among the enabled"
                    " hypervisors (%s)" % (self.op.default_hypervisor,
                                           ", ".join(enabled)),
                    errors.ECODE_INVAL)
            enabled.remove(self.op.default_hypervisor)
            enabled.insert(0, self.op.default_hypervisor)
        if enabled != cluster.enabled_hypervisors:
            new["enabled_hypervisors"] = enabled
        hvparams = {hv: dict(params)
                    for hv, params in (cluster.hvparams or {}).items()}
        for hv_name in set(enabled) | set(self.op.hvparams or {}):
            hvparams[hv_name] = UpdatedHvParams(
                hv_name, hvparams.get(hv_name),
                (self.op.hvparams or {}).get(hv_name, {}))
        if hvparams != cluster.hvparams:
            new["hvparams"] = hvparams
            changed = [hv for hv in enabled
                       if hvparams[hv] != cluster.hvparams.get(hv)]
            for hv_name in changed:
                CheckHvParamsOnNodes(self, self.cfg.GetNodeList(), hv_name,
                                     hvparams[hv_name])
        for name, table, defaults, group in (
                ("beparams", objects.BE_PARAMETERS, objects.BEC_DEFAULTS,
                 constants.PP_DEFAULT),
                ("nicparams", objects.NIC_PARAMETERS, objects.NICC_DEFAULTS,
                 constants.PP_DEFAULT),
                ("ndparams", objects.ND_PARAMETERS, objects.NDC_DEFAULTS,
                 None)):
            changes = getattr(self.op, name)
            if not changes:
                continue
            current = getattr(cluster, name) or {}
            old = current.get(group) if group else current
            updated = objects.FillDict(defaults, GetUpdatedParams(
                old, changes, table, "cluster %s" % name))
            new[name] = (dict(current, **{group: updated}) if group
                         else updated)
        if self.op.diskparams:
            # Complete per template, like the other cluster-level dicts
            updated = UpdatedDiskParams(cluster.diskparams or {},
                                        self.op.diskparams)
            new["diskparams"] = {
                template: objects.FillDict(defaults, updated.get(template))
                for template, defaults in objects.DISK_DT_DEFAULTS.items()}
        if self.op.ipolicy:
            ipolicy = objects.FillIPolicy(objects.IPOLICY_DEFAULTS, {
                key: value for key, value in objects.FillDict(
                    cluster.ipolicy or {}, self.op.ipolicy).items()
                if value is not None and value != constants.VALUE_DEFAULT})
            try:
                objects.CheckIPolicy(ipolicy, complete=True)
            except errors.TypeEnforcementError as err:
                raise errors.OpPrereqError("Invalid instance policy: %s" %
                                           err, errors.ECODE_INVAL)
            new["ipolicy"] = ipolicy
        if (self.op.uid_pool, self.op.add_uids,
                self.op.remove_uids) != (None, None, None):
            new["uid_pool"] = uidpool.ModifiedUidPool(
                cluster.uid_pool if self.op.uid_pool is None
                else self.op.uid_pool, self.op.add_uids, self.op.remove_uids)
        new.update(self._NewOsSettings(cluster,
                                       new.get("hvparams", cluster.hvparams)))
        if self.op.enabled_data_collectors or \
                self.op.data_collector_interval:
            collectors = objects.FillDataCollectors(cluster.data_collectors)
            for key, changes in (
                    (constants.DATA_COLLECTOR_STATE_ACTIVE,
                     self.op.enabled_data_collectors),
                    (constants.DATA_COLLECTOR_PARAMETER_INTERVAL,
                     self.op.data_collector_interval)):
                for name, value in (changes or {}).items():
                    collectors[name][key] = value
            new["data_collectors"] = collectors
        self.new_params = new

    def _NewOsSettings(self, cluster: objects.Cluster,
                       hvparams: dict) -> dict:
        """The cluster's OS attributes after the change, nodes checked.

        Per-OS hypervisor parameters hold only the overrides; filled with
        the (new) cluster ones they must pass the hypervisor's syntax
        check. OS parameters are validated by the OS's verify script on
        every node having the OS (nodes lacking it skip the check).
        """
        os_hvp = {name: {hv: dict(params) for hv, params in hvs.items()}
                  for name, hvs in (cluster.os_hvp or {}).items()}
        for os_name, hvs in (self.op.os_hvp or {}).items():
            current = os_hvp.setdefault(os_name, {})
            for hv_name, params in hvs.items():
                hv_class = HypervisorClass(hv_name)
                cluster_only = objects.HVC_GLOBALS & set(params)
                if cluster_only:
                    raise errors.OpPrereqError(
                        "Hypervisor parameter(s) %s can only be set"
                        " cluster-wide, not for OS %s" %
                        (", ".join(sorted(cluster_only)), os_name),
                        errors.ECODE_INVAL)
                current[hv_name] = GetUpdatedParams(
                    current.get(hv_name), params, hv_class.PARAMETERS,
                    "%s hypervisor" % hv_name)
                try:
                    hv_class.CheckParameterSyntax(objects.FillDict(
                        hvparams.get(hv_name) or hv_class.GetDefaults(),
                        current[hv_name]))
                except errors.HypervisorError as err:
                    raise errors.OpPrereqError(
                        "OS %s: %s" % (os_name, err),
                        errors.ECODE_INVAL) from None
                if not current[hv_name]:
                    del current[hv_name]
            if not current:
                del os_hvp[os_name]
        osparams = dict(cluster.osparams or {})
        for os_name, params in (self.op.osparams or {}).items():
            new = operating_system.UpdateParams(osparams.get(os_name, {}),
                                                params)
            if new:
                base, variant = objects.OS.SplitNameVariant(os_name)
                filled = (objects.FillDict(osparams.get(base, {}), new)
                          if variant else new)
                # Defaults for an OS without variant serve all its variants
                operating_system.CheckOSParams(
                    self, False, self.cfg.GetNodeList(), os_name, filled,
                    force_variant=not variant)
                osparams[os_name] = new
            else:
                osparams.pop(os_name, None)
        result: dict[str, dict | list[str]] = {"os_hvp": os_hvp,
                                               "osparams": osparams}
        for key, desc in (("hidden_os", "hidden OS list"),
                          ("blacklisted_os", "blacklisted OS list")):
            mods = getattr(self.op, key)
            if mods:
                result[key] = operating_system.ApplyOsListModifications(
                    getattr(cluster, key) or [], mods, desc, self.LogInfo)
        return result

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        cluster = self.cfg.GetClusterInfo()
        for name in _SIMPLE_PARAMS:
            value = getattr(self.op, name)
            if value is not None:
                setattr(cluster, name, value)
        for name, value in self.new_params.items():
            setattr(cluster, name, value)
        for name, attr in _STATIC_STATES.items():
            if getattr(self.op, name):
                setattr(cluster, attr, getattr(self.op, name))
        self.cfg.Update(cluster, feedback_fn)
        maint = {field: getattr(self.op, param)
                 for param, field in _MAINT_PARAMS.items()
                 if getattr(self.op, param) is not None}
        if maint:
            self.cfg.UpdateMaintenance(maint, feedback_fn)
        if self.op.candidate_pool_size is not None:
            # A bigger pool is filled now; a smaller one only reports the
            # surplus (candidates are never demoted automatically)
            AdjustCandidatePool(self, [])
        if self.op.max_running_jobs is not None:
            self.context.jobqueue.WakeWorkers()


def _ConfigFields(lu: NoHooksLU) -> dict[str, Callable[[], Any]]:
    """The fields of OpClusterConfigQuery (Ganeti's cluster query fields)."""
    cfg = lu.cfg
    cluster = cfg.GetClusterInfo()
    return {
        "cluster_name": lambda: cluster.cluster_name,
        "name": lambda: cluster.cluster_name,
        "master_node": cfg.GetMasterNodeName,
        "volume_group_name": lambda: cluster.volume_group_name,
        "tags": lambda: sorted(cluster.GetTags()),
        "architecture": lambda: list(_ARCHITECTURE),
        "drain_flag": lu.context.jobqueue.IsDrained,
        "watcher_pause": lambda: utils.ReadWatcherPauseFile(
            pathutils.WATCHER_PAUSEFILE),
        "ctime": lambda: cluster.ctime,
        "mtime": lambda: cluster.mtime,
        "software_version": lambda: constants.RELEASE_VERSION,
        "protocol_version": lambda: constants.PROTOCOL_VERSION,
        "config_version": lambda: constants.CONFIG_VERSION,
        "os_api_version": lambda: max(constants.OS_API_VERSIONS),
        "export_version": lambda: constants.EXPORT_VERSION,
        "vcs_version": lambda: constants.VCS_VERSION,
    }


class LUClusterConfigQuery(NoHooksLU):
    """One value per requested field of the cluster's configuration."""

    REQ_BGL = False

    def CheckArguments(self) -> None:
        self.fields = _ConfigFields(self)
        unknown = [name for name in self.op.output_fields
                   if name not in self.fields]
        if unknown:
            raise errors.OpPrereqError("Unknown output fields selected: %s"
                                       % ",".join(unknown),
                                       errors.ECODE_INVAL)

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> list:
        return [self.fields[name]() for name in self.op.output_fields]


class LUClusterRename(LogicalUnit):
    """Give the cluster a new name, and the master IP it resolves to.

    Runs alone (Big Ganeti Lock): the master IP is down meanwhile. The
    ssconf files follow the configuration to every node; the master IP is
    brought up again, at its new address, even if the update failed.
    """

    HPATH = "cluster-rename"
    HTYPE = constants.HTYPE_CLUSTER

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"OP_TARGET": self.cfg.GetClusterName(),
                "NEW_NAME": self.op.name}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        return [self.cfg.GetMasterNode()], self.cfg.GetNodeList()

    def CheckPrereq(self) -> None:
        try:
            hostname = netutils.Hostname(self.op.name)
        except errors.ResolverError as err:
            raise errors.OpPrereqError(
                "The given name (%s) does not resolve: %s" %
                (self.op.name, err.args[-1]), errors.ECODE_RESOLVER) from err
        old_ip = self.cfg.GetMasterNetworkParameters()["ip"]
        if hostname.name == self.cfg.GetClusterName() and \
                hostname.ip == old_ip:
            raise errors.OpPrereqError("Neither the name nor the IP address"
                                       " of the cluster has changed",
                                       errors.ECODE_INVAL)
        if hostname.ip != old_ip and netutils.TcpPing(
                hostname.ip, netutils.GetDaemonPort(constants.NODED),
                _RENAME_PING_TIMEOUT):
            raise errors.OpPrereqError("The given cluster IP address (%s) is"
                                       " reachable on the network" %
                                       hostname.ip, errors.ECODE_NOTUNIQUE)
        self.op.name = hostname.name
        self.new_ip = hostname.ip

    def Exec(self, feedback_fn: Callable[[str], None]) -> str:
        master = self.cfg.GetMasterNode()
        params = self.cfg.GetMasterNetworkParameters()
        self.rpc.call_node_deactivate_master_ip(master, params).Raise(
            "Could not disable the master role")
        try:
            cluster = self.cfg.GetClusterInfo()
            cluster.cluster_name = self.op.name
            cluster.master_ip = self.new_ip
            self.cfg.Update(cluster, feedback_fn)
        finally:
            params["ip"] = self.new_ip
            result = self.rpc.call_node_activate_master_ip(master, params)
            if result.fail_msg:
                self.LogWarning("Could not re-enable the master role on the"
                                " master, please restart manually: %s",
                                result.fail_msg)
        return self.op.name


class LUClusterActivateMasterIp(NoHooksLU):
    """Add the master IP on the master node."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self.rpc.call_node_activate_master_ip(
            self.cfg.GetMasterNode(),
            self.cfg.GetMasterNetworkParameters()).Raise(
                "Could not activate the master IP")


class LUClusterDeactivateMasterIp(NoHooksLU):
    """Remove the master IP from the master node."""

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.needed_locks = {}

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self.rpc.call_node_deactivate_master_ip(
            self.cfg.GetMasterNode(),
            self.cfg.GetMasterNetworkParameters()).Raise(
                "Could not deactivate the master IP")
