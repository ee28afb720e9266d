#!/usr/bin/env python3
"""The drbd template (user-space mirror) against a plain file disk.

Prints, in one run on this machine (both nodes on loopback, the pair of
test/test_storage_drbd.py with real qemu-storage-daemon processes):

* sequential writes (64 MiB in 1 MiB writes, one fsync at the end) and
  random 4 KiB writes through the primary's device and into a plain file
  of the same size, in ``--rounds`` alternating rounds: the median
  throughput of each and the median of the rounds' ratios (target: the
  mirror at least 50% of the file's sequential throughput). Random
  writes use O_DIRECT where the device takes it, else an fsync every
  ``--sync-every`` writes; the output says which;
* resync: 10% of a 1 GiB disk written (1 MiB pieces at random offsets)
  while the secondary was away; the bytes the mirror copied when it came
  back and the time until in sync (target: about 10%, not 100%);
* with ``--kvm``: what a KVM guest's block layer gets, ``qemu-img
  bench`` (1 MiB sequential and 4 KiB random writes, O_DIRECT, one
  request at a time, and 4 KiB random writes 16 at a time) into the
  plain file, the primary's FUSE device, the device daemon's NBD
  socket, the image daemon's NBD socket (the one KVM guests attach to
  on a primary) and the device daemon a migration target opens (over
  TLS to its image daemon, which its guest uses until the disk is next
  assembled): medians and the ratios to the file;
* with ``--failover`` (a virtual cluster, slower): a running fake
  hypervisor instance whose primary node died (its noded and drbd
  daemons killed), the time of ``gnt-instance failover
  --ignore-consistency`` until it runs on the former secondary.

Usage: bench/bench_drbd.py [--seq-mib 64] [--random-writes 2000]
                           [--sync-every 64] [--rounds 5] [--resync-mib 1024]
                           [--kvm] [--failover] [--seed 1]
"""

import argparse
import errno
import mmap
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from statistics import median

import pytest

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from ganeti import pathutils  # noqa: E402
from ganeti.utils import process  # noqa: E402
import test_storage_drbd  # noqa: E402
from test_storage_drbd import MIB, Pair  # noqa: E402

_BLOCK = 4096


def FreePort() -> int:
    """A port of the DRBD range free on both test addresses."""
    return test_storage_drbd.unused_port_range.__wrapped__()


def SequentialWrite(path: str, mib: int) -> float:
    """MiB/s of ``mib`` 1 MiB writes and one fsync."""
    data = os.urandom(MIB)
    fd = os.open(path, os.O_WRONLY)
    try:
        start = time.monotonic()
        for i in range(mib):
            os.pwrite(fd, data, i * MIB)
        os.fsync(fd)
        return mib / (time.monotonic() - start)
    finally:
        os.close(fd)


