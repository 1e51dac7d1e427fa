"""One LMOS agent, one A2A Agent Card and one MCP server offering the same capability: one search with a
convention facet, one resolution, SPARQL over all three, and events for all three."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from registry.client import AsyncRegistryClient
from tests.conftest import DATA
from tests.support.things import collecting

TOKEN = uuid.uuid4().hex[:8]
CAPABILITY = f"forecast{TOKEN}"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
AGENT_ID = f"urn:{TOKEN}:lmos-agent"
CARD_ID = f"urn:{TOKEN}:a2a-card"
SERVER_NAME = f"io.github.t{TOKEN}/{CAPABILITY}"
SERVER_ID = f"urn:mcp:server:{SERVER_NAME}"


def lmos_agent() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / "weather-agent.td.json").read_text())
    document["id"] = AGENT_ID
    document["title"] = f"Weather agent {TOKEN}"
    document["version"] = {"instance": "1.2.0"}
    document["lmos:metadata"]["lmos:capabilities"] = [{"lmos:name": CAPABILITY, "lmos:description": "Forecasts"}]
    return document


def a2a_card() -> dict[str, Any]:
    card: dict[str, Any] = json.loads((DATA / "a2a" / "adk_skills_agent-agent_card.json").read_text())
    card["name"] = f"Card agent {TOKEN}"
    card["skills"][0]["id"] = CAPABILITY
    return card


def mcp_server() -> dict[str, Any]:
    return {"name": SERVER_NAME, "description": f"Forecast server {TOKEN}", "version": "2.0.0"}


async def test_one_directory_for_three_conventions(base_url: str) -> None:
    ids = [AGENT_ID, CARD_ID, SERVER_ID]
    async with (
        collecting(base_url, about=ids) as stream,
        httpx.AsyncClient(base_url=base_url, timeout=30) as client,
    ):
        assert (await client.put(f"/things/{AGENT_ID}", json=lmos_agent())).status_code == 201
        imported = await client.post("/api/v1/agents/import", params={"format": "a2a", "id": CARD_ID}, json=a2a_card())
        assert imported.status_code == 201
        assert (await client.post("/v0.1/publish", json=mcp_server())).status_code == 200
        events = await stream.take(3)
    assert sorted((event.type, event.data["id"]) for event in events) == sorted(
        ("thing_created", thing_id) for thing_id in ids
    )

    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        found = (await client.get("/api/v1/search", params={"q": TOKEN, "facets": "true"})).json()
        conventions = {item["id"]: item["convention"] for item in found["items"]}
        assert conventions == {AGENT_ID: "lmos", CARD_ID: "a2a", SERVER_ID: "mcp"}
        facet = {value["value"]: value["count"] for value in found["facets"]["convention"]}
        assert facet == {"lmos": 1, "a2a": 1, "mcp": 1}
        kinds = {value["value"]: value["count"] for value in found["facets"]["kind"]}
        assert kinds == {"agent": 2, "tool": 1}
        only_cards = (await client.get("/api/v1/search", params={"q": TOKEN, "convention": "a2a"})).json()
        assert [item["id"] for item in only_cards["items"]] == [CARD_ID]
        async with AsyncRegistryClient(base_url) as sdk:
            servers = await sdk.search(q=TOKEN, convention="mcp")
            assert [item.id for item in servers.items] == [SERVER_ID]
            assert {value.value for value in (await sdk.facets(q=TOKEN)).convention} == {"lmos", "a2a", "mcp"}
        wrong = await client.get("/api/v1/search", params={"convention": "soap"})
        assert wrong.status_code == 400

        resolved = (
            await client.post("/api/v1/resolve", json={"requirements": [{"capability": CAPABILITY, "range": ">=1"}]})
        ).json()["results"][0]
        assert resolved["resolved"] is True
        providers = [resolved["provider"]["id"], *(item["id"] for item in resolved["alternatives"])]
        # Highest version first: the MCP server (2.0.0), the LMOS agent (1.2.0), the card (1.0.0).
        assert providers == [SERVER_ID, AGENT_ID, CARD_ID]

        query = f"""
            SELECT DISTINCT ?type WHERE {{
              ?thing a ?type ; ?member ?holder .
              ?holder lmos:capabilities ?capability .
              ?capability ?key "{CAPABILITY}" .
              FILTER(?type IN (lmos:Agent, lmos:Tool, a2a:AgentCard, mcp:Server))
            }} ORDER BY ?type"""
        answer = await client.get(
            "/search/sparql", params={"query": query}, headers={"Accept": "application/sparql-results+json"}
        )
        assert answer.status_code == 200, answer.text
        types = [binding["type"]["value"] for binding in answer.json()["results"]["bindings"]]
        assert types == sorted(
            [
                "https://a2a-protocol.org/ns#AgentCard",
                "https://eclipse.dev/lmos/protocol/v1#Agent",
                "https://eclipse.dev/lmos/protocol/v1#Tool",
                "https://modelcontextprotocol.io/ns#Server",
            ]
        )

        # Export: the card back as a card, the LMOS agent as a card, the server as its server.json and its
        # description as an LMOS TD (the MCP server.json has no tools to export in LLM tool formats).
        card = await client.get(f"/api/v1/things/{CARD_ID}/export", params={"format": "a2a"})
        assert card.json() == a2a_card()
        as_card = (await client.get(f"/a2a/{AGENT_ID}/.well-known/agent-card.json")).json()
        assert [skill["id"] for skill in as_card["skills"]] == [CAPABILITY]
        tools = await client.get(f"/api/v1/things/{AGENT_ID}/export", params={"format": "openai"})
        assert tools.json()[0]["function"]["name"] == "getWeather"
