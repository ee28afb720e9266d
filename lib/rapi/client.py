"""Client for the Ganeti remote API (RAPI), version 2.

Each RAPI resource has one method, named as in Ganeti so scripts written
against Ganeti's client keep working. Requests go over HTTPS with pycurl
(a fresh handle per request: the server closes every connection anyway),
bodies and answers are JSON, and a non-200 answer raises GanetiApiError
carrying the HTTP status as ``code``.

The peer certificate is not checked unless a ``curl_config_fn`` asks for it,
e.g. ``GenericCurlConfig(cafile=<the cluster's rapi.pem>)``: RAPI
certificates are usually self-signed, so there is no CA to default to.

Job-submitting methods return the job id as the server sends it (an int
from this server, a string from old Ganeti masterd); pass it on unchanged.

pycurl's global state must be set up while only one thread runs;
``UsesRapiClient`` does that around a program's main function.
"""

import time
from typing import Any, Iterable

from ganeti.rapi.client_base import (  # noqa: F401 - re-exported
    CertificateError,
    CurlConfigFn,
    ECODE_ALL,
    ECODE_ENVIRON,
    ECODE_EXISTS,
    ECODE_FAULT,
    ECODE_INVAL,
    ECODE_NOENT,
    ECODE_NORES,
    ECODE_NOTUNIQUE,
    ECODE_RESOLVER,
    ECODE_STATE,
    ECODE_TEMP_NORES,
    EpochNano,
    Error,
    GANETI_RAPI_PORT,
    GANETI_RAPI_VERSION,
    GanetiApiError,
    GenericCurlConfig,
    HTTP_APP_JSON,
    HTTP_DELETE,
    HTTP_GET,
    HTTP_NOT_FOUND,
    HTTP_OK,
    HTTP_POST,
    HTTP_PUT,
    INST_CREATE_REQV1,
    INST_REINSTALL_REQV1,
    JOB_STATUS_ALL,
    JOB_STATUS_CANCELED,
    JOB_STATUS_CANCELING,
    JOB_STATUS_ERROR,
    JOB_STATUS_FINALIZED,
    JOB_STATUS_PENDING,
    JOB_STATUS_QUEUED,
    JOB_STATUS_RUNNING,
    JOB_STATUS_SUCCESS,
    JOB_STATUS_WAITING,
    JOB_STATUS_WAITLOCK,
    NODE_EVAC_ALL,
    NODE_EVAC_PRI,
    NODE_EVAC_RES1,
    NODE_EVAC_SEC,
    NODE_MIGRATE_REQV1,
    NODE_ROLE_DRAINED,
    NODE_ROLE_MASTER,
    NODE_ROLE_MASTER_CANDIDATE,
    NODE_ROLE_OFFLINE,
    NODE_ROLE_REGULAR,
    REPLACE_DISK_AUTO,
    REPLACE_DISK_CHG,
    REPLACE_DISK_PRI,
    REPLACE_DISK_SECONDARY,
    RapiConnection,
    UsesRapiClient,
    _Body,
    _Query,
    _Resource,
    _TagQuery)
from ganeti.rapi.client_instances import InstanceMethods


