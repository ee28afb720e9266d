"""Placement's request parsing and model, without a daemon."""

import pytest

from ganeti import config, errors, objects
from ganeti.placement import cluster as pcluster
from ganeti.placement import microversion, model, params, search, store

pytestmark = pytest.mark.unit

A = "11111111-1111-4111-8111-111111111111"
B = "22222222-2222-4222-8222-222222222222"
C = "33333333-3333-4333-8333-333333333333"
D = "abcdef00-3333-4333-8333-33333333abcd"
LATEST = microversion.MAX_VERSION


def _Refused(fn, *args, status=400) -> str:
    """The refusal of ``fn(*args)``: a PlacementError with ``status``, or
    (status None) an OpPrereqError."""
    if status is None:
        with pytest.raises(errors.OpPrereqError) as prereq:
            fn(*args)
        return str(prereq.value)
    with pytest.raises(errors.PlacementError) as info:
        fn(*args)
    assert info.value.status == status
    return info.value.detail


@pytest.mark.parametrize("value,expected", [
    (A, ({A}, set())),
    ("in:%s" % A, ({A}, set())),
    ("in:%s,%s" % (A, B), ({A, B}, set())),
    ("!%s" % A, (set(), {A})),
    ("!in:%s,%s" % (A, B), (set(), {A, B})),
])
def test_member_of_forms(value, expected):
    assert params.ParseMemberOfValue(value) == expected


@pytest.mark.parametrize("value,bad", [
    ("in:%s,!%s" % (A, B), "!" + B), ("nope", "nope"), ("", ""),
    ("in:", ""), ("!in:", ""), ("!", ""), ("in:%s," % A, ""),
    (D.upper(), D.upper()), (D.replace("-", ""), D.replace("-", "")),
])
def test_member_of_invalid_uuid(value, bad):
    assert _Refused(params.ParseMemberOfValue, value) == (
        "Invalid query string parameters: Expected 'member_of' parameter"
        " to contain valid UUID(s). Got: %s" % bad)


def test_member_of_list_needs_in():
    assert _Refused(params.ParseMemberOfValue, "%s,%s" % (A, B)).startswith(
        "Multiple values for 'member_of' must be prefixed with the 'in:'"
        " or '!in:' keyword")


def test_member_of_by_microversion():
    query = [("member_of", "in:%s,%s" % (A, B)), ("member_of", C),
             ("member_of", "!%s" % A), ("member_of", "!in:%s" % B)]
    assert params.ParseMemberOf(query, "", LATEST) == ([{A, B}, {C}],
                                                       {A, B})
    assert _Refused(params.ParseMemberOf, query, "", (1, 23)) == \
        "Multiple member_of parameters are not supported"
    assert _Refused(params.ParseMemberOf, query[2:3], "", (1, 31)) == \
        "Forbidden member_of parameters are not supported in the" \
        " specified microversion"
    assert _Refused(params.ParseMemberOf, [("member_of2", "!" + A)], "2",
                    (1, 31)) == "Forbidden member_of2 parameters are not" \
        " supported in the specified microversion"
    # An invalid UUID is reported before the microversion
    assert "Got: x" in _Refused(params.ParseMemberOf,
                                [("member_of", "!in:x,%s" % A)], "",
                                (1, 31))


def _Request(query, version=LATEST):
    return params.ParseCandidateRequest(query, version, model.State())


def test_request_groups():
    request = _Request([("resources", "VCPU:1"), ("resources1", "DISK_GB:5"),
                        ("member_of1", "!" + A), ("group_policy", "none"),
                        ("resources_NET", "VCPU:2"), ("limit", "3")])
    assert [(g.suffix, g.resources, g.forbidden_aggs)
            for g in request.groups] == [
        ("", {"VCPU": 1}, set()), ("1", {"DISK_GB": 5}, {A}),
        ("_NET", {"VCPU": 2}, set())]
    assert request.limit == 3 and request.group_policy == "none"


