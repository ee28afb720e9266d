"""Disk parameters, node group policies, out-of-band management and the
emergency power-off, through the gnt-* commands on a real two-node
virtual cluster.

The out-of-band program is testutils_instance.OOB_SCRIPT, a small shell
script speaking Ganeti's OOB protocol.
"""

import os
import tempfile

import pytest

from ganeti import pathutils

from testutils_cluster import VirtualCluster
from testutils_instance import (CHECKS, NODE1, NODE2, Config, Fail, Field,
                                InstanceCluster, RemoveInstances,
                                WriteOobProgram)

pytestmark = pytest.mark.integration

SMALL = ("-B", "maxmem=32,minmem=32")


SMALL_SPECS = ("--specs-mem-size", "min=1,max=2000000000,std=64",
               "--specs-cpu-count", "min=1,max=64",
               "--specs-disk-count", "min=0,max=16",
               "--specs-disk-size", "min=1,max=100000000",
               "--specs-nic-count", "min=0,max=8")


@pytest.fixture(scope="module")
def vc():
    # Disk parameters (test_init_disk_parameters) and further cluster
    # settings (test_init_cluster_settings) given at init
    # Small instance policy bounds as Ganeti's --specs-* give them
    with InstanceCluster(*SMALL_SPECS,
                         "-D", "drbd:metavg=initvg,c-plan-ahead=10",
                         "--disk-parameters", "plain:stripes=2",
                         "--uid-pool", "2000,1000-1009", "--no-etc-hosts",
                         "--no-ssh-init", "--user-shutdown", "no",
                         "--compression-tools", "gzip,gzip-fast",
                         "--maintain-node-health", "yes",
                         "--ssh-key-type", "ecdsa", "--ssh-key-bits", "384",
                         "--vg-name", "", "--prealloc-wipe-disks", "no",
                         "--primary-ip-version", "4",
                         nodes=(NODE2, )) as cluster:
        yield cluster


@pytest.fixture
def oob(vc):
    """NODE2 with the test's OOB program; the program's directory."""
    path = tempfile.mkdtemp(prefix="oob", dir=vc.base)
    program = WriteOobProgram(path)
    vc.Run("gnt-node", "modify", "--node-parameters",
           "oob_program=" + program, NODE2)
    try:
        yield path
    finally:
        vc.Run("gnt-node", "modify", "--node-parameters", "-oob_program",
               NODE2)


def _Calls(path):
    with open(os.path.join(path, "calls"), encoding="ascii") as fobj:
        return fobj.read().splitlines()


def _Lines(result):
    return [line.split() for line in result.stdout.splitlines()]


def _ClusterDp(vc, template):
    return Config(vc)["cluster"]["diskparams"][template]


def _Group(vc, name):
    (group, ) = [group for group in Config(vc)["nodegroups"].values()
                 if group["name"] == name]
    return group


# Disk parameters -------------------------------------------------------------

def test_init_disk_parameters(vc):
    """What init's -D gives is kept, per template completed with the
    defaults, and shown by gnt-cluster info."""
    drbd = _ClusterDp(vc, "drbd")
    assert (drbd["metavg"], drbd["c-plan-ahead"]) == ("initvg", 10)
    assert (drbd["resync-rate"], drbd["protocol"]) == (61440, "C")
    assert _ClusterDp(vc, "plain") == {"stripes": 2}
    assert _ClusterDp(vc, "rbd")["pool"] == "rbd"
    info = vc.Run("gnt-cluster", "info").stdout
    assert "    metavg: initvg\n" in info


