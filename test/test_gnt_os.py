"""gnt-os on a real two-node virtual cluster.

Both nodes have the shipped tinyimage OS in their search path (below
their roots); "halfos" exists only on the master and "broken" (no
scripts) only on node2, so diagnose sees a partially valid and an invalid
OS. Tests that change the cluster's OS settings undo them.
"""

import os
import shutil

import pytest

from ganeti import constants, pathutils

from testutils_cluster import TOP, VirtualCluster

pytestmark = pytest.mark.integration

NODE2 = "node2.example.test"
SHIPPED_OS = os.path.join(TOP, "os", "tinyimage")


def _SearchDir(node):
    path = node.NodePath(pathutils.OS_SEARCH_PATH[0])
    os.makedirs(path, exist_ok=True)
    return path


def _MakeHalfOS(path):
    """A valid OS with variants (a copy of tinyimage plus variants.list)."""
    shutil.copytree(SHIPPED_OS, path, symlinks=True)
    with open(os.path.join(path, constants.OS_VARIANTS_FILE), "w",
              encoding="ascii") as fobj:
        fobj.write("small\nbig\n")


@pytest.fixture(scope="module")
def vcluster():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        node2 = cluster.AddNode(NODE2)
        for node in (cluster, node2):
            os.symlink(SHIPPED_OS, os.path.join(_SearchDir(node),
                                                "tinyimage"))
        _MakeHalfOS(os.path.join(_SearchDir(cluster), "halfos"))
        broken = os.path.join(_SearchDir(node2), "broken")
        os.makedirs(broken)
        with open(os.path.join(broken, constants.OS_API_FILE), "w",
                  encoding="ascii") as fobj:
            fobj.write("20\n")
        yield cluster
    finally:
        cluster.Cleanup()


def _Fail(cluster, *args):
    result = cluster.Run(*args, check=False)
    assert result.returncode != 0, (args, result.stdout)
    return result


def test_list_shows_valid_visible_oses(vcluster):
    result = vcluster.Run("gnt-os", "list")
    assert result.stdout.splitlines() == ["Name", "tinyimage"]
    result = vcluster.Run("gnt-os", "list", "--no-headers")
    assert result.stdout.splitlines() == ["tinyimage"]


def test_diagnose_shows_per_node_status(vcluster):
    result = _Fail(vcluster, "gnt-os", "diagnose")
    assert result.returncode == 1
    blocks = {block.splitlines()[0]: block.splitlines()[1:]
              for block in result.stdout.strip().split("\n\n")}
    assert blocks["OS: tinyimage [global status: valid]"] == [
        "  Node: node1.example.test, status: valid (path:"
        " /srv/ganeti/os/tinyimage) [API versions: 20]",
        "  Node: node2.example.test, status: valid (path:"
        " /srv/ganeti/os/tinyimage) [API versions: 20]",
    ]
    assert blocks["OS: halfos [global status: partial valid]"] == [
        "  Node: node1.example.test, status: valid (path:"
        " /srv/ganeti/os/halfos) [API versions: 20] [variants: small, big]",
        "  Node: node2.example.test, status: OS not found",
    ]
    assert blocks["OS: broken [global status: invalid]"] == [
        "  Node: node1.example.test, status: OS not found",
        "  Node: node2.example.test, status: invalid - Script 'create' not"
        " found in OS dir /srv/ganeti/os/broken (path:"
        " /srv/ganeti/os/broken)",
    ]


def test_info_shows_parameters(vcluster):
    result = vcluster.Run("gnt-os", "info", "tinyimage")
    assert result.stdout.splitlines() == [
        "tinyimage:",
        "  - valid: True",
        "  - hidden: False",
        "  - blacklisted: False",
        "  - API versions:",
        "    - 20",
        "  - variants:",
        "  - parameters:",
        "    - hostname: Host name written to /etc/hostname (default: the"
        " instance name)",
        "    - message: Line the init script prints on the console when the"
        " guest boots",
        "  - trusted: True",
        "  - hypervisor parameters:",
        "    (none)",
        "  - OS parameters:",
        "    (none)",
        "",
    ]
    assert vcluster.Run("gnt-os", "show", "tinyimage").stdout == \
        result.stdout
    missing = _Fail(vcluster, "gnt-os", "info", "nosuchos")
    assert "OS(es) not found: nosuchos" in missing.stderr


def test_modify_parameters(vcluster):
    vcluster.Run("gnt-os", "modify", "-O", "hostname=web1,message=hi",
                 "tinyimage")
    try:
        info = vcluster.Run("gnt-os", "info", "tinyimage").stdout
        assert "  - OS parameters:\n    hostname: web1\n    message: hi\n" \
            in info
        config = vcluster.Luxi().QueryClusterInfo()
        assert config["osparams"] == {"tinyimage": {"hostname": "web1",
                                                    "message": "hi"}}
        # The nodes' verify scripts check the values
        bad = _Fail(vcluster, "gnt-os", "modify", "-O", "hostname=bad_name!",
                    "tinyimage")
        assert "invalid value 'bad_name!' for parameter hostname" in \
            bad.stderr
        assert vcluster.Luxi().QueryClusterInfo()["osparams"][
            "tinyimage"]["hostname"] == "web1"
        unknown = _Fail(vcluster, "gnt-os", "modify", "-O", "nope=1",
                        "tinyimage")
        assert "not supported by the OS tinyimage: nope" in unknown.stderr
    finally:
        vcluster.Run("gnt-os", "modify", "-O", "hostname=default,message="
                     "default", "tinyimage")
    config = vcluster.Luxi().QueryClusterInfo()
    assert config["osparams"] == {} and config["os_hvp"] == {}


