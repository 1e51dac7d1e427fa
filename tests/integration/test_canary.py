"""The canary: a corpus of hostile but accepted descriptions (odd ids, huge but valid versions, statements about
others, prefix aliases of the LMOS namespace, deep nesting, markup and control-like text), plus rows stored before
ids and versions were checked, breaks no read path for anyone: on the replica that stored them and on a fresh one
whose SPARQL index starts empty, every read answers 2xx for another party's description and ``/readyz`` is ready.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client
from tests.support.legacy import LEGACY_IDS, as_before_the_checks
from tests.support.things import nested

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DATA = Path(__file__).resolve().parents[1] / "data"
VICTIM = "urn:canary:victim:weather"
LMOS = "https://eclipse.dev/lmos/protocol/v1"
#: Stored before versions were bounded: a version with a 4,301-digit component.
LEGACY_HUGE_VERSION = "urn:canary:legacy:huge-version"


def weather_agent(thing_id: str, **members: Any) -> dict[str, Any]:
    return {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": thing_id, **members}


def with_capabilities(thing_id: str, version: str, capabilities: list[dict[str, Any]]) -> dict[str, Any]:
    document = weather_agent(thing_id, version={"instance": version})
    document["lmos:metadata"] = {**document["lmos:metadata"], "lmos:capabilities": capabilities}
    return document


def hostile_corpus() -> list[tuple[str, dict[str, Any]]]:
    """Descriptions the directory accepts though a hostile party wrote them to trip readers: (what, document)."""
    long_id = "urn:canary:long:" + "x" * 1900
    return [
        ("unicode id", weather_agent("urn:canary:ünïcödé:😀:agent")),
        ("percent-encoded id", weather_agent("https://canary.example/a%20b/c%2Fd?x=1&y=%E2%82%AC")),
        ("an id of 1,916 bytes", weather_agent(long_id)),
        ("an id with quotes and brackets allowed in IRIs", weather_agent("urn:canary:o'neil(1);a=b,c!*+$@")),
        ("an id with a fragment", weather_agent("https://canary.example/agent#main")),
        (
            "the largest version allowed",
            with_capabilities(
                "urn:canary:huge-version",
                "999999999999999999.999999999999999999.999999999999999999-" + "a" * 150,
                [{"id": "urn:canary:cap:weather", "name": "getWeather", "version": "999999999999999999.0.0"}],
            ),
        ),
        (
            "statements about another description",
            weather_agent(
                "urn:canary:liar",
                **{
                    "lmos:about": {
                        "@id": VICTIM,
                        "td:title": "Not the weather agent",
                        "td:hasActionAffordance": {
                            "td:name": "steal",
                            "td:hasForm": {"hctl:hasTarget": {"@id": "https://evil.example/steal"}},
                        },
                    }
                },
            ),
        ),
        (
            "a prefix alias of the LMOS namespace",
            {
                **{
                    key: value
                    for key, value in weather_agent("urn:canary:alias").items()
                    if key not in {"@context", "lmos:metadata", "@type"}
                },
                "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"x": f"{LMOS}#"}],
                "@type": "x:Agent",
                "x:metadata": {"x:vendor": {"x:name": "Deutsche Telekom AG"}},
            },
        ),
        ("deep nesting", weather_agent("urn:canary:deep", **{"lmos:deep": nested(60, 1)})),
        (
            "markup, emoji codes, terminal escapes and bidi overrides in text",
            weather_agent(
                "urn:canary:markup",
                title="<script>alert(1)</script> [link=http://evil]x[/link] :umbrella: \u202eevil\u202c",
                description="\x1b[2J" + "A" * 20_000,
            ),
        ),
        (
            "capabilities with odd names",
            with_capabilities(
                "urn:canary:odd-capabilities",
                "1.0.0",
                [
                    {"name": "' OR 1=1 --", "version": "1.0.0", "examples": ["$..*", "{{7*7}}"]},
                    {"id": "urn:canary:cap:%zz-not-iri-but-text", "name": "ünïcödé ☂"},
                ],
            ),
        ),
    ]


async def store(client: AsyncTestClient[Litestar], document: dict[str, Any]) -> None:
    answer = await client.put(f"/things/{quote(document['id'], safe='')}", json=document)
    assert answer.status_code in {200, 201, 204}, answer.text


async def store_everything(client: AsyncTestClient[Litestar], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The victim, the hostile corpus, an imported A2A card, an MCP server and a tool, and rows stored before the
    checks; the ids of the current descriptions."""
    await store(client, with_capabilities(VICTIM, "1.2.0", [{"id": "urn:canary:cap:weather", "name": "getWeather"}]))
    await store(client, with_capabilities(VICTIM, "1.3.0", [{"id": "urn:canary:cap:weather", "name": "getWeather"}]))
    ids = [VICTIM]
    for _what, document in hostile_corpus():
        await store(client, document)
        ids.append(document["id"])
    card = json.loads((DATA / "a2a" / "adk_currency_agent-agent_card.json").read_text())
    imported = await client.post("/api/v1/agents/import", params={"format": "a2a"}, json=card)
    assert imported.status_code in {200, 201}, imported.text
    ids.append(imported.json()["id"])
    server = {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": "io.github.canary-x.y/odd_server.name-1",
        "description": "A server whose name is odd <b>bold</b>",
        "version": "999999999999999999.0.0",
    }
    published = await client.post("/v0.1/publish", json=server)
    assert published.status_code == 200, published.text
    tool = {"type": "function", "function": {"name": "canary_tool", "description": "[red]x[/red]", "parameters": {}}}
    tool_import = await client.post("/api/v1/tools/import", params={"format": "openai", "vendor": "Canary"}, json=tool)
    assert tool_import.status_code in {200, 201}, tool_import.text
    ids.append(tool_import.json()["id"])
    with as_before_the_checks(monkeypatch):
        for thing_id in LEGACY_IDS:
            await store(client, weather_agent(thing_id))
        huge = with_capabilities(
            LEGACY_HUGE_VERSION, "9" * 4301 + ".0.0", [{"id": "urn:canary:cap:weather", "name": "getWeather"}]
        )
        await store(client, huge)
    return [*ids, *LEGACY_IDS, LEGACY_HUGE_VERSION]


