"""Helpers shared by the instance LUs, and their base class.

Nodes never apply defaults: every instance sent to a node goes through
objects.Cluster.InstanceRpcDict (filled hv/be/nic parameters). Device
paths answered by blockdev_assemble are local to the node that answered
and only ever go back to that node.
"""

import contextlib
import random
import secrets
import time
from typing import Any, Iterator

from ganeti import constants, errors, impexp, locking, objects
from ganeti.cmdlib import operating_system
from ganeti.cmdlib.base import ExpandInstanceUuidAndName, LogicalUnit
from ganeti.cmdlib.cluster import HypervisorClass
from ganeti.parameters.base import GetUpdatedParams
from ganeti.utils.text import FormatSeconds


def CheckNodeOnline(lu: LogicalUnit, node_uuid: str) -> None:
    """Refuse an offline node."""
    node = lu.cfg.GetNodeInfo(node_uuid)
    if node.offline:
        raise errors.OpPrereqError("Can't use offline node %s" % node.name,
                                   errors.ECODE_STATE)


def CheckNodeNotDrained(lu: LogicalUnit, node_uuid: str) -> None:
    node = lu.cfg.GetNodeInfo(node_uuid)
    if node.drained:
        raise errors.OpPrereqError("Can't use drained node %s" % node.name,
                                   errors.ECODE_STATE)


def CheckNodeVmCapable(lu: LogicalUnit, node_uuid: str) -> None:
    node = lu.cfg.GetNodeInfo(node_uuid)
    if not node.vm_capable:
        raise errors.OpPrereqError("Can't use non-vm_capable node %s" %
                                   node.name, errors.ECODE_STATE)


def CheckInstanceOnline(instance: objects.Instance) -> None:
    """Refuse an instance marked offline (it may not run anywhere)."""
    if instance.admin_state == objects.ADMINST_OFFLINE:
        raise errors.OpPrereqError("Instance '%s' is marked to be offline" %
                                   instance.name, errors.ECODE_STATE)


def NodeInfo(lu: LogicalUnit, node_uuid: str, hvname: str) -> dict:
    """The node's node_info answer (its file storage and ``hvname``).

    Asked once per LU and node: the checks of one CheckPrereq (memory,
    disk, CPUs) judge the node as it was at one moment, for one RPC.
    """
    cache = lu.__dict__.setdefault("_node_info_cache", {})
    key = (node_uuid, hvname)
    if key not in cache:
        storage_dir = lu.cfg.GetClusterInfo().file_storage_dir
        result = lu.rpc.call_node_info([node_uuid], [storage_dir],
                                       [hvname])[node_uuid]
        result.Raise("Can't get the resources of node %s" %
                     lu.cfg.GetNodeInfo(node_uuid).name, prereq=True,
                     ecode=errors.ECODE_ENVIRON)
        cache[key] = result.payload or {}
    return cache[key]


def CheckNodeFreeMemory(lu: LogicalUnit, node_uuid: str, reason: str,
                        requested: int, hvname: str) -> int:
    """Refuse unless the node has ``requested`` MiB free for ``hvname``.

    The refusal names the node, what the memory is for, the amount needed
    and the amount available. Returns the free memory.
    """
    node = lu.cfg.GetNodeInfo(node_uuid)
    free = (NodeInfo(lu, node_uuid, hvname).get("hv", {}).get(hvname, {})
            .get("memory_free"))
    if not isinstance(free, int):
        raise errors.OpPrereqError("Can't compute free memory on node %s,"
                                   " result was '%s'" % (node.name, free),
                                   errors.ECODE_ENVIRON)
    if requested > free:
        raise errors.OpPrereqError(
            "Not enough memory on node %s for %s: needed %s MiB, available"
            " %s MiB" % (node.name, reason, requested, free),
            errors.ECODE_NORES)
    return free


