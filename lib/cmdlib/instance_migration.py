"""LUs giving an instance another primary node: failover, migration and
the migration of all primary instances of a node (the checks before a
failover or migration are instance_migration_checks'; changing an
instance's node group is instance's, evacuating a node node_evacuate's).

The externally mirrored templates (DTS_EXT_MIRROR: diskless, sharedfile,
blockdev, ext) can change their primary node this way: their disks are
reachable from every node, so the target is any node the admin names.
The internally mirrored ones (DTS_INT_MIRROR: drbd) move to their
secondary node only, which holds the data already. The steps run through
the generic node RPCs, whatever the hypervisor:

* failover: instance_shutdown on the source, the disks shut down there,
  the configuration changed, then (if the instance is marked up) disks
  assembled and the instance started on the target;
* migration: migration_info on the source, disks assembled on the target,
  accept_instance on the target, instance_migrate on the source, polling
  instance_get_migration_status, then finalize_migration_src, the
  configuration change and finalize_migration_dst. A failure before the
  memory transfer completed is undone on both nodes (finalize with
  success=False, disks shut down on the target), so that the instance
  runs on its source node only. drbd disks are not assembled on the
  target but opened there (blockdev_open: the source still mirrors to
  them, Ganeti's dual-primary phase); once the memory is over, with no
  guest writing on either node, the source closes them (blockdev_close:
  the secondary role, refused unless the target has every write, which
  undoes the migration) and the target mirrors to it without a copy
  (drbd_attach_net) before its guest resumes;
* migration cleanup (``--cleanup``, after a failed migration): asks both
  nodes where the instance runs and makes the configuration say so.

Beyond Ganeti, an instance with ``file`` disks also migrates (not fails
over) when its hypervisor can copy disks while the instance runs
(CAN_MIGRATE_STORAGE): the disk files are created on the target (same
logical ids, the paths are per node), the hypervisor copies them during
instance_migrate, and after success the configuration names the target
for the disks too and the source files are removed; a failure removes
the target files and leaves everything on the source.
"""

import logging
import time
from typing import Any, Callable

from ganeti import constants, errors, locking, objects, opcodes
from ganeti.cmdlib.allocator import CheckIAllocatorOrNode
from ganeti.cmdlib.base import (
    ExpandNodeUuidAndName, LogicalUnit, ResultWithJobs)
from ganeti.cmdlib.cluster import HypervisorClass
from ganeti.cmdlib.instance_migration_checks import MigrationChecks
from ganeti.cmdlib.instance_utils import (
    AssembleInstanceDisks, GetInstanceInfoText, InstanceLU, RemoveDisks,
    SetDisksActive, SettledMirrorStatus, ShutdownInstanceDisks,
    StartInstance, WaitForSync)

# Seconds between two polls of the migration status, and between two
# progress reports
_MIGRATION_POLL_INTERVAL = 1.0
_MIGRATION_FEEDBACK_INTERVAL = 10.0
# Statuses of a migration still under way
_MIGRATION_ACTIVE = frozenset([constants.HV_MIGRATION_ACTIVE,
                               constants.HV_MIGRATION_POSTCOPY_ACTIVE])


def _CheckMigrationMode(op: Any) -> None:
    """Ganeti's rule for the legacy ``live`` next to ``mode``."""
    if op.live is not None and op.mode is not None:
        raise errors.OpPrereqError("Only one of the 'live' and 'mode'"
                                   " parameters are accepted",
                                   errors.ECODE_INVAL)


def _NodeAddress(node: objects.Node) -> str:
    """Where the nodes send an instance's memory (the replication net)."""
    return node.secondary_ip or node.primary_ip


