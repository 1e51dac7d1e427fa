"""The stored RDF of each description (``description_rdf``): written by the RDF projection, read by SPARQL indexes."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    FromClause,
    Text,
    any_,
    bindparam,
    cast,
    delete,
    func,
    select,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from registry.store.database import Executor, Statement, Transaction
from registry.store.tables import description_rdf, descriptions, live, of_tenant
from registry.tenancy import EVERYTHING, TenantScope


@dataclasses.dataclass(frozen=True, slots=True)
class StoredRdf:
    thing_id: str
    ntriples: str
    #: End of the description's lease (the index drops it then, purged or not).
    expires: dt.datetime | None


def _upsert_statement() -> Any:
    """The RDF of every description of a write, one row per element of the arrays: one statement for a batch."""
    rows = (
        func.unnest(
            bindparam("thing_ids", type_=ARRAY(Text)),
            bindparam("revisions", type_=ARRAY(BigInteger)),
            bindparam("ntriples", type_=ARRAY(Text)),
            bindparam("unknown_contexts", type_=ARRAY(Text)),
            bindparam("errors", type_=ARRAY(Text)),
        )
        .table_valued("thing_id", "revision", "ntriples", "unknown_contexts", "error")
        .render_derived()
    )
    row = pg_insert(description_rdf).from_select(
        ["thing_id", "revision", "ntriples", "unknown_contexts", "error"],
        select(rows.c.thing_id, rows.c.revision, rows.c.ntriples, cast(rows.c.unknown_contexts, JSONB), rows.c.error),
    )
    return row.on_conflict_do_update(
        index_elements=[description_rdf.c.thing_id],
        set_={name: row.excluded[name] for name in ("revision", "ntriples", "unknown_contexts", "error")},
    )


_UPSERT = Statement.of(_upsert_statement())
_REMOVE = Statement.of(
    delete(description_rdf).where(description_rdf.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text))))
)
_CURRENT = (
    select(description_rdf.c.thing_id, description_rdf.c.ntriples, descriptions.c.expires)
    .join(descriptions, descriptions.c.id == description_rdf.c.thing_id)
    .where(live())
)
_OF_IDS = description_rdf.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text)))
_CURRENT_OF = Statement.of(_CURRENT.where(_OF_IDS))
#: The same rows, sized without reading the RDF itself: PostgreSQL takes a stored text's length from its header.
_SIZED = _CURRENT.with_only_columns(description_rdf.c.thing_id, func.octet_length(description_rdf.c.ntriples))
_SIZES_OF = Statement.of(_SIZED.where(_OF_IDS))
_SIZES_AFTER = Statement.of(
    _SIZED.where(description_rdf.c.thing_id > bindparam("after"))
    .order_by(description_rdf.c.thing_id)
    .limit(bindparam("limit"))
)


@dataclasses.dataclass(frozen=True, slots=True)
class RdfWrite:
    """The RDF of one written description, and what went wrong computing it."""

    thing_id: str
    revision: int
    ntriples: str
    unknown_contexts_json: str
    error: str | None


async def store_rdf(tx: Transaction, writes: Sequence[RdfWrite]) -> None:
    """Store the RDF of ``writes`` (distinct ids) in one statement."""
    if not writes:
        return
    await tx.execute(
        _UPSERT,
        thing_ids=[write.thing_id for write in writes],
        revisions=[write.revision for write in writes],
        ntriples=[write.ntriples for write in writes],
        unknown_contexts=[write.unknown_contexts_json for write in writes],
        errors=[write.error for write in writes],
    )


async def remove_rdf(tx: Transaction, thing_ids: Sequence[str]) -> None:
    await tx.execute(_REMOVE, ids=list(thing_ids))


async def current_rdf_of(executor: Executor, thing_ids: Sequence[str]) -> list[StoredRdf]:
    """The RDF of those of ``thing_ids`` that are live (the others are gone or expired)."""
    return [StoredRdf(*row) for row in await executor.fetch(_CURRENT_OF, ids=list(thing_ids))]


async def rdf_sizes_of(executor: Executor, thing_ids: Sequence[str]) -> dict[str, int]:
    """Bytes of RDF of those of ``thing_ids`` that are live: how many of them to read at once."""
    return {row[0]: row[1] for row in await executor.fetch(_SIZES_OF, ids=list(thing_ids))}


async def live_rdf_sizes(executor: Executor, after: str, limit: int) -> list[tuple[str, int]]:
    """(id, bytes of RDF) of up to ``limit`` live descriptions by id, from the first after ``after``."""
    return [(row[0], row[1]) for row in await executor.fetch(_SIZES_AFTER, after=after, limit=limit)]


_LEASE_ENDS = Statement.of(
    select(descriptions.c.id, descriptions.c.expires).where(descriptions.c.expires.is_not(None), live())
)
_EXPIRED = Statement.of(select(descriptions.c.id).where(~live()))
_IDENTITY = Statement.of(
    text(
        "SELECT concat_ws('/', current_database(), (SELECT oid FROM pg_database WHERE datname = current_database()), "
        "(SELECT seq::text || '@' || at::text FROM changes ORDER BY seq LIMIT 1))"
    )
)


async def lease_ends(executor: Executor) -> list[tuple[str, dt.datetime]]:
    """(id, end of lease) of the live descriptions that hold a lease."""
    return [(row[0], row[1]) for row in await executor.fetch(_LEASE_ENDS)]


async def expired_ids(executor: Executor) -> list[str]:
    """Descriptions whose lease has ended and that are not purged yet."""
    return [row[0] for row in await executor.fetch(_EXPIRED)]


async def database_identity(executor: Executor) -> str:
    """Names this database's history (its name and oid, and its first change, to the microsecond): a database
    dropped and created again under the same name is another one, so an index of the first is not taken for the
    second. Needs no privileges."""
    return str(await executor.fetchval(_IDENTITY))


def names_first_change(identity: str) -> bool:
    """Whether ``identity`` was read once the database had a change: before, it names the database alone (its name
    and oid), and its first change completes it."""
    return not identity.rpartition("/")[2].isdigit()


def same_history(recorded: str, identity: str) -> bool:
    """Whether a copy recorded as of ``recorded`` is of the database ``identity`` names: the same identity, or one
    read before the database's first change (its name and oid) that ``identity`` completes."""
    return recorded == identity or (not names_first_change(recorded) and identity.startswith(recorded + "/"))


