"""Calling procedures on nodes: RpcRunner and node address resolvers.

RpcRunner gets one ``call_<procedure>`` method per entry of
ganeti.rpc_defs.CALLS:

* single-node calls: ``call_x(node, *args) -> RpcResult``
* multi-node calls: ``call_x(node_list, *args) -> {node: RpcResult}``

Nodes are whatever identifiers the caller uses (names or UUIDs); the
resolver maps them to addresses, so the runner needs no configuration
access: ``resolver(ids) -> [(name, ip, offline), ...]``, one entry per
id, in order. Results are keyed by the caller's ids.
"""

import base64
import inspect
import zlib
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ganeti import constants, errors, netutils, pathutils, rpc_defs
from ganeti import serializer, vcluster
from ganeti.rpc.client import RpcClient, RpcResult

Resolver = Callable[[list[str]], list[tuple[str, str | None, bool]]]
# A node id -> (node UUID, its replication address: secondary IP, else
# primary IP); what drbd disks are told of their two nodes
ReplicationAddress = Callable[[str], tuple[str, str]]
# A node id -> the disk parameters per template in effect on it (the
# cluster's with its group's overrides)
DiskParamsOf = Callable[[str], dict[str, dict[str, Any]]]

# Content shorter than this is sent as is; compressing it gains nothing
_COMPRESS_THRESHOLD = 512
_CONTENT_ENCODINGS = frozenset([constants.RPC_ENCODING_NONE,
                                constants.RPC_ENCODING_ZLIB_BASE64])


def EncodeContent(data: str | bytes | list) -> list:
    """File content as ``[encoding, data]`` for the wire (see backend).

    A value that already is such a pair is returned unchanged.
    """
    if isinstance(data, (list, tuple)):
        if len(data) == 2 and data[0] in _CONTENT_ENCODINGS:
            return list(data)
        raise errors.ProgrammerError("Invalid file content %r" % (data,))
    if isinstance(data, str):
        raw, text = data.encode("utf-8"), data
    else:
        raw = bytes(data)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    if text is not None and len(raw) < _COMPRESS_THRESHOLD:
        return [constants.RPC_ENCODING_NONE, text]
    return [constants.RPC_ENCODING_ZLIB_BASE64,
            base64.b64encode(zlib.compress(raw)).decode("ascii")]


def EncodeVirtualPath(path: str) -> str:
    """A local path as the virtual path other nodes localize.

    Paths outside this node's root are taken to be virtual already.
    """
    root = vcluster.GetRootDirectory()
    if root and (path == root or path.startswith(root + "/")):
        return vcluster.MakeVirtualPath(path)
    return path


