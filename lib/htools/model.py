"""The cluster model of the htools, built from an iallocator message.

Mirrors hail's loader (``Backend/IAlloc.hs``) and node arithmetic
(``Node.hs``): a node that is offline, drained or not vm_capable is
"offline" for placement and scoring; memory counts only instances that
run (``usesMemory``) while the "forthcoming" memory counts all of them;
a DRBD secondary reserves, per primary node, the memory of the instances
it would take over (``peers``, N+1).

Nodes are mutated in place by ``AddPri``/``AddSec`` (after hail's checks)
and restored by ``RemovePri``/``RemoveSec``, so that candidates are
evaluated without copying the cluster.
"""

import math
from collections import Counter
from collections.abc import Iterable, Iterator, MutableMapping
from typing import NamedTuple

from ganeti import constants, errors
from ganeti.htools import (FAIL_CPU, FAIL_DISK, FAIL_MEM, FAIL_MIG, FAIL_N1,
                           FAIL_SPINDLES, FAIL_TAGS)
from ganeti.parameters import families

# Cluster tag prefixes giving instance exclusion tags, node locations,
# instance desired locations, node migration classes and the classes
# (``src::dst``) a node of another class may receive
# (``Tags/Constants.hs``)
EX_TAGS_PREFIX = "htools:iextags:"
LOCATION_PREFIX = "htools:nlocation:"
DESIRED_LOCATION_PREFIX = "htools:desiredlocation:"
MIGRATION_PREFIX = "htools:migration:"
ALLOW_MIGRATION_PREFIX = "htools:allowmigration:"

# Templates whose disks live on the node's own storage (disk and spindles
# are checked): as hail's ``localStorageTemplates``, not ``file``, whose
# space on a possibly shared file system the model does not track
DTS_LOCAL_STORAGE = frozenset([constants.DT_PLAIN, constants.DT_DRBD8])
# Templates mirrored outside Ganeti: any node can become the primary
DTS_EXT_MIRROR = constants.DTS_EXT_MIRROR | {families.DT_RBD,
                                             families.DT_GLUSTER}

# Dynamic utilisation (cpu, memory, disk, network): the htools' default
# (``baseUtil``) for an instance the load data does not name, also without
# any load data: the load components then count instances per node
BASE_UTIL = (1.0, 1.0, 1.0, 1.0)
ZERO_UTIL = (0.0, 0.0, 0.0, 0.0)
# The loads (cpu, memory, network) every instance's utilisation adds the
# same to without load data (``BASE_UTIL``, also for new instances): equal
# on every node then, they are scored as one (``metrics``)
TWIN_LOADS = (0, 1, 3)
# Utilisation values are rounded to multiples of this power of two, so
# that the nodes' sums are exact: placing and taking away an instance
# (as scoring a candidate does) restores a node's load bit for bit
UTIL_QUANTUM = 2.0 ** -20
# Message key of hbal's and hspace's --min-disk (not in Ganeti's allocator
# input; the programs add it): the free disk fraction strict placements
# leave on every node (``Node.setMdsk``)
MIN_DISK_KEY = "htools_min_disk"

_POLICY_RANK = {constants.ALLOC_POLICY_PREFERRED: 0,
                constants.ALLOC_POLICY_LAST_RESORT: 1,
                constants.ALLOC_POLICY_UNALLOCABLE: 2}


class Failure(NamedTuple):
    """A rejected candidate: hail's fail mode and needed vs available."""
    mode: str
    text: str


class Group:
    """A node group with its allocation policy and filled instance policy.
    """
    __slots__ = ("uuid", "name", "alloc_policy", "rank", "networks",
                 "ipolicy", "tags")

    def __init__(self, uuid: str, data: dict, cluster_ipolicy: dict) -> None:
        self.uuid = uuid
        self.name: str = data.get("name", uuid)
        self.alloc_policy: str = data.get("alloc_policy",
                                          constants.ALLOC_POLICY_PREFERRED)
        self.rank = _POLICY_RANK.get(self.alloc_policy, 2)
        self.networks = frozenset(data.get("networks") or ())
        self.ipolicy = families.FillIPolicy(cluster_ipolicy,
                                            data.get("ipolicy") or {})
        self.tags = list(data.get("tags") or ())


def _ExTags(tags: list[str], ex_prefixes: tuple) -> tuple[str, ...]:
    """An instance's exclusion tags, sorted."""
    if not ex_prefixes:
        return ()
    return tuple(sorted(tag for tag in tags if tag.startswith(ex_prefixes)))


