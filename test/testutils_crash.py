"""A multi-client job load that survives daemon kills, and the accounting
of every job it got acknowledged (test_crash, bench/bench_faults).

Each job of a round deletes its own cluster tag ``todo-LABEL-N`` (set for the
whole round beforehand) after a short delay: a job that ran once succeeds
and removes its tag; a job run a second time fails with "not found", so
duplicates are seen in the job's own result.
"""

import dataclasses
import threading
import time

from ganeti import constants, errors, opcodes

from testutils_cluster import VirtualNode, WaitForJob


@dataclasses.dataclass
class Accounting:
    """What became of the acknowledged jobs."""

    acknowledged: int = 0
    finished: int = 0
    interrupted: int = 0
    lost: list = dataclasses.field(default_factory=list)
    duplicated: list = dataclasses.field(default_factory=list)
    failed: list = dataclasses.field(default_factory=list)

    def Add(self, other: "Accounting") -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) +
                    getattr(other, field.name))


def _Job(tag: str) -> list:
    return [opcodes.OpTestDelay(duration=0.02),
            opcodes.OpTagsDel(kind=constants.TAG_CLUSTER, name=None,
                              tags=[tag])]


class CrashLoad:
    """``clients`` LUXI clients submitting jobs of one round until stopped.

    A submission that fails (the master daemon is down) is not
    acknowledged; the client reconnects and goes on with the next tag.
    """

    def __init__(self, master: VirtualNode, label: str, jobs: int,
                 clients: int):
        self.master = master
        self.tags = ["todo-%s-%d" % (label, i) for i in range(jobs)]
        self.clients = clients
        self.acknowledged: dict[int, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._next = 0
        self._threads: list[threading.Thread] = []

    def Start(self) -> None:
        client = self.master.Luxi()
        job_id = client.SubmitJob([opcodes.OpTagsSet(
            kind=constants.TAG_CLUSTER, name=None, tags=self.tags)])
        assert WaitForJob(client, job_id) == constants.JOB_STATUS_SUCCESS
        self._threads = [threading.Thread(target=self._Client, daemon=True)
                         for _ in range(self.clients)]
        for thread in self._threads:
            thread.start()

    def _NextTag(self) -> str | None:
        with self._lock:
            if self._next >= len(self.tags):
                return None
            self._next += 1
            return self.tags[self._next - 1]

    def _Client(self) -> None:
        client = None
        tag = None
        while not self._stop.is_set():
            if tag is None:
                tag = self._NextTag()
                if tag is None:
                    return
            try:
                if client is None:
                    client = self.master.Luxi()
                job_id = client.SubmitJob(_Job(tag))
            except (errors.GenericError, OSError):
                # Not acknowledged (master down), yet maybe written: the
                # tag is never offered again, so only a job run twice can
                # find its tag gone
                client = None
                tag = None
                time.sleep(0.05)
                continue
            with self._lock:
                self.acknowledged[job_id] = tag
            tag = None

    def Stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def Account(self, timeout: float = 60) -> Accounting:
        """Wait for every acknowledged job to be finalized and classify it.

        Interrupted jobs (running at a kill) fail with the lost-job
        message; they are accounted for, not lost.
        """
        result = Accounting(acknowledged=len(self.acknowledged))
        client = self.master.Luxi()
        deadline = time.monotonic() + timeout
        for job_id in sorted(self.acknowledged):
            try:
                WaitForJob(client, job_id,
                           timeout=max(1.0, deadline - time.monotonic()))
            except (AssertionError, errors.GenericError):
                pass
            info = client.QueryJobs([job_id], ["status", "opresult"])[0]
            if info is None:
                result.lost.append(job_id)
                continue
            status, opresult = info
            text = repr(opresult)
            if status == constants.JOB_STATUS_SUCCESS:
                result.finished += 1
            elif "not found" in text:
                result.duplicated.append(job_id)
            elif constants.JOB_LOST_MESSAGE in text or \
                    status == constants.JOB_STATUS_CANCELED:
                result.interrupted += 1
            elif status in constants.JOBS_FINALIZED:
                result.failed.append((job_id, status, text))
            else:
                result.lost.append(job_id)
        tags = set(client.QueryTags(constants.TAG_CLUSTER, ""))
        for job_id, tag in self.acknowledged.items():
            info = client.QueryJobs([job_id], ["status"])[0]
            if info and info[0] == constants.JOB_STATUS_SUCCESS:
                assert tag not in tags, (job_id, tag)
        return result


def RestartMasterd(master: VirtualNode) -> float:
    """Kill -9 the master daemon and start it; seconds until it serves."""
    master.KillDaemon("ganeti-masterd")
    start = time.monotonic()
    master.StartMasterd()
    return time.monotonic() - start
