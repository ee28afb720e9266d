"""LUs starting, stopping and rebooting instances."""

from typing import Any, Callable

from ganeti import constants, errors, objects
from ganeti.cmdlib.cluster import CheckHvParamsOnNodes, HypervisorClass
from ganeti.cmdlib.instance_utils import (
    CheckInstanceOnline, CheckMinMaxMem, CheckNodeFreeMemory,
    CheckNodeOnline, ConvertBeParams, ConvertHvParams, InstanceLU,
    InstanceRunning, SetAdminState, ShutdownInstanceDisks, StartInstance)


class LUInstanceStartup(InstanceLU):
    """Start an instance (and remember it should run)."""

    HPATH = "instance-start"

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"FORCE": self.op.force}

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        CheckInstanceOnline(instance)
        cluster = self.cfg.GetClusterInfo()
        self.beparams = ConvertBeParams(self.op.beparams)
        self.hvparams = ConvertHvParams(instance.hypervisor,
                                        self.op.hvparams)
        filled_be = objects.FillDict(cluster.FillBE(instance), self.beparams)
        CheckMinMaxMem(filled_be)
        if self.hvparams:
            filled_hv = objects.FillDict(cluster.FillHV(instance),
                                         self.hvparams)
            try:
                HypervisorClass(instance.hypervisor).CheckParameterSyntax(
                    filled_hv)
            except errors.HypervisorError as err:
                raise errors.OpPrereqError(str(err),
                                           errors.ECODE_INVAL) from None
            CheckHvParamsOnNodes(self, [instance.primary_node],
                                 instance.hypervisor, filled_hv)
        self.primary_offline = self.pnode.offline
        if self.primary_offline:
            if not self.op.ignore_offline_nodes:
                raise errors.OpPrereqError(
                    "Can't start instance %s: its primary node %s is"
                    " offline" % (instance.name, self.pnode.name),
                    errors.ECODE_STATE)
            if self.op.hvparams or self.op.beparams:
                raise errors.OpPrereqError(
                    "Starting an instance with custom parameters while its"
                    " primary node is offline is not supported",
                    errors.ECODE_INVAL)
            self.LogWarning("Ignoring offline primary node")
            return
        self.running = InstanceRunning(self, instance)
        if not self.running:
            CheckNodeFreeMemory(self, instance.primary_node,
                                "starting instance %s" % instance.name,
                                filled_be[objects.BE_MAXMEM],
                                instance.hypervisor)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        if not self.op.no_remember:
            instance = SetAdminState(self, instance.uuid,
                                      objects.ADMINST_UP)
        if self.primary_offline:
            feedback_fn("Primary node offline, marked instance as started")
            return
        if self.running:
            feedback_fn("Instance %s is already running" % instance.name)
            return
        StartInstance(self, instance, self.hvparams, self.beparams,
                      self.op.startup_paused)


class LUInstanceShutdown(InstanceLU):
    """Stop an instance (and remember it should not run)."""

    HPATH = "instance-stop"

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"TIMEOUT": self.op.timeout}

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        if not self.op.force:
            CheckInstanceOnline(self.instance)
        if self.pnode.offline and not self.op.ignore_offline_nodes:
            raise errors.OpPrereqError(
                "Can't shut down instance %s: its primary node %s is"
                " offline" % (self.instance.name, self.pnode.name),
                errors.ECODE_STATE)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        if not self.op.no_remember and \
                instance.admin_state != objects.ADMINST_OFFLINE:
            instance = SetAdminState(
                self, instance.uuid, objects.ADMINST_DOWN,
                self.op.admin_state_source or objects.ADMIN_SOURCE)
        if self.pnode.offline:
            feedback_fn("Primary node offline, marked instance as stopped")
            return
        result = self.rpc.call_instance_shutdown(
            instance.primary_node,
            self.cfg.GetClusterInfo().InstanceRpcDict(instance),
            self.op.timeout)
        if result.fail_msg:
            self.LogWarning("Could not shutdown instance: %s",
                            result.fail_msg)
        ShutdownInstanceDisks(self, instance,
                              self.cfg.GetInstanceDisks(instance.uuid))


class LUInstanceReboot(InstanceLU):
    """Reboot an instance; a stopped one is started."""

    HPATH = "instance-reboot"

    def _ExtraHookEnv(self) -> dict[str, Any]:
        return {"IGNORE_SECONDARIES": self.op.ignore_secondaries,
                "REBOOT_TYPE": self.op.reboot_type,
                "SHUTDOWN_TIMEOUT": self.op.shutdown_timeout}

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        CheckInstanceOnline(self.instance)
        CheckNodeOnline(self, self.instance.primary_node)
        self.running = InstanceRunning(self, self.instance)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        cluster = self.cfg.GetClusterInfo()
        node = instance.primary_node
        if self.running and self.op.reboot_type in (
                constants.INSTANCE_REBOOT_SOFT,
                constants.INSTANCE_REBOOT_HARD):
            result = self.rpc.call_instance_reboot(
                node, cluster.InstanceRpcDict(instance),
                self.op.reboot_type, self.op.shutdown_timeout)
            result.Raise("Could not reboot instance")
        else:
            if self.running:
                result = self.rpc.call_instance_shutdown(
                    node, cluster.InstanceRpcDict(instance),
                    self.op.shutdown_timeout)
                result.Raise("Could not shutdown instance for full reboot")
                ShutdownInstanceDisks(self, instance,
                                      self.cfg.GetInstanceDisks(
                                          instance.uuid))
            else:
                self.LogInfo("Instance %s was already stopped, starting now",
                             instance.name)
            StartInstance(self, instance)
        SetAdminState(self, instance.uuid, objects.ADMINST_UP)