def _DesiredLocations(tags: list[str], prefixes: tuple) -> frozenset[str]:
    """An instance's desired locations: its tags starting with a prefix
    named by the cluster's ``htools:desiredlocation:`` tags
    (``updateDesiredLocationTags``)."""
    if not prefixes:
        return frozenset()
    return frozenset(tag for tag in tags if tag.startswith(prefixes))


def _AllowedMigrations(tags: list[str]) -> tuple[tuple[str, str], ...]:
    """The (source, destination) migration classes of the cluster's
    ``htools:allowmigration:src::dst`` tags (``Tags.migrations``): split
    at the first ``::``; a destination holding another is ignored."""
    pairs = []
    for tag in tags:
        if tag.startswith(ALLOW_MIGRATION_PREFIX):
            src, sep, dst = tag[len(ALLOW_MIGRATION_PREFIX):].partition("::")
            if sep and "::" not in dst:
                pairs.append((src, dst))
    return tuple(pairs)


def _MigrationClasses(tags: list[str], prefixes: tuple,
                      allowed: tuple[tuple[str, str], ...]
                      ) -> tuple[frozenset[str], frozenset[str]]:
    """A node's migration classes, its tags ``<p>:*`` for the cluster's
    ``htools:migration:<p>`` tags (``getMigRestrictions``), and those it
    may receive: its own and the sources allowed into each of them
    (``getRecvMigRestrictions``)."""
    own = frozenset(tag for tag in tags if tag.startswith(prefixes))
    return own, own | {src for src, dst in allowed if dst in own}


def _Prefixes(tags: list[str], family: str) -> tuple[str, ...]:
    """The tag prefixes ``<p>:`` the cluster's tags ``<family><p>`` name
    (non-empty ``p``): ``htools:iextags:svc`` makes ``svc:db`` an
    exclusion tag, not ``svcx:db``."""
    return tuple(tag[len(family):] + ":" for tag in tags
                 if tag.startswith(family) and len(tag) > len(family))


class Instance:
    """An instance (existing or requested), with what placement needs.

    ``Cluster._Account`` reads the same message fields with the same
    defaults for the node accounting, without building the object."""
    __slots__ = ("name", "mem", "dsk", "vcpus", "spindle_use", "disks",
                 "disk_data", "template", "tags", "xtags", "dlocs", "pnode",
                 "snode", "runs", "offline", "nics", "util", "needs")

    def __init__(self, name: str, data: dict, ex_prefixes: tuple,
                 util: tuple[float, ...] = ZERO_UTIL,
                 dl_prefixes: tuple = ()) -> None:
        # Read straight from the message: clusters with 10,000 instances
        # are parsed for every request
        get = data.get
        self.name = name
        self.mem: int = get("memory", 0)
        disks = get("disks") or ()
        self.disks: list[int] = [disk["size"] for disk in disks]
        self.disk_data = disks
        total = get("disk_space_total")
        self.dsk: int = total if total is not None else sum(self.disks)
        self.vcpus: int = get("vcpus", 1)
        self.spindle_use: int = get("spindle_use", 1)
        self.template: str = get("disk_template", constants.DT_PLAIN)
        self.tags: list[str] = get("tags") or []
        self.xtags = _ExTags(self.tags, ex_prefixes)
        self.dlocs = _DesiredLocations(self.tags, dl_prefixes)
        nodes = get("nodes") or []
        self.pnode: str | None = nodes[0] if nodes else None
        self.snode: str | None = nodes[1] if len(nodes) > 1 else None
        state = get("admin_state", "up")
        self.runs = state == "up"
        self.offline = state == "offline"
        self.nics: list[dict] = get("nics") or []
        self.util = util
        # what its primary's ``nd_*`` count (None: DRBD fails it over)
        self.needs: tuple[float, float, float] | None = None
        if self.template not in constants.DTS_INT_MIRROR:
            self.needs = (self.mem, self.dsk, sum(
                sp or 0 for sp in self.disk_spindles)) \
                if self.local_storage else (self.mem, 0.0, 0.0)

    @property
    def disk_spindles(self) -> list[int | None]:
        """Per-disk spindles (needed with exclusive storage only)."""
        return [disk.get("spindles") for disk in self.disk_data]

    @property
    def networks(self) -> frozenset[str]:
        """The networks the instance's NICs are connected to."""
        return frozenset(nic["network"] for nic in self.nics
                         if nic.get("network"))

    @property
    def internal_mirror(self) -> bool:
        return self.template in constants.DTS_INT_MIRROR

    @property
    def external_mirror(self) -> bool:
        return self.template in DTS_EXT_MIRROR

    @property
    def local_storage(self) -> bool:
        return self.template in DTS_LOCAL_STORAGE

    @property
    def sec_mem(self) -> int:
        """Memory a DRBD secondary reserves for it (``usesSecMem``)."""
        return 0 if self.offline else self.mem


