"""A2A Agent Cards against a real server: import, export, the per-agent well-known card read by the official SDK's
card resolver, and signatures reported (and verified with a trusted key)."""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from a2a.client import A2ACardResolver
from a2a.utils.signing import create_agent_card_signer
from cryptography.hazmat.primitives.asymmetric import ec
from google.protobuf.json_format import MessageToDict

from registry.conventions import a2a
from tests.conftest import DATA
from tests.e2e.test_cli import registry
from tests.support.servers import ServerProcess

CARDS = sorted((DATA / "a2a").glob("*.json"))
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TOKEN = uuid.uuid4().hex[:8]


def import_card(client: httpx.Client, card: dict[str, Any], thing_id: str | None = None) -> httpx.Response:
    params = {"format": "a2a"} | ({"id": thing_id} if thing_id else {})
    return client.post("/api/v1/agents/import", params=params, json=card)


def resolve(base_url: str, thing_id: str) -> Any:
    """The card as the official SDK's resolver reads it from the base URL ``/a2a/{id}``."""

    async def run() -> Any:
        async with httpx.AsyncClient(timeout=30) as http:
            return await A2ACardResolver(http, f"{base_url}/a2a/{thing_id}").get_agent_card()

    return asyncio.run(run())


@pytest.mark.parametrize("path", CARDS, ids=[path.stem for path in CARDS])
def test_sample_cards_import_export_exactly_and_resolve_with_the_sdk(
    client: httpx.Client, base_url: str, path: Path
) -> None:
    card = json.loads(path.read_text())
    thing_id = f"urn:{TOKEN}:a2a:{path.stem}"
    created = import_card(client, card, thing_id)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["id"] == thing_id
    assert created.headers["location"] == f"/things/{thing_id}"
    assert body["signatures"] == {"count": 0, "signatures": [], "verified": None, "detail": None}
    exported = client.get(f"/api/v1/things/{thing_id}/export", params={"format": "a2a"})
    assert exported.status_code == 200
    assert exported.json() == card
    assert client.get(f"/a2a/{thing_id}/.well-known/agent-card.json").json() == card
    resolved = resolve(base_url, thing_id)
    assert resolved.name == card["name"]
    assert [skill.id for skill in resolved.skills] == [skill["id"] for skill in card["skills"]]
    # The stored description is an lmos:Agent whose skills are its capabilities.
    summary = client.get(f"/api/v1/things/{thing_id}/summary").json()
    assert summary["kind"] == "agent"
    assert {skill["id"] for skill in card["skills"]} <= {item.get("id") for item in summary["capabilities"]}
    assert import_card(client, card, thing_id).status_code == 200


def test_a_card_without_an_id_gets_one_from_its_endpoint_and_name(client: httpx.Client) -> None:
    card = json.loads(CARDS[0].read_text()) | {"name": f"Derived id {TOKEN}"}
    first = import_card(client, card)
    assert first.status_code == 201
    assert first.json()["id"].startswith("urn:uuid:")
    again = import_card(client, card)
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])


def test_an_lmos_agent_registered_as_a_td_resolves_as_a_card(client: httpx.Client, base_url: str) -> None:
    document = json.loads((FIXTURES / "weather-agent.td.json").read_text())
    thing_id = f"urn:{TOKEN}:weather/agent"
    document["id"] = thing_id
    assert client.put(f"/things/{thing_id}", json=document).status_code in (201, 204)
    resolved = resolve(base_url, thing_id)
    assert resolved.name == "WeatherAgent"
    assert [skill.id for skill in resolved.skills] == ["getWeather"]
    assert resolved.supported_interfaces[0].url.endswith("/actions/getWeather")


def test_a_tool_has_no_card_and_an_invalid_card_is_refused(client: httpx.Client) -> None:
    tool = json.loads((FIXTURES / "seed-tool.td.json").read_text()) | {"id": f"urn:{TOKEN}:tool"}
    assert client.put(f"/things/urn:{TOKEN}:tool", json=tool).status_code in (201, 204)
    refused = client.get(f"/api/v1/things/urn:{TOKEN}:tool/export", params={"format": "a2a"})
    assert refused.status_code == 400
    assert "not an agent" in refused.json()["detail"]
    invalid = import_card(client, {"name": "half a card", "skills": []})
    assert invalid.status_code == 400
    assert invalid.headers["content-type"].startswith("application/problem+json")
    fields = {error["field"] for error in invalid.json()["validationErrors"]}
    assert {"description", "version", "supportedInterfaces", "skills"} <= fields
    assert client.get("/a2a/urn:no-such-agent/.well-known/agent-card.json").status_code == 404


def signed(card: dict[str, Any], key: ec.EllipticCurvePrivateKey, kid: str) -> dict[str, Any]:
    parsed = a2a.parse_card(card)
    sign = create_agent_card_signer(key, {"kid": kid, "alg": "ES256", "jku": None, "typ": "JOSE"})
    return card | {"signatures": MessageToDict(sign(parsed))["signatures"]}


def test_signatures_are_kept_reported_and_verified_with_a_trusted_key(
    client: httpx.Client, start_server: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    jwk = jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True) | {"kid": "k1", "alg": "ES256"}
    keys = tmp_path / "jwks.json"
    keys.write_text(json.dumps({"keys": [jwk]}))
    card = json.loads(CARDS[0].read_text()) | {"name": f"Signed {TOKEN}"}
    card = signed(card, key, "k1")
    tampered = copy.deepcopy(card) | {"description": "changed after signing"}

    unverified = import_card(client, card).json()
    assert unverified["signatures"]["count"] == 1
    assert unverified["signatures"]["signatures"] == [{"kid": "k1", "alg": "ES256"}]
    assert unverified["signatures"]["verified"] is None
    assert client.get(f"/api/v1/things/{unverified['id']}/export", params={"format": "a2a"}).json() == card

    trusting = start_server({"REGISTRY_A2A_TRUSTED_KEYS": str(keys)})
    with httpx.Client(base_url=trusting.base_url, timeout=30) as other:
        assert import_card(other, card).json()["signatures"]["verified"] is True
        report = import_card(other, tampered, f"urn:{TOKEN}:tampered").json()["signatures"]
        assert report["verified"] is False
        assert "No valid signature" in report["detail"]


def test_registry_import_recognises_agent_cards_beside_tds(client: httpx.Client, base_url: str, tmp_path: Path) -> None:
    card = json.loads(CARDS[1].read_text()) | {"name": f"CLI card {TOKEN}"}
    (tmp_path / "agent-card.json").write_text(json.dumps(card))
    document = json.loads((FIXTURES / "seed-tool.td.json").read_text()) | {"id": f"urn:{TOKEN}:cli-tool"}
    (tmp_path / "tool.td.json").write_text(json.dumps(document))
    result = registry(base_url, "import", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    registered = {item["file"]: item["id"] for item in json.loads(result.stdout)["registered"]}
    assert registered["tool.td.json"] == f"urn:{TOKEN}:cli-tool"
    card_id = registered["agent-card.json"]
    assert client.get(f"/api/v1/things/{card_id}/export", params={"format": "a2a"}).json() == card
