"""OpenAPI 3 description of the remote API, derived from its declarations.

Nothing here is written twice: paths come from the connector's templates,
methods and access rights from the resource classes, the request bodies
of job-submitting methods from their opcodes' parameter declarations
(names, types, defaults, docs), query arguments from
``baserlib.QUERY_ARGS`` and item fields from the query field tables. The
document is served at ``/2/openapi.json`` and shipped as
``doc/rapi-openapi.json`` (written by ``autotools/build-openapi``).
"""

import copy
import inspect
from typing import Any

from ganeti import constants, ht, queryfields
from ganeti.rapi import baserlib

OPENAPI_VERSION = "3.0.3"

_JSON_KINDS = frozenset(["boolean", "integer", "number", "string", "array",
                         "object"])

# Query field kinds (QFT_*) as JSON schema types
_FIELD_KINDS = {
    constants.QFT_TEXT: {"type": "string"},
    constants.QFT_BOOL: {"type": "boolean"},
    constants.QFT_NUMBER: {"type": "integer"},
    constants.QFT_UNIT: {"type": "integer"},
    constants.QFT_NUMBER_FLOAT: {"type": "number"},
    constants.QFT_TIMESTAMP: {"type": "number"},
}

_ERROR_SCHEMA = {
    "type": "object",
    "description": "Body of every error answer",
    "properties": {
        "code": {"type": "integer", "description": "HTTP status code"},
        "message": {"type": "string",
                    "description": "What went wrong (HTML-escaped)"},
        "explain": {"type": "string",
                    "description": "Standard explanation of the status"},
    },
}
_ERROR_REF = {"$ref": "#/components/schemas/Error"}
# Answer of every method that submits a job
JOB_ID = {"type": "integer", "description": "ID of the submitted job"}

_DESCRIPTION = (
    "The Ganeti remote API, version %d: JSON over HTTPS. Reading is open"
    " unless the daemon runs with --require-authentication; changing"
    " needs HTTP Basic authentication as a user with the 'write' option in"
    " the RAPI users file. Requests with a body must send Content-Type:"
    " application/json. Changes are submitted as jobs: the answer is the"
    " job's ID, whose progress /2/jobs/{job_id} shows." %
    constants.RAPI_VERSION)


class Item:
    """Result schema: the given query fields of one item, as an object."""

    def __init__(self, what: str, fields: list[str]):
        self.what = what
        self.fields = fields

    def Schema(self) -> dict:
        table = queryfields.FIELDS.get(self.what, {})
        properties = {}
        for name in self.fields:
            prop: dict[str, Any] = {}
            if name in table:
                _, kind, _, doc = table[name]
                prop = dict(_FIELD_KINDS.get(kind, {}), description=doc)
            # Unavailable values (e.g. of an offline node) are null
            prop["nullable"] = True
            properties[name] = prop
        return {"type": "object", "properties": properties}


class ItemList(Item):
    """Result schema of a list resource: names and URIs, or (bulk) items."""

    def __init__(self, what: str, fields: list[str],
                 uri_fields: tuple[str, str]):
        super().__init__(what, fields)
        self.uri_fields = uri_fields

    def Schema(self) -> dict:
        id_field, uri_field = self.uri_fields
        reference = {"type": "object", "properties": {
            id_field: {"description": "Identifier of the item"},
            uri_field: {"type": "string", "description": "URI of the item"},
        }}
        return {"type": "array",
                "description": "%s and %s of each item; with bulk=1 the"
                " items' fields" % (id_field, uri_field),
                "items": {"oneOf": [reference, super().Schema()]}}


def _Schema(value: Any) -> dict:
    if value is None:
        return {}
    if isinstance(value, Item):
        return value.Schema()
    return copy.deepcopy(value)


def _ParamSchema(default: Any, check: ht.Check, doc: str) -> dict:
    """JSON schema of one opcode parameter."""
    schema: dict[str, Any] = {}
    if check.kind in _JSON_KINDS:
        schema["type"] = check.kind
        if check.kind == "array":
            schema["items"] = {}
    schema["description"] = "%s (%s)" % (doc, check)
    if default is None:
        schema["nullable"] = True
    elif default is not ht.NoDefault:
        schema["default"] = copy.deepcopy(default)
    return schema


