"""Every SDK method against a real server, through both clients: ``sdk`` is the blocking ``RegistryClient`` or
the ``AsyncRegistryClient``, and ``run`` awaits what the async one returns. Errors arrive as typed exceptions that
carry the problem's status, detail, validationErrors and invalidParams.
"""

from __future__ import annotations

import datetime as dt
import inspect
import uuid
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import pytest

from registry.client import (
    AsyncRegistryClient,
    BadRequestError,
    ConflictError,
    DirectoryUnreachable,
    Findings,
    NotFoundError,
    PreconditionFailedError,
    RegistryClient,
    Requirement,
    SearchItem,
    UnexpectedResponse,
)
from tests.support.things import thing

T = TypeVar("T")
TOKEN = uuid.uuid4().hex[:8]
VENDOR = f"Sdk {TOKEN}"
CAPABILITY = f"urn:{TOKEN}:capability:forecast"
AGENT = f"urn:{TOKEN}:agent:forecaster"
OTHER_AGENT = f"urn:{TOKEN}:agent:old-forecaster"
TOOL_NAME = f"get_forecast_{TOKEN}"
ANTHROPIC_TOOL = {
    "name": TOOL_NAME,
    "description": "The forecast for a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City"}},
        "required": ["city"],
    },
}


def agent(thing_id: str, version: str, capability_version: str, *, required: tuple[str, ...] = ()) -> dict[str, Any]:
    properties = {name: {"type": "string", "description": name} for name in ("city", *required)}
    return thing(
        f"Forecaster {TOKEN}",
        **{
            "@type": "lmos:Agent",
            "id": thing_id,
            "description": f"Forecasts the weather {TOKEN}",
            "version": {"instance": version},
            "lmos:metadata": {"lmos:vendor": {"lmos:name": VENDOR}},
            "lmos:capabilities": [{"id": CAPABILITY, "name": "forecast", "version": capability_version}],
            "actions": {
                "forecast": {
                    "description": "The forecast",
                    "input": {"type": "object", "properties": properties, "required": list(required)},
                    "forms": [{"href": "https://agents.example/forecast", "op": "invokeaction"}],
                }
            },
        },
    )


async def run(value: T) -> Any:
    """The blocking client's result as it is; the async client's coroutine awaited."""
    return await value if inspect.isawaitable(value) else value


@pytest.fixture(scope="module")
def corpus(base_url: str) -> None:
    with RegistryClient(base_url) as client:
        client.register(agent(AGENT, "1.0.0", "1.0.0"))
        client.register(agent(AGENT, "1.1.0", "1.1.0"))
        client.register(agent(AGENT, "1.2.0", "1.2.0", required=("day",)))  # breaking, declared minor
        client.register(agent(OTHER_AGENT, "0.9.0", "0.9.0"))


@pytest.fixture(params=["sync", "async"])
async def sdk(request: pytest.FixtureRequest, base_url: str, corpus: None) -> AsyncIterator[Any]:
    if request.param == "sync":
        with RegistryClient(base_url) as client:
            yield client
    else:
        async with AsyncRegistryClient(base_url) as async_client:
            yield async_client


# -- descriptions and leases


async def test_write_read_and_lease(sdk: Any) -> None:
    document = thing("Sdk crud")
    created = await run(sdk.register(document, ttl=60))
    assert (created.id, created.created) == (document["id"], True)
    assert (await run(sdk.get(document["id"])))["registration"]["ttl"] == 60
    patched = await run(sdk.patch(document["id"], {"title": "Sdk crud 2"}, if_match=created.etag))
    assert not patched.created
    with pytest.raises(PreconditionFailedError) as stale:
        await run(sdk.replace(document, if_match=created.etag))
    assert stale.value.status == 412
    replaced = await run(sdk.replace({**document, "title": "Sdk crud 3"}, ttl=60, if_match=patched.etag))
    assert replaced.etag != patched.etag
    lease = await run(sdk.renew_lease(document["id"]))
    assert (lease.id, lease.ttl) == (document["id"], 60)
    assert dt.datetime.fromisoformat(lease.expires.replace("Z", "+00:00")) > dt.datetime.now(dt.UTC)
    assert document["id"] in [item["id"] for item in await run(sdk.list(limit=1000))]
    await run(sdk.delete(document["id"]))
    with pytest.raises(NotFoundError) as gone:
        await run(sdk.get(document["id"]))
    assert document["id"] in gone.value.detail
    with pytest.raises(NotFoundError):
        await run(sdk.renew_lease(document["id"]))


