"""``gnt-instance add --member-of`` on a real three-node virtual cluster
(fake hypervisor) with the built-in allocator: Placement aggregates
steering where new instances go.

node1 carries "ballast" (a running instance placed with -n), so node2
and node3, the emptiest nodes, are where the allocator would put new
instances; they form the aggregate ``licensed``.
"""

import pytest

from testutils_cluster import SMALL_IPOLICY_BOUNDS
from testutils_instance import (ADMIN, CHECKS, NODE1, NODE2, NODE3, Fail,
                                InstanceCluster, PrimaryNode, RapiClient,
                                RemoveInstances)

pytestmark = pytest.mark.integration


def _AddArgs(name, *extra, memory=512):
    return ("gnt-instance", "add", "-t", "diskless", "--no-install", "-o",
            "tinyimage", "-B", "memory=%d" % memory, *extra, *CHECKS, name)


@pytest.fixture(scope="module")
def vc():
    with InstanceCluster("--enabled-disk-templates=diskless",
                         "--ipolicy-bounds-specs", SMALL_IPOLICY_BOUNDS,
                         "--ipolicy-vcpu-ratio=32",
                         rapi_users=True) as cluster:
        cluster.Run(*_AddArgs("ballast", "-n", NODE1, memory=4096))
        cluster.Run("gnt-cluster", "aggregate", "add", "licensed")
        for node in (NODE2, NODE3):
            cluster.Run("gnt-node", "modify", "--add-aggregates",
                        "licensed", node)
        yield cluster


def test_forbidden_aggregate_avoids_the_emptiest_nodes(vc):
    names = ["plain%d" % idx for idx in range(3)]
    try:
        for name in names:
            vc.Run(*_AddArgs(name, "--member-of", "!licensed"))
        assert {PrimaryNode(vc, name) for name in names} == {NODE1}
    finally:
        RemoveInstances(vc, *names)


def test_required_aggregate_lands_only_there(vc):
    # Only node2 stays licensed: alone, instances would alternate between
    # node2 and node3
    vc.Run("gnt-node", "modify", "--remove-aggregates", "licensed", NODE3)
    names = ["lic%d" % idx for idx in range(3)]
    try:
        for name in names:
            vc.Run(*_AddArgs(name, "--member-of", "licensed"))
        assert {PrimaryNode(vc, name) for name in names} == {NODE2}
        # The group's aggregate too: "in:" any of, repeated values ANDed
        vc.Run(*_AddArgs("grp", "--member-of", "in:licensed,default",
                         "--member-of", "!licensed"))
        assert PrimaryNode(vc, "grp") == NODE3
    finally:
        RemoveInstances(vc, "grp", *names)
        vc.Run("gnt-node", "modify", "--add-aggregates", "licensed", NODE3)


def test_unsatisfiable_constraint_names_it_per_node(vc):
    out = Fail(vc, *_AddArgs("none", "--member-of", "licensed",
                             "--member-of", "!in:licensed,default"))
    assert "FailMemberOf: 3" in out, out
    assert "%s: excluded by member_of 'licensed'" % NODE1 in out, out
    for node in (NODE2, NODE3):
        assert "%s: excluded by member_of '!in:licensed,default'" % node \
            in out, out
    out = Fail(vc, *_AddArgs("none", "--member-of", "!nope"))
    assert "Aggregate 'nope' not known" in out, out


def test_explicit_node_must_satisfy_member_of(vc):
    out = Fail(vc, *_AddArgs("pinned", "-n", NODE2, "--member-of",
                             "!licensed"))
    assert "Node %s is excluded by member_of '!licensed'" % NODE2 in out, out
    try:
        vc.Run(*_AddArgs("pinned", "-n", NODE2, "--member-of", "licensed"))
        assert PrimaryNode(vc, "pinned") == NODE2
    finally:
        RemoveInstances(vc, "pinned")


def test_rapi_body_member_of(vc):
    client = RapiClient(vc, ADMIN)
    job_id = client.CreateInstance(
        "create", "viarapi", "diskless", [], [], os="tinyimage",
        no_install=True, name_check=False, ip_check=False,
        beparams={"memory": 512}, member_of=["!licensed"])
    try:
        assert client.WaitForJobCompletion(job_id, period=0.2, retries=300)
        assert client.GetJobStatus(job_id)["status"] == "success"
        assert PrimaryNode(vc, "viarapi") == NODE1
    finally:
        RemoveInstances(vc, "viarapi")


