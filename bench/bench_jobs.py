#!/usr/bin/env python3
"""End-to-end job throughput and latency of a real virtual cluster.

Brings up a virtual cluster (real noded and masterd, durable job files)
with the given numbers of master candidates (1: the master alone; each
other candidate gets every job file change replicated over RPC), then, for
each size:
- submits N no-op jobs (OP_TEST_DELAY, duration 0.001 s, as Ganeti refuses
  0) from C concurrent LUXI clients, each submitting and waiting for its
  jobs, and reports jobs/s;
- measures the latency of one submit-and-wait (median, p90) sequentially.

Usage: bench/bench_jobs.py [--jobs 1000] [--clients 8] [--latency 200]
                           [--candidates 1,3,10]
"""

import argparse
import os
import statistics
import sys
import threading
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from ganeti import constants, opcodes  # noqa: E402
from testutils_cluster import VirtualCluster, WaitForJob  # noqa: E402


def _SubmitAndWait(client) -> str:
    job_id = client.SubmitJob([opcodes.OpTestDelay(duration=0.001)])
    return WaitForJob(client, job_id)


def Throughput(cluster: VirtualCluster, jobs: int, clients: int) -> float:
    per_client = jobs // clients
    failures = []

    def worker():
        client = cluster.Luxi()
        for _ in range(per_client):
            status = _SubmitAndWait(client)
            if status != constants.JOB_STATUS_SUCCESS:
                failures.append(status)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    if failures:
        raise SystemExit("%d jobs failed" % len(failures))
    return per_client * clients / elapsed


def Latency(cluster: VirtualCluster, count: int) -> list[float]:
    client = cluster.Luxi()
    samples = []
    for _ in range(count):
        start = time.monotonic()
        _SubmitAndWait(client)
        samples.append(time.monotonic() - start)
    return samples


def RunOne(candidates: int, args: argparse.Namespace) -> float:
    cluster = VirtualCluster()
    try:
        cluster.Init()
        for idx in range(2, candidates + 1):
            cluster.AddNode("node%d.example.test" % idx)
        cluster.Run("gnt-cluster", "modify", "--max-running-jobs", "25")
        rate = Throughput(cluster, args.jobs, args.clients)
        print("%d candidate(s): throughput: %d jobs with %d clients: %.0f"
              " jobs/s" % (candidates, args.jobs, args.clients, rate))
        samples = Latency(cluster, args.latency)
        samples.sort()
        print("%d candidate(s): submit-and-wait latency over %d jobs:"
              " median %.2f ms, p90 %.2f ms, max %.2f ms" %
              (candidates, len(samples), statistics.median(samples) * 1000,
               samples[int(len(samples) * 0.9)] * 1000, samples[-1] * 1000))
        return rate
    finally:
        cluster.Cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--latency", type=int, default=200)
    parser.add_argument("--candidates", default="1,3,10",
                        help="comma-separated numbers of master candidates")
    args = parser.parse_args()
    rates = {count: RunOne(count, args)
             for count in [int(c) for c in args.candidates.split(",")]}
    base = rates.get(1)
    if base:
        for count, rate in sorted(rates.items()):
            print("%d candidate(s): %.2f x the one-node throughput" %
                  (count, rate / base))


if __name__ == "__main__":
    main()
