"""The cluster's nodes and instances as Placement providers and consumers.

Every node is a root provider (UUID and name the node's) with the
inventories ``VCPU``, ``MEMORY_MB`` and ``DISK_GB`` from its live data and
the cluster's vcpu-ratio, in the aggregates of ``cluster.NodeAggregates``;
every instance is a consumer (UUID the instance's) allocating its vCPUs
and memory on its primary node and its disks on each node holding them.
They are derived from query rows whenever the API is asked, so they are
always in step with the cluster; the generations are the objects' serial
numbers. A node whose live data is missing (offline, unreachable) has no
inventory of what is missing; one that cannot take instances (offline,
drained, not vm_capable) has the trait ``COMPUTE_STATUS_DISABLED``.
"""

import math
import types
from typing import Any, Iterable

from ganeti import constants
from ganeti.placement import cluster, model

Row = dict[str, Any]

NODE_FIELDS = ["uuid", "name", "serial_no", "group.uuid", "aggregates",
               "ctotal", "mtotal", "mnode", "dtotal", "offline", "drained",
               "vm_capable"]
INSTANCE_FIELDS = ["uuid", "serial_no", "pnode", "snodes", "disk_template",
                   "be/vcpus", "be/maxmem", "disk_usage"]

# The owner of the instances' allocations (GET /usages?project_id=ganeti)
PROJECT_ID = "ganeti"
USER_ID = "ganeti"

TRAIT_DISABLED = "COMPUTE_STATUS_DISABLED"

MIB_PER_GIB = 1024


def _Inventory(total: Any, reserved: Any = 0,
               allocation_ratio: float = 1.0) -> dict | None:
    """An inventory record, or None without a usable total."""
    if not isinstance(total, int) or total < 1:
        return None
    if not isinstance(reserved, int) or not 0 <= reserved < total:
        reserved = 0
    return dict(model.INVENTORY_DEFAULTS, total=total, reserved=reserved,
                allocation_ratio=float(allocation_ratio))


def NodeProvider(row: Row, vcpu_ratio: float) -> model.Provider:
    """A node's provider; memory used by the node itself is reserved."""
    inventories = {
        "VCPU": _Inventory(row["ctotal"], allocation_ratio=vcpu_ratio),
        "MEMORY_MB": _Inventory(row["mtotal"], row["mnode"]),
        "DISK_GB": _Inventory(row["dtotal"] // MIB_PER_GIB
                              if isinstance(row["dtotal"], int) else None),
    }
    traits = set()
    if row["offline"] or row["drained"] or not row["vm_capable"]:
        traits.add(TRAIT_DISABLED)
    return model.Provider(
        uuid=row["uuid"], name=row["name"], generation=row["serial_no"],
        root=row["uuid"],
        inventories={rc: inv for rc, inv in inventories.items() if inv},
        traits=traits,
        aggregates=cluster.NodeAggregates(types.SimpleNamespace(
            group=row["group.uuid"], aggregates=row["aggregates"])))


def InstanceConsumer(row: Row, node_uuids: dict[str, str]
                     ) -> model.Consumer | None:
    """An instance's consumer (None if it allocates nothing): vCPUs and
    memory on the primary node, disk space on every node with a local
    copy (the primary, and the secondary of a mirrored template)."""
    allocations: dict[str, dict[str, int]] = {}

    def add(node: str, rclass: str, amount: Any) -> None:
        if node in node_uuids and isinstance(amount, int) and amount > 0:
            allocations.setdefault(node_uuids[node], {})[rclass] = amount

    add(row["pnode"], "VCPU", row["be/vcpus"])
    add(row["pnode"], "MEMORY_MB", row["be/maxmem"])
    template = row["disk_template"]
    if template not in constants.DTS_EXT_MIRROR and \
            isinstance(row["disk_usage"], int):
        disk_gb = math.ceil(row["disk_usage"] / MIB_PER_GIB)
        disk_nodes = [row["pnode"]]
        if template in constants.DTS_INT_MIRROR:
            disk_nodes += row["snodes"] or []
        for node in disk_nodes:
            add(node, "DISK_GB", disk_gb)
    if not allocations:
        return None
    return model.Consumer(uuid=row["uuid"], project_id=PROJECT_ID,
                          user_id=USER_ID, generation=row["serial_no"],
                          allocations=allocations)


def ClusterProviders(vcpu_ratio: float, nodes: Iterable[Row],
                     instances: Iterable[Row]
                     ) -> tuple[list[model.Provider], list[model.Consumer]]:
    """The providers of the nodes and the consumers of the instances."""
    providers = [NodeProvider(row, vcpu_ratio) for row in nodes]
    node_uuids = {p.name: p.uuid for p in providers}
    consumers = [consumer for consumer in
                 (InstanceConsumer(row, node_uuids) for row in instances)
                 if consumer is not None]
    return providers, consumers
