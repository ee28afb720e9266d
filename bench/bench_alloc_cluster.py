#!/usr/bin/env python3
"""What placement by the built-in allocator adds to ``gnt-instance add``.

Brings up a three-node virtual cluster (real noded and masterd, fake
hypervisor, the shipped tinyimage OS) and adds diskless instances with
the real command, alternately with ``-n`` (round robin over the nodes)
and without (the cluster's default allocator, halloc, builds the input
message from live node data and places the instance). Reports the time
per add of each kind and the difference of the medians (the issue's
target: at most 20 ms).

Usage: bench/bench_alloc_cluster.py [--count 20]
"""

import argparse
import os
import statistics
import sys
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from testutils_cluster import SMALL_IPOLICY_BOUNDS  # noqa: E402
from testutils_instance import (CHECKS, NODE1, NODE2, NODE3,  # noqa: E402
                                InstanceCluster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=20)
    args = parser.parse_args()
    nodes = [NODE1, NODE2, NODE3]
    samples: dict[str, list[float]] = {"-n": [], "allocator": []}
    with InstanceCluster("--enabled-disk-templates=diskless",
                         "--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         "--ipolicy-vcpu-ratio=64") as cluster:
        for idx in range(args.count):
            for kind in ("-n", "allocator"):
                node = ("-n", nodes[idx % 3]) if kind == "-n" else ()
                start = time.monotonic()
                cluster.Run("gnt-instance", "add", "-t", "diskless",
                            "-o", "tinyimage", "--no-install", "-B",
                            "memory=32", *node, *CHECKS,
                            "%s%d" % ("n" if node else "a", idx))
                samples[kind].append(time.monotonic() - start)
    medians = {}
    for kind, values in samples.items():
        values.sort()
        medians[kind] = statistics.median(values)
        print("%-9s %3d adds: median %.3f s, p90 %.3f s, max %.3f s" %
              (kind, len(values), medians[kind],
               values[int(len(values) * 0.9)], values[-1]))
    print("allocator - -n: %+.1f ms (median)" %
          ((medians["allocator"] - medians["-n"]) * 1000))


if __name__ == "__main__":
    main()
