"""gnt-backup on a real three-node virtual cluster (fake hypervisor).

Every node has the shipped tinyimage OS and allows the cluster's file
storage directory; node2 also has "failexport", a tinyimage whose export
script fails halfway. Exports land in the target node's export directory
(pathutils.EXPORT_DIR below its root), written there by the node-to-node
transfers.
"""

import configparser
import gzip
import os
import shutil
import subprocess

import pytest

from ganeti import errors, pathutils
from ganeti.backend import export as backend_export

from testutils_instance import (CHECKS as NAME_CHECKS, NODE1, NODE2, NODE3,
                                DiskPaths, Fail, Field, FindInstance,
                                InstanceCluster, OsVariant, RemoveInstances)

pytestmark = pytest.mark.integration

# Small test instances are below the default instance policy
CHECKS = NAME_CHECKS + ("--ignore-ipolicy", )
# tinyimage whose export script writes some data, then fails
FAIL_EXPORT_OS = OsVariant(
    {"export": ("#!/bin/sh\nhead -c 65536 \"$EXPORT_DEVICE\"\n"
                "echo 'tape jammed' >&2\nexit 3\n")},
    nodes=(NODE2, ))


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster(extra_os={"failexport": FAIL_EXPORT_OS}) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def inst1(vc):
    """A running file instance on node2."""
    vc.Run("gnt-instance", "add", "-t", "file", "-o", "tinyimage",
           "-n", NODE2, "--disk", "0:size=16M,name=root",
           "-B", "maxmem=48,minmem=32,vcpus=2", "--net", "0:link=br9",
           "-O", "message=hello", "--tags", "web", *CHECKS, "inst1")
    return "inst1"


def _ExportDir(cluster, node, name=""):
    return os.path.join(cluster.nodes[node].NodePath(pathutils.EXPORT_DIR),
                        name)


def _Cat(image, path):
    """A file of the ext2 file system in a disk image (debugfs)."""
    result = subprocess.run(["debugfs", "-R", "cat %s" % path, image],
                            capture_output=True, text=True, check=True)
    return result.stdout


def _EnsureExport(cluster, name):
    """The export of ``name`` on node3 (made by an earlier test or now)."""
    if not os.path.isdir(_ExportDir(cluster, NODE3, name)):
        cluster.Run("gnt-backup", "export", "-n", NODE3, name)


def _Listing(cluster, *args):
    return [line.split() for line in
            cluster.Run("gnt-backup", "list", *args).stdout.splitlines()]


def test_export_writes_config_and_compressed_dump(vc, inst1):
    out = vc.Run("gnt-backup", "export", "-n", NODE3, inst1).stdout
    assert "Shutting down instance inst1" in out, out
    assert "checksum verified" in out, out
    # Shut down for the export, running again afterwards
    assert Field(vc, inst1, "status") == "running"
    inst, disks = FindInstance(vc, inst1)
    export = _ExportDir(vc, NODE3, inst1)
    assert sorted(os.listdir(export)) == sorted(["config.ini",
                                                 disks[0]["uuid"]])
    assert not [name for name in os.listdir(_ExportDir(vc, NODE3))
                if name.startswith(".")]
    ini = configparser.RawConfigParser()
    ini.read(os.path.join(export, "config.ini"))
    assert ini.sections() == ["export", "instance", "hypervisor", "backend",
                              "os", "os_private"]
    assert dict(ini.items("export"), timestamp=None) == {
        "version": "0", "timestamp": None, "source": inst["primary_node"],
        "os": "tinyimage", "compression": "gzip"}
    exp = dict(ini.items("instance"))
    for key, value in (("name", "inst1"), ("maxmem", "48"),
                       ("minmem", "32"), ("memory", "48"), ("vcpus", "2"),
                       ("disk_template", "file"), ("hypervisor", "fake"),
                       ("tags", "web"), ("nic_count", "1"),
                       ("nic0_mac", inst["nics"][0]["mac"]),
                       ("nic0_ip", "None"), ("nic0_link", "br9"),
                       ("nic0_mode", "bridged"), ("disk_count", "1"),
                       ("disk0_ivname", "disk/0"),
                       ("disk0_dump", disks[0]["uuid"]),
                       ("disk0_size", "16"), ("disk0_name", "root")):
        assert exp[key] == value, (key, exp[key])
    assert ini.get("os", "message") == "hello"
    assert ini.get("backend", "maxmem") == "48"
    # The dump is the gzip-compressed output of the OS export script: the
    # whole disk image
    with open(DiskPaths(vc, inst1, NODE2)[0], "rb") as fobj:
        image = fobj.read()
    with gzip.open(os.path.join(export, disks[0]["uuid"]), "rb") as fobj:
        assert fobj.read() == image


