"""SQL of the shared rate-limit counts: each server process adds what it counted since its last sync and reads back
the sums of every process, in one statement (registry/auth/quotas.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sqlalchemy import BigInteger, Text, bindparam, delete, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert

from registry.store.database import Database, Statement
from registry.store.tables import rate_counts


@dataclasses.dataclass(frozen=True, slots=True)
class CountDelta:
    key: str
    window_number: int
    #: Requests counted here since the last sync (0: only read the sum).
    added: int
    expires: int


def _add_statement() -> Statement:
    rows = select(
        func.unnest(bindparam("keys", type_=ARRAY(Text))).label("key"),
        func.unnest(bindparam("windows", type_=ARRAY(BigInteger))).label("window_number"),
        func.unnest(bindparam("added", type_=ARRAY(BigInteger))).label("count"),
        func.unnest(bindparam("expires", type_=ARRAY(BigInteger))).label("expires"),
    )
    inserted = pg_insert(rate_counts).from_select(["key", "window_number", "count", "expires"], rows)
    return Statement.of(
        inserted.on_conflict_do_update(
            index_elements=[rate_counts.c.key, rate_counts.c.window_number],
            set_={"count": rate_counts.c.count + inserted.excluded.count},
        ).returning(rate_counts.c.key, rate_counts.c.window_number, rate_counts.c.count)
    )


_ADD = _add_statement()
_PURGE = Statement.of(delete(rate_counts).where(rate_counts.c.expires < bindparam("now", type_=BigInteger)))


async def add_counts(database: Database, deltas: Sequence[CountDelta]) -> dict[tuple[str, int], int]:
    """Add ``deltas``; the sum over every process of each (key, window) given."""
    rows = await database.fetch(
        _ADD,
        keys=[delta.key for delta in deltas],
        windows=[delta.window_number for delta in deltas],
        added=[delta.added for delta in deltas],
        expires=[delta.expires for delta in deltas],
    )
    return {(row["key"], row["window_number"]): row["count"] for row in rows}


async def purge_counts(database: Database, now: int) -> None:
    """Forget the windows no limit reads any more (``now``: seconds since the epoch)."""
    await database.execute(_PURGE, now=now)


__all__ = ["CountDelta", "add_counts", "purge_counts"]
