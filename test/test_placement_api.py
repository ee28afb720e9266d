"""The Placement API of ganeti-rapi, driven by the tables in
test/data/placement/ (in the spirit of Placement's gabbi tests).

Each table names its custom traits (``traits``) and its providers (created
through the API before its requests) and lists requests with their
expected status and fragments of the answer. ``$name`` anywhere in a URL,
body or expectation is the UUID of that name (providers, aggregates and
consumers alike); provider UUIDs in answers are compared as names.
Expectations:

- ``status`` (default 200), ``code`` (the error code; null: none),
  ``detail_contains``, ``headers`` (values the answer must have);
- ``json``: dotted path -> value (``#`` is the length of a list);
- ``providers``: the names GET /resource_providers answers;
- ``candidates``: the set of provider sets of the allocation requests;
- ``mappings``: the set of their ``mappings`` (group -> provider names);
- ``summaries``: the names in ``provider_summaries``.

The cluster's nodes are providers too; answers are checked without them
(and without the allocation requests using them).
"""

import base64
import glob
import http.client
import json
import os
import re
import signal
import ssl
import time
import uuid

import pytest

from ganeti import constants, pathutils

from testutils_cluster import VirtualCluster

pytestmark = pytest.mark.integration

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                     "placement")
TABLES = sorted(glob.glob(os.path.join(_DATA, "*.json")))

USERS = {"admin": ("s3cret", "write"), "reader": ("readpw", "read"),
         "nobody": ("nopw", "")}
LATEST = "1.39"
_TOKEN_RE = re.compile(r"\$([A-Za-z0-9_]+)")


def Uuid(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "ganeti-placement/" + name))


def Expand(value):
    """``$name`` tokens replaced by UUIDs, in strings, lists and dicts."""
    if isinstance(value, str):
        return _TOKEN_RE.sub(lambda m: Uuid(m.group(1)), value)
    if isinstance(value, list):
        return [Expand(item) for item in value]
    if isinstance(value, dict):
        return {Expand(key): Expand(item) for key, item in value.items()}
    return value


