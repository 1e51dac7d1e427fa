"""The RDF projection: every accepted description's RDF, computed once before its write and stored with it
(``description_rdf``) together with its registration information, for the SPARQL indexes to load."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import msgspec

from registry.errors import BadRequest
from registry.semantic.graphs import registration_triples
from registry.semantic.rdf import Rdf, RdfConverter
from registry.store.database import Transaction
from registry.store.rdf import RdfWrite, remove_rdf, store_rdf
from registry.store.things import StoredDescription
from registry.wire import Notice


@dataclasses.dataclass(slots=True)
class RdfProjection:
    rdf: Rdf
    notices: Sequence[Notice]


class RdfProjector:
    """Strict mode rejects unknown remote contexts; otherwise the registrant is told they were left out."""

    def __init__(self, converter: RdfConverter, *, strict_contexts: bool) -> None:
        self.converter = converter
        self.strict_contexts = strict_contexts

    def project(self, thing_id: str, document: dict[str, Any]) -> RdfProjection:
        if self.strict_contexts:
            unknown = self.converter.unknown_contexts(document)
            if unknown:
                raise BadRequest(
                    f"The @context names remote context(s) this directory does not have: {', '.join(unknown)} "
                    "(strict mode; the directory never fetches contexts)",
                    validationErrors=[
                        {"field": "@context", "description": f"unknown remote context {url}"} for url in unknown
                    ],
                )
        rdf = self.converter.convert(document)
        notices = [
            Notice(
                code="unknown-context",
                message=f"The remote context {url} is not available offline; the RDF was computed without it",
                field="@context",
            )
            for url in rdf.unknown_contexts
        ]
        if rdf.error is not None:
            notices.append(
                Notice(code="no-rdf", message=f"No RDF could be computed, SPARQL will not find it: {rdf.error}")
            )
        return RdfProjection(rdf, notices)

    @staticmethod
    async def store(tx: Transaction, written: Sequence[tuple[RdfProjection, StoredDescription]]) -> None:
        await store_rdf(
            tx,
            [
                RdfWrite(
                    stored.id,
                    stored.revision,
                    projection.rdf.ntriples
                    + registration_triples(stored.id, stored.created, stored.modified, stored.expires, stored.ttl),
                    msgspec.json.encode(list(projection.rdf.unknown_contexts)).decode(),
                    projection.rdf.error,
                )
                for projection, stored in written
            ],
        )

    async def remove(self, tx: Transaction, thing_ids: Sequence[str]) -> None:
        await remove_rdf(tx, thing_ids)


__all__ = ["RdfProjection", "RdfProjector"]
