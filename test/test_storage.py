"""Instance storage on a node: file, sharedfile, blockdev and ext devices.

The devices work on real files, real loop devices (skipped where they
can't be created) and the real provider scripts; only the node's paths
(allow-lists, ssconf, search path, logs) are pointed into a temporary
directory.
"""

import os
import shutil
import stat
import subprocess

import pytest

from ganeti import constants, errors, objects, pathutils, storage
from ganeti.storage import base, blockdev, extstorage, filestorage

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE_PROVIDER = os.path.join(REPO_DIR, "share", "extstorage",
                                "example-file")
MIB = 1024 * 1024


class Node:
    """The node's directories, all below a temporary directory."""

    def __init__(self, tmp_path, monkeypatch):
        self.tmp = str(tmp_path)
        self.data_dir = os.path.join(self.tmp, "data")
        self.conf_dir = os.path.join(self.tmp, "conf")
        self.file_dir = os.path.join(self.tmp, "file-storage")
        self.shared_dir = os.path.join(self.tmp, "shared-storage")
        self.es_dir = os.path.join(self.tmp, "extstorage")
        self.es_log_dir = os.path.join(self.tmp, "log", "extstorage")
        for path in (self.data_dir, self.conf_dir, self.file_dir,
                     self.shared_dir, self.es_dir):
            os.makedirs(path)
        self.paths_file = os.path.join(self.conf_dir, "file-storage-paths")
        self.blockdev_file = os.path.join(self.conf_dir, "blockdev-paths")
        for name, value in (
                ("DATA_DIR", self.data_dir),
                ("FILE_STORAGE_PATHS_FILE", self.paths_file),
                ("BLOCKDEV_PATHS_FILE", self.blockdev_file),
                ("ES_SEARCH_PATH", [self.es_dir]),
                ("LOG_ES_DIR", self.es_log_dir)):
            monkeypatch.setattr(pathutils, name, value)
        self.WriteSsconf(self.file_dir, self.shared_dir)
        self.AllowPaths(self.file_dir, self.shared_dir)

    def WriteSsconf(self, file_dir: str, shared_dir: str) -> None:
        for key, value in (("file_storage_dir", file_dir),
                           ("shared_file_storage_dir", shared_dir)):
            with open(os.path.join(self.data_dir, "ssconf_" + key), "w",
                      encoding="utf-8") as fobj:
                fobj.write(value + "\n")

    def AllowPaths(self, *paths: str) -> None:
        with open(self.paths_file, "w", encoding="utf-8") as fobj:
            fobj.write("# allowed\n\n" + "".join(p + "\n" for p in paths))


@pytest.fixture
def node(tmp_path, monkeypatch):
    return Node(tmp_path, monkeypatch)


def FileDisk(path: str, size: int = 4,
             template: str = constants.DT_FILE) -> objects.Disk:
    return objects.Disk(dev_type=template,
                        logical_id=[constants.FD_LOOP, path], size=size,
                        mode="rw", iv_name="disk/0", uuid="d-uuid",
                        name="d-name")


# file and sharedfile -----------------------------------------------------

@pytest.mark.parametrize("template", [constants.DT_FILE,
                                      constants.DT_SHARED_FILE])
