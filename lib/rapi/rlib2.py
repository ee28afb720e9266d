"""Remote API version 2 resources: one class per URI (see connector).

Reads go to the master daemon over LUXI and are answered directly;
changes are submitted as jobs (declared with ``<METHOD>_OPCODE``, see
baserlib) and answered with the job id. Paths, arguments, body keys and
answers are Ganeti's, so clients written for Ganeti work unchanged.
"""

import logging
from typing import Any

from ganeti import cli, constants, errors, objects, opcodes, rapi
from ganeti import http as ghttp
from ganeti.rapi import baserlib, openapi
from ganeti.rapi.baserlib import OpcodeResource, ResourceBase

COMMON_FIELDS = ["ctime", "mtime", "uuid", "serial_no", "tags"]

# Fields of the items' GET answers (and of the bulk lists)
N_FIELDS = ["name", "offline", "master_candidate", "drained",
            "dtotal", "dfree", "sptotal", "spfree",
            "mtotal", "mnode", "mfree",
            "pinst_cnt", "sinst_cnt",
            "ctotal", "cnos", "cnodes", "csockets",
            "pip", "sip", "role",
            "pinst_list", "sinst_list",
            "master_capable", "vm_capable",
            "ndparams",
            "group.uuid",
            ] + COMMON_FIELDS

G_FIELDS = ["alloc_policy", "name", "node_cnt", "node_list",
            "ipolicy", "custom_ipolicy", "diskparams", "custom_diskparams",
            "ndparams", "custom_ndparams",
            ] + COMMON_FIELDS

J_FIELDS_BULK = ["id", "ops", "status", "summary", "opstatus",
                 "received_ts", "start_ts", "end_ts"]
J_FIELDS = J_FIELDS_BULK + ["oplog", "opresult"]

FILTER_RULE_FIELDS = ["watermark", "priority", "predicates", "action",
                      "reason_trail", "uuid"]

# Node roles as RAPI names them
_NR_DRAINED = "drained"
_NR_MASTER_CANDIDATE = "master-candidate"
_NR_MASTER = "master"
_NR_OFFLINE = "offline"
_NR_REGULAR = "regular"

_NR_MAP = {
    constants.NR_MASTER: _NR_MASTER,
    constants.NR_MCANDIDATE: _NR_MASTER_CANDIDATE,
    constants.NR_DRAINED: _NR_DRAINED,
    constants.NR_OFFLINE: _NR_OFFLINE,
    constants.NR_REGULAR: _NR_REGULAR,
}

# How long GET /2/jobs/[id]/wait waits for a change of the job
_WFJC_TIMEOUT = 10

_STRING_LIST = {"type": "array", "items": {"type": "string"}}


class R_root(ResourceBase):
    """/ resource."""

    GET_RESULT = {"nullable": True, "description": "Always null"}

    @staticmethod
    def GET() -> None:
        """Supported for legacy reasons."""
        return None


class R_2(R_root):
    """/2 resource."""


class R_version(ResourceBase):
    """/version resource: clients check it to adapt to the server."""

    GET_RESULT = {"type": "integer", "description": "RAPI version (2)"}

    @staticmethod
    def GET() -> int:
        """Returns the remote API version."""
        return constants.RAPI_VERSION


class R_2_info(OpcodeResource):
    """/2/info resource."""

    GET_ALIASES = {
        "volume_group_name": "vg_name",
        "drbd_usermode_helper": "drbd_helper",
    }
    GET_RESULT = {"type": "object",
                  "description": "Cluster information (as gnt-cluster"
                  " info shows it)"}

    def GET(self) -> dict:
        """Returns cluster information."""
        return self.GetClient().QueryClusterInfo()


class R_2_redist_config(OpcodeResource):
    """/2/redistribute-config resource."""

    PUT_OPCODE = opcodes.OpClusterRedistConf


class R_2_maintenance_incident_cancel(OpcodeResource):
    """/2/maintenance/incidents/[incident_id]/cancel resource: cancels a
    repair incident of ganeti-maintd."""

    URI_PARAMS = ("incident_id", )
    PUT_OPCODE = opcodes.OpClusterRepairCancel


