"""The blockdev_* and storage_list RPCs through real noded processes.

Two nodes of a virtual cluster get the cluster's storage directories in
ssconf, the file-storage-paths allow-list and the example ExtStorage
provider, as a real cluster would; then disks of every template are
created, assembled, grown and removed through RpcRunner.
"""

import os
import shutil
import stat
import subprocess

import pytest

from ganeti import constants, objects, pathutils

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE_PROVIDER = os.path.join(REPO_DIR, "share", "extstorage",
                                "example-file")
FILE_DIR = "/srv/ganeti/file-storage"
SHARED_DIR = "/srv/ganeti/shared-file-storage"
MIB = 1024 * 1024


def _SetUpStorage(cluster):
    """The storage directories, allow-list and ExtStorage provider on
    every node, as cluster init and node join give them."""
    names = [node.name for node in cluster.nodes]
    runner = cluster.Runner()
    try:
        results = runner.call_write_ssconf_files(names, {
            "file_storage_dir": FILE_DIR,
            "shared_file_storage_dir": SHARED_DIR})
        results.update(runner.call_upload_file(
            names, pathutils.FILE_STORAGE_PATHS_FILE,
            "%s\n%s\n" % (FILE_DIR, SHARED_DIR), 0o644))
    finally:
        runner.close()
    assert all(result.fail_msg is None for result in results.values())
    for node in cluster.nodes:
        os.makedirs(node.root + FILE_DIR)
        shutil.copytree(EXAMPLE_PROVIDER, node.Path(
            os.path.join(pathutils.ES_SEARCH_PATH[0], "example-file")))


pytestmark = [pytest.mark.integration,
              pytest.mark.noded_cluster(setup=_SetUpStorage)]


def _Ok(result):
    assert result.fail_msg is None, result.fail_msg
    return result.payload


def _Disk(template, logical_id, size=4, **params):
    return objects.Disk(dev_type=template, logical_id=logical_id, size=size,
                        mode="rw", iv_name="disk/0", name="data",
                        uuid="0d6c1bd8-disk", params=params)


def test_file_disk(noded_cluster, noded_runner):
    node1, node2 = noded_cluster.nodes
    vpath = FILE_DIR + "/inst1.example.com/disk0"
    disk = _Disk(constants.DT_FILE, [constants.FD_LOOP, vpath])
    local = node1.root + vpath
    assert _Ok(noded_runner.call_blockdev_create(
        node1.name, disk, 4, "inst1.example.com", True, "info", False)) == \
        [constants.FD_LOOP, vpath]
    assert os.path.getsize(local) == 4 * MIB
    assert _Ok(noded_runner.call_blockdev_assemble(
        node1.name, disk, {"name": "inst1.example.com"}, True, 0)) == local
    assert _Ok(noded_runner.call_blockdev_assemble(
        node1.name, disk, {"name": "inst1.example.com"}, False, 0)) is None
    _Ok(noded_runner.call_blockdev_grow(node1.name, disk, 2, True, True,
                                        False))
    assert os.path.getsize(local) == 4 * MIB
    _Ok(noded_runner.call_blockdev_grow(node1.name, disk, 2, False, True,
                                        False))
    assert os.path.getsize(local) == 6 * MIB
    result = noded_runner.call_blockdev_grow(node1.name, disk, -1, False, True,
                                             False)
    assert "Cannot shrink" in result.fail_msg
    assert os.path.getsize(local) == 6 * MIB
    # The disk exists on node1 only (file storage is per node)
    assert _Ok(noded_runner.call_blockdev_getdimensions(node1.name,
                                                        [disk])) == \
        [[6 * MIB, None]]
    assert _Ok(noded_runner.call_blockdev_getdimensions(node2.name,
                                                        [disk])) == \
        [None]
    result = noded_runner.call_blockdev_assemble(
        node2.name, disk, {"name": "inst1.example.com"}, True, 0)
    assert "disk/0 of instance inst1.example.com" in result.fail_msg
    assert "does not exist" in result.fail_msg
    _Ok(noded_runner.call_blockdev_setinfo(node1.name, disk, "inst1"))
    _Ok(noded_runner.call_blockdev_shutdown(node1.name, disk))
    _Ok(noded_runner.call_blockdev_remove(node1.name, disk))
    assert not os.path.exists(os.path.dirname(local))
    assert os.path.isdir(node1.root + FILE_DIR)


