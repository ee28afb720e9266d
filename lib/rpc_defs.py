"""The node RPC procedures, declared once.

The client (``RpcRunner.call_<name>`` in ganeti.rpc.node) and noded's
dispatcher (ganeti.server.noded, which runs ``backend.<name>``) are both
derived from CALLS, so a procedure can't exist on one side only.

Each call is a single-node call (``call_x(node, *args) -> RpcResult``) or a
multi-node call (``call_x(node_list, *args) -> {node: RpcResult}``).

Arguments may carry a client-side encoding, applied by RpcRunner before
sending, so callers pass plain values:

* ``ENC_VPATH``: a local path, sent as virtual path
  (vcluster.MakeVirtualPath); a path that is already virtual is sent as is.
* ``ENC_CONTENT``: str or bytes, sent as ``[encoding, data]`` (zlib+base64
  for larger data); an already encoded pair is sent as is.
"""

from typing import Any, Callable, NamedTuple

from ganeti import constants

CALL_SINGLE = "single"
CALL_MULTI = "multi"

ENC_VPATH = "vpath"
ENC_CONTENT = "content"


class RpcArg(NamedTuple):
    """One argument of a procedure."""
    name: str
    encoding: str | None = None


class RpcCall(NamedTuple):
    """One procedure: name, arguments, timeout and call kind.

    ``timeout`` is a read timeout in seconds (a ``constants.RPC_TMO_*``)
    or a function computing it from the argument values.
    """
    name: str
    args: tuple[RpcArg, ...]
    timeout: int | Callable[..., float]
    kind: str
    doc: str

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


def _A(name: str, encoding: str | None = None) -> RpcArg:
    return RpcArg(name, encoding)


CALLS: tuple[RpcCall, ...] = (
    RpcCall("version", (), constants.RPC_TMO_URGENT, CALL_MULTI,
            "Protocol version of the node daemon"
            " (constants.PROTOCOL_VERSION)"),
    RpcCall("node_info", (_A("storage_dirs"), _A("hv_names")),
            constants.RPC_TMO_URGENT, CALL_MULTI,
            "Memory, storage and hypervisor information of the node;"
            " storage_dirs lists (virtual) file storage directories, empty"
            " for the default one, hv_names the hypervisors to report on"),
    RpcCall("test_delay", (_A("duration"),), _TestDelayTimeout, CALL_MULTI,
            "Sleep for duration seconds on the node (testing aid)"),
    RpcCall("jobqueue_update",
            (_A("file_name", ENC_VPATH), _A("content", ENC_CONTENT)),
            constants.RPC_TMO_URGENT, CALL_MULTI,
            "Write a file of the job queue directory"),
    RpcCall("jobqueue_rename", (_A("rename"),), constants.RPC_TMO_URGENT,
            CALL_MULTI,
            "Rename files in the job queue directory; rename is a list of"
            " [old, new] virtual paths"),
    RpcCall("jobqueue_purge", (), constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Remove all job queue files but the lock file"),
    RpcCall("jobqueue_set_drain_flag", (_A("flag"),),
            constants.RPC_TMO_URGENT, CALL_MULTI,
            "Set or clear the job queue drain flag"),
    RpcCall("write_ssconf_files", (_A("values"),), constants.RPC_TMO_NORMAL,
            CALL_MULTI,
            "Write the ssconf files; values maps key to file content"),
    RpcCall("upload_file",
            (_A("file_name", ENC_VPATH), _A("content", ENC_CONTENT),
             _A("mode")),
            constants.RPC_TMO_NORMAL, CALL_MULTI,
            "Write one of the cluster files that may be distributed"
            " (pathutils.GetUploadableFiles)"),
    RpcCall("node_leave_cluster", (), constants.RPC_TMO_NORMAL, CALL_SINGLE,
            "Remove the cluster configuration, certificates and job queue"
            " from the node, then stop the node daemon"),
    RpcCall("master_info", (), constants.RPC_TMO_URGENT, CALL_MULTI,
            "What the node knows of the master role: the master it believes"
            " in, its config serial and its highest job id (master voting)"),
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
            " to checksum for NV_FILELIST)"),
    RpcCall("run_command", (_A("command"),), _RunCommandTimeout,
            CALL_MULTI,
            "Run a shell command on the node (gnt-cluster command); returns"
            " [exit code, output]"),
    RpcCall("copyfile_upload",
            (_A("file_name", ENC_VPATH), _A("content", ENC_CONTENT),
             _A("mode")),
            constants.RPC_TMO_NORMAL, CALL_MULTI,
            "Write a file below one of the node's allowed copyfile prefixes"
            " (gnt-cluster copyfile)"),
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