class R_2_cluster_modify(OpcodeResource):
    """/2/modify resource."""

    PUT_OPCODE = opcodes.OpClusterSetParams
    PUT_FORBIDDEN = ["compression_tools"]


# Fields of OpOsDiagnose in the bulk answer of /2/os
_OS_BULK_FIELDS = ["name", "valid", "variants", "parameters", "api_versions",
                   "blacklisted", "hidden", "trusted"]


def _FeedbackToLog(msg: tuple) -> None:
    """Log the messages of a job the server waits for itself."""
    _, log_type, log_msg = msg
    logging.info("%s", cli.FormatLogMessage(log_type, log_msg))


class R_2_os(ResourceBase):
    """/2/os resource."""

    GET_ARGS = ("bulk", )
    GET_RESULT = {
        "type": "array",
        "description": "Names (name+variant) of the valid, visible OSes;"
        " with bulk=1 the details of every OS",
        "items": {"oneOf": [
            {"type": "string"},
            {"type": "object", "properties": {
                "name": {"type": "string"},
                "valid": {"type": "boolean"},
                "variants": _STRING_LIST,
                "parameters": {"type": "array", "items": {
                    "type": "object", "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"}}}},
                "api_versions": {"type": "array",
                                 "items": {"type": "integer"}},
                "blacklisted": {"type": "boolean"},
                "hidden": {"type": "boolean"},
                "trusted": {"type": "boolean"},
            }},
        ]},
    }

    def GET(self) -> list:
        """Returns the operating systems (a job asks the nodes).

        The request waits for the job, which runs OpOsDiagnose.
        """
        bulk = self.useBulk()
        fields = _OS_BULK_FIELDS if bulk else ["name", "variants"]
        client = self.GetClient()
        job_id = client.SubmitJob([opcodes.OpOsDiagnose(output_fields=fields,
                                                        names=[])])
        result = cli.PollJob(job_id, client, feedback_fn=_FeedbackToLog)[0]
        if not isinstance(result, list):
            raise baserlib.HttpBadGateway("Can't get OS list")
        if not bulk:
            return [os_name for name, variants in result
                    for os_name
                    in objects.OS.NamesWithVariants(name, variants)]
        oses = baserlib.MapBulkFields(result, _OS_BULK_FIELDS)
        for info in oses:
            info["parameters"] = [{"name": name, "description": doc}
                                  for name, doc in info["parameters"]]
        return oses


# Jobs ------------------------------------------------------------------------

class R_2_jobs(ResourceBase):
    """/2/jobs resource."""

    GET_ARGS = ("bulk", )
    GET_RESULT = openapi.ItemList(constants.QR_JOB, J_FIELDS_BULK,
                                  ("id", "uri"))

    def GET(self) -> list[dict]:
        """Returns the jobs: ids and URIs, or with bulk their details."""
        client = self.GetClient()
        if self.useBulk():
            return baserlib.MapBulkFields(client.QueryJobs(None,
                                                           J_FIELDS_BULK),
                                          J_FIELDS_BULK)
        ids = [row[0] for row in client.QueryJobs(None, ["id"])
               if row is not None]
        return baserlib.BuildUriList(ids, "/2/jobs/%s",
                                     uri_fields=("id", "uri"))


class R_2_jobs_id(ResourceBase):
    """/2/jobs/[job_id] resource."""

    GET_RESULT = openapi.Item(constants.QR_JOB, J_FIELDS)
    DELETE_RESULT = {"type": "array", "items": {},
                     "description": "[success, message]"}

    def GET(self) -> dict:
        """Returns a job's status."""
        result = self.GetClient().QueryJobs([self.items[0]], J_FIELDS)[0]
        if result is None:
            raise ghttp.HttpNotFound()
        return baserlib.MapFields(J_FIELDS, result)

    def DELETE(self) -> list:
        """Cancels a job that has not started yet."""
        return self.GetClient().CancelJob(self.items[0])