def database_part(identity: str) -> str:
    """The database's name and oid, without its first change: stable from the database's creation on."""
    return identity if not names_first_change(identity) else identity.rpartition("/")[0]


async def rdf_statistics(executor: Executor, readers: TenantScope = EVERYTHING) -> dict[str, Any]:
    """Descriptions whose RDF is incomplete (unknown remote contexts, by URL) or missing, among those ``readers``
    may see."""
    rows: FromClause = description_rdf
    scope: tuple[ColumnElement[bool], ...] = ()
    if not readers.everything:
        rows = description_rdf.join(descriptions, descriptions.c.id == description_rdf.c.thing_id)
        scope = (of_tenant(descriptions.c.tenant, readers.tenant),)
    urls = func.jsonb_array_elements_text(description_rdf.c.unknown_contexts).table_valued("value").lateral("url")
    per_url = await executor.fetch(
        select(urls.c.value, func.count()).select_from(rows.join(urls, true())).where(*scope).group_by(urls.c.value)
    )
    incomplete = await executor.fetchval(
        select(func.count())
        .select_from(rows)
        .where(func.jsonb_array_length(description_rdf.c.unknown_contexts) > 0, *scope)
    )
    without = await executor.fetchval(
        select(func.count()).select_from(rows).where(description_rdf.c.error.is_not(None), *scope)
    )
    return {
        "descriptionsWithUnknownContexts": incomplete,
        "unknownContexts": {row[0]: row[1] for row in per_url},
        "descriptionsWithoutRdf": without,
    }


__all__ = [
    "RdfWrite",
    "StoredRdf",
    "current_rdf_of",
    "database_identity",
    "database_part",
    "expired_ids",
    "lease_ends",
    "live_rdf_sizes",
    "names_first_change",
    "rdf_sizes_of",
    "rdf_statistics",
    "remove_rdf",
    "same_history",
    "store_rdf",
]
