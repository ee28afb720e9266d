"""The Placement state on disk: one JSON file, replaced atomically.

Requests are served in threads; a lock makes each read or change see and
leave a consistent state. A change that fails half-way is forgotten: the
next request reads the file again. The cluster's nodes and instances are
not stored: each request attaches them, as a ``View`` derived them, for
as long as it holds the state.
"""

import contextlib
import logging
import os
import threading
from typing import Callable, Iterator

from ganeti import serializer, utils
from ganeti.placement import model


# The cluster's providers and consumers (see placement.nodes)
ClusterSnapshot = tuple[list[model.Provider], list[model.Consumer]]


class Store:
    """The state in ``path``, cached in memory between requests."""

    def __init__(self, path: str):
        self._path = path
        self._lock = threading.Lock()
        self._state: model.State | None = None

    def _Load(self) -> model.State:
        if self._state is None:
            if os.path.exists(self._path):
                data = serializer.LoadJson(utils.ReadFile(self._path))
                self._state = model.State.FromDict(data)
            else:
                self._state = model.State()
        return self._state

    @contextlib.contextmanager
    def Reading(self, snapshot: ClusterSnapshot = ([], [])
                ) -> Iterator[model.State]:
        """The state with the cluster's snapshot, not to be changed."""
        with self._lock:
            state = self._Load()
            state.AttachCluster(*snapshot)
            try:
                yield state
            finally:
                state.DetachCluster()

    @contextlib.contextmanager
    def Changing(self, snapshot: ClusterSnapshot = ([], [])
                 ) -> Iterator[model.State]:
        """The state with the cluster's snapshot to change; written back
        (without the snapshot) if the block succeeds."""
        with self._lock:
            state = self._Load()
            state.AttachCluster(*snapshot)
            try:
                yield state
            except BaseException:
                self._state = None
                raise
            finally:
                state.DetachCluster()
            utils.WriteFile(self._path, data=serializer.DumpJson(
                state.ToDict()), mode=0o600, mkdir=True)
            logging.debug("Placement state written to %s", self._path)


class View:
    """One request's access to the store: the cluster's snapshot is taken
    on first use (outside the store's lock) and kept for the request."""

    def __init__(self, state_store: Store,
                 take_snapshot: Callable[[], ClusterSnapshot]):
        self._store = state_store
        self._take_snapshot = take_snapshot
        self._snapshot: ClusterSnapshot | None = None

    def _Snapshot(self) -> ClusterSnapshot:
        if self._snapshot is None:
            self._snapshot = self._take_snapshot()
        return self._snapshot

    def Reading(self) -> contextlib.AbstractContextManager[model.State]:
        return self._store.Reading(self._Snapshot())

    def Changing(self) -> contextlib.AbstractContextManager[model.State]:
        return self._store.Changing(self._Snapshot())
