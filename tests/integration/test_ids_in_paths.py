"""Every route that takes a description id in its path reaches ids holding ``/`` and ``//``
(registry/http/middleware/ids.py rewrites them to one segment), sent as they are or percent-encoded;
``/api/v1/things/{id}/owner`` answered 404 for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from litestar import Litestar

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
THING_ID = "https://example.com/iso/paths//agents/weather"
VERSION = "1.2.0"
#: For each route taking an id and each of its methods: the query string, the body and the statuses it answers.
#: A route missing here fails the test, so a new one is checked too.
CALLS: dict[tuple[str, str], tuple[str, dict[str, Any] | None, set[int]]] = {
    ("GET", "/things/{thing_id:str}"): ("", None, {200}),
    ("PUT", "/things/{thing_id:str}"): ("", {}, {200, 204}),  # the body: the description itself
    ("PATCH", "/things/{thing_id:str}"): ("", {"title": "Patched"}, {204}),
    ("DELETE", "/things/{thing_id:str}"): ("", None, {204}),
    ("GET", "/api/v1/things/{thing_id:str}/summary"): ("", None, {200}),
    ("GET", "/api/v1/things/{thing_id:str}/versions"): ("", None, {200}),
    ("GET", "/api/v1/things/{thing_id:str}/versions/{version:str}"): ("", None, {200}),
    ("GET", "/api/v1/things/{thing_id:str}/export"): ("?format=a2a", None, {200}),
    ("POST", "/api/v1/things/{thing_id:str}/lease"): ("", None, {200}),
    ("GET", "/api/v1/things/{thing_id:str}/lease"): ("", None, {200}),
    ("GET", "/api/v1/things/{thing_id:str}/owner"): ("", None, {200}),
    ("PUT", "/api/v1/things/{thing_id:str}/owner"): ("", {"owner": "key:someone-else"}, {200}),
    ("GET", "/a2a/{thing_id:str}/.well-known/agent-card.json"): ("", None, {200}),
}


def description() -> dict[str, Any]:
    document = json.loads((FIXTURES / "weather-agent.td.json").read_text())
    return {**document, "id": THING_ID, "version": {"instance": VERSION}, "registration": {"ttl": 3600}}


def routes_taking_an_id(app: Litestar) -> list[tuple[str, str]]:
    return sorted(
        (method, route.path)
        for route in app.routes
        if "{thing_id" in route.path
        for method in getattr(route, "methods", ())
        if method not in {"HEAD", "OPTIONS"}
    )


@pytest.mark.parametrize("encoded", [False, True], ids=["as-is", "percent-encoded"])
async def test_every_route_taking_an_id_reaches_ids_with_slashes(database_url: str, encoded: bool) -> None:
    app = create_app(Settings(database_url=database_url, db_pool_size=3))
    routes = routes_taking_an_id(app)
    assert set(routes) == set(CALLS), "a route taking an id is missing from CALLS (or CALLS names one that is gone)"
    segment = quote(THING_ID, safe="") if encoded else THING_ID
    async with local_client(app) as client:
        assert (await client.put(f"/things/{segment}", json=description())).status_code in {201, 204}
        # DELETE last: every other call needs the description.
        for method, template in sorted(routes, key=lambda route: route[0] == "DELETE"):
            query, body, statuses = CALLS[(method, template)]
            url = template.replace("{thing_id:str}", segment).replace("{version:str}", VERSION) + query
            headers = {"Content-Type": "application/merge-patch+json" if method == "PATCH" else "application/json"}
            content = json.dumps(description() if body == {} else body) if body is not None else None
            answer = await client.request(method, url, content=content, headers=headers)
            assert answer.status_code in statuses, (method, url, answer.status_code, answer.text)
