"""The node RPC procedures, declared once.

The client (``RpcRunner.call_<name>`` in ganeti.rpc.node) and noded's
dispatcher (ganeti.server.noded, which runs ``backend.PROCEDURES[name]``)
are both derived from CALLS, so a procedure can't exist on one side only.

Each call is a single-node call (``call_x(node, *args) -> RpcResult``) or a
multi-node call (``call_x(node_list, *args) -> {node: RpcResult}``).

Arguments may carry a client-side encoding, applied by RpcRunner before
sending, so callers pass plain values:

* ``ENC_VPATH``: a local path, sent as virtual path
  (vcluster.MakeVirtualPath); a path that is already virtual is sent as is.
* ``ENC_CONTENT``: str or bytes, sent as ``[encoding, data]`` (zlib+base64
  for larger data); an already encoded pair is sent as is.
* ``ENC_DISKS``: a disk or a list of disks (objects or dicts); each drbd
  disk gets the dynamic parameters of the node the call goes to (its own
  and its peer's replication address), so the body is built per node.
"""

from typing import Any, Callable, NamedTuple

from ganeti import constants

CALL_SINGLE = "single"
CALL_MULTI = "multi"

ENC_VPATH = "vpath"
ENC_CONTENT = "content"
ENC_DISKS = "disks"


class RpcArg(NamedTuple):
    """One argument of a procedure."""
    name: str
    encoding: str | None = None


class RpcCall(NamedTuple):
    """One procedure: name, arguments, timeout and call kind.

    ``timeout`` is a read timeout in seconds (a ``constants.RPC_TMO_*``)
    or a function computing it from the argument values.

    ``repeatable`` says running the call twice leaves the node as running
    it once does (it only reads, or writes given content). libcurl
    silently sends a request again if its kept-alive connection dies
    before an answer (the node may already be running it); any other
    call carries a call id the node runs only once, so that a re-sent
    copy is refused and becomes the call's failure.
    """
    name: str
    args: tuple[RpcArg, ...]
    timeout: int | Callable[..., float]
    kind: str
    doc: str
    repeatable: bool = False

    def GetTimeout(self, args: list[Any]) -> float:
        """Read timeout for a call with these argument values."""
        if callable(self.timeout):
            return self.timeout(*args)
        return self.timeout


def _TestDelayTimeout(duration: float) -> float:
    """The reply comes after the delay; allow some slack on top of it."""
    return max(float(duration), 0.0) + 5


def _RunCommandTimeout(command: str) -> float:
    """The node gives up on the command first and reports that."""
    return constants.NODE_COMMAND_TIMEOUT + 30


def _OobTimeout(oob_program: str, command: str, remote_node: str,
                timeout: float) -> float:
    """The node gives up on the program first and reports that."""
    return float(timeout) + 30


def _OSScriptTimeout(*_args: Any) -> float:
    """The node gives up on the OS script first and reports that."""
    return constants.OS_SCRIPT_TIMEOUT + 30


def _A(name: str, encoding: str | None = None) -> RpcArg:
    return RpcArg(name, encoding)


