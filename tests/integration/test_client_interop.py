"""What generic and standard clients rely on, in process: the directory's TD as node-wot reads it, write answers
whose media type the TD declares, A2A card URLs and caching, the MCP registry API under /v0, SPARQL result formats
and the OpenAPI document's security. The real clients run against a live server in tests/e2e/test_real_clients_*."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client, until_sparql_answers
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
    async with local_client(app) as test_client:
        await until_sparql_answers(test_client)
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


async def test_an_unreachable_allow_listed_service_endpoint_is_a_bad_gateway(
    module_database_url: str, tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{probe.getsockname()[1]}/sparql"
    # A SPARQL worker of its own (its index directory): the allow-list is the worker's.
    settings = Settings(
        database_url=module_database_url,
        db_pool_size=3,
        sparql_service_allowlist=(endpoint,),
        sparql_index_dir=tmp_path / "sparql-index",
    )
    async with local_client(create_app(settings)) as federating:
        await until_sparql_answers(federating)
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


CARDS = Path(__file__).resolve().parents[1] / "data" / "a2a"
WEATHER_AGENT = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "weather-agent.td.json").read_text())


def sample_card(name: str) -> dict[str, Any]:
    card: dict[str, Any] = json.loads((CARDS / name).read_text())
    return card


async def import_card(client: AsyncTestClient[Any], card: dict[str, Any], thing_id: str) -> dict[str, Any]:
    imported = await client.post("/api/v1/agents/import", params={"format": "a2a", "id": thing_id}, json=card)
    assert imported.status_code in (200, 201), imported.text
    document: dict[str, Any] = (await client.get(f"/things/{thing_id}")).json()
    return document


async def card_of(client: AsyncTestClient[Any], thing_id: str) -> dict[str, Any]:
    answer = await client.get(f"/a2a/{quote(thing_id, safe='')}/.well-known/agent-card.json")
    assert answer.status_code == 200, answer.text
    card: dict[str, Any] = answer.json()
    return card


@pytest.mark.parametrize(
    "name", ["java_magic_8_ball_security-agent_card.json", "birthday_planner_adk-calendar_agent.json"]
)
async def test_an_a2a_03_card_keeps_its_security_and_its_interfaces(client: AsyncTestClient[Any], name: str) -> None:
    card = sample_card(name)
    document = await import_card(client, card, f"urn:test:interop:{name}")
    (scheme_name,) = card["securitySchemes"]
    assert document["security"] == [scheme_name]
    assert document["securityDefinitions"][scheme_name]["scheme"] == "oauth2"
    assert document["forms"][0]["href"] == card["url"]
    assert {form["a2a:protocolBinding"] for form in document["forms"]} >= {card["preferredTransport"]}
    exported = await card_of(client, f"urn:test:interop:{name}")
    assert exported == card


async def test_an_a2a_03_card_with_several_interfaces_gets_a_form_for_each(client: AsyncTestClient[Any]) -> None:
    card = sample_card("java_magic_8_ball_security-agent_card.json")
    document = await import_card(client, card, "urn:test:interop:magic-forms")
    assert [(form["href"], form["a2a:protocolBinding"]) for form in document["forms"]] == [
        ("http://localhost:11000", "JSONRPC"),
        ("http://localhost:11000", "HTTP+JSON"),
        ("localhost:11000", "GRPC"),
    ]


def two_schemes(requirements: list[dict[str, Any]], *, legacy: bool) -> dict[str, Any]:
    card = sample_card("birthday_planner_adk-calendar_agent.json")
    oauth = card["securitySchemes"]["CalendarGoogleOAuth"]
    key = {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    if not legacy:
        card = {key: value for key, value in card.items() if key != "security"}
        oauth = {"oauth2SecurityScheme": {"flows": oauth["flows"]}}
        key = {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}
        card["securityRequirements"] = requirements
    else:
        card["security"] = requirements
    card["securitySchemes"] = {"oauth": oauth, "key": key}
    return card


@pytest.mark.parametrize("legacy", [True, False])
async def test_a2a_security_requirements_keep_and_versus_or(client: AsyncTestClient[Any], legacy: bool) -> None:
    if legacy:
        both, either = [{"oauth": [], "key": []}], [{"oauth": []}, {"key": []}]
    else:
        both = [{"schemes": {"oauth": {"list": []}, "key": {"list": []}}}]
        either = [{"schemes": {"oauth": {"list": []}}}, {"schemes": {"key": {"list": []}}}]
    needs_both = await import_card(client, two_schemes(both, legacy=legacy), f"urn:test:interop:and:{legacy}")
    assert sorted(needs_both["security"]) == ["key", "oauth"]  # a TD needs every scheme its security names
    needs_one = await import_card(client, two_schemes(either, legacy=legacy), f"urn:test:interop:or:{legacy}")
    (combo,) = needs_one["security"]
    assert needs_one["securityDefinitions"][combo] == {"scheme": "combo", "oneOf": ["oauth", "key"]}


async def test_an_lmos_agent_needing_two_schemes_exports_one_requirement_naming_both(
    client: AsyncTestClient[Any],
) -> None:
    agent = WEATHER_AGENT | {
        "id": "urn:test:interop:and-agent",
        "securityDefinitions": {
            "basic_sc": {"scheme": "basic"},
            "key_sc": {"scheme": "apikey", "in": "header", "name": "X-Key"},
            "either_sc": {"scheme": "combo", "oneOf": ["basic_sc", "key_sc"]},
        },
        "security": ["basic_sc", "key_sc"],
    }
    stored = await client.put(f"/things/{agent['id']}", content=json.dumps(agent), headers={"Content-Type": TD})
    assert stored.status_code == 201, stored.text
    card = await card_of(client, agent["id"])
    assert [sorted(item["schemes"]) for item in card["securityRequirements"]] == [["basic_sc", "key_sc"]]
    patched = await client.patch(
        f"/things/{agent['id']}",
        content=json.dumps({"security": ["either_sc"]}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 204, patched.text
    card = await card_of(client, agent["id"])
    assert [sorted(item["schemes"]) for item in card["securityRequirements"]] == [["basic_sc"], ["key_sc"]]


async def test_an_edited_signed_card_is_served_without_its_stale_signatures(client: AsyncTestClient[Any]) -> None:
    signatures = [{"protected": "eyJhbGciOiJFUzI1NiJ9", "signature": "c2lnbmF0dXJl"}]
    card = sample_card("birthday_planner_adk-calendar_agent.json") | {"signatures": signatures}
    await import_card(client, card, "urn:test:interop:signed")
    assert (await card_of(client, "urn:test:interop:signed"))["signatures"] == signatures
    edited = await client.patch(
        "/things/urn:test:interop:signed",
        content=json.dumps({"title": "Calendar Agent (edited)"}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert edited.status_code == 204, edited.text
    served = await card_of(client, "urn:test:interop:signed")
    assert served["name"] == "Calendar Agent (edited)"
    assert "signatures" not in served


async def test_the_card_endpoint_has_an_etag_cache_control_and_answers_304(client: AsyncTestClient[Any]) -> None:
    await import_card(client, sample_card("birthday_planner_adk-calendar_agent.json"), "urn:test:interop:cached")
    url = "/a2a/urn:test:interop:cached/.well-known/agent-card.json"
    first = await client.get(url)
    assert first.headers["cache-control"] == "no-cache"
    etag = first.headers["etag"]
    again = await client.get(url, headers={"If-None-Match": f'"other", W/{etag}'})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", etag)
    await client.patch(
        "/things/urn:test:interop:cached",
        content=json.dumps({"description": "changed"}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    changed = await client.get(url, headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag


async def test_the_card_resolves_under_the_base_url_with_a_trailing_slash(client: AsyncTestClient[Any]) -> None:
    await import_card(client, sample_card("birthday_planner_adk-calendar_agent.json"), "https://example.com/agents/c")
    base = f"/a2a/{quote('https://example.com/agents/c', safe='')}/"
    resolved = await client.get(urljoin("http://127.0.0.1:8080" + base, ".well-known/agent-card.json"))
    assert resolved.json()["name"] == "Calendar Agent"


def operation_security(document: dict[str, Any]) -> dict[str, Any]:
    return {
        operation["operationId"]: operation.get("security")
        for path in document["paths"].values()
        for operation in path.values()
        if isinstance(operation, dict) and "operationId" in operation
    }


async def test_openapi_declares_the_api_key_scheme_and_every_operations_security(client: AsyncTestClient[Any]) -> None:
    document = (await client.get("/schema/openapi.json")).json()
    schemes = document["components"]["securitySchemes"]
    assert list(schemes) == ["apiKey"]  # no identity provider: access tokens are not accepted
    assert (schemes["apiKey"]["type"], schemes["apiKey"]["scheme"]) == ("http", "bearer")
    security = operation_security(document)
    assert all(requirement is not None for requirement in security.values()), security
    # Authentication is off: credentials are accepted everywhere and needed nowhere; public routes need none.
    assert security["createOrUpdateThing"] == [{}, {"apiKey": []}]
    assert security["directoryDescription"] == [{}]


async def test_openapi_security_follows_the_guard_with_authentication_on(module_database_url: str) -> None:
    settings = Settings(database_url=module_database_url, db_pool_size=3, auth="writes")
    async with local_client(create_app(settings)) as guarded:
        security = operation_security((await guarded.get("/schema/openapi.json")).json())
    assert security["createOrUpdateThing"] == [{"apiKey": []}]
    assert security["mcpPublishV0"] == [{"apiKey": []}]
    assert security["retrieveThing"] == [{}, {"apiKey": []}]
    assert security["livez"] == [{}]


async def test_an_agent_whose_combo_schemes_refer_to_each_other_still_has_a_card(client: AsyncTestClient[Any]) -> None:
    agent = WEATHER_AGENT | {
        "id": "urn:test:interop:combo-cycle",
        "securityDefinitions": {
            "basic_sc": {"scheme": "basic"},
            "loop_sc": {"scheme": "combo", "oneOf": ["loop_sc", "basic_sc"]},
            "wide_sc": {"scheme": "combo", "allOf": ["loop_sc", "loop_sc", "loop_sc", "loop_sc", "loop_sc"]},
        },
        "security": ["wide_sc", "wide_sc", "wide_sc"],
    }
    stored = await client.put(f"/things/{agent['id']}", content=json.dumps(agent), headers={"Content-Type": TD})
    assert stored.status_code == 201, stored.text
    card = await card_of(client, agent["id"])
    assert [sorted(item["schemes"]) for item in card["securityRequirements"]] == [["basic_sc"]]
