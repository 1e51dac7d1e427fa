"""The official ``mcp-publisher`` CLI (modelcontextprotocol/registry, cmd/publisher) against a live server.

Its Go binary cannot be installed here (only PyPI, npm and Debian packages are reachable), so its requests are
replayed exactly as its source sends them: ``publish`` posts the compact ``server.json`` to ``{registry}/v0/publish``
with ``Content-Type: application/json`` and ``Authorization: Bearer {token}`` and reads a ``ServerResponse`` from a
200 or 201; ``status`` reads ``{registry}/v0/servers/{url.PathEscape(name)}/versions/{version}?include_deleted=true``,
then sends ``PATCH …/versions/{version}/status`` (or ``PATCH /v0/servers/{name}/status`` for ``--all-versions``,
after listing ``…/versions?include_deleted=true``) with ``{"status", "statusMessage"}`` and expects 200. Go's
client adds ``User-Agent: Go-http-client/1.1`` and ``Accept-Encoding: gzip``. ``mcp-registry-cli`` calls the same
``/v0`` routes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import DATA
from tests.support.keys import create_key
from tests.support.servers import ServerProcess, fresh_database

NAMESPACE = f"io.github.publisher{uuid.uuid4().hex[:6]}"
GO_HEADERS = {"User-Agent": "Go-http-client/1.1", "Accept-Encoding": "gzip"}


@pytest.fixture(scope="module")
def registry(postgres_admin_url: str) -> Iterator[tuple[str, str]]:
    """A server with authentication on for writes, and the publisher's token (an API key bound to its namespace)."""
    with fresh_database(postgres_admin_url) as url:
        token = create_key(url, "mcp-publisher", "--scopes", "write", "--vendor", NAMESPACE)
        with ServerProcess(url, {"REGISTRY_AUTH": "writes", "REGISTRY_PURGE_INTERVAL": "86400"}) as server:
            yield server.base_url + "/", token  # the publisher appends "/" to the registry URL


def go_path_escape(segment: str) -> str:
    """Go's url.PathEscape: everything but unreserved characters and sub-delims, ':' and '@' is escaped."""
    return quote(segment, safe="!$&'()*+,;=:@~")


def publish(registry_url: str, token: str, server: dict[str, object]) -> httpx.Response:
    body = json.dumps(server, separators=(",", ":")).encode()
    headers = {**GO_HEADERS, "Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    return httpx.post(registry_url + "v0/publish", content=body, headers=headers, timeout=30)


def read_status(registry_url: str, token: str, name: str, version: str) -> str:
    url = f"{registry_url}v0/servers/{go_path_escape(name)}/versions/{go_path_escape(version)}?include_deleted=true"
    answer = httpx.get(url, headers={**GO_HEADERS, "Authorization": f"Bearer {token}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    status: str = answer.json()["_meta"]["io.modelcontextprotocol.registry/official"]["status"]
    return status


def patch_status(registry_url: str, token: str, path: str, status: str, message: str) -> httpx.Response:
    body = json.dumps({"status": status, "statusMessage": message}, separators=(",", ":")).encode()
    headers = {**GO_HEADERS, "Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    return httpx.patch(registry_url + path, content=body, headers=headers, timeout=30)


def test_mcp_publisher_publishes_to_v0_and_reads_the_server_response(registry: tuple[str, str]) -> None:
    registry_url, token = registry
    server = {**json.loads((DATA / "mcp" / "examples" / "valid" / "with-package.json").read_text())}
    server["name"] = f"{NAMESPACE}/weather"
    answer = publish(registry_url, token, server)
    assert answer.status_code in (200, 201), answer.text
    assert (answer.json()["server"]["name"], answer.json()["server"]["version"]) == (server["name"], server["version"])


def test_mcp_publisher_status_of_one_version_and_of_all_versions(registry: tuple[str, str]) -> None:
    registry_url, token = registry
    name = f"{NAMESPACE}/status"
    for version in ("1.0.0", "1.1.0"):
        published = publish(registry_url, token, {"name": name, "description": "Status test", "version": version})
        assert published.status_code in (200, 201), published.text
    assert read_status(registry_url, token, name, "1.0.0") == "active"
    one = patch_status(
        registry_url, token, f"v0/servers/{go_path_escape(name)}/versions/1.0.0/status", "deprecated", "Upgrade"
    )
    assert one.status_code == 200, one.text
    assert read_status(registry_url, token, name, "1.0.0") == "deprecated"
    listed = httpx.get(
        f"{registry_url}v0/servers/{go_path_escape(name)}/versions?include_deleted=true",
        headers={**GO_HEADERS, "Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert sorted(item["server"]["version"] for item in listed.json()["servers"]) == ["1.0.0", "1.1.0"]
    every = patch_status(registry_url, token, f"v0/servers/{go_path_escape(name)}/status", "deleted", "Archived")
    assert every.status_code == 200, every.text
    assert every.json()["updatedCount"] == 2
    assert read_status(registry_url, token, name, "1.1.0") == "deleted"


def test_mcp_publisher_without_a_valid_token_is_refused_as_the_publisher_reports_it(registry: tuple[str, str]) -> None:
    registry_url, _ = registry
    answer = publish(registry_url, "not-a-key", {"name": f"{NAMESPACE}/x", "description": "x", "version": "1.0.0"})
    assert answer.status_code == 401
    assert answer.json()["error"]
