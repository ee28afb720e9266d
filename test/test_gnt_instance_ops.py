"""gnt-instance rename, reinstall and console, and the instance policy at
creation, on a real three-node virtual cluster (fake hypervisor); plus
the configuration and node sides of a rename on their own.

Every node has the shipped tinyimage OS (which has a rename script: it
writes the new name to /etc/hostname on the first disk) and "norename",
tinyimage without its rename script. The cluster's policy is opened for
the small instances the tests use (as an administrator of a test cluster
would): memory 32..2048 MiB, disks 1..1024 MiB, up to 64 CPUs. The hosts
file resolves the names the renames use.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from ganeti import config, constants, errors, objects, opcodes, pathutils
from ganeti.client import gnt_instance
from ganeti.utils.text import TryToRoman

from testutils_cluster import WaitForJob
from testutils_config import MakeConfig
from testutils_instance import (CHECKS, FILE_VDIR, NODE2, NODE3, Config,
                                DiskPaths, FakeState, Fail, Field,
                                FindInstance,
                                InstanceCluster, OsVariant, RemoveInstances)

pytestmark = pytest.mark.integration

SMALL = ("-B", "maxmem=32,minmem=32")
# The policy the refusal tests check against
BOUNDS = ("min:memory-size=32,cpu-count=1,disk-count=1,disk-size=1,"
          "nic-count=1,spindle-use=1/max:memory-size=2048,cpu-count=64,"
          "disk-count=4,disk-size=1024,nic-count=4,spindle-use=4")
# Names the renames resolve (the hosts file's last octets)
NEW_NAMES = {"ren2.example.test": 201, "taken.example.test": 202,
             "new3.example.test": 203}


@pytest.fixture(scope="module")
def vc():
    norename = OsVariant({"rename": None})
    with InstanceCluster("--ipolicy-bounds-specs", BOUNDS,
                         extra_os={"norename": norename}) as cluster:
        with open(cluster.hosts_file, "a", encoding="ascii") as fobj:
            for name, octet in NEW_NAMES.items():
                fobj.write("%s.%d %s\n" % (cluster.net, octet, name))
        yield cluster


def _ImageFile(image, path):
    """A file of the ext2 file system tinyimage wrote on a disk image."""
    result = subprocess.run(["debugfs", "-R", "cat %s" % path, image],
                            capture_output=True, text=True, check=True)
    return result.stdout


def _Checksum(path):
    with open(path, "rb") as fobj:
        return hashlib.sha256(fobj.read()).hexdigest()


def _AddFile(cluster, name, node, os_name="tinyimage", *extra):
    cluster.Run("gnt-instance", "add", "-t", "file", "-o", os_name,
                "-n", node, "--disk", "0:size=16M", *SMALL, *CHECKS,
                *extra, name)


# Rename ----------------------------------------------------------------------

def test_rename_file_instance(vc):
    node2 = vc.nodes[NODE2]
    _AddFile(vc, "ren1", NODE2)
    vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
           "--no-start", "-n", NODE3, *SMALL, *CHECKS, "taken.example.test")
    try:
        (old_file, ) = DiskPaths(vc, "ren1", NODE2)
        assert _ImageFile(old_file, "/etc/hostname") == "ren1\n"

        out = Fail(vc, "gnt-instance", "rename", "--no-ip-check", "ren1",
                   "ren2.example.test")
        assert "Instance 'ren1' is marked to be up, cannot rename" in out
        vc.Run("gnt-instance", "stop", "ren1")
        out = Fail(vc, "gnt-instance", "rename", "--no-ip-check", "ren1",
                   "taken.example.test")
        assert "Instance 'taken.example.test' is already in the cluster" \
            in out
        # Every 127/8 address answers (refuses) on this host: "in use"
        out = Fail(vc, "gnt-instance", "rename", "ren1",
                   "ren2.example.test")
        assert "IP %s.201 of instance ren2.example.test already in use" % \
            vc.net in out
        assert os.path.exists(old_file)

        result = vc.Run("gnt-instance", "rename", "--no-ip-check", "ren1",
                        "ren2.example.test")
        assert "Instance 'ren1' renamed to 'ren2.example.test'" in \
            result.stdout
        _, (disk, ) = FindInstance(vc, "ren2.example.test")
        assert disk["logical_id"][1] == os.path.join(
            FILE_VDIR, "ren2.example.test", os.path.basename(old_file))
        (new_file, ) = DiskPaths(vc, "ren2.example.test", NODE2)
        assert os.path.isfile(new_file)
        assert not os.path.exists(os.path.dirname(old_file))
        # The OS rename script ran on the renamed disk
        assert _ImageFile(new_file, "/etc/hostname") == \
            "ren2.example.test\n"
        logs = os.listdir(node2.NodePath(pathutils.LOG_OS_DIR))
        assert any(log.startswith("rename-tinyimage-ren2.example.test-")
                   for log in logs), logs
        out = Fail(vc, "gnt-instance", "startup", "ren1")
        assert "Instance 'ren1' not known" in out
        vc.Run("gnt-instance", "startup", "ren2.example.test")
        assert os.path.exists(FakeState(node2, "ren2.example.test"))
        vc.Run("gnt-instance", "remove", "-f", "ren2.example.test")
        assert not os.path.exists(os.path.dirname(new_file))
    finally:
        RemoveInstances(vc, "ren1", "ren2.example.test", "taken.example.test")


def test_rename_without_name_check_asks_unless_forced(vc):
    result = vc.Run("setsid", "-w", "gnt-instance", "rename",
                    "--no-name-check", "--no-ip-check", "nosuch",
                    "other.example.test", check=False)
    assert result.returncode == constants.EXIT_FAILURE
    assert "'other.example.test' is a FQDN. Continue?" in result.stderr
    assert "not known" not in result.stderr
    out = Fail(vc, "gnt-instance", "rename", "-f", "--no-name-check",
               "--no-ip-check", "nosuch", "other.example.test")
    assert "Instance 'nosuch' not known" in out


def test_config_rename_instance(tmp_path):
    cfg = MakeConfig(str(tmp_path))
    master = cfg.GetMasterNode()
    path = FILE_VDIR + "/sub/i1/u1.disk0"
    inst = objects.Instance(name="i1", primary_node=master,
                            hypervisor=constants.HT_FAKE, os="tinyimage")
    cfg.AddInstance(inst, [objects.Disk(dev_type=constants.DT_FILE, size=4,
                                        logical_id=["loop", path],
                                        nodes=[master])])
    cfg.AddInstance(objects.Instance(name="i2", primary_node=master,
                                     hypervisor=constants.HT_FAKE))
    cfg.RenameInstance(inst.uuid, "i3")
    with pytest.raises(errors.ConfigurationError, match="already used"):
        cfg.RenameInstance(inst.uuid, "i2")
    reopened = config.ConfigWriter(cfg_file=str(tmp_path / "config.data"),
                                   offline=True, accept_foreign=True)
    assert reopened.GetInstanceInfoByName("i1") is None
    assert reopened.GetInstanceInfoByName("i3").uuid == inst.uuid
    (disk, ) = reopened.GetInstanceDisks(inst.uuid)
    assert disk.logical_id == ["loop", FILE_VDIR + "/sub/i3/u1.disk0"]


def test_rename_without_os_rename_script_warns(vc):
    _AddFile(vc, "nor1", NODE3, "norename", "--no-start")
    try:
        result = vc.Run("gnt-instance", "rename", "--no-ip-check", "nor1",
                        "new3.example.test")
        out = result.stdout + result.stderr
        assert "Could not run OS rename script for instance" \
            " new3.example.test" in out, out
        assert "does not support renaming" in out
        _, (disk, ) = FindInstance(vc, "new3.example.test")
        assert disk["logical_id"][1].startswith(
            FILE_VDIR + "/new3.example.test/")
        assert os.path.isfile(DiskPaths(vc, "new3.example.test", NODE3)[0])
    finally:
        RemoveInstances(vc, "nor1", "new3.example.test")


# Reinstall -------------------------------------------------------------------

def test_reinstall_rewrites_the_disk(vc):
    node3 = vc.nodes[NODE3]
    _AddFile(vc, "rei1", NODE3, "tinyimage", "-O", "message=first")
    try:
        (image, ) = DiskPaths(vc, "rei1", NODE3)
        out = Fail(vc, "gnt-instance", "reinstall", "-f", "rei1")
        assert "Instance 'rei1' is marked to be up, cannot reinstall" in out
        vc.Run("gnt-instance", "stop", "rei1")
        # Stopped for the cluster, yet running in the hypervisor
        state = FakeState(node3, "rei1")
        with open(state, "w", encoding="ascii") as fobj:
            fobj.write("0\n32\n1\n")
        out = Fail(vc, "gnt-instance", "reinstall", "-f", "rei1")
        assert "Instance rei1 is running, cannot reinstall" in out
        os.unlink(state)

        # Without -f and without a terminal the answer is "no"
        before = _Checksum(image)
        result = vc.Run("setsid", "-w", "gnt-instance", "reinstall", "rei1",
                        check=False)
        assert result.returncode == constants.EXIT_FAILURE
        assert "Use -f/--force to skip this question" in result.stderr
        assert _Checksum(image) == before

        vc.Run("gnt-instance", "reinstall", "-f", "-O", "message=second",
               "rei1")
        assert _Checksum(image) != before
        assert "second" in _ImageFile(image, "/init")
        inst, _ = FindInstance(vc, "rei1")
        assert inst["osparams"] == {"message": "second"}
        assert inst["admin_state"] == "down"

        out = Fail(vc, "gnt-instance", "reinstall", "-f", "-o", "nosuchos",
                   "rei1")
        assert "nosuchos" in out
        assert FindInstance(vc, "rei1")[0]["os"] == "tinyimage"
        vc.Run("gnt-instance", "reinstall", "-f", "-o", "norename", "rei1")
        assert FindInstance(vc, "rei1")[0]["os"] == "norename"
    finally:
        RemoveInstances(vc, "rei1")


def test_private_and_secret_os_parameters(vc):
    """add and reinstall pass secret OS parameters to the OS scripts of
    that run only; private ones are kept like the public ones."""
    _AddFile(vc, "rei3", NODE3, "tinyimage", "--no-start",
             "--os-parameters-private", "hostname=hidden",
             "--os-parameters-secret", "message=sesame1")
    try:
        (image, ) = DiskPaths(vc, "rei3", NODE3)
        assert "sesame1" in _ImageFile(image, "/init")
        assert _ImageFile(image, "/etc/hostname") == "hidden\n"
        inst, _ = FindInstance(vc, "rei3")
        assert inst["osparams_private"] == {"hostname": "hidden"}
        assert "sesame" not in json.dumps(Config(vc))
        vc.Run("gnt-instance", "reinstall", "-f", "--os-parameters-secret",
               "message=sesame2", "rei3")
        assert "sesame2" in _ImageFile(image, "/init")
        assert _ImageFile(image, "/etc/hostname") == "hidden\n"
        vc.Run("gnt-instance", "reinstall", "-f", "rei3")
        assert "sesame" not in _ImageFile(image, "/init")
        assert "sesame" not in json.dumps(Config(vc))
    finally:
        RemoveInstances(vc, "rei3")


def test_reinstall_diskless_refused(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
           "--no-start", "-n", NODE2, *SMALL, *CHECKS, "rei2")
    try:
        out = Fail(vc, "gnt-instance", "reinstall", "-f", "rei2")
        assert "Instance 'rei2' has no disks" in out
    finally:
        RemoveInstances(vc, "rei2")


# Console ---------------------------------------------------------------------

def test_console(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
           "-n", NODE2, *SMALL, *CHECKS, "con1")
    try:
        for extra in ((), ("--show-cmd", )):
            result = vc.Run("gnt-instance", "console", *extra, "con1")
            assert result.stdout.strip() == \
                "Console not available for fake hypervisor"
        vc.Run("gnt-instance", "stop", "con1")
        out = Fail(vc, "gnt-instance", "console", "con1")
        assert "Instance con1 is not running (state ADMIN_down)" in out
    finally:
        RemoveInstances(vc, "con1")


def test_console_formats():
    ssh = {"instance": "i1", "kind": constants.CONS_SSH, "host": "node1",
           "user": "root", "port": 2222,
           "command": ["xl", "console", "i 1"]}
    assert gnt_instance.FormatConsole(ssh) == \
        "ssh -oEscapeChar=none -oBatchMode=yes -oCheckHostIp=no -t" \
        " -p 2222 root@node1 'xl console '\"'\"'i 1'\"'\"''"
    vnc = {"instance": "i1", "kind": constants.CONS_VNC, "host": "n1",
           "port": 5901, "display": 1}
    assert gnt_instance.FormatConsole(vnc) == \
        "Instance i1 has VNC listening on n1:5901 (display 1), URL" \
        " <vnc://n1:5901/>"
    with pytest.raises(errors.GenericError, match="Unknown console type"):
        gnt_instance.FormatConsole({"kind": "telepathy"})


# Instance policy at creation -------------------------------------------------

@pytest.mark.parametrize("args,violation", [
    (("-t", "diskless", "-B", "maxmem=4096"),
     "memory-size value 4096 is not in range [32, 2048]"),
    (("-t", "file", "--disk", "0:size=2G") + SMALL,
     "disk-size/0 value 2048 is not in range [1, 1024]"),
    (("-t", "diskless", "--no-nics") + SMALL,
     "nic-count value 0 is not in range [1, 4]"),
])
def test_create_refuses_policy_violation(vc, args, violation):
    out = Fail(vc, "gnt-instance", "add", "-o", "tinyimage", "-n", NODE2,
               "--no-start", *args, *CHECKS, "pol1")
    assert "Instance allocation to group" in out and \
        "(default) violates policy" in out, out
    assert violation in out, out
    assert "pol1" not in [inst["name"] for inst
                          in Config(vc)["instances"].values()]


def test_ignore_ipolicy_creates_with_warning(vc):
    try:
        result = vc.Run("gnt-instance", "add", "-t", "diskless", "-o",
                        "tinyimage", "-n", NODE2, "--no-start",
                        "--ignore-ipolicy", "-B", "maxmem=4096,minmem=32",
                        *CHECKS, "pol2")
        out = result.stdout + result.stderr
        assert "memory-size value 4096 is not in range" in out, out
        assert FindInstance(vc, "pol2")[0]["beparams"]["maxmem"] == 4096
    finally:
        RemoveInstances(vc, "pol2")


def test_disk_template_not_allowed(vc):
    vc.Run("gnt-cluster", "modify", "--ipolicy-disk-templates", "diskless")
    try:
        out = Fail(vc, "gnt-instance", "add", "-t", "file", "-o",
                   "tinyimage", "-n", NODE2, "--disk", "0:size=4M",
                   *SMALL, *CHECKS, "pol3")
        assert "Disk template file is not allowed (allowed templates:" \
            " diskless)" in out, out
    finally:
        vc.Run("gnt-cluster", "modify", "--ipolicy-disk-templates",
               "diskless,file")


def _SetGroupPolicy(cluster, ipolicy):
    client = cluster.Luxi()
    job = client.SubmitJob([opcodes.OpGroupSetParams(
        group_name=constants.DEFAULT_GROUP_NAME, ipolicy=ipolicy)])
    assert WaitForJob(client, job) == constants.JOB_STATUS_SUCCESS


def test_group_policy_overrides_cluster_policy(vc):
    _SetGroupPolicy(vc, {"minmax": [{
        "min": {"memory-size": 32, "cpu-count": 1, "disk-count": 1,
                "disk-size": 1, "nic-count": 1, "spindle-use": 1},
        "max": {"memory-size": 256, "cpu-count": 2, "disk-count": 1,
                "disk-size": 1024, "nic-count": 1, "spindle-use": 1}}]})
    try:
        out = Fail(vc, "gnt-instance", "add", "-t", "diskless", "-o",
                   "tinyimage", "-n", NODE3, "--no-start", "-B",
                   "maxmem=512,minmem=32,vcpus=4", *CHECKS, "pol4")
        assert "memory-size value 512 is not in range [32, 256]" in out
        assert "cpu-count value 4 is not in range [1, 2]" in out
    finally:
        _SetGroupPolicy(vc, {"minmax": None})


def test_vcpu_ratio(vc):
    cpus = os.cpu_count()
    if cpus + 1 > 64:
        pytest.skip("more CPUs than the policy's cpu-count bound")
    _SetGroupPolicy(vc, {"vcpu-ratio": 1.0})
    try:
        out = Fail(vc, "gnt-instance", "add", "-t", "diskless", "-o",
                   "tinyimage", "-n", NODE3, "--no-start", "-B",
                   "maxmem=32,minmem=32,vcpus=%d" % (cpus + 1), *CHECKS,
                   "pol5")
        assert "Node %s would have" % NODE3 in out and \
            "vcpu-ratio 1.0" in out, out
    finally:
        _SetGroupPolicy(vc, {"vcpu-ratio": None})


_RENAME_SCRIPT = """
import json, sys
from ganeti import errors
from ganeti.backend import disks as backend_disks
results = []
for old, new, template in json.loads(sys.argv[1]):
    try:
        backend_disks.file_storage_dir_rename(old, new, template)
        results.append("ok")
    except errors.GenericError as err:
        results.append(str(err))
