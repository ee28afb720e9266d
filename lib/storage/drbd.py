"""Disk template ``drbd``: network RAID1 in user space with QEMU.

These nodes have no DRBD, device-mapper or kernel NBD, so the pair is
built from QEMU's block layer (``qemu-storage-daemon``, one per disk and
node); the template keeps Ganeti's name and logical id
``(pnode_uuid, snode_uuid, port, pminor, sminor, secret)``.

Each node keeps its copy in a qcow2 image below the cluster's file
storage directory (``drbd/<disk uuid>.qcow2``, metadata preallocated so
a data write never changes qcow2 metadata).

* Secondary: the image is served over NBD on the disk's port (from the
  cluster's DRBD port range), with TLS: both ends present a certificate
  signed by the cluster certificate (QEMU's ``tls-creds-x509``); the
  export name is the disk's secret. The image is written with O_DIRECT:
  a write is on the secondary's disk before it is acknowledged, as the
  primary does not forward flushes (writethrough where the file system
  refuses O_DIRECT; see storage.drbd_daemon).
* Primary: the same block daemon also runs an active mirror
  (``blockdev-mirror copy-mode=write-blocking``) from the local image to
  the peer's export: a write completes once both have it, like DRBD's
  protocol C. A second daemon exports the result as the device: a FUSE
  file (``dev_path``, used by the fake hypervisor, the OS scripts and
  ``dd``) and an NBD export on a Unix socket; it reaches the image
  daemon on a Unix socket of its own, without TLS (see
  storage.drbd_daemon). KVM guests attach to that image daemon's socket
  directly, else (the target of a migration) to the device's NBD export;
  their NBD client connects again when the daemons restart (grow-disk,
  activate-disks after a crash), and the primary serves its image only
  once connected to its peer (or found it away), so that no write of
  theirs misses the peer's copy or the dirty bitmap.
* Degraded: a write the secondary did not take is marked in the mirror's
  dirty bitmap and pauses the mirror (``on-target-error=stop``), which
  keeps a degraded primary idle; a watcher process resumes it once the
  secondary answers again (storage.drbd_watcher), QEMU's NBD client
  reconnects and the mirror copies only those blocks, at
  ``resync-rate``. A persistent bitmap on the local image (one per peer)
  records the writes since the block daemon started, so that a restarted
  primary copies only those (before its device is exported); without a
  consistent bitmap for this peer (a new secondary, a crash) the sync is
  full.
* Migration (Ganeti's dual-primary phase): the target opens its device
  while it still serves its image to the source (``Open``), the guest
  moves; the source then ends its mirror once in sync and serves its
  image (``Close``), and the target mirrors to it without a copy
  (``ConnectInSync``): nothing wrote in between, both images are equal.
  The target's device daemon reaches its image daemon over the TLS port
  it serves the source on, until the disk is next assembled.
"""

import logging
import os
import socket
import time

from ganeti import constants, errors, pathutils, serializer
from ganeti.storage import base, drbd_watcher, filestorage
from ganeti.storage.drbd_daemon import (
    JOB, LOCAL, MIRROR_TOP, QEMU_IMG, REMOTE, STOP_TIMEOUT, SYNC_TIMEOUT,
    Bitmaps, DaemonAlive, DeviceDaemonArgs, DeviceServer, ExportToPeer,
    ImageDaemonArgs, ImageNode, InetServer, MirrorJob, NbdClient, NodeNames,
    PeerListener, QuitImageDaemon, RemoveBitmaps, Run, ServeDevice,
    ServesPeer, StartDaemon, StopDaemon)
from ganeti.utils import io, process, qmp

# Below the cluster's file storage directory
IMAGE_DIR = "drbd"
_CONNECT_TIMEOUT = 2.0
# Beside the image while replace-disks makes a new one
_NEW_SUFFIX = ".new"
REPLACED_SUFFIX = ".replaced"


def ImagePath(storage_dir: str, disk_uuid: str) -> str:
    """Where a node keeps its copy of a drbd disk (either role)."""
    return os.path.join(storage_dir, IMAGE_DIR, "%s.qcow2" % disk_uuid)


