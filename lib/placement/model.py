"""The Placement state: providers, their inventories, traits and aggregates,
and the consumers' allocations against them.

Every change goes through a method of ``State`` that checks what Placement
checks (generations, capacity, constraints) and raises
``errors.PlacementError`` with Placement's status, text and code. The state
converts to and from plain JSON data for persistence.
"""

import dataclasses
import uuid as uuidlib
from typing import Any, Iterable, NoReturn

from ganeti import errors
from ganeti import placement as pl

MAX_INT = 2147483647

STANDARD_RESOURCE_CLASSES = (
    "VCPU", "MEMORY_MB", "DISK_GB", "PCI_DEVICE", "SRIOV_NET_VF",
    "NUMA_SOCKET", "NUMA_CORE", "NUMA_THREAD", "NUMA_MEMORY_MB",
    "IPV4_ADDRESS", "VGPU", "VGPU_DISPLAY_HEAD",
    "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", "PCPU",
    "MEM_ENCRYPTION_CONTEXT", "FPGA", "PGPU",
    "NET_PACKET_RATE_KILOPACKET_PER_SEC",
    "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC",
    "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC",
)

STANDARD_TRAITS = (
    pl.TRAIT_SHARES_VIA_AGGREGATE, "HW_CPU_X86_AVX", "HW_CPU_X86_AVX2",
    "HW_CPU_X86_SSE", "HW_CPU_X86_SSE2", "HW_CPU_X86_SSE42",
    "HW_CPU_X86_VMX", "HW_CPU_X86_SVM", "HW_CPU_X86_AESNI",
    "HW_NIC_SRIOV", "HW_NUMA_ROOT", "HW_GPU_API_VULKAN",
    "STORAGE_DISK_HDD", "STORAGE_DISK_SSD", "COMPUTE_VOLUME_MULTI_ATTACH",
    "COMPUTE_STATUS_DISABLED", "COMPUTE_TRUSTED_CERTS",
    "COMPUTE_NODE", "COMPUTE_ARCH_X86_64",
)

CUSTOM_PREFIX = "CUSTOM_"

INVENTORY_DEFAULTS = {"reserved": 0, "min_unit": 1, "max_unit": MAX_INT,
                      "step_size": 1, "allocation_ratio": 1.0}
INVENTORY_FIELDS = ("total", ) + tuple(INVENTORY_DEFAULTS)


def NewUuid() -> str:
    return str(uuidlib.uuid4())


def Capacity(inventory: dict) -> int:
    """What consumers may use of an inventory in all."""
    return int((inventory["total"] - inventory["reserved"]) *
               inventory["allocation_ratio"])


def FitsUnits(inventory: dict, amount: int) -> bool:
    """Whether one allocation of ``amount`` respects the inventory's units."""
    return (inventory["min_unit"] <= amount <= inventory["max_unit"] and
            amount % inventory["step_size"] == 0)


def _Conflict(detail: str, code: str = pl.ERR_CONCURRENT_UPDATE) -> NoReturn:
    raise errors.PlacementError(409, detail, code)


@dataclasses.dataclass
class Provider:
    """A resource provider; ``parent`` and ``root`` are UUIDs."""

    uuid: str
    name: str
    generation: int = 0
    parent: str | None = None
    root: str = ""
    inventories: dict[str, dict] = dataclasses.field(default_factory=dict)
    traits: set[str] = dataclasses.field(default_factory=set)
    aggregates: set[str] = dataclasses.field(default_factory=set)

    def ToDict(self) -> dict:
        return {"uuid": self.uuid, "name": self.name,
                "generation": self.generation, "parent": self.parent,
                "inventories": self.inventories,
                "traits": sorted(self.traits),
                "aggregates": sorted(self.aggregates)}

    @classmethod
    def FromDict(cls, data: dict) -> "Provider":
        return cls(uuid=data["uuid"], name=data["name"],
                   generation=data["generation"], parent=data["parent"],
                   inventories=data["inventories"],
                   traits=set(data["traits"]),
                   aggregates=set(data["aggregates"]))