def CheckNodeFreeDisk(lu: LogicalUnit, node_uuid: str, requested: int,
                      hvname: str) -> int:
    """Refuse unless the node's file storage has ``requested`` MiB free.

    Only the ``file`` template has per-node space to check: shared,
    adopted and external storage is the admin's. The refusal names the
    node, the amount needed and the amount available. Returns the free
    space.
    """
    node = lu.cfg.GetNodeInfo(node_uuid)
    storage = NodeInfo(lu, node_uuid, hvname).get("storage") or [{}]
    free = storage[0].get("storage_free")
    if not isinstance(free, int):
        raise errors.OpPrereqError(
            "Can't compute free disk space on node %s: %s" %
            (node.name, storage[0].get("error", "no data")),
            errors.ECODE_ENVIRON)
    if requested > free:
        raise errors.OpPrereqError(
            "Not enough disk space on target node %s for file storage:"
            " required %d MiB, available %d MiB" %
            (node.name, requested, free), errors.ECODE_NORES)
    return free


def CheckCompressionTool(lu: LogicalUnit, compression_tool: str) -> None:
    """Refuse a compression of data transfers (impexp) that the cluster
    does not allow (its ``compression_tools``) or this version can't do.
    """
    if compression_tool == impexp.IEC_NONE:
        return
    allowed = lu.cfg.GetClusterInfo().compression_tools or []
    if compression_tool not in allowed:
        raise errors.OpPrereqError(
            "Compression tool not allowed, tools allowed are [%s]" %
            ", ".join(allowed), errors.ECODE_INVAL)
    if compression_tool not in impexp.IEC_ALL:
        raise errors.OpPrereqError(
            "Compression tool %s is not supported by this version"
            " (supported: %s)" %
            (compression_tool, ", ".join(sorted(impexp.IEC_ALL))),
            errors.ECODE_INVAL)


def AssembleInstanceDisks(lu: LogicalUnit, instance: objects.Instance,
                          disks: list[objects.Disk],
                          node_uuid: str | None = None,
                          ignore_secondaries: bool = False) -> list[list]:
    """Make the disks usable on the primary node (or ``node_uuid``, the
    target of a migration, which shares the externally mirrored disks).

    As Ganeti, in two passes: the secondary role of mirrored disks first
    (their nodes serve the replica), then the primary's, which connects
    to them. A secondary that fails is an error unless
    ``ignore_secondaries`` (the disk then runs degraded). Returns
    ``[[disk dict, device path], ...]`` in disk order, what instance_start
    takes. A failure shuts the disks down again there.
    """
    node = node_uuid or instance.primary_node
    inst_dict = {"name": instance.name}
    for idx, disk in enumerate(disks):
        for secondary in disk.nodes or []:
            if secondary == node or \
                    disk.dev_type not in constants.DTS_INT_MIRROR:
                continue
            answer = lu.rpc.call_blockdev_assemble(secondary, disk,
                                                   inst_dict, False, idx)
            if not answer.fail_msg:
                continue
            lu.LogWarning("Could not prepare block device disk/%d on node"
                          " %s (is_primary=False, pass=1): %s", idx,
                          answer.node, answer.fail_msg)
            if not ignore_secondaries:
                ShutdownInstanceDisks(lu, instance, disks)
                answer.Raise("Cannot activate block device disk/%d of"
                             " instance %s" % (idx, instance.name))
    result = []
    for idx, disk in enumerate(disks):
        answer = lu.rpc.call_blockdev_assemble(node, disk.ToDict(),
                                               inst_dict, True, idx)
        if answer.fail_msg:
            ShutdownInstanceDisks(lu, instance, disks, node_uuid=node)
            answer.Raise("Cannot activate block device disk/%d of instance"
                         " %s" % (idx, instance.name))
        result.append([disk.ToDict(), answer.payload])
    return result


_SYNC_NODE_RETRIES = 10
_SYNC_DEGRADED_RETRIES = 10


# A mirror in sync still counts the writes in flight as not copied:
# how often (0.5 s apart) SettledMirrorStatus looks again
_MIRROR_SETTLE_TRIES = 10


def SettledMirrorStatus(rpc: Any, node_uuid: str, disks: list,
                        unsound: Any) -> Any:
    """The ``blockdev_getmirrorstatus`` answer of a primary once no
    disk's status is ``unsound(status)``, or the last answer after a few
    seconds (a failed call at once)."""
    for attempt in range(_MIRROR_SETTLE_TRIES):
        if attempt:
            time.sleep(0.5)
        result = rpc.call_blockdev_getmirrorstatus(node_uuid, disks)
        if result.fail_msg or not any(unsound(status)
                                      for status in result.payload):
            break
    return result


