#!/usr/bin/env python3
"""Wall time of listing many instances: ``gnt-instance list`` and RAPI.

Brings up a real virtual cluster (three nodes: real noded and masterd
processes, ganeti-rapi, the fake hypervisor) and fills it with instances
without running a job per instance:

1. masterd is stopped (``daemon-util stop ganeti-masterd``);
2. instances are appended to the master's config.data as the entries
   ``LUInstanceCreate`` would write: an ``objects.Instance`` with one NIC
   and an ``objects.Disk`` (a file disk on the primary node) each, spread
   over the nodes, three out of four with admin state "up"; the serial
   number of the configuration is increased;
3. the fake hypervisor's state file of every "up" instance is written on
   its primary node (``FAKE_HV_DIR/<name>``), so the instances are
   running as far as the nodes can tell;
4. masterd is started again and loads the configuration.

Then it times (wall clock, median of ``--runs`` runs, after one warm-up
run) the real ``gnt-instance list`` command (default fields, which
include the live ones: one ``all_instances_info`` RPC per node) with
1,000 and with 10,000 instances, and ``GET /2/instances?bulk=1`` (every
field Ganeti's bulk answer has, over HTTPS on one kept-alive connection,
until the whole answer is read) with both.

The targets are 0.5 s and 2 s for the two listings and 0.1 s for the
RAPI request with 1,000 instances; the script prints the figures and
exits with 1 if a target is missed.

Usage: bench/bench_list.py [--runs 5] [--sizes 1000,10000]
"""

import argparse
import base64
import http.client
import json
import os
import ssl
import statistics
import subprocess
import sys
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))

from ganeti import constants, objects, pathutils  # noqa: E402
from testutils_cluster import VirtualCluster  # noqa: E402

NODES = ("node2.example.test", "node3.example.test")
TARGETS = {1000: 0.5, 10000: 2.0}
RAPI_TARGETS = {1000: 0.1}
_USER, _PASSWORD = "bench", "bench-password"


def _ConfigPath(cluster: VirtualCluster) -> str:
    return cluster.NodePath(pathutils.CLUSTER_CONF_FILE)


def AddInstances(cluster: VirtualCluster, first: int, count: int) -> None:
    """Write instances ``first`` to ``first + count - 1`` into config.data
    and the fake hypervisor state of the running ones (masterd stopped).
    """
    with open(_ConfigPath(cluster), encoding="utf-8") as fobj:
        data = json.load(fobj)
        cfg_stat = os.fstat(fobj.fileno())
    node_uuids = sorted(data["nodes"])
    node_by_uuid = {uuid: cluster.nodes[node["name"]]
                    for uuid, node in data["nodes"].items()}
    storage_dir = data["cluster"]["file_storage_dir"]
    now = time.time()
    for idx in range(first, first + count):
        name = "inst%05d.example.test" % idx
        pnode = node_uuids[idx % len(node_uuids)]
        disk = objects.Disk(
            uuid=objects.NewUUID(), dev_type=constants.DT_FILE,
            logical_id=[constants.FD_LOOP,
                        os.path.join(storage_dir, name, "disk0")],
            nodes=[pnode], iv_name="disk/0", size=1024 * (1 + idx % 4),
            mode="rw", params={}, serial_no=1, ctime=now, mtime=now)
        running = idx % 4 != 3
        memory = 128 * (1 + idx % 4)
        inst = objects.Instance(
            name=name, uuid=objects.NewUUID(), primary_node=pnode,
            os="tinyimage", hypervisor=constants.HT_FAKE, hvparams={},
            beparams={"maxmem": memory, "minmem": memory, "vcpus": 1},
            osparams={}, osparams_private={},
            admin_state=(objects.ADMINST_UP if running
                         else objects.ADMINST_DOWN),
            admin_state_source=objects.ADMIN_SOURCE, disks_active=running,
            disks=[disk.uuid],
            nics=[objects.NIC(mac="aa:00:%02x:%02x:%02x:%02x" %
                              (idx >> 24 & 255, idx >> 16 & 255,
                               idx >> 8 & 255, idx & 255),
                              uuid=objects.NewUUID(), nicparams={})],
            tags=["bench"] if idx % 3 == 0 else [], serial_no=1,
            ctime=now, mtime=now)
        data["disks"][disk.uuid] = disk.ToDict()
        data["instances"][inst.uuid] = inst.ToDict()
        if running:
            state_dir = node_by_uuid[pnode].NodePath(pathutils.FAKE_HV_DIR)
            os.makedirs(state_dir, exist_ok=True)
            with open(os.path.join(state_dir, name), "w",
                      encoding="ascii") as fobj:
                fobj.write("0\n%d\n1\n" % memory)
    data["serial_no"] += 1
    tmp = _ConfigPath(cluster) + ".bench"
    with open(tmp, "w", encoding="utf-8") as fobj:
        json.dump(data, fobj, sort_keys=True, separators=(",", ":"))
    os.chmod(tmp, cfg_stat.st_mode & 0o777)
    os.rename(tmp, _ConfigPath(cluster))