def test_file_lifecycle(node, template):
    root = node.file_dir if template == constants.DT_FILE \
        else node.shared_dir
    path = os.path.join(root, "inst1.example.com", "disk0")
    disk = FileDisk(path, size=4, template=template)
    dev = storage.Create(disk, False)
    assert dev.dev_path == path
    assert os.path.getsize(path) == 4 * MIB
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert storage.Assemble(disk).dev_path == path
    assert storage.GetDevice(disk).GetActualDimensions() == (4 * MIB, None)
    with open(path, "r+b") as fobj:
        fobj.write(b"payload")

    dev = storage.GetDevice(disk)
    dev.Grow(2, True, True, False)
    assert os.path.getsize(path) == 4 * MIB
    dev.Grow(2, False, True, False)
    assert os.path.getsize(path) == 6 * MIB
    with pytest.raises(errors.BlockDeviceError, match="Cannot shrink"):
        dev.Grow(-1, False, True, False)
    assert os.path.getsize(path) == 6 * MIB
    with open(path, "rb") as fobj:
        assert fobj.read(7) == b"payload"

    dev.Shutdown()
    assert os.path.exists(path)
    dev.Remove()
    assert not os.path.exists(path)
    # The instance directory went with its last file, the root stays
    assert not os.path.exists(os.path.dirname(path))
    assert os.path.isdir(root)
    dev.Remove()
    with pytest.raises(errors.BlockDeviceError, match="does not exist"):
        storage.Assemble(disk)


def test_file_never_overwritten(node):
    path = os.path.join(node.file_dir, "disk0")
    with open(path, "wb") as fobj:
        fobj.write(b"precious")
    with pytest.raises(errors.BlockDeviceError, match="File already"):
        storage.Create(FileDisk(path), False)
    with open(path, "rb") as fobj:
        assert fobj.read() == b"precious"


def test_file_allow_list_refusals(node, tmp_path):
    outside = str(tmp_path / "elsewhere")
    os.makedirs(outside)
    # Below the storage directory but not allowed
    node.AllowPaths(outside)
    with pytest.raises(errors.BlockDeviceError,
                       match="is not acceptable for file storage"):
        storage.Create(FileDisk(os.path.join(node.file_dir, "d")), False)
    # Allowed but not below the cluster's storage directory
    with pytest.raises(errors.BlockDeviceError,
                       match="not below the cluster's file storage"):
        storage.Create(FileDisk(os.path.join(outside, "d")), False)
    # No allow-list at all
    os.unlink(node.paths_file)
    with pytest.raises(errors.BlockDeviceError,
                       match="No paths are valid or path file"):
        storage.Create(FileDisk(os.path.join(node.file_dir, "d")), False)
    # System directories in the allow-list are ignored
    node.WriteSsconf("/etc", node.shared_dir)
    node.AllowPaths("/", "/etc", "relative/path")
    assert filestorage.LoadAllowedFileStoragePaths(node.paths_file) == []
    with pytest.raises(errors.BlockDeviceError, match="No paths are valid"):
        storage.Create(FileDisk("/etc/ganeti-test-disk"), False)
    assert not os.path.exists("/etc/ganeti-test-disk")
    assert filestorage.ComputeWrongFileStoragePaths(
        ["/", "/srv/ganeti", "/usr", "x"]) == ["/", "/usr", "x"]


def test_file_path_tricks(node, tmp_path):
    escape = str(tmp_path / "escape")
    os.makedirs(escape)
    os.symlink(escape, os.path.join(node.file_dir, "link"))
    with pytest.raises(errors.BlockDeviceError, match="symbolic link"):
        storage.Create(FileDisk(os.path.join(node.file_dir, "link", "d")),
                       False)
    with pytest.raises(errors.BlockDeviceError, match="not below"):
        storage.Create(FileDisk(node.file_dir + "/../elsewhere/d"), False)
    with pytest.raises(errors.BlockDeviceError, match="Invalid file driver"):
        storage.Create(objects.Disk(
            dev_type=constants.DT_FILE, size=1,
            logical_id=["nbd", os.path.join(node.file_dir, "d")]), False)
    assert os.listdir(escape) == []


def test_unsupported_templates(node):
    with pytest.raises(errors.BlockDeviceError, match="not supported"):
        storage.GetDevice(objects.Disk(dev_type=constants.DT_PLAIN, size=1,
                                       logical_id=["vg", "lv"]))
    # drbd is supported (test_storage_drbd) and checks its logical id
    with pytest.raises(errors.BlockDeviceError, match="drbd logical id"):
        storage.GetDevice(objects.Disk(dev_type=constants.DT_DRBD8, size=1,
                                       logical_id=["vg", "lv"]))