class R_2_jobs_id_wait(ResourceBase):
    """/2/jobs/[job_id]/wait resource."""

    # Waiting occupies the server, so only users with write access may
    GET_ACCESS = [rapi.RAPI_ACCESS_WRITE]
    GET_BODY_SCHEMA = {
        "type": "object",
        "required": ["fields"],
        "properties": {
            "fields": {"type": "array", "items": {"type": "string"},
                       "description": "Job fields to watch"},
            "previous_job_info": {"type": "array", "items": {},
                                  "nullable": True,
                                  "description": "Field values known so"
                                  " far"},
            "previous_log_serial": {"type": "integer", "nullable": True,
                                    "description": "Serial number of the"
                                    " last log entry known"},
        },
    }
    GET_RESULT = {
        "type": "object", "nullable": True,
        "description": "null if the job did not change within 10 seconds",
        "properties": {
            "job_info": {"type": "array", "items": {}},
            "log_entries": {"type": "array", "items": {}},
        },
    }

    def GET(self) -> dict | None:
        """Waits (up to 10 seconds) for a job to change."""
        fields = self.getBodyParameter("fields")
        prev_job_info = self.getBodyParameter("previous_job_info", None)
        prev_log_serial = self.getBodyParameter("previous_log_serial", None)
        if not isinstance(fields, list):
            raise ghttp.HttpBadRequest("The 'fields' parameter should be a"
                                       " list")
        if not (prev_job_info is None or isinstance(prev_job_info, list)):
            raise ghttp.HttpBadRequest("The 'previous_job_info' parameter"
                                       " should be a list")
        if not (prev_log_serial is None or
                (isinstance(prev_log_serial, int) and
                 not isinstance(prev_log_serial, bool))):
            raise ghttp.HttpBadRequest("The 'previous_log_serial' parameter"
                                       " should be a number")
        try:
            result = self.GetClient().WaitForJobChangeOnce(
                self.items[0], fields, prev_job_info, prev_log_serial,
                timeout=_WFJC_TIMEOUT)
        except errors.JobLost:
            raise ghttp.HttpNotFound() from None
        if not result:
            raise ghttp.HttpNotFound()
        if result == constants.JOB_NOTCHANGED:
            return None
        job_info, log_entries = result
        if job_info == prev_job_info and not log_entries and \
                not self._IsFinalized():
            # The wait timed out without news
            return None
        return {"job_info": job_info, "log_entries": log_entries}

    def _IsFinalized(self) -> bool:
        rows = self.GetClient().QueryJobs([self.items[0]], ["status"])
        return bool(rows and rows[0] and
                    rows[0][0] in constants.JOBS_FINALIZED)


# Queries ---------------------------------------------------------------------

def _SplitQueryFields(fields: str) -> list[str]:
    return [name.strip() for name in fields.split(",")]


def _GetQueryFields(queryargs: dict[str, list[str]]) -> list[str]:
    try:
        fields = queryargs["fields"]
    except KeyError:
        raise ghttp.HttpBadRequest("Missing 'fields' query argument") \
            from None
    return _SplitQueryFields(fields[0])


_QUERY_RESULT = {
    "type": "object",
    "description": "Field definitions and, per item, [status, value] of"
    " each field",
    "properties": {
        "fields": {"type": "array", "items": {"type": "object"}},
        "data": {"type": "array", "items": {"type": "array"}},
    },
}


class R_2_query(ResourceBase):
    """/2/query/[resource] resource."""

    # Results might contain sensitive information
    GET_ACCESS = [rapi.RAPI_ACCESS_WRITE, rapi.RAPI_ACCESS_READ]
    PUT_ACCESS = GET_ACCESS
    GET_ARGS = ("fields", )
    PUT_ARGS = ("fields", )
    PUT_BODY_SCHEMA = {
        "type": "object",
        "properties": {
            "fields": {"type": "array", "items": {"type": "string"},
                       "description": "Fields to return (else the"
                       " 'fields' query argument)"},
            "qfilter": {"type": "array", "items": {}, "nullable": True,
                        "description": "Query filter (query language in"
                        " its JSON form)"},
            "filter": {"type": "array", "items": {}, "nullable": True,
                       "description": "Legacy name of qfilter"},
        },
    }
    GET_RESULT = _QUERY_RESULT
    PUT_RESULT = _QUERY_RESULT

    def _Query(self, fields: list[str], qfilter: Any) -> dict:
        return self.GetClient().Query(self.items[0], fields, qfilter)

    def GET(self) -> dict:
        """Queries a resource's items (all of them) for some fields."""
        return self._Query(_GetQueryFields(self.queryargs), None)

    def PUT(self) -> dict:
        """Queries a resource's items with a filter."""
        body = baserlib.CheckType(self.request_body, dict, "Body contents")
        try:
            fields = body["fields"]
        except KeyError:
            fields = _GetQueryFields(self.queryargs)
        qfilter = body.get("qfilter")
        if qfilter is None:
            qfilter = body.get("filter")
        return self._Query(fields, qfilter)


