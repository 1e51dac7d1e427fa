"""The WoT Discovery search API's use cases: SPARQL over the index in the query worker (or an external store),
JSONPath over the stored documents, and what the index holds."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Any

from registry.auth.tenancy import EVERYTHING, TenantScope
from registry.errors import DatabaseUnavailable, RegistryError, ServiceUnavailable, TooManyRequests
from registry.redaction import redact_urls
from registry.semantic.graphs import graph_name
from registry.semantic.jsonpath import JsonPathLimits, compile_query, search
from registry.semantic.loader import ContextLibrary
from registry.sparql.query import Answer, SparqlBackend, query_dataset
from registry.store.database import Database
from registry.store.rdf import rdf_statistics
from registry.store.things import ThingStore

#: Seconds the database may take to answer the probe of a SPARQL query that got 503.
DATABASE_PROBE_TIMEOUT = 1.0


class JsonPathThreads:
    """The threads JSONPath searches are evaluated on: ``threads`` of their own, one search each, apart from the
    executor that decodes, validates and projects the bodies of writes, so that searches, however many, never make
    a write wait for a thread. A search waits for a thread at most as long as it may run (503 after); one client
    may have ``per_client`` searches running or waiting (429 beyond; 0 = no per-client cap)."""

    def __init__(self, threads: int, per_client: int) -> None:
        self.threads = threads
        self.per_client = per_client
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="registry-jsonpath")
        self._free = asyncio.Semaphore(threads)
        self._in_flight: collections.Counter[str] = collections.Counter()

    async def start(self) -> None:
        """Start every thread now: starting one while a request holds the GIL stalls the event loop."""
        started = threading.Barrier(self.threads)
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self.executor, started.wait) for _ in range(self.threads)))

    def stop(self) -> None:
        """Stop taking work; a search still running ends at its deadline."""
        self.executor.shutdown(wait=False, cancel_futures=True)

    @contextlib.asynccontextmanager
    async def thread_for(self, client: str, wait: float) -> AsyncIterator[None]:
        """Hold one of the threads for a search of ``client``, waiting at most ``wait`` seconds for one."""
        if self.per_client and self._in_flight[client] >= self.per_client:
            raise TooManyRequests(
                f"This client already has {self.per_client} JSONPath searches in flight "
                "(REGISTRY_JSONPATH_CLIENT_CONCURRENCY); wait for their answers",
                headers={"Retry-After": "1"},
            )
        self._in_flight[client] += 1
        try:
            try:
                async with asyncio.timeout(wait):
                    await self._free.acquire()
            except TimeoutError:
                raise ServiceUnavailable(
                    f"All {self.threads} JSONPath threads stayed busy for {wait:g} s "
                    "(REGISTRY_JSONPATH_CONCURRENCY); retry shortly",
                    headers={"Retry-After": str(max(1, round(wait)))},
                ) from None
            try:
                yield
            finally:
                self._free.release()
        finally:
            self._in_flight[client] -= 1
            if not self._in_flight[client]:
                del self._in_flight[client]


class SearchService:
    def __init__(
        self,
        database: Database,
        things: ThingStore,
        worker: SparqlBackend,
        library: ContextLibrary,
        *,
        per_client: int = 8,
        jsonpath_limits: JsonPathLimits | None = None,
        jsonpath_threads: JsonPathThreads | None = None,
    ) -> None:
        """``per_client``: SPARQL queries one client may have in flight (one client cannot fill the worker's
        queue; the worker's threads are shared round-robin between clients besides); ``jsonpath_threads``: where
        JSONPath searches run (by default two threads, two searches per client)."""
        self.database = database
        self.things = things
        self.worker = worker
        self.library = library
        self.per_client = per_client
        self.jsonpath_limits = jsonpath_limits or JsonPathLimits()
        self.jsonpath_threads = jsonpath_threads or JsonPathThreads(2, 2)
        self._in_flight: collections.Counter[str] = collections.Counter()

    async def sparql(
        self,
        query: str,
        accept: str,
        default_graphs: list[str],
        named_graphs: list[str],
        client: str = "",
        readers: TenantScope = EVERYTHING,
    ) -> Answer:
        """The query over the dataset ``readers`` may see. For a reader of one tenant: the dataset the request names
        (the protocol's parameters override the query's FROM), else the one its FROM clauses name, else the named
        graphs of the shared descriptions and of its tenant's (their union as the default graph); graphs outside
        what the reader sees are dropped."""
        with self._in_flight_for(client):
            try:
                if not readers.everything:
                    default_graphs, named_graphs = await self._visible_dataset(
                        query, default_graphs, named_graphs, readers
                    )
                return await self.worker.query(query, accept, default_graphs, named_graphs, client)
            except RegistryError as error:
                if error.status == HTTPStatus.SERVICE_UNAVAILABLE and not await self._database_answers():
                    raise DatabaseUnavailable(
                        "The database is unavailable: a SPARQL query first brings the index up to every write "
                        "acknowledged before it, which it reads from the database; retry shortly"
                    ) from error
                raise

    @contextlib.contextmanager
    def _in_flight_for(self, client: str) -> Iterator[None]:
        """Count a SPARQL query of ``client`` in flight while it runs; 429 when it has ``per_client`` already."""
        if self.per_client and self._in_flight[client] >= self.per_client:
            raise TooManyRequests(
                f"This client already has {self.per_client} SPARQL queries in flight "
                "(REGISTRY_SPARQL_CLIENT_CONCURRENCY); wait for their answers",
                headers={"Retry-After": "1"},
            )
        self._in_flight[client] += 1
        try:
            yield
        finally:
            self._in_flight[client] -= 1
            if not self._in_flight[client]:
                del self._in_flight[client]

    async def _visible_dataset(
        self, query: str, default_graphs: list[str], named_graphs: list[str], readers: TenantScope
    ) -> tuple[list[str], list[str]]:
        """The dataset (default graphs, named graphs) a reader of one tenant queries: the one the request names,
        else the one the query's FROM clauses name, else every graph it sees; graphs it does not see dropped."""
        if not default_graphs and not named_graphs and (dataset := query_dataset(query)) is not None:
            # The query's own dataset, within what the reader sees (a side it leaves out is empty).
            default_graphs, named_graphs = dataset[0] or [NO_GRAPH], dataset[1] or [NO_GRAPH]
        visible = {graph_name(thing_id).value async for thing_id in self.things.ids(readers)}
        return _within(default_graphs, visible), _within(named_graphs, visible)

    async def _database_answers(self) -> bool:
        """Whether the database answers now (within ``DATABASE_PROBE_TIMEOUT``): asked only when SPARQL could not
        answer, so that a query tells an outage of the database from one of the index."""
        try:
            async with asyncio.timeout(DATABASE_PROBE_TIMEOUT):
                await self.database.ping()
        except (TimeoutError, RegistryError):
            return False
        return True

    async def jsonpath(self, expression: str, readers: TenantScope = EVERYTHING, client: str = "") -> bytes:
        """The JSON array of the values the expression selects from the array of the descriptions ``readers`` see,
        evaluated on one of the JSONPath threads (``client``'s searches are capped)."""
        limits = self.jsonpath_limits
        compile_query(expression, limits.max_depth)  # a syntax error is a 400 before anything is read
        async with self.jsonpath_threads.thread_for(client, limits.timeout):
            return await search(
                expression,
                self.things.documents(readers),
                lambda: self.things.count(readers),
                limits,
                self.jsonpath_threads.executor,
            )

    async def stats(self, readers: TenantScope = EVERYTHING) -> dict[str, Any]:
        """Whether the index is ready, and the descriptions ``readers`` may see whose RDF is incomplete (unknown
        contexts) or missing. The index's own figures (descriptions, position, queue) count every tenant's
        descriptions and the store's address is the operator's: only for readers who see everything."""
        index: dict[str, Any] = {"indexReady": self.worker.ready, "indexIdle": self.worker.idle}
        if self.worker.ready and readers.everything:
            with contextlib.suppress(ServiceUnavailable):
                index = {**index, **await self.worker.stats()}
            if isinstance(index.get("externalStore"), str):
                index["externalStore"] = redact_urls(index["externalStore"])
        return {**index, **await rdf_statistics(self.database, readers), "bundledContexts": self.library.urls()}


#: A graph no description has: the dataset of a reader who may see none (an empty list would mean "all").
NO_GRAPH = "urn:lmos-registry:no-graph"


def _within(requested: list[str], visible: set[str]) -> list[str]:
    chosen = [graph for graph in requested if graph in visible] if requested else sorted(visible)
    return chosen or [NO_GRAPH]


__all__ = ["JsonPathThreads", "SearchService"]
