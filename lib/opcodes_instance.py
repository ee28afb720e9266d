"""The instance and backup opcodes (part of ganeti.opcodes, which
re-exports them; see it for how parameters are declared)."""

from typing import Any

from ganeti import constants, errors, ht, impexp
from ganeti.opcodes_base import (
    OpCode, _OpParam, _PAllowRuntimeChgs, _PConflictsCheck, _PExplain,
    _PForce, _PIAllocFromDesc, _PIgnoreIpolicy, _PMigrationLive,
    _PMemberOf, _PMigrationMode, _PMigrationTargetNode,
    _PMigrationTargetNodeUuid, _PUnsupported, _PUseLocking, _TJobIdList,
    _TJobIdListOnly, _TMaybePrivateDict)


_PInstanceName = ("instance_name", ht.NoDefault, ht.THostname,
                  "Instance name")
_PInstanceUuid = ("instance_uuid", None, ht.TMaybeString,
                  "Instance UUID (filled in from instance_name)")
_PShutdownTimeout = ("shutdown_timeout", constants.DEFAULT_SHUTDOWN_TIMEOUT,
                     ht.TNonNegativeInt,
                     "How long to wait for the instance to shut down cleanly"
                     " before forcing it off (seconds)")
_PIgnoreOfflineNodes = ("ignore_offline_nodes", False, ht.TBool,
                        "Whether to ignore offline nodes")
_PNoRemember = ("no_remember", False, ht.TBool,
                "Do not remember the state change (the admin state stays)")


def _PInstanceCommunication(default: bool | None) -> _OpParam:
    return _PUnsupported("instance_communication", default, ht.TMaybeBool,
                         "Whether to give the instance a NIC for"
                         " communication with the cluster")


_PCompress = ("compress", impexp.IEC_NONE, ht.TNonEmptyString,
              "Compression of the data on its way between nodes: none or"
              " one of the cluster's compression tools")
# {"size": MiB, "mode": rw|ro, "name": ..., "adopt": device path}
_TDiskSpec = ht.TDictOf(ht.TElemOf(["size", "mode", "name", "adopt"]),
                        ht.TAny)
# {"mac": auto|generate|MAC, "ip": ...|pool, "mode": ..., "link": ...,
#  "vlan": ..., "name": ..., "network": name or UUID}
_TNicSpec = ht.TDictOf(ht.TElemOf(["mac", "ip", "mode", "link", "vlan",
                                   "name", "network"]), ht.TAny)


