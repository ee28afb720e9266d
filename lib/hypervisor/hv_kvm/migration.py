"""Migration of KVM instances.

The target runs the source's saved command line on its own block
devices, with -incoming; QEMU starts the guest there by itself once
the state has arrived (a non-live migration's guest arrives paused
and is resumed by FinalizeMigrationDst). Until then the source guest
runs, and after it the source QEMU is stopped ("postmigrate"), so
the guest runs on one node at a time. The target's saved runtime
carries the "incoming" URI until FinalizeMigrationDst: an undo kills
only a QEMU started for the migration.

Local disks (IsLocalDisk: file, plain) are copied first: the target
QEMU, started paused (-S), exports its new empty images over NBD
(NbdPort); the source mirrors each disk there (drive-mirror, sync
full, write-blocking, so that once a job is ready every guest write
reaches both sides). GetMigrationStatus reports the copy and starts
the memory transfer once every mirror is ready. After the switch
FinalizeMigrationSource ends the mirrors (block-job-cancel after
ready: the target keeps a consistent copy, the source stays on its
own images) before the target, its NBD server stopped, resumes the
guest; on failure the mirrors are abandoned and the guest goes on on
the source's images.
"""

import json
import logging
import os
import re
import time
from typing import Any

from ganeti import constants, errors, netutils, objects
from ganeti.hypervisor.hv_kvm.monitor import _MIB, QmpConnection, QmpError
from ganeti.hypervisor.hv_kvm.processes import KVMProcesses
from ganeti.hypervisor.hv_kvm.runtime import (
    IsLocalDisk, _CheckDrivePath, _DriveFile)
from ganeti.parameters.hypervisors import HV_KVM_FLAG, HV_MIGRATION_DOWNTIME
from ganeti.parameters.hypervisors import KVM_FLAG_ACCEL as _KVM_FLAG_ACCEL

# How long a cancelled outgoing migration, or the last device state of
# an incoming one, may take to settle
_MIGRATION_SETTLE_TIMEOUT = 30.0
# QEMU's query-migrate statuses as Ganeti's; any other ("none": nothing
# was started) is a failure
_MIGRATION_STATUSES = {
    "setup": constants.HV_MIGRATION_ACTIVE,
    "active": constants.HV_MIGRATION_ACTIVE,
    "pre-switchover": constants.HV_MIGRATION_ACTIVE,
    "device": constants.HV_MIGRATION_ACTIVE,
    "wait-unplug": constants.HV_MIGRATION_ACTIVE,
    "postcopy-active": constants.HV_MIGRATION_POSTCOPY_ACTIVE,
    "completed": constants.HV_MIGRATION_COMPLETED,
    "cancelling": constants.HV_MIGRATION_CANCELLED,
    "cancelled": constants.HV_MIGRATION_CANCELLED,
    "failed": constants.HV_MIGRATION_FAILED,
}
# query-migrate statuses of an outgoing migration still under way
_MIGRATION_UNDER_WAY = frozenset(["setup", "active", "pre-switchover",
                                  "device", "wait-unplug", "postcopy-active",
                                  "cancelling"])
# Statuses of QEMU jobs (query-jobs) that are over
_JOBS_ENDED = frozenset(["concluded", "null"])
# QEMU job id of the mirror copying a disk (by its drive id) to the
# target of a migration
_MIRROR_JOB_PREFIX = "migrate-"


def NbdPort(hvparams: dict) -> int:
    """The port the target of a migration exports the disks to copy
    on: the one after the migration port."""
    return hvparams[objects.HV_MIGRATION_PORT] % 65535 + 1


