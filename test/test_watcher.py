"""ganeti-watcher on a real two-node virtual cluster (fake hypervisor):
it restarts killed instances (5 tries, then gives up) and daemons,
honours the pause and its lock, runs the watcher hooks, archives old
jobs, re-activates the disks of instances whose secondary rebooted,
verifies the group's disks, keeps a state file per group, logs to
watcher.log, and its jobs carry "gnt:watcher".

An instance is "killed" by removing its fake hypervisor state file; the
fake hypervisor's ".fail-start" marker makes its restarts fail. A node
"reboots" for the watcher when its boot id differs from the one in the
group's state file: every node of a virtual cluster shares the host's
boot id, so the test writes an older one into the state file.
"""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import time

import pytest

from ganeti import constants, opcodes, pathutils, watcher

from testutils_cluster import SMALL_IPOLICY_BOUNDS, WaitForJob
from testutils_instance import (CHECKS, NODE1, NODE2, FakeState, Field,
                                InstanceCluster, RemoveInstances)
from testutils_node import DRBD_TOOLS

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         nodes=(NODE2, )) as cluster:
        yield cluster


@pytest.fixture
def instance(vc, request):
    """A running diskless instance on NODE2, removed afterwards; a name
    of its own per test, as the watcher's counters go by name."""
    name = "w%d" % request.node.function.__code__.co_firstlineno
    vc.Run("gnt-instance", "add", "-t", "diskless", "-o", "tinyimage",
           "-n", NODE2, "-B", "maxmem=32,minmem=32", *CHECKS, name)
    yield name
    RemoveInstances(vc, name)


def _Kill(vc, name):
    os.remove(FakeState(vc.nodes[NODE2], name))
    assert Field(vc, name, "status") == constants.INSTST_ERRORDOWN


