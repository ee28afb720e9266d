#!/usr/bin/env python3
"""Where the time of a bulk instance listing goes (a developer's tool).

Brings up the cluster of bench_list.py (three nodes, fake hypervisor,
instances written straight into the configuration), then, depending on
``--mode``:

``time``
    times each stage of ``GET /2/instances?bulk=1`` separately, all on
    kept-alive connections: the ``all_instances_info`` RPC to the nodes
    (sent from this process, as masterd sends it), the LUXI query of
    the bulk fields with and without the live ones, the RAPI request
    (kept-alive and on a new connection each time) and ``GET /2/info``;
``cprofile``
    restarts masterd and ganeti-rapi in the foreground under this script
    (``--wrap``), which profiles every LUXI request and every RAPI
    request with cProfile and writes the statistics when the daemon
    stops; prints the top functions of both;
``timers``
    like ``cprofile``, but measures the wall time of the stages of a
    request (see _MASTERD_TIMERS, _RAPI_TIMERS) and prints their medians,
    and the time the cyclic garbage collector took in either daemon;
``pyspy``
    samples masterd, ganeti-rapi and the nodes' noded (with their forked
    children) with py-spy while RAPI bulk requests run in a loop, and
    prints the functions that hold most samples.

No profiling hook is added to the daemons themselves: ``--wrap`` patches
the functions in the process it starts, before the daemon's main runs.

Usage: bench/profile_list.py [--mode time|timers|cprofile|pyspy]
       [--instances 1000] [--runs 15]
"""

import argparse
import atexit
import base64
import collections
import cProfile
import gc
import http.client
import importlib
import json
import os
import pstats
import runpy
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time

_TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(_TOP, "test"))
sys.path.insert(0, os.path.join(_TOP, "bench"))

import bench_list  # noqa: E402
from ganeti import constants, luxi, pathutils, serializer  # noqa: E402
from ganeti.rapi import instances as rapi_instances  # noqa: E402
from ganeti.rpc.client import RpcClient  # noqa: E402
from testutils_cluster import VirtualCluster  # noqa: E402

# Functions --wrap profiles, per daemon: one call is one request
_MASTERD_TARGETS = ("ganeti.server.masterd:_LuxiRequestHandler._Handle",
                    "ganeti.server.masterd:_LuxiRequestHandler._Send")
_RAPI_TARGETS = ("ganeti.server.rapi:RemoteApiHandler.__call__",
                 "ganeti.http.server:HttpServer._SendResponse")
# Functions --mode timers times (in this order: outer before inner)
_MASTERD_TIMERS = (
    "ganeti.server.masterd:_LuxiRequestHandler._Handle",
    "ganeti.cmdlib.instance_query:InstanceQuery.Query",
    "ganeti.cmdlib.instance_query:InstanceQuery._LiveData",
    "ganeti.rpc.client:RpcClient.Call",
    "ganeti.query:Query",
    "ganeti.server.masterd:_LuxiRequestHandler._Send",
    "ganeti.luxi:FormatResponse",
    "ganeti.luxi:MessageStream.WriteMessage",
)
_RAPI_TIMERS = (
    "ganeti.http.server:HttpServer._HandleRequest",
    "ganeti.server.rapi:RemoteApiHandler.__call__",
    "ganeti.rapi.baserlib:ResourceBase.ListItems",
    "ganeti.luxi:Client._Call",
    "ganeti.luxi:ParseResponse",
    "ganeti.serializer:DumpJsonBytes",
    "ganeti.http.server:HttpServer._SendResponse",
)


# --wrap: run a daemon with some functions profiled or timed ------------------

def _Wrap(kind: str, out: str, targets: list[str], script: list[str]) -> None:
    """Run ``script`` (a daemon, as __main__) with ``targets`` measured.

    ``kind`` "profile": each call runs under its own cProfile.Profile
    (they profile the calling thread only), all merged into ``out`` at
    exit; "timers": the wall time of every call, by target, and of every
    collection of the cyclic garbage collector, by generation, written to
    ``out`` as JSON at exit.
    """
    profiles = []
    durations: dict[str, list[float]] = collections.defaultdict(list)
    lock = threading.Lock()

    def _Profiled(fn, _target):
        def wrapper(*args, **kwargs):
            prof = cProfile.Profile()
            prof.enable()
            try:
                return fn(*args, **kwargs)
            finally:
                prof.disable()
                with lock:
                    profiles.append(prof)
        return wrapper

    def _Timed(fn, target):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                durations[target].append(time.perf_counter() - start)
        return wrapper

    if kind == "timers":
        gc_start = {}

        def _GcCallback(phase, info):
            if phase == "start":
                gc_start[info["generation"]] = time.perf_counter()
            else:
                durations["gc generation %d" % info["generation"]].append(
                    time.perf_counter() - gc_start[info["generation"]])

        gc.callbacks.append(_GcCallback)

    measured = _Profiled if kind == "profile" else _Timed
    for target in targets:
        module_name, _, attr_path = target.partition(":")
        owner = importlib.import_module(module_name)
        *parents, name = attr_path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        raw = owner.__dict__[name]
        if isinstance(raw, staticmethod):
            setattr(owner, name,
                    staticmethod(measured(raw.__func__, target)))
        else:
            setattr(owner, name, measured(raw, target))

    def _Dump():
        with lock:
            if profiles:
                pstats.Stats(*profiles).dump_stats(out)
            if durations:
                with open(out, "w", encoding="utf-8") as fobj:
                    json.dump(durations, fobj)

    atexit.register(_Dump)
    sys.argv = script
    runpy.run_path(script[0], run_name="__main__")


