"""What one tenant registered does not leak to others through the directory's aggregate views: kept versions
compared by id (also after the description is deleted), the SPARQL index's statistics (unknown contexts, counts),
and the Prometheus metrics (admin or the scrape token once authentication is on). In process, over HTTP."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client
from tests.support.keys import add_key
from tests.support.servers import fresh_database

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCRAPE_TOKEN = "scrape-token-for-prometheus"
SECRET_CONTEXT = "https://tenant-a.example/contexts/secret-project"
HIDDEN = "urn:tenant-a:compat-agent"
MISSING = "urn:tenant-a:never-registered"


def agent(thing_id: str, version: str, *contexts: str) -> dict[str, Any]:
    document = copy.deepcopy(json.loads((FIXTURES / "weather-agent.td.json").read_text()))
    document["id"] = thing_id
    document["version"] = {"instance": version}
    context = document["@context"] if isinstance(document["@context"], list) else [document["@context"]]
    document["@context"] = [*context, *contexts]
    return document


class Parties:
    def __init__(self, client: AsyncTestClient, keys: dict[str, str]) -> None:  # type: ignore[type-arg]
        self.client = client
        self.keys = keys

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"} if who in self.keys else {}

    async def request(self, who: str, method: str, path: str, **options: Any) -> Any:
        headers = {**self.headers(who), **options.pop("headers", {})}
        return await self.client.request(method, path, headers=headers, **options)


@pytest.fixture(scope="module")
def module_database_url(postgres_admin_url: str) -> Iterator[str]:
    with fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="module")
async def parties(module_database_url: str) -> AsyncIterator[Parties]:
    keys = {
        "a": await add_key(module_database_url, "writer-a", ["write"], tenant="a"),
        "b": await add_key(module_database_url, "writer-b", ["write"], tenant="b"),
        "admin": await add_key(module_database_url, "operator", ["admin"]),
    }
    settings = Settings(database_url=module_database_url, db_pool_size=3, auth="writes", metrics_token=SCRAPE_TOKEN)
    async with local_client(create_app(settings), timeout=60) as client:
        yield Parties(client, keys)


def _without(answer: Any, thing_id: str) -> tuple[int, str, dict[str, Any]]:
    body = answer.json()
    body["detail"] = body["detail"].replace(thing_id, "<id>")
    return answer.status_code, answer.headers["content-type"], body


async def test_kept_versions_are_compared_only_for_readers_of_their_tenant(parties: Parties) -> None:
    for version in ("1.0.0", "1.1.0"):
        written = await parties.request("a", "PUT", f"/things/{HIDDEN}", json=agent(HIDDEN, version))
        assert written.status_code in {201, 204}, written.text
    question = {"id": HIDDEN, "from": "1.0.0", "to": "1.1.0"}
    missing = {"id": MISSING, "from": "1.0.0", "to": "1.1.0"}

    async def compared(who: str, body: dict[str, Any]) -> Any:
        return await parties.request(who, "POST", "/api/v1/compatibility", json=body)

    for deleted in (False, True):
        assert (await compared("a", question)).status_code == 200
        assert (await compared("admin", question)).status_code == 200
        for outsider in ("anonymous", "b"):
            hidden = await compared(outsider, question)
            assert _without(hidden, HIDDEN) == _without(await compared(outsider, missing), MISSING), (outsider, deleted)
            assert hidden.status_code == 404
            listed = await parties.request(outsider, "GET", f"/api/v1/things/{HIDDEN}/versions")
            absent = await parties.request(outsider, "GET", f"/api/v1/things/{MISSING}/versions")
            assert _without(listed, HIDDEN) == _without(absent, MISSING)
            one = await parties.request(outsider, "GET", f"/api/v1/things/{HIDDEN}/versions/1.0.0")
            none = await parties.request(outsider, "GET", f"/api/v1/things/{MISSING}/versions/1.0.0")
            assert _without(one, HIDDEN) == _without(none, MISSING)
        if not deleted:
            assert (await parties.request("a", "DELETE", f"/things/{HIDDEN}")).status_code == 204
    # Another tenant taking the id later does not get the first tenant's history.
    assert (await parties.request("b", "PUT", f"/things/{HIDDEN}", json=agent(HIDDEN, "2.0.0"))).status_code == 201
    versions = await parties.request("b", "GET", f"/api/v1/things/{HIDDEN}/versions")
    assert [item["version"] for item in versions.json()["items"]] == ["2.0.0"]
    assert (await compared("b", question)).status_code == 404
    assert (await compared("a", question)).status_code == 200


async def test_search_stats_count_only_what_the_reader_sees(parties: Parties) -> None:
    secret = "urn:tenant-a:with-secret-context"
    written = await parties.request("a", "PUT", f"/things/{secret}", json=agent(secret, "1.0.0", SECRET_CONTEXT))
    assert written.status_code == 201, written.text
    for outsider in ("anonymous", "b"):
        stats = (await parties.request(outsider, "GET", "/search/stats")).json()
        assert SECRET_CONTEXT not in json.dumps(stats)
        assert "indexedDescriptions" not in stats
        assert "indexPosition" not in stats
        assert stats["descriptionsWithUnknownContexts"] == 0
    own = (await parties.request("a", "GET", "/search/stats")).json()
    assert own["unknownContexts"] == {SECRET_CONTEXT: 1}
    assert "indexedDescriptions" not in own
    everything = (await parties.request("admin", "GET", "/search/stats")).json()
    assert everything["unknownContexts"] == {SECRET_CONTEXT: 1}
    assert everything["indexReady"] is False or isinstance(everything["indexedDescriptions"], int)


async def test_metrics_need_an_admin_or_the_scrape_token_once_authentication_is_on(parties: Parties) -> None:
    assert (await parties.request("anonymous", "GET", "/metrics")).status_code == 401
    assert (await parties.request("a", "GET", "/metrics")).status_code == 403
    wrong = await parties.request("anonymous", "GET", "/metrics", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401
    for headers in (parties.headers("admin"), {"Authorization": f"Bearer {SCRAPE_TOKEN}"}):
        scraped = await parties.client.get("/metrics", headers=headers)
        assert scraped.status_code == 200
        assert "registry_descriptions" in scraped.text


async def test_metrics_stay_open_while_authentication_is_off(own_database_url: str) -> None:
    async with local_client(create_app(Settings(database_url=own_database_url, db_pool_size=3))) as client:
        assert (await client.get("/metrics")).status_code == 200


async def test_listing_pages_by_key_show_each_reader_its_own_descriptions_once(parties: Parties) -> None:
    """Next links seek past the page's last id among the descriptions the reader sees: walking them gives that
    reader's whole listing, once, in order, and never another tenant's descriptions."""
    own = {who: [f"urn:tenant-{who}:paged:{number}" for number in range(5)] for who in ("a", "b")}
    for who, thing_ids in own.items():
        for thing_id in thing_ids:
            written = await parties.request(who, "PUT", f"/things/{thing_id}", json=agent(thing_id, "1.0.0"))
            assert written.status_code == 201, written.text
    for who, other in (("a", "b"), ("b", "a"), ("anonymous", "a")):
        whole = [td["id"] for td in (await parties.request(who, "GET", "/things")).json()]
        walked: list[str] = []
        next_url: str | None = "/things?limit=2"
        while next_url:
            page = await parties.request(who, "GET", next_url)
            assert page.status_code == 200, page.text
            walked.extend(td["id"] for td in page.json())
            found = [link for link in page.headers.get("link", "").split(", ") if link.endswith('rel="next"')]
            next_url = found[0][1 : found[0].index(">")] if found else None
        assert walked == whole, who
        assert not set(walked) & set(own[other]), who
        assert set(own.get(who, [])) <= set(walked), who
