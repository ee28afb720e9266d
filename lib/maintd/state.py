"""The incidents ganeti-maintd knows of, kept in the configuration.

An incident is one JSON object a node's self-diagnose collector
reported (its ``original``); the same object again is the same
incident, a different one a new incident with a new id. The state lives
in the configuration's maintenance section (objects.Maintenance),
written through the master daemon whenever it changed, so that a
restarted maintd, or the maintd of a new master after a failover,
carries on where the last one stopped.
"""

import copy
import threading
import time
import uuid
from typing import Any

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
    """The incidents, the current round and the last ones; thread-safe.

    ``loaded`` tells whether the state was read from the configuration
    yet (maintd acts only then, so that it never overwrites the state of
    an earlier maintd).
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.loaded = False
        self.incidents: dict[str, dict[str, Any]] = {}
        # {"started": time, "incidents": [ids], "jobs": [ids]} or None
        self.round: dict[str, Any] | None = None
        self.last_rounds: list[dict[str, Any]] = []
        self.last_round_start = 0.0
        # The last poll (not kept in the configuration): when, and each
        # node's uuid, name, offline flag and verified diagnose data
        # (None: no valid report, or not polled)
        self.last_poll = 0.0
        self.nodes: list[dict[str, Any]] = []
        # What the configuration holds (ToConfig's last stored result)
        self._stored: dict[str, Any] | None = None

    def FromConfig(self, maintenance: dict[str, Any]) -> None:
        """Take over the state of the configuration's maintenance section
        (its serialized form)."""
        with self.lock:
            self.incidents = {inc["id"]: inc
                              for inc in maintenance.get("incidents", [])}
            self.round = maintenance.get("round")
            self.last_rounds = maintenance.get("lastRounds", [])
            self.last_round_start = maintenance.get("lastRoundStart", 0.0)
            self._stored = self.ToConfig()
            self.loaded = True

    def ToConfig(self) -> dict[str, Any]:
        """The state as the maintenance section's fields (a copy)."""
        with self.lock:
            return copy.deepcopy({
                "incidents": list(self.incidents.values()),
                "jobs": self.Jobs(), "evacuated": self.Evacuated(),
                "round": self.round, "lastRounds": self.last_rounds,
                "lastRoundStart": self.last_round_start})

    def Changes(self) -> dict[str, Any] | None:
        """The state to store, None if the configuration holds it."""
        with self.lock:
            current = self.ToConfig()
            return None if current == self._stored else current

    def Stored(self, state: dict[str, Any]) -> None:
        """``state`` (from Changes) is now in the configuration."""
        with self.lock:
            self._stored = state

    def NotePoll(self, nodes: dict[str, dict[str, Any]],
                 observed: dict[str, dict[str, Any]]) -> None:
        """Remember a poll's nodes (UUID -> name, offline, ...) and the
        diagnose data they reported, for the status page."""
        with self.lock:
            self.last_poll = time.time()
            self.nodes = [{"uuid": node_uuid, "name": node["name"],
                           "offline": node["offline"],
                           "diagnose": observed.get(node_uuid)}
                          for node_uuid, node in nodes.items()]

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

