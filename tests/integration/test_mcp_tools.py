"""The MCP server's tools and resources in process: JSON-RPC over ``POST /mcp`` to the application (authentication
off), and ``invocation`` on descriptions of each convention. The official client over a real server:
tests/e2e/test_mcp_server.py."""

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
from registry.conventions.a2a import card_to_description
from registry.discovery.find import invocation
from registry.http.mcp_server import tool_list
from tests.support.in_process import local_client
from tests.support.keys import add_key
from tests.support.servers import fresh_database

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DATA = Path(__file__).resolve().parents[1] / "data"
AGENT = "urn:mcp-in-process:weather-agent"
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def agent(version: str) -> dict[str, Any]:
    document: dict[str, Any] = copy.deepcopy(json.loads((FIXTURES / "weather-agent.td.json").read_text()))
    document["id"] = AGENT
    document["version"] = {"instance": version}
    return document


class Mcp:
    def __init__(self, client: AsyncTestClient) -> None:  # type: ignore[type-arg]
        self.client = client
        self.calls = 0
        self.headers: dict[str, str] = {}

    async def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.calls += 1
        body = {"jsonrpc": "2.0", "id": self.calls, "method": method, **({"params": params} if params else {})}
        answer = await self.client.post("/mcp", json=body, headers={**HEADERS, **self.headers})
        assert answer.status_code == 200, answer.text
        result: dict[str, Any] = answer.json()
        return result

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        answer = await self.rpc("tools/call", {"name": name, "arguments": arguments})
        result: dict[str, Any] = answer["result"]
        return result


@pytest.fixture(scope="module")
def module_database_url(postgres_admin_url: str) -> Iterator[str]:
    with fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="module")
async def mcp(module_database_url: str) -> AsyncIterator[Mcp]:
    settings = Settings(database_url=module_database_url, db_pool_size=3)
    async with local_client(create_app(settings), timeout=60) as client:
        for version in ("1.0.0", "1.1.0"):
            written = await client.put(f"/things/{AGENT}", json=agent(version))
            assert written.status_code in {201, 204}, written.text
        yield Mcp(client)


def test_every_tool_has_an_object_input_schema_that_closes_its_arguments() -> None:
    for tool in tool_list():
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        assert tool.output_schema is not None, tool.name
        assert tool.output_schema["type"] == "object", tool.name
        assert tool.annotations is not None, tool.name
        assert tool.annotations.read_only_hint, tool.name


async def test_find_ranks_hits_and_says_how_to_call_them(mcp: Mcp) -> None:
    found = await mcp.tool("find", need="weather", kind="agent")
    assert not found["isError"], found
    (hit,) = found["structuredContent"]["items"]
    assert hit["id"] == AGENT
    assert hit["kind"] == "agent"
    assert hit["vendor"]["name"] == "Deutsche Telekom AG"
    assert hit["call"]["endpoint"].endswith("/actions/getWeather")
    assert json.loads(found["content"][0]["text"]) == found["structuredContent"]
    assert (await mcp.tool("find", need="weather", kind="tool"))["structuredContent"]["items"] == []


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({}, "Object missing required field `need`"),
        ({"need": "weather", "limit": 0}, "$.limit"),
        ({"need": "weather", "colour": "blue"}, "unknown field `colour`"),
        ({"need": "weather", "version": ">=1"}, "version needs capability"),
        ({"need": "weather", "capability": "getWeather", "version": "not a range"}, "capability_version"),
        ({"need": " ".join(["w"] * 400)}, "need has 400 terms"),
    ],
)
async def test_find_refuses_bad_arguments_as_a_tool_error(mcp: Mcp, arguments: dict[str, Any], reason: str) -> None:
    refused = await mcp.tool("find", **arguments)
    assert refused["isError"]
    assert reason in refused["content"][0]["text"]


async def test_resolve_capability_explains_its_choice(mcp: Mcp) -> None:
    resolved = (await mcp.tool("resolve_capability", capability="getWeather", range="^1"))["structuredContent"]
    assert resolved["resolved"]
    (result,) = resolved["results"]
    assert result["provider"]["id"] == AGENT
    assert result["explanation"]["rule"].startswith("the highest version in range '^1'")


async def test_check_compatibility_compares_kept_versions(mcp: Mcp) -> None:
    compared = await mcp.tool("check_compatibility", id=AGENT, **{"from": "1.0.0", "to": "1.1.0"})
    assert not compared["isError"], compared
    assert compared["structuredContent"]["verdict"] == "identical"
    assert compared["structuredContent"]["from"] == "1.0.0"
    missing = await mcp.tool("check_compatibility", id=AGENT, **{"from": "0.1.0", "to": "1.1.0"})
    assert missing["isError"]
    assert "No version '0.1.0'" in missing["content"][0]["text"]


async def test_export_tool_answers_each_format(mcp: Mcp) -> None:
    anthropic = (await mcp.tool("export_tool", id=AGENT, format="anthropic"))["structuredContent"]
    assert anthropic["tools"][0]["name"] == "getWeather"
    assert "input_schema" in anthropic["tools"][0]
    assert (await mcp.tool("export_tool", id=AGENT, format="mcp"))["structuredContent"]["tools"][0]["inputSchema"]
    unknown = await mcp.tool("export_tool", id="urn:mcp-in-process:missing")
    assert unknown["isError"]
    assert "No Thing Description with id 'urn:mcp-in-process:missing'" in unknown["content"][0]["text"]


