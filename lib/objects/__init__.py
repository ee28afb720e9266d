"""Configuration objects: the in-memory form of config.data.

Field names are Ganeti's so that config.data stays readable by tools
written for Ganeti. Every object is a ConfigObject with ``__slots__``;
unset fields are None and are left out of the serialized form, so only
non-default values take space on disk (design-2.0 "Object parameters").

The parameter families (backend, NIC, node, disk, instance policy and
each hypervisor's) are declared in the layer below, ganeti.parameters;
the objects are filled and checked with them.

The objects live in the modules of this package, by family (base,
instance, cluster, network, filters, configdata, oses); this module is
their one name space: ``objects.Instance``, ``objects.BE_MEMORY``, ...
"""

from ganeti.objects.base import (  # noqa: F401
    TAG_RE, ConfigObject, NewUUID, TaggableObject, ValidateTag)
from ganeti.objects.cluster import (  # noqa: F401
    ALLOC_POLICY_PREFERRED, VALID_ALLOC_POLICIES, Cluster, FillDataCollectors,
    Node, NodeGroup)
from ganeti.objects.configdata import ConfigData, Maintenance  # noqa: F401
from ganeti.objects.filters import (  # noqa: F401
    FILTER_ACCEPT, FILTER_CONTINUE, FILTER_PAUSE, FILTER_PREDICATES,
    FILTER_RATE_LIMIT, FILTER_REJECT, FILTER_SIMPLE_ACTIONS, Filter,
    FilterRule)
from ganeti.objects.instance import (  # noqa: F401
    ADMIN_SOURCE, ADMINST_ALL, ADMINST_DOWN, ADMINST_OFFLINE, ADMINST_UP,
    DISK_ACCESS_SET, DISK_RDONLY, DISK_RDWR, INSTANCE_STATE_SOURCES, NIC,
    USER_SOURCE, Disk, Instance)
from ganeti.objects.network import Network  # noqa: F401
from ganeti.objects.oses import OS  # noqa: F401
from ganeti.parameters.base import (  # noqa: F401
    IMMUTABLE_TYPES, CheckParamDict, DeepCopy, ExpandAliases, FillDict)
# The parameter families are declared in the parameter layer; the code
# handling the objects they belong to reads their names here too
from ganeti.parameters.families import (  # noqa: F401
    BE_ALWAYS_FAILOVER, BE_AUTO_BALANCE, BE_MAXMEM, BE_MEMORY, BE_MINMEM,
    BE_PARAMETERS, BE_SPINDLE_USE, BE_VCPUS, BEC_DEFAULTS, DISK_DEV_TYPES,
    DISK_DT_DEFAULTS, DISK_KERNELSPACE, DISK_PARAMETERS, DISK_USERSPACE,
    DISK_VALID_ACCESS_MODES, DT_GLUSTER, DT_RBD, IPOLICY_DEFAULTS,
    IPOLICY_DTS, IPOLICY_PARAMETERS, IPOLICY_SPINDLE_RATIO,
    IPOLICY_VCPU_RATIO, ISPEC_CPU_COUNT, ISPEC_DISK_COUNT, ISPEC_DISK_SIZE,
    ISPEC_MEM_SIZE, ISPEC_NIC_COUNT, ISPEC_PARAMETERS, ISPEC_SPINDLE_USE,
    ISPECS_MAX, ISPECS_MIN, ISPECS_MINMAX, ISPECS_MINMAX_DEFAULTS, ISPECS_STD,
    ND_CPU_SPEED, ND_EXCLUSIVE_STORAGE, ND_OOB_PROGRAM, ND_OVS, ND_OVS_LINK,
    ND_OVS_NAME, ND_PARAMETERS, ND_SPINDLE_COUNT, ND_SSH_PORT, NDC_DEFAULTS,
    NIC_LINK, NIC_MODE, NIC_MODE_BRIDGED, NIC_MODE_OVS, NIC_MODE_ROUTED,
    NIC_PARAMETERS, NIC_VALID_MODES, NIC_VLAN, NICC_DEFAULTS, PP_DEFAULT,
    CheckDiskParams, CheckIPolicy, FillIPolicy, TPort)
from ganeti.parameters.hypervisors import (  # noqa: F401
    HV_MIGRATION_BANDWIDTH, HV_MIGRATION_MODE, HV_MIGRATION_PORT, HVC_GLOBALS,
    CheckHvParams, HvDefaults)
