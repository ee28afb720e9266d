"""Node side of the OS API 20: loading definitions, the script
environment, running scripts with their logs, and the shipped tinyimage
OS writing a real ext2 file system onto a plain image file.

The search path and the OS log directory point into a temporary
directory; the scripts run for real.
"""

import os
import shutil
import stat
import struct
import subprocess

import pytest

from ganeti import constants, errors, objects, pathutils
from ganeti.backend import osdef as backend_os

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED_OS_DIR = os.path.join(REPO, "os")
EXT2_MAGIC_OFFSET = 1024 + 56
EXT2_MAGIC = 0xEF53


@pytest.fixture
def osdirs(tmp_path, monkeypatch):
    """A search path (two directories) and the OS log directory."""
    first, second = tmp_path / "os1", tmp_path / "os2"
    first.mkdir()
    second.mkdir()
    monkeypatch.setattr(pathutils, "OS_SEARCH_PATH", [str(first),
                                                      str(second)])
    monkeypatch.setattr(pathutils, "LOG_OS_DIR", str(tmp_path / "log-os"))
    return first, second


def MakeOS(top, name, scripts=None, api="20\n", variants=None,
           parameters="foo The foo parameter\nbar-baz Another one\n",
           omit=()):
    """A throwaway OS definition; ``scripts`` maps script -> shell body."""
    os_dir = top / name
    os_dir.mkdir()
    bodies = {script: "exit 0\n" for script in constants.OS_SCRIPTS}
    bodies.update(scripts or {})
    for script, body in bodies.items():
        if script in omit:
            continue
        path = os_dir / script
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)
    if api is not None:
        (os_dir / constants.OS_API_FILE).write_text(api)
    if variants is not None:
        (os_dir / constants.OS_VARIANTS_FILE).write_text(variants)
    if parameters is not None:
        (os_dir / constants.OS_PARAMETERS_FILE).write_text(parameters)
    return os_dir


def InstanceDict(disk_paths, os_name="testos", **extra):
    """A filled instance dict as the master sends it to the OS RPCs."""
    result = {
        "name": "inst1.example.test",
        "os": os_name,
        "hypervisor": constants.HT_KVM,
        "uuid": "inst-uuid",
        "hvparams": {"kernel_path": "/boot/vmlinuz"},
        "beparams": {"maxmem": 128, "vcpus": 1},
        "osparams": {"foo": "1"},
        "osparams_private": {"bar-baz": "secret"},
        "disks": [{"dev_type": constants.DT_FILE,
                   "logical_id": ["loop", path], "size": 32,
                   "mode": "rw" if idx == 0 else "ro",
                   "uuid": "disk-%d" % idx, "name": "d%d" % idx,
                   "dev_path": path}
                  for idx, path in enumerate(disk_paths)],
        "nics": [{"mac": "aa:00:00:12:34:56", "ip": "10.88.0.5",
                  "uuid": "nic-0",
                  "nicparams": {"mode": "bridged", "link": "br0"}}],
    }
    result.update(extra)
    return result


def _ImageFile(tmp_path, name="disk0", size=16 << 20):
    path = tmp_path / name
    with open(path, "wb") as fobj:
        fobj.truncate(size)
    return str(path)


def _Debugfs(image, command):
    result = subprocess.run(["debugfs", "-R", command, image],
                            capture_output=True, text=True, check=True)
    return result.stdout


def _ShippedOS():
    valid, os_obj = backend_os._TryOSFromDisk("tinyimage", SHIPPED_OS_DIR)
    assert valid, os_obj
    return os_obj


# Loading and diagnosing -----------------------------------------------------

def test_shipped_os_is_valid():
    os_obj = _ShippedOS()
    assert os_obj.api_versions == [20]
    assert os_obj.supported_variants == []
    assert [name for name, _ in os_obj.supported_parameters] == \
        ["hostname", "message"]
    for script in constants.OS_SCRIPTS:
        path = getattr(os_obj, "%s_script" % script)
        assert os.access(path, os.X_OK), path
    assert os_obj.is_trusted