def test_file_disk_refusals(noded_cluster, noded_runner):
    node1 = noded_cluster.nodes[0]
    outside = _Disk(constants.DT_FILE, [constants.FD_LOOP, "/tmp/evil"])
    result = noded_runner.call_blockdev_create(node1.name, outside, 1, "i",
                                               True,
                                               "", False)
    assert "is not below the cluster's file storage directory" in \
        result.fail_msg
    assert not os.path.exists(node1.root + "/tmp/evil")
    allow_list = node1.Path(pathutils.FILE_STORAGE_PATHS_FILE)
    os.rename(allow_list, allow_list + ".off")
    try:
        disk = _Disk(constants.DT_FILE, [constants.FD_LOOP,
                                         FILE_DIR + "/i/disk0"])
        result = noded_runner.call_blockdev_create(node1.name, disk, 1, "i",
                                                   True,
                                                   "", False)
        assert "No paths are valid or path file '%s' does not exist" % \
            pathutils.FILE_STORAGE_PATHS_FILE in result.fail_msg
        assert not os.path.exists(node1.root + FILE_DIR + "/i")
    finally:
        os.rename(allow_list + ".off", allow_list)
    result = noded_runner.call_blockdev_create(
        node1.name, _Disk(constants.DT_PLAIN, ["xenvg", "lv"]), 1, "i", True,
        "", False)
    assert "Disk type 'plain' of disk disk/0 is not supported" in \
        result.fail_msg


def test_sharedfile_disk(noded_cluster, noded_runner):
    node1, node2 = noded_cluster.nodes
    vpath = SHARED_DIR + "/inst2.example.com/disk0"
    disk = _Disk(constants.DT_SHARED_FILE, [constants.FD_LOOP, vpath], 3)
    _Ok(noded_runner.call_blockdev_create(node1.name, disk, 3, "inst2", True,
                                          "",
                                          False))
    # One directory for all node roots: below the virtual cluster's base
    shared = noded_cluster.tmpdir + vpath
    assert os.path.getsize(shared) == 3 * MIB
    assert not os.path.exists(node1.root + vpath)
    for node in (node1, node2):
        assert _Ok(noded_runner.call_blockdev_assemble(
            node.name, disk, {"name": "inst2"}, True, 0)) == shared
    _Ok(noded_runner.call_blockdev_grow(node2.name, disk, 1, False, True,
                                        False))
    assert _Ok(noded_runner.call_blockdev_getdimensions(node1.name,
                                                        [disk])) == \
        [[4 * MIB, None]]
    _Ok(noded_runner.call_blockdev_remove(node2.name, disk))
    assert not os.path.exists(shared)


def test_ext_disk(noded_cluster, noded_runner):
    node1, node2 = noded_cluster.nodes
    disk = _Disk(constants.DT_EXT, ["example-file", "0d6c1bd8.ext.disk0"],
                 provider="example-file", access="kernelspace")
    _Ok(noded_runner.call_blockdev_create(node1.name, disk, 4, "inst3", True,
                                          "originstname+inst3", False))
    # Without the dir parameter the volumes live below the node's root
    vol = node1.root + \
        "/srv/ganeti/extstorage-volumes/example-file/0d6c1bd8.ext.disk0"
    assert os.path.getsize(vol) == 4 * MIB
    with open(vol + ".meta", encoding="utf-8") as fobj:
        assert fobj.read() == "originstname+inst3\n"
    assert _Ok(noded_runner.call_blockdev_assemble(
        node1.name, disk, {"name": "inst3"}, True, 0)) == vol
    _Ok(noded_runner.call_blockdev_grow(node1.name, disk, 4, False, True,
                                        False))
    assert os.path.getsize(vol) == 8 * MIB
    result = noded_runner.call_blockdev_assemble(node2.name, disk,
                                                 {"name": "inst3"}, True, 0)
    assert "attach script for volume 0d6c1bd8.ext.disk0 failed" in \
        result.fail_msg
    assert "volume 0d6c1bd8.ext.disk0 does not exist" in result.fail_msg
    logs = os.listdir(node1.Path(pathutils.LOG_ES_DIR))
    assert any(name.startswith("create-example-file-0d6c1bd8.ext.disk0-")
               for name in logs)
    _Ok(noded_runner.call_blockdev_shutdown(node1.name, disk))
    _Ok(noded_runner.call_blockdev_remove(node1.name, disk))
    assert not os.path.exists(vol)


