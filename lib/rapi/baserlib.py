"""Base classes of the remote API resources.

Each URI is one small class (see rlib2). A class handles an HTTP method
either with a method of that name (``GET``, ``PUT``, ...) or, for
resources that submit a job, declaratively::

  class R_2_groups_name_rename(OpcodeResource):
      URI_PARAMS = ("group_name", )        # URI items -> opcode params
      PUT_OPCODE = opcodes.OpGroupRename  # the body fills the opcode
      PUT_QUERY = {"dry-run": "dry_run"}  # query arguments -> params

The generated handler validates the body against the opcode's declared
parameters (``OP_PARAMS``), submits the job and answers its id; the API
description (openapi) is derived from the same declarations. The optional
per-method declarations are:

* ``<M>_OPCODE``: the opcode class the request becomes;
* ``<M>_RENAME``: body keys accepted under another name (old -> new);
* ``<M>_FORBIDDEN``: opcode parameters that may not be set (403);
* ``<M>_QUERY``: query arguments (see QUERY_ARGS) -> opcode parameters;
* ``<M>_STATIC``: fixed opcode parameters;
* ``<M>_BODY``: False if the body does not supply parameters;
* ``<M>_REQ_VERSION``: the ``__version__`` the body must carry;
* ``Get<Method>OpInput()``: computes ``(body, static)`` itself;
* ``<M>_ACCESS``: user options allowed to use the method (see rapi);
* ``<M>_ARGS``, ``<M>_BODY_SCHEMA``, ``<M>_RESULT``: documentation of
  explicit handlers (query arguments, body and result schemas).
"""

import re
import time
from typing import Any, Callable, Iterable

from ganeti import constants, errors, luxi, opcodes, rapi
from ganeti import http as ghttp

HTTP_METHODS = (ghttp.HTTP_GET, ghttp.HTTP_PUT, ghttp.HTTP_POST,
                ghttp.HTTP_DELETE)

# Body key carrying the version of a request's data format
REQ_DATA_VERSION = "__version__"

_DEFAULT = object()

# Query arguments read by the resources: name -> (JSON type, description).
# Booleans are sent as 0 or 1.
QUERY_ARGS = {
    "bulk": ("boolean", "Return full details instead of names and URIs"),
    "dry-run": ("boolean", "Only check the request, don't execute it"),
    "force": ("boolean", "Force the operation"),
    "reason": ("string", "Reason for the change, recorded in the job's"
               " reason trail"),
    "tag": ("array", "A tag; repeat the argument for several tags"),
    "fields": ("string", "Comma-separated list of field names"),
    "auto-promote": ("boolean", "Promote other nodes to master candidate"
                     " if the change leaves too few"),
    "no_remember": ("boolean", "Leave the instance's configured state"
                    " (admin state) unchanged"),
    "ignore_secondaries": ("boolean", "Go on even if the secondary nodes'"
                           " disks fail"),
    "type": ("string", "Reboot type: soft, hard or full"),
    "static": ("boolean", "Only the configuration, no data from the nodes"),
    "ignore_size": ("boolean", "Ignore the recorded sizes of the disks"),
    "mode": ("string", "Mode of the operation (export: local or remote;"
             " legacy node migration: live or non-live)"),
    "live": ("boolean", "Legacy node migration: live (1) or non-live (0)"),
    "os": ("string", "Legacy reinstallation: the new operating system"),
    "nostartup": ("boolean", "Legacy reinstallation: don't start the"
                  " instance afterwards"),
    "remote_node": ("string", "Legacy replace-disks: the new secondary"
                    " node"),
    "iallocator": ("string", "Legacy replace-disks: the allocator choosing"
                   " the new secondary node"),
    "disks": ("string", "Legacy replace-disks: comma-separated disk"
              " indices"),
    "storage_type": ("string", "Storage type (file, sharedfile, lvm-vg,"
                     " ...)"),
    "output_fields": ("string", "Comma-separated list of storage unit"
                      " fields (name, size, used, free, allocatable, ...)"),
    "name": ("string", "Name of the storage unit"),
    "allocatable": ("boolean", "New value of the storage unit's"
                    " allocatable flag (0 or 1)"),
}
# Values of string arguments that are not given
QUERY_ARG_DEFAULTS = {"type": constants.INSTANCE_REBOOT_HARD}


# Path templates ---------------------------------------------------------
# Paths are declared as templates (``/2/nodes/{node_name}``): the server
# matches requests with them (connector), the API description lists them
# (openapi).

_NAME_PATTERN = r"[\w\._-]+"

