"""A node outside any cluster: noded's join mode and bootstrap.JoinNode.

Real noded processes on loopback addresses; the joining side runs
bootstrap.JoinNode with a master's certificate and ssconf.
"""

import os
import shutil
import sys

import pytest

from ganeti import pathutils, ssconf
from ganeti.rpc import client as rpc_client
from ganeti.utils import io, x509

import testutils_node

pytestmark = pytest.mark.integration


@pytest.fixture
def joiner():
    """A cluster of one certified node plus a node without certificate."""
    with testutils_node.TestCluster(1) as test_cluster:
        member = test_cluster.nodes[0]
        newcomer = test_cluster.AddNode("newnode", with_cert=False)
        result = newcomer.StartNoded()
        yield test_cluster, member, newcomer, result


def _JoinKey(node) -> str:
    return io.ReadFile(node.Path(pathutils.NODED_JOIN_KEY_FILE)).strip()


def _Join(test_cluster, member, node, join_key):
    """Run JoinNode as the master would, in the member's environment."""
    for path in (pathutils.RAPI_CERT_FILE,
                 pathutils.CLUSTER_DOMAIN_SECRET_FILE):
        shutil.copy(test_cluster.cert_file, member.Path(path))
    code = ("import sys; from ganeti import bootstrap, errors\n"
            "try:\n"
            "    bootstrap.JoinNode(%r, %r, %r, ssconf_values={"
            "'cluster_name': 'joined.example.test'}, port=%d, timeout=15)\n"
            "except errors.GenericError as err:\n"
            "    sys.exit('%%s: %%s' %% (type(err).__name__, err))\n" %
            (node.name, node.ip, join_key, test_cluster.port))
    return member.Run([sys.executable, "-c", code])


def test_join_mode_prints_key_and_serves_only_the_join(joiner):
    test_cluster, _, newcomer, result = joiner
    key = _JoinKey(newcomer)
    assert "gnt-node add --join-key=%s newnode" % key in result.stderr
    assert newcomer.NodedPid()
    assert not os.path.exists(newcomer.Path(pathutils.NODED_CERT_FILE))
    # With the cluster certificate nothing but the join is served
    runner = test_cluster.Runner()
    res = runner.call_version(["newnode"])["newnode"]
    assert res.fail_msg
    pin = key.rpartition(":")[0]
    client = rpc_client.RpcClient(None, pinned_key=pin)
    res = client.Call("version", [("n", "newnode", newcomer.ip, False)],
                      test_cluster.port, b"[]", 10)["n"]
    client.close()
    assert "403" in res.fail_msg and "only joining" in res.fail_msg


def test_join_with_wrong_pin_or_secret_is_refused(joiner):
    test_cluster, member, newcomer, _ = joiner
    key = _JoinKey(newcomer)
    pin, _, secret = key.rpartition(":")
    other_pin = x509.GetPublicKeyPin(io.ReadFile(test_cluster.cert_file))
    result = _Join(test_cluster, member, newcomer,
                   "%s:%s" % (other_pin, secret))
    assert "OpExecError" in result.stderr
    assert "pinned public key" in result.stderr
    result = _Join(test_cluster, member, newcomer, "%s:%s" % (pin, "0" * 32))
    assert "Wrong join secret" in result.stderr
    result = _Join(test_cluster, member, newcomer, "nocolon")
    assert "OpPrereqError" in result.stderr
    assert "Invalid join key 'nocolon'" in result.stderr
    assert not os.path.exists(newcomer.Path(pathutils.NODED_CERT_FILE))
    assert _JoinKey(newcomer) == key


def test_join_makes_the_node_a_member(joiner):
    test_cluster, member, newcomer, _ = joiner
    pid = newcomer.NodedPid()
    result = _Join(test_cluster, member, newcomer, _JoinKey(newcomer))
    assert result.returncode == 0, result.stderr
    # Same process, now serving with the cluster certificate
    assert newcomer.NodedPid() == pid
    res = test_cluster.Runner().call_version(["newnode"])["newnode"]
    assert not res.fail_msg
    assert io.ReadFile(newcomer.Path(pathutils.NODED_CERT_FILE)) == \
        io.ReadFile(test_cluster.cert_file)
    assert not os.path.exists(newcomer.Path(pathutils.NODED_JOIN_KEY_FILE))
    assert ssconf.SimpleStore(newcomer.Path(pathutils.DATA_DIR)) \
        .GetClusterName() == "joined.example.test"
