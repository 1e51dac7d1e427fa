"""The SPARQL index follows the change feed exactly, also when transactions commit out of sequence order."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from registry.directory.service import DirectoryService
from registry.events.feed import ChangeFeed
from registry.projections.rdf import RdfProjector
from registry.semantic.graphs import graph_name
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.sparql_worker.index import IndexFollower, RdfIndex
from registry.store.database import Database, Transaction
from registry.store.things import StoredDescription
from registry.wire import Notice
from tests.integration.conftest import directory_service

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

    async def store(self, tx: Transaction, stored: StoredDescription) -> None:
        self.reached.set()
        await self.release.wait()


class HoldingProjector:
    """Holds the writes of ``SLOW_ID`` in their transaction; projects nothing for other descriptions."""

    def __init__(self) -> None:
        self.held = Held()

    def project(self, thing_id: str, document: dict[str, Any]) -> Held | Nothing:
        return self.held if thing_id == SLOW_ID else Nothing()

    async def remove(self, tx: Transaction, thing_ids: Sequence[str]) -> None:
        return None


class Nothing:
    notices: Sequence[Notice] = ()

    async def store(self, tx: Transaction, stored: StoredDescription) -> None:
        return None


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
    for _ in range(50):  # the LISTEN connection is up
        if follower.feed.listening:
            break
        await asyncio.sleep(0.05)
    await directory.put("urn:test:follower:notified", agent("urn:test:follower:notified"))
    for _ in range(50):
        if indexed(follower, "urn:test:follower:notified"):
            break
        await asyncio.sleep(0.05)
    assert indexed(follower, "urn:test:follower:notified")


async def test_compaction_swaps_in_a_fresh_index_that_misses_nothing(
    directory: DirectoryService, follower: IndexFollower
) -> None:
    swapped: list[RdfIndex] = []
    follower.on_swap.append(swapped.append)
    for number in range(3):
        thing_id = f"urn:test:compact:{number}"
        await directory.put(thing_id, agent(thing_id))
        await directory.put(thing_id, agent(thing_id))  # churn: replaced once
    await follower.catch_up()
    assert follower.churn >= 3
    old = follower.index
    building = asyncio.create_task(follower.compact())
    await directory.put("urn:test:compact:late", agent("urn:test:compact:late"))  # during or after the build
    await directory.delete("urn:test:compact:0")
    await building
    await follower.catch_up()
    assert swapped == [follower.index]
    assert follower.index is not old
    assert follower.churn <= 2
    graphs = {str(graph) for graph in follower.index.store.named_graphs()}
    assert {"<urn:test:compact:1>", "<urn:test:compact:2>", "<urn:test:compact:late>"} <= graphs
    assert "<urn:test:compact:0>" not in graphs
