"""A2A Agent Cards ↔ lmos:Agent descriptions: exact round trips of real cards, valid cards from LMOS agents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registry.conventions import a2a
from registry.descriptions.summary import summarise
from registry.descriptions.validation import validate

DATA = Path(__file__).resolve().parents[1] / "data"
CARDS = sorted((DATA / "a2a").glob("*.json"))
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


@pytest.mark.parametrize("path", CARDS, ids=[path.stem for path in CARDS])
def test_a_sample_card_round_trips_exactly(path: Path) -> None:
    card = load(path)
    a2a.parse_card(card)
    document = a2a.card_to_description(card, "urn:test:" + path.stem)
    assert validate(document) == []
    summary = summarise(document)
    assert summary.kind == "agent"
    assert summary.title == card["name"]
    skill_ids = {skill["id"] for skill in card["skills"]}
    assert skill_ids <= {capability.id for capability in summary.capabilities}
    assert a2a.description_to_card(document) == card


def test_skills_interfaces_security_and_provider_become_td_members() -> None:
    card = load(DATA / "a2a" / "adk_skills_agent-agent_card.json") | {
        "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
            "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}},
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}, {"schemes": {"key": {"list": []}}}],
        "iconUrl": "https://example.com/icon.png",
        "signatures": [{"protected": "e30", "signature": "c2ln"}],
    }
    a2a.parse_card(card)
    document = a2a.card_to_description(card, "urn:test:mapped")
    assert validate(document) == []
    assert document["lmos:metadata"]["lmos:vendor"] == {"lmos:name": "Example org", "lmos:url": "http://example.com"}
    assert document["lmos:metadata"]["lmos:capabilities"][0]["lmos:id"] == "currency_conversion"
    assert [form["a2a:protocolVersion"] for form in document["forms"]] == ["1.0", "0.3"]
    assert document["securityDefinitions"]["bearer"]["scheme"] == "bearer"
    assert document["securityDefinitions"]["key"] | {"a2a:scheme": None} == {
        "scheme": "apikey",
        "in": "header",
        "name": "X-Key",
        "a2a:scheme": None,
    }
    # Either requirement satisfies the card: a TD says so with a oneOf combo scheme.
    assert document["securityDefinitions"][document["security"][0]]["oneOf"] == ["bearer", "key"]
    assert {"rel": "icon", "href": "https://example.com/icon.png"} in document["links"]
    assert document["a2a:card"]["signatures"] == card["signatures"]
    assert a2a.description_to_card(document) == card


def test_an_lmos_agent_that_never_was_a_card_exports_to_a_card_the_sdk_accepts() -> None:
    document = load(FIXTURES / "weather-agent.td.json")
    card = a2a.description_to_card(document)
    parsed = a2a.parse_card(card)
    assert parsed.name == "WeatherAgent"
    assert [skill.id for skill in parsed.skills] == ["getWeather"]
    assert parsed.provider.organization == "Deutsche Telekom AG"
    assert parsed.security_schemes["basic_sc"].http_auth_security_scheme.scheme == "Basic"
    assert parsed.documentation_url == "https://weatherai.example.com/manual.pdf"


def test_an_invalid_card_is_refused_with_each_missing_member() -> None:
    with pytest.raises(a2a.CardError) as caught:
        a2a.parse_card({"name": "No skills", "skills": [{"id": "x"}]})
    fields = {error.field for error in caught.value.errors}
    assert {"description", "version", "supportedInterfaces", "skills[0].name", "skills[0].tags"} <= fields
    with pytest.raises(a2a.CardError):
        a2a.parse_card({"name": 3})
    with pytest.raises(a2a.CardError):
        a2a.parse_card(["not", "a", "card"])
