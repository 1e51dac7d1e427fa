"""A query that arrives while the SPARQL index is far behind (a bulk import) waits a bounded time for it, then is told
to retry; the worker is not killed for it, and the index catches up behind the writes."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.support.servers import ServerProcess
from tests.support.things import thing

COUNT = 3000
#: Cheap, so that it never outlives even the short timeout of the test: whether the last description written is there.
QUERY = f'ASK {{ ?thing td:title "Backlog {COUNT - 1}"@en }}'


def restarts(client: httpx.Client) -> float:
    found = re.search(r"^registry_sparql_worker_restarts_total (\S+)$", client.get("/metrics").text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def ask(client: httpx.Client) -> httpx.Response:
    return client.post("/search/sparql", data={"query": QUERY}, headers={"Accept": "application/json"})


def test_a_query_behind_a_bulk_import_is_answered_or_told_to_retry_never_killed(
    start_server: Callable[..., ServerProcess], own_database_url: str
) -> None:
    # A 0.2 s query timeout: a query waits at most 0.1 s for the index to catch up.
    server = start_server(
        {"REGISTRY_SPARQL_TIMEOUT": "0.2", "REGISTRY_SPARQL_START": "eager"}, database=own_database_url
    )
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        assert ask(client).json()["boolean"] is False  # the worker is up
        before = restarts(client)
        for start in range(0, COUNT, 500):
            batch = [thing(f"Backlog {index}") for index in range(start, start + 500)]
            assert client.post("/api/v1/things/batch", json=batch).json()["written"] == 500
        answers: list[httpx.Response] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            answers.append(ask(client))
            if answers[-1].status_code != 503:
                break
        # Once answered, the answer holds every write acknowledged before the query.
        assert answers[-1].status_code == 200, answers[-1].text
        assert answers[-1].json()["boolean"] is True
        for refused in answers[:-1]:
            assert refused.headers["content-type"].startswith("application/problem+json")
            assert "Retry-After" in refused.headers
            assert "still applying recent writes" in refused.json()["detail"]
        assert restarts(client) == before


def test_concurrent_queries_each_see_every_write_acknowledged_before_them(
    start_server: Callable[..., ServerProcess], own_database_url: str
) -> None:
    # Every client here has one address: no per-client limit.
    server = start_server({"REGISTRY_SPARQL_CLIENT_CONCURRENCY": "0"}, database=own_database_url)
    with httpx.Client(base_url=server.base_url, timeout=30) as client, ThreadPoolExecutor(32) as pool:
        for round_number in range(5):
            document = thing(f"Concurrent {round_number}")
            assert client.put(f"/things/{document['id']}", json=document).status_code == 201
            query = f'ASK {{ ?thing td:title "Concurrent {round_number}"@en }}'
            answers = list(
                pool.map(lambda _: client.post("/search/sparql", data={"query": query}), range(32))  # noqa: B023
            )
            assert [answer.status_code for answer in answers] == [200] * 32, answers[0].text
            assert all(answer.json()["boolean"] for answer in answers)
