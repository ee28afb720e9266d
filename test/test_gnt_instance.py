"""gnt-instance on a real three-node virtual cluster (fake hypervisor).

Every node has the shipped tinyimage OS in its search path and allows the
cluster's file storage directory in its file-storage-paths (written by
the test, as an administrator would); node3 also has "failos", whose
create script fails, for the failed-creation cleanup. Instances live in
node roots: image files below the file storage directory, runtime state
in the fake hypervisor's directory.
"""

import os
import struct

import pytest

from ganeti import constants
from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (CHECKS, FILE_VDIR, NODE2, NODE3, Config,
                                FakeState, Fail, Field, InstanceCluster,
                                OsVariant)

pytestmark = pytest.mark.integration

# tinyimage whose create script fails
FAIL_OS = OsVariant(
    {"create": "#!/bin/sh\necho 'disk full of gremlins' >&2\nexit 1\n"},
    nodes=(NODE3, ))


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         extra_os={"failos": FAIL_OS}) as cluster:
        yield cluster


def test_diskless_lifecycle(vc):
    node2 = vc.nodes[NODE2]
    vc.Run("gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
           "-n", NODE2, "-B", "maxmem=64,minmem=64,vcpus=2",
           "--net", "0:mac=aa:00:00:11:22:33,link=br7", *CHECKS, "inst1")
    state = FakeState(node2, "inst1")
    with open(state, encoding="ascii") as fobj:
        assert fobj.read().split() == ["0", "64", "2"]
    listing = vc.Run("gnt-instance", "list").stdout.splitlines()
    assert listing[0].split() == ["Instance", "Hypervisor", "OS",
                                  "Primary_node", "Status", "Memory"]
    assert listing[1].split() == ["inst1", "fake", "tinyimage", NODE2,
                                  "running", "64M"]
    assert Field(vc, "inst1", "nic.macs,nic.links,disk_template,"
                 "be/vcpus,oper_vcpus,admin_state") == \
        "aa:00:00:11:22:33|br7|diskless|2|2|up"

    info = vc.Run("gnt-instance", "info", "inst1").stdout
    for line in ("- Instance name: inst1",
                 "State: configured to be up, actual state is up",
                 "primary: %s" % NODE2, "Operating system: tinyimage",
                 "Hypervisor: fake", "maxmem: 64", "vcpus: 2",
                 "minmem: 64", "auto_balance: default (True)",
                 "MAC: aa:00:00:11:22:33", "Disk template: diskless"):
        assert line in info, info

    vc.Run("gnt-instance", "stop", "--timeout=5", "inst1")
    assert not os.path.exists(state)
    assert Field(vc, "inst1", "status,oper_state,oper_ram") == \
        "ADMIN_down|N|-"
    vc.Run("gnt-instance", "start", "inst1")
    assert os.path.exists(state)
    for kind in ("soft", "hard", "full"):
        vc.Run("gnt-instance", "reboot", "--type", kind, "inst1")
        assert Field(vc, "inst1", "status") == "running"

    # The hypervisor state changes behind the cluster's back
    os.unlink(state)
    assert Field(vc, "inst1", "status") == "ERROR_down"
    vc.Run("gnt-instance", "shutdown", "inst1")
    with open(state, "w", encoding="ascii") as fobj:
        fobj.write("0\n64\n2\n")
    assert Field(vc, "inst1", "status") == "ERROR_up"
    vc.Run("gnt-instance", "shutdown", "inst1")

    vc.Run("gnt-instance", "add-tags", "inst1", "web", "prod")
    assert vc.Run("gnt-instance", "list-tags", "inst1").stdout.split() == \
        ["prod", "web"]
    assert Field(vc, "inst1", "tags") == "prod,web"
    out = vc.Run("gnt-instance", "list", "--no-headers", "-o", "name",
                 "--filter", "status == \"ADMIN_down\"").stdout
    assert out.split() == ["inst1"]

    # Without -f and without a terminal: the question, why it is not
    # answered and how to skip it; Ganeti's exit code 1
    result = vc.Run("setsid", "-w", "gnt-instance", "remove", "inst1",
                    check=False)
    assert result.returncode == constants.EXIT_FAILURE
    assert "This will remove the volumes of the instance inst1" in \
        result.stderr
    assert "No terminal to ask on: answering 'n' (Do not perform the" \
        " operation). Use -f/--force to skip this question." in result.stderr
    assert "inst1" in vc.Run("gnt-instance", "list").stdout

    vc.Run("gnt-instance", "remove", "-f", "inst1")
    assert Config(vc)["instances"] == {}
    assert "inst1" not in vc.Run("gnt-instance", "list").stdout


def test_file_instance_with_os_image(vc):
    node3 = vc.nodes[NODE3]
    vc.Run("gnt-instance", "add", "-t", "file", "-o", "tinyimage",
           "-n", NODE3, "--disk", "0:size=16M,name=root",
           "--disk", "1:size=8,mode=ro", "-B", "maxmem=32,minmem=32",
           "-O", "message=hello", *CHECKS, "inst2")
    config = Config(vc)
    (inst, ) = config["instances"].values()
    disks = [config["disks"][uuid] for uuid in inst["disks"]]
    assert [disk["size"] for disk in disks] == [16, 8]
    assert [disk["mode"] for disk in disks] == ["rw", "ro"]
    assert disks[0]["name"] == "root"
    paths = [node3.NodePath(disk["logical_id"][1]) for disk in disks]
    for path, disk in zip(paths, disks):
        assert disk["logical_id"][1].startswith(FILE_VDIR + "/inst2/")
        assert os.path.getsize(path) == disk["size"] * 1024 * 1024
    with open(paths[0], "rb") as fobj:
        fobj.seek(1080)
        assert struct.unpack("<H", fobj.read(2))[0] == 0xEF53
    assert Field(vc, "inst2", "disk.count,disk.sizes,disk.size/1,"
                 "disk_template,status,pnode") == \
        "2|16,8|8|file|running|%s" % NODE3
    assert os.path.exists(FakeState(node3, "inst2"))
    assert inst["disks_active"] is True
    vc.Run("gnt-instance", "shutdown", "inst2")
    (inst, ) = Config(vc)["instances"].values()
    assert inst["disks_active"] is False

    vc.Run("gnt-instance", "remove", "-f", "inst2")
    for path in paths:
        assert not os.path.exists(path)
    assert not os.path.exists(os.path.dirname(paths[0]))
    assert not os.path.exists(FakeState(node3, "inst2"))
    assert Config(vc)["disks"] == {}


