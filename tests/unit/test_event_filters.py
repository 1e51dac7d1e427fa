"""Filtered subscriptions decide on the description itself."""

from __future__ import annotations

import pytest

from registry.descriptions.summary import vendor_fuzzy_matches, vendor_matches
from registry.errors import BadRequest
from registry.events.filters import DescriptionFilter, capabilities_of, vendor_of

AGENT = {
    "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"x": "https://eclipse.dev/lmos/protocol/v1#"}],
    "@type": "x:Agent",
    "title": "Weather Agent",
    "description": "Forecasts for Bonn",
    "lmos:metadata": {
        "lmos:vendor": {"lmos:name": "Deutsche Telekom AG"},
        "lmos:capabilities": [{"lmos:id": "weather-forecast"}, "alerts", {"name": "radar"}],
    },
    "actions": {"getWeather": {}},
}


def test_capabilities_from_actions_and_lmos_capabilities() -> None:
    assert capabilities_of(AGENT) == {"getWeather", "weather-forecast", "alerts", "radar"}
    assert capabilities_of({"title": "none"}) == set()


def test_vendor() -> None:
    assert vendor_of(AGENT) == "Deutsche Telekom AG"
    assert vendor_of({"lmos:metadata": {"lmos:vendor": "ACME"}}) == "ACME"
    assert vendor_of({}) is None


@pytest.mark.parametrize(
    ("query", "matches"),
    [
        ({}, True),
        ({"kind": "agent"}, True),
        ({"kind": "tool"}, False),
        ({"kind": "thing"}, False),
        ({"vendor": "deutsche telekom ag"}, True),
        ({"vendor": "ACME"}, False),
        ({"capability": "alerts"}, True),
        ({"capability": "getweather"}, False),
        ({"q": "BONN"}, True),
        ({"q": "weather agent", "kind": "agent", "capability": "radar"}, True),
        ({"q": "paris"}, False),
    ],
)
def test_matches(query: dict[str, str], matches: bool) -> None:
    assert DescriptionFilter.from_query(query).matches(AGENT) is matches


def test_nothing_matches_a_missing_document() -> None:
    assert not DescriptionFilter.from_query({"q": "x"}).matches(None)
    assert not DescriptionFilter.from_query({}).active


@pytest.mark.parametrize("query", [{"kind": "robot"}, {"vendor": " "}])
def test_bad_filters(query: dict[str, str]) -> None:
    with pytest.raises(BadRequest):
        DescriptionFilter.from_query(query)


def test_kind_thing_is_a_description_without_an_lmos_type() -> None:
    assert DescriptionFilter.from_query({"kind": "thing"}).matches({"title": "Lamp"})


@pytest.mark.parametrize(
    ("query", "matches"),
    [("telekom", True), ("Deutsche Tele", True), ("DEUTSCHE TELEKOM AG", True), ("telecom", False), ("", False)],
)
def test_vendor_words_match_prefixes_of_words(query: str, matches: bool) -> None:
    assert vendor_matches(query, "Deutsche Telekom AG") is matches


@pytest.mark.parametrize(
    ("query", "matches"),
    [("Deutsche Telecom", True), ("telecom", True), ("Deutsch", True), ("Acme", False), ("telekom bank", False)],
)
def test_fuzzy_vendor_words_tolerate_typos(query: str, matches: bool) -> None:
    assert vendor_fuzzy_matches(query, "Deutsche Telekom AG") is matches