def _Watch(node, *args, env=None):
    result = node.Run("ganeti-watcher", "-d", "--no-verify-disks", *args,
                      check=False, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return result.stderr


def _Jobs(vc, op_id, name):
    """The reasons of the jobs running op_id on an instance."""
    jobs = vc.Luxi().QueryJobs(None, ["ops"])
    return [op["reason"] for (ops, ) in jobs for op in ops
            if op["OP_ID"] == op_id and op.get("instance_name") == name]


def _GroupUuid(vc):
    (uuid, ) = [line.split()[0] for line in open(
        vc.NodePath(pathutils.SSCONF_PREFIX + "nodegroups"),
        encoding="utf-8") if line.strip()]
    return uuid


def _StateFile(vc):
    return vc.NodePath(pathutils.WATCHER_GROUP_STATE_FILE % _GroupUuid(vc))


def test_restarts_killed_instance(vc, instance):
    _Kill(vc, instance)
    log = _Watch(vc)
    assert "Restarting instance '%s' (attempt #1)" % instance in log
    assert os.path.exists(FakeState(vc.nodes[NODE2], instance))
    assert Field(vc, instance, "status") == constants.INSTST_RUNNING
    (reason, ) = _Jobs(vc, "OP_INSTANCE_STARTUP", instance)
    assert reason[0][:2] == ["gnt:watcher",
                             "Restarting instance %s" % instance]
    with open(_StateFile(vc), encoding="utf-8") as fobj:
        record = json.load(fobj)["instance"][instance]
    assert record["restart_count"] == 1
    # The next run sees it running and forgets the attempt
    log = _Watch(vc)
    assert "Restart of instance '%s' succeeded" % instance in log
    with open(_StateFile(vc), encoding="utf-8") as fobj:
        assert instance not in json.load(fobj)["instance"]
    with open(vc.NodePath(pathutils.LOG_WATCHER), encoding="utf-8") as fobj:
        assert "Restarting instance '%s'" % instance in fobj.read()


def test_gives_up_after_five_tries(vc, instance):
    marker = vc.nodes[NODE2].NodePath(
        os.path.join(pathutils.FAKE_HV_DIR, ".fail-start"))
    open(marker, "w").close()
    try:
        _Kill(vc, instance)
        for attempt in range(1, 6):
            log = _Watch(vc)
            assert "Restarting instance '%s' (attempt #%d)" % (
                instance, attempt) in log
        log = _Watch(vc)
        assert "Could not restart instance '%s' after 5 attempts, giving" \
            " up" % instance in log
        log = _Watch(vc)
        assert "Not restarting instance '%s', retries exhausted" % \
            instance in log
        assert len(_Jobs(vc, "OP_INSTANCE_STARTUP", instance)) == 5
    finally:
        os.remove(marker)


def test_pause(vc, instance):
    out = vc.Run("gnt-cluster", "watcher", "pause", "1h").stdout
    assert out.startswith("The watcher is paused until ")
    assert vc.Run("gnt-cluster", "watcher", "info").stdout == out
    try:
        _Kill(vc, instance)
        assert "Pause has been set, exiting" in _Watch(vc)
        assert Field(vc, instance, "status") == constants.INSTST_ERRORDOWN
        _Watch(vc, "--ignore-pause")
        assert Field(vc, instance, "status") == constants.INSTST_RUNNING
    finally:
        assert vc.Run("gnt-cluster", "watcher", "continue").stdout == \
            "The watcher is no longer paused.\n"
    assert vc.Run("gnt-cluster", "watcher", "info").stdout == \
        "The watcher is not paused.\n"


def test_lock_held(vc, instance):
    path = vc.NodePath(pathutils.WATCHER_LOCK_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="ascii") as fobj:
        fcntl.flock(fobj, fcntl.LOCK_EX)
        _Kill(vc, instance)
        log = _Watch(vc)
        assert "Can't acquire lock on %s" % path in log
        assert Field(vc, instance, "status") == constants.INSTST_ERRORDOWN
    _Watch(vc)
    assert Field(vc, instance, "status") == constants.INSTST_RUNNING


def test_restarts_killed_daemons(vc):
    node2 = vc.nodes[NODE2]
    old = node2.Pid(constants.NODED)
    node2.KillDaemon(constants.NODED)
    _Watch(node2)
    assert node2.IsRunning(constants.NODED)
    assert node2.Pid(constants.NODED) != old
    vc.KillDaemon(constants.RAPI)
    assert not vc.IsRunning(constants.RAPI)
    _Watch(vc)
    assert vc.IsRunning(constants.RAPI)


def test_restarts_mond_and_maintd(vc):
    """mond runs on every node, maintd on the master: the watcher starts
    them again once killed, and checks that they answer."""
    node2 = vc.nodes[NODE2]
    _Watch(node2)
    assert node2.IsRunning(constants.MOND)
    old = node2.Pid(constants.MOND)
    node2.KillDaemon(constants.MOND)
    _Watch(node2)
    assert node2.IsRunning(constants.MOND)
    assert node2.Pid(constants.MOND) != old
    assert not node2.IsRunning(constants.MAINTD)
    vc.KillDaemon(constants.MAINTD)
    vc.KillDaemon(constants.MOND)
    _Watch(vc)
    assert vc.IsRunning(constants.MAINTD)
    assert vc.IsRunning(constants.MOND)


def test_restarts_hung_noded(vc):
    """A noded that runs but does not answer is restarted."""
    node2 = vc.nodes[NODE2]
    old = node2.Pid(constants.NODED)
    os.kill(old, signal.SIGSTOP)
    try:
        # Its probe, then its stop (SIGKILL follows SIGTERM, which the
        # stopped noded cannot act on) time out in seconds, not 10 and 30
        log = _Watch(node2, env={watcher.ENV_PROBE_TIMEOUT: "3",
                                 "GANETI_DAEMON_STOP_TIMEOUT": "1"})
    finally:
        # Gone already where the restart had to kill it
        with contextlib.suppress(ProcessLookupError):
            os.kill(old, signal.SIGCONT)
    assert "ganeti-noded is not responding, restarting it" in log
    assert node2.IsRunning(constants.NODED)
    assert node2.Pid(constants.NODED) != old


def _AllJobs(vc):
    """(id, ops, archived) of every job (the master lists the archived
    ones when the query asks for that field)."""
    rows = vc.Luxi().Query(constants.QR_JOB, ["id", "ops", "archived"],
                           None)["data"]
    return [tuple(value for _, value in row) for row in rows]


def _WatcherOps(vc, op_id, after):
    """The opcodes op_id of the jobs after job ``after``."""
    return [op for job_id, ops, _ in _AllJobs(vc) if job_id > after
            for op in ops if op["OP_ID"] == op_id]


def _LastJobId(vc):
    return max(job_id for job_id, _, _ in _AllJobs(vc))


def _WriteHook(directory, name, text, mode):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="ascii") as fobj:
        fobj.write(text)
    os.chmod(path, mode)


