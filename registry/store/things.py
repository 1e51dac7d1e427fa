"""Persistence of descriptions and the change log, in PostgreSQL.

Every write is one transaction: the description row, one change-log row, the rows of each projection (derived
data such as RDF or the capability summary) and a NOTIFY carrying the change sequence, so other replicas and
event streams see exactly the committed changes, in order. Writes to one id are serialised by a transaction-level
advisory lock, which also covers ids that do not exist yet.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol

import asyncpg
import json_merge_patch
import msgspec
from sqlalchemy import Boolean, DateTime, Float, Text, bindparam, cast, delete, func, insert, null, or_, select, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from registry.errors import NotFound, PreconditionFailed
from registry.store.leases import Lease, LeaseRenewer
from registry.store.statements import DriverConnection, DriverStatement
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
    """Data derived from a description and stored with it, in the same transaction.

    ``connection`` is the write's asyncpg connection, inside its transaction (run precompiled statements on it:
    ``registry.store.statements``); ``stored`` is the description as this write stores it (its revision,
    registration times and encoded JSON).
    """

    async def store(self, connection: DriverConnection, stored: StoredDescription) -> None: ...


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """What a write will store: the document (with ``id``, without ``registration``) and its lifetime."""

    document: dict[str, Any]
    ttl: float | None
    expires_at: Callable[[dt.datetime], dt.datetime | None]
    projections: Sequence[Projection] = ()
    #: ``document`` encoded, when the caller has it already.
    document_text: str | None = None


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


_GET = DriverStatement.of(select(*_COLUMNS).where(descriptions.c.id == bindparam("id"), _live()))

#: Errors after which an idempotent read is retried once on a fresh connection (e.g. PostgreSQL restarted).
_CONNECTION_LOST = (asyncpg.PostgresConnectionError, asyncpg.InterfaceError, OSError)


_TIMESTAMP = DateTime(timezone=True)

# The statements of a write, built once (building and cache-keying them per request cost more CPU than the
# database work). A write is three round trips between BEGIN and COMMIT: lock, read, write.

#: Serialises writes to one id (also ids that do not exist yet) and reads the transaction time.
_LOCK_AND_NOW = DriverStatement.of(
    select(func.pg_advisory_xact_lock(func.hashtextextended(bindparam("id", type_=Text), 0)), func.now())
)

_CURRENT = DriverStatement.of(
    select(*_COLUMNS).where(descriptions.c.id == bindparam("id"), _live(bindparam("now", type_=_TIMESTAMP)))
)


def _write_statement() -> Any:
    """Change-log row, description upsert and NOTIFY in one statement; returns the change sequence.

    The JSON arrives as text (already encoded once) and is cast to jsonb by PostgreSQL.
    """
    change = (
        insert(changes)
        .values(
            thing_id=bindparam("id"),
            type=bindparam("type"),
            diff=cast(bindparam("diff", type_=Text), JSONB),
            at=bindparam("now", type_=_TIMESTAMP),
        )
        .returning(changes.c.seq)
        .cte("change")
    )
    row = select(
        bindparam("id").label("id"),
        bindparam("document_text", type_=Text).label("document_text"),
        cast(bindparam("document_text", type_=Text), JSONB).label("document"),
        bindparam("anonymous", type_=Boolean).label("anonymous"),
        bindparam("created", type_=_TIMESTAMP).label("created"),
        bindparam("now", type_=_TIMESTAMP).label("modified"),
        bindparam("expires", type_=_TIMESTAMP).label("expires"),
        bindparam("ttl", type_=Float).label("ttl"),
        bindparam("now", type_=_TIMESTAMP).label("last_seen"),
        change.c.seq.label("revision"),
    )
    columns = [column.name for column in row.selected_columns]
    upsert = pg_insert(descriptions).from_select(columns, row)
    upsert = upsert.on_conflict_do_update(
        index_elements=[descriptions.c.id],
        set_={name: upsert.excluded[name] for name in columns if name != "id"},
    )
    return select(change.c.seq, func.pg_notify(CHANGES_CHANNEL, cast(change.c.seq, Text))).add_cte(upsert.cte("upsert"))


_WRITE = DriverStatement.of(_write_statement())


def _delete_statement() -> Any:
    """Description delete, ``thing_deleted`` change-log row (no diff) and NOTIFY in one statement."""
    gone = delete(descriptions).where(descriptions.c.id == bindparam("id"))
    change = (
        insert(changes)
        .values(thing_id=bindparam("id"), type=THING_DELETED, diff=null(), at=bindparam("now", type_=_TIMESTAMP))
        .returning(changes.c.seq)
        .cte("change")
    )
    return select(change.c.seq, func.pg_notify(CHANGES_CHANNEL, cast(change.c.seq, Text))).add_cte(gone.cte("gone"))


_DELETE = DriverStatement.of(_delete_statement())


async def _keep_session(connection: DriverConnection) -> None:
    """Reads and writes change no session state, so the pool's reset round trip on release is skipped (a
    transaction left open by an interrupted write is still rolled back)."""
    if connection.is_in_transaction():
        await connection.execute("ROLLBACK")


def _stored(row: Any) -> StoredDescription:
    return StoredDescription(*row)


def etag_matches(if_match: str, etag: str) -> bool:
    """RFC 9110 If-Match: ``*`` or a list of entity tags compared strongly."""
    candidates = [tag.strip() for tag in if_match.split(",")]
    return "*" in candidates or etag in candidates


class ThingRepository:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._pools: dict[str, asyncpg.Pool] = {}
        self._pools_lock = asyncio.Lock()
        self.leases = LeaseRenewer(engine)

    async def get(self, thing_id: str) -> StoredDescription | None:
        """The hot read: one round trip with a prepared statement on a plain asyncpg pool.

        Through the SQLAlchemy pool the same read cost six round trips (pre-ping and the query, each wrapped in
        BEGIN/ROLLBACK) and most of the CPU time of a GET.
        """
        try:
            row = await (await self._pool("reads")).fetchrow(_GET.sql, thing_id)
        except _CONNECTION_LOST:
            # The pool has dropped the broken connection; an idempotent read may simply try once more.
            row = await (await self._pool("reads")).fetchrow(_GET.sql, thing_id)
        return None if row is None else _stored(row)

    async def _pool(self, name: str) -> asyncpg.Pool:
        """Plain asyncpg pools for the hot paths, one for reads and one for writes (so that a burst of writes
        does not hold up reads), each as large as the engine's pool."""
        pool = self._pools.get(name)
        if pool is None:
            async with self._pools_lock:
                pool = self._pools.get(name)
                if pool is None:
                    url = self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
                    pool = self._pools[name] = await asyncpg.create_pool(
                        url,
                        min_size=1,
                        max_size=max(1, self.engine.pool.size()),  # type: ignore[attr-defined]
                        reset=_keep_session,
                        command_timeout=30,
                        server_settings={"application_name": "lmos-registry"},
                    )
        return pool

    async def close(self) -> None:
        """Close the asyncpg pools (the engine is disposed by its owner)."""
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            await pool.close()

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
        # On asyncpg directly: through SQLAlchemy, its statements and transaction handling cost more CPU than
        # the database work of a write.
        async with (await self._pool("writes")).acquire() as driver, driver.transaction():
            now: dt.datetime = await driver.fetchval(_LOCK_AND_NOW.sql, *_LOCK_AND_NOW.arguments(id=thing_id), column=1)
            row = await driver.fetchrow(_CURRENT.sql, *_CURRENT.arguments(id=thing_id, now=now))
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
            document_text = candidate.document_text or msgspec.json.encode(candidate.document).decode()
            if current is None:
                change_type, diff_text = THING_CREATED, document_text
            else:
                change_type = THING_UPDATED
                diff = json_merge_patch.create_patch(current.document(), candidate.document)
                diff["id"] = thing_id
                diff_text = msgspec.json.encode(diff).decode()
            expires = candidate.expires_at(now)
            created_at = now if current is None else current.created
            anonymous = anonymous if current is None else current.anonymous
            parameters = {
                "id": thing_id,
                "type": change_type,
                "diff": diff_text,
                "now": now,
                "document_text": document_text,
                "anonymous": anonymous,
                "created": created_at,
                "expires": expires,
                "ttl": candidate.ttl,
            }
            seq = int(await driver.fetchval(_WRITE.sql, *_WRITE.arguments(**parameters)))
            stored = StoredDescription(thing_id, document_text, anonymous, created_at, now, expires, candidate.ttl, seq)
            for projection in candidate.projections:
                await projection.store(driver, stored)
        return SaveResult(created=current is None, stored=stored)

    async def delete(self, thing_id: str, *, if_match: str | None = None) -> None:
        async with (await self._pool("writes")).acquire() as driver, driver.transaction():
            now: dt.datetime = await driver.fetchval(_LOCK_AND_NOW.sql, *_LOCK_AND_NOW.arguments(id=thing_id), column=1)
            row = await driver.fetchrow(_CURRENT.sql, *_CURRENT.arguments(id=thing_id, now=now))
            if row is None:
                raise NotFound(f"No Thing Description with id {thing_id!r}")
            current = _stored(row)
            if if_match is not None and not etag_matches(if_match, current.etag):
                raise PreconditionFailed(
                    "If-Match does not match the current version of the description",
                    headers={"ETag": current.etag},
                )
            await driver.fetchval(_DELETE.sql, *_DELETE.arguments(id=thing_id, now=now))

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
