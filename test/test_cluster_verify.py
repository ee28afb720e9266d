"""Cluster verification: finding format, the LUs on a real configuration
with scripted node answers, and gnt-cluster verify on a real 3-node
virtual cluster (master, master candidate, regular node).
"""

import hashlib
import os
import re
import signal
import time

import pytest

from ganeti import (constants, errors, locking, objects, opcodes,
                    pathutils)
from ganeti.cmdlib import cluster_verify
from ganeti.rpc.client import RpcResult
from ganeti.utils import x509

from testutils_cluster import VirtualCluster
from testutils_cmdlib import Failed, MakeContext

pytestmark = pytest.mark.integration

MASTER = "node1.example.test"
NODE2 = "node2.example.test"
NODE3 = "node3.example.test"


# Finding format --------------------------------------------------------------

def test_finding_format_plain_and_machine_readable():
    ecode = constants.CV_ENODEVERSION
    assert cluster_verify.FormatFinding(ecode, NODE2, "bad", "ERROR", False) \
        == "  - ERROR: node node2.example.test: bad"
    assert cluster_verify.FormatFinding(ecode, NODE2, "bad", "WARNING", True) \
        == "  - WARNING:ENODEVERSION:node:node2.example.test:bad"
    cfg_code = constants.CV_ECLUSTERCFG
    assert cluster_verify.FormatFinding(cfg_code, None, "x", "ERROR", False) \
        == "  - ERROR: cluster: x"
    assert cluster_verify.FormatFinding(cfg_code, None, "x", "ERROR", True) \
        == "  - ERROR:ECLUSTERCFG:cluster:None:x"


def test_unknown_ignored_code_is_refused():
    cluster_verify.CheckIgnoredCodes(["ENODERPC", "ECLUSTERCFG"])
    with pytest.raises(errors.OpPrereqError, match="ENOSUCH"):
        cluster_verify.CheckIgnoredCodes(["ENODERPC", "ENOSUCH"])


# Certificates ----------------------------------------------------------------

def _Cert(tmp_path, days):
    path = str(tmp_path / ("cert-%d.pem" % days))
    x509.GenerateSelfSignedSslCert(path, validity_days=days)
    return path


def test_certificate_expiry_levels(tmp_path):
    severity, msg = cluster_verify.VerifyCertificate(_Cert(tmp_path, 365))
    assert severity is None
    assert "cert-365.pem: Certificate expires in about 364 days" in msg
    severity, msg = cluster_verify.VerifyCertificate(_Cert(tmp_path, 20))
    assert severity == constants.CV_WARNING
    assert "cert-20.pem: Certificate expires in about 19 days" in msg
    severity, msg = cluster_verify.VerifyCertificate(_Cert(tmp_path, 5))
    assert severity == constants.CV_ERROR
    assert msg.startswith("While verifying ")
    later = time.time() + 400 * 86400
    severity, msg = cluster_verify.VerifyCertificate(_Cert(tmp_path, 365),
                                                     now=later)
    assert severity == constants.CV_ERROR
    assert "Certificate is expired (valid from " in msg


def test_certificate_unreadable_or_invalid(tmp_path):
    severity, msg = cluster_verify.VerifyCertificate(str(tmp_path / "none"))
    assert severity == constants.CV_ERROR and "Can't read" in msg
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate")
    severity, msg = cluster_verify.VerifyCertificate(str(bad))
    assert severity == constants.CV_ERROR
    assert "Failed to load X509 certificate" in msg


# The LUs on a real configuration ---------------------------------------------

