"""The SDK sends an idempotent request once more when the server closed its kept-alive connection before answering
(the server's idle timeout running out as the request goes out), and never a POST that creates something.

A tiny HTTP/1.1 server plays the server closing: it answers the first request of each connection and keeps it
alive, then reads the next request on it and closes the connection without an answer.
"""

from __future__ import annotations

import asyncio
import collections
import json
import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from registry.client import AsyncRegistryClient, DirectoryUnreachable, RegistryClient

THING = {"id": "urn:x", "title": "X"}
LEASE = {"id": "urn:x", "ttl": 30, "expires": "2026-01-01T00:00:30Z", "lastSeen": "2026-01-01T00:00:00Z"}


class ClosingServer:
    """Answers the first request of a connection (keep-alive), closes the connection on the second unanswered."""

    def __init__(self) -> None:
        #: (method, path) of every request read, answered or not.
        self.received: collections.Counter[tuple[str, str]] = collections.Counter()
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._connection, "127.0.0.1", 0)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for number in range(2):
                head = await reader.readuntil(b"\r\n\r\n")
                method, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                await reader.readexactly(length)
                self.received[(method, path)] += 1
                if number == 1:
                    return  # closed with the request unanswered
                writer.write(_answer(method, path))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()


def _answer(method: str, path: str) -> bytes:
    status, headers, body = "200 OK", {"Content-Type": "application/json"}, b""
    if method == "GET":
        body = json.dumps(THING).encode()
    elif method == "PUT":
        status, headers["ETag"] = "201 Created", '"7"'
    elif method == "POST" and path.endswith("/lease"):
        body = json.dumps(LEASE).encode()
    elif method == "POST":
        status, headers["Location"], headers["ETag"] = "201 Created", "/things/urn:uuid:1", '"8"'
    elif method == "DELETE":
        status = "204 No Content"
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.fixture
async def closing_server() -> AsyncIterator[ClosingServer]:
    server = ClosingServer()
    await server.start()
    yield server
    await server.stop()


async def test_idempotent_requests_on_a_connection_the_server_closed_are_sent_again(
    closing_server: ClosingServer,
) -> None:
    async with AsyncRegistryClient(closing_server.url) as client:
        assert await client.get("urn:x") == THING  # opens the connection, which the server then closes
        assert await client.get("urn:x") == THING
        assert (await client.register(THING)).created  # PUT
        await client.delete("urn:x")
        assert (await client.renew_lease("urn:x")).ttl == 30  # a lease renewal: POST, but repeatable
    # Each of those after the first met the closed connection, then was answered on a new one.
    assert closing_server.received[("GET", "/things/urn%3Ax")] == 3
    assert closing_server.received[("PUT", "/things/urn%3Ax")] == 2
    assert closing_server.received[("DELETE", "/things/urn%3Ax")] == 2
    assert closing_server.received[("POST", "/api/v1/things/urn%3Ax/lease")] == 2


async def test_a_creating_post_on_a_connection_the_server_closed_is_not_sent_again(
    closing_server: ClosingServer,
) -> None:
    anonymous = {"title": "No id"}
    async with AsyncRegistryClient(closing_server.url) as client:
        await client.get("urn:x")
        with pytest.raises(DirectoryUnreachable):
            await client.register(anonymous)  # POST /things: the server may have created it
    assert closing_server.received[("POST", "/things")] == 1


@pytest.fixture
def closing_server_thread() -> Iterator[ClosingServer]:
    server = ClosingServer()
    loop = asyncio.new_event_loop()
    loop.run_until_complete(server.start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield server
    asyncio.run_coroutine_threadsafe(server.stop(), loop).result(5)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_the_blocking_client_sends_an_idempotent_request_again_and_a_creating_post_not(
    closing_server_thread: ClosingServer,
) -> None:
    with RegistryClient(closing_server_thread.url) as client:
        client.get("urn:x")
        assert client.register(THING).created
        with pytest.raises(DirectoryUnreachable):
            client.register({"title": "No id"})
    assert closing_server_thread.received[("PUT", "/things/urn%3Ax")] == 2
    assert closing_server_thread.received[("POST", "/things")] == 1
