"""The discovery API over HTTP against a real server, on a corpus this module registers.

The corpus: agents of three vendors offering overlapping capabilities, each registered in several versions, plus
tools. Every name carries a per-run token, so other tests' descriptions in the session database never match.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from registry.client import RegistryClient

TD11 = "https://www.w3.org/2022/wot/td/v1.1"
TOKEN = uuid.uuid4().hex[:8]
VENDORS = {"acme": f"Acme {TOKEN}", "globex": f"Globex {TOKEN}", "initech": f"Initech {TOKEN}"}
BILLING = f"urn:{TOKEN}:capability:billing"
WEATHER = f"weather-{TOKEN}"
#: A made-up word for ranking: in one agent's title, another's description, a third's examples.
WORD = f"zq{TOKEN}"


def agent_id(name: str) -> str:
    return f"urn:{TOKEN}:agent:{name}"


def action(
    optional: Sequence[str] = (), required: Sequence[str] = (), output: Sequence[str] = ("total",)
) -> dict[str, Any]:
    return {
        "description": "Look up an invoice",
        "input": {
            "type": "object",
            "properties": {name: {"type": "string", "description": name} for name in [*required, *optional]},
            "required": list(required),
        },
        "output": {"type": "object", "properties": {name: {"type": "number"} for name in output}},
        "forms": [{"href": "https://agents.example/invoke", "op": "invokeaction"}],
    }


def agent(
    name: str,
    vendor: str,
    version: str,
    capabilities: list[dict[str, Any]],
    *,
    title: str | None = None,
    description: str | None = None,
    actions: dict[str, Any] | None = None,
    ttl: float | None = None,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "@context": [TD11, {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
        "@type": "lmos:Agent",
        "id": agent_id(name),
        "title": title or f"{name} agent",
        "version": {"instance": version},
        "lmos:metadata": {"lmos:vendor": {"lmos:name": VENDORS[vendor], "lmos:url": f"https://{vendor}.example"}},
        "lmos:capabilities": capabilities,
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
        "actions": actions if actions is not None else {"lookup_invoice": action()},
    }
    if description:
        document["description"] = description
    if ttl is not None:
        document["registration"] = {"ttl": ttl}
    return document


def put(client: httpx.Client, document: dict[str, Any]) -> httpx.Response:
    response = client.put(f"/things/{document['id']}", json=document, headers={"content-type": "application/td+json"})
    assert response.status_code in (201, 204), response.text
    return response


def billing(version: str) -> dict[str, Any]:
    return {"id": BILLING, "name": "billing", "version": version, "description": "Shows and explains bills"}


def weather(version: str, examples: Sequence[str] = ()) -> dict[str, Any]:
    return {"name": WEATHER, "version": version, "description": "Forecasts", "examples": list(examples)}


@pytest.fixture(scope="module")
def corpus(base_url: str) -> dict[str, Any]:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        # Several versions each: the last one registered is current.
        for version, lookup in [
            ("1.0.0", action()),
            ("1.1.0", action(optional=["note"])),  # compatible, honest minor
            ("1.2.0", action(optional=["note"], required=["customer"])),  # breaking, dishonest minor
            ("2.0.0", action(optional=["note"], required=["customer"], output=[])),  # breaking, honest major
        ]:
            put(
                client,
                agent(
                    "acme-billing",
                    "acme",
                    version,
                    [billing("1.2.0")],
                    title=f"Invoice helper {WORD}",
                    actions={"lookup_invoice": lookup},
                ),
            )
        for version in ("1.0.0", "1.5.0"):
            put(
                client,
                agent("globex-billing", "globex", version, [billing(version)], description=f"Explains bills {WORD}"),
            )
        put(client, agent("initech-billing", "initech", "3.0.0", [billing("2.1.0")]))
        put(client, agent("acme-weather", "acme", "1.0.0", [weather("1.0.0", [f"Will it rain? {WORD}"])]))
        put(client, agent("globex-weather", "globex", "3.0.0", [weather("3.0.0")]))
        put(client, agent("initech-expiring", "initech", "1.0.0", [weather("7.0.0")], ttl=1))
        put(
            client, agent("initech-soon-gone", "initech", "1.0.0", [{"name": f"gone-{TOKEN}", "version": "1.0"}], ttl=1)
        )
        time.sleep(1.2)  # the two leases above expire (purging runs every 60 s, so their rows remain)
    return {}


def search(client: httpx.Client, **params: Any) -> dict[str, Any]:
    response = client.get("/api/v1/search", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def ids(body: dict[str, Any]) -> list[str]:
    return [item["id"] for item in body["items"]]


# -- search


def test_filter_by_vendor_is_case_insensitive(client: httpx.Client, corpus: Any) -> None:
    body = search(client, vendor=VENDORS["acme"].upper())
    assert ids(body) == [agent_id("acme-weather"), agent_id("acme-billing")]  # by title, any case
    assert body["items"][1]["vendor"] == {"name": VENDORS["acme"], "url": "https://acme.example"}
    assert body["items"][1]["version"] == "2.0.0"


def test_filter_by_capability_id_or_name(client: httpx.Client, corpus: Any) -> None:
    by_id = ids(search(client, capability=BILLING))
    assert sorted(by_id) == sorted(agent_id(name) for name in ("acme-billing", "globex-billing", "initech-billing"))
    by_name = ids(search(client, capability=WEATHER.upper(), kind="agent"))
    assert sorted(by_name) == [agent_id("acme-weather"), agent_id("globex-weather")]  # expired ones left out


@pytest.mark.parametrize(
    ("version_range", "expected"),
    [
        ("^1.2", ["acme-billing", "globex-billing"]),
        ("~1.2.0", ["acme-billing"]),
        (">=1.3 <3", ["globex-billing", "initech-billing"]),
        ("2.x", ["initech-billing"]),
        ("[1.0,2.0)", ["acme-billing", "globex-billing"]),
        ("(1.5,3.0]", ["initech-billing"]),
        ("^9", []),
    ],
)
def test_filter_by_capability_version_range(
    client: httpx.Client, corpus: Any, version_range: str, expected: list[str]
) -> None:
    found = ids(search(client, capability=BILLING, capability_version=version_range))
    assert sorted(found) == [agent_id(name) for name in expected]


def test_filter_by_kind_and_type(client: httpx.Client, corpus: Any) -> None:
    assert len(ids(search(client, vendor=VENDORS["globex"], kind="agent", type="lmos:Agent"))) == 2
    assert ids(search(client, vendor=VENDORS["globex"], kind="tool")) == []
    assert ids(search(client, vendor=VENDORS["globex"], type="lmos:Tool")) == []


def test_text_search_ranks_title_over_description_over_examples(client: httpx.Client, corpus: Any) -> None:
    body = search(client, q=WORD)
    assert ids(body) == [agent_id("acme-billing"), agent_id("globex-billing"), agent_id("acme-weather")]
    scores = [item["score"] for item in body["items"]]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[-1]


def test_text_search_ranked_by_relevance_leaves_out_expired_descriptions(client: httpx.Client, corpus: Any) -> None:
    """Expiry is checked after the ranking, for the page (catalog.search_query): the expired ones, not yet purged,
    match the words but are never answered, and the page is still full of live ones."""
    body = search(client, q=f"agent {TOKEN}", sort="relevance", limit=2)
    assert len(body["items"]) == 2
    everything = ids(search(client, q=f"agent {TOKEN}", sort="relevance", limit=100))
    assert agent_id("initech-billing") in everything
    assert agent_id("initech-expiring") not in everything
    assert agent_id("initech-soon-gone") not in everything


def test_text_search_uses_stemming_and_combines_with_filters(client: httpx.Client, corpus: Any) -> None:
    strict = search(client, q=f"{WORD} helpers", vendor=VENDORS["acme"], match="all")
    assert ids(strict) == [agent_id("acme-billing")]
    # Plain words: any of them matches, the description with both first
    assert ids(search(client, q=f"{WORD} helpers", vendor=VENDORS["acme"]))[0] == agent_id("acme-billing")
    assert ids(search(client, q=f"{WORD} -helper")) == [agent_id("globex-billing"), agent_id("acme-weather")]


def test_sort_by_modified_is_newest_first(client: httpx.Client, corpus: Any) -> None:
    body = search(client, capability=BILLING, sort="modified")
    modified = [item["modified"] for item in body["items"]]
    assert modified == sorted(modified, reverse=True)
    assert ids(body)[0] == agent_id("initech-billing")


def test_facets(client: httpx.Client, corpus: Any) -> None:
    response = client.get("/api/v1/facets", params={"q": WORD})
    assert response.status_code == 200
    facets = response.json()
    assert facets["kind"] == [{"value": "agent", "count": 3}]
    assert facets["vendor"] == [
        {"value": VENDORS["acme"], "count": 2},
        {"value": VENDORS["globex"], "count": 1},
    ]
    assert {"value": BILLING, "count": 2} in facets["capability"]
    assert {"value": WEATHER, "count": 1} in facets["capability"]
    inline = search(client, q=WORD, facets="true", limit=1)
    assert inline["facets"] == facets
    assert len(inline["items"]) == 1


def test_cursor_pagination_without_duplicates_or_gaps_under_concurrent_writes(base_url: str) -> None:
    vendor = f"Paging {TOKEN}"

    def document(index: int, extra: str = "") -> dict[str, Any]:
        return {
            "@context": [TD11, {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
            "@type": "lmos:Tool",
            "id": f"urn:{TOKEN}:paging:{extra}{index}",
            "title": f"Tool {extra}{index:03d}",
            "lmos:metadata": {"lmos:vendor": {"lmos:name": vendor}},
            "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
            "security": "nosec_sc",
        }

    with httpx.Client(base_url=base_url, timeout=30) as client:
        originals = [document(index) for index in range(40)]
        for item in originals:
            put(client, item)

        def write_concurrently() -> None:
            with httpx.Client(base_url=base_url, timeout=30) as writer:
                for index in range(40):
                    put(writer, document(index, extra="new-"))
                    put(writer, {**originals[index], "description": "touched"})

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            writes = pool.submit(write_concurrently)
            seen: list[str] = []
            # By title, and by relevance where every item ranks the same (ties are ordered by id; a need in plain
            # words is one page, the strict syntax pages).
            for ordering in ({"sort": "title"}, {"q": "tool", "match": "all"}):
                seen.clear()
                cursor = None
                while True:
                    params: dict[str, Any] = {"vendor": vendor, "limit": 7, **ordering}
                    if cursor:
                        params["cursor"] = cursor
                    body = search(client, **params)
                    seen.extend(ids(body))
                    cursor = body["next_cursor"]
                    if cursor is None:
                        break
                assert len(seen) == len(set(seen)), "a page repeated an item"
                assert {item["id"] for item in originals} <= set(seen), "an item present throughout was skipped"
            writes.result()


# -- summaries and versions


def test_summary_carries_capabilities_and_lint(client: httpx.Client, corpus: Any) -> None:
    response = client.get(f"/api/v1/things/{agent_id('acme-billing')}/summary")
    assert response.status_code == 200
    summary = response.json()
    assert summary["kind"] == "agent"
    assert summary["version"] == "2.0.0"
    capabilities = {item["name"]: item for item in summary["capabilities"]}
    assert capabilities["billing"]["id"] == BILLING
    assert capabilities["billing"]["version"] == "1.2.0"
    assert capabilities["lookup_invoice"]["input"]["required"] == ["customer"]
    assert summary["lint"] == []


def test_every_version_is_kept_with_its_verdict(client: httpx.Client, corpus: Any) -> None:
    response = client.get(f"/api/v1/things/{agent_id('acme-billing')}/versions")
    assert response.status_code == 200
    items = response.json()["items"]
    assert [(item["version"], item.get("verdict"), item.get("honest"), item["current"]) for item in items] == [
        ("2.0.0", "breaking", True, True),
        ("1.2.0", "breaking", False, False),
        ("1.1.0", "compatible", True, False),
        ("1.0.0", None, None, False),
    ]
    detail = client.get(f"/api/v1/things/{agent_id('acme-billing')}/versions/1.2.0").json()
    assert detail["document"]["version"] == {"instance": "1.2.0"}
    assert detail["compatibility"]["changes"] == [
        {
            "pointer": "/actions/lookup_invoice/input/properties/customer",
            "kind": "required_property_added",
            "breaking": True,
            "message": "lookup_invoice input: new required property 'customer': callers that do not send it will be "
            "refused (breaking: needs a new major version)",
            "bump": "major",
            "document": "new",
        }
    ]


@pytest.mark.parametrize(
    ("satisfies", "expected"), [("^1", ["1.2.0", "1.1.0", "1.0.0"]), ("[1.1,2.0)", ["1.2.0", "1.1.0"]), ("~3", [])]
)
def test_versions_satisfying_a_range_newest_first(
    client: httpx.Client, corpus: Any, satisfies: str, expected: list[str]
) -> None:
    response = client.get(f"/api/v1/things/{agent_id('acme-billing')}/versions", params={"satisfies": satisfies})
    assert [item["version"] for item in response.json()["items"]] == expected


def test_versions_are_immutable(client: httpx.Client, corpus: Any) -> None:
    changed = agent("globex-billing", "globex", "1.5.0", [billing("1.5.0")], description="Rewritten")
    put(client, changed)
    detail = client.get(f"/api/v1/things/{agent_id('globex-billing')}/versions/1.5.0").json()
    assert detail["document"]["description"] == f"Explains bills {WORD}"
    put(client, agent("globex-billing", "globex", "1.5.0", [billing("1.5.0")], description=f"Explains bills {WORD}"))


def test_versions_outlive_a_deleted_description(client: httpx.Client) -> None:
    document = agent("deleted", "acme", "1.0.0", [billing("1.0.0")])
    put(client, document)
    assert client.delete(f"/things/{document['id']}").status_code == 204
    assert client.get(f"/api/v1/things/{document['id']}/summary").status_code == 404
    versions = client.get(f"/api/v1/things/{document['id']}/versions").json()["items"]
    assert [(item["version"], item["current"]) for item in versions] == [("1.0.0", False)]
    assert agent_id("deleted") not in ids(search(client, capability=BILLING))


def test_ids_with_slashes(client: httpx.Client) -> None:
    document = agent("x", "acme", "1.0.0", [])
    document["id"] = f"https://agents.example/{TOKEN}/versions/a"
    put(client, document)
    for path in (document["id"], document["id"].replace("/", "%2F").replace(":", "%3A")):
        assert client.get(f"/api/v1/things/{path}/summary").json()["id"] == document["id"]
        assert client.get(f"/api/v1/things/{path}/versions").json()["items"][0]["version"] == "1.0.0"
        assert client.get(f"/api/v1/things/{path}/versions/1.0.0").status_code == 200


# -- resolution


def resolve(client: httpx.Client, *requirements: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/api/v1/resolve", json={"requirements": list(requirements)})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize(
    ("requirement", "provider", "version", "alternatives"),
    [
        ({"range": "^1.2"}, "globex-billing", "1.5.0", ["acme-billing"]),
        ({"range": "^1.2", "strategy": "lowest"}, "acme-billing", "1.2.0", ["globex-billing"]),
        ({"range": "[1.0,3.0)", "strategy": "closest", "closest_to": "2.0.0"}, "initech-billing", "2.1.0", None),
        ({"range": "~1.2.0"}, "acme-billing", "1.2.0", []),
        ({"range": ">=1 <2"}, "globex-billing", "1.5.0", None),
        ({"range": "1.x"}, "globex-billing", "1.5.0", None),
        ({}, "initech-billing", "2.1.0", ["globex-billing", "acme-billing"]),
    ],
)
def test_resolution_strategies_and_ranges(
    client: httpx.Client,
    corpus: Any,
    requirement: dict[str, Any],
    provider: str,
    version: str,
    alternatives: list[str] | None,
) -> None:
    (result,) = resolve(client, {"capability": BILLING, **requirement})["results"]
    assert result["resolved"] is True
    assert (result["provider"]["id"], result["provider"]["version"]) == (agent_id(provider), version)
    assert result["provider"]["vendor"] == VENDORS[provider.split("-")[0]]
    if alternatives is not None:
        assert [item["id"] for item in result["alternatives"]] == [agent_id(name) for name in alternatives]


def test_resolution_of_several_requirements_with_reasons(client: httpx.Client, corpus: Any) -> None:
    body = resolve(
        client,
        {"capability": "billing", "range": "^1.5"},
        {"capability": WEATHER, "range": "^3"},
        {"capability": BILLING, "range": "^5"},
        {"capability": f"nothing-{TOKEN}"},
        {"capability": WEATHER, "range": "^7"},
        {"capability": f"gone-{TOKEN}"},
    )
    assert body["resolved"] is False
    outcomes = [(result["resolved"], result.get("reason")) for result in body["results"]]
    assert outcomes == [
        (True, None),
        (True, None),
        (False, "no_version_in_range"),
        (False, "no_provider"),
        (False, "provider_expired"),
        (False, "provider_expired"),
    ]
    assert body["results"][1]["provider"]["id"] == agent_id("globex-weather")
    assert "1.2.0" in body["results"][2]["detail"]


# -- compatibility


def test_compatibility_between_kept_versions(client: httpx.Client, corpus: Any) -> None:
    response = client.post(
        "/api/v1/compatibility", json={"id": agent_id("acme-billing"), "from": "1.0.0", "to": "2.0.0"}
    )
    assert response.status_code == 200
    report = response.json()
    assert report["verdict"] == "breaking"
    assert (report["from"], report["to"], report["declared_bump"], report["required_bump"]) == (
        "1.0.0",
        "2.0.0",
        "major",
        "major",
    )
    assert report["honest"] is True
    assert {(change["pointer"], change["kind"]) for change in report["changes"]} == {
        ("/actions/lookup_invoice/input/properties/note", "optional_property_added"),
        ("/actions/lookup_invoice/input/properties/customer", "required_property_added"),
        ("/actions/lookup_invoice/output/properties/total", "schema_property_removed"),
    }


def test_compatibility_of_two_documents(client: httpx.Client) -> None:
    old = agent("doc", "acme", "1.0.0", [], actions={"a": action(), "b": action()})
    new = agent("doc", "acme", "1.0.1", [], actions={"a": action(optional=["x"])})
    report = client.post("/api/v1/compatibility", json={"old": old, "new": new}).json()
    assert (report["verdict"], report["declared_bump"], report["required_bump"], report["honest"]) == (
        "breaking",
        "patch",
        "major",
        False,
    )
    assert [change["pointer"] for change in report["changes"] if change["breaking"]] == ["/actions/b"]


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ({"actions": 5}, {"actions": [1]}, "old.(root)"),
        ("agent", {"actions": [1]}, "new.actions"),
    ],
)
def test_compatibility_of_things_that_are_not_descriptions(
    client: httpx.Client, old: Any, new: Any, field: str
) -> None:
    if old == "agent":
        old = agent("doc", "acme", "1.0.0", [])
    response = client.post("/api/v1/compatibility", json={"old": old, "new": new})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    fields = [error["field"] for error in response.json()["validationErrors"]]
    assert field in fields


# -- tool formats and lint

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"location": {"type": "string", "description": "City"}},
    "required": ["location"],
}
TOOLS: dict[str, dict[str, Any]] = {
    "openai": {
        "type": "function",
        "function": {"name": f"get_weather_{TOKEN}", "description": "Weather now", "parameters": WEATHER_SCHEMA},
    },
    "anthropic": {"name": f"get_weather_{TOKEN}", "description": "Weather now", "input_schema": WEATHER_SCHEMA},
    "mcp": {
        "name": f"get_weather_{TOKEN}",
        "description": "Weather now",
        "inputSchema": WEATHER_SCHEMA,
        "outputSchema": {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]},
        "annotations": {"readOnlyHint": True},
    },
    "lmkit": {
        "Name": f"get_weather_{TOKEN}",
        "Description": "Weather now",
        "InputSchema": '{"type":"object","properties":{"location":{"type":"string","description":"City"}},'
        '"required":["location"]}',
    },
    "mojentic": {
        "type": "function",
        "function": {"name": f"get_weather_{TOKEN}", "description": "Weather now", "parameters": WEATHER_SCHEMA},
    },
    "allos": {
        "name": f"get_weather_{TOKEN}",
        "description": "Weather now",
        "parameters": [{"name": "location", "type": "string", "description": "City", "required": True}],
        "permission": "always_allow",
    },
}


@pytest.mark.parametrize("tool_format", sorted(TOOLS))
def test_tool_round_trip(client: httpx.Client, tool_format: str) -> None:
    response = client.post(
        "/api/v1/tools/import",
        params={"format": tool_format, "vendor": f"Tools {TOKEN} {tool_format}", "version": "1.0.0"},
        json=TOOLS[tool_format],
    )
    assert response.status_code == 201, response.text
    assert "Registry-Notices" not in response.headers
    thing_id = response.json()["id"]
    assert response.headers["Location"] == f"/things/{thing_id}"
    stored = client.get(f"/things/{thing_id}").json()
    assert stored["@type"] == "lmos:Tool"
    assert stored["title"] == f"get_weather_{TOKEN}"
    exported = client.get(f"/api/v1/things/{thing_id}/export", params={"format": tool_format})
    assert exported.status_code == 200
    assert exported.json() == TOOLS[tool_format]
    summary = client.get(f"/api/v1/things/{thing_id}/summary").json()
    assert summary["kind"] == "tool"
    assert summary["capabilities"][0]["source"] == "function"


def test_import_with_id_and_reimport_replaces(client: httpx.Client) -> None:
    params = {"format": "anthropic", "id": f"urn:{TOKEN}:tool:explicit"}
    first = client.post("/api/v1/tools/import", params=params, json=TOOLS["anthropic"])
    again = client.post("/api/v1/tools/import", params=params, json=TOOLS["anthropic"])
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"] == params["id"]


def test_agent_actions_export_as_a_list(client: httpx.Client, corpus: Any) -> None:
    response = client.get(f"/api/v1/things/{agent_id('acme-billing')}/export", params={"format": "anthropic"})
    assert response.status_code == 200
    (tool,) = response.json()
    assert tool["name"] == "lookup_invoice"
    assert tool["input_schema"]["required"] == ["customer"]


def test_lint_warnings_on_put(client: httpx.Client) -> None:
    document = agent("camel", "acme", "1.0.0", [], actions={"lookUp": {**action(), "description": ""}})
    notices = json.loads(put(client, document).headers["Registry-Notices"])
    assert [(notice["code"], notice["field"]) for notice in notices] == [
        ("lint:name-not-snake-case", "/actions/lookUp"),
        ("lint:description-missing", "/actions/lookUp"),
    ]


def test_lint_warnings_on_registration_never_reject(client: httpx.Client) -> None:
    sloppy = {"name": f"GetStuff{TOKEN}", "description": "d" * 250, "input_schema": {"properties": {"q": {}}}}
    response = client.post("/api/v1/tools/import", params={"format": "anthropic"}, json=sloppy)
    assert response.status_code == 201
    notices = json.loads(response.headers["Registry-Notices"])
    codes = {notice["code"] for notice in notices}
    assert codes == {
        "lint:name-not-snake-case",
        "lint:description-too-long",
        "lint:schema-type-missing",
        "lint:schema-required-missing",
        "lint:schema-description-missing",
    }
    summary = client.get(f"/api/v1/things/{response.json()['id']}/summary").json()
    assert {warning["code"] for warning in summary["lint"]} == {code.removeprefix("lint:") for code in codes}


# -- the OpenAPI document and bad input


def test_every_endpoint_is_in_the_openapi_document(client: httpx.Client) -> None:
    document = client.get("/schema/openapi.json").json()
    expected = {
        ("/api/v1/search", "get"): "SearchResult",
        ("/api/v1/facets", "get"): "Facets",
        ("/api/v1/things/{thing_id}/summary", "get"): "ThingSummary",
        ("/api/v1/things/{thing_id}/versions", "get"): "VersionList",
        ("/api/v1/things/{thing_id}/versions/{version}", "get"): "VersionDetail",
        ("/api/v1/things/{thing_id}/export", "get"): None,
        ("/api/v1/resolve", "post"): "ResolveResult",
        ("/api/v1/compatibility", "post"): "CompatibilityResult",
        ("/api/v1/tools/import", "post"): "ImportedTool",
    }
    for (path, method), schema in expected.items():
        operation = document["paths"][path][method]
        if schema:
            responses = str(operation["responses"])
            assert schema in responses, (path, responses)
    schemas = document["components"]["schemas"]
    for name in ("ResolveRequest", "Requirement", "CompatibilityRequest", "SearchItem", "Report", "Change"):
        assert any(key.endswith(name) for key in schemas), name
    search_parameters = {parameter["name"] for parameter in document["paths"]["/api/v1/search"]["get"]["parameters"]}
    assert {"kind", "vendor", "capability", "capability_version", "type", "q", "sort", "limit", "cursor"} <= (
        search_parameters
    )


@pytest.mark.parametrize(
    ("method", "path", "params", "body", "status"),
    [
        ("get", "/api/v1/search", {"bogus": "1"}, None, 400),
        ("get", "/api/v1/search", {"kind": "robot"}, None, 400),
        ("get", "/api/v1/search", {"sort": "random"}, None, 400),
        ("get", "/api/v1/search", {"limit": "0"}, None, 400),
        ("get", "/api/v1/search", {"limit": "many"}, None, 400),
        ("get", "/api/v1/search", {"cursor": "!!!"}, None, 400),
        ("get", "/api/v1/search", {"capability_version": "^1"}, None, 400),
        ("get", "/api/v1/search", {"capability": "x", "capability_version": "not a range"}, None, 400),
        ("get", "/api/v1/search", {"capability": "x", "capability_version": "[1.0,2.0"}, None, 400),
        ("get", "/api/v1/facets", {"limit": "3"}, None, 400),
        ("get", "/api/v1/things/urn:nothing:here/summary", {}, None, 404),
        ("get", "/api/v1/things/%FF/summary", {}, None, 400),  # refused at the input boundary
        ("get", "/api/v1/things/urn:nothing:here/versions", {}, None, 404),
        ("get", "/api/v1/things/urn:nothing:here/versions", {"satisfies": ">>1"}, None, 400),
        ("get", "/api/v1/things/urn:nothing:here/versions", {"latest": "1"}, None, 400),
        ("get", "/api/v1/things/urn:nothing:here/versions/1.0.0", {}, None, 404),
        ("get", "/api/v1/things/urn:nothing:here/export", {"format": "openai"}, None, 404),
        ("get", "/api/v1/things/urn:nothing:here/export", {"format": "yaml"}, None, 400),
        ("post", "/api/v1/resolve", {}, {}, 400),
        ("post", "/api/v1/resolve", {}, {"requirements": []}, 400),
        ("post", "/api/v1/resolve", {}, {"requirements": [{"capability": "x", "range": ">>1"}]}, 400),
        ("post", "/api/v1/resolve", {}, {"requirements": [{"capability": "x", "strategy": "best"}]}, 400),
        ("post", "/api/v1/resolve", {}, {"requirements": [{"capability": "x", "strategy": "closest"}]}, 400),
        ("post", "/api/v1/resolve", {}, {"requirements": [{"capability": "x", "extra": 1}]}, 400),
        ("post", "/api/v1/resolve", {}, [1, 2], 400),
        ("post", "/api/v1/compatibility", {}, {"id": "urn:x"}, 400),
        ("post", "/api/v1/compatibility", {}, {"old": {}}, 400),
        ("post", "/api/v1/compatibility", {}, {"id": "urn:nothing", "from": "1.0.0", "to": "2.0.0"}, 404),
        ("post", "/api/v1/tools/import", {"format": "openai"}, {"nothing": True}, 400),
        ("post", "/api/v1/tools/import", {"format": "yaml"}, {"name": "x"}, 400),
        ("post", "/api/v1/tools/import", {}, {"tool": "x"}, 400),
        ("post", "/api/v1/tools/import", {"format": "anthropic", "x": "1"}, TOOLS["anthropic"], 400),
        ("post", "/api/v1/tools/import", {"format": "anthropic", "version": "one"}, TOOLS["anthropic"], 400),
        ("post", "/api/v1/tools/import", {"format": "anthropic"}, [1], 400),
    ],
)
def test_bad_input_is_a_problem(
    client: httpx.Client, method: str, path: str, params: dict[str, str], body: Any, status: int
) -> None:
    response = client.request(method, path, params=params, json=body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["detail"]


@pytest.mark.parametrize("path", ["/api/v1/resolve", "/api/v1/compatibility", "/api/v1/tools/import?format=mcp"])
def test_bad_bodies_are_problems(client: httpx.Client, path: str) -> None:
    for content in (b"{not json", b"[" * 100_000 + b"]" * 100_000):
        response = client.post(path, content=content, headers={"content-type": "application/json"})
        assert response.status_code == 400, response.text
        assert response.headers["content-type"].startswith("application/problem+json")


def test_unversioned_provider_resolves_for_any_range_and_appears_once(client: httpx.Client) -> None:
    """A capability offered twice by one description (capabilities entry + action) yields one provider."""
    capability = f"echo_{TOKEN}"
    document = agent("echo-unversioned", "initech", "1.0.0", [{"name": capability}], actions={capability: action()})
    del document["version"]
    put(client, document)
    answers = {
        version_range: client.post(
            "/api/v1/resolve", json={"requirements": [{"capability": capability, "range": version_range}]}
        ).json()["results"][0]
        for version_range in ("*", "^1")
    }
    assert answers["*"]["resolved"] is True
    assert answers["*"]["provider"]["id"] == document["id"]
    assert answers["*"]["alternatives"] == []
    assert answers["^1"]["resolved"] is False
    assert answers["^1"]["reason"] == "no_version_in_range"


def test_framework_parameter_errors_name_the_parameter(client: httpx.Client) -> None:
    problem = client.get("/api/v1/search", params={"limit": "0"}).json()
    assert [param["name"] for param in problem["invalidParams"]] == ["limit"]
    assert all(param["reason"] for param in problem["invalidParams"])


def test_versions_in_a_resolve_error_are_in_semantic_order(client: httpx.Client) -> None:
    capability = f"ordered_{TOKEN}"
    for index, version in enumerate(["1.2.17", "1.10.0", "1.2.9"]):
        put(client, agent(f"ordered-{index}", "acme", version, [{"name": capability, "version": version}]))
    result = client.post("/api/v1/resolve", json={"requirements": [{"capability": capability, "range": "^3"}]})
    detail = result.json()["results"][0]["detail"]
    assert "versions 1.2.9, 1.2.17, 1.10.0, none in '^3'" in detail


def test_import_refuses_a_file_under_another_format_and_detects_an_unnamed_one(client: httpx.Client) -> None:
    params = {"vendor": f"Strict {TOKEN}", "version": "1.0.0"}
    first = client.post("/api/v1/tools/import", params={**params, "format": "mcp"}, json=TOOLS["mcp"])
    assert first.status_code == 201, first.text
    stored = client.get(f"/things/{first.json()['id']}").json()
    wrong = client.post("/api/v1/tools/import", params={**params, "format": "openai"}, json=TOOLS["mcp"])
    assert wrong.status_code == 400
    problem = wrong.json()
    assert "format=mcp" in problem["detail"]
    assert problem["validationErrors"][0]["field"] in {"inputSchema", "outputSchema", "annotations"}
    assert client.get(f"/things/{first.json()['id']}").json()["actions"] == stored["actions"]  # not overwritten
    detected = client.post("/api/v1/tools/import", params={"vendor": f"Detected {TOKEN}"}, json=TOOLS["anthropic"])
    assert detected.status_code == 201, detected.text
    assert detected.json()["notices"][0] == {
        "code": "tool-format-detected",
        "message": "the body was read as a anthropic tool",
        "field": "format",
    }
    unknown = client.post("/api/v1/tools/import", json={"tool": "?"})
    assert unknown.status_code == 400
    assert unknown.json()["invalidParams"][0]["name"] == "format"


def test_mcp_export_wraps_an_output_that_is_not_an_object(client: httpx.Client) -> None:
    document = agent("string-output", "acme", "1.0.0", [], actions={"echo": {**action(), "output": {"type": "string"}}})
    put(client, document)
    exported = client.get(f"/api/v1/things/{document['id']}/export", params={"format": "mcp"}).json()
    assert exported[0]["outputSchema"] == {
        "type": "object",
        "properties": {"result": {"type": "string"}},
        "required": ["result"],
    }


def test_vendor_matches_words_prefixes_exactly_or_fuzzily(client: httpx.Client) -> None:
    vendor = f"Deutsche Telekom AG {TOKEN}"
    document = agent("telekom", "acme", "1.0.0", [])
    document["lmos:metadata"]["lmos:vendor"]["lmos:name"] = vendor
    put(client, document)

    def found(**params: str) -> bool:
        return document["id"] in {item["id"] for item in search(client, **params)["items"]}

    assert found(vendor=f"telekom {TOKEN}")
    assert found(vendor=f"Deutsche Tele {TOKEN}")
    assert found(vendor=vendor.lower(), vendor_match="exact")
    assert not found(vendor=f"telekom {TOKEN}", vendor_match="exact")
    assert found(vendor=f"Deutsche Telecom AG {TOKEN}", vendor_match="fuzzy")
    assert not found(vendor=f"Deutsche Telecom AG {TOKEN}")
    facets = client.get("/api/v1/facets", params={"vendor": f"telekom {TOKEN}"}).json()
    assert facets["vendor"] == [{"value": vendor, "count": 1}]
    with RegistryClient(str(client.base_url)) as sdk:
        assert [item.id for item in sdk.search(vendor=f"Deutsche Telecom {TOKEN}", vendor_match="fuzzy").items] == [
            document["id"]
        ]
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "registry",
            "search",
            "--vendor",
            f"tele {TOKEN}",
            "--ids-only",
            "--url",
            str(client.base_url),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cli.stdout.split() == [document["id"]], cli.stderr
    bad = client.get("/api/v1/search", params={"vendor": "telekom", "vendor_match": "sounds-like"})
    assert bad.status_code == 400
    assert bad.json()["invalidParams"][0]["name"] == "vendor_match"


def test_events_take_the_kinds_search_takes(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=10) as client:
        for kind in ("agent", "tool", "thing"):
            with client.stream("GET", "/events", params={"kind": kind}) as response:
                assert response.status_code == 200


@pytest.mark.parametrize(
    ("preferences", "provider", "excluded"),
    [
        ({"exclude_vendors": [f"globex {TOKEN}"]}, "acme-billing", {"globex-billing": "vendor_excluded"}),
        ({"include_vendors": [f"Acme {TOKEN}"]}, "acme-billing", {"globex-billing": "vendor_not_included"}),
        ({"prefer_vendors": [f"acme {TOKEN}"]}, "acme-billing", {}),
    ],
)
def test_resolution_with_vendor_preferences_explains_itself(
    client: httpx.Client, corpus: Any, preferences: dict[str, Any], provider: str, excluded: dict[str, str]
) -> None:
    (result,) = resolve(client, {"capability": BILLING, "range": "^1.2", **preferences})["results"]
    assert result["resolved"] is True
    assert result["provider"]["id"] == agent_id(provider)
    explanation = result["explanation"]
    assert explanation["considered"] == 3
    notes = {note["id"]: note for note in explanation["candidates"]}
    assert notes[agent_id(provider)]["status"] == "chosen"
    assert notes[agent_id("initech-billing")] == {
        "id": agent_id("initech-billing"),
        "version": "2.1.0",
        "status": "excluded",
        "vendor": VENDORS["initech"],
        "reason": "out_of_range",
    }
    for name, reason in excluded.items():
        assert (notes[agent_id(name)]["status"], notes[agent_id(name)]["reason"]) == ("excluded", reason)
        assert notes[agent_id(name)]["vendor"] == VENDORS[name.split("-")[0]]
    assert "the highest version in range '^1.2' among live providers" in explanation["rule"]


def test_resolution_refused_by_vendor_preferences_says_so(client: httpx.Client, corpus: Any) -> None:
    requirement = {"capability": BILLING, "range": "^1.2", "exclude_vendors": [f"Acme {TOKEN}", f"Globex {TOKEN}"]}
    (result,) = resolve(client, requirement)["results"]
    assert (result["resolved"], result["reason"]) == (False, "vendor_excluded")
    assert {note["reason"] for note in result["explanation"]["candidates"]} == {"vendor_excluded", "out_of_range"}
