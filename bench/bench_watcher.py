#!/usr/bin/env python3
"""Wall time of a ganeti-watcher run with nothing to do: 10 nodes, 200
instances.

Brings up a real virtual cluster (ten nodes: real noded and masterd
processes, ganeti-rapi, the fake hypervisor), fills it with instances the
way bench_list.py does (written into config.data with masterd stopped,
three out of four running: their fake hypervisor state files on their
primary nodes, the others administratively down), so that the watcher
finds every daemon running, every instance as it should be and no node
rebooted. One warm-up run records the nodes' boot ids and the instance
states; then the run on the master (``--wait-children``, so the node
group's pass with its disk verification is included) is timed, median
of ``--runs`` runs, and once more without disk verification. Target:
2 s for the full run.

Usage: bench/bench_watcher.py [--nodes 10] [--instances 200] [--runs 5]
"""

import argparse
import os
import statistics
import sys
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))
sys.path.insert(0, os.path.join(_TOP, "bench"))

from ganeti import constants  # noqa: E402
from bench_list import AddInstances  # noqa: E402
from testutils_cluster import VirtualCluster  # noqa: E402

TARGET = 2.0


def _Watch(cluster: VirtualCluster, *args: str) -> float:
    start = time.perf_counter()
    result = cluster.Run("ganeti-watcher", "--wait-children", *args,
                         check=False, timeout=300)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError("ganeti-watcher failed: %s" % result.stderr)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()

    cluster = VirtualCluster()
    try:
        cluster.Init()
        start = time.perf_counter()
        for idx in range(2, opts.nodes + 1):
            cluster.AddNode("node%d.example.test" % idx)
        print("%d nodes up in %.1f s" %
              (len(cluster.nodes), time.perf_counter() - start),
              flush=True)
        cluster.Run("daemon-util", "stop", constants.MASTERD)
        AddInstances(cluster, 0, opts.instances)
        cluster.StartMasterdAndWait()
        warm = _Watch(cluster)
        last = max((job_id for (job_id, ) in
                    cluster.Luxi().QueryJobs(None, ["id"])), default=0)
        full = [_Watch(cluster) for _ in range(opts.runs)]
        quick = [_Watch(cluster, "--no-verify-disks")
                 for _ in range(opts.runs)]
        new_ops = {op["OP_ID"] for job_id, ops in cluster.Luxi().QueryJobs(
                       None, ["id", "ops"]) if job_id > last
                   for op in ops}
    finally:
        cluster.Cleanup()
    print("ganeti-watcher --wait-children, %d nodes, %d instances"
          " (warm-up run %.2f s)" % (opts.nodes, opts.instances, warm))
    print("  full run           median %.2f s  max %.2f s" %
          (statistics.median(full), max(full)))
    print("  --no-verify-disks  median %.2f s  max %.2f s" %
          (statistics.median(quick), max(quick)))
    # The watcher archives its disk verification jobs
    print("  opcodes of the timed runs' jobs left in the queue: %s" %
          (", ".join(sorted(new_ops)) or "none"))
    ok = statistics.median(full) <= TARGET
    print("target median <= %.0f s: %s" % (TARGET,
                                            "OK" if ok else "OVER TARGET"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
