"""Projections: data derived from each description and stored with it, in the write's transaction.

One contract for every projection (RDF for SPARQL, the discovery catalog). What may lag behind a write is not a
projection but a job of its own: the vectors (registry/embeddings/indexer.py, woken by the change feed), the SPARQL
index and an external SPARQL store (registry/sparql/, following the change feed), and the catalog's full-text words
after their composition changes (``search_words`` here, a periodic job).

- ``Projector.project`` computes a projection from a valid description *before* the write's transaction (pure
  CPU work, off the event loop for large descriptions). It may refuse the description by raising a
  ``RegistryError``, and reports notices for the registrant.
- ``Projector.store`` writes the rows of the projections of a batch of written descriptions (one, or a whole
  ``POST /api/v1/things/batch``) through the write's ``Transaction``, after the descriptions' rows, so derived data
  commits (or not) with the description and is never out of step; a batch costs one round trip, not one each.
- ``Projector.remove`` is told, in the same transaction, which descriptions left (delete or expiry purge).

Adding a projection means one module implementing ``Projector`` and one line in ``registry.app``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from registry.semantic.rdf import readings_kept
from registry.store.database import Transaction
from registry.store.things import StoredDescription
from registry.wire import Notice

#: Descriptions up to this size (encoded JSON) are projected on the event loop: their projections take under a
#: millisecond, and a thread hand-off costs about as much CPU as it spares the
#: loop (the GIL serialises the work either way).
INLINE_PROJECTION_BYTES = 8192


class Projection(Protocol):
    notices: Sequence[Notice]


P = TypeVar("P", bound=Projection)


class Projector(Protocol[P]):
    def project(self, thing_id: str, document: dict[str, Any]) -> P: ...

    async def store(self, tx: Transaction, written: Sequence[tuple[P, StoredDescription]]) -> None: ...

    async def remove(self, tx: Transaction, thing_ids: Sequence[str]) -> None: ...


class Projections:
    """The application's projectors, run together on every write and removal."""

    def __init__(self, projectors: Sequence[Projector[Any]]) -> None:
        self.projectors = list(projectors)

    async def compute(self, thing_id: str, document: dict[str, Any], size: int) -> list[Projection]:
        """Every projector's projection of ``document`` (``size``: its encoded length)."""

        def project() -> list[Projection]:
            with readings_kept():
                return [projector.project(thing_id, document) for projector in self.projectors]

        return project() if size <= INLINE_PROJECTION_BYTES else await asyncio.to_thread(project)

    async def store(self, tx: Transaction, written: Sequence[tuple[Sequence[Projection], StoredDescription]]) -> None:
        """Store each written description's projections (those ``compute`` made, in the projectors' order)."""
        if written:
            for position, projector in enumerate(self.projectors):
                await projector.store(tx, [(projections[position], stored) for projections, stored in written])

    async def remove(self, tx: Transaction, thing_ids: Sequence[str]) -> None:
        if thing_ids:
            for projector in self.projectors:
                await projector.remove(tx, thing_ids)


__all__ = ["INLINE_PROJECTION_BYTES", "Projection", "Projections", "Projector"]
