"""The KVM hypervisor: parameters, command line, and a real QEMU guest.

The boot test runs qemu-system-x86_64 with TCG on a Debian kernel (the
uncompressed vmlinux, booted directly) and a small initramfs that loads
the virtio and ext4 modules and switches to the root file system the
tinyimage OS wrote. Kernel and initramfs are built once into
KVM_TEST_CACHE (default /tmp/ganeti-kvm-test-cache) from the Debian
package, fetched with apt-get download; the test is skipped with the
reason when QEMU or the package is not available.
"""

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from ganeti import constants, errors, hypervisor, objects, pathutils
from ganeti.hypervisor import hv_kvm

from testutils_kvm import Console as _Console
from testutils_kvm import Disk as _Disk
from testutils_kvm import Instance as _Instance
from testutils_kvm import SerialLog as _SerialLog
from testutils_node import ProcessesMentioning
from testutils_cluster import WaitFor as _WaitFor

pytestmark = [pytest.mark.integration, pytest.mark.kvm]

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Parameters and command line (no QEMU needed) ------------------------------

@pytest.fixture
def hv(tmp_path):
    return hv_kvm.KVMHypervisor(root_dir=str(tmp_path / "kvm"))


def _Opts(cmd, flag):
    return [cmd[i + 1] for i, arg in enumerate(cmd) if arg == flag]


def test_registered_with_ganeti_names():
    assert hypervisor.GetHypervisorClass("kvm") is hv_kvm.KVMHypervisor
    defaults = hypervisor.GetHvDefaults("kvm")
    for name in ("kernel_path", "initrd_path", "kernel_args", "root_path",
                 "boot_order", "cdrom_image_path", "acpi", "cpu_type",
                 "cpu_cores", "cpu_threads", "cpu_sockets", "cpu_mask",
                 "machine_version", "disk_type", "nic_type", "disk_cache",
                 "vnc_bind_address", "serial_console", "serial_speed",
                 "migration_port", "migration_bandwidth",
                 "migration_downtime", "kvm_flag", "mem_path", "use_chroot",
                 "security_model", "kvm_extra", "migration_mode",
                 "reboot_behavior", "use_localtime", "kvm_path"):
        assert name in defaults, name
    assert defaults["migration_port"] == 8102
    assert defaults["migration_bandwidth"] == 32
    assert defaults["disk_type"] == "paravirtual"
    assert defaults["cpu_mask"] == "all"
    hv_kvm.KVMHypervisor.CheckParameterSyntax(defaults)


@pytest.mark.parametrize("name,value", [
    ("kernel_path", "relative/vmlinux"),
    ("boot_order", "usb"),
    ("disk_type", "nvme"),
    ("nic_type", "virtio"),
    ("disk_cache", "unsafe"),
    ("kvm_flag", "yes"),
    ("cpu_mask", "0-"),
    ("cpu_mask", "2-1"),
    ("cpu_cores", -1),
    ("serial_speed", 1234),
    ("vnc_bind_address", "not-an-ip"),
    ("kvm_extra", "'unbalanced"),
    ("migration_port", 0),
    ("security_model", "pool"),
    ("acpi", "yes"),
])
def test_syntax_check_names_bad_value(name, value):
    params = hv_kvm.KVMHypervisor.GetDefaults()
    params[name] = value
    with pytest.raises(errors.HypervisorError, match=name):
        hv_kvm.KVMHypervisor.CheckParameterSyntax(params)


@pytest.mark.parametrize("changes,match", [
    ({"boot_order": "cdrom"}, "cdrom_image_path is empty"),
    ({"initrd_path": "/boot/initrd"}, "needs a kernel_path"),
    ({"security_model": "user"}, "needs a security_domain"),
    ({"security_domain": "nobody"}, "only used with security_model"),
])
def test_syntax_check_combinations(changes, match):
    params = hv_kvm.KVMHypervisor.GetDefaults()
    params.update(changes)
    with pytest.raises(errors.HypervisorError, match=match):
        hv_kvm.KVMHypervisor.CheckParameterSyntax(params)


