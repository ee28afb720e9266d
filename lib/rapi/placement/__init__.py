"""The Placement API, served by the RAPI daemon under ``/placement/``.

Same TLS and users as the rest of RAPI; reads need the read or write
option, changes the write option. Requests are answered as Placement
does: the microversion from ``OpenStack-API-Version`` (400/406 if bad)
and repeated in the answer, 404 for unknown paths and for methods newer
than the version asked for, 405 with ``Allow`` for unknown methods, and
every error as ``{"errors": [{"status", "title", "detail", "code",
"request_id"}]}`` (``code`` from 1.23).

The cluster's nodes are root providers and its instances consumers
(``ganeti.placement.nodes``), read from the master daemon for each request
that needs the state. They follow the configuration: changing a node
provider (its name, parent, inventories, traits, aggregates, or deleting
it) or an instance's allocations is refused with 403 Forbidden
(``placement.undefined_code``); child providers under nodes, and
allocations of the API's own consumers against nodes, are allowed.
"""

import re
import urllib.parse
import uuid as uuidlib
from typing import Any, Callable

from ganeti import errors, luxi, serializer
from ganeti import http as ghttp
from ganeti.placement import microversion, store
from ganeti.placement.microversion import Version
from ganeti.rapi.placement import (allocations, base, catalog, cluster,
                                   providers)

_UUID = "[^/]+"
_NAME = "[^/]+"


class Root(base.Resource):
    """/: the version document (no credentials needed)"""

    GET_ACCESS: list[str] = []

    @staticmethod
    def GET() -> dict:
        return microversion.VersionDocument()


RESOURCES: base.ResourceMap = {
    "": Root,
    "/": Root,
    "/resource_providers": providers.ResourceProviders,
    "/resource_providers/{uuid}": providers.ResourceProvider,
    "/resource_providers/{uuid}/inventories": providers.Inventories,
    "/resource_providers/{uuid}/inventories/{name}": providers.Inventory,
    "/resource_providers/{uuid}/traits": providers.ProviderTraits,
    "/resource_providers/{uuid}/aggregates": providers.ProviderAggregates,
    "/resource_providers/{uuid}/usages": providers.ProviderUsages,
    "/resource_providers/{uuid}/allocations": providers.ProviderAllocations,
    "/resource_classes": catalog.ResourceClasses,
    "/resource_classes/{name}": catalog.ResourceClass,
    "/traits": catalog.Traits,
    "/traits/{name}": catalog.Trait,
    "/allocations": allocations.Allocations,
    "/allocations/{uuid}": allocations.ConsumerAllocations,
    "/usages": allocations.Usages,
    "/allocation_candidates": allocations.AllocationCandidates,
    "/reshaper": allocations.Reshaper,
}

# What webob, under Placement, says before the detail of each status
_EXPLANATIONS = {
    400: "The server could not comply with the request since it is either"
         " malformed or otherwise incorrect.",
    401: "This server could not verify that you are authorized to access"
         " the document you requested.",
    403: "Access was denied to this resource.",
    404: "The resource could not be found.",
    405: "The method specified is not allowed for this resource.",
    406: "The resource could not be generated that was acceptable to your"
         " browser.",
    409: "There was a conflict when trying to complete your request.",
    415: "The request media type is not supported by this server.",
}


def _Compile(template: str) -> re.Pattern:
    regex = re.sub(r"\\\{(uuid|name)\\\}",
                   lambda m: "(%s)" % (_UUID if m.group(1) == "uuid"
                                       else _NAME), re.escape(template))
    return re.compile("^%s$" % regex)


_ROUTES = [(_Compile(template), resource)
           for template, resource in RESOURCES.items()]


def IsPlacementPath(path: str) -> bool:
    return path == base.PREFIX or path.startswith(base.PREFIX + "/")


