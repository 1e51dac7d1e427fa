"""The semantic layer as the application wires it: the RDF projector (in the server process) and SPARQL over
the index, which lives in a query worker process (:mod:`registry.semantic.worker`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, true
from sqlalchemy.ext.asyncio import AsyncEngine

from registry.config import Settings
from registry.errors import ServiceUnavailable
from registry.semantic.loader import ContextLibrary
from registry.semantic.projector import RdfProjector
from registry.semantic.rdf import RdfConverter
from registry.semantic.sparql import Answer
from registry.semantic.worker import QueryWorker
from registry.store.tables import description_rdf


class SemanticLayer:
    def __init__(self, settings: Settings, engine: AsyncEngine) -> None:
        self.engine = engine
        self.library = ContextLibrary.load(settings.context_dir)
        self.projector = RdfProjector(RdfConverter(self.library), strict_contexts=settings.strict_contexts)
        self.worker = QueryWorker(settings)

    async def start(self) -> None:
        await self.worker.start()

    async def stop(self) -> None:
        await self.worker.stop()

    async def query(self, query: str, accept: str, default_graphs: list[str], named_graphs: list[str]) -> Answer:
        return await self.worker.query(query, accept, default_graphs, named_graphs)

    async def stats(self) -> dict[str, Any]:
        """What the index holds, and the descriptions whose RDF is incomplete (unknown contexts) or missing."""
        urls = func.jsonb_array_elements_text(description_rdf.c.unknown_contexts).table_valued("value").lateral("url")
        per_url_query = (
            select(urls.c.value, func.count()).select_from(description_rdf.join(urls, true())).group_by(urls.c.value)
        )
        async with self.engine.connect() as connection:
            per_url = (await connection.execute(per_url_query)).all()
            incomplete = (
                await connection.execute(
                    select(func.count()).where(func.jsonb_array_length(description_rdf.c.unknown_contexts) > 0)
                )
            ).scalar_one()
            without = (
                await connection.execute(select(func.count()).where(description_rdf.c.error.is_not(None)))
            ).scalar_one()
        try:
            index: dict[str, Any] = {"indexReady": True, **await self.worker.stats()}
        except ServiceUnavailable:
            index = {"indexReady": False}
        return {
            **index,
            "descriptionsWithUnknownContexts": incomplete,
            "unknownContexts": {row[0]: row[1] for row in per_url},
            "descriptionsWithoutRdf": without,
            "bundledContexts": self.library.urls(),
        }
