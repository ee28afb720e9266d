"""gnt-instance modify on a real three-node virtual cluster (fake
hypervisor).

Every node has the shipped tinyimage OS and allows the cluster's file
storage directory; the cluster's instance policy is relaxed so that the
tests can use disks of a few MiB. Each test creates its own instances and
removes them; the checks look at the command output, the configuration
file and the node roots (disk image files, fake hypervisor state).
"""

import os
import shutil

import pytest

from ganeti import pathutils

from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (CHECKS, NODE2, NODE3, Config, FakeState,
                                Fail, FindInstance, InstanceCluster,
                                NodeUuid)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--ipolicy-bounds-specs=" +
                         SMALL_IPOLICY_BOUNDS) as cluster:
        yield cluster


def _Modify(cluster, *args):
    return cluster.Run("gnt-instance", "modify", *args).stdout


def _Fail(cluster, *args):
    return Fail(cluster, "gnt-instance", "modify", *args)


def _Add(cluster, name, node, *args):
    cluster.Run("gnt-instance", "add", "-o", "tinyimage", "-n", node,
                *CHECKS, *args, name)


def _Remove(cluster, name):
    cluster.Run("gnt-instance", "remove", "-f", name)


def _FakeMemory(node, name):
    with open(FakeState(node, name), encoding="ascii") as fobj:
        return int(fobj.read().split()[1])


@pytest.fixture(scope="module")
def refused(vc):
    """The cluster with a stopped diskless instance r1 (one NIC)."""
    _Add(vc, "r1", NODE2, "-t", "diskless", "--no-start",
         "--net", "0:mac=aa:00:00:00:00:01")
    try:
        yield vc
    finally:
        _Remove(vc, "r1")


def test_parameters_changed_and_reset(vc):
    _Add(vc, "p1", NODE2, "-t", "diskless", "--no-start",
         "-B", "maxmem=64,minmem=32")
    try:
        out = _Modify(vc, "-B", "vcpus=2,maxmem=96", "-O", "message=bye",
                      "p1")
        for line in ("Modified instance p1", " - be/vcpus -> 2",
                     " - be/maxmem -> 96", " - os/message -> bye",
                     "Please don't forget"):
            assert line in out, out
        inst, _ = FindInstance(vc, "p1")
        assert inst["beparams"] == {"vcpus": 2, "maxmem": 96, "minmem": 32}
        assert inst["osparams"] == {"message": "bye"}

        out = _Modify(vc, "-B", "vcpus=DEFAULT,memory=48", "-O",
                      "message=default", "p1")
        assert " - be/vcpus -> default" in out, out
        assert " - be/memory -> 48" in out, out
        inst, _ = FindInstance(vc, "p1")
        assert inst["beparams"] == {"maxmem": 48, "minmem": 48}
        assert inst["osparams"] == {}

        out = _Fail(vc, "--os-type", "tinyimage+big", "p1")
        assert "OS 'tinyimage' doesn't support variants ('big' passed)" in out
        out = _Modify(vc, "--os-type", "tinyimage+big", "--force-variant",
                      "p1")
        assert FindInstance(vc, "p1")[0]["os"] == "tinyimage+big"
        assert "Modified instance" not in out
    finally:
        _Remove(vc, "p1")


@pytest.mark.parametrize("args,message", [
    (("-B", "bogus=1"), "bogus"),
    (("-B", "vcpus=many"), "vcpus"),
    (("-B", "minmem=512,maxmem=256"), "Minimum memory (512) must not be"
     " greater than maximum memory (256)"),
    (("-H", "nosuch=1"), "nosuch"),
    (("-H", "migration_mode=live"), "The following hypervisor parameters"
     " are global and cannot be customized at instance level"),
    (("--os-type", "nosuchos"), "nosuchos"),
    (("-O", "nosuchparam=1"), "nosuchparam"),
    (("-O", "hostname=-bad-"), "invalid value '-bad-' for parameter"
     " hostname"),
    (("--disk", "add:size=4M"), "Disk operations not supported for diskless"
     " instances"),
    (("--net", "3:link=br9"), "Got NIC index 3, but there are only 1"),
    (("--net", "nosuchnic:link=br9"), "Cannot find NIC with identifier"
     " nosuchnic"),
    (("--net", "0:add,mac=aa:00:00:00:00:01"), "Can't add a NIC at index 0:"
     " NICs can only be added at the end of the list (index 1 or -1)"),
    (("--net", "add:mac=zz:00"), "Invalid MAC address specified: zz:00"),
    (("--net", "add:speed=10"), "Unknown NIC parameter(s): speed"),
    (("--net", "0:mac=auto"), "'auto' is not a valid MAC address"),
    (("--net", "0:mode=tunnel"), "tunnel"),
    (("--net", "0:mode=routed"), "Cannot set the NIC IP address to None on"
     " a routed NIC"),
    (("--net", "0:ip=300.1.1.1"), "Invalid IP address '300.1.1.1'"),
    (("--runtime-memory", "64"), "Instance r1 is not running"),
    (("--new-primary", "nosuchnode"), "Node 'nosuchnode' not known"),
    (("--offline", "--online"), "Can't use --offline and --online at the"
     " same time"),
])
def test_refusals_change_nothing(refused, args, message):
    before = FindInstance(refused, "r1")
    out = _Fail(refused, *args, "r1")
    assert message in out, out
    assert FindInstance(refused, "r1") == before