class _Nodes:
    """Answers node_verify as healthy nodes of the configuration would.

    Files hold what the master expects (ssconf: the configuration's
    values; other files: one content per path); config.data is only on
    candidates. Tests spoil single answers through ``content``,
    ``payload`` and ``results``.
    """

    def __init__(self, cfg):
        self.cfg = cfg
        self.content = {}     # (node name, path) -> content, None = missing
        self.payload = {}     # node name -> dict merged into the answer
        self.results = {}     # node name -> RpcResult returned as is
        self.contacted = []

    def _File(self, node, path):
        if (node.name, path) in self.content:
            return self.content[(node.name, path)]
        if path == pathutils.CLUSTER_CONF_FILE and not node.master_candidate:
            return None
        if path == pathutils.RAPI_USERS_FILE:
            return None
        prefix = pathutils.SsconfFileName("")
        if path.startswith(prefix):
            return self.cfg.GetSsconfValues()[path[len(prefix):]]
        return "content of %s" % path

    def __call__(self, node_list, checks, cluster_name):
        assert cluster_name == self.cfg.GetClusterName()
        result = {}
        for uuid in node_list:
            node = self.cfg.GetNodeInfo(uuid)
            self.contacted.append(node.name)
            if node.name in self.results:
                result[uuid] = self.results[node.name]
                continue
            answer = {}
            if constants.NV_VERSION in checks:
                answer[constants.NV_VERSION] = [constants.PROTOCOL_VERSION,
                                                constants.RELEASE_VERSION]
            if constants.NV_TIME in checks:
                answer[constants.NV_TIME] = time.time()
            if constants.NV_FILELIST in checks:
                files = {}
                for path in checks[constants.NV_FILELIST]:
                    content = self._File(node, path)
                    files[path] = None if content is None else \
                        hashlib.sha256(content.encode()).hexdigest()
                answer[constants.NV_FILELIST] = files
            if checks.get(constants.NV_ACCEPTED_STORAGE_PATHS) == node.name:
                answer[constants.NV_ACCEPTED_STORAGE_PATHS] = []
            if constants.NV_HVINFO in checks:
                answer[constants.NV_HVINFO] = {"memory_free": 4096}
            answer.update(self.payload.get(node.name, {}))
            result[uuid] = RpcResult(data=[True, answer], call="node_verify",
                                     node=node.name)
        return result


@pytest.fixture
def ctx(tmp_path):
    """Master, node2 (candidate) and node3 (regular); pool size 2."""
    context = MakeContext(tmp_path)
    context.SetPoolSize(2)
    context.NewNode(NODE2, "127.0.0.2", master_candidate=True)
    context.NewNode(NODE3, "127.0.0.3")
    context.nodes = _Nodes(context.cfg)
    context.rpc.call_node_verify = context.nodes
    return context


def _VerifyGroup(ctx, group="default", **kwargs):
    messages = []
    result = ctx.Run(opcodes.OpClusterVerifyGroup(group_name=group, **kwargs),
                     messages)
    return result, messages


def _Findings(messages):
    return [msg for msg in messages if msg.startswith("  - ")]


def test_group_healthy(ctx):
    result, messages = _VerifyGroup(ctx, verbose=True)
    assert result is True
    assert _Findings(messages) == []
    assert messages[:4] == ["* Verifying group 'default'",
                            "* Gathering data (3 nodes)",
                            "* Verifying configuration file consistency",
                            "* Verifying node status"]
    assert "* Verifying node node1.example.test (master)" in messages
    assert "* Verifying node node2.example.test (master candidate)" in \
        messages
    assert "* Verifying node node3.example.test (regular)" in messages
    assert messages[-1] == "* Other Notes"
    assert sorted(ctx.nodes.contacted) == [MASTER, NODE2, NODE3]


def test_group_unreachable_node(ctx):
    ctx.nodes.results[NODE3] = Failed("node_verify", NODE3,
                                      "Connection refused")
    result, messages = _VerifyGroup(ctx)
    assert result is False
    assert _Findings(messages) == [
        "  - ERROR: node node3.example.test: Node did not return file"
        " checksum data",
        "  - ERROR: node node3.example.test: while contacting node:"
        " Connection refused",
    ]


