#!/usr/bin/env python3
"""Latency of ganeti-mond's ``/1/report/all`` on a node with 100 instances.

Starts a one-node virtual cluster and its ganeti-mond, gives the node's
fake hypervisor N running instances (its state files, which is all the
instance status collector sees) and waits until they are reported; then
times ``GET /1/report/all`` on one kept-alive connection and on a new
connection per request: median, p90, p99. Target: at most 20 ms.

Usage: bench/bench_mond.py [--instances 100] [--requests 500]
"""

import argparse
import http.client
import json
import math
import os
import statistics
import sys
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from ganeti import constants, pathutils  # noqa: E402
from testutils_cluster import VirtualCluster  # noqa: E402

TARGET_MS = 20.0


def _Percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


def _Get(conn: http.client.HTTPConnection, path: str) -> bytes:
    conn.request("GET", path)
    answer = conn.getresponse()
    body = answer.read()
    if answer.status != 200:
        raise RuntimeError("GET %s: %d %s" % (path, answer.status, body))
    return body


def _Instances(body: bytes) -> int:
    for rep in json.loads(body):
        if rep["name"] == constants.DATA_COLLECTOR_INST_STATUS_FAKE:
            return len(rep["data"]["instances"])
    return 0


def _Time(connect, requests: int) -> list[float]:
    samples = []
    for _ in range(requests):
        start = time.perf_counter()
        connect()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=100)
    parser.add_argument("--requests", type=int, default=500)
    args = parser.parse_args()

    cluster = VirtualCluster()
    try:
        cluster.Init()
        cluster.Run("gnt-cluster", "modify", "--data-collector-interval",
                    "inst-status-fake=1")
        state_dir = cluster.NodePath(pathutils.FAKE_HV_DIR)
        os.makedirs(state_dir, exist_ok=True)
        for index in range(args.instances):
            with open(os.path.join(state_dir, "inst%03d.example.test" %
                                   index), "w", encoding="ascii") as fobj:
                fobj.write("%d\n128\n1\n" % index)
        cluster.Run("daemon-util", "start", constants.MOND)
        host, port = cluster.node_ip, constants.DEFAULT_MOND_PORT
        conn = http.client.HTTPConnection(host, port, timeout=10)
        deadline = time.monotonic() + 30
        while _Instances(_Get(conn, "/1/report/all")) < args.instances:
            if time.monotonic() > deadline:
                raise RuntimeError("The instances were not reported")
            time.sleep(0.2)
        size = len(_Get(conn, "/1/report/all"))

        kept = _Time(lambda: _Get(conn, "/1/report/all"), args.requests)

        def _NewConnection() -> None:
            fresh = http.client.HTTPConnection(host, port, timeout=10)
            try:
                _Get(fresh, "/1/report/all")
            finally:
                fresh.close()

        fresh = _Time(_NewConnection, args.requests)
        conn.close()
    finally:
        cluster.Cleanup()

    print("GET /1/report/all, %d instances, %d bytes, %d requests each" %
          (args.instances, size, args.requests))
    worst = 0.0
    for label, samples in (("kept-alive connection", kept),
                           ("new connection each", fresh)):
        p90 = _Percentile(samples, 0.9)
        worst = max(worst, p90)
        print("  %-22s median %6.2f ms  p90 %6.2f ms  p99 %6.2f ms" %
              (label, statistics.median(samples), p90,
               _Percentile(samples, 0.99)))
    verdict = "OK" if worst <= TARGET_MS else "OVER TARGET"
    print("target p90 <= %.0f ms: %s" % (TARGET_MS, verdict))
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
