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

_COMMON_FIELDS = ["ctime", "mtime", "uuid", "serial_no", "tags"]

# Fields of the items' GET answers (and of the bulk lists)
I_FIELDS = ["name", "admin_state", "os",
            "pnode", "snodes",
            "disk_template",
            "nic.ips", "nic.macs", "nic.modes", "nic.uuids", "nic.names",
            "nic.links", "nic.networks", "nic.networks.names", "nic.bridges",
            "network_port",
            "disk.sizes", "disk.spindles", "disk_usage", "disk.uuids",
            "disk.names",
            "beparams", "hvparams",
            "oper_state", "oper_ram", "oper_vcpus", "status",
            "custom_hvparams", "custom_beparams", "custom_nicparams",
            "custom_osparams",
            ] + _COMMON_FIELDS

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
            ] + _COMMON_FIELDS

G_FIELDS = ["alloc_policy", "name", "node_cnt", "node_list",
            "ipolicy", "custom_ipolicy", "diskparams", "custom_diskparams",
            "ndparams", "custom_ndparams",
            ] + _COMMON_FIELDS

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

class _R_Tags(OpcodeResource):
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


class R_2_tags(_R_Tags):
    """/2/tags resource: the cluster's tags."""

    TAG_LEVEL = constants.TAG_CLUSTER


class R_2_nodes_name_tags(_R_Tags):
    """/2/nodes/[node_name]/tags resource."""

    TAG_LEVEL = constants.TAG_NODE


class R_2_groups_name_tags(_R_Tags):
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


# Instances -------------------------------------------------------------------

# Hypervisor parameter whose items the command line separates by spaces;
# RAPI accepts that form besides the commas the hypervisor parses
_HV_USB_DEVICES = "usb_devices"


def _ConvertUsbDevices(body: Any) -> Any:
    """The body with ``hvparams.usb_devices`` separated by commas."""
    if not isinstance(body, dict):
        return body
    hvparams = body.get("hvparams")
    if not isinstance(hvparams, dict) or \
            not isinstance(hvparams.get(_HV_USB_DEVICES), str):
        return body
    hvparams = dict(hvparams)
    hvparams[_HV_USB_DEVICES] = hvparams[_HV_USB_DEVICES].replace(" ", ",")
    return dict(body, hvparams=hvparams)


def _UpdateBeparams(inst: dict) -> dict:
    """Add ``beparams["memory"]`` (maxmem), read by clients older than 2.6.
    """
    beparams = inst.get("beparams")
    if isinstance(beparams, dict) and objects.BE_MAXMEM in beparams:
        beparams[objects.BE_MEMORY] = beparams[objects.BE_MAXMEM]
    return inst


class _R_Instance(OpcodeResource):
    """A resource below /2/instances/[instance_name].

    The URI's instance fills the opcode's ``instance_name``, so an
    operation is declared by its opcode, query arguments and body use::

      class R_2_instances_name_rename(_R_Instance):
          PUT_OPCODE = opcodes.OpInstanceRename
    """

    URI_PARAMS: tuple[str, ...] = ("instance_name", )


class _HvParamsBody(OpcodeResource):
    """Mixin accepting ``hvparams.usb_devices`` separated by spaces."""

    def _GetOpInput(self, method: str) -> tuple[Any, dict]:
        body, static = super()._GetOpInput(method)
        return _ConvertUsbDevices(body), static


class R_2_instances(_HvParamsBody):
    """/2/instances resource."""

    FEATURES = (rapi.INST_CREATE_REQV1, )
    GET_ARGS = ("bulk", )
    GET_RESULT = openapi.ItemList(constants.QR_INSTANCE, I_FIELDS,
                                  ("id", "uri"))
    POST_OPCODE = opcodes.OpInstanceCreate
    POST_RENAME = {"os": "os_type", "name": "instance_name"}
    POST_QUERY = {"dry-run": "dry_run"}
    POST_REQ_VERSION = 1

    def GET(self) -> list[dict]:
        """Returns the instances: names and URIs, or their details."""
        result = self.ListItems(constants.QR_INSTANCE, I_FIELDS,
                                "/2/instances/%s", uri_fields=("id", "uri"))
        if self.useBulk():
            for inst in result:
                _UpdateBeparams(inst)
        return result