class Client:
    """HTTPS requests to the Placement API of the cluster's RAPI daemon."""

    def __init__(self, cluster: VirtualCluster, port: int):
        self.cluster = cluster
        self.host, self.port = cluster.node_ip, port
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE

    def Request(self, method: str, path: str, data=None, user="admin",
                version=LATEST):
        headers = {}
        body = None
        if version is not None:
            headers["OpenStack-API-Version"] = "placement " + version
        if user is not None:
            secret = "%s:%s" % (user, USERS[user][0])
            headers["Authorization"] = "Basic " + base64.b64encode(
                secret.encode()).decode()
        if data is not None:
            body = json.dumps(data).encode()
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPSConnection(self.host, self.port,
                                           context=self.context, timeout=30)
        try:
            conn.request(method, "/placement" + path, body=body,
                         headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
        finally:
            conn.close()
        return resp.status, resp.headers, \
            json.loads(payload) if payload else None

    def Ok(self, method: str, path: str, data=None, status=200):
        got, _, result = self.Request(method, path, data)
        assert got == status, (method, path, got, result)
        return result

    def Reset(self) -> None:
        """Remove every consumer and provider (children first) but the
        cluster's nodes."""
        providers = [p for p in self.Ok("GET", "/resource_providers")[
            "resource_providers"] if p["name"] not in self.cluster.nodes]
        consumers = set()
        for provider in providers:
            consumers |= set(self.Ok("GET", "/resource_providers/%s/"
                                     "allocations" % provider["uuid"])
                             ["allocations"])
        for consumer in consumers:
            self.Ok("DELETE", "/allocations/%s" % consumer, status=204)
        left = {p["uuid"]: p["parent_provider_uuid"] for p in providers}
        while left:
            parents = set(left.values())
            for leaf in [u for u in left if u not in parents]:
                self.Ok("DELETE", "/resource_providers/%s" % leaf,
                        status=204)
                del left[leaf]

    def CreateTraits(self, names: list[str]) -> None:
        for name in names:
            got, _, result = self.Request("PUT", "/traits/" + name)
            assert got in (201, 204), (name, got, result)

    def CreateProviders(self, specs: list[dict]) -> None:
        for spec in specs:
            uuid_ = Uuid(spec["name"])
            body = {"name": spec["name"], "uuid": uuid_}
            if spec.get("parent"):
                body["parent_provider_uuid"] = Uuid(spec["parent"])
            generation = self.Ok("POST", "/resource_providers",
                                 body)["generation"]
            base = "/resource_providers/%s" % uuid_
            if spec.get("inventories"):
                generation = self.Ok("PUT", base + "/inventories", {
                    "resource_provider_generation": generation,
                    "inventories": spec["inventories"]})[
                        "resource_provider_generation"]
            if spec.get("traits"):
                generation = self.Ok("PUT", base + "/traits", {
                    "resource_provider_generation": generation,
                    "traits": spec["traits"]})[
                        "resource_provider_generation"]
            if spec.get("aggregates"):
                self.Ok("PUT", base + "/aggregates", {
                    "resource_provider_generation": generation,
                    "aggregates": [Uuid(a) for a in spec["aggregates"]]})


@pytest.fixture(scope="module")
def placement():
    cluster = VirtualCluster()
    try:
        cluster.Init()
        with open(cluster.NodePath(pathutils.RAPI_USERS_FILE), "w",
                  encoding="utf-8") as fobj:
            for user, (password, options) in USERS.items():
                fobj.write("%s %s %s\n" % (user, password, options))
        yield Client(cluster, constants.DEFAULT_RAPI_PORT)
    finally:
        cluster.Cleanup()


def _Lookup(data, path: str):
    for part in path.split("."):
        if part == "#":
            return len(data)
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def _WithoutNodes(result, names: dict[str, str]):
    """The answer without the providers the table does not name."""
    if not isinstance(result, dict):
        return result
    result = dict(result)
    if "resource_providers" in result:
        result["resource_providers"] = [p for p in result[
            "resource_providers"] if p["uuid"] in names]
    if "allocation_requests" in result:
        result["allocation_requests"] = [
            r for r in result["allocation_requests"]
            if all((a["resource_provider"]["uuid"] if isinstance(a, dict)
                    else a) in names for a in r["allocations"])]
    if "provider_summaries" in result:
        result["provider_summaries"] = {
            rp: summary for rp, summary in
            result["provider_summaries"].items() if rp in names}
    return result


def _Check(test: dict, names: dict[str, str], status: int, headers,
           result) -> None:
    assert status == test.get("status", 200), result
    result = _WithoutNodes(result, names)
    error = result["errors"][0] if status >= 400 else None
    if "code" in test:
        assert error.get("code") == test["code"], error
    if "detail_contains" in test:
        assert Expand(test["detail_contains"]) in error["detail"], error
    for name, value in Expand(test.get("headers", {})).items():
        assert headers.get(name) == value, (name, dict(headers))
    for path, value in Expand(test.get("json", {})).items():
        assert _Lookup(result, path) == value, (path, result)
    if "providers" in test:
        assert sorted(names[p["uuid"]] for p in
                      result["resource_providers"]) == \
            sorted(test["providers"])
    if "candidates" in test:
        got = {frozenset(names[rp] for rp in request["allocations"])
               for request in result["allocation_requests"]}
        assert got == {frozenset(c) for c in test["candidates"]}, got
    if "mappings" in test:
        got = [{suffix: sorted(names[rp] for rp in rps)
                for suffix, rps in request["mappings"].items()}
               for request in result["allocation_requests"]]
        assert sorted(got, key=repr) == sorted(test["mappings"], key=repr), \
            got
    if "summaries" in test:
        assert sorted(names[rp] for rp in result["provider_summaries"]) \
            == sorted(test["summaries"])


@pytest.mark.parametrize("table", TABLES, ids=os.path.basename)
def test_table(placement, table):
    with open(table, encoding="utf-8") as fobj:
        spec = json.load(fobj)
    placement.Reset()
    placement.CreateTraits(spec.get("traits", []))
    placement.CreateProviders(spec["providers"])
    names = {Uuid(p["name"]): p["name"] for p in spec["providers"]}
    names.update((Uuid(n), n) for n in ("new1", "new2"))
    failures = []
    for test in spec["tests"]:
        status, headers, result = placement.Request(
            test.get("method", "GET"), Expand(test["url"]),
            Expand(test.get("data")), user=test.get("user", "admin"),
            version=test.get("version", LATEST))
        try:
            _Check(test, names, status, headers, result)
        except (AssertionError, KeyError, IndexError) as err:
            failures.append("%s: %r" % (test["name"], err))
    assert not failures, "\n".join(failures)


def test_state_survives_a_restart_of_the_daemon(placement):
    """The state is in the cluster configuration: a new daemon process
    serves what the old one was told."""
    placement.Reset()
    placement.CreateProviders([{"name": "keep", "aggregates": ["kept"]}])
    cluster = placement.cluster
    cluster.KillDaemon("ganeti-rapi", signal.SIGTERM)
    cluster.Run("daemon-util", "start", "ganeti-rapi")
    for _ in range(100):
        try:
            result = placement.Ok("GET", "/resource_providers?member_of=%s"
                                  % Uuid("kept"))
            break
        except OSError:
            time.sleep(0.1)
    assert [p["name"] for p in result["resource_providers"]] == ["keep"]
    with open(cluster.NodePath(pathutils.CLUSTER_CONF_FILE),
              encoding="utf-8") as fobj:
        stored = json.load(fobj)["placement"]
    assert [p["name"] for p in stored["providers"]] == ["keep"]