@pytest.mark.parametrize("query,version,message", [
    ([("resources", "VCPU:1"), ("member_of1", A)], (1, 25),
     "All member_of parameters must be associated with resources. Found"
     " the following orphaned member_of keys: member_of1"),
    ([("resources1", "VCPU:1"), ("member_of", A), ("member_of3", A)],
     (1, 35), "orphaned member_of keys: member_of, member_of3"),
    ([("resources1", "VCPU:1"), ("required2", "HW_NIC_SRIOV")], (1, 35),
     "orphaned traits keys: required2"),
    ([("resources", "VCPU:1"), ("member_of1", A)], (1, 24),
     "Additional properties are not allowed ('member_of1' was unexpected)"),
    ([("resources_X", "VCPU:1")], (1, 32),
     "'resources_X' does not match any of the regexes"),
    ([("member_of", A)], (1, 21), "'resources' is a required property"),
    ([("limit", "1")], (1, 35), "At least one request group"),
    ([("limit", "1")], LATEST, "There must be at least one resources or"
     " resources[$S] parameter."),
    ([("resources", "VCPU:1"), ("required", "")], LATEST,
     "Expected 'required' parameter value of the form:"
     " HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: "),
    ([("resources", "VCPU:1"), ("required", "in:HW_NIC_SRIOV")], (1, 38),
     "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since"
     " microversion 1.39. Got: in:HW_NIC_SRIOV"),
    ([("resources", "VCPU:1"), ("required", "!HW_NIC_SRIOV")], (1, 21),
     "Expected 'required' parameter value of the form:"
     " HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !HW_NIC_SRIOV"),
    ([("resources1", "VCPU:1"), ("resources2", "VCPU:1")], LATEST,
     'The "group_policy" parameter is required'),
    ([("resources", "VCPU:0")], LATEST,
     "Requested resource VCPU expected positive integer amount. Got: 0."),
    ([("resources", "VCPU")], LATEST, "Badly formed resources parameter"),
    ([("resources", "NOPE:1")], LATEST, "No such resource class NOPE."),
    ([("resources", "VCPU:1"), ("required", "CUSTOM_X")], LATEST,
     "No such trait(s): CUSTOM_X"),
    ([("resources", "VCPU:1"), ("limit", "0")], LATEST,
     "'0' does not match '^[1-9][0-9]*$'"),
    ([("resources", "VCPU:1"), ("in_tree", "x")], LATEST,
     "'x' is not a 'uuid'"),
])
def test_request_refusals(query, version, message):
    assert message in _Refused(_Request, query, version)


def test_required_before_1_39_is_the_last_value():
    request = _Request([("resources", "VCPU:1"), ("required", "CUSTOM_X"),
                        ("required", "HW_NIC_SRIOV")], (1, 38))
    assert request.groups[0].required == [{"HW_NIC_SRIOV"}]


@pytest.mark.parametrize("query,version,message,code", [
    ([("resources", "VCPU:1"), ("root_required", "HW_NIC_SRIOV")], (1, 34),
     "'root_required' does not match any of the regexes", None),
    ([("resources", "VCPU:1"), ("root_required", "HW_NIC_SRIOV"),
      ("root_required", "!HW_NUMA_ROOT")], LATEST,
     "Query parameter 'root_required' may be specified only once.",
     "placement.query.duplicate_key"),
    ([("resources", "VCPU:1"),
      ("root_required", "HW_NIC_SRIOV,HW_NUMA_ROOT,!HW_NIC_SRIOV")], LATEST,
     "Conflicting required and forbidden traits found in root_required:"
     " HW_NIC_SRIOV", "placement.query.bad_value"),
    ([("resources", "VCPU:1"), ("root_required", "in:HW_NIC_SRIOV")], LATEST,
     "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since"
     " microversion 1.39.", None),
    ([("resources", "VCPU:1"), ("root_required", "!CUSTOM_NO")], LATEST,
     "No such trait(s): CUSTOM_NO", None),
    ([("resources1", "VCPU:1"), ("same_subtree", "1")], (1, 35),
     "'same_subtree' does not match any of the regexes", None),
    ([("resources1", "VCPU:1"), ("required2", "HW_NIC_SRIOV"),
      ("group_policy", "none")], (1, 36),
     "Resourceless suffixed group request should be specified in"
     " `same_subtree` query param: bad group(s) - ['2'].",
     "placement.query.bad_value"),
    ([("member_of1", A), ("group_policy", "none")], (1, 36),
     "There must be at least one resources or resources[$S] parameter.",
     "placement.query.missing_value"),
    ([("resources_C", "VCPU:1"), ("resources_A", "DISK_GB:1"),
      ("same_subtree", "C,_A"), ("group_policy", "none")], LATEST,
     "Real suffixes should be specified in `same_subtree`: ['C'] not found"
     " in ['_C', '_A'].", "placement.query.bad_value"),
    ([("resources_C", "VCPU:1"), ("resources_A", "DISK_GB:1"),
      ("same_subtree", "_C,,_A"), ("group_policy", "none")], LATEST,
     "Empty string (unsuffixed group) can not be specified in"
     " `same_subtree` ", "placement.query.bad_value"),
    ([("required", "HW_NIC_SRIOV"), ("resources1", "VCPU:1")], LATEST,
     "bad group(s) - [''].", "placement.query.bad_value"),
])
def test_request_wide_refusals(query, version, message, code):
    with pytest.raises(errors.PlacementError) as info:
        _Request(query, version)
    assert info.value.status == 400
    assert message in info.value.detail
    assert info.value.code == (code or "placement.undefined_code")


