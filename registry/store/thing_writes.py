"""The statements of a write of descriptions, each a step inside the write's transaction: lock the ids, read what
they hold, write the rows with their change-log entries and a NOTIFY (sequenced by
:class:`registry.directory.write_steps.WriteSteps`); delete, transfer, purge the expired (sequenced by
:class:`registry.directory.service.DirectoryService`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Boolean,
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

from registry.store.database import Executor, Statement, Transaction
from registry.store.tables import changes, descriptions, id_claims, live
from registry.store.thing_rows import (
    CHANGES_CHANNEL,
    COLUMNS,
    THING_DELETED,
    THING_TRANSFERRED,
    TIMESTAMP,
    Held,
    StoredDescription,
    Write,
    stored_from,
)
from registry.tenancy import Holder

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
    select(*COLUMNS).where(descriptions.c.id == any_(_IDS), live(bindparam("now", type_=TIMESTAMP)))
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
            at=bindparam("now", type_=TIMESTAMP),
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
        bindparam("created", type_=TIMESTAMP).label("created"),
        bindparam("now", type_=TIMESTAMP).label("modified"),
        bindparam("expires", type_=TIMESTAMP).label("expires"),
        bindparam("ttl", type_=Float).label("ttl"),
        bindparam("now", type_=TIMESTAMP).label("last_seen"),
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
            at=bindparam("now", type_=TIMESTAMP),
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
        *COLUMNS,
        descriptions.c.rightful,
        cast(null(), Text).label("claim_owner"),
        cast(null(), Text).label("claim_tenant"),
        cast(null(), Boolean).label("claim_rightful"),
        cast(null(), TIMESTAMP).label("claim_until"),
    ).where(descriptions.c.id == any_(_IDS))
    claimed = select(
        id_claims.c.thing_id,
        *[null() for _ in range(len(COLUMNS) + 1)],
        id_claims.c.owner,
        id_claims.c.tenant,
        id_claims.c.rightful,
        id_claims.c.until,
    ).where(id_claims.c.thing_id == any_(_IDS), id_claims.c.until > bindparam("now", type_=TIMESTAMP))
    return union_all(described, claimed)


_HELD = Statement.of(_held_statement())


_PURGE = Statement.of(_purge_statement())
_OWNED_BY = descriptions.c.owner == bindparam("owner", type_=Text)
_COUNT_OWNED_IN_TENANT = Statement.of(
    select(func.count())
    .select_from(descriptions)
    .where(_OWNED_BY, descriptions.c.tenant == bindparam("tenant", type_=Text), live())
)
_COUNT_OWNED_SHARED = Statement.of(
    select(func.count()).select_from(descriptions).where(_OWNED_BY, descriptions.c.tenant.is_(None), live())
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
            at=bindparam("now", type_=TIMESTAMP),
            actor=bindparam("actor", type_=Text),
            tenant=bindparam("tenant", type_=Text),
        )
        .returning(changes.c.seq)
        .cte("change")
    )
    return select(change.c.seq, func.pg_notify(CHANGES_CHANNEL, cast(change.c.seq, Text))).add_cte(moved.cte("moved"))


_TRANSFER = Statement.of(_transfer_statement())


class ThingWrites:
    """The steps of a write, inside its transaction (:class:`registry.store.things.ThingStore` has them too)."""

    @staticmethod
    async def lock(tx: Transaction, thing_ids: Sequence[str]) -> dt.datetime:
        """Serialise writes to each of ``thing_ids``; returns the transaction's time. Locked in sorted order, so
        that two transactions locking several ids never wait for each other in a cycle."""
        now: dt.datetime = await tx.fetchval(_LOCK_AND_NOW, ids=sorted(set(thing_ids)))
        return now

    @staticmethod
    async def current(tx: Executor, thing_ids: Sequence[str], now: dt.datetime) -> dict[str, StoredDescription]:
        """The live descriptions among ``thing_ids``, by id."""
        return {row["id"]: stored_from(row) for row in await tx.fetch(_CURRENT, ids=list(thing_ids), now=now)}

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
            stored = StoredDescription(*row[1 : 1 + len(COLUMNS)])
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


__all__ = ["EXPIRED", "ThingWrites"]
