"""The base of the Placement API resources: one class per URI.

A resource class declares, per HTTP method, the handler (a method of that
name returning the JSON body, or None for no body), the microversion the
method appeared in (``MIN_VERSIONS``) and who may call it (reads: read or
write users; changes: write users). Handlers set ``status`` and
``headers`` when the answer is not a plain 200.
"""

from typing import Any, Callable, NoReturn

from ganeti import errors
from ganeti import rapi
from ganeti.rapi import baserlib
from ganeti.placement import microversion, model, params, store
from ganeti.placement.microversion import Version

PREFIX = "/placement"

_JSON_INVALID = "JSON does not validate: %s"


def BadBody(reason: str) -> NoReturn:
    raise errors.PlacementError(400, _JSON_INVALID % reason)


def CheckObject(body: Any, allowed: tuple[str, ...],
                required: tuple[str, ...] = ()) -> dict:
    """A JSON object with only ``allowed`` and all ``required`` keys."""
    if not isinstance(body, dict):
        BadBody("%s is not of type 'object'" % _Repr(body))
    extra = [key for key in body if key not in allowed]
    if extra:
        BadBody("Additional properties are not allowed (%s %s unexpected)" %
                (", ".join("'%s'" % key for key in extra),
                 "was" if len(extra) == 1 else "were"))
    for key in required:
        if key not in body:
            BadBody("'%s' is a required property" % key)
    return body


def _Repr(value: Any) -> str:
    return "None" if value is None else repr(value)


def CheckInt(value: Any, minimum: int = 0,
             maximum: int = model.MAX_INT) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        BadBody("%s is not of type 'integer'" % _Repr(value))
    if value < minimum:
        BadBody("%d is less than the minimum of %d" % (value, minimum))
    if value > maximum:
        BadBody("%d is greater than the maximum of %d" % (value, maximum))
    return value


def CheckGeneration(value: Any, nullable: bool = False) -> int | None:
    """A generation in a body: any integer (None too, for a consumer that
    should be new), as Placement's schemas have it. One that nothing has,
    negative ones included, is then stale (409), not malformed (400)."""
    if value is None and nullable:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        BadBody("%s is not of type %s" % (
            _Repr(value), "'integer', 'null'" if nullable else "'integer'"))
    return value


def CheckString(value: Any, max_length: int = 255) -> str:
    if not isinstance(value, str):
        BadBody("%s is not of type 'string'" % _Repr(value))
    if not value:
        BadBody("'' is too short")
    if len(value) > max_length:
        BadBody("%r is too long" % value)
    return value


def CheckUuid(value: Any) -> str:
    if not isinstance(value, str) or not params.IsUuid(value):
        BadBody("%s is not a 'uuid'" % _Repr(value))
    return value


def CheckInventory(data: Any, extra: tuple[str, ...] = ()) -> dict:
    """An inventory record (``total`` required) with valid numbers."""
    data = CheckObject(data, model.INVENTORY_FIELDS + extra, ("total", ))
    CheckInt(data["total"], 1)
    for key in ("reserved", ):
        if key in data:
            CheckInt(data[key], 0)
    for key in ("min_unit", "max_unit", "step_size"):
        if key in data:
            CheckInt(data[key], 1)
    ratio = data.get("allocation_ratio", 1.0)
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or \
            ratio <= 0:
        BadBody("%s is not a positive number" % _Repr(ratio))
    return data


def CheckInventories(body: Any) -> tuple[int, dict[str, dict]]:
    """A provider's generation and all its inventories (the body of PUT
    .../inventories, also one provider's part of a reshape)."""
    body = CheckObject(body, ("resource_provider_generation", "inventories"),
                       ("resource_provider_generation", "inventories"))
    generation = body["resource_provider_generation"]
    CheckGeneration(generation)
    if not isinstance(body["inventories"], dict):
        BadBody("%r is not of type 'object'" % (body["inventories"], ))
    return generation, {rc: CheckInventory(data)
                        for rc, data in body["inventories"].items()}


class Resource(baserlib.AccessControlled):
    """One URI of the Placement API; an instance serves one request."""

    GET_ACCESS = [rapi.RAPI_ACCESS_READ, rapi.RAPI_ACCESS_WRITE]
    PUT_ACCESS = [rapi.RAPI_ACCESS_WRITE]
    POST_ACCESS = [rapi.RAPI_ACCESS_WRITE]
    DELETE_ACCESS = [rapi.RAPI_ACCESS_WRITE]

    # Method -> the microversion it appeared in (default 1.0)
    MIN_VERSIONS: dict[str, Version] = {}

    def __init__(self, items: list[str], query: params.Query, body: Any,
                 version: Version, state_store: store.View):
        self.items = items
        self.query = query
        self.body = body
        self.version = version
        self.store = state_store
        self.status = 200
        self.headers: dict[str, str] = {}

    @classmethod
    def IsAvailable(cls, method: str, version: Version) -> bool:
        return version >= cls.MIN_VERSIONS.get(method,
                                               microversion.MIN_VERSION)

    def AtLeast(self, major: int, minor: int) -> bool:
        return self.version >= (major, minor)

    def Created(self, location: str) -> None:
        """Answer 201 with the new item's location."""
        self.status = 201
        self.headers["Location"] = PREFIX + location

    def NoContent(self) -> None:
        self.status = 204

    def ProviderUri(self, uuid: str, sub: str = "") -> str:
        return "%s/resource_providers/%s%s" % (PREFIX, uuid, sub)


ResourceMap = dict[str, type[Resource]]
Authenticator = Callable[[type, str, Any], None]
