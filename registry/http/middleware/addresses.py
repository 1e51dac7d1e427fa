"""Client addresses: how one client is counted, and which peers may say who the client behind them is.

Every per-client bound (rate limits, failed authentications, connection caps, event streams, concurrent queries)
counts a client by ``client_key`` of its address, so that no bound can be escaped by changing addresses within
what one host is routinely given, and each bound counts the same client the same way.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The prefix an IPv6 client is counted by: one host (one customer line) is routinely given a whole /64, and would
#: otherwise have a fresh budget with each of its 2^64 addresses.
IPV6_CLIENT_PREFIX = 64


def parse_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``text`` names (an IPv6 zone and brackets allowed), or None."""
    candidate = text.strip().strip("[]").partition("%")[0]
    try:
        address = ipaddress.ip_address(candidate)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def client_key(host: str) -> str:
    """The address a client is counted by: an IPv4 address as is (an IPv4-mapped IPv6 address as its IPv4
    address), an IPv6 address by its /64; anything else (a Unix socket, a test client's name) as given."""
    address = parse_address(host)
    if address is None:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


def parse_networks(entries: Iterable[str]) -> tuple[Network, ...]:
    """Addresses and CIDR blocks (``10.0.0.0/8``, ``2001:db8::/32``, ``192.0.2.7``); ValueError names a bad one."""
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(f"expected IP addresses or CIDR blocks separated by commas, got {entry!r}") from None
    return tuple(networks)


@dataclasses.dataclass(frozen=True, slots=True)
class TrustedProxies:
    """The peers (``REGISTRY_TRUSTED_PROXIES``) whose forwarded headers say who the client is; none by default."""

    networks: tuple[Network, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[str]) -> TrustedProxies:
        return cls(parse_networks(entries))

    def __bool__(self) -> bool:
        return bool(self.networks)

    def trusts(self, host: str) -> bool:
        if not self.networks:
            return False
        address = parse_address(host)
        return address is not None and any(address in network for network in self.networks)


__all__ = ["IPV6_CLIENT_PREFIX", "TrustedProxies", "client_key", "parse_address", "parse_networks"]
