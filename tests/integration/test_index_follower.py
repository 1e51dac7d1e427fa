"""The SPARQL index follows the change feed exactly, also when transactions commit out of sequence order."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest

from registry.directory.service import DirectoryService
from registry.events.feed import ChangeFeed
from registry.projections.rdf import RdfProjector
from registry.semantic.graphs import graph_name
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.sparql.worker import follower as following
from registry.sparql.worker.follower import steps
from registry.sparql.worker.index import (
    APPLY_NICENESS,
    BULK_FROM_CHARACTERS,
    FLUSH_AFTER_BYTES,
    STATE_FILE,
    STORE_DIRECTORY,
    IndexFollower,
    RdfIndex,
)
from registry.store.database import Database, Transaction
from registry.store.rdf import current_rdf_of, database_identity, database_part, names_first_change
from registry.store.things import StoredDescription
from registry.wire import Notice
from tests.integration.conftest import directory_service, listening

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SLOW_ID = "urn:test:follower:slow"


def agent(thing_id: str) -> dict[str, Any]:
    return {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": thing_id}


class Held:
    """A projection that keeps its transaction open (after its change seq was taken) until released."""

    notices: Sequence[Notice] = ()

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.release = asyncio.Event()


class HoldingProjector:
    """Holds the writes of ``SLOW_ID`` in their transaction; projects nothing for other descriptions."""

    def __init__(self) -> None:
        self.held = Held()

    def project(self, thing_id: str, document: dict[str, Any]) -> Held | Nothing:
        return self.held if thing_id == SLOW_ID else Nothing()

    async def store(self, tx: Transaction, written: Sequence[tuple[Held | Nothing, StoredDescription]]) -> None:
        if any(projection is self.held for projection, _ in written):
            self.held.reached.set()
            await self.held.release.wait()

    async def remove(self, tx: Transaction, thing_ids: Sequence[str]) -> None:
        return None


class Nothing:
    notices: Sequence[Notice] = ()


@pytest.fixture
def holding() -> HoldingProjector:
    return HoldingProjector()


@pytest.fixture
def directory(database: Database, holding: HoldingProjector) -> DirectoryService:
    rdf = RdfProjector(RdfConverter(ContextLibrary.load()), strict_contexts=False)
    return directory_service(database, rdf, holding)


@pytest.fixture
async def follower(database: Database) -> AsyncIterator[IndexFollower]:
    follower = IndexFollower(database, ChangeFeed(database, poll_interval=30), RdfIndex())
    await follower.start()
    yield follower
    await follower.stop()


async def write_burst(
    directory: DirectoryService, prefix: str, seconds: float, gap: float = 0.05, written: list[str] | None = None
) -> list[str]:
    """PUT new descriptions back to back (``gap`` apart) for ``seconds``; their ids (also appended to ``written`` as
    each is acknowledged, when given)."""
    written = [] if written is None else written
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        thing_id = f"{prefix}:{len(written)}"
        await directory.put(thing_id, agent(thing_id))
        written.append(thing_id)
        await asyncio.sleep(gap)
    return written


def applied(follower: IndexFollower) -> int:
    """The change position up to which the index has applied every change (what /search/stats reports)."""
    assert follower.index.state is not None
    return follower.index.state.position


def indexed(follower: IndexFollower, thing_id: str) -> bool:
    return bool(follower.index.store.contains_named_graph(graph_name(thing_id)))


async def test_out_of_order_commits_are_not_lost(
    directory: DirectoryService, holding: HoldingProjector, follower: IndexFollower
) -> None:
    slow = asyncio.create_task(directory.put(SLOW_ID, agent(SLOW_ID)))
    await holding.held.reached.wait()  # the slow write holds seq N, uncommitted
    await directory.put("urn:test:follower:fast", agent("urn:test:follower:fast"))  # seq N + 1 commits first
    await follower.catch_up()
    assert indexed(follower, "urn:test:follower:fast")
    assert not indexed(follower, SLOW_ID)
    holding.held.release.set()
    await slow
    await follower.catch_up()
    assert indexed(follower, SLOW_ID)
    await directory.delete(SLOW_ID)
    await follower.catch_up()
    assert not indexed(follower, SLOW_ID)


async def test_notify_wakes_the_follower_without_queries(directory: DirectoryService, follower: IndexFollower) -> None:
    await listening(follower.feed)
    await directory.put("urn:test:follower:notified", agent("urn:test:follower:notified"))
    for _ in range(50):
        if indexed(follower, "urn:test:follower:notified"):
            break
        await asyncio.sleep(0.05)
    assert indexed(follower, "urn:test:follower:notified")


@pytest.fixture
async def deferring(database: Database, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[IndexFollower]:
    """A follower that holds bursts back for up to 30 s; a burst ends after 1 s without a change (the writes of
    the tests come 50 ms apart, far inside that even on a loaded machine)."""
    monkeypatch.setattr(following, "QUIET", 1.0)
    follower = IndexFollower(database, ChangeFeed(database, poll_interval=30), RdfIndex(), defer=30)
    await follower.start()
    await listening(follower.feed)
    yield follower
    await follower.stop()


async def test_a_deferring_index_applies_a_burst_once_the_writes_pause(
    directory: DirectoryService, deferring: IndexFollower
) -> None:
    before = applied(deferring)
    burst = await write_burst(directory, "urn:test:defer:burst", seconds=2)
    assert not any(indexed(deferring, thing_id) for thing_id in burst)  # held back while the writes went on
    assert deferring.pending > 0
    assert applied(deferring) == before
    for _ in range(100):  # applied once no change came for QUIET (1 s here)
        if all(indexed(deferring, thing_id) for thing_id in burst):
            break
        await asyncio.sleep(0.1)
    assert all(indexed(deferring, thing_id) for thing_id in burst)
    assert deferring.pending == 0
    assert applied(deferring) == deferring.feed.position > before


async def test_a_query_does_not_wait_for_a_burst_to_end(directory: DirectoryService, deferring: IndexFollower) -> None:
    """Holding back is never seen by a query: it applies every write acknowledged before it, burst or not. The
    query comes once five writes are acknowledged (however long a loaded machine takes for them), and the burst
    goes on for seconds after: a query that waited for the burst to end (or for the 30 s deferral) would end
    after it."""
    acknowledged: list[str] = []
    burst = asyncio.create_task(write_burst(directory, "urn:test:defer:queried", seconds=6, written=acknowledged))
    for _ in range(100):
        if len(acknowledged) >= 5:
            break
        await asyncio.sleep(0.05)
    written = list(acknowledged)
    assert len(written) >= 5, written
    assert not burst.done()
    await deferring.catch_up()
    assert all(indexed(deferring, thing_id) for thing_id in written)
    assert not burst.done()  # the writes went on meanwhile
    await burst


async def test_a_burst_is_held_back_for_at_most_the_deferral(
    database: Database, directory: DirectoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(following, "QUIET", 1.0)
    follower = IndexFollower(database, ChangeFeed(database, poll_interval=30), RdfIndex(), defer=1)
    await follower.start()
    await listening(follower.feed)
    try:
        burst = asyncio.create_task(write_burst(directory, "urn:test:defer:long", seconds=6))
        for _ in range(40):  # the first writes are applied about 1 s after them, while the burst goes on
            if indexed(follower, "urn:test:defer:long:0"):
                break
            await asyncio.sleep(0.1)
        assert indexed(follower, "urn:test:defer:long:0")
        assert not burst.done()
        await burst
    finally:
        await follower.stop()


def _position(follower: IndexFollower) -> int:
    state = follower.index.state
    assert state is not None
    return state.position


async def test_a_stored_index_takes_up_where_it_left_off(
    database: Database, directory: DirectoryService, tmp_path: Path
) -> None:
    identity = await database_identity(database)
    await directory.put("urn:test:resume:kept", agent("urn:test:resume:kept"))
    await directory.put("urn:test:resume:deleted", agent("urn:test:resume:deleted"))
    first = IndexFollower(database, ChangeFeed(database, poll_interval=30), RdfIndex.open(tmp_path, identity), identity)
    await first.start()
    assert indexed(first, "urn:test:resume:kept")
    built_at = first.index.state
    assert built_at is not None
    await first.stop()
    first.index.close()

    # While no worker runs: a write, a delete, and a lease that ends.
    await directory.put("urn:test:resume:new", agent("urn:test:resume:new"))
    await directory.delete("urn:test:resume:deleted")
    leased = {**agent("urn:test:resume:leased"), "registration": {"ttl": 1}}
    await directory.put("urn:test:resume:leased", leased)

    reopened = RdfIndex.open(tmp_path, identity)
    assert reopened.state == built_at  # not rebuilt: the stored index and what it had applied
    assert indexed_in(reopened, "urn:test:resume:kept")
    assert not indexed_in(reopened, "urn:test:resume:new")
    second = IndexFollower(database, ChangeFeed(database, poll_interval=30), reopened, identity)
    await second.start()  # applies the changes since, only those
    try:
        assert indexed(second, "urn:test:resume:new")
        assert indexed(second, "urn:test:resume:leased")
        assert not indexed(second, "urn:test:resume:deleted")
        # The recorded position is the feed's settled one: it passes a sequence gap once no transaction of the
        # cluster that began before the gap still runs, which another session's open transaction may delay.
        deadline = asyncio.get_running_loop().time() + 20
        while _position(second) <= built_at.position and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.2)
            await second.catch_up()
        assert _position(second) > built_at.position
        await asyncio.sleep(1.1)
        await second.catch_up()
        assert not indexed(second, "urn:test:resume:leased")  # its lease ended
    finally:
        await second.stop()
        second.index.close()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="per-thread nice values are Linux's")
async def test_rocksdb_writes_the_index_at_the_writers_low_priority(
    database: Database, directory: DirectoryService, tmp_path: Path
) -> None:
    """RocksDB's flush and compaction threads finish the writing after a bulk import: they must not take cores
    from the server at full priority any more than the writer thread does."""
    identity = await database_identity(database)
    await directory.put("urn:test:nice:1", agent("urn:test:nice:1"))
    follower = IndexFollower(
        database, ChangeFeed(database, poll_interval=30), RdfIndex.open(tmp_path, identity), identity
    )
    await follower.start()
    try:
        assert indexed(follower, "urn:test:nice:1")
        rocksdb = rocksdb_priorities()
        assert rocksdb
        assert set(rocksdb) == {APPLY_NICENESS}
    finally:
        await follower.stop()
        follower.index.close()


async def test_an_index_started_on_an_empty_database_is_taken_up_once_the_database_has_changes(
    own_database_url: str, tmp_path: Path
) -> None:
    """The first change completes the database's identity: the index started before it is the same database's."""
    database = Database(own_database_url, connections=4)
    await database.open()
    try:
        empty = await database_identity(database)
        assert not names_first_change(empty)
        first = IndexFollower(database, ChangeFeed(database, poll_interval=30), RdfIndex.open(tmp_path, empty), empty)
        await first.start()
        rdf = RdfProjector(RdfConverter(ContextLibrary.load()), strict_contexts=False)
        await directory_service(database, rdf).put("urn:test:first-change", agent("urn:test:first-change"))
        await first.catch_up()
        await first.stop()
        first.index.close()

        identity = await database_identity(database)
        assert names_first_change(identity)
        assert database_part(identity) == empty  # the index directory is named after this part
        reopened = RdfIndex.open(tmp_path, identity)
        assert reopened.state is not None  # taken up, not to be built again
        assert reopened.state.database == identity
        assert indexed_in(reopened, "urn:test:first-change")
        reopened.close()
    finally:
        await database.close()


async def test_an_index_of_another_database_is_rebuilt(database: Database, tmp_path: Path) -> None:
    identity = await database_identity(database)
    stale = RdfIndex.open(tmp_path, "another database")
    stale.replace([("urn:test:other-database", "<urn:a> <urn:b> <urn:c> .\n")])
    stale.remember("another database", 10**9)
    stale.close()
    index = RdfIndex.open(tmp_path, identity)
    assert index.state is None
    assert not indexed_in(index, "urn:test:other-database")
    index.close()


async def test_an_index_of_the_older_layout_is_rebuilt(database: Database, tmp_path: Path) -> None:
    """Layout 1 also copied every description into the default graph, which queries now read as part of the union:
    such a store would answer with its copies, stale or not. Its state says no layout."""
    identity = await database_identity(database)
    old = RdfIndex.open(tmp_path, identity)
    old.store.load(b"<urn:a> <urn:b> <urn:c> .\n", ox.RdfFormat.N_TRIPLES)  # a copy in the default graph
    old.remember(identity, 10**9)
    old.close()
    state = tmp_path / STATE_FILE
    state.write_text(
        json.dumps({key: value for key, value in json.loads(state.read_text()).items() if key != "layout"})
    )
    index = RdfIndex.open(tmp_path, identity)
    assert index.state is None  # to be built
    assert len(index) == 0
    index.close()
    again = RdfIndex.open(tmp_path, identity)
    assert again.state is None  # nor taken for built before it is
    again.close()


async def test_a_second_process_on_the_same_directory_neither_opens_nor_wipes_the_index(
    database: Database, tmp_path: Path
) -> None:
    identity = await database_identity(database)
    first = RdfIndex.open(tmp_path, "another database")  # a state to be wiped, were the directory not held
    first.replace([("urn:test:held", "<urn:a> <urn:b> <urn:c> .\n")])
    second = RdfIndex.open(tmp_path, identity)
    assert second.directory != tmp_path  # a temporary index of its own
    assert second.state is None
    assert indexed_in(first, "urn:test:held")
    first.close()
    second.close()


def rocksdb_priorities() -> list[int]:
    """The nice values of this process's RocksDB threads."""
    return [
        os.getpriority(os.PRIO_PROCESS, int(task.name))
        for task in Path("/proc/self/task").iterdir()
        if (task / "comm").read_text().startswith("rocksdb:")
    ]