async def test_anonymous_registration_gets_an_id(sdk: Any) -> None:
    document = thing("Sdk anonymous")
    del document["id"]
    created = await run(sdk.register(document))
    assert created.created
    assert created.id
    await run(sdk.delete(created.id))


async def test_invalid_description_carries_validation_errors(sdk: Any) -> None:
    with pytest.raises(BadRequestError) as invalid:
        await run(sdk.register({"id": f"urn:{TOKEN}:bad", "title": 5}))
    problem = invalid.value
    assert problem.status == 400
    assert "invalid" in problem.detail
    assert problem.validation_errors
    assert all(issue.field and issue.description for issue in problem.validation_errors)
    assert problem.problem["validationErrors"]


async def test_lease_of_a_registration_without_ttl_conflicts(sdk: Any) -> None:
    with pytest.raises(ConflictError) as conflict:
        await run(sdk.renew_lease(AGENT))
    assert conflict.value.status == 409


# -- search, facets, summaries


async def test_search_with_filters_facets_and_pages(sdk: Any) -> None:
    page = await run(sdk.search(vendor=VENDOR.upper(), capability=CAPABILITY, facets=True))
    assert {item.id for item in page.items} == {AGENT, OTHER_AGENT}
    item = next(item for item in page.items if item.id == AGENT)
    assert isinstance(item, SearchItem)
    assert (item.kind, item.version, item.vendor.name) == ("agent", "1.2.0", VENDOR)
    assert isinstance(item.modified, dt.datetime)
    assert [(brief.id, brief.version) for brief in item.capabilities if brief.source == "lmos"] == [
        (CAPABILITY, "1.2.0")
    ]
    assert page.facets is not None
    assert [(facet.value, facet.count) for facet in page.facets.vendor] == [(VENDOR, 2)]

    in_range = await run(sdk.search(capability=CAPABILITY, capability_version="^1.1", type_="lmos:Agent"))
    assert [item.id for item in in_range.items] == [AGENT]

    ranked = await run(sdk.search(q=f"forecasts {TOKEN}", sort="relevance"))
    assert ranked.items
    assert all(item.score is not None for item in ranked.items)

    first = await run(sdk.search(vendor=VENDOR, sort="title", limit=1))
    assert len(first.items) == 1
    assert first.next_cursor
    second = await run(sdk.search(vendor=VENDOR, sort="title", limit=1, cursor=first.next_cursor))
    assert {first.items[0].id, second.items[0].id} == {AGENT, OTHER_AGENT}


async def test_find_by_need(sdk: Any) -> None:
    found = await run(sdk.find(f"forecasts {TOKEN}", kind="agent", limit=5))
    assert isinstance(found, Findings)
    assert {AGENT, OTHER_AGENT} <= {item.id for item in found.items}
    assert all(item.kind == "agent" for item in found.items)
    assert all(item.score is not None for item in found.items)
    assert found.items[0].match in {None, "strong", "weak"}
    in_range = await run(sdk.find(f"forecasts {TOKEN}", capability=CAPABILITY, version="^1.1"))
    assert [item.id for item in in_range.items] == [AGENT]
    with pytest.raises(BadRequestError) as bad_range:
        await run(sdk.find("forecasts", capability=CAPABILITY, version="not a range"))
    assert bad_range.value.invalid_params[0].name == "capability_version"


async def test_facets(sdk: Any) -> None:
    facets = await run(sdk.facets(vendor=VENDOR))
    assert [(facet.value, facet.count) for facet in facets.kind] == [("agent", 2)]
    assert (CAPABILITY, 2) in [(facet.value, facet.count) for facet in facets.capability]


async def test_search_problems_name_the_parameter(sdk: Any) -> None:
    with pytest.raises(BadRequestError) as bad_kind:
        await run(sdk.search(kind="robot"))
    assert "kind" in bad_kind.value.detail
    assert [param.name for param in bad_kind.value.invalid_params] == ["kind"]
    with pytest.raises(BadRequestError) as bad_cursor:
        await run(sdk.search(cursor="nonsense"))
    assert bad_cursor.value.invalid_params[0].name == "cursor"
    with pytest.raises(BadRequestError) as too_small:  # checked by the web framework, reported the same way
        await run(sdk.search(limit=0))
    assert [param.name for param in too_small.value.invalid_params] == ["limit"]
    assert too_small.value.invalid_params[0].reason
    with pytest.raises(BadRequestError) as lonely_version:
        await run(sdk.facets(capability_version="^1"))
    assert lonely_version.value.invalid_params[0].name == "capability_version"