def test_file_storage_unit(node):
    storage.Create(FileDisk(os.path.join(node.file_dir, "i1", "disk0"),
                            size=3), False)
    fields = ["name", "size", "used", "free", "allocatable"]
    unit = storage.GetStorageUnit(constants.ST_FILE, [node.file_dir])
    [row] = unit.List(None, fields)
    statvfs = os.statvfs(node.file_dir)
    assert row[0] == node.file_dir
    assert row[1] == statvfs.f_blocks * statvfs.f_frsize // MIB
    assert row[2] == 3
    assert 0 <= row[3] <= row[1]
    assert row[4] is True
    assert unit.List("/other", fields) == []
    assert unit.List(node.file_dir, ["used"]) == [[3]]
    with pytest.raises(errors.StorageError, match="Unknown storage field"):
        unit.List(None, ["name", "bogus"])
    with pytest.raises(errors.StorageError, match="can't be listed"):
        storage.GetStorageUnit("lvm-vg", ["xenvg"])
    with pytest.raises(errors.StorageError, match="not acceptable"):
        storage.GetStorageUnit(constants.ST_FILE, ["/tmp"])


# blockdev ----------------------------------------------------------------

def test_blockdev_adopt(node, loop_device):
    disk = objects.Disk(dev_type=constants.DT_BLOCK, size=4,
                        logical_id=[constants.BLOCKDEV_DRIVER_MANUAL,
                                    loop_device])
    dev = storage.Create(disk, False)
    assert dev.dev_path == loop_device
    assert storage.Assemble(disk).dev_path == loop_device
    assert storage.GetDevice(disk).GetActualSize() == 4 * MIB
    with pytest.raises(errors.BlockDeviceError, match="Cannot shrink"):
        dev.Grow(-1, False, True, False)
    with pytest.raises(errors.BlockDeviceError, match="not supported"):
        dev.Grow(1, False, True, False)
    dev.Shutdown()
    dev.Remove()
    # Removing an adopted disk leaves the device to its owner
    assert stat.S_ISBLK(os.stat(loop_device).st_mode)


def test_blockdev_allow_list(node, loop_device, tmp_path):
    def _Disk(path):
        return objects.Disk(dev_type=constants.DT_BLOCK, size=1,
                            logical_id=[constants.BLOCKDEV_DRIVER_MANUAL,
                                        path])

    with pytest.raises(errors.BlockDeviceError,
                       match="outside the adoptable block device paths"):
        storage.Create(_Disk("/dev/null"), False)
    with pytest.raises(errors.BlockDeviceError, match="normalized"):
        storage.Create(_Disk("/dev/disk/../" + loop_device[5:]), False)
    # Matches a pattern but is not a block device
    with pytest.raises(errors.BlockDeviceError, match="not a block device"):
        storage.Create(_Disk("/dev/loop-control"), False)
    # A cluster allow-list replaces the default patterns
    with open(node.blockdev_file, "w", encoding="utf-8") as fobj:
        fobj.write("# only by-id\n/dev/disk/by-id/*\n")
    with pytest.raises(errors.OpPrereqError, match="/dev/disk/by-id/"):
        blockdev.CheckAdoptablePath(loop_device)
    with open(node.blockdev_file, "w", encoding="utf-8") as fobj:
        fobj.write("%s\n" % loop_device)
    blockdev.CheckAdoptablePath(loop_device)
    # A link matching the patterns must still point into /dev
    link = str(tmp_path / "link")
    os.symlink("/etc/passwd", link)
    with open(node.blockdev_file, "w", encoding="utf-8") as fobj:
        fobj.write("%s/*\n" % tmp_path)
    with pytest.raises(errors.OpPrereqError, match="lies outside /dev"):
        blockdev.CheckAdoptablePath(link)


# ext ---------------------------------------------------------------------

