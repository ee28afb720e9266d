"""The OpenAPI document of the remote API and its shipped copy."""

import json
import os
import subprocess
import sys

from ganeti import ht, opcodes
from ganeti.rapi import baserlib, connector, openapi

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = os.path.join(TOP, "doc", "rapi-openapi.json")


def test_shipped_document_up_to_date(tmp_path):
    out = tmp_path / "openapi.json"
    subprocess.run([sys.executable, os.path.join(TOP, "autotools",
                                                 "build-openapi"), str(out)],
                   check=True)
    with open(SHIPPED, encoding="utf-8") as fobj:
        assert fobj.read() == out.read_text(encoding="utf-8"), \
            "doc/rapi-openapi.json is stale: run autotools/build-openapi" \
            " doc/rapi-openapi.json"
    assert json.loads(out.read_text())["paths"]


def _Refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _Refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _Refs(value)


def test_document_structure():
    doc = openapi.BuildDocument(connector.RESOURCES)
    assert doc["openapi"] == openapi.OPENAPI_VERSION
    assert set(doc["paths"]) == set(connector.RESOURCES)
    operation_ids = []
    for template, resource in connector.RESOURCES.items():
        item = doc["paths"][template]
        assert sorted(k for k in item if k != "parameters") == \
            sorted(m.lower() for m in resource.GetMethods())
        assert [p["name"] for p in item.get("parameters", [])] == \
            baserlib.TemplateParams(template)
        for method in resource.GetMethods():
            operation = item[method.lower()]
            operation_ids.append(operation["operationId"])
            assert operation["summary"], (template, method)
            assert {"200", "default"} <= set(operation["responses"])
            needs_auth = bool(resource.GetAccess(method))
            assert ({} not in operation["security"]) == needs_auth
    assert len(operation_ids) == len(set(operation_ids))
    for ref in _Refs(doc):
        name = ref.rsplit("/", 1)[-1]
        assert ref == "#/components/schemas/" + name
        assert name in doc["components"]["schemas"]
    json.dumps(doc)


def test_opcode_bodies_follow_the_declarations():
    doc = openapi.BuildDocument(connector.RESOURCES)
    post = doc["paths"]["/2/groups"]["post"]
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    props = schema["properties"]
    declared = {param[0] for param in opcodes.OpGroupAdd.GetAllParams()}
    # Everything but the static parameters, plus the legacy name
    assert set(props) == declared - {"dry_run", "reason"} | {"name"}
    assert props["alloc_policy"]["nullable"] is True
    assert "preferred" in props["alloc_policy"]["description"]
    assert props["priority"] == {
        "type": "integer", "default": 0,
        "description": "Priority for opcode processing"
        " (integer in range [-20, 19])"}
    # group_name may also be given as name, so neither is required
    assert "required" not in schema
    assert [p["name"] for p in post["parameters"]] == ["dry-run", "reason"]
    assert post["responses"]["200"]["content"]["application/json"][
        "schema"]["type"] == "integer"

    rename = doc["paths"]["/2/groups/{group_name}/rename"]["put"]
    schema = rename["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["new_name"]
    assert "group_name" not in schema["properties"]

    for template, resource in connector.RESOURCES.items():
        for method in resource.GetMethods():
            if not baserlib.IsOpcodeHandler(resource, method) or \
                    not getattr(resource, "%s_BODY" % method, True) or \
                    hasattr(resource, "Get%sOpInput" % method.capitalize()):
                continue
            operation = doc["paths"][template][method.lower()]
            props = operation["requestBody"]["content"][
                "application/json"]["schema"]["properties"]
            opcode = getattr(resource, "%s_OPCODE" % method)
            static = set(resource.GetStaticParams(method))
            static.update(getattr(resource, "%s_FORBIDDEN" % method, ()))
            for name, default, check, _ in opcode.GetAllParams():
                if name in static:
                    assert name not in props, (template, name)
                    continue
                assert props[name].get("type", "other") in \
                    (check.kind, "other"), (template, name)
                if default not in (None, ht.NoDefault):
                    assert props[name]["default"] == default


def test_explicit_handlers_documented():
    doc = openapi.BuildDocument(connector.RESOURCES)
    role = doc["paths"]["/2/nodes/{node_name}/role"]
    body = role["put"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["type"] == "string"
    assert {p["name"] for p in role["put"]["parameters"]} == \
        {"force", "auto-promote", "reason"}
    nodes = doc["paths"]["/2/nodes/{node_name}"]["get"]
    fields = nodes["responses"]["200"]["content"]["application/json"][
        "schema"]["properties"]
    assert fields["name"]["type"] == "string"
    assert fields["mfree"]["type"] == "integer"
    assert fields["name"]["description"] == "Node name"
    query = doc["paths"]["/2/query/{resource}"]
    assert query["parameters"][0]["schema"]["enum"] == sorted(
        ["instance", "node", "group", "export", "network", "lock", "job",
         "filter"])
    assert query["get"]["security"] == [{"basicAuth": []}]
    tags = doc["paths"]["/2/tags"]["put"]
    tag = [p for p in tags["parameters"] if p["name"] == "tag"][0]
    assert tag["schema"]["type"] == "array" and tag["explode"] is True
    assert "requestBody" not in tags
