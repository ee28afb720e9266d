"""LUs starting, stopping, rebooting and reinstalling instances, and
describing their consoles."""

from typing import Any, Callable

from ganeti import constants, errors, locking, objects
from ganeti.cmdlib import operating_system
from ganeti.cmdlib.base import ExpandInstanceUuidAndName, NoHooksLU
from ganeti.cmdlib.cluster import CheckHvParamsOnNodes, HypervisorClass
from ganeti.cmdlib.instance_utils import (
    INSTANCE_DOWN, AssembledForOS, CheckInstanceOnline, CheckInstanceState,
    CheckMinMaxMem, CheckNodeFreeMemory, CheckNodeOnline, ConvertBeParams,
    ConvertHvParams, GuestRunning, InstanceLU, InstanceRunning,
    SetAdminState, SetDisksActive, ShutdownInstanceDisks, StartInstance)

# What InstanceConsole.kind may be
_CONSOLE_KINDS = frozenset([constants.CONS_MESSAGE, constants.CONS_SSH,
                            constants.CONS_VNC, constants.CONS_SPICE])


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
        self.running = GuestRunning(self, instance)
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
        SetDisksActive(self, instance.uuid, False)


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
        self.running = GuestRunning(self, self.instance)

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


class LUInstanceReinstall(InstanceLU):
    """Run the OS create script again on a stopped instance's disks.

    Everything on the disks is overwritten. A new OS, and changed OS
    parameters, are stored with the instance.
    """

    HPATH = "instance-reinstall"

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        instance = self.instance
        CheckNodeOnline(self, instance.primary_node)
        if not instance.disks:
            raise errors.OpPrereqError("Instance '%s' has no disks" %
                                       instance.name, errors.ECODE_INVAL)
        CheckInstanceState(self, instance, INSTANCE_DOWN, "cannot reinstall")
        self.os_name = self.op.os_type or instance.os
        self.osparams = operating_system.UpdateParams(
            instance.osparams or {}, self.op.osparams or {})
        self.osparams_private = operating_system.UpdateParams(
            instance.osparams_private or {}, self.op.osparams_private or {})
        if not self.os_name:
            if self.op.osparams or self.op.osparams_private or \
                    self.op.osparams_secret:
                raise errors.OpPrereqError("OS parameters given without an"
                                           " OS", errors.ECODE_INVAL)
            return
        filled = self.cfg.GetClusterInfo().SimpleFillOS(
            self.os_name, self.osparams, self.osparams_private)
        filled.update(self.op.osparams_secret or {})
        operating_system.CheckOSParams(
            self, True, self.cfg.GetInstanceNodes(instance.uuid),
            self.os_name, filled, self.op.force_variant)

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        instance = self.instance
        if not self.os_name:
            self.LogInfo("No OS scripts specified or found in the instance's"
                         " configuration, nothing to install")
            return
        if self.op.os_type is not None:
            feedback_fn("Changing OS scripts to '%s'..." % self.op.os_type)
        instance.os = self.os_name
        instance.osparams = self.osparams
        instance.osparams_private = self.osparams_private
        self.cfg.Update(instance)
        feedback_fn("* running the instance OS create scripts...")
        with AssembledForOS(self, instance,
                            self.cfg.GetInstanceDisks(instance.uuid),
                            self.op.osparams_secret) as os_instance:
            result = self.rpc.call_instance_os_add(
                instance.primary_node, os_instance, True,
                self.op.debug_level or 0)
            result.Raise("Could not install OS for instance '%s' on node"
                         " '%s'" % (instance.name, self.pnode.name))


class LUInstanceConsole(NoHooksLU):
    """How to reach the console of a running instance (the hypervisor's
    InstanceConsole fields).

    Only reads: the instance lock is shared and no node is locked.
    """

    REQ_BGL = False

    def ExpandNames(self) -> None:
        self.op.instance_uuid, self.op.instance_name = \
            ExpandInstanceUuidAndName(self.cfg, self.op.instance_uuid,
                                      self.op.instance_name)
        self.needed_locks = {locking.LEVEL_INSTANCE: [self.op.instance_uuid]}
        self.share_locks[locking.LEVEL_INSTANCE] = 1

    def CheckPrereq(self) -> None:
        self.instance = self.cfg.GetInstanceInfo(self.op.instance_uuid)
        if self.instance is None:
            raise errors.OpPrereqError("Instance '%s' not known" %
                                       self.op.instance_name,
                                       errors.ECODE_NOENT)
        CheckNodeOnline(self, self.instance.primary_node)

    def Exec(self, feedback_fn: Callable[[str], None]) -> dict[str, Any]:
        instance = self.instance
        if not InstanceRunning(self, instance):
            state = {objects.ADMINST_UP: constants.INSTST_ERRORDOWN,
                     objects.ADMINST_DOWN: constants.INSTST_ADMINDOWN}.get(
                         instance.admin_state, constants.INSTST_ADMINOFFLINE)
            raise errors.OpExecError("Instance %s is not running (state %s)" %
                                     (instance.name, state))
        node = self.cfg.GetNodeInfo(instance.primary_node)
        group = self.cfg.GetNodeGroup(node.group)
        result = self.rpc.call_instance_console_info(
            node.uuid, self.cfg.GetClusterInfo().InstanceRpcDict(instance),
            node.ToDict(), group.ToDict() if group is not None else None)
        result.Raise("Can't get the console of instance %s" % instance.name)
        console = result.payload
        if not isinstance(console, dict) or \
                console.get("kind") not in _CONSOLE_KINDS:
            raise errors.OpExecError("Node %s described the console of"
                                     " instance %s wrongly: %r" %
                                     (node.name, instance.name, console))
        return console
