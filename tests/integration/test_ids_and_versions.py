"""Ids and versions one party writes never break another party's reads (in process, over HTTP).

Attacks: ids that are not IRIs (or hold control characters) on every write path, a CR/LF in an import's ``?id=``,
versions with thousands of digits; and, for what was stored before these checks, rows that must stay readable and
deletable and must not stop the SPARQL index (a fresh replica, a running one importing a batch).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from registry.conventions import mcp
from registry.sparql.store.store import STATE_GRAPH
from tests.support.in_process import events_replayed, local_client, until_sparql_answers
from tests.support.legacy import LEGACY_IDS, UNLOADABLE_ID, as_before_the_checks
from tests.support.oxigraph import OxigraphServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DATA = Path(__file__).resolve().parents[1] / "data"
PREFIX = "urn:test:iso:a"
#: Every character an IRI cannot hold that the issue names, and control characters (CR, LF, others, DEL).
REFUSED_CHARACTERS = ['"', "<", ">", "[", "]", "{", "}", "|", "^", "\\", "`", " ", "\r", "\n", "\x01", "\x7f"]
OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "isoLookup",
        "description": "Looks something up",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}
HUGE = "9" * 4301
SPARQL_JSON = {"Accept": "application/sparql-results+json"}


def agent(thing_id: str, **members: Any) -> dict[str, Any]:
    return {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": thing_id, **members}


def in_path(thing_id: str) -> str:
    return quote(thing_id, safe="")


def a2a_card() -> dict[str, Any]:
    card: dict[str, Any] = json.loads((DATA / "a2a" / "adk_currency_agent-agent_card.json").read_text())
    return card


def assert_refused_naming(response: httpx.Response, character: str, position: int) -> None:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    detail = response.json()["detail"]
    assert f"U+{ord(character):04X}" in detail, detail
    assert f"position {position}" in detail, detail


@pytest.fixture(scope="module")
async def client(database_url: str) -> AsyncIterator[AsyncTestClient[Litestar]]:
    async with local_client(create_app(Settings(database_url=database_url, db_pool_size=3))) as test_client:
        yield test_client


# -- (1), (3): ids that are not IRIs are refused on every write path, naming the character and its position


@pytest.mark.parametrize("character", REFUSED_CHARACTERS, ids=[f"U+{ord(c):04X}" for c in REFUSED_CHARACTERS])
async def test_an_id_that_is_not_an_iri_is_refused_on_every_write_path(
    client: AsyncTestClient[Litestar], character: str
) -> None:
    thing_id = f"{PREFIX}{character}b"
    position = len(PREFIX) + 1
    path = f"/things/{in_path(thing_id)}"

    put = await client.put(path, json=agent(thing_id))
    assert_refused_naming(put, character, position)
    assert put.json()["validationErrors"][0]["field"] == "id"
    assert_refused_naming(await client.patch(path, json={"title": "x"}, headers=MERGE_PATCH), character, position)

    batch = await client.post("/api/v1/things/batch", json=[agent(thing_id), agent(f"{PREFIX}-fine-{ord(character)}")])
    assert batch.status_code == 200, batch.text
    refused, written = batch.json()["results"]
    assert refused["status"] == 400
    assert f"U+{ord(character):04X}" in refused["problem"]["detail"]
    assert f"position {position}" in refused["problem"]["detail"]
    assert written["status"] in {200, 201}  # the batch's other description is not refused with it

    for imported in (
        await client.post("/api/v1/tools/import", params={"format": "openai", "id": thing_id}, json=OPENAI_TOOL),
        await client.post("/api/v1/agents/import", params={"format": "a2a", "id": thing_id}, json=a2a_card()),
    ):
        assert_refused_naming(imported, character, position)
        assert imported.json()["invalidParams"][0]["name"] == "id"

    api = f"/api/v1/things/{in_path(thing_id)}"
    assert_refused_naming(await client.post(f"{api}/lease"), character, position)
    assert_refused_naming(await client.put(f"{api}/owner", json={"owner": "key:mallory"}), character, position)

    listed = (await client.get("/things")).json()
    assert not [item["id"] for item in listed if item["id"].startswith(PREFIX + character)]


MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


async def test_an_mcp_server_name_that_would_not_make_an_iri_is_refused(client: AsyncTestClient[Litestar]) -> None:
    published = await client.post(
        "/v0.1/publish", json={"name": "io.example/a{b}", "description": "x", "version": "1.0.0"}
    )
    assert published.status_code == 400, published.text
    assert published.json()["validationErrors"][0]["field"] == "name"


async def test_a_crlf_in_an_imports_id_is_refused_and_never_reaches_a_header(
    client: AsyncTestClient[Litestar],
) -> None:
    """The id went into Location: a CR/LF there made the server drop the response after storing."""
    for path, params, body, kept_id in (
        ("/api/v1/tools/import", {"format": "openai"}, OPENAI_TOOL, "urn:test:iso:tool:é"),
        ("/api/v1/agents/import", {"format": "a2a"}, a2a_card(), "urn:test:iso:agent:é"),
    ):
        refused = await client.post(path, params={**params, "id": "urn:test:iso:crlf\r\nSet-Cookie: a=b"}, json=body)
        assert_refused_naming(refused, "\r", len("urn:test:iso:crlf") + 1)
        accepted = await client.post(path, params={**params, "id": kept_id}, json=body)
        assert accepted.status_code in {200, 201}, accepted.text
        location = accepted.headers["location"]
        assert location.isascii()
        assert re.fullmatch(r"[\x21-\x7e]+", location), location
        assert "%C3%A9" in location  # the IRI as a URI (RFC 3987 §3.1)
        assert (await client.get("/things/" + location.removeprefix("/things/"))).status_code == 200


async def test_ids_the_directory_mints_are_accepted(client: AsyncTestClient[Litestar]) -> None:
    document = {key: value for key, value in agent("unused").items() if key != "id"}
    created = await client.post("/things", json=document)
    assert created.status_code == 201, created.text
    assert created.headers["location"].startswith("urn:uuid:")
    tool = await client.post("/api/v1/tools/import", params={"format": "openai"}, json=OPENAI_TOOL)
    assert tool.status_code in {200, 201}, tool.text
    card = await client.post("/api/v1/agents/import", params={"format": "a2a"}, json=a2a_card())
    assert card.status_code in {200, 201}, card.text


# -- (2): versions are bounded at write


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        (f"1.{HUGE}.0", "characters long"),
        ("1." + "9" * 19 + ".0", "19 digits"),
        ("1.0.0-rc." + "1" * 19, "19 digits"),
        ("1.0.0+" + "x" * 251, "257 characters"),
    ],
    ids=["4301-digits", "19-digits", "19-digit-prerelease", "257-characters"],
)
async def test_a_version_out_of_bounds_is_refused_on_every_write_path(
    client: AsyncTestClient[Litestar], version: str, reason: str
) -> None:
    thing_id = "urn:test:iso:version"
    written = await client.put(f"/things/{thing_id}", json=agent(thing_id, version={"instance": version}))
    assert written.status_code == 400, written.text
    assert {"field": "version.instance"}.items() <= written.json()["validationErrors"][0].items()
    assert reason in written.json()["validationErrors"][0]["description"]

    capability = agent(thing_id)
    capability["lmos:metadata"]["lmos:capabilities"] = [{"id": "urn:cap:iso", "version": version}]
    written = await client.put(f"/things/{thing_id}", json=capability)
    assert written.status_code == 400, written.text
    assert written.json()["validationErrors"][0]["field"] == "lmos:metadata.lmos:capabilities.0.version"

    tool = await client.post("/api/v1/tools/import", params={"format": "openai", "version": version}, json=OPENAI_TOOL)
    assert tool.status_code == 400, tool.text
    assert tool.json()["invalidParams"][0]["name"] == "version"

    card = await client.post("/api/v1/agents/import", params={"format": "a2a"}, json={**a2a_card(), "version": version})
    assert card.status_code == 400, card.text
    assert card.json()["validationErrors"][0]["field"] == "version"

    if len(version) <= 255:  # longer ones break server.json's own maxLength
        server = {"name": "io.example.iso/bounds", "description": "x", "version": version}
        published = await client.post("/v0.1/publish", json=server)
        assert published.status_code == 400, published.text
        assert published.json()["validationErrors"][-1]["field"] == "version"


# -- (2): versions stored before the bounds break no reader


async def test_a_version_stored_before_the_bounds_breaks_no_reader(
    own_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Capability resolution, version searches, /versions, compatibility, the owner's replacement and the MCP
    listing all answered 500 for every caller once one description held a 4,301-digit version component."""
    thing_id = "urn:test:iso:huge-version"
    huge = f"1.{HUGE}.0"
    capability = {"id": "urn:cap:iso:forecast", "name": "isoForecast"}
    document = agent(thing_id, version={"instance": huge})
    document["lmos:metadata"]["lmos:capabilities"] = [capability]
    long_server = {"name": "io.example.iso/legacy", "description": "x", "version": "1." + "9" * 240 + ".0"}
    settings = Settings(database_url=own_database_url, db_pool_size=3, sparql_index_dir=tmp_path)
    async with local_client(create_app(settings)) as client:
        with as_before_the_checks(monkeypatch):
            assert (await client.put(f"/things/{thing_id}", json=document)).status_code == 201
            assert (await client.post("/v0.1/publish", json=long_server)).status_code == 200
        other = agent("urn:test:iso:fine-version", version={"instance": "1.2.0"})
        other["lmos:metadata"]["lmos:capabilities"] = [capability]
        assert (await client.put("/things/urn:test:iso:fine-version", json=other)).status_code == 201

        resolved = await client.post(
            "/api/v1/resolve", json={"requirements": [{"capability": "isoForecast", "range": "^1"}]}
        )
        assert resolved.status_code == 200, resolved.text
        assert resolved.json()["results"][0]["provider"]["id"] == "urn:test:iso:fine-version"
        closest = await client.post(
            "/api/v1/resolve",
            json={
                "requirements": [
                    {"capability": "isoForecast", "range": "*", "strategy": "closest", "closest_to": "1.0.0"}
                ]
            },
        )
        assert closest.status_code == 200, closest.text
        searched = await client.get("/api/v1/search", params={"capability": "isoForecast", "capability_version": "^1"})
        assert searched.status_code == 200, searched.text
        assert [item["id"] for item in searched.json()["items"]] == ["urn:test:iso:fine-version"]
        for params in ({}, {"satisfies": "^1"}):
            versions = await client.get(f"/api/v1/things/{thing_id}/versions", params=params)
            assert versions.status_code == 200, versions.text
        kept = await client.get(f"/api/v1/things/{thing_id}/versions/{huge}")
        assert kept.status_code == 200, kept.text
        compared = await client.post("/api/v1/compatibility", json={"id": thing_id, "from": huge, "to": huge})
        assert compared.status_code == 200, compared.text

        replaced = await client.put(f"/things/{thing_id}", json={**document, "version": {"instance": "1.0.1"}})
        assert replaced.status_code in {200, 204}, replaced.text
        assert (await client.get(f"/api/v1/things/{thing_id}/versions")).status_code == 200

        for params in ({}, {"version": "latest"}):
            listed = await client.get("/v0.1/servers", params=params)
            assert listed.status_code == 200, listed.text
        assert (await client.get(f"/v0.1/servers/{quote(long_server['name'], safe='')}/versions")).status_code == 200
        following = await client.post("/v0.1/publish", json={**long_server, "version": "1.0.1"})
        assert following.status_code == 200, following.text