class Node:
    """A node's resources in hail's terms (``Node.hs``)."""
    __slots__ = ("name", "group", "offline", "tags", "locations", "t_mem",
                 "n_mem", "f_mem", "f_mem_forth", "t_dsk", "f_dsk", "t_cpu",
                 "n_cpu", "u_cpu", "cpu_speed", "excl", "t_sp", "f_sp",
                 "inst_sp", "hi_sp", "vcpu_ratio", "peers", "r_mem",
                 "plist", "slist", "xtags", "loc_score", "lx", "aggregates",
                 "load", "twin_load", "twin_forth", "nd_mem", "nd_dsk",
                 "nd_sp", "mig", "rmig", "x_mem", "spindles", "lo_dsk")

    def __init__(self, name: str, data: dict, group: Group,
                 loc_prefixes: tuple) -> None:
        self.name = name
        self.group = group
        # hail: drained nodes are offline for placement but live (their
        # resources count when instances fail over to them)
        live = not data.get("offline") and data.get("vm_capable", True)
        self.offline = bool(not live or data.get("drained"))
        self.tags = list(data.get("tags") or ())
        # Placement aggregate UUIDs, the group's included (NodeAggregates)
        self.aggregates = frozenset(data.get("aggregates") or ())
        self.locations = frozenset(tag for tag in self.tags
                                   if tag.startswith(loc_prefixes)) \
            if loc_prefixes else frozenset()
        # Migration classes, and those it may receive (set by Cluster)
        self.mig: frozenset[str] = frozenset()
        self.rmig: frozenset[str] = frozenset()
        ndparams = data.get("ndparams") or {}
        self.excl = bool(ndparams.get(families.ND_EXCLUSIVE_STORAGE, False))
        self.cpu_speed = float(ndparams.get(families.ND_CPU_SPEED, 1.0)) or 1.0
        spindle_count = int(ndparams.get(families.ND_SPINDLE_COUNT, 1))
        self.spindles = spindle_count
        self.t_mem = float(data.get("total_memory", 0)) if live else 0.0
        self.n_mem = float(data.get("reserved_memory", 0)) if live else 0.0
        self.f_mem = float(data.get("free_memory", 0)) if live else 0.0
        self.f_mem_forth = self.f_mem
        # Memory neither the node, the running primaries nor free account
        # for (``xMem``): the running primaries are taken off at load
        self.x_mem = self.t_mem - self.n_mem - self.f_mem
        self.t_dsk = float(data.get("total_disk", 0)) if live else 0.0
        self.f_dsk = float(data.get("free_disk", 0)) if live else 0.0
        self.t_cpu = float(data.get("total_cpus", 0)) if live else 0.0
        self.n_cpu = float(data.get("reserved_cpus", 0)) if live else 0.0
        # Free disk a strict placement must leave (``loDsk``, --min-disk)
        self.lo_dsk = 0.0
        self.t_sp = float(data.get("total_spindles") or 0) if live else 0.0
        self.f_sp = float(data.get("free_spindles") or 0) if live else 0.0
        # the CPUs in use: the node's own (``reserved_cpus``) and the
        # running primaries' vCPUs, against vcpu-ratio * all CPUs
        # (``Node.uCpu``, ``pCpu``)
        self.u_cpu = self.n_cpu
        self.inst_sp = 0.0
        policy = group.ipolicy
        self.hi_sp = float(policy[families.IPOLICY_SPINDLE_RATIO]) * \
            spindle_count
        self.vcpu_ratio = float(policy[families.IPOLICY_VCPU_RATIO])
        self.peers: dict[str, float] = {}
        self.r_mem = 0.0
        self.plist: set[str] = set()
        self.slist: set[str] = set()
        self.xtags: Counter = Counter()
        # Location score of the primaries (``locationScore``): locations
        # shared with their secondary plus unmet desired locations
        self.loc_score = 0
        # (location, exclusion tag) of the primaries, with their counts
        # (``instanceMap``); empty without locations
        self.lx: dict[tuple[str, str], int] = {}
        # What the primaries without an internal mirror need elsewhere
        # when the node fails (memory, local disk, spindles): the global
        # N+1 check's quick test
        self.nd_mem = 0.0
        self.nd_dsk = 0.0
        self.nd_sp = 0.0
        # Dynamic load (cpu, memory, disk, network): the sums of the
        # instances' utilisation, disk also of secondaries (hbal's
        # ``utilLoad``); None when the cluster has no load data
        self.load: list[float] | None = None
        # whether the cpu, memory and network loads are equal by
        # construction (``TWIN_LOADS``), and the free memory with and
        # without the stopped instances' (none on any node of the cluster:
        # both change alike), see ``metrics.TWIN_LOADS``
        self.twin_load = False
        self.twin_forth = False

    # Derived values --------------------------------------------------------

    @property
    def p_cpus(self) -> float:
        """Physical CPUs, the base of the vCPU ratio (``tCpu``)."""
        return max(self.t_cpu, 1.0)

    @property
    def fail_n1(self) -> bool:
        return self.f_mem <= self.r_mem

    def N1Failure(self) -> Failure | None:
        """hail's global N+1 for DRBD (``GlobalN1.canEvacuateNode``, the
        failover part): when any primary node of this node's secondaries
        fails, its instances fail over here with the hard checks only.
        The worst primary needs ``r_mem``; disk is given back and taken
        again, so it must merely be left."""
        if not self.slist:
            return None
        if self.f_mem <= self.r_mem:
            pname = max(self.peers, default="?",
                        key=lambda name: (self.peers[name], name))
            return Failure(FAIL_N1, "cannot take over the instances of %s"
                           " (N+1): memory %d MiB needed, %d MiB free" %
                           (pname, self.r_mem, self.f_mem))
        if self.f_dsk <= 0:
            return Failure(FAIL_N1, "cannot take over primary instances"
                           " (N+1): no free disk")
        return None

    def MigrationFailure(self, source: "Node") -> Failure | None:
        """Whether an instance may migrate or fail over from ``source``
        to this node (``Node.checkMigration``): every migration class of
        the source must be one this node receives."""
        missing = source.mig - self.rmig
        if not missing:
            return None
        return Failure(FAIL_MIG, "cannot receive instances from %s:"
                       " migration class %s not accepted" %
                       (source.name, ", ".join(sorted(missing))))

    def TagConflicts(self) -> int:
        """Primaries sharing an exclusion tag (``pri_tags_score``)."""
        return sum(self.xtags.values()) - len(self.xtags)

    # Changes with hail's checks --------------------------------------------

    def AddPri(self, inst: Instance, strict: bool = True) -> Failure | None:
        """Make this node the instance's primary (``Node.addPriEx``).

        Memory and disk exhaustion are hard failures; the soft checks
        (spindle use, newly failing N+1, vcpu ratio, exclusion tags) are
        skipped when ``strict`` is false (moves off an offline node).
        """
        mem = inst.mem
        new_mem = self.f_mem - mem
        if new_mem <= 0:
            return Failure(FAIL_MEM, "memory %d MiB needed, %d MiB free" %
                           (mem, self.f_mem))
        uses_disk = inst.local_storage
        if uses_disk:
            if self.excl:
                need = sum(sp or 0 for sp in inst.disk_spindles)
                if self.f_sp - need < 0:
                    return Failure(FAIL_SPINDLES,
                                   "spindles %d needed, %d free" %
                                   (need, self.f_sp))
            if self.f_dsk - inst.dsk <= 0:
                return Failure(FAIL_DISK, "disk %d MiB needed, %d MiB free" %
                               (inst.dsk, self.f_dsk))
            if strict and self.f_dsk - inst.dsk < self.lo_dsk:
                return self._LowDisk(inst)
            if strict and not self.excl and \
                    self.inst_sp + inst.spindle_use > self.hi_sp:
                return Failure(FAIL_DISK,
                               "spindles %d needed, %d of %g allowed free" %
                               (inst.spindle_use, self.hi_sp - self.inst_sp,
                                self.hi_sp))
        if strict:
            if new_mem <= self.r_mem and not self.fail_n1:
                return Failure(FAIL_MEM, "memory %d MiB needed, %d MiB free"
                               " of which %d MiB are reserved for N+1" %
                               (mem, self.f_mem, self.r_mem))
            new_cpu = self.u_cpu + inst.vcpus
            limit = self.vcpu_ratio * self.p_cpus
            if new_cpu > limit:
                return Failure(FAIL_CPU, "vcpus %d needed, %d of %g allowed"
                               " (vcpu-ratio %g) free" %
                               (inst.vcpus, limit - self.u_cpu, limit,
                                self.vcpu_ratio))
            for tag in inst.xtags:
                if tag in self.xtags:
                    return Failure(FAIL_TAGS, "exclusion tag %s already on"
                                   " primary instance" % tag)
            if self.f_mem_forth - mem <= 0:
                # stopped instances will want their memory back
                # (``checkForthcomingViolation``)
                return Failure(FAIL_MEM, "memory %d MiB needed, %d MiB free"
                               " once the stopped instances run" %
                               (mem, self.f_mem_forth))
        self.PlacePri(inst)
        return None

    def _LowDisk(self, inst: Instance) -> Failure:
        return Failure(FAIL_DISK, "disk %d MiB needed, %d MiB free of which"
                       " %d MiB must stay free" %
                       (inst.dsk, self.f_dsk, self.lo_dsk))

    def PlacePri(self, inst: Instance) -> None:
        """Account a new primary without checks (undoing a removal)."""
        self.f_mem -= inst.mem
        self.f_mem_forth -= inst.mem
        if inst.local_storage:
            self.f_dsk -= inst.dsk
            if self.excl:
                self.f_sp -= sum(sp or 0 for sp in inst.disk_spindles)
            else:
                self.inst_sp += inst.spindle_use
        self.u_cpu += inst.vcpus
        if inst.xtags:
            # Counter.update is slow even on nothing (planning calls this
            # for every candidate part)
            self.xtags.update(inst.xtags)
        needs = inst.needs
        if needs is not None:
            self.nd_mem += needs[0]
            self.nd_dsk += needs[1]
            self.nd_sp += needs[2]
        if self.locations:
            self._Located(inst, 1)
        elif inst.dlocs:
            self.loc_score += len(inst.dlocs)
        self.plist.add(inst.name)
        if self.load is not None:
            _AddLoad(self.load, inst.util, 1.0)

    def RemovePri(self, inst: Instance) -> None:
        """Undo ``AddPri`` (also: the instance moves away)."""
        self.f_mem += inst.mem
        self.f_mem_forth += inst.mem
        if inst.local_storage:
            self.f_dsk += inst.dsk
            if self.excl:
                self.f_sp += sum(sp or 0 for sp in inst.disk_spindles)
            else:
                self.inst_sp -= inst.spindle_use
        self.u_cpu -= inst.vcpus
        needs = inst.needs
        if needs is not None:
            self.nd_mem -= needs[0]
            self.nd_dsk -= needs[1]
            self.nd_sp -= needs[2]
        if inst.xtags:
            self.xtags.subtract(inst.xtags)
            for tag in inst.xtags:
                if self.xtags[tag] <= 0:
                    del self.xtags[tag]
        if self.locations:
            self._Located(inst, -1)
        elif inst.dlocs:
            self.loc_score -= len(inst.dlocs)
        self.plist.discard(inst.name)
        if self.load is not None:
            _AddLoad(self.load, inst.util, -1.0)

    def _Located(self, inst: Instance, sign: int) -> None:
        """Add (sign 1) or take away (-1) a primary's unmet desired
        locations and (location, exclusion tag) pairs."""
        LocatePrimary(self.locations, self.lx, inst.xtags, sign)
        if inst.dlocs:
            self.loc_score += sign * len(inst.dlocs - self.locations)

    def AddSec(self, inst: Instance, pnode: str,
               strict: bool = True) -> Failure | None:
        """Make this node the instance's secondary (``Node.addSecEx``).

        An offline node (the old primary of a failover off it) takes the
        role without checks: it holds no runtime data.
        """
        if self.offline:
            self.PlaceSec(inst, pnode, self.peers.get(pnode, 0.0) +
                         inst.sec_mem)
            return None
        if not inst.internal_mirror:
            return Failure(FAIL_DISK, "template %s has no secondary" %
                           inst.template)
        if self.excl:
            need = sum(sp or 0 for sp in inst.disk_spindles)
            if self.f_sp - need < 0:
                return Failure(FAIL_SPINDLES, "spindles %d needed, %d free" %
                               (need, self.f_sp))
        if self.f_dsk - inst.dsk <= 0:
            return Failure(FAIL_DISK, "disk %d MiB needed, %d MiB free" %
                           (inst.dsk, self.f_dsk))
        peer = self.peers.get(pnode, 0.0) + inst.sec_mem
        if strict:
            if self.f_dsk - inst.dsk < self.lo_dsk:
                return self._LowDisk(inst)
            if not self.excl and \
                    self.inst_sp + inst.spindle_use > self.hi_sp:
                return Failure(FAIL_DISK,
                               "spindles %d needed (secondary), %d of %g"
                               " allowed free" %
                               (inst.spindle_use, self.hi_sp - self.inst_sp,
                                self.hi_sp))
            new_rmem = max(self.r_mem, peer)
            if inst.sec_mem >= self.f_mem:
                return Failure(FAIL_MEM, "memory %d MiB needed (secondary),"
                               " %d MiB free" % (inst.mem, self.f_mem))
            if self.f_mem <= new_rmem and not self.fail_n1:
                return Failure(FAIL_MEM, "memory %d MiB needed to fail over"
                               " from %s, %d MiB free" %
                               (new_rmem, pnode, self.f_mem))
        self.PlaceSec(inst, pnode, peer)
        return None

    def PlaceSec(self, inst: Instance, pnode: str, peer: float) -> None:
        """Account a new secondary without checks; ``peer`` is the new
        memory reserved for ``pnode``."""
        self.peers[pnode] = peer
        self.r_mem = max(self.r_mem, peer)
        self.f_dsk -= inst.dsk
        if self.excl:
            self.f_sp -= sum(sp or 0 for sp in inst.disk_spindles)
        else:
            # a secondary's disks use spindles too (``calcSpindleUse``)
            self.inst_sp += inst.spindle_use
        self.slist.add(inst.name)
        if self.load is not None:
            self.load[2] += inst.util[2]

    def RemoveSec(self, inst: Instance, pnode: str) -> None:
        """Undo ``AddSec``."""
        old = self.peers.get(pnode, 0.0)
        peer = old - inst.sec_mem
        if peer > 0:
            self.peers[pnode] = peer
        else:
            self.peers.pop(pnode, None)
        # r_mem is the largest peer: it only changes when that one shrinks
        if old >= self.r_mem:
            self.r_mem = max(self.peers.values(), default=0.0)
        self.f_dsk += inst.dsk
        if self.excl:
            self.f_sp += sum(sp or 0 for sp in inst.disk_spindles)
        else:
            self.inst_sp -= inst.spindle_use
        self.slist.discard(inst.name)
        if self.load is not None:
            self.load[2] -= inst.util[2]


