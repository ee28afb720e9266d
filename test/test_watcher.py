"""ganeti-watcher on a real two-node virtual cluster (fake hypervisor):
it restarts killed instances (5 tries, then gives up) and daemons,
honours the pause and its lock, and its jobs carry "gnt:watcher".

An instance is "killed" by removing its fake hypervisor state file; the
fake hypervisor's ".fail-start" marker makes its restarts fail.
"""

import contextlib
import fcntl
import json
import os
import signal

import pytest

from ganeti import constants, pathutils, watcher

from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (CHECKS, NODE2, FakeState, Field,
                                InstanceCluster, RemoveInstances)

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


def _StateFile(vc):
    (uuid, ) = [line.split()[0] for line in open(
        vc.NodePath(pathutils.SSCONF_PREFIX + "nodegroups"),
        encoding="utf-8") if line.strip()]
    return vc.NodePath(pathutils.WATCHER_GROUP_STATE_FILE % uuid)


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
