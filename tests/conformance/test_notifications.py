"""Notifications (WoT Discovery §7.3.2.2): Server-Sent Events at /events, filtered by type, with diffs."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import msgspec
import pytest
from httpx_sse import ServerSentEvent, connect_sse

from tests.conformance.conftest import MERGE_PATCH, TD_JSON, create, mock_td, new_id, thing_path


class Subscription:
    """Events of one SSE stream, collected by a thread, for the ids a test cares about."""

    def __init__(self, client: httpx.Client, path: str, ids: set[str], headers: dict[str, str]) -> None:
        self.events: list[ServerSentEvent] = []
        self.ids = ids
        self.changed = threading.Condition()
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(client, path, headers), daemon=True)
        self._stop = False
        self._thread.start()
        assert self.ready.wait(10), "the event stream did not open"

    def _read(self, client: httpx.Client, path: str, headers: dict[str, str]) -> None:
        with contextlib.suppress(httpx.HTTPError), connect_sse(client, "GET", path, headers=headers) as source:
            assert source.response.status_code == 200
            assert source.response.headers["content-type"].startswith("text/event-stream")
            self.ready.set()
            for event in source.iter_sse():
                if self._stop:
                    return
                if event.data and msgspec.json.decode(event.data).get("id") in self.ids:
                    with self.changed:
                        self.events.append(event)
                        self.changed.notify_all()

    def wait_for(self, count: int, timeout: float = 10) -> list[ServerSentEvent]:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.events) >= count, timeout), self.events
            return list(self.events)

    def close(self) -> None:
        self._stop = True


@pytest.fixture
def subscribe(base_url: str) -> Iterator[Callable[..., Subscription]]:
    opened: list[tuple[httpx.Client, Subscription]] = []

    def open_stream(path: str, ids: set[str], headers: dict[str, str] | None = None) -> Subscription:
        client = httpx.Client(base_url=base_url, timeout=httpx.Timeout(30, read=60))
        subscription = Subscription(client, path, ids, headers or {})
        opened.append((client, subscription))
        return subscription

    yield open_stream
    for client, subscription in opened:
        subscription.close()
        client.close()


def lifecycle(client: httpx.Client, thing_id: str) -> None:
    create(client, mock_td(thing_id, description="first"))
    assert client.patch(thing_path(thing_id), json={"title": "second"}, headers=MERGE_PATCH).status_code == 204
    assert client.delete(thing_path(thing_id)).status_code == 204


def data(event: ServerSentEvent) -> dict[str, Any]:
    decoded: dict[str, Any] = msgspec.json.decode(event.data)
    return decoded


def test_tdd_notification(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    thing_id = new_id()
    stream = subscribe("/events", {thing_id})
    create(client, mock_td(thing_id))
    assert stream.wait_for(1)[0].event == "thing_created"


def test_tdd_notification_sse(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    """The stream is text/event-stream (checked on open) and each event has an event name, an id and data."""
    thing_id = new_id()
    stream = subscribe("/events", {thing_id})
    lifecycle(client, thing_id)
    for event in stream.wait_for(3):
        assert event.event
        assert event.id
        assert event.data


def test_tdd_notification_event_types(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    thing_id = new_id()
    stream = subscribe("/events", {thing_id})
    lifecycle(client, thing_id)
    assert [event.event for event in stream.wait_for(3)] == ["thing_created", "thing_updated", "thing_deleted"]


def test_tdd_notification_filter_type(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    thing_id = new_id()
    streams = {kind: subscribe(f"/events/{kind}", {thing_id}) for kind in ("thing_updated", "thing_deleted")}
    lifecycle(client, thing_id)
    for kind, stream in streams.items():
        assert [event.event for event in stream.wait_for(1)] == [kind]


def test_tdd_notification_event_id(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    """Event ids increase; reconnecting with Last-Event-ID delivers exactly the events missed since then."""
    thing_id = new_id()
    stream = subscribe("/events", {thing_id})
    lifecycle(client, thing_id)
    first, *missed = stream.wait_for(3)
    assert int(first.id) < int(missed[0].id) < int(missed[1].id)
    replay = subscribe("/events", {thing_id}, {"Last-Event-ID": first.id})
    assert [(event.id, event.event) for event in replay.wait_for(2)] == [(event.id, event.event) for event in missed]


def test_tdd_notification_data(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    thing_id = new_id()
    stream = subscribe("/events", {thing_id})
    lifecycle(client, thing_id)
    assert all(isinstance(data(event), dict) for event in stream.wait_for(3))


def test_tdd_notification_data_td_id(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    thing_id = new_id()
    stream = subscribe("/events", {thing_id})
    lifecycle(client, thing_id)
    assert [data(event) for event in stream.wait_for(3)] == [{"id": thing_id}] * 3


def test_tdd_notification_data_create_full(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    thing_id = new_id()
    stream = subscribe("/events/thing_created?diff=true", {thing_id})
    td = mock_td(thing_id, description="full")
    client.put(thing_path(thing_id), json=td, headers=TD_JSON)
    created = data(stream.wait_for(1)[0])
    assert td["@context"] in created.pop("@context")  # as served: enriched with the discovery context
    created.pop("registration", None)
    assert created == {key: value for key, value in td.items() if key != "@context"}


def test_tdd_notification_data_update_diff(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    thing_id = new_id()
    stream = subscribe("/events/thing_updated?diff=true", {thing_id})
    lifecycle(client, thing_id)
    patch = data(stream.wait_for(1)[0])
    patch.pop("registration", None)
    assert patch == {"id": thing_id, "title": "second"}


def test_tdd_notification_data_update_id(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    """Even a patch that changes nothing but the lease names the TD."""
    thing_id = new_id()
    stream = subscribe("/events/thing_updated?diff=true", {thing_id})
    create(client, mock_td(thing_id, registration={"ttl": 600}))
    client.patch(thing_path(thing_id), json={}, headers=MERGE_PATCH)
    assert data(stream.wait_for(1)[0])["id"] == thing_id
    client.delete(thing_path(thing_id))


def test_tdd_notification_data_delete_diff(client: httpx.Client, subscribe: Callable[..., Subscription]) -> None:
    thing_id = new_id()
    stream = subscribe("/events/thing_deleted?diff=true", {thing_id})
    lifecycle(client, thing_id)
    assert data(stream.wait_for(1)[0]) == {"id": thing_id}