def FormatError(status: int, detail: str, code: str,
                version: Version) -> bytes:
    """Placement's JSON error body."""
    explanation = _EXPLANATIONS.get(status, "")
    error: dict[str, Any] = {
        "status": status,
        "title": ghttp.StatusPhrase(status),
        "detail": "%s\n\n %s  " % (explanation, detail) if explanation
        else detail,
        "request_id": "req-%s" % uuidlib.uuid4(),
    }
    if version >= (1, 23):
        error["code"] = code
    return serializer.DumpJsonBytes({"errors": [error]})


class PlacementApi:
    """Serves the Placement API from a state store."""

    def __init__(self, state_store: store.Store):
        self._store = state_store

    @staticmethod
    def _Route(path: str) -> tuple[type[base.Resource], list[str]]:
        rest = urllib.parse.unquote(path[len(base.PREFIX):])
        for regex, resource in _ROUTES:
            match = regex.match(rest)
            if match:
                return resource, list(match.groups())
        raise errors.PlacementError(404, "The resource could not be found.")

    @staticmethod
    def _ParseBody(method: str, headers, body: bytes) -> Any:
        if method not in (ghttp.HTTP_PUT, ghttp.HTTP_POST) or not body:
            return None
        content_type = headers.get(ghttp.HTTP_CONTENT_TYPE)
        media = (content_type or "").split(";", 1)[0].strip().lower()
        if media != ghttp.HTTP_APP_JSON:
            raise errors.PlacementError(
                415, "The media type %s is not supported, use %s" %
                (content_type, ghttp.HTTP_APP_JSON))
        try:
            return serializer.LoadJson(body)
        except (ValueError, UnicodeDecodeError) as err:
            raise errors.PlacementError(400, "Malformed JSON: %s" %
                                        err) from None

    def __call__(self, method: str, target: str, headers, body: bytes,
                 authenticate, get_client: Callable[[], luxi.Client]
                 ) -> tuple[int, dict[str, str], bytes]:
        """Answer one request; ``authenticate(resource, method, headers)``
        raises the HTTP error of missing or insufficient credentials,
        ``get_client`` gives the request's LUXI client."""
        version = microversion.MIN_VERSION
        answer_headers: dict[str, str] = {
            ghttp.HTTP_CONTENT_TYPE: ghttp.HTTP_APP_JSON,
            "x-openstack-request-id": "req-%s" % uuidlib.uuid4()}
        try:
            version = microversion.FromHeader(headers.get(microversion.HEADER))
            answer_headers.update(microversion.ResponseHeaders(version))
            path, _, query_text = target.partition("?")
            query = urllib.parse.parse_qsl(query_text,
                                           keep_blank_values=True)
            resource, items = self._Route(path)
            method = method.upper()
            if method not in resource.GetMethods():
                allowed = ", ".join(resource.GetMethods())
                answer_headers[ghttp.HTTP_ALLOW] = allowed
                raise errors.PlacementError(
                    405, "The method specified is not allowed for this"
                    " resource.")
            authenticate(resource, method, headers)
            if not resource.IsAvailable(method, version):
                raise errors.PlacementError(
                    404, "The resource could not be found.")
            view = store.View(self._store, cluster.LuxiSource(get_client),
                              cluster.Snapshotter(get_client))
            handler = resource(items, query, self._ParseBody(method, headers,
                                                             body),
                               version, view)
            result = getattr(handler, method)()
        except errors.PlacementError as err:
            return err.status, answer_headers, FormatError(
                err.status, err.detail, err.code, version)
        except ghttp.HttpException as err:
            answer_headers.update(err.headers)
            return err.code, answer_headers, FormatError(
                err.code, err.message, "placement.undefined_code", version)
        answer_headers.update(handler.headers)
        if result is None:
            del answer_headers[ghttp.HTTP_CONTENT_TYPE]
            return handler.status, answer_headers, b""
        return handler.status, answer_headers, \
            serializer.DumpJsonBytes(result)