def test_resourceless_group_named_in_same_subtree():
    request = _Request([("resources1", "VCPU:1"),
                        ("required2", "HW_NIC_SRIOV"),
                        ("same_subtree", "1, 2"), ("same_subtree", "2"),
                        ("root_required", "HW_NUMA_ROOT,!HW_CPU_X86_VMX"),
                        ("group_policy", "none")], (1, 36))
    assert [(g.suffix, g.resources) for g in request.groups] == [
        ("1", {"VCPU": 1}), ("2", {})]
    assert request.same_subtrees == [["1", "2"], ["2"]]
    assert (request.root_required, request.root_forbidden) == (
        {"HW_NUMA_ROOT"}, {"HW_CPU_X86_VMX"})


def test_provider_filter_keys_by_version():
    state = model.State()
    assert "('member_of' was unexpected)" in _Refused(
        params.ParseProviderFilter, [("member_of", A)], (1, 2), state)
    assert params.ParseProviderFilter([("member_of", A)], (1, 3),
                                      state).member_of == [{A}]


def test_microversion_header():
    assert microversion.FromHeader(None) == (1, 0)
    assert microversion.FromHeader("compute 2.1, placement 1.32") == (1, 32)
    assert microversion.FromHeader("placement latest") == (1, 39)
    assert _Refused(microversion.FromHeader, "placement 1.40",
                    status=406) == "Unacceptable version header: 1.40"
    assert _Refused(microversion.FromHeader, "placement 1.x") == \
        "invalid version string: 1.x"


def _NestedState() -> model.State:
    """The spec's tree: cn1 [A] > numa1_1 [C], numa1_2; cn2 [B] > numa2_1,
    numa2_2; sharing ss1 [B], ss2 [C]."""
    state = model.State()
    uuids = {}

    def Add(name, parent=None, rclass=None, aggs=(), sharing=False):
        provider = state.CreateProvider(name, None, uuids.get(parent))
        uuids[name] = provider.uuid
        if rclass:
            provider.inventories[rclass] = dict(model.INVENTORY_DEFAULTS,
                                                total=100)
        provider.aggregates = set(aggs)
        if sharing:
            provider.traits.add("MISC_SHARES_VIA_AGGREGATE")

    Add("cn1", rclass="MEMORY_MB", aggs=[A])
    Add("cn2", rclass="MEMORY_MB", aggs=[B])
    Add("numa1_1", "cn1", "VCPU", [C])
    Add("numa1_2", "cn1", "VCPU")
    Add("numa2_1", "cn2", "VCPU")
    Add("numa2_2", "cn2", "VCPU")
    Add("ss1", rclass="DISK_GB", aggs=[B], sharing=True)
    Add("ss2", rclass="DISK_GB", aggs=[C], sharing=True)
    return state


def _Excluded(state: model.State, agg: str, suffix: str) -> set[str]:
    """The providers a forbidden aggregate removes from the candidates of
    each resource class, asked one at a time."""
    names = {p.uuid: p.name for p in state.providers.values()}
    left = set()
    for rclass in ("MEMORY_MB", "VCPU", "DISK_GB"):
        request = params.ParseCandidateRequest(
            [("resources" + suffix, rclass + ":1"),
             ("member_of" + suffix, "!" + agg)], LATEST, state)
        result = search.FindCandidates(state, request, LATEST)
        for alloc in result["allocation_requests"]:
            left.update(names[rp] for rp in alloc["allocations"])
    return set(names.values()) - left