def test_init_cluster_settings(vc):
    """Ganeti's init options: the uid pool and compression tools are kept,
    --no-etc-hosts and --no-ssh-init recorded (this cluster manages
    neither), user shutdown accepted at its default."""
    cluster = Config(vc)["cluster"]
    assert cluster["uid_pool"] == [[1000, 1009], [2000, 2000]]
    assert cluster["compression_tools"] == ["gzip", "gzip-fast"]
    assert (cluster["modify_etc_hosts"], cluster["modify_ssh_setup"],
            cluster["enabled_user_shutdown"]) == (False, False, False)
    assert (cluster["ssh_key_type"], cluster["ssh_key_bits"],
            cluster["maintain_node_health"]) == ("ecdsa", 384, True)
    # --specs-*: the given specs (sizes as Ganeti parses them: rounded up
    # to 4 MiB), the others Ganeti's defaults
    (bounds, ) = cluster["ipolicy"]["minmax"]
    assert bounds["min"] == {"memory-size": 4, "cpu-count": 1,
                             "disk-count": 0, "disk-size": 4,
                             "nic-count": 0, "spindle-use": 1}
    assert (bounds["max"]["memory-size"], bounds["max"]["spindle-use"]) == \
        (2000000000, 12)
    assert cluster["ipolicy"]["std"]["memory-size"] == 64
    info = vc.Run("gnt-cluster", "info").stdout
    assert "  uid pool: 1000-1009, 2000\n" in info
    assert "  compression tools:\n    - gzip\n    - gzip-fast\n" in info
    assert "  modify ssh setup: False\n" in info
    with open(vc.NodePath(pathutils.SsconfFileName("uid_pool")),
              encoding="ascii") as fobj:
        assert fobj.read().split() == ["1000-1009", "2000"]


def test_modify_etc_hosts_recorded(vc):
    """--modify-etc-hosts is recorded, as init's --no-etc-hosts is (this
    cluster does not manage /etc/hosts either way)."""
    try:
        vc.Run("gnt-cluster", "modify", "--modify-etc-hosts", "yes")
        assert Config(vc)["cluster"]["modify_etc_hosts"] is True
        assert "--modify-etc-hosts" in Fail(
            vc, "gnt-cluster", "modify", "--modify-etc-hosts", "maybe")
    finally:
        vc.Run("gnt-cluster", "modify", "--modify-etc-hosts", "no")
    assert Config(vc)["cluster"]["modify_etc_hosts"] is False


def test_modify_uid_pool_and_compression_tools(vc):
    """--uid-pool replaces the pool, --add-uids/--remove-uids change it
    (a removed range must be in it exactly); --compression-tools with an
    empty value restores the default tools; --user-shutdown=yes is a
    feature this cluster lacks."""
    try:
        vc.Run("gnt-cluster", "modify", "--uid-pool", "3000-3099",
               "--compression-tools", "gzip,lz4")
        cluster = Config(vc)["cluster"]
        assert cluster["uid_pool"] == [[3000, 3099]]
        assert cluster["compression_tools"] == ["gzip", "lz4"]
        vc.Run("gnt-cluster", "modify", "--add-uids", "4000,5000-5009",
               "--remove-uids", "3000-3099", "--compression-tools", "")
        cluster = Config(vc)["cluster"]
        assert cluster["uid_pool"] == [[4000, 4000], [5000, 5009]]
        assert cluster["compression_tools"] == ["gzip", "gzip-fast",
                                                "gzip-slow"]
        assert "  uid pool: 4000, 5000-5009\n" in vc.Run(
            "gnt-cluster", "info").stdout
        assert "not found in the current user-id pool" in Fail(
            vc, "gnt-cluster", "modify", "--remove-uids", "5000")
        assert "is larger than higher boundary" in Fail(
            vc, "gnt-cluster", "modify", "--add-uids", "9-1")
        assert "--uid-pool" in Fail(vc, "gnt-cluster", "modify",
                                    "--uid-pool", "1-2-3")
        assert "gzip" in Fail(vc, "gnt-cluster", "modify",
                              "--compression-tools", "lz4")
        assert "enabled_user_shutdown" in Fail(
            vc, "gnt-cluster", "modify", "--user-shutdown", "yes")
        vc.Run("gnt-cluster", "modify", "--user-shutdown", "no")
        assert Config(vc)["cluster"]["uid_pool"] == [[4000, 4000],
                                                     [5000, 5009]]
    finally:
        vc.Run("gnt-cluster", "modify", "--uid-pool", "1000-1009,2000",
               "--compression-tools", "gzip,gzip-fast")