def test_group_versions(ctx):
    ctx.nodes.payload[NODE3] = {
        constants.NV_VERSION: [constants.PROTOCOL_VERSION, "2.16.0"]}
    result, messages = _VerifyGroup(ctx)
    assert result is True
    assert _Findings(messages) == [
        "  - WARNING: node node3.example.test: software version mismatch:"
        " master %s, node 2.16.0" % constants.RELEASE_VERSION]
    ctx.nodes.payload[NODE2] = {constants.NV_VERSION: [2160000, "2.16.0"]}
    result, messages = _VerifyGroup(ctx)
    assert result is False
    assert ("  - ERROR: node node2.example.test: incompatible protocol"
            " versions: master %s, node 2160000" %
            constants.PROTOCOL_VERSION) in _Findings(messages)


def test_group_time_skew(ctx):
    ctx.nodes.payload[NODE2] = {constants.NV_TIME: time.time() + 1000}
    ctx.nodes.payload[NODE3] = {constants.NV_TIME: time.time() + 100}
    result, messages = _VerifyGroup(ctx)
    assert result is False
    (finding, ) = _Findings(messages)
    assert re.match(r"^  - ERROR: node node2\.example\.test: Node time"
                    r" diverges by at least (99\d|1000)\.\ds from master node"
                    r" time$", finding), finding
    ctx.nodes.payload[NODE2] = {constants.NV_TIME: "noon"}
    assert _Findings(_VerifyGroup(ctx)[1]) == [
        "  - ERROR: node node2.example.test: Node returned invalid time"]


def test_group_file_checks(ctx):
    content = ctx.nodes.content
    content[(NODE2, pathutils.CLUSTER_CONF_FILE)] = "tampered"
    content[(NODE3, pathutils.CLUSTER_CONF_FILE)] = "leftover"
    content[(NODE3, pathutils.SsconfFileName("node_list"))] = "node3"
    content[(NODE3, pathutils.NODED_CERT_FILE)] = None
    content[(NODE2, pathutils.RAPI_USERS_FILE)] = "users"
    result, messages = _VerifyGroup(ctx)
    assert result is False
    cfg_file = pathutils.CLUSTER_CONF_FILE
    findings = _Findings(messages)
    contents = {MASTER: "content of %s" % cfg_file, NODE2: "tampered",
                NODE3: "leftover"}
    order = sorted(contents, key=lambda name: hashlib.sha256(
        contents[name].encode()).hexdigest())
    variants = "; ".join("variant %d on %s" % (idx + 1, name)
                         for idx, name in enumerate(order))
    assert ("  - ERROR: cluster: File %s should not exist on node(s)"
            " node3.example.test" % cfg_file) in findings
    assert ("  - ERROR: cluster: File %s found with 3 different checksums"
            " (%s)" % (cfg_file, variants)) in findings
    assert ("  - ERROR: cluster: File %s differs from the cluster"
            " configuration on node(s) node3.example.test" %
            pathutils.SsconfFileName("node_list")) in findings
    assert ("  - ERROR: cluster: File %s is missing from node(s)"
            " node3.example.test" % pathutils.NODED_CERT_FILE) in findings
    assert ("  - ERROR: cluster: File %s is optional, but it must exist on"
            " all or no nodes (not found on node1.example.test,"
            " node3.example.test)" % pathutils.RAPI_USERS_FILE) in findings
    assert len(findings) == 5


def test_group_error_codes_and_ignored_codes(ctx):
    ctx.nodes.payload[NODE2] = {constants.NV_TIME: time.time() - 1000}
    result, messages = _VerifyGroup(ctx, error_codes=True)
    assert result is False
    (finding, ) = _Findings(messages)
    severity, code, kind, item, msg = finding[len("  - "):].split(":", 4)
    assert (severity, code, kind, item) == ("ERROR", "ENODETIME", "node",
                                            NODE2)
    assert msg.startswith("Node time diverges by at least")
    result, messages = _VerifyGroup(ctx, error_codes=True,
                                    ignore_errors=["ENODETIME"])
    assert result is True
    assert _Findings(messages)[0].startswith(
        "  - WARNING:ENODETIME:node:node2.example.test:")


