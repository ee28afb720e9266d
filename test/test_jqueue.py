"""Tests of the job queue (ganeti.jqueue) running real opcodes in-process.

The queue runs with a real config file, a real lock manager and its worker
threads; OP_TEST_DELAY on the master needs no node daemon.
"""

import ast
import os
import threading
import time

import pytest

from ganeti import constants, errors, jqueue, locking, opcodes, serializer
from ganeti import utils

from testutils_config import MakeConfig


class _Context:
    def __init__(self, cfg):
        self.cfg = cfg
        self.glm = locking.GanetiLockManager(cfg.GetNodeList(), [], [], [])
        self.rpc = None
        self.jobqueue = None


@pytest.fixture
def qenv(tmp_path):
    cfg = MakeConfig(str(tmp_path))
    ctx = _Context(cfg)
    queue_dir = str(tmp_path / "queue")
    queues = []

    def make(max_running=None):
        if max_running is not None:
            cluster = cfg.GetClusterInfo()
            cluster.max_running_jobs = max_running
            cfg.Update(cluster, None)
        queue = jqueue.JobQueue(ctx, queue_dir=queue_dir, num_workers=6)
        ctx.jobqueue = queue
        queues.append(queue)
        return queue

    make.queue_dir = queue_dir
    make.cfg = cfg
    yield make
    for queue in queues:
        queue.Shutdown(timeout=5)


def _Delay(duration=0.01, **kwargs):
    return opcodes.OpTestDelay(duration=duration, **kwargs).__getstate__()


def _Wait(queue, job_id, timeout=10.0):
    deadline = time.monotonic() + timeout
    info = None
    while time.monotonic() < deadline:
        info, _ = queue.WaitForJobChange(job_id, ["status"], info, None, 1.0)
        if info[0] in constants.JOBS_FINALIZED:
            return info[0]
    raise AssertionError("job %s did not finish" % job_id)


def _ReadJobFile(queue_dir, job_id):
    with open(os.path.join(queue_dir, "job-%d" % job_id), encoding="utf-8") \
            as fobj:
        return serializer.LoadJson(fobj.read())


def test_submit_runs_and_persists(qenv):
    queue = qenv()
    job_id = queue.SubmitJob([_Delay()])
    assert isinstance(job_id, int)
    assert _Wait(queue, job_id) == constants.JOB_STATUS_SUCCESS
    data = _ReadJobFile(qenv.queue_dir, job_id)
    assert data["id"] == job_id
    assert set(data) >= {"id", "ops", "received_timestamp", "start_timestamp",
                         "end_timestamp"}
    (op, ) = data["ops"]
    assert op["status"] == "success"
    assert op["input"]["OP_ID"] == "OP_TEST_DELAY"
    assert op["input"]["reason"][-1][0] == "gnt:opcode:test_delay"
    assert op["input"]["reason"][-1][1] == "job=%d;index=0" % job_id
    assert all(len(op[k]) == 2 for k in ("start_timestamp", "exec_timestamp",
                                         "end_timestamp"))
    with open(os.path.join(qenv.queue_dir, "serial"), encoding="utf-8") as f:
        assert int(f.read()) == job_id


@pytest.mark.parametrize("ops, message", [
    ([{"OP_ID": "OP_NO_SUCH_THING"}], "Unknown opcode 'OP_NO_SUCH_THING'"),
    ([{"OP_ID": "OP_TEST_DELAY"}], "'OP_TEST_DELAY.duration' missing"),
    ([{"OP_ID": "OP_TEST_DELAY", "duration": -1}],
     "'OP_TEST_DELAY.duration' fails validation"),
    ([{"OP_ID": "OP_TEST_DELAY", "duration": "x"}],
     "'OP_TEST_DELAY.duration' fails validation"),
    ([{"OP_ID": "OP_TEST_DELAY", "duration": 1, "repeat": -1}],
     "'OP_TEST_DELAY.repeat'"),
    ([{"OP_ID": "OP_TEST_DELAY", "duration": 1, "bogus": 1}],
     "Unknown parameter(s) for OP_TEST_DELAY: bogus"),
    ([_Delay(priority=5)], "invalid priority 5"),
    ([], "non-empty list of opcodes"),
])
def test_bad_jobs_rejected_at_submission(qenv, ops, message):
    queue = qenv()
    with pytest.raises(errors.OpPrereqError) as exc:
        queue.SubmitJob(ops)
    assert message in str(exc.value)
    assert queue.GetJobIds() == []
    assert not [n for n in os.listdir(qenv.queue_dir)
                if n.startswith("job-")]


