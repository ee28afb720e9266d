"""Hypervisors and instances: start, stop, reboot, information,
consoles and the steps of a migration.
"""

import logging
import os
import time
from typing import Any

from ganeti import (constants, errors, hypervisor, objects, pathutils,
                    serializer)
from ganeti.hypervisor import hv_base
from ganeti.utils import io
from ganeti.backend.common import Fail


def GetHypervisor(name: Any) -> hv_base.BaseHypervisor:
    try:
        return hypervisor.GetHypervisor(name)
    except errors.HypervisorError as err:
        Fail("%s", err)


def _InstanceFromDict(data: Any) -> objects.Instance:
    """The instance sent by the master, which must have filled parameters.

    Nodes know no defaults: a dict lacking a hypervisor or backend
    parameter is refused rather than completed here.
    """
    if not isinstance(data, dict):
        Fail("Invalid instance %r, expected a dictionary", data)
    try:
        instance = objects.Instance.FromDict(data)
    except errors.ConfigurationError as err:
        Fail("Invalid instance: %s", err)
    if not isinstance(instance.name, str) or not instance.name:
        Fail("Instance without a name")
    hv_class = type(GetHypervisor(instance.hypervisor))
    try:
        hv_class.CheckParameterSyntax(instance.hvparams or {})
        objects.CheckParamDict(objects.BE_PARAMETERS,
                               instance.beparams or {}, "backend")
    except (errors.HypervisorError, errors.TypeEnforcementError) as err:
        Fail("Instance %s: %s", instance.name, err)
    missing = sorted(set(objects.BE_PARAMETERS) -
                     set(instance.beparams or {}))
    if missing:
        Fail("Instance %s: backend parameter(s) missing: %s",
              instance.name, ", ".join(missing))
    return instance


def _BlockDevicesFile(instance_name: str) -> str:
    if "/" in instance_name or instance_name.startswith("."):
        Fail("Invalid instance name %r", instance_name)
    return os.path.join(pathutils.DISK_LINKS_DIR, instance_name)


def _BlockDevices(block_devices: Any) -> list[tuple[objects.Disk, str]]:
    """[[disk dict, device path], ...] as (Disk, path) pairs."""
    if not isinstance(block_devices, list):
        Fail("Invalid block devices %r, expected a list", block_devices)
    result = []
    for entry in block_devices:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and
                isinstance(entry[0], dict) and isinstance(entry[1], str) and
                os.path.isabs(entry[1])):
            Fail("Invalid block device %r, expected [disk, absolute path]",
                  entry)
        try:
            result.append((objects.Disk.FromDict(dict(entry[0])), entry[1]))
        except errors.ConfigurationError as err:
            Fail("Invalid disk: %s", err)
    return result


def _SavedBlockDevices(instance_name: str) -> list:
    """The block devices the running instance was started with."""
    try:
        return serializer.LoadJson(io.ReadFile(
            _BlockDevicesFile(instance_name)))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as err:
        Fail("Cannot read the block devices of %s: %s", instance_name, err)


def _IsRunning(hv: hv_base.BaseHypervisor,
               instance: objects.Instance) -> bool:
    try:
        return instance.name in hv.ListInstances(instance.hvparams)
    except errors.HypervisorError as err:
        Fail("Cannot list the instances: %s", err)


def _IsUserDown(hv: hv_base.BaseHypervisor,
                instance: objects.Instance) -> bool:
    """Whether the guest powered itself off while its hypervisor process
    stays (Ganeti's USER_down): listed, but not running."""
    try:
        info = hv.GetInstanceInfo(instance.name, instance.hvparams)
    except errors.HypervisorError as err:
        Fail("Cannot get information about %s: %s", instance.name, err)
    return info is not None and info[4] == constants.HV_INSTANCE_SHUTDOWN


def instance_start(instance: dict, block_devices: list,
                   startup_paused: bool) -> None:
    """Start an instance; starting a running instance is a no-op.

    An instance whose guest powered itself off (USER_down) is cleaned up
    and started again. The block devices are kept in DISK_LINKS_DIR while
    the instance runs, so that a hard reboot restarts it on the same
    devices.
    """
    inst = _InstanceFromDict(instance)
    devices = _BlockDevices(block_devices)
    hv = GetHypervisor(inst.hypervisor)
    if _IsRunning(hv, inst):
        if not _IsUserDown(hv, inst):
            logging.info("Instance %s already running, not starting",
                         inst.name)
            return
        logging.info("Instance %s was shut down from inside, restarting it",
                     inst.name)
        try:
            hv.StopInstance(inst, force=True)
            hv.CleanupInstance(inst.name)
        except errors.HypervisorError as err:
            Fail("Failed to clean up the shut down instance %s: %s",
                  inst.name, err)
    saved = _BlockDevicesFile(inst.name)
    io.EnsureDirs([(pathutils.DISK_LINKS_DIR, 0o750)])
    io.WriteFile(saved, data=serializer.DumpJson(block_devices))
    try:
        hv.StartInstance(inst, devices, bool(startup_paused))
    except errors.HypervisorError as err:
        io.RemoveFile(saved)
        Fail("Hypervisor error: %s", err)
    logging.info("Started instance %s", inst.name)