def test_runs_watcher_hooks(vc, tmp_path):
    """Every node, not only the master, runs the executables of the
    hooks directory (and only those), logging how each went."""
    node2 = vc.nodes[NODE2]
    hooks = node2.NodePath(pathutils.WATCHER_HOOKS_DIR)
    os.makedirs(hooks)
    ran, skipped = tmp_path / "ran", tmp_path / "skipped"
    _WriteHook(hooks, "10-mark", "#!/bin/sh\necho marked\ntouch %s\n" % ran,
               0o755)
    _WriteHook(hooks, "20-plain", "#!/bin/sh\ntouch %s\n" % skipped, 0o644)
    _WriteHook(hooks, "30-broken", "#!/bin/sh\necho broken\nexit 3\n",
               0o755)
    try:
        log = _Watch(node2)
    finally:
        shutil.rmtree(hooks)
    assert ran.exists()
    assert not skipped.exists()
    assert "Watcher hook 10-mark: success (output: marked" in log
    assert "Watcher hook 20-plain: skipped" in log
    assert "Watcher hook 30-broken: failed (output: broken" in log


def _FinishedJob(vc):
    """The id of a job that ran (a delay of 0)."""
    client = vc.Luxi()
    job_id = client.SubmitJob([opcodes.OpTestDelay(duration=0)])
    assert WaitForJob(client, job_id) == constants.JOB_STATUS_SUCCESS
    return job_id


def test_archives_old_jobs(vc):
    """Finished jobs older than --job-age are archived, newer ones stay
    (the new job's age is the watcher's start-up, well below 4 s)."""
    old = _FinishedJob(vc)
    time.sleep(4)
    new = _FinishedJob(vc)
    _Watch(vc, "--job-age=4s")
    archived = {job_id: flag for job_id, _, flag in _AllJobs(vc)}
    assert archived[old] is True
    assert archived[new] is False


def test_leaves_user_shut_down_instance(vc, instance):
    """An instance the user shut down (admin state down, USER_down) is
    neither cleaned up again nor restarted."""
    client = vc.Luxi()
    job_id = client.SubmitJob([opcodes.OpInstanceShutdown(
        instance_name=instance, admin_state_source="user")])
    assert WaitForJob(client, job_id) == constants.JOB_STATUS_SUCCESS
    assert Field(vc, instance, "status,admin_state") == \
        constants.INSTST_USERDOWN + "|down"
    last = _LastJobId(vc)
    log = _Watch(vc)
    assert "cleaning up" not in log
    assert "Restarting instance '%s'" % instance not in log
    assert Field(vc, instance, "status") == constants.INSTST_USERDOWN
    assert not _WatcherOps(vc, "OP_INSTANCE_SHUTDOWN", last)
    assert not _WatcherOps(vc, "OP_INSTANCE_STARTUP", last)


def _BootId():
    with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fobj:
        return fobj.read().strip()


def _ReadState(vc):
    with open(_StateFile(vc), encoding="utf-8") as fobj:
        return json.load(fobj)


