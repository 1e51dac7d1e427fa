"""The seeds register and read back unchanged apart from registration and the discovery context."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.parametrize("name", ["weather-agent.td.json", "seed-tool.td.json"])
def test_seed_round_trip(client: httpx.Client, name: str) -> None:
    document = json.loads((FIXTURES / name).read_text())
    response = client.put(f"/things/{document['id']}", json=document, headers={"content-type": "application/td+json"})
    assert response.status_code in (201, 204), response.text
    got = client.get(f"/things/{document['id']}")
    assert got.status_code == 200
    assert got.headers["content-type"] == "application/td+json"
    body = got.json()
    registration = body.pop("registration")
    assert set(registration) >= {"created", "modified", "retrieved"}
    assert body.pop("@context") == [*document.pop("@context"), "https://www.w3.org/2022/wot/discovery"]
    assert body == {key: value for key, value in document.items() if key != "@context"}