# Template parameter -> pattern its value must match
PARAM_PATTERNS = {
    "node_name": _NAME_PATTERN,
    "group_name": _NAME_PATTERN,
    "network_name": _NAME_PATTERN,
    "instance_name": _NAME_PATTERN,
    "filter_uuid": _NAME_PATTERN,
    "incident_id": _NAME_PATTERN,
    "job_id": constants.JOB_ID_TEMPLATE,
    "disk_index": r"\d+",
    "resource": "|".join(re.escape(name)
                         for name in sorted(constants.QR_VIA_RAPI)),
}

TEMPLATE_PARAM_RE = re.compile(r"\{(\w+)\}")


def TemplateParams(template: str) -> list[str]:
    """The parameter names of a path template, in order."""
    return TEMPLATE_PARAM_RE.findall(template)


class HttpBadGateway(ghttp.HttpException):
    """502: the master daemon could not be reached or misbehaved."""
    code = 502


class HttpGatewayTimeout(ghttp.HttpException):
    """504: the master daemon did not answer in time."""
    code = 504


def CheckType(value: Any, exptype: type | tuple, descr: str) -> Any:
    """Return ``value`` if it has type ``exptype``, else answer 400."""
    if not isinstance(value, exptype) or (isinstance(value, bool) and
                                          exptype is int):
        names = (exptype.__name__ if isinstance(exptype, type)
                 else "' or '".join(t.__name__ for t in exptype))
        raise ghttp.HttpBadRequest("%s: Type is '%s', but '%s' is expected" %
                                   (descr, type(value).__name__, names))
    return value


def CheckParameter(data: dict, name: str, default: Any = _DEFAULT,
                   exptype: Any = _DEFAULT) -> Any:
    """A body parameter, its default if missing (400 if it has none)."""
    try:
        value = data[name]
    except KeyError:
        if default is not _DEFAULT:
            return default
        raise ghttp.HttpBadRequest("Required parameter '%s' is missing" %
                                   name) from None
    if exptype is _DEFAULT:
        return value
    return CheckType(value, exptype, "'%s' parameter" % name)


def MapFields(names: list[str], data: list) -> dict:
    """A row of field values as a dict keyed by field name."""
    if len(names) != len(data):
        raise AttributeError("Names and data must have the same length")
    return dict(zip(names, data))


def MapBulkFields(itemslist: Iterable[list], fields: list[str]) -> list[dict]:
    """Rows of field values as dicts (rows of vanished items dropped)."""
    return [MapFields(fields, item) for item in itemslist if item is not None]


def BuildUriList(ids: Iterable, uri_format: str,
                 uri_fields: tuple[str, str] = ("name", "uri")) -> list[dict]:
    """``[{"name": id, "uri": uri_format % id}, ...]``, sorted by id."""
    field_id, field_uri = uri_fields
    return [{field_id: item_id, field_uri: uri_format % item_id}
            for item_id in sorted(ids)]


def FillOpcode(opcls: type, body: Any, static: dict | None,
               rename: dict[str, str] | None = None) -> opcodes.OpCode:
    """Build and validate an opcode from a request body.

    ``static`` parameters come from the URI and query string and may not
    be given in the body; ``rename`` maps legacy body keys to parameters.
    Bad input answers 400 naming the problem.
    """
    if body is None:
        params = {}
    else:
        params = dict(CheckType(body, dict, "Body contents"))
    for old, new in (rename or {}).items():
        if old in params:
            if new in params:
                raise ghttp.HttpBadRequest(
                    "Parameter '%s' was renamed to '%s', but both are"
                    " specified" % (old, new))
            params[new] = params.pop(old)
    if static:
        overwritten = sorted(set(params) & set(static))
        if overwritten:
            raise ghttp.HttpBadRequest("Can't overwrite static parameters %s"
                                       % ", ".join(overwritten))
        params.update(static)
    try:
        op = opcls(**params)
        op.Validate(False)
    except (errors.OpPrereqError, TypeError) as err:
        message = err.args[0] if isinstance(err, errors.OpPrereqError) \
            else str(err)
        raise ghttp.HttpBadRequest("Invalid body parameters: %s" %
                                   message) from err
    return op


def QueryFilterForNames(names: list[str], namefield: str = "name") -> list:
    """The query filter selecting items by name (what ``gnt-* list`` sends)."""
    return ["|"] + [["=", namefield, name] for name in names]


class AccessControlled:
    """The methods a resource class serves and the user options each
    needs (``<METHOD>_ACCESS``, empty: anybody), as the RAPI server's
    authentication asks them of Ganeti's and of Placement's resources."""

    GET_ACCESS: list[str] = []
    PUT_ACCESS = [rapi.RAPI_ACCESS_WRITE]
    POST_ACCESS = [rapi.RAPI_ACCESS_WRITE]
    DELETE_ACCESS = [rapi.RAPI_ACCESS_WRITE]

    @classmethod
    def GetMethods(cls) -> list[str]:
        """The HTTP methods this resource handles."""
        return [method for method in HTTP_METHODS
                if callable(getattr(cls, method, None))]

    @classmethod
    def GetAccess(cls, method: str) -> list[str]:
        """User options allowed to use ``method`` (empty: anybody)."""
        return list(getattr(cls, "%s_ACCESS" % method))


