"""Creating and destroying a cluster (what runs before masterd exists)."""

import logging
import os
import time

from ganeti import (config, constants, errors, impexp, netutils, objects,
                    pathutils, serializer, ssconf, utils, vcluster)
from ganeti.backend import node as backend_node
from ganeti.parameters.base import ForceParamDict
from ganeti.parameters.families import UpdatedDiskParams
from ganeti.parameters.hypervisors import UpdatedHvParams
from ganeti.rpc import client as rpc_client
from ganeti.rpc import node as rpc_node
from ganeti.utils import process, tunable, uidpool


def RunDaemonUtil(*args: str) -> None:
    """Run daemon-util (start/stop daemons of this node), raising on error."""
    result = process.RunCmd([pathutils.DAEMON_UTIL] + list(args))
    if result.failed:
        raise errors.OpExecError("Could not %s: %s" %
                                 (" ".join(args), result.output.strip()))


# Exists from an init's first write until its daemons run: a config.data
# beside it is the leftover of an init that was interrupted
_INIT_MARKER = os.path.join(pathutils.DATA_DIR, "cluster-init.incomplete")

# Seconds between two rounds of master votes; the variable overrides them
# (utils.tunable)
_VOTE_RETRY_DELAY = 2.0
ENV_VOTE_RETRY_DELAY = "GANETI_MASTER_VOTE_RETRY_DELAY"


def _InitCertificates(cluster_name: str) -> None:
    # Imported here, as in storage.drbd_daemon: only init needs cryptography
    from ganeti.utils import x509
    for path in (pathutils.NODED_CERT_FILE, pathutils.RAPI_CERT_FILE):
        x509.GenerateSelfSignedSslCert(path, common_name=cluster_name)
    utils.WriteFile(pathutils.CLUSTER_DOMAIN_SECRET_FILE,
                    data=os.urandom(32).hex() + "\n",
                    mode=constants.SECURE_FILE_MODE)
    # As Ganeti's: 20 random bytes, hex
    utils.WriteFile(pathutils.CONFD_HMAC_KEY,
                    data=os.urandom(20).hex() + "\n",
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
                diskparams: dict | None = None,
                candidate_pool_size: int | None = None,
                mac_prefix: str | None = None,
                max_running_jobs: int | None = None,
                ipolicy: dict | None = None,
                uid_pool: list[tuple[int, int]] | None = None,
                compression_tools: list[str] | None = None,
                modify_etc_hosts: bool = True,
                modify_ssh_setup: bool = True,
                ssh_key_type: str | None = None,
                ssh_key_bits: int | None = None,
                enabled_user_shutdown: bool = False) -> None:
    """Create the cluster on this node and start its daemons.

    Everything is checked before the first file is written, and a failed
    init is undone (see _UndoInit): it leaves nothing that blocks the next.
    ``modify_etc_hosts``, ``modify_ssh_setup`` and the SSH key type and
    size are only recorded, as this cluster manages neither /etc/hosts nor
    SSH; user shutdown is a
    feature it lacks, so only its default is accepted.
    """
    if enabled_user_shutdown:
        raise errors.OpPrereqError("User shutdown (--user-shutdown) is not"
                                   " supported by this cluster",
                                   errors.ECODE_INVAL)
    if uid_pool is not None:
        uidpool.CheckUidPool(uid_pool)
    if compression_tools is not None:
        impexp.CheckCompressionTools(compression_tools)
    settings: dict = {"modify_etc_hosts": modify_etc_hosts,
                      "modify_ssh_setup": modify_ssh_setup}
    for name, value in (("ssh_key_type", ssh_key_type),
                        ("ssh_key_bits", ssh_key_bits)):
        if value is not None:
            settings[name] = value
    if uid_pool is not None:
        settings["uid_pool"] = uid_pool
    if compression_tools is not None:
        settings["compression_tools"] = compression_tools
    if os.path.exists(pathutils.CLUSTER_CONF_FILE):
        if not os.path.exists(_INIT_MARKER):
            raise errors.OpPrereqError("Cluster is already initialised",
                                       errors.ECODE_STATE)
        logging.warning("Removing what an interrupted init left")
        _UndoInit(stop_noded=False)
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
    # Complete and checked per hypervisor (built-in defaults filled in)
    hvparams = {name: UpdatedHvParams(
        name, None, (hvparams or {}).get(name, {}))
        for name in set(hypervisors) | set(hvparams or {})}
    templates = (enabled_disk_templates or
                 constants.DEFAULT_ENABLED_DISK_TEMPLATES)
    if ipolicy:
        ipolicy = objects.FillIPolicy(objects.FillDict(
            objects.IPOLICY_DEFAULTS, {objects.IPOLICY_DTS: list(templates)}),
            ipolicy)
        try:
            objects.CheckIPolicy(ipolicy, complete=True)
        except errors.TypeEnforcementError as err:
            raise errors.OpPrereqError("Invalid instance policy: %s" % err,
                                       errors.ECODE_INVAL) from None
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
    # Per-template overrides; the configuration's upgrade completes them
    diskparams = UpdatedDiskParams({}, diskparams or {})
    # The configuration holds paths as every node sees them (virtual
    # paths on a virtual cluster, see vcluster)
    file_storage_dir = rpc_node.EncodeVirtualPath(
        file_storage_dir or pathutils.DEFAULT_FILE_STORAGE_DIR)
    shared_file_storage_dir = rpc_node.EncodeVirtualPath(
        shared_file_storage_dir or pathutils.DEFAULT_SHARED_FILE_STORAGE_DIR)

    utils.EnsureDirs(pathutils.GetNodeDirectories() +
                     [(vcluster.LocalizeVirtualPath(file_storage_dir), 0o750)])
    noded_ran = process.IsProcessAlive(process.ReadPidFile(
        pathutils.DaemonPidFileName(constants.NODED)))
    utils.WriteFile(_INIT_MARKER, data="", mode=constants.SECURE_FILE_MODE)
    try:
        _InitFiles(cluster_name, master_ip, master_netdev, master_netmask,
                   hostname, secondary_ip, hypervisors, templates,
                   file_storage_dir, shared_file_storage_dir, hvparams,
                   beparams, nicparams, ndparams, diskparams, ipolicy,
                   candidate_pool_size, mac_prefix, max_running_jobs,
                   settings)
    except BaseException:
        logging.error("Cluster init failed, removing what it wrote")
        _UndoInit(stop_noded=not noded_ran)
        raise
    utils.RemoveFile(_INIT_MARKER)


