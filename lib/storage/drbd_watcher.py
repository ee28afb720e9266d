"""Resume the mirror of a degraded drbd primary once its peer answers.

The image daemon's mirror stops at a write its peer did not take
(``on-target-error=stop``): the write completes on the local image, is
marked in the mirror's dirty bitmap, and the job pauses. Ignoring the
error instead made the job copy the dirty blocks again at once, without
end: QEMU's NBD client fails requests immediately while it reconnects,
so a degraded primary spent most of a core reading and re-sending them.

QEMU resumes no job by itself; this process (one per primary disk,
started with the mirror, see storage.drbd) looks every ``INTERVAL``
seconds and resumes a mirror paused by an error when the peer's port
accepts connections. The NBD client reconnects in the background (its
attempts back off from 1 to 16 s while the peer is away), so a resumed
mirror may pause again until that succeeds; then it copies what its
bitmap names. The watcher ends with the image daemon.

Run as ``python -m ganeti.storage.drbd_watcher PIDFILE IMAGE_PIDFILE
QMP_SOCKET HOST PORT``; it daemonizes and reports when it is running.
"""

import logging
import os
import socket
import sys
import time

from ganeti import errors
from ganeti.storage.drbd_daemon import JOB, DaemonAlive, MirrorJob
from ganeti.utils import process, qmp

INTERVAL = 1.0
_CONNECT_TIMEOUT = 2.0


def PeerAnswers(host: str, port: int) -> bool:
    """Whether the peer's NBD server accepts connections."""
    try:
        with socket.create_connection((host, port),
                                      timeout=_CONNECT_TIMEOUT):
            return True
    except OSError:
        return False


def _PausedByError(job: dict | None) -> bool:
    return job is not None and job["paused"] and \
        job.get("io-status") == "failed"


def ResumeIfPeerBack(qmp_socket: str, host: str, port: int) -> bool:
    """One look: resume a mirror paused by a failed write to a peer that
    answers again. Returns whether it resumed one.

    The monitor is not held while the peer is probed (up to
    ``_CONNECT_TIMEOUT``): the daemon serves one QMP client at a time.
    """
    with qmp.QmpConnection(qmp_socket) as mon:
        if not _PausedByError(MirrorJob(mon)):
            return False
    if not PeerAnswers(host, port):
        return False
    with qmp.QmpConnection(qmp_socket) as mon:
        if not _PausedByError(MirrorJob(mon)):
            return False
        mon.Execute("block-job-resume", {"device": JOB})
    logging.info("Resumed the mirror to %s:%d", host, port)
    return True


def Watch(image_pid_file: str, qmp_socket: str, host: str,
          port: int) -> None:
    """Look until the image daemon is gone."""
    while DaemonAlive(image_pid_file):
        try:
            ResumeIfPeerBack(qmp_socket, host, port)
        except errors.QmpError as err:
            # The daemon quitting, or busy with a long command
            logging.debug("No look at the mirror: %s", err)
        time.sleep(INTERVAL)


def Start(pid_file: str, image_pid_file: str, qmp_socket: str, host: str,
          port: int) -> None:
    """Start the watcher of a disk unless it runs."""
    if DaemonAlive(pid_file):
        return
    result = process.RunCmd([sys.executable, "-m", __name__, pid_file,
                             image_pid_file, qmp_socket, host, str(port)])
    if result.failed:
        raise errors.BlockDeviceError("Cannot start the mirror watcher: %s"
                                      % result.output.strip())


def main() -> None:
    pid_file, image_pid_file, qmp_socket, host, port = sys.argv[1:]
    ready_fd = process.Daemonize(os.devnull)
    try:
        pid_fd = process.WritePidFile(pid_file)
    except (OSError, errors.PidFileLockError) as err:
        process.DaemonFailed(ready_fd, str(err))
        sys.exit(1)
    process.DaemonReady(ready_fd)
    try:
        Watch(image_pid_file, qmp_socket, host, int(port))
    finally:
        os.close(pid_fd)
        try:
            os.unlink(pid_file)
        except FileNotFoundError:
            pass


if __name__ == "__main__":
    main()
