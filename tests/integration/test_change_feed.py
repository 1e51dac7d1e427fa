"""The change feed: every consumer receives every committed change once, in sequence order unless a change
commits late (then when it commits, with its position)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path

import asyncpg

from registry.events.feed import ChangeFeed
from registry.store.changes import Change
from registry.store.database import Database
from tests.integration.conftest import directory_service, listening

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


async def test_a_consumer_receives_every_change_in_order(database: Database) -> None:
    feed = ChangeFeed(database, poll_interval=30)
    received: list[Change] = []

    def consume(batch: Sequence[Change]) -> None:
        received.extend(batch)

    feed.subscribe(consume)
    await feed.start()
    try:
        directory = directory_service(database)
        document = json.loads((FIXTURES / "weather-agent.td.json").read_text())
        ids = [f"urn:test:feed:{number}" for number in range(20)]
        written = await asyncio.gather(*(directory.put(i, {**document, "id": i}) for i in ids))
        await directory.delete(ids[0])
        await feed.sync()
        mine = [change for change in received if change.thing_id in ids]
        assert [change.seq for change in mine] == sorted(change.seq for change in mine)
        assert len({change.seq for change in received}) == len(received)  # each change once
        assert {change.seq for change in mine} >= {outcome.stored.revision for outcome in written}
        assert (mine[-1].type, mine[-1].thing_id) == ("thing_deleted", ids[0])
        assert feed.lag == 0
    finally:
        await feed.stop()


async def test_a_feed_with_a_read_interval_reads_a_burst_in_few_batches(database: Database) -> None:
    """Notifications coming faster than ``read_interval`` are answered by one read each interval; ``sync`` still
    delivers at once what has committed."""
    feed = ChangeFeed(database, poll_interval=30, read_interval=0.5)
    batches: list[list[str]] = []

    def consume(batch: Sequence[Change]) -> None:
        batches.append([change.thing_id for change in batch if change.thing_id.startswith("urn:test:interval:")])

    feed.subscribe(consume)
    await feed.start()
    try:
        await listening(feed)
        directory = directory_service(database)
        document = json.loads((FIXTURES / "weather-agent.td.json").read_text())
        ids = [f"urn:test:interval:{number}" for number in range(10)]
        for thing_id in ids:  # ten commits, ten notifications, within about one interval
            await directory.put(thing_id, {**document, "id": thing_id})
        await asyncio.sleep(1.2)
        mine = [batch for batch in batches if batch]
        assert [thing_id for batch in mine for thing_id in batch] == ids
        assert len(mine) <= 4  # not one read per notification
        await directory.put("urn:test:interval:synced", {**document, "id": "urn:test:interval:synced"})
        await feed.sync()
        assert batches[-1] == ["urn:test:interval:synced"]
    finally:
        await feed.stop()


async def test_a_feed_without_diffs_delivers_the_same_changes_without_their_documents(database: Database) -> None:
    """What the SPARQL indexes follow: which descriptions changed, how and when, not the documents (the diff of a
    creation is the whole document)."""
    full, light = ChangeFeed(database, poll_interval=30), ChangeFeed(database, poll_interval=30, diffs=False)
    received: dict[bool, list[Change]] = {True: [], False: []}
    full.subscribe(received[True].extend)
    light.subscribe(received[False].extend)
    await full.start()
    await light.start()
    try:
        directory = directory_service(database)
        document = json.loads((FIXTURES / "weather-agent.td.json").read_text())
        ids = [f"urn:test:light:{number}" for number in range(5)]
        for thing_id in ids:
            await directory.put(thing_id, {**document, "id": thing_id})
        await directory.delete(ids[0])
        await full.sync()
        await light.sync()
        mine = {flag: [change for change in changes if change.thing_id in ids] for flag, changes in received.items()}
        assert len(mine[True]) == len(ids) + 1
        for with_diff, without in zip(mine[True], mine[False], strict=True):
            assert (without.seq, without.thing_id, without.type, without.at) == (
                with_diff.seq,
                with_diff.thing_id,
                with_diff.type,
                with_diff.at,
            )
            assert (without.diff_text, without.ttl, without.expires) == (None, None, None)
        created = mine[True][0].diff
        assert created is not None
        assert created["id"] == ids[0]
    finally:
        await full.stop()
        await light.stop()


async def _insert_change(connection: asyncpg.Connection, thing_id: str) -> int:
    return int(
        await connection.fetchval(
            "INSERT INTO changes (thing_id, type, at) VALUES ($1, 'thing_updated', now()) RETURNING seq", thing_id
        )
    )


async def test_a_gap_left_by_a_rolled_back_write_holds_nothing_back_once_the_horizon_passes(
    database: Database, database_url: str
) -> None:
    """Not for the 30 s ``gap_timeout``: the rolled-back transaction has ended, so its sequence is proven empty
    (as soon as every transaction of the cluster that was running then has ended too)."""
    feed = ChangeFeed(database, poll_interval=30, gap_timeout=30)
    received: list[Change] = []
    feed.subscribe(received.extend)
    await feed.start()
    rolled_back, committing = await asyncpg.connect(database_url), await asyncpg.connect(database_url)
    try:
        await rolled_back.execute("BEGIN")
        empty = await _insert_change(rolled_back, "urn:test:horizon:rolled-back")
        later = [await _insert_change(committing, "urn:test:horizon:committed") for _ in range(2)]
        await rolled_back.execute("ROLLBACK")
        started = time.monotonic()
        await feed.sync()
        assert time.monotonic() - started < 10
        assert [change.seq for change in received if change.seq > empty] == later
        assert [change.event_id for change in received if change.seq in later] == [None, None]  # nothing pending
        assert feed.pending == 0
    finally:
        await feed.stop()
        await rolled_back.close()
        await committing.close()


async def test_a_write_committed_late_is_delivered_when_it_commits_with_its_position(
    database: Database, database_url: str
) -> None:
    feed = ChangeFeed(database, poll_interval=30, gap_timeout=0.3)
    received: list[Change] = []
    feed.subscribe(received.extend)
    await feed.start()
    slow, quick = await asyncpg.connect(database_url), await asyncpg.connect(database_url)
    try:
        await slow.execute("BEGIN")
        late = await _insert_change(slow, "urn:test:late:slow")
        later = await _insert_change(quick, "urn:test:late:quick")
        await feed.sync()  # holds back for gap_timeout, then delivers past the pending sequence
        assert [(change.seq, change.event_id) for change in received if change.seq >= late] == [
            (later, f"{later}/{later}/{late}")
        ]
        assert feed.settled == late - 1
        await asyncio.sleep(1)  # the horizon check runs, and must not give up a transaction still running
        await feed.sync()
        assert feed.pending == 1
        await slow.execute("COMMIT")
        await feed.sync()
        assert [(change.seq, change.event_id) for change in received if change.seq >= late][-1] == (
            late,
            f"{late}/{later}/",
        )
        assert feed.pending == 0
        assert feed.late_deliveries == 1
    finally:
        await feed.stop()
        await slow.close()
        await quick.close()
