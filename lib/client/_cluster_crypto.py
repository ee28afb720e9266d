"""``gnt-cluster renew-crypto``: new certificates, keys and secrets.

As Ganeti's, the files are made on the master and copied to the other
nodes; Ganeti copies them over SSH with the daemons stopped, this cluster
over the node daemons' RPC (upload_file) while they still hold the old
cluster certificate, after which each node restarts its daemons with
daemon-util. The cluster certificate is shared by all nodes (and is every
node's client certificate), so ``--new-node-certificates`` renews it too.
Jobs are not lost: masterd stops only once no job runs (queued jobs wait
on disk and run after the restart).
"""

import os
import tempfile
import time
from typing import Any, Callable

from ganeti import (cli, constants, errors, opcodes, pathutils, ssconf,
                    utils)
from ganeti.cli_opts import FORCE_OPT, cli_option
from ganeti.rpc import node as rpc_node
from ganeti.utils import process

NEW_CLUSTER_CERT_OPT = cli_option(
    "--new-cluster-certificate", dest="new_cluster_cert", default=False,
    action="store_true", help="Generate a new cluster certificate")
NEW_NODE_CERT_OPT = cli_option(
    "--new-node-certificates", dest="new_node_cert", default=False,
    action="store_true", help="Generate new node certificates (for all"
    " nodes; here the cluster certificate, which every node presents)")
RAPI_CERT_OPT = cli_option(
    "--rapi-certificate", dest="rapi_cert", default=None, metavar="FILE",
    help="File containing new RAPI certificate")
NEW_RAPI_CERT_OPT = cli_option(
    "--new-rapi-certificate", dest="new_rapi_cert", default=None,
    action="store_true", help="Generate a new self-signed RAPI certificate")
NEW_CONFD_HMAC_KEY_OPT = cli_option(
    "--new-confd-hmac-key", dest="new_confd_hmac_key", default=False,
    action="store_true", help="Create a new HMAC key (signs the monitoring"
    " reports)")
CLUSTER_DOMAIN_SECRET_OPT = cli_option(
    "--cluster-domain-secret", dest="cluster_domain_secret", default=None,
    metavar="FILE", help="Load new new cluster domain secret from file")
NEW_CLUSTER_DOMAIN_SECRET_OPT = cli_option(
    "--new-cluster-domain-secret", dest="new_cluster_domain_secret",
    default=False, action="store_true",
    help="Create a new cluster domain secret")

RENEW_CRYPTO_OPTS = [NEW_CLUSTER_CERT_OPT, NEW_RAPI_CERT_OPT, RAPI_CERT_OPT,
                     NEW_CONFD_HMAC_KEY_OPT, FORCE_OPT,
                     NEW_CLUSTER_DOMAIN_SECRET_OPT, CLUSTER_DOMAIN_SECRET_OPT,
                     NEW_NODE_CERT_OPT]

# How long the nodes get to answer with the new cluster certificate, and
# running jobs to finish before masterd stops
_RESTART_TIMEOUT = 60.0
_JOBS_TIMEOUT = 300.0


def _ReadAndVerifyCert(filename: str) -> str:
    """A PEM file holding a certificate and its private key."""
    try:
        pem = utils.ReadFile(filename)
    except OSError as err:
        raise errors.X509CertError(filename, "Unable to read certificate: %s"
                                   % err) from err
    from ganeti.utils import x509  # off gnt-cluster's start-up (~25 ms)
    try:
        x509.LoadCertificate(pem)
    except Exception as err:  # pylint: disable=broad-except
        raise errors.X509CertError(filename, "Unable to load certificate: %s"
                                   % err) from err
    if "PRIVATE KEY-----" not in pem:
        raise errors.X509CertError(filename, "Unable to load private key")
    return pem


def _WaitNoRunningJob(feedback_fn: Callable[..., None]) -> None:
    """Wait until masterd runs no job (so that stopping it loses none)."""
    client = cli.GetClient()
    deadline = time.monotonic() + _JOBS_TIMEOUT
    while True:
        running = [job_id for job_id, status in client.QueryJobs(
            None, ["id", "status"]) if status == constants.JOB_STATUS_RUNNING]
        if not running:
            return
        if time.monotonic() > deadline:
            raise errors.OpExecError("Jobs %s are still running" %
                                     ", ".join(map(str, running)))
        feedback_fn("Waiting for running jobs %s" %
                    ", ".join(map(str, running)))
        time.sleep(1)


def _Check(results: dict, what: str) -> None:
    failed = ["%s: %s" % (name, result.fail_msg)
              for name, result in sorted(results.items()) if result.fail_msg]
    if failed:
        raise errors.OpExecError("Could not %s on node(s) %s" %
                                 (what, "; ".join(failed)))


def _WaitForNodes(nodes: list[str], addresses: dict[str, str]) -> None:
    """Wait until every node's noded answers with the new certificate."""
    runner = rpc_node.RpcRunner(rpc_node.StaticResolver(addresses))
    deadline = time.monotonic() + _RESTART_TIMEOUT
    try:
        while nodes:
            results = runner.call_version(nodes)
            nodes = [name for name in nodes if results[name].fail_msg]
            if nodes and time.monotonic() > deadline:
                raise errors.OpExecError(
                    "Node(s) %s do not answer with the new cluster"
                    " certificate: %s" % (", ".join(nodes), "; ".join(
                        results[name].fail_msg for name in nodes)))
            time.sleep(0.2 if nodes else 0)
    finally:
        runner.close()