def test_list(vc, inst1):
    _EnsureExport(vc, inst1)
    assert _Listing(vc) == [["Node", "Export"], [NODE3, "inst1"]]
    assert _Listing(vc, "-n", NODE2) == [["Node", "Export"]]
    assert _Listing(vc, "--no-headers", "-n", NODE3, "-n", NODE1) == \
        [[NODE3, "inst1"]]
    out = vc.Run("gnt-backup", "list-fields").stdout
    assert "Node name" in out and "Export name" in out
    out = Fail(vc, "gnt-backup", "list", "-n", "nosuchnode")
    assert "nosuchnode" in out


def test_import_on_third_node(vc, inst1):
    _EnsureExport(vc, inst1)
    # Without --src-node the export is searched on all nodes
    vc.Run("gnt-backup", "import", "-n", NODE1, "-t", "file",
           "--src-dir", "inst1", *CHECKS, "inst1b")
    try:
        assert Field(vc, "inst1b", "pnode,status,be/maxmem,be/minmem,"
                     "be/vcpus,nic.links,disk.sizes,disk.names,os,"
                     "tags") == \
            "%s|ADMIN_down|48|32|2|br9|16|root|tinyimage|web" % NODE1
        orig, _ = FindInstance(vc, inst1)
        new, _ = FindInstance(vc, "inst1b")
        # A new instance gets new MAC addresses
        assert new["nics"][0]["mac"] != orig["nics"][0]["mac"]
        assert new["osparams"] == {"message": "hello"}
        src = DiskPaths(vc, inst1, NODE2)[0]
        dst = DiskPaths(vc, "inst1b", NODE1)[0]
        conf = _Cat(src, "/etc/tinyimage.conf")
        assert "INSTANCE_NAME=inst1\n" in conf
        assert _Cat(dst, "/etc/tinyimage.conf") == conf
        assert _Cat(dst, "/init") == _Cat(src, "/init")
        # The OS rename script ran for the new name
        assert _Cat(src, "/etc/hostname") == "inst1\n"
        assert _Cat(dst, "/etc/hostname") == "inst1b\n"
        vc.Run("gnt-instance", "startup", "inst1b")
        assert Field(vc, "inst1b", "status") == "running"
    finally:
        vc.Run("gnt-instance", "remove", "-f", "inst1b")


def test_import_overrides_and_explicit_source(vc, inst1):
    _EnsureExport(vc, inst1)
    vc.Run("gnt-backup", "import", "-n", NODE2, "-t", "file",
           "--src-node", NODE3, "--src-dir",
           os.path.join(pathutils.EXPORT_DIR, "inst1"),
           "--disk", "0:size=24M", "-B", "maxmem=40", "--net",
           "0:link=br3", *CHECKS, "inst1c")
    try:
        assert Field(vc, "inst1c", "be/maxmem,be/minmem,nic.links,"
                     "disk.sizes") == "40|32|br3|24"
        dst = DiskPaths(vc, "inst1c", NODE2)[0]
        assert "INSTANCE_NAME=inst1" in _Cat(dst, "/etc/tinyimage.conf")
    finally:
        vc.Run("gnt-instance", "remove", "-f", "inst1c")


def test_import_keeps_private_os_parameters(vc, inst1):
    """The export's private OS parameters are the new instance's, under
    those given on the command line (as in Ganeti)."""
    _EnsureExport(vc, inst1)
    export = _ExportDir(vc, NODE3, "inst1p")
    shutil.copytree(_ExportDir(vc, NODE3, inst1), export)
    try:
        ini = configparser.RawConfigParser()
        ini.read(os.path.join(export, "config.ini"))
        ini.remove_option("os", "message")
        ini.set("os_private", "hostname", "fromexport")
        ini.set("os_private", "message", "private")
        with open(os.path.join(export, "config.ini"), "w",
                  encoding="utf-8") as fobj:
            ini.write(fobj)
        vc.Run("gnt-backup", "import", "-n", NODE2, "-t", "file",
               "--src-node", NODE3, "--src-dir", "inst1p",
               "--os-parameters-private", "message=given",
               # Ganeti's options of import, too
               "--no-wait-for-sync", "--no-conflicts-check", *CHECKS,
               "inst1d")
        new, _ = FindInstance(vc, "inst1d")
        assert new["osparams_private"] == {"hostname": "fromexport",
                                           "message": "given"}
    finally:
        shutil.rmtree(export)
        RemoveInstances(vc, "inst1d")


