#!/usr/bin/env python3
"""Benchmark of the Placement searches (ganeti.placement) with member_of.

A simulated state of 1,000 providers in 50 aggregates: 880 compute nodes
(roots with VCPU, MEMORY_MB and DISK_GB, each in 1 to 3 aggregates, the
first 40 with two NUMA children holding VCPU and MEMORY_MB instead) and
40 sharing DISK_GB providers, 3,000 consumers. Timed, as the API does
them (query parsing, search, JSON encoding): ``GET /allocation_candidates
?resources=VCPU:1,MEMORY_MB:1024&member_of=in:A,B,C&member_of=!D`` (target
median 50 ms) and ``GET /resource_providers?member_of=in:A,B`` (target
20 ms).

With ``--http`` the same requests go over HTTPS to ganeti-rapi on a
one-node virtual cluster whose configuration holds the simulated state
(loaded in one write): the figures then include TLS, authentication, the
master daemon's snapshot of the cluster's nodes and instances, and the
JSON bodies as the API answers them.

Usage: bench_placement.py [--repeat N] [--http]
"""

import argparse
import base64
import http.client
import os
import random
import ssl
import sys
import urllib.parse
import uuid
from typing import Callable

import benchutils

benchutils.ImportGaneti()

from ganeti import constants, pathutils  # noqa: E402
from ganeti import placement as pl  # noqa: E402
from ganeti import serializer  # noqa: E402
from ganeti.placement import microversion, model, params, search  # noqa
from ganeti.placement import store  # noqa: E402

N_COMPUTE = 880
N_NESTED = 40
N_SHARING = 40
N_AGGREGATES = 50
N_CONSUMERS = 3000
TARGETS = {"allocation_candidates": 0.050, "resource_providers": 0.020}


def _Uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def BuildState(seed: int = 1) -> tuple[model.State, list[str]]:
    """The simulated state and its aggregates."""
    rng = random.Random(seed)
    aggs = [_Uuid(rng) for _ in range(N_AGGREGATES)]
    state = model.State()
    roots = []
    for idx in range(N_COMPUTE):
        root = state.CreateProvider("cn%d" % idx, _Uuid(rng), None)
        root.aggregates = set(rng.sample(aggs, rng.randint(1, 3)))
        roots.append(root)
        if idx < N_NESTED:
            root.inventories = {"DISK_GB": _Inv(1000)}
            for cell in range(2):
                child = state.CreateProvider("cn%d_numa%d" % (idx, cell),
                                             _Uuid(rng), root.uuid)
                child.inventories = {"VCPU": _Inv(16, 4.0),
                                     "MEMORY_MB": _Inv(65536)}
        else:
            root.inventories = {"VCPU": _Inv(32, 4.0),
                                "MEMORY_MB": _Inv(131072),
                                "DISK_GB": _Inv(1000)}
    for idx in range(N_SHARING):
        sharing = state.CreateProvider("ss%d" % idx, _Uuid(rng), None)
        sharing.inventories = {"DISK_GB": _Inv(100000)}
        sharing.traits = {pl.TRAIT_SHARES_VIA_AGGREGATE}
        sharing.aggregates = {rng.choice(aggs)}
    for idx in range(N_CONSUMERS):
        root = rng.choice(roots[N_NESTED:])
        state.consumers["c%d" % idx] = model.Consumer(
            uuid="c%d" % idx, project_id="p", user_id="u",
            allocations={root.uuid: {"VCPU": 1, "MEMORY_MB": 2048}})
    assert len(state.providers) == 1000, len(state.providers)
    return state, aggs


def _Inv(total: int, ratio: float = 1.0) -> dict:
    return dict(model.INVENTORY_DEFAULTS, total=total,
                allocation_ratio=ratio)


def Candidates(state: model.State, query: str) -> bytes:
    version = microversion.MAX_VERSION
    request = params.ParseCandidateRequest(
        urllib.parse.parse_qsl(query, keep_blank_values=True), version,
        state)
    return serializer.DumpJsonBytes(search.FindCandidates(state, request,
                                                          version))


def Providers(state: model.State, query: str) -> bytes:
    version = microversion.MAX_VERSION
    flt = params.ParseProviderFilter(
        urllib.parse.parse_qsl(query, keep_blank_values=True), version,
        state)
    return serializer.DumpJsonBytes([p.uuid for p in
                                     search.FilterProviders(state, flt)])



def Queries(aggs: list[str]) -> dict[str, str]:
    """The query string of each timed request."""
    return {
        "allocation_candidates": "resources=VCPU:1,MEMORY_MB:1024&member_of="
        "in:%s,%s,%s&member_of=!%s" % (aggs[0], aggs[1], aggs[2], aggs[3]),
        "resource_providers": "member_of=in:%s,%s" % (aggs[0], aggs[1]),
    }


_USER, _PASSWORD = "bench", "bench-password"


def _HttpGetter(host: str, port: int) -> Callable[[str], bytes]:
    """GET of a Placement path on one kept-alive HTTPS connection."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(host, port, context=context,
                                       timeout=60)
    headers = {"OpenStack-API-Version": "placement 1.39",
               "Authorization": "Basic " + base64.b64encode(
                   ("%s:%s" % (_USER, _PASSWORD)).encode()).decode()}

    def get(path: str) -> bytes:
        conn.request("GET", "/placement" + path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError("GET %s: %d %s" % (path, resp.status, body))
        return body

    return get


def HttpFunctions(cluster, state: model.State, aggs: list[str]
                  ) -> dict[str, Callable[[], bytes]]:
    """The timed requests over HTTPS, the state loaded into ``cluster``."""
    with open(cluster.NodePath(pathutils.RAPI_USERS_FILE), "w",
              encoding="utf-8") as fobj:
        fobj.write("%s %s read\n" % (_USER, _PASSWORD))
    client = cluster.Luxi()
    try:
        current = client.QueryPlacementState(None)
        client.SetPlacementState(store.Serial(current), state.ToDict())
    finally:
        client.Close()
    get = _HttpGetter(cluster.node_ip, constants.DEFAULT_RAPI_PORT)
    return {name: (lambda path="/%s?%s" % (name, query): get(path))
            for name, query in Queries(aggs).items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--http", action="store_true",
                        help="time the requests over HTTPS to ganeti-rapi")
    args = parser.parse_args()
    state, aggs = BuildState()
    if args.http:
        sys.path.insert(0, os.path.join(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__))), "test"))
        from testutils_cluster import VirtualCluster
        cluster = VirtualCluster()
        try:
            cluster.Init()
            return _Run(HttpFunctions(cluster, state, aggs), args.repeat)
        finally:
            cluster.Cleanup()
    queries = Queries(aggs)
    return _Run({
        "allocation_candidates": lambda: Candidates(
            state, queries["allocation_candidates"]),
        "resource_providers": lambda: Providers(
            state, queries["resource_providers"]),
    }, args.repeat)


def _Run(functions: dict[str, Callable[[], bytes]], repeat: int) -> int:
    """Time each function; 1 if a median is over its target."""
    failed = False
    for name, fn in functions.items():
        median, result = benchutils.MedianTime(fn, repeat)
        ok = median <= TARGETS[name]
        failed |= not ok
        print("%-22s median %7.2f ms (target %d ms) %s, %d bytes" %
              (name, median * 1000, TARGETS[name] * 1000,
               "ok" if ok else "OVER", len(result)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
