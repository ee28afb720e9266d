"""The instance policy (ipolicy): which instances a node group accepts.

A policy bounds the instance specs (memory, CPUs, disks, NICs, spindles)
by one or more min/max pairs, lists the allowed disk templates and caps
the virtual to physical CPU ratio of a node. The cluster holds the full
policy; a node group may override parts of it, and the group's effective
policy is the cluster's filled with the group's overrides.

The LUs placing an instance (create, modify, failover/migrate/move) check
it here; with ``ignore_ipolicy`` a violation is only a warning. The
violation texts are Ganeti's ("memory-size value 4096 is not in range
[128, 2048]").
"""

import math
from typing import Any

from ganeti import constants, errors, objects
from ganeti.cmdlib.base import LogicalUnit
from ganeti.cmdlib.instance_utils import NodeInfo


def CalculateGroupIPolicy(cluster: objects.Cluster,
                          group: objects.NodeGroup) -> dict:
    """The effective policy of a node group."""
    return cluster.SimpleFillIPolicy(group.ipolicy)


def _ComputeMinMaxSpec(name: str, qualifier: str, minmax: dict,
                       value: Any) -> str | None:
    """Why ``value`` is outside one min/max pair, None if it is inside.

    An unknown value (None, "auto") can't violate anything.
    """
    if value is None or value == constants.VALUE_AUTO:
        return None
    max_v = minmax[objects.ISPECS_MAX].get(name, value)
    min_v = minmax[objects.ISPECS_MIN].get(name, value)
    if min_v <= value <= max_v:
        return None
    fqn = "%s/%s" % (name, qualifier) if qualifier else name
    return "%s value %s is not in range [%s, %s]" % (fqn, value, min_v,
                                                    max_v)


def ComputeIPolicySpecViolation(ipolicy: dict, mem_size: int | None,
                                cpu_count: int | None, disk_count: int,
                                nic_count: int | None, disk_sizes: list,
                                spindle_use: int | None,
                                disk_template: str) -> list[str]:
    """The policy violations of an instance with these specs.

    An instance must fit one of the min/max pairs: the violations reported
    are those of the pair it misses least. A spec given as None is not
    checked, nor is the disk count of a diskless instance (there is
    nothing to count).
    """
    if disk_count != len(disk_sizes):
        raise errors.ProgrammerError("Disk count %d does not match the %d"
                                     " disk sizes" % (disk_count,
                                                      len(disk_sizes)))
    settings = [
        (objects.ISPEC_MEM_SIZE, "", mem_size),
        (objects.ISPEC_CPU_COUNT, "", cpu_count),
        (objects.ISPEC_NIC_COUNT, "", nic_count),
        (objects.ISPEC_SPINDLE_USE, "", spindle_use),
    ] + [(objects.ISPEC_DISK_SIZE, str(idx), size)
         for idx, size in enumerate(disk_sizes)]
    if disk_template != constants.DT_DISKLESS:
        settings.append((objects.ISPEC_DISK_COUNT, "", disk_count))
    result = []
    allowed = ipolicy[objects.IPOLICY_DTS]
    if disk_template not in allowed:
        result.append("Disk template %s is not allowed (allowed templates:"
                      " %s)" % (disk_template, ", ".join(allowed)))
    least: list[str] | None = None
    for minmax in ipolicy[objects.ISPECS_MINMAX]:
        errs = [err for err in (_ComputeMinMaxSpec(name, qualifier, minmax,
                                                   value)
                                for name, qualifier, value in settings)
                if err]
        if least is None or len(errs) < len(least):
            least = errs
    return result + (least or [])


def ComputeIPolicyInstanceViolation(ipolicy: dict,
                                    instance: objects.Instance,
                                    cfg: Any,
                                    disks: list[objects.Disk] | None = None
                                    ) -> list[str]:
    """The policy violations of an instance as configured.

    ``disks`` replaces the instance's disks in the configuration, for an
    instance being changed (or created) whose disks are not stored yet.
    """
    filled_be = cfg.GetClusterInfo().FillBE(instance)
    if disks is None:
        disks = cfg.GetInstanceDisks(instance.uuid)
    template = disks[0].dev_type if disks else constants.DT_DISKLESS
    return ComputeIPolicySpecViolation(
        ipolicy, filled_be[objects.BE_MAXMEM], filled_be[objects.BE_VCPUS],
        len(disks), len(instance.nics), [disk.size for disk in disks],
        filled_be[objects.BE_SPINDLE_USE], template)


def _ReportViolations(lu: LogicalUnit, msg: str, ignore: bool) -> None:
    if ignore:
        lu.LogWarning("%s", msg)
    else:
        raise errors.OpPrereqError(msg, errors.ECODE_INVAL)


def _GroupOf(lu: LogicalUnit, group_uuid: str) -> objects.NodeGroup:
    group = lu.cfg.GetNodeGroup(group_uuid)
    if group is None:
        raise errors.OpPrereqError("Node group %s not known" % group_uuid,
                                   errors.ECODE_NOENT)
    return group


