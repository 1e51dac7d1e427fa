"""``/events`` (WoT Discovery notifications) against a real server: order, payloads, filters, replay."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import httpx
import pytest

from registry.client import AsyncRegistryClient
from tests.support.things import collecting, thing


@pytest.fixture
async def sdk(base_url: str) -> Any:
    async with AsyncRegistryClient(base_url) as client:
        yield client


async def test_events_in_order_with_ids_and_id_only_data(base_url: str, sdk: AsyncRegistryClient) -> None:
    document = thing("Ordered")
    async with collecting(base_url, about=[document["id"]]) as stream:
        await sdk.register(document)
        await sdk.patch(document["id"], {"title": "Ordered, patched"})
        await sdk.delete(document["id"])
        events = await stream.take(3)
    assert [event.type for event in events] == ["thing_created", "thing_updated", "thing_deleted"]
    assert [event.data for event in events] == [{"id": document["id"]}] * 3
    seqs = [event.seq for event in events]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 3


async def test_diff_payloads(base_url: str, sdk: AsyncRegistryClient) -> None:
    document = thing("Diffed", description="to be removed")
    async with collecting(base_url, about=[document["id"]], diff=True) as stream:
        await sdk.register(document, ttl=600)
        created = await stream.next()
        await sdk.patch(document["id"], {"title": "Diffed again", "description": None})
        await sdk.delete(document["id"])
        updated, deleted = await stream.take(2)
    assert created.data["title"] == "Diffed"
    assert created.data["id"] == document["id"]
    assert created.data["registration"]["ttl"] == 600
    assert "created" in created.data["registration"]
    assert "https://www.w3.org/2022/wot/discovery" in created.data["@context"]
    assert updated.data == {"id": document["id"], "title": "Diffed again", "description": None}
    assert deleted.data == {"id": document["id"]}


async def test_type_filter(base_url: str, sdk: AsyncRegistryClient) -> None:
    document = thing("Typed")
    async with collecting(base_url, about=[document["id"]], event_type="thing_updated", diff=True) as stream:
        await sdk.register(document)
        await sdk.patch(document["id"], {"title": "Typed 2"})
        await sdk.delete(document["id"])
        event = await stream.next()
        assert (event.type, event.data) == ("thing_updated", {"id": document["id"], "title": "Typed 2"})
        assert await stream.nothing_within(0.5)


async def test_no_history_without_last_event_id(base_url: str, sdk: AsyncRegistryClient) -> None:
    before = thing("Before subscription")
    await sdk.register(before)
    later = thing("After subscription")
    async with collecting(base_url, about=[before["id"], later["id"]]) as stream:
        await sdk.register(later)
        assert (await stream.next()).data["id"] == later["id"]


async def test_replay_with_last_event_id(base_url: str, sdk: AsyncRegistryClient) -> None:
    first, second, third = thing("Replay 1"), thing("Replay 2"), thing("Replay 3")
    ours = [first["id"], second["id"], third["id"]]
    async with collecting(base_url, about=ours) as stream:
        await sdk.register(first)
        seen = await stream.next()
    # Missed while disconnected:
    await sdk.register(second)
    await sdk.delete(first["id"])
    async with collecting(base_url, about=ours, last_event_id=seen.seq) as stream:
        replayed = await stream.take(2)
        await sdk.register(third)
        live = await stream.next()
    assert [(event.type, event.thing_id) for event in replayed] == [
        ("thing_created", second["id"]),
        ("thing_deleted", first["id"]),
    ]
    assert live.thing_id == third["id"]
    assert live.seq > replayed[-1].seq


async def test_filtered_subscription_sees_matching_things_until_they_leave(
    base_url: str, sdk: AsyncRegistryClient
) -> None:
    capability = f"forecast-{time.monotonic_ns()}"
    provider = thing("Forecaster", **{"@type": "lmos:Agent", "actions": {capability: {"forms": [{"href": "/f"}]}}})
    other = thing("Unrelated", **{"@type": "lmos:Agent", "actions": {"other": {"forms": [{"href": "/o"}]}}})
    ours = [provider["id"], other["id"]]
    async with collecting(base_url, about=ours, capability=capability, kind="agent") as stream:
        await sdk.register(other)
        await sdk.register(provider)
        await sdk.patch(other["id"], {"title": "Still unrelated"})
        await sdk.patch(provider["id"], {"actions": {capability: None, "other": {"forms": [{"href": "/o"}]}}})
        await sdk.patch(provider["id"], {"title": "Left the query"})
        await sdk.delete(provider["id"])
        await sdk.delete(other["id"])
        events = await stream.take(2)
        assert await stream.nothing_within(0.7)
    # Created while matching, updated out of the query (still told); later changes are not its business.
    assert [(event.type, event.thing_id) for event in events] == [
        ("thing_created", provider["id"]),
        ("thing_updated", provider["id"]),
    ]


async def test_filtered_replay_knows_deleted_documents(base_url: str, sdk: AsyncRegistryClient) -> None:
    marker = f"needle{time.monotonic_ns()}"
    start, matching, other = thing("start"), thing(f"has {marker} inside"), thing("no match")
    ours = [start["id"], matching["id"], other["id"]]
    async with collecting(base_url, about=ours) as stream:
        await sdk.register(start)
        position = (await stream.next()).seq
    await sdk.register(matching)
    await sdk.register(other)
    await sdk.delete(matching["id"])
    async with collecting(base_url, about=ours, q=marker.upper(), last_event_id=position) as stream:
        events = await stream.take(2)
    assert [(event.type, event.thing_id) for event in events] == [
        ("thing_created", matching["id"]),
        ("thing_deleted", matching["id"]),
    ]


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/events/thing_exploded", {}, 404),
        ("/events?diff=maybe", {}, 400),
        ("/events?kind=robot", {}, 400),
        ("/events?colour=blue", {}, 400),
        ("/events", {"Last-Event-ID": "yesterday"}, 400),
    ],
)
def test_bad_subscriptions_are_problems(client: httpx.Client, path: str, headers: dict[str, str], status: int) -> None:
    response = client.get(path, headers=headers)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["detail"]


def test_keep_alive_comments(start_server: Any) -> None:
    server = start_server({"REGISTRY_SSE_KEEPALIVE": "0.2"})
    with httpx.Client(base_url=server.base_url, timeout=5) as http, http.stream("GET", "/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        received = b""
        for chunk in response.iter_bytes():
            received += chunk
            if received.count(b": keep-alive") >= 2:
                break
    assert received.startswith(b": keep-alive")  # nothing before: no greeting comment


async def test_slow_subscriber_does_not_stall_writers(start_server: Any) -> None:
    server = start_server({"REGISTRY_SSE_QUEUE_SIZE": "5"})
    # A subscriber that never reads, with the smallest receive buffer the kernel allows.
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    slow.connect(("127.0.0.1", server.port))
    slow.sendall(b"GET /events?diff=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    big = "x" * 200_000  # 8 MB of events in all: more than socket buffers hold
    try:
        async with collecting(server.base_url) as fast, AsyncRegistryClient(server.base_url) as sdk:
            started = time.monotonic()
            ids = []
            for index in range(40):
                document = thing(f"Big {index}", description=big)
                await sdk.register(document)
                ids.append(document["id"])
            elapsed = time.monotonic() - started
            received = [event.thing_id for event in await fast.take(40)]
        assert received == ids
        assert elapsed < 10, f"writes took {elapsed:.1f} s with a stalled subscriber"
        # The slow subscriber was dropped and told to reconnect: its stream ends after what it had buffered.
        slow.settimeout(10)
        data = b""
        while b"reconnect with Last-Event-ID" not in data:
            try:
                data += await asyncio.to_thread(slow.recv, 65536)
            except TimeoutError:
                raise AssertionError(f"{len(data)} {data[:300]!r} {data[-300:]!r}") from None
        assert data.endswith(b"\r\n0\r\n\r\n"), "the response ends (last chunk)"
        assert data.count(b"event: thing_created") < 40
    finally:
        slow.close()


def test_head_on_an_event_stream_returns_at_once(client: httpx.Client) -> None:
    response = client.head("/events/thing_created", timeout=5)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")


def test_directory_description_names_the_event_affordances(client: httpx.Client) -> None:
    events = client.get("/.well-known/wot").json()["events"]
    assert set(events) == {"thingCreated", "thingUpdated", "thingDeleted"}
    assert events["thingDeleted"]["forms"][0]["href"] == "events/thing_deleted"
