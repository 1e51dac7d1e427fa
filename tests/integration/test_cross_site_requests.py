"""Pages in the operator's browser cannot use the directory: a cross-site POST is refused (its Origin, and a body
that is not JSON), a DNS-rebinding page's Host is refused on reads and writes, and the origins the operator lists
(REGISTRY_CORS_ORIGINS) and the directory's own pages (the dashboard) keep working. In process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import LOCAL_BASE_URL, local_client
from tests.support.servers import fresh_database

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ALLOWED_ORIGIN = "https://app.example"
EVIL_ORIGIN = "http://evil.example"
TOOL = {"name": "planted_tool", "description": "Sends your data elsewhere", "inputSchema": {"type": "object"}}
CARD = json.loads((Path(__file__).resolve().parents[1] / "data/a2a/adk_currency_agent-agent_card.json").read_text())
SERVER = {"name": "io.github.evil/planted", "description": "A planted MCP server", "version": "1.0.0"}

#: The endpoints a cross-site page would plant descriptions with: (path, query, JSON body).
IMPORTS: list[tuple[str, dict[str, str], dict[str, Any]]] = [
    ("/api/v1/tools/import", {"format": "mcp", "id": "urn:test:planted:tool"}, TOOL),
    ("/api/v1/agents/import", {"format": "a2a", "id": "urn:test:planted:agent"}, CARD),
    ("/v0.1/publish", {}, SERVER),
]


@pytest.fixture(scope="module")
def module_database_url(postgres_admin_url: str) -> Iterator[str]:
    with fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="module")
async def client(module_database_url: str) -> AsyncIterator[AsyncTestClient]:  # type: ignore[type-arg]
    settings = Settings(database_url=module_database_url, db_pool_size=3, cors_origins=(ALLOWED_ORIGIN,))
    async with local_client(create_app(settings), timeout=60) as test_client:
        yield test_client


async def _stored_ids(client: AsyncTestClient) -> list[str]:  # type: ignore[type-arg]
    listing = await client.get("/things")
    assert listing.status_code == 200
    return [description["id"] for description in listing.json()]


@pytest.mark.parametrize(("path", "query", "body"), IMPORTS, ids=[path for path, _, _ in IMPORTS])
async def test_a_text_plain_cross_site_post_is_refused_and_stores_nothing(
    client: AsyncTestClient,  # type: ignore[type-arg]
    path: str,
    query: dict[str, str],
    body: dict[str, Any],
) -> None:
    before = await _stored_ids(client)
    # What a form or a no-cors fetch of another site's page sends: no preflight, the browser adds its Origin.
    cross_site = await client.post(
        path, params=query, content=json.dumps(body), headers={"Content-Type": "text/plain", "Origin": EVIL_ORIGIN}
    )
    assert cross_site.status_code == 403, cross_site.text
    assert cross_site.headers["content-type"].startswith("application/problem+json")
    assert "Cross-site POST refused" in cross_site.json()["detail"]
    # Without the Origin (a browser that leaves it out, a proxy that strips it), the body is still not JSON.
    not_json = await client.post(path, params=query, content=json.dumps(body), headers={"Content-Type": "text/plain"})
    assert not_json.status_code == 415, not_json.text
    assert not_json.json()["detail"] == ("Content-Type text/plain is not accepted here; send one of: application/json")
    assert not_json.headers["accept"] == "application/json"
    assert await _stored_ids(client) == before


@pytest.mark.parametrize(
    ("method", "path", "media_type"),
    [
        ("POST", "/api/v1/resolve", "application/x-www-form-urlencoded"),
        ("POST", "/api/v1/compatibility", "text/plain"),
        ("PUT", "/api/v1/things/urn:test:absent/owner", "multipart/form-data; boundary=x"),
        ("PATCH", "/v0.1/servers/io.github.evil%2Fplanted/status", "text/plain"),
        ("POST", "/api/v1/things/batch", "text/plain"),
        ("PUT", "/things/urn:test:planted:td", "text/plain"),
        ("POST", "/things", "text/plain"),
        ("PATCH", "/things/urn:test:planted:td", "application/json"),
        ("POST", "/search/sparql", "text/plain"),
    ],
)
async def test_every_body_is_read_only_in_its_media_types(
    client: AsyncTestClient,  # type: ignore[type-arg]
    method: str,
    path: str,
    media_type: str,
) -> None:
    answer = await client.request(method, path, content=b'{"status": "deleted"}', headers={"Content-Type": media_type})
    assert answer.status_code == 415, answer.text
    assert "send one of:" in answer.json()["detail"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.:1"])
async def test_a_host_the_directory_does_not_answer_to_is_refused_on_reads_and_writes(
    client: AsyncTestClient,  # type: ignore[type-arg]
    host: str,
) -> None:
    document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": "urn:test:rebinding"}
    assert (await client.put("/things/urn:test:rebinding", json=document)).status_code in {201, 204}
    assert (await client.get("/things/urn:test:rebinding")).status_code == 200  # now in the response cache
    headers = {"Host": host}
    allowed = host == "localhost.:1"  # a loopback name, whatever its port and final dot
    for method, path, body in [
        ("GET", "/things/urn:test:rebinding", None),  # the cached read, answered before routing
        ("GET", "/things", None),
        ("GET", "/no/such/route", None),
        ("PUT", "/things/urn:test:rebinding", document),
        ("DELETE", "/things/urn:test:rebinding-absent", None),
    ]:
        answer = await client.request(method, path, json=body, headers=headers)
        if allowed:
            assert answer.status_code != 400, (method, path, answer.text)
            continue
        assert answer.status_code == 400, (method, path, answer.text)
        assert answer.json()["detail"].startswith("Host not allowed")
    assert (await client.get("/things/urn:test:rebinding")).json()["title"] == document["title"]


async def test_an_allowed_origin_and_the_directory_s_own_pages_may_write(
    client: AsyncTestClient,  # type: ignore[type-arg]
) -> None:
    path, query, body = IMPORTS[0]
    preflight = await client.options(
        path,
        headers={
            "Origin": ALLOWED_ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.status_code in {200, 204}, preflight.text
    assert preflight.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    imported = await client.post(path, params=query, json=body, headers={"Origin": ALLOWED_ORIGIN})
    assert imported.status_code in {200, 201}, imported.text
    assert imported.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    # The dashboard's page is served by the directory: its Origin is the Host it was loaded from.
    same_origin = await client.post(path, params=query, json=body, headers={"Origin": LOCAL_BASE_URL})
    assert same_origin.status_code == 200, same_origin.text
    # Reads from any page stay possible (the browser keeps the answer from a page that is not allowed).
    read = await client.get("/things/urn:test:planted:tool", headers={"Origin": EVIL_ORIGIN})
    assert read.status_code == 200
    assert "access-control-allow-origin" not in read.headers
    cross_site = await client.delete("/things/urn:test:planted:tool", headers={"Origin": EVIL_ORIGIN})
    assert cross_site.status_code == 403
    assert (await client.delete("/things/urn:test:planted:tool", headers={"Origin": "null"})).status_code == 403
    assert (await client.delete("/things/urn:test:planted:tool")).status_code == 204
