"""Keeping the other nodes' copies of the master's state current.

Master candidates hold copies of the configuration and of the job queue
(design-2.0, "Job storage and replication"), so that one of them can take
over the master role; every node holds the ssconf files. The master pushes
each change as it happens, to all targets in parallel. A node that misses
a change is marked stale: it gets no further single updates but a full
resynchronisation, retried in the background until it succeeds. Changes
made while a resynchronisation runs are sent again after it, so a node
never ends up with an older version of a file than the master.
"""

import logging
import os
import threading
import time
from typing import Any, Callable, Iterable

from ganeti import constants, pathutils, ssconf, utils, vcluster

# Seconds between retries of a failed resynchronisation (doubling, capped)
RETRY_MIN = 1.0
RETRY_MAX = 30.0

_OK = "ok"
_STALE = "stale"
_SYNCING = "syncing"


class _NodeState:
    """Replication state of one node."""

    def __init__(self, state: str):
        self.state = state
        self.dirty: set[str] = set()
        self.renames: list[tuple[str, str]] = []
        self.retry_at = 0.0
        self.backoff = RETRY_MIN
        # Why the node's copies are behind (None: no failure since in sync)
        self.error: str | None = None


class Replicator:
    """Pushes config, job queue and ssconf changes to the other nodes.

    ``rpc`` is an RpcRunner resolving node UUIDs; ``my_uuid`` is the master
    (never a target). Targets are taken from the configuration at every
    config write (``ConfigChanged``), not looked up per job update.
    """

    def __init__(self, cfg: Any, rpc: Any, my_uuid: str,
                 queue_dir: str = pathutils.QUEUE_DIR,
                 is_drained: Callable[[], bool] | None = None):
        self._cfg = cfg
        self._rpc = rpc
        self._my_uuid = my_uuid
        self._queue_dir = queue_dir
        self._is_drained = is_drained or (lambda: False)
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._config_lock = threading.Lock()
        self._candidates: list[str] = []
        self._online: list[str] = []
        self._names: dict[str, str] = {}
        self._nodes: dict[str, _NodeState] = {}
        self._last_ssconf: dict | None = None
        self._stop = False
        # The master's own ssconf from the loaded configuration: a master
        # killed between writing config.data and its ssconf files left
        # them behind (the other nodes get theirs in their first sync)
        self._last_ssconf = cfg.GetSsconfValues()
        ssconf.SimpleStore().WriteFiles(self._last_ssconf)
        self._UpdateTargets()
        self._thread = threading.Thread(target=self._RetryLoop,
                                        name="replication", daemon=True)
        self._thread.start()

    # Targets -----------------------------------------------------------------
    def _UpdateTargets(self) -> None:
        nodes = self._cfg.GetAllNodesInfo()
        with self._lock:
            old_candidates = set(self._candidates)
            self._names = {uuid: node.name for uuid, node in nodes.items()}
            self._online = [uuid for uuid, node in nodes.items()
                            if not node.offline and uuid != self._my_uuid]
            self._candidates = [uuid for uuid in self._online
                                if nodes[uuid].master_candidate]
            for uuid in list(self._nodes):
                if uuid not in self._online:
                    del self._nodes[uuid]
            for uuid in self._online:
                # New targets (added, back online) start stale: they get
                # everything before single updates
                state = self._nodes.setdefault(uuid, _NodeState(_STALE))
                if (uuid in self._candidates and
                        uuid not in old_candidates and
                        state.state == _OK):
                    state.state = _STALE
                    state.retry_at = 0.0
            self._wakeup.notify_all()

    def IsCandidate(self, uuid: str) -> bool:
        with self._lock:
            return uuid in self._candidates

    def MarkStale(self, uuid: str) -> None:
        """Force a full resynchronisation of a node (added, promoted)."""
        with self._lock:
            state = self._nodes.get(uuid)
            if state is not None and state.state == _OK:
                state.state = _STALE
                state.retry_at = 0.0
                state.backoff = RETRY_MIN
            self._wakeup.notify_all()

    def _Healthy(self, uuids: list[str], path: str | None = None,
                 rename: tuple[str, str] | None = None) -> list[str]:
        """The targets that get single updates; records the others' misses."""
        healthy = []
        for uuid in uuids:
            state = self._nodes.get(uuid)
            if state is None:
                continue
            if state.state == _OK:
                healthy.append(uuid)
            elif state.state == _SYNCING:
                if path is not None:
                    state.dirty.add(path)
                if rename is not None:
                    state.renames.append(rename)
        return healthy

    def _Failed(self, what: str, targets: list[str], results: dict,
                total: int) -> None:
        """Mark failed nodes stale and log as the design says."""
        failed = [uuid for uuid in targets if results[uuid].fail_msg]
        if not failed:
            return
        with self._lock:
            for uuid in failed:
                state = self._nodes.get(uuid)
                if state is not None and state.state == _OK:
                    state.state = _STALE
                    state.retry_at = time.monotonic() + RETRY_MIN
                    state.error = "%s: %s" % (what, results[uuid].fail_msg)
            names = [self._names.get(uuid, uuid) for uuid in failed]
            self._wakeup.notify_all()
        details = "; ".join("%s: %s" % (self._names.get(uuid, uuid),
                                        results[uuid].fail_msg)
                            for uuid in failed)
        if 2 * len(failed) >= total:
            logging.error("Replication of %s failed on %d of %d node(s) (%s);"
                          " will resynchronise them", what, len(failed),
                          total, details)
        else:
            logging.warning("Replication of %s failed on %s (%s); will"
                            " resynchronise", what, ", ".join(names), details)

    # Single updates ----------------------------------------------------------
    def ReplicateQueueFile(self, path: str, data: str) -> None:
        """A job queue file changed (called with the file's writer lock)."""
        with self._lock:
            total = len(self._candidates)
            targets = self._Healthy(self._candidates, path=path)
        if targets:
            results = self._rpc.call_jobqueue_update(targets, path, data)
            self._Failed(os.path.basename(path), targets, results, total)

    def ReplicateQueueRenames(self, renames: list[tuple[str, str]]) -> None:
        """Job files were archived (renamed)."""
        with self._lock:
            total = len(self._candidates)
            targets = self._Healthy(self._candidates)
            for rename in renames:
                self._Healthy(self._candidates, rename=rename)
        if targets:
            results = self._rpc.call_jobqueue_rename(
                targets, [[vcluster.MakeVirtualPath(old),
                           vcluster.MakeVirtualPath(new)]
                          for old, new in renames])
            self._Failed("job renames", targets, results, total)

    def ReplicateDrainFlag(self, drain: bool) -> None:
        with self._lock:
            total = len(self._candidates)
            targets = self._Healthy(self._candidates, path=_DRAIN_MARK)
        if targets:
            results = self._rpc.call_jobqueue_set_drain_flag(targets, drain)
            self._Failed("drain flag", targets, results, total)

    def ConfigChanged(self, cfg: Any, _serial: int) -> None:
        """Config write hook: push config.data and (if changed) ssconf.

        Serialized, and reading the file inside the lock, so that pushes of
        overlapping writes never arrive out of order.
        """
        with self._config_lock:
            self._UpdateTargets()
            with self._lock:
                total = len(self._candidates)
                targets = self._Healthy(self._candidates,
                                        path=pathutils.CLUSTER_CONF_FILE)
            if targets:
                data = utils.ReadFile(pathutils.CLUSTER_CONF_FILE)
                results = self._rpc.call_upload_file(
                    targets, pathutils.CLUSTER_CONF_FILE, data,
                    constants.CONFIG_FILE_MODE)
                self._Failed("config.data", targets, results, total)
            ssconf_values = cfg.GetSsconfValues()
            if ssconf_values != self._last_ssconf:
                ssconf.SimpleStore().WriteFiles(ssconf_values)
                with self._lock:
                    total = len(self._online)
                    targets = self._Healthy(self._online, path=_SSCONF_MARK)
                if targets:
                    results = self._rpc.call_write_ssconf_files(
                        targets, ssconf_values)
                    self._Failed("ssconf", targets, results, total)
                self._last_ssconf = ssconf_values

    def Redistribute(self, feedback_fn: Callable[[str], None]) -> None:
        """Push config, ssconf and the cluster files to every node again.

        What ``gnt-cluster redist-conf`` does: it repairs copies damaged
        behind the master's back, which single updates never touch.
        """
        with self._config_lock:
            self._UpdateTargets()
            ssconf_values = self._cfg.GetSsconfValues()
            ssconf.SimpleStore().WriteFiles(ssconf_values)
            with self._lock:
                online, candidates = list(self._online), \
                    list(self._candidates)
            # (what, target nodes, the RPC pushing it, its other arguments)
            pushes: list[tuple[str, list[str], Callable[..., dict],
                               tuple]] = [
                ("ssconf", online, self._rpc.call_write_ssconf_files,
                 (ssconf_values,))]
            for path, mode, nodes in self._AncillaryFiles(online,
                                                          candidates):
                pushes.append((os.path.basename(path), nodes,
                               self._rpc.call_upload_file,
                               (path, utils.ReadFile(path), mode)))
            for what, nodes, push, args in pushes:
                if not nodes:
                    continue
                results = push(nodes, *args)
                for uuid in nodes:
                    if results[uuid].fail_msg:
                        feedback_fn("Copy of %s to node %s failed: %s" %
                                    (what, self._names.get(uuid, uuid),
                                     results[uuid].fail_msg))
                self._Failed(what, nodes, results, len(nodes))
            self._last_ssconf = ssconf_values

    @staticmethod
    def _AncillaryFiles(online: list[str], candidates: list[str]
                        ) -> list[tuple[str, int, list[str]]]:
        """(path, mode, targets) of the cluster files that nodes copy."""
        files = [(pathutils.CLUSTER_CONF_FILE, constants.CONFIG_FILE_MODE,
                  candidates)]
        for path in (pathutils.RAPI_CERT_FILE, pathutils.RAPI_USERS_FILE,
                     pathutils.CLUSTER_DOMAIN_SECRET_FILE,
                     pathutils.CONFD_HMAC_KEY,
                     pathutils.FILE_STORAGE_PATHS_FILE,
                     pathutils.BLOCKDEV_PATHS_FILE):
            if os.path.exists(path):
                files.append((path, os.stat(path).st_mode & 0o7777, online))
        return files

    # Full resynchronisation --------------------------------------------------
    def SyncNode(self, uuid: str) -> bool:
        """Push everything to one node now; True if it is up to date.

        Candidates get the configuration, the whole job queue (after a
        purge of their old copy) and the drain flag; every node gets ssconf.
        """
        with self._lock:
            state = self._nodes.get(uuid)
            if state is None or state.state == _SYNCING:
                return False
            state.state = _SYNCING
            state.dirty = set()
            state.renames = []
            candidate = uuid in self._candidates
        ok = False
        try:
            ok = self._FullSync(uuid, candidate)
            while ok:
                with self._lock:
                    dirty, renames = state.dirty, state.renames
                    state.dirty, state.renames = set(), []
                    if not dirty and not renames:
                        state.state = _OK
                        state.backoff = RETRY_MIN
                        state.error = None
                        break
                ok = self._SendDirty(uuid, dirty, renames)
        finally:
            if not ok:
                with self._lock:
                    state.state = _STALE
                    state.retry_at = time.monotonic() + state.backoff
                    state.backoff = min(state.backoff * 2, RETRY_MAX)
        name = self._names.get(uuid, uuid)
        if ok:
            logging.info("Node %s resynchronised", name)
        return ok

    def _Call(self, uuid: str, what: str, result: Any) -> bool:
        if result.fail_msg:
            logging.warning("Resynchronising %s failed (%s): %s",
                            self._names.get(uuid, uuid), what,
                            result.fail_msg)
            with self._lock:
                state = self._nodes.get(uuid)
                if state is not None:
                    state.error = "%s: %s" % (what, result.fail_msg)
            return False
        return True

    def GetBehind(self) -> dict[str, str]:
        """Nodes whose copies failed to be brought up to date, and why.

        For ``gnt-cluster verify``; a node only waiting for its first
        resynchronisation is not listed.
        """
        with self._lock:
            return {uuid: state.error for uuid, state in self._nodes.items()
                    if state.state != _OK and state.error is not None}

    def _FullSync(self, uuid: str, candidate: bool) -> bool:
        ssconf = self._cfg.GetSsconfValues()
        if not self._Call(uuid, "ssconf", self._rpc.call_write_ssconf_files(
                [uuid], ssconf)[uuid]):
            return False
        if not candidate:
            return True
        if not self._Call(uuid, "purge", self._rpc.call_jobqueue_purge(uuid)):
            return False
        data = utils.ReadFile(pathutils.CLUSTER_CONF_FILE)
        if not self._Call(uuid, "config.data", self._rpc.call_upload_file(
                [uuid], pathutils.CLUSTER_CONF_FILE, data,
                constants.CONFIG_FILE_MODE)[uuid]):
            return False
        return self._SendDirty(uuid, set(self._QueueFiles()) | {_DRAIN_MARK},
                               [])

    def _QueueFiles(self) -> Iterable[str]:
        """Every queue file a candidate keeps (serial, jobs, archive)."""
        yield os.path.join(self._queue_dir, "serial")
        for name in sorted(os.listdir(self._queue_dir)):
            if name.startswith("job-"):
                yield os.path.join(self._queue_dir, name)
        archive = os.path.join(self._queue_dir, "archive")
        for sub in sorted(os.listdir(archive)) if os.path.isdir(archive) \
                else []:
            subdir = os.path.join(archive, sub)
            if os.path.isdir(subdir):
                for name in sorted(os.listdir(subdir)):
                    yield os.path.join(subdir, name)

    def _SendDirty(self, uuid: str, paths: set[str],
                   renames: list[tuple[str, str]]) -> bool:
        """Send the current content of files changed during a sync."""
        for old, new in renames:
            # Archived during the sync: move the node's live copy, if it
            # got one, out of the way; the archived file is sent below
            self._rpc.call_jobqueue_rename([uuid], [
                [vcluster.MakeVirtualPath(old),
                 vcluster.MakeVirtualPath(new)]])
            paths = paths | {new}
        for path in sorted(paths):
            if path == _DRAIN_MARK:
                result = self._rpc.call_jobqueue_set_drain_flag(
                    [uuid], self._is_drained())[uuid]
            elif path == _SSCONF_MARK:
                result = self._rpc.call_write_ssconf_files(
                    [uuid], self._cfg.GetSsconfValues())[uuid]
            elif path == pathutils.CLUSTER_CONF_FILE:
                result = self._rpc.call_upload_file(
                    [uuid], path, utils.ReadFile(path),
                    constants.CONFIG_FILE_MODE)[uuid]
            else:
                try:
                    data = utils.ReadFile(path)
                except FileNotFoundError:
                    continue
                result = self._rpc.call_jobqueue_update([uuid], path,
                                                        data)[uuid]
            if not self._Call(uuid, os.path.basename(path), result):
                return False
        return True

    # Background retries ------------------------------------------------------
    def _RetryLoop(self) -> None:
        while True:
            with self._lock:
                if self._stop:
                    return
                now = time.monotonic()
                due = [uuid for uuid, state in self._nodes.items()
                       if state.state == _STALE and state.retry_at <= now]
                if not due:
                    waits = [state.retry_at - now
                             for state in self._nodes.values()
                             if state.state == _STALE]
                    self._wakeup.wait(min(waits) if waits else None)
                    continue
            for uuid in due:
                self.SyncNode(uuid)

    def WaitSynced(self, timeout: float, uuid: str | None = None) -> bool:
        """Wait until a node (or every node) is up to date."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                states = ([self._nodes[uuid]] if uuid in self._nodes
                          else []) if uuid else list(self._nodes.values())
                if all(state.state == _OK for state in states):
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def Shutdown(self) -> None:
        with self._lock:
            self._stop = True
            self._wakeup.notify_all()
        self._thread.join(5)


# Pseudo-paths for the dirty sets: state that is not a queue file
_DRAIN_MARK = "<drain flag>"
_SSCONF_MARK = "<ssconf>"
