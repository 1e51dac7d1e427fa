"""The application ``registry serve`` runs, run in-process with Litestar's test client (lifespan included)."""

from __future__ import annotations

import json
from pathlib import Path

from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


async def test_register_read_search_and_query_in_process(own_database_url: str) -> None:
    document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": "urn:test:in-process:1"}
    app = create_app(Settings(database_url=own_database_url, db_pool_size=3))
    async with AsyncTestClient(app=app) as client:
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
        answer = await client.get(
            "/search/sparql",
            params={"query": "ASK { GRAPH <urn:test:in-process:1> { ?s ?p ?o } }"},
            headers={"Accept": "application/sparql-results+json"},
        )
        assert answer.json()["boolean"] is True