# The cluster -----------------------------------------------------------------

def _SetUp(instances: int) -> VirtualCluster:
    cluster = VirtualCluster()
    cluster.Init()
    for name in bench_list.NODES:
        cluster.AddNode(name)
    with open(cluster.NodePath(pathutils.RAPI_USERS_FILE), "w",
              encoding="utf-8") as fobj:
        fobj.write("%s %s write\n" % (bench_list._USER,
                                       bench_list._PASSWORD))
    cluster.Run("daemon-util", "stop", constants.MASTERD)
    bench_list.AddInstances(cluster, 0, instances)
    cluster.StartMasterdAndWait()
    return cluster


class _Rapi:
    """RAPI requests on one kept-alive connection (or a new one each)."""

    def __init__(self, host: str, keep_alive: bool = True):
        self._host = host
        self._port = constants.DEFAULT_RAPI_PORT
        self._keep_alive = keep_alive
        self._context = ssl.create_default_context()
        self._context.check_hostname = False
        self._context.verify_mode = ssl.CERT_NONE
        self.auth = "Basic " + base64.b64encode(
            ("%s:%s" % (bench_list._USER,
                        bench_list._PASSWORD)).encode()).decode()
        self.conn = None

    def Get(self, path: str) -> bytes:
        """The body of the answer (not decoded: not part of the timing)."""
        if self.conn is None:
            self.conn = http.client.HTTPSConnection(
                self._host, self._port, context=self._context, timeout=120)
        try:
            self.conn.request("GET", path,
                               headers={"Authorization": self.auth})
            resp = self.conn.getresponse()
            body = resp.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            raise
        if not self._keep_alive:
            self.conn.close()
            self.conn = None
        if resp.status != 200:
            raise AssertionError("GET %s: %d %s" % (path, resp.status,
                                                    body[:200]))
        return body


def _Median(fn, runs: int) -> tuple[float, float]:
    fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), min(samples)


def _Print(what: str, figures: tuple[float, float]) -> None:
    print("%-46s median %7.1f ms  min %7.1f ms" %
          (what, figures[0] * 1000, figures[1] * 1000), flush=True)


