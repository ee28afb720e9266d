"""Tests of the job queue's store (ganeti.jqueue.store) on its own.

A real queue directory in a temporary directory; no scheduler, no workers.
"""

import os
import threading
import time

import pytest

from ganeti import constants, errors, opcodes, serializer, utils
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode
from ganeti.jqueue.store import JobStore


def _NewJob(store, **kwargs):
    (job_id, ) = store.AllocateIds(1)
    op = QueuedOpCode(opcodes.OpTestDelay(duration=0.01, **kwargs))
    return QueuedJob(None, job_id, [op])


def _ReadJobFile(queue_dir, job_id):
    with open(os.path.join(queue_dir, "job-%d" % job_id),
              encoding="utf-8") as fobj:
        return serializer.LoadJson(fobj.read())


def _Finish(job, status=constants.OP_STATUS_SUCCESS):
    job.MarkUnfinishedOps(status, None)
    job.end_timestamp = [1, 0]


@pytest.fixture
def qdir(tmp_path):
    return str(tmp_path / "queue")


@pytest.fixture
def store(qdir):
    store = JobStore(qdir)
    yield store
    store.Close()


def test_ids_are_consecutive_and_serial_written(store, qdir):
    assert store.AllocateIds(3) == [1, 2, 3]
    assert store.AllocateIds(1) == [4]
    assert store.HighestJobId() == 4
    assert not os.path.exists(os.path.join(qdir, "serial"))
    store.WriteSerial()
    assert utils.ReadOneLineFile(os.path.join(qdir, "serial")) == "4"


def test_concurrent_allocation_gives_unique_ids(store):
    ids = []

    def allocate():
        for _ in range(200):
            ids.extend(store.AllocateIds(2))
            store.WriteSerial()

    threads = [threading.Thread(target=allocate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(ids) == list(range(1, 1601))
    assert store.HighestJobId() == 1600


def test_write_and_lookup(store, qdir):
    job = _NewJob(store)
    store.WriteJob(job)
    assert _ReadJobFile(qdir, job.id)["id"] == job.id
    # Written but not added: not visible yet
    assert store.GetJob(job.id) is None
    store.AddJobs([job])
    assert store.GetLiveJob(job.id) is job
    assert store.GetJob(job.id) is job
    assert store.LiveJobs() == [job]
    assert store.JobIds() == [job.id]


def test_replication_hooks_see_every_write_and_rename(qdir):
    written, renamed = [], []
    store = JobStore(qdir, replicate_fn=lambda p, d: written.append((p, d)),
                     rename_fn=renamed.append)
    try:
        job = _NewJob(store)
        store.WriteJob(job)
        store.WriteSerial()
        store.AddJobs([job])
        path = os.path.join(qdir, "job-%d" % job.id)
        assert written[0][0] == path
        assert serializer.LoadJson(written[0][1])["id"] == job.id
        assert written[1] == (os.path.join(qdir, "serial"), "%d\n" % job.id)
        _Finish(job)
        store.WriteJob(job)
        assert store.ArchiveJob(job.id)
        assert renamed == [[(path, os.path.join(qdir, "archive", "0",
                                                "job-%d" % job.id))]]
    finally:
        store.Close()


def test_archive_only_finished_jobs(store, qdir):
    pending, done = _NewJob(store), _NewJob(store)
    _Finish(done, constants.OP_STATUS_ERROR)
    for job in (pending, done):
        store.WriteJob(job)
    store.AddJobs([pending, done])
    assert not store.ArchiveJob(pending.id)
    assert not store.ArchiveJob(12345)
    assert store.ArchiveJob(done.id)
    assert store.GetLiveJob(done.id) is None
    archived = store.GetJob(done.id)
    assert archived is not done and archived.archived
    assert archived.CalcStatus() == constants.JOB_STATUS_ERROR
    assert not os.path.exists(os.path.join(qdir, "job-%d" % done.id))
    assert store.JobIds() == [pending.id]


def test_autoarchive_by_age(store):
    jobs = [_NewJob(store) for _ in range(12)]
    for job in jobs:
        _Finish(job)
        store.WriteJob(job)
    jobs[-1].end_timestamp = [int(time.time()), 0]
    store.AddJobs(jobs)
    assert store.AutoArchiveJobs(3600, 10) == [11, 1]
    assert store.JobIds() == [jobs[-1].id]
    assert store.AutoArchiveJobs(-1, 10) == [1, 0]


def test_second_store_refused_until_closed(store, qdir):
    with pytest.raises(errors.JobQueueError, match="locked"):
        JobStore(qdir)
    store.Close()
    JobStore(qdir).Close()


def test_wrong_version_refused(qdir):
    os.makedirs(qdir)
    utils.WriteFile(os.path.join(qdir, "version"), data="999\n")
    with pytest.raises(errors.JobQueueError, match="version 999"):
        JobStore(qdir)
    # The failed open released the directory
    utils.WriteFile(os.path.join(qdir, "version"),
                    data="%d\n" % constants.JOB_QUEUE_VERSION)
    JobStore(qdir).Close()


def test_drain_flag(store, qdir):
    assert not store.IsDrained()
    store.SetDrainFlag(True)
    assert store.IsDrained() and os.path.exists(os.path.join(qdir, "drain"))
    store.SetDrainFlag(False)
    assert not store.IsDrained()


def test_crash_recovery(store, qdir):
    queued, waiting, running, canceling, done = \
        [_NewJob(store) for _ in range(5)]
    waiting.ops[0].status = constants.OP_STATUS_WAITING
    running.ops[0].status = constants.OP_STATUS_RUNNING
    canceling.ops[0].status = constants.OP_STATUS_CANCELING
    _Finish(done)
    for job in (queued, waiting, running, canceling, done):
        store.WriteJob(job)
    utils.WriteFile(os.path.join(qdir, "job-6"), data='{"id": 6, "ops": [')
    # The serial file lags behind the durable job files
    utils.WriteFile(os.path.join(qdir, "serial"), data="2\n")
    store.Close()

    store = JobStore(qdir)
    try:
        assert store.HighestJobId() == 6
        pending = store.LoadJobs()
        assert [job.id for job in pending] == [queued.id, waiting.id]
        assert all(job.CalcStatus() == constants.JOB_STATUS_QUEUED
                   for job in pending)
        assert store.JobIds() == [1, 2, 3, 4, 5, 6]
        lost = _ReadJobFile(qdir, running.id)["ops"][0]
        assert lost["status"] == constants.OP_STATUS_ERROR
        assert lost["result"] == ["OpExecError", [constants.JOB_LOST_MESSAGE]]
        assert _ReadJobFile(qdir, canceling.id)["ops"][0]["status"] == \
            constants.OP_STATUS_CANCELED
        corrupt = _ReadJobFile(qdir, 6)["ops"][0]
        assert corrupt["status"] == constants.OP_STATUS_ERROR
        assert corrupt["result"][0] == "JobFileCorrupted"
        assert any(name.startswith("job-6.corrupt")
                   for name in os.listdir(qdir))
        assert store.AllocateIds(1) == [7]
    finally:
        store.Close()


def test_highest_id_counts_the_archive(store, qdir):
    job = _NewJob(store)
    _Finish(job)
    store.WriteJob(job)
    store.AddJobs([job])
    assert store.ArchiveJob(job.id)
    store.Close()
    assert not os.path.exists(os.path.join(qdir, "serial"))
    store = JobStore(qdir)
    try:
        assert store.LoadJobs() == []
        assert store.AllocateIds(1) == [job.id + 1]
    finally:
        store.Close()
