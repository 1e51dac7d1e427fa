"""A subscriber to ``/events?diff=true`` that does not read holds at most ``REGISTRY_SSE_QUEUE_BYTES`` of events
in the hub, then is told to reconnect, and loses nothing when it does (``Last-Event-ID``). In process: the stream is
driven through the application's ASGI interface, with a client that stops taking the body after its first chunk."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from registry.events.hub import Subscriber
from tests.support.in_process import local_client
from tests.support.things import thing

BOUND = 1024 * 1024
DESCRIPTIONS = 30
#: Each description (and its diff=true event) is about 200 kB: 6 MB in all, six times the bound.
LARGE = "x" * 200_000


def _scope(query: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/events",
        "raw_path": b"/events",
        "root_path": "",
        "query_string": query,
        "headers": [(b"host", b"127.0.0.1:8080"), *(headers or [])],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
        "state": {},
    }


class _Reader:
    """The client side of one event stream: ``stalls`` stops taking the body after its first chunk."""

    def __init__(self, stalls: bool) -> None:
        self.stalls = stalls
        self.received = b""
        self.first_chunk = asyncio.Event()
        self.disconnected = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] != "http.response.body":
            return
        self.received += message.get("body", b"")
        if self.received:
            self.first_chunk.set()
            if self.stalls:
                await asyncio.Event().wait()  # the socket's buffers are full: the server's write never completes

    def ids(self) -> list[int]:
        return [int(found) for found in re.findall(rb"^id: (\d+)$", self.received, re.MULTILINE)]


def _open(
    client: AsyncTestClient[Litestar],
    reader: _Reader,
    query: bytes,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> Future[None]:
    """The stream, run where the test client runs the application (its portal's event loop)."""
    return client.blocking_portal.start_task_soon(client.app, _scope(query, headers), reader.receive, reader.send)


async def _eventually(condition: Callable[[], bool], within: float = 20) -> None:
    """Until ``condition`` holds, ``within`` seconds at most (the assertions after it say what did not happen)."""
    for _ in range(int(within * 10)):
        if condition():
            return
        await asyncio.sleep(0.1)


def _close(client: AsyncTestClient[Litestar], reader: _Reader, stream: Future[None]) -> None:
    client.blocking_portal.call(reader.disconnected.set)
    stream.cancel()


async def test_a_subscriber_that_does_not_read_holds_at_most_the_byte_bound(
    own_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    held: list[int] = []
    offer = Subscriber.offer

    def measured(self: Subscriber, seq: int, frame: bytes) -> None:
        offer(self, seq, frame)
        held.append(self.queued_bytes)

    monkeypatch.setattr(Subscriber, "offer", measured)
    settings = Settings(database_url=own_database_url, db_pool_size=3, sse_queue_bytes=BOUND)
    async with local_client(create_app(settings)) as client:
        slow = _Reader(stalls=True)
        stream = _open(client, slow, b"diff=true")
        await asyncio.sleep(0.5)  # subscribed (the stream sends nothing before its first event)
        written = []
        for index in range(DESCRIPTIONS):
            document = thing(f"Large {index}", description=LARGE)
            assert (await client.put(f"/things/{document['id']}", json=document)).status_code == 201
            written.append(document["id"])
        await _eventually(lambda: len(held) >= DESCRIPTIONS)
        assert len(held) == DESCRIPTIONS, f"{len(held)} of {DESCRIPTIONS} events offered"
        assert max(held) <= BOUND, f"the hub held {max(held)} bytes for one subscriber"
        assert held[-1] == 0, "the subscriber past the bound was dropped, its queue emptied"
        _close(client, slow, stream)
        # It resumes after the last event it received and gets every later one: none is lost.
        last_seen = slow.ids()[-1]
        again = _Reader(stalls=False)
        resumed = _open(client, again, b"diff=true", [(b"last-event-id", str(last_seen).encode())])
        await _eventually(lambda: len(slow.ids()) + len(again.ids()) >= DESCRIPTIONS)
        _close(client, again, resumed)
        assert len(slow.ids()) + len(again.ids()) == DESCRIPTIONS
        assert again.ids() == sorted(again.ids())
        assert again.received.count(LARGE.encode()) == len(again.ids())