def WaitForSync(lu: LogicalUnit, instance: objects.Instance,
                disks: list[objects.Disk] | None = None,
                oneshot: bool = False) -> bool:
    """Poll the primary's mirrors until in sync (Ganeti's WaitForSync).

    Logs a progress line per resyncing disk each round; ``oneshot`` looks
    once. A disk degraded without a resync in progress is looked at for
    a few more seconds, to tell a transient state from a lasting one.
    Returns False if some disk stays degraded.
    """
    if disks is None:
        disks = lu.cfg.GetInstanceDisks(instance.uuid)
    disks = [disk for disk in disks
             if disk.dev_type in constants.DTS_INT_MIRROR]
    if not disks:
        return True
    if not oneshot:
        lu.LogInfo("Waiting for instance %s to sync disks", instance.name)
    node_uuid = instance.primary_node
    (node_name, ) = lu.cfg.GetNodeNames([node_uuid])
    retries = 0
    degr_retries = _SYNC_DEGRADED_RETRIES
    while True:
        max_time = 0.0
        done = True
        cumul_degraded = False
        result = lu.rpc.call_blockdev_getmirrorstatus(
            node_uuid, [disk.ToDict() for disk in disks])
        if result.fail_msg:
            lu.LogWarning("Can't get any data from node %s: %s", node_name,
                          result.fail_msg)
            retries += 1
            if retries >= _SYNC_NODE_RETRIES:
                raise errors.RemoteError("Can't contact node %s for mirror"
                                         " data, aborting." % node_name)
            time.sleep(6)
            continue
        retries = 0
        for disk, mstat in zip(disks, result.payload):
            _, _, _, percent, eta, degraded, _ = mstat
            cumul_degraded = cumul_degraded or (degraded and percent is None)
            if percent is None:
                continue
            done = False
            if eta is not None:
                rem_time = "%s remaining (estimated)" % FormatSeconds(eta)
                max_time = eta
            else:
                rem_time = "no time estimate"
                max_time = 5
            lu.LogInfo("- device %s: %5.2f%% done, %s", disk.iv_name,
                       percent, rem_time)
        if (done or oneshot) and cumul_degraded and degr_retries > 0:
            degr_retries -= 1
            time.sleep(1)
            continue
        if done or oneshot:
            break
        time.sleep(min(60.0, max_time))
    if done:
        lu.LogInfo("Instance %s's disks are in sync", instance.name)
    return not cumul_degraded


def ShutdownInstanceDisks(lu: LogicalUnit, instance: objects.Instance,
                          disks: list[objects.Disk],
                          node_uuid: str | None = None) -> bool:
    """Shut the disks down on their nodes (or only on ``node_uuid``);
    False (after warnings) if some node failed."""
    ok = True
    for disk in disks:
        nodes = ([node_uuid] if node_uuid
                 else disk.nodes or [instance.primary_node])
        for node in nodes:
            result = lu.rpc.call_blockdev_shutdown(node, disk.ToDict())
            if result.fail_msg:
                lu.LogWarning("Could not shutdown block device %s on node"
                              " %s: %s", disk.iv_name, result.node,
                              result.fail_msg)
                ok = False
    return ok


@contextlib.contextmanager
def AssembledForOS(lu: LogicalUnit, instance: objects.Instance,
                   disks: list[objects.Disk],
                   osparams_secret: dict | None = None) -> Iterator[dict]:
    """The instance as the OS RPCs take it, its disks assembled meanwhile.

    For running an OS script (create, import, rename) on a stopped
    instance: the disks are shut down again afterwards, whatever happened.
    Secret OS parameters reach the scripts of this one run, never the
    configuration.
    """
    block_devices = AssembleInstanceDisks(lu, instance, disks)
    try:
        os_instance = operating_system.InstanceOsRpcDict(
            lu.cfg.GetClusterInfo(), instance,
            [dict(disk_dict, dev_path=path)
             for disk_dict, path in block_devices])
        os_instance["osparams_secret"] = osparams_secret or {}
        yield os_instance
    finally:
        ShutdownInstanceDisks(lu, instance, disks)