def test_priority_then_id_order(qenv):
    queue = qenv(max_running=1)
    blocker = queue.SubmitJob([_Delay(0.3)])
    time.sleep(0.05)
    low = queue.SubmitJob([_Delay(priority=constants.OP_PRIO_LOW)])
    normal1 = queue.SubmitJob([_Delay()])
    high = queue.SubmitJob([_Delay(priority=constants.OP_PRIO_HIGH)])
    normal2 = queue.SubmitJob([_Delay()])
    for job_id in (blocker, low, normal1, high, normal2):
        assert _Wait(queue, job_id) == constants.JOB_STATUS_SUCCESS
    starts = {job_id: queue.QueryJobs([job_id], ["start_ts"])[0][0]
              for job_id in (low, normal1, high, normal2)}
    order = sorted(starts, key=lambda j: tuple(starts[j]))
    assert order == [high, normal1, normal2, low]


def test_running_job_limit(qenv):
    queue = qenv(max_running=2)
    ids = [queue.SubmitJob([_Delay(0.15)]) for _ in range(6)]
    for job_id in ids:
        assert _Wait(queue, job_id) == constants.JOB_STATUS_SUCCESS
    # Peak concurrency from the jobs' own start and end times (polling
    # statuses one job at a time could see a finished job still running)
    events = []
    for start, end in queue.QueryJobs(ids, ["start_ts", "end_ts"]):
        events.append((tuple(start), 1))
        events.append((tuple(end), -1))
    running = peak = 0
    for _, delta in sorted(events, key=lambda event: (event[0], event[1])):
        running += delta
        peak = max(peak, running)
    assert peak == 2


def test_dependencies(qenv):
    queue = qenv()
    first = queue.SubmitJob([_Delay(0.2)])
    second = queue.SubmitJob([_Delay(depends=[[first, ["success"]]])])
    failing = queue.SubmitJob([_Delay(depends=[[first, ["error"]]])])
    assert _Wait(queue, second) == constants.JOB_STATUS_SUCCESS
    (start2, ), (end1, ) = (queue.QueryJobs([second], ["start_ts"])[0],
                            queue.QueryJobs([first], ["end_ts"])[0])
    assert tuple(start2) >= tuple(end1)
    assert _Wait(queue, failing) == constants.JOB_STATUS_ERROR
    (result, ) = queue.QueryJobs([failing], ["opresult"])[0]
    assert "finished with status 'success'" in result[0][1][0]


def test_relative_dependencies_in_batch(qenv):
    queue = qenv()
    results = queue.SubmitManyJobs([
        [_Delay(0.1)],
        [_Delay(depends=[[-1, []]])],
    ])
    assert results[0][0] and results[1][0]
    first, second = results[0][1], results[1][1]
    assert second == first + 1
    assert _Wait(queue, second) == constants.JOB_STATUS_SUCCESS
    (deps, ) = queue.QueryJobs([second], ["ops"])[0]
    assert deps[0]["depends"] == [[first, []]]


def test_batch_with_an_invalid_job_is_refused_whole(qenv):
    """Ganeti 3.0 refuses a submission of which one job does not load (an
    unknown opcode, a priority clients may not use): no job is written."""
    queue = qenv()
    before = queue.GetJobIds()
    for bad in ({"OP_ID": "OP_BAD"},
                dict(_Delay(), priority=constants.OP_PRIO_LOWEST)):
        with pytest.raises(errors.OpPrereqError):
            queue.SubmitManyJobs([[_Delay()], [bad]])
    assert queue.GetJobIds() == before


