"""The RAPI request path without a cluster: URI table, resources, handler.

The master daemon is replaced by a recording LUXI client, so the opcodes
the resources build (the part under test) can be inspected, as Ganeti's
own RAPI tests do.
"""

import base64
import email.message
import gc
import urllib.parse

import pytest

from ganeti import constants, errors, http as ghttp, opcodes
from ganeti.http import auth
from ganeti.rapi import baserlib, connector, rlib2
from ganeti.server import rapi as rapi_server


class FakeClient:
    """Records submitted jobs; answers queries from canned data."""

    def __init__(self, query_data=None, error=None):
        self.jobs = []
        self.calls = []
        self.query_data = query_data or []
        self.error = error

    def _Call(self, name, *args):
        self.calls.append((name, args))
        if self.error is not None:
            raise self.error

    def SubmitJob(self, ops):
        self._Call("SubmitJob", ops)
        self.jobs.append(ops)
        return len(self.jobs)

    def Query(self, what, fields, qfilter):
        self._Call("Query", what, fields, qfilter)
        return {"fields": [], "data": self.query_data}

    def QueryClusterInfo(self):
        self._Call("QueryClusterInfo")
        return {"volume_group_name": "xenvg", "drbd_usermode_helper": None,
                "name": "cluster"}

    def QueryTags(self, kind, name):
        self._Call("QueryTags", kind, name)
        return ["t1"]


def _Resource(cls, items=(), query="", body=None, client=None):
    queryargs = urllib.parse.parse_qs(query)
    client = client or FakeClient()
    return cls(list(items), queryargs, body, lambda: client), client


def _Op(cls, method, items=(), query="", body=None):
    resource, client = _Resource(cls, items, query, body)
    job_id = getattr(resource, method)()
    assert job_id == 1
    (ops, ) = client.jobs
    assert len(ops) == 1
    return ops[0]


# URI table -------------------------------------------------------------------

def test_mapper():
    mapper = connector.Mapper()
    assert mapper.getController("/2/info") == (rlib2.R_2_info, [], {})
    assert mapper.getController("/2/nodes/n1.example.com/role?force=1&x=a"
                                "&x=b") == \
        (rlib2.R_2_nodes_name_role, ["n1.example.com"],
         {"force": ["1"], "x": ["a", "b"]})
    assert mapper.getController("/2/jobs/17/wait")[:2] == \
        (rlib2.R_2_jobs_id_wait, ["17"])
    assert mapper.getController("/2/query/node/fields")[:2] == \
        (rlib2.R_2_query_fields, ["node"])
    assert mapper.getController("/2/groups/a%2Db")[1] == ["a-b"]
    # Empty values are dropped, as parse_qs does
    assert mapper.getController("/2/nodes?bulk=")[2] == {}
    for path in ("/2/nosuch", "/2/jobs/x1", "/2/nodes/a/b/c", "/2/",
                 "/2/query/cluster", "/2/query/os/fields", "/2/nodes/a b",
                 "/2/nodes/a%2Fb", "2/info", ""):
        with pytest.raises(ghttp.HttpNotFound):
            mapper.getController(path)


def test_resource_table_is_consistent():
    for template, resource in connector.RESOURCES.items():
        assert template.startswith("/")
        assert set(baserlib.TemplateParams(template)) <= \
            set(baserlib.PARAM_PATTERNS)
        methods = resource.GetMethods()
        assert methods, template
        for method in methods:
            assert set(resource.GetAccess(method)) <= {"read", "write"}
        if baserlib.IsOpcodeHandler(resource, ghttp.HTTP_PUT):
            assert resource.GetAccess(ghttp.HTTP_PUT) == ["write"]


def test_features_come_from_the_resources(monkeypatch):
    before = connector.R_2_features.GET()
    # POST /2/instances takes version 1 bodies
    assert "instance-create-reqv1" in before

    class R_with_feature(baserlib.ResourceBase):  # noqa: N801
        FEATURES = ("test-feature", )

        @staticmethod
        def GET():
            return None

    monkeypatch.setitem(connector.RESOURCES, "/2/featured", R_with_feature)
    assert connector.R_2_features.GET() == sorted(before + ["test-feature"])


# Opcode bodies ---------------------------------------------------------------

