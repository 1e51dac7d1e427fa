"""SQLAlchemy Core tables: the one description of the schema that queries are written against.

The schema itself is created and changed only by the Alembic migrations in ``migrations/``; a test checks that
the migrated database matches these tables.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    MetaData,
    String,
    Table,
    Text,
)
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

#: ``COLLATE "C"`` orders ids by UTF-8 bytes, which is Unicode code-point order (TDD listing rule).
ID_TYPE = String(collation="C")

descriptions = Table(
    "descriptions",
    metadata,
    Column("id", ID_TYPE, primary_key=True),
    # The document exactly as registered (key order kept), and as jsonb for queries.
    Column("document_text", Text, nullable=False),
    Column("document", JSONB, nullable=False),
    Column("anonymous", Boolean, nullable=False, default=False),
    Column("created", DateTime(timezone=True), nullable=False),
    Column("modified", DateTime(timezone=True), nullable=False),
    Column("expires", DateTime(timezone=True), nullable=True),
    Column("ttl", Float, nullable=True),
    Column("last_seen", DateTime(timezone=True), nullable=False),
    # Change-log sequence of the last write: the ETag, and the position replicas compare against.
    Column("revision", BigInteger, nullable=False),
    Index("ix_descriptions_expires", "expires", postgresql_where="expires IS NOT NULL"),
)

changes = Table(
    "changes",
    metadata,
    Column("seq", BigInteger, Identity(always=True), primary_key=True),
    Column("thing_id", ID_TYPE, nullable=False),
    Column("type", String(16), nullable=False),
    # For creates the full document, for updates an RFC 7396 merge patch, for deletes null.
    Column("diff", JSONB, nullable=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Index("ix_changes_thing_id", "thing_id"),
)

#: RDF (N-Triples) of each description, computed when it was written; replicas build their SPARQL index from it.
description_rdf = Table(
    "description_rdf",
    metadata,
    Column("thing_id", ID_TYPE, ForeignKey("descriptions.id", ondelete="CASCADE"), primary_key=True),
    Column("revision", BigInteger, nullable=False),
    Column("ntriples", Text, nullable=False),
    # Remote @context URLs that are not available offline and were left out of the RDF.
    Column("unknown_contexts", JSONB, nullable=False),
    # Why no RDF could be computed (the description is stored and served all the same).
    Column("error", Text, nullable=True),
)
