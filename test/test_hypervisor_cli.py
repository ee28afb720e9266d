"""Hypervisor and backend parameters through the real CLI on a cluster."""

import pytest

from testutils_cluster import VirtualCluster

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vcluster():
    cluster = VirtualCluster()
    try:
        cluster.Init("-H", "fake:migration_mode=live", "-B", "maxmem=256")
        yield cluster
    finally:
        cluster.Cleanup()


def _Info(vcluster):
    return vcluster.Luxi().QueryClusterInfo()


def test_init_filled_defaults(vcluster):
    info = _Info(vcluster)
    assert info["hvparams"] == {"fake": {"migration_mode": "live"}}
    assert info["beparams"]["default"]["maxmem"] == 256
    assert info["default_hypervisor"] == "fake"


def test_modify_hvparams_and_reset(vcluster):
    vcluster.Run("gnt-cluster", "modify", "-H", "fake:migration_mode=non-live")
    assert _Info(vcluster)["hvparams"]["fake"]["migration_mode"] == \
        "non-live"
    # Another change leaves the customised value alone
    vcluster.Run("gnt-cluster", "modify", "-B", "vcpus=2")
    assert _Info(vcluster)["hvparams"]["fake"]["migration_mode"] == \
        "non-live"
    vcluster.Run("gnt-cluster", "modify", "-H", "fake:migration_mode=default",
                 "-B", "vcpus=default")
    info = _Info(vcluster)
    assert info["hvparams"]["fake"]["migration_mode"] == "live"
    assert info["beparams"]["default"]["vcpus"] == 1
    assert "migration_mode: live" in vcluster.Run("gnt-cluster",
                                                  "info").stdout


def test_modify_refuses_bad_parameters(vcluster):
    result = vcluster.Run("gnt-cluster", "modify", "-H", "fake:bogus=1",
                          check=False)
    assert result.returncode == 1 and "'bogus'" in result.stderr
    result = vcluster.Run("gnt-cluster", "modify", "-H",
                          "fake:migration_mode=warp", check=False)
    assert result.returncode == 1 and "migration_mode" in result.stderr
    result = vcluster.Run("gnt-cluster", "modify", "-H", "xen-pvm:acpi=1",
                          check=False)
    assert result.returncode != 0 and "xen-pvm" in result.stderr
    result = vcluster.Run("gnt-cluster", "modify", "--default-hypervisor",
                          "kvm", check=False)
    assert result.returncode == 1 and "kvm" in result.stderr
    assert _Info(vcluster)["hvparams"] == {"fake": {"migration_mode":
                                                    "live"}}


def test_modify_ipolicy(vcluster):
    vcluster.Run("gnt-cluster", "modify", "--ipolicy-vcpu-ratio", "2.5",
                 "--ipolicy-disk-templates", "diskless,file",
                 "--ipolicy-std-specs", "memory-size=256")
    ipolicy = _Info(vcluster)["ipolicy"]
    assert ipolicy["vcpu-ratio"] == 2.5
    assert ipolicy["disk-templates"] == ["diskless", "file"]
    assert ipolicy["std"]["memory-size"] == 256
    assert ipolicy["std"]["cpu-count"] == 1
    vcluster.Run("gnt-cluster", "modify", "--ipolicy-bounds-specs",
                 "min:memory-size=64,cpu-count=1,disk-count=1,disk-size=512,"
                 "nic-count=1,spindle-use=1/max:memory-size=4096,cpu-count=4,"
                 "disk-count=4,disk-size=10240,nic-count=4,spindle-use=4")
    bounds = _Info(vcluster)["ipolicy"]["minmax"]
    assert bounds[0]["max"]["memory-size"] == 4096
    result = vcluster.Run("gnt-cluster", "modify", "--ipolicy-std-specs",
                          "memory-size=100000", check=False)
    assert result.returncode == 1 and "memory-size" in result.stderr
