#!/usr/bin/env python3
"""Benchmark of the built-in allocator and the planning (ganeti.htools).

On simulated clusters (input messages, no daemons): one allocation on
100 nodes / 1,000 instances and 1,000 nodes / 10,000 instances (the whole
request: parsing the message included), a DRBD (pair) allocation on 100
nodes, the capacity report for a 1 vcpu / 1 GiB / 10 GiB instance on 100
nodes, and the rebalance planning on 100 nodes / 1,000 skewed instances
(DRBD and diskless, all on half of the nodes), with the final score.

Usage: bench_alloc.py [--repeat N]
"""

import argparse
import sys

import benchutils
from benchutils import MedianTime as Time

benchutils.ImportGaneti()

from ganeti.htools import allocator, balance, capacity, simu  # noqa: E402



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for nodes, insts, target in ((100, 1000, 5.0), (1000, 10000, 50.0)):
        msg = simu.Message(nodes, insts, request=simu.AllocRequest())
        secs, answer = Time(lambda: allocator.Run(msg), args.repeat)
        print("allocate on %d nodes / %d instances: %.1f ms (target %g ms)"
              " -> %s" % (nodes, insts, secs * 1000, target,
                          answer["result"]))
    # a mirrored placement tries every ordered pair of nodes (no target)
    msg = simu.Message(100, 1000, templates=("drbd", ),
                       request=simu.AllocRequest(template="drbd"))
    secs, answer = Time(lambda: allocator.Run(msg), args.repeat)
    print("allocate drbd on 100 nodes / 1000 drbd instances: %.1f ms -> %s"
          % (secs * 1000, answer["result"]))
    msg = simu.Message(100)
    spec = capacity.Spec(memory=1024, disk=10240, vcpus=1)
    secs, report = Time(lambda: capacity.Capacity(msg, spec),
                         max(1, args.repeat // 2))
    for group in report:
        print("capacity on 100 nodes: %.2f s (target 1 s): %d more"
              " instances in %s, %s runs out first" %
              (secs, group.instances, group.group, group.limit))
    msg = simu.Message(100, 1000, templates=("drbd", "diskless"), skew=0.5)
    secs, plan = Time(lambda: balance.PlanBalance(msg), 1)
    print("rebalance on 100 nodes / 1000 instances: %.2f s (target 2 s):"
          " score %.6f -> %.6f, %d moves in %d job sets" %
          (secs, plan.initial_score, plan.final_score, len(plan.steps),
           len(plan.jobsets)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