@DRBD_TOOLS[0]
@DRBD_TOOLS[1]
def test_activates_disks_after_secondary_reboot(vc):
    """The disks of a drbd instance whose secondary's boot id changed
    are activated again, once; the new boot id is kept."""
    name = "wdrbd"
    vc.Run("gnt-cluster", "modify",
           "--enabled-disk-templates=file,diskless,drbd")
    try:
        vc.Run("gnt-instance", "add", "-t", "drbd", "-n",
               "%s:%s" % (NODE1, NODE2), "--disk", "0:size=16M",
               "--no-install", "--ignore-ipolicy", "-o", "tinyimage",
               "-B", "maxmem=32,minmem=32", *CHECKS, name, timeout=120)
        _Watch(vc)
        data = _ReadState(vc)
        assert {node: record["bootid"] for node, record
                in data["node"].items()} == {NODE1: _BootId(),
                                              NODE2: _BootId()}
        data["node"][NODE2]["bootid"] = "before-the-reboot"
        with open(_StateFile(vc), "w", encoding="utf-8") as fobj:
            json.dump(data, fobj)
        last = _LastJobId(vc)
        log = _Watch(vc)
        assert "Activating disks for instance '%s'" % name in log
        assert "Error while activating disks" not in log
        (op, ) = _WatcherOps(vc, "OP_INSTANCE_ACTIVATE_DISKS", last)
        assert op["instance_name"] == name
        assert op["reason"][0][:2] == [
            "gnt:watcher", "Activating disks for instance %s" % name]
        assert _ReadState(vc)["node"][NODE2]["bootid"] == _BootId()
        last = _LastJobId(vc)
        assert "Activating disks" not in _Watch(vc)
        assert not _WatcherOps(vc, "OP_INSTANCE_ACTIVATE_DISKS", last)
    finally:
        RemoveInstances(vc, name)
        vc.Run("gnt-cluster", "modify",
               "--enabled-disk-templates=file,diskless")


def test_verifies_group_disks(vc, instance):
    """Each group's disks are verified by a low-priority job carrying
    the watcher's reason (archived at once); --no-verify-disks skips
    it. (A group without instances is skipped, as in Ganeti.)"""
    uuid = _GroupUuid(vc)
    last = _LastJobId(vc)
    _Watch(vc)
    assert not _WatcherOps(vc, "OP_GROUP_VERIFY_DISKS", last)
    result = vc.Run("ganeti-watcher", "-d", check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    (op, ) = _WatcherOps(vc, "OP_GROUP_VERIFY_DISKS", last)
    assert op["group_name"] == uuid
    assert op["priority"] == constants.OP_PRIO_LOW
    assert op["reason"][0][:2] == ["gnt:watcher",
                                   "Verifying disks of group %s" % uuid]
    assert [archived for job_id, ops, archived in _AllJobs(vc)
            if job_id > last and
            ops[0]["OP_ID"] == "OP_GROUP_VERIFY_DISKS"] == [True]


def test_group_state_files(vc, instance):
    """The group's state file holds the nodes' boot ids and the restart
    counters; the group's and the node's instance status files list the
    instances' status. While another process holds the group's state
    file, the group is left alone."""
    uuid = _GroupUuid(vc)
    _Watch(vc)
    data = _ReadState(vc)
    assert data["node"][NODE2]["bootid"] == _BootId()
    with open(vc.NodePath(pathutils.WATCHER_GROUP_INSTANCE_STATUS_FILE %
                          uuid), encoding="utf-8") as fobj:
        assert "%s running\n" % instance in fobj.read()
    with open(vc.NodePath(pathutils.INSTANCE_STATUS_FILE),
              encoding="utf-8") as fobj:
        assert "%s running\n" % instance in fobj.read()
    with open(_StateFile(vc), "r+", encoding="utf-8") as fobj:
        fcntl.flock(fobj, fcntl.LOCK_EX)
        _Kill(vc, instance)
        log = _Watch(vc)
    assert "Can't acquire lock on state file %s" % _StateFile(vc) in log
    assert Field(vc, instance, "status") == constants.INSTST_ERRORDOWN
    _Watch(vc)
    assert Field(vc, instance, "status") == constants.INSTST_RUNNING
    assert _ReadState(vc)["instance"][instance]["restart_count"] == 1


def test_logs_to_watcher_log(vc, instance):
    """Without -d nothing goes to standard error; watcher.log gets the
    informational messages with the program's name."""
    path = vc.NodePath(pathutils.LOG_WATCHER)
    start = os.path.getsize(path)
    _Kill(vc, instance)
    result = vc.Run("ganeti-watcher", "--no-verify-disks", check=False,
                    timeout=120)
    assert (result.returncode, result.stderr) == (0, "")
    with open(path, encoding="utf-8") as fobj:
        fobj.seek(start)
        lines = fobj.read().splitlines()
    (line, ) = [line for line in lines
                if "Restarting instance '%s'" % instance in line]
    assert "ganeti-watcher" in line and " INFO " in line
    assert not [line for line in lines if " DEBUG " in line]
