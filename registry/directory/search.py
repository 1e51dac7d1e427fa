"""The WoT Discovery search API's use cases: SPARQL over the index in the query worker, JSONPath over the stored
documents, and what the index holds."""

from __future__ import annotations

from typing import Any

from registry.errors import ServiceUnavailable
from registry.semantic.jsonpath import compile_query, search
from registry.semantic.loader import ContextLibrary
from registry.semantic.sparql import Answer
from registry.sparql_worker.client import QueryWorker
from registry.store.database import Database
from registry.store.rdf import rdf_statistics
from registry.store.things import ThingStore


class SearchService:
    def __init__(self, database: Database, things: ThingStore, worker: QueryWorker, library: ContextLibrary) -> None:
        self.database = database
        self.things = things
        self.worker = worker
        self.library = library

    async def sparql(self, query: str, accept: str, default_graphs: list[str], named_graphs: list[str]) -> Answer:
        return await self.worker.query(query, accept, default_graphs, named_graphs)

    async def jsonpath(self, expression: str) -> bytes:
        """The JSON array of the values the expression selects from the array of all descriptions."""
        compile_query(expression)  # a syntax error is a 400 before anything is read
        return await search(expression, self.things.documents())

    async def stats(self) -> dict[str, Any]:
        """What the index holds, and the descriptions whose RDF is incomplete (unknown contexts) or missing."""
        try:
            index: dict[str, Any] = {"indexReady": True, **await self.worker.stats()}
        except ServiceUnavailable:
            index = {"indexReady": False}
        return {**index, **await rdf_statistics(self.database), "bundledContexts": self.library.urls()}


__all__ = ["SearchService"]
