"""The SDK's ``find``: its request (a need in words as the search's ``q``) and its typed findings, with or without
the match fields the search adds for needs in words. Through an injected transport (no network)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from registry.client import AsyncRegistryClient, Findings, RegistryClient

GRADED = {
    "items": [
        {
            "id": "urn:a:weather",
            "kind": "agent",
            "modified": "2026-01-01T00:00:00Z",
            "title": "Weather",
            "vendor": {"name": "Acme"},
            "types": ["lmos:Agent"],
            "capabilities": [{"name": "forecast", "source": "action", "id": None, "version": None}],
            "score": 0.82,
            "match": "strong",
            "matched": [{"name": "forecast", "id": "urn:a:forecast", "source": "action", "similarity": 0.9}],
        }
    ],
    "next_cursor": None,
    "retrieval": "hybrid",
}
PLAIN = {
    "items": [{"id": "urn:b", "kind": "tool", "modified": "2026-01-01T00:00:00Z", "score": 0.1}],
    "next_cursor": "c",
}


def answering(body: dict[str, Any], seen: list[httpx.Request]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=body)

    return httpx.MockTransport(handle)


def test_find_sends_the_need_as_q_and_reads_the_match_fields() -> None:
    seen: list[httpx.Request] = []
    with RegistryClient("http://directory", transport=answering(GRADED, seen)) as client:
        found = client.find("tomorrow's weather in Berlin", kind="agent", capability="forecast", version="^1")
    assert isinstance(found, Findings)
    assert seen[0].url.path == "/api/v1/search"
    assert dict(seen[0].url.params) == {
        "q": "tomorrow's weather in Berlin",
        "kind": "agent",
        "capability": "forecast",
        "capability_version": "^1",
        "limit": "10",
    }
    (hit,) = found.items
    assert (hit.id, hit.score, hit.match, found.retrieval) == ("urn:a:weather", 0.82, "strong", "hybrid")
    assert [(item.name, item.id) for item in hit.matched] == [("forecast", "urn:a:forecast")]
    assert hit.vendor is not None
    assert hit.vendor.name == "Acme"


async def test_find_reads_an_answer_without_the_match_fields() -> None:
    seen: list[httpx.Request] = []
    async with AsyncRegistryClient("http://directory", transport=answering(PLAIN, seen)) as client:
        found = await client.find("convert currencies", limit=3)
    assert seen[0].url.params["limit"] == "3"
    (hit,) = found.items
    assert (hit.match, hit.matched, found.retrieval, found.next_cursor) == (None, [], None, "c")


def test_find_refuses_what_the_directory_would() -> None:
    with RegistryClient("http://directory", transport=answering(PLAIN, [])) as client:
        with pytest.raises(ValueError, match="version needs capability"):
            client.find("weather", version="^1")
        with pytest.raises(ValueError, match="find needs a need"):
            client.find("  ")
