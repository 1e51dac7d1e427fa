"""Client-driven queries stay bounded on a generated catalogue (issue 14): full-text search and facets stop at
their statement timeout with a 503 problem (the pooled connection keeps its default), and JSONPath pages through the
descriptions instead of holding them all."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import asyncpg
import httpx
import msgspec
import pytest
from sqlalchemy import text

from registry.app import create_app
from registry.config import Settings
from registry.errors import ServiceUnavailable
from registry.semantic.jsonpath import JsonPathLimits, search
from registry.store.catalog import CatalogStore, Filters
from registry.store.database import Database
from registry.store.things import ThingStore
from tests.support.catalogue import generated_catalogue, opened
from tests.support.in_process import local_client
from tests.support.servers import ServerProcess

SIZE = 20_000
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
JSONPATH_TIMEOUT = 4.0


@pytest.fixture(scope="module")
def catalogue_url(postgres_admin_url: str) -> Iterator[str]:
    """A database of its own holding the generated catalogue (once for the module: a few seconds)."""
    with generated_catalogue(postgres_admin_url, SIZE) as url:
        yield url


@pytest.fixture
async def catalogue(catalogue_url: str) -> AsyncIterator[Database]:
    async with opened(catalogue_url) as database:
        yield database


async def test_a_search_past_its_statement_timeout_is_a_503_and_leaves_the_connection_as_it_was(
    catalogue: Database,
) -> None:
    hurried = CatalogStore(catalogue, search_timeout=0.001)
    # Both take well over 1 ms (counting, or ranking 1,000 candidates; a page by title can take less).
    searches = (
        lambda: hurried.facets(Filters(text="service")),
        lambda: hurried.search(Filters(text="service"), "relevance", 20, None),
    )
    for run in searches:
        for _ in range(3):
            with pytest.raises(ServiceUnavailable) as raised:
                await run()
            # On a loaded machine, rarely, a 1 ms statement timeout leaves the driver in a state it refuses to leave
            # (asyncpg's InternalClientError "cannot switch to state ..."): still a 503 with Retry-After, but one
            # that says the database is unreachable. The search is asked again then.
            if not isinstance(raised.value.__cause__, asyncpg.exceptions.InternalClientError):
                break
        assert "within 0.001 s (REGISTRY_SEARCH_TIMEOUT)" in str(raised.value), repr(raised.value.__cause__)
        assert raised.value.headers["Retry-After"]
    # SET LOCAL ended with the transaction: the one pooled connection runs without a statement timeout again.
    assert await catalogue.fetchval(text("SHOW statement_timeout")) == "0"
    # Any configured timeout is one PostgreSQL takes (it refuses more than 2³¹-1 ms).
    facets = await CatalogStore(catalogue, search_timeout=1e12).facets(Filters(text="service"))
    assert sum(count for _, count in facets["kind"]) == SIZE


async def _peak_memory(things: ThingStore, expression: str) -> tuple[list[object], int]:
    tracemalloc.start()
    try:
        # tracemalloc slows every allocation several times over: the query's time is not what is measured here.
        limits = JsonPathLimits(timeout=120)
        values = msgspec.json.decode(await search(expression, things.documents(), things.count, limits))
        return values, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_jsonpath_pages_through_the_catalogue_instead_of_holding_it(catalogue: Database) -> None:
    things = ThingStore(catalogue)
    streamed, streamed_peak = await _peak_memory(things, "$[?@.title == 'Generated 7'].id")
    descendants, descendants_peak = await _peak_memory(things, "$..[?@.title == 'Generated 7'].id")
    # The same query referring to the root again needs the whole array in memory: the reference figure.
    held, held_peak = await _peak_memory(things, "$[?@.title == 'Generated 7' && $[0]].id")
    assert streamed == descendants == held == ["urn:gen:7"]
    assert streamed_peak < held_peak / 4, (streamed_peak, held_peak)
    assert descendants_peak < held_peak / 4, (descendants_peak, held_peak)


async def test_search_and_facets_answer_503_problems_when_they_time_out(catalogue_url: str) -> None:
    settings = Settings(
        database_url=catalogue_url, db_pool_size=3, search_timeout=0.001, jsonpath_timeout=JSONPATH_TIMEOUT
    )
    async with local_client(create_app(settings), timeout=60) as client:
        for path in ("/api/v1/search?q=service&facets=true", "/api/v1/facets?q=service"):
            response = await client.get(path)
            assert response.status_code == 503, response.text
            assert response.headers["content-type"].startswith("application/problem+json")
            assert response.headers["retry-after"]
            assert "REGISTRY_SEARCH_TIMEOUT" in response.json()["detail"]
        assert (await client.get("/things/urn:gen:1")).status_code == 200
        # JSONPath positions count from the end of the whole catalogue, read page by page in id order.
        last = await client.get("/search/jsonpath", params={"query": "$[-1].id"})
        assert last.json() == ["urn:gen:9999"]  # ids sort as text
        # A full-text query of 1,000 terms is refused before it reaches the database (it took 30-45 s).
        response = await client.get("/api/v1/facets", params={"q": " ".join(["word"] * 1000)})
        assert response.status_code == 400
        assert response.json()["invalidParams"][0]["name"] == "q"
        # An explosive JSONPath query stops at a limit within its timeout, and the next query answers at once.
        started = time.monotonic()
        response = await client.get("/search/jsonpath", params={"query": "$..*"})
        assert response.status_code == 400
        assert "REGISTRY_JSONPATH" in response.json()["detail"]
        assert time.monotonic() - started < JSONPATH_TIMEOUT + 1
        started = time.monotonic()
        # A query that reads one page, so that only waiting behind the stopped one could make it slow.
        response = await client.get("/search/jsonpath", params={"query": "$[0].id"})
        assert response.json() == ["urn:gen:1"]  # the generated ids count from 1
        assert time.monotonic() - started < JSONPATH_TIMEOUT


def test_one_client_cannot_hold_more_sparql_queries_than_its_share(
    start_server: Callable[..., ServerProcess], own_database_url: str
) -> None:
    server = start_server(
        {"REGISTRY_SPARQL_CLIENT_CONCURRENCY": "1", "REGISTRY_SPARQL_TIMEOUT": "2", "REGISTRY_LOG_LEVEL": "info"},
        database=own_database_url,
    )
    runaway = "SELECT (COUNT(*) AS ?c) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
    names = "SELECT ?n WHERE { ?a <https://www.w3.org/2019/wot/td#name> ?n }"
    with httpx.Client(base_url=server.base_url, timeout=30) as client, ThreadPoolExecutor(1) as pool:
        weather = json.loads((FIXTURES / "weather-agent.td.json").read_text())
        assert client.put(f"/things/{weather['id']}", json=weather).status_code == 201
        assert _sparql_when_ready(client, names).status_code == 200
        first, second = _runaway_beside(client, pool, runaway, names)
        assert second.status_code == 429, second.text
        assert second.headers["retry-after"]
        assert "REGISTRY_SPARQL_CLIENT_CONCURRENCY" in second.json()["detail"]
        assert first.result().status_code == 503  # the runaway query stopped at REGISTRY_SPARQL_TIMEOUT
        # Its slot is free again, and the worker, restarted, answers with its index taken up, not rebuilt.
        assert _sparql_when_ready(client, names).status_code == 200
    log = server.output()
    assert log.count("SPARQL index built") == 1, log
    assert "SPARQL index opened" in log


def _runaway_beside(
    client: httpx.Client, pool: ThreadPoolExecutor, runaway: str, query: str
) -> tuple[Future[httpx.Response], httpx.Response]:
    """The runaway query in flight and the answer to ``query`` asked beside it.

    The two requests race for the client's one slot: when ``query`` reaches the server first, the runaway query is the
    one refused, and both are sent again.
    """
    for _ in range(5):
        first = pool.submit(client.get, "/search/sparql", params={"query": runaway})
        time.sleep(0.2)
        second = client.get("/search/sparql", params={"query": query})
        while second.status_code == 200 and not first.done():  # until the runaway query has reached the server
            time.sleep(0.1)
            second = client.get("/search/sparql", params={"query": query})
        if not (first.done() and first.result().status_code == 429):
            return first, second
    return first, second


def _sparql_when_ready(client: httpx.Client, query: str) -> httpx.Response:
    """The answer once the SPARQL worker is up (503 with Retry-After while it starts or catches up)."""
    deadline = time.monotonic() + 20
    while True:
        response = client.get("/search/sparql", params={"query": query})
        if response.status_code != 503 or time.monotonic() > deadline:
            return response
        time.sleep(0.2)