async def eventually_200(client: AsyncTestClient[Litestar], path: str, **options: Any) -> httpx.Response:
    """A read that may answer 503 while the SPARQL index catches up (it says so with Retry-After)."""
    deadline = time.monotonic() + 90
    while True:
        answer = await client.get(path, **options)
        if answer.status_code != 503 or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.5)


def ok(answer: httpx.Response, what: str) -> None:
    assert 200 <= answer.status_code < 300, f"{what}: {answer.status_code} {answer.text[:500]}"


async def every_read_path_answers(client: AsyncTestClient[Litestar], ids: list[str]) -> None:
    ok(await client.get("/things"), "listing")
    ok(await client.get("/things", params={"limit": 3, "format": "collection"}), "listing page")
    for thing_id in ids:
        segment = quote(thing_id, safe="")
        ok(await client.get(f"/things/{segment}"), f"GET {thing_id!r}")
        ok(await client.get(f"/api/v1/things/{segment}/summary"), f"summary of {thing_id!r}")
        versions = await client.get(f"/api/v1/things/{segment}/versions")
        assert versions.status_code in {200, 404}, f"versions of {thing_id!r}: {versions.text[:300]}"  # 404: none kept
        for export_format in ("openai", "anthropic", "mcp", "a2a"):
            exported = await client.get(f"/api/v1/things/{segment}/export", params={"format": export_format})
            assert exported.status_code < 500, f"export {export_format} of {thing_id!r}: {exported.text[:300]}"
        card = await client.get(f"/a2a/{segment}/.well-known/agent-card.json")
        assert card.status_code < 500, f"card of {thing_id!r}: {card.text[:300]}"  # 400 for what is no agent
    victim = quote(VICTIM, safe="")
    ok(await client.get(f"/a2a/{victim}/.well-known/agent-card.json"), "the victim's card")
    ok(await client.get(f"/api/v1/things/{victim}/versions/1.2.0"), "a kept version")
    compatibility = await client.post("/api/v1/compatibility", json={"id": VICTIM, "from": "1.2.0", "to": "1.3.0"})
    ok(compatibility, "compatibility")
    for params in ({"q": "weather"}, {"kind": "agent", "vendor": "telekom"}, {"capability": "getWeather"}):
        ok(await client.get("/api/v1/search", params=params), f"search {params}")
    ok(await client.get("/api/v1/facets"), "facets")
    resolve = {"requirements": [{"capability": "getWeather", "range": ">=1"}]}
    resolved = await client.post("/api/v1/resolve", json=resolve)
    ok(resolved, "resolve")
    ok(await client.get("/search/jsonpath", params={"query": "$.title"}), "JSONPath")
    ok(await client.get("/search/stats"), "search statistics")
    ok(await client.get("/v0.1/servers"), "MCP list")
    ok(await client.get("/api/v1/quality"), "quality")
    ok(await client.get("/api/v1/changes"), "changes")
    for query in (
        "SELECT ?s ?p ?o WHERE { ?s ?p ?o } LIMIT 500",
        f"SELECT ?title WHERE {{ <{VICTIM}> <https://www.w3.org/2019/wot/td#title> ?title }}",
        "CONSTRUCT WHERE { ?s ?p ?o } LIMIT 200",
    ):
        answer = await eventually_200(
            client, "/search/sparql", params={"query": query}, headers={"Accept": "application/sparql-results+json"}
        )
        ok(answer, f"SPARQL {query}")
    titles = await eventually_200(
        client,
        "/search/sparql",
        params={"query": f"SELECT ?t WHERE {{ <{VICTIM}> <https://www.w3.org/2019/wot/td#title> ?t }}"},
        headers={"Accept": "application/sparql-results+json"},
    )
    assert [row["t"]["value"] for row in titles.json()["results"]["bindings"]] == ["WeatherAgent"]