class R_2_query_fields(ResourceBase):
    """/2/query/[resource]/fields resource."""

    GET_ARGS = ("fields", )
    GET_RESULT = {
        "type": "object",
        "properties": {"fields": {
            "type": "array", "items": {
                "type": "object",
                "properties": {name: {"type": "string"} for name in
                               ("name", "title", "kind", "doc")}}}},
    }

    def GET(self) -> dict:
        """Describes a resource's fields (all, or those asked for)."""
        raw_fields = self.queryargs.get("fields")
        fields = _SplitQueryFields(raw_fields[0]) if raw_fields else None
        return self.GetClient().QueryFields(self.items[0], fields)


# Tags ------------------------------------------------------------------------

class TagsResource(OpcodeResource):
    """Tags of one object; subclasses set TAG_LEVEL.

    Tags are given as ``tag`` query arguments; the body is not used.
    """

    TAG_LEVEL: str = ""
    PUT_STATIC: dict[str, Any] = {}
    DELETE_STATIC: dict[str, Any] = {}
    PUT_OPCODE = opcodes.OpTagsSet
    PUT_QUERY = {"tag": "tags", "dry-run": "dry_run"}
    PUT_BODY = False
    DELETE_OPCODE = opcodes.OpTagsDel
    DELETE_QUERY = PUT_QUERY
    DELETE_BODY = False
    GET_RESULT = _STRING_LIST

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        cls.PUT_STATIC = cls.DELETE_STATIC = {"kind": cls.TAG_LEVEL}
        if cls.TAG_LEVEL == constants.TAG_CLUSTER:
            cls.PUT_STATIC = cls.DELETE_STATIC = {"kind": cls.TAG_LEVEL,
                                                  "name": None}
        else:
            cls.URI_PARAMS = ("name", )

    def GET(self) -> list[str]:
        """Returns the tags."""
        name = "" if self.TAG_LEVEL == constants.TAG_CLUSTER \
            else self.items[0]
        return list(self.GetClient().QueryTags(self.TAG_LEVEL, name))


class R_2_tags(TagsResource):
    """/2/tags resource: the cluster's tags."""

    TAG_LEVEL = constants.TAG_CLUSTER


class R_2_nodes_name_tags(TagsResource):
    """/2/nodes/[node_name]/tags resource."""

    TAG_LEVEL = constants.TAG_NODE


class R_2_groups_name_tags(TagsResource):
    """/2/groups/[group_name]/tags resource."""

    TAG_LEVEL = constants.TAG_NODEGROUP


# Nodes -----------------------------------------------------------------------

class R_2_nodes(ResourceBase):
    """/2/nodes resource."""

    GET_ARGS = ("bulk", )
    GET_RESULT = openapi.ItemList(constants.QR_NODE, N_FIELDS,
                                  ("id", "uri"))

    def GET(self) -> list[dict]:
        """Returns the nodes: names and URIs, or with bulk their details."""
        return self.ListItems(constants.QR_NODE, N_FIELDS, "/2/nodes/%s",
                              uri_fields=("id", "uri"))


class R_2_nodes_name(OpcodeResource):
    """/2/nodes/[node_name] resource."""

    GET_ALIASES = {"sip": "secondary_ip"}
    GET_RESULT = openapi.Item(constants.QR_NODE, N_FIELDS)

    def GET(self) -> dict:
        """Returns a node's details."""
        return self.GetItem(constants.QR_NODE, N_FIELDS, self.items[0])


