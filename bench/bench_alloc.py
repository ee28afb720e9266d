#!/usr/bin/env python3
"""Benchmark of the built-in allocator and the planning (ganeti.htools).

On simulated clusters (input messages, no daemons): one allocation on
100 nodes / 1,000 instances and 1,000 nodes / 10,000 instances (the whole
request: parsing the message included), a DRBD (pair) allocation on 100
nodes, the capacity report for a 1 vcpu / 1 GiB / 10 GiB instance on 100
nodes, and the rebalance planning on 100 nodes / 1,000 skewed instances
(DRBD and diskless, all on half of the nodes), with the final score,
on every core as hbal plans (``htools.parallel``) and serially.

Usage: bench_alloc.py [--repeat N]
"""

import argparse
import sys

import benchutils
from benchutils import MedianTime as Time

benchutils.ImportGaneti()

from ganeti import constants  # noqa: E402
from ganeti.htools import (allocator, balance, capacity,  # noqa: E402
                           parallel, simu)



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
    for checks in (False, True):
        def Standard() -> tuple[int, str]:
            alloc = capacity.Allocator(msg, constants.DT_PLAIN, 1,
                                       capacity=checks)
            fails = alloc.Iterate(spec, None)
            return len(alloc.placed), capacity.SortedFails(fails)[0][0]
        secs, (count, reason) = Time(Standard, max(1, args.repeat // 2))
        print("capacity on 100 nodes (hspace's standard run, capacity"
              " checks %s): %.2f s (target 1 s): %d more instances, %s" %
              ("on" if checks else "off", secs, count, reason))
    msg = simu.Message(100, 1000, templates=("drbd", "diskless"), skew=0.5)
    # as hbal plans: on every core (the same plan as the serial one)
    secs, plan = Time(lambda: balance.PlanBalance(msg, workers=None), 1)
    serial, _ = Time(lambda: balance.PlanBalance(msg), 1)
    print("rebalance on 100 nodes / 1000 instances: %.2f s (target 2 s,"
          " %d cores; serial %.2f s): score %.6f -> %.6f, %d moves in %d"
          " job sets" % (secs, parallel.Cores(), serial, plan.initial_score,
                         plan.final_score, len(plan.steps),
                         len(plan.jobsets)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