def test_group_offline_node_is_skipped(ctx):
    node = ctx.Node(NODE3)
    node.offline = True
    ctx.cfg.Update(node)
    result, messages = _VerifyGroup(ctx, verbose=True)
    assert result is True
    assert _Findings(messages) == ["  - NOTICE: 1 offline node(s) found."]
    assert "* Skipping offline node node3.example.test" in messages
    assert NODE3 not in ctx.nodes.contacted


def test_group_simulated_errors(ctx):
    result, messages = _VerifyGroup(ctx, debug_simulate_errors=True)
    assert result is False
    assert any("ERROR: node node2.example.test: while contacting node: None"
               in msg for msg in messages)


def _MoveToNewGroup(ctx, name, node_name):
    group = objects.NodeGroup(name=name)
    ctx.cfg.AddNodeGroup(group)
    ctx.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL])
    try:
        ctx.glm.add(locking.LEVEL_NODEGROUP, group.uuid)
    finally:
        ctx.glm.release(locking.LEVEL_CLUSTER)
    if node_name is not None:
        node = ctx.Node(node_name)
        node.group = group.uuid
        ctx.cfg.Update(node)
    return group.uuid


def test_group_without_master_compares_with_master(ctx):
    _MoveToNewGroup(ctx, "other", NODE2)
    ctx.nodes.content[(NODE2, pathutils.CLUSTER_CONF_FILE)] = "tampered"
    result, messages = _VerifyGroup(ctx, group="other")
    assert result is False
    assert "* Gathering information about the master node" in messages
    assert sorted(ctx.nodes.contacted) == [MASTER, NODE2]
    (finding, ) = _Findings(messages)
    assert "config.data found with 2 different checksums" in finding


def test_empty_group(ctx):
    _MoveToNewGroup(ctx, "empty", None)
    result, messages = _VerifyGroup(ctx, group="empty")
    assert result is True
    assert messages == ["* Verifying group 'empty'",
                        "* Empty node group, skipping verification"]


def test_verify_config(ctx, tmp_path, monkeypatch):
    monkeypatch.setattr(pathutils, "NODED_CERT_FILE", _Cert(tmp_path, 365))
    monkeypatch.setattr(pathutils, "RAPI_CERT_FILE", _Cert(tmp_path, 20))
    messages = []
    assert ctx.Run(opcodes.OpClusterVerifyConfig(), messages) is True
    assert messages[0] == "* Verifying cluster config"
    assert _Findings(messages) == [
        "  - WARNING: cluster: While verifying %s: Certificate expires in"
        " about 19 days" % pathutils.RAPI_CERT_FILE]
    ctx.SetPoolSize(3)
    messages = []
    assert ctx.Run(opcodes.OpClusterVerifyConfig(error_codes=True),
                   messages) is False
    assert "  - ERROR:ECLUSTERCFG:cluster:None:Not enough master candidates:" \
        " actual 2, target 3" in messages


def test_unknown_ignored_code_fails_the_job(ctx):
    with pytest.raises(errors.OpPrereqError, match="EBOGUS"):
        _VerifyGroup(ctx, ignore_errors=["EBOGUS"])


def test_n_plus_one_check_needs_hvinfo_and_can_be_skipped(ctx):
    ctx.nodes.payload[NODE2] = {constants.NV_HVINFO: None}
    result, messages = _VerifyGroup(ctx, error_codes=True)
    assert result is False
    assert _Findings(messages) == [
        "  - ERROR:ENODEHV:node:%s:rpc call to node failed (hvinfo)" % NODE2]
    assert "* Verifying N+1 Memory redundancy" in messages
    result, messages = _VerifyGroup(
        ctx, skip_checks=[constants.VERIFY_NPLUSONE_MEM])
    assert result is True
    assert "* Verifying N+1 Memory redundancy" not in messages
    with pytest.raises(errors.OpPrereqError, match="bogus"):
        _VerifyGroup(ctx, skip_checks=["bogus"])