class R_2_nodes_name_role(OpcodeResource):
    """/2/nodes/[node_name]/role resource."""

    PUT_OPCODE = opcodes.OpNodeSetParams
    PUT_ARGS = ("force", "auto-promote")
    PUT_BODY_SCHEMA = {"type": "string",
                       "enum": [_NR_REGULAR, _NR_MASTER_CANDIDATE,
                                _NR_DRAINED, _NR_OFFLINE],
                       "description": "The new role"}
    GET_RESULT = {"type": "string", "enum": sorted(_NR_MAP.values())}

    def GET(self) -> str:
        """Returns the node's role."""
        role = self.GetItem(constants.QR_NODE, ["role"],
                            self.items[0])["role"]
        return _NR_MAP[role]

    def GetPutOpInput(self) -> tuple[dict, dict]:
        """The role's flags; the body is the role's name."""
        role = baserlib.CheckType(self.request_body, str, "Body contents")
        candidate = offline = drained = None
        if role == _NR_REGULAR:
            candidate = offline = drained = False
        elif role == _NR_MASTER_CANDIDATE:
            candidate = True
        elif role == _NR_DRAINED:
            drained = True
        elif role == _NR_OFFLINE:
            offline = True
        else:
            raise ghttp.HttpBadRequest("Can't set '%s' role" % role)
        return {}, {
            "node_name": self.items[0],
            "master_candidate": candidate,
            "offline": offline,
            "drained": drained,
            "force": self.useForce(),
            "auto_promote": bool(self._checkIntVariable("auto-promote")),
        }


class R_2_nodes_name_modify(OpcodeResource):
    """/2/nodes/[node_name]/modify resource."""

    URI_PARAMS = ("node_name", )
    POST_OPCODE = opcodes.OpNodeSetParams


class R_2_nodes_name_migrate(OpcodeResource):
    """/2/nodes/[node_name]/migrate resource.

    Requests before Ganeti 2.5 give the mode as query argument (``mode``,
    or ``live`` 0/1) instead of in the body; such a body is ignored.
    """

    FEATURES = (rapi.NODE_MIGRATE_REQV1, )
    URI_PARAMS = ("node_name", )
    POST_OPCODE = opcodes.OpNodeMigrate
    POST_QUERY = {"dry-run": "dry_run"}
    POST_ARGS = ("mode", "live")

    def _GetOpInput(self, method: str) -> tuple[Any, dict]:
        body, static = super()._GetOpInput(method)
        live = "live" in self.queryargs
        if not live and "mode" not in self.queryargs:
            return body, static
        if live and "mode" in self.queryargs:
            raise ghttp.HttpBadRequest("Only one of 'live' and 'mode' should"
                                       " be passed")
        if live:
            mode = (constants.HT_MIGRATION_LIVE
                    if self._checkIntVariable("live", 1)
                    else constants.HT_MIGRATION_NONLIVE)
        else:
            mode = self.GetQueryArg("mode")
        return {"mode": mode}, static


class R_2_nodes_name_evacuate(OpcodeResource):
    """/2/nodes/[node_name]/evacuate resource.

    The job's result lists the follow-up jobs moving the instances
    (NODE_EVAC_RES1; Ganeti 2.4's query arguments are not accepted).
    """

    FEATURES = (rapi.NODE_EVAC_RES1, )
    URI_PARAMS = ("node_name", )
    POST_OPCODE = opcodes.OpNodeEvacuate
    POST_QUERY = {"dry-run": "dry_run"}


class R_2_nodes_name_powercycle(OpcodeResource):
    """/2/nodes/[node_name]/powercycle resource."""

    URI_PARAMS = ("node_name", )
    POST_OPCODE = opcodes.OpNodePowercycle
    POST_QUERY = {"force": "force"}


