"""Descriptions and the change log in PostgreSQL: the statements of every read and write of a description.

A write is one transaction (sequenced by :class:`registry.directory.service.DirectoryService`): lock the id, read
its current row, write the row together with its change-log entry and a NOTIFY carrying the change sequence, let
each projection store its rows, commit. So other replicas and event streams see exactly the committed changes,
in order. Writes to one id are serialised by a transaction-level advisory lock, which also covers ids that do not
exist yet.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec
from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    Text,
    any_,
    bindparam,
    cast,
    delete,
    func,
    insert,
    literal_column,
    null,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from registry.store.database import Database, Executor, Record, Statement, Transaction
from registry.store.tables import changes, descriptions, id_claims, live, of_tenant
from registry.tenancy import EVERYTHING, Holder, TenantScope

#: PostgreSQL NOTIFY channel; the payload is the highest change sequence of the committed transaction.
CHANGES_CHANNEL = "registry_changes"

THING_CREATED = "thing_created"
THING_UPDATED = "thing_updated"
THING_DELETED = "thing_deleted"
#: An admin gave a description to another owner (the document does not change).
THING_TRANSFERRED = "thing_transferred"


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
    #: Owner name that may change it (None: registered with authentication off) and its tenant (None: shared).
    owner: str | None = None
    tenant: str | None = None

    @property
    def etag(self) -> str:
        return f'"{self.revision}"'

    def document(self) -> dict[str, Any]:
        result: dict[str, Any] = msgspec.json.decode(self.document_text)
        return result


@dataclasses.dataclass(frozen=True, slots=True)
class Write:
    """What a write stores: the row of the description and its change-log entry."""

    thing_id: str
    change_type: str
    #: The full document on create, the merge patch (with ``id``) on update, as JSON.
    diff_text: str
    document_text: str
    anonymous: bool
    created: dt.datetime
    expires: dt.datetime | None
    ttl: float | None
    owner: str | None = None
    tenant: str | None = None
    #: Identity of the principal making the write (audit); None with authentication off.
    actor: str | None = None
    #: The owner holds the id rightfully (registry/auth/ownership.py, ``Grant.rightful``).
    rightful: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Held:
    """What a write finds at its ids: the live descriptions, who holds each id that is held (live, or expired
    less than the grace ago, or a tombstone of one purged), and the ids whose tombstone it found."""

    currents: dict[str, StoredDescription]
    holders: dict[str, Holder]
    tombstones: set[str]


_COLUMNS = (
    descriptions.c.id,
    descriptions.c.document_text,
    descriptions.c.anonymous,
    descriptions.c.created,
    descriptions.c.modified,
    descriptions.c.expires,
    descriptions.c.ttl,
    descriptions.c.revision,
    descriptions.c.owner,
    descriptions.c.tenant,
)
_TIMESTAMP = DateTime(timezone=True)


def _stored(row: Record) -> StoredDescription:
    return StoredDescription(*row)


_GET = Statement.of(select(*_COLUMNS).where(descriptions.c.id == bindparam("id"), live()))

_IDS = bindparam("ids", type_=ARRAY(Text))


def _lock_statement() -> Any:
    """Serialises writes to each id (also ids that do not exist yet), locked in the order given, and reads the
    transaction time: one round trip for a whole batch."""
    ids = func.unnest(_IDS).table_valued("id").render_derived()
    return select(func.now(), func.count(func.pg_advisory_xact_lock(func.hashtextextended(ids.c.id, 0)))).select_from(
        ids
    )


_LOCK_AND_NOW = Statement.of(_lock_statement())
_CURRENT = Statement.of(
    select(*_COLUMNS).where(descriptions.c.id == any_(_IDS), live(bindparam("now", type_=_TIMESTAMP)))
)


def _write_statement() -> Any:
    """Change-log row, description upsert and NOTIFY in one statement; returns the change sequence.

    The JSON arrives as text (encoded once, by the caller) and is stored as text: it is what GET serves.
    """
    change = (
        insert(changes)
        .values(
            thing_id=bindparam("id"),
            type=bindparam("type"),
            diff=cast(bindparam("diff", type_=Text), JSONB),
            at=bindparam("now", type_=_TIMESTAMP),
            actor=bindparam("actor", type_=Text),
            tenant=bindparam("tenant", type_=Text),
        )
        .returning(changes.c.seq)
        .cte("change")
    )
    row = select(
        bindparam("id").label("id"),
        bindparam("document_text", type_=Text).label("document_text"),
        bindparam("anonymous", type_=Boolean).label("anonymous"),
        bindparam("created", type_=_TIMESTAMP).label("created"),
        bindparam("now", type_=_TIMESTAMP).label("modified"),
        bindparam("expires", type_=_TIMESTAMP).label("expires"),
        bindparam("ttl", type_=Float).label("ttl"),
        bindparam("now", type_=_TIMESTAMP).label("last_seen"),
        change.c.seq.label("revision"),
        bindparam("owner", type_=Text).label("owner"),
        bindparam("tenant", type_=Text).label("tenant"),
        bindparam("rightful", type_=Boolean).label("rightful"),
    )
    columns = [column.name for column in row.selected_columns]
    upsert = pg_insert(descriptions).from_select(columns, row)
    upsert = upsert.on_conflict_do_update(
        index_elements=[descriptions.c.id],
        set_={name: upsert.excluded[name] for name in columns if name != "id"},
    )
    return select(change.c.seq, func.pg_notify(CHANGES_CHANNEL, cast(change.c.seq, Text))).add_cte(upsert.cte("upsert"))


_WRITE = Statement.of(_write_statement())


def _delete_statement() -> Any:
    """Description delete, ``thing_deleted`` change-log row (no diff) and NOTIFY in one statement."""
    gone = delete(descriptions).where(descriptions.c.id == bindparam("id"))
    change = (
        insert(changes)
        .values(
            thing_id=bindparam("id"),
            type=THING_DELETED,
            diff=null(),
            at=bindparam("now", type_=_TIMESTAMP),
            actor=bindparam("actor", type_=Text),
            tenant=bindparam("tenant", type_=Text),
        )
        .returning(changes.c.seq)
        .cte("change")
    )
    return select(change.c.seq, func.pg_notify(CHANGES_CHANNEL, cast(change.c.seq, Text))).add_cte(gone.cte("gone"))


_DELETE = Statement.of(_delete_statement())


_SECONDS: Any = func.make_interval(0, 0, 0, 0, 0, 0, bindparam("grace", type_=Float))


#: The ``diff`` of a purge's ``thing_deleted`` change: the description went because its lease ran out, not because
#: a principal deleted it (whose delete has no diff).
EXPIRED = "expired"
_EXPIRED_DIFF: Any = literal_column(f"""'{{"reason": "{EXPIRED}"}}'::jsonb""")


def _purge_statement() -> Any:
    """Expired descriptions deleted with one ``thing_deleted`` change each and one NOTIFY; returns their ids. Each
    leaves a tombstone holding its id for its owner until ``grace`` seconds after it expired.

    Safe to run on every replica at once: a row is deleted (and so announced) by one transaction only.
    """
    gone = (
        delete(descriptions)
        .where(descriptions.c.expires <= func.now())
        .returning(
            descriptions.c.id,
            descriptions.c.tenant,
            descriptions.c.owner,
            descriptions.c.rightful,
            descriptions.c.expires,
        )
        .cte("gone")
    )
    claimed = pg_insert(id_claims).from_select(
        ["thing_id", "owner", "tenant", "rightful", "until"],
        select(gone.c.id, gone.c.owner, gone.c.tenant, gone.c.rightful, gone.c.expires + _SECONDS).where(
            gone.c.expires + _SECONDS > func.now()
        ),
    )
    claimed = claimed.on_conflict_do_update(
        index_elements=[id_claims.c.thing_id],
        set_={name: claimed.excluded[name] for name in ("owner", "tenant", "rightful", "until")},
    )
    logged = (
        insert(changes)
        .from_select(
            ["thing_id", "type", "diff", "at", "tenant"],
            select(gone.c.id, bindparam("type", THING_DELETED, type_=Text), _EXPIRED_DIFF, func.now(), gone.c.tenant),
        )
        .returning(changes.c.seq, changes.c.thing_id)
        .cte("logged")
    )
    highest = select(func.max(logged.c.seq)).scalar_subquery()
    return (
        select(logged.c.thing_id, func.pg_notify(CHANGES_CHANNEL, cast(highest, Text)).label("notified"))
        .add_cte(claimed.cte("claimed"))
        .order_by(logged.c.seq)
    )


_FORGET_LAPSED_CLAIMS = Statement.of(delete(id_claims).where(id_claims.c.until <= func.now()))
_DROP_CLAIMS = Statement.of(delete(id_claims).where(id_claims.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text)))))


def _held_statement() -> Any:
    """Every row of ``ids`` (live or expired, not yet purged), then the tombstones still holding any of them: an
    index probe into each table, cheaper than joining the ids with both."""
    described = select(
        descriptions.c.id.label("wanted"),
        *_COLUMNS,
        descriptions.c.rightful,
        cast(null(), Text).label("claim_owner"),
        cast(null(), Text).label("claim_tenant"),
        cast(null(), Boolean).label("claim_rightful"),
        cast(null(), _TIMESTAMP).label("claim_until"),
    ).where(descriptions.c.id == any_(_IDS))
    claimed = select(
        id_claims.c.thing_id,
        *[null() for _ in range(len(_COLUMNS) + 1)],
        id_claims.c.owner,
        id_claims.c.tenant,
        id_claims.c.rightful,
        id_claims.c.until,
    ).where(id_claims.c.thing_id == any_(_IDS), id_claims.c.until > bindparam("now", type_=_TIMESTAMP))
    return union_all(described, claimed)


_HELD = Statement.of(_held_statement())


_PURGE = Statement.of(_purge_statement())
_COUNT = Statement.of(select(func.count()).select_from(descriptions).where(live()))
_LATEST_SEQ = Statement.of(select(func.coalesce(func.max(changes.c.seq), 0)))
_LISTING = Statement.of(
    select(*_COLUMNS)
    .where(live())
    .order_by(descriptions.c.id)
    .offset(bindparam("offset", type_=BigInteger))
    .limit(bindparam("limit", type_=BigInteger))
)
_EXISTS_AT = Statement.of(
    select(descriptions.c.id)
    .where(live())
    .order_by(descriptions.c.id)
    .offset(bindparam("offset", type_=BigInteger))
    .limit(1)
)
_OWNED_BY = descriptions.c.owner == bindparam("owner", type_=Text)
_COUNT_OWNED_IN_TENANT = Statement.of(
    select(func.count())
    .select_from(descriptions)
    .where(_OWNED_BY, descriptions.c.tenant == bindparam("tenant", type_=Text), live())
)
_COUNT_OWNED_SHARED = Statement.of(
    select(func.count()).select_from(descriptions).where(_OWNED_BY, descriptions.c.tenant.is_(None), live())
)
_OWNER = Statement.of(
    select(descriptions.c.owner, descriptions.c.tenant).where(descriptions.c.id == bindparam("id"), live())
)


def _transfer_statement() -> Any:
    """New owner, ``thing_transferred`` change-log row ({id, from, to}) and NOTIFY in one statement; no new
    revision (the document, and so its ETag, does not change)."""
    new_owner = bindparam("owner", type_=Text)
    # An admin's decision: the new owner holds the id as firmly as a rightful party.
    moved = update(descriptions).where(descriptions.c.id == bindparam("id")).values(owner=new_owner, rightful=true())
    change = (
        insert(changes)
        .values(
            thing_id=bindparam("id"),
            type=THING_TRANSFERRED,
            diff=func.jsonb_build_object(
                "id", bindparam("id", type_=Text), "from", bindparam("previous_owner", type_=Text), "to", new_owner
            ),
            at=bindparam("now", type_=_TIMESTAMP),
            actor=bindparam("actor", type_=Text),
            tenant=bindparam("tenant", type_=Text),
        )
        .returning(changes.c.seq)
        .cte("change")
    )
    return select(change.c.seq, func.pg_notify(CHANGES_CHANNEL, cast(change.c.seq, Text))).add_cte(moved.cte("moved"))


_TRANSFER = Statement.of(_transfer_statement())
#: A page of live descriptions after an id (keyset), for scans.
_AFTER = descriptions.c.id > bindparam("after", type_=Text)
_DOCUMENTS = Statement.of(
    select(descriptions.c.id, descriptions.c.document_text)
    .where(live(), _AFTER)
    .order_by(descriptions.c.id)
    .limit(bindparam("limit", type_=BigInteger))
)

#: The same reads for a reader of one tenant: the shared descriptions (no tenant) and that tenant's.
_OF_TENANT = of_tenant(descriptions.c.tenant, bindparam("tenant", type_=Text))
_COUNT_OF_TENANT = Statement.of(select(func.count()).select_from(descriptions).where(live(), _OF_TENANT))
_LISTING_OF_TENANT = Statement.of(
    select(*_COLUMNS)
    .where(live(), _OF_TENANT)
    .order_by(descriptions.c.id)
    .offset(bindparam("offset", type_=BigInteger))
    .limit(bindparam("limit", type_=BigInteger))
)
_EXISTS_AT_OF_TENANT = Statement.of(
    select(descriptions.c.id)
    .where(live(), _OF_TENANT)
    .order_by(descriptions.c.id)
    .offset(bindparam("offset", type_=BigInteger))
    .limit(1)
)
_DOCUMENTS_OF_TENANT = Statement.of(
    select(descriptions.c.id, descriptions.c.document_text)
    .where(live(), _OF_TENANT, _AFTER)
    .order_by(descriptions.c.id)
    .limit(bindparam("limit", type_=BigInteger))
)

#: The bigint bound of an unbounded page.
_NO_LIMIT = 2**63 - 1


class ThingStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    # -- reads

    async def get(self, thing_id: str) -> StoredDescription | None:
        """The hot read: one round trip with a prepared statement."""
        row = await self.database.fetchrow(_GET, id=thing_id)
        return None if row is None else _stored(row)

    async def count(self, readers: TenantScope = EVERYTHING) -> int:
        if readers.everything:
            return int(await self.database.fetchval(_COUNT))
        return int(await self.database.fetchval(_COUNT_OF_TENANT, tenant=readers.tenant))

    async def exists_at(self, offset: int, readers: TenantScope = EVERYTHING) -> bool:
        """Whether a live description is at ``offset`` in the listing: a page's "next" link without counting all
        descriptions (the index on id is walked up to there, the table is not counted)."""
        if readers.everything:
            return await self.database.fetchval(_EXISTS_AT, offset=offset) is not None
        return await self.database.fetchval(_EXISTS_AT_OF_TENANT, offset=offset, tenant=readers.tenant) is not None

    async def latest_seq(self) -> int:
        """Sequence of the latest change: any write changes it, so it serves as the listing's etag."""
        return int(await self.database.fetchval(_LATEST_SEQ))

    async def stream(
        self, *, offset: int = 0, limit: int | None = None, readers: TenantScope = EVERYTHING
    ) -> AsyncIterator[StoredDescription]:
        """Live descriptions ``readers`` may see, in code-point order of id, through a server-side cursor."""
        page = {"offset": offset, "limit": _NO_LIMIT if limit is None else limit}
        rows = (
            self.database.stream(_LISTING, **page)
            if readers.everything
            else self.database.stream(_LISTING_OF_TENANT, **page, tenant=readers.tenant)
        )
        async for row in rows:
            yield _stored(row)

    async def owner(self, thing_id: str) -> tuple[str | None, str | None] | None:
        """(owner, tenant) of a live description, None if there is none."""
        row = await self.database.fetchrow(_OWNER, id=thing_id)
        return None if row is None else (row[0], row[1])

    async def ids(self, readers: TenantScope = EVERYTHING) -> AsyncIterator[str]:
        """The ids of the live descriptions ``readers`` may see."""
        query = select(descriptions.c.id).where(live())
        if not readers.everything:
            query = query.where(_OF_TENANT)
        async for row in self.database.stream(query, batch=2000, tenant=readers.tenant):
            yield row[0]

    async def documents(self, readers: TenantScope = EVERYTHING, *, page: int = 500) -> AsyncIterator[str]:
        """The JSON of every live description ``readers`` may see, in id order, for search engines that scan.

        Read ``page`` at a time by keyset on id, each page its own short statement: a scan as slow as its
        consumer holds no connection between pages (a cursor would hold one, and a transaction, for as long), and
        never the whole directory. A description written during the scan is seen if its page is read after (on the
        read replica, when one serves: a scan tolerates its lag)."""
        after = ""
        while True:
            rows = (
                await self.database.fetch_for_search(_DOCUMENTS, after=after, limit=page)
                if readers.everything
                else await self.database.fetch_for_search(
                    _DOCUMENTS_OF_TENANT, after=after, limit=page, tenant=readers.tenant
                )
            )
            for row in rows:
                yield row[1]
            if len(rows) < page:
                return
            after = rows[-1][0]

    # -- steps of a write, inside its transaction

    @staticmethod
    async def lock(tx: Transaction, thing_ids: Sequence[str]) -> dt.datetime:
        """Serialise writes to each of ``thing_ids``; returns the transaction's time. Locked in sorted order, so
        that two transactions locking several ids never wait for each other in a cycle."""
        now: dt.datetime = await tx.fetchval(_LOCK_AND_NOW, ids=sorted(set(thing_ids)))
        return now

    @staticmethod
    async def current(tx: Executor, thing_ids: Sequence[str], now: dt.datetime) -> dict[str, StoredDescription]:
        """The live descriptions among ``thing_ids``, by id."""
        return {row["id"]: _stored(row) for row in await tx.fetch(_CURRENT, ids=list(thing_ids), now=now)}

    @staticmethod
    async def held(tx: Executor, thing_ids: Sequence[str], now: dt.datetime, grace: dt.timedelta) -> Held:
        """The live descriptions among ``thing_ids`` and who holds each id: the owner of its live description, of
        its registration expired less than ``grace`` ago, or of such a one's tombstone."""
        currents: dict[str, StoredDescription] = {}
        #: Who holds each id by its row, and by its tombstone (a row, even one expired, comes first).
        by_row: dict[str, Holder] = {}
        by_tombstone: dict[str, Holder] = {}
        for row in await tx.fetch(_HELD, ids=list(thing_ids), now=now):
            thing_id = row["wanted"]
            if row["claim_until"] is not None:
                by_tombstone[thing_id] = Holder(
                    row["claim_owner"], row["claim_tenant"], row["claim_rightful"], row["claim_until"]
                )
                continue
            stored = StoredDescription(*row[1 : 1 + len(_COLUMNS)])
            if stored.expires is None or stored.expires > now:
                currents[thing_id] = stored
                by_row[thing_id] = Holder(stored.owner, stored.tenant, row["rightful"])
            elif stored.expires + grace > now:
                by_row[thing_id] = Holder(stored.owner, stored.tenant, row["rightful"], stored.expires + grace)
        holders = {**by_tombstone, **by_row}
        tombstones = set(by_tombstone)
        return Held(currents, holders, tombstones)

    @staticmethod
    async def drop_claims(tx: Transaction, thing_ids: Sequence[str]) -> None:
        """Forget the tombstones of ``thing_ids`` (registered again)."""
        await tx.execute(_DROP_CLAIMS, ids=list(thing_ids))

    @staticmethod
    async def write(tx: Transaction, writes: Sequence[Write], now: dt.datetime) -> list[StoredDescription]:
        """Each write's row and change, in one round trip; the stored descriptions in the order of ``writes``."""
        rows = await tx.fetchmany(
            _WRITE,
            [
                {
                    "id": write.thing_id,
                    "type": write.change_type,
                    "diff": write.diff_text,
                    "now": now,
                    "document_text": write.document_text,
                    "anonymous": write.anonymous,
                    "created": write.created,
                    "expires": write.expires,
                    "ttl": write.ttl,
                    "owner": write.owner,
                    "tenant": write.tenant,
                    "actor": write.actor,
                    "rightful": write.rightful,
                }
                for write in writes
            ],
        )
        return [
            StoredDescription(
                write.thing_id,
                write.document_text,
                write.anonymous,
                write.created,
                now,
                write.expires,
                write.ttl,
                int(row[0]),
                write.owner,
                write.tenant,
            )
            for write, row in zip(writes, rows, strict=True)
        ]

    @staticmethod
    async def delete(tx: Transaction, current: StoredDescription, now: dt.datetime, actor: str | None = None) -> int:
        """Delete with its ``thing_deleted`` change (made by ``actor``); returns the change sequence."""
        return int(await tx.fetchval(_DELETE, id=current.id, now=now, actor=actor, tenant=current.tenant))

    @staticmethod
    async def count_owned(tx: Executor, owner: str, tenant: str | None) -> int:
        """The live descriptions of the owner identity ``owner`` in ``tenant`` (an index scan either way)."""
        if tenant is None:
            return int(await tx.fetchval(_COUNT_OWNED_SHARED, owner=owner))
        return int(await tx.fetchval(_COUNT_OWNED_IN_TENANT, owner=owner, tenant=tenant))

    @staticmethod
    async def transfer(
        tx: Transaction, current: StoredDescription, owner: str, now: dt.datetime, actor: str | None = None
    ) -> int:
        """Give the description to ``owner``, logged as a ``thing_transferred`` change made by ``actor``; returns
        the change sequence (no new revision: the document does not change)."""
        return int(
            await tx.fetchval(
                _TRANSFER,
                id=current.id,
                owner=owner,
                previous_owner=current.owner,
                now=now,
                actor=actor,
                tenant=current.tenant,
            )
        )

    @staticmethod
    async def purge_expired(tx: Transaction, grace: dt.timedelta) -> list[str]:
        """Delete every expired description with one ``thing_deleted`` change each, leaving a tombstone that holds
        its id for its owner until ``grace`` after it expired, and forget the tombstones past theirs; returns the
        ids of the descriptions purged."""
        purged = [row[0] for row in await tx.fetch(_PURGE, grace=grace.total_seconds())]
        await tx.execute(_FORGET_LAPSED_CLAIMS)
        return purged


__all__ = [
    "CHANGES_CHANNEL",
    "EXPIRED",
    "THING_CREATED",
    "THING_DELETED",
    "THING_TRANSFERRED",
    "THING_UPDATED",
    "Held",
    "StoredDescription",
    "ThingStore",
    "Write",
]
