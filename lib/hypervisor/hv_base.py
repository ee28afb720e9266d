"""The hypervisor abstraction: what noded asks of every hypervisor.

Each hypervisor's parameters are declared once, in the parameter layer
(ganeti.parameters.hypervisors), and are its ``PARAMETERS``. From that
table derive the cluster defaults (GetDefaults) and the master's syntax
check (CheckParameterSyntax, CheckParameterOverrides); ``NODE_CHECKS`` adds
what only the node can judge (ValidateParameters).

Hypervisor objects run inside noded; they get config objects (Instance,
Disk) whose hvparams and beparams the master has already filled.
"""

import abc
import os
import re
from typing import Any, Callable

from ganeti import constants, errors, objects
from ganeti.parameters.base import CheckParamDict, ParamDefaults, ParamSpec
from ganeti.utils import io

_MEMINFO_FILE = "/proc/meminfo"
_CPUINFO_FILE = "/proc/cpuinfo"
_NUMA_NODES_DIR = "/sys/devices/system/node"
_MIB = 1024 * 1024

# A node-side value check: None if the value is usable here, else why not
NodeCheck = Callable[[Any], str | None]


def FileExistsCheck(value: Any) -> str | None:
    """Node check of a path parameter: empty, or an existing file."""
    if value and not os.path.isfile(value):
        return "file %s does not exist" % value
    return None


def _ReadMeminfo() -> dict[str, int]:
    """/proc/meminfo as a dict of sizes in bytes."""
    values = {}
    for line in io.ReadFile(_MEMINFO_FILE).splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            scale = 1024 if fields[1:] == ["kB"] else 1
            values[key] = int(fields[0]) * scale
    return values


def _CpuInfo() -> dict[str, int]:
    sockets = set()
    for line in io.ReadFile(_CPUINFO_FILE).splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "physical id":
            sockets.add(value.strip())
    try:
        nodes = [name for name in os.listdir(_NUMA_NODES_DIR)
                 if re.match(r"^node\d+$", name)]
    except FileNotFoundError:
        nodes = []
    return {
        "cpu_total": os.cpu_count() or 1,
        "cpu_nodes": max(len(nodes), 1),
        "cpu_sockets": max(len(sockets), 1),
    }


def GetLinuxNodeInfo() -> dict[str, int]:
    """Memory (MiB) and CPUs of the Linux host.

    Free memory counts page cache and buffers, which the kernel gives back
    when an instance needs them; dom0 memory is what the host itself uses.
    """
    meminfo = _ReadMeminfo()
    total = meminfo["MemTotal"]
    free = meminfo.get("MemAvailable")
    if free is None:
        free = (meminfo.get("MemFree", 0) + meminfo.get("Buffers", 0) +
                meminfo.get("Cached", 0))
    info = {
        "memory_total": total // _MIB,
        "memory_free": free // _MIB,
        "memory_dom0": (total - free) // _MIB,
        "cpu_dom0": 0,
    }
    info.update(_CpuInfo())
    return info


# An entry of ListInstances/GetAllInstancesInfo:
# (name, id, memory MiB, vcpus, state, cpu time in seconds)
InstanceInfo = tuple[str, int, int, int, int, float]


