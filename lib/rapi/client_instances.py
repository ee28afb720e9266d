"""RAPI client methods for /2/instances and below (see client)."""

from typing import Any, Iterable

from ganeti.rapi.client_base import (
    GanetiApiError,
    HTTP_DELETE,
    HTTP_GET,
    HTTP_POST,
    HTTP_PUT,
    INST_CREATE_REQV1,
    INST_REINSTALL_REQV1,
    REPLACE_DISK_AUTO,
    RapiConnection,
    _Body,
    _Query,
    _REQ_DATA_VERSION_FIELD,
    _Resource,
    _TagQuery)


class InstanceMethods(RapiConnection):
    """The instance resources' methods, as Ganeti's client names them."""

    def GetInstances(self, bulk: bool = False,
                     reason: str | None = None) -> list:
        """Instance names, or with ``bulk`` a dict per instance."""
        instances = self._SendRequest(HTTP_GET, _Resource("instances"),
                                      _Query(bulk=bulk, reason=reason), None)
        if bulk:
            return instances
        return [inst["id"] for inst in instances]

    def GetInstance(self, instance: str, reason: str | None = None) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("instances", instance),
                                 _Query(reason=reason), None)

    def GetInstanceInfo(self, instance: str, static: bool | None = None,
                        reason: str | None = None) -> Any:
        """Submit a job collecting detailed (``static``: configuration-only)
        instance data; returns the job id, whose result holds the data."""
        return self._SendRequest(HTTP_GET,
                                 _Resource("instances", instance, "info"),
                                 _Query(("static", static), reason=reason),
                                 None)

    @staticmethod
    def _UpdateWithKwargs(base: dict[str, Any], **kwargs: Any) -> None:
        """Add ``kwargs`` to a body (``dry_run`` goes to the query)."""
        base.update((key, value) for key, value in kwargs.items()
                    if key != "dry_run")

    def InstanceAllocation(self, mode: str, name: str, disk_template: str,
                           disks: list[dict], nics: list[dict],
                           **kwargs: Any) -> dict[str, Any]:
        """One instance's creation request, for InstancesMultiAlloc."""
        alloc = {
            "mode": mode,
            "name": name,
            "disk_template": disk_template,
            "disks": disks,
            "nics": nics,
        }
        self._UpdateWithKwargs(alloc, **kwargs)
        return alloc

    def InstancesMultiAlloc(self, instances: list[dict],
                            reason: str | None = None,
                            **kwargs: Any) -> Any:
        """Allocate several instances in one job; returns the job id."""
        body = {"instances": instances}
        self._UpdateWithKwargs(body, **kwargs)
        return self._SendRequest(HTTP_POST,
                                 _Resource("instances-multi-alloc"),
                                 _Query(dry_run=kwargs.get("dry_run", False),
                                        reason=reason), body)

    def CreateInstance(self, mode: str, name: str, disk_template: str,
                       disks: list[dict], nics: list[dict],
                       reason: str | None = None, **kwargs: Any) -> Any:
        """Create an instance (body version 1); returns the job id.

        Further OpInstanceCreate parameters go in ``kwargs``; ``dry_run``
        there only checks the request.
        """
        query = _Query(dry_run=kwargs.get("dry_run", False), reason=reason)
        if INST_CREATE_REQV1 not in self.GetFeatures():
            raise GanetiApiError("Server does not support new-style (version"
                                 " 1) instance creation requests")
        body = self.InstanceAllocation(mode, name, disk_template, disks, nics,
                                       **kwargs)
        body[_REQ_DATA_VERSION_FIELD] = 1
        return self._SendRequest(HTTP_POST, _Resource("instances"), query,
                                 body)

    def DeleteInstance(self, instance: str, dry_run: bool = False,
                       reason: str | None = None, **kwargs: Any) -> Any:
        """Returns the job id; ``kwargs`` (e.g. ``shutdown_timeout``) form the
        body."""
        return self._SendRequest(HTTP_DELETE, _Resource("instances", instance),
                                 _Query(dry_run=dry_run, reason=reason),
                                 kwargs)

    def ModifyInstance(self, instance: str, reason: str | None = None,
                       **kwargs: Any) -> Any:
        """Change instance parameters (OpInstanceSetParams); returns the job
        id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("instances", instance, "modify"),
                                 _Query(reason=reason), kwargs)

    def ActivateInstanceDisks(self, instance: str,
                              ignore_size: bool | None = None,
                              reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "activate-disks"),
            _Query(("ignore_size", 1 if ignore_size else None),
                   reason=reason), None)

    def DeactivateInstanceDisks(self, instance: str, reason: str | None = None,
                                force: bool = False) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "deactivate-disks"),
            _Query(force=force, reason=reason), None)

    def RecreateInstanceDisks(self, instance: str,
                              disks: list[int] | None = None,
                              nodes: list[str] | None = None,
                              reason: str | None = None,
                              iallocator: str | None = None) -> Any:
        """Recreate ``disks`` (indices, default all), optionally on new
        ``nodes``; returns the job id."""
        return self._SendRequest(
            HTTP_POST, _Resource("instances", instance, "recreate-disks"),
            _Query(reason=reason),
            _Body(disks=disks, nodes=nodes, iallocator=iallocator))

    def GrowInstanceDisk(self, instance: str, disk: int, amount: int,
                         wait_for_sync: bool | None = None,
                         reason: str | None = None) -> Any:
        """Grow disk number ``disk`` by ``amount`` MiB; returns the job id."""
        return self._SendRequest(
            HTTP_POST, _Resource("instances", instance, "disk", disk, "grow"),
            _Query(reason=reason),
            _Body({"amount": amount}, wait_for_sync=wait_for_sync))

    def GetInstanceTags(self, instance: str,
                        reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET,
                                 _Resource("instances", instance, "tags"),
                                 _Query(reason=reason), None)

    def AddInstanceTags(self, instance: str, tags: Iterable[str],
                        dry_run: bool = False,
                        reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("instances", instance, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def DeleteInstanceTags(self, instance: str, tags: Iterable[str],
                           dry_run: bool = False,
                           reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE,
                                 _Resource("instances", instance, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def RebootInstance(self, instance: str, reboot_type: str | None = None,
                       ignore_secondaries: bool | None = None,
                       dry_run: bool = False, reason: str | None = None,
                       **kwargs: Any) -> Any:
        """Reboot (``reboot_type`` soft, hard or full; the server defaults to
        hard); returns the job id."""
        return self._SendRequest(
            HTTP_POST, _Resource("instances", instance, "reboot"),
            _Query(("type", reboot_type or None),
                   ("ignore_secondaries", ignore_secondaries),
                   dry_run=dry_run, reason=reason), kwargs)

    def ShutdownInstance(self, instance: str, dry_run: bool = False,
                         no_remember: bool = False, reason: str | None = None,
                         **kwargs: Any) -> Any:
        """Shut down; ``no_remember`` leaves the configured state unchanged.
        Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "shutdown"),
            _Query(("no_remember", 1 if no_remember else None),
                   dry_run=dry_run, reason=reason), kwargs)

    def StartupInstance(self, instance: str, dry_run: bool = False,
                        no_remember: bool = False,
                        reason: str | None = None) -> Any:
        """Start; ``no_remember`` leaves the configured state unchanged.
        Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "startup"),
            _Query(("no_remember", 1 if no_remember else None),
                   dry_run=dry_run, reason=reason), None)

    def ReinstallInstance(self, instance: str, os: str | None = None,
                          no_startup: bool = False,
                          osparams: dict | None = None,
                          reason: str | None = None
                          ) -> Any:  # pylint: disable=redefined-builtin
        """Reinstall with ``os`` (default: the current one); returns the job
        id."""
        path = _Resource("instances", instance, "reinstall")
        if INST_REINSTALL_REQV1 in self.GetFeatures():
            return self._SendRequest(
                HTTP_POST, path, _Query(reason=reason),
                _Body({"start": not no_startup}, os=os, osparams=osparams))
        # Servers before 2.5 take query parameters only
        if osparams:
            raise GanetiApiError("Server does not support specifying OS"
                                 " parameters for instance reinstallation")
        return self._SendRequest(
            HTTP_POST, path,
            _Query(("os", os or None),
                   ("nostartup", 1 if no_startup else None)), None)

    def ReplaceInstanceDisks(self, instance: str,
                             disks: list[int] | None = None,
                             mode: str = REPLACE_DISK_AUTO,
                             remote_node: str | None = None,
                             iallocator: str | None = None,
                             reason: str | None = None,
                             early_release: bool | None = None) -> Any:
        """Replace ``disks`` (indices) in ``mode`` (REPLACE_DISK_*); returns
        the job id."""
        disk_list = (None if disks is None
                     else ",".join(str(idx) for idx in disks))
        return self._SendRequest(
            HTTP_POST, _Resource("instances", instance, "replace-disks"),
            _Query(("mode", mode), ("disks", disk_list),
                   ("remote_node", remote_node), ("iallocator", iallocator),
                   ("early_release", early_release), reason=reason), None)

    def PrepareExport(self, instance: str, mode: str,
                      reason: str | None = None) -> Any:
        """Prepare a ``mode`` (local or remote) export; returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "prepare-export"),
            _Query(("mode", mode), reason=reason), None)

    def ExportInstance(self, instance: str, mode: str, destination: Any,
                       shutdown: bool | None = None,
                       remove_instance: bool | None = None,
                       x509_key_name: Any = None,
                       destination_x509_ca: str | None = None,
                       compress: str | None = None,
                       reason: str | None = None) -> Any:
        """Export to ``destination`` (a node, or remote-export details);
        returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "export"),
            _Query(reason=reason),
            _Body({"destination": destination, "mode": mode},
                  shutdown=shutdown, remove_instance=remove_instance,
                  x509_key_name=x509_key_name,
                  destination_x509_ca=destination_x509_ca,
                  compress=compress))

    def MigrateInstance(self, instance: str, mode: str | None = None,
                        cleanup: bool | None = None,
                        target_node: str | None = None,
                        reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "migrate"),
            _Query(reason=reason),
            _Body(mode=mode, cleanup=cleanup, target_node=target_node))

    def FailoverInstance(self, instance: str, iallocator: str | None = None,
                         ignore_consistency: bool | None = None,
                         target_node: str | None = None,
                         reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "failover"),
            _Query(reason=reason),
            _Body(iallocator=iallocator,
                  ignore_consistency=ignore_consistency,
                  target_node=target_node))

    def MoveInstance(self, instance: str, target_node: str,
                     reason: str | None = None, **kwargs: Any) -> Any:
        """Move to ``target_node`` by copying the disks; further
        OpInstanceMove parameters (``shutdown_timeout``, ``compress``, ...)
        go in ``kwargs``. Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "move"),
            _Query(reason=reason),
            _Body({"target_node": target_node}, **kwargs))

    def ChangeInstanceGroup(self, instance: str,
                            target_groups: list[str] | None = None,
                            iallocator: str | None = None,
                            early_release: bool | None = None,
                            reason: str | None = None) -> Any:
        """Move to a node of another group (default: any other group);
        returns the job id, whose result lists the jobs doing the move."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "change-group"),
            _Query(reason=reason),
            _Body(target_groups=target_groups, iallocator=iallocator,
                  early_release=early_release))

    def RenameInstance(self, instance: str, new_name: str,
                       ip_check: bool | None = None,
                       name_check: bool | None = None,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "rename"),
            _Query(reason=reason),
            _Body({"new_name": new_name}, ip_check=ip_check,
                  name_check=name_check))

    def GetInstanceConsole(self, instance: str,
                           reason: str | None = None) -> dict:
        """How to reach the console of a running instance."""
        return self._SendRequest(HTTP_GET,
                                 _Resource("instances", instance, "console"),
                                 _Query(reason=reason), None)
