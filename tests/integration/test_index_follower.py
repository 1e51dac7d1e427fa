"""The index follows the change log exactly, also when transactions commit out of seq order."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from registry.semantic.index import ChangeFollower, RdfIndex
from registry.semantic.loader import ContextLibrary
from registry.semantic.projector import RdfProjector, graph_name
from registry.semantic.rdf import RdfConverter
from registry.store.database import create_engine
from registry.store.statements import DriverConnection
from registry.store.things import Candidate, StoredDescription, ThingRepository

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
projector = RdfProjector(RdfConverter(ContextLibrary.load()), strict_contexts=False)


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(database_url, pool_size=4)
    yield engine
    await engine.dispose()


@pytest.fixture
async def repository(engine: AsyncEngine) -> AsyncIterator[ThingRepository]:
    repository = ThingRepository(engine)
    yield repository
    await repository.close()


def candidate(thing_id: str, *extra: Any) -> Candidate:
    document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": thing_id}
    return Candidate(document, None, lambda now: None, [projector.project(thing_id, document), *extra])


class Held:
    """A projection that keeps its transaction open (after its change seq was taken) until released."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    async def store(self, connection: DriverConnection, stored: StoredDescription) -> None:
        self.reached.set()
        await self.release.wait()


async def test_out_of_order_commits_are_not_lost(engine: AsyncEngine, repository: ThingRepository) -> None:
    index = RdfIndex()
    follower = ChangeFollower(engine, index)
    await follower.start()
    try:
        held = Held()

        async def produce_held(current: StoredDescription | None) -> Candidate:
            return candidate("urn:test:follower:slow", held)

        async def produce_fast(current: StoredDescription | None) -> Candidate:
            return candidate("urn:test:follower:fast")

        slow = asyncio.create_task(repository.save("urn:test:follower:slow", produce_held))
        await held.reached.wait()  # the slow write holds seq N, uncommitted
        await repository.save("urn:test:follower:fast", produce_fast)  # seq N + 1 commits first
        await follower.catch_up()
        assert index.store.contains_named_graph(graph_name("urn:test:follower:fast"))
        assert not index.store.contains_named_graph(graph_name("urn:test:follower:slow"))
        held.release.set()
        await slow
        await follower.catch_up()
        assert index.store.contains_named_graph(graph_name("urn:test:follower:slow"))
        await repository.delete("urn:test:follower:slow")
        await follower.catch_up()
        assert not index.store.contains_named_graph(graph_name("urn:test:follower:slow"))
    finally:
        await follower.stop()


async def test_notify_wakes_the_follower_without_queries(engine: AsyncEngine, repository: ThingRepository) -> None:
    index = RdfIndex()
    follower = ChangeFollower(engine, index, poll_interval=30)
    await follower.start()
    try:
        await asyncio.sleep(0.2)  # listener connected

        async def produce(current: StoredDescription | None) -> Candidate:
            return candidate("urn:test:follower:notified")

        await repository.save("urn:test:follower:notified", produce)
        for _ in range(50):
            if index.store.contains_named_graph(graph_name("urn:test:follower:notified")):
                break
            await asyncio.sleep(0.05)
        assert index.store.contains_named_graph(graph_name("urn:test:follower:notified"))
    finally:
        await follower.stop()


async def test_compaction_swaps_in_a_fresh_index_that_misses_nothing(
    engine: AsyncEngine, repository: ThingRepository
) -> None:
    follower = ChangeFollower(engine, RdfIndex())
    await follower.start()
    swapped: list[RdfIndex] = []
    follower.on_swap.append(swapped.append)
    try:
        for number in range(3):
            thing_id = f"urn:test:compact:{number}"

            async def produce(current: StoredDescription | None, thing_id: str = thing_id) -> Candidate:
                return candidate(thing_id)

            await repository.save(thing_id, produce)
            await repository.save(thing_id, produce)  # churn: replaced once
        await follower.catch_up()
        assert follower.churn >= 3
        old = follower.index
        building = asyncio.create_task(follower.compact())

        async def produce_late(current: StoredDescription | None) -> Candidate:
            return candidate("urn:test:compact:late")

        await repository.save("urn:test:compact:late", produce_late)  # during or after the build
        await repository.delete("urn:test:compact:0")
        await building
        await follower.catch_up()
        assert swapped == [follower.index]
        assert follower.index is not old
        assert follower.churn <= 2
        graphs = {str(graph) for graph in follower.index.store.named_graphs()}
        assert {"<urn:test:compact:1>", "<urn:test:compact:2>", "<urn:test:compact:late>"} <= graphs
        assert "<urn:test:compact:0>" not in graphs
    finally:
        await follower.stop()