def test_export_moves_and_remove(vc, inst1):
    _EnsureExport(vc, inst1)
    # A new export replaces the one on another node
    vc.Run("gnt-backup", "export", "-n", NODE1, "--noshutdown", inst1)
    assert _Listing(vc, "--no-headers") == [[NODE1, "inst1"]]
    assert not os.path.exists(_ExportDir(vc, NODE3, inst1))
    assert Field(vc, inst1, "status") == "running"
    vc.Run("gnt-backup", "remove", inst1)
    assert _Listing(vc, "--no-headers") == []
    assert not os.path.exists(_ExportDir(vc, NODE1, inst1))
    # Nothing left to remove: Ganeti only says so
    out = vc.Run("gnt-backup", "remove", "nosuchinst").stdout
    assert "Export not found" in out


def test_export_remove_instance_and_reimport_raw(vc):
    """An instance without OS: its disk is exported and imported as is."""
    vc.Run("gnt-instance", "add", "-t", "file", "--no-install",
           "-n", NODE3, "--disk", "0:size=8M", "--no-start", *CHECKS,
           "inst2")
    inst, _ = FindInstance(vc, "inst2")
    with open(DiskPaths(vc, "inst2", NODE3)[0], "r+b") as fobj:
        fobj.seek(3 * 1024 * 1024 + 17)
        fobj.write(b"raw data at an odd place" * 100)
        fobj.seek(0)
        image = fobj.read()
    vc.Run("gnt-backup", "export", "-n", NODE1, "--remove-instance",
           "inst2")
    try:
        assert "inst2" not in vc.Run("gnt-instance", "list").stdout
        assert _Listing(vc, "--no-headers", "-n", NODE1) == \
            [[NODE1, "inst2"]]
        ini = configparser.RawConfigParser()
        ini.read(os.path.join(_ExportDir(vc, NODE1, "inst2"), "config.ini"))
        assert (ini.get("export", "os"), ini.get("export", "compression")) \
            == ("", "none")
        # Under its own name the instance keeps its MAC address
        vc.Run("gnt-backup", "import", "-n", NODE2, "-t", "file",
               *CHECKS, "inst2")
        new, _ = FindInstance(vc, "inst2")
        assert new["nics"][0]["mac"] == inst["nics"][0]["mac"]
        assert new["os"] == ""
        with open(DiskPaths(vc, "inst2", NODE2)[0], "rb") as fobj:
            assert fobj.read() == image
        vc.Run("gnt-instance", "remove", "-f", "inst2")
    finally:
        vc.Run("gnt-backup", "remove", "inst2")


def test_failed_export_script_leaves_nothing(vc):
    vc.Run("gnt-instance", "add", "-t", "file", "-o", "failexport",
           "-n", NODE2, "--disk", "0:size=4M", *CHECKS, "inst3")
    try:
        out = Fail(vc, "gnt-backup", "export", "-n", NODE3, "inst3")
        assert "Export failed, errors in disk export: disk(s) 0" in out, out
        assert "exit code 3" in out, out
        assert not [name for name in os.listdir(_ExportDir(vc, NODE3))
                    if "inst3" in name]
        assert _Listing(vc, "--no-headers", "-n", NODE3) == []
        # The instance runs again
        assert Field(vc, "inst3", "status") == "running"
        logs = os.listdir(vc.nodes[NODE2].NodePath(pathutils.LOG_OS_DIR))
        (log, ) = [name for name in logs
                   if name.startswith("export-failexport-inst3-")]
        with open(os.path.join(vc.nodes[NODE2].NodePath(
                pathutils.LOG_OS_DIR), log), encoding="utf-8") as fobj:
            assert "tape jammed" in fobj.read()
    finally:
        vc.Run("gnt-instance", "remove", "-f", "inst3")


