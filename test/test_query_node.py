"""The node and group resources of the query engine (OpQuery/OpQueryFields).

Static fields come from the configuration; live fields from node_info,
asked only of online vm_capable nodes and only when a live field is
requested or filtered on.
"""

import pytest

from ganeti import constants, errors, opcodes, query

from testutils_cmdlib import Failed, MakeContext

MASTER = "node1.example.test"
_MIB = 1024 * 1024

_NODE_INFO = {
    "name": "x", "bootid": "boot-id-1", "memory_total": 4096,
    "memory_free": 3000, "memory_dom0": 1096, "cpu_total": 8,
    "cpu_nodes": 1, "cpu_sockets": 2,
    "storage": [{"type": "file", "name": "/srv/ganeti/file-storage",
                 "storage_size": 10240, "storage_free": 5120}],
    "hv": {},
}


@pytest.fixture
def ctx(tmp_path):
    context = MakeContext(tmp_path)
    context.n2 = context.NewNode("node2.example.test", "127.0.0.2",
                                 master_candidate=True)
    context.n3 = context.NewNode("node3.example.test", "127.0.0.3",
                                 drained=True)
    context.n4 = context.NewNode("node4.example.test", "127.0.0.4",
                                 offline=True)
    context.n10 = context.NewNode("node10.example.test", "127.0.0.10",
                                  vm_capable=False)
    return context


def _Query(ctx, fields, qfilter=None, what=constants.QR_NODE):
    return ctx.Run(opcodes.OpQuery(what=what, fields=fields,
                                   qfilter=qfilter))


def _Values(result):
    return [[value for _, value in row] for row in result["data"]]


def test_static_fields_in_nice_order_without_rpc(ctx):
    result = _Query(ctx, ["name", "role", "master", "master_candidate",
                          "drained", "offline", "vm_capable", "pip", "group",
                          "pinst_cnt", "sinst_cnt"])
    assert _Values(result) == [
        [MASTER, "M", True, True, False, False, True, "127.0.0.1",
         "default", 0, 0],
        ["node2.example.test", "C", False, True, False, False, True,
         "127.0.0.2", "default", 0, 0],
        ["node3.example.test", "D", False, False, True, False, True,
         "127.0.0.3", "default", 0, 0],
        ["node4.example.test", "O", False, False, False, True, True,
         "127.0.0.4", "default", 0, 0],
        ["node10.example.test", "R", False, False, False, False, False,
         "127.0.0.10", "default", 0, 0],
    ]
    assert [fdef["title"] for fdef in result["fields"]][:3] == \
        ["Node", "Role", "IsMaster"]
    assert ctx.rpc.calls == []


def test_live_fields_and_their_statuses(ctx):
    for uuid in (ctx.cfg.GetMasterNode(), ctx.n3):
        ctx.rpc.answers[("node_info", uuid)] = _NODE_INFO
    ctx.rpc.answers[("node_info", ctx.n2)] = Failed("node_info", "node2")
    result = _Query(ctx, ["name", "mtotal", "mfree", "mnode", "dtotal",
                          "dfree", "ctotal", "cnodes", "csockets", "bootid",
                          "spfree"])
    rows = {row[0][1]: row[1:] for row in result["data"]}
    normal = constants.RS_NORMAL
    assert rows[MASTER] == [
        [normal, 4096], [normal, 3000], [normal, 1096], [normal, 10240],
        [normal, 5120], [normal, 8], [normal, 1], [normal, 2],
        [normal, "boot-id-1"], [constants.RS_UNAVAIL, None]]
    assert {status for status, _ in rows["node2.example.test"]} == \
        {constants.RS_NODATA}
    assert {status for status, _ in rows["node4.example.test"]} == \
        {constants.RS_OFFLINE}
    assert {status for status, _ in rows["node10.example.test"]} == \
        {constants.RS_UNAVAIL}
    # Only online vm_capable nodes are asked, in one call
    assert [call[:2] for call in ctx.rpc.calls] == [
        ("node_info", (ctx.cfg.GetMasterNode(), ctx.n2, ctx.n3))]