# -- what was stored before ids were checked: readable, deletable, and never stops the SPARQL index


async def store_legacy_rows(client: AsyncTestClient[Litestar], monkeypatch: pytest.MonkeyPatch) -> None:
    with as_before_the_checks(monkeypatch):
        for thing_id in LEGACY_IDS:
            written = await client.put(f"/things/{in_path(thing_id)}", json=agent(thing_id))
            assert written.status_code == 201, written.text
        server = mcp.server_to_description({"name": "io.example.legacy/x", "description": "x", "version": "1.0.0"})
        server["id"] = "urn:mcp:server:io.example.legacy/x{y}"
        assert (await client.put(f"/things/{in_path(server['id'])}", json=server)).status_code == 201


async def graph_count(client: AsyncTestClient[Litestar]) -> int:
    answer = await client.get(
        "/search/sparql",
        # Not the graph where an external store keeps the directory's position.
        params={
            "query": f"SELECT (COUNT(DISTINCT ?g) AS ?n) {{ GRAPH ?g {{ ?s ?p ?o }} FILTER(?g != {STATE_GRAPH}) }}"
        },
        headers=SPARQL_JSON,
    )
    assert answer.status_code == 200, answer.text
    return int(answer.json()["results"]["bindings"][0]["n"]["value"])