def test_verify_submits_config_and_group_jobs(ctx):
    other = _MoveToNewGroup(ctx, "other", NODE3)
    default = ctx.cfg.LookupNodeGroup("default")
    op = opcodes.OpClusterVerify(error_codes=True, verbose=True,
                                 ignore_errors=["ENODETIME"])
    op.Validate(True)
    lu = cluster_verify.LUClusterVerify(None, op, ctx)
    lu.ExpandNames()
    jobs = lu.Exec(None).jobs
    assert [[op.OP_ID for op in job] for job in jobs] == [
        ["OP_CLUSTER_VERIFY_CONFIG"], ["OP_CLUSTER_VERIFY_GROUP"],
        ["OP_CLUSTER_VERIFY_GROUP"]]
    assert sorted(job[0].group_name for job in jobs[1:]) == \
        sorted([default, other])
    assert [job[0].depends for job in jobs[1:]] == [[[-1, []]], [[-2, []]]]
    for (sub_op, ) in jobs:
        sub_op.Validate(True)
        assert (sub_op.error_codes, sub_op.verbose, sub_op.ignore_errors) \
            == (True, True, ["ENODETIME"])
    op = opcodes.OpClusterVerify(group_name="other")
    op.Validate(True)
    lu = cluster_verify.LUClusterVerify(None, op, ctx)
    (job, ) = lu.Exec(None).jobs
    (sub_op, ) = job
    sub_op.Validate(True)
    assert (sub_op.OP_ID, sub_op.group_name) == ("OP_CLUSTER_VERIFY_GROUP",
                                                 "other")
    assert sub_op.depends is None


# gnt-cluster verify on a real cluster ----------------------------------------

def AddNodes(cluster, names):
    """Add nodes with their join keys (gnt-node add); returns them."""
    return [cluster.AddNode(name) for name in names]


def StartThreeNodeCluster():
    """Master, node2 (master candidate), node3 (regular; pool size 2)."""
    cluster = VirtualCluster()
    try:
        cluster.Init("--candidate-pool-size=2")
        AddNodes(cluster, [NODE2, NODE3])
    except BaseException:
        cluster.Cleanup()
        raise
    return cluster


@pytest.fixture(scope="module")
def vcluster():
    cluster = StartThreeNodeCluster()
    try:
        yield cluster
    finally:
        cluster.Cleanup()


_LOG_LINE_RE = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} (.*)$")


def _Verify(cluster, *args):
    result = cluster.Run("gnt-cluster", "verify", *args, check=False)
    messages = []
    for line in result.stdout.splitlines():
        match = _LOG_LINE_RE.match(line)
        if match:
            messages.append(match.group(1))
    return result, messages


class _Tampered:
    """Change a node's file for the duration of a ``with`` block."""

    def __init__(self, node, path, extra):
        self.path = node.NodePath(path)
        self.extra = extra

    def __enter__(self):
        with open(self.path, "rb") as fobj:
            self.original = fobj.read()
        self.mode = os.stat(self.path).st_mode & 0o7777
        os.chmod(self.path, 0o600)
        with open(self.path, "ab") as fobj:
            fobj.write(self.extra)

    def __exit__(self, *_):
        with open(self.path, "wb") as fobj:
            fobj.write(self.original)
        os.chmod(self.path, self.mode)