def _TimeStages(cluster: VirtualCluster, instances: int, runs: int) -> None:
    with open(cluster.NodePath(pathutils.CLUSTER_CONF_FILE),
              encoding="utf-8") as fobj:
        data = json.load(fobj)
    nodes = [(uuid, node["name"], node["primary_ip"], False)
             for uuid, node in data["nodes"].items()]
    hv_names = data["cluster"]["enabled_hypervisors"]
    body = serializer.DumpJsonBytes(
        [hv_names, {name: data["cluster"]["hvparams"].get(name, {})
                    for name in hv_names}])
    rpc = RpcClient(cluster.NodePath(pathutils.NODED_CERT_FILE))

    def _Rpc():
        results = rpc.Call("all_instances_info", nodes,
                           cluster.noded_port, body, 60)
        for result in results.values():
            if result.fail_msg:
                raise AssertionError(result.fail_msg)

    _Print("RPC all_instances_info to %d nodes" % len(nodes),
           _Median(_Rpc, runs))
    for node in nodes[:1]:
        _Print("RPC all_instances_info to %s" % node[1],
               _Median(lambda: rpc.Call("all_instances_info", [node],
                                        cluster.noded_port, body,
                                        60), runs))
    _Print("RPC version to %d nodes" % len(nodes),
           _Median(lambda: rpc.Call("version", nodes,
                                    cluster.noded_port, b"[]", 60),
                   runs))
    rpc.close()

    client = luxi.Client(address=cluster.master_socket)
    static = [field for field in rapi_instances.I_FIELDS
              if field not in ("oper_state", "oper_ram", "oper_vcpus",
                               "status")]
    _Print("LUXI Query, bulk fields without live ones",
           _Median(lambda: client.Query(constants.QR_INSTANCE, static, None),
                   runs))
    _Print("LUXI Query, bulk fields",
           _Median(lambda: client.Query(constants.QR_INSTANCE,
                                        rapi_instances.I_FIELDS, None), runs))
    _Print("LUXI Query, name only",
           _Median(lambda: client.Query(constants.QR_INSTANCE, ["name"],
                                        None), runs))
    client.Close()

    rapi = _Rapi(cluster.node_ip)
    print("masterd's connections to noded: %s" %
          _NodedConnections(cluster.Pid(constants.MASTERD),
                            cluster.noded_port))
    _Print("GET /2/info (kept alive)",
           _Median(lambda: rapi.Get("/2/info"), runs))
    _Print("GET /2/instances (kept alive)",
           _Median(lambda: rapi.Get("/2/instances"), runs))
    _Print("GET /2/instances?bulk=1 (kept alive)",
           _Median(lambda: rapi.Get("/2/instances?bulk=1"), runs))
    split = []

    def _Split():
        start = time.perf_counter()
        rapi.conn.request("GET", "/2/instances?bulk=1",
                          headers={"Authorization": rapi.auth})
        resp = rapi.conn.getresponse()
        headers_at = time.perf_counter()
        resp.read()
        split.append((headers_at - start, time.perf_counter() - headers_at))

    _Median(_Split, runs)
    print("%-46s median %7.1f ms, then body %5.1f ms" %
          ("  ... of which until the response headers",
           statistics.median(head for head, _ in split) * 1000,
           statistics.median(body for _, body in split) * 1000))
    fresh = _Rapi(cluster.node_ip, keep_alive=False)
    _Print("GET /2/info (new connection)",
           _Median(lambda: fresh.Get("/2/info"), runs))
    _Print("GET /2/instances?bulk=1 (new connection)",
           _Median(lambda: fresh.Get("/2/instances?bulk=1"), runs))
    if len(json.loads(rapi.Get("/2/instances?bulk=1"))) != instances:
        raise AssertionError("wrong number of instances")
    print("masterd's connections to noded: %s" %
          _NodedConnections(cluster.Pid(constants.MASTERD),
                            cluster.noded_port))


def _NodedConnections(pid: int, port: int) -> str:
    """Local ports of the TCP connections ``pid`` holds to noded ports
    (unchanged ports across requests: the connections are reused)."""
    result = subprocess.run(
        ["ss", "-tnpH", "state", "established", "( dport = :%d )" % port],
        capture_output=True, text=True, check=False)
    ports = sorted(line.split()[2].rsplit(":", 1)[1]
                   for line in result.stdout.splitlines()
                   if "pid=%d," % pid in line)
    return ", ".join(ports) or "none"


