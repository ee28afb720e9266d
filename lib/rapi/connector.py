"""The URI table of the remote API: which resource class serves which path.

The resources describing the table itself (features, the OpenAPI
document) are here, with the table.

Paths are declared once as templates (``/2/nodes/{node_name}``); the
server matches requests against the regular expressions compiled from
them and the API description (openapi) lists them as they are. The
path is matched after percent-decoding; the query string is parsed with
``urllib.parse.parse_qs``, so every argument's value is a list.
"""

import functools
import re
import urllib.parse

from ganeti import http as ghttp
from ganeti.rapi import baserlib, instances, networks, openapi, rlib2

class R_2_features(baserlib.ResourceBase):
    """/2/features resource."""

    GET_RESULT = {"type": "array", "items": {"type": "string"}}

    @staticmethod
    def GET() -> list[str]:
        """Returns the optional RAPI features the server implements."""
        return GetFeatures()


class R_2_openapi(baserlib.ResourceBase):
    """/2/openapi.json resource."""

    GET_RESULT = {"type": "object",
                  "description": "OpenAPI 3 document (this description)"}

    @staticmethod
    def GET() -> dict:
        """Returns the OpenAPI description of this API."""
        return GetDocument()


_ResourceMap = dict[str, type[baserlib.ResourceBase]]

# Path template -> resource class. New resources go below /2 (Ganeti
# versions resources individually rather than the whole API).
RESOURCES: _ResourceMap = {
    "/": rlib2.R_root,
    "/2": rlib2.R_2,
    "/version": rlib2.R_version,
    "/2/info": rlib2.R_2_info,
    "/2/features": R_2_features,
    "/2/openapi.json": R_2_openapi,
    "/2/redistribute-config": rlib2.R_2_redist_config,
    "/2/modify": rlib2.R_2_cluster_modify,
    "/2/maintenance/incidents/{incident_id}/cancel":
        rlib2.R_2_maintenance_incident_cancel,
    "/2/tags": rlib2.R_2_tags,
    "/2/os": rlib2.R_2_os,

    "/2/jobs": rlib2.R_2_jobs,
    "/2/jobs/{job_id}": rlib2.R_2_jobs_id,
    "/2/jobs/{job_id}/wait": rlib2.R_2_jobs_id_wait,

    "/2/query/{resource}": rlib2.R_2_query,
    "/2/query/{resource}/fields": rlib2.R_2_query_fields,

    "/2/nodes": rlib2.R_2_nodes,
    "/2/nodes/{node_name}": rlib2.R_2_nodes_name,
    "/2/nodes/{node_name}/role": rlib2.R_2_nodes_name_role,
    "/2/nodes/{node_name}/modify": rlib2.R_2_nodes_name_modify,
    "/2/nodes/{node_name}/migrate": rlib2.R_2_nodes_name_migrate,
    "/2/nodes/{node_name}/evacuate": rlib2.R_2_nodes_name_evacuate,
    "/2/nodes/{node_name}/powercycle": rlib2.R_2_nodes_name_powercycle,
    "/2/nodes/{node_name}/storage": rlib2.R_2_nodes_name_storage,
    "/2/nodes/{node_name}/storage/modify":
        rlib2.R_2_nodes_name_storage_modify,
    "/2/nodes/{node_name}/storage/repair":
        rlib2.R_2_nodes_name_storage_repair,
    "/2/nodes/{node_name}/tags": rlib2.R_2_nodes_name_tags,

    "/2/groups": rlib2.R_2_groups,
    "/2/groups/{group_name}": rlib2.R_2_groups_name,
    "/2/groups/{group_name}/modify": rlib2.R_2_groups_name_modify,
    "/2/groups/{group_name}/rename": rlib2.R_2_groups_name_rename,
    "/2/groups/{group_name}/assign-nodes":
        rlib2.R_2_groups_name_assign_nodes,
    "/2/groups/{group_name}/tags": rlib2.R_2_groups_name_tags,

    "/2/networks": networks.R_2_networks,
    "/2/networks/{network_name}": networks.R_2_networks_name,
    "/2/networks/{network_name}/modify": networks.R_2_networks_name_modify,
    "/2/networks/{network_name}/connect": networks.R_2_networks_name_connect,
    "/2/networks/{network_name}/disconnect":
        networks.R_2_networks_name_disconnect,
    "/2/networks/{network_name}/tags": networks.R_2_networks_name_tags,

    "/2/instances": instances.R_2_instances,
    "/2/instances-multi-alloc": instances.R_2_instances_multi_alloc,
    "/2/instances/{instance_name}": instances.R_2_instances_name,
    "/2/instances/{instance_name}/startup":
        instances.R_2_instances_name_startup,
    "/2/instances/{instance_name}/shutdown":
        instances.R_2_instances_name_shutdown,
    "/2/instances/{instance_name}/reboot": instances.R_2_instances_name_reboot,
    "/2/instances/{instance_name}/info": instances.R_2_instances_name_info,
    "/2/instances/{instance_name}/reinstall":
        instances.R_2_instances_name_reinstall,
    "/2/instances/{instance_name}/rename": instances.R_2_instances_name_rename,
    "/2/instances/{instance_name}/modify": instances.R_2_instances_name_modify,
    "/2/instances/{instance_name}/console":
        instances.R_2_instances_name_console,
    "/2/instances/{instance_name}/activate-disks":
        instances.R_2_instances_name_activate_disks,
    "/2/instances/{instance_name}/deactivate-disks":
        instances.R_2_instances_name_deactivate_disks,
    "/2/instances/{instance_name}/recreate-disks":
        instances.R_2_instances_name_recreate_disks,
    "/2/instances/{instance_name}/replace-disks":
        instances.R_2_instances_name_replace_disks,
    "/2/instances/{instance_name}/disk/{disk_index}/grow":
        instances.R_2_instances_name_disk_grow,
    "/2/instances/{instance_name}/prepare-export":
        instances.R_2_instances_name_prepare_export,
    "/2/instances/{instance_name}/export": instances.R_2_instances_name_export,
    "/2/instances/{instance_name}/migrate":
        instances.R_2_instances_name_migrate,
    "/2/instances/{instance_name}/failover":
        instances.R_2_instances_name_failover,
    "/2/instances/{instance_name}/move": instances.R_2_instances_name_move,
    "/2/instances/{instance_name}/change-group":
        instances.R_2_instances_name_change_group,
    "/2/instances/{instance_name}/tags": instances.R_2_instances_name_tags,

    "/2/filters": rlib2.R_2_filters,
    "/2/filters/{filter_uuid}": rlib2.R_2_filters_uuid,
}

