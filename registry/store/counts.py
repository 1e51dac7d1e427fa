"""Exact counts of the live descriptions that cost a few rows, not a pass over the catalogue.

Triggers (migration 0022_description_counts) append signed deltas to ``description_counts`` in the transaction of
every write statement of ``descriptions`` (keyed by tenant) and ``thing_summaries`` (keyed by kind); their sum is
the number of rows. The live descriptions are those rows less the expired ones not purged yet (the ``live()``
rule), a range of the partial index on ``expires``. A count is one statement, or a statement of the reader's
transaction, so the deltas and the expired rows are read in the snapshot of the rows they count.

:func:`compact` folds the deltas into one row per key; a periodic job runs it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Text, bindparam, delete, func, insert, literal_column, select

from registry.store.database import Executor, Statement
from registry.store.tables import (
    DESCRIPTIONS_OF_TENANT,
    description_counts,
    descriptions,
    live,
    of_tenant,
    thing_summaries,
)
from registry.tenancy import EVERYTHING, TenantScope

_ROWS = description_counts.c.kind.is_(None)
_SUMMARIES = description_counts.c.kind.is_not(None)
_EXPIRED = ~live()


def _sum() -> Any:
    return func.coalesce(func.sum(description_counts.c.delta), literal_column("0"))


#: The live descriptions: the rows the deltas count less the expired ones.
COUNT = Statement.of(
    select(
        select(_sum()).where(_ROWS).scalar_subquery()
        - select(func.count()).select_from(descriptions).where(_EXPIRED).scalar_subquery()
    )
)
#: The live descriptions a reader of one tenant sees: the shared ones and its tenant's.
COUNT_OF_TENANT = Statement.of(
    select(
        select(_sum())
        .where(_ROWS, of_tenant(description_counts.c.tenant, bindparam("tenant", type_=Text)))
        .scalar_subquery()
        - select(func.count()).select_from(descriptions).where(_EXPIRED, DESCRIPTIONS_OF_TENANT).scalar_subquery()
    )
)
_KEPT = select(description_counts.c.kind, _sum().label("n")).where(_SUMMARIES).group_by(description_counts.c.kind)
_KEPT_CTE = _KEPT.cte("kept")
_EXPIRED_BY_KIND = (
    select(thing_summaries.c.kind, func.count().label("n"))
    .select_from(descriptions.join(thing_summaries, thing_summaries.c.thing_id == descriptions.c.id))
    .where(_EXPIRED)
    .group_by(thing_summaries.c.kind)
    .cte("expired")
)
_LIVE_OF_KIND = _KEPT_CTE.c.n - func.coalesce(_EXPIRED_BY_KIND.c.n, 0)
#: Live descriptions (with a summary) per kind, the kinds with none left out.
BY_KIND = Statement.of(
    select(_KEPT_CTE.c.kind, _LIVE_OF_KIND)
    .select_from(_KEPT_CTE.outerjoin(_EXPIRED_BY_KIND, _EXPIRED_BY_KIND.c.kind == _KEPT_CTE.c.kind))
    .where(_LIVE_OF_KIND > 0)
)
_FOLDED = delete(description_counts).returning(*description_counts.c).cte("folded")
#: Every delta the statement's snapshot sees, replaced by their sum per key; deltas committed meanwhile stay as
#: they are. A concurrent compaction waits for the rows this one deletes and then skips them.
_COMPACT = Statement.of(
    insert(description_counts).from_select(
        ["tenant", "kind", "delta"],
        select(_FOLDED.c.tenant, _FOLDED.c.kind, func.sum(_FOLDED.c.delta))
        .group_by(_FOLDED.c.tenant, _FOLDED.c.kind)
        .having(func.sum(_FOLDED.c.delta) != 0),
    )
)
_DELTAS = Statement.of(select(func.count()).select_from(description_counts))


async def live_count(executor: Executor, readers: TenantScope = EVERYTHING) -> int:
    """The live descriptions ``readers`` see, in ``executor``'s snapshot (a transaction's, or the statement's)."""
    if readers.everything:
        return int(await executor.fetchval(COUNT))
    return int(await executor.fetchval(COUNT_OF_TENANT, tenant=readers.tenant))


async def compact(executor: Executor) -> None:
    """Fold the deltas into one row per (tenant, kind), in one statement (one transaction)."""
    await executor.execute(_COMPACT)


async def delta_rows(executor: Executor) -> int:
    """How many delta rows a count sums (one per key right after a compaction)."""
    return int(await executor.fetchval(_DELTAS))


__all__ = ["BY_KIND", "COUNT", "COUNT_OF_TENANT", "compact", "delta_rows", "live_count"]
