"""The node side of transfers: what the impexp RPCs do in noded.

Each transfer end runs in its own process (ganeti.impexp.transfer),
started here and waited for until it reports that it is ready, so that
bad arguments (a missing file, a disk that does not assemble) fail the
RPC itself. Its directory ``IMPORT_EXPORT_DIR/<name>`` holds:

* ``spec``: the request (mode, options, source or destination, peer);
* ``pid``: the pid file, locked while the process runs;
* ``status``: its status (impexp.STATUS_FIELDS);
* ``created``: what an import created (kept after success, so that
  Abort can still discard the data);
* ``log``: its output.
"""

import logging
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

from ganeti import errors, impexp, netutils, pathutils, serializer
from ganeti.impexp import endpoints, transfer
from ganeti.utils import io, process

# How long a starting transfer process may take to report readiness
# (interpreter start-up on a loaded node included)
_START_TIMEOUT = 60.0
# How long an aborted process gets to clean up before SIGKILL
_ABORT_TIMEOUT = 10.0
_KILL_TIMEOUT = 5.0
_LOG_TAIL = 2000
_TAG_RE = re.compile(r"[^A-Za-z0-9._+-]")


def _Fail(msg: str, *args: Any) -> None:
    if args:
        msg = msg % args
    logging.error("%s", msg)
    raise errors.GenericError(msg)


def _Tag(text: Any) -> str:
    return _TAG_RE.sub("_", str(text))[:40] or "_"


def _Dir(name: Any) -> str:
    try:
        impexp.CheckName(name)
    except errors.GenericError as err:
        _Fail("%s", err)
    return os.path.join(pathutils.IMPORT_EXPORT_DIR, name)


def _LogTail(tdir: str) -> str:
    try:
        with open(os.path.join(tdir, "log"), "rb") as fobj:
            fobj.seek(0, os.SEEK_END)
            fobj.seek(max(fobj.tell() - _LOG_TAIL, 0))
            text = fobj.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return text.splitlines()[-1] if text else ""


