"""Persistence of descriptions and the change log, in PostgreSQL.

Every write is one transaction: the description row, one change-log row, the rows of each projection (derived
data such as RDF or the capability summary) and a NOTIFY carrying the change sequence, so other replicas and
event streams see exactly the committed changes, in order. Writes to one id are serialised by a transaction-level
advisory lock, which also covers ids that do not exist yet.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol

import json_merge_patch
import msgspec
from sqlalchemy import delete, func, insert, or_, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from registry.errors import NotFound, PreconditionFailed
from registry.store.leases import Lease, LeaseRenewer
from registry.store.tables import changes, descriptions

#: PostgreSQL NOTIFY channel; the payload is the highest change sequence of the committed transaction.
CHANGES_CHANNEL = "registry_changes"

THING_CREATED = "thing_created"
THING_UPDATED = "thing_updated"
THING_DELETED = "thing_deleted"


@dataclasses.dataclass(frozen=True, slots=True)
class StoredDescription:
    id: str
    document_text: str
    anonymous: bool
    created: dt.datetime
    modified: dt.datetime
    expires: dt.datetime | None
    ttl: float | None
    revision: int

    @property
    def etag(self) -> str:
        return f'"{self.revision}"'

    def document(self) -> dict[str, Any]:
        result: dict[str, Any] = msgspec.json.decode(self.document_text)
        return result


class Projection(Protocol):
    """Data derived from a description and stored with it, in the same transaction."""

    async def store(self, connection: AsyncConnection, thing_id: str, revision: int) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """What a write will store: the document (with ``id``, without ``registration``) and its lifetime."""

    document: dict[str, Any]
    ttl: float | None
    expires_at: Callable[[dt.datetime], dt.datetime | None]
    projections: Sequence[Projection] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class SaveResult:
    created: bool
    stored: StoredDescription


_COLUMNS = (
    descriptions.c.id,
    descriptions.c.document_text,
    descriptions.c.anonymous,
    descriptions.c.created,
    descriptions.c.modified,
    descriptions.c.expires,
    descriptions.c.ttl,
    descriptions.c.revision,
)


def _live(now: Any = None) -> Any:
    """Rows that have not expired: expired descriptions are never served, purged or not."""
    moment = func.now() if now is None else now
    return or_(descriptions.c.expires.is_(None), descriptions.c.expires > moment)


#: Other stores (discovery) filter their joins with the same rule.
live = _live


def _stored(row: Any) -> StoredDescription:
    return StoredDescription(*row)


def etag_matches(if_match: str, etag: str) -> bool:
    """RFC 9110 If-Match: ``*`` or a list of entity tags compared strongly."""
    candidates = [tag.strip() for tag in if_match.split(",")]
    return "*" in candidates or etag in candidates


class ThingRepository:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.leases = LeaseRenewer(engine)

    async def get(self, thing_id: str) -> StoredDescription | None:
        query = select(*_COLUMNS).where(descriptions.c.id == thing_id, _live())
        async with self.engine.connect() as connection:
            row = (await connection.execute(query)).first()
        return None if row is None else _stored(row)

    async def save(
        self,
        thing_id: str,
        produce: Callable[[StoredDescription | None], Awaitable[Candidate]],
        *,
        anonymous: bool = False,
        if_match: str | None = None,
        must_exist: bool = False,
    ) -> SaveResult:
        """Create or replace ``thing_id`` with what ``produce`` makes of the current version (None if new).

        ``anonymous`` marks a new description whose id the directory assigned; a replacement keeps the mark.
        """
        async with self.engine.begin() as connection:
            await connection.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:id, 0))"), {"id": thing_id})
            now: dt.datetime = (await connection.execute(select(func.now()))).scalar_one()
            row = (await connection.execute(select(*_COLUMNS).where(descriptions.c.id == thing_id, _live(now)))).first()
            current = None if row is None else _stored(row)
            if current is None and must_exist:
                raise NotFound(f"No Thing Description with id {thing_id!r}")
            if if_match is not None and (current is None or not etag_matches(if_match, current.etag)):
                raise PreconditionFailed(
                    "If-Match does not match the current version of the description"
                    if current
                    else f"If-Match given, but there is no description with id {thing_id!r}",
                    headers={"ETag": current.etag} if current else {},
                )
            candidate = await produce(current)
            if current is None:
                change_type, diff = THING_CREATED, candidate.document
            else:
                change_type = THING_UPDATED
                diff = json_merge_patch.create_patch(current.document(), candidate.document)
                diff["id"] = thing_id
            seq = await _append_change(connection, thing_id, change_type, diff, now)
            document_text = msgspec.json.encode(candidate.document).decode()
            expires = candidate.expires_at(now)
            values: dict[str, Any] = {
                "document_text": document_text,
                "document": candidate.document,
                "modified": now,
                "expires": expires,
                "ttl": candidate.ttl,
                "last_seen": now,
                "revision": seq,
            }
            created_at = now if current is None else current.created
            anonymous = anonymous if current is None else current.anonymous
            statement = (
                pg_insert(descriptions)
                .values(id=thing_id, anonymous=anonymous, created=created_at, **values)
                .on_conflict_do_update(
                    index_elements=[descriptions.c.id],
                    set_={**values, "created": created_at, "anonymous": anonymous},
                )
            )
            await connection.execute(statement)
            for projection in candidate.projections:
                await projection.store(connection, thing_id, seq)
            await _notify(connection, seq)
        stored = StoredDescription(thing_id, document_text, anonymous, created_at, now, expires, candidate.ttl, seq)
        return SaveResult(created=current is None, stored=stored)

    async def delete(self, thing_id: str, *, if_match: str | None = None) -> None:
        async with self.engine.begin() as connection:
            await connection.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:id, 0))"), {"id": thing_id})
            row = (await connection.execute(select(*_COLUMNS).where(descriptions.c.id == thing_id, _live()))).first()
            if row is None:
                raise NotFound(f"No Thing Description with id {thing_id!r}")
            current = _stored(row)
            if if_match is not None and not etag_matches(if_match, current.etag):
                raise PreconditionFailed(
                    "If-Match does not match the current version of the description",
                    headers={"ETag": current.etag},
                )
            await connection.execute(delete(descriptions).where(descriptions.c.id == thing_id))
            now = (await connection.execute(select(func.now()))).scalar_one()
            seq = await _append_change(connection, thing_id, THING_DELETED, None, now)
            await _notify(connection, seq)

    async def renew_lease(self, thing_id: str) -> Lease:
        return await self.leases.renew(thing_id)

    async def purge_expired(self) -> list[str]:
        """Delete expired descriptions with one ``thing_deleted`` each; safe to run on every replica at once."""
        gone = delete(descriptions).where(descriptions.c.expires <= func.now()).returning(descriptions.c.id).cte()
        statement = (
            insert(changes)
            .from_select(
                ["thing_id", "type", "diff", "at"],
                select(gone.c.id, text(f"'{THING_DELETED}'"), text("NULL::jsonb"), func.now()),
            )
            .returning(changes.c.seq, changes.c.thing_id)
        )
        async with self.engine.begin() as connection:
            rows = (await connection.execute(statement)).all()
            if rows:
                await _notify(connection, max(row.seq for row in rows))
        return [row.thing_id for row in rows]

    async def count(self) -> int:
        async with self.engine.connect() as connection:
            return int((await connection.execute(select(func.count()).where(_live()))).scalar_one())

    async def collection_version(self) -> int:
        """Sequence of the latest change: any write changes it, so it serves as the listing's etag."""
        async with self.engine.connect() as connection:
            return int((await connection.execute(select(func.coalesce(func.max(changes.c.seq), 0)))).scalar_one())

    async def stream(self, *, offset: int = 0, limit: int | None = None) -> AsyncIterator[StoredDescription]:
        """Live descriptions in code-point order of id, fetched in batches through a server-side cursor."""
        query = select(*_COLUMNS).where(_live()).order_by(descriptions.c.id).offset(offset)
        if limit is not None:
            query = query.limit(limit)
        async with self.engine.connect() as connection:
            result = await connection.stream(query.execution_options(yield_per=200))
            async for row in result:
                yield _stored(row)

    async def all_documents(self) -> AsyncIterator[tuple[str, str]]:
        """(id, document) of every live description, for search engines that scan."""
        query = select(descriptions.c.id, descriptions.c.document_text).where(_live()).order_by(descriptions.c.id)
        async with self.engine.connect() as connection:
            result = await connection.stream(query.execution_options(yield_per=500))
            async for row in result:
                yield row.id, row.document_text


async def _append_change(
    connection: AsyncConnection, thing_id: str, change_type: str, diff: Any, now: dt.datetime
) -> int:
    statement = insert(changes).values(thing_id=thing_id, type=change_type, diff=diff, at=now).returning(changes.c.seq)
    return int((await connection.execute(statement)).scalar_one())


async def _notify(connection: AsyncConnection, seq: int) -> None:
    await connection.execute(select(func.pg_notify(CHANGES_CHANNEL, str(seq))))


__all__ = [
    "CHANGES_CHANNEL",
    "THING_CREATED",
    "THING_DELETED",
    "THING_UPDATED",
    "Candidate",
    "Lease",
    "Projection",
    "SaveResult",
    "StoredDescription",
    "ThingRepository",
]
