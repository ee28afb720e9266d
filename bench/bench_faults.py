#!/usr/bin/env python3
"""Crash rounds under load: kill -9 of the master daemon on a real
virtual cluster (two nodes, node2 a master candidate) while C LUXI clients
submit jobs, then a restart; every acknowledged job is accounted for.

Prints acknowledged, finished (succeeded), interrupted (running at the
kill, failed by the restart), lost and duplicated jobs, and the restart
time (median, max) of the master daemon with about F job files in the
queue (--job-files, finished jobs left unarchived). Target: 0 lost and 0
duplicated over 20 rounds, restart under 2 s at 5,000 job files.

Usage: bench/bench_faults.py [--rounds 20] [--clients 4] [--jobs 50]
                             [--job-files 5000] [--seed 1]
"""

import argparse
import os
import random
import statistics
import sys
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from ganeti import opcodes  # noqa: E402
from testutils_cluster import VirtualCluster, WaitForJob  # noqa: E402
from testutils_crash import (Accounting, CrashLoad,  # noqa: E402
                             RestartMasterd)


def FillQueue(cluster: VirtualCluster, count: int) -> None:
    """Leave about ``count`` finished job files in the queue directory."""
    client = cluster.Luxi()
    batch = 500
    for start in range(0, count, batch):
        results = client.SubmitManyJobs(
            [[opcodes.OpTestDelay(duration=0.001)]
             for _ in range(min(batch, count - start))])
        for ok, job_id in results:
            if ok:
                WaitForJob(client, job_id, timeout=300)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=50,
                        help="jobs offered per round")
    parser.add_argument("--job-files", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cluster = VirtualCluster()
    try:
        cluster.Init()
        cluster.AddNode("node2.example.test")
        FillQueue(cluster, args.job_files)
        total = Accounting()
        restarts = []
        for round_no in range(args.rounds):
            load = CrashLoad(cluster, "r%d" % round_no, args.jobs,
                             args.clients)
            load.Start()
            time.sleep(rng.uniform(0.1, 1.0))
            restarts.append(RestartMasterd(cluster))
            load.Stop()
            total.Add(load.Account())
        files = len([name for name in os.listdir(cluster.queue_dir)
                     if name.startswith("job-")])
        print("rounds: %d, clients: %d, job files at the end: %d" %
              (args.rounds, args.clients, files))
        print("acknowledged: %d, finished: %d, interrupted: %d, lost: %d,"
              " duplicated: %d, failed otherwise: %d" %
              (total.acknowledged, total.finished, total.interrupted,
               len(total.lost), len(total.duplicated), len(total.failed)))
        print("restart time: median %.2f s, max %.2f s" %
              (statistics.median(restarts), max(restarts)))
        if total.lost or total.duplicated or total.failed:
            raise SystemExit("lost %s, duplicated %s, failed %s" %
                             (total.lost, total.duplicated, total.failed))
    finally:
        cluster.Cleanup()


if __name__ == "__main__":
    main()
