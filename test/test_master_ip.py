"""The master IP moves with the master role (nodes in network namespaces).

This is the one test that needs root: each node gets its own network
namespace, so the master IP is really added to and removed from the
nodes' eth0. Where namespaces can't be created, it is skipped.
"""

import pytest

from testutils_cluster import NetnsClusterOrSkip

pytestmark = [pytest.mark.integration, pytest.mark.netns]


@pytest.fixture
def cluster():
    cluster = NetnsClusterOrSkip()
    try:
        cluster.Init()
        cluster.AddNode("node2.example.test")
        yield cluster
    finally:
        cluster.Cleanup()


def test_master_ip_follows_the_master(cluster):
    node2 = cluster.nodes["node2.example.test"]
    assert cluster.cluster_ip in cluster.Addresses(cluster)
    assert cluster.cluster_ip not in cluster.Addresses(node2)
    node2.Run("gnt-cluster", "master-failover")
    assert cluster.cluster_ip in cluster.Addresses(node2)
    assert cluster.cluster_ip not in cluster.Addresses(cluster)
    node2.Run("gnt-cluster", "deactivate-master-ip", "--yes")
    assert cluster.cluster_ip not in cluster.Addresses(node2)
    node2.Run("gnt-cluster", "activate-master-ip")
    assert cluster.cluster_ip in cluster.Addresses(node2)