def test_node_checks(hv, tmp_path):
    params = hv.GetDefaults()
    params["kvm_path"] = str(tmp_path / "no-qemu")
    with pytest.raises(errors.HypervisorError,
                       match="'kvm_path'.*does not exist"):
        hv.ValidateParameters(params)
    params = hv.GetDefaults()
    plain = tmp_path / "plain"
    plain.write_text("")
    plain.chmod(0o644)
    params["kvm_path"] = str(plain)
    with pytest.raises(errors.HypervisorError, match="not executable"):
        hv.ValidateParameters(params)
    params = hv.GetDefaults()
    params.update(kvm_path="/bin/true", kernel_path=str(tmp_path / "vmlinux"))
    with pytest.raises(errors.HypervisorError, match="'kernel_path'"):
        hv.ValidateParameters(params)
    params = hv.GetDefaults()
    params.update(kvm_path="/bin/true", cpu_mask="0:%d" % os.cpu_count())
    with pytest.raises(errors.HypervisorError, match="'cpu_mask'.*CPU"):
        hv.ValidateParameters(params)
    params = hv.GetDefaults()
    params["kvm_path"] = "/bin/true"
    hv.ValidateParameters(params)


def test_cpu_mask_parsing():
    assert hv_kvm.ParseCpuMask("all") == [None]
    assert hv_kvm.ParseCpuMask("0-2,5") == [[0, 1, 2, 5]]
    assert hv_kvm.ParseCpuMask("1:all:0-1") == [[1], None, [0, 1]]
    with pytest.raises(ValueError):
        hv_kvm.ParseCpuMask("1,,2")


def test_command_line_defaults(hv):
    inst = _Instance(vcpus=2, maxmem=256)
    runtime = hv.GenerateRuntime(inst, [(_Disk(), "/dev/loop3")])
    cmd = runtime["cmd"]
    assert cmd[0] == "/usr/bin/qemu-system-x86_64"
    assert _Opts(cmd, "-name") == [inst.name]
    assert _Opts(cmd, "-m") == ["256"]
    assert _Opts(cmd, "-smp") == ["2"]
    assert _Opts(cmd, "-pidfile") == [hv.PidFile(inst.name)]
    assert "-daemonize" in cmd and "-nodefaults" in cmd
    assert _Opts(cmd, "-display") == ["none"]
    assert _Opts(cmd, "-qmp") == ["unix:%s,server=on,wait=off" %
                                  hv.QmpSocket(inst.name)]
    assert _Opts(cmd, "-chardev") == [
        "socket,id=serial0,path=%s,server=on,wait=off,logfile=%s" %
        (hv.SerialSocket(inst.name), hv.SerialLog(inst.name))]
    assert _Opts(cmd, "-drive") == [
        "file=/dev/loop3,format=raw,if=virtio,id=disk0,aio=threads"]
    assert _Opts(cmd, "-boot") == ["c"]
    assert "virtio-balloon-pci,id=balloon0" in _Opts(cmd, "-device")
    # QEMU's default accelerator (TCG), no kernel, no ACPI switch
    for flag in ("-accel", "-kernel", "-no-acpi", "-no-reboot", "-S",
                 "-enable-kvm", "-vnc"):
        assert flag not in cmd
    assert runtime["disks"] == [{"path": "/dev/loop3", "uuid": "disk-uuid",
                                 "mode": "rw", "id": "disk0"}]
    assert runtime["nics"] == []