def _StorageUnitInput(resource: OpcodeResource) -> dict:
    """The node, storage type and unit name of a storage request; the name
    is required (Ganeti's message)."""
    name = resource._checkStringVariable("name")
    if not name:
        raise ghttp.HttpBadRequest("Missing the required 'name' parameter")
    return {"node_name": resource.items[0], "name": name,
            "storage_type": resource._checkStringVariable("storage_type")}


class R_2_nodes_name_storage(OpcodeResource):
    """/2/nodes/[node_name]/storage resource: a query job listing the
    node's storage units. Write access, as in Ganeti: it takes locks."""

    GET_ACCESS = [rapi.RAPI_ACCESS_WRITE]
    GET_OPCODE = opcodes.OpNodeQueryStorage
    GET_ARGS = ("storage_type", "output_fields")

    def GetGetOpInput(self) -> tuple[dict, dict]:
        """The fields (required) and storage type of the query."""
        fields = self._checkStringVariable("output_fields")
        if not fields:
            raise ghttp.HttpBadRequest("Missing the required 'output_fields'"
                                       " parameter")
        return {}, {"nodes": [self.items[0]],
                    "storage_type": self._checkStringVariable("storage_type"),
                    "output_fields": fields.split(",")}


class R_2_nodes_name_storage_modify(OpcodeResource):
    """/2/nodes/[node_name]/storage/modify resource."""

    PUT_OPCODE = opcodes.OpNodeModifyStorage
    PUT_ARGS = ("storage_type", "name", "allocatable")

    def GetPutOpInput(self) -> tuple[dict, dict]:
        """The unit and its changes (``allocatable`` 0 or 1)."""
        changes = {}
        if "allocatable" in self.queryargs:
            changes[constants.SF_ALLOCATABLE] = \
                bool(self._checkIntVariable("allocatable", default=1))
        return {}, dict(_StorageUnitInput(self), changes=changes)


class R_2_nodes_name_storage_repair(OpcodeResource):
    """/2/nodes/[node_name]/storage/repair resource."""

    PUT_OPCODE = opcodes.OpRepairNodeStorage
    PUT_ARGS = ("storage_type", "name")

    def GetPutOpInput(self) -> tuple[dict, dict]:
        """The unit to repair."""
        return {}, _StorageUnitInput(self)


# Node groups -----------------------------------------------------------------

class R_2_groups(OpcodeResource):
    """/2/groups resource."""

    GET_ARGS = ("bulk", )
    GET_RESULT = openapi.ItemList(constants.QR_GROUP, G_FIELDS,
                                  ("name", "uri"))
    POST_OPCODE = opcodes.OpGroupAdd
    POST_RENAME = {"name": "group_name"}
    POST_QUERY = {"dry-run": "dry_run"}

    def GET(self) -> list[dict]:
        """Returns the node groups: names and URIs, or their details."""
        return self.ListItems(constants.QR_GROUP, G_FIELDS, "/2/groups/%s")


class R_2_groups_name(OpcodeResource):
    """/2/groups/[group_name] resource."""

    URI_PARAMS = ("group_name", )
    GET_RESULT = openapi.Item(constants.QR_GROUP, G_FIELDS)
    DELETE_OPCODE = opcodes.OpGroupRemove
    DELETE_QUERY = {"dry-run": "dry_run"}
    DELETE_BODY = False

    def GET(self) -> dict:
        """Returns a node group's details."""
        return self.GetItem(constants.QR_GROUP, G_FIELDS, self.items[0])


class R_2_groups_name_modify(OpcodeResource):
    """/2/groups/[group_name]/modify resource."""

    URI_PARAMS = ("group_name", )
    PUT_OPCODE = opcodes.OpGroupSetParams
    PUT_RENAME = {
        "custom_ndparams": "ndparams",
        "custom_ipolicy": "ipolicy",
        "custom_diskparams": "diskparams",
    }


class R_2_groups_name_rename(OpcodeResource):
    """/2/groups/[group_name]/rename resource."""

    URI_PARAMS = ("group_name", )
    PUT_OPCODE = opcodes.OpGroupRename
    PUT_QUERY = {"dry-run": "dry_run"}


