#!/usr/bin/env python3
"""Cost of job filter evaluation (jqueue.filters), in process.

With R rules (jobid, opcode and reason predicates that match no job, so
every rule is evaluated, plus a final RATE_LIMIT rule matching all) and J
queued jobs (2 opcodes, 3 reason entries each), reports:
- rules change: compiling the rules and evaluating every queued job
  (what happens when a rule is added, replaced or deleted);
- submission: the first evaluation of one new job (its view included);
- scheduling pass: re-checking every held job with cached results (what
  happens when a rate-limited job finishes);
- queue: JobQueue.UpdateFilters on a real queue holding J paused jobs
  (config write excluded), with --queue; a REJECT rule matching no job
  makes it evaluate every job at once (otherwise the workers would do so
  while picking jobs).

Usage: bench/bench_filters.py [--rules 100] [--jobs 1000] [--repeat 5]
                              [--queue]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from ganeti import locking, objects, opcodes  # noqa: E402
from ganeti.jqueue import JobQueue, filters  # noqa: E402
from ganeti.jqueue.jobs import QueuedJob, QueuedOpCode  # noqa: E402
from testutils_config import MakeConfig  # noqa: E402


def MakeRules(count: int) -> list[objects.FilterRule]:
    rules = []
    for i in range(count - 1):
        kind = i % 3
        if kind == 0:
            predicate = ["jobid", ["&", [">", "id", "watermark"],
                                   ["<", "id", 1000000 + i]]]
        elif kind == 1:
            predicate = ["opcode", ["&", ["==", "OP_ID",
                                          "OP_INSTANCE_CREATE"],
                                    ["==", "instance_name", "inst%d" % i]]]
        else:
            predicate = ["reason", ["=~", "reason", "^maintenance-%d$" % i]]
        rules.append(objects.FilterRule(
            uuid="rule-%03d" % i, watermark=10 ** 7, priority=i % 10,
            predicates=[predicate], action="PAUSE", reason_trail=[]))
    rules.append(objects.FilterRule(
        uuid="rule-limit", watermark=0, priority=99,
        predicates=[["opcode", ["==", "OP_ID", "OP_TEST_DELAY"]]],
        action=["RATE_LIMIT", 10], reason_trail=[]))
    return rules


def _Op(job_id: int, index: int) -> opcodes.OpCode:
    return opcodes.OpTestDelay(duration=0.01, reason=[
        ["gnt:user", "routine work", 1],
        ["gnt:client:gnt-debug", "delay", 2],
        ["gnt:opcode:test_delay", "job=%d;index=%d" % (job_id, index), 3]])


def MakeJobs(count: int) -> list[QueuedJob]:
    return [QueuedJob(None, job_id, [QueuedOpCode(_Op(job_id, index))
                                     for index in range(2)])
            for job_id in range(1, count + 1)]


def _Timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def RulesChange(rules: list, jobs: list[QueuedJob]) -> float:
    state = filters.JobFilters()
    for job in jobs:
        job.filter_state = None

    def run():
        state.SetRules(rules)
        for job in jobs:
            state.RejectingRule(job)
    run()  # job views built once, as in the queue
    return _Timed(run)


def Submission(rules: list, jobs: list[QueuedJob]) -> float:
    state = filters.JobFilters(rules)

    def run():
        for job in jobs:
            job.filter_state = None
            state.RejectingRule(job)
    return _Timed(run) / len(jobs)


def SchedulingPass(rules: list, jobs: list[QueuedJob]) -> float:
    state = filters.JobFilters(rules)
    for job in jobs[:10]:
        assert state.TryStart(job)
    held = jobs[10:]
    for job in held:
        assert not state.TryStart(job)

    def run():
        for job in held:
            state.TryStart(job)
    return _Timed(run)


class _Context:
    def __init__(self, cfg):
        self.cfg = cfg
        self.glm = locking.GanetiLockManager(cfg.GetNodeList(), [], [], [])
        self.rpc = None
        self.jobqueue = None


def QueueUpdate(rules: list, count: int, repeat: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = MakeConfig(tmp)
        for rule in rules:
            cfg.SetFilter(rule)
        cfg.SetFilter(objects.FilterRule(
            uuid="hold", watermark=0, priority=99,
            predicates=[["jobid", [">", "id", 0]]], action="PAUSE",
            reason_trail=[]))
        cfg.SetFilter(objects.FilterRule(
            uuid="never", watermark=0, priority=9,
            predicates=[["jobid", ["<", "id", 0]]], action="REJECT",
            reason_trail=[]))
        ctx = _Context(cfg)
        queue = JobQueue(ctx, queue_dir=os.path.join(tmp, "queue"),
                         num_workers=4)
        ctx.jobqueue = queue
        try:
            queue.SubmitManyJobs([[_Op(0, index).__getstate__()
                                   for index in range(2)]
                                  for _ in range(count)])
            return [_Timed(queue.UpdateFilters) for _ in range(repeat)]
        finally:
            queue.Shutdown(timeout=5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--queue", action="store_true",
                        help="also measure a real queue (writes job files)")
    args = parser.parse_args()
    rules = MakeRules(args.rules)
    jobs = MakeJobs(args.jobs)
    print("%d rules, %d queued jobs, median of %d runs" %
          (args.rules, args.jobs, args.repeat))
    change = statistics.median(RulesChange(rules, jobs)
                               for _ in range(args.repeat))
    print("rules change (compile + evaluate all jobs): %8.1f ms"
          " (%.1f us/job)" % (change * 1e3, change * 1e6 / args.jobs))
    submit = statistics.median(Submission(rules, jobs)
                               for _ in range(args.repeat))
    print("submission check of one new job:            %8.1f us" %
          (submit * 1e6))
    sched = statistics.median(SchedulingPass(rules, jobs)
                              for _ in range(args.repeat))
    print("scheduling pass over held jobs (cached):    %8.1f ms"
          " (%.2f us/job)" % (sched * 1e3,
                              sched * 1e6 / max(args.jobs - 10, 1)))
    if args.queue:
        update = statistics.median(QueueUpdate(rules, args.jobs,
                                               args.repeat))
        print("JobQueue.UpdateFilters, all jobs evaluated: %8.1f ms" %
              (update * 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