def _DirectFd(path: str) -> int | None:
    """``path`` opened with O_DIRECT, if its file system takes it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
    except OSError as err:
        if err.errno == errno.EINVAL:
            return None
        raise
    buf = mmap.mmap(-1, _BLOCK)
    try:
        os.pwrite(fd, buf, 0)
    except OSError as err:
        os.close(fd)
        if err.errno == errno.EINVAL:
            return None
        raise
    return fd


def RandomWrite(path: str, count: int, sync_every: int, size_mib: int,
                seed: int) -> tuple[float, str]:
    """Writes/s of ``count`` 4 KiB writes at random aligned offsets."""
    rng = random.Random(seed)
    offsets = [rng.randrange(size_mib * MIB // _BLOCK) * _BLOCK
               for _ in range(count)]
    buf = mmap.mmap(-1, _BLOCK)
    buf.write(os.urandom(_BLOCK))
    fd = _DirectFd(path)
    mode = "O_DIRECT"
    if fd is None:
        fd = os.open(path, os.O_WRONLY)
        mode = "fsync every %d writes" % sync_every
    try:
        start = time.monotonic()
        for i, offset in enumerate(offsets):
            os.pwrite(fd, buf, offset)
            if mode != "O_DIRECT" and (i + 1) % sync_every == 0:
                os.fsync(fd)
        os.fsync(fd)
        return count / (time.monotonic() - start), mode
    finally:
        os.close(fd)


def _NewPair(base: str, size_mib: int) -> Pair:
    tmp = tempfile.mkdtemp(dir=base)
    pair = Pair(tmp, pytest.MonkeyPatch(), FreePort())
    pair.disk.size = size_mib
    pair.Create()
    pair.Call("snode", "AssembleSecondary")
    pair.Call("pnode", "Assemble")
    pair.WaitInSync(timeout=600)
    return pair


def _Stop(pair: Pair) -> None:
    for name in ("pnode", "snode"):
        pair.Call(name, "Shutdown")
    pair.monkeypatch.undo()


def Throughput(base: str, args: argparse.Namespace) -> None:
    """Rounds of the file disk then the mirror, back to back: the load of
    a shared machine changes from second to second, so each round's ratio
    compares like with like; the medians are printed."""
    size = max(args.seq_mib, 64)
    plain = os.path.join(base, "plain.img")
    with open(plain, "wb") as fobj:
        fobj.truncate(size * MIB)
    pair = _NewPair(base, size)
    try:
        device = pair.Dev("pnode").device
        rounds: list[dict[str, tuple[float, float]]] = []
        modes = {}
        for _ in range(args.rounds):
            results = {}
            for name, path in (("file", plain), ("drbd", device)):
                seq = SequentialWrite(path, args.seq_mib)
                rnd, modes[name] = RandomWrite(
                    path, args.random_writes, args.sync_every, size,
                    args.seed)
                results[name] = (seq, rnd)
            rounds.append(results)
        for name in ("file", "drbd"):
            print("%-4s sequential %7.1f MiB/s, random 4 KiB %7.0f"
                  " writes/s (%s; medians of %d rounds)" % (
                      name, median(r[name][0] for r in rounds),
                      median(r[name][1] for r in rounds), modes[name],
                      len(rounds)))
        print("drbd/file (median of the rounds' ratios): sequential %.0f%%,"
              " random %.0f%%" % tuple(
                  100 * median(r["drbd"][i] / r["file"][i] for r in rounds)
                  for i in (0, 1)))
    finally:
        _Stop(pair)


def QemuBench(target: str, size: str, count: int, depth: int) -> float:
    """Seconds ``qemu-img bench`` takes for ``count`` writes, ``depth``
    at a time."""
    out = subprocess.run(
        ["qemu-img", "bench", "-w", "-f", "raw", "-t", "none", "-i",
         "threads", "-d", str(depth), "-s", size, "-c", str(count), target],
        check=True, capture_output=True, text=True).stdout
    match = re.search(r"Run completed in ([0-9.]+) seconds", out)
    assert match, out
    return float(match.group(1))


def KvmPaths(base: str, args: argparse.Namespace) -> None:
    """Rounds over the paths a guest may write through (module doc)."""
    plain = os.path.join(base, "kvm-plain.img")
    with open(plain, "wb") as fobj:
        fobj.truncate(64 * MIB)
    pair = _NewPair(base, 64)
    try:
        dev = pair.Dev("pnode")
        paths = {"file": plain, "fuse device": dev.device}
        pair.Call("snode", "Open")
        for name, sock in (("device daemon", dev.nbd_socket),
                           ("image daemon", dev.image_socket),
                           ("migration target",
                            pair.Dev("snode").nbd_socket)):
            paths[name] = "nbd+unix:///disk?socket=%s" % sock
        for label, size, count, depth in (
                ("sequential 1 MiB", "1M", 64, 1),
                ("random 4 KiB", "4k", args.random_writes, 1),
                ("random 4 KiB, 16 in flight", "4k", args.random_writes,
                 16)):
            times: dict[str, list[float]] = {name: [] for name in paths}
            for _ in range(args.rounds):
                for name, path in paths.items():
                    times[name].append(QemuBench(path, size, count, depth))
            base_time = median(times["file"])
            print("qemu-img bench %s: %s (medians of %d rounds)" % (
                label, ", ".join(
                    "%s %.0f%%" % (name, 100 * base_time / median(spent))
                    for name, spent in times.items()), args.rounds))
    finally:
        _Stop(pair)


def Resync(base: str, args: argparse.Namespace) -> None:
    size = args.resync_mib
    pair = _NewPair(base, size)
    try:
        device = pair.Dev("pnode").device
        pair.Call("snode", "Shutdown")
        synced = pair.Call("pnode", "GetSyncedBytes")
        rng = random.Random(args.seed)
        pieces = rng.sample(range(size), size // 10)
        data = os.urandom(MIB)
        fd = os.open(device, os.O_WRONLY)
        try:
            for piece in pieces:
                os.pwrite(fd, data, piece * MIB)
            os.fsync(fd)
        finally:
            os.close(fd)
        start = time.monotonic()
        pair.Call("snode", "AssembleSecondary")
        pair.WaitInSync(timeout=600)
        elapsed = time.monotonic() - start
        copied = pair.Call("pnode", "GetSyncedBytes") - synced
        print("resync: %d MiB written of %d MiB while degraded; copied"
              " %.1f MiB (%.1f%% of the disk) in %.2f s (secondary back to"
              " in sync)" % (len(pieces), size, copied / MIB,
                             100.0 * copied / (size * MIB), elapsed))
    finally:
        _Stop(pair)


def Failover() -> None:
    from testutils_instance import (CHECKS, NODE2, NODE3, InstanceCluster,
                                    PrimaryNode)
    with InstanceCluster("--enabled-disk-templates=drbd,file") as cluster:
        cluster.Run("gnt-instance", "add", "-t", "drbd", "-n",
                    "%s:%s" % (NODE2, NODE3), "--disk", "0:size=64M",
                    "--no-install", "--ignore-ipolicy", "-B", "memory=64",
                    *CHECKS, "bench1", timeout=300)
        node2 = cluster.nodes[NODE2]
        node2.KillDaemon("ganeti-noded")
        run_dir = node2.NodePath(pathutils.DRBD_RUN_DIR)
        for name in os.listdir(run_dir):
            if name.endswith(".pid"):
                pid = process.ReadPidFile(os.path.join(run_dir, name))
                if process.IsProcessAlive(pid):
                    process.KillProcess(pid, signal.SIGKILL,
                                        timeout=15)
        start = time.monotonic()
        cluster.Run("gnt-instance", "failover", "-f", "--ignore-consistency",
                    "bench1", timeout=300)
        elapsed = time.monotonic() - start
        assert PrimaryNode(cluster, "bench1") == NODE3
        status = cluster.Run("gnt-instance", "list", "--no-headers", "-o",
                             "status", "bench1").stdout.strip()
        print("failover --ignore-consistency after the primary died:"
              " %.2f s (instance %s on the former secondary)" %
              (elapsed, status))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seq-mib", type=int, default=64)
    parser.add_argument("--random-writes", type=int, default=2000)
    parser.add_argument("--sync-every", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5,
                        help="file/drbd throughput rounds (medians)")
    parser.add_argument("--resync-mib", type=int, default=1024)
    parser.add_argument("--kvm", action="store_true",
                        help="also compare the paths a KVM guest may"
                        " write through")
    parser.add_argument("--failover", action="store_true",
                        help="also time a failover on a virtual cluster")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="bench-drbd", dir="/tmp")
    try:
        Throughput(base, args)
        Resync(base, args)
        if args.kvm:
            KvmPaths(base, args)
        if args.failover:
            Failover()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
