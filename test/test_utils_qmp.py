"""utils.qmp against a real qemu-storage-daemon's monitor."""

import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from ganeti.utils import qmp

QSD = shutil.which("qemu-storage-daemon")


@pytest.fixture
def monitor(tmp_path):
    """The QMP socket of a running qemu-storage-daemon."""
    if QSD is None:
        pytest.skip("qemu-storage-daemon is not installed")
    path = str(tmp_path / "qmp")
    daemon = subprocess.Popen([QSD, "--chardev", "socket,id=m0,path=%s,"
                               "server=on,wait=off" % path,
                               "--monitor", "chardev=m0"])
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            assert time.monotonic() < deadline, "no QMP socket"
            time.sleep(0.05)
        yield path
    finally:
        daemon.kill()
        daemon.wait()


def test_busy_monitor_is_waited_for(monitor):
    """QEMU serves one client and queues few; one more waits its turn
    instead of failing (mond's drbd collector and noded ask the same
    daemons)."""
    first = qmp.QmpConnection(monitor).__enter__()
    queued = []
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(monitor)
        except BlockingIOError:
            sock.close()
            break
        queued.append(sock)
        assert len(queued) < 64, "the queue has no end"
    result = []

    def _Third():
        with qmp.QmpConnection(monitor, timeout=20) as mon:
            result.append(mon.Execute("query-version")["qemu"]["major"])

    thread = threading.Thread(target=_Third)
    thread.start()
    time.sleep(0.5)
    assert not result
    for sock in queued:
        sock.close()
    first.close()
    thread.join(20)
    assert result and result[0] >= 1


def test_missing_socket_fails_at_once(tmp_path):
    start = time.monotonic()
    with pytest.raises(qmp.errors.QmpError):
        qmp.QmpConnection(str(tmp_path / "none"), timeout=20).__enter__()
    assert time.monotonic() - start < 5
