"""What the Placement API reads from and writes to the master daemon
through LUXI: the cluster's nodes and instances (as the rest of RAPI reads
them) once per request that needs the state, and the API's own state."""

from typing import Any, Callable

from ganeti import constants, errors, luxi, objects
from ganeti.parameters import families
from ganeti.placement import nodes, store


def _Rows(answer: dict, fields: list[str]) -> list[nodes.Row]:
    """Query2 rows as dicts; unavailable values are None."""
    return [{field: value if status == constants.RS_NORMAL else None
             for field, (status, value) in zip(fields, row)}
            for row in answer["data"]]


def TakeSnapshot(client: luxi.Client) -> store.ClusterSnapshot:
    """The nodes as providers and the instances as consumers."""
    try:
        ipolicy = client.QueryClusterInfo().get("ipolicy") or {}
        node_rows = _Rows(client.Query(constants.QR_NODE, nodes.NODE_FIELDS,
                                       None), nodes.NODE_FIELDS)
        instance_rows = _Rows(client.Query(constants.QR_INSTANCE,
                                           nodes.INSTANCE_FIELDS, None),
                              nodes.INSTANCE_FIELDS)
    except errors.GenericError as err:
        raise errors.PlacementError(
            503, "Unable to read the cluster's nodes and instances from the"
            " master daemon: %s" % err) from err
    ratio = ipolicy.get(families.IPOLICY_VCPU_RATIO,
                        objects.IPOLICY_DEFAULTS[families.IPOLICY_VCPU_RATIO])
    return nodes.ClusterProviders(ratio, node_rows, instance_rows)


def Snapshotter(get_client: Callable[[], luxi.Client]
                ) -> Callable[[], store.ClusterSnapshot]:
    """A snapshot taker for ``store.View`` using the request's client."""
    return lambda: TakeSnapshot(get_client())


class LuxiSource:
    """The stored state (``store.ConfigSource`` in the master daemon),
    through the request's client."""

    def __init__(self, get_client: Callable[[], luxi.Client]):
        self._get_client = get_client

    def Load(self, known_serial: int | None) -> dict | None:
        return self._Call(lambda c: c.QueryPlacementState(known_serial))

    def Save(self, serial: int, data: dict) -> int:
        return self._Call(lambda c: c.SetPlacementState(serial, data))

    def _Call(self, fn: Callable[[luxi.Client], Any]) -> Any:
        try:
            return fn(self._get_client())
        except errors.PlacementError:
            raise
        except errors.GenericError as err:
            raise errors.PlacementError(
                503, "Unable to reach the Placement state in the master"
                " daemon: %s" % err) from err