class R_2_instances_multi_alloc(OpcodeResource):
    """/2/instances-multi-alloc resource: several creations placed by one
    allocator run; each instance takes the body of POST /2/instances."""

    POST_OPCODE = opcodes.OpInstanceMultiAlloc
    POST_QUERY = {"dry-run": "dry_run"}

    def GetPostOpInput(self) -> tuple[Any, dict]:
        body, static = self._GetOpInput("POST")
        if not isinstance(body, dict) or "instances" not in body:
            raise ghttp.HttpBadRequest("Request is missing required"
                                       " 'instances' field in body")
        instances = baserlib.CheckType(body["instances"], list,
                                       "'instances' field")
        body = dict(body, instances=[
            baserlib.FillOpcode(opcodes.OpInstanceCreate, inst, {},
                                rename=R_2_instances.POST_RENAME)
            for inst in instances])
        return body, static


class R_2_instances_name(_R_Instance):
    """/2/instances/[instance_name] resource."""

    GET_RESULT = openapi.Item(constants.QR_INSTANCE, I_FIELDS)
    DELETE_OPCODE = opcodes.OpInstanceRemove
    DELETE_QUERY = {"dry-run": "dry_run"}
    DELETE_STATIC = {"ignore_failures": False}

    def GET(self) -> dict:
        """Returns an instance's details."""
        return _UpdateBeparams(self.GetItem(constants.QR_INSTANCE, I_FIELDS,
                                            self.items[0]))


class R_2_instances_name_startup(_R_Instance):
    """/2/instances/[instance_name]/startup resource."""

    PUT_OPCODE = opcodes.OpInstanceStartup
    PUT_QUERY = {"force": "force", "no_remember": "no_remember",
                 "dry-run": "dry_run"}
    PUT_BODY = False


class R_2_instances_name_shutdown(_R_Instance):
    """/2/instances/[instance_name]/shutdown resource."""

    PUT_OPCODE = opcodes.OpInstanceShutdown
    PUT_QUERY = {"no_remember": "no_remember", "dry-run": "dry_run"}


class R_2_instances_name_reboot(_R_Instance):
    """/2/instances/[instance_name]/reboot resource."""

    POST_OPCODE = opcodes.OpInstanceReboot
    POST_QUERY = {"type": "reboot_type",
                  "ignore_secondaries": "ignore_secondaries",
                  "dry-run": "dry_run"}


class R_2_instances_name_info(OpcodeResource):
    """/2/instances/[instance_name]/info resource."""

    GET_OPCODE = opcodes.OpInstanceQueryData
    GET_ARGS = ("static", )

    def GetGetOpInput(self) -> tuple[dict, dict]:
        """The instance of the URI (a query job: its result is the data)."""
        return {}, {"instances": [self.items[0]],
                    "static": self.GetQueryArg("static")}


# Body keys of a reinstallation request (version 1)
_REINSTALL_BODY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "os": {"type": "string", "nullable": True,
               "description": "New operating system (the current one if"
               " not given)"},
        "start": {"type": "boolean", "default": True,
                  "description": "Whether to start the instance afterwards"},
        "osparams": {"type": "object", "nullable": True,
                     "description": "OS parameters changed for the"
                     " instance"},
        "depends": {"type": "array", "items": {}, "nullable": True,
                    "description": "Job dependencies"},
    },
}
_REINSTALL_PARAMS = frozenset(_REINSTALL_BODY_SCHEMA["properties"])
# Query arguments of the request format before version 1
_REINSTALL_LEGACY_ARGS = ("os", "nostartup")