class ResourceBase(AccessControlled):
    """A resource: one URI; an instance serves one request.

    ``items`` are the URI's variable parts, ``queryargs`` the parsed query
    string (every value a list) and ``body`` the decoded JSON body (None
    without one). ``client_fn`` returns the LUXI client of the request.
    """

    # Optional features of the API this resource provides (/2/features)
    FEATURES: tuple[str, ...] = ()

    def __init__(self, items: list[str], queryargs: dict[str, list[str]],
                 body: Any, client_fn: Callable[[], luxi.Client]):
        self.items = items
        self.queryargs = queryargs
        self._body = body
        self._client_fn = client_fn

    @property
    def request_body(self) -> Any:
        return self._body

    def GetClient(self) -> luxi.Client:
        return self._client_fn()

    def SubmitJob(self, ops: list[opcodes.OpCode]) -> int:
        return self.GetClient().SubmitJob(ops)

    def getBodyParameter(self, name: str, *args: Any) -> Any:
        """A body parameter; with a second argument, that is its default."""
        body = CheckType(self.request_body, dict, "Body contents")
        if args:
            return CheckParameter(body, name, default=args[0])
        return CheckParameter(body, name)

    def _checkIntVariable(self, name: str, default: int = 0) -> int:
        values = self.queryargs.get(name)
        value = values[0] if values else default
        try:
            return int(value)
        except (ValueError, TypeError):
            raise ghttp.HttpBadRequest("Invalid value for the '%s'"
                                       " parameter" % name) from None

    def _checkStringVariable(self, name: str,
                             default: str | None = None) -> str | None:
        value = self.queryargs.get(name, [default])
        return value[0] if value else default

    def useBulk(self) -> bool:
        return bool(self._checkIntVariable("bulk"))

    def useForce(self) -> bool:
        return bool(self._checkIntVariable("force"))

    def dryRun(self) -> bool:
        return bool(self._checkIntVariable("dry-run"))

    def useLocking(self) -> bool:
        """Always False: ``lock=1`` is refused (400), as Ganeti 3's luxid
        answers no queries with locks."""
        if self._checkIntVariable("lock"):
            raise ghttp.HttpBadRequest("Sync queries are not allowed")
        return False

    def GetQueryArg(self, name: str) -> Any:
        """A QUERY_ARGS argument, converted according to its type."""
        kind = QUERY_ARGS[name][0]
        if kind == "boolean":
            return bool(self._checkIntVariable(name))
        if kind == "array":
            return list(self.queryargs.get(name, []))
        return self._checkStringVariable(name,
                                         QUERY_ARG_DEFAULTS.get(name))

    # Queries through LUXI ---------------------------------------------------

    def QueryItems(self, what: str, fields: list[str],
                   names: list[str] | None = None) -> list[list]:
        """Rows of plain field values (None where a value is unavailable).

        With ``names``, only those items, in that order; an unknown name
        answers 404.
        """
        self.useLocking()
        qfilter = None if names is None else QueryFilterForNames(names)
        response = self.GetClient().Query(what, fields, qfilter)
        return [[value if status == constants.RS_NORMAL else None
                 for status, value in row]
                for row in response["data"]]

    def GetItem(self, what: str, fields: list[str], name: str) -> dict:
        """One item's fields as a dict (404 if there is no such item)."""
        rows = self.QueryItems(what, fields, [name])
        if not rows:
            raise ghttp.HttpNotFound()
        return MapFields(fields, rows[0])

    def ListItems(self, what: str, fields: list[str], uri_format: str,
                  uri_fields: tuple[str, str] = ("name", "uri")
                  ) -> list[dict]:
        """All items: names and URIs, or with ``bulk=1`` all ``fields``."""
        if self.useBulk():
            return MapBulkFields(self.QueryItems(what, fields), fields)
        names = [row[0] for row in self.QueryItems(what, ["name"])]
        return BuildUriList(names, uri_format, uri_fields=uri_fields)


def _ApplyAliases(result: Any, aliases: dict[str, str]) -> Any:
    """Add ``alias: value`` next to each aliased key of a dict (or dicts)."""
    for item in result if isinstance(result, list) else [result]:
        if isinstance(item, dict):
            for key, alias in aliases.items():
                if key in item:
                    item[alias] = item[key]
    return result


def _MakeAliasedGet(get_fn: Callable) -> Callable:
    def GET(self):  # pylint: disable=invalid-name
        return _ApplyAliases(get_fn(self), self.GET_ALIASES)
    GET.__doc__ = get_fn.__doc__
    return GET


