"""The cluster's nodes and instances as Placement providers and consumers:
derived from query rows, attached to the state per request, read-only
through the API and never persisted."""

import json
import time

import pytest

from ganeti import constants, errors, pathutils
from ganeti.placement import model, nodes, params, search, store

from test_placement_api import Client
from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (CHECKS, NODE1, NODE2, RAPI_PORT, Config,
                                Fail, InstanceCluster, NodeUuid)

N1 = "11111111-1111-4111-8111-111111111111"
N2 = "22222222-2222-4222-8222-222222222222"
GROUP = "33333333-3333-4333-8333-333333333333"
LICENSED = "44444444-4444-4444-8444-444444444444"
INST = "55555555-5555-4555-8555-555555555555"
CHILD = "66666666-6666-4666-8666-666666666666"


def _Node(uuid, name, **extra):
    row = {"uuid": uuid, "name": name, "serial_no": 3, "group.uuid": GROUP,
           "aggregates": [], "ctotal": 4, "mtotal": 8192, "mnode": 512,
           "dtotal": 100 * 1024, "offline": False, "drained": False,
           "vm_capable": True}
    row.update(extra)
    return row


def _Instance(**extra):
    row = {"uuid": INST, "serial_no": 7, "pnode": "node1",
           "snodes": ["node2"], "disk_template": constants.DT_DRBD8,
           "be/vcpus": 2, "be/maxmem": 1024, "disk_usage": 1500}
    row.update(extra)
    return row


def _Snapshot(instance=None):
    return nodes.ClusterProviders(
        8.0, [_Node(N1, "node1", aggregates=[LICENSED]),
              _Node(N2, "node2", offline=True, ctotal=None, mtotal=None,
                    mnode=None, dtotal=None)],
        [instance or _Instance()])


@pytest.mark.unit
def test_node_providers_and_instance_consumers():
    (node1, node2), (consumer, ) = _Snapshot()
    assert (node1.uuid, node1.name, node1.generation, node1.root) == \
        (N1, "node1", 3, N1)
    assert node1.aggregates == {GROUP, LICENSED}
    assert node2.aggregates == {GROUP}
    assert node1.inventories["VCPU"] == dict(
        model.INVENTORY_DEFAULTS, total=4, allocation_ratio=8.0)
    assert node1.inventories["MEMORY_MB"]["reserved"] == 512
    assert node1.inventories["DISK_GB"]["total"] == 100
    # An offline node has no live data: no inventories, disabled
    assert node2.inventories == {}
    assert node2.traits == {nodes.TRAIT_DISABLED} and not node1.traits
    assert (consumer.uuid, consumer.generation) == (INST, 7)
    assert consumer.allocations == {
        N1: {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 2},
        N2: {"DISK_GB": 2}}


@pytest.mark.unit
@pytest.mark.parametrize("template,expected", [
    (constants.DT_FILE, {N1: {"VCPU": 2, "MEMORY_MB": 1024,
                              "DISK_GB": 2}}),
    (constants.DT_SHARED_FILE, {N1: {"VCPU": 2, "MEMORY_MB": 1024}}),
])
def test_disk_allocations_follow_the_template(template, expected):
    _, (consumer, ) = _Snapshot(_Instance(disk_template=template))
    assert consumer.allocations == expected


@pytest.mark.unit
def test_attached_nodes_are_searched_read_only_and_not_stored(
        placement_cfg):
    source = store.ConfigSource(placement_cfg)
    view = store.View(store.Store(), source, _Snapshot)
    with view.Changing() as state:
        state.CreateProvider("numa0", CHILD, N1)
    with view.Reading() as state:
        assert list(state.providers) == [N1, N2, CHILD]
        assert state.providers[CHILD].root == N1
        assert state.Usages()[N1] == {"VCPU": 2, "MEMORY_MB": 1024,
                                      "DISK_GB": 2}
        flt = params.ProviderFilter(member_of=[{LICENSED}])
        assert [p.uuid for p in search.FilterProviders(state, flt)] == [N1]
        flt = params.ProviderFilter(forbidden_aggs={LICENSED})
        assert [p.uuid for p in search.FilterProviders(state, flt)] == \
            [N2, CHILD]
        for call in (lambda: state.DeleteProvider(N1),
                     lambda: state.UpdateProvider(N1, "x", None, False),
                     lambda: state.SetInventories(N1, 3, {}, True),
                     lambda: state.DeleteInventory(N1, "VCPU"),
                     lambda: state.SetProviderTraits(N1, 3, ()),
                     lambda: state.SetAggregates(N1, 3, (), True),
                     lambda: state.DeleteAllocations(INST)):
            with pytest.raises(errors.PlacementError) as info:
                call()
            assert info.value.status == 403, call
    # The configuration holds only the API's provider; without the
    # snapshot the child of a (removed) node is a root of its own
    with store.Store().Reading(source) as state:
        assert list(state.providers) == [CHILD]
        assert state.providers[CHILD].root == CHILD
        assert not state.consumers


