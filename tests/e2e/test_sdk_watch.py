"""``watch`` against real servers: subscribed once entered (no settling sleep), and across a server that is
killed or stopped and started again, every change arrives exactly once and in order, including the changes made
(through another replica on the same database) while it was down."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest

from registry.client import AsyncRegistryClient, BadRequestError, DirectoryUnreachable, Event, RegistryClient
from tests.support.servers import ServerProcess, free_port
from tests.support.things import thing


@pytest.fixture
def replicas(
    start_server: Callable[..., ServerProcess], own_database_url: str
) -> Iterator[tuple[ServerProcess, RegistryClient]]:
    """A server to watch (restarted by the tests) and a client of another replica on the same database."""
    watched = ServerProcess(own_database_url).start()
    writer = RegistryClient(start_server(database=own_database_url).base_url)
    try:
        yield watched, writer
    finally:
        writer.close()
        watched.close()


def _change_log(writer: RegistryClient) -> list[tuple[int, str, str]]:
    """The change log, oldest first, as (seq, type, id)."""
    return [(change.seq, change.type, change.id) for change in reversed(writer.recent_changes(limit=100).items)]


def _seen(events: list[Event]) -> list[tuple[int, str, str]]:
    return [(event.seq, event.type, event.thing_id) for event in events]


async def test_watch_is_subscribed_once_entered(base_url: str) -> None:
    document = thing("Watched at once")
    async with AsyncRegistryClient(base_url) as client, client.watch("thing_created") as created:
        await client.register(document)
        while (event := await asyncio.wait_for(anext(created), 10)).thing_id != document["id"]:
            pass  # other tests create descriptions on the shared server too
    assert event.type == "thing_created"
    with RegistryClient(base_url) as blocking, blocking.watch("thing_deleted") as deleted:
        blocking.delete(document["id"])
        while (event := next(deleted)).thing_id != document["id"]:
            pass
    assert deleted.last_event_id == event.id  # the SSE id: a sequence, with the pending ones below it if any


async def test_watch_resumes_after_a_killed_server_without_loss_or_duplicates(
    replicas: tuple[ServerProcess, RegistryClient],
) -> None:
    watched, writer = replicas
    first, second, third = thing("First"), thing("Second"), thing("Third")
    async with (
        AsyncRegistryClient(watched.base_url) as client,
        client.watch(diff=True, retry_delay=0.2) as changes,
    ):
        writer.register(first)
        events = [await asyncio.wait_for(anext(changes), 10)]
        await asyncio.to_thread(watched.kill)
        # While it is down: changes through the other replica.
        writer.register(second)
        writer.patch(first["id"], {"title": "First, renamed"})
        writer.delete(second["id"])
        await asyncio.to_thread(watched.start)
        events += [await asyncio.wait_for(anext(changes), 20) for _ in range(3)]  # replayed from the log
        writer.register(third)  # after the reconnection: live
        events.append(await asyncio.wait_for(anext(changes), 10))
    assert _seen(events) == _change_log(writer)
    assert [(event.type, event.thing_id) for event in events] == [
        ("thing_created", first["id"]),
        ("thing_created", second["id"]),
        ("thing_updated", first["id"]),
        ("thing_deleted", second["id"]),
        ("thing_created", third["id"]),
    ]
    assert events[2].data == {"id": first["id"], "title": "First, renamed"}
    assert changes.last_event_id == events[-1].id


@pytest.mark.timeout(90)  # a lost event would leave next() waiting
def test_blocking_watch_broken_before_its_first_event_loses_nothing(
    replicas: tuple[ServerProcess, RegistryClient],
) -> None:
    watched, writer = replicas
    document = thing("Written while the watched server restarts")
    with RegistryClient(watched.base_url) as client, client.watch(retry_delay=0.2) as changes:
        assert changes.last_event_id is None
        watched.stop()  # ends the stream: nothing was delivered on it, so there is no event id to resume after
        writer.register(document)
        watched.start()
        event = next(changes)
        writer.delete(document["id"])
        following = next(changes)
    assert (event.type, event.thing_id) == ("thing_created", document["id"])
    assert (following.type, following.thing_id, following.seq) == ("thing_deleted", document["id"], event.seq + 1)


def test_watch_raises_what_retrying_cannot_change(base_url: str) -> None:
    with RegistryClient(base_url) as client:
        with pytest.raises(ValueError, match="event type"):
            client.watch("thing_exploded")  # type: ignore[arg-type]
        with pytest.raises(BadRequestError) as refused, client.watch(kind="robot"):  # type: ignore[arg-type]
            pass
    assert [param.name for param in refused.value.invalid_params] == ["kind"]
    with RegistryClient(f"http://127.0.0.1:{free_port()}") as nowhere, pytest.raises(DirectoryUnreachable):
        nowhere.watch().__enter__()
