"""Full-text words stored under another product gazetteer (or composition) are computed again by the server's
background job, without a write of the description: on the real PostgreSQL, with vectors off (the job does not
depend on them)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from registry.descriptions.summary import SEARCH_TEXTS
from registry.projections import search_words as job
from registry.projections.search_words import SearchWordsRefresh
from registry.store import search_words
from registry.store.database import Database
from tests.support.in_process import local_client

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
NAME = "io.github.someone/strava-mcp"
OLD = "search-texts-1+gazetteer-000000000000"
#: A word of Strava's purposes (registry/descriptions/data/products.txt) that the server's own text lacks.
PURPOSE_WORD = "cycling"


async def row(url: str) -> asyncpg.Record:
    connection = await asyncpg.connect(url)
    try:
        found = await connection.fetchrow(
            "SELECT search::text AS words, search_version, search @@ to_tsquery('english', $1) AS purposes, "
            "xmin::text AS xmin "
            "FROM thing_summaries WHERE thing_id LIKE $2",
            PURPOSE_WORD,
            f"%{NAME}%",
        )
        assert found is not None
        return found
    finally:
        await connection.close()


async def as_before_the_upgrade(url: str) -> asyncpg.Record:
    """The row as a server with another list left it: words without the purposes, the list's digest not ours; as
    written (``purposes``, and ``xmin``, which a later write of the row changes)."""
    connection = await asyncpg.connect(url)
    try:
        written = await connection.fetchrow(
            "UPDATE thing_summaries SET search = setweight(to_tsvector('english', 'strava-mcp strava mcp'), 'A'), "
            "search_version = $1 RETURNING search @@ to_tsquery('english', $2) AS purposes, xmin::text AS xmin",
            OLD,
            PURPOSE_WORD,
        )
        assert written is not None
        return written
    finally:
        await connection.close()


async def check(client: AsyncTestClient[Any]) -> dict[str, Any]:
    return dict((await client.get("/readyz")).json()["checks"]["search_words"])


@pytest.fixture
def idle() -> float:
    """Seconds between the server's own refresh rounds: short where a test waits for one."""
    return 0.2


@pytest.fixture
async def client(
    own_database_url: str, monkeypatch: pytest.MonkeyPatch, idle: float
) -> AsyncIterator[AsyncTestClient[Any]]:
    monkeypatch.setattr(job, "IDLE", idle)
    app = create_app(Settings(database_url=own_database_url, db_pool_size=3, embeddings="off"))
    async with local_client(app) as client:
        server = {"$schema": SCHEMA, "name": NAME, "description": "An MCP server", "version": "1.0.0"}
        assert (await client.post("/v0.1/publish", json=server)).status_code == 200
        yield client


async def test_words_of_another_gazetteer_are_refreshed_without_a_write(
    client: AsyncTestClient[Any], own_database_url: str
) -> None:
    written = await row(own_database_url)
    assert written["search_version"] == SEARCH_TEXTS
    assert written["purposes"]
    stale = await as_before_the_upgrade(own_database_url)
    assert not stale["purposes"]
    deadline = time.monotonic() + 30
    # The server's job may refresh the row at any moment from now: it is refreshed once a later write holds it.
    while (refreshed := await row(own_database_url))["xmin"] == stale["xmin"]:
        assert time.monotonic() < deadline, "the job did not refresh the row"
        await asyncio.sleep(0.1)
    assert refreshed["search_version"] == SEARCH_TEXTS
    assert refreshed["purposes"]
    assert refreshed["words"] == written["words"]  # the words a write gives
    while (shown := await check(client))["state"] != "ok":
        assert time.monotonic() < deadline, shown
        await asyncio.sleep(0.1)
    assert shown["detail"].startswith("1 of 1 descriptions' words current")
    metrics = (await client.get("/metrics")).text
    assert "registry_search_words_stale 0.0" in metrics
    assert "registry_search_words_current 1.0" in metrics
    answer = await client.get("/api/v1/search", params={"q": "cycling workouts"})
    assert answer.status_code == 200, answer.text
    assert [NAME in item["id"] for item in answer.json()["items"]] == [True]


@pytest.mark.parametrize("idle", [3600.0])  # the server's own job stays out of the rows this test refreshes
async def test_the_job_shows_its_progress_and_resumes_in_batches(
    client: AsyncTestClient[Any], own_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(4):
        server = {"$schema": SCHEMA, "name": f"io.github.someone/github-{number}", "description": "Repos"}
        assert (await client.post("/v0.1/publish", json={**server, "version": "1.0.0"})).status_code == 200
    database = Database(own_database_url, connections=2)
    await database.open()
    try:
        other = SearchWordsRefresh(database, version=OLD)  # a server of another list: every row is stale to it
        monkeypatch.setattr(job, "BATCH", 2)
        assert await other.refresh() == 5
        assert other.state() == (False, f"5 of 5 descriptions' words current ({OLD})")
        assert await other.refresh() == 0  # nothing left: what is left is read from the database
    finally:
        await database.close()


@pytest.mark.parametrize("idle", [3600.0])  # the server's own job would refresh the row this test leaves stale
async def test_a_refresh_does_not_replace_the_words_of_a_summary_written_meanwhile(
    client: AsyncTestClient[Any], own_database_url: str
) -> None:
    await as_before_the_upgrade(own_database_url)
    database = Database(own_database_url, connections=2)
    await database.open()
    try:
        (stale,) = await search_words.stale(database, SEARCH_TEXTS, "", 10)
        read_before = search_words.Stale(stale.thing_id, stale.summary_json.replace("An MCP server", "Old text"))
        texts = ("old", "old", "old", "old")
        assert await search_words.write(database, SEARCH_TEXTS, [search_words.Refreshed(read_before, texts)]) == 0
        assert (await row(own_database_url))["search_version"] == OLD
        assert job.texts_of([stale])[0].texts[3].startswith("fitness tracking")
    finally:
        await database.close()