def test_moves_chosen_by_the_allocator_keep_member_of(vc):
    """failover, migrate (the cluster's default allocator) and node
    evacuate take --member-of: the emptiest node node3 is licensed, so
    '!licensed' sends the instance to node1; an explicit target must
    satisfy it too."""
    vc.Run(*_AddArgs("mover", "-n", NODE2))
    try:
        vc.Run("gnt-instance", "failover", "-f", "--member-of", "!licensed",
               "mover")
        assert PrimaryNode(vc, "mover") == NODE1
        out = Fail(vc, "gnt-instance", "migrate", "-f", "--member-of",
                   "licensed", "--member-of", "!default", "mover")
        assert "excluded by member_of '!default'" in out, out
        assert PrimaryNode(vc, "mover") == NODE1
        out = Fail(vc, "gnt-instance", "migrate", "-f", "-n", NODE3,
                   "--member-of", "!licensed", "mover")
        assert "Node %s is excluded by member_of '!licensed'" % NODE3 \
            in out, out
        vc.Run("gnt-instance", "migrate", "-f", "--member-of", "licensed",
               "mover")
        assert PrimaryNode(vc, "mover") in (NODE2, NODE3)
        source = PrimaryNode(vc, "mover")
        vc.Run("gnt-node", "evacuate", "-f", "--primary-only",
               "--member-of", "!licensed", source)
        assert PrimaryNode(vc, "mover") == NODE1
    finally:
        RemoveInstances(vc, "mover")


def _EvacuateWithTheDefaults(vc, reserved, plain):
    """gnt-node evacuate applies each instance's reservation defaults:
    the untagged instances on node1 may go neither to the reserved node2
    nor to the free pool's node3, whether the allocator picks or the
    admin names the node; once node3 is reserved for r1 too, the tagged
    instances leave node2 for it."""
    out = Fail(vc, "gnt-node", "evacuate", "-f", "--primary-only", NODE1)
    for name in plain:
        assert "%s (" % name in out, out
    assert "%s: excluded by member_of '!in:" % NODE2 in out, out
    assert "%s: excluded by member_of '!in:" % NODE3 in out, out
    out = Fail(vc, "gnt-node", "evacuate", "-f", "--primary-only", "-n",
               NODE3, NODE1)
    # The first instance refused is node1's ballast (untagged too)
    assert "Node %s is excluded for instance ballast by member_of '!in:" \
        % NODE3 in out, out
    assert {PrimaryNode(vc, name) for name in plain} == {NODE1}
    vc.Run("gnt-node", "modify", "--add-aggregates", "res-r1", NODE3)
    try:
        vc.Run("gnt-node", "evacuate", "-f", "--primary-only", NODE2)
        assert {PrimaryNode(vc, name) for name in reserved} == {NODE3}
    finally:
        vc.Run("gnt-node", "modify", "--remove-aggregates", "res-r1", NODE3)


def _ChangeGroupWithTheDefaults(vc, reserved, plain):
    """gnt-instance change-group and gnt-group evacuate apply them too:
    in the group g2 of the reserved node2, an untagged instance finds no
    node, a tagged one lands there."""
    vc.Run("gnt-group", "add", "g2")
    vc.Run("gnt-group", "assign-nodes", "g2", NODE2)
    try:
        out = Fail(vc, "gnt-instance", "change-group", "--to", "g2",
                   plain[0])
        assert "Unable to evacuate instances %s (" % plain[0] in out, out
        assert "%s: excluded by member_of '!in:" % NODE2 in out, out
        out = Fail(vc, "gnt-group", "evacuate", "--to", "g2", "default")
        for name in plain:
            assert "%s (" % name in out, out
        vc.Run("gnt-instance", "change-group", "--to", "g2", reserved[0])
        assert PrimaryNode(vc, reserved[0]) == NODE2
    finally:
        vc.Run("gnt-group", "assign-nodes", "default", NODE2)
        vc.Run("gnt-group", "remove", "g2")


