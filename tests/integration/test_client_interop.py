"""What generic and standard clients rely on, in process: the directory's TD as node-wot reads it, write answers
whose media type the TD declares, A2A card URLs and caching, the MCP registry API under /v0, SPARQL result formats
and the OpenAPI document's security. The real clients run against a live server in tests/e2e/test_real_clients_*."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.servers import fresh_database

TD = "application/td+json"


def lamp(thing_id: str | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "@context": "https://www.w3.org/2022/wot/td/v1.1",
        "title": "lamp",
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
    }
    return document if thing_id is None else {**document, "id": thing_id}


@pytest.fixture(scope="module")
def module_database_url(postgres_admin_url: str) -> Iterator[str]:
    with fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="module")
async def client(module_database_url: str) -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(Settings(database_url=module_database_url, db_pool_size=3))
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


async def test_directory_td_has_a_td10_compatible_context_first(client: AsyncTestClient[Any]) -> None:
    td = (await client.get("/.well-known/wot")).json()
    assert td["@context"][:2] == ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1"]
    assert "https://www.w3.org/2022/wot/discovery" in td["@context"]


async def test_directory_td_things_property_has_a_data_schema(client: AsyncTestClient[Any]) -> None:
    things = (await client.get("/.well-known/wot")).json()["properties"]["things"]
    assert [branch["type"] for branch in things["oneOf"]] == ["array", "object"]


async def test_directory_td_sparql_post_form_declares_its_request_media_type(client: AsyncTestClient[Any]) -> None:
    forms = (await client.get("/.well-known/wot")).json()["actions"]["searchSPARQL"]["forms"]
    post = next(form for form in forms if form["htv:methodName"] == "POST")
    assert post["contentType"] == "application/sparql-query"
    answer = await client.post(
        "/search/sparql", content="ASK {}", headers={"Content-Type": post["contentType"], "Accept": "application/json"}
    )
    assert answer.status_code == 200, answer.text


async def test_write_answers_without_a_body_carry_the_media_type_the_td_declares(client: AsyncTestClient[Any]) -> None:
    td = (await client.get("/.well-known/wot")).json()
    declared = {name: action["forms"][0]["response"]["contentType"] for name, action in td["actions"].items()}
    thing_id = "urn:test:interop:write-answers"
    answers = {
        "createThing": await client.put(
            f"/things/{thing_id}", content=json.dumps(lamp(thing_id)), headers={"Content-Type": TD}
        ),
        "createAnonymousThing": await client.post("/things", content=json.dumps(lamp()), headers={"Content-Type": TD}),
        "updateThing": await client.put(
            f"/things/{thing_id}", content=json.dumps(lamp(thing_id)), headers={"Content-Type": TD}
        ),
        "partiallyUpdateThing": await client.patch(
            f"/things/{thing_id}",
            content='{"title": "lamp 2"}',
            headers={"Content-Type": "application/merge-patch+json"},
        ),
        "deleteThing": await client.delete(f"/things/{thing_id}"),
    }
    for name, answer in answers.items():
        assert answer.status_code in (201, 204), (name, answer.text)
        assert answer.content == b""
        assert answer.headers["content-type"] == declared[name] == "application/x-empty", name


def server_json(name: str, version: str) -> dict[str, str]:
    return {"name": name, "description": "Interop test server", "version": version}


@pytest.mark.parametrize("prefix", ["/v0", "/v0.1"])
async def test_mcp_registry_api_is_served_under_v0_and_v0_1(client: AsyncTestClient[Any], prefix: str) -> None:
    name = f"io.github.interop{prefix.replace('.', '-').strip('/')}/tool"
    published = await client.post(f"{prefix}/publish", json=server_json(name, "1.0.0"))
    assert published.status_code == 200, published.text
    assert published.json()["server"]["version"] == "1.0.0"
    escaped = name.replace("/", "%2F")
    read = await client.get(f"{prefix}/servers/{escaped}/versions/1.0.0", params={"include_deleted": "true"})
    assert read.json()["_meta"]["io.modelcontextprotocol.registry/official"]["status"] == "active"
    status = await client.patch(f"{prefix}/servers/{escaped}/status", json={"status": "deprecated"})
    assert status.json()["updatedCount"] == 1
    listed = await client.get(f"{prefix}/servers", params={"search": name})
    assert [item["server"]["name"] for item in listed.json()["servers"]] == [name]


@pytest.mark.parametrize("version", ["", " ", "latest", "1.0/2"])
async def test_mcp_publish_refuses_a_version_it_could_not_serve_before_storing(
    client: AsyncTestClient[Any], version: str
) -> None:
    name = "io.github.interop/unaddressable"
    refused = await client.post("/v0/publish", json=server_json(name, version))
    assert refused.status_code == 400, refused.text
    assert [error["field"] for error in refused.json()["validationErrors"]] == ["version"]
    assert (await client.get("/v0/servers/io.github.interop%2Funaddressable/versions")).status_code == 404
    assert (await client.get("/things/urn:mcp:server:io.github.interop/unaddressable")).status_code == 404


@pytest.mark.parametrize("since", ["null", "yesterday", "2025-13-01T00:00:00Z", "2025-01-01"])
async def test_mcp_updated_since_that_is_not_a_timestamp_is_refused_naming_it(
    client: AsyncTestClient[Any], since: str
) -> None:
    refused = await client.get("/v0/servers", params={"updated_since": since})
    assert refused.status_code == 400, refused.text
    assert refused.json()["invalidParams"][0]["name"] == "updated_since"
    assert refused.json()["error"]


async def test_mcp_updated_since_accepts_rfc3339_timestamps(client: AsyncTestClient[Any]) -> None:
    for since in ("2025-01-01T00:00:00Z", "2025-01-01T00:00:00.5+02:00", "2999-01-01T00:00:00z"):
        assert (await client.get("/v0/servers", params={"updated_since": since})).status_code == 200, since


@pytest.mark.parametrize("prefix", ["/v0", "/v0.1"])
async def test_mcp_put_on_a_server_version_is_not_implemented(client: AsyncTestClient[Any], prefix: str) -> None:
    answer = await client.put(f"{prefix}/servers/io.github.interop%2Ftool/versions/1.0.0", json=server_json("x/y", "1"))
    assert answer.status_code == 501
    assert answer.headers["content-type"].startswith("application/json")
    assert "not supported" in answer.json()["error"]


async def test_an_unreachable_allow_listed_service_endpoint_is_a_bad_gateway(module_database_url: str) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}/sparql"
    settings = Settings(database_url=module_database_url, db_pool_size=3, sparql_service_allowlist=(endpoint,))
    async with AsyncTestClient(app=create_app(settings)) as federating:
        answer = await federating.get(
            "/search/sparql", params={"query": f"SELECT * WHERE {{ SERVICE <{endpoint}> {{ ?s ?p ?o }} }}"}
        )
        assert answer.status_code == 502, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert "SERVICE endpoint" in answer.json()["detail"]
        silent = await federating.get(
            "/search/sparql", params={"query": f"SELECT * WHERE {{ SERVICE SILENT <{endpoint}> {{ ?s ?p ?o }} }}"}
        )
        assert silent.status_code == 200, silent.text


async def test_ask_in_csv_or_tsv_is_not_acceptable_and_names_the_acceptable_types(client: AsyncTestClient[Any]) -> None:
    for accept in ("text/csv", "text/tab-separated-values"):
        answer = await client.get("/search/sparql", params={"query": "ASK {}"}, headers={"Accept": accept})
        assert answer.status_code == 406, answer.text
        assert "application/sparql-results+xml" in answer.json()["acceptable"]
    select = await client.get("/search/sparql", params={"query": "SELECT * {}"}, headers={"Accept": "text/csv"})
    assert select.headers["content-type"].startswith("text/csv")
