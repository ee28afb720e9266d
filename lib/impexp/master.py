"""The master side of transfers: start both ends, watch them, judge.

``TransferInstanceData`` is Ganeti's function of the same name
(masterd.instance): it copies any number of streams (``DiskTransfer``)
from one node to another, concurrently, and says for each whether it
arrived intact. A transfer succeeds only if both ends report success and
the same size and SHA-256; otherwise both ends are aborted, which also
discards a file destination. Both ends are always cleaned up, so nothing
of a transfer is left running on the nodes when this returns. Raw disk
destinations are the caller's: it removes the disks of a failed transfer.
"""

import logging
import time
from typing import Any, Callable, NamedTuple

from ganeti import impexp

FeedbackFn = Callable[[str], None] | None

_POLL_START = 0.05
_POLL_MAX = 0.25
_PROGRESS_INTERVAL = 10.0
# The ends time out by themselves; the master only steps in if they can't
# say so (a node died), a little later
_WATCHDOG_SLACK = 30.0
# How long to wait for the other end once one end failed
_FAIL_GRACE = 5.0
_MIB = 1024.0 * 1024.0


class DiskTransfer(NamedTuple):
    """One stream to copy: its name and both ends' ``[kind, args]``.

    ``name`` names it in messages and on the nodes (Ganeti uses
    "disk/N"); the kinds are impexp.IEIO_*.
    """
    name: str
    src_io: str
    src_ioargs: Any
    dest_io: str
    dest_ioargs: Any


class TransferResult(NamedTuple):
    """How one transfer ended.

    ``size`` (bytes) and ``checksum`` (SHA-256, hex) are those both ends
    agreed on; ``elapsed`` is the time from connection to end, in seconds.
    """
    name: str
    success: bool
    error: str | None
    size: int | None
    checksum: str | None
    elapsed: float | None


def _FormatSize(nbytes: int) -> str:
    return "%.1f MiB" % (nbytes / _MIB)


class _Transfer:
    """The state of one transfer while it runs."""

    def __init__(self, transfer: DiskTransfer, opts: dict):
        self.transfer = transfer
        self.opts = opts
        self.import_name: str | None = None
        self.export_name: str | None = None
        self.dest_name = self.src_name = None
        self.imp: dict | None = None
        self.exp: dict | None = None
        self.error: str | None = None
        self.failing_since: float | None = None
        self.finished = False
        self.started = time.monotonic()
        self.last_bytes = -1
        self.last_change = self.last_contact = self.started
        self.last_report = self.started

    def Fail(self, msg: str) -> None:
        logging.warning("Transfer %s failed: %s", self.transfer.name, msg)
        self.error = msg
        self.finished = True

    def Result(self) -> TransferResult:
        imp = self.imp or {}
        elapsed = None
        if imp.get("end_time") and imp.get("connect_time"):
            elapsed = max(imp["end_time"] - imp["connect_time"], 0.0)
        ok = self.error is None
        return TransferResult(self.transfer.name, ok, self.error,
                              imp.get("bytes") if ok else None,
                              imp.get("checksum") if ok else None, elapsed)


def _Start(rpc: Any, state: _Transfer, src_node: str, dest_node: str,
           dest_ip: str, instance_name: str) -> None:
    transfer = state.transfer
    result = rpc.call_import_start(
        dest_node, state.opts, instance_name, transfer.name,
        [transfer.dest_io, transfer.dest_ioargs], dest_ip)
    state.dest_name = result.node
    if result.fail_msg:
        state.Fail("Can't start the import of %s on node %s: %s" %
                   (transfer.name, result.node, result.fail_msg))
        return
    info = result.payload
    state.import_name = info["name"]
    result = rpc.call_export_start(
        src_node, state.opts, info["address"], info["port"], instance_name,
        transfer.name, [transfer.src_io, transfer.src_ioargs])
    state.src_name = result.node
    if result.fail_msg:
        state.Fail("Can't start the export of %s on node %s: %s" %
                   (transfer.name, result.node, result.fail_msg))
        return
    state.export_name = result.payload