def _MakeOpcodeHandler(method: str) -> Callable:
    def handler(self) -> int:
        return self.SubmitJob([self.BuildOpcode(method)])
    handler.__name__ = method
    # Marks the generated handlers (IsOpcodeHandler)
    handler.opcode_method = method  # type: ignore[attr-defined]
    return handler


def IsOpcodeHandler(resource: type, method: str) -> bool:
    """Whether ``method`` of ``resource`` is generated from its opcode."""
    return getattr(getattr(resource, method, None), "opcode_method",
                   None) == method


class OpcodeResource(ResourceBase):
    """A resource whose methods may be declared as opcode submissions.

    ``URI_PARAMS`` name the opcode parameters the URI's items fill in;
    ``GET_ALIASES`` (old -> alias) duplicates keys of a GET result under
    another name.
    """

    URI_PARAMS: tuple[str, ...] = ()
    GET_ALIASES: dict[str, str] = {}

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        for method in HTTP_METHODS:
            if getattr(cls, "%s_OPCODE" % method, None) is None:
                continue
            if callable(getattr(cls, method, None)) and \
                    not IsOpcodeHandler(cls, method):
                raise errors.ProgrammerError(
                    "%s declares both %s and %s_OPCODE" %
                    (cls.__name__, method, method))
            setattr(cls, method, _MakeOpcodeHandler(method))
        get_fn = vars(cls).get(ghttp.HTTP_GET)
        if cls.GET_ALIASES and get_fn is not None and \
                not IsOpcodeHandler(cls, ghttp.HTTP_GET):
            setattr(cls, ghttp.HTTP_GET, _MakeAliasedGet(get_fn))

    def _GetRapiOpName(self) -> str:
        name = self.__class__.__name__
        return name[len("R_2_"):] if name.startswith("R_2_") else name

    def _GetCommonStatic(self) -> dict:
        """The reason trail: the user's ``reason`` and this resource."""
        trail = []
        user_reason = self._checkStringVariable("reason")
        if user_reason:
            trail.append((constants.OPCODE_REASON_SRC_USER, user_reason,
                          time.time_ns()))
        trail.append(("%s:%s" % (constants.OPCODE_REASON_SRC_RLIB2,
                                 self._GetRapiOpName()), "", time.time_ns()))
        return {"reason": trail}

    def _GetDepends(self) -> dict:
        if isinstance(self.request_body, dict):
            depends = self.request_body.get("depends")
            if depends:
                return {"depends": depends}
        return {}

    @classmethod
    def GetStaticParams(cls, method: str) -> list[str]:
        """Opcode parameters of ``method`` not taken from the body."""
        return (list(cls.URI_PARAMS) +
                list(getattr(cls, "%s_QUERY" % method, {}).values()) +
                list(getattr(cls, "%s_STATIC" % method, {})) + ["reason"])

    def _CheckRequestVersion(self, method: str, body: Any) -> Any:
        version = getattr(self, "%s_REQ_VERSION" % method, None)
        if version is None:
            return body
        body = CheckType(body, dict, "Body contents")
        given = body.get(REQ_DATA_VERSION, 0)
        if given == 0:
            raise ghttp.HttpBadRequest("Request data version 0 is no longer"
                                       " supported")
        if given != version:
            raise ghttp.HttpBadRequest("Unsupported request data version %s"
                                       % (given, ))
        return {key: value for key, value in body.items()
                if key != REQ_DATA_VERSION}

    def _GetOpInput(self, method: str) -> tuple[Any, dict]:
        """The declared ``(body, static parameters)`` of ``method``."""
        body = self.request_body if getattr(self, "%s_BODY" % method, True) \
            else {}
        body = self._CheckRequestVersion(method, body)
        static = dict(zip(self.URI_PARAMS, self.items))
        for arg, param in getattr(self, "%s_QUERY" % method, {}).items():
            value = self.GetQueryArg(arg)
            # A string argument not given leaves the opcode's default
            if value is not None:
                static[param] = value
        static.update(getattr(self, "%s_STATIC" % method, {}))
        return body, static

    def BuildOpcode(self, method: str) -> opcodes.OpCode:
        """The validated opcode a request of ``method`` becomes."""
        custom = getattr(self, "Get%sOpInput" % method.capitalize(), None)
        body, static = custom() if custom else self._GetOpInput(method)
        rename = getattr(self, "%s_RENAME" % method, None)
        if isinstance(body, dict):
            body = {**body, **self._GetDepends()}
            renamed = {(rename or {}).get(key, key) for key in body}
            for param in getattr(self, "%s_FORBIDDEN" % method, ()):
                if param in renamed:
                    raise ghttp.HttpForbidden("The parameter %s cannot be set"
                                              " via RAPI" % param)
        all_static = self._GetCommonStatic()
        all_static.update(static or {})
        return FillOpcode(getattr(self, "%s_OPCODE" % method), body,
                          all_static, rename=rename)