def _UndoInit(stop_noded: bool) -> None:
    """Stop what a failed init started and remove the files that would
    block the next (configuration, ssconf), the marker last.

    Certificates and the storage allow-list stay: the next init replaces
    the former and keeps the latter anyway.
    """
    daemons = list(constants.MASTER_DAEMONS[::-1])
    if stop_noded:
        daemons.append(constants.NODED)
    for name in daemons:
        result = process.RunCmd([pathutils.DAEMON_UTIL, "stop", name])
        if result.failed:
            logging.warning("Could not stop %s: %s", name,
                            result.output.strip())
    utils.RemoveFile(pathutils.CLUSTER_CONF_FILE)
    prefix = os.path.basename(pathutils.SSCONF_PREFIX)
    for name in os.listdir(pathutils.DATA_DIR):
        if name.startswith(prefix):
            utils.RemoveFile(os.path.join(pathutils.DATA_DIR, name))
    utils.RemoveFile(_INIT_MARKER)


def _InitFiles(cluster_name: str, master_ip: str, master_netdev: str,
               master_netmask: int | None, hostname: netutils.Hostname,
               secondary_ip: str, hypervisors: list[str],
               templates: list[str], file_storage_dir: str,
               shared_file_storage_dir: str, hvparams: dict,
               beparams: dict, nicparams: dict, ndparams: dict,
               diskparams: dict, ipolicy: dict | None,
               candidate_pool_size: int | None,
               mac_prefix: str | None,
               max_running_jobs: int | None, settings: dict) -> None:
    """Write the cluster's files and start its daemons (checks done);
    ``settings``: further cluster attributes, set as they are."""
    _InitCertificates(cluster_name)
    if not os.path.exists(pathutils.FILE_STORAGE_PATHS_FILE):
        # What Ganeti's configure installs: the cluster's own storage
        # directories are allowed; an admin's list is left alone
        utils.WriteFile(pathutils.FILE_STORAGE_PATHS_FILE,
                        data="%s\n%s\n" % (file_storage_dir,
                                            shared_file_storage_dir),
                        mode=0o644, mkdir=True)

    node = objects.Node(name=hostname.name, primary_ip=hostname.ip,
                        secondary_ip=secondary_ip, vm_capable=True)
    cluster = objects.Cluster(
        cluster_name=cluster_name, master_ip=master_ip,
        master_netdev=master_netdev,
        master_netmask=master_netmask or constants.DEFAULT_MASTER_NETMASK,
        enabled_hypervisors=hypervisors,
        enabled_disk_templates=templates, file_storage_dir=file_storage_dir,
        shared_file_storage_dir=shared_file_storage_dir,
        diskparams=diskparams)
    cluster.UpgradeConfig()
    cluster.hvparams.update(hvparams)
    if ipolicy:
        cluster.ipolicy = ipolicy
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
    for name, value in settings.items():
        setattr(cluster, name, value)

    config.InitConfig(constants.CONFIG_VERSION, cluster, node)
    cfg = config.ConfigWriter()
    ssconf.SimpleStore().WriteFiles(cfg.GetSsconfValues())
    try:
        backend_node.node_activate_master_ip(cfg.GetMasterNetworkParameters())
    except errors.GenericError as err:
        logging.error("Could not activate the master IP: %s", err)
    logging.info("Cluster %s initialised, starting daemons", cluster_name)
    RunDaemonUtil("start", constants.NODED)
    for name in constants.MASTER_DAEMONS:
        RunDaemonUtil("start", name)


