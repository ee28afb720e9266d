"""The ``drbd`` data collector: the state of this node's mirrored disks.

Ganeti's collector parses /proc/drbd; here a mirrored disk is a pair of
qemu-storage-daemon processes (storage.drbd), so the collector asks
each image daemon running on the node (its pid file in the drbd run
directory) over QMP, and reports each disk side as Ganeti reports a
DRBD minor, in Ganeti's format (``versionInfo``, ``deviceInfos`` and
the status: the worst of the devices', "<minor>: <problem>" lines):

* ``localRole``: Primary while the device is exported here (the device
  daemon runs), Secondary while the image is only served to the peer.
* ``connectionState``: Connected when the mirror (on the primary) or
  the peer's mirror (on the secondary) holds an established connection
  to the disk's port, owned by the image daemon, or, for an idle mirror
  whose connection went, when the peer answers; SyncSource while the
  primary's mirror copies blocks the peer lacks; WFConnection while the
  peer is away (the mirror waits for it, temporarily bad); StandAlone
  for a primary without a mirror or a secondary serving nothing (bad).
* ``localState``/``remoteState``: UpToDate, Inconsistent (the peer
  during a resync), Consistent (a secondary without its primary),
  DUnknown (no connection), Failed (the local image is gone). A
  secondary can't see the primary's resync: the primary's report is the
  one telling how far it got (``syncStatus``, ``outOfSync``). A
  secondary that came back is in WFConnection until its primary writes
  (QEMU's NBD client connects again then).
* ``minor``, ``instance``, ``disk``: from the node's copy of the
  configuration (master candidates have one; Ganeti asks confd, which
  answers from it); elsewhere they are null, as Ganeti's are without the
  pairing information.

The performance counters (KiB): ``diskRead``/``diskWrite`` are the
image daemon's storage I/O (/proc/<pid>/io), ``networkSend`` on the
primary what its mirror copied to the peer since it started; the
counters DRBD keeps and QEMU does not (network traffic of a secondary,
activity log, bitmap updates, request queues) are 0.
"""

import logging
import os
import re
import time
from typing import Any

from ganeti import config, constants, errors, netutils, pathutils
from ganeti.monitoring import collectors, report
from ganeti.storage.drbd_daemon import (
    IMAGE_PID_FILE, LOCAL, REMOTE, MirrorJob, ServesPeer)
from ganeti.storage.drbd_watcher import PeerAnswers
from ganeti.utils import process, qmp

# The peer's address in the name QEMU gives the mirror's NBD client (the
# export name after it is the disk's secret: never reported)
_NBD_SERVER = re.compile(r"^nbd://(\[[^\]]*\]|[^:/]+):(\d+)")
_PROC_TCP = ("/proc/net/tcp", "/proc/net/tcp6")
_TCP_ESTABLISHED = "01"
# Ganeti's messages for the connection states (DataCollectors/Drbd.hs)
_STATE_STATUS = {
    "StandAlone": (report.STATUS_BAD, "No network config available"),
    "WFConnection": (report.STATUS_TEMPORARY,
                     "Trying to establish a network connection"),
}
_QMP_TIMEOUT = 5.0


def _Kib(value: int) -> int:
    return value // 1024


def NodeDrbdMap(cfg: config.ConfigWriter, node: str) -> dict[str, list]:
    """Disk UUID -> ``[node, minor, instance, disk, role, peer]`` for
    each drbd disk side ``node`` holds (Ganeti's confd ``node_drbd``
    answer; gnt-node list-drbd shows it).

    The minor comes from the disk's logical id; the role is the node's
    role for the instance in the configuration, not a live status.
    """
    node_uuid = cfg.ExpandNodeName(node)
    if node_uuid is None:
        raise errors.OpPrereqError("Node '%s' not known" % node,
                                   errors.ECODE_NOENT)
    (name, ) = cfg.GetNodeNames([node_uuid])
    result = {}
    for inst in cfg.GetAllInstancesInfo().values():
        role = "primary" if inst.primary_node == node_uuid else "secondary"
        for idx, disk in enumerate(cfg.GetInstanceDisks(inst.uuid)):
            if disk.dev_type != constants.DT_DRBD8:
                continue
            node_a, node_b, _, minor_a, minor_b, _ = disk.logical_id
            if node_uuid not in (node_a, node_b):
                continue
            minor, peer = ((minor_a, node_b) if node_uuid == node_a
                           else (minor_b, node_a))
            result[disk.uuid] = [name, minor, inst.name, "disk/%d" % idx,
                                 role, cfg.GetNodeNames([peer])[0]]
    return result


