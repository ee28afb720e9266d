"""The instance policy checks of hail (``Instance.instMatchesPolicy``):
an instance must fit one of its group's min/max specs and use a disk
template the policy allows."""

from ganeti import constants
from ganeti.htools import (FAIL_CPU, FAIL_DISK, FAIL_DISK_COUNT, FAIL_MEM,
                           FAIL_SPINDLES)
from ganeti.htools.model import Failure, Instance
from ganeti.parameters import families


def PolicyFailure(inst: Instance, ipolicy: dict,
                  excl: bool) -> Failure | None:
    """The instance against a group's instance policy
    (``Instance.instMatchesPolicy``): it must fit one min/max pair and use
    an allowed disk template. The first pair's failure is reported."""
    if inst.template not in ipolicy.get(families.IPOLICY_DTS,
                                        [inst.template]):
        return Failure(FAIL_DISK, "disk template %s not allowed by the"
                       " instance policy" % inst.template)
    first = None
    for pair in ipolicy.get(families.ISPECS_MINMAX) or ():
        failure = _SpecFailure(inst, pair[families.ISPECS_MIN],
                               pair[families.ISPECS_MAX], excl)
        if failure is None:
            return None
        first = first or failure
    return first


def _SpecFailure(inst: Instance, low: dict, high: dict,
                 excl: bool) -> Failure | None:
    def outside(key: str, value: float) -> bool:
        return not low.get(key, value) <= value <= high.get(key, value)

    def text(what: str, key: str, value: float) -> str:
        return "%s %s outside the instance policy range [%s, %s]" % (
            what, value, low.get(key), high.get(key))

    if outside(families.ISPEC_MEM_SIZE, inst.mem):
        return Failure(FAIL_MEM, text("memory", families.ISPEC_MEM_SIZE,
                                      inst.mem))
    for size in inst.disks:
        if outside(families.ISPEC_DISK_SIZE, size):
            return Failure(FAIL_DISK, text("disk size",
                                           families.ISPEC_DISK_SIZE, size))
    if outside(families.ISPEC_CPU_COUNT, inst.vcpus):
        return Failure(FAIL_CPU, text("vcpus", families.ISPEC_CPU_COUNT,
                                      inst.vcpus))
    if excl:
        if any(sp is None for sp in inst.disk_spindles):
            return Failure(FAIL_SPINDLES, "disk spindles missing with"
                           " exclusive storage")
        spindles = sum(sp or 0 for sp in inst.disk_spindles)
    else:
        spindles = inst.spindle_use
    if outside(families.ISPEC_SPINDLE_USE, spindles):
        return Failure(FAIL_SPINDLES, text("spindles",
                                           families.ISPEC_SPINDLE_USE,
                                           spindles))
    if inst.template != constants.DT_DISKLESS and \
            outside(families.ISPEC_DISK_COUNT, len(inst.disks)):
        return Failure(FAIL_DISK_COUNT, text("disk count",
                                             families.ISPEC_DISK_COUNT,
                                             len(inst.disks)))
    return None