class DRBD8Dev(base.BlockDev):
    """One node's side of a mirrored disk (see the module doc)."""

    def __init__(self, unique_id, children, size, params, dyn_params,
                 name=None, uuid=None):
        if not isinstance(unique_id, (list, tuple)) or len(unique_id) != 6:
            base.ThrowError("Invalid drbd logical id %r, expected (pnode,"
                            " snode, port, pminor, sminor, secret)",
                            unique_id)
        (self.pnode, self.snode, self.port, _, _,
         self.secret) = unique_id
        if not isinstance(self.port, int) or \
                not constants.FIRST_DRBD_PORT <= self.port <= \
                constants.LAST_DRBD_PORT:
            base.ThrowError("Invalid drbd port %r", self.port)
        if not isinstance(self.secret, str) or not self.secret.isalnum():
            base.ThrowError("Invalid drbd secret of disk %s", uuid)
        if not uuid:
            base.ThrowError("A drbd disk needs its UUID")
        base.BlockDev.__init__(self, ["drbd", uuid], children, size, params,
                               dyn_params, name=name, uuid=uuid)
        self.unique_id = tuple(unique_id)
        self.vpath = ImagePath(
            filestorage.GetClusterStorageDir(constants.DT_FILE), uuid)
        try:
            self.image = filestorage.CheckFileStoragePath(self.vpath,
                                                          constants.DT_FILE)
        except errors.FileStoragePathError as err:
            base.ThrowError("%s", err)
        # Short names: Unix socket paths are limited to 107 bytes. The
        # image daemon (either role; its NBD socket on the primary) and
        # the device daemon (primary)
        prefix = os.path.join(pathutils.DRBD_RUN_DIR, "d%d" % self.port)
        self.qmp_socket = prefix + ".qmp"
        self.pid_file = prefix + ".pid"
        self.image_socket = pathutils.DrbdImageSocketPath(self.port)
        self.nbd_socket = pathutils.DrbdSocketPath(self.port)
        self.fuse_pid_file = prefix + ".fuse.pid"
        self.watch_pid_file = prefix + ".watch.pid"
        self.device = prefix + ".dev"

    # Addresses ------------------------------------------------------------

    def _Ip(self, key: str) -> str:
        value = self.dyn_params.get(key)
        if not isinstance(value, str) or not value:
            base.ThrowError("The master did not say the %s of drbd disk %s",
                            key, self.uuid)
        return value

    # Life cycle -----------------------------------------------------------

    @classmethod
    def Create(cls, unique_id, children, size, spindles, params, excl_stor,
               dyn_params, name=None, uuid=None) -> "DRBD8Dev":
        """Create this node's image (either side); never overwrites one."""
        if excl_stor:
            base.ThrowError("Exclusive storage is not supported by the drbd"
                            " template")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            base.ThrowError("Invalid size %r, expected MiB", size)
        dev = cls(unique_id, children, size, params, dyn_params, name=name,
                  uuid=uuid)
        if os.path.lexists(dev.image):
            base.ThrowError("File already existing: %s", dev.vpath)
        os.makedirs(os.path.dirname(dev.image), mode=0o750, exist_ok=True)
        dev._CreateImage(dev.image)
        return dev

    def _CreateImage(self, path: str) -> None:
        """An empty image of the disk's size at ``path``."""
        Run([QEMU_IMG, "create", "-q", "-f", "qcow2", "-o",
              "preallocation=metadata", path, "%dM" % self.size],
             "create the image of drbd disk %s" % self.uuid)

    def Remove(self) -> None:
        """Stop both roles' daemons and delete the image."""
        self.Shutdown()
        try:
            os.unlink(self.image)
        except FileNotFoundError:
            pass
        except OSError as err:
            base.ThrowError("Cannot remove %s: %s", self.vpath, err.strerror)

    def Attach(self) -> bool:
        """Whether this node's device is exported (the primary, or the
        target of a migration)."""
        if DaemonAlive(self.pid_file) and DaemonAlive(self.fuse_pid_file):
            self.dev_path = self.device
            self.attached = True
        else:
            self.dev_path = None
            self.attached = False
        return self.attached

    def _Serving(self) -> bool:
        """Whether the image daemon runs without a device here: the
        secondary role."""
        return DaemonAlive(self.pid_file) and \
            not DaemonAlive(self.fuse_pid_file)

    def Find(self) -> str | None:
        """The device on the primary, the served image on the secondary."""
        if self.Attach():
            return self.dev_path
        return self.vpath if self._Serving() else None

    def AssembleSecondary(self) -> None:
        """Serve the image to the primary (ends a primary role here)."""
        if self._Serving():
            with qmp.QmpConnection(self.qmp_socket) as mon:
                if MirrorJob(mon) is None and \
                        REMOTE not in NodeNames(mon) and ServesPeer(mon):
                    return
        self.Shutdown()
        self._StartImageDaemon(primary=False)
        # Bitmaps of an earlier primary role are stale once the peer writes
        with qmp.QmpConnection(self.qmp_socket) as mon:
            RemoveBitmaps(mon)
        logging.info("Serving drbd disk %s on port %d", self.uuid, self.port)

    def Assemble(self) -> None:
        """Become the primary: mirror to the peer and export the device.

        On an assembled primary this only reconnects a lost peer.
        """
        if self.Attach():
            self._ConnectPeer(exported=True)
            return
        self.Shutdown()
        self._StartImageDaemon(primary=True)
        try:
            # The image is served (KVM guests connect to it again, see
            # hypervisor.hv_kvm) only once an incremental copy is done:
            # a write meanwhile would miss the peer
            self._ConnectPeer(exported=False)
            with qmp.QmpConnection(self.qmp_socket) as mon:
                ServeDevice(mon, self.image_socket)
            self._StartDeviceDaemon()
        except (errors.BlockDeviceError, errors.QmpError) as err:
            self.Shutdown()
            base.ThrowError("Cannot assemble drbd disk %s: %s", self.uuid, err)
        if not self.Attach():
            base.ThrowError("The device of drbd disk %s did not appear",
                            self.uuid)

    # Migration (module doc) -----------------------------------------------

    def Open(self) -> None:
        """The target of a migration: export the device of the image this
        node serves, the mirror of the primary still writing to it."""
        if self.Attach():
            return
        if not self._Serving():
            base.ThrowError("drbd disk %s is not served on this node, it"
                            " can't be opened for a migration", self.uuid)
        self._StartDeviceDaemon()
        if not self.Attach():
            base.ThrowError("The device of drbd disk %s did not appear",
                            self.uuid)

    def Close(self) -> None:
        """The source of a migration, its guest gone: the secondary role,
        once the peer holds every write (else an error, the primary role
        intact). Closing a target that did not get the instance only ends
        its device.

        The source's image daemon starts again as a secondary's
        (``AssembleSecondary``, before the new primary connects): served
        in place, the image would lack O_DIRECT and its port
        ``PeerListener``'s TCP_NODELAY until the disk is next assembled.
        """
        if not DaemonAlive(self.pid_file):
            base.ThrowError("drbd disk %s is not active on this node",
                            self.uuid)
        with qmp.QmpConnection(self.qmp_socket, timeout=SYNC_TIMEOUT) as mon:
            if MirrorJob(mon) is not None:
                if not self._InSync(mon):
                    base.ThrowError("The secondary of drbd disk %s is not in"
                                    " sync, not closing it", self.uuid)
                StopDaemon(self.fuse_pid_file)
                self._DropPeer(mon)
            else:
                StopDaemon(self.fuse_pid_file)
            RemoveBitmaps(mon)
        self.AssembleSecondary()
        io.RemoveFile(self.device)
        io.RemoveFile(self.nbd_socket)
        io.RemoveFile(self.image_socket)
        self.dev_path = None
        self.attached = False
        logging.info("drbd disk %s closed, serving its image", self.uuid)

    def ConnectInSync(self) -> None:
        """The new primary after a migration: mirror to the peer without a
        copy, as the peer (closed in sync) holds the same data and nothing
        wrote since; the writes from here on are mirrored and tracked."""
        if not self.Attach():
            base.ThrowError("drbd disk %s is not open on this node",
                            self.uuid)
        bitmap = self._BitmapName()
        with qmp.QmpConnection(self.qmp_socket, timeout=SYNC_TIMEOUT) as mon:
            if MirrorJob(mon) is not None:
                return
            if REMOTE in NodeNames(mon):
                mon.Execute("blockdev-del", {"node-name": REMOTE})
            RemoveBitmaps(mon)
            self._AddRemote(mon)
            self._EnsureBitmap(mon, bitmap)
            self._StartMirror(mon, "none")
        logging.info("drbd disk %s is the primary, in sync", self.uuid)

    def Grow(self, amount, dryrun, backingstore, excl_stor) -> None:
        """Grow this node's image, then (primary only) the device.

        The image pass (``backingstore``) runs on both nodes: the daemons
        holding the image stop, as neither a mirror source nor an NBD
        export lets its image be resized and an NBD peer never learns a
        new size; the image grows offline and a secondary serves again.
        The device pass, on the primary once both images grew, assembles
        it again: the mirror reconnects (incrementally when its bitmap is
        consistent, see ``Assemble``) and the device has the new size.
        """
        amount = base.CheckGrowAmount(amount, self.vpath)
        if not os.path.exists(self.image):
            base.ThrowError("The image of drbd disk %s is missing: %s",
                            self.uuid, self.vpath)
        if dryrun:
            return
        if not backingstore:
            self.Assemble()
            return
        serving = self._Serving()
        self.Shutdown()
        # Absolute: a repeated request does not grow twice (and qemu-img
        # refuses to shrink). The new part is not preallocated: qcow2 may
        # place its clusters where freed metadata (an old bitmap) was,
        # and preallocated clusters would show those stale bytes
        Run([QEMU_IMG, "resize", "-q", self.image,
              "%dM" % (self.size + amount)],
             "grow the image of drbd disk %s" % self.uuid)
        self.size += amount
        if serving:
            self.AssembleSecondary()

    def Shutdown(self) -> None:
        """Stop this node's daemons (either role); the image stays."""
        StopDaemon(self.watch_pid_file)
        StopDaemon(self.fuse_pid_file)
        if DaemonAlive(self.pid_file):
            QuitImageDaemon(self.qmp_socket, self.pid_file,
                            "drbd disk %s" % self.uuid)
        StopDaemon(self.pid_file)
        for path in (self.qmp_socket, self.nbd_socket, self.image_socket,
                     self.device):
            io.RemoveFile(path)
        self.dev_path = None
        self.attached = False

    # Primary side ---------------------------------------------------------

    def _BitmapName(self) -> str:
        """The persistent bitmap of the writes the current peer lacks,
        named after the peer's address: the logical id's node order says
        nothing of the roles (failover and migration keep it), and a new
        secondary (replace-disks -n) must not find its predecessor's
        bitmap, which would keep the mirror on the old one."""
        return "peer-%s" % self._Ip(constants.DDP_REMOTE_IP)

    def _ConnectPeer(self, exported: bool) -> None:
        """Open the peer's export and start the mirror, if possible.

        Before the device is exported (nothing writes), a consistent
        bitmap for this peer makes the first copy incremental; otherwise
        the mirror copies the whole disk. An unreachable peer leaves the
        disk degraded.
        """
        bitmap = self._BitmapName()
        with qmp.QmpConnection(self.qmp_socket, timeout=SYNC_TIMEOUT) as mon:
            # A peer's bitmap exists from its first connection on; without
            # it the disk names another secondary (replace-disks -n)
            if not any(b["name"] == bitmap for b in Bitmaps(mon)):
                self._DropPeer(mon)
            elif MirrorJob(mon):
                return
            if REMOTE not in NodeNames(mon):
                try:
                    self._AddRemote(mon)
                except errors.QmpError as err:
                    logging.warning("drbd disk %s is degraded: %s",
                                    self.uuid, err)
                    self._EnsureBitmap(mon, bitmap)
                    return
            usable = [b for b in Bitmaps(mon)
                      if b["name"] == bitmap and
                      not b.get("inconsistent")]
            if usable and not exported:
                self._RunJob(mon, "blockdev-backup", {
                    "device": LOCAL, "target": REMOTE, "sync": "bitmap",
                    "bitmap": bitmap, "bitmap-mode": "on-success"})
            RemoveBitmaps(mon, keep=bitmap)
            self._EnsureBitmap(mon, bitmap)
            self._StartMirror(mon, "none" if usable and not exported
                              else "full")

    def _AddRemote(self, mon: qmp.QmpConnection) -> None:
        mon.Execute("blockdev-add", NbdClient(
            REMOTE, InetServer(self._Ip(constants.DDP_REMOTE_IP), self.port),
            self.secret, "tlsc"))

    def _StartMirror(self, mon: qmp.QmpConnection, sync: str) -> None:
        mon.Execute("blockdev-mirror", {
            "job-id": JOB, "device": LOCAL, "target": REMOTE,
            "sync": sync, "copy-mode": "write-blocking",
            "on-target-error": "stop", "filter-node-name": MIRROR_TOP,
            "speed": self._Speed()})
        drbd_watcher.Start(self.watch_pid_file, self.pid_file,
                           self.qmp_socket,
                           self._Ip(constants.DDP_REMOTE_IP), self.port)

    def _DropPeer(self, mon: qmp.QmpConnection) -> None:
        """End the mirror to the current peer and close its connection;
        the device's writers move back to the local image meanwhile.

        A peer that answers gets what is left first (a plain cancel: QEMU
        7.2's block daemon was seen to crash on a forced cancel of a
        ready write-blocking mirror while the device was written to);
        an unreachable one, or a cancel that does not end, is forced.
        """
        if MirrorJob(mon):
            force = not self._PeerReachable()
            mon.Execute("block-job-cancel", {"device": JOB, "force": force})
            deadline = time.monotonic() + STOP_TIMEOUT
            while MirrorJob(mon):
                if time.monotonic() > deadline:
                    if force:
                        base.ThrowError("The mirror of drbd disk %s does"
                                        " not stop", self.uuid)
                    force = True
                    mon.Execute("block-job-cancel",
                                {"device": JOB, "force": True})
                    deadline = time.monotonic() + STOP_TIMEOUT
                time.sleep(0.05)
        if REMOTE in NodeNames(mon):
            mon.Execute("blockdev-del", {"node-name": REMOTE})

    def _Speed(self) -> int:
        """The resync rate in bytes/s (the parameter is in KiB/s)."""
        rate = self.params.get("resync-rate")
        if isinstance(rate, int) and not isinstance(rate, bool) and rate > 0:
            return rate * 1024
        return 0

    def _RunJob(self, mon: qmp.QmpConnection, command: str,
                args: dict) -> None:
        """Run a block job to its end, as one synchronous step."""
        mon.Execute(command, dict(args, **{"job-id": JOB,
                                           "auto-dismiss": False,
                                           "speed": self._Speed()}))
        deadline = time.monotonic() + SYNC_TIMEOUT
        while time.monotonic() < deadline:
            for job in mon.Execute("query-jobs"):
                if job["id"] == JOB and job["status"] == "concluded":
                    mon.Execute("job-dismiss", {"id": JOB})
                    if job.get("error"):
                        base.ThrowError("Resync of drbd disk %s failed: %s",
                                        self.uuid, job["error"])
                    return
            time.sleep(0.05)
        base.ThrowError("Resync of drbd disk %s did not end", self.uuid)

    def _EnsureBitmap(self, mon: qmp.QmpConnection, name: str) -> None:
        if not any(b["name"] == name for b in Bitmaps(mon)):
            mon.Execute("block-dirty-bitmap-add",
                        {"node": LOCAL, "name": name, "persistent": True})

    def GetSyncStatus(self) -> tuple[float | None, float | None, bool, int]:
        """``(sync_percent, estimated_time, is_degraded, ldisk_status)``.

        On the primary: degraded while the mirror has blocks the peer
        lacks or the peer does not answer; on a secondary: degraded when
        not serving. The local disk is faulty when its image is gone,
        even while a daemon still holds it open (replace-disks -a then
        replaces it).
        """
        ldisk = (constants.LDS_OKAY if os.path.exists(self.image)
                 else constants.LDS_FAULTY)
        if not self.Attach():
            return None, None, not self._Serving(), ldisk
        try:
            with qmp.QmpConnection(self.qmp_socket) as mon:
                job = MirrorJob(mon)
        except errors.QmpError as err:
            logging.warning("No status of drbd disk %s: %s", self.uuid, err)
            return None, None, True, constants.LDS_UNKNOWN
        if job is None:
            return None, None, True, ldisk
        remaining = job["len"] - job["offset"]
        percent = None
        eta = None
        if remaining or not job["ready"]:
            percent = 100.0 * job["offset"] / job["len"] if job["len"] else 0.0
            if job.get("speed"):
                eta = remaining / job["speed"]
        degraded = percent is not None or not self._PeerReachable()
        return percent, eta, degraded, ldisk

    def NeedsActivation(self) -> bool:
        """Whether activate-disks has work here (Ganeti's test for a
        missing or StandAlone DRBD device): this side neither assembled
        nor serving, or a primary whose mirror is gone for good (its peer
        was unreachable when it was assembled). A mirror whose peer is
        only away reconnects by itself, like DRBD's WFConnection."""
        if not self.Attach():
            return not self._Serving()
        try:
            with qmp.QmpConnection(self.qmp_socket) as mon:
                return MirrorJob(mon) is None
        except errors.QmpError as err:
            logging.warning("No status of drbd disk %s: %s", self.uuid, err)
            return True

    def GetActualSize(self) -> int:
        """The image's size in bytes, on either node, assembled or not."""
        if not os.path.exists(self.image):
            base.ThrowError("The image of drbd disk %s is missing: %s",
                            self.uuid, self.vpath)
        result = process.RunCmd([QEMU_IMG, "info", "-U", "--output=json",
                                 self.image])
        try:
            if result.failed:
                raise ValueError(result.output.strip())
            return int(serializer.LoadJson(result.stdout)["virtual-size"])
        except (ValueError, KeyError, TypeError) as err:
            base.ThrowError("Cannot read the size of %s: %s", self.vpath,
                            err)

    def GetSyncedBytes(self) -> int:
        """Bytes the running mirror copied so far (progress counter)."""
        with qmp.QmpConnection(self.qmp_socket) as mon:
            job = MirrorJob(mon)
        return job["offset"] if job else 0

    def _PeerReachable(self) -> bool:
        try:
            with socket.create_connection(
                    (self._Ip(constants.DDP_REMOTE_IP), self.port),
                    timeout=_CONNECT_TIMEOUT):
                return True
        except OSError:
            return False

    # Processes ------------------------------------------------------------

    def _StartImageDaemon(self, primary: bool) -> None:
        """Start the image daemon serving the peer (the secondary), or
        serving nothing yet (the primary: ``Assemble``)."""
        if not os.path.exists(self.image):
            base.ThrowError("The image of drbd disk %s is missing: %s",
                            self.uuid, self.vpath)
        what = "drbd disk %s" % self.uuid
        if primary:
            StartDaemon(self.pid_file, self.qmp_socket,
                        ImageDaemonArgs(self.image, None), what)
            return
        with PeerListener(self._Ip(constants.DDP_LOCAL_IP),
                          self.port) as listener:
            StartDaemon(self.pid_file, self.qmp_socket,
                        ImageDaemonArgs(self.image, listener.fileno()),
                        what, pass_fds=[listener.fileno()])
        try:
            with qmp.QmpConnection(self.qmp_socket) as mon:
                ExportToPeer(mon, self.secret)
        except errors.QmpError as err:
            self.Shutdown()
            base.ThrowError("Cannot serve drbd disk %s: %s", self.uuid, err)

    def _StartDeviceDaemon(self) -> None:
        with qmp.QmpConnection(self.qmp_socket) as mon:
            server, tls = DeviceServer(
                mon, self._Ip(constants.DDP_LOCAL_IP), self.port,
                self.image_socket)
        io.WriteFile(self.device, data="", mode=0o600)
        StartDaemon(self.fuse_pid_file, None, DeviceDaemonArgs(
            server, tls, self.nbd_socket, self.device),
            "the device of drbd disk %s" % self.uuid)

    # Replacing one node's copy (replace-disks -p/-s) ----------------------

    def DisconnectPeer(self) -> None:
        """Primary: stop mirroring and forget what the secondary holds.

        Its bitmap goes, so that the next connection (``Assemble``) copies
        the whole disk: the secondary's image is about to be replaced.
        Until then the disk runs degraded.
        """
        if not self.Attach():
            base.ThrowError("drbd disk %s is not the primary here", self.uuid)
        with qmp.QmpConnection(self.qmp_socket, timeout=SYNC_TIMEOUT) as mon:
            self._DropPeer(mon)
            RemoveBitmaps(mon)
        logging.info("drbd disk %s disconnected from its secondary",
                     self.uuid)

    def ReplaceImage(self, on_primary: bool) -> None:
        """Put a new image in place of this node's copy, while in use.

        The old image stays beside it (``RemoveReplaced`` deletes it once
        the pair is in sync again). On a secondary, whose primary
        disconnected first, the new image is empty and served at once;
        the primary's next connection copies the whole disk to it. On the
        primary, see ``_RebuildPrimary``.
        """
        if self.Attach() != on_primary:
            base.ThrowError("drbd disk %s is not the %s here", self.uuid,
                            "primary" if on_primary else "secondary")
        new = self.image + _NEW_SUFFIX
        io.RemoveFile(new)
        self._CreateImage(new)
        if on_primary:
            self._RebuildPrimary(new)
            return
        self.Shutdown()
        self._SetAside()
        os.replace(new, self.image)
        self.AssembleSecondary()

    def RemoveReplaced(self) -> None:
        """Delete the image a ``ReplaceImage`` set aside, if any."""
        io.RemoveFile(self.image + REPLACED_SUFFIX)

    def _SetAside(self) -> None:
        if os.path.exists(self.image):
            os.replace(self.image, self.image + REPLACED_SUFFIX)

    def _RebuildPrimary(self, new: str) -> None:
        """Fill a new local image from the secondary, the device in use.

        Only from a secondary in sync. The device's writers move to the
        secondary's copy (the mirror completes: QEMU swaps its source for
        its target), then a mirror from there fills the new image, every
        write reaching both meanwhile; once complete it swaps back and the
        disk runs degraded until the next ``Assemble``, which mirrors to
        the secondary anew with a full copy (the new image has no bitmap
        for it: the writes since the swap are not tracked).

        The old image is set aside before the first swap and the new one
        takes its name after the second: an interruption in between
        leaves no image at the usual path, so a restarted primary can't
        take an outdated or partial image for the data (the secondary's
        copy has it all).
        """
        with qmp.QmpConnection(self.qmp_socket, timeout=SYNC_TIMEOUT) as mon:
            if not self._InSync(mon):
                io.RemoveFile(new)
                base.ThrowError("The secondary of drbd disk %s is not in"
                                " sync, it can't rebuild the primary's"
                                " image", self.uuid)
            self._SetAside()
            self._SwapMirror(mon)
            mon.Execute("blockdev-del", {"node-name": LOCAL})
            mon.Execute("blockdev-add", ImageNode(new, peer=False))
            mon.Execute("blockdev-mirror", {
                "job-id": JOB, "device": REMOTE, "target": LOCAL,
                "sync": "full", "copy-mode": "write-blocking",
                "filter-node-name": MIRROR_TOP, "speed": self._Speed()})
            deadline = time.monotonic() + SYNC_TIMEOUT
            while True:
                job = MirrorJob(mon)
                if job is None:
                    base.ThrowError("Copying drbd disk %s from the"
                                    " secondary failed", self.uuid)
                if job["ready"]:
                    break
                if time.monotonic() > deadline:
                    base.ThrowError("Copying drbd disk %s from the"
                                    " secondary did not end", self.uuid)
                time.sleep(0.05)
            self._SwapMirror(mon)
            os.replace(new, self.image)
        logging.info("Rebuilt the primary image of drbd disk %s from its"
                     " secondary", self.uuid)

    def _InSync(self, mon: qmp.QmpConnection) -> bool:
        """Whether the peer has every write, looking for a few seconds:
        a ready mirror's job also counts the writes in flight, which
        reach both sides before they complete."""
        deadline = time.monotonic() + STOP_TIMEOUT
        while time.monotonic() < deadline:
            job = MirrorJob(mon)
            if job is None or not job["ready"]:
                return False
            if job["offset"] == job["len"]:
                return self._PeerReachable()
            time.sleep(0.02)
        return False

    def _SwapMirror(self, mon: qmp.QmpConnection) -> None:
        """Complete the ready mirror: its target takes its source's place
        under the device."""
        mon.Execute("block-job-complete", {"device": JOB})
        deadline = time.monotonic() + STOP_TIMEOUT
        while MirrorJob(mon):
            if time.monotonic() > deadline:
                base.ThrowError("The mirror of drbd disk %s does not"
                                " complete", self.uuid)
            time.sleep(0.05)