async def ready(client: AsyncTestClient[Litestar]) -> dict[str, Any]:
    # SPARQL does not count for readiness: a replica is ready while its worker still builds the index.
    await until_sparql_answers(client)
    deadline = time.monotonic() + 60
    while True:
        answer = await client.get("/readyz")
        if answer.status_code == 200:
            body: dict[str, Any] = answer.json()
            return body
        assert time.monotonic() < deadline, answer.text
        await asyncio.sleep(0.2)


def skipped_gauge(metrics: str) -> float:
    match = re.search(r"^registry_sparql_index_skipped_descriptions (\S+)$", metrics, re.MULTILINE)
    assert match is not None, metrics[:2000]
    return float(match.group(1))


async def test_a_fresh_replica_with_a_stored_unloadable_row_becomes_ready_and_answers_sparql(
    own_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new pod (empty index) built its index from the stored RDF with the bulk loader, which refused the batch:
    the worker crash-looped and /readyz stayed 503."""
    settings = Settings(database_url=own_database_url, db_pool_size=3, sparql_index_dir=tmp_path / "first")
    async with local_client(create_app(settings)) as client:
        await store_legacy_rows(client, monkeypatch)
        for number in range(5):
            thing_id = f"urn:test:iso:good:{number}"
            assert (await client.put(f"/things/{thing_id}", json=agent(thing_id))).status_code == 201

    fresh = Settings(
        database_url=own_database_url, db_pool_size=3, sparql_index_dir=tmp_path / "fresh", sparql_start="eager"
    )
    async with local_client(create_app(fresh)) as client:
        report = await ready(client)
        assert report["status"] == "ready, degraded"
        check = report["checks"]["sparql_worker"]
        assert (check["ok"], check["state"]) == (True, "degraded")
        assert "1 description left out" in check["detail"]
        assert await graph_count(client) == 5 + len(LEGACY_IDS)  # all but the unloadable one, and the MCP server
        assert skipped_gauge((await client.get("/metrics")).text) == 1


async def test_a_running_replica_importing_a_batch_with_an_unloadable_row_answers_every_query(
    own_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of 100 or more goes to the bulk loader: one row it could not parse made every SPARQL query answer
    500 while /readyz said ready. Fewer go one at a time, which parsed leniently, so the same row was indexed or
    not depending on the batch it came in."""
    settings = Settings(database_url=own_database_url, db_pool_size=3, sparql_index_dir=tmp_path)
    async with local_client(create_app(settings)) as client:
        await ready(client)
        batch = [agent(f"urn:test:iso:bulk:{number:03d}") for number in range(120)]
        with as_before_the_checks(monkeypatch):
            imported = await client.post("/api/v1/things/batch", json=[*batch[:60], agent(UNLOADABLE_ID), *batch[60:]])
            assert imported.status_code == 200, imported.text
            assert imported.json()["refused"] == 0
            assert await graph_count(client) == 120
            # The same row alone goes one at a time: left out the same way.
            single = "urn:test:legacy:b%zz"
            assert (await client.put(f"/things/{in_path(single)}", json=agent(single))).status_code == 201
        assert await graph_count(client) == 120
        check = (await ready(client))["checks"]["sparql_worker"]
        assert check["state"] == "degraded"
        assert "2 descriptions left out" in check["detail"]
        assert skipped_gauge((await client.get("/metrics")).text) == 2
        assert "registry_sparql_index_skipped_total 2.0" in (await client.get("/metrics")).text

        for thing_id in (UNLOADABLE_ID, single):
            assert (await client.delete(f"/things/{in_path(thing_id)}")).status_code == 204
        assert await graph_count(client) == 120
        report = await ready(client)
        assert report["status"] == "ready"
        assert report["checks"]["sparql_worker"]["state"] == "ok"
        assert skipped_gauge((await client.get("/metrics")).text) == 0


async def test_rows_stored_before_ids_were_checked_can_be_listed_read_and_deleted(
    own_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids with control characters were listed but could be neither read nor deleted (the path refused them)."""
    settings = Settings(database_url=own_database_url, db_pool_size=3, sparql_index_dir=tmp_path)
    app = create_app(settings)
    async with local_client(app) as client:
        await store_legacy_rows(client, monkeypatch)
        listed = await client.get("/things")
        assert listed.status_code == 200, listed.text
        assert set(LEGACY_IDS) <= {item["id"] for item in listed.json()}

        # On the loop the application runs on (the test client's portal).
        replay = client.blocking_portal.start_task_soon(events_replayed, app, "/events", len(LEGACY_IDS) + 1)
        status, events = await asyncio.wrap_future(replay)
        assert status == 200
        assert len(events) == len(LEGACY_IDS) + 1
        assert {json.loads(event.split(b"data: ", 1)[1])["id"] for event in events[:-1]} == set(LEGACY_IDS)

        servers = await client.get("/v0.1/servers")
        assert servers.status_code == 200, servers.text
        assert [item["server"]["name"] for item in servers.json()["servers"]] == ["io.example.legacy/x"]

        for thing_id in LEGACY_IDS:
            path = in_path(thing_id)
            read = await client.get(f"/things/{path}")
            assert read.status_code == 200, (thing_id, read.text)
            assert read.json()["id"] == thing_id
            assert (await client.get(f"/api/v1/things/{path}/summary")).status_code == 200
            assert (await client.get(f"/api/v1/things/{path}/owner")).status_code == 200
            card = await client.get(f"/a2a/{path}/.well-known/agent-card.json")
            assert card.status_code == 200, (thing_id, card.text)
            # No new write under such an id: a replacement is refused, naming the character.
            assert (await client.put(f"/things/{path}", json=agent(thing_id))).status_code == 400
            assert (await client.patch(f"/things/{path}", json={}, headers=MERGE_PATCH)).status_code == 400
            assert (await client.delete(f"/things/{path}")).status_code == 204
            assert (await client.get(f"/things/{path}")).status_code == 404


def with_store(settings: Settings, store: OxigraphServer) -> Settings:
    return dataclasses.replace(
        settings,
        sparql_store_query_url=f"{store.url}/query",
        sparql_store_update_url=f"{store.url}/update",
        sparql_store_graph_url=f"{store.url}/store",
    )


async def test_an_external_store_is_pushed_everything_but_an_unloadable_row(
    own_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pusher sends a batch of changes in one SPARQL Update, and a whole build in one load: one row the store
    could not parse made it refuse every push after it, and the copy stopped."""
    settings = Settings(database_url=own_database_url, db_pool_size=3, sparql_index_dir=tmp_path)
    running, fresh = OxigraphServer().start(), OxigraphServer().start()
    try:
        async with local_client(create_app(with_store(settings, running))) as client:
            await ready(client)
            with as_before_the_checks(monkeypatch):
                batch = [agent(f"urn:test:iso:store:{number:03d}") for number in range(20)]
                imported = await client.post("/api/v1/things/batch", json=[agent(UNLOADABLE_ID), *batch])
                assert imported.json()["refused"] == 0, imported.text
            assert await graph_count(client) == 20
            check = (await ready(client))["checks"]["sparql_worker"]
            assert check["state"] == "degraded"
            assert "1 description left out" in check["detail"]

        async with local_client(create_app(with_store(settings, fresh))) as client:  # an empty store: built
            report = await ready(client)
            assert report["checks"]["sparql_worker"]["state"] == "degraded"
            assert await graph_count(client) == 20
    finally:
        running.close()
        fresh.close()