def _Distribute(files: dict[str, str], cluster_cert: str | None,
                feedback_fn: Callable[..., None]) -> None:
    """Install the new files on every online node and restart daemons.

    ``files`` maps a path to its new content; ``cluster_cert`` is the new
    cluster certificate, written last everywhere (the RPCs before use the
    old one).
    """
    from ganeti import bootstrap  # node-side machinery, off start-up
    ss = ssconf.SimpleStore()
    master = ss.GetMasterNode()
    offline = set(ss.GetOfflineNodeList())
    addresses = dict(line.split(" ", 1)
                     for line in ss.GetNodePrimaryIPList())
    others = [name for name in ss.GetNodeList()
              if name != master and name not in offline]
    if cluster_cert is not None:
        files = {**files, pathutils.NODED_CERT_FILE: cluster_cert}
    runner = rpc_node.RpcRunner(rpc_node.StaticResolver(addresses, offline))
    try:
        for path, content in files.items():
            if others:
                feedback_fn("Copying %s to %s" % (path, ", ".join(others)))
                _Check(runner.call_upload_file(
                    others, rpc_node.EncodeVirtualPath(path), content,
                    constants.SECURE_FILE_MODE), "copy %s" % path)
        # mond signs its reports with the HMAC key; noded serves with the
        # cluster certificate
        restart = ([constants.NODED] if cluster_cert is not None else []) + \
            ([constants.MOND] if pathutils.CONFD_HMAC_KEY in files else [])
        if others and restart:
            _Check(runner.call_node_restart_daemons(others, restart),
                   "restart the daemons")
    finally:
        runner.close()
    for path, content in files.items():
        utils.WriteFile(path, data=content, mode=constants.SECURE_FILE_MODE)
    for name in restart:
        if process.RunCmd([pathutils.DAEMON_UTIL, "check", name]).failed:
            continue
        bootstrap.RunDaemonUtil("stop", name)
        bootstrap.RunDaemonUtil("start", name)
    _WaitForNodes(others + [master], addresses)


def RenewCrypto(opts: Any, args: list[str]) -> int:
    """Renew the cluster certificates, keys and secrets (Ganeti's rules)."""
    from ganeti import bootstrap  # see _Distribute
    cli.ToStdout("Updating certificates now. Running \"gnt-cluster verify\" "
                 " is recommended after this operation.")
    if opts.new_rapi_cert and opts.rapi_cert:
        cli.ToStderr("Only one of the --new-rapi-certificate and"
                     " --rapi-certificate options can be specified at the"
                     " same time.")
        return 1
    if opts.new_cluster_domain_secret and opts.cluster_domain_secret:
        cli.ToStderr("Only one of the --new-cluster-domain-secret and"
                     " --cluster-domain-secret options can be specified at"
                     " the same time.")
        return 1
    files = {}
    try:
        if opts.rapi_cert:
            files[pathutils.RAPI_CERT_FILE] = \
                _ReadAndVerifyCert(opts.rapi_cert)
    except errors.X509CertError as err:
        cli.ToStderr("Unable to load X509 certificate from %s: %s",
                     err.args[0], err.args[1])
        return 1
    if opts.cluster_domain_secret:
        try:
            files[pathutils.CLUSTER_DOMAIN_SECRET_FILE] = \
                utils.ReadFile(opts.cluster_domain_secret)
        except Exception as err:  # pylint: disable=broad-except
            cli.ToStderr("Can't load new cluster domain secret from %s: %s"
                         % (opts.cluster_domain_secret, str(err)))
            return 1
    if not opts.force:
        usertext = ("This requires all daemons on all nodes to be restarted"
                    " and may take some time. Continue?")
        if not cli.AskUser(usertext):
            return 1
    from ganeti.utils import x509  # off gnt-cluster's start-up (~25 ms)
    cluster_name = ssconf.SimpleStore().GetClusterName()
    with tempfile.TemporaryDirectory() as tmpdir:
        for wanted, path in ((opts.new_rapi_cert, pathutils.RAPI_CERT_FILE),
                             (opts.new_cluster_cert or opts.new_node_cert,
                              pathutils.NODED_CERT_FILE)):
            if wanted:
                tmp = os.path.join(tmpdir, "cert.pem")
                x509.GenerateSelfSignedSslCert(tmp, common_name=cluster_name)
                files[path] = utils.ReadFile(tmp)
    if opts.new_cluster_domain_secret:
        files[pathutils.CLUSTER_DOMAIN_SECRET_FILE] = os.urandom(32).hex() \
            + "\n"
    if opts.new_confd_hmac_key:
        files[pathutils.CONFD_HMAC_KEY] = os.urandom(20).hex() + "\n"
    cluster_cert = files.pop(pathutils.NODED_CERT_FILE, None)
    if files or cluster_cert is not None:
        _WaitNoRunningJob(cli.ToStdout)
        cli.ToStdout("Stopping the master daemons")
        for name in constants.MASTER_DAEMONS[::-1]:
            bootstrap.RunDaemonUtil("stop", name)
        try:
            cli.ToStdout("Updating certificates and keys")
            _Distribute(files, cluster_cert, cli.ToStdout)
        finally:
            cli.ToStdout("Starting the master daemons")
            for name in constants.MASTER_DAEMONS:
                bootstrap.RunDaemonUtil("start", name)
    if cluster_cert is not None:
        cli.SubmitOpCode(opcodes.OpClusterRenewCrypto(node_certificates=True))
    cli.ToStdout("All requested certificates and keys have been replaced."
                 " Running \"gnt-cluster verify\" now is recommended.")
    return 0
