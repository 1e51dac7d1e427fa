"""The directory as an MCP server, as an MCP host uses it: the official MCP client (``mcp.client.streamable_http``
with ``ClientSession``) against a real server process with authentication on (REGISTRY_AUTH=all) and two tenants.

The tools' logic is tested in process (tests/integration/test_mcp_tools.py); here the transport, the bearer
credential and the tenant boundary as a host meets them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.support.keys import create_key
from tests.support.servers import ServerProcess, fresh_database

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARED = "urn:mcp-e2e:weather-agent"
PRIVATE = "urn:mcp-e2e:tenant-a:forecast-tool"


class Setup:
    def __init__(self, server: ServerProcess, keys: dict[str, str]) -> None:
        self.server = server
        self.keys = keys

    @property
    def url(self) -> str:
        return f"{self.server.base_url}/mcp"


def weather_agent(thing_id: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / "weather-agent.td.json").read_text())
    document["id"] = thing_id
    return document


def forecast_tool(thing_id: str) -> dict[str, Any]:
    return {
        "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
        "@type": "lmos:Tool",
        "id": thing_id,
        "title": "Private forecast",
        "description": "Tomorrow's weather forecast for a city",
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
        "actions": {
            "forecast": {
                "description": "Tomorrow's weather forecast for a city",
                "input": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                "forms": [{"href": "https://forecast.example/forecast", "op": "invokeaction"}],
            }
        },
    }


@pytest.fixture(scope="module")
def setup(postgres_admin_url: str) -> Iterator[Setup]:
    with fresh_database(postgres_admin_url) as url:
        keys = {
            "admin": create_key(url, "admin", "--scopes", "admin"),
            "a": create_key(url, "writer-a", "--scopes", "read,write", "--tenant", "a"),
            "b": create_key(url, "reader-b", "--scopes", "read", "--tenant", "b"),
        }
        with ServerProcess(url, {"REGISTRY_AUTH": "all", "REGISTRY_PURGE_INTERVAL": "86400"}) as server:
            with httpx.Client(base_url=server.base_url, timeout=30) as http:
                for who, document in (("admin", weather_agent(SHARED)), ("a", forecast_tool(PRIVATE))):
                    answer = http.put(
                        f"/things/{document['id']}",
                        json=document,
                        headers={"Authorization": f"Bearer {keys[who]}"},
                    )
                    assert answer.status_code == 201, answer.text
            yield Setup(server, keys)


@asynccontextmanager
async def session(setup: Setup, who: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {setup.keys[who]}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(setup.url, http_client=http) as (read, write),
        ClientSession(read, write) as mcp,
    ):
        await mcp.initialize()
        yield mcp


async def test_an_mcp_host_lists_the_tools_and_finds_by_need(setup: Setup) -> None:
    async with session(setup, "a") as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        assert set(tools) == {"find", "get_description", "resolve_capability", "check_compatibility", "export_tool"}
        assert tools["find"].input_schema["required"] == ["need"]
        assert tools["find"].input_schema["properties"]["kind"]["anyOf"][0]["enum"] == ["agent", "thing", "tool"]

        found = await mcp.call_tool("find", {"need": "weather", "limit": 5})
        assert not found.is_error, found.content
        assert found.structured_content is not None
        hits = {item["id"]: item for item in found.structured_content["items"]}
        assert set(hits) == {SHARED, PRIVATE}
        assert hits[PRIVATE]["call"]["endpoint"] == "https://forecast.example/forecast"
        assert hits[PRIVATE]["call"]["forms"][0]["capability"] == "forecast"

        exported = await mcp.call_tool("export_tool", {"id": PRIVATE, "format": "openai"})
        assert not exported.is_error, exported.content
        assert exported.structured_content is not None
        assert exported.structured_content["tools"][0]["function"]["name"] == "forecast"


async def test_descriptions_are_resources_within_the_callers_tenant(setup: Setup) -> None:
    async with session(setup, "b") as mcp:
        listed = {resource.name for resource in (await mcp.list_resources()).resources}
        assert listed == {SHARED}
        templates = (await mcp.list_resource_templates()).resource_templates
        assert [template.uri_template for template in templates] == ["registry://things/{id}"]
        read = await mcp.read_resource("registry://things/urn%3Amcp-e2e%3Aweather-agent")
        assert json.loads(read.contents[0].text)["id"] == SHARED  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="No Thing Description"):
            await mcp.read_resource("registry://things/" + PRIVATE.replace(":", "%3A"))

        found = await mcp.call_tool("find", {"need": "weather"})
        assert found.structured_content is not None
        assert [item["id"] for item in found.structured_content["items"]] == [SHARED]
        hidden = await mcp.call_tool("get_description", {"id": PRIVATE})
        assert hidden.is_error
        assert "No Thing Description" in hidden.content[0].text  # type: ignore[union-attr]


async def test_a_bad_call_is_a_tool_error_with_its_reason(setup: Setup) -> None:
    async with session(setup, "a") as mcp:
        invalid = await mcp.call_tool("find", {"need": "weather", "kind": "robot"})
        assert invalid.is_error
        assert "$.kind" in invalid.content[0].text  # type: ignore[union-attr]
        unresolved = await mcp.call_tool("resolve_capability", {"capability": "getWeather", "range": "not a range"})
        assert unresolved.is_error
        assert "range" in unresolved.content[0].text  # type: ignore[union-attr]


def test_the_mcp_endpoint_needs_a_credential_as_the_rest_api_does(setup: Setup) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    anonymous = httpx.post(setup.url, json=initialize, headers=headers, timeout=30)
    assert anonymous.status_code == 401
    assert anonymous.headers["content-type"].startswith("application/problem+json")
    assert anonymous.headers["www-authenticate"].startswith("Bearer")
    wrong = httpx.post(setup.url, json=initialize, headers={**headers, "Authorization": "Bearer nope"}, timeout=30)
    assert wrong.status_code == 401
    foreign = httpx.post(
        setup.url,
        json=initialize,
        headers={**headers, "Authorization": f"Bearer {setup.keys['a']}", "Origin": "https://evil.example"},
        timeout=30,
    )
    assert foreign.status_code == 403
