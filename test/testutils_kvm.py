"""Shared set-up of the tests that run real QEMU guests.

The guests run qemu-system-x86_64 with TCG on a Debian kernel (the
uncompressed vmlinux, booted directly) and a small initramfs that loads
the virtio, ext4 and ACPI power button modules and switches to the root
file system the tinyimage OS wrote (whose acpid powers the guest off on
the power button). Kernel and initramfs are built once into
KVM_TEST_CACHE (default /tmp/ganeti-kvm-test-cache) from the Debian
package, fetched with apt-get download; the tests are skipped with the
reason when QEMU or the package is not available.
"""

import glob
import hashlib
import io as pyio
import lzma
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from ganeti import constants, objects, pathutils
from ganeti.hypervisor import hv_kvm

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QEMU = "/usr/bin/qemu-system-x86_64"
_KERNEL_PACKAGE = "linux-image-6.1.0-56-amd64"
CACHE = os.environ.get("KVM_TEST_CACHE", "/tmp/ganeti-kvm-test-cache")
# Load order matters: each module after its dependencies
_MODULES = ["virtio_ring", "virtio", "virtio_pci_legacy_dev",
            "virtio_pci_modern_dev", "virtio_pci", "virtio_blk",
            "virtio_balloon", "crc16", "mbcache", "jbd2", "crc32c_generic",
            "ext4", "failover", "net_failover", "virtio_net",
            # The ACPI power button as an input device, for the guest's
            # acpid (tinyimage): loaded before it starts
            "button", "evdev"]
_INITRD_INIT = """#!/bin/busybox sh
bb=/bin/busybox
$bb mkdir -p /proc /dev /newroot
$bb mount -t proc proc /proc
$bb mount -t devtmpfs devtmpfs /dev
for m in %s; do $bb insmod /modules/$m.ko; done
root=/dev/vda
for arg in $($bb cat /proc/cmdline); do
  case "$arg" in root=*) root=${arg#root=} ;; esac
done
n=0
while [ ! -b "$root" ] && [ $n -lt 50 ]; do $bb sleep 0.1; n=$((n+1)); done
$bb mount -t ext4 "$root" /newroot || exec $bb sh
$bb umount /dev
$bb umount /proc
exec $bb switch_root /newroot /init
""" % " ".join(_MODULES)




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



def _ExtractVmlinux(vmlinuz: str, target: str) -> None:
    """The uncompressed kernel inside a bzImage's XZ payload."""
    with open(vmlinuz, "rb") as fobj:
        data = fobj.read()
    start = data.find(b"\xfd7zXZ\x00")
    if start < 0:
        raise RuntimeError("no XZ payload in %s" % vmlinuz)
    decomp = lzma.LZMADecompressor()
    kernel = decomp.decompress(data[start:])
    with open(target + ".tmp", "wb") as fobj:
        fobj.write(kernel)
    os.rename(target + ".tmp", target)


def _CpioNewc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A newc cpio archive of (name, mode, content) entries."""
    out = pyio.BytesIO()

    def pad():
        out.write(b"\0" * (-out.tell() % 4))

    for ino, (name, mode, content) in enumerate(
            entries + [("TRAILER!!!", 0, b"")], start=1):
        encoded = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(content), 0, 0, 0, 0,
                  len(encoded), 0]
        out.write(b"070701" + b"".join(b"%08X" % value for value in fields))
        out.write(encoded)
        pad()
        out.write(content)
        pad()
    return out.getvalue()


def BuildGuest() -> tuple[str, str]:
    """(vmlinux, initrd) from the cache, built on first use."""
    vmlinux = os.path.join(CACHE, "vmlinux")
    # Named after its content: a changed module list builds a new one
    initrd = os.path.join(CACHE, "initrd-%s.cpio" % hashlib.sha1(
        _INITRD_INIT.encode()).hexdigest()[:8])
    if os.path.exists(vmlinux) and os.path.exists(initrd):
        return vmlinux, initrd
    busybox = shutil.which("busybox")
    if busybox is None or subprocess.run(
            ["ldd", busybox], capture_output=True).returncode == 0:
        pytest.skip("no static busybox (apt-get install busybox-static)")
    os.makedirs(CACHE, exist_ok=True)
    debs = glob.glob(os.path.join(CACHE, _KERNEL_PACKAGE + "_*.deb"))
    if not debs:
        result = subprocess.run(["apt-get", "download", _KERNEL_PACKAGE],
                                cwd=CACHE, capture_output=True, text=True)
        debs = glob.glob(os.path.join(CACHE, _KERNEL_PACKAGE + "_*.deb"))
        if result.returncode != 0 or not debs:
            pytest.skip("cannot download %s: %s" %
                        (_KERNEL_PACKAGE, result.stderr.strip()[-300:]))
    tree = tempfile.mkdtemp(dir=CACHE)
    try:
        subprocess.run(["dpkg-deb", "-x", debs[0], tree], check=True)
        _ExtractVmlinux(glob.glob(os.path.join(tree, "boot",
                                               "vmlinuz-*"))[0], vmlinux)
        with open(busybox, "rb") as fobj:
            entries = [("bin", 0o40755, b""), ("modules", 0o40755, b""),
                       ("bin/busybox", 0o100755, fobj.read()),
                       ("init", 0o100755, _INITRD_INIT.encode())]
        for module in _MODULES:
            path = glob.glob(os.path.join(tree, "lib", "modules", "*",
                                          "kernel", "**", module + ".ko"),
                             recursive=True)[0]
            with open(path, "rb") as fobj:
                entries.append(("modules/%s.ko" % module, 0o100644,
                                fobj.read()))
        with open(initrd + ".tmp", "wb") as fobj:
            fobj.write(_CpioNewc(entries))
        os.rename(initrd + ".tmp", initrd)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
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


@pytest.fixture
def guest_env():
    """A KVM hypervisor in a short root; every QEMU killed at the end."""
    vmlinux, initrd = RequireGuest()
    root = GuestRoot()
    kvm = hv_kvm.KVMHypervisor(root_dir=os.path.join(root, "kvm"))
    try:
        yield kvm, root, vmlinux, initrd
    finally:
        KillGuests(kvm)
        shutil.rmtree(root, ignore_errors=True)


def WaitFor(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for %s" % what)


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


