#!/usr/bin/env python3
"""Throughput of ganeti.locking: acquire/release pairs per second.

Run as ``python bench/bench_locking.py [--seconds N]``. Measures an
uncontended SharedLock (exclusive and shared), the processor's common path
through GanetiLockManager (BGL shared plus one instance lock), and 8
threads contending through a LockSet and through the manager on a few
locks.
"""

import argparse
import os
import random
import sys
import threading
import time

import benchutils

benchutils.ImportGaneti()

from ganeti import locking  # noqa: E402


def _Rate(fn, seconds: float) -> float:
    """Calls of ``fn`` (one batch of 1000 pairs each) per second."""
    fn()  # warm-up
    count = 0
    start = time.perf_counter()
    end = start + seconds
    while True:
        fn()
        count += 1000
        now = time.perf_counter()
        if now >= end:
            return count / (now - start)


def BenchSharedLock(seconds: float, shared: int) -> float:
    lock = locking.SharedLock("bench")
    acquire = lock.acquire
    release = lock.release

    def Batch():
        for _ in range(1000):
            acquire(shared=shared)
            release()

    return _Rate(Batch, seconds)


def BenchManager(seconds: float) -> float:
    """Pairs per second; one round (BGL + instance) counts as two pairs."""
    glm = locking.GanetiLockManager(["node1"], ["group1"], ["inst1", "inst2"],
                                    [])

    def Batch():
        for _ in range(500):
            glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL], shared=1)
            glm.acquire(locking.LEVEL_INSTANCE, ["inst1"])
            glm.release(locking.LEVEL_INSTANCE)
            glm.release(locking.LEVEL_CLUSTER)

    return _Rate(Batch, seconds)


def _Contend(nthreads: int, seconds: float, body) -> tuple[float, int]:
    """Run ``body(rng)`` in a loop on ``nthreads`` threads; returns
    (acquire/release pairs per second, timed-out attempts)."""
    stop = threading.Event()
    pairs = [0] * nthreads
    timeouts = [0] * nthreads

    def Worker(idx):
        rng = random.Random(idx)
        while not stop.is_set():
            done = body(rng)
            if done:
                pairs[idx] += done
            else:
                timeouts[idx] += 1

    threads = [threading.Thread(target=Worker, args=(i,), name="job/%d" % i)
               for i in range(nthreads)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return (sum(pairs) / (time.perf_counter() - start), sum(timeouts))


def BenchContendedLockSet(seconds: float, yield_held: bool,
                          nthreads: int = 8,
                          nlocks: int = 4) -> tuple[float, int]:
    """With ``yield_held`` each holder gives up the CPU while holding its
    locks, so that nearly every acquire finds them taken (otherwise the GIL
    lets a thread run many rounds before another gets scheduled)."""
    names = ["lock%d" % i for i in range(nlocks)]
    lockset = locking.LockSet(names, "bench")

    def Body(rng):
        wanted = rng.sample(names, rng.randint(1, 2))
        got = lockset.acquire(wanted, shared=rng.random() < 0.3)
        if yield_held:
            time.sleep(0)
        lockset.release()
        return len(got)

    return _Contend(nthreads, seconds, Body)


def BenchContendedManager(seconds: float, nthreads: int = 8,
                          ninstances: int = 4) -> tuple[float, int]:
    names = ["inst%d" % i for i in range(ninstances)]
    glm = locking.GanetiLockManager(["node1"], ["group1"], names, [])

    def Body(rng):
        exclusive_bgl = rng.random() < 0.02
        glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL],
                    shared=not exclusive_bgl)
        try:
            got = glm.acquire(locking.LEVEL_INSTANCE,
                              rng.sample(names, rng.randint(1, 2)),
                              shared=rng.random() < 0.3,
                              timeout=rng.choice([None, 0.01]))
            if got is None:
                return 0
            glm.release(locking.LEVEL_INSTANCE)
            return 1 + len(got)
        finally:
            glm.release(locking.LEVEL_CLUSTER)

    return _Contend(nthreads, seconds, Body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="duration of each measurement")
    opts = parser.parse_args()
    secs = opts.seconds

    print("Python %s, %d CPUs, %.1f s per measurement" %
          (sys.version.split()[0], os.cpu_count() or 0, secs))
    print("%-55s %12.0f pairs/s" % ("SharedLock uncontended, exclusive",
                                    BenchSharedLock(secs, 0)))
    print("%-55s %12.0f pairs/s" % ("SharedLock uncontended, shared",
                                    BenchSharedLock(secs, 1)))
    print("%-55s %12.0f pairs/s" %
          ("GanetiLockManager uncontended (BGL shared + 1 instance)",
           BenchManager(secs)))
    (rate, _) = BenchContendedLockSet(secs, False)
    print("%-55s %12.0f pairs/s" %
          ("LockSet, 8 threads on 4 locks (1-2 each, 30% shared)", rate))
    (rate, _) = BenchContendedLockSet(secs, True)
    print("%-55s %12.0f pairs/s" %
          ("  same, yielding the CPU while holding", rate))
    (rate, timeouts) = BenchContendedManager(secs)
    print("%-55s %12.0f pairs/s (%d timeouts)" %
          ("Manager, 8 threads: BGL + 1-2 of 4 instances", rate, timeouts))


if __name__ == "__main__":
    main()