class OpInstanceCreate(OpCode):
    """Create an instance: its disks, its OS and its configuration."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName,
        ("mode", constants.INSTANCE_CREATE,
         ht.TElemOf(constants.INSTANCE_CREATE_MODES),
         "Instance creation mode: create, or import (from an export made"
         " by OpBackupExport; remote-import is not supported)"),
        _PConflictsCheck,
        _PUnsupported("forthcoming", False, ht.TBool,
                      "Whether to only reserve the resources of the"
                      " instance (a forthcoming instance)"),
        _PUnsupported("commit", False, ht.TBool,
                      "Whether to turn a forthcoming instance into a real"
                      " one"),
        _PUnsupported("identify_defaults", False, ht.TBool,
                      "Whether to reset the parameters equal to the"
                      " cluster defaults to their defaults"),
        ("osparams_private", None, _TMaybePrivateDict,
         "Private OS parameters for the instance (not shown by gnt-instance"
         " info)"),
        ("osparams_secret", None, _TMaybePrivateDict,
         "Secret OS parameters: given to the OS scripts of this creation"
         " only, never stored"),
        _PInstanceCommunication(False),
        _PUnsupported("helper_startup_timeout", None, ht.TMaybe(ht.TInt),
                      "Startup timeout of the installation helper VM"),
        _PUnsupported("helper_shutdown_timeout", None, ht.TMaybe(ht.TInt),
                      "Shutdown timeout of the installation helper VM"),
        _PUnsupported("source_handshake", None, ht.TMaybe(ht.TList),
                      "Remote import: signed handshake of the source"
                      " cluster"),
        _PUnsupported("source_x509_ca", None, ht.TMaybeString,
                      "Remote import: X509 CA of the source cluster"),
        _PUnsupported("source_instance_name", None, ht.TMaybeString,
                      "Remote import: instance name on the source cluster"),
        _PUnsupported("source_shutdown_timeout",
                      constants.DEFAULT_SHUTDOWN_TIMEOUT, ht.TNonNegativeInt,
                      "Remote import: how long the source waits for the"
                      " instance to shut down"),
        ("disks", ht.NoDefault, ht.TListOf(_TDiskSpec),
         "Disk descriptions: size (MiB), mode (rw or ro), name and, for"
         " templates adopting existing devices, adopt (the device path)"),
        ("nics", ht.NoDefault, ht.TListOf(_TNicSpec),
         "NIC descriptions: mac (auto, generate or an address), ip, mode,"
         " link, vlan and name"),
        ("disk_template", None,
         ht.TMaybe(ht.TElemOf(constants.DISK_TEMPLATES)),
         "Disk template (the cluster's first enabled one if not given)"),
        ("pnode", None, ht.TMaybeString, "Primary node"),
        ("pnode_uuid", None, ht.TMaybeString,
         "Primary node UUID (filled in from pnode)"),
        ("snode", None, ht.TMaybeString,
         "Secondary node (mirrored templates only)"),
        ("snode_uuid", None, ht.TMaybeString,
         "Secondary node UUID (filled in from snode)"),
        _PUnsupported("group_name", None, ht.TMaybeString,
                      "Node group the instance allocator places the"
                      " instance in"),
        _PIAllocFromDesc("Iallocator for deciding which node(s) to use"
                         " (the cluster's default when no node is given)"),
        ("opportunistic_locking", False, ht.TBool,
         "Whether to employ opportunistic locking for nodes, meaning nodes"
         " already locked by another opcode won't be considered for instance"
         " allocation (only when an iallocator is used)"),
        _PExplain,
        _PMemberOf,
        ("hypervisor", None, ht.TMaybe(ht.TElemOf(constants.HYPER_TYPES)),
         "Hypervisor (the cluster's default if not given)"),
        ("hvparams", {}, ht.TDict, "Hypervisor parameters for the instance"),
        ("beparams", {}, ht.TDict, "Backend parameters for the instance"),
        ("os_type", None, ht.TMaybeString,
         "Operating system (name or name+variant)"),
        ("osparams", {}, ht.TDict, "OS parameters for the instance"),
        ("force_variant", False, ht.TBool,
         "Whether to accept an OS variant the OS does not list"),
        ("no_install", None, ht.TMaybeBool,
         "Do not install the OS (the disks stay empty)"),
        ("name_check", True, ht.TBool,
         "Whether to resolve and check the instance's name"),
        ("ip_check", True, ht.TBool,
         "Whether to check the instance's IP address for conflicts (requires"
         " name_check)"),
        ("file_storage_dir", None, ht.TMaybeString,
         "Directory for the disk files, relative to the cluster's file"
         " storage directory"),
        ("file_driver", None,
         ht.TMaybe(ht.TElemOf(constants.FILE_DRIVER)),
         "Driver for file-based disks"),
        ("start", True, ht.TBool,
         "Whether to start the instance after creation"),
        ("wait_for_sync", True, ht.TBool,
         "Whether to wait for the first sync of mirrored disks (otherwise"
         " only degraded ones abort the creation)"),
        ("tags", [], ht.TListOf(ht.TNonEmptyString), "Instance tags"),
        _PIgnoreIpolicy,
        ("src_node", None, ht.TMaybeString,
         "Import: node holding the export (searched on all nodes if not"
         " given)"),
        ("src_node_uuid", None, ht.TMaybeString,
         "Import: UUID of the source node (filled in from src_node)"),
        ("src_path", None, ht.TMaybeString,
         "Import: the export, by name or as the path of its directory on"
         " the source node (the instance name if not given)"),
        _PCompress,
    ]
    OP_RESULT = ht.TListOf(ht.TNonEmptyString)


# Instance creation opcodes inside OpInstanceMultiAlloc (objects in memory,
# wire dicts in jobs and on LUXI, as Ganeti has them)
_TInstanceCreateOps = ht.WithDesc("list of OpInstanceCreate", "array")(
    ht.TListOf(ht.Check(lambda v: isinstance(v, OpInstanceCreate),
                        "OpInstanceCreate")))
_TStringList = ht.TListOf(ht.TNonEmptyString)


class OpInstanceMultiAlloc(OpCode):
    """Create several instances: one allocator run places them all, then
    one creation job each (the nodes filled in)."""
    OP_PARAMS = [
        ("opportunistic_locking", False, ht.TBool,
         "Whether to employ opportunistic locking for nodes, meaning nodes"
         " already locked by another opcode won't be considered for instance"
         " allocation (only when an iallocator is used)"),
        _PIAllocFromDesc("Iallocator for deciding the nodes of the instances"
                         " (the cluster's default when they name none)"),
        ("instances", [], _TInstanceCreateOps,
         "List of instance create opcodes describing the instances to"
         " allocate"),
    ]
    OP_RESULT = ht.TStrictDict(True, True, {
        "jobs": _TJobIdList,
        "allocatable": _TStringList, "failed": _TStringList})

    def __getstate__(self) -> dict:
        state = OpCode.__getstate__(self)
        if "instances" in state:
            state["instances"] = [
                inst.__getstate__() if isinstance(inst, OpCode) else inst
                for inst in state["instances"]]
        return state

    def RedactedState(self) -> dict:
        state = OpCode.RedactedState(self)
        if isinstance(getattr(self, "instances", None), list):
            state["instances"] = [
                inst.RedactedState() if isinstance(inst, OpCode) else inst
                for inst in self.instances]
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state, dict) and \
                isinstance(state.get("instances"), list):
            state = dict(state)
            state["instances"] = [_LoadInstanceCreate(inst)
                                  for inst in state["instances"]]
        OpCode.__setstate__(self, state)

    def Validate(self, set_defaults: bool) -> None:
        """Also validates each creation opcode (Ganeti's recursion)."""
        OpCode.Validate(self, set_defaults)
        for inst in self.instances:
            inst.Validate(set_defaults)


def _LoadInstanceCreate(data: Any) -> Any:
    """An OpInstanceCreate from its wire dict (OP_ID optional)."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    op_id = data.setdefault("OP_ID", OpInstanceCreate.OP_ID)
    if op_id != OpInstanceCreate.OP_ID:
        raise errors.OpPrereqError("Instances to allocate must be %s, not %s"
                                   % (OpInstanceCreate.OP_ID, op_id),
                                   errors.ECODE_INVAL)
    return OpCode.LoadOpCode(data)


class OpInstanceRemove(OpCode):
    """Remove an instance: stop it, destroy its disks, forget it."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout,
        ("ignore_failures", False, ht.TBool,
         "Whether to go on (and remove the instance from the configuration)"
         " when stopping it or removing its disks fails"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceStartup(OpCode):
    """Start an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PForce, _PIgnoreOfflineNodes,
        ("hvparams", {}, ht.TDict,
         "Temporary hypervisor parameters, for this start only"),
        ("beparams", {}, ht.TDict,
         "Temporary backend parameters, for this start only"),
        _PNoRemember,
        ("startup_paused", False, ht.TBool, "Pause the instance at startup"),
        _PShutdownTimeout,
    ]
    OP_RESULT = ht.TNone


class OpInstanceShutdown(OpCode):
    """Stop an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PForce, _PIgnoreOfflineNodes,
        ("timeout", constants.DEFAULT_SHUTDOWN_TIMEOUT, ht.TNonNegativeInt,
         "How long to wait for the instance to shut down cleanly before"
         " forcing it off (seconds)"),
        _PNoRemember,
        ("admin_state_source", None,
         ht.TMaybe(ht.TElemOf(["admin", "user"])),
         "Who is shutting the instance down (admin or user)"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceReboot(OpCode):
    """Reboot an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout,
        ("ignore_secondaries", False, ht.TBool,
         "Whether to start the instance even if its secondary disks fail"),
        ("reboot_type", ht.NoDefault, ht.TElemOf(constants.REBOOT_TYPES),
         "How to reboot: soft (inside the instance), hard (stop and start"
         " the instance) or full (also restart its disks)"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceQueryData(OpCode):
    """Detailed data of instances: configuration and runtime state."""
    OP_PARAMS = [
        _PUseLocking,
        ("instances", [], ht.TListOf(ht.TNonEmptyString),
         "Instance names (all instances if empty)"),
        ("static", False, ht.TBool,
         "Whether to only return configuration data without querying the"
         " nodes"),
    ]
    OP_RESULT = ht.TDictOf(ht.TNonEmptyString, ht.TDict)


# Instance modification (modify, rename, reinstall, console) ------------------

_TDeviceModIdent = ht.TOr(ht.TInt, ht.TNonEmptyString)
# [[add|modify|remove, index (-1: the last) or name, {params}], ...], or
# Ganeti's legacy form [[add|remove|index, {params}], ...]
_TDeviceMods = ht.WithDesc(
    "list of [operation (add, modify, remove), index or name, parameters]"
    " (or legacy [add, remove or index, parameters])", "array")(
    ht.TOr(ht.TListOf(ht.TTupleOf(
               ht.TElemOf([constants.DDM_ADD, constants.DDM_MODIFY,
                           constants.DDM_REMOVE]),
               _TDeviceModIdent, ht.TDict)),
           ht.TListOf(ht.TTupleOf(
               ht.TOr(ht.TElemOf([constants.DDM_ADD, constants.DDM_REMOVE]),
                      ht.TInt),
               ht.TDict))))


class OpInstanceSetParams(OpCode):
    """Change the parameters, disks and NICs of an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PForce,
        ("force_variant", False, ht.TBool,
         "Whether to accept an OS variant the OS does not list"),
        ("nics", [], _TDeviceMods,
         "NIC changes; parameters: mac (auto or generate for a new"
         " address), ip, mode, link, vlan, name. NICs are added and removed"
         " at the end of the list only"),
        ("disks", [], _TDeviceMods,
         "Disk changes; parameters: size (MiB) and, for blockdev, adopt"
         " (the device path) or, for ext, provider when adding; mode and"
         " name. Disks are added and removed at the end of the list only"),
        ("beparams", {}, ht.TDict,
         "Backend parameters changed for the instance (\"default\" removes"
         " one)"),
        ("runtime_mem", None, ht.TMaybe(ht.TStrictPositiveInt),
         "New memory (MiB) of the running instance, set by ballooning"),
        ("hvparams", {}, ht.TDict,
         "Hypervisor parameters changed for the instance (\"default\""
         " removes one)"),
        ("pnode", None, ht.TMaybeString,
         "New primary node of a stopped instance whose disks are already"
         " there (file-based templates)"),
        ("pnode_uuid", None, ht.TMaybeString,
         "New primary node UUID (filled in from pnode)"),
        ("disk_template", None,
         ht.TMaybe(ht.TElemOf(constants.DISK_TEMPLATES)),
         "Disk template to convert the stopped instance's disks to"
         " (between file and drbd)"),
        ("remote_node", None, ht.TMaybeString,
         "Secondary node (conversion to drbd)"),
        ("remote_node_uuid", None, ht.TMaybeString,
         "Secondary node UUID (filled in from remote_node)"),
        ("file_driver", None, ht.TMaybe(ht.TElemOf(constants.FILE_DRIVER)),
         "Driver for file-based disks (conversion to file)"),
        ("file_storage_dir", None, ht.TMaybeString,
         "Directory below the cluster's file storage directory for the"
         " disk files (conversion to file)"),
        ("wait_for_sync", True, ht.TBool,
         "Whether to wait for the new mirrors to sync (conversion to"
         " drbd, drbd disks added)"),
        ("os_name", None, ht.TMaybeString,
         "New operating system of the instance (not installed: the disks"
         " stay as they are)"),
        ("osparams", None, ht.TMaybeDict,
         "OS parameters changed for the instance (\"default\" removes one)"),
        ("offline", None, ht.TMaybeBool,
         "Whether to mark the instance offline (true) or online, stopped"
         " (false)"),
        _PIgnoreIpolicy, _PConflictsCheck,
        ("hotplug_if_possible", False, ht.TBool,
         "Whether to apply device changes to the running instance where"
         " hotplug is possible (it never is here: they apply at the next"
         " start)"),
        _PUnsupported("hotplug", False, ht.TBool,
                      "Whether to apply device changes to the running"
                      " instance (hotplug)"),
        _PUnsupported("ext_params", {}, ht.TDict,
                      "Parameters of ext-template disks"),
        _PUnsupported("osparams_private", None, _TMaybePrivateDict,
                      "Private OS parameters changed for the instance"),
        _PInstanceCommunication(None),
        _PUnsupported("iallocator", None, ht.TMaybeString,
                      "Iallocator choosing the secondary node of a"
                      " conversion to drbd"),
    ]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString, ht.TAny))