def _OpcodeBodySchema(resource: type[baserlib.OpcodeResource],
                      method: str) -> dict:
    """The body of a job-submitting method: its opcode's free parameters.

    Parameters filled from the URI or query string are left out; renamed
    ones are listed under both names.
    """
    static = set(resource.GetStaticParams(method))
    static.update(getattr(resource, "%s_FORBIDDEN" % method, ()))
    aliases = {new: old for old, new in
               (getattr(resource, "%s_RENAME" % method, None) or {}).items()}
    properties = {}
    required = []
    opcode = getattr(resource, "%s_OPCODE" % method)
    for name, default, check, doc in opcode.GetAllParams():
        if name in static:
            continue
        properties[name] = _ParamSchema(default, check, doc)
        if name in aliases:
            alias = dict(properties[name])
            alias["description"] = "Same as %s: %s" % (name,
                                                       alias["description"])
            properties[aliases[name]] = alias
        elif default is ht.NoDefault:
            required.append(name)
    version = getattr(resource, "%s_REQ_VERSION" % method, None)
    if version is not None:
        properties[baserlib.REQ_DATA_VERSION] = {
            "type": "integer", "enum": [version],
            "description": "Version of the request format"}
        required.append(baserlib.REQ_DATA_VERSION)
    schema = {"type": "object", "properties": properties,
              "additionalProperties": False}
    if required:
        schema["required"] = sorted(required)
    return schema


def _QueryParameter(name: str) -> dict:
    kind, doc = baserlib.QUERY_ARGS[name]
    if kind == "boolean":
        schema: dict[str, Any] = {"type": "integer", "enum": [0, 1]}
    elif kind == "array":
        schema = {"type": "array", "items": {"type": "string"}}
    else:
        schema = {"type": kind}
    if name in baserlib.QUERY_ARG_DEFAULTS:
        schema["default"] = baserlib.QUERY_ARG_DEFAULTS[name]
    param = {"name": name, "in": "query", "required": False,
             "description": doc, "schema": schema}
    if kind == "array":
        param.update(style="form", explode=True)
    return param


def _PathParameter(name: str) -> dict:
    pattern = baserlib.PARAM_PATTERNS[name]
    if name == "resource":
        schema = {"type": "string",
                  "enum": sorted(constants.QR_VIA_RAPI)}
    else:
        schema = {"type": "string", "pattern": "^(%s)$" % pattern}
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _DocLines(obj: Any) -> tuple[str, str]:
    doc = inspect.getdoc(obj) or ""
    summary, _, rest = doc.partition("\n")
    return summary.strip(), rest.strip()


def _Operation(resource: type[baserlib.ResourceBase], method: str) -> dict:
    """The OpenAPI operation of one method of a resource."""
    handler = getattr(resource, method)
    by_opcode = baserlib.IsOpcodeHandler(resource, method)
    custom_input = callable(getattr(resource, "Get%sOpInput" %
                                    method.capitalize(), None))
    args = list(getattr(resource, "%s_ARGS" % method, ()))
    if by_opcode:
        opcode = getattr(resource, "%s_OPCODE" % method)
        summary, details = _DocLines(opcode)
        description = ("Submits a job with opcode %s and answers its ID. %s"
                       % (opcode.OP_ID, details)).strip()
        args.extend(getattr(resource, "%s_QUERY" % method, {}))
        args.append("reason")
        result = JOB_ID
    else:
        summary, description = _DocLines(handler)
        result = _Schema(getattr(resource, "%s_RESULT" % method, None))

    access = resource.GetAccess(method)
    if access:
        description = ("%s Needs a user with the option %s." %
                       (description, " or ".join(sorted(access)))).strip()
        security: list[dict[str, list[str]]] = [{"basicAuth": []}]
    else:
        security = [{}, {"basicAuth": []}]

    operation = {
        "operationId": "%s_%s" % (method.lower(), resource.__name__),
        "summary": summary,
        "security": security,
        "responses": {
            "200": {"description": "Success", "content": {
                "application/json": {"schema": result}}},
            "default": {"description": "Error", "content": {
                "application/json": {"schema": _ERROR_REF}}},
        },
    }
    if description:
        operation["description"] = description
    if args:
        operation["parameters"] = [_QueryParameter(name)
                                   for name in sorted(set(args))]
    body = getattr(resource, "%s_BODY_SCHEMA" % method, None)
    if body is None and by_opcode and not custom_input and \
            issubclass(resource, baserlib.OpcodeResource) and \
            getattr(resource, "%s_BODY" % method, True):
        body = _OpcodeBodySchema(resource, method)
    if body is not None:
        operation["requestBody"] = {"required": False, "content": {
            "application/json": {"schema": copy.deepcopy(body)}}}
    return operation


def BuildDocument(resources: dict[str, type[baserlib.ResourceBase]]) -> dict:
    """The OpenAPI document of the resources (path template -> class)."""
    paths = {}
    for template, resource in sorted(resources.items()):
        item: dict[str, Any] = {}
        params = baserlib.TemplateParams(template)
        if params:
            item["parameters"] = [_PathParameter(name) for name in params]
        for method in resource.GetMethods():
            item[method.lower()] = _Operation(resource, method)
        paths[template] = item
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Ganeti Remote API",
            "version": constants.RELEASE_VERSION,
            "description": _DESCRIPTION,
        },
        "paths": paths,
        "components": {
            "schemas": {"Error": _ERROR_SCHEMA},
            "securitySchemes": {"basicAuth": {
                "type": "http", "scheme": "basic",
                "description": "A user of the RAPI users file (realm"
                " \"Ganeti Remote API\")"}},
        },
    }
