"""The RDF projection: every accepted description's RDF, computed once before its write and stored with it
(``description_rdf``) together with its registration information, for the SPARQL indexes to load."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import msgspec

from registry.descriptions.summary import KIND_THING, kind_and_vendor_names
from registry.descriptions.validation import FieldError
from registry.errors import BadRequest, InvalidDescription
from registry.semantic.graphs import own_statements, owns, registration_triples
from registry.semantic.rdf import Rdf, RdfConverter, lmos_statements
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
        if rdf.error is None:
            check_lmos_reading(thing_id, document, rdf.ntriples)
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


def check_lmos_reading(thing_id: str, document: dict[str, Any], ntriples: str) -> None:
    """Refuse a description whose kind or vendor reads differently in its RDF (what SPARQL answers) than in what
    the directory's rules read (the vendor a key is bound to, search filters, the summary): a spelling the
    directory cannot follow, or a vendor stated about a node that is not the description's own."""
    try:
        rdf_kinds, rdf_vendors = lmos_statements(thing_id, ntriples)
    except ValueError:  # an id that is no IRI: its RDF has no node for it
        return
    kind, vendors = kind_and_vendor_names(document)
    kinds = set() if kind == KIND_THING else {kind}
    if rdf_kinds != kinds:
        raise InvalidDescription(
            [
                FieldError(
                    "@type",
                    f"the description is {_listed(kinds) or 'no agent or tool'} as the directory reads it, but "
                    f"{_listed(rdf_kinds) or 'no agent or tool'} in its RDF; write its type as lmos:Agent or "
                    "lmos:Tool in a way both read alike",
                )
            ]
        )
    if rdf_vendors != set(vendors):
        raise InvalidDescription(
            [
                FieldError(
                    "lmos:metadata.lmos:vendor.lmos:name",
                    f"the vendor is {_listed(set(vendors)) or 'none'} as the directory reads it, but "
                    f"{_listed(rdf_vendors) or 'none'} in its RDF (lmos:metadata/lmos:vendor/lmos:name of the "
                    "description's id); state the vendor of the description itself, in a way both read alike",
                )
            ]
        )


def _listed(values: set[str]) -> str:
    return ", ".join(repr(value) for value in sorted(values))


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


__all__ = ["RdfProjection", "RdfProjector", "check_lmos_reading", "foreign_subject_notices"]