def _Timed(fn, runs: int) -> list[float]:
    fn()  # warm-up: caches, imports, connections
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def _ListCommand(cluster: VirtualCluster, expected: int):
    def run() -> None:
        result = cluster.Run("gnt-instance", "list", timeout=120)
        lines = result.stdout.splitlines()
        if len(lines) != expected + 1 or "running" not in lines[1]:
            raise AssertionError("unexpected listing: %r" % lines[:3])
    return run


class _RapiBulk:
    """``GET /2/instances?bulk=1`` on one kept-alive HTTPS connection.

    A call times one request, until the whole answer is read; the answers
    are checked afterwards (check()), so that the client's own decoding
    of them is not counted.
    """

    def __init__(self, cluster: VirtualCluster, expected: int):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        self._conn = http.client.HTTPSConnection(
            cluster.node_ip, constants.DEFAULT_RAPI_PORT, context=context,
            timeout=120)
        self._auth = "Basic " + base64.b64encode(
            ("%s:%s" % (_USER, _PASSWORD)).encode()).decode()
        self._expected = expected
        self._answers: list[tuple[int, bytes]] = []

    def __call__(self) -> None:
        self._conn.request("GET", "/2/instances?bulk=1",
                           headers={"Authorization": self._auth})
        resp = self._conn.getresponse()
        self._answers.append((resp.status, resp.read()))

    def check(self) -> None:
        """Every answer lists all instances; closes the connection."""
        self._conn.close()
        for status, body in self._answers:
            if status != 200 or len(json.loads(body)) != self._expected:
                raise AssertionError("GET /2/instances?bulk=1: %d" % status)
        self._answers.clear()


def _Report(what: str, samples: list[float],
            target: float | None = None) -> bool:
    median = statistics.median(samples)
    verdict = ""
    if target is not None:
        verdict = " (target %.1f s: %s)" % (target, "ok" if median <= target
                                            else "MISSED")
    print("%-38s median %.3f s, min %.3f s, max %.3f s over %d runs%s" %
          (what, median, min(samples), max(samples), len(samples), verdict),
          flush=True)
    return target is None or median <= target


def _Profile(cluster: VirtualCluster) -> None:
    """cProfile of one gnt-instance list (the client side)."""
    out = os.path.join(cluster.base, "list.prof")
    cluster.Run(sys.executable, "-m", "cProfile", "-o", out,
                os.path.join(_TOP, "scripts", "gnt-instance"), "list")
    subprocess.run([sys.executable, "-c",
                    "import pstats; pstats.Stats(%r).sort_stats("
                    "'cumulative').print_stats(25)" % out], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="1000,10000",
                        help="comma-separated instance counts, ascending")
    parser.add_argument("--profile", action="store_true",
                        help="also print a cProfile of the CLI side")
    opts = parser.parse_args()
    sizes = [int(size) for size in opts.sizes.split(",")]

    cluster = VirtualCluster()
    ok = True
    try:
        cluster.Init()
        for name in NODES:
            cluster.AddNode(name)
        with open(cluster.NodePath(pathutils.RAPI_USERS_FILE), "w",
                  encoding="utf-8") as fobj:
            fobj.write("%s %s write\n" % (_USER, _PASSWORD))
        print("cluster: %d nodes, fake hypervisor; %d runs per figure" %
              (len(cluster.nodes), opts.runs), flush=True)
        have = 0
        for size in sizes:
            cluster.Run("daemon-util", "stop", constants.MASTERD)
            start = time.perf_counter()
            AddInstances(cluster, have, size - have)
            print("%d instances written into config.data in %.1f s" %
                  (size, time.perf_counter() - start), flush=True)
            have = size
            cluster.StartMasterdAndWait()
            ok &= _Report("gnt-instance list, %d instances" % size,
                          _Timed(_ListCommand(cluster, size), opts.runs),
                          TARGETS.get(size))
            rapi_bulk = _RapiBulk(cluster, size)
            ok &= _Report("GET /2/instances?bulk=1, %d instances" % size,
                          _Timed(rapi_bulk, opts.runs),
                          RAPI_TARGETS.get(size))
            rapi_bulk.check()
            if opts.profile:
                _Profile(cluster)
    finally:
        cluster.Cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