@pytest.mark.parametrize("args, message", [
    (("-D", "nosuch:stripes=1"), "Unknown disk template 'nosuch'"),
    (("-D", "drbd:bogus=1"), "Unknown drbd disk parameter 'bogus'"),
    (("-D", "drbd:resync-rate=fast"), "resync-rate"),
    (("--user-shutdown", "yes"), "User shutdown"),
    (("--uid-pool", "9-1"), "is larger than higher boundary"),
    (("--compression-tools", "lz4"), "gzip utility must be present"),
    (("--vg-name", "xenvg"), "OP_CLUSTER_SET_PARAMS.vg_name' is not"
     " supported"),
    (("--primary-ip-version", "6"), "Primary IP version 6 is not supported"),
    (("--specs-mem-size", "min=64", "--ipolicy-std-specs", "memory-size=64"),
     "A --specs-xxx option cannot be specified together with any"
     " --ipolicy-xxx-specs option"),
    (("--specs-disk-size", "least=1"), "Invalid key 'least' in"
     " --specs-disk-size")])
def test_init_refuses_bad_disk_parameters(args, message):
    """Checked before anything is written: no configuration, no daemon."""
    cluster = VirtualCluster()
    try:
        result = cluster.Run("gnt-cluster", "init", "--master-netdev=lo",
                             *args, cluster.cluster_name, check=False)
        assert result.returncode != 0
        assert message in result.stderr
        assert not os.path.exists(cluster.NodePath(
            pathutils.CLUSTER_CONF_FILE))
        assert not cluster.IsRunning("ganeti-noded")
    finally:
        cluster.Cleanup()


def test_cluster_disk_parameters(vc):
    vc.Run("gnt-cluster", "modify", "-D",
           "drbd:resync-rate=1000,c-max-rate=2000", "-D", "plain:stripes=2")
    try:
        drbd = _ClusterDp(vc, "drbd")
        assert (drbd["resync-rate"], drbd["c-max-rate"]) == (1000, 2000)
        # The other parameters keep their defaults
        assert drbd["protocol"] == "C" and drbd["c-min-rate"] == 4096
        assert _ClusterDp(vc, "plain") == {"stripes": 2}
        info = vc.Run("gnt-cluster", "info").stdout
        section = info[info.index("Default disk parameters:"):]
        assert "  drbd:\n" in section
        assert "    resync-rate: 1000\n" in section
        assert "    stripes: 2\n" in section
        # Typed and checked per template
        assert "resync-rate" in Fail(vc, "gnt-cluster", "modify", "-D",
                                     "drbd:resync-rate=fast")
        assert "Unknown drbd disk parameter 'bogus'" in Fail(
            vc, "gnt-cluster", "modify", "-D", "drbd:bogus=1")
        assert "Unknown disk template 'nosuch'" in Fail(
            vc, "gnt-cluster", "modify", "-D", "nosuch:stripes=1")
        assert "protocol" in Fail(vc, "gnt-cluster", "modify", "-D",
                                  "drbd:protocol=D")
        assert _ClusterDp(vc, "drbd")["resync-rate"] == 1000
    finally:
        vc.Run("gnt-cluster", "modify", "-D",
               "drbd:resync-rate=default,c-max-rate=default",
               "-D", "plain:stripes=default")
    assert _ClusterDp(vc, "drbd")["resync-rate"] == 61440
    assert _ClusterDp(vc, "plain") == {"stripes": 1}