class BaseHypervisor(abc.ABC):
    """Abstract hypervisor; Ganeti's method names and signatures.

    Methods that a hypervisor may lack (migration, ballooning, hotplug)
    refuse with HypervisorError by default.
    """

    NAME = ""
    PARAMETERS: dict[str, ParamSpec] = {}
    # Parameter name -> its check on the node itself (files, devices),
    # run in noded only
    NODE_CHECKS: dict[str, NodeCheck] = {}
    ANCILLARY_FILES: list[str] = []
    ANCILLARY_FILES_OPT: list[str] = []
    CAN_MIGRATE = False
    # Whether a migration can copy disks that only the source node
    # reaches (``file``) while the instance runs (KVM: NBD mirroring);
    # a hypervisor that can't (fake: its instances have no disk I/O to
    # copy through) leaves such instances to gnt-instance move
    CAN_MIGRATE_STORAGE = False

    # Parameters: declared once, everything else derives -------------------

    @classmethod
    def GetDefaults(cls) -> dict:
        """The built-in defaults, as a new dict (the cluster's initial
        hvparams for this hypervisor)."""
        return ParamDefaults(cls.PARAMETERS)

    @classmethod
    def _What(cls) -> str:
        return "%s hypervisor" % cls.NAME

    @classmethod
    def CheckParameterOverrides(cls, hvparams: Any) -> None:
        """Syntax check of a partial dict (cluster or instance overrides).

        Raises HypervisorError naming an unknown or ill-typed parameter;
        None is never a valid value.
        """
        try:
            CheckParamDict(cls.PARAMETERS, hvparams, cls._What())
        except errors.TypeEnforcementError as err:
            raise errors.HypervisorError(str(err)) from None

    @classmethod
    def CheckParameterSyntax(cls, hvparams: Any) -> None:
        """Syntax check of a filled dict; safe to run on the master.

        Every declared parameter must be present with a valid value.
        """
        cls.CheckParameterOverrides(hvparams)
        missing = sorted(set(cls.PARAMETERS) - set(hvparams))
        if missing:
            raise errors.HypervisorError(
                "%s parameter(s) missing: %s" %
                (cls._What(), ", ".join(missing)))

    def ValidateParameters(self, hvparams: dict) -> None:
        """Value check of a filled dict, on the node that will use it."""
        self.CheckParameterSyntax(hvparams)
        for name, node_check in self.NODE_CHECKS.items():
            problem = node_check(hvparams[name])
            if problem:
                raise errors.HypervisorError(
                    "%s parameter %r is not valid on this node: %s" %
                    (self._What(), name, problem))

    # Lifecycle ---------------------------------------------------------

    @abc.abstractmethod
    def StartInstance(self, instance: objects.Instance,
                      block_devices: list[tuple[objects.Disk, str]],
                      startup_paused: bool) -> None:
        """Start an instance on the given (link paths of) block devices."""

    @abc.abstractmethod
    def StopInstance(self, instance: objects.Instance, force: bool = False,
                     retry: bool = False, name: str | None = None,
                     timeout: int | None = None) -> None:
        """Stop an instance; ``force`` kills it instead of asking it to
        shut down. ``name`` stops a possibly unknown instance by name."""

    def CleanupInstance(self, instance_name: str) -> None:
        """Remove what a stopped instance left behind (runtime files)."""

    @abc.abstractmethod
    def RebootInstance(self, instance: objects.Instance) -> None:
        """Soft reboot: ask the running instance to reboot."""

    # Listing -----------------------------------------------------------

    @abc.abstractmethod
    def ListInstances(self, hvparams: dict | None = None) -> list[str]:
        """Names of the instances running on this node."""

    @abc.abstractmethod
    def GetInstanceInfo(self, instance_name: str,
                        hvparams: dict | None = None
                        ) -> InstanceInfo | None:
        """Runtime information of one instance, None if not running."""

    def GetAllInstancesInfo(self, hvparams: dict | None = None
                            ) -> list[InstanceInfo]:
        """Runtime information of every instance on this node."""
        result = []
        for name in self.ListInstances(hvparams):
            info = self.GetInstanceInfo(name, hvparams)
            if info is not None:
                result.append(info)
        return result

    def GetNodeInfo(self, hvparams: dict | None = None) -> dict[str, Any]:
        """Memory and CPUs of the node as this hypervisor sees them."""
        return GetLinuxNodeInfo()

    def GetInstanceConsole(self, instance: objects.Instance,
                           primary_node: objects.Node,
                           node_group: objects.NodeGroup | None,
                           hvparams: dict, beparams: dict) -> dict:
        """How to reach the instance's console (InstanceConsole fields)."""
        return {"instance": instance.name, "kind": constants.CONS_MESSAGE,
                "message": "Console not available for %s hypervisor" %
                self.NAME}

    def Verify(self, hvparams: dict | None = None) -> str | None:
        """Problems of the hypervisor on this node, None if usable."""
        return None

    # Migration ---------------------------------------------------------

    def _Unsupported(self, what: str) -> errors.HypervisorError:
        return errors.HypervisorError("%s is not supported by the %s"
                                      " hypervisor" % (what, self.NAME))

    @classmethod
    def LiveMigrationUnsafe(cls, hvparams: dict) -> str | None:
        """Why a live migration with these parameters could lose the
        guest's state (the master then migrates it paused), or None."""
        return None

    def MigrationInfo(self, instance: objects.Instance) -> str:
        """Opaque data the target needs to accept the instance."""
        return ""

    def AcceptInstance(self, instance: objects.Instance, info: str,
                       target: str,
                       block_devices: list[tuple[objects.Disk, str]]
                       ) -> None:
        """Prepare the target node to receive a migrating instance, on
        ``block_devices`` as StartInstance gets them."""
        raise self._Unsupported("Migration")

    def MigrateInstance(self, cluster_name: str,
                        instance: objects.Instance, target: str,
                        live: bool) -> None:
        """Send a running instance to ``target`` (source side)."""
        raise self._Unsupported("Migration")

    def FinalizeMigrationDst(self, instance: objects.Instance, info: str,
                             success: bool) -> None:
        """Finish (or undo) the migration on the target node."""
        raise self._Unsupported("Migration")

    def FinalizeMigrationSource(self, instance: objects.Instance,
                                success: bool, live: bool) -> None:
        """Finish (or undo) the migration on the source node."""
        raise self._Unsupported("Migration")

    def GetMigrationStatus(self, instance: objects.Instance) -> dict:
        """Progress of a migration: ``{"status": HV_MIGRATION_*, ...}``."""
        raise self._Unsupported("Migration")

    @staticmethod
    def VersionsSafeForMigration(src: list[int], target: list[int]) -> bool:
        """Whether the hypervisor versions allow migration."""
        return src == target

    # Memory and power --------------------------------------------------

    def BalloonInstanceMemory(self, instance: objects.Instance,
                              mem: int) -> None:
        """Change the memory of a running instance (MiB)."""
        raise self._Unsupported("Memory ballooning")

    def PowercycleNode(self, hvparams: dict | None = None) -> None:
        """Hard-reset the node (gnt-node powercycle)."""
        raise self._Unsupported("Node power-cycling")