def _RestartWrapped(cluster: VirtualCluster, kind: str, daemon: str,
                    script: str, targets: tuple[str, ...],
                    out: str) -> subprocess.Popen:
    """Stop ``daemon`` and run it in the foreground under --wrap."""
    cluster.Run("daemon-util", "stop", daemon)
    args = [sys.executable, os.path.abspath(__file__), "--wrap", kind, out]
    args += list(targets) + ["--", os.path.join(_TOP, "daemons", script),
                             "-f"]
    return subprocess.Popen(args, env=cluster.env, cwd=cluster.base,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _WaitUp(check, what: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            check()
            return
        except Exception:  # pylint: disable=broad-except
            if time.monotonic() > deadline:
                raise AssertionError("%s did not come up" % what)
            time.sleep(0.2)


def _RunWrapped(cluster: VirtualCluster, kind: str,
                targets: dict[str, tuple[str, ...]], runs: int
                ) -> dict[str, str]:
    """Run masterd and ganeti-rapi under --wrap ``kind`` for ``runs``
    bulk requests; returns the output file of each."""
    outputs = {name: os.path.join(cluster.base, "%s.%s" % (name, kind))
               for name in targets}
    cluster.Run("daemon-util", "stop", constants.RAPI)
    masterd = _RestartWrapped(cluster, kind, constants.MASTERD,
                              "ganeti-masterd", targets["masterd"],
                              outputs["masterd"])
    _WaitUp(lambda: cluster.Luxi().QueryConfigValues(["cluster_name"]),
            "masterd")
    rapi_proc = _RestartWrapped(cluster, kind, constants.RAPI, "ganeti-rapi",
                                targets["rapi"], outputs["rapi"])
    rapi = _Rapi(cluster.node_ip)
    _WaitUp(lambda: rapi.Get("/version"), "ganeti-rapi")
    figures = _Median(lambda: rapi.Get("/2/instances?bulk=1"), runs)
    _Print("GET /2/instances?bulk=1 (%s)" % kind, figures)
    for proc in (rapi_proc, masterd):
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    return outputs


def _CProfile(cluster: VirtualCluster, runs: int, top: int) -> None:
    outputs = _RunWrapped(cluster, "profile",
                          {"masterd": _MASTERD_TARGETS,
                           "rapi": _RAPI_TARGETS}, runs)
    for name, path in outputs.items():
        print("\n==== %s: %d+1 requests ====" % (name, runs))
        stats = pstats.Stats(path)
        stats.sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top)


def _Timers(cluster: VirtualCluster, runs: int) -> None:
    outputs = _RunWrapped(cluster, "timers",
                          {"masterd": _MASTERD_TIMERS,
                           "rapi": _RAPI_TIMERS}, runs)
    for name, path in outputs.items():
        print("\n==== %s: median wall time per call ====" % name)
        with open(path, encoding="utf-8") as fobj:
            durations = json.load(fobj)
        targets = _MASTERD_TIMERS if name == "masterd" else _RAPI_TIMERS
        for target in targets:
            # The largest calls are those of the bulk requests
            samples = sorted(durations.get(target, []))[-runs:]
            if samples:
                print("%8.1f ms  %s" % (statistics.median(samples) * 1000,
                                        target))
        for generation in range(3):
            samples = durations.get("gc generation %d" % generation, [])
            print("%8.1f ms  in %d collections of generation %d (all "
                  "requests), longest %.1f ms" %
                  (sum(samples) * 1000, len(samples), generation,
                   max(samples, default=0) * 1000))


def _PySpy(cluster: VirtualCluster, seconds: float, top: int) -> None:
    py_spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
    targets = {"masterd": cluster.Pid(constants.MASTERD),
               "rapi": cluster.Pid(constants.RAPI)}
    for name in bench_list.NODES:
        targets["noded " + name] = cluster.nodes[name].Pid(constants.NODED)
    procs = {}
    for name, pid in targets.items():
        out = os.path.join(cluster.base, "%s.txt" % name.replace(" ", "_"))
        procs[name] = (out, subprocess.Popen(
            [py_spy, "record", "--pid", str(pid), "--rate", "500",
             "--format", "raw", "--subprocesses", "--nonblocking",
             "--duration", str(int(seconds)), "--output", out],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    rapi = _Rapi(cluster.node_ip)
    count = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rapi.Get("/2/instances?bulk=1")
        count += 1
    print("%d requests in %.0f s" % (count, seconds))
    for name, (out, proc) in procs.items():
        proc.wait(120)
        _PrintCollapsed(name, out, top)


def _PrintCollapsed(name: str, path: str, top: int) -> None:
    """Top functions of py-spy's collapsed stacks, inclusive and self."""
    inclusive = collections.Counter()
    own = collections.Counter()
    total = 0
    with open(path, encoding="utf-8") as fobj:
        for line in fobj:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            # Idle threads waiting for work are not interesting
            if any(idle in stack for idle in ("serve_forever", "_WaitUntil",
                                              "Condition.wait")) and \
                    "_Handle" not in stack and "__call__" not in stack:
                continue
            count = int(count)
            total += count
            own[frames[-1]] += count
            for frame in set(frames):
                inclusive[frame] += count
    print("\n==== %s: %d busy samples ====" % (name, total))
    print("-- inclusive")
    for frame, count in inclusive.most_common(top):
        print("%6d %5.1f%%  %s" % (count, 100.0 * count / max(total, 1),
                                   frame))
    print("-- self")
    for frame, count in own.most_common(top):
        print("%6d %5.1f%%  %s" % (count, 100.0 * count / max(total, 1),
                                   frame))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--wrap":
        # --wrap profile|timers OUT TARGET... -- DAEMON [ARGS...]
        sep = sys.argv.index("--")
        _Wrap(sys.argv[2], sys.argv[3], sys.argv[4:sep], sys.argv[sep + 1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("time", "timers", "cprofile",
                                           "pyspy"),
                        default="time")
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--top", type=int, default=30)
    opts = parser.parse_args()
    print("load average: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    cluster = _SetUp(opts.instances)
    try:
        if opts.mode == "time":
            _TimeStages(cluster, opts.instances, opts.runs)
        elif opts.mode == "timers":
            _Timers(cluster, opts.runs)
        elif opts.mode == "cprofile":
            _CProfile(cluster, opts.runs, opts.top)
        else:
            _PySpy(cluster, opts.seconds, opts.top)
    finally:
        cluster.Cleanup()
    print("load average: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
