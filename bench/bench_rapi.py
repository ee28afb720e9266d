#!/usr/bin/env python3
"""Latency and throughput of ganeti-rapi on a real one-node virtual cluster.

Starts noded, masterd and ganeti-rapi, then measures over HTTPS:
- ``GET /version`` (answered by the RAPI daemon alone) and ``GET /2/info``
  (a LUXI round trip to masterd) on one kept-alive connection: median,
  p90, p99 latency and requests/s; then /2/info from several concurrent
  clients (each on its own kept-alive connection);
- job submission: concurrent clients each creating node groups with
  ``POST /2/groups`` and waiting (``GET /2/jobs/[id]/wait``) until the job
  succeeded; reports jobs/s and the submit-to-success latency.

Usage: bench/bench_rapi.py [--requests 2000] [--clients 8] [--jobs 200]
"""

import argparse
import base64
import http.client
import json
import math
import os
import ssl
import statistics
import sys
import threading
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from ganeti import constants, pathutils  # noqa: E402
from testutils_cluster import VirtualCluster  # noqa: E402

_USER, _PASSWORD = "bench", "bench-password"


def _Percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


class _Client:
    """One kept-alive HTTPS connection to the RAPI daemon."""

    def __init__(self, host: str, port: int):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        self.conn = http.client.HTTPSConnection(host, port, context=context,
                                                timeout=60)
        self.auth = "Basic " + base64.b64encode(
            ("%s:%s" % (_USER, _PASSWORD)).encode()).decode()

    def Request(self, method: str, path: str, body=None):
        headers = {"Authorization": self.auth}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        payload = resp.read()
        if resp.status != 200:
            raise RuntimeError("%s %s: %d %s" % (method, path, resp.status,
                                                 payload[:200]))
        return json.loads(payload)

    def WaitJob(self, job_id: int) -> str:
        info = None
        while True:
            result = self.Request("GET", "/2/jobs/%d/wait" % job_id,
                                  {"fields": ["status"],
                                   "previous_job_info": info,
                                   "previous_log_serial": None})
            if result is None:
                continue
            info = result["job_info"]
            if info[0] in constants.JOBS_FINALIZED:
                return info[0]

    def Close(self) -> None:
        self.conn.close()


def _Report(name: str, samples: list[float], elapsed: float) -> None:
    print("%-32s %7d %9.2f %9.2f %9.2f %9.1f" %
          (name, len(samples), statistics.median(samples) * 1000,
           _Percentile(samples, 0.9) * 1000,
           _Percentile(samples, 0.99) * 1000, len(samples) / elapsed))


def _Concurrent(clients: int, fn) -> tuple[list[float], float]:
    """Run fn(index) -> samples in ``clients`` threads; all samples."""
    results: list[list[float]] = [[] for _ in range(clients)]
    errors = []

    def worker(index: int) -> None:
        try:
            results[index] = fn(index)
        except Exception as err:  # pylint: disable=broad-except
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(i, ))
               for i in range(clients)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return [s for samples in results for s in samples], elapsed


def BenchInfo(host: str, port: int, requests: int, clients: int) -> None:
    def run(path: str, count: int) -> list[float]:
        client = _Client(host, port)
        try:
            client.Request("GET", path)
            samples = []
            for _ in range(count):
                start = time.perf_counter()
                client.Request("GET", path)
                samples.append(time.perf_counter() - start)
            return samples
        finally:
            client.Close()

    samples, elapsed = _Concurrent(1, lambda _: run("/version", requests))
    _Report("GET /version, 1 client", samples, elapsed)
    samples, elapsed = _Concurrent(1, lambda _: run("/2/info", requests))
    _Report("GET /2/info, 1 client", samples, elapsed)
    samples, elapsed = _Concurrent(
        clients, lambda _: run("/2/info", requests // clients))
    _Report("GET /2/info, %d clients" % clients, samples, elapsed)


def BenchJobs(host: str, port: int, jobs: int, clients: int) -> None:
    def run(index: int) -> list[float]:
        client = _Client(host, port)
        try:
            samples = []
            for number in range(jobs // clients):
                start = time.perf_counter()
                job_id = client.Request("POST", "/2/groups",
                                        {"name": "bench-%d-%d" %
                                         (index, number)})
                status = client.WaitJob(job_id)
                if status != constants.JOB_STATUS_SUCCESS:
                    raise RuntimeError("job %d: %s" % (job_id, status))
                samples.append(time.perf_counter() - start)
            return samples
        finally:
            client.Close()

    samples, elapsed = _Concurrent(clients, run)
    _Report("POST /2/groups + wait, %d clients" % clients, samples, elapsed)



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=200)
    opts = parser.parse_args()

    cluster = VirtualCluster()
    try:
        cluster.Init()
        with open(cluster.NodePath(pathutils.RAPI_USERS_FILE), "w",
                  encoding="utf-8") as fobj:
            fobj.write("%s %s write\n" % (_USER, _PASSWORD))
        # gnt-cluster init started ganeti-rapi on the master's address
        port = constants.DEFAULT_RAPI_PORT
        print("%-32s %7s %9s %9s %9s %9s" % ("", "count", "median ms",
                                             "p90 ms", "p99 ms", "per s"))
        BenchInfo(cluster.node_ip, port, opts.requests, opts.clients)
        BenchJobs(cluster.node_ip, port, opts.jobs, opts.clients)
    finally:
        cluster.Cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
