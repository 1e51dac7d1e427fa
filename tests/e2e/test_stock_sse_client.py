"""The W3C WoT Discovery test suite's notification checks, with a client that reads SSE like its pinned one.

farshidtz/wot-discovery-testing (the suite behind the W3C implementation report) subscribes with r3labs/sse
v2.3.3, whose ``SubscribeChanRaw`` hands every block of the stream (up to a blank line) to the test as an event,
comments included, and the test takes the first one it receives as the change it caused. So the stream must not
send anything before the first event: not a greeting comment, not a keep-alive to a subscriber that is not idle.
``StockClient`` reproduces that reading; the scenarios are the suite's ``notification_test.go`` (create, update and
delete, each for a type subscriber, a ``diff=true`` type subscriber and an all-events subscriber).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

#: r3labs/sse v2.3.3 ends a block at the first of these.
_BLOCK_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
TD_JSON = "application/td+json"


@dataclasses.dataclass
class Event:
    id: str
    event: str
    data: bytes


class StockClient:
    """Reads blocks as r3labs/sse v2.3.3 does: each non-empty block is an event, whatever lines it holds."""

    def __init__(self, response: httpx.Response) -> None:
        self.blocks = self._blocks(response)
        self.last_id = ""

    @staticmethod
    async def _blocks(response: httpx.Response) -> AsyncIterator[bytes]:
        buffer = b""
        async for chunk in response.aiter_raw():
            buffer += chunk
            while match := _BLOCK_END.search(buffer):
                block, buffer = buffer[: match.start()], buffer[match.end() :]
                if block:
                    yield block

    async def next_event(self) -> Event:
        """``processEvent``: id, event and data lines are read, anything else is ignored, not skipped."""
        block = await anext(self.blocks)
        event = Event(id="", event="", data=b"")
        for line in re.split(rb"[\r\n]+", block):
            for field in ("id", "event", "data"):
                prefix = field.encode() + b":"
                if line.startswith(prefix):
                    value = line[len(prefix) :].removeprefix(b" ")
                    if field == "data":
                        event.data += value + b"\n"
                    else:
                        setattr(event, field, value.decode())
        event.data = event.data.removesuffix(b"\n")
        if event.id:
            self.last_id = event.id
        else:
            event.id = self.last_id
        return event


@contextlib.asynccontextmanager
async def subscribed(http: httpx.AsyncClient, path: str) -> AsyncIterator[StockClient]:
    """Subscribed once the response headers are in: the server sends them at once, before any event."""
    async with http.stream("GET", path) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        yield StockClient(response)


def mocked_td(thing_id: str, title: str = "example thing") -> dict[str, Any]:
    return {
        "@context": "https://www.w3.org/2019/wot/td/v1",
        "id": thing_id,
        "title": title,
        "security": ["nosec_sc"],
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
    }


async def put_td(http: httpx.AsyncClient, td: dict[str, Any], status: int) -> None:
    response = await http.put(f"/things/{td['id']}", content=json.dumps(td), headers={"Content-Type": TD_JSON})
    assert response.status_code == status, response.text


async def first_event(client: StockClient) -> Event:
    async with asyncio.timeout(5):  # the suite's timeoutDuration
        return await client.next_event()


def assert_notification(event: Event, event_type: str, thing_id: str) -> dict[str, Any]:
    """tdd-notification-event-id, -event-types, -filter-type, -data, -data-td-id."""
    assert event.id, "missing event ID"
    assert event.event == event_type
    data: dict[str, Any] = json.loads(event.data)
    assert data["id"] == thing_id
    return data


@pytest.fixture
async def http(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
        yield client


@pytest.mark.parametrize("path", ["/events/thing_created", "/events/thing_created?diff=true", "/events"])
async def test_create_event(http: httpx.AsyncClient, path: str) -> None:
    td = mocked_td(f"urn:uuid:{uuid.uuid4()}")
    async with subscribed(http, path) as client:
        await put_td(http, td, 201)
        data = assert_notification(await first_event(client), "thing_created", td["id"])
    if "diff=true" in path:  # tdd-notification-data-create-full
        data.pop("registration")
        assert data["title"] == td["title"]


@pytest.mark.parametrize("path", ["/events/thing_updated", "/events/thing_updated?diff=true", "/events"])
async def test_update_event(http: httpx.AsyncClient, path: str) -> None:
    td = mocked_td(f"urn:uuid:{uuid.uuid4()}")
    await put_td(http, td, 201)
    async with subscribed(http, path) as client:
        td["title"] = f"updated title for {path}"
        await put_td(http, td, 204)
        data = assert_notification(await first_event(client), "thing_updated", td["id"])
    if "diff=true" in path:  # tdd-notification-data-update-diff
        data.pop("registration", None)
        assert set(data) <= {"id", "title"}
        assert data["title"] == td["title"]


@pytest.mark.parametrize("path", ["/events/thing_deleted", "/events/thing_deleted?diff=true", "/events"])
async def test_delete_event(http: httpx.AsyncClient, path: str) -> None:
    td = mocked_td(f"urn:uuid:{uuid.uuid4()}")
    await put_td(http, td, 201)
    async with subscribed(http, path) as client:
        assert (await http.delete(f"/things/{td['id']}")).status_code == 204
        data = assert_notification(await first_event(client), "thing_deleted", td["id"])
    assert set(data) == {"id"}  # tdd-notification-data-delete-diff


async def test_keep_alives_only_after_a_whole_idle_interval(start_server: Any) -> None:
    """A subscriber hears a keep-alive comment only once its stream has been idle for a whole interval."""
    interval = 0.5
    server = start_server({"REGISTRY_SSE_KEEPALIVE": str(interval)})
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as http, subscribed(http, "/events") as client:
        loop = asyncio.get_running_loop()
        subscribed_at = loop.time()
        first = await anext(client.blocks)
        waited = loop.time() - subscribed_at
    assert first == b": keep-alive"
    # The first tick after subscribing only marks the stream idle; the next one, a whole interval later, sends.
    # (Less a little: the clock starts when the headers arrive, just after the server subscribed.)
    assert waited >= interval * 0.9