def test_fill_opcode():
    op = baserlib.FillOpcode(opcodes.OpGroupRename,
                             {"new_name": "b"}, {"group_name": "a"})
    assert (op.group_name, op.new_name) == ("a", "b")
    op = baserlib.FillOpcode(opcodes.OpClusterRedistConf, None, None)
    assert isinstance(op, opcodes.OpClusterRedistConf)
    cases = [
        (["list"], None, None, "Body contents: Type is 'list', but 'dict'"),
        ({"group_name": "x", "new_name": "y"}, {"group_name": "a"}, None,
         "Can't overwrite static parameters group_name"),
        ({"name": "a", "group_name": "b"}, {}, {"name": "group_name"},
         "Parameter 'name' was renamed to 'group_name', but both are"
         " specified"),
        ({"new_name": "b", "bogus": 1}, {"group_name": "a"}, None,
         "Invalid body parameters: OpGroupRename has no parameter"
         " 'bogus'"),
        ({"new_name": ""}, {"group_name": "a"}, None,
         "Invalid body parameters: Parameter 'OP_GROUP_RENAME.new_name'"
         " fails validation"),
        ({}, {"group_name": "a"}, None,
         "Invalid body parameters: Parameter 'OP_GROUP_RENAME.new_name'"
         " missing value"),
    ]
    for body, static, rename, message in cases:
        with pytest.raises(ghttp.HttpBadRequest) as err:
            baserlib.FillOpcode(opcodes.OpGroupRename, body, static,
                                rename=rename)
        assert err.value.message.startswith(message), err.value.message


def test_generated_handler_uses_declarations():
    op = _Op(rlib2.R_2_groups, "POST", query="dry-run=1&reason=why",
             body={"name": "g1", "alloc_policy": "preferred",
                   "depends": [[5, ["success"]]]})
    assert isinstance(op, opcodes.OpGroupAdd)
    assert (op.group_name, op.alloc_policy, op.dry_run, op.depends) == \
        ("g1", "preferred", True, [[5, ["success"]]])
    assert [entry[:2] for entry in op.reason] == \
        [("gnt:user", "why"), ("gnt:library:rlib2:groups", "")]
    assert all(isinstance(entry[2], int) for entry in op.reason)

    op = _Op(rlib2.R_2_groups_name_assign_nodes, "PUT", items=["g1"],
             query="force=1", body={"nodes": ["n1"]})
    assert (op.group_name, op.nodes, op.force, op.dry_run) == \
        ("g1", ["n1"], True, False)

    op = _Op(rlib2.R_2_groups_name_modify, "PUT", items=["g1"],
             body={"custom_ndparams": {"spindle_count": 2}})
    assert op.ndparams == {"spindle_count": 2}

    # DELETE ignores the body, except for dependencies
    op = _Op(rlib2.R_2_groups_name, "DELETE", items=["g1"],
             body={"group_name": "other", "depends": [[3, ["error"]]]})
    assert (op.group_name, op.depends) == ("g1", [[3, ["error"]]])

    op = _Op(rlib2.R_2_redist_config, "PUT")
    assert isinstance(op, opcodes.OpClusterRedistConf)


def test_tags_opcodes():
    op = _Op(rlib2.R_2_tags, "PUT", query="tag=a&tag=b")
    assert (op.OP_ID, op.kind, op.name, op.tags, op.dry_run) == \
        ("OP_TAGS_SET", "cluster", None, ["a", "b"], False)
    op = _Op(rlib2.R_2_nodes_name_tags, "DELETE", items=["n1"],
             query="tag=a&dry-run=1", body={"tags": ["ignored"]})
    assert (op.OP_ID, op.kind, op.name, op.tags, op.dry_run) == \
        ("OP_TAGS_DEL", "node", "n1", ["a"], True)
    op = _Op(rlib2.R_2_groups_name_tags, "PUT", items=["g"], query="tag=x")
    assert (op.kind, op.name) == ("nodegroup", "g")
    resource, client = _Resource(rlib2.R_2_tags)
    assert resource.GET() == ["t1"]
    assert client.calls == [("QueryTags", ("cluster", ""))]
    resource, client = _Resource(rlib2.R_2_nodes_name_tags, items=["n1"])
    resource.GET()
    assert client.calls == [("QueryTags", ("node", "n1"))]


@pytest.mark.parametrize("role, flags", [
    ("regular", (False, False, False)),
    ("master-candidate", (True, None, None)),
    ("drained", (None, True, None)),
    ("offline", (None, None, True)),
])
def test_node_role_opcode(role, flags):
    op = _Op(rlib2.R_2_nodes_name_role, "PUT", items=["n1"],
             query="force=1&auto-promote=1", body=role)
    assert (op.master_candidate, op.drained, op.offline) == flags
    assert (op.node_name, op.force, op.auto_promote) == ("n1", True, True)


def test_node_role_bad_input():
    for body, message in (("master", "Can't set 'master' role"),
                          ({"role": "drained"}, "Body contents"),
                          (None, "Body contents")):
        resource, client = _Resource(rlib2.R_2_nodes_name_role, ["n1"],
                                     body=body)
        with pytest.raises(ghttp.HttpBadRequest) as err:
            resource.PUT()
        assert err.value.message.startswith(message)
        assert not client.jobs


