"""The change feed: every consumer receives every committed change, in sequence order, once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

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