def CreateDisks(lu: LogicalUnit, instance: objects.Instance,
                disks: list[objects.Disk],
                created: list[objects.Disk] | None = None,
                first_idx: int = 0) -> None:
    """Create each disk (index ``first_idx`` on) on its nodes.

    The secondary side of a mirrored disk first, as Ganeti does, and
    serving its replica: the primary's side, which its creation
    assembles, connects to it. ``created``, if given, collects the disks
    created at least in part, for RemoveDisks on a failure.
    """
    info = GetInstanceInfoText(instance)
    for idx, disk in enumerate(disks, first_idx):
        for node_uuid in reversed(disk.nodes):
            on_primary = node_uuid == instance.primary_node
            result = lu.rpc.call_blockdev_create(
                node_uuid, disk.ToDict(), disk.size, instance.name,
                on_primary, info, False)
            result.Raise("Can't create block device %s on node %s for"
                         " instance %s" % (disk.iv_name, result.node,
                                           instance.name))
            if created is not None and disk not in created:
                created.append(disk)
            if not on_primary and disk.dev_type in constants.DTS_INT_MIRROR:
                lu.rpc.call_blockdev_assemble(
                    node_uuid, disk.ToDict(), {"name": instance.name}, False,
                    idx).Raise("Can't serve block device %s on node %s" %
                               (disk.iv_name, result.node))


def RemoveDisks(lu: LogicalUnit, instance_name: str,
                disks: list[objects.Disk]) -> bool:
    """Destroy the disks' storage on their nodes; False (after warnings)
    if some removal failed."""
    ok = True
    for disk in disks:
        for node_uuid in disk.nodes:
            result = lu.rpc.call_blockdev_remove(node_uuid, disk.ToDict())
            if result.fail_msg:
                lu.LogWarning("Could not remove disk %s of instance %s on"
                              " node %s: %s", disk.iv_name, instance_name,
                              result.node, result.fail_msg)
                ok = False
    return ok


def RemoveInstance(lu: LogicalUnit, instance: objects.Instance,
                   ignore_failures: bool) -> None:
    """Destroy a stopped instance's disks and drop it from the config.

    With ``ignore_failures`` the instance is forgotten even if some disk
    could not be removed (after warnings); its lock goes after Exec.
    """
    disks = lu.cfg.GetInstanceDisks(instance.uuid)
    if not RemoveDisks(lu, instance.name, disks):
        if not ignore_failures:
            raise errors.OpExecError("Can't remove instance's disks")
        lu.LogWarning("Can't remove the disks of instance %s",
                      instance.name)
    lu.cfg.RemoveInstance(instance.uuid)
    lu.remove_locks[locking.LEVEL_INSTANCE] = [instance.uuid]


def StartInstance(lu: LogicalUnit, instance: objects.Instance,
                  hvparams: dict | None = None,
                  beparams: dict | None = None,
                  paused: bool = False,
                  ignore_secondaries: bool = False) -> None:
    """Assemble the disks and start the instance on its primary node.

    ``hvparams``/``beparams`` override the effective ones for this start
    only. A failed start shuts the disks down again; a successful one
    records the disks as active (the configuration's copy: ``instance``
    is stale afterwards).
    """
    disks = lu.cfg.GetInstanceDisks(instance.uuid)
    block_devices = AssembleInstanceDisks(
        lu, instance, disks, ignore_secondaries=ignore_secondaries)
    cluster = lu.cfg.GetClusterInfo()
    result = lu.rpc.call_instance_start(
        instance.primary_node,
        cluster.InstanceRpcDict(instance, hvparams, beparams),
        block_devices, paused)
    if result.fail_msg:
        ShutdownInstanceDisks(lu, instance, disks)
        result.Raise("Could not start instance %s" % instance.name)
    if disks:
        SetDisksActive(lu, instance.uuid, True)


def InstanceRuntimeInfo(lu: LogicalUnit,
                        instance: objects.Instance) -> dict[str, Any]:
    """memory, vcpus, state and time of the instance as its primary node
    runs it; empty if it does not run."""
    result = lu.rpc.call_instance_info(
        instance.primary_node, instance.name, instance.hypervisor,
        lu.cfg.GetClusterInfo().FillHV(instance))
    result.Raise("Error checking node %s" % result.node, prereq=True,
                 ecode=errors.ECODE_ENVIRON)
    return result.payload or {}