def test_diagnose_reports_valid_and_invalid(osdirs):
    first, second = osdirs
    MakeOS(first, "good", variants="# comment\nsmall\n\nbig\n")
    MakeOS(first, "oldapi", api="5\n")
    MakeOS(first, "nocreate", omit=[constants.OS_SCRIPT_CREATE])
    MakeOS(first, "noparams", parameters=None)
    MakeOS(second, "good")
    (first / "not-an-os").write_text("a file is ignored")
    entries = backend_os.DiagnoseOS()
    by_name = {}
    for entry in entries:
        by_name.setdefault(entry[0], []).append(entry)
    assert set(by_name) == {"good", "oldapi", "nocreate", "noparams"}
    first_good, second_good = by_name["good"]
    assert first_good == [
        "good", str(first / "good"), True, "", ["small", "big"],
        [["foo", "The foo parameter"], ["bar-baz", "Another one"]], [20],
        True]
    assert second_good[1] == str(second / "good")
    (_, _, status, reason, *_), = by_name["oldapi"]
    assert not status and "API version mismatch" in reason
    (_, _, status, reason, *_), = by_name["nocreate"]
    assert not status and "Script 'create' not found" in reason
    (_, _, status, reason, *_), = by_name["noparams"]
    assert not status and "Parameters file" in reason


def test_non_executable_script_is_invalid(osdirs):
    os_dir = MakeOS(osdirs[0], "noexec")
    (os_dir / "verify").chmod(0o644)
    valid, reason = backend_os._TryOSFromDisk("noexec")
    assert not valid
    assert "Script 'verify'" in reason and "executable" in reason


def test_os_from_disk_fails_for_unknown_os(osdirs):
    with pytest.raises(errors.GenericError, match="not found in search"):
        backend_os.OSFromDisk("nosuchos")


def test_variant_checks():
    os_obj = objects.OS(name="deb", path="/x", supported_variants=["a", "b"])
    os_obj.CheckVariant("deb+a")
    with pytest.raises(errors.OpPrereqError, match="must include a variant"):
        os_obj.CheckVariant("deb")
    with pytest.raises(errors.OpPrereqError, match="variant 'c'"):
        os_obj.CheckVariant("deb+c")
    plain = objects.OS(name="plain", path="/x")
    with pytest.raises(errors.OpPrereqError, match="doesn't support var"):
        plain.CheckVariant("plain+a")


# Environment and script runs -------------------------------------------------

def test_scripts_see_exactly_the_os_environment(osdirs, tmp_path,
                                                monkeypatch):
    dump = "env > \"$DISK_0_PATH\"\n"
    MakeOS(osdirs[0], "testos", variants="v1\nv2\n",
           scripts={"create": dump})
    monkeypatch.setenv("LEAKED_FROM_NODED", "1")
    disks = [_ImageFile(tmp_path, "d0", 0), _ImageFile(tmp_path, "d1", 0)]
    backend_os.instance_os_add(InstanceDict(disks, os_name="testos+v2"), True,
                               1)
    env = dict(line.split("=", 1) for line in
               open(disks[0], encoding="utf-8").read().splitlines())
    expected = {
        "OS_API_VERSION": "20",
        "INSTANCE_NAME": "inst1.example.test",
        "INSTANCE_OS": "testos+v2",
        "OS_NAME": "testos",
        "OS_VARIANT": "v2",
        "HYPERVISOR": "kvm",
        "DISK_COUNT": "2",
        "DISK_0_PATH": disks[0],
        "DISK_0_ACCESS": "rw",
        "DISK_0_SIZE": "32",
        "DISK_0_UUID": "disk-0",
        "DISK_0_NAME": "d0",
        "DISK_0_BACKEND_TYPE": "file:loop",
        "DISK_1_PATH": disks[1],
        "DISK_1_ACCESS": "ro",
        "NIC_COUNT": "1",
        "NIC_0_MAC": "aa:00:00:12:34:56",
        "NIC_0_IP": "10.88.0.5",
        "NIC_0_UUID": "nic-0",
        "NIC_0_MODE": "bridged",
        "NIC_0_LINK": "br0",
        "NIC_0_BRIDGE": "br0",
        "OSP_FOO": "1",
        "OSP_BAR_BAZ": "secret",
        "DEBUG_LEVEL": "1",
        "INSTANCE_REINSTALL": "1",
        "INSTANCE_BE_maxmem": "128",
        "INSTANCE_HV_kernel_path": "/boot/vmlinuz",
    }
    for key, value in expected.items():
        assert env.get(key) == value, key
    # The environment is cleared: nothing of noded's own leaks through
    assert "LEAKED_FROM_NODED" not in env
    assert "GANETI_ROOTDIR" not in env and "HOME" not in env


