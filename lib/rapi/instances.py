"""RAPI resources of instances: /2/instances and below (Ganeti's).

Each operation on an instance is declared by its opcode (see baserlib);
the few with their own body or answer shapes (multi-alloc, reinstall,
console, replace-disks, disk grow) handle those here.
"""

from typing import Any

from ganeti import constants, objects, opcodes, rapi
from ganeti import http as ghttp
from ganeti.rapi import baserlib, openapi
from ganeti.rapi.baserlib import OpcodeResource, ResourceBase
from ganeti.rapi.rlib2 import COMMON_FIELDS, TagsResource

# Fields of an instance's GET answer (and of the bulk list)
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
            ] + COMMON_FIELDS

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


class R_2_instances_name_tags(TagsResource):
    """/2/instances/[instance_name]/tags resource."""

    TAG_LEVEL = constants.TAG_INSTANCE
