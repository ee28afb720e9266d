"""The Placement state: kept in the cluster configuration, cached here.

What the API created (providers, consumers, custom classes and traits)
is the ``placement`` section of config.data, so it is replicated to the
master candidates with the configuration and survives a master failover.
The RAPI daemon reads and replaces it through the master daemon
(``ConfigSource`` runs there, a ``Source`` over LUXI here), which
replaces it only if nobody else did since it was read (a compare and set
on the section's ``serial``). Requests are served in threads; a lock
makes each read or change see and leave a consistent state, so the
daemon's own writes never collide and a generation checked under the
lock stays valid until the write. A collision with another writer (a
node removal, which drops the allocations on the node) is Placement's
409 ``placement.concurrent_update``; a change that fails half-way is
forgotten. The cluster's nodes and instances are not stored: each
request attaches them, as a ``View`` derived them, for as long as it
holds the state.
"""

import contextlib
import threading
from typing import Any, Callable, Iterator, Protocol

from ganeti import errors
from ganeti import placement as pl
from ganeti.placement import model


# The cluster's providers and consumers (see placement.nodes)
ClusterSnapshot = tuple[list[model.Provider], list[model.Consumer]]

SERIAL = "serial"


def Serial(data: dict | None) -> int:
    """The serial number of a stored state (0: never written)."""
    return (data or {}).get(SERIAL, 0)


class Source(Protocol):
    """Where the state is kept."""

    def Load(self, known_serial: int | None) -> dict | None:
        """The stored state (with its serial), None if its serial is
        still ``known_serial``."""

    def Save(self, serial: int, data: dict) -> int:
        """Replace the state read at ``serial``; the new serial."""


class ConfigSource:
    """The state in the configuration (``ConfigWriter``): what the master
    daemon serves through LUXI."""

    def __init__(self, cfg: Any):
        self._cfg = cfg

    def Load(self, known_serial: int | None) -> dict | None:
        data = self._cfg.GetPlacementState()
        return None if Serial(data) == known_serial else data

    def Save(self, serial: int, data: dict) -> int:
        if not isinstance(serial, int) or not isinstance(data, dict):
            raise errors.ProtocolError("A Placement state is a serial"
                                       " number and a dict")
        new_serial = self._cfg.SetPlacementState(serial, data)
        if new_serial is None:
            raise errors.PlacementError(
                409, "Another thread concurrently updated the data. Please"
                " retry your update", pl.ERR_CONCURRENT_UPDATE)
        return new_serial


class Store:
    """The state of a ``Source``, cached in memory between requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: model.State | None = None
        self._serial: int | None = None

    def _Load(self, source: Source) -> model.State:
        data = source.Load(self._serial if self._state is not None
                           else None)
        if data is not None:
            self._state = model.State.FromDict(data)
            self._serial = Serial(data)
        assert self._state is not None
        return self._state

    @contextlib.contextmanager
    def _Attached(self, source: Source, snapshot: ClusterSnapshot
                  ) -> Iterator[model.State]:
        """The state with the cluster's snapshot attached while in use."""
        state = self._Load(source)
        state.AttachCluster(*snapshot)
        try:
            yield state
        finally:
            state.DetachCluster()

    @contextlib.contextmanager
    def Reading(self, source: Source, snapshot: ClusterSnapshot = ([], [])
                ) -> Iterator[model.State]:
        """The state with the cluster's snapshot, not to be changed."""
        with self._lock, self._Attached(source, snapshot) as state:
            yield state

    @contextlib.contextmanager
    def Changing(self, source: Source, snapshot: ClusterSnapshot = ([], [])
                 ) -> Iterator[model.State]:
        """The state with the cluster's snapshot to change; saved (without
        the snapshot) if the block succeeds, forgotten if it fails."""
        with self._lock:
            try:
                with self._Attached(source, snapshot) as state:
                    yield state
                self._serial = source.Save(self._serial or 0,
                                           state.ToDict())
            except BaseException:
                self._state = None
                raise


class View:
    """One request's access to the store: the cluster's snapshot is taken
    on first use (outside the store's lock) and kept for the request."""

    def __init__(self, state_store: Store, source: Source,
                 take_snapshot: Callable[[], ClusterSnapshot]):
        self._store = state_store
        self._source = source
        self._take_snapshot = take_snapshot
        self._snapshot: ClusterSnapshot | None = None

    def _Snapshot(self) -> ClusterSnapshot:
        if self._snapshot is None:
            self._snapshot = self._take_snapshot()
        return self._snapshot

    def Reading(self) -> contextlib.AbstractContextManager[model.State]:
        return self._store.Reading(self._source, self._Snapshot())

    def Changing(self) -> contextlib.AbstractContextManager[model.State]:
        return self._store.Changing(self._source, self._Snapshot())