class TLMigrateInstance(MigrationChecks):
    """Failover, migration and migration cleanup of one instance.

    Ganeti's tasklet of the same name; run by the failover and migrate
    LUs, which hold the instance and both nodes locked. ``failover`` and
    ``live`` are only final after CheckPrereq (a migration may fall back
    to a failover).
    """

    # Execution -------------------------------------------------------------

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self.feedback_fn = feedback_fn
        if self.failover:
            feedback_fn("Failover instance %s" % self.instance.name)
            self._ExecFailover()
        elif self.cleanup:
            feedback_fn("Migrating instance %s" % self.instance.name)
            self._ExecCleanup()
        else:
            feedback_fn("Migrating instance %s" % self.instance.name)
            self._ExecMigration()

    def _ExecFailover(self) -> None:
        """Stop on the source, switch the primary, start on the target."""
        lu = self.lu
        instance = self.instance
        source = self.source_node_uuid
        source_node = self.cfg.GetNodeInfo(source)
        target_name = self._NodeName(self.target_node_uuid)
        if self.int_mirror:
            if not (instance.disks_active or source_node.offline or
                    self.ignore_consistency):
                self._AssembleForCheck()
            self._CheckMirrorConsistency(source_node)
        self.feedback_fn("* shutting down instance on source node")
        logging.info("Shutting down instance %s on node %s", instance.name,
                     source_node.name)
        if source_node.offline:
            msg = "node is marked offline"
        else:
            msg = self.rpc.call_instance_shutdown(
                source, self._RpcInstance(), self.shutdown_timeout).fail_msg
        if msg:
            if not (self.ignore_consistency or source_node.offline):
                raise errors.OpExecError(
                    "Could not shutdown instance %s on node %s: %s" %
                    (instance.name, source_node.name, msg))
            lu.LogWarning("Could not shutdown instance %s on node %s,"
                          " proceeding anyway; please make sure node %s is"
                          " down; error details: %s", instance.name,
                          source_node.name, source_node.name, msg)
        disks = self._Disks()
        if disks and self.int_mirror:
            # Both roles end; a dead source only gets warnings
            self.feedback_fn("* deactivating the instance's disks on source"
                             " node")
            ShutdownInstanceDisks(lu, instance, disks)
        elif disks and not source_node.offline:
            self.feedback_fn("* deactivating the instance's disks on source"
                             " node")
            ShutdownInstanceDisks(lu, instance, disks, node_uuid=source)
        self._SwitchPrimary()
        if self.instance.admin_state == objects.ADMINST_UP:
            self.feedback_fn("* activating the instance's disks on target"
                             " node %s" % target_name)
            self.feedback_fn("* starting the instance on the target node %s"
                             % target_name)
            logging.info("Starting instance %s on node %s", instance.name,
                         target_name)
            StartInstance(lu, self.instance,
                          ignore_secondaries=self.int_mirror)
        elif self.instance.disks_active:
            self.instance = SetDisksActive(lu, self.instance.uuid, False)

    def _AssembleForCheck(self) -> None:
        """Assemble the pair of an instance whose disks are down.

        Only the primary's running mirror knows whether the secondary
        holds every write (unlike DRBD's metadata, an image records
        nothing of it), so Ganeti's skip of the check for such instances
        could make a stale copy the primary's. The resync is incremental
        (persistent bitmap); the failover's shutdown takes the pair down
        again.
        """
        self.feedback_fn("* activating the instance's disks to check their"
                         " consistency")
        disks = self._Disks()
        AssembleInstanceDisks(self.lu, self.instance, disks)
        WaitForSync(self.lu, self.instance, disks)

    def _CheckMirrorConsistency(self, source_node: objects.Node) -> None:
        """The target must hold all the data (Ganeti's disk consistency
        check); only the source's mirror knows, so a dead source makes
        it an error unless consistency is ignored."""
        self.feedback_fn("* checking disk consistency between source and"
                         " target")
        result = None
        if not source_node.offline:
            result = SettledMirrorStatus(self.rpc, source_node.uuid,
                                         self._Disks(),
                                         lambda status: status[5])
        for idx in range(len(self._Disks())):
            if result is not None and not result.fail_msg and \
                    not result.payload[idx][5]:
                continue
            if source_node.offline:
                self.feedback_fn("Node %s is offline, ignoring degraded disk"
                                 " %s on target node %s" %
                                 (source_node.name, idx,
                                  self._NodeName(self.target_node_uuid)))
            elif self.failover and not self.ignore_consistency:
                raise errors.OpExecError("Disk %s is degraded on target"
                                         " node, aborting failover" % idx)
            elif not self.failover:
                raise errors.OpExecError(
                    "Disk %s is degraded or not fully synchronized on target"
                    " node, aborting migration" % idx)

    def _CheckHvVersions(self) -> None:
        """Refuse hypervisor versions the hypervisor can't migrate between.
        """
        hv_name = self.instance.hypervisor
        nodes = [self.source_node_uuid, self.target_node_uuid]
        results = self.rpc.call_node_info(nodes, [], [hv_name])
        versions = []
        for node in nodes:
            results[node].Raise("Unable to retrieve node information from"
                                " node '%s'" % self._NodeName(node))
            info = (results[node].payload or {}).get("hv", {}).get(hv_name)
            versions.append((info or {}).get("hv_version"))
        src_version, dst_version = versions
        if src_version is None or dst_version is None or \
                src_version == dst_version:
            return
        self.feedback_fn("* warning: hypervisor version mismatch between"
                         " source (%s) and target (%s) node" %
                         (src_version, dst_version))
        if HypervisorClass(hv_name).VersionsSafeForMigration(src_version,
                                                             dst_version):
            self.feedback_fn("  migrating from hypervisor version %s to %s"
                             " should be safe" % (src_version, dst_version))
            return
        self.feedback_fn("  migrating from hypervisor version %s to %s is"
                         " likely unsupported" % (src_version, dst_version))
        if not self.ignore_hvversions:
            raise errors.OpExecError("Unsupported migration between"
                                     " hypervisor versions (%s to %s)" %
                                     (src_version, dst_version))
        self.feedback_fn("  continuing anyway (told to ignore version"
                         " mismatch)")

    def _AbortMigration(self) -> None:
        """Undo a started migration: the instance stays on the source.

        Failures are only logged: every step of the undo is tried.
        """
        target = self.target_node_uuid
        source = self.source_node_uuid
        inst = self._RpcInstance()
        msg = self.rpc.call_finalize_migration_dst(
            target, inst, self.migration_info, False).fail_msg
        if msg:
            logging.error("Aborting migration failed on target node %s: %s",
                          self._NodeName(target), msg)
        msg = self.rpc.call_finalize_migration_src(source, inst, False,
                                                   self.live).fail_msg
        if msg:
            logging.error("Aborting migration failed on source node %s: %s",
                          self._NodeName(source), msg)
        if self.int_mirror:
            msg = self.rpc.call_blockdev_close(target, self._Disks()).fail_msg
            if msg:
                logging.error("Closing the disks on target node %s failed:"
                              " %s", self._NodeName(target), msg)
        else:
            ShutdownInstanceDisks(self.lu, self.instance, self._Disks(),
                                  node_uuid=target)
        if self.target_disks:
            RemoveDisks(self.lu, self.instance.name, self.target_disks)

    def _Failed(self, what: str, msg: str) -> errors.OpExecError:
        """Abort the migration; the error to raise."""
        logging.error("Instance migration failed, trying to revert: %s",
                      msg)
        self.feedback_fn("Migration failed, aborting")
        self._AbortMigration()
        return errors.OpExecError("Could not %s instance %s: %s" %
                                  (what, self.instance.name, msg))

    def _BalloonIfNeeded(self) -> None:
        if self.current_mem <= self.tgt_free_mem:
            return
        instance = self.instance
        if not self.allow_runtime_changes:
            raise errors.OpExecError(
                "Memory ballooning not allowed and not enough free memory to"
                " fit instance %s on target node %s (have %dMB, need %dMB)" %
                (instance.name, self._NodeName(self.target_node_uuid),
                 self.tgt_free_mem, self.current_mem))
        self.feedback_fn("* setting instance memory to %s" %
                         self.tgt_free_mem)
        self.rpc.call_instance_balloon_memory(
            self.source_node_uuid, self._RpcInstance(),
            self.tgt_free_mem).Raise("Cannot modify instance runtime memory")

    def _WaitForMigration(self) -> None:
        """Poll the source until the memory transfer is over."""
        last_feedback = time.monotonic()
        while True:
            result = self.rpc.call_instance_get_migration_status(
                self.source_node_uuid, self._RpcInstance())
            status = result.payload if isinstance(result.payload, dict) \
                else {}
            state = status.get("status")
            if result.fail_msg or \
                    state not in constants.HV_MIGRATION_VALID_STATUSES or \
                    state in constants.HV_MIGRATION_FAILED_STATUSES:
                raise self._Failed("migrate", result.fail_msg or
                                   "hypervisor returned failure (status"
                                   " %s)" % state)
            if state not in _MIGRATION_ACTIVE:
                self.feedback_fn("* memory transfer complete")
                return
            now = time.monotonic()
            # Disks copied by the hypervisor go first, then the memory
            what = "disk copy" if "total_disk" in status else \
                "memory transfer"
            transferred, total = (
                (status.get("transferred_disk"), status.get("total_disk"))
                if "total_disk" in status else
                (status.get("transferred_ram"), status.get("total_ram")))
            if now - last_feedback >= _MIGRATION_FEEDBACK_INTERVAL and \
                    transferred is not None and total:
                self.feedback_fn("* %s progress: %.2f %%" %
                                 (what, 100.0 * transferred / total))
                last_feedback = now
            time.sleep(_MIGRATION_POLL_INTERVAL)

    def _CreateTargetDisks(self, disks: list[objects.Disk]) -> None:
        """The copies of file disks on the target, empty, same logical ids
        (the paths are per node); ``target_disks`` lists those created,
        for an undo."""
        instance = self.instance
        target = self.target_node_uuid
        info = GetInstanceInfoText(instance)
        for disk in disks:
            copy = disk.Copy()
            copy.nodes = [target]
            result = self.rpc.call_blockdev_create(
                target, copy.ToDict(), copy.size, instance.name, True, info,
                False)
            if result.fail_msg:
                RemoveDisks(self.lu, instance.name, self.target_disks)
                self.target_disks = []
                raise errors.OpExecError(
                    "Can't create block device %s on node %s for instance"
                    " %s: %s" % (disk.iv_name, self._NodeName(target),
                                 instance.name, result.fail_msg))
            self.target_disks.append(copy)

    def _ExecMigration(self) -> None:
        """Hand the running instance over to the target node."""
        lu = self.lu
        source = self.source_node_uuid
        target = self.target_node_uuid
        target_name = self._NodeName(target)
        target_ip = _NodeAddress(self.cfg.GetNodeInfo(target))
        self._CheckHvVersions()
        self._BalloonIfNeeded()
        result = self.rpc.call_migration_info(source, self._RpcInstance())
        if result.fail_msg:
            msg = ("Failed fetching source migration information from %s:"
                   " %s" % (self._NodeName(source), result.fail_msg))
            logging.error(msg)
            raise errors.OpExecError(msg)
        self.migration_info = result.payload
        disks = self._Disks()
        block_devices = []
        if disks and self.copy_disks:
            self.feedback_fn("* creating the instance's disks on %s" %
                             target_name)
            self._CreateTargetDisks(disks)
        if disks and self.int_mirror:
            self._CheckMirrorConsistency(self.cfg.GetNodeInfo(source))
            self.feedback_fn("* opening the instance's disks on %s" %
                             target_name)
            result = self.rpc.call_blockdev_open(target, disks)
            result.Raise("Cannot open the disks of instance %s on node %s" %
                         (self.instance.name, target_name))
            block_devices = [[disk.ToDict(), path]
                             for disk, path in zip(disks, result.payload)]
        elif disks:
            self.feedback_fn("* activating the instance's disks on %s" %
                             target_name)
            try:
                block_devices = AssembleInstanceDisks(
                    lu, self.instance, self.target_disks or disks,
                    node_uuid=target)
            except errors.OpExecError:
                RemoveDisks(lu, self.instance.name, self.target_disks)
                raise
        self.feedback_fn("* preparing %s to accept the instance" %
                         target_name)
        result = self.rpc.call_accept_instance(
            target, self._RpcInstance(), self.migration_info, target_ip,
            block_devices)
        if result.fail_msg:
            raise self._Failed("pre-migrate", result.fail_msg)
        self.feedback_fn("* migrating instance to %s" % target_name)
        result = self.rpc.call_instance_migrate(
            source, self.cfg.GetClusterName(), self._RpcInstance(),
            target_ip, self.live)
        if result.fail_msg:
            raise self._Failed("migrate", result.fail_msg)
        self.feedback_fn("* starting memory transfer")
        self._WaitForMigration()
        if disks and self.int_mirror:
            self.feedback_fn("* closing the instance's disks on %s" %
                             self._NodeName(source))
            result = self.rpc.call_blockdev_close(source, disks)
            if result.fail_msg:
                raise self._Failed("migrate", result.fail_msg)
        # The instance is on the target from here on: no more undo
        msg = self.rpc.call_finalize_migration_src(
            source, self._RpcInstance(), True, self.live).fail_msg
        if msg:
            logging.error("Instance migration succeeded, but finalization"
                          " failed on the source node: %s", msg)
            raise errors.OpExecError(
                "Could not finalize instance migration: %s; run 'gnt-instance"
                " migrate --cleanup -n %s %s' once the nodes are fixed" %
                (msg, target_name, self.instance.name))
        self._SwitchPrimary()
        if disks and self.int_mirror:
            self.feedback_fn("* mirroring the instance's disks to %s" %
                             self._NodeName(source))
            msg = self.rpc.call_drbd_attach_net(target, disks).fail_msg
            if msg:
                self.lu.LogWarning("The disks of instance %s run degraded"
                                   " (run 'gnt-instance activate-disks'):"
                                   " %s", self.instance.name, msg)
        msg = self.rpc.call_finalize_migration_dst(
            target, self._RpcInstance(), self.migration_info, True).fail_msg
        if msg:
            logging.error("Instance migration succeeded, but finalization"
                          " failed on the target node: %s", msg)
            raise errors.OpExecError("Could not finalize instance migration:"
                                     " %s" % msg)
        if disks and not self.int_mirror:
            self.feedback_fn("* deactivating the instance's disks on %s" %
                             self._NodeName(source))
            ShutdownInstanceDisks(lu, self.instance, disks, node_uuid=source)
        if self.copy_disks and disks:
            self.feedback_fn("* removing the instance's disks on %s" %
                             self._NodeName(source))
            # The disks as they were: on the source only
            RemoveDisks(lu, self.instance.name, disks)
        self.feedback_fn("* done")

    def _CleanupMirror(self, demoted: str,
                       disks: list[objects.Disk]) -> None:
        """drbd after an interrupted migration: the node without the
        instance serves its image (if its peer is in sync), the other
        mirrors to it; else activate-disks has to repair the pair. The
        node running the instance may have closed its disks already (an
        interruption after the source's close): they are opened again."""
        running = self.instance.primary_node
        msg = self.rpc.call_blockdev_close(demoted, disks).fail_msg
        if not msg:
            msg = self.rpc.call_blockdev_open(running, disks).fail_msg
        if not msg:
            msg = self.rpc.call_drbd_attach_net(running, disks).fail_msg
        if msg:
            self.lu.LogWarning("Could not restore the mirror of instance %s"
                               " (run 'gnt-instance activate-disks'): %s",
                               self.instance.name, msg)

    def _ExecCleanup(self) -> None:
        """Make the configuration follow where the instance really runs."""
        instance = self.instance
        source = self.source_node_uuid
        target = self.target_node_uuid
        self.feedback_fn("* checking where the instance actually runs (if"
                         " this hangs, the hypervisor might be in a bad"
                         " state)")
        cluster = self.cfg.GetClusterInfo()
        results = self.rpc.call_instance_list(
            [source, target], [instance.hypervisor], cluster.hvparams)
        for node in (source, target):
            results[node].Raise("Can't contact node %s" %
                                self._NodeName(node))
        on_source = instance.name in results[source].payload
        on_target = instance.name in results[target].payload
        if on_source and on_target:
            raise errors.OpExecError(
                "Instance seems to be running on two nodes, or the"
                " hypervisor is confused; you will have to ensure manually"
                " that it runs only on one and restart this operation")
        if not (on_source or on_target):
            raise errors.OpExecError(
                "Instance does not seem to be running at all; in this case"
                " it's safer to repair by running 'gnt-instance stop' to"
                " ensure disk shutdown, and then restarting it")
        disks = self._Disks()
        if on_target:
            self.feedback_fn("* instance running on secondary node (%s),"
                             " updating config" % self._NodeName(target))
            self._SwitchPrimary()
            demoted = source
            # Copied disks: the source's are the old ones
            stale = disks
        else:
            self.feedback_fn("* instance confirmed to be running on its"
                             " primary node (%s)" % self._NodeName(source))
            demoted = target
            # Drop what an interrupted migration left on the target
            msg = self.rpc.call_finalize_migration_dst(
                target, self._RpcInstance(), "", False).fail_msg
            if msg:
                self.lu.LogWarning("Could not clean up the migration on"
                                   " node %s: %s", self._NodeName(target),
                                   msg)
            stale = []
            for disk in disks:
                copy = disk.Copy()
                copy.nodes = [target]
                stale.append(copy)
        if disks and self.int_mirror:
            self._CleanupMirror(demoted, disks)
        elif disks:
            ShutdownInstanceDisks(self.lu, self.instance, disks,
                                  node_uuid=demoted)
        if self.copy_disks and disks:
            self.feedback_fn("* removing the instance's disks on %s, if"
                             " any" % self._NodeName(demoted))
            RemoveDisks(self.lu, self.instance.name, stale)
        self.feedback_fn("* done")