def test_group_disk_parameters(vc):
    vc.Run("gnt-group", "add", "-D", "drbd:resync-rate=700", "dpg")
    try:
        assert _Group(vc, "dpg")["diskparams"] == {
            "drbd": {"resync-rate": 700}}
        vc.Run("gnt-group", "modify", "-D", "drbd:protocol=B", "dpg")
        assert _Group(vc, "dpg")["diskparams"] == {
            "drbd": {"resync-rate": 700, "protocol": "B"}}
        info = vc.Run("gnt-group", "info", "dpg").stdout
        assert "resync-rate: 700" in info
        assert "c-max-rate: default (61440)" in info
        assert "Unknown drbd disk parameter" in Fail(
            vc, "gnt-group", "modify", "-D", "drbd:nosuch=1", "dpg")
    finally:
        vc.Run("gnt-group", "remove", "dpg")


# Node group instance policy --------------------------------------------------

def test_group_ipolicy_options(vc):
    bounds = ("min:memory-size=64,cpu-count=1,disk-count=1,disk-size=512,"
              "nic-count=1,spindle-use=1/max:memory-size=4096,cpu-count=4,"
              "disk-count=4,disk-size=8192,nic-count=4,spindle-use=4")
    vc.Run("gnt-group", "add", "--ipolicy-vcpu-ratio", "2.5",
           "--ipolicy-disk-templates", "file,diskless",
           "--ipolicy-bounds-specs", bounds, "ipg")
    try:
        policy = _Group(vc, "ipg")["ipolicy"]
        assert policy["vcpu-ratio"] == 2.5
        assert policy["disk-templates"] == ["file", "diskless"]
        assert policy["minmax"][0]["max"]["memory-size"] == 4096
        vc.Run("gnt-group", "modify", "--ipolicy-spindle-ratio", "8",
               "--ipolicy-bounds-specs", "default", "ipg")
        policy = _Group(vc, "ipg")["ipolicy"]
        assert policy["spindle-ratio"] == 8.0 and "minmax" not in policy
        info = vc.Run("gnt-group", "info", "ipg").stdout
        assert "spindle-ratio: 8.0" in info
        assert "vcpu-ratio: 2.5" in info
        # Groups have no standard specs, as in Ganeti
        assert "no such option: --ipolicy-std-specs" in Fail(
            vc, "gnt-group", "modify", "--ipolicy-std-specs",
            "cpu-count=2", "ipg")
        assert "Invalid instance policy" in Fail(
            vc, "gnt-group", "modify", "--ipolicy-disk-templates", "nosuch",
            "ipg")
        # As Ganeti's: only the bounds, by default only the group's own
        assert vc.Run("gnt-group", "show-ispecs-cmd", "ipg").stdout == \
            "gnt-group add ipg\n"
        out = vc.Run("gnt-group", "show-ispecs-cmd", "--include-defaults",
                     "ipg").stdout
        assert out.startswith("gnt-group add --ipolicy-bounds-specs"
                              " min:cpu-count=1,disk-count=0,")
        vc.Run("gnt-group", "modify", "--ipolicy-bounds-specs", bounds,
               "ipg")
        assert vc.Run("gnt-group", "show-ispecs-cmd", "ipg").stdout == (
            "gnt-group add --ipolicy-bounds-specs min:cpu-count=1,"
            "disk-count=1,disk-size=512,memory-size=64,nic-count=1,"
            "spindle-use=1/max:cpu-count=4,disk-count=4,disk-size=8192,"
            "memory-size=4096,nic-count=4,spindle-use=4 ipg\n")
    finally:
        vc.Run("gnt-group", "remove", "ipg")


# Out-of-band management ------------------------------------------------------

def test_power_and_health_without_oob(vc):
    result = vc.Run("gnt-node", "power", "status", NODE2, check=False)
    assert result.returncode == 1
    assert _Lines(result) == [["Node", "Status"], [NODE2, "(unavail)"]]
    assert "Operating on the master node %s is not allowed for power-off;" \
        " it does not support out-of-band operations" % NODE1 in Fail(
            vc, "gnt-node", "power", "off", "-f", "--ignore-status", NODE1)
    assert "power subcommand up not supported." in Fail(
        vc, "gnt-node", "power", "up", NODE2)


