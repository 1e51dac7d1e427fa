"""A write that commits long after taking its change sequence, while later writes commit, reaches every subscriber
exactly once: live, resuming with ``Last-Event-ID`` (from before it, and from an event delivered while it was
pending), subscribed while it was pending, and through the SDK's ``watch``.

Real server processes: event streams stay open across the whole wait, and a test freezes a replica with SIGSTOP.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import time
from collections.abc import Callable, Iterator

import asyncpg
import httpx
import pytest

from registry.client import AsyncRegistryClient
from tests.support.servers import ServerProcess
from tests.support.sse import RawEvent, raw_events
from tests.support.things import collecting, thing

#: How long the row lock holds the late write.
HELD = 10.0


@pytest.fixture
def replica(own_database_url: str) -> Iterator[ServerProcess]:
    with ServerProcess(own_database_url) as process:
        yield process


async def _wait_until(condition: Callable[[], object], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"not within {within:g} s: {what}"
        await asyncio.sleep(0.05)


async def _lock_waits(connection: asyncpg.Connection) -> int:
    return int(
        await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
    )


async def _open_transactions(connection: asyncpg.Connection) -> int:
    return int(
        await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in%'"
        )
    )


def _seq(etag: str | None) -> int:
    return int(str(etag).strip('"'))


def _once_each(events: list[RawEvent]) -> collections.Counter[int]:
    return collections.Counter(event.seq for event in events)


async def test_a_write_held_by_a_row_lock_for_10_s_reaches_every_subscriber_once(replica: ServerProcess) -> None:
    base_url = replica.base_url
    late, *others = (thing(f"Late commit {number}") for number in range(4))
    ids = [late["id"], *(document["id"] for document in others)]
    locker = await asyncpg.connect(replica.database_url)
    async with AsyncRegistryClient(base_url) as sdk, httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        before = await sdk.register(late)
        async with raw_events(base_url, ids) as live, collecting(base_url, about=ids) as watched:
            await locker.execute("BEGIN")
            await locker.execute("SELECT 1 FROM description_rdf WHERE thing_id = $1 FOR UPDATE", late["id"])
            locked_at = time.monotonic()
            # The replacement takes its sequence, then waits for the lock on its RDF row.
            held = asyncio.create_task(http.put(f"/things/{late['id']}", json={**late, "title": "Committed late"}))
            while await _lock_waits(locker) == 0:
                assert time.monotonic() - locked_at < 10, "the write never waited for the lock"
                await asyncio.sleep(0.05)
            written = [await sdk.register(document) for document in others]
            # Delivered while the late write is pending (after the feed's hold-back), with ids naming it pending.
            window = await live.wait_for(3, within=8)
            assert [event.seq for event in window] == [_seq(result.etag) for result in written]
            assert not held.done()
            async with (
                raw_events(base_url, ids) as subscribed_in_window,
                raw_events(base_url, ids, last_event_id=window[0].id) as resumed_in_window,
            ):
                await resumed_in_window.wait_for(2, within=5)  # the two after it, committed
                await asyncio.sleep(max(0.0, HELD - (time.monotonic() - locked_at)))
                await locker.execute("COMMIT")
                answer = await held
                assert answer.status_code == 204, answer.text
                late_seq = int(answer.headers["ETag"].strip('"'))
                assert late_seq < min(_seq(result.etag) for result in written)
                arrived = await live.wait_for(4, within=10)
                await subscribed_in_window.wait_for(1, within=5)
                await resumed_in_window.wait_for(3, within=5)
                event = await watched.next(within=5)
                while event.seq != late_seq:
                    event = await watched.next(within=5)
                await asyncio.sleep(0.5)  # anything delivered twice would have come by now
            async with (
                raw_events(base_url, ids, last_event_id=str(_seq(before.etag))) as resumed_before,
                raw_events(base_url, ids, last_event_id=arrived[2].id) as resumed_from_pending,
            ):
                await resumed_before.wait_for(4, within=5)
                await resumed_from_pending.wait_for(1, within=5)
                await asyncio.sleep(0.5)
            assert watched.events.empty(), "watch() delivered an event twice"
    await locker.close()
    every = {late_seq, *(_seq(result.etag) for result in written)}
    assert _once_each(live.events) == dict.fromkeys(every, 1)
    assert live.events[-1].seq == late_seq  # delivered when it committed, after the later sequences
    assert _once_each(subscribed_in_window.events) == {late_seq: 1}
    # It started at a position naming the late write pending: resuming from there before any event loses nothing.
    assert subscribed_in_window.start == f"{window[-1].seq}/{window[-1].seq}/{late_seq}"
    assert _once_each(resumed_in_window.events) == dict.fromkeys(every - {window[0].seq}, 1)
    assert _once_each(resumed_before.events) == dict.fromkeys(every, 1)
    # A stream that had every event but the late one resumes with exactly it.
    assert _once_each(resumed_from_pending.events) == {late_seq: 1}
    assert "/" in window[0].id
    assert str(late_seq) in window[0].id.split("/")[2]


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")
async def test_no_event_is_lost_across_a_replica_frozen_mid_transaction(own_database_url: str) -> None:
    """Two replicas take writes from 8 clients; one is frozen (SIGSTOP) for 6 s with a transaction open, then
    resumed. A subscriber on the other replica gets every committed change once (the change log says which), and
    so does one that resumes with Last-Event-ID from an event delivered while the frozen replica's changes were
    pending."""
    documents = [thing(f"Frozen {number}") for number in range(400)]
    ids = [document["id"] for document in documents]
    with ServerProcess(own_database_url) as frozen, ServerProcess(own_database_url) as steady:
        assert frozen.process is not None
        acknowledged: list[int] = []
        async with raw_events(steady.base_url, ids) as live:

            async def writer(base_url: str, mine: list[dict[str, object]]) -> None:
                async with AsyncRegistryClient(base_url, timeout=60) as sdk:
                    for document in mine:
                        acknowledged.append(_seq((await sdk.register(document)).etag))

            shares = [documents[number::8] for number in range(8)]
            writers = [
                asyncio.create_task(writer(frozen.base_url if number % 2 else steady.base_url, share))
                for number, share in enumerate(shares)
            ]
            await _wait_until(lambda: len(acknowledged) >= 60, 30, "writes under way")
            observer = await asyncpg.connect(own_database_url)
            try:
                for _ in range(50):  # until the freeze catches the frozen replica with a transaction open
                    os.kill(frozen.process.pid, signal.SIGSTOP)
                    await asyncio.sleep(0.3)
                    if await _open_transactions(observer) > 0:
                        break
                    os.kill(frozen.process.pid, signal.SIGCONT)
                    await asyncio.sleep(0.05)
                else:
                    pytest.fail("no freeze caught a transaction open")
                await asyncio.sleep(6)
                frozen_window = list(live.events)
            finally:
                os.kill(frozen.process.pid, signal.SIGCONT)
            await asyncio.gather(*writers)
            committed = [
                row[0] for row in await observer.fetch("SELECT seq FROM changes WHERE thing_id = ANY($1::text[])", ids)
            ]
            await observer.close()
            await live.wait_for(len(committed), within=30)
            await asyncio.sleep(0.5)
        seen_in_window = {event.seq for event in frozen_window}
        missed = [seq for seq in committed if seq not in seen_in_window]
        async with raw_events(steady.base_url, ids, last_event_id=frozen_window[-1].id) as resumed:
            await resumed.wait_for(len(missed), within=10)
            await asyncio.sleep(0.5)
    assert set(acknowledged) <= set(committed)
    assert _once_each(live.events) == dict.fromkeys(committed, 1)
    assert _once_each(resumed.events) == dict.fromkeys(missed, 1)