class _MigrationLU(InstanceLU):
    """Locks the instance, its nodes and the target node (both node
    levels) and runs a TLMigrateInstance built by ``_Migrater``."""

    def ExpandNames(self) -> None:
        super().ExpandNames()
        if self.op.target_node is not None:
            self.op.target_node_uuid, self.op.target_node = \
                ExpandNodeUuidAndName(self.cfg, self.op.target_node_uuid,
                                      self.op.target_node)
        self._migrater = self._Migrater()

    def _Migrater(self) -> TLMigrateInstance:
        raise NotImplementedError

    def DeclareLocks(self, level: int) -> None:
        super().DeclareLocks(level)
        if level not in (locking.LEVEL_NODE, locking.LEVEL_NODE_RES):
            return
        if self.op.target_node_uuid is None:
            # The allocator may choose any node (unneeded locks are
            # released once it has)
            self.needed_locks[level] = locking.ALL_SET
        elif self.op.target_node_uuid not in self.needed_locks[level]:
            self.needed_locks[level] = (list(self.needed_locks[level]) +
                                        [self.op.target_node_uuid])

    def CheckPrereq(self) -> None:
        super().CheckPrereq()
        self._migrater.CheckPrereq()

    def _PlacementHookEnv(self) -> dict[str, Any]:
        migrater = self._migrater
        return {
            "OLD_PRIMARY": self.cfg.GetNodeNames(
                [migrater.source_node_uuid])[0],
            "NEW_PRIMARY": self.cfg.GetNodeNames(
                [migrater.target_node_uuid])[0],
            # Only internally mirrored disks have secondaries
            "OLD_SECONDARY": "",
            "NEW_SECONDARY": "",
        }

    def Exec(self, feedback_fn: Callable[[str], None]) -> None:
        self._migrater.Exec(feedback_fn)