class OpInstanceRename(OpCode):
    """Rename a stopped instance (configuration, storage, OS)."""
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("new_name", ht.NoDefault, ht.THostname, "New instance name"),
        ("name_check", True, ht.TBool,
         "Whether to resolve the new name (and use the resolved one)"),
        ("ip_check", True, ht.TBool,
         "Whether to refuse a new name whose IP address answers already"
         " (needs name_check)"),
    ]
    OP_RESULT = ht.TNonEmptyString


class OpInstanceReinstall(OpCode):
    """Reinstall the OS of a stopped instance on its disks."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("os_type", None, ht.TMaybeString,
         "New operating system (name or name+variant); the current one if"
         " not given"),
        ("force_variant", False, ht.TBool,
         "Whether to accept an OS variant the OS does not list"),
        ("osparams", None, ht.TMaybeDict,
         "OS parameters changed for the instance (\"default\" removes one)"),
        ("osparams_private", None, ht.TPrivate(ht.TMaybeDict),
         "Private OS parameters changed for the instance (\"default\""
         " removes one)"),
        ("osparams_secret", None, ht.TPrivate(ht.TMaybeDict),
         "Secret OS parameters: given to the OS scripts of this reinstall"
         " only, never stored"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceConsole(OpCode):
    """Describe how to reach the console of a running instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [_PInstanceName, _PInstanceUuid]
    OP_RESULT = ht.TDict