@pytest.mark.parametrize("args,message", [
    (("import", "-n", NODE2, "-t", "file", "nosuchexport"),
     "No export found for relative path nosuchexport"),
    (("import", "-n", NODE2, "-t", "file", "--src-node", NODE1,
      "nosuchexport"),
     "No export or invalid export found in dir"),
    (("import", "-n", NODE2, "-t", "file", "--src-dir", "/etc",
      "nosuchexport"),
     "Importing an instance from a path requires a source node option"),
    (("import", "-n", NODE2, "-t", "file", "--src-node", NODE1,
      "--src-dir", "/etc", "nosuchexport"),
     "Refusing to read /etc: not an export directory"),
    (("export", "-n", "nosuchnode", "inst1"), "nosuchnode"),
    (("export", "-n", NODE1, "nosuchinst"),
     "Instance 'nosuchinst' not known"),
    (("export", "inst1"), "Target node must be specified"),
    (("export", "-n", NODE1, "--transport-compression", "lzop", "inst1"),
     "Compression tool not allowed"),
])
def test_refusals(vc, inst1, args, message):
    out = Fail(vc, "gnt-backup", *args, *(CHECKS if args[0] == "import"
                                          else ()))
    assert message in out, out
    assert "nosuchexport" not in vc.Run("gnt-instance", "list").stdout


def test_diskless_export_refused(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
           "-n", NODE2, "--no-start", *CHECKS, "inst4")
    try:
        out = Fail(vc, "gnt-backup", "export", "-n", NODE3, "inst4")
        assert "Instance 'inst4' has no disks" in out, out
    finally:
        vc.Run("gnt-instance", "remove", "-f", "inst4")


def test_offline_node_refused(vc, inst1):
    vc.Run("gnt-node", "modify", "-O", "yes", NODE3)
    try:
        out = Fail(vc, "gnt-backup", "export", "-n", NODE3, inst1)
        assert "Can't use offline node %s" % NODE3 in out, out
        # The offline node has no data in the listing
        assert _Listing(vc, "--no-headers", "-n", NODE3) == [[NODE3, "*"]]
        assert [NODE3, "(offline)"] in _Listing(vc, "--no-headers", "-v")
    finally:
        vc.Run("gnt-node", "modify", "-O", "no", NODE3)



# Node side, without a cluster ------------------------------------------------

@pytest.mark.parametrize("name", ["../etc", ".inst1.new", "a/b", "", None])
def test_backend_refuses_bad_export_names(name):
    with pytest.raises(errors.GenericError, match="Invalid export name"):
        backend_export.export_remove(name)


@pytest.mark.parametrize("path", ["/etc", "/srv/ganeti/export",
                                  "/srv/ganeti/export/a/b"])
def test_backend_reads_only_export_directories(path):
    with pytest.raises(errors.GenericError,
                       match="Refusing to read|Invalid export name"):
        backend_export.export_info(path)


def test_backend_export_config():
    instance = {
        "name": "web1", "primary_node": "uuid-1", "os": "tinyimage+v",
        "hypervisor": "fake", "tags": ["a", "b"],
        "hvparams": {"migration_mode": "live"},
        "beparams": {"maxmem": 128, "minmem": 64, "vcpus": 1},
        "osparams": {"message": "hi"}, "osparams_private": {"pw": "s"},
        "nics": [{"mac": "aa:00:00:00:00:01", "ip": None,
                  "nicparams": {"mode": "bridged", "link": "br0"}}],
    }
    disks = [{"uuid": "d-1", "iv_name": "disk/0", "size": 16,
              "dev_type": "file", "name": None}]
    ini = backend_export._ExportConfig(instance, disks, "gzip", 1234)
    assert dict(ini.items("export")) == {
        "version": "0", "timestamp": "1234", "source": "uuid-1",
        "os": "tinyimage+v", "compression": "gzip"}
    assert dict(ini.items("instance")) == {
        "name": "web1", "maxmem": "128", "minmem": "64", "memory": "128",
        "vcpus": "1", "disk_template": "file", "hypervisor": "fake",
        "tags": "a b", "nic0_mac": "aa:00:00:00:00:01", "nic0_ip": "None",
        "nic0_network": "None", "nic0_name": "None", "nic0_link": "br0",
        "nic0_mode": "bridged", "nic0_vlan": "None", "nic_count": "1",
        "disk0_ivname": "disk/0", "disk0_dump": "d-1", "disk0_size": "16",
        "disk0_name": "None", "disk_count": "1"}
    # Cluster-wide hypervisor parameters are not the instance's
    assert dict(ini.items("hypervisor")) == {}
    assert dict(ini.items("os")) == {"message": "hi"}
    assert dict(ini.items("os_private")) == {"pw": "s"}
