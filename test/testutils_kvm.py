"""Shared set-up of the tests that run real QEMU guests.

The guests run qemu-system-x86_64 with TCG on a Debian kernel (the
uncompressed vmlinux, booted directly) and a small initramfs that loads
the virtio, ext4 and ACPI power button modules and switches to the root
file system the tinyimage OS wrote (whose acpid powers the guest off on
the power button). tools/guest-kernel builds kernel and initramfs once
into KVM_TEST_CACHE (default /tmp/ganeti-kvm-test-cache) from the Debian
package, fetched with apt-get download; the tests are skipped with the
reason when QEMU or the package is not available.
"""

import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from ganeti import constants, objects, pathutils
from ganeti.hypervisor import hv_kvm

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QEMU = "/usr/bin/qemu-system-x86_64"
GUEST_KERNEL = os.path.join(TOP, "tools", "guest-kernel")
# tools/guest-kernel's exit code for "cannot be built on this machine"
_GUEST_KERNEL_UNAVAILABLE = 3


def Instance(name="inst1.example.com", hvparams=None, nics=None,
              **beparams):
    hvp = hv_kvm.KVMHypervisor.GetDefaults()
    hvp.update(hvparams or {})
    bep = {objects.BE_MAXMEM: 128, objects.BE_MINMEM: 128,
           objects.BE_VCPUS: 1, objects.BE_AUTO_BALANCE: True,
           objects.BE_ALWAYS_FAILOVER: False, objects.BE_SPINDLE_USE: 1}
    bep.update(beparams)
    return objects.Instance(name=name, uuid="uuid-" + name,
                            primary_node="node-uuid", hypervisor="kvm",
                            os="tinyimage", hvparams=hvp, beparams=bep,
                            nics=nics or [], disks=[])


def Disk(mode=objects.DISK_RDWR, dev_type=constants.DT_SHARED_FILE,
         size=32):
    """A disk for block_devices; shared by default, as the migration
    tests open one image from both sides (a local one is copied)."""
    return objects.Disk(dev_type=dev_type, size=size, mode=mode,
                        logical_id=("loop", "/srv/d0"), uuid="disk-uuid")


@functools.cache
def BuildGuest() -> tuple[str, str]:
    """(vmlinux, initrd), built once by tools/guest-kernel; skips the test
    with the reason where they cannot be built here."""
    result = subprocess.run([sys.executable, GUEST_KERNEL],
                            capture_output=True, text=True)
    if result.returncode == _GUEST_KERNEL_UNAVAILABLE:
        pytest.skip(result.stderr.strip())
    if result.returncode != 0:
        raise RuntimeError("%s failed (exit code %d): %s" %
                           (GUEST_KERNEL, result.returncode,
                            result.stderr.strip()[-2000:]))
    vmlinux, initrd = result.stdout.split()
    return vmlinux, initrd


def RequireGuest() -> tuple[str, str]:
    """(vmlinux, initrd); skips the test where QEMU or they are missing."""
    if not os.access(QEMU, os.X_OK):
        pytest.skip("%s missing (apt-get install --no-install-recommends"
                    " qemu-system-x86)" % QEMU)
    return BuildGuest()


def KillGuests(kvm: hv_kvm.KVMHypervisor) -> None:
    """SIGKILL every QEMU of a hypervisor object and remove its socket
    directory (test clean-up).

    A deep root (a virtual cluster node's) has its sockets in a short
    directory outside it, which removing the root would leave behind.
    """
    for name in kvm.ListInstances():
        pid = kvm._Pid(name)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(kvm._dirs["ctrl"], ignore_errors=True)


def NodeHv(node) -> hv_kvm.KVMHypervisor:
    """A virtual cluster node's KVM hypervisor, as its noded sees it."""
    return hv_kvm.KVMHypervisor(root_dir=node.NodePath(pathutils.KVM_HV_DIR))


def KillClusterGuests(cluster) -> None:
    """KillGuests on every node of a virtual cluster."""
    for node in cluster.nodes.values():
        KillGuests(NodeHv(node))


def ForcedStops(node, name: str) -> int:
    """How often the node's noded had to force the instance off (its
    guest had not powered off by ACPI within the shutdown timeout)."""
    path = node.NodePath(pathutils.GetLogFilename(
        constants.DAEMONS_LOGBASE[constants.NODED]))
    with open(path, errors="replace") as fobj:
        return fobj.read().count("Instance %s did not stop in" % name)


def GuestRoot() -> str:
    """A new short root directory: socket paths are limited."""
    return tempfile.mkdtemp(prefix="kvmt-", dir="/tmp")


def GuestHvParams(vmlinux: str, initrd: str, **extra) -> dict:
    """hvparams booting the test kernel with TCG on the first disk."""
    params = {"kvm_flag": "disabled", "kernel_path": vmlinux,
              "initrd_path": initrd, "root_path": "/dev/vda",
              "kernel_args": "rw panic=-1 quiet"}
    params.update(extra)
    return params


def TinyImageDisk(path: str, name: str, size_mib: int = 32) -> None:
    """A raw disk image with the tinyimage OS installed for ``name``."""
    with open(path, "wb") as fobj:
        fobj.truncate(size_mib * 1024 * 1024)
    subprocess.run([os.path.join(TOP, "os", "tinyimage", "create")],
                   env=dict(os.environ, INSTANCE_NAME=name, DISK_COUNT="1",
                            DISK_0_PATH=path, OS_API_VERSION="20"),
                   check=True, capture_output=True)


# Shell line for the guest: a counter in /root/hb, renamed into place (a
# reader never sees the file half-written) and synced five times a second
HEARTBEAT_LOOP = ("(n=0; while :; do n=$((n+1)); echo $n > /root/hb.new;"
                  " mv /root/hb.new /root/hb; sync; sleep 0.2; done)"
                  " >/dev/null 2>&1 &")


def SerialLog(kvm, name):
    try:
        with open(kvm.SerialLog(name), errors="replace") as fobj:
            return fobj.read()
    except FileNotFoundError:
        return ""


def Console(kvm: hv_kvm.KVMHypervisor, name: str, command: str,
            expect: str, timeout: float = 30) -> str:
    """Run a shell command on the guest's serial console; its output up to
    ``expect``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(kvm.SerialSocket(name))
        sock.sendall(command.encode() + b"\n")
        output = b""
        deadline = time.monotonic() + timeout
        while expect.encode() not in output:
            if time.monotonic() > deadline:
                raise AssertionError("no %r on the console of %s: %r" %
                                     (expect, name, output))
            output += sock.recv(4096)
    return output.decode(errors="replace")