class R_2_groups_name_assign_nodes(OpcodeResource):
    """/2/groups/[group_name]/assign-nodes resource."""

    URI_PARAMS = ("group_name", )
    PUT_OPCODE = opcodes.OpGroupAssignNodes
    PUT_QUERY = {"dry-run": "dry_run", "force": "force"}


# Job filters -----------------------------------------------------------------

_FILTER_BODY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "priority": {"type": "integer", "default": 0,
                     "description": "Priority (lower numbers come first)"},
        "predicates": {"type": "array", "items": {"type": "array"},
                       "default": [],
                       "description": "Predicates a job must all match"},
        "action": {"default": "CONTINUE",
                   "description": "ACCEPT, PAUSE, REJECT, CONTINUE or"
                   " [\"RATE_LIMIT\", n]"},
        "reason": {"type": "array", "items": {"type": "array"},
                   "default": [], "description": "Reason trail"},
    },
}
_FILTER_PARAMS = frozenset(_FILTER_BODY_SCHEMA["properties"])


def CheckFilterParameters(data: Any) -> tuple[int, list, Any, list]:
    """The ``(priority, predicates, action, reason)`` of a filter body.

    Unknown keys answer 400; the predicates and action are checked by the
    master daemon.
    """
    if not isinstance(data, dict):
        raise ghttp.HttpBadRequest("Invalid body contents, not a dictionary")
    for param in data:
        if param not in _FILTER_PARAMS:
            raise ghttp.HttpBadRequest("Invalid body parameters: filter rule"
                                       " doesn't support the parameter '%s'"
                                       % param)
    priority = baserlib.CheckParameter(data, "priority", exptype=int,
                                       default=0)
    predicates = baserlib.CheckParameter(data, "predicates", exptype=list,
                                         default=[])
    action = baserlib.CheckParameter(data, "action", default="CONTINUE")
    reason = baserlib.CheckParameter(data, "reason", exptype=list,
                                     default=[])
    return priority, predicates, action, reason


class R_2_filters(ResourceBase):
    """/2/filters resource."""

    GET_ARGS = ("bulk", )
    GET_RESULT = openapi.ItemList(constants.QR_FILTER, FILTER_RULE_FIELDS,
                                  ("uuid", "uri"))
    POST_BODY_SCHEMA = _FILTER_BODY_SCHEMA
    POST_RESULT = {"type": "string", "description": "UUID of the new rule"}

    def GET(self) -> list[dict]:
        """Returns the filter rules: UUIDs and URIs, or their details."""
        client = self.GetClient()
        if self.useBulk():
            return baserlib.MapBulkFields(
                client.QueryFilters(None, FILTER_RULE_FIELDS),
                FILTER_RULE_FIELDS)
        uuids = [row[0] for row in client.QueryFilters(None, ["uuid"])]
        return baserlib.BuildUriList(uuids, "/2/filters/%s",
                                     uri_fields=("uuid", "uri"))

    def POST(self) -> str:
        """Adds a filter rule (directly, not as a job)."""
        return self.GetClient().ReplaceFilter(
            None, *CheckFilterParameters(self.request_body))


class R_2_filters_uuid(ResourceBase):
    """/2/filters/[filter_uuid] resource."""

    GET_RESULT = openapi.Item(constants.QR_FILTER, FILTER_RULE_FIELDS)
    PUT_BODY_SCHEMA = _FILTER_BODY_SCHEMA
    PUT_RESULT = {"type": "string", "description": "UUID of the rule"}
    DELETE_RESULT = {"nullable": True}

    def GET(self) -> dict:
        """Returns a filter rule."""
        rows = self.GetClient().QueryFilters([self.items[0]],
                                             FILTER_RULE_FIELDS)
        if not rows or rows[0] is None:
            raise ghttp.HttpNotFound()
        return baserlib.MapFields(FILTER_RULE_FIELDS, rows[0])

    def PUT(self) -> str:
        """Replaces a filter rule, or adds it with this UUID."""
        return self.GetClient().ReplaceFilter(
            self.items[0], *CheckFilterParameters(self.request_body))

    def DELETE(self) -> None:
        """Deletes a filter rule."""
        return self.GetClient().DeleteFilter(self.items[0])
