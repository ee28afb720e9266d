#!/usr/bin/env python3
"""End-to-end job throughput and latency of a real one-node cluster.

Brings up a virtual one-node cluster (real noded and masterd, durable job
files), then:
- submits N no-op jobs (OP_TEST_DELAY, duration 0.001 s, as Ganeti refuses
  0) from C concurrent LUXI clients, each submitting and waiting for its
  jobs, and reports jobs/s;
- measures the latency of one submit-and-wait (median, p90) sequentially.

Usage: bench/bench_jobs.py [--jobs 1000] [--clients 8] [--latency 200]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--latency", type=int, default=200)
    args = parser.parse_args()
    cluster = VirtualCluster()
    try:
        cluster.Init()
        cluster.Run("gnt-cluster", "modify", "--max-running-jobs", "25")
        rate = Throughput(cluster, args.jobs, args.clients)
        print("throughput: %d jobs with %d clients: %.0f jobs/s" %
              (args.jobs, args.clients, rate))
        samples = Latency(cluster, args.latency)
        samples.sort()
        print("submit-and-wait latency over %d jobs: median %.2f ms, p90"
              " %.2f ms, max %.2f ms" %
              (len(samples), statistics.median(samples) * 1000,
               samples[int(len(samples) * 0.9)] * 1000, samples[-1] * 1000))
    finally:
        cluster.Cleanup()


if __name__ == "__main__":
    main()
