"""Summaries read every LMOS shape of vendor, version and capabilities."""

from __future__ import annotations

import json
from pathlib import Path

from registry.descriptions.summary import SOURCE_ACTION, SOURCE_LMOS, summarise
from registry.wire import Capability, Vendor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_seed_agent() -> None:
    summary = summarise(json.loads((FIXTURES / "weather-agent.td.json").read_text()))
    assert summary.kind == "agent"
    assert summary.title == "WeatherAgent"
    assert summary.vendor == Vendor(name="Deutsche Telekom AG", url="https://telekom.de")
    assert [(item.name, item.source) for item in summary.capabilities] == [("getWeather", SOURCE_ACTION)]
    assert summary.capabilities[0].input is not None


def test_capability_shapes_and_languages() -> None:
    document = {
        "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"x": "https://eclipse.dev/lmos/protocol/v1/"}],
        "@type": "x:Tool",
        "titles": {"de": "Rechnungen", "en": "Billing"},
        "descriptions": {"en": "Shows invoices"},
        "lmos:metadata": {
            "https://eclipse.dev/lmos/protocol/v1#vendor": {"lmos:name": "Telekom"},
            "lmos:capabilities": [{"lmos:id": "urn:cap:billing", "lmos:name": "billing", "lmos:examples": "Show bill"}],
        },
        "lmos:version": "2.1",
        "lmos:capabilities": [{"name": "view", "version": "1.0", "description": "View", "examples": ["a", 3]}, "junk"],
    }
    summary = summarise(document)
    assert summary.kind == "tool"
    assert (summary.title, summary.description, summary.languages) == ("Billing", "Shows invoices", ["de", "en"])
    assert summary.vendor == Vendor(name="Telekom")
    assert summary.version == "2.1"
    assert summary.capabilities == [
        Capability(name="view", source=SOURCE_LMOS, version="1.0", description="View", examples=["a"]),
        Capability(name="billing", source=SOURCE_LMOS, id="urn:cap:billing", version="2.1", examples=["Show bill"]),
    ]


def test_plain_thing() -> None:
    summary = summarise({"title": "Lamp", "@type": ["saref:LightSwitch"]})
    assert (summary.kind, summary.types, summary.vendor, summary.capabilities) == (
        "thing",
        ["saref:LightSwitch"],
        None,
        [],
    )