def InstanceRunning(lu: LogicalUnit, instance: objects.Instance) -> bool:
    return bool(InstanceRuntimeInfo(lu, instance))


def GuestRunning(lu: LogicalUnit, instance: objects.Instance) -> bool:
    """Whether the instance runs and its guest has not powered itself off
    (USER_down: the hypervisor process stays, a start boots it again)."""
    info = InstanceRuntimeInfo(lu, instance)
    return bool(info) and \
        info.get("state") != constants.HV_INSTANCE_SHUTDOWN


def SetAdminState(lu: LogicalUnit, instance_uuid: str, state: str,
                   source: str = objects.ADMIN_SOURCE) -> objects.Instance:
    instance = lu.cfg.GetInstanceInfo(instance_uuid)
    if (instance.admin_state, instance.admin_state_source) != (state,
                                                                 source):
        instance.admin_state = state
        instance.admin_state_source = source
        lu.cfg.Update(instance)
    return instance


def SetDisksActive(lu: LogicalUnit, instance_uuid: str,
                   active: bool) -> objects.Instance:
    """Record whether the instance's disks should be assembled.

    The watcher re-activates the disks of instances marked so after a
    node reboot (Ganeti's MarkInstanceDisksActive/Inactive).
    """
    instance = lu.cfg.GetInstanceInfo(instance_uuid)
    if instance.disks_active != active:
        instance.disks_active = active
        lu.cfg.Update(instance)
    return instance


def SetInstancePrimaryNode(lu: LogicalUnit, instance_uuid: str,
                           node_uuid: str) -> objects.Instance:
    """Make ``node_uuid`` the instance's primary node in the configuration
    (its disks follow, in the same write); returns the updated instance."""
    lu.cfg.SetInstancePrimaryNode(instance_uuid, node_uuid)
    return lu.cfg.GetInstanceInfo(instance_uuid)


def GetInstanceInfoText(instance: objects.Instance) -> str:
    """The metadata stored with an instance's disks on the nodes."""
    return "originstname+%s" % instance.name


# Admin states an operation accepts (Ganeti's names)
INSTANCE_DOWN = frozenset([objects.ADMINST_DOWN])
INSTANCE_NOT_RUNNING = frozenset([objects.ADMINST_DOWN,
                                  objects.ADMINST_OFFLINE])


def CheckInstanceState(lu: LogicalUnit, instance: objects.Instance,
                       req_states: frozenset[str], msg: str) -> None:
    """Refuse an instance whose admin state is not in ``req_states``.

    When ``req_states`` excludes "up", the instance must not actually run
    either (it may run against its admin state); that is not checked on
    an offline primary node, which can't be asked. ``msg`` says what
    can't be done, e.g. "cannot recreate disks".
    """
    if instance.admin_state not in req_states:
        raise errors.OpPrereqError("Instance '%s' is marked to be %s, %s" %
                                   (instance.name, instance.admin_state,
                                    msg), errors.ECODE_STATE)
    if objects.ADMINST_UP in req_states:
        return
    if lu.cfg.GetNodeInfo(instance.primary_node).offline:
        lu.LogWarning("Primary node offline, ignoring check that instance"
                      " is down")
    elif InstanceRunning(lu, instance):
        raise errors.OpPrereqError("Instance %s is running, %s" %
                                   (instance.name, msg), errors.ECODE_STATE)


def ConvertBeParams(beparams: dict) -> dict:
    """Backend parameters typed on the command line, converted and checked
    (legacy names and sizes with units included)."""
    return GetUpdatedParams({}, beparams, objects.BE_PARAMETERS, "backend")


def ConvertHvParams(hv_name: str, hvparams: dict) -> dict:
    """Instance hypervisor parameters, converted and checked (overrides)."""
    globals_set = sorted(objects.HVC_GLOBALS & set(hvparams))
    if globals_set:
        raise errors.OpPrereqError(
            "The following hypervisor parameters are global and cannot be"
            " customized at instance level, please modify them at cluster"
            " level: %s" % ", ".join(globals_set), errors.ECODE_INVAL)
    return GetUpdatedParams({}, hvparams, HypervisorClass(hv_name).PARAMETERS,
                            "%s hypervisor" % hv_name)