def test_forbidden_parameters():
    resource, client = _Resource(rlib2.R_2_cluster_modify,
                                 body={"compression_tools": ["gzip"]})
    with pytest.raises(ghttp.HttpForbidden):
        resource.PUT()
    assert not client.jobs
    op = _Op(rlib2.R_2_cluster_modify, "PUT",
             body={"candidate_pool_size": 3})
    assert op.candidate_pool_size == 3


def test_request_version():
    class R_versioned(baserlib.OpcodeResource):  # noqa: N801
        POST_OPCODE = opcodes.OpGroupAdd
        POST_REQ_VERSION = 1

    for body, message in (({"group_name": "g"},
                           "Request data version 0 is no longer supported"),
                          ({"group_name": "g", "__version__": 2},
                           "Unsupported request data version 2"),
                          (None, "Body contents")):
        resource, _ = _Resource(R_versioned, body=body)
        with pytest.raises(ghttp.HttpBadRequest) as err:
            resource.POST()
        assert err.value.message.startswith(message)
    op = _Op(R_versioned, "POST", body={"group_name": "g", "__version__": 1})
    assert op.group_name == "g"


def test_handler_and_opcode_declared_together():
    with pytest.raises(errors.ProgrammerError):
        class R_both(baserlib.OpcodeResource):  # noqa: N801,F841
            PUT_OPCODE = opcodes.OpClusterRedistConf

            def PUT(self):
                return None


def test_query_arguments():
    resource, _ = _Resource(rlib2.R_2_nodes, query="bulk=0&dry-run=2")
    assert (resource.useBulk(), resource.dryRun(), resource.useForce()) == \
        (False, True, False)
    resource, _ = _Resource(rlib2.R_2_nodes, query="bulk=x")
    with pytest.raises(ghttp.HttpBadRequest):
        resource.useBulk()
    resource, _ = _Resource(rlib2.R_2_nodes, query="lock=1")
    with pytest.raises(ghttp.HttpBadRequest):
        resource.GET()


# Reads -----------------------------------------------------------------------

def test_item_queries():
    n = constants.RS_NORMAL
    client = FakeClient(query_data=[
        [[n, "n1"], [constants.RS_OFFLINE, None], [n, "10.0.0.1"]]
        + [[n, 0]] * (len(rlib2.N_FIELDS) - 3)])
    resource, _ = _Resource(rlib2.R_2_nodes_name, ["n1"], client=client)
    node = resource.GET()
    assert client.calls[0] == ("Query", ("node", rlib2.N_FIELDS,
                                         ["|", ["=", "name", "n1"]]))
    assert (node["name"], node["offline"]) == ("n1", None)
    # GET_ALIASES: sip is also given as secondary_ip
    assert node["secondary_ip"] == node["sip"]

    resource, _ = _Resource(rlib2.R_2_groups_name, ["g"],
                            client=FakeClient(query_data=[]))
    with pytest.raises(ghttp.HttpNotFound):
        resource.GET()

    client = FakeClient(query_data=[[[n, "b"]], [[n, "a"]]])
    resource, _ = _Resource(rlib2.R_2_groups, client=client)
    assert resource.GET() == [{"name": "a", "uri": "/2/groups/a"},
                              {"name": "b", "uri": "/2/groups/b"}]
    assert client.calls == [("Query", ("group", ["name"], None))]

    resource, _ = _Resource(rlib2.R_2_info)
    info = resource.GET()
    assert (info["vg_name"], info["drbd_helper"]) == ("xenvg", None)


# The request handler ---------------------------------------------------------

class _Pool:
    def __init__(self, client):
        self.client = client
        self.returned = 0

    def Get(self):
        return self.client

    def Put(self, client):
        assert client is self.client
        self.returned += 1


def _Handler(tmp_path, client=None, require_auth=False):
    users_path = tmp_path / "users"
    users_path.write_text("admin pw write\nreader pw read\nnobody pw\n")
    users = auth.UsersFile(str(users_path))
    users.Load()
    pool = _Pool(client or FakeClient())
    return rapi_server.RemoteApiHandler(users, require_auth, pool), pool


def _Headers(user=None, content_type=None):
    headers = email.message.Message()
    if user:
        headers["Authorization"] = "Basic " + base64.b64encode(
            ("%s:pw" % user).encode()).decode()
    if content_type:
        headers["Content-Type"] = content_type
    return headers