async def test_summary(sdk: Any) -> None:
    summary = await run(sdk.summary(AGENT))
    assert (summary.id, summary.kind, summary.version) == (AGENT, "agent", "1.2.0")
    assert summary.vendor is not None
    assert summary.vendor.name == VENDOR
    lmos = [capability for capability in summary.capabilities if capability.source == "lmos"]
    assert [(capability.id, capability.name) for capability in lmos] == [(CAPABILITY, "forecast")]
    assert summary.lint == []
    with pytest.raises(NotFoundError):
        await run(sdk.summary(f"urn:{TOKEN}:nothing"))


# -- versions and compatibility


async def test_versions_and_one_version(sdk: Any) -> None:
    kept = await run(sdk.versions(AGENT))
    assert [(item.version, item.current, item.verdict, item.honest) for item in kept.items] == [
        ("1.2.0", True, "breaking", False),
        ("1.1.0", False, "compatible", True),
        ("1.0.0", False, None, None),
    ]
    newest_1_1 = await run(sdk.versions(AGENT, satisfies="~1.1"))
    assert [item.version for item in newest_1_1.items] == ["1.1.0"]
    detail = await run(sdk.version(AGENT, "1.2.0"))
    assert (detail.previous_version, detail.document["version"]["instance"]) == ("1.1.0", "1.2.0")
    assert detail.compatibility is not None
    assert detail.compatibility.required_bump == "major"
    assert any(change.breaking for change in detail.compatibility.changes)
    with pytest.raises(NotFoundError):
        await run(sdk.version(AGENT, "9.9.9"))
    with pytest.raises(BadRequestError) as bad_range:
        await run(sdk.versions(AGENT, satisfies="not a range"))
    assert bad_range.value.invalid_params[0].name == "satisfies"


async def test_compatibility_of_kept_versions_and_of_documents(sdk: Any) -> None:
    report = await run(sdk.compatibility(AGENT, "1.0.0", "1.2.0"))
    assert (report.from_, report.to, report.verdict, report.required_bump) == ("1.0.0", "1.2.0", "breaking", "major")
    assert (report.declared_bump, report.honest) == ("minor", False)
    assert [change.pointer for change in report.changes if change.breaking]
    same = await run(sdk.compare(agent(AGENT, "1.0.0", "1.0.0"), agent(AGENT, "1.0.1", "1.0.0")))
    assert same.verdict == "identical"
    with pytest.raises(NotFoundError):
        await run(sdk.compatibility(f"urn:{TOKEN}:nothing", "1.0.0", "2.0.0"))


# -- resolution


async def test_resolve(sdk: Any) -> None:
    result = await run(
        sdk.resolve(
            [
                CAPABILITY,
                Requirement(CAPABILITY, range="<1.0"),
                Requirement(CAPABILITY, range="^1", strategy="lowest"),
                {"capability": CAPABILITY, "range": "*", "strategy": "closest", "closest_to": "1.0.0"},
                Requirement(f"urn:{TOKEN}:capability:nobody"),
                Requirement(CAPABILITY, range=">=5"),
            ]
        )
    )
    assert not result.resolved
    highest, below_one, lowest, closest, nobody, too_new = result.results
    assert highest.resolved
    assert highest.provider is not None
    assert (highest.provider.id, highest.provider.version, highest.provider.vendor) == (AGENT, "1.2.0", VENDOR)
    assert [alternative.id for alternative in highest.alternatives] == [OTHER_AGENT]
    assert below_one.provider is not None
    assert below_one.provider.id == OTHER_AGENT
    assert lowest.provider is not None
    assert lowest.provider.id == AGENT
    assert closest.provider is not None
    assert closest.provider.id == AGENT
    assert (nobody.resolved, nobody.reason) == (False, "no_provider")
    assert (too_new.reason, too_new.provider) == ("no_version_in_range", None)
    assert too_new.detail