def test_filter_on_live_field_fetches_data_and_missing_data_passes(ctx):
    ctx.rpc.answers[("node_info", ctx.cfg.GetMasterNode())] = _NODE_INFO
    ctx.rpc.answers[("node_info", ctx.n3)] = dict(_NODE_INFO,
                                                  memory_total=1024)
    result = _Query(ctx, ["name"], [">", "mtotal", 2048])
    assert len(ctx.rpc.calls) == 1
    # node3 is filtered out; node2 gave no data (passes), node4 is offline
    # and node10 not vm_capable (both pass)
    assert [row[0] for row in _Values(result)] == [
        MASTER, "node2.example.test", "node4.example.test",
        "node10.example.test"]


def test_names_select_rows_in_order_and_unknown_names_fail(ctx):
    qfilter = ["|", ["=", "name", "node3"], ["=", "name", MASTER],
               ["=", "name", "node3.example.test"]]
    assert _Values(_Query(ctx, ["name"], qfilter)) == [
        ["node3.example.test"], [MASTER]]
    with pytest.raises(errors.OpPrereqError) as info:
        _Query(ctx, ["name"], ["|", ["=", "name", "nosuchnode"]])
    assert info.value.args[1] == errors.ECODE_NOENT
    assert "nosuchnode" in str(info.value)


def test_name_equality_matches_name_components(ctx):
    qfilter = ["|", ["==", "name", "NODE2"], ["=~", "name", "^node1"]]
    assert _Values(_Query(ctx, ["name"], ["&", ["?", "master_candidate"],
                                          qfilter])) == [
        [MASTER], ["node2.example.test"]]
    assert _Values(_Query(ctx, ["name"], ["&", ["==", "name", "node"],
                                          ["?", "vm_capable"]])) == []


def test_instances_groups_params_and_unknown_fields(ctx):
    ctx.AddInstance("inst2", ctx.n2, secondary=ctx.n3)
    ctx.AddInstance("inst10", ctx.n2)
    ctx.AddInstance("inst1", ctx.n2)
    result = _Query(ctx, ["pinst_cnt", "pinst_list", "sinst_list",
                          "group.uuid", "ndp/ssh_port", "ndparams",
                          "custom_ndparams", "powered", "tags", "serial_no",
                          "nosuchfield"],
                    ["==", "name", "node2"])
    (row, ) = result["data"]
    assert row[0] == [constants.RS_NORMAL, 3]
    assert row[1] == [constants.RS_NORMAL, ["inst1", "inst2", "inst10"]]
    assert row[2] == [constants.RS_NORMAL, []]
    assert row[3] == [constants.RS_NORMAL, ctx.cfg.LookupNodeGroup(None)]
    assert row[4] == [constants.RS_NORMAL, 22]
    assert row[5][1]["spindle_count"] == 1
    assert row[6] == [constants.RS_NORMAL, {}]
    # No out-of-band program: the power state is unknown
    assert row[7] == [constants.RS_UNAVAIL, None]
    assert row[8] == [constants.RS_NORMAL, []]
    assert row[10] == [constants.RS_UNKNOWN, None]
    assert result["fields"][10]["kind"] == constants.QFT_UNKNOWN
    assert _Values(_Query(ctx, ["sinst_cnt", "sinst_list"],
                          ["==", "name", "node3"])) == [[1, ["inst2"]]]


def test_bad_filters_and_resources(ctx):
    for qfilter in (["==", "nosuchfield", 1], ["~~", "name", "x"]):
        with pytest.raises(errors.OpPrereqError) as info:
            _Query(ctx, ["name"], qfilter)
        assert info.value.args[1] == errors.ECODE_INVAL
    with pytest.raises(errors.OpPrereqError):
        _Query(ctx, ["name"], what="nosuchresource")
    with pytest.raises(errors.OpPrereqError):
        ctx.Run(opcodes.OpQuery(what=constants.QR_NODE, fields=["name"],
                                use_locking=True))