def test_command_line_from_parameters(hv):
    nic = objects.NIC(mac="aa:00:00:11:22:33", ip="10.88.0.10",
                      nicparams={"mode": "bridged", "link": "br-inst"},
                      uuid="nic-uuid")
    inst = _Instance(hvparams={
        "kvm_flag": "disabled", "kernel_path": "/boot/vmlinux",
        "initrd_path": "/boot/initrd", "root_path": "/dev/vda",
        "kernel_args": "ro quiet", "serial_speed": 115200,
        "machine_version": "q35", "cpu_type": "qemu64", "cpu_sockets": 1,
        "cpu_cores": 2, "cpu_threads": 1, "acpi": False,
        "disk_type": "scsi", "disk_cache": "none", "nic_type": "e1000",
        "reboot_behavior": "exit", "use_localtime": True,
        "vnc_bind_address": "127.0.0.1", "kvm_extra": "-rtc clock=vm",
        "mem_path": "/dev/hugepages"}, nics=[nic], vcpus=2)
    inst.network_port = 5907
    runtime = hv.GenerateRuntime(
        inst, [(_Disk(), "/dev/loop3"),
               (_Disk(objects.DISK_RDONLY), "/srv/ro.img")])
    cmd = runtime["cmd"]
    assert _Opts(cmd, "-accel") == ["tcg"]
    assert _Opts(cmd, "-machine") == ["q35"]
    assert _Opts(cmd, "-cpu") == ["qemu64"]
    assert _Opts(cmd, "-smp") == ["2,sockets=1,cores=2,threads=1"]
    assert _Opts(cmd, "-kernel") == ["/boot/vmlinux"]
    assert _Opts(cmd, "-initrd") == ["/boot/initrd"]
    assert _Opts(cmd, "-append") == [
        "root=/dev/vda ro quiet console=ttyS0,115200"]
    assert "-boot" not in cmd
    assert "-no-acpi" in cmd and "-no-reboot" in cmd
    assert _Opts(cmd, "-mem-path") == ["/dev/hugepages"]
    assert _Opts(cmd, "-rtc") == ["base=localtime", "clock=vm"]
    assert _Opts(cmd, "-vnc") == ["127.0.0.1:7"]
    assert "-display" not in cmd
    assert _Opts(cmd, "-drive") == [
        "file=/dev/loop3,format=raw,if=scsi,id=disk0,aio=threads,"
        "cache=none",
        "file=/srv/ro.img,format=raw,if=scsi,id=disk1,aio=threads,"
        "cache=none,readonly=on"]
    tap = hv.TapName(inst, 0)
    assert len(tap) <= 15
    netdev = _Opts(cmd, "-netdev")
    assert netdev == ["tap,id=net0,ifname=%s,script=%s,downscript=no" %
                      (tap, os.path.join(hv._dirs["nic"], tap + ".ifup"))]
    assert "vhost" not in netdev[0]
    assert "e1000,netdev=net0,mac=aa:00:00:11:22:33" in _Opts(cmd, "-device")
    assert runtime["nics"] == [{"tap": tap, "mac": "aa:00:00:11:22:33",
                                "ip": "10.88.0.10", "mode": "bridged",
                                "link": "br-inst", "vlan": "",
                                "uuid": "nic-uuid"}]


def test_nic_modes(hv):
    nic = objects.NIC(mac="aa:00:00:11:22:33",
                      nicparams={"mode": "routed", "link": "100"})
    with pytest.raises(errors.HypervisorError,
                       match="'routed' needs an IP"):
        hv.GenerateRuntime(_Instance(nics=[nic]), [])
    nic.ip = "10.99.0.20"
    (entry, ) = hv.GenerateRuntime(_Instance(nics=[nic]), [])["nics"]
    assert (entry["mode"], entry["ip"], entry["link"]) == \
        ("routed", "10.99.0.20", "100")
    nic.nicparams = {"mode": "openvswitch", "link": "ovs0"}
    with pytest.raises(errors.HypervisorError, match="'openvswitch'"):
        hv.GenerateRuntime(_Instance(nics=[nic]), [])