_SHUTDOWN_POLL_INTERVAL = 1.0


def instance_shutdown(instance: dict, timeout: float) -> None:
    """Stop an instance: cleanly within ``timeout`` seconds, else forced.

    Stopping a stopped instance succeeds (its leftovers are cleaned up).
    """
    inst = _InstanceFromDict(instance)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or timeout < 0:
        Fail("Invalid shutdown timeout %r", timeout)
    hv = GetHypervisor(inst.hypervisor)
    deadline = time.monotonic() + timeout
    tried = False
    while _IsRunning(hv, inst) and time.monotonic() < deadline:
        try:
            hv.StopInstance(inst, retry=tried, timeout=int(timeout))
        except errors.HypervisorError as err:
            if _IsRunning(hv, inst):
                logging.warning("Clean shutdown of %s failed: %s", inst.name,
                                err)
        tried = True
        if _IsRunning(hv, inst):
            time.sleep(_SHUTDOWN_POLL_INTERVAL)
    if _IsRunning(hv, inst):
        logging.warning("Instance %s did not stop in %s seconds, forcing it",
                        inst.name, timeout)
        try:
            hv.StopInstance(inst, force=True)
        except errors.HypervisorError as err:
            Fail("Failed to force stop instance %s: %s", inst.name, err)
        if _IsRunning(hv, inst):
            Fail("Could not shutdown instance %s even by destroy",
                  inst.name)
    try:
        hv.CleanupInstance(inst.name)
    except errors.HypervisorError as err:
        logging.warning("Failed to clean up after instance %s: %s",
                        inst.name, err)
    io.RemoveFile(_BlockDevicesFile(inst.name))


def instance_reboot(instance: dict, reboot_type: str,
                    shutdown_timeout: float) -> None:
    """Reboot a running instance.

    Soft: inside the instance (the hypervisor's RebootInstance). Hard: stop
    and start again on the block devices it was started with. A full
    reboot also restarts the disks and is done by the master.
    """
    inst = _InstanceFromDict(instance)
    hv = GetHypervisor(inst.hypervisor)
    if not _IsRunning(hv, inst):
        Fail("Cannot reboot instance %s that is not running", inst.name)
    if reboot_type == constants.INSTANCE_REBOOT_SOFT:
        try:
            hv.RebootInstance(inst)
        except errors.HypervisorError as err:
            Fail("Failed to soft reboot instance %s: %s", inst.name, err)
    elif reboot_type == constants.INSTANCE_REBOOT_HARD:
        block_devices = _SavedBlockDevices(inst.name)
        instance_shutdown(instance, shutdown_timeout)
        instance_start(instance, block_devices, False)
    else:
        Fail("Invalid reboot_type received: %r", reboot_type)


def _InfoDict(info: hv_base.InstanceInfo) -> dict[str, Any]:
    _, _, memory, vcpus, state, cpu_time = info
    return {"memory": memory, "vcpus": vcpus, "state": state,
            "time": cpu_time}


def _HvParamsOf(all_hvparams: Any, name: str) -> dict | None:
    if not isinstance(all_hvparams, dict):
        Fail("Invalid hypervisor parameters %r", all_hvparams)
    return all_hvparams.get(name)


def instance_info(instance_name: str, hname: str,
                  hvparams: dict | None) -> dict[str, Any]:
    """memory, vcpus, state and time of a running instance; {} if none."""
    hv = GetHypervisor(hname)
    try:
        info = hv.GetInstanceInfo(instance_name, hvparams)
    except errors.HypervisorError as err:
        Fail("Cannot get information about %s: %s", instance_name, err)
    return _InfoDict(info) if info is not None else {}


def all_instances_info(hv_names: list[str],
                       all_hvparams: dict) -> dict[str, dict]:
    """Runtime information of every instance, keyed by name.

    An instance reported by two hypervisors with different figures is an
    error (it can only run once).
    """
    if not isinstance(hv_names, list):
        Fail("Invalid hypervisor list %r", hv_names)
    result: dict[str, dict] = {}
    for hname in hv_names:
        hv = GetHypervisor(hname)
        try:
            infos = hv.GetAllInstancesInfo(_HvParamsOf(all_hvparams, hname))
        except errors.HypervisorError as err:
            Fail("Cannot list the %s instances: %s", hname, err)
        for info in infos:
            value = _InfoDict(info)
            if info[0] in result and result[info[0]] != value:
                Fail("Instance %s is running twice with different"
                      " parameters", info[0])
            result[info[0]] = value
    return result


def instance_list(hv_names: list[str], all_hvparams: dict) -> list[str]:
    """Names of the instances running on this node, sorted."""
    if not isinstance(hv_names, list):
        Fail("Invalid hypervisor list %r", hv_names)
    names: set[str] = set()
    for hname in hv_names:
        hv = GetHypervisor(hname)
        try:
            names.update(hv.ListInstances(_HvParamsOf(all_hvparams, hname)))
        except errors.HypervisorError as err:
            Fail("Error enumerating instances (hypervisor %s): %s", hname,
                  err)
    return sorted(names)