@dataclasses.dataclass
class Consumer:
    """A consumer and its allocations: provider -> class -> amount."""

    uuid: str
    project_id: str
    user_id: str
    generation: int = 0
    consumer_type: str = "INSTANCE"
    allocations: dict[str, dict[str, int]] = \
        dataclasses.field(default_factory=dict)

    def ToDict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def FromDict(cls, data: dict) -> "Consumer":
        return cls(**data)


def ProvidersUnder(data: dict, uuid: str) -> list[dict]:
    """The stored providers (``State.ToDict``) in the tree under the
    provider ``uuid``: its children, theirs and so on, parents first."""
    providers = data.get("providers", [])
    below: list[dict] = []
    parents = {uuid}
    while parents:
        level = [p for p in providers if p["parent"] in parents]
        below += level
        parents = {p["uuid"] for p in level}
    return below


def CheckNodeRemovable(data: dict, uuid: str, name: str) -> None:
    """Refuse to remove the node ``name`` while providers the API created
    under it (NUMA cells and the like) have allocations: Placement never
    deletes a provider in use, and those consumers are not the cluster's
    to drop. Providers under a node without allocations describe parts of
    the node and go with it (``WithoutProvider``)."""
    in_use = {c["uuid"]: c for c in data.get("consumers", [])}
    busy = []
    for provider in ProvidersUnder(data, uuid):
        users = sorted(consumer for consumer, c in in_use.items()
                       if provider["uuid"] in c["allocations"])
        if users:
            busy.append("%s (%s) by consumer(s) %s" % (
                provider["name"], provider["uuid"], ", ".join(users)))
    if busy:
        raise errors.OpPrereqError(
            "Node %s still has Placement resource providers with"
            " allocations under it: %s; delete those allocations (DELETE"
            " /placement/allocations/{consumer}) first" %
            (name, "; ".join(busy)), errors.ECODE_STATE)


def WithoutProvider(data: dict, uuid: str) -> dict | None:
    """A stored state (``State.ToDict``) without the provider tree of a
    node leaving the cluster: the allocations against the node ``uuid``
    and the API's providers under it (``CheckNodeRemovable`` made sure
    they have no allocations); None if there is none of either.

    Placement never lists an allocation against a provider that is gone
    (it refuses to delete one that has allocations); a node is removed by
    the cluster, not the API, so its allocations go with it, as Nova
    deletes a compute node's allocations with its provider. A consumer
    left without allocations is gone, as in Placement; the others' and
    their generations change.
    """
    consumers = data.get("consumers", [])
    below = {p["uuid"] for p in ProvidersUnder(data, uuid)}
    if not below and not any(uuid in c["allocations"] for c in consumers):
        return None
    kept = []
    for consumer in consumers:
        if uuid in consumer["allocations"]:
            allocations = {rp: resources for rp, resources
                           in consumer["allocations"].items() if rp != uuid}
            if not allocations:
                continue
            consumer = dict(consumer, allocations=allocations,
                            generation=consumer["generation"] + 1)
        kept.append(consumer)
    return dict(data, consumers=kept,
                providers=[p for p in data.get("providers", [])
                           if p["uuid"] not in below])


