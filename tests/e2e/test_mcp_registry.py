"""The MCP Registry API (v0.1) against a real server: the official server.json examples publish and read back
equal (the invalid ones are refused with the reason), versions, lifecycle status, listing, and the kept versions
and compatibility reports of the same descriptions under /api/v1."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import DATA

EXAMPLES = DATA / "mcp" / "examples"
VALID = sorted((EXAMPLES / "valid").glob("*.json"))
INVALID = sorted((EXAMPLES / "invalid").glob("*.json"))
TOKEN = uuid.uuid4().hex[:8]
OFFICIAL = "io.modelcontextprotocol.registry/official"


def server(name: str, version: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "description": f"Test server {TOKEN}", "version": version, **extra}


def version_url(name: str, version: str) -> str:
    return f"/v0.1/servers/{quote(name, safe='')}/versions/{quote(version, safe='')}"


@pytest.mark.parametrize("path", VALID, ids=[path.stem for path in VALID])
def test_official_valid_examples_publish_and_read_back_equal(client: httpx.Client, path: Path) -> None:
    example = json.loads(path.read_text())
    published = client.post("/v0.1/publish", json=example)
    assert published.status_code == 200, published.text
    assert published.json()["server"] == example
    for version in (example["version"], "latest"):
        read = client.get(version_url(example["name"], version))
        assert read.status_code == 200
        assert read.json()["server"] == example
        meta = read.json()["_meta"][OFFICIAL]
        assert (meta["status"], meta["isLatest"]) == ("active", True)
    # The server name may also arrive with its "/" unencoded.
    assert client.get(f"/v0.1/servers/{example['name']}/versions/latest").json()["server"] == example


@pytest.mark.parametrize("path", INVALID, ids=[path.stem for path in INVALID])
def test_official_invalid_examples_are_refused_with_the_reason(client: httpx.Client, path: Path) -> None:
    refused = client.post("/v0.1/publish", json=json.loads(path.read_text()))
    assert refused.status_code == 400
    assert refused.headers["content-type"].startswith("application/json")
    body = refused.json()
    assert body["error"].startswith("Not a valid server.json")
    assert body["status"] == 400
    assert body["validationErrors"]
    expected_field = {
        "bad-name-pattern": "name",
        "description-too-long": "description",
        "missing-name": "(root)",
        "package-version-latest": "packages.0.version",
        "positional-argument-missing-value": "packages.0.packageArguments.0",
    }[path.stem]
    assert expected_field in {error["field"] for error in body["validationErrors"]}


def test_versions_history_compatibility_and_status(client: httpx.Client) -> None:
    name = f"io.github.t{TOKEN}/weather"
    remote = {"type": "streamable-http", "url": "https://weather.example.com/mcp"}
    assert client.post("/v0.1/publish", json=server(name, "1.0.0", remotes=[remote])).status_code == 200
    assert client.post("/v0.1/publish", json=server(name, "1.1.0", remotes=[remote])).status_code == 200
    duplicate = client.post("/v0.1/publish", json=server(name, "1.1.0"))
    assert duplicate.status_code == 400
    assert "already published" in duplicate.json()["error"]
    lower = client.post("/v0.1/publish", json=server(name, "0.9.0"))
    assert lower.status_code == 400
    assert "below the latest" in lower.json()["error"]

    versions = client.get(f"/v0.1/servers/{quote(name, safe='')}/versions").json()
    assert [item["server"]["version"] for item in versions["servers"]] == ["1.1.0", "1.0.0"]
    assert [item["_meta"][OFFICIAL]["isLatest"] for item in versions["servers"]] == [True, False]
    assert client.get(version_url(name, "1.0.0")).json()["server"]["version"] == "1.0.0"

    # The same server is an lmos:Tool description whose versions are kept and compared.
    thing_id = f"urn:mcp:server:{name}"
    description = client.get(f"/things/{thing_id}").json()
    assert "lmos:Tool" in description["@type"]
    assert description["lmos:metadata"]["lmos:vendor"]["lmos:name"] == f"io.github.t{TOKEN}"
    assert description["forms"] == [
        {"href": "https://weather.example.com/mcp", "op": "queryallactions", "mcp:transport": "streamable-http"}
    ]
    kept = client.get(f"/api/v1/things/{thing_id}/versions").json()["items"]
    assert [item["version"] for item in kept] == ["1.1.0", "1.0.0"]
    assert kept[0]["previous_version"] == "1.0.0"

    deprecated = client.patch(
        version_url(name, "1.0.0") + "/status", json={"status": "deprecated", "statusMessage": "use 1.1.0"}
    )
    assert deprecated.status_code == 200
    meta = deprecated.json()["_meta"][OFFICIAL]
    assert (meta["status"], meta["statusMessage"]) == ("deprecated", "use 1.1.0")
    deleted = client.delete(version_url(name, "1.0.0"))
    assert deleted.json()["_meta"][OFFICIAL]["status"] == "deleted"
    assert client.get(version_url(name, "1.0.0")).status_code == 404
    assert client.get(version_url(name, "1.0.0"), params={"include_deleted": "true"}).status_code == 200
    listed = client.get(f"/v0.1/servers/{quote(name, safe='')}/versions").json()["servers"]
    assert [item["server"]["version"] for item in listed] == ["1.1.0"]
    everything = client.patch(f"/v0.1/servers/{quote(name, safe='')}/status", json={"status": "active"})
    assert everything.json()["updatedCount"] == 2
    assert client.get(version_url(name, "1.0.0")).status_code == 200
    assert client.put(version_url(name, "1.0.0"), json=server(name, "1.0.0")).status_code == 501


def test_listing_pages_searches_and_filters(client: httpx.Client) -> None:
    names = [f"com.example.l{TOKEN}/server-{index}" for index in range(5)]
    for name in names:
        assert client.post("/v0.1/publish", json=server(name, "1.0.0")).status_code == 200
    assert client.post("/v0.1/publish", json=server(names[0], "2.0.0")).status_code == 200

    seen: list[tuple[str, str]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"search": f"l{TOKEN}", "limit": 2} | ({"cursor": cursor} if cursor else {})
        page = client.get("/v0.1/servers", params=params).json()
        assert page["metadata"]["count"] == len(page["servers"]) <= 2
        seen.extend((item["server"]["name"], item["server"]["version"]) for item in page["servers"])
        cursor = page["metadata"].get("nextCursor")
        if not cursor:
            break
    assert sorted(seen) == sorted([(name, "1.0.0") for name in names] + [(names[0], "2.0.0")])

    latest = client.get("/v0.1/servers", params={"search": f"l{TOKEN}", "version": "latest"}).json()["servers"]
    assert sorted((item["server"]["name"], item["server"]["version"]) for item in latest) == sorted(
        [(names[0], "2.0.0")] + [(name, "1.0.0") for name in names[1:]]
    )
    exact = client.get("/v0.1/servers", params={"search": f"l{TOKEN}", "version": "2.0.0"}).json()["servers"]
    assert [item["server"]["name"] for item in exact] == [names[0]]
    future = client.get("/v0.1/servers", params={"search": f"l{TOKEN}", "updated_since": "2999-01-01T00:00:00Z"})
    assert future.json()["servers"] == []
    bad = client.get("/v0.1/servers", params={"cursor": "not-a-cursor"})
    assert bad.status_code == 400
    assert "cursor" in bad.json()["error"]
    assert client.get("/v0.1/servers/com.example%2Fmissing/versions").status_code == 404
    # Refusals of the input boundary speak the MCP error dialect on /v0.1 too.
    control = client.patch("/v0.1/servers/com.example%2Fx/versions/1%18/status", json={"status": "active"})
    assert (control.status_code, control.headers["content-type"]) == (400, "application/json")
    assert "control character" in control.json()["error"]
