"""The global N+1 check's evacuation simulation (``placement._Evacuable``)
scores one node per class of equal nodes (``placement._Classes``): on
random clusters its answers are those of scoring every node."""

import random

import pytest

from ganeti import constants
from ganeti.htools import capacity, metrics, model, placement, simu


def _RandomCluster(seed: int) -> dict:
    """A random message: plain, drbd and file instances, nodes of two
    sizes (some drained), one or two groups, exclusion, location and
    desired location tags."""
    rnd = random.Random(seed)
    nodes = rnd.randint(2, 14)
    msg = simu.Message(nodes, rnd.randint(0, 3 * nodes), memory=16384,
                       disk=rnd.choice([200 * 1024, 2 * 1024 * 1024]),
                       groups=rnd.choice([1, 1, 2]), seed=seed,
                       templates=tuple(rnd.sample(["plain", "drbd", "file"],
                                                  rnd.randint(1, 3))),
                       skew=rnd.choice([0.0, 0.5, 0.8]))
    msg["cluster_tags"] = ["htools:nlocation:rack", "htools:iextags:svc",
                           "htools:desiredlocation:rack"]
    # how often a node differs: on some clusters most nodes are alike
    odd = rnd.choice([0.05, 0.3])
    for data in msg["nodes"].values():
        if rnd.random() < odd:
            data["total_memory"] += 8192
            data["free_memory"] += 8192
        if rnd.random() < odd:
            data["free_memory"] -= rnd.choice([512, 1024])
        data["drained"] = rnd.random() < odd / 3
        data["tags"] = rnd.choice([[], ["rack:a"], ["rack:a"], ["rack:b"]])
    uniform = rnd.random() < 0.5
    for data in msg["instances"].values():
        data["tags"] = rnd.choice([[], [], ["svc:web"], ["svc:db"],
                                   ["svc:web", "rack:b"]])
        if uniform:
            _Resize(msg, data)
    return msg


def _Resize(msg: dict, data: dict) -> None:
    """Make an instance 1 GiB, 10 GiB, 1 vCPU (more nodes alike)."""
    nodes = [msg["nodes"][name] for name in data["nodes"]]
    nodes[0]["free_memory"] -= 1024 - data["memory"]
    nodes[0]["i_pri_memory"] += 1024 - data["memory"]
    nodes[0]["i_pri_up_memory"] += 1024 - data["memory"]
    for node in nodes:
        node["free_disk"] -= 10240 - data["disk_space_total"]
    data.update(memory=1024, vcpus=1, disk_space_total=10240,
                disks=[dict(data["disks"][0], size=10240)])


def _Straightforward(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every node in a class of its own: each one is scored."""
    monkeypatch.setattr(placement, "_PlacementKey",
                        lambda node, score: node.name)


def _Evacuations(msg: dict) -> dict[str, model.Failure | None]:
    """Every node's simulated failure, the quick test left out."""
    cluster = model.Cluster(msg)
    nodes = list(cluster.nodes.values())
    score = metrics.Score(nodes)
    return {node.name: placement._Evacuable(
        cluster, score, node, cluster.GroupNodes(node.group))
        for node in nodes}


def _Capacity(msg: dict, template: str, spec: capacity.Spec
              ) -> tuple[list, list]:
    """hspace's tiered run with the capacity checks: the placements and
    the last failures."""
    alloc = capacity.Allocator(msg, template, 1)
    fails = alloc.Tiered(spec, None)
    return alloc.placed, capacity.SortedFails(fails)


def _Recorded(monkeypatch: pytest.MonkeyPatch) -> list:
    """Where the simulations re-create each instance, from now on."""
    choices = []
    best = placement._Classes.Best

    def record(self: placement._Classes, inst: model.Instance
               ) -> model.Node | None:
        node = best(self, inst)
        choices.append((inst.name, node.name if node else None))
        return node

    monkeypatch.setattr(placement._Classes, "Best", record)
    return choices


@pytest.mark.parametrize("seed", range(20))
def test_classes_give_the_answers_of_scoring_every_node(seed, monkeypatch):
    msg = _RandomCluster(seed)
    rnd = random.Random(seed)
    template = rnd.choice([constants.DT_PLAIN, constants.DT_FILE])
    spec = capacity.Spec(memory=rnd.choice([1024, 2048, 4096]),
                         disk=rnd.choice([10240, 40960]),
                         vcpus=rnd.choice([1, 2]))
    choices = _Recorded(monkeypatch)
    evacuations = _Evacuations(msg)
    placed = _Capacity(msg, template, spec)
    assert choices
    fast = list(choices)
    del choices[:]
    _Straightforward(monkeypatch)
    assert _Evacuations(msg) == evacuations
    assert _Capacity(msg, template, spec) == placed
    assert choices == fast


def test_equal_nodes_are_one_class():
    cluster = model.Cluster(simu.Message(6))
    nodes = list(cluster.nodes.values())
    score = metrics.Score(nodes)
    classes = placement._Classes(nodes, score)
    assert list(classes.values()) == [nodes]
    # a placement takes its node out of the class
    node = nodes[2]
    inst = cluster.NewInstance("new", simu.AllocRequest())
    classes.Remove(node)
    node.PlacePri(inst)
    score.Update([node])
    classes.Add(node)
    assert sorted(classes.values(), key=len) == [[node], nodes[:2] + nodes[3:]]


@pytest.mark.parametrize("template", ["plain", "file"])
def test_equal_nodes_fill_as_when_scoring_every_node(template, monkeypatch):
    # hspace's standard run on alike empty nodes (the classes are large)
    msg = simu.Message(12, 6, memory=8192)
    spec = capacity.Spec(memory=1024, disk=10240, vcpus=1)

    def standard() -> tuple[list, list]:
        alloc = capacity.Allocator(msg, template, 1)
        fails = alloc.Iterate(spec, None)
        return alloc.placed, capacity.SortedFails(fails)

    placed = standard()
    assert len(placed[0]) > 40
    _Straightforward(monkeypatch)
    assert standard() == placed


def test_exclusion_tags_part_alike_nodes():
    # node0001 and node0002 differ only in their instance's exclusion
    # tag: node0000's svc:web instance goes to node0002 (no conflict)
    msg = simu.Message(3, 3)
    msg["cluster_tags"] = ["htools:iextags:svc"]
    for data, tag in zip(msg["instances"].values(),
                         ("svc:web", "svc:web", "svc:db")):
        _Resize(msg, data)
        data["tags"] = [tag]
    cluster = model.Cluster(msg)
    nodes = list(cluster.nodes.values())
    score = metrics.Score(nodes)
    classes = placement._Classes(nodes[1:], score)
    assert len(classes) == 2
    inst = cluster.instances["inst00000.example.com"]
    assert classes.Best(inst) is nodes[2]
