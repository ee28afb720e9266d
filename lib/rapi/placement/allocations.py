"""Placement resources of consumers: allocations, usages and allocation
candidates."""

from typing import Any

from ganeti import errors
from ganeti.placement import model, params, search
from ganeti.rapi.placement import base


def _CheckResources(value: Any) -> dict[str, int]:
    if not isinstance(value, dict) or not value:
        base.BadBody("%r is not a non-empty 'object'" % (value, ))
    return {rc: base.CheckInt(n, 1) for rc, n in value.items()}


def ParseConsumerRequest(res: base.Resource, body: Any) -> dict:
    """One consumer's allocations in the body form of the version, as
    ``{"allocations": {rp: {rc: n}}, "project_id", "user_id",
    "consumer_generation", "consumer_type"}``."""
    allowed = ["allocations"]
    required = ["allocations"]
    for key, since in (("project_id", (1, 8)), ("user_id", (1, 8)),
                       ("consumer_generation", (1, 28)),
                       ("consumer_type", (1, 38))):
        if res.version >= since:
            allowed.append(key)
            required.append(key)
    body = base.CheckObject(body, tuple(allowed), tuple(required))
    allocations: dict[str, dict[str, int]] = {}
    if res.AtLeast(1, 12):
        value = body["allocations"]
        if not isinstance(value, dict) or \
                (not value and not res.AtLeast(1, 28)):
            base.BadBody("%r is not a non-empty 'object'" % (value, ))
        for rp_uuid, item in value.items():
            base.CheckUuid(rp_uuid)
            item = base.CheckObject(item, ("resources", "generation"),
                                    ("resources", ))
            if "generation" in item:
                # Accepted and ignored, as in Placement
                base.CheckGeneration(item["generation"])
            allocations[rp_uuid] = _CheckResources(item["resources"])
    else:
        value = body["allocations"]
        if not isinstance(value, list) or not value:
            base.BadBody("%r is not a non-empty 'array'" % (value, ))
        for item in value:
            item = base.CheckObject(item, ("resource_provider",
                                           "resources"),
                                    ("resource_provider", "resources"))
            provider = base.CheckObject(item["resource_provider"],
                                        ("uuid", ), ("uuid", ))
            rp_uuid = base.CheckUuid(provider["uuid"])
            allocations[rp_uuid] = _CheckResources(item["resources"])
    for key in ("project_id", "user_id", "consumer_type"):
        if key in body:
            base.CheckString(body[key])
    if "consumer_generation" in body:
        base.CheckGeneration(body["consumer_generation"], nullable=True)
    return dict(body, allocations=allocations)


class ConsumerAllocations(base.Resource):
    """/allocations/{consumer}"""

    def GET(self) -> dict:
        with self.store.Reading() as state:
            consumer = state.consumers.get(self.items[0])
            if consumer is None:
                return {"allocations": {}}
            result: dict = {"allocations": {
                rp: {"generation": state.providers[rp].generation,
                     "resources": resources}
                for rp, resources in consumer.allocations.items()}}
            if self.AtLeast(1, 12):
                result["project_id"] = consumer.project_id
                result["user_id"] = consumer.user_id
            if self.AtLeast(1, 28):
                result["consumer_generation"] = consumer.generation
            if self.AtLeast(1, 38):
                result["consumer_type"] = consumer.consumer_type
            return result

    def PUT(self) -> None:
        base.CheckUuid(self.items[0])
        request = ParseConsumerRequest(self, self.body)
        with self.store.Changing() as state:
            state.SetAllocations({self.items[0]: request},
                                 self.AtLeast(1, 28))
        self.NoContent()

    def DELETE(self) -> None:
        with self.store.Changing() as state:
            state.DeleteAllocations(self.items[0])
        self.NoContent()


class Allocations(base.Resource):
    """/allocations: several consumers' allocations at once (1.13)"""

    MIN_VERSIONS = {"POST": (1, 13)}

    def POST(self) -> None:
        requests = ParseConsumerRequests(self, self.body)
        with self.store.Changing() as state:
            state.SetAllocations(requests, self.AtLeast(1, 28))
        self.NoContent()


def ParseConsumerRequests(res: base.Resource, body: Any) -> dict[str, dict]:
    """Several consumers' allocations (``POST /allocations``'s body), as
    consumer -> ``ParseConsumerRequest``'s answer."""
    if not isinstance(body, dict) or not body:
        base.BadBody("%r is not a non-empty 'object'" % (body, ))
    return {base.CheckUuid(consumer_uuid): ParseConsumerRequest(res, item)
            for consumer_uuid, item in body.items()}


class Reshaper(base.Resource):
    """/reshaper (1.30): inventories of providers and allocations of
    consumers replaced together, e.g. to move inventory in use from a
    provider to a new child."""

    MIN_VERSIONS = {"POST": (1, 30)}

    def POST(self) -> None:
        body = base.CheckObject(self.body, ("inventories", "allocations"),
                                ("inventories", "allocations"))
        value = body["inventories"]
        if not isinstance(value, dict):
            base.BadBody("%r is not of type 'object'" % (value, ))
        if not value:
            base.BadBody("{} does not have enough properties")
        inventories = {base.CheckUuid(rp_uuid): base.CheckInventories(item)
                       for rp_uuid, item in value.items()}
        requests = ParseConsumerRequests(self, body["allocations"])
        with self.store.Changing() as state:
            state.Reshape(inventories, requests, self.AtLeast(1, 26))
        self.NoContent()


class Usages(base.Resource):
    """/usages?project_id=...[&user_id=...][&consumer_type=...] (1.9)"""

    MIN_VERSIONS = {"GET": (1, 9)}

    def GET(self) -> dict:
        allowed = {"project_id", "user_id"}
        if self.AtLeast(1, 38):
            allowed.add("consumer_type")
        params.CheckKeys(self.query, allowed)
        project = params.GetLast(self.query, "project_id")
        if project is None:
            raise errors.PlacementError(
                400, "Invalid query string parameters: 'project_id' is a"
                " required property")
        user = params.GetLast(self.query, "user_id")
        ctype = params.GetLast(self.query, "consumer_type")
        with self.store.Reading() as state:
            consumers = [c for c in state.consumers.values()
                         if c.project_id == project and
                         user in (None, c.user_id)]
        if ctype is None:
            return {"usages": _Sum(consumers)}
        types = sorted({c.consumer_type for c in consumers})
        if ctype not in ("all", "unknown"):
            types = [t for t in types if t == ctype]
        return {"usages": {t: dict(_Sum([c for c in consumers
                                         if c.consumer_type == t]),
                                   consumer_count=len(
                                       [c for c in consumers
                                        if c.consumer_type == t]))
                           for t in types}}


def _Sum(consumers: list[model.Consumer]) -> dict[str, int]:
    total: dict[str, int] = {}
    for consumer in consumers:
        for resources in consumer.allocations.values():
            for rclass, amount in resources.items():
                total[rclass] = total.get(rclass, 0) + amount
    return total


class AllocationCandidates(base.Resource):
    """/allocation_candidates (1.10)"""

    MIN_VERSIONS = {"GET": (1, 10)}

    def GET(self) -> dict:
        with self.store.Reading() as state:
            request = params.ParseCandidateRequest(self.query, self.version,
                                                   state)
            return search.FindCandidates(state, request, self.version)