# Instance disks (grow, activate, deactivate, recreate) -----------------------

class OpInstanceActivateDisks(OpCode):
    """Assemble an instance's disks on its primary node."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("ignore_size", False, ht.TBool,
         "Whether to ignore the recorded size of the disks when activating"
         " them (for a configuration out of step with the devices)"),
        ("wait_for_sync", False, ht.TBool,
         "Whether to wait for the disks to synchronize"),
    ]
    OP_RESULT = ht.TListOf(ht.TTupleOf(ht.TNonEmptyString,
                                       ht.TNonEmptyString, ht.TMaybeString))


class OpInstanceDeactivateDisks(OpCode):
    """Shut an instance's disks down."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [_PInstanceName, _PInstanceUuid, _PForce]
    OP_RESULT = ht.TNone


class OpInstanceRecreateDisks(OpCode):
    """Recreate an instance's missing disks, possibly on other nodes."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("disks", [],
         ht.TOr(ht.TListOf(ht.TNonNegativeInt),
                ht.TListOf(ht.TTupleOf(ht.TNonNegativeInt, ht.TDict))),
         "List of disk indexes (deprecated) or a list of tuples containing"
         " a disk index and a possibly empty dictionary with disk parameter"
         " changes (size, mode, spindles); all disks if empty"),
        ("nodes", [], ht.TListOf(ht.TNonEmptyString),
         "New instance nodes, if relocation is desired"),
        ("node_uuids", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "New instance node UUIDs (filled in from nodes)"),
        _PIAllocFromDesc("Iallocator for deciding new nodes"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceGrowDisk(OpCode):
    """Grow a disk of an instance."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("wait_for_sync", True, ht.TBool,
         "Whether to wait for the disk to synchronize"),
        ("disk", ht.NoDefault, ht.TNonNegativeInt, "Disk index"),
        ("amount", ht.NoDefault, ht.TNonNegativeInt,
         "Amount of disk space to add (megabytes)"),
        ("absolute", False, ht.TBool,
         "Whether the amount parameter is an absolute target or a relative"
         " one"),
        _PIgnoreIpolicy,
    ]
    OP_RESULT = ht.TNone