def _CheckAllocation(lu: LogicalUnit, group: objects.NodeGroup,
                     violations: list[str], ignore: bool) -> None:
    if violations:
        _ReportViolations(lu, "Instance allocation to group %s (%s)"
                          " violates policy: %s" %
                          (group.uuid, group.name, ", ".join(violations)),
                          ignore)


def CheckIPolicySpec(lu: LogicalUnit, group_uuid: str, spec: dict,
                     disk_template: str, ignore: bool = False) -> None:
    """Refuse an instance spec the group's policy does not allow.

    ``spec`` has the ISPEC_* keys, ``disk-size`` being the list of disk
    sizes; a missing key is not checked. With ``ignore`` the violations
    are a warning.
    """
    group = _GroupOf(lu, group_uuid)
    sizes = list(spec.get(objects.ISPEC_DISK_SIZE, []))
    violations = ComputeIPolicySpecViolation(
        CalculateGroupIPolicy(lu.cfg.GetClusterInfo(), group),
        spec.get(objects.ISPEC_MEM_SIZE), spec.get(objects.ISPEC_CPU_COUNT),
        spec.get(objects.ISPEC_DISK_COUNT, len(sizes)),
        spec.get(objects.ISPEC_NIC_COUNT, 0), sizes,
        spec.get(objects.ISPEC_SPINDLE_USE), disk_template)
    _CheckAllocation(lu, group, violations, ignore)


def CheckInstanceIPolicy(lu: LogicalUnit, instance: objects.Instance,
                         ignore: bool = False,
                         disks: list[objects.Disk] | None = None,
                         group_uuid: str | None = None) -> None:
    """Refuse an instance (e.g. as a modification leaves it) that violates
    the policy of its primary node's group, or of ``group_uuid``.

    ``disks`` as for ComputeIPolicyInstanceViolation; with ``ignore`` the
    violations are a warning.
    """
    if group_uuid is None:
        group_uuid = lu.cfg.GetNodeInfo(instance.primary_node).group
    group = _GroupOf(lu, group_uuid)
    violations = ComputeIPolicyInstanceViolation(
        CalculateGroupIPolicy(lu.cfg.GetClusterInfo(), group), instance,
        lu.cfg, disks)
    _CheckAllocation(lu, group, violations, ignore)


def CheckTargetNodeIPolicy(lu: LogicalUnit, ipolicy: dict,
                           instance: objects.Instance, node: objects.Node,
                           cfg: Any, ignore: bool = False) -> None:
    """Refuse moving an instance to ``node`` if it violates ``ipolicy``,
    the policy of the node's group (with ``ignore``, only warn).

    Within its own group an instance is not checked again (as in Ganeti):
    a policy tightened after the instance was created does not pin it to
    its node.
    """
    if cfg.GetNodeInfo(instance.primary_node).group == node.group:
        return
    violations = ComputeIPolicyInstanceViolation(ipolicy, instance, cfg)
    if violations:
        _ReportViolations(lu, "Instance does not meet target node group's"
                          " (%s) instance policy: %s" %
                          (_GroupOf(lu, node.group).name,
                           ", ".join(violations)), ignore)


def CheckNodeVcpuRatio(lu: LogicalUnit, node_uuid: str, vcpus: int,
                       hvname: str, ignore: bool = False) -> None:
    """Refuse placing ``vcpus`` more virtual CPUs on a node beyond the
    vcpu-ratio of its group's policy.

    The node may run floor(vcpu-ratio * physical CPUs) virtual CPUs,
    counting every instance it is the primary node of, running or not
    (each may be started), as Ganeti's allocator does. A node that does
    not report its CPU count is not checked (with a warning).
    """
    cfg = lu.cfg
    node = cfg.GetNodeInfo(node_uuid)
    ipolicy = CalculateGroupIPolicy(cfg.GetClusterInfo(),
                                    _GroupOf(lu, node.group))
    cpus = (NodeInfo(lu, node_uuid, hvname).get("hv", {}).get(hvname, {})
            .get("cpu_total"))
    if isinstance(cpus, bool) or not isinstance(cpus, int) or cpus <= 0:
        lu.LogWarning("Node %s reports no CPU count, not checking the"
                      " vcpu-ratio of the instance policy", node.name)
        return
    cluster = cfg.GetClusterInfo()
    used = sum(cluster.FillBE(cfg.GetInstanceInfo(uuid))[objects.BE_VCPUS]
               for uuid in cfg.GetNodeInstances(node_uuid)[0])
    ratio = ipolicy[objects.IPOLICY_VCPU_RATIO]
    allowed = int(math.floor(ratio * cpus))
    if used + vcpus > allowed:
        _ReportViolations(
            lu, "Node %s would have %d virtual CPUs on %d physical CPUs,"
            " more than the %d allowed by the instance policy's vcpu-ratio"
            " %s" % (node.name, used + vcpus, cpus, allowed, ratio), ignore)
