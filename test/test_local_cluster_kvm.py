"""tools/local-cluster --kvm: a real KVM guest in the local cluster.

The script runs as a user would, in a temporary directory; the guest it
boots answers on its serial console, and destroy removes the guest and
the instance bridge. Needs root (the bridge) and QEMU; skipped otherwise.
"""

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from testutils_kvm import RequireGuest
from testutils_node import ProcessesMentioning

# tools/local-cluster's addresses are fixed (127.0.80.x): its tests must
# not run in parallel (see test_local_cluster)
pytestmark = [pytest.mark.integration, pytest.mark.kvm,
              pytest.mark.usefixtures("local_cluster_lock")]

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(TOP, "tools", "local-cluster")


def _Script(base: str, *args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("GANETI_")}
    env["GANETI_LOCAL_CLUSTER_DIR"] = base
    return subprocess.run([SCRIPT] + list(args), env=env,
                          capture_output=True, text=True, timeout=300,
                          check=False)


def _Console(path: str, command: str, expect: str) -> str:
    """Type a command on the guest's serial console; what came back."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(30)
        sock.connect(path)
        sock.sendall(command.encode() + b"\n")
        output = b""
        deadline = time.monotonic() + 30
        while expect.encode() not in output:
            assert time.monotonic() < deadline, output
            output += sock.recv(4096)
    return output.decode(errors="replace")


def _Links() -> str:
    return subprocess.run(["ip", "-o", "link", "show"], capture_output=True,
                          text=True, check=True).stdout


def test_kvm_guest_console_and_destroy():
    if os.geteuid() != 0:
        pytest.skip("tools/local-cluster --kvm needs root (a bridge)")
    RequireGuest()
    tmpdir = tempfile.mkdtemp(prefix="glk", dir="/tmp")
    base = os.path.join(tmpdir, "lc")
    try:
        result = _Script(base, "--kvm")
        out = result.stdout
        assert result.returncode == 0, out + result.stderr
        bridge = re.search(r"Creating bridge (\S+) ", out).group(1)
        assert len(bridge) <= 15 and bridge in _Links()
        assert re.search(r"kvm1\.local +kvm +node1\.local +running", out), out
        assert "The guest is up and answers ping" in out, out
        # The printed socat command reaches the guest's shell
        socket_path = re.search(r"^  socat \S+ UNIX-CONNECT:(\S+)$", out,
                                re.M).group(1)
        assert "kvm1.local" in _Console(socket_path, "cat /etc/hostname",
                                        "kvm1.local\r\n")

        result = _Script(base, "destroy")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Removed bridge %s" % bridge in result.stdout
        assert bridge not in _Links()
        assert ProcessesMentioning(base) == []
        assert not os.path.exists(os.path.dirname(socket_path))
    finally:
        _Script(base, "destroy")
        shutil.rmtree(tmpdir, ignore_errors=True)
