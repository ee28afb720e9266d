"""gnt-cluster repair-disk-sizes, show-ispecs-cmd and rename on a real
virtual cluster (fake hypervisor, file disks).

Disk images are resized behind the cluster's back, as an administrator
might, and repair-disk-sizes must bring the configuration in line; the
command line show-ispecs-cmd prints must reproduce the policy it shows;
a renamed cluster's name must reach every node's ssconf files.
"""

import json
import os
import shlex

import pytest

from ganeti import pathutils, ssconf

from testutils_instance import (CHECKS, MIB, NODE2, DiskPaths, Fail,
                                FindInstance, InstanceCluster,
                                RemoveInstances)

pytestmark = pytest.mark.integration

_BOUNDS = ("min:cpu-count=1,disk-count=1,disk-size=1,memory-size=16,"
           "nic-count=1,spindle-use=1/max:cpu-count=8,disk-count=4,"
           "disk-size=600,memory-size=4096,nic-count=4,spindle-use=4")
_STD = ("cpu-count=1,disk-count=1,disk-size=64,memory-size=32,nic-count=1,"
        "spindle-use=1")


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster(os_image=False, nodes=(NODE2, )) as cluster:
        cluster.Run("gnt-cluster", "modify", "--ipolicy-bounds-specs",
                    _BOUNDS, "--ipolicy-std-specs", _STD)
        yield cluster


def _AddFileInstance(cluster, name):
    cluster.Run("gnt-instance", "add", "-t", "file", "--no-install",
                "--no-start", "-n", NODE2, "-B", "maxmem=32,minmem=32",
                "--disk", "0:size=16M", "--disk", "1:size=8M", *CHECKS, name)


def _Sizes(cluster, name):
    return [disk["size"] for disk in FindInstance(cluster, name)[1]]


def _Resize(path, mib):
    with open(path, "r+b") as fobj:
        fobj.truncate(mib * MIB)


def _LastJobResult(cluster):
    out = cluster.Run("gnt-job", "list", "--no-headers", "--separator=|",
                      "-o", "id,opresult").stdout
    last = max(out.splitlines(), key=lambda line: int(line.split("|")[0]))
    return last.split("|", 1)[1]


def test_repair_disk_sizes(vc):
    _AddFileInstance(vc, "rep1")
    _AddFileInstance(vc, "rep2")
    try:
        rep1 = DiskPaths(vc, "rep1", NODE2)
        rep2 = DiskPaths(vc, "rep2", NODE2)
        _Resize(rep1[0], 20)
        _Resize(rep2[1], 4)

        # Only the named instance is looked at
        out = vc.Run("gnt-cluster", "repair-disk-sizes", "rep1").stdout
        assert ("Disk 0 of instance rep1 has mismatched size, correcting:"
                " recorded 16, actual 20") in out
        assert "rep2" not in out
        assert _Sizes(vc, "rep1") == [20, 8]
        assert _Sizes(vc, "rep2") == [16, 8]
        assert json.loads(_LastJobResult(vc).replace("'", '"')) == \
            [[["rep1", 0, "size", 20]]]

        # All instances by default; the corrected one is left alone
        out = vc.Run("gnt-cluster", "repair-disk-sizes").stdout
        assert ("Disk 1 of instance rep2 has mismatched size, correcting:"
                " recorded 8, actual 4") in out
        assert "rep1" not in out
        assert _Sizes(vc, "rep2") == [16, 4]
        assert os.stat(rep2[1]).st_size == 4 * MIB

        # Nothing left to correct
        out = vc.Run("gnt-cluster", "repair-disk-sizes").stdout
        assert "mismatched" not in out

        assert "Instance 'nosuch' not known" in \
            Fail(vc, "gnt-cluster", "repair-disk-sizes", "nosuch")
    finally:
        RemoveInstances(vc, "rep1", "rep2")


def _IPolicy(cluster):
    info = json.loads(cluster.Run("gnt-cluster", "dump-info").stdout)
    return info["ipolicy"], info["name"]


def test_show_ispecs_cmd(vc):
    second = ("min:cpu-count=2,disk-count=1,disk-size=1024,memory-size=128,"
              "nic-count=1,spindle-use=1/max:cpu-count=16,disk-count=8,"
              "disk-size=4096,memory-size=8192,nic-count=8,spindle-use=8")
    vc.Run("gnt-cluster", "modify", "--ipolicy-bounds-specs",
           _BOUNDS + "//" + second, "--ipolicy-std-specs", _STD)
    expected, name = _IPolicy(vc)

    out = vc.Run("gnt-cluster", "show-ispecs-cmd").stdout
    assert out == ("gnt-cluster init --ipolicy-std-specs %s"
                   " --ipolicy-bounds-specs %s//%s %s\n" %
                   (_STD, _BOUNDS, second, name))

    # The printed options, given to modify, restore the policy's specs
    vc.Run("gnt-cluster", "modify", "--ipolicy-bounds-specs", _BOUNDS,
           "--ipolicy-std-specs", _STD.replace("memory-size=32",
                                               "memory-size=64"))
    assert _IPolicy(vc)[0] != expected
    args = shlex.split(out)
    assert args[:2] == ["gnt-cluster", "init"] and args[-1] == name
    vc.Run("gnt-cluster", "modify", *args[2:-1])
    assert _IPolicy(vc)[0] == expected


def _SsconfName(node):
    with open(node.NodePath(os.path.join(pathutils.DATA_DIR, "ssconf_" +
                                         ssconf.SS_CLUSTER_NAME)),
              encoding="utf-8") as fobj:
        return fobj.read().strip()


def test_rename(vc):
    old = vc.cluster_name
    # Names an administrator would have added to the resolver
    with open(vc.hosts_file, "a", encoding="utf-8") as fobj:
        fobj.write("%s renamed.example.test\n" % vc.cluster_ip)
        fobj.write("%s.200 taken.example.test\n" % vc.net)

    assert "does not resolve" in \
        Fail(vc, "gnt-cluster", "rename", "-f", "nosuch.invalid")
    assert "Neither the name nor the IP address of the cluster has" \
        " changed" in Fail(vc, "gnt-cluster", "rename", "-f", old)
    # On loopback every address answers (refusing): the new IP is in use
    assert "The given cluster IP address (%s.200) is reachable on the" \
        " network" % vc.net in \
        Fail(vc, "gnt-cluster", "rename", "-f", "taken.example.test")

    try:
        out = vc.Run("gnt-cluster", "rename", "-f",
                     "renamed.example.test").stdout
        assert "Cluster renamed from '%s' to 'renamed.example.test'" % old \
            in out
        assert _IPolicy(vc)[1] == "renamed.example.test"
        assert [_SsconfName(node) for node in vc.nodes.values()] == \
            ["renamed.example.test"] * len(vc.nodes)
        vc.Run("gnt-cluster", "verify")
    finally:
        vc.Run("gnt-cluster", "rename", "-f", old, check=False)
    assert _IPolicy(vc)[1] == old