def LocatePrimary(locations: frozenset[str], lx: dict[tuple[str, str], int],
                  xtags: tuple[str, ...], sign: int) -> None:
    """Count (sign 1) or uncount (-1) a primary's (location, exclusion
    tag) pairs on a node (``getLocationExclusionPairs``)."""
    for loc in locations:
        for tag in xtags:
            key = (loc, tag)
            count = lx.get(key, 0) + sign
            if count > 0:
                lx[key] = count
            else:
                del lx[key]


def _AccountDisks(node: Node, data: dict) -> None:
    """Count an existing primary's disks in the node's ``nd_dsk`` and
    ``nd_sp`` from its message entry; a malformed entry counts none (its
    error shows when the instance is built)."""
    try:
        disks = data.get("disks") or ()
        total = data.get("disk_space_total")
        node.nd_dsk += total if total is not None else \
            sum(disk["size"] for disk in disks)
        node.nd_sp += sum(disk.get("spindles") or 0 for disk in disks)
    except (KeyError, TypeError, AttributeError):
        pass


def _TwinLoad(util: tuple[float, ...]) -> bool:
    """Whether the utilisation adds the same to the ``TWIN_LOADS``."""
    first = util[TWIN_LOADS[0]]
    return all(util[k] == first for k in TWIN_LOADS)


