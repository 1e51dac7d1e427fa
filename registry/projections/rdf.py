"""The RDF projection: every accepted description's RDF, computed once before its write and stored with it
(``description_rdf``) together with its registration information, for the SPARQL indexes to load."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import msgspec

from registry.errors import BadRequest
from registry.semantic.graphs import own_statements, owns, registration_triples
from registry.semantic.rdf import Rdf, RdfConverter
from registry.store.database import Transaction
from registry.store.rdf import RdfWrite, remove_rdf, store_rdf
from registry.store.things import StoredDescription
from registry.wire import Notice

#: Foreign subjects named one by one in the notices of a write; the rest are counted in one more notice.
NAMED_FOREIGN_SUBJECTS = 10


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
        dropped: dict[str, int] = {}
        if rdf.subjects is None or not all(owns(thing_id, subject) for subject in rdf.subjects):
            own = own_statements(thing_id, rdf.ntriples)
            rdf, dropped = dataclasses.replace(rdf, ntriples=own.ntriples), own.dropped
        notices = foreign_subject_notices(thing_id, dropped)
        notices += [
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


def foreign_subject_notices(thing_id: str, dropped: dict[str, int]) -> list[Notice]:
    """What the registrant is told of the statements about other subjects that were left out of its RDF."""
    notices = [
        Notice(
            code="foreign-subject",
            message=f"{count} RDF statement(s) about <{subject}> were left out: a description states facts only "
            f"about itself (its id {thing_id!r}, IRIs under it with a fragment, its blank nodes)",
        )
        for subject, count in list(dropped.items())[:NAMED_FOREIGN_SUBJECTS]
    ]
    rest = list(dropped.values())[NAMED_FOREIGN_SUBJECTS:]
    if rest:
        notices.append(
            Notice(
                code="foreign-subject",
                message=f"{sum(rest)} more RDF statement(s) about {len(rest)} more subject(s) other than the "
                "description itself were left out",
            )
        )
    return notices


__all__ = ["RdfProjection", "RdfProjector", "foreign_subject_notices"]