def CheckMinMaxMem(filled_be: dict) -> None:
    minmem, maxmem = (filled_be[objects.BE_MINMEM],
                      filled_be[objects.BE_MAXMEM])
    if minmem > maxmem:
        raise errors.OpPrereqError("Minimum memory (%s) must not be greater"
                                   " than maximum memory (%s)" %
                                   (minmem, maxmem), errors.ECODE_INVAL)


# NICs ----------------------------------------------------------------------

def UsedMacs(cfg: Any, exclude: str | None = None) -> set[str]:
    """The MAC addresses of the NICs of every instance but ``exclude``
    (a UUID)."""
    return {nic.mac for uuid, inst in cfg.GetAllInstancesInfo().items()
            if uuid != exclude for nic in inst.nics}


def GenerateMAC(prefix: str, used: set[str]) -> str:
    """A MAC address with the cluster's prefix not in ``used``."""
    for _ in range(1000):
        mac = "%s:%02x:%02x:%02x" % (prefix, random.randint(0, 255),
                                     random.randint(0, 255),
                                     random.randint(0, 255))
        if mac not in used:
            return mac
    raise errors.OpExecError("Can't generate a unique MAC address with"
                             " prefix %s" % prefix)


# Creation ------------------------------------------------------------------

def DrbdLogicalId(cfg: Any, pnode_uuid: str, snode_uuid: str,
                  taken: dict[str, set[int]]) -> list:
    """A new drbd disk's ``(pnode, snode, port, pminor, sminor, secret)``.

    The port comes from the cluster's DRBD port range through the
    configuration (given back when the instance is removed), each minor is
    the lowest one free on its node (``taken`` collects those of the disks
    being built), the secret is random (Ganeti's GenerateDRBDSecret).
    """
    minors = DrbdMinors(cfg, [pnode_uuid, snode_uuid], taken)
    return [pnode_uuid, snode_uuid, cfg.AllocatePort(), minors[0],
            minors[1], secrets.token_hex(20)]


def DrbdMinors(cfg: Any, node_uuids: list[str],
               taken: dict[str, set[int]]) -> list[int]:
    """The lowest drbd minor free on each node (added to ``taken``, the
    minors of the disks being built)."""
    used: dict[str, set[int]] = {node: set(minors)
                                 for node, minors in taken.items()}
    for disk in cfg.GetAllDisksInfo().values():
        if disk.dev_type == constants.DT_DRBD8:
            for node, minor in zip(disk.logical_id[:2],
                                   disk.logical_id[3:5]):
                used.setdefault(node, set()).add(minor)
    minors = []
    for node in node_uuids:
        minor = min(set(range(len(used.get(node, ())) + 1)) -
                    used.get(node, set()))
        taken.setdefault(node, set()).add(minor)
        used.setdefault(node, set()).add(minor)
        minors.append(minor)
    return minors



# Hooks ---------------------------------------------------------------------

