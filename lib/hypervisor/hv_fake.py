"""The fake hypervisor: instances are files, nothing runs.

A running instance is the file ``pathutils.FAKE_HV_DIR/<name>`` holding
"<id>\\n<memory MiB>\\n<vcpus>\\n". That is enough to exercise every
instance operation of the cluster (start, stop, reboot, ballooning,
migration, memory accounting) on machines without virtualization.

Migration hands the state file over through the master, as a real
hypervisor hands over memory: MigrationInfo on the source returns the
file's content, AcceptInstance on the target keeps it as the hidden
``.incoming-<name>`` (not a running instance yet), and the finalize steps
make the instance run on exactly one node: on the target with success
(the source's file goes), on the source otherwise (the incoming file
goes).

Test aid: an empty file ``.fail-<step>`` in a node's FAKE_HV_DIR makes
that migration step fail on that node, for every instance, until it is
removed. The steps are "info" (MigrationInfo), "accept"
(AcceptInstance), "migrate" (MigrateInstance), "status"
(GetMigrationStatus reports a failed migration) and "finalize-dst" /
"finalize-src" (FinalizeMigrationDst/Source, only when completing a
successful migration; undoing one always works). The marker of step
"start" makes StartInstance fail (an instance that will not come up).

Test aid: a file ``.node-size`` in a node's FAKE_HV_DIR holding
"<total MiB> <node's own MiB> <cpus>" makes the node report that size
instead of the host's (which changes from moment to moment): capacity
and balancing on a virtual cluster are then reproducible, with nodes of
different sizes.
"""

import logging
import os
from typing import Any

from ganeti import constants, errors, objects, pathutils
from ganeti.hypervisor import hv_base
from ganeti.parameters.hypervisors import FAKE_PARAMETERS
from ganeti.utils import io

# Hidden files of the state directory (never listed as instances)
_FAIL_MARKER = ".fail-%s"
_INCOMING_PREFIX = ".incoming-"
_NODE_SIZE_FILE = ".node-size"


