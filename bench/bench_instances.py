#!/usr/bin/env python3
"""Time per ``gnt-instance add`` through the CLI on a real virtual cluster.

Brings up a one-node virtual cluster (real noded and masterd, fake
hypervisor, the shipped tinyimage OS), then adds instances one after
another with the real command, each started, and reports the time per
add for diskless and for file instances (a small file disk that the OS
writes a filesystem onto).

Usage: bench/bench_instances.py [--count 20] [--disk-size 1G]
"""

import argparse
import os
import statistics
import sys
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from ganeti import pathutils  # noqa: E402
from testutils_cluster import VirtualCluster  # noqa: E402


def TimeAdds(cluster: VirtualCluster, prefix: str, count: int,
             *options: str) -> list[float]:
    samples = []
    for idx in range(count):
        start = time.monotonic()
        cluster.Run("gnt-instance", "add", "-o", "tinyimage", "-n",
                    cluster.name, "--no-name-check", "--no-ip-check",
                    *options, "%s%d.example.test" % (prefix, idx))
        samples.append(time.monotonic() - start)
    return samples


def Report(what: str, samples: list[float]) -> None:
    samples = sorted(samples)
    print("%-9s %3d adds: median %.3f s, p90 %.3f s, max %.3f s" %
          (what, len(samples), statistics.median(samples),
           samples[int(len(samples) * 0.9)], samples[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--disk-size", default="1G")
    args = parser.parse_args()
    cluster = VirtualCluster()
    try:
        # Many small instances on one node of a small machine: lift the
        # instance policy's vCPU ratio (4 per physical CPU by default)
        cluster.Init("--ipolicy-vcpu-ratio=64")
        os_dir = cluster.NodePath(pathutils.OS_SEARCH_PATH[0])
        os.makedirs(os_dir, exist_ok=True)
        os.symlink(os.path.join(_TOP, "os", "tinyimage"),
                   os.path.join(os_dir, "tinyimage"))
        Report("diskless", TimeAdds(cluster, "dl", args.count,
                                    "-t", "diskless"))
        Report("file", TimeAdds(cluster, "fi", args.count, "-t", "file",
                                "--disk", "0:size=%s" % args.disk_size))
    finally:
        cluster.Cleanup()


if __name__ == "__main__":
    main()
