"""A scriptable LUXI server on a real Unix socket, for client-side tests.

It speaks the real protocol (ganeti.luxi framing and encoding) from a
thread, so commands and the LUXI client are exercised end to end while the
test decides what the "master daemon" answers.
"""

import contextlib
import os
import socket
import threading
from typing import Any, Callable

from ganeti import errors, luxi


class RawResponse:
    """A handler result sent as these exact bytes instead of encoded."""

    def __init__(self, data: bytes):
        self.data = data


class LuxiServer:
    """Serve LUXI requests with ``handler(method, args)``.

    The handler returns the result, raises a Ganeti error (sent encoded as
    luxid does) or returns a RawResponse. With ``close_after`` each
    connection is dropped after that many requests. ``requests`` records
    ``(method, args, version)`` in arrival order.
    """

    def __init__(self, path: str, handler: Callable[[str, list], Any],
                 close_after: int | None = None):
        self.path = path
        self.handler = handler
        self.close_after = close_after
        self.requests: list[tuple[str, list, Any]] = []
        self.connections = 0
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(path)
        self._sock.listen(16)
        self._thread = threading.Thread(target=self._Serve, daemon=True)
        self._thread.start()

    def Methods(self) -> list[str]:
        """Names of the methods called so far."""
        return [req[0] for req in self.requests]

    def _Serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._Handle, args=(conn, ),
                             daemon=True).start()

    def _Handle(self, conn: socket.socket) -> None:
        with conn:
            stream = luxi.MessageStream(conn)
            count = 0
            try:
                for msg in stream:
                    method, args, version = luxi.ParseRequest(msg)
                    self.requests.append((method, args, version))
                    try:
                        result = self.handler(method, args)
                    except errors.GenericError as err:
                        reply = luxi.FormatErrorResponse(err)
                    else:
                        reply = (result.data
                                 if isinstance(result, RawResponse)
                                 else luxi.FormatResponse(True, result))
                    stream.WriteMessage(reply)
                    count += 1
                    if self.close_after and count >= self.close_after:
                        return
            except errors.ProtocolError:
                return

    def Stop(self) -> None:
        self._sock.close()


@contextlib.contextmanager
def ServeAsMaster(directory: str, handler, monkeypatch):
    """Serve ``handler`` on a socket the CLI uses as its master socket."""
    path = os.path.join(directory, "master.sock")
    server = LuxiServer(path, handler)
    monkeypatch.setenv(luxi.ENV_FORCE_SOCKET, path)
    try:
        yield handler
    finally:
        server.Stop()
