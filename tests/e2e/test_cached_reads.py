"""GET /things/{id} answered from the response cache before routing (registry/http/middleware/cached_reads.py): the same
answer as the handler's, counted and logged as the handler's, and never a way around authentication, tenancy or
rate limits. Each description is read once first, which fills the cache; the reads after it are the cached ones.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from tests.support.keys import create_key
from tests.support.servers import ServerProcess
from tests.support.things import thing

ROUTE = "/things/{thing_id}"


def _retrieval_aside(response: httpx.Response) -> dict[str, Any]:
    document: dict[str, Any] = response.json()
    del document["registration"]["retrieved"]
    return document


def _metric(server: ServerProcess, name: str, *labels: str) -> float:
    """The sum of the samples of ``name`` with all of ``labels`` (``key="value"``), from /metrics."""
    text = httpx.get(server.base_url + "/metrics").text
    total = 0.0
    for found, value in re.findall(rf"^{name}(?:\{{(.*)\}})? (\S+)$", text, re.MULTILINE):
        if all(label in found for label in labels):
            total += float(value)
    return total


def _gets_served(server: ServerProcess) -> float:
    """registry_http_requests_total of GET /things/{id} answered 200."""
    return _metric(server, "registry_http_requests_total", 'method="GET"', f'path="{ROUTE}"', 'status_code="200"')


def test_a_cached_read_answers_as_the_handler_does(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server({"REGISTRY_LOG_LEVEL": "info", "REGISTRY_LOG_FORMAT": "json"})
    thing_id = f"urn:cached:{uuid.uuid4()}/with/slashes"
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        assert client.put(f"/things/{thing_id}", json=thing("Cached", id=thing_id)).status_code == 201
        first = client.get(f"/things/{thing_id}")  # read from PostgreSQL, kept
        counted, hits = _gets_served(server), _metric(server, "registry_response_cache_reads_total", 'outcome="hit"')
        cached = [client.get(f"/things/{thing_id}", headers={"X-Request-ID": f"cached-{n}"}) for n in range(3)]
        assert _gets_served(server) == counted + 3
        assert _metric(server, "registry_response_cache_reads_total", 'outcome="hit"') == hits + 3
        assert _metric(server, "registry_response_cache_entries") >= 1
        assert _metric(server, "registry_response_cache_bytes") > len(first.content)
        head = client.head(f"/things/{thing_id}")
        conditional = client.get(f"/things/{thing_id}", headers={"If-None-Match": first.headers["etag"]})
    for response in (*cached, conditional):
        assert response.status_code == 200
        assert _retrieval_aside(response) == _retrieval_aside(first)
        assert response.json()["registration"]["retrieved"] >= first.json()["registration"]["retrieved"]
        for header in ("etag", "content-type"):
            assert response.headers[header] == first.headers[header]
        assert int(response.headers["content-length"]) == len(response.content)
    assert cached[0].headers["x-request-id"] == "cached-0"
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["etag"] == first.headers["etag"]
    deadline = time.monotonic() + 15  # ends at the third line: a limit only for a failing run (or a loaded machine)
    lines: list[dict[str, Any]] = []
    while time.monotonic() < deadline and len(lines) < 3:
        lines = [
            line
            for line in map(json.loads, server.output().splitlines())
            if str(line.get("request_id", "")).startswith("cached-")
        ]
        time.sleep(0.05)
    assert [(line["route"], line["status"], line["method"]) for line in lines] == [(ROUTE, 200, "GET")] * 3


def test_cached_reads_need_the_credentials_reads_need(
    start_server: Callable[..., ServerProcess], own_database_url: str
) -> None:
    reader = create_key(own_database_url, "reader", "--scopes", "read")
    writer_b = create_key(own_database_url, "writer-b", "--scopes", "read,write", "--tenant", "b")
    server = start_server({"REGISTRY_AUTH": "all"}, database=own_database_url)
    shared, of_b = f"urn:shared:{uuid.uuid4()}", f"urn:tenant-b:{uuid.uuid4()}"

    def client(secret: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        return httpx.Client(base_url=server.base_url, headers=headers, timeout=30)

    with client(writer_b) as tenant_b:
        assert tenant_b.put(f"/things/{of_b}", json=thing("Of b", id=of_b)).status_code == 201
        for _ in range(2):  # the second read is a cached one
            assert tenant_b.get(f"/things/{of_b}").status_code == 200
    with client(reader) as other:
        for _ in range(2):
            assert other.get(f"/things/{of_b}").status_code == 404  # another tenant's: as if absent
    admin = create_key(own_database_url, "admin", "--scopes", "admin")
    with client(admin) as operator:
        assert operator.put(f"/things/{shared}", json=thing("Shared", id=shared)).status_code == 201
        assert operator.get(f"/things/{shared}").status_code == 200
    for secret, status in ((None, 401), ("not-a-key", 401), (reader, 200), (writer_b, 200)):
        with client(secret) as caller:
            for _ in range(2):
                answer = caller.get(f"/things/{shared}")
                assert answer.status_code == status, (secret, answer.text)
                if status != 200:
                    assert answer.headers["content-type"].startswith("application/problem+json")


def test_a_cached_read_counts_against_the_read_limit(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server({"REGISTRY_RATE_LIMIT_READS": "4/minute"})
    thing_id = f"urn:limited:{uuid.uuid4()}"
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        assert client.put(f"/things/{thing_id}", json=thing("Limited", id=thing_id)).status_code == 201
        statuses = [client.get(f"/things/{thing_id}").status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 200, 429]