def _WaitReady(rfd: int, proc: subprocess.Popen, tdir: str) -> None:
    """Wait for the process's report; fail with its message."""
    deadline = time.monotonic() + _START_TIMEOUT
    data = b""
    try:
        while b"\n" not in data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                _Fail("The transfer process did not start within %s"
                      " seconds", _START_TIMEOUT)
            ready, _, _ = select.select([rfd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(rfd, 4096)
            if not chunk:
                break
            data += chunk
    except errors.GenericError:
        proc.kill()
        proc.wait()
        raise
    finally:
        os.close(rfd)
    line = data.decode("utf-8", "replace").split("\n", 1)[0].strip()
    if line == "ok":
        return
    proc.wait()
    if line.startswith("error: "):
        _Fail("%s", line[len("error: "):])
    _Fail("The transfer process failed to start: %s",
          _LogTail(tdir) or "exit code %s" % proc.returncode)


def _Start(mode: str, opts: Any, instance_name: Any, component: Any,
           io_spec: Any, extra: dict[str, Any],
           listener: socket.socket | None) -> str:
    """Create the transfer directory and start its process."""
    try:
        opts = impexp.CheckOptions(opts)
        impexp.CheckIO(mode, io_spec)
    except errors.GenericError as err:
        _Fail("%s", err)
    for value, what in ((instance_name, "instance name"),
                        (component, "component")):
        if not isinstance(value, str) or not value:
            _Fail("Invalid %s %r", what, value)
    io.EnsureDirs([(pathutils.IMPORT_EXPORT_DIR, 0o755)])
    tdir = tempfile.mkdtemp(prefix="%s-%s-%s-" % (mode, _Tag(instance_name),
                                                 _Tag(component)),
                            dir=pathutils.IMPORT_EXPORT_DIR)
    name = os.path.basename(tdir)
    spec = {"name": name, "mode": mode, "opts": opts,
            "instance": instance_name, "component": component,
            "io": list(io_spec)}
    spec.update(extra)
    rfd, wfd = os.pipe()
    try:
        io.WriteFile(os.path.join(tdir, "spec"),
                     data=serializer.DumpJson(spec), mode=0o600, fsync=False)
        listen_fd = listener.fileno() if listener is not None else -1
        with open(os.path.join(tdir, "log"), "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", transfer.__name__, tdir, str(wfd),
                 str(listen_fd)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=[wfd] + ([listen_fd] if listener else []),
                cwd="/", start_new_session=True)
    except BaseException:
        os.close(rfd)
        shutil.rmtree(tdir, ignore_errors=True)
        raise
    finally:
        os.close(wfd)
    try:
        _WaitReady(rfd, proc, tdir)
    except BaseException:
        shutil.rmtree(tdir, ignore_errors=True)
        raise
    logging.info("Started %s %s of %s/%s (pid %d)", mode, name,
                 instance_name, component, proc.pid)
    return name


def StartImport(opts: Any, instance_name: Any, component: Any, dest: Any,
                address: Any) -> dict[str, Any]:
    """Listen on ``address`` for the source and write to ``dest``.

    Returns ``{"name", "address", "port"}``; the port is an ephemeral one
    bound before the process starts.
    """
    if not isinstance(address, str) or not netutils.IsValidIP(address):
        _Fail("Invalid listening address %r", address)
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        try:
            listener.bind((address, 0))
            listener.listen(8)
        except OSError as err:
            _Fail("Cannot listen on %s: %s", address, err.strerror)
        port = listener.getsockname()[1]
        name = _Start(impexp.IEM_IMPORT, opts, instance_name, component,
                      dest, {}, listener)
    finally:
        # The transfer process has its own copy
        listener.close()
    return {"name": name, "address": address, "port": port}


def StartExport(opts: Any, host: Any, port: Any, instance_name: Any,
                component: Any, source: Any) -> str:
    """Connect to the destination at ``host``/``port`` and send
    ``source``; returns the transfer's name."""
    if not isinstance(host, str) or not netutils.IsValidIP(host):
        _Fail("Invalid destination address %r", host)
    if isinstance(port, bool) or not isinstance(port, int) or \
            not 0 < port < 65536:
        _Fail("Invalid destination port %r", port)
    return _Start(impexp.IEM_EXPORT, opts, instance_name, component, source,
                  {"host": host, "port": port}, None)


def _IsRunning(tdir: str) -> bool:
    return process.IsPidFileLocked(os.path.join(tdir, "pid"))


def _ReadJson(path: str) -> Any:
    try:
        return serializer.LoadJson(io.ReadFile(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        _Fail("Cannot read %s: %s", path, err)


def _ReadStatus(tdir: str) -> dict[str, Any] | None:
    """The status, completed for a process that died without a word."""
    # Look at the lock first: a process found gone has written its last
    # status already, unless it was killed
    running = _IsRunning(tdir)
    status = _ReadJson(os.path.join(tdir, "status"))
    if status is None or running or status.get("done"):
        return status
    status.update(done=True, success=False, listening=False,
                  error="The transfer process ended unexpectedly: %s" %
                  (_LogTail(tdir) or "no message"))
    return status


def GetStatus(names: Any) -> list[dict[str, Any] | None]:
    """The status of each named transfer; None for an unknown one."""
    if not isinstance(names, list):
        _Fail("Invalid transfer names %r, expected a list", names)
    result = []
    for name in names:
        tdir = _Dir(name)
        result.append(_ReadStatus(tdir) if os.path.isdir(tdir) else None)
    return result


def _Stop(tdir: str) -> None:
    """End the transfer process: SIGTERM, then SIGKILL."""
    pidfile = os.path.join(tdir, "pid")
    for sig, timeout in ((signal.SIGTERM, _ABORT_TIMEOUT),
                         (signal.SIGKILL, _KILL_TIMEOUT)):
        if not process.IsPidFileLocked(pidfile):
            return
        pid = process.ReadPidFile(pidfile)
        if pid:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while process.IsPidFileLocked(pidfile) and \
                time.monotonic() < deadline:
            time.sleep(0.01)
    if process.IsPidFileLocked(pidfile):
        _Fail("Cannot stop the transfer process of %s",
              os.path.basename(tdir))


def _Discard(tdir: str) -> None:
    """Remove what the import created (after its process ended)."""
    created = _ReadJson(os.path.join(tdir, "created"))
    if isinstance(created, list):
        endpoints.RemoveCreated([path for path in created
                                 if isinstance(path, str)])
    io.RemoveFile(os.path.join(tdir, "created"))


def Abort(name: Any) -> None:
    """Stop a transfer and discard what its import created.

    Also for a finished import: the master rejects its data this way.
    """
    tdir = _Dir(name)
    if not os.path.isdir(tdir):
        _Fail("Unknown transfer %s", name)
    _Stop(tdir)
    _Discard(tdir)
    status = _ReadJson(os.path.join(tdir, "status"))
    if status is None:
        return
    if not status.get("done"):
        status.update(done=True, success=False, error="Aborted")
    elif status.get("success"):
        status.update(success=False, checksum=None,
                      error="Aborted after completion, data discarded")
    status.update(listening=False, end_time=status.get("end_time") or
                  time.time())
    io.WriteFile(os.path.join(tdir, "status"),
                 data=serializer.DumpJson(status), fsync=False)
    logging.info("Aborted transfer %s", name)


def Cleanup(name: Any) -> None:
    """Forget a transfer, stopping it if it still runs; idempotent.

    The data of an import that succeeded stays, anything else it created
    goes.
    """
    tdir = _Dir(name)
    if not os.path.isdir(tdir):
        return
    _Stop(tdir)
    status = _ReadJson(os.path.join(tdir, "status")) or {}
    if not (status.get("done") and status.get("success")):
        _Discard(tdir)
    shutil.rmtree(tdir)