# Through ganeti-rapi on a two-node virtual cluster ---------------------------

def _NodeUuids(cluster):
    return {name: NodeUuid(cluster, name) for name in (NODE1, NODE2)}


def _NodeField(cluster, name, field):
    return cluster.Run("gnt-node", "list", "--no-headers", "--units=m",
                       "-o", field, name).stdout.strip()


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--enabled-disk-templates=file,diskless",
                         "--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         "--ipolicy-vcpu-ratio=32", nodes=(NODE2, ),
                         rapi_users=True) as cluster:
        cluster.Run("gnt-cluster", "aggregate", "add", "licensed")
        cluster.Run("gnt-node", "modify", "--add-aggregates", "licensed",
                    NODE2)
        cluster.Run("gnt-instance", "add", "-t", "diskless", "--no-install",
                    "-o", "tinyimage", "-B", "memory=256,vcpus=2", "-n",
                    NODE1, *CHECKS, "inst1")
        yield cluster, Client(cluster, RAPI_PORT)


@pytest.mark.integration
def test_nodes_are_providers_with_inventories_and_aggregates(vc):
    cluster, client = vc
    uuids = _NodeUuids(cluster)
    (licensed, ) = Config(cluster)["cluster"]["aggregates"]
    group = _NodeField(cluster, NODE1, "group.uuid")
    listed = client.Ok("GET", "/resource_providers")["resource_providers"]
    assert {p["uuid"]: p["name"] for p in listed} == {
        uuid: name for name, uuid in uuids.items()}
    for name, uuid in uuids.items():
        provider = client.Ok("GET", "/resource_providers/%s" % uuid)
        assert provider["root_provider_uuid"] == uuid
        assert provider["parent_provider_uuid"] is None
        inventories = client.Ok("GET", "/resource_providers/%s/inventories"
                                % uuid)["inventories"]
        assert set(inventories) == {"VCPU", "MEMORY_MB", "DISK_GB"}
        assert inventories["VCPU"]["total"] == \
            int(_NodeField(cluster, name, "ctotal"))
        assert inventories["VCPU"]["allocation_ratio"] == 32.0
        assert inventories["MEMORY_MB"]["total"] == \
            int(_NodeField(cluster, name, "mtotal"))
        aggregates = client.Ok("GET", "/resource_providers/%s/aggregates"
                               % uuid)["aggregates"]
        assert set(aggregates) == ({group, licensed} if name == NODE2
                                   else {group})
    # member_of on /resource_providers, forbidden included
    for query, expected in (("member_of=%s" % licensed, [NODE2]),
                            ("member_of=!%s" % licensed, [NODE1]),
                            ("member_of=in:%s,%s" % (licensed, group),
                             [NODE1, NODE2])):
        listed = client.Ok("GET", "/resource_providers?" + query)
        assert sorted(p["name"] for p in listed["resource_providers"]) == \
            expected, query
    answer = client.Ok("GET", "/allocation_candidates?resources=VCPU:1,"
                       "MEMORY_MB:128&member_of=!%s" % licensed)
    assert [list(r["allocations"]) for r in
            answer["allocation_requests"]] == [[uuids[NODE1]]]


@pytest.mark.integration
def test_instances_are_consumers_of_their_nodes(vc):
    cluster, client = vc
    uuids = _NodeUuids(cluster)
    inst = cluster.Run("gnt-instance", "list", "--no-headers", "-o", "uuid",
                       "inst1").stdout.strip()
    answer = client.Ok("GET", "/allocations/%s" % inst)
    assert {rp: a["resources"] for rp, a in answer["allocations"].items()} \
        == {uuids[NODE1]: {"VCPU": 2, "MEMORY_MB": 256}}
    usages = client.Ok("GET", "/resource_providers/%s/usages" %
                       uuids[NODE1])["usages"]
    assert usages == {"VCPU": 2, "MEMORY_MB": 256, "DISK_GB": 0}
    # Kept in step: the instance's memory changes, so does its allocation
    cluster.Run("gnt-instance", "modify", "-B", "memory=384", "inst1")
    answer = client.Ok("GET", "/allocations/%s" % inst)
    assert answer["allocations"][uuids[NODE1]]["resources"]["MEMORY_MB"] \
        == 384


