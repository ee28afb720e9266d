"""Capacity planning in the manner of hspace.

For an instance spec, instances are allocated one after the other (each
seeing the previous ones, as ``hspace`` does) in each allocatable group
until none fits; the count is the group's spare capacity and the most
frequent failure of the last, failed attempt names the resource that ran
out first. Without a spec the group policy's standard spec is used, and
the tiered run starts at the policy's maximum and shrinks the resource
that failed (halving towards the minimum) until the minimum fits nowhere.
"""

from collections import Counter
from typing import NamedTuple

from ganeti import constants
from ganeti.htools.metrics import Score
from ganeti.htools.model import Cluster, Group
from ganeti.htools.placement import Commit, TryGroup
from ganeti.parameters import families

# Ceiling on allocations per group and spec, against runaway loops on
# clusters reporting nonsensical resources
MAX_ALLOCATIONS = 1000000

# The ispec shrunk when a resource (first word of a failure) runs out
_SHRINK = {"memory": families.ISPEC_MEM_SIZE,
           "disk": families.ISPEC_DISK_SIZE,
           "vcpus": families.ISPEC_CPU_COUNT}


class Spec(NamedTuple):
    """An instance size."""
    memory: int
    disk: int
    vcpus: int
    disk_template: str = constants.DT_PLAIN
    spindle_use: int = 1

    @classmethod
    def FromISpec(cls, ispec: dict, template: str) -> "Spec":
        return cls(int(ispec[families.ISPEC_MEM_SIZE]),
                   int(ispec[families.ISPEC_DISK_SIZE]) *
                   int(ispec.get(families.ISPEC_DISK_COUNT, 1)),
                   int(ispec[families.ISPEC_CPU_COUNT]), template,
                   int(ispec.get(families.ISPEC_SPINDLE_USE, 1)))

    def Request(self, name: str) -> dict:
        return {"name": name, "memory": self.memory, "vcpus": self.vcpus,
                "disk_template": self.disk_template,
                "disks": [{"size": self.disk, "mode": "rw"}],
                "disk_space_total": self.disk,
                "spindle_use": self.spindle_use, "tags": [], "nics": []}


class GroupCapacity(NamedTuple):
    """How many more instances of a spec a group takes."""
    group: str
    spec: Spec
    instances: int
    limit: str
    failures: dict[str, int]  # resource -> nodes on which it ran out


def _Fill(cluster: Cluster, group: Group, spec: Spec,
          limit: int = MAX_ALLOCATIONS) -> tuple[int, Counter]:
    """Allocate the spec in the group until it fails; the count and the
    failures of the failed attempt."""
    score = Score(cluster.GroupNodes(group))
    required = 2 if spec.disk_template in constants.DTS_INT_MIRROR else 1
    count = 0
    while count < limit:
        name = "capacity-%d-%s" % (count, group.uuid)
        inst = cluster.NewInstance(name, spec.Request(name))
        res = TryGroup(cluster, score, group, inst, required, keep=1)
        if res.best is None:
            # the resource named by each node's first failed check
            return count, Counter(text.split()[0] for text in
                                  res.details.values())
        Commit(cluster, score, inst, list(res.best.nodes))
        count += 1
    return count, Counter()


def _Limit(fails: Counter) -> str:
    if not fails:
        return "none"
    return min(fails, key=lambda what: (-fails[what], what))


def Capacity(message: dict, spec: Spec | None = None,
             template: str = constants.DT_PLAIN) -> list[GroupCapacity]:
    """Per allocatable group, how many more instances of ``spec`` (default:
    each group policy's standard spec) fit and what runs out first."""
    cluster = Cluster(message)
    result = []
    for group in cluster.groups.values():
        if group.rank >= 2:
            continue
        gspec = spec or Spec.FromISpec(group.ipolicy[families.ISPECS_STD],
                                       template)
        count, fails = _Fill(cluster, group, gspec)
        result.append(GroupCapacity(group.name, gspec, count, _Limit(fails),
                                    dict(fails)))
    return result


def Tiered(message: dict, template: str = constants.DT_PLAIN
           ) -> dict[str, list[tuple[Spec, int]]]:
    """hspace's tiered allocation per allocatable group: from the policy's
    maximum spec down, the instances allocated at each size."""
    cluster = Cluster(message)
    result: dict[str, list[tuple[Spec, int]]] = {}
    for group in cluster.groups.values():
        if group.rank >= 2:
            continue
        pair = group.ipolicy[families.ISPECS_MINMAX][0]
        low = dict(pair[families.ISPECS_MIN])
        current = dict(pair[families.ISPECS_MAX])
        steps: list[tuple[Spec, int]] = []
        while True:
            spec = Spec.FromISpec(current, template)
            count, fails = _Fill(cluster, group, spec)
            if count:
                steps.append((spec, count))
            shrunk = False
            for what in sorted(fails, key=lambda m: (-fails[m], m)):
                key = _SHRINK.get(what)
                if key is not None and current[key] > low[key]:
                    current[key] = max(low[key], current[key] // 2)
                    shrunk = True
                    break
            if not shrunk:
                break
        result[group.name] = steps
    return result