def FinalizeClusterDestroy(master_name: str) -> None:
    """Stop masterd, then make the master leave the cluster via noded."""
    for name in constants.MASTER_DAEMONS[::-1]:
        RunDaemonUtil("stop", name)
    cfg = config.ConfigWriter(offline=True)
    try:
        backend_node.node_deactivate_master_ip(
            cfg.GetMasterNetworkParameters())
    except errors.GenericError as err:
        logging.warning("Could not remove the master IP: %s", err)
    node = cfg.GetNodeInfoByName(master_name)
    if node is None:
        raise errors.ConfigurationError("Master node %s is not in the"
                                        " configuration" % master_name)
    runner = rpc_node.RpcRunner(rpc_node.StaticResolver(
        {node.name: node.primary_ip}))
    result = runner.call_node_leave_cluster(node.name)
    if result.fail_msg:
        logging.warning("Could not make %s leave the cluster: %s",
                        master_name, result.fail_msg)
    RunDaemonUtil("stop", constants.NODED)


# Files a joining node gets, with their modes (the allow-lists and the
# RAPI users only if the master has them: Ganeti's optional cluster files,
# which any node may need once it becomes master)
_JOIN_FILES = ((pathutils.NODED_CERT_FILE, constants.SECURE_FILE_MODE),
               (pathutils.RAPI_CERT_FILE, constants.SECURE_FILE_MODE),
               (pathutils.CLUSTER_DOMAIN_SECRET_FILE,
                constants.SECURE_FILE_MODE),
               (pathutils.CONFD_HMAC_KEY, constants.SECURE_FILE_MODE),
               (pathutils.RAPI_USERS_FILE, constants.SECURE_FILE_MODE),
               (pathutils.FILE_STORAGE_PATHS_FILE, 0o644),
               (pathutils.BLOCKDEV_PATHS_FILE, 0o644))


def _ParseJoinKey(join_key: str) -> tuple[str, str]:
    pin, sep, secret = join_key.strip().rpartition(":")
    if not sep or not pin or not secret:
        raise errors.OpPrereqError(
            "Invalid join key %r: expected PIN:SECRET as printed by the new"
            " node's ganeti-noded" % join_key, errors.ECODE_INVAL)
    return pin, secret


def JoinNode(node_name: str, node_ip: str, join_key: str,
             ssconf_values: dict[str, str] | None = None,
             port: int | None = None,
             timeout: float = 30) -> None:
    """Hand a new node the cluster's certificate, secrets and ssconf.

    The new node's noded, not yet in a cluster, serves with a temporary
    key; the join key the admin copied from it pins that key (so the
    certificate goes to exactly that node) and carries the secret the node
    asks for (so nobody else can make the node join their cluster).
    Returns once the node's noded serves with the cluster certificate.
    """
    pin, secret = _ParseJoinKey(join_key)
    if port is None:
        port = netutils.GetDaemonPort(constants.NODED)
    files = {vcluster.MakeVirtualPath(path):
             [mode, rpc_node.EncodeContent(utils.ReadFile(path))]
             for path, mode in _JOIN_FILES if os.path.exists(path)}
    if ssconf_values is None:
        ssconf_values = ssconf.SimpleStore().ReadAll()
    body = serializer.DumpJsonBytes([secret, files, ssconf_values])
    client = rpc_client.RpcClient(None, pinned_key=pin)
    try:
        result = client.Call("node_join", [(node_name, node_name, node_ip,
                                            False)], port, body,
                             timeout)[node_name]
    finally:
        client.close()
    if result.fail_msg:
        raise errors.OpExecError("Node %s did not join: %s (is the join key"
                                 " the one its noded printed?)" %
                                 (node_name, result.fail_msg))
    runner = rpc_node.RpcRunner(rpc_node.StaticResolver({node_name: node_ip}),
                                port=port)
    deadline = time.monotonic() + timeout
    try:
        while True:
            result = runner.call_version([node_name])[node_name]
            if not result.fail_msg:
                return
            if time.monotonic() > deadline:
                raise errors.OpExecError(
                    "Node %s joined but its node daemon does not answer as"
                    " a cluster member: %s" % (node_name, result.fail_msg))
            time.sleep(0.2)
    finally:
        runner.close()