def test_query_fields(ctx):
    result = ctx.Run(opcodes.OpQueryFields(what=constants.QR_NODE,
                                           fields=None))
    names = [fdef["name"] for fdef in result["fields"]]
    for name in ("name", "pip", "sip", "master", "master_candidate",
                 "master_capable", "offline", "drained", "vm_capable",
                 "role", "group", "group.uuid", "pinst_cnt", "sinst_cnt",
                 "pinst_list", "sinst_list", "ndparams", "custom_ndparams",
                 "ndp/spindle_count", "tags", "ctime", "mtime", "uuid",
                 "serial_no", "powered", "dtotal", "dfree", "mtotal",
                 "mnode", "mfree", "ctotal", "cnodes", "csockets",
                 "bootid"):
        assert name in names
    assert names == sorted(names)
    (mtotal, bogus) = ctx.Run(opcodes.OpQueryFields(
        what=constants.QR_NODE, fields=["mtotal", "bogus"]))["fields"]
    assert (mtotal["title"], mtotal["kind"]) == ("MTotal",
                                                 constants.QFT_UNIT)
    assert bogus["kind"] == constants.QFT_UNKNOWN
    result = ctx.Run(opcodes.OpQueryFields(what=constants.QR_GROUP,
                                           fields=["node_cnt"]))
    assert result["fields"][0]["title"] == "Nodes"


def test_group_query(ctx):
    ctx.Run(opcodes.OpGroupAdd(group_name="rack1",
                               ndparams={"spindle_count": "4"}))
    ctx.Run(opcodes.OpGroupAssignNodes(group_name="rack1",
                                       nodes=["node10", "node2"]))
    ctx.AddInstance("inst1", ctx.n2)
    ctx.AddInstance("inst2", ctx.cfg.GetMasterNode())
    result = _Query(ctx, ["name", "node_cnt", "node_list", "pinst_cnt",
                          "pinst_list", "alloc_policy", "custom_ndparams",
                          "ndp/spindle_count"], what=constants.QR_GROUP)
    assert _Values(result) == [
        ["default", 3, [MASTER, "node3.example.test", "node4.example.test"],
         1, ["inst2"], "preferred", {}, 1],
        ["rack1", 2, ["node2.example.test", "node10.example.test"], 1,
         ["inst1"], "preferred", {"spindle_count": 4}, 4],
    ]
    result = _Query(ctx, ["name", "ipolicy", "diskparams", "ndparams"],
                    ["|", ["=", "name", "rack1"]], what=constants.QR_GROUP)
    (row, ) = _Values(result)
    assert row[0] == "rack1"
    assert row[1]["vcpu-ratio"] == 4.0
    assert "drbd" in row[2] and row[3]["spindle_count"] == 4
    with pytest.raises(errors.OpPrereqError):
        _Query(ctx, ["name"], ["|", ["=", "name", "nosuchgroup"]],
               what=constants.QR_GROUP)


def test_engine_statuses_and_helpers():
    table = {
        "name": ("Name", constants.QFT_TEXT, lambda item: item[0], "Name"),
        "live": ("Live", constants.QFT_NUMBER, lambda item: item[1], "L"),
    }
    items = [("a.example.com", 3), ("b.example.com", query.FS_NODATA)]
    result = query.Query(table, items, ["name", "live"], ["<", "live", 5])
    assert result["data"] == [
        [[constants.RS_NORMAL, "a.example.com"], [constants.RS_NORMAL, 3]],
        [[constants.RS_NORMAL, "b.example.com"], [constants.RS_NODATA, None]]]
    result = query.Query(table, items, ["name"], ["==", "name", "a"],
                         hostname_fields=["name"])
    assert len(result["data"]) == 1
    assert query.Query(table, items, ["name"], ["==", "name", "a"])[
        "data"] == []
    assert query.RequestedNames(["|", ["=", "name", "a"],
                                 ["==", "name", "b"]]) == ["a", "b"]
    assert query.RequestedNames(["==", "name", "a"]) == ["a"]
    assert query.RequestedNames(["|", ["=", "name", "a"],
                                 ["=", "uuid", "b"]]) is None
    assert query.RequestedNames(None) is None
    assert query.FilterFields(["&", ["!", ["?", "a"]],
                               ["|", ["=", "b", 1], ["<", "c", 2]]]) == \
        {"a", "b", "c"}
    assert query.MatchHostname("Node1.Example.com", "node1")
    assert not query.MatchHostname("node10.example.com", "node1")