async def test_resolve_problems(sdk: Any) -> None:
    with pytest.raises(BadRequestError) as bad_range:
        await run(sdk.resolve([Requirement(CAPABILITY, range="one or two")]))
    assert bad_range.value.invalid_params[0].name == "requirements[0].range"
    with pytest.raises(BadRequestError) as no_target:
        await run(sdk.resolve([Requirement(CAPABILITY, strategy="closest")]))
    assert "closest_to" in no_target.value.detail
    with pytest.raises(BadRequestError):
        await run(sdk.resolve([]))
    with pytest.raises(BadRequestError):
        await run(sdk.resolve([{"capability": CAPABILITY, "strategy": "random"}]))


# -- tool formats


async def test_import_and_export_tools(sdk: Any) -> None:
    imported = await run(sdk.import_tool(ANTHROPIC_TOOL, "anthropic", vendor=VENDOR, version="1.0.0"))
    assert imported.location == f"/things/{imported.id}"
    assert imported.notices == []
    again = await run(sdk.import_tool(ANTHROPIC_TOOL, "anthropic", vendor=VENDOR, version="1.0.0"))
    assert (again.id, again.created) == (imported.id, False)
    assert await run(sdk.export(imported.id, "anthropic")) == ANTHROPIC_TOOL
    openai = await run(sdk.export(imported.id, "openai"))
    assert openai["function"]["name"] == TOOL_NAME
    actions = await run(sdk.export(AGENT, "mcp"))
    assert [tool["name"] for tool in actions] == ["forecast"]

    sloppy = await run(sdk.import_tool({"name": f"Sloppy{TOKEN}", "input_schema": {}}, "anthropic"))
    assert {notice.code for notice in sloppy.notices} >= {"lint:name-not-snake-case"}


async def test_tool_format_problems(sdk: Any) -> None:
    with pytest.raises(BadRequestError) as not_a_tool:
        await run(sdk.import_tool({"nothing": True}, "openai"))
    assert not_a_tool.value.validation_errors
    with pytest.raises(BadRequestError) as unknown_format:
        await run(sdk.export(AGENT, "yaml"))
    assert unknown_format.value.status == 400
    with pytest.raises(NotFoundError):
        await run(sdk.export(f"urn:{TOKEN}:nothing", "openai"))


# -- SPARQL and JSONPath


async def test_sparql_select_ask_and_graphs(sdk: Any) -> None:
    select = f"SELECT ?name WHERE {{ GRAPH <{AGENT}> {{ ?a td:hasActionAffordance/td:name ?name }} }}"
    for post in (False, True):
        results = await run(sdk.sparql(select, post=post))
        assert results.variables == ["name"]
        assert results.rows() == [{"name": "forecast"}]
        assert results.results.bindings[0]["name"].type == "literal"
    ask = await run(sdk.sparql(f"ASK {{ GRAPH <{AGENT}> {{ ?a td:title ?t }} }}"))
    assert (ask.boolean, ask.rows()) == (True, [])
    construct = f"CONSTRUCT {{ ?a td:title ?t }} WHERE {{ GRAPH <{AGENT}> {{ ?a td:title ?t }} }}"
    turtle = await run(sdk.sparql_graph(construct))
    assert f"Forecaster {TOKEN}" in turtle
    with pytest.raises(UnexpectedResponse, match="sparql_graph"):
        await run(sdk.sparql(construct))
    with pytest.raises(BadRequestError) as syntax:
        await run(sdk.sparql("SELECT ?x WHERE {"))
    assert syntax.value.detail
    with pytest.raises(BadRequestError, match=r"read-only"):
        await run(sdk.sparql("DELETE WHERE { ?s ?p ?o }", post=True))


async def test_jsonpath(sdk: Any) -> None:
    titles = await run(sdk.jsonpath(f'$[?@.id == "{AGENT}"].title'))
    assert titles == [f"Forecaster {TOKEN}"]
    with pytest.raises(BadRequestError):
        await run(sdk.jsonpath("$[?"))


async def test_unreachable_directory() -> None:
    with RegistryClient("http://127.0.0.1:9", timeout=2) as client, pytest.raises(DirectoryUnreachable):
        client.search()
    async with AsyncRegistryClient("http://127.0.0.1:9", timeout=2) as async_client:
        with pytest.raises(DirectoryUnreachable):
            await async_client.resolve([CAPABILITY])
