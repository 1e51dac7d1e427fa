"""How a client is counted (registry/http/middleware/addresses.py) and which forwarded headers name it
(registry/http/middleware/forwarded.py); the connection protocol's per-client cap over IPv6 addresses of one /64."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.server import ServerState

from registry.http.middleware import connections
from registry.http.middleware.addresses import TrustedProxies, client_key
from registry.http.middleware.connections import HardenedHttpProtocol, connection_key
from registry.http.middleware.forwarded import forwarded_client


def test_an_ipv6_client_is_counted_by_its_64() -> None:
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("[2001:db8:1:2::7]") == "2001:db8:1:2::/64"
    assert client_key("fe80::1%eth0") == "fe80::/64"
    assert client_key("::ffff:192.0.2.9") == client_key("192.0.2.9") == "192.0.2.9"
    assert client_key("192.0.2.9") != client_key("192.0.2.10")
    assert client_key("testclient") == "testclient"


def test_a_trusted_proxy_counts_only_towards_the_total_connections() -> None:
    trusted = TrustedProxies.of(["10.0.0.0/8", "2001:db8:ffff::/48"])
    assert connection_key("10.1.2.3", trusted) is None
    assert connection_key("2001:db8:ffff:1::5", trusted) is None
    assert connection_key("192.0.2.1", trusted) == "192.0.2.1"
    assert connection_key("2001:db8:1:2::5", TrustedProxies()) == "2001:db8:1:2::/64"


class _Transport(asyncio.Transport):
    """A connection from ``peer`` that records what the server writes."""

    def __init__(self, peer: str) -> None:
        super().__init__()
        self.peer = peer
        self.written = b""
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": (self.peer, 40000), "sockname": ("::1", 8080)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def close(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


@pytest.fixture
def cap_of_three(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REGISTRY_MAX_CONNECTIONS_PER_CLIENT", "3")
    connections._limits.cache_clear()
    yield
    connections._limits.cache_clear()


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    return None


@pytest.mark.usefixtures("cap_of_three")
async def test_addresses_of_one_ipv6_64_share_the_per_client_connection_cap() -> None:
    """A host given a /64 cannot open the cap's worth of connections from each of its addresses."""
    config = Config(app=_nothing, proxy_headers=False)
    state = ServerState()
    loop = asyncio.get_running_loop()

    def connect(peer: str) -> _Transport:
        transport = _Transport(peer)
        HardenedHttpProtocol(config=config, server_state=state, app_state={}, _loop=loop).connection_made(transport)
        return transport

    accepted = [connect(f"2001:db8:1:2::{index}") for index in range(1, 4)]
    assert not any(transport.closing for transport in accepted)
    refused = connect("2001:db8:1:2:abcd::99")
    assert refused.closing
    assert refused.written.startswith(b"HTTP/1.1 503")
    assert b"connections per client" in refused.written
    # Another /64 is another client.
    assert not connect("2001:db8:1:3::1").closing
    for protocol in list(state.connections):
        protocol.connection_lost(None)


@pytest.mark.parametrize(
    ("headers", "peer", "client"),
    [
        # Only the proxy's own addition is believed: what the client wrote itself is further left.
        ([(b"x-forwarded-for", b"198.51.100.1, 203.0.113.7")], "10.0.0.1", ("203.0.113.7", None)),
        # Proxies of the chain that are trusted are skipped.
        ([(b"x-forwarded-for", b"203.0.113.7, 10.0.0.2")], "10.0.0.1", ("203.0.113.7", None)),
        (
            [(b"x-forwarded-for", b"203.0.113.7"), (b"x-forwarded-proto", b"https")],
            "10.0.0.1",
            ("203.0.113.7", "https"),
        ),
        (
            [(b"forwarded", b'for=198.51.100.1, for="[2001:db8::7]:4711";proto=https')],
            "10.0.0.1",
            ("2001:db8::7", "https"),
        ),
        ([(b"forwarded", b"for=unknown")], "10.0.0.1", ("10.0.0.1", None)),
        # Both headers, naming different clients: one of them is the client's own, and nothing says which.
        ([(b"forwarded", b"for=198.51.100.1"), (b"x-forwarded-for", b"203.0.113.7")], "10.0.0.1", None),
        ([(b"forwarded", b"for=203.0.113.7"), (b"x-forwarded-for", b"203.0.113.7")], "10.0.0.1", ("203.0.113.7", None)),
        ([], "10.0.0.1", None),
    ],
)
def test_forwarded_headers_name_the_client_behind_trusted_proxies(
    headers: list[tuple[bytes, bytes]], peer: str, client: tuple[str, str | None] | None
) -> None:
    assert forwarded_client(headers, peer, TrustedProxies.of(["10.0.0.0/8"])) == client