class LUInstanceFailover(_MigrationLU):
    """Stop an instance, change its primary node and start it there."""

    HPATH = "instance-failover"

    def CheckArguments(self) -> None:
        if self.op.cleanup:
            raise errors.OpPrereqError(
                "A failover can't be cleaned up; to recover from a failed"
                " migration use 'gnt-instance migrate --cleanup'",
                errors.ECODE_INVAL)

    def _Migrater(self) -> TLMigrateInstance:
        op = self.op
        return TLMigrateInstance(
            self, cleanup=False, failover=True, fallback=False,
            ignore_consistency=op.ignore_consistency,
            allow_runtime_changes=True,
            shutdown_timeout=op.shutdown_timeout,
            ignore_ipolicy=op.ignore_ipolicy, ignore_hvversions=False)

    def _ExtraHookEnv(self) -> dict[str, Any]:
        env = self._PlacementHookEnv()
        env.update({
            "IGNORE_CONSISTENCY": self.op.ignore_consistency,
            "SHUTDOWN_TIMEOUT": self.op.shutdown_timeout,
            "FAILOVER_CLEANUP": self.op.cleanup,
        })
        return env

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        # The source may be down: it only runs the post hooks
        nodes = [self.cfg.GetMasterNode(), self._migrater.target_node_uuid]
        return nodes, nodes + [self._migrater.source_node_uuid]


