"""The watcher's per-group state file.

``watcher.<group uuid>.data`` (JSON, Ganeti's format) remembers between
runs how often the watcher tried to restart or clean up each instance and
the boot id it last saw of each node:
``{"instance": {name: {"restart_count", "restart_when", "cleanup_count",
"cleanup_when"}}, "node": {name: {"bootid"}}}``. Removing the file only
resets the counters (and makes every node look freshly rebooted).

The file stays locked while a group's watcher works on it, so two
watchers never act on the same group at once.
"""

import logging
import os
import time
from typing import Any

from ganeti import errors, serializer, utils

# Records older than this are forgotten: at 5 tries every 5 minutes the
# counter is used up in half an hour, so 8 hours gives an instance a fresh
# set of tries now and then (Ganeti's RETRY_EXPIRATION)
RETRY_EXPIRATION = 8 * 3600

KEY_CLEANUP_COUNT = "cleanup_count"
KEY_CLEANUP_WHEN = "cleanup_when"
KEY_RESTART_COUNT = "restart_count"
KEY_RESTART_WHEN = "restart_when"
KEY_BOOT_ID = "bootid"


def OpenStateFile(path: str) -> int | None:
    """Open (creating it) and lock the state file; its descriptor.

    None (logged) if another process holds the lock.
    """
    try:
        return utils.LockFile(path)
    except errors.LockError as err:
        logging.error("Can't acquire lock on state file %s: %s", path, err)
        return None


class WatcherState:
    """The restart counters and boot ids of one group, read from the
    locked state file and written back by Save."""

    def __init__(self, fd: int):
        self._fd = fd
        with os.fdopen(os.dup(fd), "r", encoding="utf-8") as fobj:
            text = fobj.read()
        try:
            data = serializer.LoadJson(text) if text else {}
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except ValueError as err:
            # A damaged file only costs the counters
            logging.warning("Invalid state file. Using defaults. Error"
                            " message: %s", err)
            data = {}
        data.setdefault("instance", {})
        data.setdefault("node", {})
        self._data: dict[str, dict[str, dict[str, Any]]] = data
        self._orig = serializer.DumpJson(data)

    def Save(self, path: str) -> None:
        """Write the state (or touch the file when nothing changed).

        The file is rewritten in place through the locked descriptor, so
        the lock is never let go meanwhile; a file torn by a crash only
        costs the counters (see above).
        """
        text = serializer.DumpJson(self._data)
        if text == self._orig:
            logging.debug("Data didn't change, just touching status file")
            os.utime(path, None)
            return
        data = text.encode("utf-8")
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        os.fsync(self._fd)
        self._orig = text

    def Close(self) -> None:
        """Release the lock."""
        os.close(self._fd)

    def GetNodeBootID(self, name: str) -> str | None:
        return self._data["node"].get(name, {}).get(KEY_BOOT_ID)

    def SetNodeBootID(self, name: str, bootid: str) -> None:
        self._data["node"].setdefault(name, {})[KEY_BOOT_ID] = bootid

    def NumberOfRestartAttempts(self, name: str) -> int:
        return self._data["instance"].get(name, {}).get(KEY_RESTART_COUNT, 0)

    def NumberOfCleanupAttempts(self, name: str) -> int:
        return self._data["instance"].get(name, {}).get(KEY_CLEANUP_COUNT, 0)

    def MaintainInstanceList(self, names: list[str]) -> None:
        """Forget instances that are gone and records that expired.

        A record expires with its latest attempt, a restart or a clean-up
        (Ganeti looks at the restarts only, which forgets the clean-up
        attempts at once and so never stops retrying a failing one).
        """
        records = self._data["instance"]
        for name in set(records).difference(names):
            logging.debug("Forgetting obsolete instance %s", name)
            del records[name]
        earliest = time.time() - RETRY_EXPIRATION
        for name in [name for name, record in records.items()
                     if max(record.get(KEY_RESTART_WHEN, 0),
                            record.get(KEY_CLEANUP_WHEN, 0)) < earliest]:
            logging.debug("Expiring record for instance %s", name)
            del records[name]

    def _RecordAttempt(self, name: str, key_when: str, key_count: str) -> None:
        record = self._data["instance"].setdefault(name, {})
        record[key_when] = time.time()
        record[key_count] = record.get(key_count, 0) + 1

    def RecordRestartAttempt(self, name: str) -> None:
        self._RecordAttempt(name, KEY_RESTART_WHEN, KEY_RESTART_COUNT)

    def RecordCleanupAttempt(self, name: str) -> None:
        self._RecordAttempt(name, KEY_CLEANUP_WHEN, KEY_CLEANUP_COUNT)

    def RemoveInstance(self, name: str) -> None:
        """Forget an instance (it runs again)."""
        self._data["instance"].pop(name, None)
