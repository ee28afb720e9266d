"""Placement resources of the catalog: resource classes and traits."""

import re

from ganeti import errors
from ganeti.placement import params
from ganeti.rapi.placement import base

_CUSTOM_RE = re.compile(r"^CUSTOM_[A-Z0-9_]+$")


def _ClassBody(name: str) -> dict:
    return {"name": name, "links": [
        {"rel": "self", "href": "%s/resource_classes/%s" % (base.PREFIX,
                                                           name)}]}


def _CheckCustomClass(name: str) -> str:
    if not _CUSTOM_RE.match(name):
        base.BadBody("%r does not match '^CUSTOM_[A-Z0-9_]+$'" % name)
    return name


class ResourceClasses(base.Resource):
    """/resource_classes"""

    MIN_VERSIONS = {"GET": (1, 2), "POST": (1, 2)}

    def GET(self) -> dict:
        with self.store.Reading() as state:
            return {"resource_classes": [_ClassBody(name) for name
                                         in state.ResourceClasses()]}

    def POST(self) -> None:
        body = base.CheckObject(self.body, ("name", ), ("name", ))
        name = _CheckCustomClass(base.CheckString(body["name"]))
        with self.store.Changing() as state:
            state.AddCustomClass(name, conflict_if_exists=True)
        self.Created("/resource_classes/%s" % name)


class ResourceClass(base.Resource):
    """/resource_classes/{name}; PUT creates (201) or confirms (204) a
    custom class from 1.7"""

    MIN_VERSIONS = {"GET": (1, 2), "PUT": (1, 7), "DELETE": (1, 2)}

    def GET(self) -> dict:
        name = self.items[0]
        with self.store.Reading() as state:
            if not state.IsResourceClass(name):
                raise errors.PlacementError(
                    404, "No such resource class %s." % name)
        return _ClassBody(name)

    def PUT(self) -> None:
        name = _CheckCustomClass(self.items[0])
        with self.store.Changing() as state:
            new = state.AddCustomClass(name, conflict_if_exists=False)
        if new:
            self.Created("/resource_classes/%s" % name)
        else:
            self.NoContent()

    def DELETE(self) -> None:
        with self.store.Changing() as state:
            state.DeleteCustomClass(self.items[0])
        self.NoContent()


class Traits(base.Resource):
    """/traits, filtered by ``name=startswith:X`` or ``name=in:A,B`` and
    ``associated=true|false``"""

    MIN_VERSIONS = {"GET": (1, 6)}

    def GET(self) -> dict:
        params.CheckKeys(self.query, {"name", "associated"})
        name = params.GetLast(self.query, "name")
        associated = params.GetLast(self.query, "associated")
        if associated not in (None, "true", "false"):
            raise errors.PlacementError(
                400, "Invalid query string parameters: '%s' is not one of"
                " ['true', 'false']" % associated)
        with self.store.Reading() as state:
            traits = state.Traits()
            if name is not None:
                if name.startswith("startswith:"):
                    prefix = name[len("startswith:"):]
                    traits = [t for t in traits if t.startswith(prefix)]
                elif name.startswith("in:"):
                    wanted = set(name[3:].split(","))
                    traits = [t for t in traits if t in wanted]
                else:
                    raise errors.PlacementError(
                        400, "Badly formatted name parameter. Expected name"
                        " query string parameter in form:"
                        " ?name=[in|startswith]:[name1,name2|prefix]. Got:"
                        " \"%s\"" % name)
            if associated is not None:
                used = set().union(*(p.traits for p
                                     in state.providers.values()))
                traits = [t for t in traits
                          if (t in used) == (associated == "true")]
        return {"traits": traits}


class Trait(base.Resource):
    """/traits/{name}"""

    MIN_VERSIONS = {"GET": (1, 6), "PUT": (1, 6), "DELETE": (1, 6)}

    def GET(self) -> None:
        with self.store.Reading() as state:
            if not state.IsTrait(self.items[0]):
                raise errors.PlacementError(
                    404, "No such trait(s): %s" % self.items[0])
        self.NoContent()

    def PUT(self) -> None:
        name = self.items[0]
        if not _CUSTOM_RE.match(name):
            raise errors.PlacementError(
                400, "The trait is invalid. A valid trait must be no longer"
                " than 255 characters, start with the prefix \"CUSTOM_\""
                " and use following characters: \"A\"-\"Z\", \"0\"-\"9\""
                " and \"_\"")
        with self.store.Changing() as state:
            new = state.AddCustomTrait(name)
        if new:
            self.Created("/traits/%s" % name)
        else:
            self.NoContent()

    def DELETE(self) -> None:
        with self.store.Changing() as state:
            state.DeleteCustomTrait(self.items[0])
        self.NoContent()