class LUInstanceMigrate(_MigrationLU):
    """Move a running instance to another node without stopping it."""

    HPATH = "instance-migrate"

    def CheckArguments(self) -> None:
        _CheckMigrationMode(self.op)

    def _Migrater(self) -> TLMigrateInstance:
        op = self.op
        return TLMigrateInstance(
            self, cleanup=op.cleanup, failover=False,
            fallback=op.allow_failover, ignore_consistency=False,
            allow_runtime_changes=op.allow_runtime_changes,
            shutdown_timeout=constants.DEFAULT_SHUTDOWN_TIMEOUT,
            ignore_ipolicy=op.ignore_ipolicy,
            ignore_hvversions=op.ignore_hvversions)

    def _ExtraHookEnv(self) -> dict[str, Any]:
        env = self._PlacementHookEnv()
        env.update({
            "MIGRATE_LIVE": self._migrater.live,
            "MIGRATE_CLEANUP": self.op.cleanup,
            "ALLOW_RUNTIME_CHANGES": self.op.allow_runtime_changes,
        })
        return env

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        nodes = [self.cfg.GetMasterNode(), self._migrater.source_node_uuid,
                 self._migrater.target_node_uuid]
        return nodes, nodes


# Migration of a node's primary instances -------------------------------------

class LUNodeMigrate(LogicalUnit):
    """Migrate every primary instance of a node away, one job each."""

    HPATH = "node-migrate"
    HTYPE = constants.HTYPE_NODE
    REQ_BGL = False

    def CheckArguments(self) -> None:
        _CheckMigrationMode(self.op)

    def ExpandNames(self) -> None:
        self.op.node_uuid, self.op.node_name = ExpandNodeUuidAndName(
            self.cfg, self.op.node_uuid, self.op.node_name)
        if self.op.target_node is not None:
            self.op.target_node_uuid, self.op.target_node = \
                ExpandNodeUuidAndName(self.cfg, self.op.target_node_uuid,
                                      self.op.target_node)
            if self.op.target_node_uuid == self.op.node_uuid:
                raise errors.OpPrereqError(
                    "Can't migrate the instances of node %s to the node"
                    " itself" % self.op.node_name, errors.ECODE_INVAL)
        self.share_locks[locking.LEVEL_NODE] = 1
        self.needed_locks = {locking.LEVEL_NODE: [self.op.node_uuid]}

    def CheckPrereq(self) -> None:
        self.instance_uuids = self.cfg.GetNodeInstances(self.op.node_uuid)[0]
        # What the admin named goes to every migration (Ganeti's rule); the
        # cluster's default allocator only to those that need a new node:
        # a drbd instance moves to its secondary and refuses an allocator
        self.requested = (self.op.iallocator, self.op.target_node)
        if any(self.cfg.GetInstanceDiskTemplate(uuid) not in
               constants.DTS_INT_MIRROR for uuid in self.instance_uuids):
            CheckIAllocatorOrNode(self, "iallocator", "target_node")

    def BuildHooksEnv(self) -> dict[str, Any]:
        return {"NODE_NAME": self.op.node_name,
                "ALLOW_RUNTIME_CHANGES": self.op.allow_runtime_changes}

    def BuildHooksNodes(self) -> tuple[list[str], list[str]]:
        master = self.cfg.GetMasterNode()
        return [master], [master]

    def Exec(self, feedback_fn: Callable[[str], None]) -> ResultWithJobs:
        op = self.op
        jobs = []
        for uuid in self.instance_uuids:
            iallocator, target = (
                self.requested if self.cfg.GetInstanceDiskTemplate(uuid) in
                constants.DTS_INT_MIRROR else (op.iallocator, op.target_node))
            jobs.append([opcodes.OpInstanceMigrate(
                instance_name=self.cfg.GetInstanceInfo(uuid).name,
                mode=op.mode, live=op.live, target_node=target,
                allow_runtime_changes=op.allow_runtime_changes,
                ignore_ipolicy=op.ignore_ipolicy, iallocator=iallocator)])
        return ResultWithJobs(jobs)
