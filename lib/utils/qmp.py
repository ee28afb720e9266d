"""A minimal QMP client for QEMU processes (hypervisor and storage)."""

import errno
import json
import socket
import time
from typing import Any, Self

from ganeti import errors

_QMP_TIMEOUT = 10.0
# QEMU serves one QMP client at a time and queues one more: a third
# client's connect fails with EAGAIN until the first is done
_BUSY_RETRY_INTERVAL = 0.01


class QmpConnection:
    """A short-lived QMP session: connect, negotiate, run commands.

    Asynchronous events received while waiting for a reply are kept in
    ``events``; failures raise ``ERROR`` (subclasses narrow it).
    """

    ERROR: type[errors.GenericError] = errors.QmpError

    def __init__(self, path: str, timeout: float = _QMP_TIMEOUT):
        self._path = path
        self._timeout = timeout
        self._sock: socket.socket | None = None
        self._buf = b""
        self.events: list[dict] = []

    def _Connect(self) -> socket.socket:
        """A connected socket; a monitor busy with other clients (several
        processes may ask the same QEMU) is tried again until the
        timeout."""
        deadline = time.monotonic() + self._timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self._timeout)
            try:
                sock.connect(self._path)
                return sock
            except OSError as err:
                sock.close()
                if err.errno != errno.EAGAIN or \
                        time.monotonic() > deadline:
                    raise self.ERROR("Cannot connect to QMP socket %s: %s" %
                                     (self._path, err)) from err
            time.sleep(_BUSY_RETRY_INTERVAL)

    def __enter__(self) -> Self:
        self._sock = self._Connect()
        try:
            # Events queued for the previous session may come first
            greeting = self._Read()
            while "event" in greeting:
                self.events.append(greeting)
                greeting = self._Read()
            if "QMP" not in greeting:
                raise self.ERROR("Not a QMP greeting: %r" % greeting)
            self.Execute("qmp_capabilities")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _Read(self) -> dict:
        assert self._sock is not None
        while b"\n" not in self._buf:
            try:
                data = self._sock.recv(65536)
            except OSError as err:
                raise self.ERROR("Reading from QMP socket %s: %s" %
                                 (self._path, err)) from err
            if not data:
                raise self.ERROR("QMP socket %s closed" % self._path)
            self._buf += data
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError as err:
            raise self.ERROR("Invalid QMP message %r" % line) from err

    def Execute(self, command: str, arguments: dict | None = None) -> Any:
        """Run a command; its "return" value, QmpError on "error"."""
        assert self._sock is not None
        message: dict[str, Any] = {"execute": command}
        if arguments:
            message["arguments"] = arguments
        try:
            self._sock.sendall(json.dumps(message).encode() + b"\n")
        except OSError as err:
            raise self.ERROR("Writing to QMP socket %s: %s" %
                             (self._path, err)) from err
        while True:
            reply = self._Read()
            if "event" in reply:
                self.events.append(reply)
            elif "error" in reply:
                raise self.ERROR("QMP command %s failed: %s" %
                                 (command, reply["error"].get("desc",
                                                              reply["error"])))
            elif "return" in reply:
                return reply["return"]
