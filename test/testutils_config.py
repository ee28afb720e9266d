"""A real, minimal cluster configuration in a temporary directory."""

import os

from ganeti import config, constants, objects


def MakeConfig(directory: str, node_name: str = "node1.example.test",
               node_ip: str = "127.0.0.1") -> config.ConfigWriter:
    """Write a one-node config.data in ``directory`` and open it."""
    cfg_file = os.path.join(directory, "config.data")
    cluster = objects.Cluster(cluster_name="cluster.example.test",
                              master_ip="127.0.0.100", master_netdev="lo")
    node = objects.Node(name=node_name, primary_ip=node_ip,
                        secondary_ip=node_ip)
    config.InitConfig(constants.CONFIG_VERSION, cluster, node,
                      cfg_file=cfg_file)
    return config.ConfigWriter(cfg_file=cfg_file, offline=True,
                               accept_foreign=True)