class KVMMigration(KVMProcesses):
    """Sending and receiving running instances (see the module)."""

    @classmethod
    def LiveMigrationUnsafe(cls, hvparams: dict) -> str | None:
        # Measured with QEMU 7.2 under host load: about one live
        # migration in 15 of an active guest left pages on the target
        # that differed from the stopped source's (and a kernel oops),
        # none of 60 non-live ones. Presumably a store that passed TCG's
        # TLB check before the migration thread re-armed dirty tracking
        # lands after its page was sent, unmarked.
        if _KVM_FLAG_ACCEL[hvparams[HV_KVM_FLAG]] == "kvm":
            return None
        return ("without hardware acceleration (kvm_flag=%s) QEMU's"
                " emulated dirty-page tracking can lose guest memory"
                " writes during a live migration" % hvparams[HV_KVM_FLAG])

    def MigrationInfo(self, instance: objects.Instance) -> str:
        """The saved runtime, serialised: the target reproduces it."""
        name = instance.name
        runtime = self.LoadRuntime(name)
        if self._Pid(name) is None or runtime is None:
            raise errors.HypervisorError("Instance %s is not running" % name)
        for key in ("incoming", "nbd", "pending_migration"):
            runtime.pop(key, None)
        return json.dumps(runtime, sort_keys=True)

    @staticmethod
    def _ParseMigrationInfo(name: str, info: Any) -> dict:
        try:
            runtime = json.loads(info)
        except (TypeError, ValueError):
            runtime = None
        if not (isinstance(runtime, dict) and runtime.get("name") == name
                and isinstance(runtime.get("cmd"), list)
                and all(isinstance(arg, str) for arg in runtime["cmd"])
                and isinstance(runtime.get("disks"), list)
                and isinstance(runtime.get("nics"), list)
                and all(isinstance(nic, dict) and
                        isinstance(nic.get("tap"), str)
                        for nic in runtime["nics"])):
            raise errors.HypervisorError(
                "Invalid migration data for instance %s: %r" %
                (name, info if len(str(info)) < 200 else
                 str(info)[:200] + "..."))
        return runtime

    def _LocaliseRuntime(self, instance: objects.Instance, runtime: dict,
                         block_devices: list[tuple[objects.Disk, str]]
                         ) -> dict:
        """The source's runtime with this node's files, disk paths and
        tap names.

        The source's hypervisor directory is known from its pid file
        (<root>/pid/<instance>), its socket directory from the QMP socket
        (unix:<dir>/<instance>.qmp,...); nodes normally share both,
        virtual clusters don't.
        """
        name = runtime["name"]
        cmd = runtime["cmd"]

        def _Option(flag: str) -> str:
            try:
                return cmd[cmd.index(flag) + 1]
            except (ValueError, IndexError):
                return ""

        piddir, pidname = os.path.split(_Option("-pidfile"))
        qmp = _Option("-qmp")
        ctrldir, qmpname = os.path.split(qmp[len("unix:"):].split(",")[0])
        if pidname != name or os.path.basename(piddir) != "pid" or \
                not qmp.startswith("unix:") or qmpname != name + ".qmp":
            raise errors.HypervisorError(
                "Invalid migration data for instance %s: pid file %r, QMP"
                " %r" % (name, _Option("-pidfile"), qmp))
        if len(block_devices) != len(runtime["disks"]):
            raise errors.HypervisorError(
                "Instance %s runs with %d disks, %d were given for the"
                " migration" % (name, len(runtime["disks"]),
                                len(block_devices)))
        # One pass, so that a translated path is not translated again
        moves = {ctrldir + "/": self._dirs["ctrl"] + "/",
                 os.path.dirname(piddir) + "/": self._root.rstrip("/") + "/"}
        pattern = re.compile("|".join(re.escape(old) for old in
                                      sorted(moves, key=len, reverse=True)))
        cmd = [pattern.sub(lambda match: moves[match.group(0)], arg)
               for arg in cmd]
        disks = []
        files = {}
        for entry, (disk, path) in zip(runtime["disks"], block_devices):
            _CheckDrivePath(name, path)
            files["id=" + entry["id"]] = _DriveFile(disk, path)
            disks.append(dict(entry, path=path))
        for index, arg in enumerate(cmd[1:], start=1):
            if cmd[index - 1] != "-drive":
                continue
            options = arg.split(",")
            drive_id = [opt for opt in options if opt in files]
            if drive_id:
                cmd[index] = ",".join(
                    files[drive_id[0]] if opt.startswith("file=") else opt
                    for opt in options)
        taps = {nic["tap"]: self.TapName(instance, index)
                for index, nic in enumerate(runtime["nics"])}
        for index, arg in enumerate(cmd[1:], start=1):
            if cmd[index - 1] != "-netdev":
                continue
            options = arg.split(",")
            tap = [taps[opt[len("ifname="):]] for opt in options
                   if opt.startswith("ifname=") and
                   opt[len("ifname="):] in taps]
            if tap:
                cmd[index] = ",".join(
                    "ifname=%s" % tap[0] if opt.startswith("ifname=") else
                    "script=%s" % self._IfupScript(tap[0])
                    if opt.startswith("script=") else opt
                    for opt in options)
        nics = [dict(nic, tap=taps[nic["tap"]]) for nic in runtime["nics"]]
        return dict(runtime, cmd=cmd, disks=disks, nics=nics)

    def AcceptInstance(self, instance: objects.Instance, info: str,
                       target: str,
                       block_devices: list[tuple[objects.Disk, str]]
                       ) -> None:
        """Start QEMU waiting for the instance on ``target`` (this node's
        address) and the migration port."""
        name = instance.name
        if self._Pid(name) is not None:
            raise errors.HypervisorError(
                "Can't accept instance %s: already running" % name)
        runtime = self._LocaliseRuntime(
            instance, self._ParseMigrationInfo(name, info), block_devices)
        local = self._LocalDisks(runtime, block_devices)
        port = instance.hvparams[objects.HV_MIGRATION_PORT]
        runtime["incoming"] = "tcp:" + netutils.FormatAddress((target, port))
        if local:
            runtime["nbd"] = netutils.FormatAddress(
                (target, NbdPort(instance.hvparams)))
        self._SaveRuntime(runtime)
        # Paused until the source has ended its mirrors, or the drbd disks
        # mirror from here (FinalizeMigrationDst resumes it)
        paused = bool(local) or any(
            disk.dev_type in constants.DTS_INT_MIRROR
            for disk, _ in block_devices)
        try:
            self._ExecuteRuntime(runtime, paused, runtime["incoming"])
            if local:
                self._ExportDisks(name, target,
                                  NbdPort(instance.hvparams), local)
        except errors.HypervisorError:
            self._Kill(name)
            self._RemoveRuntimeFiles(name, keep_runtime=False)
            raise

    @staticmethod
    def _LocalDisks(runtime: dict,
                    block_devices: list[tuple[objects.Disk, str]]
                    ) -> list[str]:
        """Ids of the disks to copy; the source must agree (a QEMU
        started before it recorded local disks would not copy them)."""
        local = []
        for entry, (disk, _) in zip(runtime["disks"], block_devices):
            if IsLocalDisk(disk.dev_type) != bool(entry.get("local")):
                raise errors.HypervisorError(
                    "Disk %s of instance %s is %s here but %s on the source"
                    " node; restart the instance before migrating it" %
                    (entry["id"], runtime["name"],
                     "local" if IsLocalDisk(disk.dev_type) else "shared",
                     "local" if entry.get("local") else "shared"))
            if entry.get("local"):
                local.append(entry["id"])
        return local

    def _ExportDisks(self, name: str, address: str, port: int,
                     disk_ids: list[str]) -> None:
        """Serve the new images over NBD for the source's mirrors."""
        with QmpConnection(self.QmpSocket(name)) as qmp:
            qmp.Execute("nbd-server-start", {"addr": {
                "type": "inet",
                "data": {"host": address, "port": str(port)}}})
            for disk_id in disk_ids:
                qmp.Execute("nbd-server-add", {"device": disk_id,
                                               "writable": True})
        logging.info("Instance %s: disks %s exported on %s for the"
                     " migration", name, ", ".join(disk_ids),
                     netutils.FormatAddress((address, port)))

    def MigrateInstance(self, cluster_name: str,
                        instance: objects.Instance, target: str,
                        live: bool) -> None:
        """Start sending the instance (QMP migrate returns at once); a
        non-live migration stops the guest first.

        With local disks only their mirrors start here: the memory
        follows once they are ready (GetMigrationStatus).
        """
        name = instance.name
        runtime = self.LoadRuntime(name)
        if self._Pid(name) is None or runtime is None:
            raise errors.HypervisorError(
                "Cannot migrate instance %s: not running" % name)
        hvp = instance.hvparams
        uri = "tcp:" + netutils.FormatAddress(
            (target, hvp[objects.HV_MIGRATION_PORT]))
        parameters = {
            "max-bandwidth": hvp[objects.HV_MIGRATION_BANDWIDTH] * _MIB,
            "downtime-limit": hvp[HV_MIGRATION_DOWNTIME]}
        local = [disk["id"] for disk in runtime["disks"] if disk.get("local")]
        with QmpConnection(self.QmpSocket(name)) as qmp:
            status = qmp.Execute("query-migrate").get("status")
            if status not in _MIGRATION_UNDER_WAY and \
                    any(job["status"] not in _JOBS_ENDED
                        for job in self._MirrorJobs(qmp).values()):
                status = "copying disks"
            if status in _MIGRATION_UNDER_WAY or status == "copying disks":
                raise errors.HypervisorError(
                    "Cannot migrate instance %s: a migration is under way"
                    " (%s)" % (name, status))
            self._EndMirrors(qmp, name, True)
            if not live:
                qmp.Execute("stop")
            try:
                if local:
                    self._StartMirrors(qmp, name, local, target,
                                       NbdPort(hvp))
                else:
                    self._StartMemoryMigration(qmp, parameters, uri)
            except QmpError:
                if local:
                    self._EndMirrors(qmp, name, True)
                if not live:
                    qmp.Execute("cont")
                raise
        if local:
            runtime["pending_migration"] = {"uri": uri,
                                            "parameters": parameters}
            self._SaveRuntime(runtime)
            logging.info("Copying disks %s of instance %s to %s before its"
                         " migration (live=%s)", ", ".join(local), name,
                         target, live)
        else:
            logging.info("Migrating instance %s to %s (live=%s)", name, uri,
                         live)

    @staticmethod
    def _StartMemoryMigration(qmp: QmpConnection, parameters: dict,
                              uri: str) -> None:
        qmp.Execute("migrate-set-parameters", parameters)
        qmp.Execute("migrate", {"uri": uri})

    @staticmethod
    def _StartMirrors(qmp: QmpConnection, name: str, disk_ids: list[str],
                      target: str, port: int) -> None:
        """Mirror each disk into the target's NBD export of the same
        name; write-blocking, so that a ready mirror has every write."""
        address = netutils.FormatAddress((target, port))
        for disk_id in disk_ids:
            qmp.Execute("drive-mirror", {
                "job-id": _MIRROR_JOB_PREFIX + disk_id, "device": disk_id,
                "target": "nbd://%s/%s" % (address, disk_id),
                "format": "raw", "mode": "existing", "sync": "full",
                "copy-mode": "write-blocking", "auto-dismiss": False})

    @staticmethod
    def _MirrorJobs(qmp: QmpConnection) -> dict[str, dict]:
        """query-jobs entries of the migration mirrors, by job id."""
        return {job["id"]: job for job in qmp.Execute("query-jobs")
                if job["id"].startswith(_MIRROR_JOB_PREFIX)}

    def _EndMirrors(self, qmp: QmpConnection, name: str,
                    force: bool) -> list[str]:
        """End and dismiss the migration mirrors; their errors.

        Without ``force`` a ready mirror first copies what is left, so
        that the target holds the disk as it is now.
        """
        for job_id, job in self._MirrorJobs(qmp).items():
            if job["status"] in _JOBS_ENDED:
                continue
            try:
                qmp.Execute("block-job-cancel", {"device": job_id,
                                                 "force": force})
            except QmpError as err:
                # It may have ended meanwhile: seen below
                logging.warning("Instance %s: %s", name, err)
        deadline = time.monotonic() + _MIGRATION_SETTLE_TIMEOUT
        jobs = self._MirrorJobs(qmp)
        while any(job["status"] not in _JOBS_ENDED for job in jobs.values()):
            if time.monotonic() >= deadline:
                raise errors.HypervisorError(
                    "The disk mirrors of instance %s did not stop: %s" %
                    (name, ", ".join("%s %s" % (job_id, job["status"])
                                     for job_id, job in sorted(jobs.items()))))
            time.sleep(0.05)
            jobs = self._MirrorJobs(qmp)
        problems = []
        for job_id, job in sorted(jobs.items()):
            if job.get("error"):
                problems.append("%s: %s" % (job_id[len(_MIRROR_JOB_PREFIX):],
                                            job["error"]))
            if job["status"] == "concluded":
                qmp.Execute("job-dismiss", {"id": job_id})
        return problems

    def _MirrorStatus(self, runtime: dict) -> dict:
        """Progress of the disk copy before the memory transfer; the
        memory transfer starts once every mirror is ready."""
        name = runtime["name"]
        pending = runtime["pending_migration"]
        expected = [_MIRROR_JOB_PREFIX + disk["id"]
                    for disk in runtime["disks"] if disk.get("local")]
        with QmpConnection(self.QmpSocket(name)) as qmp:
            jobs = self._MirrorJobs(qmp)
            mine = [jobs.get(job_id, {"status": "null"})
                    for job_id in expected]
            result: dict[str, Any] = {
                "status": constants.HV_MIGRATION_ACTIVE,
                "transferred_disk": sum(job.get("current-progress", 0)
                                        for job in mine),
                "total_disk": sum(job.get("total-progress", 0)
                                  for job in mine)}
            failed = ["%s: %s" % (job_id[len(_MIRROR_JOB_PREFIX):],
                                  job.get("error", "the mirror ended"))
                      for job_id, job in zip(expected, mine)
                      if job["status"] in _JOBS_ENDED]
            if failed:
                result["status"] = constants.HV_MIGRATION_FAILED
                result["error"] = ("Copying the disks to the target failed:"
                                   " %s" % "; ".join(failed))
                return result
            if all(job["status"] == "ready" for job in mine):
                self._StartMemoryMigration(qmp, pending["parameters"],
                                           pending["uri"])
                del runtime["pending_migration"]
                self._SaveRuntime(runtime)
                logging.info("Disks of instance %s copied, migrating it to"
                             " %s", name, pending["uri"])
        return result

    def GetMigrationStatus(self, instance: objects.Instance) -> dict:
        """query-migrate as HV_MIGRATION_*, with the RAM sent so far and
        in all (bytes), and QEMU's timings (ms) once known; while local
        disks are being copied, the bytes of disk copied and to copy."""
        runtime = self.LoadRuntime(instance.name)
        if runtime and runtime.get("pending_migration"):
            return self._MirrorStatus(runtime)
        info = self._Qmp(instance.name, "query-migrate")
        status = _MIGRATION_STATUSES.get(info.get("status"))
        if status is None:
            logging.warning("Instance %s: migration status %r", instance.name,
                            info.get("status"))
            status = constants.HV_MIGRATION_FAILED
        result: dict[str, Any] = {"status": status}
        ram = info.get("ram") or {}
        if "transferred" in ram and "total" in ram:
            result["transferred_ram"] = ram["transferred"]
            result["total_ram"] = ram["total"]
        for key in ("total-time", "downtime", "setup-time"):
            if key in info:
                result[key.replace("-", "_")] = info[key]
        if "error-desc" in info:
            result["error"] = info["error-desc"]
        return result

    def FinalizeMigrationDst(self, instance: objects.Instance, info: str,
                             success: bool) -> None:
        """Success: make sure the guest runs here and keep its runtime.

        Failure: kill the QEMU that AcceptInstance started and forget it;
        a QEMU this node runs for other reasons is left alone.
        """
        name = instance.name
        runtime = self.LoadRuntime(name)
        incoming = runtime is not None and "incoming" in runtime
        if not success:
            if self._Pid(name) is not None and not incoming:
                logging.warning("Instance %s runs here but was not accepted"
                                " for a migration, leaving it", name)
                return
            self._Kill(name)
            self._RemoveRuntimeFiles(name, keep_runtime=False)
            return
        if runtime is None or self._Pid(name) is None:
            raise errors.HypervisorError(
                "Instance %s did not arrive: its QEMU is not running" % name)
        deadline = time.monotonic() + _MIGRATION_SETTLE_TIMEOUT
        status = self._Status(name)
        while status == "inmigrate" and time.monotonic() < deadline:
            time.sleep(0.05)
            status = self._Status(name)
        if status == "inmigrate":
            raise errors.HypervisorError(
                "Instance %s: the incoming migration did not finish" % name)
        if runtime.get("nbd"):
            self._Qmp(name, "nbd-server-stop")
        if status == "paused":
            self._Qmp(name, "cont")
        runtime.pop("incoming", None)
        runtime.pop("nbd", None)
        self._SaveRuntime(runtime)

    def _EndOutgoingMigration(self, qmp: QmpConnection, name: str) -> None:
        """Cancel a migration still under way and wait for it to stop."""
        status = qmp.Execute("query-migrate").get("status", "none")
        if status not in _MIGRATION_UNDER_WAY:
            return
        logging.info("Cancelling the migration of instance %s (%s)", name,
                     status)
        qmp.Execute("migrate_cancel")
        deadline = time.monotonic() + _MIGRATION_SETTLE_TIMEOUT
        while status in _MIGRATION_UNDER_WAY:
            if time.monotonic() >= deadline:
                raise errors.HypervisorError(
                    "The migration of instance %s did not stop (%s)" %
                    (name, status))
            time.sleep(0.05)
            status = qmp.Execute("query-migrate").get("status", "none")

    def FinalizeMigrationSource(self, instance: objects.Instance,
                                success: bool, live: bool) -> None:
        """Success: quit the source QEMU, whose state has been sent.

        Failure: the guest resumes here if the migration stopped it (a
        non-live one, or one that completed before the master gave up).

        Disk mirrors end either way: with success once they have copied
        the last writes, before the QEMU quits; after a failure at once,
        the guest staying on this node's images.
        """
        name = instance.name
        if self._Pid(name) is None:
            if success:
                self._RemoveRuntimeFiles(name, keep_runtime=False)
                return
            raise errors.HypervisorError(
                "Instance %s is no longer running on the source node" % name)
        with QmpConnection(self.QmpSocket(name)) as qmp:
            runtime = self.LoadRuntime(name) or {}
            if success:
                status = qmp.Execute("query-migrate").get("status")
                if runtime.get("pending_migration"):
                    status = "copying disks"
                if status != "completed":
                    raise errors.HypervisorError(
                        "Migration of instance %s has not completed (%s),"
                        " not stopping it" % (name, status))
                problems = self._EndMirrors(qmp, name, False)
                if problems:
                    raise errors.HypervisorError(
                        "Migration of instance %s: copying its disks did"
                        " not finish (%s), not stopping it" %
                        (name, "; ".join(problems)))
            else:
                self._EndOutgoingMigration(qmp, name)
                self._EndMirrors(qmp, name, True)
                if runtime.pop("pending_migration", None):
                    self._SaveRuntime(runtime)
                state = qmp.Execute("query-status").get("status")
                if state == "postmigrate" or (not live and
                                              state == "paused"):
                    qmp.Execute("cont")
                return
        self.StopInstance(instance, force=True)
        self._RemoveRuntimeFiles(name, keep_runtime=False)
