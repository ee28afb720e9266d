"""utils.io.LockFile: the one way daemons and tools take a lock file."""

import os
import subprocess
import sys
import time

import pytest

from ganeti import errors, utils

pytestmark = pytest.mark.unit

# Holds the lock given as argv[1] until its standard input closes
_HOLDER = ("import sys\nfrom ganeti import utils\n"
           "utils.LockFile(sys.argv[1])\nprint('locked', flush=True)\n"
           "sys.stdin.read()\n")


def test_lock_file_excludes_other_processes(tmp_path):
    path = str(tmp_path / "lock")
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, path],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(errors.LockError, match="lock is locked by"):
            utils.LockFile(path)
        start = time.monotonic()
        with pytest.raises(errors.LockError):
            utils.LockFile(path, timeout=0.3)
        assert time.monotonic() - start >= 0.3
        # A waiting caller gets the lock once the holder is gone
        holder.stdin.close()
        fd = utils.LockFile(path, timeout=10)
        os.close(fd)
    finally:
        holder.kill()
        holder.wait()


def test_lock_file_created_private_and_released_on_close(tmp_path):
    path = str(tmp_path / "lock")
    fd = utils.LockFile(path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    os.close(fd)
    os.close(utils.LockFile(path))
