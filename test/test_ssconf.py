"""Tests for ganeti.ssconf: the ssconf files and the master check."""

import os
import stat

import pytest

from ganeti import config, constants, errors, netutils, objects, ssconf


@pytest.fixture
def store(tmp_path):
    return ssconf.SimpleStore(root=str(tmp_path))


def _ConfigValues(tmp_path):
    path = str(tmp_path / "config.data")
    config.InitConfig(constants.CONFIG_VERSION,
                      objects.Cluster(cluster_name="cluster.example.com",
                                      master_ip="192.0.2.1",
                                      uid_pool=[(100, 200)]),
                      objects.Node(name="node1.example.com",
                                   primary_ip="192.0.2.10"),
                      cfg_file=path)
    cfg = config.ConfigWriter(path, accept_foreign=True)
    cfg.AddNode(objects.Node(name="node2.example.com",
                             primary_ip="192.0.2.11",
                             secondary_ip="198.51.100.11",
                             group=cfg.LookupNodeGroup(None), offline=True,
                             vm_capable=False))
    return cfg.GetSsconfValues()


def test_round_trip_with_config_values(store, tmp_path):
    values = _ConfigValues(tmp_path)
    store.WriteFiles(values)
    assert store.GetClusterName() == "cluster.example.com"
    assert store.GetMasterNode() == "node1.example.com"
    assert store.GetMasterIP() == "192.0.2.1"
    assert store.GetMasterNetdev() == constants.DEFAULT_MASTER_NETDEV
    assert store.GetMasterNetmask() == 32
    assert store.GetNodeList() == ["node1.example.com", "node2.example.com"]
    assert store.GetOnlineNodeList() == ["node1.example.com"]
    assert store.GetOfflineNodeList() == ["node2.example.com"]
    assert store.GetMasterCandidates() == ["node1.example.com"]
    assert store.GetMasterCandidatesIPList() == ["192.0.2.10"]
    assert store.GetNodePrimaryIPList() == [
        "node1.example.com 192.0.2.10", "node2.example.com 192.0.2.11"]
    assert store.GetNodeSecondaryIPList() == [
        "node1.example.com 192.0.2.10", "node2.example.com 198.51.100.11"]
    assert store.GetNodesVmCapable() == {"node1.example.com": True,
                                         "node2.example.com": False}
    assert store.GetInstanceList() == []
    assert store.GetClusterTags() == []
    assert store.GetHypervisorList() == ["fake"]
    assert store.GetReleaseVersion() == constants.RELEASE_VERSION
    assert store.GetMaintainNodeHealth() is False
    assert store.GetEnabledUserShutdown() is False
    assert store.GetUidPool() == [(100, 200)]
    assert store.GetPrimaryIPFamily() == constants.IP4_FAMILY
    assert len(store.GetNodegroupList()) == 1
    assert store.GetNodegroupList()[0].endswith(" default")
    assert store.GetNetworkList() == []
    assert store.GetFileStorageDir()
    assert store.GetSharedFileStorageDir()
    assert store.ReadAll() == values


def test_files_and_modes(store, tmp_path):
    store.WriteFiles({ssconf.SS_CLUSTER_NAME: "c1", ssconf.SS_NODE_LIST: ""})
    path = tmp_path / "ssconf_cluster_name"
    assert path.read_text() == "c1"
    assert stat.S_IMODE(os.stat(path).st_mode) == ssconf.SS_FILE_PERMS
    # read-only files are still replaced atomically
    store.WriteFiles({ssconf.SS_CLUSTER_NAME: "c2\n"})
    assert store.GetClusterName() == "c2"
    assert store.GetNodeList() == []
    assert not [name for name in os.listdir(tmp_path)
                if name.startswith(".")]


def test_unchanged_files_not_rewritten(store, tmp_path):
    """Only keys whose file differs (content or mode) are written again."""
    store.WriteFiles({ssconf.SS_CLUSTER_NAME: "c1", ssconf.SS_NODE_LIST: "a"})
    name, nodes = (tmp_path / "ssconf_cluster_name",
                   tmp_path / "ssconf_node_list")
    before = os.stat(name).st_ino, os.stat(nodes).st_ino
    store.WriteFiles({ssconf.SS_CLUSTER_NAME: "c1", ssconf.SS_NODE_LIST: "b"})
    assert os.stat(name).st_ino == before[0]
    assert os.stat(nodes).st_ino != before[1]
    assert store.GetNodeList() == ["b"]
    os.chmod(name, 0o666)
    store.WriteFiles({ssconf.SS_CLUSTER_NAME: "c1"})
    assert stat.S_IMODE(os.stat(name).st_mode) == ssconf.SS_FILE_PERMS
    name.write_text("c1 and more")
    os.chmod(name, ssconf.SS_FILE_PERMS)
    store.WriteFiles({ssconf.SS_CLUSTER_NAME: "c1"})
    assert store.GetClusterName() == "c1"


def test_unknown_keys_refused(store, tmp_path):
    with pytest.raises(errors.ProgrammerError, match="bogus"):
        store.WriteFiles({ssconf.SS_CLUSTER_NAME: "c1", "bogus": "x"})
    with pytest.raises(errors.ProgrammerError):
        store.WriteFiles({ssconf.SS_MASTER_NETMASK: 32})
    assert os.listdir(tmp_path) == []
    with pytest.raises(errors.ProgrammerError):
        store.KeyToFilename("../config.data")
    assert store.KeyToFilename("hvparams_fake").endswith(
        "ssconf_hvparams_fake")


def test_missing_and_bad_values(store, tmp_path):
    with pytest.raises(errors.ConfigurationError, match="ssconf_master_node"):
        store.GetMasterNode()
    store.WriteFiles({ssconf.SS_MAINTAIN_NODE_HEALTH: "yes",
                      ssconf.SS_MASTER_NETMASK: "x",
                      ssconf.SS_UID_POOL: "1-a"})
    with pytest.raises(errors.ConfigurationError):
        store.GetMaintainNodeHealth()
    with pytest.raises(errors.ConfigurationError):
        store.GetMasterNetmask()
    with pytest.raises(errors.ConfigurationError):
        store.GetUidPool()
    (tmp_path / "ssconf_cluster_name").write_text("x" * (200 * 1024))
    with pytest.raises(errors.ConfigurationError, match="larger"):
        store.GetClusterName()


def test_uid_pool_format():
    pool = [(1000, 1999), (3000, 3000)]
    text = ssconf.FormatUidPool(pool)
    assert text == "1000-1999\n3000"
    assert ssconf.ParseUidPool(text) == pool
    assert ssconf.FormatUidPool([]) == ""


def test_check_master(store, capsys):
    with pytest.raises(SystemExit) as info:
        ssconf.CheckMaster(ss=store)
    assert info.value.code == constants.EXIT_NODESETUP_ERROR
    store.WriteFiles({ssconf.SS_MASTER_NODE: netutils.GetMyName()})
    ssconf.CheckMaster(ss=store)
    assert ssconf.GetMasterAndMyself(store) == (netutils.GetMyName(),
                                                netutils.GetMyName())
    store.WriteFiles({ssconf.SS_MASTER_NODE: "other.example.com"})
    with pytest.raises(SystemExit) as info:
        ssconf.CheckMaster(debug=True, ss=store)
    assert info.value.code == constants.EXIT_NOTMASTER
    assert "other.example.com" in capsys.readouterr().err