class State:
    """All of Placement's data, with the operations that change it.

    Besides what the API created, the state may hold the cluster's nodes
    and instances as providers and consumers (``AttachCluster``): they
    follow the configuration, so the API cannot change them and they are
    never persisted.
    """

    def __init__(self) -> None:
        self.providers: dict[str, Provider] = {}
        self.consumers: dict[str, Consumer] = {}
        self.custom_classes: set[str] = set()
        self.custom_traits: set[str] = set()
        # The UUIDs of the cluster's nodes and instances
        self.cluster_providers: set[str] = set()
        self.cluster_consumers: set[str] = set()

    # Persistence -------------------------------------------------------------

    def ToDict(self) -> dict:
        return {"providers": [p.ToDict() for p in self.providers.values()
                              if p.uuid not in self.cluster_providers],
                "consumers": [c.ToDict() for c in self.consumers.values()
                              if c.uuid not in self.cluster_consumers],
                "custom_classes": sorted(self.custom_classes),
                "custom_traits": sorted(self.custom_traits)}

    @classmethod
    def FromDict(cls, data: dict) -> "State":
        state = cls()
        for item in data.get("providers", []):
            provider = Provider.FromDict(item)
            state.providers[provider.uuid] = provider
        for item in data.get("consumers", []):
            consumer = Consumer.FromDict(item)
            state.consumers[consumer.uuid] = consumer
        state.custom_classes = set(data.get("custom_classes", []))
        state.custom_traits = set(data.get("custom_traits", []))
        state._SetRoots()
        return state

    # The cluster's providers and consumers -----------------------------------

    def AttachCluster(self, providers: list[Provider],
                      consumers: list[Consumer]) -> None:
        """Add the cluster's nodes and instances, nodes ahead of the API's
        providers (as the oldest ones)."""
        self.DetachCluster()
        stored = self.providers
        self.providers = {p.uuid: p for p in providers}
        self.providers.update(stored)
        self.consumers.update((c.uuid, c) for c in consumers)
        self.cluster_providers = {p.uuid for p in providers}
        self.cluster_consumers = {c.uuid for c in consumers}
        self._SetRoots()

    def DetachCluster(self) -> None:
        """Remove what AttachCluster added."""
        for uuid in self.cluster_providers:
            self.providers.pop(uuid, None)
        for uuid in self.cluster_consumers:
            self.consumers.pop(uuid, None)
        self.cluster_providers = set()
        self.cluster_consumers = set()

    def _CheckWritable(self, provider: Provider) -> None:
        if provider.uuid in self.cluster_providers:
            raise errors.PlacementError(
                403, "Resource provider %s is the Ganeti node %s: it follows"
                " the cluster configuration and cannot be changed through"
                " the Placement API." % (provider.uuid, provider.name))

    # Lookups -----------------------------------------------------------------

    def _FindRoot(self, provider: Provider) -> str:
        """The root of the provider's tree; a provider whose parent is
        unknown (a child of a node removed since) is a root itself."""
        while provider.parent in self.providers:
            provider = self.providers[provider.parent]
        return provider.uuid

    def _SetRoots(self) -> None:
        for provider in self.providers.values():
            provider.root = self._FindRoot(provider)

    def GetProvider(self, uuid: str) -> Provider:
        """The provider ``uuid`` (404 in Placement's words if missing)."""
        try:
            return self.providers[uuid]
        except KeyError:
            raise errors.PlacementError(
                404, "No resource provider with uuid %s found" %
                uuid) from None

    def GetWritableProvider(self, uuid: str) -> Provider:
        """The provider ``uuid``, refused (403) if it is a node."""
        provider = self.GetProvider(uuid)
        self._CheckWritable(provider)
        return provider

    def ResourceClasses(self) -> list[str]:
        return list(STANDARD_RESOURCE_CLASSES) + sorted(self.custom_classes)

    def IsResourceClass(self, name: str) -> bool:
        return name in STANDARD_RESOURCE_CLASSES or \
            name in self.custom_classes

    def Traits(self) -> list[str]:
        return sorted(set(STANDARD_TRAITS) | self.custom_traits)

    def IsTrait(self, name: str) -> bool:
        return name in STANDARD_TRAITS or name in self.custom_traits

    def Usages(self) -> dict[str, dict[str, int]]:
        """Provider -> resource class -> amount allocated."""
        result: dict[str, dict[str, int]] = {}
        for consumer in self.consumers.values():
            for rp_uuid, resources in consumer.allocations.items():
                used = result.setdefault(rp_uuid, {})
                for rclass, amount in resources.items():
                    used[rclass] = used.get(rclass, 0) + amount
        return result

    def Children(self, uuid: str) -> list[Provider]:
        return [p for p in self.providers.values() if p.parent == uuid]

    def IsSharing(self, provider: Provider) -> bool:
        return pl.TRAIT_SHARES_VIA_AGGREGATE in provider.traits

    # Providers ---------------------------------------------------------------

    def _CheckName(self, name: str, own_uuid: str | None) -> None:
        for other in self.providers.values():
            if other.name == name and other.uuid != own_uuid:
                _Conflict("Conflicting resource provider name: %s already"
                          " exists." % name, pl.ERR_DUPLICATE_NAME)

    def _CheckParent(self, parent: str | None, own_uuid: str) -> None:
        if parent is None:
            return
        if parent not in self.providers:
            raise errors.PlacementError(
                400, "parent provider UUID does not exist.")
        node: str | None = parent
        while node in self.providers:
            if node == own_uuid:
                raise errors.PlacementError(
                    400, "creating loop in the provider tree is not"
                    " allowed.")
            node = self.providers[node].parent

    def CreateProvider(self, name: str, uuid: str | None,
                       parent: str | None) -> Provider:
        uuid = uuid or NewUuid()
        if uuid in self.providers:
            _Conflict("Conflicting resource provider uuid: %s already"
                      " exists." % uuid, pl.ERR_DUPLICATE_NAME)
        self._CheckName(name, None)
        self._CheckParent(parent, uuid)
        provider = Provider(uuid=uuid, name=name, parent=parent)
        self.providers[uuid] = provider
        provider.root = self._FindRoot(provider)
        return provider

    def UpdateProvider(self, uuid: str, name: str, parent: str | None,
                       allow_reparent: bool) -> Provider:
        """Rename, and set or (with ``allow_reparent``, 1.37) change the
        parent of a provider."""
        provider = self.GetWritableProvider(uuid)
        self._CheckName(name, uuid)
        if parent != provider.parent:
            if provider.parent is not None and not allow_reparent:
                raise errors.PlacementError(
                    400, "re-parenting a provider is not currently"
                    " allowed.")
            self._CheckParent(parent, uuid)
        provider.name = name
        provider.parent = parent
        for other in self.providers.values():
            other.root = self._FindRoot(other)
        provider.generation += 1
        return provider

    def DeleteProvider(self, uuid: str) -> None:
        provider = self.GetWritableProvider(uuid)
        if any(uuid in c.allocations for c in self.consumers.values()):
            _Conflict("Unable to delete resource provider %s: Resource"
                      " provider has allocations." % uuid,
                      pl.ERR_PROVIDER_IN_USE)
        if self.Children(uuid):
            _Conflict("Unable to delete parent resource provider %s: It has"
                      " child resource providers." % uuid,
                      pl.ERR_PROVIDER_CANNOT_DELETE_PARENT)
        del self.providers[provider.uuid]

    @staticmethod
    def CheckGeneration(provider: Provider, generation: Any,
                        detail: str = "resource provider generation"
                        " conflict") -> None:
        if generation != provider.generation:
            _Conflict(detail)

    # Inventories -------------------------------------------------------------

    def _NormalizeInventory(self, provider: Provider, rclass: str,
                            data: dict, reserved_may_equal: bool) -> dict:
        if not self.IsResourceClass(rclass):
            raise errors.PlacementError(
                400, "Unknown resource class in inventory for resource"
                " provider %s: %s" % (provider.uuid, rclass))
        inventory = dict(INVENTORY_DEFAULTS)
        inventory.update((key, data[key]) for key in INVENTORY_FIELDS
                         if key in data)
        too_much = (inventory["reserved"] > inventory["total"] if
                    reserved_may_equal else
                    inventory["reserved"] >= inventory["total"])
        if too_much:
            raise errors.PlacementError(
                400, "Unable to update inventory for resource provider %s:"
                " Invalid inventory for '%s' on resource provider '%s'. The"
                " reserved value is greater than total." %
                (provider.uuid, rclass, provider.uuid))
        return inventory

    def _CheckInventoryInUse(self, provider: Provider,
                             inventories: dict[str, dict]) -> None:
        used = self.Usages().get(provider.uuid, {})
        for rclass, amount in sorted(used.items()):
            if amount and rclass not in inventories:
                _Conflict("Inventory for '%s' on resource provider '%s' in"
                          " use." % (rclass, provider.uuid),
                          pl.ERR_INVENTORY_INUSE)

    def SetInventories(self, uuid: str, generation: Any,
                       inventories: dict[str, dict],
                       reserved_may_equal: bool) -> Provider:
        """Replace all inventories of a provider."""
        provider = self.GetWritableProvider(uuid)
        self.CheckGeneration(provider, generation)
        new = {rclass: self._NormalizeInventory(provider, rclass, data,
                                                reserved_may_equal)
               for rclass, data in inventories.items()}
        self._CheckInventoryInUse(provider, new)
        provider.inventories = new
        provider.generation += 1
        return provider

    def SetInventory(self, uuid: str, rclass: str, generation: int | None,
                     data: dict, reserved_may_equal: bool,
                     must_exist: bool) -> Provider:
        """Add or replace the inventory of one resource class; the
        generation is checked unless None (Placement's POST, which adds
        one, has none to check)."""
        provider = self.GetWritableProvider(uuid)
        if generation is not None:
            self.CheckGeneration(provider, generation)
        if must_exist and rclass not in provider.inventories:
            raise errors.PlacementError(
                400, "No inventory record with resource class for resource"
                " provider %s" % uuid)
        if not must_exist and rclass in provider.inventories:
            _Conflict("Update conflict: Inventory for requested resource"
                      " class already exists", pl.ERR_UNDEFINED)
        provider.inventories[rclass] = self._NormalizeInventory(
            provider, rclass, data, reserved_may_equal)
        provider.generation += 1
        return provider

    def DeleteInventory(self, uuid: str, rclass: str | None) -> None:
        """Delete one inventory, or all of them (``rclass`` None)."""
        provider = self.GetWritableProvider(uuid)
        if rclass is not None and rclass not in provider.inventories:
            raise errors.PlacementError(
                404, "No inventory of class %s found for delete" % rclass)
        remaining = {} if rclass is None else {
            key: value for key, value in provider.inventories.items()
            if key != rclass}
        self._CheckInventoryInUse(provider, remaining)
        provider.inventories = remaining
        provider.generation += 1

    # Traits and aggregates ---------------------------------------------------

    def SetProviderTraits(self, uuid: str, generation: Any,
                          traits: Iterable[str]) -> Provider:
        provider = self.GetWritableProvider(uuid)
        traits = set(traits)
        unknown = sorted(t for t in traits if not self.IsTrait(t))
        if unknown:
            raise errors.PlacementError(400, "No such trait(s): %s" %
                                        ", ".join(unknown))
        self.CheckGeneration(provider, generation,
                             "Resource provider's generation already"
                             " changed. Please update the generation and"
                             " try again.")
        provider.traits = traits
        provider.generation += 1
        return provider

    def SetAggregates(self, uuid: str, generation: Any,
                      aggregates: Iterable[str],
                      check_generation: bool) -> Provider:
        """Replace a provider's aggregates (the generation is checked and
        bumped from 1.19)."""
        provider = self.GetWritableProvider(uuid)
        if check_generation:
            self.CheckGeneration(provider, generation,
                                 "Resource provider's generation already"
                                 " changed. Please update the generation"
                                 " and try again.")
            provider.generation += 1
        provider.aggregates = set(aggregates)
        return provider

    def AddCustomTrait(self, name: str) -> bool:
        """Add a custom trait; whether it is new."""
        new = name not in self.custom_traits
        self.custom_traits.add(name)
        return new

    def DeleteCustomTrait(self, name: str) -> None:
        if name in STANDARD_TRAITS:
            raise errors.PlacementError(
                400, "Cannot delete standard trait %s." % name)
        if name not in self.custom_traits:
            raise errors.PlacementError(404, "No such trait(s): %s" % name)
        if any(name in p.traits for p in self.providers.values()):
            _Conflict("The trait %s is in use by a resource provider." %
                      name, pl.ERR_UNDEFINED)
        self.custom_traits.discard(name)

    def AddCustomClass(self, name: str, conflict_if_exists: bool) -> bool:
        """Add a custom resource class; whether it is new."""
        if self.IsResourceClass(name) and conflict_if_exists:
            _Conflict("Conflicting resource class already exists: %s" %
                      name, pl.ERR_DUPLICATE_NAME)
        new = name not in self.custom_classes
        self.custom_classes.add(name)
        return new

    def DeleteCustomClass(self, name: str) -> None:
        if name in STANDARD_RESOURCE_CLASSES:
            raise errors.PlacementError(
                400, "Cannot delete standard resource class %s: Standard"
                " resource classes cannot be deleted." % name)
        if name not in self.custom_classes:
            raise errors.PlacementError(
                404, "No such resource class %s." % name)
        if any(name in p.inventories for p in self.providers.values()):
            _Conflict("Unable to delete resource class %s. It is in use"
                      " by one or more resource providers." % name,
                      pl.ERR_UNDEFINED)
        self.custom_classes.discard(name)

    # Allocations -------------------------------------------------------------

    def _CheckAllocations(self, wanted: dict[str, dict[str, dict[str, int]]]
                          ) -> None:
        """Check new allocations (consumer -> provider -> class -> amount)
        against the inventories, the consumers' old allocations excluded."""
        usages = self.Usages()
        for consumer_uuid in wanted:
            old = self.consumers.get(consumer_uuid)
            for rp_uuid, resources in (old.allocations.items() if old
                                       else ()):
                for rclass, amount in resources.items():
                    usages[rp_uuid][rclass] -= amount
        for resources_by_rp in wanted.values():
            for rp_uuid, resources in resources_by_rp.items():
                provider = self.providers.get(rp_uuid)
                if provider is None:
                    raise errors.PlacementError(
                        400, "Allocation for resource provider '%s' that"
                        " does not exist." % rp_uuid)
                for rclass, amount in resources.items():
                    inventory = provider.inventories.get(rclass)
                    if inventory is None:
                        _Conflict("Unable to allocate inventory: Inventory"
                                  " for '%s' on resource provider '%s'"
                                  " invalid." % (rclass, rp_uuid),
                                  pl.ERR_UNDEFINED)
                    if not FitsUnits(inventory, amount):
                        _Conflict("Unable to allocate inventory: Unable to"
                                  " create allocation for '%s' on resource"
                                  " provider '%s'. The requested amount"
                                  " would violate inventory constraints." %
                                  (rclass, rp_uuid), pl.ERR_UNDEFINED)
                    used = usages.setdefault(rp_uuid, {})
                    used[rclass] = used.get(rclass, 0) + amount
                    if used[rclass] > Capacity(inventory):
                        _Conflict("Unable to allocate inventory: Unable to"
                                  " create allocation for '%s' on resource"
                                  " provider '%s'. The requested amount"
                                  " would exceed the capacity." %
                                  (rclass, rp_uuid), pl.ERR_UNDEFINED)

    @staticmethod
    def _CheckConsumerGeneration(old: Consumer | None, given: Any) -> None:
        if old is None and given is not None:
            _Conflict("consumer generation conflict - expected null but"
                      " got %s" % given)
        if old is not None and given != old.generation:
            _Conflict("consumer generation conflict - expected %s but got"
                      " %s" % (old.generation,
                               "null" if given is None else given))

    def SetAllocations(self, requests: dict[str, dict],
                       check_consumer_generation: bool) -> None:
        """Replace the allocations of one or more consumers at once.

        ``requests`` maps each consumer to ``{"allocations": {rp: {rc:
        n}}, "project_id", "user_id", "consumer_generation",
        "consumer_type"}``; empty allocations remove the consumer.
        """
        for consumer_uuid in requests:
            if consumer_uuid in self.cluster_consumers:
                raise errors.PlacementError(
                    403, "Consumer %s is a Ganeti instance: its allocations"
                    " follow the cluster configuration and cannot be changed"
                    " through the Placement API." % consumer_uuid)
        if check_consumer_generation:
            for consumer_uuid, request in requests.items():
                self._CheckConsumerGeneration(
                    self.consumers.get(consumer_uuid),
                    request.get("consumer_generation"))
        self._CheckAllocations({c: r["allocations"]
                                for c, r in requests.items()})
        touched: set[str] = set()
        for consumer_uuid, request in requests.items():
            old = self.consumers.pop(consumer_uuid, None)
            if old is not None:
                touched.update(old.allocations)
            allocations = {rp: dict(res) for rp, res
                           in request["allocations"].items() if res}
            touched.update(allocations)
            if not allocations:
                continue
            self.consumers[consumer_uuid] = Consumer(
                uuid=consumer_uuid,
                project_id=request.get("project_id") or
                (old.project_id if old else ""),
                user_id=request.get("user_id") or
                (old.user_id if old else ""),
                generation=old.generation + 1 if old else 1,
                consumer_type=request.get("consumer_type") or
                (old.consumer_type if old else "INSTANCE"),
                allocations=allocations)
        for rp_uuid in touched:
            if rp_uuid in self.providers:
                self.providers[rp_uuid].generation += 1

    # Reshaping ---------------------------------------------------------------

    def Reshape(self, inventories: dict[str, tuple[Any, dict[str, dict]]],
                requests: dict[str, dict],
                reserved_may_equal: bool) -> None:
        """Replace the inventories of providers (``uuid -> (generation,
        inventories)``) and the allocations of consumers together, as
        Placement's reshaper: allocations are checked against the old and
        new inventories merged (so they can move to a provider whose new
        inventory they make room for), then the new inventories must cover
        what is allocated. The caller discards the state on an error."""
        providers: list[tuple[Provider, dict[str, dict]]] = []
        for uuid, (generation, data) in inventories.items():
            provider = self.providers.get(uuid)
            if provider is None:
                raise errors.PlacementError(
                    400, "Resource provider %s in inventories not found: No"
                    " resource provider with uuid %s found" % (uuid, uuid),
                    pl.ERR_PROVIDER_NOT_FOUND)
            self._CheckWritable(provider)
            if generation != provider.generation:
                _Conflict("resource provider generation conflict for"
                          " provider %s: actual: %s, given: %s" %
                          (uuid, provider.generation, generation))
            providers.append((provider, {
                rclass: self._NormalizeInventory(provider, rclass, inventory,
                                                 reserved_may_equal)
                for rclass, inventory in data.items()}))
        for provider, new in providers:
            provider.inventories = dict(provider.inventories, **new)
        self.SetAllocations(requests, True)
        for provider, new in providers:
            try:
                self._CheckInventoryInUse(provider, new)
            except errors.PlacementError as err:
                _Conflict("update conflict: %s" % err.detail, err.code)
            provider.inventories = new
            provider.generation += 1

    def DeleteAllocations(self, consumer_uuid: str) -> None:
        if consumer_uuid not in self.consumers:
            raise errors.PlacementError(
                404, "No allocations for consumer '%s'" % consumer_uuid)
        self.SetAllocations({consumer_uuid: {"allocations": {}}}, False)