@pytest.mark.parametrize("agg,unnumbered,numbered", [
    (A, {"cn1", "numa1_1", "numa1_2"}, {"cn1"}),
    (B, {"cn2", "numa2_1", "numa2_2", "ss1"}, {"cn2", "ss1"}),
    (C, {"numa1_1", "ss2"}, {"numa1_1", "ss2"}),
])
def test_spec_exclusion_tables(agg, unnumbered, numbered):
    state = _NestedState()
    assert _Excluded(state, agg, "") == unnumbered
    assert _Excluded(state, agg, "1") == numbered


def test_generations_and_capacity():
    state = model.State()
    provider = state.CreateProvider("cn", A, None)
    state.SetInventories(A, 0, {"VCPU": {"total": 4, "reserved": 1}}, True)
    assert _Refused(state.SetAggregates, A, 0, [B], True,
                    status=409).startswith("Resource provider's generation")
    request = {"allocations": {A: {"VCPU": 3}}, "project_id": "p",
               "user_id": "u", "consumer_generation": None}
    state.SetAllocations({B: request}, True)
    assert provider.generation == 2 and state.consumers[B].generation == 1
    assert _Refused(state.SetAllocations, {B: request}, True,
                    status=409) == "consumer generation conflict -" \
        " expected 1 but got null"
    more = dict(request, allocations={A: {"VCPU": 1}})
    assert _Refused(state.SetAllocations, {C: more}, True,
                    status=409).endswith("would exceed the capacity.")
    assert _Refused(state.DeleteProvider, A, status=409).endswith(
        "Resource provider has allocations.")


def test_store_round_trip_and_failed_change(placement_cfg):
    source = store.ConfigSource(placement_cfg)
    first = store.Store()
    with first.Changing(source) as state:
        state.CreateProvider("cn", A, None).aggregates.add(B)
    with pytest.raises(errors.PlacementError):
        with first.Changing(source) as state:
            state.CreateProvider("other", C, None)
            state.CreateProvider("cn", None, None)
    with first.Reading(source) as state:
        assert list(state.providers) == [A]
    with store.Store().Reading(source) as state:
        assert state.providers[A].aggregates == {B}


def test_state_is_in_the_replicated_configuration(placement_cfg):
    """What a failed-over master reads: config.data itself."""
    with store.Store().Changing(store.ConfigSource(placement_cfg)) as state:
        state.CreateProvider("cn", A, None)
    reloaded = config.ConfigWriter(placement_cfg.GetConfigFileName(),
                                   accept_foreign=True)
    with store.Store().Reading(store.ConfigSource(reloaded)) as state:
        assert [p.name for p in state.providers.values()] == ["cn"]


def test_a_write_on_a_stale_state_is_a_concurrent_update(placement_cfg):
    """Two writers (the RAPI daemon and another): the one that read
    before the other's write is refused, as Placement refuses a lost race,
    and a retry sees the other's change."""
    source = store.ConfigSource(placement_cfg)
    mine, other = store.Store(), store.Store()
    with pytest.raises(errors.PlacementError) as info:
        with mine.Changing(source) as state:
            state.CreateProvider("mine", A, None)
            with other.Changing(source) as theirs:
                theirs.CreateProvider("theirs", B, None)
    assert (info.value.status, info.value.code) == \
        (409, "placement.concurrent_update")
    assert info.value.detail.startswith("Another thread concurrently")
    with mine.Changing(source) as state:
        assert set(state.providers) == {B}
        state.CreateProvider("mine", A, None)
    with other.Reading(source) as state:
        assert set(state.providers) == {A, B}


