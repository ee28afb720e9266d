"""The IPv4 address pool of a network.

A network's ``reservations`` (addresses instances' NICs use) and
``ext_reservations`` (addresses reserved by the administrator: network,
broadcast, gateway, nodes' and the master's addresses, ``--add-reserved-ips``)
are strings of "0" and "1", one character per address of the subnet, as
Ganeti stores them. ``AddressPool`` reads and changes them on the network
object it wraps; every change is written back at once.
"""

import ipaddress

from ganeti import errors, objects

# Ganeti's bounds of a pool: at most a /16, at least a /30
IPV4_NETWORK_MIN_SIZE = 30
IPV4_NETWORK_MAX_SIZE = 16
IPV4_NETWORK_MIN_NUM_HOSTS = 2 ** (32 - IPV4_NETWORK_MIN_SIZE)
IPV4_NETWORK_MAX_NUM_HOSTS = 2 ** (32 - IPV4_NETWORK_MAX_SIZE)

_FREE = "0"
_RESERVED = "1"


class AddressPool:
    """The address pool of one ``objects.Network``."""

    def __init__(self, net: objects.Network):
        self.net = net
        self.network = ipaddress.IPv4Network(net.network, strict=False)
        size = self.network.num_addresses
        if size > IPV4_NETWORK_MAX_NUM_HOSTS:
            raise errors.AddressPoolError(
                "A big network with %s host(s) is currently not supported."
                " please specify at most a /%s network" %
                (size, IPV4_NETWORK_MAX_SIZE))
        if size < IPV4_NETWORK_MIN_NUM_HOSTS:
            raise errors.AddressPoolError(
                "A network with only %s host(s) is too small, please specify"
                " at least a /%s network" % (size, IPV4_NETWORK_MIN_SIZE))
        self.reservations = self._Bits(net.reservations, "reservations")
        self.ext_reservations = self._Bits(net.ext_reservations,
                                           "external reservations")

    def _Bits(self, stored: str | None, what: str) -> list[str]:
        size = self.network.num_addresses
        if not stored:
            return [_FREE] * size
        if len(stored) != size:
            raise errors.AddressPoolError(
                "The %s of network %s cover %d addresses, not %d" %
                (what, self.net.name, len(stored), size))
        return list(stored)

    def _Update(self) -> None:
        self.net.reservations = "".join(self.reservations)
        self.net.ext_reservations = "".join(self.ext_reservations)

    def Contains(self, address: str | None) -> bool:
        """Whether ``address`` (None: no address) is in the subnet."""
        if address is None:
            return False
        try:
            return ipaddress.ip_address(address) in self.network
        except ValueError:
            return False

    def _Index(self, address: str) -> int:
        try:
            addr = ipaddress.ip_address(address)
        except ValueError:
            raise errors.AddressPoolError("%s is not an IP address" %
                                          address) from None
        if addr not in self.network:
            raise errors.AddressPoolError("%s does not contain %s" %
                                          (self.network, addr))
        return int(addr) - int(self.network.network_address)

    def _Combined(self) -> list[bool]:
        return [_RESERVED in pair
                for pair in zip(self.reservations, self.ext_reservations)]

    def IsFull(self) -> bool:
        return all(self._Combined())

    def GetReservedCount(self) -> int:
        return sum(self._Combined())

    def GetFreeCount(self) -> int:
        return self.network.num_addresses - self.GetReservedCount()

    def GetMap(self) -> str:
        """The occupation of the subnet: "X" reserved, "." free."""
        return "".join("X" if used else "." for used in self._Combined())

    def IsReserved(self, address: str, external: bool = False) -> bool:
        bits = self.ext_reservations if external else self.reservations
        return bits[self._Index(address)] == _RESERVED

    def _Mark(self, address: str, value: str, external: bool) -> None:
        bits = self.ext_reservations if external else self.reservations
        bits[self._Index(address)] = value
        self._Update()

    def Reserve(self, address: str, external: bool = False) -> None:
        """Mark ``address`` used (by an instance, or externally)."""
        if self.IsReserved(address, external):
            if external:
                msg = "IP %s is already externally reserved" % address
            else:
                msg = "IP %s is already used by an instance" % address
            raise errors.AddressPoolError(msg)
        self._Mark(address, _RESERVED, external)

    def Release(self, address: str, external: bool = False) -> None:
        """Free ``address`` again."""
        if not self.IsReserved(address, external):
            if external:
                msg = "IP %s is not externally reserved" % address
            else:
                msg = "IP %s is not used by an instance" % address
            raise errors.AddressPoolError(msg)
        self._Mark(address, _FREE, external)

    def GenerateFree(self) -> str:
        """The first address neither used nor externally reserved."""
        try:
            idx = self._Combined().index(False)
        except ValueError:
            raise errors.AddressPoolError("%s is full" %
                                          self.network) from None
        return str(self.network[idx])

    def GetExternalReservations(self) -> list[str]:
        return [str(self.network[idx])
                for idx, bit in enumerate(self.ext_reservations)
                if bit == _RESERVED]

    def Validate(self) -> None:
        """Check the gateways lie in their subnets (Ganeti allows an IPv6
        link-local gateway outside the IPv6 subnet)."""
        if self.net.gateway is not None and \
                not self.Contains(self.net.gateway):
            raise errors.AddressPoolError(
                "Gateway %s is not in network %s" % (self.net.gateway,
                                                     self.network))
        if self.net.network6 and self.net.gateway6:
            gateway6 = ipaddress.IPv6Address(self.net.gateway6)
            network6 = ipaddress.IPv6Network(self.net.network6, strict=False)
            if gateway6 not in network6 and not gateway6.is_link_local:
                raise errors.AddressPoolError(
                    "IPv6 gateway %s is not in network %s" %
                    (gateway6, network6))

    @classmethod
    def InitializeNetwork(cls, net: objects.Network) -> "AddressPool":
        """The pool of a new network: its network and broadcast addresses
        and its gateway externally reserved."""
        pool = cls(net)
        pool._Update()
        for address in (pool.network[0], pool.network[-1]):
            pool.Reserve(str(address), external=True)
        if net.gateway is not None:
            pool.Reserve(net.gateway, external=True)
        pool.Validate()
        return pool