def _AddLoad(load: list[float], util: tuple[float, ...],
             sign: float) -> None:
    """Add (sign 1) or take away (-1) a primary's utilisation."""
    for k, value in enumerate(util):
        load[k] += sign * value


class InstanceMap(MutableMapping):
    """The cluster's instances by name, each built from its message entry
    on first access (most requests look at a few of them only)."""

    def __init__(self, raw: dict, ex_prefixes: tuple,
                 util: dict[str, tuple[float, ...]],
                 dl_prefixes: tuple = ()) -> None:
        self._items: dict[str, Instance | dict] = dict(raw)
        # when each was added: the message's order, then placements
        self._added = {name: idx for idx, name in enumerate(self._items)}
        self._next = len(self._added)
        self._ex_prefixes = ex_prefixes
        self._dl_prefixes = dl_prefixes
        self._util = util

    def __getitem__(self, name: str) -> Instance:
        item = self._items[name]
        if isinstance(item, Instance):
            return item
        try:
            inst = Instance(name, item, self._ex_prefixes,
                            self._util.get(name, BASE_UTIL),
                            self._dl_prefixes)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise errors.ParameterError("Invalid allocator input: instance"
                                        " %s: %s: %s" %
                                        (name, err.__class__.__name__, err))
        self._items[name] = inst
        return inst

    def __setitem__(self, name: str, inst: Instance) -> None:
        if name not in self._added:
            self._added[name] = self._next
            self._next += 1
        self._items[name] = inst

    def __delitem__(self, name: str) -> None:
        del self._items[name]
        del self._added[name]

    def NewestFirst(self, names: Iterable[str]) -> list[str]:
        """``names`` in the order of htools' node instance lists
        (``Node.pList``, which its loader and ``addPri`` prepend to): the
        last added first, the message's instances added in its order.
        The global N+1 check moves a failing node's instances in it."""
        added = self._added
        return sorted(names, key=lambda name: -added[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items


class Cluster:
    """Groups, nodes and instances of an iallocator input message, with
    the instances' dynamic utilisation when given (instances it does not
    name get hbal's default, ``BASE_UTIL``)."""

    def __init__(self, message: dict,
                 util: dict[str, tuple[float, ...]] | None = None) -> None:
        if not isinstance(message, dict):
            raise errors.ParameterError("The allocator input must be a"
                                        " JSON object")
        raw = message.get("instances") or {}
        if util is not None:
            unknown = sorted(set(util) - set(raw))
            if unknown:
                raise errors.ParameterError("Unknown instance(s): %s" %
                                            ", ".join(unknown))
        # hail, hbal and hspace give every instance ``BASE_UTIL`` unless
        # the load data says otherwise
        self.util = {
            name: tuple(round(value / UTIL_QUANTUM) * UTIL_QUANTUM
                        for value in values)
            for name, values in (util or {}).items()}
        try:
            self._Load(message)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise errors.ParameterError("Invalid allocator input: %s: %s" %
                                        (err.__class__.__name__, err))

    def _Load(self, message: dict) -> None:
        self.name: str = message.get("cluster_name", "")
        self.tags = list(message.get("cluster_tags") or ())
        # Aggregate UUID -> name, to name member_of values in refusals
        self.aggregate_names: dict[str, str] = dict(
            message.get("aggregates") or {})
        self.ex_prefixes = _Prefixes(self.tags, EX_TAGS_PREFIX)
        self.loc_prefixes = _Prefixes(self.tags, LOCATION_PREFIX)
        self.dl_prefixes = _Prefixes(self.tags, DESIRED_LOCATION_PREFIX)
        mig_prefixes = _Prefixes(self.tags, MIGRATION_PREFIX)
        allowed = _AllowedMigrations(self.tags)
        # Whether moves are subject to migration classes (FailMig)
        self.migration_classes = bool(mig_prefixes)
        cluster_ipolicy = families.FillIPolicy(
            families.IPOLICY_DEFAULTS, message.get("ipolicy") or {})
        self.groups: dict[str, Group] = {
            uuid: Group(uuid, data, cluster_ipolicy)
            for uuid, data in sorted((message.get("nodegroups") or
                                      {}).items())}
        self.nodes: dict[str, Node] = {}
        twins = all(_TwinLoad(values) for values in self.util.values())
        min_disk = float(message.get(MIN_DISK_KEY) or 0.0)
        for name, data in sorted((message.get("nodes") or {}).items()):
            uuid = data.get("group")
            group = self.groups.get(uuid)
            if group is None:
                group = self.groups[uuid] = Group(uuid, {}, cluster_ipolicy)
            node = self.nodes[name] = Node(name, data, group,
                                           self.loc_prefixes)
            node.lo_dsk = float(math.floor(min_disk * node.t_dsk))
            if mig_prefixes:
                node.mig, node.rmig = _MigrationClasses(
                    node.tags, mig_prefixes, allowed)
            node.load = [0.0] * len(BASE_UTIL)
            node.twin_load = twins
        raw = message.get("instances") or {}
        self._Account(raw)
        for node in self.nodes.values():
            if node.x_mem < 0:
                # the node reports more free memory than its instances
                # leave: what they are sized to take counts
                # (``unallocatedMem``; not for the reported free memory
                # the forthcoming figures start from)
                node.f_mem += node.x_mem
        forth = all(node.f_mem_forth == node.f_mem
                    for node in self.nodes.values())
        for node in self.nodes.values():
            node.twin_forth = forth
        self.instances = InstanceMap(raw, self.ex_prefixes, self.util,
                                     self.dl_prefixes)

    def _Account(self, raw: dict) -> None:
        """Account the existing instances on their nodes (the free values
        are live already): hail's ``setPri``/``setSec`` at load.

        Read straight from the message in one loop, as clusters with
        10,000 instances are parsed for every request; the ``Instance``
        objects are built only when asked for (``InstanceMap``). The
        order does not matter: no sorting needed.
        """
        nodes = self.nodes
        ex_prefixes = self.ex_prefixes
        dl_prefixes = self.dl_prefixes
        int_mirror = constants.DTS_INT_MIRROR
        # disk spindles count only with exclusive storage somewhere
        spindles = any(node.excl for node in nodes.values())
        util = self.util or {}
        for name, data in raw.items():
            get = data.get
            inodes = get("nodes")
            if not inodes:
                continue
            pname = inodes[0]
            pnode = nodes.get(pname)
            state = get("admin_state", "up")
            if pnode is not None:
                pnode.plist.add(name)
                pnode.u_cpu += get("vcpus", 1)
                template = get("disk_template", constants.DT_PLAIN)
                # spindle use counts on local storage (``calcSpindleUse``)
                if template in DTS_LOCAL_STORAGE and not pnode.excl:
                    pnode.inst_sp += get("spindle_use", 1)
                if template not in int_mirror:
                    pnode.nd_mem += get("memory", 0)
                    if template in DTS_LOCAL_STORAGE:
                        total = get("disk_space_total")
                        if total is None or spindles:
                            _AccountDisks(pnode, data)
                        else:
                            pnode.nd_dsk += total
                if state != "up":
                    pnode.f_mem_forth -= get("memory", 0)
                elif pnode.t_mem:
                    pnode.x_mem -= get("memory", 0)
                if ex_prefixes:
                    xtags = _ExTags(get("tags") or [], ex_prefixes)
                    if xtags:
                        pnode.xtags.update(xtags)
                        if pnode.locations:
                            LocatePrimary(pnode.locations, pnode.lx, xtags,
                                          1)
                if dl_prefixes:
                    dlocs = _DesiredLocations(get("tags") or [], dl_prefixes)
                    pnode.loc_score += len(dlocs - pnode.locations)
                if pnode.load is not None:
                    _AddLoad(pnode.load, util.get(name, BASE_UTIL), 1.0)
            if len(inodes) < 2:
                continue
            snode = nodes.get(inodes[1])
            if snode is None:
                continue
            snode.slist.add(name)
            if get("disk_template", constants.DT_PLAIN) in \
                    DTS_LOCAL_STORAGE and not snode.excl:
                snode.inst_sp += get("spindle_use", 1)
            if snode.load is not None:
                snode.load[2] += util.get(name, BASE_UTIL)[2]
            peer = snode.peers.get(pname, 0.0)
            if state != "offline":
                peer += get("memory", 0)
            snode.peers[pname] = peer
            if peer > snode.r_mem:
                snode.r_mem = peer
            if pnode is not None and pnode.locations:
                pnode.loc_score += len(pnode.locations & snode.locations)

    def NewInstance(self, name: str, spec: dict) -> Instance:
        """A requested instance (not placed yet, assumed to run)."""
        return Instance(name, spec, self.ex_prefixes, BASE_UTIL,
                        dl_prefixes=self.dl_prefixes)

    def GroupNodes(self, group: Group) -> list[Node]:
        return [node for node in self.nodes.values() if node.group is group]

    def FindGroup(self, name_or_uuid: str) -> Group | None:
        group = self.groups.get(name_or_uuid)
        if group is not None:
            return group
        for group in self.groups.values():
            if group.name == name_or_uuid:
                return group
        return None