def _NodeRunner(cfg: config.ConfigWriter) -> rpc_node.RpcRunner:
    """RPC to the nodes of a configuration, without a master daemon."""
    nodes = cfg.GetAllNodesInfo().values()
    return rpc_node.RpcRunner(rpc_node.StaticResolver(
        {node.name: node.primary_ip for node in nodes},
        offline=[node.name for node in nodes if node.offline]))


def GatherMasterInfo(cfg: config.ConfigWriter,
                     my_name: str) -> tuple[dict, dict[str, dict | None]]:
    """This node's master_info and every other online node's (None if down).
    """
    others = [node.name for node in cfg.GetAllNodesInfo().values()
              if not node.offline and node.name != my_name]
    mine = backend_node.master_info()
    if not others:
        return mine, {}
    runner = _NodeRunner(cfg)
    try:
        results = runner.call_master_info(others)
    finally:
        runner.close()
    return mine, {name: (None if res.fail_msg else res.payload)
                  for name, res in results.items()}


def CheckMasterVotes(cfg: config.ConfigWriter, my_name: str,
                     retries: int = 5) -> None:
    """Refuse to run the master role unless the cluster agrees.

    A majority of the online nodes (this one included) must name this node
    as master, and no node may hold a newer configuration or job queue
    than this node (design-2.0, "Master startup/failover"). Raises
    errors.NotMasterError saying why not.
    """
    for attempt in range(retries):
        mine, others = GatherMasterInfo(cfg, my_name)
        _CheckNotStale(mine, others)
        total = len(others) + 1
        votes = 1 + sum(1 for info in others.values()
                        if info and info.get("master_node") == my_name)
        if 2 * votes > total:
            return
        # Waiting helps only while nodes that did not answer (still
        # booting after a cluster-wide restart) could still make a majority
        silent = sum(1 for info in others.values() if info is None)
        if 2 * (votes + silent) <= total:
            break
        if attempt + 1 < retries:
            time.sleep(tunable.Seconds(ENV_VOTE_RETRY_DELAY,
                                       _VOTE_RETRY_DELAY))
    elsewhere = sorted({info["master_node"] for info in others.values()
                        if info and info.get("master_node") and
                        info["master_node"] != my_name})
    down = sorted(name for name, info in others.items() if info is None)
    raise errors.NotMasterError(
        "Not enough nodes agree that %s is the master (%d of %d votes);"
        " %s%sstart with --no-voting only if you are sure no other node"
        " runs the master role" %
        (my_name, votes, total,
         "nodes that did not answer: %s; " % ", ".join(down) if down else "",
         "other masters named: %s; " % ", ".join(elsewhere)
         if elsewhere else ""))


def _CheckNotStale(mine: dict, others: dict[str, dict | None]) -> None:
    """Refuse if another node holds a newer config or job queue."""
    for name, info in sorted(others.items()):
        if not info:
            continue
        for key, what in (("config_serial", "configuration"),
                          ("job_serial", "job queue")):
            theirs, ours = info.get(key), mine.get(key)
            if theirs is not None and (ours is None or theirs > ours):
                raise errors.NotMasterError(
                    "Node %s holds a newer %s than this node (serial %s,"
                    " ours %s); taking the master role here would roll"
                    " back changes" % (name, what, theirs, ours))