async def test_get_description_and_resources_serve_the_document(mcp: Mcp) -> None:
    described = (await mcp.tool("get_description", id=AGENT))["structuredContent"]
    assert described["document"]["version"] == {"instance": "1.1.0"}
    assert "registration" in described["document"]
    listed = (await mcp.rpc("resources/list"))["result"]["resources"]
    assert [item["uri"] for item in listed] == ["registry://things/urn%3Amcp-in-process%3Aweather-agent"]
    read = (await mcp.rpc("resources/read", {"uri": listed[0]["uri"]}))["result"]["contents"][0]
    assert read["mimeType"] == "application/td+json"
    assert json.loads(read["text"])["id"] == AGENT
    missing = await mcp.rpc("resources/read", {"uri": "registry://things/urn%3Anone"})
    assert missing["error"]["code"] == -32002
    foreign = await mcp.rpc("resources/read", {"uri": "https://example.com/x"})
    assert "Not a resource of this directory" in foreign["error"]["message"]


async def test_an_unknown_tool_is_a_tool_error(mcp: Mcp) -> None:
    unknown = await mcp.tool("delete_everything")
    assert unknown["isError"]
    assert "Unknown tool 'delete_everything'" in unknown["content"][0]["text"]


async def test_only_post_carries_messages(mcp: Mcp) -> None:
    """Stateless: no stream to hold open for a GET, no session to DELETE; a body that is no JSON is the
    transport's parse error, never a 500."""
    for method in ("GET", "DELETE", "PUT"):
        answer = await mcp.client.request(method, "/mcp", headers=HEADERS)
        assert answer.status_code == 405, method
        assert answer.headers["allow"] == "POST, OPTIONS"
        assert answer.json()["detail"] == f"The MCP server answers POST (JSON-RPC messages), not {method}"
    garbled = await mcp.client.post(
        "/mcp", content=b"{not json", headers={**HEADERS, "Content-Type": "application/json"}
    )
    assert garbled.status_code == 400
    assert garbled.json()["error"]["code"] == -32700


async def test_pages_of_other_sites_cannot_reach_the_mcp_server(mcp: Mcp) -> None:
    for method in ("GET", "POST"):
        answer = await mcp.client.request(method, "/mcp", headers={**HEADERS, "Origin": "https://evil.example"})
        assert answer.status_code == 403, method
    rebound = await mcp.client.post("/mcp", json={}, headers={**HEADERS, "Host": "evil.example"})
    assert rebound.status_code == 400


async def test_with_authentication_on_writes_an_anonymous_host_reads_the_shared_descriptions(
    own_database_url: str,
) -> None:
    key = await add_key(own_database_url, "writer-a", ["write"], tenant="a")
    settings = Settings(database_url=own_database_url, db_pool_size=3, auth="writes")
    async with local_client(create_app(settings), timeout=60) as client:
        private = {**agent("1.0.0"), "id": "urn:mcp-in-process:tenant-a"}
        credential = {"Authorization": f"Bearer {key}"}
        written = await client.put(f"/things/{private['id']}", json=private, headers=credential)
        assert written.status_code == 201, written.text
        anonymous, tenant_a = Mcp(client), Mcp(client)
        tenant_a.headers = credential
        assert (await anonymous.tool("find", need="weather"))["structuredContent"]["items"] == []
        found = (await tenant_a.tool("find", need="weather"))["structuredContent"]["items"]
        assert [item["id"] for item in found] == [private["id"]]
        wrong = await client.post("/mcp", json={}, headers={**HEADERS, "Authorization": "Bearer wrong"})
        assert wrong.status_code == 401


def test_invocation_lists_the_matched_action_first() -> None:
    document = {
        "base": "https://api.example/v1/",
        "actions": {
            "a": {"forms": [{"href": "a", "op": "invokeaction"}]},
            "b": {"forms": [{"href": "https://other.example/b", "contentType": "application/json"}]},
        },
    }
    called = invocation(document, {"b"})
    assert called.endpoint == "https://other.example/b"
    assert [(form.capability, form.href) for form in called.forms] == [
        ("b", "https://other.example/b"),
        ("a", "https://api.example/v1/a"),
    ]


def test_invocation_of_an_a2a_agent_is_its_interface() -> None:
    card = json.loads((DATA / "a2a" / "adk_currency_agent-agent_card.json").read_text())
    called = invocation(card_to_description(card, "urn:x:currency"))
    assert called.endpoint == card["url"]
    assert called.forms[0].binding == card.get("preferredTransport", "JSONRPC")


async def test_an_mcp_server_that_cannot_start_is_logged_and_tried_again(
    module_database_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from registry.http import mcp_server

    working = mcp_server.session_manager
    failures = iter([RuntimeError("the SDK is broken")])

    def session_manager(*args: Any, **kwargs: Any) -> Any:
        for failure in failures:
            raise failure
        return working(*args, **kwargs)

    monkeypatch.setattr(mcp_server, "session_manager", session_manager)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    settings = Settings(database_url=module_database_url, db_pool_size=3)
    async with local_client(create_app(settings), timeout=60) as client:
        refused = await client.post("/mcp", json=body, headers=HEADERS)
        assert refused.status_code == 503
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert "the MCP server cannot start; the next request to /mcp tries again" in caplog.text
        assert "the SDK is broken" in caplog.text
        answered = await client.post("/mcp", json=body, headers=HEADERS)
        assert answered.status_code == 200, answered.text
        assert {tool["name"] for tool in answered.json()["result"]["tools"]} >= {"find"}
