"""The incidents ganeti-maintd knows of, kept in a file on the master.

An incident is one JSON object a node's self-diagnose collector
reported (its ``original``); the same object again is the same
incident, a different one a new incident with a new id. The file is
replaced atomically after every change, so a restarted maintd carries
on where it stopped.
"""

import threading
import uuid
from typing import Any

from ganeti import errors, pathutils, serializer, utils

STATE_FILE = pathutils.DATA_DIR + "/maintd-state.json"

NOTED = "noted"
PENDING = "pending"
CANCELED = "canceled"
FAILED = "failed"
COMPLETED = "completed"
REPAIR_STATUSES = frozenset([NOTED, PENDING, CANCELED, FAILED, COMPLETED])

TAG_READY_PREFIX = "maintd:repairready:"
TAG_FAILED_PREFIX = "maintd:repairfailed:"
# How many finished rounds /1/status's companions remember
_MAX_ROUNDS = 10


def NewIncident(node_uuid: str, node_name: str,
                original: dict[str, Any]) -> dict[str, Any]:
    """A just observed incident (Ganeti's /1/status fields, plus the node's
    name and the phase of its repair, for the daemon's own use)."""
    incident_id = str(uuid.uuid4())
    return {
        "id": incident_id,
        "node": node_uuid,
        "node-name": node_name,
        "original": original,
        "repair-status": NOTED,
        "jobs": [],
        "tag": TAG_READY_PREFIX + incident_id,
        "phase": None,
    }


class State:
    """The incidents, the current round and the last ones; thread-safe,
    saved to ``path`` at every Save()."""

    def __init__(self, path: str = STATE_FILE):
        self._path = path
        self.lock = threading.RLock()
        self.incidents: dict[str, dict[str, Any]] = {}
        # {"started": time, "incidents": [ids], "jobs": [ids]} or None
        self.round: dict[str, Any] | None = None
        self.last_rounds: list[dict[str, Any]] = []
        self.last_round_start = 0.0

    def Load(self) -> None:
        """Read the file (a missing one is an empty state)."""
        try:
            data = serializer.LoadJson(utils.ReadFile(self._path))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as err:
            raise errors.ConfigurationError("Can't read the maintd state %s:"
                                            " %s" % (self._path, err)) from err
        with self.lock:
            self.incidents = {inc["id"]: inc for inc in data["incidents"]}
            self.round = data.get("round")
            self.last_rounds = data.get("last_rounds", [])
            self.last_round_start = data.get("last_round_start", 0.0)

    def Save(self) -> None:
        with self.lock:
            data = {"incidents": list(self.incidents.values()),
                    "round": self.round, "last_rounds": self.last_rounds,
                    "last_round_start": self.last_round_start}
            utils.WriteFile(self._path, data=serializer.DumpJson(data),
                            mode=0o600, mkdir=True)

    def EndRound(self) -> None:
        """The current round is over; remember it among the last ones."""
        with self.lock:
            if self.round is not None:
                self.last_rounds = ([self.round] +
                                    self.last_rounds)[:_MAX_ROUNDS]
                self.round = None

    def Status(self) -> list[dict[str, Any]]:
        """/1/status: the incidents as design-maintd lists them."""
        with self.lock:
            return [{name: inc[name] for name in
                     ("id", "node", "original", "repair-status", "jobs",
                      "tag")}
                    for inc in self.incidents.values()]

    def Jobs(self) -> list[int]:
        """/1/jobs: the jobs of the current round."""
        with self.lock:
            return list(self.round["jobs"]) if self.round else []

    def Evacuated(self) -> list[str]:
        """/1/evacuated: UUIDs of the nodes evacuated for an incident."""
        with self.lock:
            return sorted({inc["node"] for inc in self.incidents.values()
                           if inc["repair-status"] == COMPLETED and
                           inc["phase"] == "evacuated"})