# Instance placement (failover, migrate, move, change-group) ------------------

_PIgnoreConsistency = ("ignore_consistency", False, ht.TBool,
                       "Whether to ignore disk consistency (and a source"
                       " node that can't shut the instance down)")


class OpInstanceFailover(OpCode):
    """Stop an instance, make another node its primary and start it there.
    """
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout,
        _PIgnoreConsistency, _PMigrationTargetNode,
        _PMigrationTargetNodeUuid, _PIgnoreIpolicy,
        _PIAllocFromDesc("Iallocator for deciding the target node for"
                         " shared-storage instances"),
        ("cleanup", False, ht.TBool,
         "Whether a previously failed failover should be cleaned up"
         " (not supported: clean up with a migration)"),
        _PMemberOf,
    ]
    OP_RESULT = ht.TNone


class OpInstanceMigrate(OpCode):
    """Move a running instance to another node without stopping it."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PMigrationMode, _PMigrationLive,
        _PMigrationTargetNode, _PMigrationTargetNodeUuid,
        _PAllowRuntimeChgs, _PIgnoreIpolicy,
        ("cleanup", False, ht.TBool,
         "Whether a previously failed migration should be cleaned up"),
        _PIAllocFromDesc("Iallocator for deciding the target node for"
                         " shared-storage instances"),
        ("allow_failover", False, ht.TBool,
         "Whether we can fallback to failover if migration is not"
         " possible"),
        ("ignore_hvversions", False, ht.TBool,
         "Whether to migrate between hypervisor versions the hypervisor"
         " does not consider safe"),
        _PMemberOf,
    ]
    OP_RESULT = ht.TNone


class OpInstanceMove(OpCode):
    """Move an instance to another node by copying its disks (it is shut
    down meanwhile)."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout, _PIgnoreIpolicy,
        ("target_node", ht.NoDefault, ht.TNonEmptyString, "Target node"),
        ("target_node_uuid", None, ht.TMaybeString,
         "Target node UUID (filled in from target_node)"),
        _PIgnoreConsistency, _PCompress, _PMemberOf,
    ]
    OP_RESULT = ht.TNone