def test_nothing_given(vc):
    result = vc.Run("gnt-instance", "modify", "nosuchinst", check=False)
    assert result.returncode == 1
    assert "Please give at least one of the parameters." in result.stderr


def test_disks_of_a_file_instance(vc):
    node3 = vc.nodes[NODE3]
    _Add(vc, "d1", NODE3, "-t", "file", "--disk", "0:size=4M", "--no-start")
    try:
        out = _Modify(vc, "--disk", "add:size=8M,mode=ro,name=data", "d1")
        assert " - disk/1 -> add:size=8,mode=ro" in out, out
        _, (root, data) = FindInstance(vc, "d1")
        assert (data["size"], data["mode"], data["name"],
                data["iv_name"]) == (8, "ro", "data", "disk/1")
        assert data["nodes"] == [NodeUuid(vc, NODE3)]
        assert os.path.dirname(data["logical_id"][1]) == \
            os.path.dirname(root["logical_id"][1])
        path = node3.NodePath(data["logical_id"][1])
        assert os.path.getsize(path) == 8 * 1024 * 1024

        out = _Modify(vc, "--disk", "data:mode=rw,name=scratch", "d1")
        assert " - disk.mode/1 -> rw" in out, out
        assert " - disk.name/1 -> scratch" in out, out
        data = FindInstance(vc, "d1")[1][1]
        assert (data["mode"], data["name"]) == ("rw", "scratch")

        for args, message in (
                (("--disk", "0:remove"), "Can't remove disk 0: only the"
                 " last disk (index 1) can be removed"),
                (("--disk", "0:size=8"), "Disk size change not possible,"
                 " use grow-disk"),
                (("--disk", "5:mode=ro"), "Got disk index 5, but there are"
                 " only 2"),
                (("--disk", "add:size=4M,foo=1"), "Unknown disk"
                 " parameter(s) for disk 2: foo"),
                (("--disk", "add:mode=rw"), "Required disk parameter 'size'"
                 " missing"),
                (("--disk", "add:size=4M,name=scratch"), "disk name"
                 " 'scratch' already used"),
                (("--disk", "add:size=100000000M"), "Not enough disk space"
                 " on target node %s" % NODE3),
                (("--new-primary", NODE2, "--disk", "add:size=4M"),
                 "Changing the primary node and the disks at the same time")):
            before = FindInstance(vc, "d1")
            out = _Fail(vc, *args, "d1")
            assert message in out, (args, out)
            assert FindInstance(vc, "d1") == before
        assert sorted(os.listdir(os.path.dirname(path))) == sorted(
            os.path.basename(disk["logical_id"][1])
            for disk in FindInstance(vc, "d1")[1])

        vc.Run("gnt-instance", "startup", "d1")
        out = _Fail(vc, "--disk", "remove", "d1")
        assert "Instance 'd1' is marked to be up, cannot remove disks" in out
        assert os.path.exists(path)
        # Adding works on a running instance (used from its next start)
        out = _Modify(vc, "--disk", "add:size=4M", "d1")
        assert " - disk/2 -> add:size=4,mode=rw" in out, out
        extra = node3.NodePath(FindInstance(vc, "d1")[1][2]
                               ["logical_id"][1])
        assert os.path.exists(extra)
        vc.Run("gnt-instance", "shutdown", "d1")

        out = _Modify(vc, "--disk", "remove", "--disk", "-1:remove", "d1")
        assert " - disk/2 -> remove" in out and " - disk/1 -> remove" in out
        assert not os.path.exists(extra) and not os.path.exists(path)
        assert [disk["size"] for disk in FindInstance(vc, "d1")[1]] == [4]
        out = _Fail(vc, "--disk", "remove", "d1")
        assert "Cannot remove the last disk of an instance" in out
    finally:
        _Remove(vc, "d1")


