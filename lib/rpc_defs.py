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
)

CALLS_BY_NAME: dict[str, RpcCall] = {call.name: call for call in CALLS}
