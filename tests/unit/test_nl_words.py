"""How a need's words are read: plain words or the strict syntax, and the vendor and version constraints."""

from __future__ import annotations

import pytest

from registry.discovery.constraints import owner_words, read_constraints
from registry.discovery.text import any_words_query, match_of, terms


@pytest.mark.parametrize(
    ("q", "match"),
    [
        ("put a meeting in my calendar", "any"),
        ("a MySQL server, version 2 or newer", "any"),
        ('"exact phrase" weather', "all"),
        ("weather OR forecast", "all"),
        ("weather -rain", "all"),
        ("a well-known tool - not this", "any"),
    ],
)
def test_the_syntax_decides_unless_match_is_given(q: str, match: str) -> None:
    assert match_of(q, None) == match
    assert match_of(q, "any") == "any"


def test_plain_words_become_an_or_query_of_prefixes() -> None:
    assert any_words_query("Weather in Berlin, tomorrow? weather!") == "weather:* | in | berlin:* | tomorrow:*"
    assert terms("a or b OR c") == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("need", "vendor", "versions", "text"),
    [
        ("a GitHub tool made by GitHub itself", ("github",), None, "a GitHub tool made by GitHub itself"),
        ("Stripe's own toolkit for taking payments", ("stripe",), None, "Stripe's own toolkit for taking payments"),
        ("a MongoDB server at version 2 or later", (), ">=2", "a MongoDB server"),
        ("a Kubernetes server at version 1.5 or higher", (), ">=1.5", "a Kubernetes server"),
        (
            "the filesystem server of the Model Context Protocol project itself",
            ("model", "context", "protocol"),
            None,
            None,
        ),
        ("remember things between conversations", (), None, "remember things between conversations"),
    ],
)
def test_constraints_in_words(need: str, vendor: tuple[str, ...], versions: str | None, text: str | None) -> None:
    read = read_constraints(need)
    assert read.vendor == vendor
    assert read.versions == versions
    assert read.text == (text or need)


def test_a_vendor_named_matches_its_namespace_and_a_version_its_range() -> None:
    read = read_constraints("the filesystem server of the Model Context Protocol project itself at version 1 or later")
    assert read.vendor_matches("io.github.modelcontextprotocol", [])
    assert not read.vendor_matches("io.github.someone", ["io.github.someone/filesystem"])
    assert read.version_matches("1.2.0") is True
    assert read.version_matches("0.9.0") is False
    assert read.version_matches(None) is None


def test_a_vendor_named_is_the_owner_of_a_namespace_not_where_it_is_hosted() -> None:
    read = read_constraints("a GitHub tool made by GitHub itself")
    assert read.vendor_matches("io.github.github", ["GitHub", "io.github.github/github-mcp-server"])
    assert read.vendor_matches("github.com", [])
    # Every server under io.github is hosted there, and a repository named after GitHub works with it.
    assert not read.vendor_matches("io.github.ddukbg", ["io.github.ddukbg/github-enterprise-mcp"])
    stripe = read_constraints("Stripe's own payments tool")
    assert stripe.vendor_matches("com.stripe", [])
    assert stripe.vendor_matches("www.stripe.com", [])
    assert not stripe.vendor_matches("io.github.someone", ["io.github.someone/stripe-mcp"])


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("io.github.github", ["github"]),
        ("io.github.ddukbg/github-enterprise-mcp", ["ddukbg"]),
        ("com.stripe", ["stripe"]),
        ("stripe.com", ["stripe"]),
        ("ai.exa/exa-mcp", ["exa"]),
        ("Microsoft Learn Docs", ["microsoft", "learn", "docs"]),
        ("", []),
    ],
)
def test_owner_words(name: str, words: list[str]) -> None:
    assert owner_words(name) == words
