#!/usr/bin/env python3
"""KVM instances on a real two-node virtual cluster: boot, stop, migrate.

Real QEMU guests under TCG (the test kernel and initramfs, built and
cached by test/testutils_kvm.py) with the tinyimage OS, driven through
gnt-instance:

* boot to marker: from ``gnt-instance add`` or ``gnt-instance startup``
  to tinyimage's ready line on the serial console;
* start and stop latency: how long ``gnt-instance startup`` and
  ``gnt-instance shutdown`` take (the stop by ACPI: the guest's acpid
  powers it off; a forced stop is reported);
* live migration: the wall time of ``gnt-instance migrate`` and QEMU's
  own figures (query-migrate on the source, polled while the migration
  runs: total time and downtime of the memory transfer, RAM sent), for an
  idle guest and a busy one (a loop in the guest rewriting a tmpfs file
  with random content), with a sharedfile disk (memory only) and with a
  file disk (copied to the target over NBD first).

Medians over ``--runs`` runs. Usage: bench/bench_kvm.py [--runs 3]
"""

import argparse
import logging
import os
import socket
import statistics
import sys
import threading
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from ganeti import constants, errors, hypervisor, objects  # noqa: E402
from testutils_cluster import SMALL_IPOLICY_BOUNDS  # noqa: E402
from testutils_instance import (CHECKS, FILE_VDIR, NODE1,  # noqa: E402
                                NODE2, InstanceCluster, RemoveInstances)
from testutils_kvm import (Console, ForcedStops, GuestHvParams,  # noqa: E402
                           KillClusterGuests, NodeHv, RequireGuest,
                           SerialLog, WaitFor)

SHARED_VDIR = "/srv/ganeti/shared-file-storage"
_MIB = 1024 * 1024
# Rewrites 16 MiB of random data in a tmpfs, over and over: memory that
# stays dirty (random, so not sent as zero pages)
_DIRTY_LOOP = ("mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm &&"
               " dd if=/dev/urandom of=/dev/shm/src bs=1M count=16"
               " 2>/dev/null && (while :; do cp /dev/shm/src /dev/shm/x;"
               " done &) && echo dirty-$((6*7))")


def _FreePortPair() -> int:
    """A port that is free, with the next one (the NBD port), on every
    address."""
    while True:
        with socket.socket() as sock:
            sock.bind(("", 0))
            port = sock.getsockname()[1]
        try:
            with socket.socket() as sock:
                sock.bind(("", port + 1))
            return port
        except OSError:
            continue


def _Timed(func, *args, **kwargs) -> float:
    started = time.monotonic()
    func(*args, **kwargs)
    return time.monotonic() - started


def _WaitReady(node, name: str) -> None:
    kvm = NodeHv(node)
    WaitFor(lambda: "tinyimage %s ready" % name in SerialLog(kvm, name), 120,
            "%s's ready line" % name)


class _MigrationWatch:
    """Polls the source's query-migrate while a migration runs and keeps
    the last figures: the source QEMU quits right after completion.

    While the disks are still being copied the runtime has a pending
    migration, and GetMigrationStatus would start the memory transfer
    itself; that phase is only timed here.
    """

    def __init__(self, node, name: str):
        self._kvm = NodeHv(node)
        self._inst = objects.Instance(name=name)
        self.completed: dict = {}
        self.copy_seen: list[float] = []

    def Poll(self) -> None:
        try:
            runtime = self._kvm.LoadRuntime(self._inst.name)
            if runtime and runtime.get("pending_migration"):
                self.copy_seen.append(time.monotonic())
                return
            if not runtime:
                return
            status = self._kvm.GetMigrationStatus(self._inst)
        except errors.HypervisorError:
            # The source QEMU has gone: the figures so far are kept
            return
        if status["status"] == constants.HV_MIGRATION_COMPLETED:
            self.completed = status


def _Migrate(cluster, name: str, source, target: str) -> dict:
    """gnt-instance migrate with QEMU's figures for the memory transfer."""
    watch = _MigrationWatch(source, name)
    failures: list[BaseException] = []

    def _Run():
        try:
            cluster.Run("gnt-instance", "migrate", "-f", "-n", target, name,
                        timeout=300)
        except BaseException as err:  # re-raised in the caller
            failures.append(err)

    thread = threading.Thread(target=_Run)
    started = time.monotonic()
    thread.start()
    while thread.is_alive():
        watch.Poll()
        time.sleep(0.02)
    wall = time.monotonic() - started
    if failures:
        raise failures[0]
    figures = watch.completed
    copy = watch.copy_seen
    return {"wall": wall, "copy": copy[-1] - copy[0] if copy else None,
            "total": figures.get("total_time"),
            "downtime": figures.get("downtime"),
            "ram": figures.get("transferred_ram")}