def InstallRecordingProvider(node: Node, name: str = "recorder") -> str:
    """The example provider behind scripts recording their environment.

    Each script saves its environment to ``$EXTP_DIR/<script>.env`` and
    runs the example provider's script of the same name.
    """
    path = os.path.join(node.es_dir, name)
    os.makedirs(path)
    for script in constants.ES_SCRIPTS:
        with open(os.path.join(path, script), "w", encoding="ascii") as fobj:
            fobj.write("#!/bin/sh\nset -e\nmkdir -p \"$EXTP_DIR\"\n"
                       "env -0 > \"$EXTP_DIR/%s.env\"\n"
                       "exec %s/%s\n" % (script, EXAMPLE_PROVIDER, script))
        os.chmod(os.path.join(path, script), 0o755)
    shutil.copy(os.path.join(EXAMPLE_PROVIDER, "parameters.list"), path)
    return path


def ReadEnv(vol_dir: str, script: str) -> dict[str, str]:
    with open(os.path.join(vol_dir, script + ".env"), "rb") as fobj:
        items = fobj.read().decode("utf-8").split("\0")
    return dict(item.split("=", 1) for item in items if item)


def ExtDisk(vol_dir: str, provider: str = "recorder", size: int = 4,
            **params) -> objects.Disk:
    params = dict({"provider": provider, "access": "kernelspace",
                   "dir": vol_dir}, **params)
    return objects.Disk(dev_type=constants.DT_EXT, size=size,
                        logical_id=[provider, "vol-uuid.ext.disk0"],
                        params=params, name="data", uuid="vol-uuid",
                        iv_name="disk/0")


def test_ext_example_provider_files(node, tmp_path):
    InstallRecordingProvider(node)
    vol_dir = str(tmp_path / "volumes")
    disk = ExtDisk(vol_dir)
    vol_file = os.path.join(vol_dir, "vol-uuid.ext.disk0")

    dev = storage.Create(disk, False)
    assert os.path.getsize(vol_file) == 4 * MIB
    env = ReadEnv(vol_dir, "create")
    assert env["VOL_NAME"] == "vol-uuid.ext.disk0"
    assert env["VOL_SIZE"] == "4"
    assert env["VOL_CNAME"] == "data"
    assert env["VOL_UUID"] == "vol-uuid"
    assert env["EXTP_DIR"] == vol_dir
    assert "EXTP_PROVIDER" not in env and "EXTP_ACCESS" not in env
    assert "VOL_NEW_SIZE" not in env and "VOL_METADATA" not in env
    assert ReadEnv(vol_dir, "verify")["EXTP_DIR"] == vol_dir

    dev = storage.Assemble(disk)
    assert dev.dev_path == vol_file
    assert "VOL_SIZE" not in ReadEnv(vol_dir, "attach")

    dev.SetInfo("originstname+inst1.example.com")
    assert ReadEnv(vol_dir, "setinfo")["VOL_METADATA"] == \
        "originstname+inst1.example.com"
    with open(vol_file + ".meta", encoding="utf-8") as fobj:
        assert fobj.read() == "originstname+inst1.example.com\n"

    dev.Grow(2, False, True, False)
    env = ReadEnv(vol_dir, "grow")
    assert (env["VOL_SIZE"], env["VOL_NEW_SIZE"]) == ("4", "6")
    assert os.path.getsize(vol_file) == 6 * MIB
    with pytest.raises(errors.BlockDeviceError, match="Cannot shrink"):
        dev.Grow(-2, False, True, False)
    assert os.path.getsize(vol_file) == 6 * MIB
    assert storage.GetDevice(disk).GetActualDimensions() == (6 * MIB, None)

    dev.Shutdown()
    assert ReadEnv(vol_dir, "detach")["VOL_NAME"] == "vol-uuid.ext.disk0"
    dev.Remove()
    assert not os.path.exists(vol_file)
    assert not os.path.exists(vol_file + ".meta")
    logs = os.listdir(node.es_log_dir)
    assert any(name.startswith("create-recorder-vol-uuid.ext.disk0-")
               for name in logs)