def test_refused_job_of_a_batch_is_never_written(qenv):
    """A job answered as an error must not be on disk (to run later)."""
    queue = qenv()
    results = queue.SubmitManyJobs([[_Delay()],
                                    [_Delay(depends=[[-5, []]])],
                                    [_Delay(depends=[[-2, []]])]])
    assert results[0][0] and results[2][0]
    assert results[1] == [False, "Unable to resolve relative job ID -5"]
    first, last = results[0][1], results[2][1]
    assert _Wait(queue, last) == constants.JOB_STATUS_SUCCESS
    # Relative ids count the refused jobs of the submission too
    (deps, ) = queue.QueryJobs([last], ["ops"])[0]
    assert deps[0]["depends"] == [[first, []]]
    queue.Shutdown()
    assert sorted(name for name in os.listdir(qenv.queue_dir)
                  if name.startswith("job-")) == ["job-%d" % first,
                                                  "job-%d" % last]
    assert qenv().GetJobIds() == [first, last]


def test_cancel(qenv):
    queue = qenv(max_running=1)
    running = queue.SubmitJob([_Delay(0.3)])
    queued = queue.SubmitJob([_Delay()])
    time.sleep(0.1)
    ok, msg = queue.CancelJob(queued)
    assert ok, msg
    assert _Wait(queue, queued) == constants.JOB_STATUS_CANCELED
    ok, msg = queue.CancelJob(running)
    assert not ok and "running" in msg
    assert _Wait(queue, running) == constants.JOB_STATUS_SUCCESS
    assert _ReadJobFile(qenv.queue_dir, queued)["ops"][0]["status"] == \
        "canceled"


def test_change_priority(qenv):
    queue = qenv(max_running=1)
    blocker = queue.SubmitJob([_Delay(0.3)])
    time.sleep(0.05)
    first = queue.SubmitJob([_Delay()])
    second = queue.SubmitJob([_Delay()])
    ok, _ = queue.ChangeJobPriority(second, constants.OP_PRIO_HIGH)
    assert ok
    for job_id in (blocker, first, second):
        _Wait(queue, job_id)
    (s1, ), (s2, ) = (queue.QueryJobs([first], ["start_ts"])[0],
                      queue.QueryJobs([second], ["start_ts"])[0])
    assert tuple(s2) < tuple(s1)


def test_wait_for_job_change_wakes_and_times_out(qenv):
    queue = qenv()
    job_id = queue.SubmitJob([_Delay(0.2)])
    start = time.monotonic()
    info, _ = queue.WaitForJobChange(job_id, ["status"], None, None, 5)
    assert time.monotonic() - start < 0.5
    # Same state as seen: blocks until the job changes (not the timeout)
    while info[0] != constants.JOB_STATUS_SUCCESS:
        before = time.monotonic()
        new, _ = queue.WaitForJobChange(job_id, ["status"], info, None, 5)
        assert time.monotonic() - before < 1.0
        info = new
    start = time.monotonic()
    assert queue.WaitForJobChange(job_id, ["status"], info, None, 0.3)[0] == \
        info
    with pytest.raises(errors.JobLost):
        queue.WaitForJobChange(9999, ["status"], None, None, 0.1)


def test_log_messages_reach_waiters(qenv):
    queue = qenv()
    job_id = queue.SubmitJob([_Delay(0.05, repeat=3)])
    _Wait(queue, job_id)
    _, entries = queue.WaitForJobChange(job_id, ["status"], None, 0, 1)
    messages = [entry[3] for entry in entries]
    assert messages == [" - INFO: Test delay iteration %d/2" % i
                        for i in range(3)]
    assert [entry[0] for entry in entries] == [1, 2, 3]
    _, newer = queue.WaitForJobChange(job_id, ["status"], None, 2, 1)
    assert [entry[0] for entry in newer] == [3]


