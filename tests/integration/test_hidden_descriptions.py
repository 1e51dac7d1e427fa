"""A description a principal cannot read (another tenant's) looks exactly like a missing one on every write path:
the same status, problem (type, title, detail but for the id) and headers (no ETag), whatever the request's
preconditions or content. Where a missing id would be created, an id another tenant holds is refused exactly as
an id outside the principal's namespaces. In process, over HTTP (docs/security.md, "Writes to what a principal
cannot see")."""

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
from tests.support.in_process import local_client
from tests.support.keys import add_key
from tests.support.servers import fresh_database

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: Held by tenant a, inside tenant b's namespace.
HIDDEN = "urn:space:held-by-a"
#: Free, inside tenant b's namespace: what b may create.
MISSING = "urn:space:missing"
#: Free, outside tenant b's namespace: what b may not create.
OUTSIDE = "urn:elsewhere:missing"
HIDDEN_SERVER, MISSING_SERVER, OUTSIDE_SERVER = "io.github.space/held", "io.github.space/missing", "io.github.other/x"
TOOL = {"name": "lookup", "description": "Looks things up", "inputSchema": {"type": "object"}}
CARD = json.loads((Path(__file__).resolve().parents[1] / "data/a2a/adk_currency_agent-agent_card.json").read_text())


def agent(thing_id: str, version: str = "1.0.0", title: str = "Weather Agent") -> dict[str, Any]:
    document = copy.deepcopy(json.loads((FIXTURES / "weather-agent.td.json").read_text()))
    return {**document, "id": thing_id, "title": title, "version": {"instance": version}}


def server(name: str, version: str) -> dict[str, str]:
    return {"name": name, "description": "A server", "version": version}


@pytest.fixture(scope="module")
def module_database_url(postgres_admin_url: str) -> Iterator[str]:
    with fresh_database(postgres_admin_url) as url:
        yield url


class Setup:
    def __init__(self, client: AsyncTestClient, keys: dict[str, str], etag: str) -> None:  # type: ignore[type-arg]
        self.client = client
        self.keys = keys
        #: The entity tag of the hidden description, as its tenant read it.
        self.etag = etag


@pytest.fixture(scope="module")
async def setup(module_database_url: str) -> AsyncIterator[Setup]:
    keys = {
        "a": await add_key(module_database_url, "writer-a", ["write"], tenant="a"),
        "b": await add_key(
            module_database_url,
            "writer-b",
            ["write"],
            tenant="b",
            namespaces=("urn:space:*", "urn:mcp:server:io.github.space/*"),
        ),
    }
    settings = Settings(database_url=module_database_url, db_pool_size=3, auth="writes", version_policy="enforce")
    async with local_client(create_app(settings), timeout=60) as client:
        as_a = {"Authorization": f"Bearer {keys['a']}"}
        held = {**agent(HIDDEN), "registration": {"ttl": 3600}}
        assert (await client.put(f"/things/{HIDDEN}", json=held, headers=as_a)).status_code == 201
        published = await client.post("/v0.1/publish", json=server(HIDDEN_SERVER, "1.0.0"), headers=as_a)
        assert published.status_code == 200, published.text
        etag = (await client.get(f"/things/{HIDDEN}", headers=as_a)).headers["etag"]
        yield Setup(client, keys, etag)


def _server_path(name: str) -> str:
    return name.replace("/", "%2F")


#: Each write path: (name, the request as a function of (id, server name, etag), which free id it is compared with).
#: ``MISSING`` where a missing id gets an answer (404, 412); ``OUTSIDE`` where a missing id would be created.
Request = tuple[str, str, dict[str, Any]]
PATHS: list[tuple[str, Any, str]] = [
    ("put", lambda i, s, e: ("PUT", f"/things/{i}", {"json": agent(i)}), OUTSIDE),
    (
        "put-create-only",
        lambda i, s, e: ("PUT", f"/things/{i}", {"json": agent(i), "headers": {"If-None-Match": "*"}}),
        OUTSIDE,
    ),
    ("put-if-match", lambda i, s, e: ("PUT", f"/things/{i}", {"json": agent(i), "headers": {"If-Match": e}}), MISSING),
    ("put-lower-version", lambda i, s, e: ("PUT", f"/things/{i}", {"json": agent(i, "0.1.0")}), OUTSIDE),
    ("put-invalid", lambda i, s, e: ("PUT", f"/things/{i}", {"json": {**agent(i), "security": 5}}), OUTSIDE),
    ("patch", lambda i, s, e: ("PATCH", f"/things/{i}", {"content": b"{}", "headers": _merge_patch()}), MISSING),
    (
        "patch-if-match",
        lambda i, s, e: ("PATCH", f"/things/{i}", {"content": b"{}", "headers": {**_merge_patch(), "If-Match": e}}),
        MISSING,
    ),
    (
        "patch-invalid",
        lambda i, s, e: ("PATCH", f"/things/{i}", {"content": b'{"security": 5}', "headers": _merge_patch()}),
        MISSING,
    ),
    ("delete", lambda i, s, e: ("DELETE", f"/things/{i}", {}), MISSING),
    ("delete-if-match", lambda i, s, e: ("DELETE", f"/things/{i}", {"headers": {"If-Match": e}}), MISSING),
    ("lease", lambda i, s, e: ("POST", f"/api/v1/things/{i}/lease", {}), MISSING),
    ("owner", lambda i, s, e: ("GET", f"/api/v1/things/{i}/owner", {}), MISSING),
    ("transfer", lambda i, s, e: ("PUT", f"/api/v1/things/{i}/owner", {"json": {"owner": "writer-b"}}), MISSING),
    ("batch", lambda i, s, e: ("POST", "/api/v1/things/batch", {"json": [agent(i)]}), OUTSIDE),
    (
        "tool-import",
        lambda i, s, e: ("POST", "/api/v1/tools/import", {"json": TOOL, "params": {"format": "mcp", "id": i}}),
        OUTSIDE,
    ),
    (
        "agent-import",
        lambda i, s, e: ("POST", "/api/v1/agents/import", {"json": CARD, "params": {"format": "a2a", "id": i}}),
        OUTSIDE,
    ),
    ("mcp-publish-same-version", lambda i, s, e: ("POST", "/v0.1/publish", {"json": server(s, "1.0.0")}), OUTSIDE),
    ("mcp-publish-lower-version", lambda i, s, e: ("POST", "/v0.1/publish", {"json": server(s, "0.1.0")}), OUTSIDE),
    (
        "mcp-server-status",
        lambda i, s, e: ("PATCH", f"/v0.1/servers/{_server_path(s)}/status", {"json": {"status": "deprecated"}}),
        MISSING,
    ),
    (
        "mcp-version-status",
        lambda i, s, e: (
            "PATCH",
            f"/v0.1/servers/{_server_path(s)}/versions/1.0.0/status",
            {"json": {"status": "deprecated"}},
        ),
        MISSING,
    ),
    ("mcp-delete-version", lambda i, s, e: ("DELETE", f"/v0.1/servers/{_server_path(s)}/versions/1.0.0", {}), MISSING),
]


