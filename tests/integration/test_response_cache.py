"""The response cache of GET /things/{id}: served bytes kept in step with PostgreSQL by the change feed."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import pytest
from sqlalchemy import text

from registry.auth.principal import Principal, Scope
from registry.auth.tenancy import TenantScope
from registry.config import Settings
from registry.directory.service import DirectoryService
from registry.errors import NotFound
from registry.events.feed import ChangeFeed
from registry.store.database import Database
from tests.integration.conftest import directory_service
from tests.support.things import thing

FEEDS: dict[DirectoryService, ChangeFeed] = {}


@pytest.fixture
async def replicas(database_url: str) -> AsyncIterator[tuple[DirectoryService, DirectoryService]]:
    """Two directories on the same database with pools and change feeds of their own, as two replicas have (the
    feed of each is ``FEEDS[directory]``)."""
    opened: list[Database] = []
    feeds: list[ChangeFeed] = []
    services: list[DirectoryService] = []
    for _ in range(2):
        database = Database(database_url, connections=3)
        await database.open()
        opened.append(database)
        service = directory_service(database)
        feed = ChangeFeed(database, poll_interval=30)
        service.cache.follow(feed)
        await feed.start()
        feeds.append(feed)
        services.append(service)
        FEEDS[service] = feed
    for feed in feeds:
        while not feed.listening:  # noqa: ASYNC110 - the feed has no event for it
            await asyncio.sleep(0.01)
    try:
        yield services[0], services[1]
    finally:
        for feed in feeds:
            await feed.stop()
        for database in opened:
            await database.close()
        for service in services:
            del FEEDS[service]


def _decoded(served: bytes) -> dict[str, Any]:
    document: dict[str, Any] = msgspec.json.decode(served)
    return document


async def test_a_hit_serves_the_same_description_with_its_own_retrieval_time(
    replicas: tuple[DirectoryService, DirectoryService],
) -> None:
    reader, _ = replicas
    document = thing("Cached")
    await reader.put(document["id"], document)
    first, etag = await reader.served(document["id"])
    assert len(reader.cache) >= 1
    await asyncio.sleep(0.002)
    second, cached_etag = await reader.served(document["id"])
    assert cached_etag == etag == (await reader.get(document["id"])).etag
    fresh = _decoded(reader.enriched_json(await reader.get(document["id"])))
    served_first, served_second = _decoded(first), _decoded(second)
    assert served_second["registration"]["retrieved"] > served_first["registration"]["retrieved"]
    for served in (served_first, served_second, fresh):
        del served["registration"]["retrieved"]
    assert served_first == served_second == fresh


async def test_a_write_on_another_replica_reaches_the_cache_through_the_feed(
    replicas: tuple[DirectoryService, DirectoryService],
) -> None:
    reader, writer = replicas
    document = thing("Before")
    await writer.put(document["id"], document)
    await reader.served(document["id"])  # a miss...
    assert _decoded((await reader.served(document["id"]))[0])["title"] == "Before"  # ...then a hit
    outcome = await writer.patch(document["id"], {"title": "After"})
    # The writer's change reaches the reader only through the reader's feed (no local eviction there).
    await FEEDS[reader].sync()
    assert document["id"] not in reader.cache
    served, etag = await reader.served(document["id"])
    assert (_decoded(served)["title"], etag) == ("After", outcome.stored.etag)
    assert document["id"] in reader.cache
    await writer.delete(document["id"])
    await FEEDS[reader].sync()
    assert document["id"] not in reader.cache
    with pytest.raises(NotFound):
        await reader.served(document["id"])


async def test_a_write_of_this_process_is_read_back_at_once(
    replicas: tuple[DirectoryService, DirectoryService],
) -> None:
    directory, _ = replicas
    document = thing("Mine")
    await directory.put(document["id"], document)
    await directory.served(document["id"])
    await directory.put(document["id"], {**document, "title": "Mine, replaced"})
    assert _decoded((await directory.served(document["id"]))[0])["title"] == "Mine, replaced"
    await directory.delete(document["id"])
    with pytest.raises(NotFound):
        await directory.served(document["id"])


async def test_a_read_overtaken_by_a_change_is_not_kept(replicas: tuple[DirectoryService, DirectoryService]) -> None:
    directory, _ = replicas
    document = thing("Overtaken")
    await directory.put(document["id"], document)
    stored = await directory.get(document["id"])
    now = dt.datetime.now(dt.UTC)
    directory.cache.reading(document["id"])
    directory.cache.evict([document["id"]])  # a change delivered while the read was under way
    directory.cache.read(document["id"], stored, directory.enriched_json(stored, now), now)
    assert document["id"] not in directory.cache
    # The next read, begun after the change, is kept.
    await directory.served(document["id"])
    assert document["id"] in directory.cache


async def test_the_tenant_is_checked_on_every_hit(replicas: tuple[DirectoryService, DirectoryService]) -> None:
    directory, _ = replicas
    member = Principal(name="ci", scopes=frozenset({Scope.WRITE}), owner_name="team-a", tenant="tenant-a")
    document = thing("Tenant A's")
    await directory.put(document["id"], document, principal=member)
    own, other = TenantScope(everything=False, tenant="tenant-a"), TenantScope(everything=False, tenant="tenant-b")
    await directory.served(document["id"], own)
    assert document["id"] in directory.cache
    with pytest.raises(NotFound):
        await directory.served(document["id"], other)
    with pytest.raises(NotFound):
        await directory.served(document["id"], TenantScope(everything=False))
    assert _decoded((await directory.served(document["id"], own))[0])["title"] == "Tenant A's"


async def test_an_expired_description_is_not_served_before_it_is_purged(
    replicas: tuple[DirectoryService, DirectoryService],
) -> None:
    directory, _ = replicas
    document = thing("Short-lived", registration={"ttl": 1})
    await directory.put(document["id"], document)
    await directory.served(document["id"])
    await asyncio.sleep(1.1)
    with pytest.raises(NotFound):
        await directory.served(document["id"])


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.01)


async def test_a_renewal_on_another_replica_evicts_at_once(
    replicas: tuple[DirectoryService, DirectoryService],
) -> None:
    reader, writer = replicas
    document = thing("Leased", registration={"ttl": 60})
    await writer.put(document["id"], document)
    before = _decoded((await reader.served(document["id"]))[0])["registration"]["expires"]
    assert document["id"] in reader.cache
    await asyncio.sleep(0.01)
    await writer.renew_lease(document["id"])  # no change-log entry: the renewal's NOTIFY evicts
    await _until(lambda: document["id"] not in reader.cache, "the reader kept the entry a renewal made stale")
    after = _decoded((await reader.served(document["id"]))[0])["registration"]["expires"]
    assert after > before


async def test_leased_entries_are_dropped_when_the_listen_connection_comes_back(database_url: str) -> None:
    database = Database(database_url, connections=3, name="cache-reconnect")
    await database.open()
    directory = directory_service(database)
    feed = ChangeFeed(database, poll_interval=30, reconnect_delay=0.05)
    directory.cache.follow(feed)
    await feed.start()
    try:
        await _until(lambda: feed.listening, "the feed never listened")
        leased, unleased = thing("Leased", registration={"ttl": 60}), thing("Unleased")
        for document in (leased, unleased):
            await directory.put(document["id"], document)
            await directory.served(document["id"])
            assert document["id"] in directory.cache

        terminated = await database.fetchval(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = 'cache-reconnect-listen'"
            )
        )
        assert terminated == 1
        await _until(lambda: not feed.listening, "the feed did not notice its lost connection")
        await _until(lambda: feed.listening, "the feed did not listen again")
        # Renewals made while it did not listen went unseen: the leased entry goes, the other (whose changes the
        # feed catches up on from the change log) stays.
        assert leased["id"] not in directory.cache
        assert unleased["id"] in directory.cache
    finally:
        await feed.stop()
        await database.close()


async def test_entries_and_bytes_are_bounded(database_url: str) -> None:
    database = Database(database_url, connections=2)
    await database.open()
    directory = directory_service(database, settings=Settings(response_cache_entries=3))
    feed = ChangeFeed(database, poll_interval=30)
    directory.cache.follow(feed)
    await feed.start()
    try:
        documents = [thing(f"Bounded {number:02}") for number in range(12)]
        for document in documents[:5]:
            await directory.put(document["id"], document)
            await directory.served(document["id"])
        assert len(directory.cache) == 3
        held = [document["id"] for document in documents if document["id"] in directory.cache]
        assert held == [document["id"] for document in documents[2:5]]  # least recently used out first

        # A byte budget for eight entries of this size (the documents differ only in their ids).
        entry_size = directory.cache.held_bytes // 3
        budget = 8 * (entry_size + 8)
        bounded = directory_service(database, settings=Settings(response_cache_bytes=budget))
        bounded.cache.follow(feed)
        large = thing("Large", description="x" * entry_size)  # more than an eighth of the budget: never kept
        await directory.put(large["id"], large)
        await bounded.served(large["id"])
        assert large["id"] not in bounded.cache
        for document in documents[5:]:
            await directory.put(document["id"], document)
        for document in documents:
            await bounded.served(document["id"])
        assert len(bounded.cache) == 8
        assert bounded.cache.held_bytes <= budget
    finally:
        await feed.stop()
        await database.close()


async def test_without_a_listening_feed_postgresql_answers(database_url: str) -> None:
    database = Database(database_url, connections=2)
    await database.open()
    directory = directory_service(database)
    try:
        document = thing("Uncached")
        await directory.put(document["id"], document)
        await directory.served(document["id"])
        assert len(directory.cache) == 0  # never followed a feed: off
        feed = ChangeFeed(database, poll_interval=30)
        stop = directory.cache.follow(feed)
        await directory.served(document["id"])  # the feed does not listen yet: kept, but not served
        assert document["id"] in directory.cache
        assert directory.cache.lookup(document["id"], dt.datetime.now(dt.UTC)) is None
        stop()
        assert len(directory.cache) == 0
    finally:
        await database.close()