def _Median(values, fmt: str) -> str:
    values = [value for value in values if value is not None]
    if not values:
        return "n/a"
    return fmt % statistics.median(values)


def _ReportMigrations(what: str, runs: list[dict]) -> None:
    missing = sum(1 for run in runs if run["downtime"] is None)
    copy = _Median([run["copy"] for run in runs], "%.2f")
    print("  %-22s wall %s s,%s QEMU total %s ms, downtime %s ms, RAM sent"
          " %s MiB%s" %
          (what, _Median([run["wall"] for run in runs], "%.2f"),
           "" if copy == "n/a" else " disk copy %s s," % copy,
           _Median([run["total"] for run in runs], "%.0f"),
           _Median([run["downtime"] for run in runs], "%.0f"),
           _Median([run["ram"] and run["ram"] / _MIB for run in runs],
                   "%.1f"),
           " (%d runs without QEMU figures)" % missing if missing else ""))


def BenchTemplate(cluster, template: str, name: str, runs: int,
                  start_stop: bool) -> None:
    nodes = {NODE1: cluster.nodes[NODE1], NODE2: cluster.nodes[NODE2]}
    print("%s instance %s (128 MiB, 32 MiB disk):" % (template, name))
    try:
        started = time.monotonic()
        cluster.Run("gnt-instance", "add", "-t", template, "-o",
                    "tinyimage", "-n", NODE1, "--disk", "0:size=32M",
                    "--no-nics", "-B", "maxmem=128,minmem=128", *CHECKS,
                    name, timeout=300)
        _WaitReady(nodes[NODE1], name)
        print("  add to ready line      %.2f s" %
              (time.monotonic() - started))
        if start_stop:
            stops, starts, boots = [], [], []
            forced = ForcedStops(nodes[NODE1], name)
            for _ in range(runs):
                stops.append(_Timed(cluster.Run, "gnt-instance", "shutdown",
                                    "--timeout=60", name, timeout=120))
                started = time.monotonic()
                cluster.Run("gnt-instance", "startup", name, timeout=120)
                starts.append(time.monotonic() - started)
                _WaitReady(nodes[NODE1], name)
                boots.append(time.monotonic() - started)
            print("  shutdown (ACPI)        median %.2f s (%d of %d"
                  " forced)" % (statistics.median(stops),
                                ForcedStops(nodes[NODE1], name) - forced,
                                runs))
            print("  startup                median %.2f s" %
                  statistics.median(starts))
            print("  startup to ready line  median %.2f s" %
                  statistics.median(boots))
        where = NODE1
        for load in ("idle", "busy"):
            if load == "busy":
                Console(NodeHv(nodes[where]), name, _DIRTY_LOOP, "dirty-42",
                        timeout=60)
            results = []
            for _ in range(runs):
                target = NODE2 if where == NODE1 else NODE1
                results.append(_Migrate(cluster, name, nodes[where],
                                        target))
                where = target
            _ReportMigrations("migrate, %s guest" % load, results)
    finally:
        RemoveInstances(cluster, name, extra=("--shutdown-timeout=0", ))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--bandwidth", type=int, default=1000,
                        help="migration_bandwidth, MiB/s (Ganeti's default,"
                        " 32, does not converge for the busy guest)")
    args = parser.parse_args()
    # hv_kvm warns while the bench polls a migration not yet started
    logging.basicConfig(level=logging.ERROR)
    vmlinux, initrd = RequireGuest()
    with InstanceCluster("--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         "--enabled-hypervisors=kvm,fake",
                         "--enabled-disk-templates=file,sharedfile",
                         nodes=(NODE2, ),
                         file_paths=(FILE_VDIR, SHARED_VDIR)) as cluster:
        try:
            os.makedirs(os.path.join(cluster.base, SHARED_VDIR.lstrip("/")))
            params = GuestHvParams(vmlinux, initrd,
                                   migration_port=_FreePortPair(),
                                   migration_bandwidth=args.bandwidth)
            cluster.Run("gnt-cluster", "modify", "-H", "kvm:" + ",".join(
                "%s=%s" % item for item in sorted(params.items())))
            print("KVM (TCG) on a 2-node virtual cluster, %d runs each,"
                  " migration_bandwidth %d MiB/s, downtime limit %s ms" %
                  (args.runs, args.bandwidth,
                   hypervisor.GetHvDefaults(constants.HT_KVM)[
                       "migration_downtime"]))
            BenchTemplate(cluster, "sharedfile", "kvmb1", args.runs, True)
            BenchTemplate(cluster, "file", "kvmb2", args.runs, False)
        finally:
            KillClusterGuests(cluster)


if __name__ == "__main__":
    main()