def test_tap_names_differ_between_nodes(tmp_path):
    """Nodes of a virtual cluster share one network namespace: the taps
    of one NIC on the source and the target of a migration differ."""
    src = hv_kvm.KVMHypervisor(root_dir=str(tmp_path / "node1" / "kvm"))
    dst = hv_kvm.KVMHypervisor(root_dir=str(tmp_path / "node2" / "kvm"))
    nic = objects.NIC(mac="aa:00:00:11:22:33",
                      nicparams={"mode": "bridged", "link": "br-inst"})
    inst = _Instance(nics=[nic, nic.Copy()])
    names = {src.TapName(inst, 0), src.TapName(inst, 1),
             dst.TapName(inst, 0), dst.TapName(inst, 1)}
    assert len(names) == 4
    assert all(len(name) <= 15 and name.startswith("tap") for name in names)
    # Stable: a restart or a second hypervisor object on the node agrees
    again = hv_kvm.KVMHypervisor(root_dir=str(tmp_path / "node1" / "kvm"))
    assert again.TapName(inst, 0) == src.TapName(inst, 0)

    # The target's QEMU gets its own taps and ifup scripts
    runtime = src.GenerateRuntime(inst, [])
    local = dst._LocaliseRuntime(inst, runtime, [])
    assert [entry["tap"] for entry in local["nics"]] == \
        [dst.TapName(inst, 0), dst.TapName(inst, 1)]
    assert _Opts(local["cmd"], "-netdev") == [
        "tap,id=net%d,ifname=%s,script=%s,downscript=no" %
        (index, tap, os.path.join(dst._dirs["nic"], tap + ".ifup"))
        for index, tap in enumerate([dst.TapName(inst, 0),
                                     dst.TapName(inst, 1)])]


def test_verify_reports_missing_binary(hv, tmp_path):
    missing = str(tmp_path / "qemu")
    problem = hv.Verify({"kvm_path": missing})
    assert "not usable" in problem and missing in problem
    problem = hv.Verify({"kvm_path": "/bin/true"})
    assert "does not report a QEMU version" in problem


def test_not_running(hv):
    assert hv.ListInstances() == []
    assert hv.GetInstanceInfo("inst1.example.com") is None
    # A stale pid file of a dead process is not a running instance
    with open(hv.PidFile("inst1.example.com"), "w") as fobj:
        fobj.write("%d\n" % os.getpid())
    assert hv.ListInstances() == []
    inst = _Instance()
    hv.StopInstance(inst)
    with pytest.raises(errors.HypervisorError, match="not running"):
        hv.BalloonInstanceMemory(inst, 64)
    with pytest.raises(errors.HypervisorError, match="not running"):
        hv.RebootInstance(inst)


# A stand-in for a QEMU that exits slowly: it holds a lock on its image,
# answers QMP and, on "quit", ends its main thread first (a zombie from
# then on) while another thread holds the files open a while longer, as
# QEMU's threads do while they exit
_SLOW_EXIT_QEMU = r"""
import ctypes, fcntl, json, os, socket, sys, threading, time
pidfile, qmp_path, image, sys_exit = sys.argv[1:]
lock = open(image, "r+b")
fcntl.lockf(lock, fcntl.LOCK_EX)
server = socket.socket(socket.AF_UNIX)
server.bind(qmp_path)
server.listen()
with open(pidfile + ".tmp", "w") as fobj:
    fobj.write("%d\n" % os.getpid())
os.rename(pidfile + ".tmp", pidfile)
while True:
    conn, _ = server.accept()
    conn.sendall(b'{"QMP": {}}\n')
    for line in conn.makefile("rb"):
        conn.sendall(b'{"return": {}}\n')
        if json.loads(line)["execute"] == "quit":
            threading.Thread(
                target=lambda: (time.sleep(1.5), os._exit(0))).start()
            # exit(2) of this thread only, not exit_group(2)
            ctypes.CDLL(None).syscall(int(sys_exit), 0)
    conn.close()
"""
_SYS_EXIT = {"x86_64": 60, "aarch64": 93}


