"""Creating and destroying a cluster (what runs before masterd exists)."""

import logging
import os

from ganeti import (config, constants, errors, netutils, objects, pathutils,
                    ssconf, utils)
from ganeti.cmdlib.base import ForceParamDict
from ganeti.rpc import node as rpc_node
from ganeti.utils import process, x509


def RunDaemonUtil(*args: str) -> None:
    """Run daemon-util (start/stop daemons of this node), raising on error."""
    result = process.RunCmd([pathutils.DAEMON_UTIL] + list(args))
    if result.failed:
        raise errors.OpExecError("Could not %s: %s" %
                                 (" ".join(args), result.output.strip()))


def _InitCertificates(cluster_name: str) -> None:
    for path in (pathutils.NODED_CERT_FILE, pathutils.RAPI_CERT_FILE):
        x509.GenerateSelfSignedSslCert(path, common_name=cluster_name)
    utils.WriteFile(pathutils.CLUSTER_DOMAIN_SECRET_FILE,
                    data=os.urandom(32).hex() + "\n",
                    mode=constants.SECURE_FILE_MODE)


def InitCluster(cluster_name: str, master_netdev: str,
                master_netmask: int | None = None,
                secondary_ip: str | None = None,
                enabled_hypervisors: list[str] | None = None,
                enabled_disk_templates: list[str] | None = None,
                file_storage_dir: str | None = None,
                shared_file_storage_dir: str | None = None,
                hvparams: dict | None = None, beparams: dict | None = None,
                nicparams: dict | None = None, ndparams: dict | None = None,
                candidate_pool_size: int | None = None,
                mac_prefix: str | None = None,
                max_running_jobs: int | None = None) -> None:
    """Create the cluster on this node and start its daemons.

    Everything is checked before the first file is written; the config is
    written last (atomically), so a failed init leaves no cluster behind.
    """
    if os.path.exists(pathutils.CLUSTER_CONF_FILE):
        raise errors.OpPrereqError("Cluster is already initialised",
                                   errors.ECODE_STATE)
    hostname = netutils.Hostname()
    if not netutils.IsValidIP4(hostname.ip):
        raise errors.OpPrereqError("This node's address %s is not IPv4" %
                                   hostname.ip, errors.ECODE_INVAL)
    try:
        master_ip = netutils.GetHostIP(cluster_name)
    except errors.ResolverError as err:
        raise errors.OpPrereqError("Cannot resolve cluster name '%s': %s" %
                                   (cluster_name, err.args[-1]),
                                   errors.ECODE_RESOLVER)
    secondary_ip = secondary_ip or hostname.ip
    hypervisors = enabled_hypervisors or [constants.HT_FAKE]
    for name in hypervisors:
        if name not in constants.HYPER_TYPES:
            raise errors.OpPrereqError("Unknown hypervisor '%s'" % name,
                                       errors.ECODE_INVAL)
    templates = (enabled_disk_templates or
                 constants.DEFAULT_ENABLED_DISK_TEMPLATES)
    for name in templates:
        if name not in constants.DISK_TEMPLATES:
            raise errors.OpPrereqError("Unknown disk template '%s'" % name,
                                       errors.ECODE_INVAL)
    beparams, nicparams, ndparams = [
        ForceParamDict(table, value or {}, name)
        for name, value, table in (
            ("beparams", beparams, objects.BE_PARAMETERS),
            ("nicparams", nicparams, objects.NIC_PARAMETERS),
            ("ndparams", ndparams, objects.ND_PARAMETERS))]
    file_storage_dir = file_storage_dir or pathutils.DEFAULT_FILE_STORAGE_DIR
    shared_file_storage_dir = (shared_file_storage_dir or
                               pathutils.DEFAULT_SHARED_FILE_STORAGE_DIR)

    utils.EnsureDirs(pathutils.GetNodeDirectories() +
                     [(file_storage_dir, 0o750)])
    _InitCertificates(cluster_name)

    node = objects.Node(name=hostname.name, primary_ip=hostname.ip,
                        secondary_ip=secondary_ip, vm_capable=True)
    cluster = objects.Cluster(
        cluster_name=cluster_name, master_ip=master_ip,
        master_netdev=master_netdev,
        master_netmask=master_netmask or constants.DEFAULT_MASTER_NETMASK,
        enabled_hypervisors=hypervisors,
        enabled_disk_templates=templates, file_storage_dir=file_storage_dir,
        shared_file_storage_dir=shared_file_storage_dir)
    cluster.UpgradeConfig()
    if hvparams:
        for hv_name, params in hvparams.items():
            cluster.hvparams.setdefault(hv_name, {}).update(params)
    if beparams:
        cluster.beparams[constants.PP_DEFAULT].update(beparams)
    if nicparams:
        cluster.nicparams[constants.PP_DEFAULT].update(nicparams)
    if ndparams:
        cluster.ndparams.update(ndparams)
    if candidate_pool_size is not None:
        cluster.candidate_pool_size = candidate_pool_size
    if mac_prefix is not None:
        cluster.mac_prefix = mac_prefix
    if max_running_jobs is not None:
        cluster.max_running_jobs = max_running_jobs

    config.InitConfig(constants.CONFIG_VERSION, cluster, node)
    cfg = config.ConfigWriter()
    ssconf.SimpleStore().WriteFiles(cfg.GetSsconfValues())
    logging.info("Cluster %s initialised, starting daemons", cluster_name)
    RunDaemonUtil("start", constants.NODED)
    RunDaemonUtil("start", constants.MASTERD)


def FinalizeClusterDestroy(master_name: str) -> None:
    """Stop masterd, then make the master leave the cluster via noded."""
    RunDaemonUtil("stop", constants.MASTERD)
    cfg = config.ConfigWriter(offline=True)
    node = cfg.GetNodeInfoByName(master_name)
    runner = rpc_node.RpcRunner(rpc_node.StaticResolver(
        {node.name: node.primary_ip}))
    result = runner.call_node_leave_cluster(node.name)
    if result.fail_msg:
        logging.warning("Could not make %s leave the cluster: %s",
                        master_name, result.fail_msg)
    RunDaemonUtil("stop", constants.NODED)


def GetMasterName() -> str:
    """Master name according to this node's ssconf (works without masterd)."""
    return ssconf.SimpleStore().GetMasterNode()
