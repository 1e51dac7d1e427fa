"""The RDF projector: every accepted description's RDF is computed once, before its write transaction, and stored
with it (``description_rdf``), together with its registration information (created, modified, expires, ttl).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any

import msgspec
import pyoxigraph as ox
from sqlalchemy import Text, bindparam, cast
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from registry.errors import BadRequest
from registry.schemas import Notice
from registry.semantic.rdf import Rdf, RdfConverter
from registry.store.statements import DriverConnection, DriverStatement
from registry.store.tables import description_rdf
from registry.store.things import StoredDescription

DISCOVERY = "https://www.w3.org/2022/wot/discovery-ontology#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def _upsert_statement() -> Any:
    row = pg_insert(description_rdf).values(
        thing_id=bindparam("thing_id"),
        revision=bindparam("revision"),
        ntriples=bindparam("ntriples"),
        unknown_contexts=cast(bindparam("unknown_contexts", type_=Text), JSONB),
        error=bindparam("error", type_=Text),
    )
    return row.on_conflict_do_update(
        index_elements=[description_rdf.c.thing_id],
        set_={name: row.excluded[name] for name in ("revision", "ntriples", "unknown_contexts", "error")},
    )


_UPSERT = DriverStatement.of(_upsert_statement())


@dataclasses.dataclass(slots=True)
class RdfProjection:
    rdf: Rdf
    notices: Sequence[Notice]

    async def store(self, connection: DriverConnection, stored: StoredDescription) -> None:
        registration = registration_triples(stored.id, stored.created, stored.modified, stored.expires, stored.ttl)
        arguments = _UPSERT.arguments(
            thing_id=stored.id,
            revision=stored.revision,
            ntriples=self.rdf.ntriples + registration,
            unknown_contexts=msgspec.json.encode(list(self.rdf.unknown_contexts)).decode(),
            error=self.rdf.error,
        )
        await connection.execute(_UPSERT.sql, *arguments)


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


def graph_name(thing_id: str) -> ox.NamedNode:
    """The named graph of a description: its id when that is an IRI, else a URN made from it."""
    try:
        return ox.NamedNode(thing_id)
    except ValueError:
        return ox.NamedNode("urn:lmos-registry:thing:" + uuid.uuid5(uuid.NAMESPACE_URL, thing_id).hex)


def registration_triples(
    thing_id: str, created: dt.datetime, modified: dt.datetime, expires: dt.datetime | None, ttl: float | None
) -> str:
    """``discovery:hasRegistrationInformation`` of the description, as the enriched TD would have it."""
    try:
        thing = ox.NamedNode(thing_id)
    except ValueError:
        return ""
    info = ox.BlankNode()
    triples = [
        ox.Triple(thing, ox.NamedNode(DISCOVERY + "hasRegistrationInformation"), info),
        ox.Triple(info, ox.NamedNode(RDF_TYPE), ox.NamedNode(DISCOVERY + "RegistrationInformation")),
        ox.Triple(info, ox.NamedNode(DISCOVERY + "dateCreated"), _datetime(created)),
        ox.Triple(info, ox.NamedNode(DISCOVERY + "dateModified"), _datetime(modified)),
    ]
    if expires is not None:
        triples.append(ox.Triple(info, ox.NamedNode(DISCOVERY + "expires"), _datetime(expires)))
    if ttl is not None:
        literal = ox.Literal(str(int(ttl)), datatype=ox.NamedNode(XSD + "unsignedInt"))
        triples.append(ox.Triple(info, ox.NamedNode(DISCOVERY + "ttl"), literal))
    return (ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES) or b"").decode()


def _datetime(moment: dt.datetime) -> ox.Literal:
    return ox.Literal(
        moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"), datatype=ox.NamedNode(XSD + "dateTime")
    )