def _CompileTemplate(template: str) -> re.Pattern:
    parts = baserlib.TEMPLATE_PARAM_RE.split(template)
    # split() alternates literal text and parameter names
    regex = "".join(re.escape(part) if i % 2 == 0
                    else "(%s)" % baserlib.PARAM_PATTERNS[part]
                    for i, part in enumerate(parts))
    return re.compile("^%s$" % regex)


class Mapper:
    """Finds the resource of a request target."""

    def __init__(self, resources: _ResourceMap | None = None):
        resources = RESOURCES if resources is None else resources
        self._exact = {}
        self._patterns = []
        for template, resource in resources.items():
            if baserlib.TemplateParams(template):
                self._patterns.append((_CompileTemplate(template), resource))
            else:
                self._exact[template] = resource

    def getController(self, uri: str
                      ) -> tuple[type[baserlib.ResourceBase], list[str],
                                 dict[str, list[str]]]:
        """``(resource class, URI items, query arguments)`` of a target.

        Raises HttpNotFound if no resource has this path.
        """
        path, _, query = uri.partition("?")
        args = urllib.parse.parse_qs(query) if query else {}
        path = urllib.parse.unquote(path)
        resource = self._exact.get(path)
        if resource is not None:
            return resource, [], args
        for regex, resource in self._patterns:
            match = regex.match(path)
            if match:
                return resource, list(match.groups()), args
        raise ghttp.HttpNotFound()


def GetFeatures() -> list[str]:
    """The optional features the resources of the table provide."""
    return sorted({feature for resource in RESOURCES.values()
                   for feature in resource.FEATURES})


@functools.lru_cache(maxsize=1)
def GetDocument() -> dict:
    """The OpenAPI document of the table (built once, not to be changed).
    """
    return openapi.BuildDocument(RESOURCES)
