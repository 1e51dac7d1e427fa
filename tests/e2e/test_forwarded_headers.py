"""Forwarded headers are believed only from REGISTRY_TRUSTED_PROXIES (registry/http/middleware/forwarded.py), for rate
limits, event-stream caps, connection caps and the access log alike. A real server: uvicorn's own handling (which trusts
loopback peers by default) is what must be off."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from tests.support.servers import ServerProcess, wait_until

#: Addresses of loopback other than 127.0.0.1 (all of 127.0.0.0/8 is loopback): a peer that is not the proxy.
OTHER_PEER = "127.0.0.2"


def access_lines(server: ServerProcess) -> list[dict[str, Any]]:
    """The server's access log lines (JSON), besides the start-up probe's."""
    lines = []
    for line in server.output().splitlines():
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if entry.get("logger") == "registry.access" and entry.get("path") != "/.well-known/wot":
                lines.append(entry)
    return lines


def logged_clients(server: ServerProcess) -> set[str]:
    """The client addresses of the server's access log lines."""
    return {entry["client"] for entry in access_lines(server)}


def client_from(server: ServerProcess, source: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(base_url=server.base_url, timeout=10, transport=httpx.HTTPTransport(local_address=source))


def test_forwarded_headers_from_a_peer_not_trusted_change_nothing(start_server: Callable[..., ServerProcess]) -> None:
    """A client on loopback (the peer uvicorn trusts by default) cannot pick a fresh address for each request."""
    server = start_server(
        {
            "REGISTRY_RATE_LIMIT_READS": "5/minute",
            "REGISTRY_MAX_STREAMS_PER_PRINCIPAL": "1",
            "REGISTRY_LOG_LEVEL": "info",
            "REGISTRY_LOG_FORMAT": "json",
        }
    )
    with client_from(server) as client:
        with client.stream("GET", "/events", headers={"X-Forwarded-For": "198.51.100.1"}) as first:
            assert first.status_code == 200
            second = client.get("/events", headers={"Forwarded": "for=198.51.100.2"})
            assert second.status_code == 429, second.text
            assert "event streams" in second.json()["detail"]
        statuses = [
            client.get("/things?limit=1", headers={"X-Forwarded-For": f"198.51.100.{index}"}).status_code
            for index in range(3, 7)
        ]
    assert statuses == [200, 200, 200, 429]
    # An access log line is written once its answer is sent: wait for the last one.
    wait_until(lambda: len(access_lines(server)) >= 6, 15, "an access log line per request")
    assert logged_clients(server) == {"127.0.0.1"}


@contextlib.contextmanager
def half_open(port: int, count: int, source: str) -> Iterator[list[socket.socket]]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
            sock.sendall(b"GET /.well-known/wot HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            sockets.append(sock)
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def refused_at_once(sock: socket.socket) -> bool:
    sock.settimeout(0.5)
    try:
        return sock.recv(65536).startswith(b"HTTP/1.1 503")
    except TimeoutError:
        return False


def test_a_trusted_proxy_names_the_client(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server(
        {
            "REGISTRY_TRUSTED_PROXIES": "127.0.0.1",
            "REGISTRY_RATE_LIMIT_READS": "2/minute",
            "REGISTRY_MAX_CONNECTIONS_PER_CLIENT": "2",
            "REGISTRY_LOG_LEVEL": "info",
            "REGISTRY_LOG_FORMAT": "json",
        }
    )
    with client_from(server) as proxy:

        def read(forwarded_for: str) -> int:
            return proxy.get("/things?limit=1", headers={"X-Forwarded-For": forwarded_for}).status_code

        assert [read("203.0.113.1"), read("203.0.113.1"), read("203.0.113.1")] == [200, 200, 429]
        # Another client behind the proxy has its own budget; what a client writes itself is not believed.
        assert read("203.0.113.2") == 200
        assert read("198.51.100.9, 203.0.113.1") == 429
    with client_from(server, OTHER_PEER) as other:
        # A peer that is not the proxy is its own address, whatever it sends.
        statuses = [
            other.get("/things?limit=1", headers={"X-Forwarded-For": f"203.0.113.{index}"}).status_code
            for index in range(10, 13)
        ]
    assert statuses == [200, 200, 429]
    expected = {"203.0.113.1", "203.0.113.2", OTHER_PEER}
    wait_until(lambda: expected <= logged_clients(server), 5, f"access log lines of {expected}")
    assert "198.51.100.9" not in logged_clients(server)
    # The proxy's connections carry many clients: only the total caps them. Any other peer has the per-client cap.
    with half_open(server.port, 4, "127.0.0.1") as proxied:
        assert not any(refused_at_once(sock) for sock in proxied)
    with half_open(server.port, 3, OTHER_PEER) as direct:
        assert [refused_at_once(sock) for sock in direct] == [False, False, True]
