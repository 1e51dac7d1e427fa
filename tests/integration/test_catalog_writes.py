"""The catalog rows written with each description: one statement that only rewrites what changed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from registry.directory.service import DirectoryService
from registry.projections.catalog import CatalogProjector
from registry.store.database import Database
from tests.integration.conftest import directory_service

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
THING_ID = "urn:test:catalog-writes"


@pytest.fixture
def directory(database: Database) -> DirectoryService:
    return directory_service(database, CatalogProjector())


@pytest.fixture
async def sql(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A plain connection of the test's own, to look at the rows as they are."""
    connection = await asyncpg.connect(database_url)
    yield connection
    await connection.close()


def agent(actions: list[str], version: str | None = None) -> dict[str, Any]:
    document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": THING_ID}
    document["actions"] = {name: {"description": f"Does {name}", "forms": [{"href": f"/{name}"}]} for name in actions}
    if version is not None:
        document["version"] = {"instance": version}
    return document


async def rows(sql: asyncpg.Connection, query: str) -> list[tuple[Any, ...]]:
    return [tuple(record) for record in await sql.fetch(query, THING_ID)]


async def test_capabilities_follow_the_description_and_unchanged_rows_stay(
    directory: DirectoryService, sql: asyncpg.Connection
) -> None:
    capabilities = "SELECT position, name, xmin::text FROM thing_capabilities WHERE thing_id = $1 ORDER BY position"
    summary = "SELECT title, xmin::text FROM thing_summaries WHERE thing_id = $1"
    await directory.put(THING_ID, agent(["forecast", "alerts", "radar"]))
    first = await rows(sql, capabilities)
    assert [(position, name) for position, name, _ in first] == [(0, "forecast"), (1, "alerts"), (2, "radar")]
    first_summary = await rows(sql, summary)

    await directory.put(THING_ID, agent(["forecast", "alerts", "radar"]))  # the same again: nothing rewritten
    assert await rows(sql, capabilities) == first
    assert await rows(sql, summary) == first_summary

    await directory.put(THING_ID, agent(["forecast", "uv_index"]))  # one kept, one replaced, one gone
    second = await rows(sql, capabilities)
    assert [(position, name) for position, name, _ in second] == [(0, "forecast"), (1, "uv_index")]
    assert second[0] == first[0]
    assert await rows(sql, summary) != first_summary  # its capability texts changed
    found = await sql.fetchval(
        "SELECT count(*) FROM thing_summaries WHERE thing_id = $1 AND search @@ to_tsquery('english', 'uv_index')",
        THING_ID,
    )
    assert found == 1

    await directory.put(THING_ID, agent([]))
    assert await rows(sql, capabilities) == []


async def test_versions_are_kept_once_and_compared_with_the_previous_one(
    directory: DirectoryService, sql: asyncpg.Connection
) -> None:
    versions = (
        "SELECT version, previous_version, compatibility IS NOT NULL, revision FROM thing_versions "
        "WHERE thing_id = $1 ORDER BY revision"
    )
    first = await directory.put(THING_ID, agent(["forecast"], "1.0.0"))
    await directory.put(THING_ID, agent(["forecast", "alerts"], "1.0.0"))  # versions are immutable
    assert await rows(sql, versions) == [("1.0.0", None, False, first.stored.revision)]
    stored = await sql.fetchval("SELECT document_text FROM thing_versions WHERE thing_id = $1", THING_ID)
    assert json.loads(stored)["actions"].keys() == {"forecast"}

    second = await directory.put(THING_ID, agent(["forecast", "alerts"], "1.1.0"))
    assert await rows(sql, versions) == [
        ("1.0.0", None, False, first.stored.revision),
        ("1.1.0", "1.0.0", True, second.stored.revision),
    ]
    verdict = await sql.fetchval(
        "SELECT compatibility->>'verdict' FROM thing_versions WHERE thing_id = $1 AND version = '1.1.0'", THING_ID
    )
    assert verdict == "compatible"