def BuildInstanceHookEnv(lu: LogicalUnit, instance: objects.Instance,
                         disks: list[objects.Disk] | None = None,
                         override: dict[str, Any] | None = None
                         ) -> dict[str, Any]:
    """The INSTANCE_* hook variables of an instance (Ganeti's names).

    ``disks`` defaults to the instance's disks in the configuration; an
    instance being created passes its planned ones. ``override`` replaces
    computed values, for an operation whose hooks must describe the
    instance as it will be.
    """
    cfg = lu.cfg
    cluster = cfg.GetClusterInfo()
    filled_be = cluster.FillBE(instance)
    if disks is None:
        disks = cfg.GetInstanceDisks(instance.uuid)
    secondaries = dict.fromkeys(node for disk in disks
                                for node in disk.nodes or []
                                if node != instance.primary_node)
    env: dict[str, Any] = {
        "OP_TARGET": instance.name,
        "INSTANCE_NAME": instance.name,
        "INSTANCE_PRIMARY": cfg.GetNodeNames([instance.primary_node])[0],
        "INSTANCE_SECONDARIES": " ".join(cfg.GetNodeNames(
            list(secondaries))),
        "INSTANCE_OS_TYPE": instance.os,
        "INSTANCE_STATUS": instance.admin_state,
        "INSTANCE_MEMORY": filled_be[objects.BE_MAXMEM],
        "INSTANCE_MAXMEM": filled_be[objects.BE_MAXMEM],
        "INSTANCE_MINMEM": filled_be[objects.BE_MINMEM],
        "INSTANCE_VCPUS": filled_be[objects.BE_VCPUS],
        "INSTANCE_DISK_TEMPLATE": (disks[0].dev_type if disks
                                   else constants.DT_DISKLESS),
        "INSTANCE_HYPERVISOR": instance.hypervisor,
        "INSTANCE_TAGS": " ".join(sorted(instance.GetTags())),
    }
    env["INSTANCE_NIC_COUNT"] = len(instance.nics)
    for idx, nic in enumerate(instance.nics):
        filled = cluster.SimpleFillNIC(nic.nicparams)
        prefix = "INSTANCE_NIC%d_" % idx
        env[prefix + "NAME"] = nic.name or ""
        env[prefix + "UUID"] = nic.uuid or ""
        env[prefix + "IP"] = nic.ip or ""
        env[prefix + "MAC"] = nic.mac
        env[prefix + "MODE"] = filled[objects.NIC_MODE]
        env[prefix + "LINK"] = filled[objects.NIC_LINK]
        env[prefix + "VLAN"] = filled.get(objects.NIC_VLAN, "")
        if filled[objects.NIC_MODE] == objects.NIC_MODE_BRIDGED:
            env[prefix + "BRIDGE"] = filled[objects.NIC_LINK]
    env["INSTANCE_DISK_COUNT"] = len(disks)
    for idx, disk in enumerate(disks):
        prefix = "INSTANCE_DISK%d_" % idx
        env[prefix + "NAME"] = disk.name or ""
        env[prefix + "UUID"] = disk.uuid or ""
        env[prefix + "SIZE"] = disk.size
        env[prefix + "MODE"] = disk.mode
    for source, kind in ((filled_be, "BE"),
                         (cluster.FillHV(instance), "HV")):
        for key, value in source.items():
            env["INSTANCE_%s_%s" % (kind, key)] = value
    env.update(override or {})
    return env


class InstanceLU(LogicalUnit):
    """An LU working on one existing instance and its nodes.

    Its hooks run on the master and the instance's nodes with the
    INSTANCE_* environment; subclasses set HPATH and may add variables
    in ``_ExtraHookEnv``.
    """

    HTYPE = constants.HTYPE_INSTANCE
    REQ_BGL = False
    # The last hooks environment built (the pre phase's always is): the
    # post phase of an operation that removed the instance reuses it
    _hooks_env: dict[str, Any]

    def ExpandNames(self) -> None:
        self.op.instance_uuid, self.op.instance_name = \
            ExpandInstanceUuidAndName(self.cfg, self.op.instance_uuid,
                                      self.op.instance_name)
        self.needed_locks = {
            locking.LEVEL_INSTANCE: [self.op.instance_uuid],
            locking.LEVEL_NODE: [],
            locking.LEVEL_NODE_RES: [],
        }

    def DeclareLocks(self, level: int) -> None:
        if level in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            self.needed_locks[level] = self.cfg.GetInstanceNodes(
                self.op.instance_uuid)

    def CheckPrereq(self) -> None:
        self.instance = self.cfg.GetInstanceInfo(self.op.instance_uuid)
        if self.instance is None:
            raise errors.OpPrereqError("Instance '%s' not known" %
                                       self.op.instance_name,
                                       errors.ECODE_NOENT)
        self.pnode = self.cfg.GetNodeInfo(self.instance.primary_node)

    def _ExtraHookEnv(self) -> dict[str, Any]:
        """The operation's own hook variables (beside INSTANCE_*)."""
        return {}

    def BuildHooksEnv(self) -> dict[str, Any]:
        # The post phase describes the instance as the operation left it;
        # one the operation removed keeps its last description
        current = self.cfg.GetInstanceInfo(self.instance.uuid)
        if current is None:
            return self._hooks_env
        env = BuildInstanceHookEnv(self, current)
        env.update(self._ExtraHookEnv())
        self._hooks_env = env
        return env

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        nodes = [self.cfg.GetMasterNode()] + \
            self.cfg.GetInstanceNodes(self.instance.uuid)
        return nodes, nodes