def test_stop_waits_for_every_thread(hv, tmp_path):
    """A stopped QEMU is gone only when all its threads are: its image
    lock is released only then (a migration undo resumes the source on
    that image right after killing the target)."""
    if os.uname().machine not in _SYS_EXIT:
        pytest.skip("no exit(2) syscall number for %s" % os.uname().machine)
    inst = _Instance()
    image = tmp_path / "disk0"
    image.write_bytes(b"\0" * 4096)
    os.makedirs(hv._dirs["ctrl"], exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_EXIT_QEMU,
                             hv.PidFile(inst.name), hv.QmpSocket(inst.name),
                             str(image), str(_SYS_EXIT[os.uname().machine])])
    try:
        _WaitFor(lambda: hv.ListInstances() == [inst.name], 10,
                 "the stand-in QEMU")
        hv.StopInstance(inst, force=True)
        assert hv.ListInstances() == []
        with open(image, "r+b") as fobj:
            fcntl.lockf(fobj, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert proc.wait(timeout=1) == 0
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(hv._dirs["ctrl"], ignore_errors=True)


def test_ifup_script_attaches_to_bridge(tmp_path):
    """kvm-ifup with a stand-in ``ip`` and the custom-script override."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "ip.log"
    (bindir / "ip").write_text("#!/bin/sh\necho \"$@\" >> %s\n" % log)
    (bindir / "ip").chmod(0o755)
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]),
               MODE="bridged", LINK="br-inst", MAC="aa:00:00:11:22:33",
               INSTANCE="inst1", KVM_IFUP_CUSTOM=str(tmp_path / "none"))
    subprocess.run([pathutils.KVM_IFUP, "tap0"], env=env, check=True)
    assert log.read_text().splitlines() == [
        "link set dev tap0 up", "link set dev tap0 master br-inst"]
    bad = subprocess.run([pathutils.KVM_IFUP, "tap0"],
                         env=dict(env, MODE="routed"), capture_output=True,
                         text=True)
    assert bad.returncode != 0 and "routed" in bad.stderr
    custom = tmp_path / "custom"
    custom.write_text("#!/bin/sh\necho \"custom $1 $LINK $TAP\" > %s\n" %
                      (tmp_path / "custom.out"))
    custom.chmod(0o755)
    subprocess.run([pathutils.KVM_IFUP, "tap1"],
                   env=dict(env, KVM_IFUP_CUSTOM=str(custom)), check=True)
    assert (tmp_path / "custom.out").read_text() == \
        "custom tap1 br-inst tap1\n"


# A real guest --------------------------------------------------------------

def test_real_guest_lifecycle(guest_env):
    kvm, root, vmlinux, initrd = guest_env
    name = "inst1.example.com"
    disk_path = os.path.join(root, "disk0")
    with open(disk_path, "wb") as fobj:
        fobj.truncate(32 * 1024 * 1024)
    subprocess.run([os.path.join(_TOP, "os", "tinyimage", "create")],
                   env=dict(os.environ, INSTANCE_NAME=name, DISK_COUNT="1",
                            DISK_0_PATH=disk_path, OS_API_VERSION="20"),
                   check=True, capture_output=True)
    inst = _Instance(name, hvparams={
        "kvm_flag": "disabled", "kernel_path": vmlinux,
        "initrd_path": initrd, "root_path": "/dev/vda",
        "kernel_args": "rw panic=-1 quiet"}, maxmem=128)
    disk = _Disk()
    kvm.StartInstance(inst, [(disk, disk_path)], False)
    assert kvm.ListInstances() == [name]
    with pytest.raises(errors.HypervisorError, match="already running"):
        kvm.StartInstance(inst, [(disk, disk_path)], False)
    runtime = kvm.LoadRuntime(name)
    assert runtime["disks"][0]["path"] == disk_path
    _WaitFor(lambda: "tinyimage %s ready" % name in _SerialLog(kvm, name),
             40, "the guest's ready message")

    info = kvm.GetInstanceInfo(name)
    assert info[0] == name and info[1] == kvm._Pid(name)
    assert info[2:5] == (128, 1, constants.HV_INSTANCE_RUNNING)
    assert [entry[:5] for entry in kvm.GetAllInstancesInfo()] == [info[:5]]

    kvm.BalloonInstanceMemory(inst, 96)
    _WaitFor(lambda: kvm.GetInstanceInfo(name)[2] == 96, 10,
             "the balloon to reach 96 MiB")

    console = kvm.GetInstanceConsole(
        inst, objects.Node(name="node1.example.com", primary_ip="10.0.0.1"),
        None, inst.hvparams, inst.beparams)
    assert console["kind"] == constants.CONS_SSH
    assert console["command"][-1] == "UNIX-CONNECT:" + kvm.SerialSocket(name)

    # Soft reboot: a reset, the guest boots again in the same process
    pid = kvm._Pid(name)
    kvm.RebootInstance(inst)
    _WaitFor(lambda: _SerialLog(kvm, name).count("tinyimage %s ready" %
                                                 name) >= 2,
             40, "the guest to boot again")
    assert kvm._Pid(name) == pid

    # Without its acpid the guest ignores the power button: it still runs
    # when noded's shutdown loop would force it at the timeout
    _Console(kvm, name, "kill $(cat /var/run/acpid.pid); echo acpid-$((6*7))",
             "acpid-42")
    kvm.StopInstance(inst, timeout=30)
    time.sleep(2)
    kvm.StopInstance(inst, retry=True, timeout=30)
    assert kvm._Pid(name) == pid
    # With acpid again, power-down stops it cleanly, long before the
    # timeout: the guest's kernel powers off and QEMU exits by itself
    # (acpid writes its pid file before it opens the input
    # devices: wait until it holds one)
    _Console(kvm, name, "acpid -c /etc/acpi; while ! ls -l /proc/$(cat"
             " /var/run/acpid.pid)/fd | grep -q /dev/input; do sleep 0.1;"
             " done; echo acpid-$((6*7))", "acpid-42")
    started = time.monotonic()
    kvm.StopInstance(inst, timeout=30)
    _WaitFor(lambda: kvm._Pid(name) is None, 10, "the ACPI power-down")
    assert time.monotonic() - started < 10
    assert "reboot: Power down" in _SerialLog(kvm, name)
    assert kvm.ListInstances() == []
    assert kvm.GetInstanceInfo(name) is None
    kvm.CleanupInstance(name)
    assert not os.path.exists(kvm.RuntimeFile(name))
    assert not os.path.exists(kvm.QmpSocket(name))
    assert ProcessesMentioning(kvm.PidFile(name)) == []


def test_real_guest_forced_stop(guest_env):
    """A guest that cannot take the power button (paused here) stops by
    the forced stop, QMP quit; one without ACPI stops by quit at once."""
    kvm, root, vmlinux, initrd = guest_env
    paused = _Instance("inst3.example.com", hvparams={
        "kvm_flag": "disabled", "kernel_path": vmlinux,
        "initrd_path": initrd, "root_path": ""})
    no_acpi = _Instance("inst4.example.com", hvparams={
        "kvm_flag": "disabled", "kernel_path": vmlinux,
        "initrd_path": initrd, "root_path": "", "acpi": False})
    kvm.StartInstance(paused, [], True)
    kvm.StartInstance(no_acpi, [], True)
    pid = kvm._Pid(paused.name)
    kvm.StopInstance(paused, timeout=30)
    time.sleep(1)
    assert kvm._Pid(paused.name) == pid
    started = time.monotonic()
    kvm.StopInstance(paused, force=True)
    assert kvm._Pid(paused.name) is None
    kvm.StopInstance(no_acpi, timeout=30)
    _WaitFor(lambda: kvm._Pid(no_acpi.name) is None, 5, "QMP quit")
    assert time.monotonic() - started < 5
    assert kvm.ListInstances() == []


def test_real_guest_dead_process_not_listed(guest_env):
    """A QEMU killed from outside: no longer running, cleaned up."""
    kvm, root, vmlinux, initrd = guest_env
    inst = _Instance("inst2.example.com", hvparams={
        "kvm_flag": "disabled", "kernel_path": vmlinux,
        "initrd_path": initrd, "root_path": ""})
    kvm.StartInstance(inst, [], True)
    info = kvm.GetInstanceInfo(inst.name)
    assert info is not None and info[4] == constants.HV_INSTANCE_RUNNING
    os.kill(kvm._Pid(inst.name), signal.SIGKILL)
    _WaitFor(lambda: kvm.ListInstances() == [], 5, "QEMU to die")
    assert kvm.GetInstanceInfo(inst.name) is None
    kvm.StopInstance(inst)
    kvm.CleanupInstance(inst.name)
    assert not os.path.exists(kvm.PidFile(inst.name))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
