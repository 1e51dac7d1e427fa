"""Concurrent PUTs share transactions (group commit) on the real database, and each keeps its own outcome."""

from __future__ import annotations

import asyncio
import json
import random
import string
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from registry.directory.service import DirectoryService, WriteOutcome
from registry.errors import BadRequest, PreconditionFailed
from registry.projections.catalog import CatalogProjector
from registry.store.database import Database
from tests.integration.conftest import directory_service

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PREFIX = "urn:test:group-commit:"


@pytest.fixture
def directory(database: Database) -> DirectoryService:
    return directory_service(database, CatalogProjector())


def agent(thing_id: str, action: str = "forecast") -> dict[str, Any]:
    document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": thing_id}
    document["actions"] = {action: {"description": "Does it", "forms": [{"href": "/it"}]}}
    return document


async def transactions_of(database_url: str, ids: list[str]) -> int:
    """How many transactions wrote the change-log rows of ``ids``."""
    connection = await asyncpg.connect(database_url)
    try:
        return int(
            await connection.fetchval("SELECT count(DISTINCT xmin::text) FROM changes WHERE thing_id = ANY($1)", ids)
        )
    finally:
        await connection.close()


async def test_concurrent_puts_share_transactions_and_all_are_stored(
    directory: DirectoryService, database_url: str
) -> None:
    ids = [f"{PREFIX}shared:{index}" for index in range(40)]
    outcomes = await asyncio.gather(*(directory.put(thing_id, agent(thing_id)) for thing_id in ids))
    assert [outcome.stored.id for outcome in outcomes] == ids
    assert all(outcome.created for outcome in outcomes)
    assert len({outcome.stored.revision for outcome in outcomes}) == 40
    assert await transactions_of(database_url, ids) < 40
    for thing_id in ids:
        assert (await directory.get(thing_id)).id == thing_id


async def test_a_refused_write_in_a_group_refuses_only_itself(directory: DirectoryService) -> None:
    base = f"{PREFIX}refused:"
    await directory.put(base + "existing", agent(base + "existing"))
    # 9,000 random letters as one action name (incompressible): the database refuses its index row, and with it
    # the whole transaction of the group; the others are then written one by one.
    too_long = "".join(random.Random(7).choices(string.ascii_letters, k=9000))
    writes = [
        directory.put(base + "one", agent(base + "one")),
        directory.put(base + "too-long", agent(base + "too-long", too_long)),
        directory.put(base + "existing", agent(base + "existing"), if_match='"not-its-etag"'),
        directory.put(base + "two", agent(base + "two")),
    ]
    one, too_long_outcome, precondition, two = await asyncio.gather(*writes, return_exceptions=True)
    assert isinstance(one, WriteOutcome)
    assert isinstance(two, WriteOutcome)
    assert isinstance(too_long_outcome, BadRequest)
    assert "exceeds a limit of the database" in too_long_outcome.detail
    assert isinstance(precondition, PreconditionFailed)
    assert (await directory.get(base + "one")).id == base + "one"
    assert (await directory.get(base + "two")).id == base + "two"


async def test_concurrent_writes_of_one_id_are_applied_one_after_the_other(directory: DirectoryService) -> None:
    thing_id = f"{PREFIX}same"
    outcomes = await asyncio.gather(*(directory.put(thing_id, agent(thing_id, f"action{index}")) for index in range(5)))
    revisions = [outcome.stored.revision for outcome in outcomes]
    assert len(set(revisions)) == 5
    assert sum(outcome.created for outcome in outcomes) == 1
    latest = await directory.get(thing_id)
    assert latest.revision == max(revisions)


async def test_concurrent_batches_compute_their_descriptions_one_batch_after_the_other(
    directory: DirectoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """So that each batch commits while the next is computed, instead of all committing together at the end."""
    computed: list[str] = []
    candidate = directory._candidate

    async def recorded(thing_id: str, document: Any) -> Any:
        computed.append(thing_id)
        return await candidate(thing_id, document)

    monkeypatch.setattr(directory, "_candidate", recorded)
    batches = [[f"{PREFIX}turns:{batch}:{index}" for index in range(5)] for batch in ("a", "b", "c")]
    outcomes = await asyncio.gather(*(directory.put_many([agent(thing_id) for thing_id in ids]) for ids in batches))
    assert all(isinstance(outcome, WriteOutcome) for batch in outcomes for outcome in batch)
    assert computed == [thing_id for ids in batches for thing_id in ids]