class R_2_instances_name_reinstall(_R_Instance):
    """/2/instances/[instance_name]/reinstall resource."""

    FEATURES = (rapi.INST_REINSTALL_REQV1, )
    POST_ARGS = _REINSTALL_LEGACY_ARGS + ("reason", )
    POST_BODY_SCHEMA = _REINSTALL_BODY_SCHEMA
    POST_RESULT = openapi.JOB_ID

    def _GetRequest(self) -> dict:
        """The version 1 body, or one made of the legacy query arguments."""
        legacy = any(arg in self.queryargs for arg in _REINSTALL_LEGACY_ARGS)
        if self.request_body:
            if legacy:
                raise ghttp.HttpBadRequest("Can't combine query and body"
                                           " parameters")
            body = baserlib.CheckType(self.request_body, dict,
                                      "Body contents")
            for param in body:
                if param not in _REINSTALL_PARAMS:
                    raise ghttp.HttpBadRequest(
                        "Invalid body parameters: reinstallation doesn't"
                        " support the parameter '%s'" % param)
            return body
        if legacy:
            return {"os": self.GetQueryArg("os"),
                    "start": not self.GetQueryArg("nostartup")}
        return {}

    def POST(self) -> int:
        """Reinstalls an instance's OS; answers the job's ID.

        The job stops the instance, reinstalls it and, unless ``start`` is
        false, starts it again.
        """
        request = self._GetRequest()
        start = baserlib.CheckParameter(request, "start", default=True,
                                        exptype=bool)
        common = dict(self._GetCommonStatic(), **self._GetDepends(),
                      instance_name=self.items[0])
        ops = [
            baserlib.FillOpcode(opcodes.OpInstanceShutdown, None, common),
            baserlib.FillOpcode(opcodes.OpInstanceReinstall, None, dict(
                common, os_type=request.get("os"),
                osparams=request.get("osparams"))),
        ]
        if start:
            ops.append(baserlib.FillOpcode(opcodes.OpInstanceStartup, None,
                                           dict(common, force=False)))
        return self.SubmitJob(ops)


class R_2_instances_name_rename(_R_Instance):
    """/2/instances/[instance_name]/rename resource."""

    PUT_OPCODE = opcodes.OpInstanceRename


class R_2_instances_name_modify(_HvParamsBody, _R_Instance):
    """/2/instances/[instance_name]/modify resource."""

    PUT_OPCODE = opcodes.OpInstanceSetParams
    PUT_RENAME = {
        "custom_beparams": "beparams",
        "custom_hvparams": "hvparams",
    }


# An InstanceConsole (objects): how to reach an instance's console
_CONSOLE_SCHEMA = {
    "type": "object",
    "properties": {
        "instance": {"type": "string", "description": "Instance name"},
        "kind": {"type": "string",
                 "enum": sorted([constants.CONS_MESSAGE, constants.CONS_SSH,
                                 constants.CONS_VNC, constants.CONS_SPICE]),
                 "description": "How to connect"},
        "message": {"type": "string", "nullable": True,
                    "description": "Message to show (kind msg)"},
        "host": {"type": "string", "nullable": True,
                 "description": "Host to connect to"},
        "port": {"type": "integer", "nullable": True,
                 "description": "Port to connect to (vnc, spice)"},
        "user": {"type": "string", "nullable": True,
                 "description": "User to log in as (ssh)"},
        "command": {"type": "array", "items": {"type": "string"},
                    "nullable": True,
                    "description": "Command to run on the host (ssh)"},
        "display": {"type": "integer", "nullable": True,
                    "description": "VNC display number"},
    },
}


class R_2_instances_name_console(ResourceBase):
    """/2/instances/[instance_name]/console resource."""

    # The console may give access to the instance
    GET_ACCESS = [rapi.RAPI_ACCESS_WRITE, rapi.RAPI_ACCESS_READ]
    GET_RESULT = _CONSOLE_SCHEMA

    def GET(self) -> dict:
        """Returns how to reach the console of a running instance."""
        inst = self.GetItem(constants.QR_INSTANCE, ["console", "oper_state"],
                            self.items[0])
        if not inst["oper_state"] or not isinstance(inst["console"], dict):
            raise ghttp.HttpServiceUnavailable("Instance console"
                                               " unavailable")
        return inst["console"]