class GanetiRapiClient(InstanceMethods):  # pylint: disable=too-many-public-methods
    """Client for one cluster's RAPI server (normally on the master)."""

    # Cluster ----------------------------------------------------------------

    def GetVersion(self) -> int:
        """The RAPI version the server speaks (2)."""
        return self._SendRequest(HTTP_GET, "/version", None, None)

    def GetOperatingSystems(self, reason: str | None = None) -> list[str]:
        """Names (with variants) of the OSes valid on all nodes."""
        return self._SendRequest(HTTP_GET, _Resource("os"),
                                 _Query(reason=reason), None)

    def GetInfo(self, reason: str | None = None) -> dict:
        """Cluster information (as ``gnt-cluster info``)."""
        return self._SendRequest(HTTP_GET, _Resource("info"),
                                 _Query(reason=reason), None)

    def RedistributeConfig(self, reason: str | None = None) -> Any:
        """Copy the configuration files to all nodes; returns the job id."""
        return self._SendRequest(HTTP_PUT, _Resource("redistribute-config"),
                                 _Query(reason=reason), None)

    def CancelRepairIncident(self, incident_id: str,
                             reason: str | None = None) -> Any:
        """Cancel a repair incident of ganeti-maintd; returns the job
        id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("maintenance", "incidents", incident_id,
                                "cancel"),
            _Query(reason=reason), None)

    def ModifyCluster(self, reason: str | None = None, **kwargs: Any) -> Any:
        """Change cluster parameters (OpClusterSetParams); returns the job
        id."""
        return self._SendRequest(HTTP_PUT, _Resource("modify"),
                                 _Query(reason=reason), kwargs)

    def GetClusterTags(self, reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET, _Resource("tags"),
                                 _Query(reason=reason), None)

    def AddClusterTags(self, tags: Iterable[str], dry_run: bool = False,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT, _Resource("tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def DeleteClusterTags(self, tags: Iterable[str], dry_run: bool = False,
                          reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE, _Resource("tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    # Jobs -------------------------------------------------------------------

    def GetJobs(self, bulk: bool = False) -> list:
        """Job ids (as ints), or with ``bulk`` a dict per job."""
        jobs = self._SendRequest(HTTP_GET, _Resource("jobs"),
                                 _Query(bulk=bulk), None)
        if bulk:
            return jobs
        return [int(job["id"]) for job in jobs]

    def GetJobStatus(self, job_id: int | str) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("jobs", job_id), None,
                                 None)

    def WaitForJobCompletion(self, job_id: int | str, period: float = 5,
                             retries: int = -1) -> bool:
        """Poll every ``period`` seconds until the job is finalized.

        Returns whether it succeeded; False also after ``retries`` polls
        (-1: no limit). WaitForJobChange reports changes without the
        polling delay.
        """
        while retries != 0:
            job = self.GetJobStatus(job_id)
            status = job.get("status") if job else None
            if status == JOB_STATUS_SUCCESS:
                return True
            if status is None or status in JOB_STATUS_FINALIZED:
                # An unknown job (every field null) will never succeed
                return False
            if period:
                time.sleep(period)
            if retries > 0:
                retries -= 1
        return False

    def WaitForJobChange(self, job_id: int | str, fields: list[str],
                         prev_job_info: list | None,
                         prev_log_serial: int | None) -> dict | None:
        """Wait (a server-set time) until the job's ``fields`` differ from
        ``prev_job_info`` or log entries after ``prev_log_serial`` appear.

        Returns None if nothing changed, else a dict with ``job_info`` and
        ``log_entries``.
        """
        body = {
            "fields": fields,
            "previous_job_info": prev_job_info,
            "previous_log_serial": prev_log_serial,
        }
        return self._SendRequest(HTTP_GET, _Resource("jobs", job_id, "wait"),
                                 None, body)

    def CancelJob(self, job_id: int | str, dry_run: bool = False) -> list:
        """Returns ``[success, message]``."""
        return self._SendRequest(HTTP_DELETE, _Resource("jobs", job_id),
                                 _Query(dry_run=dry_run), None)

    # Nodes ------------------------------------------------------------------

    def GetNodes(self, bulk: bool = False, reason: str | None = None) -> list:
        """Node names, or with ``bulk`` a dict per node."""
        nodes = self._SendRequest(HTTP_GET, _Resource("nodes"),
                                  _Query(bulk=bulk, reason=reason), None)
        if bulk:
            return nodes
        return [node["id"] for node in nodes]

    def GetNode(self, node: str, reason: str | None = None) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("nodes", node),
                                 _Query(reason=reason), None)

    def EvacuateNode(self, node: str, iallocator: str | None = None,
                     remote_node: str | None = None, dry_run: bool = False,
                     early_release: bool | None = None,
                     mode: str | None = None, accept_old: bool = False,
                     reason: str | None = None) -> Any:
        """Move instances off a node (``mode``: NODE_EVAC_*); returns the
        job id.

        Servers before 2.5 can only move secondaries and answer in an old
        format, which the caller must accept with ``accept_old``.
        """
        if iallocator and remote_node:
            raise GanetiApiError("Only one of iallocator or remote_node can"
                                 " be used")
        path = _Resource("nodes", node, "evacuate")
        if NODE_EVAC_RES1 in self.GetFeatures():
            return self._SendRequest(
                HTTP_POST, path, _Query(dry_run=dry_run, reason=reason),
                _Body(iallocator=iallocator, remote_node=remote_node,
                      early_release=early_release, mode=mode))
        if not accept_old:
            raise GanetiApiError("Server is version 2.4 or earlier and caller"
                                 " does not accept old-style results"
                                 " (parameter accept_old)")
        if mode is not None and mode != NODE_EVAC_SEC:
            raise GanetiApiError("Server can only evacuate secondary"
                                 " instances")
        return self._SendRequest(
            HTTP_POST, path,
            _Query(("iallocator", iallocator or None),
                   ("remote_node", remote_node or None),
                   ("early_release", 1 if early_release else None),
                   dry_run=dry_run, reason=reason), None)

    def MigrateNode(self, node: str, mode: str | None = None,
                    dry_run: bool = False, iallocator: str | None = None,
                    target_node: str | None = None,
                    reason: str | None = None) -> Any:
        """Migrate all primary instances of a node; returns the job id."""
        path = _Resource("nodes", node, "migrate")
        query = _Query(dry_run=dry_run, reason=reason)
        if NODE_MIGRATE_REQV1 in self.GetFeatures():
            return self._SendRequest(
                HTTP_POST, path, query,
                _Body(mode=mode, iallocator=iallocator,
                      target_node=target_node))
        if target_node is not None:
            raise GanetiApiError("Server does not support specifying target"
                                 " node for node migration")
        return self._SendRequest(HTTP_POST, path,
                                 query + _Query(("mode", mode)), None)

    def GetNodeRole(self, node: str, reason: str | None = None) -> str:
        """One of the NODE_ROLE_* values."""
        return self._SendRequest(HTTP_GET, _Resource("nodes", node, "role"),
                                 _Query(reason=reason), None)

    def SetNodeRole(self, node: str, role: str, force: bool = False,
                    auto_promote: bool | None = None,
                    reason: str | None = None) -> Any:
        """Set a NODE_ROLE_* (not master); returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("nodes", node, "role"),
            _Query(("auto-promote", auto_promote), force=force,
                   reason=reason), role)

    def PowercycleNode(self, node: str, force: bool = False,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_POST,
                                 _Resource("nodes", node, "powercycle"),
                                 _Query(force=force, reason=reason), None)

    def ModifyNode(self, node: str, reason: str | None = None,
                   **kwargs: Any) -> Any:
        """Change node parameters (OpNodeSetParams); returns the job id."""
        return self._SendRequest(HTTP_POST, _Resource("nodes", node, "modify"),
                                 _Query(reason=reason), kwargs)

    def GetNodeStorageUnits(self, node: str, storage_type: str,
                            output_fields: str,
                            reason: str | None = None) -> Any:
        """Submit a storage query (``output_fields`` comma-separated);
        returns the job id, whose result holds the data."""
        return self._SendRequest(
            HTTP_GET, _Resource("nodes", node, "storage"),
            _Query(("storage_type", storage_type),
                   ("output_fields", output_fields), reason=reason), None)

    def ModifyNodeStorageUnits(self, node: str, storage_type: str, name: str,
                               allocatable: bool | None = None,
                               reason: str | None = None) -> Any:
        """Returns the job id; ``allocatable`` None leaves it unchanged."""
        return self._SendRequest(
            HTTP_PUT, _Resource("nodes", node, "storage", "modify"),
            _Query(("storage_type", storage_type), ("name", name),
                   ("allocatable", allocatable), reason=reason), None)

    def RepairNodeStorageUnits(self, node: str, storage_type: str, name: str,
                               reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("nodes", node, "storage", "repair"),
            _Query(("storage_type", storage_type), ("name", name),
                   reason=reason), None)

    def GetNodeTags(self, node: str, reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET, _Resource("nodes", node, "tags"),
                                 _Query(reason=reason), None)

    def AddNodeTags(self, node: str, tags: list[str], dry_run: bool = False,
                    reason: str | None = None) -> Any:
        """Returns the job id."""
        # Ganeti's client also sends the tags as body (the server ignores it)
        return self._SendRequest(HTTP_PUT, _Resource("nodes", node, "tags"),
                                 _TagQuery(tags, dry_run, reason), tags)

    def DeleteNodeTags(self, node: str, tags: Iterable[str],
                       dry_run: bool = False,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE,
                                 _Resource("nodes", node, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    # Networks ---------------------------------------------------------------

    def GetNetworks(self, bulk: bool = False,
                    reason: str | None = None) -> list:
        """Network names, or with ``bulk`` a dict per network."""
        networks = self._SendRequest(HTTP_GET, _Resource("networks"),
                                     _Query(bulk=bulk, reason=reason), None)
        if bulk:
            return networks
        return [net["name"] for net in networks]

    def GetNetwork(self, network: str, reason: str | None = None) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("networks", network),
                                 _Query(reason=reason), None)

    def CreateNetwork(self, network_name: str, network: str,
                      gateway: str | None = None, network6: str | None = None,
                      gateway6: str | None = None,
                      mac_prefix: str | None = None,
                      add_reserved_ips: str | None = None,
                      tags: str | None = None, dry_run: bool = False,
                      reason: str | None = None) -> Any:
        """Create a network; ``add_reserved_ips`` and ``tags`` are
        comma-separated, as on the command line. Returns the job id."""
        body = {
            "network_name": network_name,
            "network": network,
            "gateway": gateway,
            "network6": network6,
            "gateway6": gateway6,
            "mac_prefix": mac_prefix,
            "add_reserved_ips": (add_reserved_ips.split(",")
                                 if add_reserved_ips else add_reserved_ips),
            "tags": tags.split(",") if tags else tags,
        }
        return self._SendRequest(HTTP_POST, _Resource("networks"),
                                 _Query(dry_run=dry_run, reason=reason), body)

    def ConnectNetwork(self, network_name: str, group_name: str, mode: str,
                       link: str, vlan: str = "", dry_run: bool = False,
                       reason: str | None = None) -> Any:
        """Connect a network to a node group; returns the job id."""
        body = {
            "group_name": group_name,
            "network_mode": mode,
            "network_link": link,
            "network_vlan": vlan,
        }
        return self._SendRequest(
            HTTP_PUT, _Resource("networks", network_name, "connect"),
            _Query(dry_run=dry_run, reason=reason), body)

    def DisconnectNetwork(self, network_name: str, group_name: str,
                          dry_run: bool = False,
                          reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("networks", network_name, "disconnect"),
            _Query(dry_run=dry_run, reason=reason),
            {"group_name": group_name})

    def ModifyNetwork(self, network: str, reason: str | None = None,
                      **kwargs: Any) -> Any:
        """Change network parameters (OpNetworkSetParams); returns the job
        id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("networks", network, "modify"),
                                 _Query(reason=reason), kwargs)

    def DeleteNetwork(self, network: str, dry_run: bool = False,
                      reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE, _Resource("networks", network),
                                 _Query(dry_run=dry_run, reason=reason), None)

    def GetNetworkTags(self, network: str,
                       reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET,
                                 _Resource("networks", network, "tags"),
                                 _Query(reason=reason), None)

    def AddNetworkTags(self, network: str, tags: Iterable[str],
                       dry_run: bool = False,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("networks", network, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def DeleteNetworkTags(self, network: str, tags: Iterable[str],
                          dry_run: bool = False,
                          reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE,
                                 _Resource("networks", network, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    # Node groups ------------------------------------------------------------

    def GetGroups(self, bulk: bool = False, reason: str | None = None) -> list:
        """Group names, or with ``bulk`` a dict per group."""
        groups = self._SendRequest(HTTP_GET, _Resource("groups"),
                                   _Query(bulk=bulk, reason=reason), None)
        if bulk:
            return groups
        return [group["name"] for group in groups]

    def GetGroup(self, group: str, reason: str | None = None) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("groups", group),
                                 _Query(reason=reason), None)

    def CreateGroup(self, name: str, alloc_policy: str | None = None,
                    dry_run: bool = False, reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_POST, _Resource("groups"),
                                 _Query(dry_run=dry_run, reason=reason),
                                 {"name": name, "alloc_policy": alloc_policy})

    def ModifyGroup(self, group: str, reason: str | None = None,
                    **kwargs: Any) -> Any:
        """Change group parameters (OpGroupSetParams); returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("groups", group, "modify"),
                                 _Query(reason=reason), kwargs)

    def DeleteGroup(self, group: str, dry_run: bool = False,
                    reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE, _Resource("groups", group),
                                 _Query(dry_run=dry_run, reason=reason), None)

    def RenameGroup(self, group: str, new_name: str,
                    reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("groups", group, "rename"),
                                 _Query(reason=reason),
                                 {"new_name": new_name})

    def AssignGroupNodes(self, group: str, nodes: list[str],
                         force: bool = False, dry_run: bool = False,
                         reason: str | None = None) -> Any:
        """Move ``nodes`` into ``group``; returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("groups", group, "assign-nodes"),
                                 _Query(force=force, dry_run=dry_run,
                                        reason=reason),
                                 {"nodes": nodes})

    def GetGroupTags(self, group: str,
                     reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET, _Resource("groups", group, "tags"),
                                 _Query(reason=reason), None)

    def AddGroupTags(self, group: str, tags: Iterable[str],
                     dry_run: bool = False, reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT, _Resource("groups", group, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def DeleteGroupTags(self, group: str, tags: Iterable[str],
                        dry_run: bool = False,
                        reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE,
                                 _Resource("groups", group, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    # Queries ----------------------------------------------------------------

    def Query(self, what: str, fields: list[str], qfilter: Any = None,
              reason: str | None = None) -> dict:
        """Query resource ``what`` (node, group, instance, job, ...).

        Returns ``{"fields": [field definitions], "data": [rows]}``, each
        row a list of ``[status, value]``.
        """
        # "filter" is the name servers before 2.7 know
        body = _Body({"fields": fields}, qfilter=qfilter, filter=qfilter)
        return self._SendRequest(HTTP_PUT, _Resource("query", what),
                                 _Query(reason=reason), body)

    def QueryFields(self, what: str, fields: list[str] | None = None,
                    reason: str | None = None) -> dict:
        """Definitions of ``fields`` (default all) of resource ``what``."""
        field_list = None if fields is None else ",".join(fields)
        return self._SendRequest(HTTP_GET,
                                 _Resource("query", what, "fields"),
                                 _Query(("fields", field_list), reason=reason),
                                 None)

    # Job filters ------------------------------------------------------------

    def GetFilters(self, bulk: bool = False) -> list:
        """Filter rule UUIDs, or with ``bulk`` a dict per rule."""
        filters = self._SendRequest(HTTP_GET, _Resource("filters"),
                                    _Query(bulk=bulk), None)
        if bulk:
            return filters
        return [rule["uuid"] for rule in filters]

    def GetFilter(self, filter_uuid: str) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("filters", filter_uuid),
                                 None, None)

    @staticmethod
    def _FilterBody(priority: int, predicates: list, action: Any,
                    reason_trail: list | None) -> dict[str, Any]:
        # The client marks its own entry in the rule's reason trail
        trail = list(reason_trail or [])
        trail.append(("gnt:client", "", EpochNano()))
        return {
            "priority": priority,
            "predicates": predicates,
            "action": action,
            "reason": trail,
        }

    def AddFilter(self, priority: int, predicates: list, action: Any,
                  reason_trail: list | None = None) -> str:
        """Add a job filter rule (applied at once, no job); returns its
        UUID."""
        return self._SendRequest(
            HTTP_POST, _Resource("filters"), None,
            self._FilterBody(priority, predicates, action, reason_trail))

    def ReplaceFilter(self, uuid: str, priority: int, predicates: list,
                      action: Any, reason_trail: list | None = None) -> str:
        """Replace the rule ``uuid``, or add it; returns its UUID."""
        return self._SendRequest(
            HTTP_PUT, _Resource("filters", uuid), None,
            self._FilterBody(priority, predicates, action, reason_trail))

    def DeleteFilter(self, uuid: str) -> None:
        return self._SendRequest(HTTP_DELETE, _Resource("filters", uuid),
                                 None, {})
