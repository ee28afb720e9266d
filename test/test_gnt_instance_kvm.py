"""KVM instances through the cluster: gnt-instance on real QEMU guests.

A two-node virtual cluster with the kvm hypervisor enabled and its
cluster parameters pointing at the test kernel and initramfs (built and
cached by testutils_kvm, see there). QEMU runs with TCG; kvm_path is a
wrapper that refuses to answer on node2 only, so that gnt-cluster verify
has a per-node hypervisor problem to report. The guest's serial log, its
console and QMP are used where they land: below the node's KVM runtime
directory, the sockets in the node's short socket directory.
"""

import json
import os
import signal
import time

import pytest

from ganeti import constants, pathutils

from testutils_instance import CHECKS, NODE1, NODE2, Field, RemoveInstances
from testutils_cluster import WaitFor
from testutils_kvm import (QEMU, Console, ForcedStops, NodeHv, SerialLog)

INSTANCE = "kvm1"
# kvm_path: the real QEMU, except on node2, where it does not answer
_QEMU_WRAPPER = """#!/bin/sh
if [ "$GANETI_HOSTNAME" = "%s" ] && [ "$1" = "--version" ]; then
  echo "no QEMU here" >&2
  exit 1
fi
exec %s "$@"
""" % (NODE2, QEMU)


def _QemuWrapperParams(cluster):
    """kvm_path: the wrapper of _QEMU_WRAPPER, written to the cluster's
    base directory."""
    wrapper = os.path.join(cluster.base, "qemu")
    with open(wrapper, "w", encoding="ascii") as fobj:
        fobj.write(_QEMU_WRAPPER)
    os.chmod(wrapper, 0o755)
    return {"kvm_path": wrapper}


pytestmark = [pytest.mark.integration, pytest.mark.kvm,
              pytest.mark.kvm_cluster(hvparams=_QemuWrapperParams)]


