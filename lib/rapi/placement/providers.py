"""Placement resources of resource providers and what hangs off them."""

from ganeti import errors
from ganeti.placement import model, params, search
from ganeti.rapi.placement import base


def FormatProvider(res: base.Resource, provider: model.Provider) -> dict:
    """A provider as Placement shows it at the request's version."""
    links = [("self", ""), ("inventories", "/inventories"),
             ("usages", "/usages")]
    for rel, since in (("aggregates", (1, 1)), ("traits", (1, 6)),
                       ("allocations", (1, 11))):
        if res.version >= since:
            links.append((rel, "/" + rel))
    result = {"uuid": provider.uuid, "name": provider.name,
              "generation": provider.generation,
              "links": [{"rel": rel, "href": res.ProviderUri(provider.uuid,
                                                             sub)}
                        for rel, sub in links]}
    if res.AtLeast(1, 14):
        result["parent_provider_uuid"] = provider.parent
        result["root_provider_uuid"] = provider.root
    return result


def _ProviderBody(res: base.Resource, require_name: bool
                  ) -> tuple[str, str | None, str | None, bool]:
    """``(name, uuid, parent, parent given)`` of a POST or PUT body."""
    allowed: tuple[str, ...] = (("name", "uuid") if require_name
                                else ("name", ))
    if res.AtLeast(1, 14):
        allowed += ("parent_provider_uuid", )
    body = base.CheckObject(res.body, allowed, ("name", ))
    name = base.CheckString(body["name"], 200)
    uuid = base.CheckUuid(body["uuid"]) if "uuid" in body else None
    parent = body.get("parent_provider_uuid")
    if parent is not None:
        parent = base.CheckUuid(parent)
    return name, uuid, parent, "parent_provider_uuid" in body


class ResourceProviders(base.Resource):
    """/resource_providers"""

    def GET(self) -> dict:
        with self.store.Reading() as state:
            flt = params.ParseProviderFilter(self.query, self.version, state)
            return {"resource_providers": [
                FormatProvider(self, p)
                for p in search.FilterProviders(state, flt)]}

    def POST(self) -> dict | None:
        name, uuid, parent, _ = _ProviderBody(self, True)
        with self.store.Changing() as state:
            provider = state.CreateProvider(name, uuid, parent)
            if self.AtLeast(1, 20):
                return FormatProvider(self, provider)
        self.Created("/resource_providers/%s" % provider.uuid)
        return None


class ResourceProvider(base.Resource):
    """/resource_providers/{uuid}"""

    def GET(self) -> dict:
        with self.store.Reading() as state:
            return FormatProvider(self, state.GetProvider(self.items[0]))

    def PUT(self) -> dict:
        name, _, parent, has_parent = _ProviderBody(self, False)
        with self.store.Changing() as state:
            old = state.GetProvider(self.items[0])
            provider = state.UpdateProvider(
                old.uuid, name, parent if has_parent else old.parent,
                self.AtLeast(1, 37))
            return FormatProvider(self, provider)

    def DELETE(self) -> None:
        with self.store.Changing() as state:
            state.DeleteProvider(self.items[0])
        self.NoContent()


def _InventoryBody(provider: model.Provider, rclass: str) -> dict:
    return dict(provider.inventories[rclass],
                resource_provider_generation=provider.generation)


class Inventories(base.Resource):
    """/resource_providers/{uuid}/inventories"""

    MIN_VERSIONS = {"DELETE": (1, 5)}

    @staticmethod
    def _Answer(provider: model.Provider) -> dict:
        return {"inventories": provider.inventories,
                "resource_provider_generation": provider.generation}

    def GET(self) -> dict:
        with self.store.Reading() as state:
            return self._Answer(state.GetProvider(self.items[0]))

    def PUT(self) -> dict:
        generation, inventories = base.CheckInventories(self.body)
        with self.store.Changing() as state:
            provider = state.SetInventories(
                self.items[0], generation, inventories, self.AtLeast(1, 26))
            return self._Answer(provider)

    def POST(self) -> dict:
        body = base.CheckInventory(self.body, ("resource_class",
                                               "resource_provider_generation"))
        if "resource_class" not in body:
            base.BadBody("'resource_class' is a required property")
        # The generation may be given but is not checked, as in Placement
        if "resource_provider_generation" in body:
            base.CheckGeneration(body["resource_provider_generation"])
        rclass = body["resource_class"]
        data = {k: v for k, v in body.items() if k in model.INVENTORY_FIELDS}
        with self.store.Changing() as state:
            provider = state.SetInventory(
                self.items[0], rclass, None, data, self.AtLeast(1, 26),
                must_exist=False)
            self.Created("/resource_providers/%s/inventories/%s" %
                         (provider.uuid, rclass))
            return _InventoryBody(provider, rclass)

    def DELETE(self) -> None:
        with self.store.Changing() as state:
            state.DeleteInventory(self.items[0], None)
        self.NoContent()