CALLS: tuple[RpcCall, ...] = (
    RpcCall("version", (), constants.RPC_TMO_URGENT, CALL_MULTI,
            "Protocol version of the node daemon"
            " (constants.PROTOCOL_VERSION)",
            repeatable=True),
    RpcCall("node_info", (_A("storage_dirs"), _A("hv_names")),
            constants.RPC_TMO_URGENT, CALL_MULTI,
            "Memory, storage and hypervisor information of the node;"
            " storage_dirs lists (virtual) file storage directories, empty"
            " for the default one, hv_names the hypervisors to report on",
            repeatable=True),
    RpcCall("test_delay", (_A("duration"),), _TestDelayTimeout, CALL_MULTI,
            "Sleep for duration seconds on the node (testing aid)"),
    RpcCall("jobqueue_update",
            (_A("file_name", ENC_VPATH), _A("content", ENC_CONTENT)),
            constants.RPC_TMO_URGENT, CALL_MULTI,
            "Write a file of the job queue directory",
            repeatable=True),
    RpcCall("jobqueue_rename", (_A("rename"),), constants.RPC_TMO_URGENT,
            CALL_MULTI,
            "Rename files in the job queue directory; rename is a list of"
            " [old, new] virtual paths",
            repeatable=True),
    RpcCall("jobqueue_purge", (), constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Remove all job queue files but the lock file",
            repeatable=True),
    RpcCall("jobqueue_set_drain_flag", (_A("flag"),),
            constants.RPC_TMO_URGENT, CALL_MULTI,
            "Set or clear the job queue drain flag",
            repeatable=True),
    RpcCall("set_watcher_pause", (_A("until"),), constants.RPC_TMO_URGENT,
            CALL_MULTI,
            "Pause the watcher until a Unix time (None: let it run)",
            repeatable=True),
    RpcCall("write_ssconf_files", (_A("values"),), constants.RPC_TMO_NORMAL,
            CALL_MULTI,
            "Write the ssconf files; values maps key to file content",
            repeatable=True),
    RpcCall("upload_file",
            (_A("file_name", ENC_VPATH), _A("content", ENC_CONTENT),
             _A("mode")),
            constants.RPC_TMO_NORMAL, CALL_MULTI,
            "Write one of the cluster files that may be distributed"
            " (pathutils.GetUploadableFiles)",
            repeatable=True),
    RpcCall("node_restart_daemons", (_A("daemons"),), constants.RPC_TMO_FAST,
            CALL_MULTI,
            "Restart daemons of the node (daemon-util stop, then start) once"
            " the answer is sent, so the node daemon itself may be one"
            " (gnt-cluster renew-crypto)",
            repeatable=True),
    RpcCall("node_leave_cluster", (), constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Remove the cluster configuration, certificates and job queue"
            " from the node, then stop the node daemon"),
    RpcCall("master_info", (), constants.RPC_TMO_URGENT, CALL_MULTI,
            "What the node knows of the master role: the master it believes"
            " in, its config serial and its highest job id (master voting)",
            repeatable=True),
    RpcCall("node_stop_master", (), constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Stop the master daemon on the node (master failover)"),
    RpcCall("node_start_master", (), constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Start the master daemon on the node again (an aborted master"
            " failover)"),
    RpcCall("node_activate_master_ip", (_A("master_params"),),
            constants.RPC_TMO_FAST, CALL_SINGLE,
            "Add the master IP to the master network device; master_params"
            " has ip, netmask, netdev and ip_family"),
    RpcCall("node_deactivate_master_ip", (_A("master_params"),),
            constants.RPC_TMO_FAST, CALL_SINGLE,
            "Remove the master IP from the master network device"),
    RpcCall("node_demote_from_mc", (), constants.RPC_TMO_FAST, CALL_SINGLE,
            "Remove the copies of the configuration and job queue that a"
            " master candidate keeps (the node stops being one)"),
    RpcCall("node_verify", (_A("checks"), _A("cluster_name")),
            constants.RPC_TMO_NORMAL, CALL_MULTI,
            "Collect what cluster verification compares: checks maps"
            " constants.NV_* keys to their parameters (the virtual paths"
            " to checksum for NV_FILELIST)",
            repeatable=True),
    RpcCall("run_command", (_A("command"),), _RunCommandTimeout,
            CALL_MULTI,
            "Run a shell command on the node (gnt-cluster command); returns"
            " [exit code, output]"),
    RpcCall("repair_command", (_A("command"), _A("input_data")),
            constants.RPC_TMO_SLOW, CALL_SINGLE,
            "Run a white-listed live-repair command of the node (in"
            " node-repair-commands) with input_data on its standard input;"
            " returns its output"),
    RpcCall("run_oob",
            (_A("oob_program"), _A("command"), _A("remote_node"),
             _A("timeout")),
            _OobTimeout, CALL_SINGLE,
            "Run a node's out-of-band program (on the master) with a command"
            " and the node's name; returns its output decoded as JSON (None"
            " for no output)"),
    RpcCall("copyfile_upload",
            (_A("file_name", ENC_VPATH), _A("content", ENC_CONTENT),
             _A("mode")),
            constants.RPC_TMO_NORMAL, CALL_MULTI,
            "Write a file below one of the node's allowed copyfile prefixes"
            " (gnt-cluster copyfile)"),
    RpcCall("os_diagnose", (), constants.RPC_TMO_FAST, CALL_MULTI,
            "The OS definitions in the node's search path: [name, path,"
            " valid, reason, variants, parameters, api_versions, trusted]"
            " per OS directory",
            repeatable=True),
    RpcCall("extstorage_diagnose", (), constants.RPC_TMO_FAST, CALL_MULTI,
            "The ExtStorage providers in the node's search path: [name,"
            " path, valid, reason, [[parameter, description], ...]] per"
            " directory",
            repeatable=True),
    RpcCall("os_validate",
            (_A("required"), _A("name"), _A("checks"), _A("params"),
             _A("force_variant")),
            constants.RPC_TMO_FAST, CALL_MULTI,
            "Check that an OS (name+variant) is valid and that its verify"
            " script accepts the filled parameters; false if it is missing"
            " and not required",
            repeatable=True),
    RpcCall("instance_os_add", (_A("instance"), _A("reinstall"), _A("debug")),
            _OSScriptTimeout, CALL_SINGLE,
            "Run the OS create script for a filled instance dict (disks with"
            " dev_path); failures carry the tail of the OS log"),
    RpcCall("instance_run_rename",
            (_A("instance"), _A("old_name"), _A("debug")),
            constants.RPC_TMO_SLOW, CALL_SINGLE,
            "Run the OS rename script (refused if the OS has none)"),
)

def _ShutdownTimeout(instance: Any, timeout: float) -> float:
    """The node waits ``timeout`` for a clean stop, then forces it."""
    return constants.RPC_TMO_NORMAL + max(float(timeout), 0.0)


def _RebootTimeout(instance: Any, reboot_type: str,
                   shutdown_timeout: float) -> float:
    return constants.RPC_TMO_NORMAL + max(float(shutdown_timeout), 0.0)


# Hypervisor procedures. An "instance" argument is the instance as
# objects.Cluster.InstanceRpcDict gives it: hvparams, beparams and
# nicparams filled, so nodes never apply defaults themselves.
CALLS += (
    RpcCall("instance_start",
            (_A("instance"), _A("block_devices"), _A("startup_paused")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Start an instance; block_devices is a list of [disk dict,"
            " device path], in disk order"),
    RpcCall("instance_shutdown", (_A("instance"), _A("timeout")),
            _ShutdownTimeout, CALL_SINGLE,
            "Stop an instance, forcing it off after timeout seconds;"
            " stopping a stopped instance succeeds"),
    RpcCall("instance_reboot",
            (_A("instance"), _A("reboot_type"), _A("shutdown_timeout")),
            _RebootTimeout, CALL_SINGLE,
            "Reboot a running instance: soft (inside the instance) or hard"
            " (stop and start with the same block devices)"),
    RpcCall("instance_info", (_A("instance_name"), _A("hname"),
                              _A("hvparams")),
            constants.RPC_TMO_URGENT, CALL_SINGLE,
            "Runtime information of one instance (memory, vcpus, state,"
            " time), or an empty dict if it is not running",
            repeatable=True),
    RpcCall("all_instances_info", (_A("hv_names"), _A("all_hvparams")),
            constants.RPC_TMO_URGENT, CALL_MULTI,
            "Runtime information of every instance of the given"
            " hypervisors, keyed by instance name; all_hvparams maps"
            " hypervisor to its cluster parameters",
            repeatable=True),
    RpcCall("instance_list", (_A("hv_names"), _A("all_hvparams")),
            constants.RPC_TMO_URGENT, CALL_MULTI,
            "Names of the instances running on the node",
            repeatable=True),
    RpcCall("instance_balloon_memory", (_A("instance"), _A("memory")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Change the memory (MiB) of a running instance"),
    RpcCall("instance_console_info",
            (_A("instance"), _A("primary_node"), _A("node_group")),
            constants.RPC_TMO_URGENT, CALL_SINGLE,
            "How to reach an instance's console (InstanceConsole fields);"
            " primary_node and node_group are config dicts",
            repeatable=True),
    RpcCall("hypervisor_validate_params", (_A("hvname"), _A("hvparams")),
            constants.RPC_TMO_NORMAL, CALL_MULTI,
            "Check filled hypervisor parameters against the node itself"
            " (files, devices); fails naming the bad parameter",
            repeatable=True),
    RpcCall("migration_info", (_A("instance"),), constants.RPC_TMO_NORMAL,
            CALL_SINGLE,
            "Source side, first step of a migration: data the target"
            " needs to accept the instance",
            repeatable=True),
    RpcCall("accept_instance",
            (_A("instance"), _A("info"), _A("target"), _A("block_devices")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Target side: prepare to receive a migrating instance on the"
            " block devices (as for instance_start) assembled there"),
    RpcCall("instance_migrate",
            (_A("cluster_name"), _A("instance"), _A("target"), _A("live")),
            constants.RPC_TMO_SLOW, CALL_SINGLE,
            "Source side: send the running instance to the target"),
    RpcCall("instance_get_migration_status", (_A("instance"),),
            constants.RPC_TMO_URGENT, CALL_SINGLE,
            "Source side: {status, ...} of the running migration",
            repeatable=True),
    RpcCall("finalize_migration_dst",
            (_A("instance"), _A("info"), _A("success")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Target side: take over the instance, or clean up on failure"),
    RpcCall("finalize_migration_src",
            (_A("instance"), _A("success"), _A("live")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Source side: drop the migrated instance, or resume it on"
            " failure"),
    RpcCall("blockdev_create",
            (_A("bdev", ENC_DISKS), _A("size"), _A("owner"),
             _A("on_primary"), _A("info"), _A("excl_stor")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Create the storage of a disk (size in MiB) for instance owner;"
            " assembled if on_primary, info stored as its metadata; returns"
            " the disk's logical id"),
    RpcCall("blockdev_remove", (_A("bdev", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Destroy the storage of a disk (adopted block devices are only"
            " forgotten)"),
    RpcCall("blockdev_assemble",
            (_A("disk", ENC_DISKS), _A("instance"), _A("on_primary"),
             _A("idx")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Make disk idx of the instance usable; returns the device path"
            " (None on a secondary node, where only drbd disks have"
            " something to do: serve the replica)"),
    RpcCall("blockdev_getmirrorstatus", (_A("disks", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Status of each disk: [dev_path, major, minor, sync_percent,"
            " estimated_time, is_degraded, ldisk_status]",
            repeatable=True),
    RpcCall("blockdev_find", (_A("disk", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Status of one disk as blockdev_getmirrorstatus reports it, or"
            " None when the disk is not active on the node",
            repeatable=True),
    RpcCall("drbd_needs_activation", (_A("disks", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "UUIDs of the disks (drbd ones only) whose side on the node needs"
            " activate-disks: not assembled (primary) or not served"
            " (secondary), or a primary whose mirror is gone",
            repeatable=True),
    RpcCall("blockdev_shutdown", (_A("disk", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Undo blockdev_assemble; the data stays"),
    RpcCall("blockdev_grow",
            (_A("disk", ENC_DISKS), _A("amount"), _A("dryrun"),
             _A("backingstore"), _A("excl_stor")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Grow a disk by amount MiB (never shrinks); dryrun only checks"),
    RpcCall("blockdev_getdimensions", (_A("disks", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "[size in bytes, spindles] of each disk, None for a disk that"
            " is not available",
            repeatable=True),
    RpcCall("blockdev_setinfo", (_A("disk", ENC_DISKS), _A("info")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Store metadata (the owner instance) with a disk"),
    RpcCall("blockdev_convert",
            (_A("src_disk", ENC_DISKS), _A("target_disk", ENC_DISKS)),
            constants.RPC_TMO_SLOW, CALL_SINGLE,
            "Copy the data of an assembled disk into a new, empty and"
            " assembled one (disk template conversion)"),
    RpcCall("drbd_disconnect_net", (_A("disks", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Primary of drbd disks: stop mirroring to the secondary and"
            " forget what it holds (the next connection copies all)"),
    RpcCall("blockdev_open", (_A("disks", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Target of a migration: open the device of each drbd disk"
            " while the source still mirrors to it; returns the paths"),
    RpcCall("blockdev_close", (_A("disks", ENC_DISKS),),
            constants.RPC_TMO_SLOW, CALL_SINGLE,
            "Source of a migration: the secondary role, once the peer"
            " holds every write (a target: its device closed)"),
    RpcCall("drbd_attach_net", (_A("disks", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "New primary after a migration: mirror to the closed source,"
            " which holds the same data, without a copy"),
    RpcCall("drbd_replace_image", (_A("disk", ENC_DISKS), _A("on_primary")),
            constants.RPC_TMO_SLOW, CALL_SINGLE,
            "Put a new image in place of this node's copy of a drbd disk,"
            " the old one set aside: on the primary filled from the"
            " secondary while in use, on the secondary (disconnected"
            " first) empty and served"),
    RpcCall("drbd_remove_replaced", (_A("disk", ENC_DISKS),),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Delete the image drbd_replace_image set aside"),
    RpcCall("storage_list",
            (_A("su_name"), _A("su_args"), _A("name"), _A("fields")),
            constants.RPC_TMO_NORMAL, CALL_MULTI,
            "List storage units: su_name a constants.ST_* type (file,"
            " sharedfile), su_args [virtual directory], name a unit name"
            " or None for all, fields constants.SF_* names; rows of values"
            " (sizes in MiB)",
            repeatable=True),
    RpcCall("file_storage_dir_rename",
            (_A("old_file_storage_dir"), _A("new_file_storage_dir"),
             _A("template")),
            constants.RPC_TMO_FAST, CALL_SINGLE,
            "Rename an instance's directory of file disks (virtual paths"
            " below the cluster's storage directory of the file template"
            " and the allow-list); done already if only the new one exists"),
)

# Instance exports (gnt-backup); the disk data itself moves through the
# import/export transfers (ganeti.impexp)
CALLS += (
    RpcCall("export_list", (), constants.RPC_TMO_FAST, CALL_MULTI,
            "Names of the complete exports on the node, sorted",
            repeatable=True),
    RpcCall("export_info", (_A("path", ENC_VPATH),),
            constants.RPC_TMO_FAST, CALL_SINGLE,
            "The description (config.ini text) of the export in path, an"
            " export directory of the node",
            repeatable=True),
    RpcCall("export_remove", (_A("export"),), constants.RPC_TMO_FAST,
            CALL_SINGLE, "Remove an export (by name) from the node"),
    RpcCall("export_discard", (_A("instance_name"),),
            constants.RPC_TMO_FAST, CALL_SINGLE,
            "Remove the unfinished export of an instance, if any"),
    RpcCall("os_transfer_command",
            (_A("instance"), _A("mode"), _A("idx"), _A("compression"),
             _A("debug")),
            constants.RPC_TMO_FAST, CALL_SINGLE,
            "The {argv, env} with which a transfer (an IEIO_COMMAND source"
            " or destination on the same node) runs the OS export or"
            " import script of disk idx, the dump compressed as"
            " compression says"),
    RpcCall("finalize_export",
            (_A("instance"), _A("disks"), _A("compression")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Write the description of an export whose disk dumps were"
            " transferred and move it into place (replacing the previous"
            " export of the instance)"),
)

# Node-to-node transfers (ganeti.impexp): each end is a process of its
# own, named by what import_start/export_start return. opts is
# impexp.MakeOptions (the same for both ends); a source or destination is
# [impexp.IEIO_*, arguments]
CALLS += (
    RpcCall("import_start",
            (_A("opts"), _A("instance_name"), _A("component"), _A("dest"),
             _A("address")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Receive one stream into dest: listen on address (the node's"
            " own) and an ephemeral port for the exporting node; returns"
            " {name, address, port}"),
    RpcCall("export_start",
            (_A("opts"), _A("host"), _A("port"), _A("instance_name"),
             _A("component"), _A("source")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Send one stream from source to the import listening on"
            " host/port; returns the transfer's name"),
    RpcCall("impexp_status", (_A("names"),), constants.RPC_TMO_FAST,
            CALL_SINGLE,
            "Status of each named transfer (impexp.STATUS_FIELDS: progress,"
            " done, success, checksum, error), None for an unknown one",
            repeatable=True),
    RpcCall("impexp_abort", (_A("name"),), constants.RPC_TMO_NORMAL,
            CALL_SINGLE,
            "Stop a transfer; an import also discards the file it wrote,"
            " even once finished"),
    RpcCall("impexp_cleanup", (_A("name"),), constants.RPC_TMO_NORMAL,
            CALL_SINGLE,
            "Forget a transfer, stopping it if it still runs (the data of"
            " a successful import stays)"),
)


def _HooksTimeout(*_args: Any) -> float:
    """The node gives up on the scripts first and reports that."""
    return constants.HOOKS_PHASE_TIMEOUT + 30


CALLS += (
    RpcCall("hooks_runner", (_A("hpath"), _A("phase"), _A("env")),
            _HooksTimeout, CALL_MULTI,
            "Run the node's hook scripts of one phase of an operation"
            " (<hooks dir>/<hpath>-<phase>.d) with exactly env; returns"
            " [script, constants.HKR_*, output] per directory entry"),
)

def _IAllocatorTimeout(*args: Any) -> float:
    """The node kills the allocator first (after ``timeout``, the last
    argument) and reports that."""
    return float(args[-1]) + 30


CALLS += (
    RpcCall("iallocator_runner",
            (_A("name"), _A("idata"), _A("default_iallocator_params"),
             _A("timeout")),
            _IAllocatorTimeout, CALL_SINGLE,
            "Run the instance allocator program found by name in the"
            " allocator search path on the input message idata (JSON),"
            " as <program> <input file> [--key=value | --key]...; returns"
            " its standard output. A non-zero exit or running longer than"
            " timeout seconds fails the call with the program's output"),
)

# Procedures the node daemon serves before it belongs to a cluster, to any
# client (the join key's secret authorises the caller)
JOIN_CALLS: tuple[RpcCall, ...] = (
    RpcCall("node_join", (_A("secret"), _A("files"), _A("ssconf_values")),
            constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Install the cluster's certificate and secrets (files maps"
            " virtual path to [mode, content]) and ssconf, then restart the"
            " node daemon as a cluster member"),
)
JOIN_CALLS_BY_NAME: dict[str, RpcCall] = {call.name: call
                                          for call in JOIN_CALLS}

CALLS_BY_NAME: dict[str, RpcCall] = {call.name: call for call in CALLS}