def _Gone(pid):
    """Whether a process has ended (its parent, init, may not have reaped
    it yet)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as fobj:
            return fobj.read().rpartition(b")")[2].split()[0] == b"Z"
    except FileNotFoundError:
        return True


def _Add(vc, name, *extra):
    vc.Run("gnt-instance", "add", "-H", ":".join(("kvm", ) + extra),
           "-t", "file", "-o", "tinyimage", "-n", NODE1,
           "--disk", "0:size=32M", "--no-nics",
           "-B", "maxmem=128,minmem=64", *CHECKS, name, timeout=120)


def _WaitReady(kvm, name, count=1):
    ready = "tinyimage %s ready" % name
    WaitFor(lambda: SerialLog(kvm, name).count(ready) >= count, 90,
            "%s's ready line (%d)" % (name, count))


def test_kvm_instance_lifecycle(kvm_cluster):
    kvm = NodeHv(kvm_cluster)
    try:
        _Add(kvm_cluster, INSTANCE)
        _WaitReady(kvm, INSTANCE)
        listing = kvm_cluster.Run("gnt-instance", "list", INSTANCE).stdout
        assert listing.splitlines()[1].split() == [
            INSTANCE, "kvm", "tinyimage", NODE1, "running", "128M"]
        assert Field(kvm_cluster, INSTANCE, "oper_vcpus,oper_state") == "1|Y"
        # KVM instances get a network port from the cluster (their VNC)
        port = int(Field(kvm_cluster, INSTANCE, "network_port"))
        assert constants.FIRST_DRBD_PORT <= port <= constants.LAST_DRBD_PORT

        # The printed command attaches to the live guest's serial console
        console = kvm_cluster.Run("gnt-instance", "console", INSTANCE).stdout
        assert "UNIX-CONNECT:%s" % kvm.SerialSocket(INSTANCE) in console
        assert len(kvm.SerialSocket(INSTANCE)) <= 107
        assert "42-console" in Console(kvm, INSTANCE,
                                       "echo $((6*7))-console",
                                       "42-console")

        # Ballooning: QMP reports the new size, and so does the cluster
        kvm_cluster.Run("gnt-instance", "modify", "--runtime-memory", "96",
                        INSTANCE)
        WaitFor(lambda: kvm.GetInstanceInfo(INSTANCE)[2] == 96, 20,
                "the balloon to reach 96 MiB")
        assert Field(kvm_cluster, INSTANCE, "oper_ram,be/maxmem") == "96|128"

        # Soft reboot: the guest resets within the same QEMU
        pid = kvm._Pid(INSTANCE)
        kvm_cluster.Run("gnt-instance", "reboot", "--type=soft", INSTANCE)
        _WaitReady(kvm, INSTANCE, 2)
        assert kvm._Pid(INSTANCE) == pid
        # Hard reboot: a new QEMU (the old one stopped by ACPI)
        kvm_cluster.Run("gnt-instance", "reboot", "--type=hard",
                        "--shutdown-timeout=30", INSTANCE)
        new_pid = kvm._Pid(INSTANCE)
        assert new_pid not in (None, pid)
        assert _Gone(pid)
        _WaitReady(kvm, INSTANCE)
        assert Field(kvm_cluster, INSTANCE, "status,oper_ram") == "running|128"

        # The guest's acpid powers it off: no forced stop, long before
        # the timeout
        forced = ForcedStops(kvm_cluster, INSTANCE)
        started = time.monotonic()
        kvm_cluster.Run("gnt-instance", "shutdown", "--timeout=60", INSTANCE)
        assert time.monotonic() - started < 20
        assert ForcedStops(kvm_cluster, INSTANCE) == forced
        assert kvm._Pid(INSTANCE) is None
        assert "reboot: Power down" in SerialLog(kvm, INSTANCE)
        assert _Gone(new_pid)
        assert Field(kvm_cluster, INSTANCE, "status,oper_state") == \
            "ADMIN_down|N"

        # Killed behind the cluster's back: ERROR_down, and start revives
        kvm_cluster.Run("gnt-instance", "start", INSTANCE, timeout=120)
        _WaitReady(kvm, INSTANCE)
        os.kill(kvm._Pid(INSTANCE), signal.SIGKILL)
        WaitFor(lambda: kvm._Pid(INSTANCE) is None, 10, "QEMU to die")
        assert Field(kvm_cluster, INSTANCE, "status") == "ERROR_down"
        kvm_cluster.Run("gnt-instance", "start", INSTANCE, timeout=120)
        assert Field(kvm_cluster, INSTANCE, "status") == "running"
        _WaitReady(kvm, INSTANCE)

        # Without its acpid the guest ignores the power button: the stop
        # is forced at the timeout
        Console(kvm, INSTANCE, "kill $(cat /var/run/acpid.pid);"
                " echo acpid-$((6*7))", "acpid-42")
        pid = kvm._Pid(INSTANCE)
        started = time.monotonic()
        kvm_cluster.Run("gnt-instance", "shutdown", "--timeout=2", INSTANCE)
        assert 2 <= time.monotonic() - started < 20
        assert ForcedStops(kvm_cluster, INSTANCE) == forced + 1
        assert _Gone(pid)
        assert Field(kvm_cluster, INSTANCE, "status,oper_state") == \
            "ADMIN_down|N"
    finally:
        RemoveInstances(kvm_cluster, INSTANCE,
                        extra=("--shutdown-timeout=0", ))
    assert kvm.ListInstances() == []
    assert not os.path.exists(kvm.RuntimeFile(INSTANCE))


def test_guest_poweroff_is_user_down(kvm_cluster):
    """With user_shutdown, QEMU stays when the guest powers itself off:
    USER_down, and gnt-instance start (or reboot) boots it again."""
    kvm = NodeHv(kvm_cluster)
    name = "kvm2"
    try:
        _Add(kvm_cluster, name, "user_shutdown=true")
        for command in ("start", "reboot"):
            _WaitReady(kvm, name)
            pid = kvm._Pid(name)
            Console(kvm, name, "poweroff -f", "reboot: Power down")
            WaitFor(lambda: kvm.GetInstanceInfo(name)[4] ==
                    constants.HV_INSTANCE_SHUTDOWN, 20,
                    "the guest to power off")
            assert kvm._Pid(name) == pid
            assert Field(kvm_cluster, name, "status") == "USER_down"
            kvm_cluster.Run("gnt-instance", command, name, timeout=120)
            assert kvm._Pid(name) not in (None, pid)
            assert Field(kvm_cluster, name, "status") == "running"
        _WaitReady(kvm, name)
    finally:
        RemoveInstances(kvm_cluster, name, extra=("--shutdown-timeout=0", ))


def _Watch(vc):
    result = vc.Run("ganeti-watcher", "-d", "--no-verify-disks",
                    check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stderr


def _WatcherStateFile(vc):
    (uuid, ) = [line.split()[0] for line in open(
        vc.NodePath(pathutils.SSCONF_PREFIX + "nodegroups"),
        encoding="utf-8") if line.strip()]
    return vc.NodePath(pathutils.WATCHER_GROUP_STATE_FILE % uuid)


def test_watcher_cleans_up_user_down(kvm_cluster):
    """ganeti-watcher shuts down an instance whose guest powered itself
    off while it is marked up (USER_down), as shut down by the user:
    QEMU goes, the instance stays USER_down but is marked down, and the
    next run neither cleans it up again nor restarts it. Once 6 clean-ups
    failed (the group's state file says so) it stops trying."""
    kvm = NodeHv(kvm_cluster)
    name = "kvm3"
    state_file = _WatcherStateFile(kvm_cluster)
    try:
        _Add(kvm_cluster, name, "user_shutdown=true")
        _WaitReady(kvm, name)
        pid = kvm._Pid(name)
        Console(kvm, name, "poweroff -f", "reboot: Power down")
        WaitFor(lambda: kvm.GetInstanceInfo(name)[4] ==
                constants.HV_INSTANCE_SHUTDOWN, 20, "the guest to power off")
        assert Field(kvm_cluster, name, "status,admin_state") == \
            "USER_down|up"
        record = {"cleanup_count": 6, "cleanup_when": time.time()}
        with open(state_file, "w", encoding="utf-8") as fobj:
            json.dump({"instance": {name: record}, "node": {}}, fobj)
        log = _Watch(kvm_cluster)
        assert "Not cleaning up instance '%s', retries exhausted" % name \
            in log
        assert kvm._Pid(name) == pid
        with open(state_file, encoding="utf-8") as fobj:
            assert json.load(fobj)["instance"][name] == record
        os.remove(state_file)
        log = _Watch(kvm_cluster)
        assert "Instance '%s' was shutdown by the user, cleaning up" \
            " instance" % name in log
        assert _Gone(pid)
        assert Field(kvm_cluster, name,
                     "status,admin_state,admin_state_source") == \
            "USER_down|down|user"
        ops = [op for (job_ops, ) in kvm_cluster.Luxi().QueryJobs(
            None, ["ops"]) for op in job_ops
            if op["OP_ID"] == "OP_INSTANCE_SHUTDOWN" and
            op.get("instance_name") == name]
        assert [(op["admin_state_source"], op["reason"][0][:2])
                for op in ops] == [
            ("user", ["gnt:watcher", "Cleaning up instance %s" % name])]
        log = _Watch(kvm_cluster)
        assert "cleaning up" not in log
        assert "Restarting instance" not in log
        assert kvm._Pid(name) is None
    finally:
        RemoveInstances(kvm_cluster, name, extra=("--shutdown-timeout=0", ))


def test_verify_reports_unusable_qemu_per_node(kvm_cluster):
    """kvm_path answers nowhere but on node2: only node2 is reported."""
    result = kvm_cluster.Run("gnt-cluster", "verify", "--error-codes",
                             check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    problems = [line for line in output.splitlines() if "ENODEHV" in line]
    assert len(problems) == 1, output
    assert ":node:%s:hypervisor kvm verify failure: " % NODE2 in problems[0]
    assert "does not report a QEMU version" in problems[0]