def test_reservation_flow_with_the_cluster_prefixes(vc):
    """The spec's deployer flow: with both prefixes set to
    ``reservation:``, node3 is the free pool (metadata ``reservation:``)
    and node2 is reserved as r1 (``reservation:r1``). Instances tagged
    ``reservation:r1`` land on node2 only; untagged ones stay off both,
    although they are the emptiest nodes; a reservation no aggregate has
    is refused, and so is an explicit node the defaults exclude."""
    for node in (NODE2, NODE3):
        vc.Run("gnt-node", "modify", "--remove-aggregates", "licensed",
               node)
    vc.Run("gnt-cluster", "modify", "--placement-required-prefix",
           "reservation:", "--placement-default-forbidden-prefix",
           "reservation:")
    vc.Run("gnt-cluster", "aggregate", "add", "--metadata", "reservation:",
           "freepool")
    vc.Run("gnt-cluster", "aggregate", "add", "--metadata",
           "reservation:r1", "res-r1")
    vc.Run("gnt-node", "modify", "--add-aggregates", "freepool", NODE3)
    vc.Run("gnt-node", "modify", "--add-aggregates", "res-r1", NODE2)
    reserved = ["rsv%d" % idx for idx in range(2)]
    plain = ["free%d" % idx for idx in range(2)]
    try:
        info = vc.Run("gnt-cluster", "info").stdout
        assert "required aggregate metadata prefix: reservation:" in info
        for name in reserved:
            vc.Run(*_AddArgs(name, "--tags", "reservation:r1"))
        assert {PrimaryNode(vc, name) for name in reserved} == {NODE2}
        for name in plain:
            vc.Run(*_AddArgs(name))
        assert {PrimaryNode(vc, name) for name in plain} == {NODE1}
        out = Fail(vc, *_AddArgs("nores", "--tags", "reservation:r9"))
        assert "No aggregate has the metadata 'reservation:r9'" in out, out
        out = Fail(vc, *_AddArgs("pinned", "-n", NODE3))
        assert "Node %s is excluded by member_of '!in:" % NODE3 in out, out
        assert "(the cluster's default: no aggregate with metadata" \
            " 'reservation:...')" in out, out
        # The instance's own --member-of still holds with the defaults
        out = Fail(vc, *_AddArgs("both", "--tags", "reservation:r1",
                                 "--member-of", "!res-r1"))
        assert "FailMemberOf" in out, out
        _EvacuateWithTheDefaults(vc, reserved, plain)
        _ChangeGroupWithTheDefaults(vc, reserved, plain)
    finally:
        RemoveInstances(vc, *reserved, *plain)
        vc.Run("gnt-cluster", "modify", "--placement-required-prefix", "",
               "--placement-default-forbidden-prefix", "")
        vc.Run("gnt-node", "modify", "--remove-aggregates", "freepool",
               NODE3)
        vc.Run("gnt-node", "modify", "--remove-aggregates", "res-r1", NODE2)
        vc.Run("gnt-cluster", "aggregate", "remove", "freepool")
        vc.Run("gnt-cluster", "aggregate", "remove", "res-r1")
        for node in (NODE2, NODE3):
            vc.Run("gnt-node", "modify", "--add-aggregates", "licensed",
                   node)


def test_aggregate_commands(vc):
    """gnt-cluster aggregate list, info, add with metadata, rename and
    remove: node groups are aggregates too, named aggregates list their
    nodes and metadata."""
    out = vc.Run("gnt-cluster", "aggregate", "list").stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["default"][2] == "Y", out
    assert rows["licensed"][2] == "N", out
    assert rows["licensed"][3].split(",") == [NODE2, NODE3], out
    uuid = vc.Run("gnt-cluster", "aggregate", "add", "--metadata",
                  "owner=ops,reservation:", "tmp").stdout.strip()
    try:
        vc.Run("gnt-cluster", "aggregate", "rename", "tmp", "tmp2")
        out = vc.Run("gnt-cluster", "aggregate", "info", "tmp2").stdout
        for line in ("Aggregate: tmp2", "UUID: %s" % uuid,
                     "Node group: N", "owner: ops", "reservation:: ",
                     "Nodes: (none)"):
            assert line in out, out
        assert "tmp" not in vc.Run("gnt-cluster", "aggregate", "list",
                                   "licensed").stdout
    finally:
        vc.Run("gnt-cluster", "aggregate", "remove", "tmp2")
    out = Fail(vc, "gnt-cluster", "aggregate", "info", "tmp2")
    assert "Aggregate 'tmp2' not known" in out, out
