"""gnt-cluster renew-crypto on a real two-node virtual cluster: the
refusals, and new certificates and secrets on every node with RPC, RAPI and
a queued job working afterwards."""

import http.client
import json
import re
import ssl

import pytest

from ganeti import constants, opcodes, pathutils
from ganeti.utils import x509

from testutils_cluster import VirtualCluster, WaitForJob

pytestmark = pytest.mark.integration

NODE2 = "node2.example.test"


@pytest.fixture(scope="module")
def vcluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        cluster.AddNode(NODE2)
        yield cluster
    finally:
        cluster.Cleanup()


def _Read(node, path):
    with open(node.NodePath(path), encoding="ascii") as fobj:
        return fobj.read()


def _Files(cluster):
    return {name: {path: _Read(node, path) for path in (
        pathutils.NODED_CERT_FILE, pathutils.RAPI_CERT_FILE,
        pathutils.CLUSTER_DOMAIN_SECRET_FILE, pathutils.CONFD_HMAC_KEY)}
        for name, node in cluster.nodes.items()}


def test_refusals(vcluster):
    result = vcluster.Run("gnt-cluster", "renew-crypto", "-f",
                          "--new-rapi-certificate", "--rapi-certificate=x",
                          check=False)
    assert result.returncode == 1
    assert "Only one of the --new-rapi-certificate and --rapi-certificate" \
        " options can be specified at the same time." in result.stderr
    result = vcluster.Run("gnt-cluster", "renew-crypto", "-f",
                          "--new-cluster-domain-secret",
                          "--cluster-domain-secret=x", check=False)
    assert result.returncode == 1
    assert "Only one of the --new-cluster-domain-secret and" \
        " --cluster-domain-secret options" in result.stderr
    result = vcluster.Run("gnt-cluster", "renew-crypto", "-f",
                          "--rapi-certificate=/nonexistent", check=False)
    assert result.returncode == 1
    assert "Unable to load X509 certificate from /nonexistent" \
        in result.stderr


def _RapiInfo(cluster, cafile):
    context = ssl.create_default_context(cafile=cafile)
    context.check_hostname = False
    conn = http.client.HTTPSConnection(
        cluster.node_ip, constants.DEFAULT_RAPI_PORT, context=context,
        timeout=30)
    try:
        conn.request("GET", "/2/info")
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_renew_everything(vcluster, tmp_path):
    before = _Files(vcluster)
    # A job queued behind a running one survives the master's restart
    luxi = vcluster.Luxi()
    running = luxi.SubmitJob([opcodes.OpTestDelay(duration=3)])
    queued = luxi.SubmitJob([opcodes.OpTestDelay(duration=1)])
    result = vcluster.Run("gnt-cluster", "renew-crypto", "-f",
                          "--new-cluster-certificate",
                          "--new-rapi-certificate",
                          "--new-cluster-domain-secret",
                          "--new-confd-hmac-key", timeout=180)
    assert "All requested certificates and keys have been replaced." \
        in result.stdout
    luxi = vcluster.Luxi()
    assert WaitForJob(luxi, running) == constants.JOB_STATUS_SUCCESS
    assert WaitForJob(luxi, queued) == constants.JOB_STATUS_SUCCESS
    after = _Files(vcluster)
    for path in before[vcluster.node]:
        assert after[vcluster.node][path] != before[vcluster.node][path], path
        assert after[NODE2][path] == after[vcluster.node][path], path
    # Node RPC with the new certificate: live fields and verify
    listing = vcluster.Run("gnt-node", "list", "--no-headers",
                           "--separator=|", "-o", "name,mfree").stdout
    rows = dict(line.split("|") for line in listing.splitlines())
    assert set(rows) == {vcluster.node, NODE2}
    assert all(re.match(r"^\d+(\.\d+)?[MGT]?$", value)
               for value in rows.values()), rows
    vcluster.Run("gnt-cluster", "verify")
    # RAPI serves the new certificate
    cafile = tmp_path / "rapi.pem"
    cafile.write_text(after[vcluster.node][pathutils.RAPI_CERT_FILE])
    status, info = _RapiInfo(vcluster, str(cafile))
    assert status == 200 and info["name"] == vcluster.cluster_name
    served = ssl.get_server_certificate(
        (vcluster.node_ip, constants.DEFAULT_RAPI_PORT))
    assert x509.GetCertificateDigest(served) == x509.GetCertificateDigest(
        after[vcluster.node][pathutils.RAPI_CERT_FILE])


def test_rapi_certificate_from_file(vcluster, tmp_path):
    pem = tmp_path / "own.pem"
    x509.GenerateSelfSignedSslCert(str(pem), common_name="own")
    vcluster.Run("gnt-cluster", "renew-crypto", "-f",
                 "--rapi-certificate=%s" % pem, timeout=120)
    for node in vcluster.nodes.values():
        assert _Read(node, pathutils.RAPI_CERT_FILE) == pem.read_text()
    status, _ = _RapiInfo(vcluster, str(pem))
    assert status == 200

