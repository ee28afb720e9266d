"""The Placement state on disk: one JSON file, replaced atomically.

Requests are served in threads; a lock makes each read or change see and
leave a consistent state. A change that fails half-way is forgotten: the
next request reads the file again.
"""

import contextlib
import logging
import os
import threading
from typing import Iterator

from ganeti import serializer, utils
from ganeti.placement import model


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
    def Reading(self) -> Iterator[model.State]:
        """The state, not to be changed."""
        with self._lock:
            yield self._Load()

    @contextlib.contextmanager
    def Changing(self) -> Iterator[model.State]:
        """The state to change; written back if the block succeeds."""
        with self._lock:
            state = self._Load()
            try:
                yield state
            except BaseException:
                self._state = None
                raise
            utils.WriteFile(self._path, data=serializer.DumpJson(
                state.ToDict()), mode=0o600, mkdir=True)
            logging.debug("Placement state written to %s", self._path)
