"""Forwarded headers (``X-Forwarded-For``, ``X-Forwarded-Proto``, RFC 7239 ``Forwarded``), honoured only from the
peers named in ``REGISTRY_TRUSTED_PROXIES`` (none by default).

Anyone can send these headers, so a directory that believed them from any peer would let a client pick the
address its rate limits, failed authentications, stream caps and log lines count, and so exhaust another client's
budget or escape its own. uvicorn's own handling is switched off (``registry serve`` runs it with
``proxy_headers=False``: by default it trusts loopback peers); this middleware is the one place that decides, before
the access log, the cached reads and the application, which all read the client from ``scope["client"]``.

From a trusted peer, the chain of addresses is walked from the nearest hop back: trusted proxies are skipped, and
the first address that is not one is the client (each proxy appends the address it saw, so what a client wrote
itself is further left and never reached). A hop that is not an IP address (``unknown``, an obfuscated name)
ends the walk at the last trusted proxy's address. When both ``Forwarded`` and ``X-Forwarded-For`` are present
and name different clients, the request is counted by its peer's address: a proxy that sets one of them passes
the other through as the client wrote it, and nothing tells which one the proxy wrote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from registry.http.middleware.addresses import TrustedProxies, parse_address

#: One ``key=value`` pair of a Forwarded element: a token, or a quoted string.
_PAIR = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;,\s]*)\s*')
_SCHEMES = frozenset({"http", "https"})

#: One hop of a chain: the address it names (None when it names none) and the scheme it was reached by.
Hop = tuple[str | None, str | None]


def _host_of(node: str) -> str | None:
    """The address of a node (``192.0.2.1``, ``192.0.2.1:80``, ``[2001:db8::1]:80``, ``2001:db8::1``)."""
    node = node.strip().strip('"')
    if node.startswith("["):
        node = node[1:].partition("]")[0]
    elif node.count(":") == 1:
        node = node.partition(":")[0]
    address = parse_address(node)
    return None if address is None else str(address)


def _forwarded_elements(values: list[str]) -> list[dict[str, str]]:
    """The elements of ``Forwarded`` header values (RFC 7239 §4), each a dict of lower-case keys."""
    elements: list[dict[str, str]] = []
    for value in values:
        element: dict[str, str] = {}
        position = 0
        while position < len(value):
            match = _PAIR.match(value, position)
            if match is None:
                break
            key, raw = match.group(1).lower(), match.group(2)
            element.setdefault(key, raw[1:-1].replace('\\"', '"') if raw.startswith('"') else raw)
            position = match.end()
            separator = value[position : position + 1]
            position += 1
            if separator != ";":
                elements.append(element)
                element = {}
        if element:
            elements.append(element)
    return elements


def _forwarded_chain(values: list[str]) -> list[Hop]:
    chain: list[Hop] = []
    for element in _forwarded_elements(values):
        proto = element.get("proto", "").lower()
        chain.append((_host_of(element.get("for", "")), proto if proto in _SCHEMES else None))
    return chain


def _x_forwarded_chain(addresses: list[str], protos: list[str]) -> list[Hop]:
    hosts = [_host_of(entry) for value in addresses for entry in value.split(",")]
    schemes = [entry.strip().lower() for value in protos for entry in value.split(",")]
    if len(schemes) != len(hosts):
        # Aligned with the hops only when every proxy added one; otherwise the nearest proxy's applies to all.
        schemes = [schemes[-1] if schemes else ""] * len(hosts)
    return [(host, scheme if scheme in _SCHEMES else None) for host, scheme in zip(hosts, schemes, strict=True)]


def client_of(chain: list[Hop], peer: str, trusted: TrustedProxies) -> Hop:
    """The client (address, scheme) a chain of hops names, walked from the nearest hop back past trusted proxies."""
    client: Hop = (peer, None)
    for host, scheme in reversed(chain):
        if host is None:
            break
        client = (host, scheme)
        if not trusted.trusts(host):
            break
    return client


def forwarded_client(headers: Iterable[tuple[bytes, bytes]], peer: str, trusted: TrustedProxies) -> Hop | None:
    """The client a trusted peer's forwarded headers name, or None (no such headers, or ambiguous ones)."""
    forwarded: list[str] = []
    addresses: list[str] = []
    protos: list[str] = []
    for name, value in headers:
        if name == b"forwarded":
            forwarded.append(value.decode("latin-1"))
        elif name == b"x-forwarded-for":
            addresses.append(value.decode("latin-1"))
        elif name == b"x-forwarded-proto":
            protos.append(value.decode("latin-1"))
    clients = _clients_named(forwarded, addresses, protos, peer, trusted)
    if not clients or any(client[0] != clients[0][0] for client in clients):
        return None
    return clients[0]


def _clients_named(
    forwarded: list[str], addresses: list[str], protos: list[str], peer: str, trusted: TrustedProxies
) -> list[Hop]:
    """The client each kind of header names: ``Forwarded``'s, then ``X-Forwarded-For``'s (with the schemes of
    ``X-Forwarded-Proto``), or the peer reached by the scheme ``X-Forwarded-Proto`` names alone."""
    clients = []
    if forwarded:
        clients.append(client_of(_forwarded_chain(forwarded), peer, trusted))
    if addresses:
        clients.append(client_of(_x_forwarded_chain(addresses, protos), peer, trusted))
    elif protos:
        scheme = protos[-1].split(",")[-1].strip().lower()
        clients.append((peer, scheme if scheme in _SCHEMES else None))
    return clients


def honour_forwarded_headers(app: ASGIApp, trusted: TrustedProxies) -> ASGIApp:
    """Wrap ``app``: a request from a trusted proxy gets the client and scheme its forwarded headers name."""
    if not trusted:
        return app

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        peer = scope.get("client")
        if scope["type"] == ScopeType.HTTP and peer and trusted.trusts(peer[0]):
            client = forwarded_client(scope["headers"], peer[0], trusted)
            if client is not None:
                host, scheme = client
                assert host is not None
                scope["client"] = (host, 0)
                if scheme is not None:
                    scope["scheme"] = scheme
        await app(scope, receive, send)

    return middleware


__all__ = ["client_of", "forwarded_client", "honour_forwarded_headers"]
