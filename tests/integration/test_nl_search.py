"""Search by a need in plain words: ranked full text over names, skills, capabilities, tags and vendors, strict
all-words matching kept for the web-search syntax and ``match=all``; in process against a migrated database."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
REDIS = "io.github.redis/mcp-redis"
DANIEL = "io.github.isdaniel/pgtuner-mcp"
CARD: dict[str, Any] = {
    "name": "Travel Helper",
    "description": "Plans trips for people",
    "url": "http://localhost:10002/",
    "version": "1.0.0",
    "capabilities": {},
    "defaultInputModes": ["text"],
    "defaultOutputModes": ["text"],
    "skills": [
        {
            "id": "book_hotel",
            "name": "Book a hotel",
            "description": "Reserves rooms",
            "tags": ["lodging"],
            "examples": ["somewhere to sleep in Lisbon"],
        }
    ],
}


def server(name: str, description: str) -> dict[str, str]:
    return {"$schema": SCHEMA, "name": name, "description": description, "version": "1.0.0"}


@pytest.fixture
async def client(own_database_url: str) -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(Settings(database_url=own_database_url, db_pool_size=3))
    async with local_client(app) as client:
        for name, text in ((REDIS, "Key-value store access"), (DANIEL, "Tune a database's configuration")):
            published = await client.post("/v0.1/publish", json=server(name, text))
            assert published.status_code == 200, published.text
        imported = await client.post(
            "/api/v1/agents/import", params={"format": "a2a", "id": "urn:test:nl:travel"}, json=CARD
        )
        assert imported.status_code == 201, imported.text
        yield client


async def found(client: AsyncTestClient[Any], **params: str) -> list[str]:
    response = await client.get("/api/v1/search", params=params)
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


async def test_a_need_in_plain_words_finds_what_matches_any_of_its_words(client: AsyncTestClient[Any]) -> None:
    assert await found(client, q="I need something to access a redis store please") == [f"urn:mcp:server:{REDIS}"]
    assert await found(client, q="where can I sleep for two nights") == ["urn:test:nl:travel"]  # a skill's example
    assert await found(client, q="lodging") == ["urn:test:nl:travel"]  # a skill's tag
    # Prefixes of the longer words: "configur" is not a word of the description
    assert await found(client, q="configur") == [f"urn:mcp:server:{DANIEL}"]


async def test_the_words_of_mcp_names_and_namespaces_match(client: AsyncTestClient[Any]) -> None:
    assert await found(client, q="redis") == [f"urn:mcp:server:{REDIS}"]
    assert await found(client, q="isdaniel") == [f"urn:mcp:server:{DANIEL}"]
    assert await found(client, q="pgtuner") == [f"urn:mcp:server:{DANIEL}"]


async def test_the_web_search_syntax_and_match_all_require_every_word(client: AsyncTestClient[Any]) -> None:
    assert await found(client, q="redis tune", match="all") == []
    assert set(await found(client, q="redis tune")) == {f"urn:mcp:server:{REDIS}", f"urn:mcp:server:{DANIEL}"}
    assert await found(client, q='"redis" tune') == []  # quotes: strict
    assert await found(client, q="redis -store") == []  # an excluded word: strict
    assert set(await found(client, q="redis OR tune")) == {f"urn:mcp:server:{REDIS}", f"urn:mcp:server:{DANIEL}"}
    assert await found(client, q="redis OR tune store") == [f"urn:mcp:server:{REDIS}"]  # OR: strict
    assert set(await found(client, q="redis or tune store")) == {f"urn:mcp:server:{REDIS}", f"urn:mcp:server:{DANIEL}"}
    refused = await client.get("/api/v1/search", params={"q": "redis", "match": "some"})
    assert refused.status_code == 400
    assert refused.json()["invalidParams"][0]["name"] == "match"


async def test_a_vendor_filter_matches_an_mcp_namespace(client: AsyncTestClient[Any]) -> None:
    assert await found(client, vendor="io.github.redis") == [f"urn:mcp:server:{REDIS}"]
    assert await found(client, vendor="isdaniel") == [f"urn:mcp:server:{DANIEL}"]
    assert await found(client, vendor="io.github.redis", q="key value") == [f"urn:mcp:server:{REDIS}"]


@pytest.mark.parametrize(
    ("namespace", "vendor"),
    [
        ("io.github.62e8546e", "62e8546e"),  # PostgreSQL's parser reads a number and a word: 62e8546, e
        ("io.github.3e5labs", "3e5labs"),  # 3e5, labs
        ("io.github.3e5labs", "3E5"),  # a prefix of the first part, in capitals
        ("io.github.abc123", "ABC123"),  # one word of letters and digits
    ],
)
async def test_a_vendor_filter_matches_words_the_parser_splits(
    client: AsyncTestClient[Any], namespace: str, vendor: str
) -> None:
    published = await client.post("/v0.1/publish", json=server(f"{namespace}/tool", "A tool"))
    assert published.status_code == 200, published.text
    assert await found(client, vendor=vendor) == [f"urn:mcp:server:{namespace}/tool"]
    assert await found(client, vendor=vendor, kind="tool") == [f"urn:mcp:server:{namespace}/tool"]


async def test_or_operators_do_not_count_against_the_term_limit(client: AsyncTestClient[Any]) -> None:
    joined = " or ".join(f"w{index}" for index in range(32))
    assert (await client.get("/api/v1/search", params={"q": joined})).status_code == 200
    refused = await client.get("/api/v1/search", params={"q": joined + " or w32"})
    assert refused.status_code == 400


async def test_scores_of_plain_words_lie_between_0_and_1(client: AsyncTestClient[Any]) -> None:
    response = await client.get("/api/v1/search", params={"q": "redis key value store"})
    scores = [item["score"] for item in response.json()["items"]]
    assert scores
    assert all(0 < score <= 1 for score in scores)


async def test_without_pgvector_needs_are_answered_lexically_and_readyz_says_so(client: AsyncTestClient[Any]) -> None:
    answer = (await client.get("/api/v1/search", params={"q": "redis key value store"})).json()
    assert answer["retrieval"] == "lexical"
    assert "pgvector" in answer["retrieval_note"]
    assert answer["items"][0]["match"] in {"strong", "weak"}
    assert answer["items"][0]["matched"][0]["id"] == REDIS  # the server's capability shares a word with the need
    check = (await client.get("/readyz")).json()["checks"]["embeddings"]
    assert check["ok"] is True
    assert check["state"] == "degraded"
    assert check["detail"].startswith("lexical only")
    assert (await client.get("/api/v1/search", params={"q": "redis", "cursor": "x"})).status_code == 400