class OpInstanceReplaceDisks(OpCode):
    """Make the copies of a drbd instance's disks anew, or move them to
    another secondary node, while the instance runs."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("early_release", False, ht.TBool,
         "Whether to release locks as soon as possible"),
        _PIgnoreIpolicy,
        ("mode", ht.NoDefault, ht.TElemOf(constants.REPLACE_MODES),
         "Replacement mode"),
        ("disks", [], ht.TListOf(ht.Check(
            lambda value: ht.TNonNegativeInt(value) and value < 16,
            "disk index (0 to 15)", "integer")),
         "Disk indexes (all disks if empty)"),
        ("remote_node", None, ht.TMaybeString,
         "New secondary node (replace_new_secondary)"),
        ("remote_node_uuid", None, ht.TMaybeString,
         "New secondary node UUID (filled in from remote_node)"),
        _PIAllocFromDesc("Iallocator for deciding the new secondary node"),
    ]
    OP_RESULT = ht.TNone


class OpInstanceChangeGroup(OpCode):
    """Move an instance to a node of another node group (follow-up job)."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid,
        ("early_release", False, ht.TBool,
         "Whether to release locks as soon as possible (only for"
         " internally mirrored disks)"),
        _PIAllocFromDesc("Iallocator for computing solution"),
        ("target_groups", None, ht.TMaybeListOf(ht.TNonEmptyString),
         "Destination group names or UUIDs (defaults to \"all but current"
         " group\")"),
    ]
    OP_RESULT = _TJobIdListOnly