class R_2_instances_name_activate_disks(_R_Instance):
    """/2/instances/[instance_name]/activate-disks resource."""

    PUT_OPCODE = opcodes.OpInstanceActivateDisks
    PUT_QUERY = {"ignore_size": "ignore_size"}
    PUT_BODY = False


class R_2_instances_name_deactivate_disks(_R_Instance):
    """/2/instances/[instance_name]/deactivate-disks resource."""

    PUT_OPCODE = opcodes.OpInstanceDeactivateDisks
    PUT_QUERY = {"force": "force"}
    PUT_BODY = False


class R_2_instances_name_recreate_disks(_R_Instance):
    """/2/instances/[instance_name]/recreate-disks resource."""

    POST_OPCODE = opcodes.OpInstanceRecreateDisks


class R_2_instances_name_replace_disks(_R_Instance):
    """/2/instances/[instance_name]/replace-disks resource.

    Ganeti's legacy form passes the parameters as query arguments, the
    disks as "0,2"; a body may give them as such a string or a list.
    """

    POST_OPCODE = opcodes.OpInstanceReplaceDisks
    POST_QUERY = {"mode": "mode", "remote_node": "remote_node",
                  "iallocator": "iallocator", "disks": "disks"}

    def _GetOpInput(self, method: str) -> tuple[Any, dict]:
        body, static = super()._GetOpInput(method)
        for params in (body, static):
            if isinstance(params, dict) and \
                    isinstance(params.get("disks"), str):
                try:
                    params["disks"] = [int(part) for part in
                                       params["disks"].split(",") if part]
                except ValueError as err:
                    raise ghttp.HttpBadRequest("Invalid disk index passed:"
                                               " %s" % err)
        return body, static


class R_2_instances_name_disk_grow(_R_Instance):
    """/2/instances/[instance_name]/disk/[disk_index]/grow resource."""

    URI_PARAMS = ("instance_name", "disk")
    POST_OPCODE = opcodes.OpInstanceGrowDisk

    def _GetOpInput(self, method: str) -> tuple[Any, dict]:
        body, static = super()._GetOpInput(method)
        # The URI's pattern admits digits only
        static["disk"] = int(static["disk"])
        return body, static


class R_2_instances_name_prepare_export(_R_Instance):
    """/2/instances/[instance_name]/prepare-export resource."""

    PUT_OPCODE = opcodes.OpBackupPrepare
    PUT_QUERY = {"mode": "mode"}
    PUT_BODY = False


class R_2_instances_name_export(_R_Instance):
    """/2/instances/[instance_name]/export resource."""

    PUT_OPCODE = opcodes.OpBackupExport
    PUT_RENAME = {"destination": "target_node"}
    DELETE_OPCODE = opcodes.OpBackupRemove


class R_2_instances_name_migrate(_R_Instance):
    """/2/instances/[instance_name]/migrate resource."""

    PUT_OPCODE = opcodes.OpInstanceMigrate


class R_2_instances_name_failover(_R_Instance):
    """/2/instances/[instance_name]/failover resource."""

    PUT_OPCODE = opcodes.OpInstanceFailover


class R_2_instances_name_move(_R_Instance):
    """/2/instances/[instance_name]/move resource."""

    PUT_OPCODE = opcodes.OpInstanceMove


class R_2_instances_name_change_group(_R_Instance):
    """/2/instances/[instance_name]/change-group resource."""

    PUT_OPCODE = opcodes.OpInstanceChangeGroup


class R_2_instances_name_tags(_R_Tags):
    """/2/instances/[instance_name]/tags resource."""

    TAG_LEVEL = constants.TAG_INSTANCE


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
