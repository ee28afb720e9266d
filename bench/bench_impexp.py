#!/usr/bin/env python3
"""Throughput of a node-to-node transfer (ganeti.impexp) of one file.

Starts two real ganeti-noded daemons (virtual nodes on their own
127.x.y.z addresses, one cluster certificate), writes a file into the
first node's backup directory and copies it to the second with
impexp.master.TransferInstanceData, once per compression. Reports the
throughput over the data phase (connection to end, as the destination
reports it, including its final fsync) and end to end (from the RPC that
starts the import until both ends are cleaned up).

Usage: bench/bench_impexp.py [--size MIB] [--compress none,gzip-fast,gzip]
       [--data random|text|zero|sparse] [--rounds N]
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "test"))

import testutils_node  # noqa: E402

from ganeti import impexp, pathutils  # noqa: E402
from ganeti.impexp import master, sparse  # noqa: E402

_MIB = 1024 * 1024


def _WriteData(path: str, size_mib: int, kind: str) -> None:
    """Write the source file."""
    line = b"Ganeti moves instances between nodes, one chunk at a time.\n"
    text = (line * (_MIB // len(line) + 1))[:_MIB]
    with open(path, "wb") as fobj:
        if kind == "sparse":
            # No data at all: an empty disk, one hole
            fobj.truncate(size_mib * _MIB)
            return
        for _ in range(size_mib):
            chunk = {"random": lambda: os.urandom(_MIB),
                     "text": lambda: text,
                     "zero": lambda: bytes(_MIB)}[kind]()
            fobj.write(chunk)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256, help="MiB")
    parser.add_argument("--compress", default="none,gzip-fast,gzip")
    parser.add_argument("--data", default="random",
                        choices=["random", "text", "zero", "sparse"])
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()

    with testutils_node.TestCluster(2) as cluster:
        cluster.StartNoded()
        src, dst = cluster.nodes
        for node in cluster.nodes:
            os.makedirs(node.Path(pathutils.EXPORT_DIR), exist_ok=True)
        source = os.path.join(pathutils.EXPORT_DIR, "bench.img")
        _WriteData(src.Path(source), opts.size, opts.data)
        checksum = sparse.FileChecksum(src.Path(source))
        runner = cluster.Runner()
        print("%d MiB of %s data, %d rounds per compression" %
              (opts.size, opts.data, opts.rounds))
        print("%-10s %14s %14s %8s" % ("compress", "data MiB/s",
                                      "e2e MiB/s", "e2e s"))
        try:
            for compress in opts.compress.split(","):
                data_rates, e2e_times = [], []
                for idx in range(opts.rounds):
                    dest = os.path.join(pathutils.EXPORT_DIR,
                                        "copy-%s-%d.img" % (compress, idx))
                    start = time.perf_counter()
                    (result, ) = master.TransferInstanceData(
                        runner, None, src.name, dst.name, dst.ip, compress,
                        "bench", [master.DiskTransfer(
                            "disk/0", impexp.IEIO_FILE, source,
                            impexp.IEIO_FILE, dest)])
                    e2e_times.append(time.perf_counter() - start)
                    if not result.success or result.checksum != checksum:
                        raise RuntimeError("Transfer failed: %s" %
                                           (result, ))
                    data_rates.append(result.size / _MIB / result.elapsed)
                    os.unlink(dst.Path(dest))
                e2e = statistics.median(e2e_times)
                print("%-10s %14.1f %14.1f %8.2f" %
                      (compress, statistics.median(data_rates),
                       opts.size / e2e, e2e))
        finally:
            runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
