"""The whole configuration as config.data holds it, with the maintenance
section of ganeti-maintd.
"""

# Field annotations stay strings: ConfigObject reads them, never evaluates
from __future__ import annotations

from typing import Any, Self

from ganeti import constants, errors, ht
from ganeti.objects.base import ConfigObject, _TSerial, _TTimestamp
from ganeti.objects.cluster import Cluster, Node, NodeGroup
from ganeti.objects.filters import FilterRule
from ganeti.objects.instance import Disk, Instance
from ganeti.objects.network import Network


class Maintenance(ConfigObject):
    """ganeti-maintd's settings and state (config.data's ``maintenance``).

    It lives in the configuration, as design-maintd asks, so that it is
    replicated with it and a maintd on a new master carries on after a
    failover. The settings (``roundDelay``, ``balance``,
    ``balanceThreshold``, ``balanceDiskMoves``: whether balancing may move
    disks, ``balanceDynamicLoad``: whether it balances the nodes' dynamic
    load (from their monitoring daemons) too, ``harep``: whether maintd
    does harep's duties) are changed by OpClusterSetParams, ``canceled``
    (the incidents the admin canceled, which maintd never writes) by
    OpClusterRepairCancel; the rest is maintd's state, written through
    the master daemon: the incidents (dicts as ``/1/status`` reports
    them, plus maintd's own keys), the jobs of the current round, the
    evacuated nodes, the current round and the last ones.
    """

    roundDelay: int
    balance: bool
    balanceThreshold: float
    balanceDiskMoves: bool
    balanceDynamicLoad: bool
    harep: bool
    jobs: list[int]
    evacuated: list[str]
    incidents: list[dict[str, Any]]
    round: dict[str, Any] | None
    lastRounds: list[dict[str, Any]]
    lastRoundStart: float
    canceled: list[str]
    serial_no: int
    ctime: float
    mtime: float
    _FIELD_CHECKS = {
        "roundDelay": ht.TNonNegativeInt,
        "balance": ht.TBool,
        "balanceThreshold": ht.TNonNegativeNumber,
        "balanceDiskMoves": ht.TBool,
        "balanceDynamicLoad": ht.TBool,
        "harep": ht.TBool,
        "jobs": ht.TListOf(ht.TNonNegativeInt),
        "evacuated": ht.TListOf(ht.TString),
        "incidents": ht.TListOf(ht.TDict),
        "round": ht.TMaybe(ht.TDict),
        "lastRounds": ht.TListOf(ht.TDict),
        "lastRoundStart": ht.TNonNegativeNumber,
        "canceled": ht.TListOf(ht.TString),
        "serial_no": _TSerial, "ctime": _TTimestamp, "mtime": _TTimestamp,
    }
    _FIELD_DEFAULTS = {
        "roundDelay": constants.MAINTD_DEFAULT_ROUND_DELAY,
        "balance": False,
        "balanceThreshold": constants.MAINTD_DEFAULT_BALANCE_THRESHOLD,
        "balanceDiskMoves": True, "balanceDynamicLoad": False,
        "harep": False,
        "jobs": [], "evacuated": [], "incidents": [], "lastRounds": [],
        "lastRoundStart": 0.0, "canceled": [], "serial_no": 1,
    }

    # The fields maintd writes (the others are cluster parameters)
    STATE_FIELDS = ("jobs", "evacuated", "incidents", "round", "lastRounds",
                    "lastRoundStart")


class ConfigData(ConfigObject):
    """The whole configuration: what config.data holds."""

    version: int
    cluster: Cluster
    nodes: dict[str, Node]
    nodegroups: dict[str, NodeGroup]
    instances: dict[str, Instance]
    networks: dict[str, Network]
    disks: dict[str, Disk]
    filters: dict[str, FilterRule]
    maintenance: Maintenance
    # What the Placement API created (ganeti.placement.store), in its own
    # JSON form; unset until the API first changes something
    placement: dict[str, Any] | None
    serial_no: int
    ctime: float
    mtime: float
    _FIELD_CHECKS = {"version": ht.TInt, "serial_no": _TSerial,
                     "ctime": _TTimestamp, "mtime": _TTimestamp,
                     "placement": ht.TMaybeDict}
    _FIELD_DEFAULTS = {"nodes": {}, "nodegroups": {}, "instances": {},
                       "networks": {}, "disks": {}, "filters": {},
                       "serial_no": 1}
    _REQUIRED = frozenset(["version", "cluster"])
    _NESTED = {
        "cluster": (Cluster, None),
        "nodes": (Node, dict),
        "nodegroups": (NodeGroup, dict),
        "instances": (Instance, dict),
        "networks": (Network, dict),
        "disks": (Disk, dict),
        "filters": (FilterRule, dict),
        "maintenance": (Maintenance, None),
    }

    def UpgradeConfig(self) -> None:
        """Also give a configuration from before maintd its (empty)
        maintenance section."""
        if self.maintenance is None:
            self.maintenance = Maintenance()
        super().UpgradeConfig()

    @classmethod
    def FromDict(cls, data: dict) -> Self:
        missing = [key for key in ("version", "cluster") if key not in data]
        if missing:
            raise errors.ConfigurationError("Configuration lacks %s" %
                                            ", ".join(missing))
        return super().FromDict(data)
