#!/usr/bin/env python3
"""Latency of one node RPC fanned out to many noded processes.

Starts real ganeti-noded daemons (one per virtual node, each on its own
127.x.y.z address) and times ``call_version`` to 5, 20 and 50 of them:
over kept-alive connections (the normal case) and with new connections
every round (TCP + TLS handshake + fork of a noded child per node).

Usage: bench/bench_rpc.py [--rounds N] [--sizes 5,20,50]
"""

import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "test"))

import testutils_node  # noqa: E402

from ganeti import constants  # noqa: E402


def _Percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def _Round(runner, names: list[str]) -> float:
    start = time.perf_counter()
    results = runner.call_version(names)
    elapsed = time.perf_counter() - start
    bad = [res.fail_msg for res in results.values()
           if res.payload != constants.PROTOCOL_VERSION]
    if bad:
        raise RuntimeError("RPC failed: %s" % bad[:3])
    return elapsed


def _Measure(cluster, names: list[str], rounds: int,
             keepalive: bool) -> tuple[float, list[float]]:
    runner = cluster.Runner()
    try:
        first = _Round(runner, names)
        samples = []
        for _ in range(rounds):
            if not keepalive:
                runner.close()
                runner = cluster.Runner()
            samples.append(_Round(runner, names))
    finally:
        runner.close()
    return first, samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--sizes", default="5,20,50")
    opts = parser.parse_args()
    sizes = sorted(int(size) for size in opts.sizes.split(","))

    start = time.perf_counter()
    with testutils_node.TestCluster(max(sizes)) as cluster:
        cluster.StartNoded()
        print("Started %d noded processes in %.1f s" %
              (len(cluster.nodes), time.perf_counter() - start))
        print("%-6s %-11s %9s %9s %9s %9s" %
              ("nodes", "connections", "first ms", "median ms", "p99 ms",
               "max ms"))
        for size in sizes:
            names = [node.name for node in cluster.nodes[:size]]
            for keepalive in (True, False):
                first, samples = _Measure(cluster, names, opts.rounds,
                                          keepalive)
                print("%-6d %-11s %9.2f %9.2f %9.2f %9.2f" %
                      (size, "keep-alive" if keepalive else "new",
                       first * 1000, statistics.median(samples) * 1000,
                       _Percentile(samples, 0.99) * 1000,
                       max(samples) * 1000))
    return 0


if __name__ == "__main__":
    sys.exit(main())