def test_nics(vc):
    _Add(vc, "n1", NODE2, "-t", "diskless", "--no-start",
         "--net", "0:mac=aa:00:00:00:01:01,link=br0")
    _Add(vc, "n2", NODE2, "-t", "diskless", "--no-start",
         "--net", "0:mac=aa:00:00:00:02:01")
    try:
        out = _Modify(vc, "--net", "add:link=br1,ip=10.88.0.5,name=back",
                      "n1")
        nics = FindInstance(vc, "n1")[0]["nics"]
        assert len(nics) == 2
        assert (nics[1]["ip"], nics[1]["name"], nics[1]["nicparams"]) == \
            ("10.88.0.5", "back", {"link": "br1"})
        prefix = Config(vc)["cluster"]["mac_prefix"]
        assert nics[1]["mac"].startswith(prefix + ":")
        assert " - nic.1 -> add:mac=%s,ip=10.88.0.5,mode=bridged,link=br1," \
            "network=None" % nics[1]["mac"] in out, out

        out = _Modify(vc, "--net", "1:mac=aa:00:00:00:01:02,link=br2",
                      "--net", "0:mode=default", "n1")
        assert " - nic.mac/1 -> aa:00:00:00:01:02" in out, out
        assert " - nic.link/1 -> br2" in out, out
        nics = FindInstance(vc, "n1")[0]["nics"]
        assert nics[1]["mac"] == "aa:00:00:00:01:02"
        assert nics[1]["nicparams"] == {"link": "br2"}
        assert nics[0]["nicparams"] == {"link": "br0"}

        for args, message in (
                (("--net", "1:mac=aa:00:00:00:02:01"),
                 "MAC address 'aa:00:00:00:02:01' already in use in"
                 " cluster"),
                (("--net", "add:mac=AA:00:00:00:01:01"),
                 "MAC address 'aa:00:00:00:01:01' already in use"),
                (("--net", "0:remove"), "Can't remove NIC 0: only the last"
                 " NIC (index 1) can be removed"),
                (("--net", "0:name=back"), "NIC name 'back' already used"),
                (("--net", "remove", "--net", "remove", "--net", "remove"),
                 "Got NIC index -1, but there are only 0")):
            before = FindInstance(vc, "n1")
            out = _Fail(vc, *args, "n1")
            assert message in out, (args, out)
            assert FindInstance(vc, "n1") == before

        out = _Modify(vc, "--net", "1:mac=generate", "n1")
        new_mac = FindInstance(vc, "n1")[0]["nics"][1]["mac"]
        assert new_mac.startswith(prefix + ":")
        assert " - nic.mac/1 -> %s" % new_mac in out
        out = _Modify(vc, "--net", "remove", "n1")
        assert " - NIC/1 -> remove" in out, out
        nics = FindInstance(vc, "n1")[0]["nics"]
        assert [nic["mac"] for nic in nics] == ["aa:00:00:00:01:01"]
    finally:
        _Remove(vc, "n1")
        _Remove(vc, "n2")


def test_offline_and_online(vc):
    _Add(vc, "o1", NODE3, "-t", "diskless", "-B", "maxmem=32,minmem=32")
    try:
        out = _Fail(vc, "--offline", "o1")
        assert "Instance 'o1' is marked to be up, can't change to offline" \
            " without being down first" in out
        out = _Fail(vc, "--online", "o1")
        assert "Instance 'o1' is marked to be up, can't change to online" \
            " (down) without being offline first" in out
        vc.Run("gnt-instance", "shutdown", "o1")
        out = _Modify(vc, "--offline", "o1")
        assert " - admin_state -> offline" in out, out
        assert FindInstance(vc, "o1")[0]["admin_state"] == "offline"
        status = vc.Run("gnt-instance", "list", "--no-headers", "-o",
                        "status", "o1").stdout.strip()
        assert status == "ADMIN_offline"
        out = _Modify(vc, "--online", "o1")
        assert " - admin_state -> down" in out, out
        assert FindInstance(vc, "o1")[0]["admin_state"] == "down"
    finally:
        _Remove(vc, "o1")