async def replayed_events(app: Litestar, count: int) -> int:
    """How many events ``/events`` replays from the start of the change log (read until ``count`` arrived)."""
    received = bytearray()
    enough = asyncio.Event()
    status = 0
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/events",
        "raw_path": b"/events",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8080"), (b"last-event-id", b"0")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
        "state": {},
    }

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            received.extend(message.get("body", b""))
            if bytes(received).count(b"\nevent:") + bytes(received).startswith(b"event:") >= count:
                enough.set()

    task = asyncio.create_task(app(scope, receive, send))  # type: ignore[arg-type]
    try:
        await asyncio.wait_for(enough.wait(), 20)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert status == 200
    return bytes(received).count(b"event:")


@pytest.fixture
def index_dirs(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "running", tmp_path / "fresh"


async def test_hostile_descriptions_break_no_read_path_on_a_running_and_a_fresh_replica(
    own_database_url: str, index_dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    running, fresh = index_dirs
    app = create_app(Settings(database_url=own_database_url, db_pool_size=3, sparql_index_dir=running))
    async with local_client(app, timeout=120) as client:
        ids = await store_everything(client, monkeypatch)
        await every_read_path_answers(client, ids)
        replay = client.blocking_portal.start_task_soon(replayed_events, app, len(ids))
        assert await asyncio.wrap_future(replay) >= len(ids)
        assert (await eventually_200(client, "/readyz")).status_code == 200

    # A new pod: the same database, an empty SPARQL index built from what is stored.
    fresh_app = create_app(Settings(database_url=own_database_url, db_pool_size=3, sparql_index_dir=fresh))
    async with local_client(fresh_app, timeout=120) as client:
        ready = await eventually_200(client, "/readyz")
        assert ready.status_code == 200, ready.text
        await every_read_path_answers(client, ids)