def test_ext_example_provider_loop(node, tmp_path):
    InstallRecordingProvider(node)
    vol_dir = str(tmp_path / "volumes")
    disk = ExtDisk(vol_dir, loop="yes")
    vol_file = os.path.join(vol_dir, "vol-uuid.ext.disk0")
    dev = storage.Create(disk, False)
    try:
        try:
            dev.Assemble()
        except errors.BlockDeviceError as err:
            pytest.skip("cannot create loop devices here: %s" % err)
        assert dev.dev_path.startswith("/dev/loop")
        assert stat.S_ISBLK(os.stat(dev.dev_path).st_mode)
        # Attaching again finds the same device
        assert storage.Assemble(disk).dev_path == dev.dev_path
        dev.Grow(4, False, True, False)
        assert dev.GetActualSize() == 8 * MIB
        loop = dev.dev_path
        dev.Shutdown()
        listed = subprocess.run(["losetup", "-j", vol_file],
                                capture_output=True, text=True, check=True)
        assert listed.stdout == ""
        assert os.path.exists(vol_file)
        assert loop
    finally:
        dev.Remove()
    assert not os.path.exists(vol_file)


def test_ext_refusals(node, tmp_path):
    InstallRecordingProvider(node)
    vol_dir = str(tmp_path / "volumes")
    with pytest.raises(errors.BlockDeviceError,
                       match="does not support the parameter.*color"):
        storage.Create(ExtDisk(vol_dir, color="blue"), False)
    # The provider's verify refuses a bad value; nothing is created
    with pytest.raises(errors.BlockDeviceError,
                       match=r"(?s)verify script .* failed \(exited with exit"
                             r" code 1\).*loop must be yes or no"):
        storage.Create(ExtDisk(vol_dir, loop="maybe"), False)
    assert not os.path.exists(os.path.join(vol_dir, "vol-uuid.ext.disk0"))
    with pytest.raises(errors.BlockDeviceError, match="not found"):
        storage.GetDevice(ExtDisk(vol_dir, provider="missing"))
    with pytest.raises(errors.BlockDeviceError, match="Invalid ExtStorage"
                                                      " provider name"):
        storage.GetDevice(ExtDisk(vol_dir, provider="../x"))
    # A provider missing a script is refused, naming the script
    broken = os.path.join(node.es_dir, "broken")
    shutil.copytree(os.path.join(node.es_dir, "recorder"), broken)
    os.unlink(os.path.join(broken, "setinfo"))
    with pytest.raises(errors.BlockDeviceError, match="no 'setinfo' script"):
        storage.GetDevice(ExtDisk(vol_dir, provider="broken"))
    os.chmod(os.path.join(broken, "grow"), 0o644)
    shutil.copy(os.path.join(broken, "grow"), os.path.join(broken,
                                                           "setinfo"))
    with pytest.raises(errors.BlockDeviceError, match="not an executable"):
        storage.GetDevice(ExtDisk(vol_dir, provider="broken"))
    # Failing scripts report the end of their log
    disk = ExtDisk(vol_dir)
    storage.Create(disk, False)
    with pytest.raises(errors.BlockDeviceError,
                       match="(?s)create script .* already exists"):
        storage.Create(disk, False)


def test_ext_environment():
    env = extstorage.GetEnvironment("v", {"dir": "/d"}, size=1)
    assert env == {"VOL_NAME": "v", "VOL_SIZE": "1", "EXTP_DIR": "/d"}
    with pytest.raises(errors.BlockDeviceError, match="Invalid ExtStorage"
                                                      " parameter name"):
        extstorage.GetEnvironment("v", {"a b": "c"})


def test_check_grow_amount():
    assert base.CheckGrowAmount(0, "d") == 0
    for bad in (True, 1.5, "1"):
        with pytest.raises(errors.BlockDeviceError, match="Invalid grow"):
            base.CheckGrowAmount(bad, "d")