def MasterFailover(no_voting: bool = False,
                   feedback_fn=logging.info) -> None:
    """Make this master candidate the master (gnt-cluster master-failover).

    The old master's daemon is stopped first (if it can be reached), so
    the state compared next can no longer change; this node then takes
    over only if its configuration and job queue are the newest among a
    majority of the nodes. Jobs that were running on the old master are
    marked as failed when masterd recovers the queue here.
    """
    my_name = netutils.GetMyName()
    cfg = config.ConfigWriter(offline=True, accept_foreign=True)
    me = cfg.GetNodeInfoByName(my_name)
    if me is None:
        raise errors.OpPrereqError("This node (%s) is not in the cluster's"
                                   " configuration" % my_name,
                                   errors.ECODE_STATE)
    old_master = cfg.GetMasterNodeName()
    if old_master == my_name:
        raise errors.OpPrereqError(
            "This command must be run on the node where you want the new"
            " master to be; %s is already the master" % my_name,
            errors.ECODE_INVAL)
    if not me.master_candidate:
        raise errors.OpPrereqError(
            "This node is not a master candidate; only master candidates"
            " can become master (%s)" % ", ".join(
                cfg.GetNodeNames(cfg.GetMasterCandidateUuids())),
            errors.ECODE_STATE)
    if not no_voting:
        # Refuse early, while the old master still runs untouched
        _CheckNotStale(*GatherMasterInfo(cfg, my_name))

    runner = _NodeRunner(cfg)
    try:
        params = cfg.GetMasterNetworkParameters()
        feedback_fn("Stopping the master daemon on %s" % old_master)
        result = runner.call_node_stop_master(old_master)
        old_reachable = not result.fail_msg
        if old_reachable:
            result = runner.call_node_deactivate_master_ip(old_master, params)
            if result.fail_msg:
                logging.warning("Could not remove the master IP from %s: %s",
                                old_master, result.fail_msg)
        else:
            feedback_fn("Warning: could not stop the master daemon on %s"
                        " (%s); continuing" % (old_master, result.fail_msg))
        if not no_voting:
            try:
                CheckTakeover(cfg, my_name)
            except errors.NotMasterError:
                if old_reachable:
                    feedback_fn("Restarting the master daemon on %s" %
                                old_master)
                    runner.call_node_start_master(old_master)
                raise
        _WriteNewMaster(cfg, me, runner, feedback_fn)
    finally:
        runner.close()
    try:
        backend_node.node_activate_master_ip(params)
    except errors.GenericError as err:
        feedback_fn("Warning: could not activate the master IP: %s" % err)
    feedback_fn("Starting the master daemon on %s" % my_name)
    args = ["--no-voting", "--yes-do-it"] if no_voting else []
    RunDaemonUtil("start", constants.MASTERD, *args)
    RunDaemonUtil("start", constants.RAPI)
    # The master works without maintd (the watcher starts it later): an
    # old master that is gone may still hold its port on the master IP
    try:
        RunDaemonUtil("start", constants.MAINTD, *args)
    except errors.OpExecError as err:
        feedback_fn("Warning: %s" % err)


def CheckTakeover(cfg: config.ConfigWriter, my_name: str) -> None:
    """This node's copies must be the newest, among a majority of nodes."""
    mine, others = GatherMasterInfo(cfg, my_name)
    _CheckNotStale(mine, others)
    answered = 1 + sum(1 for info in others.values() if info)
    total = len(others) + 1
    if 2 * answered <= total:
        raise errors.NotMasterError(
            "Only %d of %d nodes answered; cannot check that this node holds"
            " the newest configuration and job queue (use --no-voting if the"
            " others are down for good)" % (answered, total))


def _WriteNewMaster(cfg: config.ConfigWriter, me: objects.Node,
                    runner: rpc_node.RpcRunner, feedback_fn) -> None:
    """Record this node as master and tell every node.

    The config goes to the candidates and ssconf to every node before the
    new masterd starts, so the nodes' votes name the new master.
    """
    cluster = cfg.GetClusterInfo()
    cluster.master_node = me.uuid
    cfg.Update(cluster)
    ssconf_values = cfg.GetSsconfValues()
    ssconf.SimpleStore().WriteFiles(ssconf_values)
    nodes = [node for node in cfg.GetAllNodesInfo().values()
             if not node.offline and node.uuid != me.uuid]
    candidates = [node.name for node in nodes if node.master_candidate]
    data = utils.ReadFile(pathutils.CLUSTER_CONF_FILE)
    for name, res in runner.call_upload_file(
            candidates, pathutils.CLUSTER_CONF_FILE, data,
            constants.CONFIG_FILE_MODE).items():
        if res.fail_msg:
            feedback_fn("Warning: could not send the configuration to %s:"
                        " %s" % (name, res.fail_msg))
    for name, res in runner.call_write_ssconf_files(
            [node.name for node in nodes], ssconf_values).items():
        if res.fail_msg:
            feedback_fn("Warning: could not update ssconf on %s: %s" %
                        (name, res.fail_msg))