def test_new_primary_needs_the_files(vc):
    node2, node3 = vc.nodes[NODE2], vc.nodes[NODE3]
    _Add(vc, "m1", NODE2, "-t", "file", "--disk", "0:size=4M",
         "-B", "maxmem=32,minmem=32")
    try:
        out = _Fail(vc, "--new-primary", NODE3, "m1")
        assert "Instance is still running on %s" % NODE2 in out, out
        vc.Run("gnt-instance", "shutdown", "m1")
        (disk, ) = FindInstance(vc, "m1")[1]
        vpath = disk["logical_id"][1]
        out = _Fail(vc, "--new-primary", NODE3, "m1")
        assert "disk disk/0 (%s) not found on that node" % vpath in out, out
        assert NODE3 in out
        assert FindInstance(vc, "m1")[0]["primary_node"] == \
            NodeUuid(vc, NODE2)

        # The administrator copies the disk over
        target = node3.NodePath(vpath)
        os.makedirs(os.path.dirname(target))
        shutil.copy(node2.NodePath(vpath), target)
        _Modify(vc, "--new-primary", NODE3, "m1")
        inst, disks = FindInstance(vc, "m1")
        assert inst["primary_node"] == NodeUuid(vc, NODE3)
        assert disks[0]["nodes"] == [NodeUuid(vc, NODE3)]
        vc.Run("gnt-instance", "startup", "m1")
        assert os.path.exists(FakeState(node3, "m1"))
    finally:
        _Remove(vc, "m1")


def test_memory(vc):
    node2 = vc.nodes[NODE2]
    _Add(vc, "mem1", NODE2, "-t", "diskless", "-B", "maxmem=128,minmem=64")
    try:
        out = _Modify(vc, "--runtime-memory", "96", "mem1")
        assert " - runtime_memory -> 96" in out, out
        assert _FakeMemory(node2, "mem1") == 96
        out = _Fail(vc, "-m", "32", "mem1")
        assert "Instance mem1 must have memory between 64 and 128 MB of" \
            " memory unless --force is given" in out, out
        _Modify(vc, "-m", "32", "--force", "mem1")
        assert _FakeMemory(node2, "mem1") == 32
        out = _Fail(vc, "-m", "1000000000", "--force", "mem1")
        assert "Not enough memory on node %s for ballooning memory for" \
            " instance mem1: needed %d MiB" % (NODE2, 1000000000 - 32) in out
        assert _FakeMemory(node2, "mem1") == 32

        out = _Fail(vc, "-B", "maxmem=1000000000", "mem1")
        assert "Not enough memory on node %s for the new maximum memory of" \
            " instance mem1: needed %d MiB" % (NODE2, 1000000000 - 32) in out
        assert FindInstance(vc, "mem1")[0]["beparams"]["maxmem"] == 128
        # Forced, the change is recorded for the next start
        _Modify(vc, "-B", "maxmem=1000000000", "--force", "mem1")
        assert FindInstance(vc, "mem1")[0]["beparams"]["maxmem"] == \
            1000000000
    finally:
        _Remove(vc, "mem1")


def test_hooks_see_the_new_values(vc):
    record = os.path.join(vc.base, "modify-hook.env")
    hooks = vc.NodePath(os.path.join(pathutils.HOOKS_BASE_DIR,
                                     "instance-modify-pre.d"))
    os.makedirs(hooks)
    script = os.path.join(hooks, "10-env")
    with open(script, "w", encoding="ascii") as fobj:
        fobj.write("#!/bin/sh\nenv > %s\n" % record)
    os.chmod(script, 0o755)
    _Add(vc, "h1", NODE2, "-t", "diskless", "-B", "maxmem=64,minmem=64",
         "--net", "0:mac=aa:00:00:00:03:01")
    try:
        _Modify(vc, "-B", "maxmem=80", "--net", "add:mac=aa:00:00:00:03:02",
                "-m", "72", "h1")
        with open(record, encoding="ascii") as fobj:
            env = dict(line.split("=", 1) for line in
                       fobj.read().splitlines() if "=" in line)
        assert env["GANETI_HOOKS_PATH"] == "instance-modify"
        assert env["GANETI_OP_CODE"] == "OP_INSTANCE_SET_PARAMS"
        assert env["GANETI_INSTANCE_NAME"] == "h1"
        assert env["GANETI_INSTANCE_MAXMEM"] == "80"
        assert env["GANETI_INSTANCE_NIC_COUNT"] == "2"
        assert env["GANETI_INSTANCE_NIC1_MAC"] == "aa:00:00:00:03:02"
        assert env["GANETI_RUNTIME_MEMORY"] == "72"
    finally:
        shutil.rmtree(hooks)
        _Remove(vc, "h1")