print(json.dumps(results))
"""


def test_file_storage_dir_rename_checks(vc):
    """The node side of the rename, run as node2 (its root, ssconf and
    allow-list)."""
    node2 = vc.nodes[NODE2]
    base = node2.NodePath(FILE_VDIR)
    os.makedirs(os.path.join(base, "d1"))
    os.makedirs(os.path.join(base, "busy"))
    os.symlink("/", os.path.join(base, "link1"))
    cases = [
        (FILE_VDIR + "/d1", "/etc/d1", "file"),
        (FILE_VDIR + "/d1", FILE_VDIR + "/sub/d2", "file"),
        (FILE_VDIR + "/d1", FILE_VDIR + "/busy", "file"),
        (FILE_VDIR + "/link1", FILE_VDIR + "/link2", "file"),
        (FILE_VDIR + "/d1", FILE_VDIR + "/d2", "plain"),
        (FILE_VDIR + "/d1", FILE_VDIR + "/d2", "file"),
        # Done before: only the new directory exists
        (FILE_VDIR + "/d1", FILE_VDIR + "/d2", "file"),
        (FILE_VDIR + "/nosuch", FILE_VDIR + "/d3", "file"),
    ]
    try:
        result = node2.Run(sys.executable, "-c", _RENAME_SCRIPT,
                           json.dumps(cases))
        answers = json.loads(result.stdout)
        assert "is not below the cluster's file storage directory" in \
            answers[0]
        assert "only the last path component may change" in answers[1]
        assert "both locations exist" in answers[2]
        # A symbolic link is not followed (it could lead anywhere)
        assert "link1' is not a directory" in answers[3]
        assert "Invalid file disk template 'plain'" in answers[4]
        assert answers[5:7] == ["ok", "ok"]
        assert "is not a directory" in answers[7]
        assert os.path.isdir(os.path.join(base, "d2"))
        assert not os.path.exists(os.path.join(base, "d1"))
    finally:
        for name in ("d1", "d2", "busy"):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        os.unlink(os.path.join(base, "link1"))


# Several instances at once ---------------------------------------------------

def _AdminStates(cluster, *names):
    return [Field(cluster, name, "admin_state") for name in names]


def test_multi_instance_selection(vc):
    """startup/shutdown/reboot/reinstall select instances by name, node,
    node or instance tag or --all, and ask first when acting on several
    (without a terminal: refused, naming --force-multiple)."""
    for name, node in (("mul1", NODE2), ("mul2", NODE3)):
        vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
               "--no-start", "-n", node, *SMALL, *CHECKS, name)
    vc.Run("gnt-instance", "add-tags", "mul2", "grp")
    try:
        result = vc.Run("setsid", "-w", "gnt-instance", "startup", "mul1",
                        "mul2", check=False)
        assert result.returncode == constants.EXIT_FAILURE
        assert "The startup will operate on 2 instances." in result.stderr
        assert "Affected instances:\n  mul1\n  mul2" in result.stderr
        assert "Use --force-multiple to skip this question" in \
            result.stderr
        assert _AdminStates(vc, "mul1", "mul2") == ["down", "down"]

        out = vc.Run("gnt-instance", "startup", "--force-multiple", "mul1",
                     "mul2").stdout
        assert "Submitted jobs " in out and " for mul2 ..." in out
        assert _AdminStates(vc, "mul1", "mul2") == ["up", "up"]
        vc.Run("gnt-instance", "shutdown", "--force-multiple", "--primary",
               NODE2)
        assert _AdminStates(vc, "mul1", "mul2") == ["down", "up"]
        vc.Run("gnt-instance", "shutdown", "--force-multiple", "--tags",
               "grp")
        assert _AdminStates(vc, "mul1", "mul2") == ["down", "down"]
        out = Fail(vc, "gnt-instance", "startup", "--force-multiple",
                   "--node-tags", "nosuchtag")
        assert "Selection filter does not match any instances" in out
        out = Fail(vc, "gnt-instance", "reboot", "--all", "mul1")
        assert "Cluster filter mode takes no arguments" in out

        # --submit prints each job's id and instance, without waiting
        client = vc.Luxi()
        out = vc.Run("gnt-instance", "startup", "--force-multiple",
                     "--submit", "--all").stdout
        jobs = dict(line.split(": ") for line in out.splitlines())
        assert {"mul1", "mul2"} <= set(jobs.values()), out
        for job in jobs:
            assert WaitForJob(client, int(job)) == \
                constants.JOB_STATUS_SUCCESS
        assert _AdminStates(vc, "mul1", "mul2") == ["up", "up"]
        vc.Run("gnt-instance", "shutdown", "--force-multiple", "--instance",
               "mul1", "mul2")

        # Reinstalling several warns that the data goes; each job's
        # failure is reported (a diskless instance has nothing to
        # reinstall)
        result = vc.Run("setsid", "-w", "gnt-instance", "reinstall",
                        "--all", check=False)
        assert "Note: this will remove *all* data for the below" \
            " instances! It will keep the same OS." in \
            " ".join(result.stderr.split())
        out = Fail(vc, "gnt-instance", "reinstall", "--force-multiple",
                   "mul1", "mul2")
        assert "for mul1 has failed" in out and \
            "Instance 'mul1' has no disks" in out, out
    finally:
        RemoveInstances(vc, "mul1", "mul2")


def test_info_roman(vc):
    vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
           "--no-start", "-n", NODE2, *SMALL, *CHECKS, "rom1")
    try:
        serial = FindInstance(vc, "rom1")[0]["serial_no"]
        plain = vc.Run("gnt-instance", "info", "-s", "rom1").stdout
        assert "Serial number: %d\n" % serial in plain
        out = vc.Run("gnt-instance", "info", "-s", "--roman",
                     "rom1").stdout
        assert "Serial number: %s\n" % TryToRoman(serial) in out
        assert "maxmem: XXXII\n" in out and "maxmem: 32\n" in plain
    finally:
        RemoveInstances(vc, "rom1")


def test_cluster_info_roman(vc):
    """gnt-cluster info --roman: Ganeti's integers in roman numerals (its
    cluster parameters, grouped parameters and instance policy)."""
    plain = vc.Run("gnt-cluster", "info").stdout
    out = vc.Run("gnt-cluster", "info", "--roman").stdout
    pool = int(re.search(r"candidate pool size: (\d+)\n", plain).group(1))
    assert "candidate pool size: %s\n" % TryToRoman(pool) in out
    assert "primary ip version: IV\n" in out
    assert re.search(r"\n +vcpus: I\n", out) and \
        re.search(r"\n +vcpus: 1\n", plain)
    assert "memory-size: MMXLVIII\n" in out and \
        "memory-size: 2048\n" in plain


def test_node_failover(vc):
    """gnt-node failover fails over a node's primary instances, one job
    each, after asking (no terminal: declined, exit 2)."""
    vc.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
           "--no-start", "-n", NODE2, *SMALL, *CHECKS, "nfo1")
    try:
        result = vc.Run("setsid", "-w", "gnt-node", "failover", NODE2,
                        check=False)
        assert result.returncode == 2
        assert "Fail over instance(s) 'nfo1'?" in result.stderr
        out = vc.Run("gnt-node", "failover", "-f", NODE2).stdout
        assert "All 1 instance(s) failed over successfully." in out, out
        assert Field(vc, "nfo1", "pnode") != NODE2
    finally:
        RemoveInstances(vc, "nfo1")
