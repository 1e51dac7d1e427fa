"""Reading the change log (``changes``): what the event streams and other change consumers are fed from."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from sqlalchemy import BigInteger, Text, bindparam, cast, func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from registry.store.statements import DriverStatement, driver_connection
from registry.store.tables import changes, descriptions
from registry.store.things import THING_CREATED


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """One committed write: ``diff`` is the full document on create, a merge patch (with ``id``) on update."""

    seq: int
    thing_id: str
    type: str
    #: ``diff`` as JSON: most changes are read by consumers that never look at it (e.g. no event subscriber).
    diff_text: str | None
    at: dt.datetime
    #: Lifetime of the description if it still is at this revision (for the enriched TD of a create event).
    ttl: float | None = None
    expires: dt.datetime | None = None

    @property
    def diff(self) -> dict[str, Any] | None:
        """Decoded on each access: callers that need it read it once."""
        return None if self.diff_text is None else msgspec.json.decode(self.diff_text)


#: Sequence numbers are bigint: the bound of an unbounded page.
_LAST_SEQ = 2**63 - 1

_PAGE = DriverStatement.of(
    select(
        changes.c.seq,
        changes.c.thing_id,
        changes.c.type,
        cast(changes.c.diff, Text),
        changes.c.at,
        descriptions.c.ttl,
        descriptions.c.expires,
    )
    .select_from(
        changes.outerjoin(
            descriptions, (descriptions.c.id == changes.c.thing_id) & (descriptions.c.revision == changes.c.seq)
        )
    )
    .where(changes.c.seq > bindparam("after", type_=BigInteger), changes.c.seq <= bindparam("until", type_=BigInteger))
    .order_by(changes.c.seq)
    .limit(bindparam("limit", type_=BigInteger))
)


async def latest_seq(connection: AsyncConnection) -> int:
    return int((await connection.execute(select(func.coalesce(func.max(changes.c.seq), 0)))).scalar_one())


async def read_changes(
    connection: AsyncConnection, after: int, *, until: int | None = None, limit: int = 500
) -> list[Change]:
    """Committed changes with ``after < seq <= until`` in sequence order, at most ``limit``.

    One statement outside a transaction, precompiled and run on the driver: the change feed reads after every
    burst of writes."""
    arguments = _PAGE.arguments(after=after, until=_LAST_SEQ if until is None else until, limit=limit)
    rows = await (await driver_connection(connection)).fetch(_PAGE.sql, *arguments)
    return [Change(*row) for row in rows]


async def iterate_changes(engine: AsyncEngine, after: int, until: int, batch: int = 500) -> AsyncIterator[Change]:
    """Every change in ``(after, until]``, fetched in batches (replay for reconnecting subscribers)."""
    while after < until:
        async with engine.connect() as connection:
            page = await read_changes(connection, after, until=until, limit=batch)
        if not page:
            return
        for change in page:
            yield change
        after = page[-1].seq


async def document_history(connection: AsyncConnection, thing_id: str, seq: int) -> list[tuple[int, str, Any]]:
    """(seq, type, diff) of ``thing_id`` from its latest creation up to ``seq``: replaying them gives its document."""
    created = (
        select(func.max(changes.c.seq))
        .where(changes.c.thing_id == thing_id, changes.c.type == THING_CREATED, changes.c.seq <= seq)
        .scalar_subquery()
    )
    query = (
        select(changes.c.seq, changes.c.type, changes.c.diff)
        .where(changes.c.thing_id == thing_id, changes.c.seq >= created, changes.c.seq <= seq)
        .order_by(changes.c.seq)
    )
    return [(row.seq, row.type, row.diff) for row in (await connection.execute(query)).all()]


__all__ = ["Change", "document_history", "iterate_changes", "latest_seq", "read_changes"]
