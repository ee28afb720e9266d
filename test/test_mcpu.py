"""Tests of the processor (ganeti.mcpu): lock attempts and LU life cycle."""

import threading
import time

import pytest

from ganeti import constants, errors, locking, mcpu, opcodes

from testutils_config import MakeConfig


class _Context:
    def __init__(self, cfg):
        self.cfg = cfg
        self.glm = locking.GanetiLockManager(cfg.GetNodeList(), [], [], [])
        self.rpc = None


class _RecordingCbs(mcpu.OpExecCbBase):
    def __init__(self):
        self.priority = constants.OP_PRIO_DEFAULT
        self.priorities = []
        self.started = 0
        self.messages = []

    def NotifyStart(self):
        self.started += 1

    def CurrentPriority(self):
        return self.priority

    def ChangePriority(self, priority):
        self.priority = priority
        self.priorities.append(priority)

    def Feedback(self, *args):
        self.messages.append(args[-1])


@pytest.fixture
def context(tmp_path):
    return _Context(MakeConfig(str(tmp_path)))


def test_timeouts_grow_and_end_blocking():
    timeouts = mcpu.LOCK_ATTEMPT_TIMEOUTS
    assert timeouts[-1] is None
    finite = timeouts[:-1]
    assert finite == sorted(finite)
    assert finite[0] == constants.LOCK_ATTEMPTS_MINWAIT
    assert max(finite) <= constants.LOCK_ATTEMPTS_MAXWAIT


def test_lock_timeout_retries_with_higher_priority(context):
    node_uuid = context.cfg.GetNodeList()[0]
    held = threading.Event()
    release = threading.Event()

    def holder():
        context.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL], shared=1)
        context.glm.acquire(locking.LEVEL_NODE, [node_uuid])
        held.set()
        release.wait(10)
        context.glm.release(locking.LEVEL_NODE)
        context.glm.release(locking.LEVEL_CLUSTER)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(5)
    # Release after the first attempt (1 s) has timed out
    threading.Timer(1.3, release.set).start()
    cbs = _RecordingCbs()
    op = opcodes.OpTagsSet(kind="node", name=context.cfg.GetNodeInfo(
        node_uuid).name, tags=["locked"])
    op.Validate(True)
    start = time.monotonic()
    mcpu.Processor(context, 1).ExecOpCode(op, cbs)
    assert time.monotonic() - start >= 1.0
    thread.join(5)
    assert cbs.priorities == [constants.OP_PRIO_DEFAULT - 1]
    assert cbs.started == 1
    assert "locked" in context.cfg.GetNodeInfo(node_uuid).GetTags()
    for level in locking.LEVELS:
        assert not context.glm.is_owned(level)


def test_locks_released_when_lu_fails(context):
    node = context.cfg.GetNodeInfo(context.cfg.GetNodeList()[0])
    op = opcodes.OpTagsDel(kind="node", name=node.name, tags=["missing"])
    op.Validate(True)
    with pytest.raises(errors.OpPrereqError, match="'missing' not found"):
        mcpu.Processor(context, 1).ExecOpCode(op, _RecordingCbs())
    for level in locking.LEVELS:
        assert not context.glm.is_owned(level)
    # Another thread can take the node lock exclusively right away
    result = []
    thread = threading.Thread(target=lambda: result.append(
        context.glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL],
                            timeout=1)))
    thread.start()
    thread.join(5)
    assert result == [{locking.BGL}]


def test_dry_run_does_not_execute(context):
    op = opcodes.OpTagsSet(kind="cluster", tags=["dry"], dry_run=True)
    op.Validate(True)
    cbs = _RecordingCbs()
    mcpu.Processor(context, 1).ExecOpCode(op, cbs)
    assert cbs.started == 0
    assert "dry" not in context.cfg.GetClusterInfo().GetTags()


def test_unknown_node_refused(context):
    op = opcodes.OpTestDelay(duration=0.01, on_nodes=["nosuchnode"])
    op.Validate(True)
    with pytest.raises(errors.OpPrereqError, match="nosuchnode"):
        mcpu.Processor(context, 1).ExecOpCode(op, _RecordingCbs())


def test_log_messages_and_result_type(context):
    cbs = _RecordingCbs()
    op = opcodes.OpTestDelay(duration=0.001, repeat=2)
    op.Validate(True)
    assert mcpu.Processor(context, 1).ExecOpCode(op, cbs) is None
    assert cbs.messages == [" - INFO: Test delay iteration 0/1",
                            " - INFO: Test delay iteration 1/1"]
    op = opcodes.OpClusterQuery()
    op.Validate(True)
    info = mcpu.Processor(context, 1).ExecOpCode(op, cbs)
    assert info["name"] == "cluster.example.test"
    assert info["protocol_version"] == constants.PROTOCOL_VERSION


def test_set_params_refuses_unknown_hypervisor(context):
    op = opcodes.OpClusterSetParams(hvparams={"xen-pvm": {"x": 1}})
    op.Validate(True)
    with pytest.raises(errors.OpPrereqError, match="xen-pvm"):
        mcpu.Processor(context, 1).ExecOpCode(op, _RecordingCbs())