def test_modify_hypervisor_parameters_checked(vcluster):
    unknown_hv = _Fail(vcluster, "gnt-os", "modify", "-H", "nohv:a=1",
                       "tinyimage")
    assert "nohv" in unknown_hv.stderr
    unknown = _Fail(vcluster, "gnt-os", "modify", "-H", "fake:nosuch=1",
                    "tinyimage")
    assert "nosuch" in unknown.stderr
    cluster_only = _Fail(vcluster, "gnt-os", "modify", "-H",
                         "fake:migration_mode=live", "tinyimage")
    assert "migration_mode can only be set cluster-wide, not for OS" \
        " tinyimage" in cluster_only.stderr
    assert vcluster.Luxi().QueryClusterInfo()["os_hvp"] == {}


def test_modify_without_changes_fails(vcluster):
    result = _Fail(vcluster, "gnt-os", "modify", "tinyimage")
    assert "At least one of OS parameters or hypervisor parameters" in \
        result.stderr


def test_hidden_and_blacklisted(vcluster):
    vcluster.Run("gnt-os", "modify", "--hidden", "yes", "tinyimage")
    try:
        assert vcluster.Run("gnt-os", "list",
                            "--no-headers").stdout.split() == []
        info = vcluster.Run("gnt-os", "info", "tinyimage").stdout
        assert "  - hidden: True\n" in info
        diagnose = _Fail(vcluster, "gnt-os", "diagnose").stdout
        assert "OS: tinyimage [global status: valid] [hidden]\n" in diagnose
        vcluster.Run("gnt-os", "modify", "--blacklisted=yes", "tinyimage")
        diagnose = _Fail(vcluster, "gnt-os", "diagnose").stdout
        assert "OS: tinyimage [global status: valid] [hidden]" \
            " [blacklisted]\n" in diagnose
        config = vcluster.Luxi().QueryClusterInfo()
        assert config["hidden_os"] == ["tinyimage"]
        assert config["blacklisted_os"] == ["tinyimage"]
    finally:
        vcluster.Run("gnt-os", "modify", "--hidden=no", "--blacklisted=no",
                     "tinyimage")
    assert vcluster.Run("gnt-os", "list", "--no-headers").stdout.split() == \
        ["tinyimage"]
    config = vcluster.Luxi().QueryClusterInfo()
    assert config["hidden_os"] == [] and config["blacklisted_os"] == []


def test_os_query_resource(vcluster):
    client = vcluster.Luxi()
    result = client.Query(constants.QR_OS, ["name", "valid", "node_status"],
                          None)
    rows = {row[0][1]: row for row in result["data"]}
    assert set(rows) == {"tinyimage", "halfos", "broken"}
    assert rows["tinyimage"][1] == [constants.RS_NORMAL, True]
    assert rows["halfos"][1] == [constants.RS_NORMAL, False]
    assert rows["halfos"][2][1][NODE2] == []
    fields = client.QueryFields(constants.QR_OS, None)["fields"]
    assert {field["name"] for field in fields} == {
        "name", "valid", "hidden", "blacklisted", "variants",
        "api_versions", "parameters", "node_status", "os_hvp", "osparams",
        "trusted"}


def test_modify_os_missing_on_some_nodes(vcluster):
    """Nodes lacking the OS skip the validation; the others do it."""
    result = vcluster.Run("gnt-os", "modify", "-O", "hostname=h1", "halfos")
    try:
        assert "OS halfos not found on node node2.example.test, validation" \
            " skipped" in result.stdout + result.stderr
        assert vcluster.Luxi().QueryClusterInfo()["osparams"] == {
            "halfos": {"hostname": "h1"}}
        bad = _Fail(vcluster, "gnt-os", "modify", "-O", "hostname=-x",
                    "halfos")
        assert "node1.example.test" in bad.stderr
        # Per-variant defaults are checked with the base ones filled in
        vcluster.Run("gnt-os", "modify", "-O", "message=m", "halfos+small")
        assert vcluster.Luxi().QueryClusterInfo()["osparams"] == {
            "halfos": {"hostname": "h1"}, "halfos+small": {"message": "m"}}
        unknown = _Fail(vcluster, "gnt-os", "modify", "-O", "message=m",
                        "halfos+huge")
        assert "doesn't support variant 'huge'" in unknown.stderr
    finally:
        vcluster.Run("gnt-os", "modify", "-O", "hostname=default", "halfos")
        vcluster.Run("gnt-os", "modify", "-O", "message=default",
                     "halfos+small")
    assert vcluster.Luxi().QueryClusterInfo()["osparams"] == {}