class FakeHypervisor(hv_base.BaseHypervisor):
    """Keeps the instances' runtime state in files under FAKE_HV_DIR."""

    NAME = constants.HT_FAKE
    PARAMETERS = FAKE_PARAMETERS
    CAN_MIGRATE = True

    def __init__(self, root_dir: str | None = None):
        self._root = root_dir or pathutils.FAKE_HV_DIR
        io.EnsureDirs([(self._root, constants.RUN_DIRS_MODE)])

    def _InstanceFile(self, instance_name: str) -> str:
        if not instance_name or "/" in instance_name or \
                instance_name.startswith("."):
            raise errors.HypervisorError("Invalid instance name %r" %
                                         instance_name)
        return os.path.join(self._root, instance_name)

    def _IsAlive(self, instance_name: str) -> bool:
        return os.path.exists(self._InstanceFile(instance_name))

    def _MarkUp(self, instance: objects.Instance, memory: int) -> None:
        vcpus = instance.beparams[objects.BE_VCPUS]
        io.WriteFile(self._InstanceFile(instance.name),
                     data="0\n%d\n%d\n" % (memory, vcpus))

    def _MarkDown(self, instance_name: str) -> None:
        io.RemoveFile(self._InstanceFile(instance_name))

    def ListInstances(self, hvparams: dict | None = None) -> list[str]:
        return sorted(name for name in io.ListVisibleFiles(self._root)
                      if os.path.isfile(os.path.join(self._root, name)))

    def GetInstanceInfo(self, instance_name: str,
                        hvparams: dict | None = None
                        ) -> hv_base.InstanceInfo | None:
        path = self._InstanceFile(instance_name)
        try:
            lines = io.ReadFile(path).splitlines()
        except FileNotFoundError:
            return None
        except OSError as err:
            raise errors.HypervisorError("Failed to read %s: %s" %
                                         (path, err)) from err
        try:
            inst_id, memory, vcpus = (int(value) for value in lines[:3])
        except ValueError as err:
            raise errors.HypervisorError("Corrupt state file %s: %s" %
                                         (path, err)) from err
        return (instance_name, inst_id, memory, vcpus,
                constants.HV_INSTANCE_RUNNING, 0.0)

    def StartInstance(self, instance: objects.Instance,
                      block_devices: list[tuple[objects.Disk, str]],
                      startup_paused: bool) -> None:
        if self._IsAlive(instance.name):
            raise errors.HypervisorError(
                "Failed to start instance %s: already running" %
                instance.name)
        if os.path.exists(os.path.join(self._root, _FAIL_MARKER % "start")):
            raise errors.HypervisorError("Simulated failure to start instance"
                                         " %s" % instance.name)
        self._MarkUp(instance, instance.beparams[objects.BE_MAXMEM])

    def StopInstance(self, instance: objects.Instance, force: bool = False,
                     retry: bool = False, name: str | None = None,
                     timeout: int | None = None) -> None:
        name = name or instance.name
        if not self._IsAlive(name):
            raise errors.HypervisorError(
                "Failed to stop instance %s: not running" % name)
        self._MarkDown(name)

    def RebootInstance(self, instance: objects.Instance) -> None:
        if not self._IsAlive(instance.name):
            raise errors.HypervisorError(
                "Failed to reboot instance %s: not running" % instance.name)

    def BalloonInstanceMemory(self, instance: objects.Instance,
                              mem: int) -> None:
        info = self.GetInstanceInfo(instance.name)
        if info is None:
            raise errors.HypervisorError(
                "Cannot balloon instance %s: not running" % instance.name)
        io.WriteFile(self._InstanceFile(instance.name),
                     data="%d\n%d\n%d\n" % (info[1], mem, info[3]))

    def GetNodeInfo(self, hvparams: dict | None = None) -> dict:
        """The host's figures, minus the memory the fake instances hold.

        So that allocation on a test cluster behaves as if the instances
        used real memory: free memory shrinks by theirs, the host's own
        use (dom0) stays, and total = dom0 + free + the instances' memory,
        the sum hail checks the node data against.
        """
        result: dict[str, Any] = hv_base.GetLinuxNodeInfo()
        size = self._NodeSize()
        if size is not None:
            result.update(memory_total=size[0], memory_dom0=size[1],
                          memory_free=size[0] - size[1], cpu_total=size[2])
        used = sum(info[2] for info in self.GetAllInstancesInfo(hvparams))
        result["memory_free"] = max(result["memory_free"] - used, 0)
        result["hv_version"] = [0]
        return result

    def _NodeSize(self) -> tuple[int, int, int] | None:
        """The node size the ``.node-size`` test aid sets, if any."""
        try:
            text = io.ReadFile(os.path.join(self._root, _NODE_SIZE_FILE))
        except FileNotFoundError:
            return None
        try:
            total, dom0, cpus = (int(value) for value in text.split())
        except ValueError as err:
            raise errors.HypervisorError("Invalid %s: %r" %
                                         (_NODE_SIZE_FILE, text)) from err
        return total, dom0, cpus

    def Verify(self, hvparams: dict | None = None) -> str | None:
        if not os.path.isdir(self._root):
            return "The required directory '%s' does not exist" % self._root
        return None

    # Migration ---------------------------------------------------------

    def _CheckFailMarker(self, step: str, instance_name: str) -> None:
        """Fail ``step`` if the test marker for it exists (module doc)."""
        if os.path.exists(os.path.join(self._root, _FAIL_MARKER % step)):
            raise errors.HypervisorError(
                "Simulated failure of migration step '%s' for instance %s"
                % (step, instance_name))

    def _IncomingFile(self, instance_name: str) -> str:
        self._InstanceFile(instance_name)
        return os.path.join(self._root, _INCOMING_PREFIX + instance_name)

    @staticmethod
    def _CheckState(instance_name: str, info: str) -> None:
        """Refuse migration data that is not a state file's content."""
        lines = info.splitlines() if isinstance(info, str) else []
        if len(lines) != 3 or not all(line.isdigit() for line in lines):
            raise errors.HypervisorError(
                "Invalid migration data for instance %s: %r" %
                (instance_name, info))

    def MigrationInfo(self, instance: objects.Instance) -> str:
        """The state file's content: what the target will run."""
        self._CheckFailMarker("info", instance.name)
        try:
            return io.ReadFile(self._InstanceFile(instance.name))
        except FileNotFoundError:
            raise errors.HypervisorError(
                "Instance %s is not running" % instance.name) from None

    def AcceptInstance(self, instance: objects.Instance, info: str,
                       target: str,
                       block_devices: list[tuple[objects.Disk, str]]
                       ) -> None:
        """Keep the incoming state, hidden until the migration succeeds."""
        if self._IsAlive(instance.name):
            raise errors.HypervisorError(
                "Can't accept instance %s, already running" % instance.name)
        self._CheckFailMarker("accept", instance.name)
        self._CheckState(instance.name, info)
        io.WriteFile(self._IncomingFile(instance.name), data=info)

    def MigrateInstance(self, cluster_name: str,
                        instance: objects.Instance, target: str,
                        live: bool) -> None:
        self._CheckFailMarker("migrate", instance.name)
        logging.info("Fake hypervisor migrating %s to %s (live=%s)",
                     instance.name, target, live)

    def FinalizeMigrationDst(self, instance: objects.Instance, info: str,
                             success: bool) -> None:
        """Run the accepted state here, or forget it."""
        incoming = self._IncomingFile(instance.name)
        if not success:
            io.RemoveFile(incoming)
            return
        self._CheckFailMarker("finalize-dst", instance.name)
        self._CheckState(instance.name, info)
        io.WriteFile(self._InstanceFile(instance.name), data=info)
        io.RemoveFile(incoming)

    def FinalizeMigrationSource(self, instance: objects.Instance,
                                success: bool, live: bool) -> None:
        """Drop the migrated instance; after a failure it keeps running."""
        if success:
            self._CheckFailMarker("finalize-src", instance.name)
            self._MarkDown(instance.name)

    def GetMigrationStatus(self, instance: objects.Instance) -> dict:
        try:
            self._CheckFailMarker("status", instance.name)
        except errors.HypervisorError:
            return {"status": constants.HV_MIGRATION_FAILED}
        return {"status": constants.HV_MIGRATION_COMPLETED}