def test_blockdev_disk(noded_cluster, noded_runner, tmp_path):
    node1 = noded_cluster.nodes[0]
    image = str(tmp_path / "adopt.img")
    with open(image, "wb") as fobj:
        fobj.truncate(2 * MIB)
    result = subprocess.run(["losetup", "-f", "--show", image],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.skip("cannot create loop devices here: %s" %
                    result.stderr.strip())
    device = result.stdout.strip()
    try:
        disk = _Disk(constants.DT_BLOCK,
                     [constants.BLOCKDEV_DRIVER_MANUAL, device], 2)
        _Ok(noded_runner.call_blockdev_create(node1.name, disk, 2, "inst4",
                                              True,
                                              "", False))
        assert _Ok(noded_runner.call_blockdev_assemble(
            node1.name, disk, {"name": "inst4"}, True, 1)) == device
        assert _Ok(noded_runner.call_blockdev_getdimensions(node1.name,
                                                            [disk])) == \
            [[2 * MIB, None]]
        result = noded_runner.call_blockdev_grow(node1.name, disk, 1, False,
                                                 True,
                                                 False)
        assert "Grow is not supported" in result.fail_msg
        _Ok(noded_runner.call_blockdev_remove(node1.name, disk))
        assert stat.S_ISBLK(os.stat(device).st_mode)
        bad = _Disk(constants.DT_BLOCK,
                    [constants.BLOCKDEV_DRIVER_MANUAL, "/dev/null"], 1)
        result = noded_runner.call_blockdev_create(node1.name, bad, 1, "inst4",
                                                   True, "", False)
        assert "/dev/null lies outside the adoptable block device paths" in \
            result.fail_msg
    finally:
        subprocess.run(["losetup", "-d", device], check=False)


def test_storage_list(noded_cluster, noded_runner):
    node1, node2 = noded_cluster.nodes
    disk = _Disk(constants.DT_FILE, [constants.FD_LOOP,
                                     FILE_DIR + "/inst5/disk0"], 5)
    _Ok(noded_runner.call_blockdev_create(node1.name, disk, 5, "inst5", False,
                                          "",
                                          False))
    try:
        fields = ["name", "size", "used", "free", "allocatable"]
        results = noded_runner.call_storage_list(
            [node1.name, node2.name], constants.ST_FILE, [FILE_DIR], None,
            fields)
        rows = {name: _Ok(result) for name, result in results.items()}
        for name, used in ((node1.name, 5), (node2.name, 0)):
            [[unit, size, used_mib, free, allocatable]] = rows[name]
            assert (unit, used_mib, allocatable) == (FILE_DIR, used, True)
            assert 0 <= free <= size
        result = noded_runner.call_storage_list(
            [node1.name], constants.ST_FILE, ["/tmp"], None,
            fields)[node1.name]
        assert "Path '/tmp' is not acceptable for file storage" in \
            result.fail_msg
        result = noded_runner.call_storage_list([node1.name], "lvm-vg",
                                                ["xenvg"],
                                                None, fields)[node1.name]
        assert "can't be listed" in result.fail_msg
    finally:
        _Ok(noded_runner.call_blockdev_remove(node1.name, disk))
