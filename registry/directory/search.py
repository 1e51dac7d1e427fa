"""The WoT Discovery search API's use cases: SPARQL over the index in the query worker (or an external store),
JSONPath over the stored documents, and what the index holds."""

from __future__ import annotations

import collections
import contextlib
from typing import Any

from registry.auth.tenancy import EVERYTHING, TenantScope
from registry.errors import ServiceUnavailable, TooManyRequests
from registry.redaction import redact_urls
from registry.semantic.graphs import graph_name
from registry.semantic.jsonpath import JsonPathLimits, compile_query, search
from registry.semantic.loader import ContextLibrary
from registry.semantic.sparql import Answer, SparqlBackend
from registry.store.database import Database
from registry.store.rdf import rdf_statistics
from registry.store.things import ThingStore


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
    ) -> None:
        """``per_client``: SPARQL queries one client may have in flight (one client cannot fill the worker's
        queue and starve the others)."""
        self.database = database
        self.things = things
        self.worker = worker
        self.library = library
        self.per_client = per_client
        self.jsonpath_limits = jsonpath_limits or JsonPathLimits()
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
        """The query over the dataset ``readers`` may see: for a reader of one tenant, the named graphs of the shared
        descriptions and of its tenant's (their union as the default graph), whatever dataset the query or the
        request names (the protocol's dataset overrides the query's FROM; graphs outside are dropped)."""
        if self.per_client and self._in_flight[client] >= self.per_client:
            raise TooManyRequests(
                f"This client already has {self.per_client} SPARQL queries in flight "
                "(REGISTRY_SPARQL_CLIENT_CONCURRENCY); wait for their answers",
                headers={"Retry-After": "1"},
            )
        self._in_flight[client] += 1
        try:
            if not readers.everything:
                visible = {graph_name(thing_id).value async for thing_id in self.things.ids(readers)}
                default_graphs = _within(default_graphs, visible)
                named_graphs = _within(named_graphs, visible)
            return await self.worker.query(query, accept, default_graphs, named_graphs)
        finally:
            self._in_flight[client] -= 1
            if not self._in_flight[client]:
                del self._in_flight[client]

    async def jsonpath(self, expression: str, readers: TenantScope = EVERYTHING) -> bytes:
        """The JSON array of the values the expression selects from the array of the descriptions ``readers`` see."""
        compile_query(expression, self.jsonpath_limits.max_depth)  # a syntax error is a 400 before anything is read
        return await search(
            expression, self.things.documents(readers), lambda: self.things.count(readers), self.jsonpath_limits
        )

    async def stats(self, readers: TenantScope = EVERYTHING) -> dict[str, Any]:
        """Whether the index is ready, and the descriptions ``readers`` may see whose RDF is incomplete (unknown
        contexts) or missing. The index's own figures (descriptions, position, queue) count every tenant's
        descriptions and the store's address is the operator's: only for readers who see everything."""
        index: dict[str, Any] = {"indexReady": self.worker.ready}
        if self.worker.ready and readers.everything:
            with contextlib.suppress(ServiceUnavailable):
                index = {"indexReady": True, **await self.worker.stats()}
            if isinstance(index.get("externalStore"), str):
                index["externalStore"] = redact_urls(index["externalStore"])
        return {**index, **await rdf_statistics(self.database, readers), "bundledContexts": self.library.urls()}


#: A graph no description has: the dataset of a reader who may see none (an empty list would mean "all").
NO_GRAPH = "urn:lmos-registry:no-graph"


def _within(requested: list[str], visible: set[str]) -> list[str]:
    chosen = [graph for graph in requested if graph in visible] if requested else sorted(visible)
    return chosen or [NO_GRAPH]


__all__ = ["SearchService"]
