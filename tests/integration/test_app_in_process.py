"""The application ``registry serve`` runs, run in-process with Litestar's test client (lifespan included)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from litestar._asgi.asgi_router import ASGIRouter
from litestar.types import Receive, Scope, Send

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client, until_sparql_answers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


async def test_register_read_search_and_query_in_process(own_database_url: str) -> None:
    document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": "urn:test:in-process:1"}
    app = create_app(Settings(database_url=own_database_url, db_pool_size=3))
    async with local_client(app) as client:
        created = await client.put(
            "/things/urn:test:in-process:1",
            content=json.dumps(document),
            headers={"Content-Type": "application/td+json"},
        )
        assert created.status_code == 201, created.text
        read = await client.get("/things/urn:test:in-process:1")
        assert read.status_code == 200
        assert read.json()["title"] == document["title"]
        assert (await client.head("/things/urn:test:in-process:1")).status_code == 200
        found = await client.get("/api/v1/search", params={"q": "weather"})
        assert "urn:test:in-process:1" in [item["id"] for item in found.json()["items"]]
        await until_sparql_answers(client)
        answer = await client.get(
            "/search/sparql",
            params={"query": "ASK { GRAPH <urn:test:in-process:1> { ?s ?p ?o } }"},
            headers={"Accept": "application/sparql-results+json"},
        )
        assert answer.json()["boolean"] is True


async def test_a_cached_read_is_answered_before_routing(own_database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """registry/http/middleware/cached_reads.py answers it; a miss, a conditional read and a query string are routed
    (what it answers is the handler's answer: tests/e2e/test_cached_reads.py)."""
    routed: list[str] = []
    route = ASGIRouter.__call__

    async def counted(self: ASGIRouter, scope: Scope, receive: Receive, send: Send) -> None:
        routed.append(scope["path"])
        await route(self, scope, receive, send)

    monkeypatch.setattr(ASGIRouter, "__call__", counted)
    document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": "urn:test:in-process:2"}
    app = create_app(Settings(database_url=own_database_url, db_pool_size=3))
    async with local_client(app) as client:
        await client.put("/things/urn:test:in-process:2", json=document)
        deadline = time.monotonic() + 10
        while True:  # until the change feed listens and the read is kept
            before = len(routed)
            assert (await client.get("/things/urn:test:in-process:2")).status_code == 200
            if len(routed) == before:
                break
            assert time.monotonic() < deadline, "no read of the description was answered from the cache"
            await asyncio.sleep(0.05)
        before = len(routed)
        assert (await client.get("/things/urn:test:in-process:2", headers={"If-None-Match": '"1"'})).status_code == 200
        assert (await client.get("/things/urn:test:in-process:2", params={"pretty": "1"})).status_code == 200
        assert (await client.get("/things/urn:test:in-process:absent")).status_code == 404
        assert len(routed) == before + 3


async def test_a_sparql_answer_keeps_the_configured_notice_caps(own_database_url: str) -> None:
    """The notice that LMOS IRIs were rewritten obeys ``REGISTRY_MAX_NOTICE_HEADER_BYTES`` on SPARQL answers as on
    writes: too long for the cap, it is left out and ``Registry-Notices-Total`` counts it."""
    query = "ASK { ?s a <https://eclipse.dev/lmos/protocol/v1/Agent> }"
    for cap, shown in ((4096, True), (16, False)):
        app = create_app(Settings(database_url=own_database_url, db_pool_size=3, max_notice_header_bytes=cap))
        async with local_client(app) as client:
            await until_sparql_answers(client)
            answer = await client.get(
                "/search/sparql", params={"query": query}, headers={"Accept": "application/sparql-results+json"}
            )
            assert answer.status_code == 200, answer.text
            assert ("registry-notices" in answer.headers) is shown
            assert ("registry-notices-total" in answer.headers) is not shown