def _SocketInodes(pid: int) -> set[str]:
    """The socket inodes a process holds open."""
    fd_dir = "/proc/%d/fd" % pid
    result: set[str] = set()
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return result
    for name in names:
        try:
            target = os.readlink(os.path.join(fd_dir, name))
        except OSError:
            continue
        if target.startswith("socket:["):
            result.add(target[8:-1])
    return result


def _EstablishedTcp() -> list[tuple[int, int, str]]:
    """(local port, remote port, inode) of the established TCP
    connections of the network namespace."""
    result = []
    for path in _PROC_TCP:
        try:
            with open(path, encoding="ascii") as fobj:
                lines = fobj.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _TCP_ESTABLISHED:
                continue
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            result.append((local_port, remote_port, fields[9]))
    return result


def _ProcessIo(pid: int) -> tuple[int, int]:
    """Bytes a process read from and wrote to storage."""
    values = {}
    try:
        with open("/proc/%d/io" % pid, encoding="ascii") as fobj:
            for line in fobj:
                name, _, value = line.partition(":")
                values[name] = int(value)
    except (OSError, ValueError):
        pass
    return values.get("read_bytes", 0), values.get("write_bytes", 0)


def _SyncStatus(job: dict[str, Any], speed: float | None) -> dict[str, Any]:
    """Ganeti's syncStatus of a mirror copying (sizes in KiB, the speed
    as measured between two collections)."""
    done, total = _Kib(job["offset"]), _Kib(job["len"])
    result: dict[str, Any] = {
        "percentage": 100.0 * job["offset"] / job["len"] if job["len"]
        else 0.0,
        "progress": "%d/%d" % (done, total),
        "progressUnit": "KiloByte",
        "speed": int(speed or 0),
        "speedUnit": "KiloByte/Second",
    }
    if speed:
        left = int((total - done) / speed)
        result["timeToFinish"] = "%02d:%02d:%02d" % (
            left // 3600, left // 60 % 60, left % 60)
    else:
        result["timeToFinish"] = "00:00:00"
    return result


class Drbd(collectors.DataCollector):
    """The mirrored disks' status (see the module doc)."""

    NAME = constants.DATA_COLLECTOR_DRBD
    CATEGORY = report.CATEGORY_STORAGE
    KIND = report.KIND_STATUS

    def __init__(self, cfg_file: str = pathutils.CLUSTER_CONF_FILE):
        self._cfg_file = cfg_file
        self._pairing_stamp: float | None = None
        self._pairing: dict[str, list] = {}
        # Disk UUID -> (time, bytes copied) of the last collection, for
        # the resync speed
        self._progress: dict[str, tuple[float, int]] = {}

    def _Pairing(self) -> dict[str, list]:
        """The configuration's view of this node's disks (re-read when the
        configuration file changed; none without one)."""
        try:
            stamp = os.stat(self._cfg_file).st_mtime_ns
        except OSError:
            self._pairing_stamp, self._pairing = None, {}
            return self._pairing
        if stamp != self._pairing_stamp:
            try:
                cfg = config.ConfigWriter(self._cfg_file, offline=True,
                                          accept_foreign=True)
                self._pairing = NodeDrbdMap(cfg, netutils.GetMyName())
            except errors.GenericError as err:
                logging.warning("Can't get the pairing of the drbd disks:"
                                " %s", err)
                self._pairing = {}
            self._pairing_stamp = stamp
        return self._pairing

    def Collect(self, interval: float) -> Any:
        pairing = self._Pairing()
        established = _EstablishedTcp()
        devices = []
        version: dict[str, str] = {}
        try:
            names = sorted(os.listdir(pathutils.DRBD_RUN_DIR))
        except OSError:
            names = []
        seen = set()
        for name in names:
            match = IMAGE_PID_FILE.match(name)
            if not match:
                continue
            port = int(match.group(1))
            pid = process.ReadPidFile(os.path.join(pathutils.DRBD_RUN_DIR,
                                                   name))
            if not process.IsProcessAlive(pid):
                continue
            try:
                device = self._Device(port, pid, established, pairing,
                                      version)
            except errors.QmpError as err:
                logging.warning("No status of the drbd disk on port %d: %s",
                                port, err)
                continue
            if device is not None:
                seen.add(device.pop("uuid"))
                devices.append(device)
        self._progress = {uuid: value for uuid, value in
                          self._progress.items() if uuid in seen}
        devices.sort(key=lambda dev: (dev["minor"] is None, dev["minor"],
                                      dev["port"]))
        worst, messages = report.STATUS_OK, []
        for dev in devices:
            code, message = _STATE_STATUS.get(dev["connectionState"],
                                              (report.STATUS_OK, ""))
            worst = max(worst, code)
            if message:
                messages.append("%s: %s" % (dev["minor"], message))
        return {"versionInfo": version, "deviceInfos": devices,
                "status": {"code": worst, "message": "\n".join(messages)}}

    def _Device(self, port: int, pid: int,
                established: list[tuple[int, int, str]],
                pairing: dict[str, list], version: dict[str, str]
                ) -> dict[str, Any] | None:
        """One disk side, from its image daemon (None: not a drbd image
        daemon, e.g. while it starts)."""
        prefix = os.path.join(pathutils.DRBD_RUN_DIR, "d%d" % port)
        with qmp.QmpConnection(prefix + ".qmp", timeout=_QMP_TIMEOUT) as mon:
            image = None
            peer = None
            for node in mon.Execute("query-named-block-nodes",
                                    {"flat": True}):
                if node["node-name"] == LOCAL:
                    image = node["file"]
                elif node["node-name"] == REMOTE:
                    peer = _NBD_SERVER.match(node["file"])
            if image is None:
                return None
            job = MirrorJob(mon)
            serving = ServesPeer(mon)
            if not version:
                qemu = mon.Execute("query-version")["qemu"]
                version["version"] = "%d.%d.%d" % (
                    qemu["major"], qemu["minor"], qemu["micro"])
        disk_uuid = os.path.basename(image).split(".")[0]
        primary = process.IsProcessAlive(process.ReadPidFile(
            prefix + ".fuse.pid")) or job is not None
        inodes = _SocketInodes(pid)
        paused = bool(job and job["paused"])
        if primary:
            # QEMU's NBD client connects again at the next write once its
            # peer is back: an idle mirror whose peer answers is connected
            connected = any(remote == port and inode in inodes
                            for _, remote, inode in established) or \
                (job is not None and not paused and peer is not None and
                 PeerAnswers(peer.group(1).strip("[]"), int(peer.group(2))))
        else:
            connected = any(local == port and inode in inodes
                            for local, _, inode in established)
        local_state = "UpToDate" if os.path.exists(image) else "Failed"
        syncing = False
        if primary:
            if job is None:
                state = "StandAlone"
            elif not connected or paused:
                state = "WFConnection"
            else:
                syncing = not job["ready"] or job["len"] > job["offset"]
                state = "SyncSource" if syncing else "Connected"
        elif serving:
            state = "Connected" if connected else "WFConnection"
            if not connected and local_state == "UpToDate":
                local_state = "Consistent"
        else:
            state = "StandAlone"
        if state in ("Connected", "SyncSource"):
            remote_role = "Secondary" if primary else "Primary"
            remote_state = "Inconsistent" if syncing else "UpToDate"
        else:
            remote_role, remote_state = "Unknown", "DUnknown"
        disk_read, disk_write = _ProcessIo(pid)
        perf: dict[str, Any] = {
            "networkSend": _Kib(job["offset"]) if job else 0,
            "networkReceive": 0,
            "diskWrite": _Kib(disk_write), "diskRead": _Kib(disk_read),
            "activityLog": 0, "bitMap": 0, "localCount": 0, "pending": 0,
            "unacknowledged": 0, "applicationPending": 0,
        }
        if job is not None:
            perf["outOfSync"] = _Kib(job["len"] - job["offset"])
        row = pairing.get(disk_uuid)
        device: dict[str, Any] = {
            "uuid": disk_uuid,
            "minor": row[1] if row else None,
            "connectionState": state,
            "localRole": "Primary" if primary else "Secondary",
            "remoteRole": remote_role,
            "localState": local_state,
            "remoteState": remote_state,
            "replicationProtocol": "C",
            "ioFlags": ("s" if paused else "r") + "-----",
            "perfIndicators": perf,
            "instance": row[2] if row else None,
            "disk": row[3] if row else None,
            "port": port,
        }
        now = time.monotonic()
        if syncing and job is not None:
            last = self._progress.get(disk_uuid)
            speed = None
            if last is not None and now > last[0]:
                speed = max(0.0, _Kib(job["offset"] - last[1]) /
                            (now - last[0]))
            device["syncStatus"] = _SyncStatus(job, speed)
        if job is not None:
            self._progress[disk_uuid] = (now, job["offset"])
        return device
