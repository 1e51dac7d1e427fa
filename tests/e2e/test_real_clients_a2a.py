"""A2A clients of both ecosystems resolve Agent Cards from a live directory at the documented base URL
``{directory}/a2a/{id}/``: the JavaScript SDK (``@a2a-js/sdk``, which resolves the card path relative to the base
URL and so needs the trailing slash) and the Python ``a2a-sdk`` card resolver (which appends it). Cards of A2A 0.3
and 1.0 imported from the A2A samples, and a native LMOS agent registered as a TD."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from a2a.client import A2ACardResolver

from tests.conftest import DATA
from tests.support.npm_clients import install_npm_clients, run_node
from tests.support.servers import ServerProcess

CARDS = sorted((DATA / "a2a").glob("*.json"))
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TOKEN = uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def npm_clients() -> Path:
    return install_npm_clients()


@pytest.fixture(scope="module")
def agents(server: ServerProcess) -> dict[str, dict[str, Any]]:
    """Each sample card imported (ids with ``/`` and ``:`` among them), and the seed LMOS agent; by id."""
    stored: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for position, path in enumerate(CARDS):
            card = json.loads(path.read_text())
            thing_id = f"https://agents.example.com/{TOKEN}/{position}" if position % 2 else f"urn:{TOKEN}:{path.stem}"
            answer = client.post("/api/v1/agents/import", params={"format": "a2a", "id": thing_id}, json=card)
            assert answer.status_code == 201, answer.text
            stored[thing_id] = card
        agent = json.loads((FIXTURES / "weather-agent.td.json").read_text()) | {"id": f"urn:{TOKEN}:lmos-agent"}
        answer = client.put(f"/things/{agent['id']}", json=agent)
        assert answer.status_code == 201, answer.text
        stored[agent["id"]] = {"name": agent["title"]}
    return stored


def test_the_javascript_sdk_resolves_every_card_and_builds_a_client(
    npm_clients: Path, server: ServerProcess, agents: dict[str, dict[str, Any]]
) -> None:
    results = run_node(npm_clients, "a2a_js.mjs", server.base_url, *agents)
    for thing_id, card in agents.items():
        result = results[thing_id]
        assert result["card"].get("value", {}).get("name") == card["name"], (thing_id, result)
        assert result["client"] == {"value": "Client"}, (thing_id, result)
        assert result["card"]["value"]["interfaces"], (thing_id, result)  # 0.3 cards: from url, additionalInterfaces
        if card.get("securitySchemes"):
            assert result["card"]["value"]["securitySchemes"] == sorted(card["securitySchemes"]), (thing_id, result)
        # Without the trailing slash, the SDK drops the id from the URL: documented, not servable.
        assert "/a2a/.well-known/agent-card.json" in result["withoutSlash"]["error"]


@pytest.mark.parametrize("trailing_slash", ["/", ""])
def test_the_python_sdk_resolves_every_card_with_or_without_the_trailing_slash(
    server: ServerProcess, agents: dict[str, dict[str, Any]], trailing_slash: str
) -> None:
    async def resolve_all() -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=30) as http:
            return {
                thing_id: await A2ACardResolver(
                    http, f"{server.base_url}/a2a/{quote(thing_id, safe='')}{trailing_slash}"
                ).get_agent_card()
                for thing_id in agents
            }

    resolved = asyncio.run(resolve_all())
    for thing_id, card in agents.items():
        assert resolved[thing_id].name == card["name"]
        if card.get("securitySchemes"):
            assert sorted(resolved[thing_id].security_schemes) == sorted(card["securitySchemes"]), thing_id