def test_rename_gets_old_name(osdirs, tmp_path):
    MakeOS(osdirs[0], "testos", scripts={
        "rename": "echo \"$OLD_INSTANCE_NAME -> $INSTANCE_NAME\""
                  " > \"$DISK_0_PATH\"\n"})
    disk = _ImageFile(tmp_path, size=0)
    backend_os.instance_run_rename(InstanceDict([disk]), "old.example.test", 0)
    assert open(disk, encoding="utf-8").read() == \
        "old.example.test -> inst1.example.test\n"


def test_failing_script_reports_log_tail(osdirs, tmp_path):
    body = "".join("echo line%d >&2\n" % idx for idx in range(30))
    MakeOS(osdirs[0], "testos", scripts={"create": body + "exit 3\n"})
    disk = _ImageFile(tmp_path, size=0)
    with pytest.raises(errors.GenericError) as err:
        backend_os.instance_os_add(InstanceDict([disk]), False, 0)
    message = str(err.value)
    assert "OS create script failed (exited with exit code 3)" in message
    assert "line29" in message and "line10" in message
    assert "line9\n" not in message
    logs = os.listdir(pathutils.LOG_OS_DIR)
    assert len(logs) == 1
    assert logs[0].startswith("add-testos-inst1.example.test-")
    log_text = open(os.path.join(pathutils.LOG_OS_DIR, logs[0]),
                    encoding="utf-8").read()
    assert "line0\n" in log_text and "line29\n" in log_text


def test_missing_rename_script_refuses_rename(osdirs, tmp_path):
    MakeOS(osdirs[0], "testos", omit=[constants.OS_SCRIPT_RENAME,
                                      constants.OS_SCRIPT_EXPORT,
                                      constants.OS_SCRIPT_IMPORT])
    valid, os_obj = backend_os._TryOSFromDisk("testos")
    assert valid and os_obj.rename_script is None
    disk = _ImageFile(tmp_path, size=0)
    with pytest.raises(errors.GenericError,
                       match="does not support renaming"):
        backend_os.instance_run_rename(InstanceDict([disk]), "old", 0)
    assert not os.path.exists(pathutils.LOG_OS_DIR) or \
        not os.listdir(pathutils.LOG_OS_DIR)


def test_instance_needs_a_valid_variant(osdirs, tmp_path):
    MakeOS(osdirs[0], "testos", variants="v1\n")
    with pytest.raises(errors.GenericError, match="must include a variant"):
        backend_os.instance_os_add(InstanceDict([_ImageFile(tmp_path)]), False,
                                   0)


def test_os_validate(osdirs):
    MakeOS(osdirs[0], "testos", scripts={
        "verify": "[ \"$1\" = parameters ] || exit 9\n"
                  "[ \"$OSP_FOO\" != bad ] || { echo foo is bad >&2;"
                  " exit 1; }\n"})
    checks = [constants.OS_VALIDATE_PARAMETERS]
    assert backend_os.os_validate(True, "testos", checks, {"foo": "ok"}, False)
    assert backend_os.os_validate(False, "missing", checks, {}, False) is False
    with pytest.raises(errors.GenericError, match="not found"):
        backend_os.os_validate(True, "missing", checks, {}, False)
    with pytest.raises(errors.GenericError, match="foo is bad"):
        backend_os.os_validate(True, "testos", checks, {"foo": "bad"}, False)
    with pytest.raises(errors.GenericError, match="not supported by the OS"):
        backend_os.os_validate(True, "testos", checks, {"nope": "1"}, False)
    with pytest.raises(errors.GenericError, match="doesn't support var"):
        backend_os.os_validate(True, "testos+x", checks, {}, False)
    assert backend_os.os_validate(True, "testos+x", checks, {}, True)


# The shipped tinyimage OS --------------------------------------------------

def _Install(osdirs, tmp_path, **osparams):
    os.symlink(os.path.join(SHIPPED_OS_DIR, "tinyimage"),
               osdirs[0] / "tinyimage")
    disk = _ImageFile(tmp_path)
    instance = InstanceDict([disk], os_name="tinyimage",
                            osparams=osparams, osparams_private={})
    backend_os.instance_os_add(instance, False, 0)
    return disk, instance


