"""Connections that have not sent a complete request head yet.

The accept loop of ganeti.http.server drives the TLS handshake and reads
the request line and headers itself, without blocking, before it gives a
connection a thread or a forked child. A connection in this phase costs
a file descriptor and a few bytes, so slow or silent clients (one header
line every few seconds, TCP connections that never start TLS) can't take
the slots well-behaved clients need:

* the handshake and the head each have a deadline;
* one address has at most ``max_per_address`` such connections, and
  all addresses together ``max_total``: a new connection beyond either
  limit replaces the oldest one (of the address, then of all), so a
  client that sends its request at once is always let in.
"""

import collections
import selectors
import socket
import time
from typing import Iterator

from OpenSSL import SSL

_READ_SIZE = 16 * 1024


class Closed(Exception):
    """The connection ended or failed before its request head."""


def HeadComplete(head: bytes | bytearray, max_head: int) -> bool:
    """Whether ``head`` holds a request line and all headers (or is too
    long to wait for more: the worker answers it with an error)."""
    if len(head) >= max_head:
        return True
    # Empty lines before the request line are allowed (RFC 9112 2.2)
    head = head.lstrip(b"\r\n")
    return b"\r\n\r\n" in head or b"\n\n" in head


class PendingConnection:
    """A connection in its handshake or request head, driven on readiness."""

    def __init__(self, sock: socket.socket, address: tuple,
                 tls: SSL.Connection | None, deadline: float):
        self.sock = sock
        self.address = address
        self.tls = tls
        self.deadline = deadline
        self.head = bytearray()
        # What to wait for before calling Advance again
        self.events = selectors.EVENT_READ
        self._handshaken = tls is None

    @property
    def host(self) -> str:
        """The client's address, the unit of the per-address limit."""
        return self.address[0]

    def Advance(self, header_timeout: float, max_head: int) -> bool:
        """Do what the socket allows; True once the request head is in.

        The head deadline (``header_timeout`` seconds) starts when the
        handshake is done. Raises Closed when the connection is over.
        """
        try:
            if not self._handshaken:
                assert self.tls is not None
                self.tls.do_handshake()
                self._handshaken = True
                self.deadline = time.monotonic() + header_timeout
            while not HeadComplete(self.head, max_head):
                data = (self.sock if self.tls is None
                        else self.tls).recv(_READ_SIZE)
                if not data:
                    raise Closed("closed before sending a request")
                self.head += data
            return True
        except SSL.WantReadError:
            self.events = selectors.EVENT_READ
        except SSL.WantWriteError:
            self.events = selectors.EVENT_WRITE
        except BlockingIOError:
            self.events = selectors.EVENT_READ
        except SSL.ZeroReturnError as err:
            raise Closed("closed before sending a request") from err
        except (SSL.Error, OSError) as err:
            phase = "request" if self._handshaken else "TLS handshake"
            raise Closed("%s failed: %s" % (phase, err)) from err
        return False

    def Close(self) -> None:
        """Close without a TLS goodbye: nothing was said yet."""
        self.sock.close()


class PendingSet:
    """The pending connections in arrival order, with their limits.

    ``max_total`` counts ``extra`` connections too (those waiting for a
    worker with their request complete, which are never replaced);
    ``max_per_address`` (0: no limit) counts only pending ones.
    """

    def __init__(self, max_total: int, max_per_address: int):
        self._max_total = max_total
        self._max_per_address = max_per_address
        self._conns: collections.OrderedDict[int, PendingConnection] = \
            collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._conns)

    def __iter__(self) -> Iterator[PendingConnection]:
        return iter(list(self._conns.values()))

    def Add(self, conn: PendingConnection) -> None:
        self._conns[id(conn)] = conn

    def Remove(self, conn: PendingConnection) -> None:
        self._conns.pop(id(conn), None)

    def MakeRoom(self, host: str,
                 extra: int) -> tuple[bool, list[PendingConnection]]:
        """Room for a new connection from ``host``: whether there is, and
        the connections to drop for it (already removed from the set)."""
        dropped = []
        if self._max_per_address:
            same = [conn for conn in self._conns.values()
                    if conn.host == host]
            if len(same) >= self._max_per_address:
                dropped.append(same[0])
                self.Remove(same[0])
        if len(self._conns) + extra >= self._max_total:
            if not self._conns:
                return False, dropped
            oldest = next(iter(self._conns.values()))
            dropped.append(oldest)
            self.Remove(oldest)
        return True, dropped

    def TakeExpired(self, now: float) -> list[PendingConnection]:
        """Remove and return the connections past their deadline."""
        expired = [conn for conn in self._conns.values()
                   if conn.deadline <= now]
        for conn in expired:
            self.Remove(conn)
        return expired

    def NextDeadline(self) -> float | None:
        return min((conn.deadline for conn in self._conns.values()),
                   default=None)