def _EncodeValue(value: Any) -> Any:
    """Make config objects (anything with ToDict) JSON-serializable."""
    if hasattr(value, "ToDict"):
        return value.ToDict()
    if isinstance(value, dict):
        return {key: _EncodeValue(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_EncodeValue(item) for item in value]
    return value


def AnnotateDisks(value: Any, node: str,
                  address_fn: ReplicationAddress | None,
                  diskparams_fn: DiskParamsOf | None = None,
                  _primary: str | None = None) -> Any:
    """Encoded disk(s) with what ``node`` must know of them filled in.

    Ganeti's AnnotateDiskParams/UpdateDynamicDiskParams: a drbd disk's
    node learns its own and its peer's replication address only from
    here (``local-ip``/``remote-ip``), children included; with
    ``diskparams_fn``, each disk's ``params`` are its template's disk
    parameters in its primary node's group (the configuration keeps only
    a disk's own overrides), so the storage code reads e.g. drbd's
    ``resync-rate`` as the cluster or group sets it. ``value`` is an
    encoded disk dict or list of them; it is not changed.
    """
    if isinstance(value, list):
        return [AnnotateDisks(item, node, address_fn, diskparams_fn,
                              _primary) for item in value]
    if not isinstance(value, dict):
        return value
    disk = dict(value)
    primary = _primary or (disk.get("nodes") or [node])[0]
    if disk.get("children"):
        disk["children"] = AnnotateDisks(disk["children"], node, address_fn,
                                         diskparams_fn, primary)
    if diskparams_fn is not None:
        defaults = diskparams_fn(primary).get(disk.get("dev_type") or "",
                                              {})
        disk["params"] = dict(defaults, **(disk.get("params") or {}))
    if disk.get("dev_type") != constants.DT_DRBD8 or address_fn is None:
        return disk
    node_uuid, local_ip = address_fn(node)
    pnode, snode = (disk.get("logical_id") or [None, None])[:2]
    if node_uuid not in (pnode, snode):
        raise errors.ProgrammerError("Node %s holds no side of drbd disk %s"
                                     % (node, disk.get("uuid")))
    _, remote_ip = address_fn(snode if node_uuid == pnode else pnode)
    disk["dynamic_params"] = dict(disk.get("dynamic_params") or {}, **{
        constants.DDP_LOCAL_IP: local_ip,
        constants.DDP_REMOTE_IP: remote_ip})
    return disk


_ARG_ENCODERS = {
    None: _EncodeValue,
    rpc_defs.ENC_DISKS: _EncodeValue,
    rpc_defs.ENC_VPATH: EncodeVirtualPath,
    rpc_defs.ENC_CONTENT: EncodeContent,
}


class StaticResolver:
    """Resolver for callers that already know the addresses (bootstrap, tests).

    Unknown nodes resolve to no address, which fails their calls.
    """

    def __init__(self, addresses: Mapping[str, str],
                 offline: Iterable[str] = ()):
        self._addresses = dict(addresses)
        self._offline = frozenset(offline)

    def __call__(self, names: list[str]) -> list[tuple[str, str | None,
                                                       bool]]:
        return [(name, self._addresses.get(name), name in self._offline)
                for name in names]


class RpcRunner:
    """Calls node procedures; one instance may be shared by many threads.

    Without ``port``, noded's cluster-wide port (netutils.GetDaemonPort).
    With ``address_fn`` or ``diskparams_fn`` (the master's), disk
    arguments are annotated per node (AnnotateDisks).
    """

    if TYPE_CHECKING:
        # The call_<procedure> methods, added below from rpc_defs
        def __getattr__(self, name: str) -> Callable[..., Any]: ...

    def __init__(self, resolver: Resolver,
                 cert_file: str = pathutils.NODED_CERT_FILE,
                 port: int | None = None,
                 address_fn: ReplicationAddress | None = None,
                 diskparams_fn: DiskParamsOf | None = None):
        self._resolver = resolver
        self._address_fn = address_fn
        self._diskparams_fn = diskparams_fn
        self._port = port or netutils.GetDaemonPort(constants.NODED)
        self._client = RpcClient(cert_file)

    @property
    def client(self) -> RpcClient:
        """The transport (for its statistics)."""
        return self._client

    def close(self) -> None:
        """Close the kept-alive connections to the nodes."""
        self._client.close()

    def CallProcedure(self, procedure: str, nodes: Iterable[str],
                      args: list[Any],
                      read_timeout: float | None = None
                      ) -> dict[str, RpcResult]:
        """Call a declared procedure on several nodes.

        This is what the call_* methods use; call it directly to override
        the procedure's read timeout.
        """
        try:
            call = rpc_defs.CALLS_BY_NAME[procedure]
        except KeyError:
            raise errors.ProgrammerError("Unknown RPC procedure %r" %
                                         procedure) from None
        if len(args) != len(call.args):
            raise errors.ProgrammerError(
                "Procedure %s takes %d arguments, %d given" %
                (procedure, len(call.args), len(args)))
        encoded = [_ARG_ENCODERS[arg.encoding](value)
                   for arg, value in zip(call.args, args)]
        if read_timeout is None:
            read_timeout = call.GetTimeout(args)
        keys = list(dict.fromkeys(nodes))
        resolved = self._resolver(keys)
        if len(resolved) != len(keys):
            raise errors.ProgrammerError("Resolver returned %d entries for %d"
                                         " nodes" % (len(resolved), len(keys)))
        targets = [(key, name, ip, offline)
                   for key, (name, ip, offline) in zip(keys, resolved)]
        disk_args = [arg.encoding == rpc_defs.ENC_DISKS for arg in call.args]
        address_fn = self._address_fn
        diskparams_fn = self._diskparams_fn
        if (address_fn is None and diskparams_fn is None) or \
                not any(disk_args):
            return self._client.Call(procedure, targets, self._port,
                                     serializer.DumpJsonBytes(encoded),
                                     read_timeout, repeatable=call.repeatable)
        # Disks are told about the node they go to: one body per node
        results = {}
        for target in targets:
            body = serializer.DumpJsonBytes([
                AnnotateDisks(value, target[0], address_fn, diskparams_fn)
                if is_disk
                else value for is_disk, value in zip(disk_args, encoded)])
            results.update(self._client.Call(
                procedure, [target], self._port, body, read_timeout,
                repeatable=call.repeatable))
        return results


def _MakeCallMethod(call: rpc_defs.RpcCall) -> Callable:
    single = call.kind == rpc_defs.CALL_SINGLE
    target_name = "node" if single else "node_list"
    names = ["self", target_name] + [arg.name for arg in call.args]
    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
              for name in names]
    signature = inspect.Signature(params)

    def _Method(self: RpcRunner, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs).arguments
        values = [bound[arg.name] for arg in call.args]
        target = bound[target_name]
        if single:
            return self.CallProcedure(call.name, [target], values)[target]
        if isinstance(target, str):
            raise errors.ProgrammerError("call_%s needs a list of nodes, not"
                                         " %r" % (call.name, target))
        return self.CallProcedure(call.name, target, values)

    _Method.__name__ = "call_" + call.name
    _Method.__qualname__ = "RpcRunner." + _Method.__name__
    # For help() and IDEs; functions take any attribute, but the type
    # checker knows only the declared ones
    setattr(_Method, "__signature__", signature)
    _Method.__doc__ = "%s (%s-node call)." % (call.doc, call.kind)
    return _Method


for _call in rpc_defs.CALLS:
    setattr(RpcRunner, "call_" + _call.name, _MakeCallMethod(_call))
del _call
