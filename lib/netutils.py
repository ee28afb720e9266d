"""Host name resolution and address helpers.

Name resolution consults the hosts file named by ``GANETI_HOSTS_FILE`` (same
format as /etc/hosts) before the system resolver, so a virtual cluster can
give its nodes names and 127.x.y.z addresses without root and without
editing /etc/hosts. Likewise daemon ports come from the services file named
by ``GANETI_SERVICES_FILE`` (services(5) format) before the system's
services database, so a virtual cluster can move off ports another program
holds.
"""

import errno
import os
import socket
from typing import Iterator

from ganeti import constants, errors, vcluster

ENV_HOSTS_FILE = "GANETI_HOSTS_FILE"
ENV_SERVICES_FILE = "GANETI_SERVICES_FILE"


def _TableRows(env_var: str) -> Iterator[list[str]]:
    """The rows of the hosts(5)/services(5)-style file ``env_var`` names
    (comments dropped; nothing when unset or missing)."""
    path = os.environ.get(env_var)
    if not path:
        return
    try:
        with open(path, encoding="utf-8") as fobj:
            for line in fobj:
                fields = line.split("#", 1)[0].split()
                if fields:
                    yield fields
    except FileNotFoundError:
        return


def _LookupHostsFile(name: str) -> str | None:
    for fields in _TableRows(ENV_HOSTS_FILE):
        if len(fields) >= 2 and name in fields[1:]:
            return fields[0]
    return None


def _LookupServicesFile(name: str, proto: str) -> int | None:
    """Port of ``name``/``proto`` in the GANETI_SERVICES_FILE, if any."""
    for fields in _TableRows(ENV_SERVICES_FILE):
        if len(fields) < 2 or name not in [fields[0]] + fields[2:]:
            continue
        port, _, entry_proto = fields[1].partition("/")
        if entry_proto == proto and port.isdigit():
            return int(port)
    return None


def GetDaemonPort(daemon_name: str) -> int:
    """The cluster-wide port of a network daemon, as Ganeti finds it.

    Ganeti reads it from the services database rather than from its own
    configuration, so that it can be changed outside Ganeti; it must be
    the same on every node. The GANETI_SERVICES_FILE comes first, then
    the system database, then the built-in default.
    """
    try:
        proto, default_port = constants.DAEMON_PORTS[daemon_name]
    except KeyError:
        raise errors.ProgrammerError("Unknown daemon: %s" %
                                     daemon_name) from None
    port = _LookupServicesFile(daemon_name, proto)
    if port is not None:
        return port
    try:
        return socket.getservbyname(daemon_name, proto)
    except OSError:
        return default_port


def IsValidIP4(address: str) -> bool:
    """Whether ``address`` is a dotted-quad IPv4 address."""
    # Imported here: the parameter checks every gnt-* program loads use
    # this module, and ipaddress is ~1 ms of their start-up
    import ipaddress
    try:
        ipaddress.IPv4Address(address)
        return True
    except ValueError:
        return False


def IsValidIP(address: str) -> bool:
    """Whether ``address`` is an IPv4 or IPv6 address."""
    import ipaddress  # see IsValidIP4
    try:
        ipaddress.ip_address(address)
        return True
    except ValueError:
        return False


def GetHostIP(name: str) -> str:
    """Resolve ``name`` to an address, raising ResolverError if impossible."""
    if IsValidIP(name):
        return name
    address = _LookupHostsFile(name)
    if address is not None:
        return address
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_INET,
                                   socket.SOCK_STREAM)
    except (socket.gaierror, socket.herror, UnicodeError) as err:
        raise errors.ResolverError(name, getattr(err, "errno", errno.EINVAL),
                                   "Cannot resolve %s: %s" % (name, err))
    return str(infos[0][4][0])


def GetMyName() -> str:
    """This node's name: the virtual hostname, or the FQDN."""
    return vcluster.GetVirtualHostname() or socket.getfqdn()


class Hostname:
    """A resolved host name: ``name`` and ``ip``."""

    def __init__(self, name: str | None = None):
        self.name = name or GetMyName()
        self.ip = GetHostIP(self.name)

    def __repr__(self) -> str:
        return "Hostname(%r, %r)" % (self.name, self.ip)


def TcpPing(address: str, port: int, timeout: float,
            live_port_needed: bool = False) -> bool:
    """Whether a host answers on ``address``, as Ganeti's TcpPing: an
    accepted or a refused connection both mean it is up, unless
    ``live_port_needed`` (something must listen on ``port``)."""
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except ConnectionRefusedError:
        return not live_port_needed
    except OSError:
        return False


def FormatAddress(address: tuple[str, int]) -> str:
    """``host:port``, with brackets for IPv6."""
    host, port = address
    if ":" in host:
        return "[%s]:%d" % (host, port)
    return "%s:%d" % (host, port)