def test_healthy_cluster(vcluster):
    result, messages = _Verify(vcluster)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _Findings(messages) == [], result.stdout
    assert result.stdout.startswith("Submitted jobs ")
    for step in ("* Verifying cluster config",
                 "* Verifying cluster certificate files",
                 "* Verifying group 'default'",
                 "* Gathering data (3 nodes)",
                 "* Verifying configuration file consistency",
                 "* Verifying node status"):
        assert step in messages
    result, messages = _Verify(vcluster, "--node-group", "default")
    assert result.returncode == 0
    assert "* Verifying cluster config" not in messages
    assert re.match(r"^Submitted jobs \d+\n", result.stdout)
    # Accepted as in Ganeti (no SSH keys here to find clutter in)
    result, messages = _Verify(vcluster, "--verify-ssh-clutter", "-g",
                               "default")
    assert result.returncode == 0 and _Findings(messages) == []
    result, _ = _Verify(vcluster, "-g", "nosuch")
    assert result.returncode == 1
    assert "Node group 'nosuch' not found" in result.stderr
    assert "1 job(s) failed while verifying the cluster." in result.stdout


def test_tampered_ssconf_machine_readable(vcluster):
    node3 = vcluster.nodes[NODE3]
    ssconf_file = pathutils.SsconfFileName("node_list")
    with _Tampered(node3, ssconf_file, b"\nnode9.example.test"):
        result, messages = _Verify(vcluster, "--error-codes")
    assert result.returncode == 1
    findings = [msg[len("  - "):].split(":", 4)
                for msg in _Findings(messages)]
    assert findings == [[
        "ERROR", "ECLUSTERFILECHECK", "cluster", "None",
        "File %s differs from the cluster configuration on node(s) %s" %
        (ssconf_file, NODE3)]], result.stdout


def test_tampered_config_on_candidate(vcluster):
    node2 = vcluster.nodes[NODE2]
    with _Tampered(node2, pathutils.CLUSTER_CONF_FILE, b" "):
        result, messages = _Verify(vcluster)
    assert result.returncode == 1
    (finding, ) = _Findings(messages)
    match = re.match(r"^  - ERROR: cluster: File %s found with 2 different"
                     r" checksums \(variant 1 on (\S+); variant 2 on (\S+)\)$"
                     % re.escape(pathutils.CLUSTER_CONF_FILE), finding)
    assert match, finding
    assert sorted(match.groups()) == [MASTER, NODE2]


def test_unreachable_node(vcluster):
    node3 = vcluster.nodes[NODE3]
    node3.KillDaemon("ganeti-noded", signal.SIGKILL)
    try:
        result, messages = _Verify(vcluster)
        assert result.returncode == 1
        findings = _Findings(messages)
        assert len(findings) == 2, findings
        assert "  - ERROR: node node3.example.test: Node did not return file" \
            " checksum data" in findings
        assert findings[1].startswith("  - ERROR: node node3.example.test:"
                                      " while contacting node: ")
        result, messages = _Verify(vcluster, "--ignore-errors=ENODERPC",
                                   "-I", "ENODEFILECHECK")
        assert result.returncode == 0, result.stdout
        assert [msg[:38] for msg in _Findings(messages)] == \
            ["  - WARNING: node node3.example.test: "] * 2
    finally:
        node3.StartNoded()
    result, _ = _Verify(vcluster)
    assert result.returncode == 0, result.stdout


def test_redist_conf_repairs_damaged_copies(vcluster):
    node2, node3 = vcluster.nodes[NODE2], vcluster.nodes[NODE3]
    for node, path in ((node3, pathutils.SsconfFileName("node_list")),
                       (node2, pathutils.CLUSTER_CONF_FILE),
                       (node3, pathutils.RAPI_CERT_FILE)):
        with open(node.NodePath(path), "ab") as fobj:
            fobj.write(b"\n# damaged\n")
    result, _ = _Verify(vcluster)
    assert result.returncode == 1
    vcluster.Run("gnt-cluster", "redist-conf")
    result, messages = _Verify(vcluster)
    assert result.returncode == 0, _Findings(messages)
