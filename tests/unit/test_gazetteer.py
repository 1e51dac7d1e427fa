"""The product gazetteer: which descriptions name a product, and where its purpose words go."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.descriptions import gazetteer
from registry.descriptions.gazetteer import parse, products, purposes, summary_purposes
from registry.descriptions.summary import Summary
from registry.embeddings import indexer
from registry.wire import Vendor


def names(title: str | None, vendor: str | None = None, url: str | None = None) -> list[str]:
    return [product.name for product in products(title, vendor, url)]


def test_the_shipped_list_parses_and_is_broad() -> None:
    table = gazetteer.gazetteer()
    assert len(table) >= 400
    assert table.version == gazetteer.gazetteer().version
    assert len(table.version) == 12
    assert "strava" in table.free
    assert "fred" in table.guarded


@pytest.mark.parametrize(
    ("title", "vendor", "url", "expected"),
    [
        ("Strava MCP Server", None, None, ["strava"]),
        ("io.github.someone/strava-mcp", "io.github.someone", None, ["strava"]),
        ("Weather", None, "https://github.com/acme/openweathermap-mcp", ["openweathermap"]),
        ("Payments", "com.stripe", None, ["stripe"]),
        ("Tickets", None, "https://www.atlassian.com", []),
        ("Google Drive", None, None, ["google drive"]),
        ("GoogleMaps", None, None, ["google maps"]),
        ("Home-Assistant MCP", None, None, ["home assistant"]),
        ("io.github.v-3/discordmcp", None, None, ["discord"]),
        ("PlaywrightToolsAgent", None, None, ["playwright"]),
        ("GitHub", None, None, ["github"]),
    ],
)
def test_a_description_that_names_a_product_gets_its_purposes(
    title: str, vendor: str | None, url: str | None, expected: list[str]
) -> None:
    assert names(title, vendor, url) == expected


@pytest.mark.parametrize(
    ("title", "vendor", "url"),
    [
        ("io.github.eqtylab/mcp-guardian", None, None),  # a security proxy, not the newspaper
        ("Alibaba API Gateway", "Alibaba", None),  # not AliExpress
        ("Doris", "io.github.apache", None),  # an Apache project, not the web server
        ("io.github.someone/mcp-echo", None, None),  # a test server, not Amazon's speaker
        ("ReAct Agent", None, None),  # the agent pattern, not the JavaScript library
        ("Google Tasks", "Google LLC", None),  # a Google product the list lacks, not web search
        ("io.github.someone/db-mcp", None, None),  # a database, not Deutsche Bahn
        ("GPT Researcher", None, None),  # not OpenAI's
        ("Apollo MCP Server", None, None),  # Apollo GraphQL or apollo.io: neither asserted
    ],
)
def test_names_that_mean_several_things_assert_none(title: str, vendor: str | None, url: str | None) -> None:
    assert names(title, vendor, url) == []


def test_a_name_of_several_products_gets_neutral_words() -> None:
    assert names("Zoho") == ["zoho"]
    assert purposes("Zoho").startswith("business software suite")
    assert names("Apollo MCP Server", "io.github.apollographql") == ["apollo graphql"]
    assert names("The Guardian") == ["the guardian"]
    assert names("Apache HTTP Server") == ["apache http server"]


def test_the_purposes_are_the_products_words() -> None:
    assert "running and cycling workouts" in purposes("Strava")
    assert "unemployment" in purposes("io.github.someone/fred-mcp-server")
    assert purposes("A calculator") == ""


@pytest.mark.parametrize(
    "title",
    [
        "Frederick's toolbox",  # "fred" inside a word
        "Fred Economic Data",  # a guarded name beside other words
        "Linear Algebra Tools",
        "Postgresql",  # a free name matches: the control of the case below
    ],
)
def test_names_match_whole_words_and_guarded_names_only_alone(title: str) -> None:
    found = names(title)
    assert found == (["postgresql"] if title == "Postgresql" else [])


@pytest.mark.parametrize(
    ("title", "vendor", "url"),
    [
        ("Linear", None, None),
        ("Linear MCP Server", None, None),
        ("io.github.someone/mcp-linear", None, None),
        ("io.github.someone/linear-mcp-go", None, None),
        ("Issues", "Linear Inc", None),
        ("Issues", None, "https://linear.app"),
    ],
)
def test_a_guarded_name_counts_where_it_is_the_whole_name(title: str, vendor: str | None, url: str | None) -> None:
    assert names(title, vendor, url) == ["linear"]


def test_where_something_is_published_names_no_product() -> None:
    # io.github.* namespaces, a code host's URL, the MCP and A2A conventions themselves.
    assert names("io.github.someone/videocapture-mcp", "io.github.someone") == []
    assert names("Tool", None, "https://github.com/someone/videocapture") == []
    assert names("io.github.modelcontextprotocol/server-time", "io.github.modelcontextprotocol") == []
    assert names("A2A Protocol Agent") == []
    assert names("io.github.someone/code-sandbox-mcp") == []  # two words are not one name joined


def test_one_description_gets_at_most_three_products() -> None:
    assert names("GitHub Slack Jira Notion Stripe Sync") == ["github", "jira", "stripe"]


def test_another_list_is_another_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = gazetteer.gazetteer().version
    changed = tmp_path / "products.txt"
    changed.write_bytes(gazetteer.DATA.read_bytes() + b"newproduct: something new\n")
    monkeypatch.setattr(gazetteer, "DATA", changed)
    gazetteer.gazetteer.cache_clear()
    try:
        assert gazetteer.gazetteer().version != shipped
        assert purposes("Newproduct") == "something new"
    finally:
        gazetteer.gazetteer.cache_clear()


def test_a_list_line_without_purpose_is_refused_and_aliases_share_a_product() -> None:
    free, guarded = parse(["# a comment", "", "home assistant|hass: smart home", "~hue: smart lights"])
    assert free["home assistant"] is free["homeassistant"] is free["hass"]
    assert guarded["hue"].purpose == "smart lights"
    with pytest.raises(ValueError, match="without names or purpose"):
        parse(["strava:"])


def test_the_vectors_and_the_full_text_read_the_purposes() -> None:
    summary = {"kind": "tool", "title": "io.github.someone/strava-mcp", "description": "Strava API access"}
    assert indexer.description_text(summary) == f"strava Strava API access {summary_purposes(summary)}"
    assert indexer.TEXTS.endswith(f"gazetteer-{gazetteer.gazetteer().version}")
    texts = Summary(kind="tool", title="Weather", vendor=Vendor(name="OpenWeatherMap")).search_texts()
    assert "forecasts" in texts[3]
    assert "forecasts" not in " ".join(texts[:3])
    assert Summary(kind="tool", title="A calculator").search_texts()[3] == ""


def test_a_field_text_read_again_names_the_same_products_from_what_was_kept() -> None:
    table = gazetteer.gazetteer()
    table.named.clear()
    first = names("Weather Agent", "Google LLC", "https://github.com/acme/slack-bridge")
    kept = dict(table.named)
    assert set(kept) == {"Weather Agent", "Google LLC", "slack-bridge"}
    assert names("Weather Agent", "Google LLC", "https://github.com/acme/slack-bridge") == first
    assert table.named == kept
    # What is kept is what reading the text gives.
    table.named.clear()
    assert all(gazetteer.named_in(text, table) == products for text, products in kept.items())


def test_the_texts_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    table = gazetteer.gazetteer()
    table.named.clear()
    monkeypatch.setattr(gazetteer, "NAMED_KEPT", 3)
    for number in range(7):
        gazetteer.named_in(f"Agent {number}", table)
    assert 1 <= len(table.named) <= 3
    assert "Agent 6" in table.named


def test_long_field_texts_are_read_but_not_kept() -> None:
    table = gazetteer.gazetteer()
    table.named.clear()
    long_title = "OpenWeatherMap " + "tools " * gazetteer.NAMED_KEPT_LENGTH
    assert [product.name for product in gazetteer.named_in(long_title, table)] == ["openweathermap"]
    assert [product.name for product in gazetteer.named_in("OpenWeatherMap tools", table)] == ["openweathermap"]
    assert long_title not in table.named
    assert "OpenWeatherMap tools" in table.named
