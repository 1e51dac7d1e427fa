"""The SDK's paging iterators against a real server with more items than a page: every item once, in the
listing's order, fetched one page per request (the listing's ``Link: rel="next"``, the search's keyset cursor)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx

from registry.client import AsyncRegistryClient, RegistryClient
from tests.support.servers import ServerProcess
from tests.support.things import thing

TOKEN = uuid.uuid4().hex[:8]
VENDOR = f"Pager {TOKEN}"
VERSIONED = f"urn:{TOKEN}:versioned"


def _corpus(base_url: str) -> tuple[list[str], list[str]]:
    """Seven descriptions (ids in code-point order) and five of them by VENDOR (titles in order); three versions
    of VERSIONED."""
    vendored = {"lmos:metadata": {"lmos:vendor": {"lmos:name": VENDOR}}}
    documents = [
        thing(f"Paged {index}", id=f"urn:{TOKEN}:{index}", **(vendored if index < 5 else {})) for index in range(6)
    ]
    with RegistryClient(base_url) as client:
        for document in documents:
            client.register(document)
        for version in ("1.0.0", "1.1.0", "2.0.0"):
            client.register(thing("Versioned", id=VERSIONED, version={"instance": version}))
    ids = sorted([*(document["id"] for document in documents), VERSIONED])
    return ids, [f"Paged {index}" for index in range(5)]


def _requests(http: httpx.Client | httpx.AsyncClient) -> list[httpx.URL]:
    """The URL of every request the client sends from now on."""
    sent: list[httpx.URL] = []

    def record(request: httpx.Request) -> None:
        sent.append(request.url)

    async def record_async(request: httpx.Request) -> None:
        sent.append(request.url)

    http.event_hooks["request"].append(record_async if isinstance(http, httpx.AsyncClient) else record)
    return sent


def _queries(sent: list[httpx.URL]) -> list[dict[str, str]]:
    return [dict(url.params) for url in sent]


def test_blocking_iterators_walk_every_page(start_server: Callable[..., ServerProcess], own_database_url: str) -> None:
    base_url = start_server(database=own_database_url).base_url
    ids, titles = _corpus(base_url)
    with RegistryClient(base_url) as client:
        sent = _requests(client.http)
        assert [document["id"] for document in client.iter_things(page_size=3)] == ids
        # The next links seek past the previous page's last id.
        assert _queries(sent) == [
            {"limit": "3"},
            {"offset": "3", "limit": "3", "after": ids[2]},
            {"offset": "6", "limit": "3", "after": ids[5]},
        ]

        sent.clear()
        hits = list(client.iter_search(vendor=VENDOR, sort="title", page_size=2))
        assert [hit.title for hit in hits] == titles
        cursors = [query.get("cursor") for query in _queries(sent)]
        assert len(cursors) == 3
        assert cursors[0] is None
        assert None not in cursors[1:]

        versions = [info.version for info in client.iter_versions(VERSIONED)]
        assert versions == ["2.0.0", "1.1.0", "1.0.0"]
        assert [info.version for info in client.iter_versions(VERSIONED, satisfies="^1")] == ["1.1.0", "1.0.0"]


async def test_async_iterators_walk_every_page(
    start_server: Callable[..., ServerProcess], own_database_url: str
) -> None:
    base_url = start_server(database=own_database_url).base_url
    ids, titles = _corpus(base_url)
    async with AsyncRegistryClient(base_url) as client:
        sent = _requests(client.http)
        things: list[dict[str, Any]] = [document async for document in client.iter_things(page_size=2)]
        assert [document["id"] for document in things] == ids
        assert len(sent) == 4

        sent.clear()
        hits = [hit async for hit in client.iter_search(vendor=VENDOR, sort="title", page_size=2)]
        assert [hit.title for hit in hits] == titles
        assert len(sent) == 3
        assert [info.version async for info in client.iter_versions(VERSIONED)] == ["2.0.0", "1.1.0", "1.0.0"]

        # An iteration stopped early asks for no further page.
        sent.clear()
        async for hit in client.iter_search(vendor=VENDOR, sort="title", page_size=2):
            assert hit.title == titles[0]
            break
        assert len(sent) == 1
