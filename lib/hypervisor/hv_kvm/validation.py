"""The checks of KVM parameter values that only the node can make.

The values' syntax is the declarations' (parameters.hypervisors), the
combinations of values are KVMHypervisor.CheckParameterSyntax's.
"""

import os
from typing import Any

from ganeti.hypervisor import hv_base
from ganeti.parameters.hypervisors import (
    HV_CDROM_IMAGE_PATH, HV_CPU_MASK, HV_INITRD_PATH, HV_KERNEL_PATH,
    HV_KVM_PATH, HV_MEM_PATH, HV_SECURITY_DOMAIN, ParseCpuMask)


def _KvmPathCheck(value: Any) -> str | None:
    if not os.path.isfile(value):
        return "file %s does not exist" % value
    if not os.access(value, os.X_OK):
        return "file %s is not executable" % value
    return None


def _SecurityDomainCheck(value: Any) -> str | None:
    if not value:
        return None
    import pwd
    try:
        pwd.getpwnam(value)
    except KeyError:
        return "user %s does not exist" % value
    return None


def _CpuMaskNodeCheck(value: Any) -> str | None:
    cpus = os.cpu_count() or 1
    for entry in ParseCpuMask(value):
        if entry and max(entry) >= cpus:
            return "CPU %d is not in this node's CPUs 0-%d" % (max(entry),
                                                               cpus - 1)
    return None


def _MemPathCheck(value: Any) -> str | None:
    if value and not os.path.isdir(value):
        return "directory %s does not exist" % value
    return None


# The checks of parameter values that only the node can make
NODE_CHECKS: dict[str, hv_base.NodeCheck] = {
    HV_KVM_PATH: _KvmPathCheck,
    HV_KERNEL_PATH: hv_base.FileExistsCheck,
    HV_INITRD_PATH: hv_base.FileExistsCheck,
    HV_CDROM_IMAGE_PATH: hv_base.FileExistsCheck,
    HV_CPU_MASK: _CpuMaskNodeCheck,
    HV_MEM_PATH: _MemPathCheck,
    HV_SECURITY_DOMAIN: _SecurityDomainCheck,
}
