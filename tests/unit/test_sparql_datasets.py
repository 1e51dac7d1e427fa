"""SearchService.sparql in process, its worker and stores stood in for: a client's cap on queries in flight, the
dataset a reader of one tenant queries, and how a 503 is told from a database outage."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any, cast

import pytest

from registry.directory.search import NO_GRAPH, SearchService
from registry.errors import DatabaseUnavailable, ServiceUnavailable, TooManyRequests
from registry.tenancy import EVERYTHING, TenantScope

TENANT = TenantScope(everything=False, tenant="t1")


class Worker:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.asked: list[tuple[list[str], list[str]]] = []
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.hold = False

    async def query(self, query: str, accept: str, default: list[str], named: list[str], client: str) -> Any:
        self.asked.append((default, named))
        self.started.set()
        if self.hold:
            await self.release.wait()
        if self.error is not None:
            raise self.error
        return "answer"


def _service(worker: Worker, *, database_answers: bool = True, per_client: int = 8) -> SearchService:
    async def ids(readers: TenantScope) -> AsyncIterator[str]:
        for thing_id in ("urn:a", "urn:b"):
            yield thing_id

    async def ping() -> None:
        if not database_answers:
            raise DatabaseUnavailable("down")

    return SearchService(
        cast(Any, SimpleNamespace(ping=ping)),
        cast(Any, SimpleNamespace(ids=ids)),
        cast(Any, worker),
        cast(Any, None),
        per_client=per_client,
    )


def _ask(service: SearchService, query: str, default: list[str], named: list[str], readers: TenantScope) -> Any:
    return asyncio.run(service.sparql(query, "application/json", default, named, "c", readers))


def test_a_reader_of_everything_queries_the_dataset_it_names() -> None:
    worker = Worker()
    assert _ask(_service(worker), "SELECT * WHERE {?s ?p ?o}", ["urn:x"], [], EVERYTHING) == "answer"
    assert worker.asked == [(["urn:x"], [])]


@pytest.mark.parametrize(
    ("query", "default", "named", "dataset"),
    [
        ("SELECT * WHERE {?s ?p ?o}", [], [], (["urn:a", "urn:b"], ["urn:a", "urn:b"])),
        ("SELECT * FROM <urn:b> FROM <urn:z> WHERE {?s ?p ?o}", [], [], (["urn:b"], [NO_GRAPH])),
        ("SELECT * FROM NAMED <urn:a> WHERE {?s ?p ?o}", [], [], ([NO_GRAPH], ["urn:a"])),
        ("SELECT * FROM <urn:b> WHERE {?s ?p ?o}", ["urn:a", "urn:z"], [], (["urn:a"], ["urn:a", "urn:b"])),
    ],
)
def test_a_reader_of_one_tenant_queries_the_graphs_it_sees(
    query: str, default: list[str], named: list[str], dataset: tuple[list[str], list[str]]
) -> None:
    worker = Worker()
    _ask(_service(worker), query, default, named, TENANT)
    assert worker.asked == [dataset]


def test_a_503_while_the_database_is_down_is_the_database_s() -> None:
    with pytest.raises(DatabaseUnavailable, match="a SPARQL query first brings the index up"):
        _ask(_service(Worker(ServiceUnavailable("busy")), database_answers=False), "ASK {}", [], [], EVERYTHING)


def test_a_503_while_the_database_answers_is_the_index_s() -> None:
    with pytest.raises(ServiceUnavailable, match="busy") as refused:
        _ask(_service(Worker(ServiceUnavailable("busy"))), "ASK {}", [], [], EVERYTHING)
    assert not isinstance(refused.value, DatabaseUnavailable)


def test_a_client_has_at_most_its_cap_of_queries_in_flight() -> None:
    async def scenario() -> None:
        worker = Worker()
        worker.hold = True
        service = _service(worker, per_client=1)
        first = asyncio.create_task(service.sparql("ASK {}", "a", [], [], "c"))
        await worker.started.wait()
        with pytest.raises(TooManyRequests, match="already has 1 SPARQL queries in flight"):
            await service.sparql("ASK {}", "a", [], [], "c")
        worker.release.set()
        assert cast(Any, await first) == "answer"
        assert dict(service._in_flight) == {}

    asyncio.run(scenario())