def instance_balloon_memory(instance: dict, memory: int) -> None:
    """Change the memory of a running instance; no-op if it is stopped."""
    inst = _InstanceFromDict(instance)
    if isinstance(memory, bool) or not isinstance(memory, int) or \
            memory <= 0:
        Fail("Invalid memory size %r", memory)
    hv = GetHypervisor(inst.hypervisor)
    if not _IsRunning(hv, inst):
        logging.info("Instance %s is not running, cannot balloon", inst.name)
        return
    try:
        hv.BalloonInstanceMemory(inst, memory)
    except errors.HypervisorError as err:
        Fail("Failed to balloon instance memory: %s", err)


def instance_console_info(instance: dict, primary_node: dict,
                          node_group: dict | None) -> dict[str, Any]:
    """How to reach the instance's console (InstanceConsole fields)."""
    inst = _InstanceFromDict(instance)
    try:
        node_obj = objects.Node.FromDict(dict(primary_node))
        group_obj = (objects.NodeGroup.FromDict(dict(node_group))
                     if node_group else None)
    except (errors.ConfigurationError, TypeError) as err:
        Fail("Invalid node or group: %s", err)
    hv = GetHypervisor(inst.hypervisor)
    return hv.GetInstanceConsole(inst, node_obj, group_obj, inst.hvparams,
                                 inst.beparams)


def hypervisor_validate_params(hvname: str, hvparams: dict) -> None:
    """Check filled parameters against this node (files, devices)."""
    hv = GetHypervisor(hvname)
    try:
        hv.ValidateParameters(hvparams)
    except errors.HypervisorError as err:
        Fail("Hypervisor parameter validation failed: %s", err)


def _MigrationStep(fn: Any, what: str, instance: objects.Instance,
                   *args: Any) -> Any:
    try:
        return fn(instance, *args)
    except errors.HypervisorError as err:
        Fail("Failed to %s of instance %s: %s", what, instance.name, err)


def migration_info(instance: dict) -> str:
    """Data the target node needs to accept the instance."""
    inst = _InstanceFromDict(instance)
    hv = GetHypervisor(inst.hypervisor)
    return _MigrationStep(hv.MigrationInfo, "get the migration info", inst)


def accept_instance(instance: dict, info: str, target: str,
                    block_devices: list) -> None:
    """Target side: prepare to receive the migrating instance.

    The block devices are kept as instance_start keeps them, so that the
    instance, once here, restarts on this node's devices.
    """
    inst = _InstanceFromDict(instance)
    devices = _BlockDevices(block_devices)
    hv = GetHypervisor(inst.hypervisor)
    saved = _BlockDevicesFile(inst.name)
    io.EnsureDirs([(pathutils.DISK_LINKS_DIR, 0o750)])
    io.WriteFile(saved, data=serializer.DumpJson(block_devices))
    try:
        _MigrationStep(hv.AcceptInstance, "accept the migration", inst,
                       info, target, devices)
    except Exception:
        io.RemoveFile(saved)
        raise


def instance_migrate(cluster_name: str, instance: dict, target: str,
                     live: bool) -> None:
    """Source side: send the running instance to ``target``."""
    inst = _InstanceFromDict(instance)
    hv = GetHypervisor(inst.hypervisor)
    if not _IsRunning(hv, inst):
        Fail("Cannot migrate instance %s: not running on this node",
              inst.name)
    try:
        hv.MigrateInstance(cluster_name, inst, target, bool(live))
    except errors.HypervisorError as err:
        Fail("Failed to migrate instance %s: %s", inst.name, err)


def instance_get_migration_status(instance: dict) -> dict[str, Any]:
    """Source side: progress of the migration ({"status": ...})."""
    inst = _InstanceFromDict(instance)
    hv = GetHypervisor(inst.hypervisor)
    return _MigrationStep(hv.GetMigrationStatus,
                          "get the migration status", inst)


def finalize_migration_dst(instance: dict, info: str, success: bool) -> None:
    """Target side: take over the instance, or clean up after failure."""
    inst = _InstanceFromDict(instance)
    hv = GetHypervisor(inst.hypervisor)
    if not success:
        io.RemoveFile(_BlockDevicesFile(inst.name))
    _MigrationStep(hv.FinalizeMigrationDst, "finalize the migration", inst,
                   info, bool(success))


def finalize_migration_src(instance: dict, success: bool, live: bool) -> None:
    """Source side: drop the migrated instance, or resume it."""
    inst = _InstanceFromDict(instance)
    hv = GetHypervisor(inst.hypervisor)
    _MigrationStep(hv.FinalizeMigrationSource, "finalize the migration",
                   inst, bool(success), bool(live))
    if success:
        io.RemoveFile(_BlockDevicesFile(inst.name))