def _Judge(state: _Transfer, feedback_fn: FeedbackFn) -> None:
    """Decide from both ends' status whether the transfer is over."""
    name = state.transfer.name
    imp, exp = state.imp, state.exp
    if imp is None or exp is None:
        state.Fail("The transfer of %s disappeared from node %s" %
                   (name, state.dest_name if imp is None
                    else state.src_name))
        return
    failed = [(what, node, end["error"]) for what, node, end in
              (("import", state.dest_name, imp),
               ("export", state.src_name, exp))
              if end["done"] and not end["success"]]
    if failed:
        # The other end usually fails too, soon: its error may tell the
        # cause, so give it a moment
        now = time.monotonic()
        state.failing_since = state.failing_since or now
        if len(failed) < 2 and now - state.failing_since < _FAIL_GRACE:
            return
        state.Fail("Transfer of %s failed: %s" %
                   (name, "; ".join("%s on node %s: %s" % item
                                    for item in failed)))
        return
    if imp["done"] and exp["done"]:
        if (imp["checksum"], imp["bytes"]) != (exp["checksum"],
                                               exp["bytes"]):
            state.Fail("Data of %s differs after the transfer: the source"
                       " sent %s bytes with checksum %s, the destination"
                       " wrote %s bytes with checksum %s" %
                       (name, exp["bytes"], exp["checksum"], imp["bytes"],
                        imp["checksum"]))
        else:
            state.finished = True
        return
    now = time.monotonic()
    if not imp["connected"]:
        if now - state.started > state.opts["connect_timeout"] + \
                _WATCHDOG_SLACK:
            state.Fail("The export of %s never connected to node %s" %
                       (name, state.dest_name))
        return
    if imp["bytes"] != state.last_bytes:
        state.last_bytes = imp["bytes"]
        state.last_change = now
    elif now - state.last_change > state.opts["timeout"] + _WATCHDOG_SLACK:
        state.Fail("The transfer of %s made no progress for %d seconds" %
                   (name, now - state.last_change))
        return
    if feedback_fn and now - state.last_report >= _PROGRESS_INTERVAL:
        state.last_report = now
        rate = imp["bytes"] / max(time.time() - imp["connect_time"], 1e-3)
        total = imp.get("total")
        done = (" of %s (%d%%)" % (_FormatSize(total),
                                   100 * imp["bytes"] // total)
                if total else "")
        feedback_fn("  - %s: %s%s copied, %.1f MiB/s" %
                    (name, _FormatSize(imp["bytes"]), done, rate / _MIB))


def _Poll(rpc: Any, node: str, names: list[str | None]) -> list | None:
    result = rpc.call_impexp_status(node, names)
    if result.fail_msg:
        # Transient, or the node is gone: the watchdog decides
        logging.warning("Cannot get the transfer status from node %s: %s",
                        result.node, result.fail_msg)
        return None
    return result.payload


def _Wait(rpc: Any, src_node: str, dest_node: str,
          states: list[_Transfer], feedback_fn: FeedbackFn) -> None:
    delay = _POLL_START
    while True:
        running = [state for state in states if not state.finished]
        if not running:
            return
        time.sleep(delay)
        delay = min(delay * 1.5, _POLL_MAX)
        imports = _Poll(rpc, dest_node,
                        [state.import_name for state in running])
        exports = _Poll(rpc, src_node,
                        [state.export_name for state in running])
        now = time.monotonic()
        for idx, state in enumerate(running):
            if imports is not None and exports is not None:
                state.last_contact = now
                state.imp, state.exp = imports[idx], exports[idx]
                _Judge(state, feedback_fn)
            elif now - state.last_contact > \
                    state.opts["timeout"] + _WATCHDOG_SLACK:
                state.Fail("Lost contact with the nodes transferring %s" %
                           state.transfer.name)
            if state.error is not None:
                _Abort(rpc, state, src_node, dest_node, feedback_fn)


def _Abort(rpc: Any, state: _Transfer, src_node: str, dest_node: str,
           feedback_fn: FeedbackFn) -> None:
    """Stop both ends; the import discards a file it wrote."""
    for node, name in ((src_node, state.export_name),
                       (dest_node, state.import_name)):
        if name is None:
            continue
        result = rpc.call_impexp_abort(node, name)
        if result.fail_msg:
            _Warn(feedback_fn, "Could not abort transfer %s on node %s: %s"
                  % (name, result.node, result.fail_msg))


def _Cleanup(rpc: Any, state: _Transfer, src_node: str, dest_node: str,
             feedback_fn: FeedbackFn) -> None:
    for node, name in ((src_node, state.export_name),
                       (dest_node, state.import_name)):
        if name is None:
            continue
        result = rpc.call_impexp_cleanup(node, name)
        if result.fail_msg:
            _Warn(feedback_fn, "Could not clean up transfer %s on node %s:"
                  " %s" % (name, result.node, result.fail_msg))


def _Warn(feedback_fn: FeedbackFn, msg: str) -> None:
    logging.warning("%s", msg)
    if feedback_fn:
        feedback_fn("Warning: %s" % msg)


def TransferInstanceData(rpc: Any, feedback_fn: FeedbackFn, src_node: str,
                         dest_node: str, dest_ip: str, compress: str,
                         instance_name: str,
                         transfers: list[DiskTransfer],
                         connect_timeout: float =
                         impexp.DEFAULT_CONNECT_TIMEOUT,
                         timeout: float = impexp.DEFAULT_TIMEOUT
                         ) -> list[TransferResult]:
    """Copy each transfer's source on ``src_node`` to its destination on
    ``dest_node``, all at once; one result per transfer, in order.

    ``rpc`` is an RpcRunner and the nodes are what it resolves (UUIDs on
    the master); ``dest_ip`` is the address the destination listens on
    and the source connects to (the destination node's primary IP).
    ``compress`` is an impexp.IEC_* value. The result says whether each
    transfer arrived intact; failures don't raise.
    """
    states = [_Transfer(transfer, impexp.MakeOptions(
        compress, connect_timeout=connect_timeout, timeout=timeout))
        for transfer in transfers]
    try:
        for state in states:
            _Start(rpc, state, src_node, dest_node, dest_ip, instance_name)
            if state.error is not None:
                _Abort(rpc, state, src_node, dest_node, feedback_fn)
        _Wait(rpc, src_node, dest_node, states, feedback_fn)
    except BaseException:
        for state in states:
            if not state.finished:
                state.Fail("Interrupted")
                _Abort(rpc, state, src_node, dest_node, feedback_fn)
        raise
    finally:
        for state in states:
            _Cleanup(rpc, state, src_node, dest_node, feedback_fn)
    results = [state.Result() for state in states]
    if feedback_fn:
        for result in results:
            if result.success and result.size is not None:
                rate = (" (%.1f MiB/s)" % (result.size / _MIB /
                                           result.elapsed)
                        if result.elapsed else "")
                feedback_fn("  - %s: copied %s in %.1f s%s, checksum"
                            " verified" % (result.name,
                                           _FormatSize(result.size),
                                           result.elapsed or 0.0, rate))
    return results
