"""The job queue's store: job files, the serial, the archive.

One JSON file per job (``queue/job-N``), replaced atomically and durably
before a state change is reported to anyone; every write and every
archive rename is handed to the replication hooks (master candidates keep
copies). Live jobs (those in the queue directory) are kept in memory;
archived ones are read from disk on demand.

The store's lock only guards its job table and the id counter, and nothing
else is taken while it is held, so any other lock may be held when taking
it. Job files are written under the job's own lock (the caller's), never
under the store's: writes of different jobs run in parallel and their
fsyncs share journal commits.
"""

import logging
import os
import re
import threading
import time
from typing import Any, Callable

from ganeti import constants, errors, pathutils, serializer, utils
from ganeti.jqueue import jobs as _jobs
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode, TimeStampNow

_JOB_FILE_RE = re.compile(r"^job-(\d+)$")
# Temporary files of utils.WriteFile (job files, serial, version, drain)
_TEMP_FILE_RE = re.compile(r"^\..+\.tmp$")

# Jobs renamed into the archive per directory fsync and replication call
_ARCHIVE_BATCH = 10


class JobStore:
    """The queue directory of one master daemon (held locked while open).

    ``owner`` is what loaded jobs name as their queue (``QueuedJob.queue``).
    """

    def __init__(self, queue_dir: str = pathutils.QUEUE_DIR,
                 replicate_fn: Callable[[str, str], None] | None = None,
                 rename_fn: Callable[[list], None] | None = None,
                 owner: Any = None):
        self._dir = queue_dir
        self._archive_dir = os.path.join(queue_dir, "archive")
        self._replicate = replicate_fn
        self._replicate_rename = rename_fn
        self._owner = owner
        self._lock = threading.Lock()
        self._jobs: dict[int, QueuedJob] = {}
        # Serializes writes of the serial file (outside the store lock)
        self._serial_lock = threading.Lock()
        self._serial_written = 0
        self._lock_fd: int | None = self._AcquireQueueLock()
        try:
            utils.EnsureDirs([(self._dir, constants.SECURE_DIR_MODE),
                              (self._archive_dir, constants.SECURE_DIR_MODE)])
            self._CheckVersion()
            self._RemoveTempFiles()
            self._last_serial = self._ReadSerial()
        except Exception:
            self.Close()
            raise

    def Close(self) -> None:
        """Release the queue directory (another daemon may then open it)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    # Start-up ----------------------------------------------------------------
    def _AcquireQueueLock(self) -> int:
        os.makedirs(self._dir, mode=constants.SECURE_DIR_MODE, exist_ok=True)
        try:
            return utils.LockFile(os.path.join(self._dir, "lock"))
        except errors.LockError:
            raise errors.JobQueueError(
                "Job queue %s is locked by another master daemon" %
                self._dir) from None

    def _RemoveTempFiles(self) -> None:
        """Delete what writes interrupted by a crash left (utils.WriteFile's
        ``.NAME.*.tmp``); nobody else writes here while we hold the lock."""
        for name in os.listdir(self._dir):
            if _TEMP_FILE_RE.match(name):
                logging.info("Removing leftover temporary file %s", name)
                utils.RemoveFile(os.path.join(self._dir, name))

    def _CheckVersion(self) -> None:
        path = os.path.join(self._dir, "version")
        try:
            version = int(utils.ReadOneLineFile(path))
        except FileNotFoundError:
            utils.WriteFile(path, data="%d\n" % constants.JOB_QUEUE_VERSION,
                            mode=constants.JOB_QUEUE_FILES_PERMS)
            return
        except ValueError as err:
            raise errors.JobQueueError("Bad job queue version file: %s" % err)
        if version != constants.JOB_QUEUE_VERSION:
            raise errors.JobQueueError("Found job queue version %d, expected"
                                       " %d" % (version,
                                                constants.JOB_QUEUE_VERSION))

    def _ReadSerial(self) -> int:
        """Last used job id: the serial file, or higher ids found on disk.

        The serial file is written without fsync; the job files are durable,
        so after a crash the highest id on disk is authoritative.
        """
        try:
            serial = int(utils.ReadOneLineFile(
                os.path.join(self._dir, "serial")))
        except (FileNotFoundError, ValueError):
            serial = 0
        ids = [int(m.group(1)) for m in map(_JOB_FILE_RE.match,
                                            os.listdir(self._dir)) if m]
        archive_dirs = [int(d) for d in os.listdir(self._archive_dir)
                        if d.isdigit()]
        if archive_dirs:
            top = os.path.join(self._archive_dir, str(max(archive_dirs)))
            ids.extend(int(m.group(1)) for m in
                       map(_JOB_FILE_RE.match, os.listdir(top)) if m)
        return max([serial] + ids)

    def LoadJobs(self) -> list[QueuedJob]:
        """Load the live jobs after a start; returns those still pending.

        What a crash interrupted is finalized on disk: a job that had
        started running fails (its opcodes' effects are unknown), one being
        canceled is canceled, a corrupt file is kept aside and its job
        failed. Queued and waiting jobs come back queued, for the caller to
        schedule.
        """
        pending = []
        for name in sorted(os.listdir(self._dir)):
            match = _JOB_FILE_RE.match(name)
            if not match:
                continue
            job_id = int(match.group(1))
            path = os.path.join(self._dir, name)
            try:
                job = QueuedJob.Restore(self._owner, serializer.LoadJson(
                    utils.ReadFile(path)))
                if job.id != job_id:
                    raise ValueError("file holds job %s" % job.id)
            except Exception as err:  # pylint: disable=broad-except
                logging.error("Job file %s is corrupted: %s", path, err)
                job = self._ReplaceCorruptJob(job_id, path, err)
            with self._lock:
                self._jobs[job_id] = job
            if self._RecoverJob(job):
                pending.append(job)
        return pending

    def _ReplaceCorruptJob(self, job_id: int, path: str,
                           err: Exception) -> QueuedJob:
        """Keep the bad file aside and report the job as failed."""
        utils.RenameFile(path, "%s.corrupt-%d" % (path, int(time.time())))
        op = QueuedOpCode(_jobs.InvalidOpCode(
            {"OP_ID": _jobs.INVALID_OP_ID}))
        job = QueuedJob(self._owner, job_id, [op])
        job.MarkUnfinishedOps(
            constants.OP_STATUS_ERROR, errors.EncodeException(
                errors.JobFileCorrupted("Job file %s is corrupted: %s" %
                                        (path, err))))
        job.end_timestamp = TimeStampNow()
        self.WriteJob(job)
        return job

    def _RecoverJob(self, job: QueuedJob) -> bool:
        """Finalize a job a crash interrupted; True if it is to be run."""
        status = job.CalcStatus()
        if status in constants.JOBS_FINALIZED:
            return False
        started = any(op.status in (constants.OP_STATUS_RUNNING,
                                    constants.OP_STATUS_SUCCESS)
                      for op in job.ops)
        if status == constants.JOB_STATUS_CANCELING:
            job.MarkUnfinishedOps(constants.OP_STATUS_CANCELED,
                                  "Job canceled by request")
        elif status == constants.JOB_STATUS_RUNNING or started:
            job.MarkUnfinishedOps(constants.OP_STATUS_ERROR,
                                  errors.EncodeException(errors.OpExecError(
                                      constants.JOB_LOST_MESSAGE)))
        else:
            for op in job.ops:
                op.status = constants.OP_STATUS_QUEUED
            return True
        job.end_timestamp = TimeStampNow()
        self.WriteJob(job)
        return False

    # Job files ---------------------------------------------------------------
    def WriteJob(self, job: QueuedJob) -> None:
        """Replace a job's file atomically and durably, then replicate it.

        The caller holds the job's lock (or nobody else knows the job yet).
        A failed write (a full disk) raises JobQueueError, naming the file.
        """
        path = pathutils.JobFileName(job.id, queue_dir=self._dir)
        data = serializer.DumpJson(job.Serialize())
        try:
            utils.WriteFile(path, data=data,
                            mode=constants.JOB_QUEUE_FILES_PERMS)
        except OSError as err:
            raise errors.JobQueueError(
                "Cannot write job file %s: %s" %
                (path, err.strerror or err)) from err
        if self._replicate is not None:
            self._replicate(path, data)

    def AddJobs(self, jobs: list[QueuedJob]) -> None:
        """Make written jobs visible to lookups."""
        with self._lock:
            for job in jobs:
                self._jobs[job.id] = job

    # Ids ---------------------------------------------------------------------
    def AllocateIds(self, count: int) -> list[int]:
        """Reserve job ids; ``WriteSerial`` records them afterwards."""
        with self._lock:
            first = self._last_serial + 1
            self._last_serial += count
        return list(range(first, first + count))

    def HighestJobId(self) -> int:
        """The last job id allocated (the watermark of a new filter rule)."""
        with self._lock:
            return self._last_serial

    def WriteSerial(self) -> None:
        """Record the last used id, outside the store lock.

        Written without fsync: after a crash the job files, which are
        durable, tell the highest id (see _ReadSerial). Concurrent writers
        only ever move the file forward.
        """
        with self._serial_lock:
            serial = self.HighestJobId()
            if serial <= self._serial_written:
                return
            path = os.path.join(self._dir, "serial")
            data = "%d\n" % serial
            try:
                utils.WriteFile(path, data=data,
                                mode=constants.JOB_QUEUE_FILES_PERMS,
                                fsync=False)
            except OSError as err:
                # Not fatal: the job files on disk tell the highest id
                logging.warning("Cannot write %s: %s", path,
                                err.strerror or err)
                return
            self._serial_written = serial
            if self._replicate is not None:
                self._replicate(path, data)

    # Lookups -----------------------------------------------------------------
    def GetLiveJob(self, job_id: int) -> QueuedJob | None:
        """A job still in the queue directory."""
        with self._lock:
            return self._jobs.get(job_id)

    def GetJob(self, job_id: int) -> QueuedJob | None:
        """A live job, or an archived one loaded from disk (read-only)."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            job = self.LoadArchived(job_id)
        return job

    def LiveJobs(self) -> list[QueuedJob]:
        with self._lock:
            return list(self._jobs.values())

    def JobIds(self) -> list[int]:
        with self._lock:
            return sorted(self._jobs)

    def ArchivedJobIds(self) -> list[int]:
        """The ids of the jobs in the archive directory."""
        ids: list[int] = []
        for subdir in os.listdir(self._archive_dir):
            if subdir.isdigit():
                ids.extend(int(m.group(1)) for m in map(
                    _JOB_FILE_RE.match,
                    os.listdir(os.path.join(self._archive_dir, subdir))) if m)
        return sorted(ids)

    def LoadArchived(self, job_id: int) -> QueuedJob | None:
        path = pathutils.JobFileName(job_id, archived=True,
                                     queue_dir=self._dir)
        try:
            job = QueuedJob.Restore(self._owner, serializer.LoadJson(
                utils.ReadFile(path)))
        except (OSError, ValueError):
            return None
        job.archived = True
        return job

    # Archive -----------------------------------------------------------------
    def _ArchiveUnlocked(self, jobs: list[QueuedJob]) -> int:
        """Move jobs to the archive (store lock held)."""
        renames = []
        try:
            for job in jobs:
                old = pathutils.JobFileName(job.id, queue_dir=self._dir)
                new = pathutils.JobFileName(job.id, archived=True,
                                            queue_dir=self._dir)
                utils.RenameFile(old, new, mkdir=True,
                                 mkdir_mode=constants.SECURE_DIR_MODE)
                renames.append((old, new))
                del self._jobs[job.id]
        except OSError as err:
            raise errors.JobQueueError("Cannot archive job %s: %s" %
                                       (job.id, err.strerror or err)) from err
        finally:
            # The renames done are replicated even if a later one failed
            if renames:
                utils.FsyncDirectory(self._dir)
                if self._replicate_rename is not None:
                    self._replicate_rename(renames)
        return len(renames)

    def ArchiveJob(self, job_id: int) -> bool:
        """Move a finished job to the archive."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.CalcStatus() not in \
                    constants.JOBS_FINALIZED:
                return False
            return self._ArchiveUnlocked([job]) == 1

    def AutoArchiveJobs(self, age: float, timeout: float) -> list[int]:
        """Archive finished jobs older than ``age`` seconds (all if < 0).

        Returns ``[archived, remaining]``; stops after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        now = time.time()
        archived = 0
        with self._lock:
            candidates = [job for job in self._jobs.values()
                          if job.CalcStatus() in constants.JOBS_FINALIZED]
            remaining = len(self._jobs)
            batch = []
            for job in sorted(candidates, key=lambda j: j.id):
                if time.monotonic() > deadline:
                    break
                end = job.end_timestamp or job.received_timestamp
                if age < 0 or (end and end[0] < now - age):
                    batch.append(job)
                if len(batch) >= _ARCHIVE_BATCH:
                    archived += self._ArchiveUnlocked(batch)
                    batch = []
            archived += self._ArchiveUnlocked(batch)
            remaining -= archived
        return [archived, remaining]

    # Drain flag --------------------------------------------------------------
    def IsDrained(self) -> bool:
        return os.path.exists(os.path.join(self._dir, "drain"))

    def SetDrainFlag(self, drain: bool) -> None:
        """Create or remove the drain flag file."""
        path = os.path.join(self._dir, "drain")
        if drain:
            utils.WriteFile(path, data="",
                            mode=constants.JOB_QUEUE_FILES_PERMS)
        else:
            utils.RemoveFile(path)