# Backups (export, import, list, remove) --------------------------------------

_PExportMode = ("mode", constants.EXPORT_MODE_LOCAL,
                ht.TElemOf(constants.EXPORT_MODES),
                "Export mode (only \"local\", to a node of the cluster, is"
                " supported)")


class OpBackupQuery(OpCode):
    """List the exports of the nodes (node name -> export names)."""
    OP_PARAMS = [
        _PUseLocking,
        ("nodes", [], ht.TListOf(ht.TNonEmptyString),
         "Empty list to query all nodes, node names otherwise"),
    ]
    OP_RESULT = ht.TDictOf(ht.TNonEmptyString,
                           ht.TOr(ht.TAnd(ht.TBool, ht.TElemOf([False])),
                                  ht.TListOf(ht.TNonEmptyString)))


class OpBackupPrepare(OpCode):
    """Prepare an instance for an export (nothing to do for local ones)."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [_PInstanceName, _PInstanceUuid, _PExportMode]
    OP_RESULT = ht.TMaybeDict


class OpBackupExport(OpCode):
    """Export an instance's disks and configuration to a node."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [
        _PInstanceName, _PInstanceUuid, _PShutdownTimeout, _PCompress,
        ("target_node", ht.NoDefault, ht.TNonEmptyString,
         "Node the export is written to"),
        ("target_node_uuid", None, ht.TMaybeString,
         "Target node UUID (filled in from target_node)"),
        ("shutdown", True, ht.TBool,
         "Whether to shut the instance down during the export (a running"
         " instance is started again afterwards)"),
        ("remove_instance", False, ht.TBool,
         "Whether to remove the instance after a successful export"),
        ("ignore_remove_failures", False, ht.TBool,
         "Whether to ignore failures while removing the instance"),
        _PExportMode,
        _PUnsupported("x509_key_name", None, ht.TMaybe(ht.TList),
                      "Remote export: name of the X509 key"),
        _PUnsupported("destination_x509_ca", None, ht.TMaybeString,
                      "Remote export: X509 CA of the destination"),
        _PUnsupported("zero_free_space", False, ht.TBool,
                      "Whether to zero the free space of the disks first"),
        _PUnsupported("zeroing_timeout_fixed", None, ht.TMaybe(ht.TInt),
                      "Fixed part of the zeroing timeout"),
        _PUnsupported("zeroing_timeout_per_mib", None,
                      ht.TMaybe(ht.TNumber),
                      "Per-MiB part of the zeroing timeout"),
        _PUnsupported("long_sleep", False, ht.TBool,
                      "Whether to allow long instance shutdowns during"
                      " exports (zeroing)"),
    ]
    OP_RESULT = ht.TTupleOf(ht.TBool, ht.TListOf(ht.TBool))


class OpBackupRemove(OpCode):
    """Remove the exports of an instance from every node."""
    OP_DSC_FIELD = "instance_name"
    OP_PARAMS = [_PInstanceName, _PInstanceUuid]
    OP_RESULT = ht.TNone


# Testing ---------------------------------------------------------------------