def test_tinyimage_writes_an_ext2_filesystem(osdirs, tmp_path):
    disk, _ = _Install(osdirs, tmp_path, message="hello from the test")
    assert os.path.getsize(disk) == 16 << 20
    with open(disk, "rb") as fobj:
        fobj.seek(EXT2_MAGIC_OFFSET)
        assert struct.unpack("<H", fobj.read(2))[0] == EXT2_MAGIC
    fsck = subprocess.run(["e2fsck", "-fn", disk], capture_output=True,
                          text=True, check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert _Debugfs(disk, "cat /etc/hostname") == "inst1.example.test\n"
    init = _Debugfs(disk, "cat /init")
    assert init.startswith("#!/bin/busybox sh\n")
    assert "hello from the test" in init
    mode = _Debugfs(disk, "stat /init")
    assert "Mode:  0755" in mode
    assert "init" in _Debugfs(disk, "ls /sbin")
    if shutil.which("busybox") and subprocess.run(
            ["ldd", shutil.which("busybox")], capture_output=True,
            check=False).returncode != 0:
        listing = _Debugfs(disk, "ls -l /bin")
        names = [line.split()[-1] for line in listing.splitlines() if line]
        assert "busybox" in names
    # The applet links are made at boot, by busybox itself
    assert "/bin/busybox --install -s /bin" in init
    logs = os.listdir(pathutils.LOG_OS_DIR)
    assert len(logs) == 1 and logs[0].startswith("add-tinyimage-")


def test_tinyimage_rename_rewrites_hostname(osdirs, tmp_path):
    disk, instance = _Install(osdirs, tmp_path)
    instance["name"] = "renamed.example.test"
    backend_os.instance_run_rename(instance, "inst1.example.test", 0)
    assert _Debugfs(disk, "cat /etc/hostname") == "renamed.example.test\n"


def test_tinyimage_refuses_bad_hostname(osdirs, tmp_path):
    os.symlink(os.path.join(SHIPPED_OS_DIR, "tinyimage"),
               osdirs[0] / "tinyimage")
    checks = [constants.OS_VALIDATE_PARAMETERS]
    assert backend_os.os_validate(True, "tinyimage", checks,
                                  {"hostname": "web1"}, False)
    with pytest.raises(errors.GenericError,
                       match="invalid value 'bad_name!' for parameter"):
        backend_os.os_validate(True, "tinyimage", checks,
                               {"hostname": "bad_name!"}, False)
    instance = InstanceDict([_ImageFile(tmp_path)], os_name="tinyimage",
                            osparams={"hostname": "-x"},
                            osparams_private={})
    with pytest.raises(errors.GenericError, match="invalid host name '-x'"):
        backend_os.instance_os_add(instance, False, 0)


def test_tinyimage_refuses_readonly_first_disk(osdirs, tmp_path):
    os.symlink(os.path.join(SHIPPED_OS_DIR, "tinyimage"),
               osdirs[0] / "tinyimage")
    instance = InstanceDict([_ImageFile(tmp_path)], os_name="tinyimage",
                            osparams={}, osparams_private={})
    instance["disks"][0]["mode"] = "ro"
    with pytest.raises(errors.GenericError, match="read-only"):
        backend_os.instance_os_add(instance, False, 0)


def test_tinyimage_export_import_round_trip(osdirs, tmp_path):
    disk, _ = _Install(osdirs, tmp_path)
    os_dir = os.path.join(SHIPPED_OS_DIR, "tinyimage")
    env = {"PATH": "/sbin:/bin:/usr/sbin:/usr/bin", "EXPORT_INDEX": "0",
           "EXPORT_DISK_PATH": disk}
    dump = subprocess.run([os.path.join(os_dir, "export")], env=env,
                          capture_output=True, check=True).stdout
    assert dump == open(disk, "rb").read()
    target = _ImageFile(tmp_path, "imported")
    subprocess.run([os.path.join(os_dir, "import")], input=dump, check=True,
                   env={"PATH": env["PATH"], "IMPORT_INDEX": "0",
                        "IMPORT_DISK_PATH": target})
    assert open(target, "rb").read() == dump


def test_shipped_files_are_executable():
    os_dir = os.path.join(SHIPPED_OS_DIR, "tinyimage")
    for script in constants.OS_SCRIPTS:
        assert os.stat(os.path.join(os_dir, script)).st_mode & stat.S_IXUSR