def test_archive_and_autoarchive(qenv):
    queue = qenv()
    ids = [queue.SubmitJob([_Delay()]) for _ in range(3)]
    for job_id in ids:
        _Wait(queue, job_id)
    assert queue.ArchiveJob(ids[0])
    assert os.path.exists(os.path.join(qenv.queue_dir, "archive", "0",
                                       "job-%d" % ids[0]))
    assert not os.path.exists(os.path.join(qenv.queue_dir,
                                           "job-%d" % ids[0]))
    assert queue.QueryJobs([ids[0]], ["id", "archived"]) == \
        [[ids[0], True]]
    assert queue.AutoArchiveJobs(3600, 10) == [0, 2]
    assert queue.AutoArchiveJobs(-1, 10) == [2, 0]
    assert queue.GetJobIds() == []
    assert queue.QueryJobs([12345], ["id"]) == [None]


def test_drain_flag(qenv):
    queue = qenv()
    queue.SetDrainFlag(True)
    assert os.path.exists(os.path.join(qenv.queue_dir, "drain"))
    with pytest.raises(errors.JobQueueDrainError):
        queue.SubmitJob([_Delay()])
    job_id = queue.SubmitJob([_Delay()], to_drained=True)
    assert _Wait(queue, job_id) == constants.JOB_STATUS_SUCCESS
    queue.SetDrainFlag(False)
    queue.SubmitJob([_Delay()])


def test_queue_lock_refuses_second_queue(qenv):
    qenv()
    with pytest.raises(errors.JobQueueError, match="locked"):
        jqueue.JobQueue(_Context(qenv.cfg), queue_dir=qenv.queue_dir)


def test_recovery_after_crash(qenv):
    queue = qenv(max_running=1)
    ids = [queue.SubmitJob([_Delay()]) for _ in range(3)]
    for job_id in ids:
        _Wait(queue, job_id)
    queue.Shutdown()
    # Forge the states a crash leaves behind: one job running, one queued
    running = _ReadJobFile(qenv.queue_dir, ids[0])
    running["ops"][0].update(status="running", result=None,
                             end_timestamp=None)
    running["end_timestamp"] = None
    queued = _ReadJobFile(qenv.queue_dir, ids[1])
    queued["ops"][0].update(status="queued", result=None, start_timestamp=None,
                            exec_timestamp=None, end_timestamp=None)
    queued["start_timestamp"] = queued["end_timestamp"] = None
    for job_id, data in ((ids[0], running), (ids[1], queued)):
        utils.WriteFile(os.path.join(qenv.queue_dir, "job-%d" % job_id),
                        data=serializer.DumpJson(data))
    utils.WriteFile(os.path.join(qenv.queue_dir, "job-%d" % ids[2]),
                    data='{"id": 3, "ops": [{"inp')
    # A serial file lagging behind the job files must not reuse ids
    utils.WriteFile(os.path.join(qenv.queue_dir, "serial"), data="1\n")

    queue = qenv()
    assert _Wait(queue, ids[0]) == constants.JOB_STATUS_ERROR
    (result, ) = queue.QueryJobs([ids[0]], ["opresult"])[0]
    assert result[0] == ["OpExecError", [constants.JOB_LOST_MESSAGE]]
    assert _Wait(queue, ids[1]) == constants.JOB_STATUS_SUCCESS
    assert _Wait(queue, ids[2]) == constants.JOB_STATUS_ERROR
    (result, ) = queue.QueryJobs([ids[2]], ["opresult"])[0]
    assert result[0][0] == "JobFileCorrupted"
    assert any(n.startswith("job-%d.corrupt" % ids[2])
               for n in os.listdir(qenv.queue_dir))
    assert queue.SubmitJob([_Delay()]) == ids[2] + 1