def test_a_removed_node_takes_the_allocations_against_it(placement_cfg):
    """Placement never lists allocations against a provider that is gone:
    removing a node drops the API consumers' allocations on it (a
    consumer left without any is gone) in the same configuration write."""
    node = objects.Node(name="node2.example.test", primary_ip="127.0.0.2",
                        secondary_ip="127.0.0.2",
                        group=placement_cfg.LookupNodeGroup(None))
    placement_cfg.AddNode(node)
    snapshot = ([model.Provider(uuid=node.uuid, name=node.name,
                                inventories={"VCPU": dict(
                                    model.INVENTORY_DEFAULTS, total=8)})],
                [])
    source = store.ConfigSource(placement_cfg)
    cache = store.Store()
    with cache.Changing(source, snapshot) as state:
        state.CreateProvider("cn", A, None)
        state.SetInventories(A, 0, {"VCPU": {"total": 4}}, True)
        state.SetAllocations({
            B: {"allocations": {node.uuid: {"VCPU": 1}, A: {"VCPU": 1}}},
            C: {"allocations": {node.uuid: {"VCPU": 2}}}}, True)
    placement_cfg.RemoveNode(node.uuid)
    with cache.Reading(source) as state:
        assert state.consumers[B].allocations == {A: {"VCPU": 1}}
        assert state.consumers[B].generation == 2
        assert C not in state.consumers
    # Nothing to drop: no Placement write
    serial = placement_cfg.GetPlacementState()[store.SERIAL]
    assert model.WithoutProvider(placement_cfg.GetPlacementState(),
                                 node.uuid) is None
    assert store.Serial(placement_cfg.GetPlacementState()) == serial


def test_a_removed_node_takes_its_unused_child_providers(placement_cfg):
    """Providers the API created under a node (a NUMA cell and its own
    child) keep the node from going while they have allocations, the
    refusal naming them and their consumers; without allocations they go
    with the node (they are not left behind as roots of their own)."""
    node = objects.Node(name="node2.example.test", primary_ip="127.0.0.2",
                        secondary_ip="127.0.0.2",
                        group=placement_cfg.LookupNodeGroup(None))
    placement_cfg.AddNode(node)
    snapshot = ([model.Provider(uuid=node.uuid, name=node.name)], [])
    source = store.ConfigSource(placement_cfg)
    cache = store.Store()
    with cache.Changing(source, snapshot) as state:
        state.CreateProvider("numa0", A, node.uuid)
        state.CreateProvider("numa0-pf", B, A)
        state.CreateProvider("elsewhere", C, None)
        state.SetInventories(B, 0, {"VCPU": {"total": 4}}, True)
        state.SetAllocations({C: {"allocations": {B: {"VCPU": 1}}}}, True)
    text = _Refused(placement_cfg.RemoveNode, node.uuid, status=None)
    assert "Node %s still has Placement resource providers with" \
        " allocations under it: numa0-pf (%s) by consumer(s) %s" % (
            node.name, B, C) in text
    assert node.uuid in placement_cfg.GetNodeList()
    with cache.Changing(source, snapshot) as state:
        state.DeleteAllocations(C)
    placement_cfg.RemoveNode(node.uuid)
    assert node.uuid not in placement_cfg.GetNodeList()
    with cache.Reading(source) as state:
        assert set(state.providers) == {C}


def _ReservationCluster(required="reservation:", forbidden="reservation:"):
    cluster = objects.Cluster(
        placement_required_prefix=required,
        placement_default_forbidden_prefix=forbidden,
        aggregates={A: {"name": "freepool", "metadata": {"reservation:": ""}},
                    B: {"name": "res-r1",
                        "metadata": {"reservation:r1": ""}},
                    C: {"name": "licensed", "metadata": {}}})
    return cluster


def test_reservation_defaults_of_the_deployer_flow():
    cluster = _ReservationCluster()
    reserve = pcluster.ReservationMemberOf
    # No reservation: every aggregate with reservation: metadata forbidden
    assert list(reserve(cluster, ["web"])) == ["!in:%s" % ",".join(
        sorted([A, B]))]
    # Reservation r1: its aggregate required, the default skipped
    assert list(reserve(cluster, ["reservation:r1"])) == ["in:%s" % B]
    assert "'reservation:r9'" in _Refused(
        reserve, cluster, ["reservation:r9"], status=None)
    # Off by default
    assert reserve(_ReservationCluster("", ""), []) == {}
    assert list(reserve(_ReservationCluster("", "reservation:"),
                        ["reservation:r1"])) == []