class Inventory(base.Resource):
    """/resource_providers/{uuid}/inventories/{rc}"""

    def GET(self) -> dict:
        uuid, rclass = self.items
        with self.store.Reading() as state:
            provider = state.GetProvider(uuid)
            if rclass not in provider.inventories:
                raise errors.PlacementError(
                    404, "No inventory of class %s for %s" % (rclass, uuid))
            return _InventoryBody(provider, rclass)

    def PUT(self) -> dict:
        uuid, rclass = self.items
        body = base.CheckInventory(self.body,
                                   ("resource_provider_generation", ))
        if "resource_provider_generation" not in body:
            base.BadBody("'resource_provider_generation' is a required"
                         " property")
        base.CheckGeneration(body["resource_provider_generation"])
        data = {k: v for k, v in body.items() if k in model.INVENTORY_FIELDS}
        with self.store.Changing() as state:
            provider = state.SetInventory(
                uuid, rclass, body["resource_provider_generation"], data,
                self.AtLeast(1, 26), must_exist=True)
            return _InventoryBody(provider, rclass)

    def DELETE(self) -> None:
        with self.store.Changing() as state:
            state.DeleteInventory(*self.items)
        self.NoContent()


class ProviderTraits(base.Resource):
    """/resource_providers/{uuid}/traits"""

    MIN_VERSIONS = {"GET": (1, 6), "PUT": (1, 6), "DELETE": (1, 6)}

    @staticmethod
    def _Answer(provider: model.Provider) -> dict:
        return {"traits": sorted(provider.traits),
                "resource_provider_generation": provider.generation}

    def GET(self) -> dict:
        with self.store.Reading() as state:
            return self._Answer(state.GetProvider(self.items[0]))

    def PUT(self) -> dict:
        body = base.CheckObject(self.body, ("traits",
                                            "resource_provider_generation"),
                                ("traits", "resource_provider_generation"))
        traits = body["traits"]
        if not isinstance(traits, list) or \
                not all(isinstance(t, str) for t in traits):
            base.BadBody("%r is not of type 'array' of strings" % (traits, ))
        base.CheckGeneration(body["resource_provider_generation"])
        with self.store.Changing() as state:
            return self._Answer(state.SetProviderTraits(
                self.items[0], body["resource_provider_generation"], traits))

    def DELETE(self) -> None:
        with self.store.Changing() as state:
            provider = state.GetProvider(self.items[0])
            state.SetProviderTraits(provider.uuid, provider.generation, ())
        self.NoContent()


class ProviderAggregates(base.Resource):
    """/resource_providers/{uuid}/aggregates: a bare list of UUIDs, or from
    1.19 an object with the provider's generation"""

    MIN_VERSIONS = {"GET": (1, 1), "PUT": (1, 1)}

    def _Answer(self, provider: model.Provider) -> dict:
        result: dict = {"aggregates": sorted(provider.aggregates)}
        if self.AtLeast(1, 19):
            result["resource_provider_generation"] = provider.generation
        return result

    def GET(self) -> dict:
        with self.store.Reading() as state:
            return self._Answer(state.GetProvider(self.items[0]))

    def PUT(self) -> dict:
        generation = None
        if self.AtLeast(1, 19):
            body = base.CheckObject(self.body,
                                    ("aggregates",
                                     "resource_provider_generation"),
                                    ("aggregates",
                                     "resource_provider_generation"))
            aggregates, generation = (body["aggregates"],
                                      base.CheckGeneration(
                                          body["resource_provider_generation"]))
        else:
            aggregates = self.body
        if not isinstance(aggregates, list):
            base.BadBody("%r is not of type 'array'" % (aggregates, ))
        for agg in aggregates:
            base.CheckUuid(agg)
        if len(set(aggregates)) != len(aggregates):
            base.BadBody("%r has non-unique elements" % (aggregates, ))
        with self.store.Changing() as state:
            return self._Answer(state.SetAggregates(
                self.items[0], generation, aggregates, self.AtLeast(1, 19)))


class ProviderUsages(base.Resource):
    """/resource_providers/{uuid}/usages"""

    def GET(self) -> dict:
        with self.store.Reading() as state:
            provider = state.GetProvider(self.items[0])
            used = state.Usages().get(provider.uuid, {})
            return {"usages": {rc: used.get(rc, 0)
                               for rc in provider.inventories},
                    "resource_provider_generation": provider.generation}


class ProviderAllocations(base.Resource):
    """/resource_providers/{uuid}/allocations"""

    MIN_VERSIONS = {"GET": (1, 11)}

    def GET(self) -> dict:
        with self.store.Reading() as state:
            provider = state.GetProvider(self.items[0])
            return {"allocations": {
                consumer.uuid: {"resources":
                                consumer.allocations[provider.uuid]}
                for consumer in state.consumers.values()
                if provider.uuid in consumer.allocations},
                "resource_provider_generation": provider.generation}