def indexed_in(index: RdfIndex, thing_id: str) -> bool:
    return bool(index.store.contains_named_graph(graph_name(thing_id)))


def test_a_bulk_load_is_flushed_to_disk_as_it_goes(tmp_path: Path) -> None:
    """RocksDB would keep it all in memtables (up to 128 MB per column family): the index flushes every few MB."""
    index = RdfIndex.open(tmp_path, "a database")
    literal = "x" * 1000
    triples = "".join(f'<urn:test:s{number}> <urn:test:p> "{literal}{number}" .\n' for number in range(100))
    rows = [(f"urn:test:bulk:{number}", triples) for number in range(FLUSH_AFTER_BYTES // len(triples) + 1)]
    for row in rows[:-1]:  # one at a time: together they would be bulk-loaded (``BULK_FROM_CHARACTERS``)
        index.replace([row])
    newest = max((tmp_path / STORE_DIRECTORY).glob("*.sst"))  # RocksDB numbers its files in order of writing
    index.replace(rows[-1:])
    assert max((tmp_path / STORE_DIRECTORY).glob("*.sst")) > newest  # the memtables written out
    assert indexed_in(index, rows[0][0])
    index.close()


def test_a_large_new_description_is_bulk_loaded_alone(tmp_path: Path) -> None:
    """The bulk loader writes files that RocksDB ingests at once (a transaction of under ``FLUSH_AFTER_BYTES``
    would stay in the memtables): half the CPU of a transaction for a description of 26 MB of RDF."""
    index = RdfIndex.open(tmp_path, "a database")
    index.replace([("urn:test:small", '<urn:test:small> <urn:test:p> "1" .\n')])
    triples = "".join(
        f'<urn:test:large> <urn:test:p> _:b{number} .\n_:b{number} <urn:test:q> "{number}" .\n'
        for number in range(30_000)
    )
    assert BULK_FROM_CHARACTERS <= len(triples) < FLUSH_AFTER_BYTES
    newest = max((tmp_path / STORE_DIRECTORY).glob("*.sst"))
    index.replace([("urn:test:large", triples)])
    written = [path for path in (tmp_path / STORE_DIRECTORY).glob("*.sst") if path > newest]
    assert len(written) >= 6  # a file for each of the six quad indexes (RocksDB may rewrite one file on its own)
    assert index.descriptions == 2
    assert len(list(index.store.quads_for_pattern(None, None, None, graph_name("urn:test:large")))) == 60_000
    index.close()


def test_steps_are_bounded_in_descriptions_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(following, "STEP_BYTES", 100)
    monkeypatch.setattr(following, "STEP_DESCRIPTIONS", 3)
    sizes = {"a": 40, "b": 40, "c": 40, "d": 250, "e": 10, "f": 10, "h": 10, "i": 10}  # "g" is gone: no RDF
    ids = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
    assert list(steps(ids, sizes)) == [["a", "b"], ["c"], ["d"], ["e", "f", "g"], ["h", "i"]]
    assert list(steps([], sizes)) == []


class RecordingFollower(IndexFollower):
    """Records the descriptions and bytes of RDF of every step it loads or writes."""

    def __init__(self, *arguments: Any) -> None:
        super().__init__(*arguments)
        self.steps: list[tuple[int, int]] = []

    async def _load(self, rows: list[tuple[str, str]]) -> None:
        self.steps.append((len(rows), sum(len(ntriples.encode()) for _, ntriples in rows)))
        await super()._load(rows)

    async def _write(self, gone: list[str], current: dict[str, str], position: int | None) -> None:
        if current:
            self.steps.append((len(current), sum(len(ntriples.encode()) for ntriples in current.values())))
        await super()._write(gone, current, position)


async def test_building_and_catching_up_hold_a_bounded_amount_of_rdf_at_once(
    database: Database, directory: DirectoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thirty registrations of the largest size (26 MB of RDF each) took the worker past its memory limit on every
    attempt when a step was 500 descriptions: the steps are bounded in bytes of RDF."""
    first_ids = [f"urn:test:steps:{number:02d}" for number in range(7)]
    for thing_id in first_ids:
        await directory.put(thing_id, agent(thing_id))
    (one,) = await current_rdf_of(database, first_ids[:1])
    size = len(one.ntriples.encode())
    monkeypatch.setattr(following, "STEP_BYTES", int(size * 2.5))
    identity = await database_identity(database)

    first = RecordingFollower(
        database, ChangeFeed(database, poll_interval=30), RdfIndex.open(tmp_path, identity), identity
    )
    await first.start()  # builds the index (of these and of what earlier tests left)
    within_budget(first.steps, int(size * 2.5))
    assert sum(count for count, _ in first.steps) == first.index.descriptions >= 7
    assert all(indexed(first, thing_id) for thing_id in first_ids)
    await first.stop()
    first.index.close()

    later_ids = [f"urn:test:steps:{number:02d}" for number in range(7, 12)]
    for thing_id in later_ids:  # while no worker runs
        await directory.put(thing_id, agent(thing_id))
    second = RecordingFollower(
        database, ChangeFeed(database, poll_interval=30), RdfIndex.open(tmp_path, identity), identity
    )
    await second.start()  # takes the index up and catches up on the five
    try:
        within_budget(second.steps, int(size * 2.5))
        assert [count for count, _ in second.steps] == [2, 2, 1]
        assert all(indexed(second, thing_id) for thing_id in first_ids + later_ids)
    finally:
        await second.stop()
        second.index.close()


def within_budget(recorded: list[tuple[int, int]], budget: int) -> None:
    """Every step fits in ``budget`` bytes, or is one description larger than that; more than one step."""
    assert len(recorded) > 1
    assert all(size <= budget or count == 1 for count, size in recorded), recorded