def test_handler_flow(tmp_path):
    handler, pool = _Handler(tmp_path)
    status, headers, body = handler("GET", "/version", _Headers(), b"")
    assert (status, headers["Content-Type"], body) == \
        (200, "application/json", b"2")
    assert pool.returned == 0
    status, _, body = handler("POST", "/2/groups?dry-run=1",
                              _Headers("admin", "application/json"),
                              b'{"name": "g"}')
    assert (status, body) == (200, b"1")
    assert pool.returned == 1
    with pytest.raises(ghttp.HttpNotImplemented) as err:
        handler("HEAD", "/version", _Headers(), b"")
    assert err.value.message == "Method HEAD is unsupported for path" \
        " /version"
    with pytest.raises(ghttp.HttpNotFound):
        handler("GET", "/2/none", _Headers(), b"")


@pytest.mark.parametrize("method, path, user, require_auth, code", [
    ("GET", "/2/nodes", None, False, None),
    ("GET", "/2/nodes", "nobody", False, None),
    ("GET", "/2/nodes", None, True, 401),
    ("GET", "/2/nodes", "nobody", True, None),
    ("GET", "/2/query/node?fields=name", "nobody", False, 403),
    ("GET", "/2/query/node?fields=name", "reader", False, None),
    ("PUT", "/2/tags?tag=x", None, False, 401),
    ("PUT", "/2/tags?tag=x", "reader", False, 403),
    ("PUT", "/2/tags?tag=x", "admin", False, None),
])
def test_handler_access(tmp_path, method, path, user, require_auth, code):
    handler, _ = _Handler(tmp_path, require_auth=require_auth)
    call = lambda: handler(method, path, _Headers(user), b"")  # noqa: E731
    if code is None:
        assert call()[0] == 200
    else:
        with pytest.raises(ghttp.HttpException) as err:
            call()
        assert err.value.code == code
        if code == 401:
            assert err.value.headers["WWW-Authenticate"] == \
                'Basic realm="Ganeti Remote API"'


def test_handler_body_checks(tmp_path):
    handler, _ = _Handler(tmp_path)
    for content_type, body, exc in (
            (None, b"{}", ghttp.HttpUnsupportedMediaType),
            ("text/json", b"{}", ghttp.HttpUnsupportedMediaType),
            ("application/json", b"{", ghttp.HttpBadRequest),
            ("application/json", b"\xff", ghttp.HttpBadRequest)):
        with pytest.raises(exc):
            handler("PUT", "/2/modify", _Headers("admin", content_type),
                    body)
    # A bare JSON value is a valid body
    status, _, _ = handler("PUT", "/2/nodes/n1/role",
                           _Headers("admin", "Application/JSON"),
                           b'"drained"')
    assert status == 200


@pytest.mark.parametrize("error, code", [
    (errors.NoMasterError("/sock"), 502),
    (errors.ProtocolError("garbage"), 502),
    (errors.ConnectionClosedError("closed"), 502),
    (errors.TimeoutError("slow"), 504),
    (errors.PermissionError("/sock"), 500),
    (errors.JobQueueFull(), 503),
    (errors.JobQueueDrainError("drained"), 503),
    (errors.OpPrereqError("Node 'x' not known", errors.ECODE_NOENT), 404),
    (errors.OpPrereqError("bad", errors.ECODE_INVAL), 400),
    (errors.OpPrereqError("busy", errors.ECODE_STATE), 500),
    (errors.GenericError("Queue drained"), 500),
])
def test_ganeti_errors_become_statuses(tmp_path, error, code):
    handler, pool = _Handler(tmp_path, client=FakeClient(error=error))
    with pytest.raises(ghttp.HttpException) as err:
        handler("GET", "/2/info", _Headers(), b"")
    assert err.value.code == code
    assert pool.returned == 1
    if code in (400, 404):
        assert err.value.message == error.args[0]


def test_error_body():
    headers, body = rapi_server.FormatErrorMessage(404, "No <such> & node")
    assert headers == {"Content-Type": "application/json"}
    assert body == (b'{"code":404,"message":"No &lt;such&gt; &amp; node",'
                    b'"explain":"Nothing matches the given URI"}')


class _GcRecordingClient(FakeClient):
    """Notes whether the cyclic collector ran while the master answered."""

    def Query(self, what, fields, qfilter):
        self.gc_enabled = gc.isenabled()
        return super().Query(what, fields, qfilter)


def test_handler_pauses_collector_for_the_answer_only(tmp_path):
    n = constants.RS_NORMAL
    client = _GcRecordingClient(query_data=[[[n, "a"]]])
    handler, _ = _Handler(tmp_path, client=client)
    assert gc.isenabled()
    status, _, body = handler("GET", "/2/groups", _Headers(), b"")
    assert (status, body) == (200, b'[{"name":"a","uri":"/2/groups/a"}]')
    assert client.gc_enabled is False
    assert gc.isenabled()
    client.error = errors.OpPrereqError("bad", errors.ECODE_INVAL)
    with pytest.raises(ghttp.HttpBadRequest):
        handler("GET", "/2/groups", _Headers(), b"")
    assert gc.isenabled()