def test_failed_creation_leaves_nothing(vc):
    node3 = vc.nodes[NODE3]
    out = Fail(vc, "gnt-instance", "add", "-t", "file", "-o", "failos",
               "-n", NODE3, "--disk", "0:size=4M", *CHECKS, "inst3")
    assert "disk full of gremlins" in out
    config = Config(vc)
    assert config["instances"] == {} and config["disks"] == {}
    storage = node3.NodePath(FILE_VDIR)
    assert not os.path.exists(os.path.join(storage, "inst3"))


@pytest.mark.parametrize("args,message", [
    (("-t", "file", "-o", "tinyimage", "-n", NODE2, "--disk", "0:size=4M",
      "-B", "maxmem=1000000000,minmem=1000000000"),
     "Not enough memory on node %s" % NODE2),
    (("-t", "diskless", "-o", "nosuchos", "-n", NODE2),
     "nosuchos"),
    (("-t", "diskless", "-o", "tinyimage", "-n", NODE2, "-B", "vcpus=many"),
     "vcpus"),
    (("-t", "diskless", "-o", "tinyimage", "-n", NODE2, "-B", "bogus=1"),
     "bogus"),
    # The message names the parameter as typed, not what it stands for
    (("-t", "diskless", "-o", "tinyimage", "-n", NODE2, "-B", "memory=12X"),
     "Invalid value '12X' for backend parameter 'memory'"),
    (("-t", "sharedfile", "-o", "tinyimage", "-n", NODE2, "--disk",
      "0:size=4M"),
     "not enabled in the cluster"),
    (("-t", "diskless", "-o", "tinyimage", "-n", "nosuchnode"),
     "nosuchnode"),
    (("-t", "file", "-o", "tinyimage", "-n", NODE2),
     "needs at least one disk"),
])
def test_add_refusals(vc, args, message):
    out = Fail(vc, "gnt-instance", "add", *args, *CHECKS, "bad1")
    assert message in out, out
    assert Config(vc)["instances"] == {}


def test_unresolvable_name_suggests_skipping_the_checks(vc):
    out = Fail(vc, "gnt-instance", "add", "-t", "diskless", "-o",
               "tinyimage", "-n", NODE2, "badname.invalid")
    assert "Cannot resolve instance name 'badname.invalid'" in out, out
    assert "pass --no-name-check (and --no-ip-check" in out, out
    assert Config(vc)["instances"] == {}


def test_memory_refusal_names_needed_and_available(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
           "-n", NODE2, "--no-start", "-B",
           "maxmem=1000000000,minmem=64", *CHECKS, "big1")
    try:
        assert Field(vc, "big1", "status") == "ADMIN_down"
        out = Fail(vc, "gnt-instance", "startup", "big1")
        assert "Not enough memory on node %s for starting instance big1:" \
            " needed 1000000000 MiB, available" % NODE2 in out, out
        assert Field(vc, "big1", "admin_state") == "down"
    finally:
        vc.Run("gnt-instance", "remove", "-f", "big1")


def test_memory_sizes_with_units(vc):
    """Memory sizes take units, also under the legacy name ``memory``."""
    vc.Run("gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
           "-n", NODE2, "--no-start", "-B", "memory=128M", *CHECKS, "mem1")
    try:
        assert Field(vc, "mem1", "be/minmem,be/maxmem") == "128|128"
        vc.Run("gnt-instance", "modify", "-B", "maxmem=1G", "mem1")
        assert Field(vc, "mem1", "be/minmem,be/maxmem") == "128|1024"
    finally:
        vc.Run("gnt-instance", "remove", "-f", "mem1")


def test_offline_node_refused(vc):
    vc.Run("gnt-node", "modify", "-O", "yes", NODE3)
    try:
        out = Fail(vc, "gnt-instance", "add", "-t", "diskless", "-o",
                   "tinyimage", "-n", NODE3, *CHECKS, "off1")
        assert "Can't use offline node %s" % NODE3 in out, out
    finally:
        vc.Run("gnt-node", "modify", "-O", "no", NODE3)


def test_duplicate_name_and_unknown_instance(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
           "--no-start", "-n", NODE2, *CHECKS, "dup1")
    try:
        out = Fail(vc, "gnt-instance", "add", "-t", "diskless",
                   "--no-install", "-n", NODE2, *CHECKS, "dup1")
        assert "Instance 'dup1' is already in the cluster" in out
    finally:
        vc.Run("gnt-instance", "remove", "-f", "dup1")
    out = Fail(vc, "gnt-instance", "startup", "nosuchinst")
    assert "Instance 'nosuchinst' not known" in out


def test_list_fields(vc):
    out = vc.Run("gnt-instance", "list-fields", "status", "be/maxmem",
                 "oper_ram").stdout
    assert "Status" in out and "ConfigMaxMem" in out and "Memory" in out
    result = vc.Run("gnt-instance", "list", "-o", "name,nosuchfield",
                    check=False)
    assert result.returncode == 14