@pytest.mark.integration
def test_node_providers_are_read_only(vc):
    cluster, client = vc
    node1 = _NodeUuids(cluster)[NODE1]
    base = "/resource_providers/%s" % node1
    generation = client.Ok("GET", base)["generation"]
    for method, path, body in (
            ("PUT", base, {"name": "renamed"}),
            ("DELETE", base, None),
            ("PUT", base + "/inventories", {
                "resource_provider_generation": generation,
                "inventories": {"VCPU": {"total": 1}}}),
            ("DELETE", base + "/inventories/VCPU", None),
            ("PUT", base + "/aggregates", {
                "resource_provider_generation": generation,
                "aggregates": []}),
            ("PUT", base + "/traits", {
                "resource_provider_generation": generation,
                "traits": []})):
        status, _, answer = client.Request(method, path, body)
        assert status == 403, (method, path, answer)
        error = answer["errors"][0]
        assert error["code"] == "placement.undefined_code"
        assert "is the Ganeti node %s" % NODE1 in error["detail"]
    # A child provider under a node is the API's own, in the node's tree
    child = "66666666-6666-4666-8666-666666666666"
    client.Ok("POST", "/resource_providers", {
        "name": "numa0", "uuid": child, "parent_provider_uuid": node1})
    assert client.Ok("GET", "/resource_providers/%s" % child)[
        "root_provider_uuid"] == node1
    client.Ok("DELETE", "/resource_providers/%s" % child, status=204)


def _Replicated(cluster, node: str, consumers: set[str]) -> bool:
    """Whether ``node``'s copy of config.data holds those API consumers."""
    with open(cluster.nodes[node].NodePath(pathutils.CLUSTER_CONF_FILE),
              encoding="utf-8") as fobj:
        placement = json.load(fobj).get("placement") or {}
    return consumers <= {c["uuid"] for c in placement.get("consumers", [])}


@pytest.mark.integration
def test_api_state_is_replicated_and_follows_node_removal(vc):
    """The API's consumers are in the configuration, so the master
    candidate NODE2 holds them too; removing a node takes their
    allocations on it along: GET /allocations/{consumer} answers without
    the node (it failed with a KeyError), a consumer left with none is
    unknown. A provider the API created under the node keeps it while it
    has allocations and goes with it otherwise. Runs last in the module:
    it removes NODE2."""
    cluster, client = vc
    uuids = _NodeUuids(cluster)
    both, only2 = "77777777-7777-4777-8777-777777777777", \
        "88888888-8888-4888-8888-888888888888"
    for consumer, nodes_used in ((both, (NODE1, NODE2)), (only2, (NODE2, ))):
        client.Ok("PUT", "/allocations/%s" % consumer, {
            "allocations": {uuids[name]: {"resources": {"VCPU": 1}}
                            for name in nodes_used},
            "project_id": "p", "user_id": "u",
            "consumer_generation": None, "consumer_type": "TEST"},
            status=204)
    deadline = time.monotonic() + 30
    while not _Replicated(cluster, NODE2, {both, only2}):
        assert time.monotonic() < deadline, "not replicated to " + NODE2
        time.sleep(0.2)
    # A provider the API created under NODE2 keeps it while in use
    numa = "99999999-9999-4999-8999-999999999999"
    client.Ok("POST", "/resource_providers", {
        "name": "numa2", "uuid": numa, "parent_provider_uuid": uuids[NODE2]})
    client.Ok("PUT", "/resource_providers/%s/inventories" % numa, {
        "resource_provider_generation": 0,
        "inventories": {"VCPU": {"total": 2}}})
    client.Ok("PUT", "/allocations/%s" % CHILD, {
        "allocations": {numa: {"resources": {"VCPU": 1}}},
        "project_id": "p2", "user_id": "u", "consumer_generation": None,
        "consumer_type": "TEST"}, status=204)
    out = Fail(cluster, "gnt-node", "remove", NODE2)
    assert "Node %s still has Placement resource providers with" \
        " allocations under it: numa2 (%s) by consumer(s) %s" % (
            NODE2, numa, CHILD) in out, out
    client.Ok("DELETE", "/allocations/%s" % CHILD, status=204)
    out = cluster.Run("gnt-node", "remove", NODE2).stdout
    assert "Removing the Placement resource providers under the node:" \
        " numa2" in out, out
    client.Ok("GET", "/resource_providers/%s" % numa, status=404)
    answer = client.Ok("GET", "/allocations/%s" % both)
    assert {rp: a["resources"] for rp, a in answer["allocations"].items()} \
        == {uuids[NODE1]: {"VCPU": 1}}
    assert answer["consumer_generation"] == 2
    assert client.Ok("GET", "/allocations/%s" % only2) == {"allocations": {}}
    assert client.Ok("GET", "/usages?project_id=p")["usages"] == {"VCPU": 1}
    client.Ok("DELETE", "/allocations/%s" % both, status=204)