def test_power_status_and_health(vc, oob):
    result = vc.Run("gnt-node", "power", "status", NODE2)
    assert _Lines(result) == [["Node", "Status"], [NODE2, "powered"]]
    assert _Calls(oob) == ["power-status " + NODE2]
    result = vc.Run("gnt-node", "health", "--no-headers", NODE2)
    # The job log warns of the unhealthy item, then the table
    assert "WARNING: Item 'fan' on node '%s' has status 'WARNING'" % NODE2 \
        in result.stdout
    assert _Lines(result)[-2:] == [[NODE2, "disk0=OK"], ["fan=WARNING"]]
    # The program's answer must follow the protocol
    result = vc.Run("gnt-node", "power", "cycle", "-f", NODE2, check=False)
    assert result.returncode == 1
    assert _Lines(result)[-1] == [NODE2, "(nodata)"]
    assert "invalid JSON" in result.stdout + result.stderr


def test_power_off_and_on(vc, oob):
    # Asked first; without a terminal the answer is no
    Fail(vc, "gnt-node", "power", "off", NODE2)
    assert not os.path.exists(os.path.join(oob, "calls"))
    try:
        result = vc.Run("gnt-node", "power", "off", "-f", NODE2)
        assert _Lines(result)[-1] == [NODE2, "invoked"]
        row = vc.Run("gnt-node", "list", "--no-headers", "--separator=|",
                     "-o", "offline,powered", NODE2).stdout.strip()
        assert row == "Y|N"
        result = vc.Run("gnt-node", "power", "status", NODE2)
        assert _Lines(result)[-1] == [NODE2, "unpowered"]
        # An offline node powered off cannot be put online
        assert "needs to be turned on" in Fail(vc, "gnt-node", "modify",
                                               "-O", "no", NODE2)
        result = vc.Run("gnt-node", "power", "on", NODE2)
        assert _Lines(result)[-1] == [NODE2, "invoked"]
        assert _Calls(oob) == ["power-off " + NODE2, "power-status " + NODE2,
                               "power-on " + NODE2]
    finally:
        vc.Run("gnt-node", "modify", "-O", "no", NODE2)
    row = vc.Run("gnt-node", "list", "--no-headers", "--separator=|",
                 "-o", "offline,powered", NODE2).stdout.strip()
    assert row == "N|Y"


# Emergency power-off ---------------------------------------------------------

def test_epo_off_and_on(vc, oob):
    assert "Only one of --groups or --all are allowed" in Fail(
        vc, "gnt-cluster", "epo", "--groups", "--all")
    assert "%s is the master node" % NODE1 in Fail(vc, "gnt-cluster", "epo",
                                                   "-f")
    vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
           "-n", NODE2, *SMALL, *CHECKS, "epo1")
    try:
        assert Field(vc, "epo1", "admin_state,oper_state") == "up|Y"
        result = vc.Run("gnt-cluster", "epo", "-f", NODE2)
        assert "Submit shutdown of instance epo1" in result.stdout
        # Stopped without remembering it: --on starts it again
        assert Field(vc, "epo1", "admin_state,oper_state") == "up|N"
        assert _Calls(oob) == ["power-off " + NODE2]
        assert vc.Run("gnt-node", "list", "--no-headers", "-o", "powered",
                      NODE2).stdout.strip() == "N"
        result = vc.Run("gnt-cluster", "epo", "-f", "--on", NODE2)
        assert "Node %s became available" % NODE2 in result.stdout
        assert "Submit startup of instance epo1" in result.stdout
        assert _Calls(oob) == ["power-off " + NODE2, "power-on " + NODE2]
        assert Field(vc, "epo1", "admin_state,oper_state") == "up|Y"
    finally:
        RemoveInstances(vc, "epo1")