def _merge_patch() -> dict[str, str]:
    return {"Content-Type": "application/merge-patch+json"}


def _answer(response: Any, thing_id: str, server_name: str) -> dict[str, Any]:
    """What a client can tell from an answer, with the id and server name it asked about left out."""

    def neutral(text: str) -> str:
        return text.replace(thing_id, "<id>").replace(server_name, "<server>")

    return {
        "status": response.status_code,
        "content-type": response.headers.get("content-type"),
        "etag": response.headers.get("etag"),
        "body": json.loads(neutral(response.text)) if response.content else None,
    }


@pytest.mark.parametrize(("name", "request_of", "free_id"), PATHS, ids=[name for name, _, _ in PATHS])
async def test_another_tenants_description_answers_as_a_missing_one(
    setup: Setup, name: str, request_of: Any, free_id: str
) -> None:
    free_server = MISSING_SERVER if free_id == MISSING else OUTSIDE_SERVER
    as_b = {"Authorization": f"Bearer {setup.keys['b']}"}
    answers = []
    for thing_id, server_name in ((HIDDEN, HIDDEN_SERVER), (free_id, free_server)):
        method, path, options = request_of(thing_id, server_name, setup.etag)
        options = {**options, "headers": {**as_b, **options.get("headers", {})}}
        response = await setup.client.request(method, path, **options)
        answers.append(_answer(response, thing_id, server_name))
    hidden, free = answers
    assert hidden == free, name
    assert hidden["status"] in {200, 400, 403, 404, 412}, hidden
    assert hidden["etag"] is None


async def test_the_hidden_description_is_untouched(setup: Setup) -> None:
    as_a = {"Authorization": f"Bearer {setup.keys['a']}"}
    read = await setup.client.get(f"/things/{HIDDEN}", headers=as_a)
    assert read.status_code == 200
    assert read.headers["etag"] == setup.etag
    assert read.json()["title"] == "Weather Agent"
    owner = await setup.client.get(f"/api/v1/things/{HIDDEN}/owner", headers=as_a)
    assert owner.json()["owner"] == "key:writer-a"
    versions = await setup.client.get(f"/v0.1/servers/{_server_path(HIDDEN_SERVER)}/versions", headers=as_a)
    assert [
        item["_meta"]["io.modelcontextprotocol.registry/official"]["status"] for item in versions.json()["servers"]
    ] == ["active"]


async def test_a_missing_id_inside_the_namespace_is_still_created(setup: Setup) -> None:
    as_b = {"Authorization": f"Bearer {setup.keys['b']}"}
    created = await setup.client.put(f"/things/{MISSING}-created", json=agent(f"{MISSING}-created"), headers=as_b)
    assert created.status_code == 201, created.text


async def test_another_tenants_kept_versions_play_no_part_in_a_write(setup: Setup) -> None:
    """A deleted description's kept versions stay its tenant's: the next holder of the id is not told of them
    (REGISTRY_VERSION_POLICY=enforce would refuse other content under a kept version with 409)."""
    as_a, as_b = ({"Authorization": f"Bearer {setup.keys[who]}"} for who in ("a", "b"))
    reused = "urn:space:reused"
    assert (await setup.client.put(f"/things/{reused}", json=agent(reused, "2.0.0"), headers=as_a)).status_code == 201
    assert (await setup.client.delete(f"/things/{reused}", headers=as_a)).status_code == 204
    taken = await setup.client.put(f"/things/{reused}", json=agent(reused, "2.0.0", "Another agent"), headers=as_b)
    assert taken.status_code == 201, taken.text
    notices = json.loads(taken.headers.get("registry-notices", "[]"))
    assert not [notice for notice in notices if notice["code"].startswith("version-")], notices
    mine = await setup.client.get(f"/api/v1/things/{reused}/versions/2.0.0", headers=as_a)
    assert mine.json()["document"]["title"] == "Weather Agent"