def test_many_concurrent_submitters(qenv):
    queue = qenv()
    results = []

    def client():
        for _ in range(20):
            job_id = queue.SubmitJob([_Delay(0.001)])
            results.append((job_id, _Wait(queue, job_id)))

    threads = [threading.Thread(target=client) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 100
    assert len({job_id for job_id, _ in results}) == 100
    assert {status for _, status in results} == {"success"}


def _JqueueImports(module):
    """The jqueue modules ``jqueue/<module>.py`` imports."""
    path = os.path.join(os.path.dirname(jqueue.__file__), module + ".py")
    with open(path, encoding="utf-8") as fobj:
        tree = ast.parse(fobj.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module + "." + alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["ganeti", "jqueue"] and len(parts) > 2:
                found.add(parts[2])
    return found


def test_parts_import_only_downward():
    # The facade wires the parts; the executor drives the scheduler; the
    # store and the scheduler know only the job objects and filter rules,
    # so each part can be used (and tested) without the others above it
    assert _JqueueImports("store") <= {"jobs"}
    assert _JqueueImports("scheduler") <= {"jobs", "filters"}
    assert _JqueueImports("executor") <= {"jobs", "scheduler"}
    assert _JqueueImports("jobs") == _JqueueImports("filters") == set()


def _WaitRunning(queue, job_id, timeout=10.0):
    deadline = time.monotonic() + timeout
    info = None
    while time.monotonic() < deadline:
        info, _ = queue.WaitForJobChange(job_id, ["status"], info, None, 1.0)
        if info[0] == constants.JOB_STATUS_RUNNING:
            return
    raise AssertionError("job %s did not start" % job_id)


def _FullQueueWithFinishedOpcode(qenv, small_tmpfs):
    """A queue whose disk filled up while its one job ran; the opcode has
    finished since, but its result could not be written."""
    disk = small_tmpfs(qenv.queue_dir)
    queue = qenv()
    job_id = queue.SubmitJob([_Delay(1.0)])
    _WaitRunning(queue, job_id)
    disk.Fill()
    time.sleep(1.5)
    return disk, queue, job_id


def test_full_disk_state_stays_equal_to_files(qenv, small_tmpfs, caplog):
    disk, queue, job_id = _FullQueueWithFinishedOpcode(qenv, small_tmpfs)
    # Reported as its file has it, not as a success nobody can read back
    assert queue.QueryJobs([job_id], ["status"]) == [["running"]]
    assert _ReadJobFile(qenv.queue_dir, job_id)["ops"][0]["status"] == \
        constants.OP_STATUS_RUNNING
    # Submissions fail clearly, naming the file, and leave nothing behind
    message = "Cannot write job file %s/job-%d: No space left on device" % (
        qenv.queue_dir, job_id + 1)
    with pytest.raises(errors.JobQueueError, match=message):
        queue.SubmitJob([_Delay()])
    results = queue.SubmitManyJobs([[_Delay()], [_Delay()]])
    assert [ok for ok, _ in results] == [False, False]
    assert all("No space left on device" in msg for _, msg in results)
    assert queue.GetJobIds() == [job_id]
    assert not [name for name in os.listdir(qenv.queue_dir)
                if name.startswith(".job-")]
    # Space returns: the result is written, then reported
    disk.Free()
    assert _Wait(queue, job_id) == constants.JOB_STATUS_SUCCESS
    assert _ReadJobFile(qenv.queue_dir, job_id)["ops"][0]["status"] == \
        constants.OP_STATUS_SUCCESS
    assert _Wait(queue, queue.SubmitJob([_Delay()])) == \
        constants.JOB_STATUS_SUCCESS
    # Logged clearly, without a traceback
    assert not [record for record in caplog.records if record.exc_info]
    assert any("No space left on device" in record.getMessage()
               for record in caplog.records)


def test_full_disk_shutdown_leaves_job_as_its_file_says(qenv, small_tmpfs):
    disk, queue, job_id = _FullQueueWithFinishedOpcode(qenv, small_tmpfs)
    start = time.monotonic()
    queue.Shutdown(timeout=5)
    assert time.monotonic() - start < 3
    disk.Free()
    queue = qenv()
    assert _Wait(queue, job_id) == constants.JOB_STATUS_ERROR
    (result, ) = queue.QueryJobs([job_id], ["opresult"])[0]
    assert result[0] == ["OpExecError", [constants.JOB_LOST_MESSAGE]]
