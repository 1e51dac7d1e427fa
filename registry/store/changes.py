"""Reading the change log (``changes``): what the change feed, event replay and document history are built on."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec
from sqlalchemy import BigInteger, Text, any_, bindparam, cast, func, null, select, text
from sqlalchemy.dialects.postgresql import ARRAY

from registry.store.database import Executor, Statement
from registry.store.tables import changes, descriptions
from registry.store.things import THING_CREATED


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """One committed write: ``diff`` is the full document on create, a merge patch (with ``id``) on update,
    ``{id, from, to}`` (the owners) on a transfer."""

    seq: int
    thing_id: str
    type: str
    #: ``diff`` as JSON: most changes are read by consumers that never look at it (e.g. no event subscriber).
    diff_text: str | None
    at: dt.datetime
    #: Lifetime of the description if it still is at this revision (for the enriched TD of a create event).
    ttl: float | None = None
    expires: dt.datetime | None = None
    #: Name of the principal that made the change (audit); None with authentication off and for purges.
    actor: str | None = None
    #: Tenant of the description (None: shared): who may see the change (registry/auth/tenancy.py).
    tenant: str | None = None
    #: The SSE event id when it is more than ``seq``: the change was delivered while earlier sequences were pending
    #: (registry/events/positions.py). Set by the change feed, not read from the log.
    event_id: str | None = None

    @property
    def diff(self) -> dict[str, Any] | None:
        """Decoded on each access: callers that need it read it once."""
        return None if self.diff_text is None else msgspec.json.decode(self.diff_text)


#: Sequence numbers are bigint: the bound of an unbounded page.
LAST_SEQ = 2**63 - 1

_CHANGE_COLUMNS = (
    changes.c.seq,
    changes.c.thing_id,
    changes.c.type,
    cast(changes.c.diff, Text),
    changes.c.at,
    descriptions.c.ttl,
    descriptions.c.expires,
    changes.c.actor,
    changes.c.tenant,
)
_WITH_LIFETIME = changes.outerjoin(
    descriptions, (descriptions.c.id == changes.c.thing_id) & (descriptions.c.revision == changes.c.seq)
)


#: Changes after a position and up to a bound, in order: run by every change feed after every burst of writes,
#: so kept simple to plan. (With the sequences missing at an earlier read in the same statement, planning it costs
#: more than running it, a large share of PostgreSQL's work for a registration under a write load;
#: bench/bench_things.py.) The range is an index range either way, with the values or without.
_RANGE = Statement.of(
    select(*_CHANGE_COLUMNS)
    .select_from(_WITH_LIFETIME)
    .where(changes.c.seq > bindparam("after", type_=BigInteger), changes.c.seq <= bindparam("until", type_=BigInteger))
    .order_by(changes.c.seq)
    .limit(bindparam("limit", type_=BigInteger))
)
#: Changes of sequences that were missing (not yet committed) at an earlier read: rare, so read apart.
_MISSING = Statement.of(
    select(*_CHANGE_COLUMNS)
    .select_from(_WITH_LIFETIME)
    .where(changes.c.seq == any_(bindparam("missing", type_=ARRAY(BigInteger))))
)
#: The columns of a change without its diff and its description's lifetime (NULL in their place): what a consumer
#: that needs only which descriptions changed reads (the SPARQL indexes). The diff of a creation is the whole
#: document: casting it to text and sending it took a share of PostgreSQL's and the reader's CPU per write.
_ID_COLUMNS = (
    changes.c.seq,
    changes.c.thing_id,
    changes.c.type,
    null().label("diff"),
    changes.c.at,
    null().label("ttl"),
    null().label("expires"),
    changes.c.actor,
    changes.c.tenant,
)
_RANGE_IDS = Statement.of(
    select(*_ID_COLUMNS)
    .where(changes.c.seq > bindparam("after", type_=BigInteger), changes.c.seq <= bindparam("until", type_=BigInteger))
    .order_by(changes.c.seq)
    .limit(bindparam("limit", type_=BigInteger))
)
_MISSING_IDS = Statement.of(
    select(*_ID_COLUMNS).where(changes.c.seq == any_(bindparam("missing", type_=ARRAY(BigInteger))))
)
_LATEST = Statement.of(select(func.coalesce(func.max(changes.c.seq), 0)))
#: (oldest running transaction id, first unassigned one) of the whole cluster, as bigints.
_HORIZON = Statement.of(
    text("SELECT pg_snapshot_xmin(s)::text::bigint, pg_snapshot_xmax(s)::text::bigint FROM pg_current_snapshot() AS s")
)
_SEQUENCES = Statement.of(
    select(changes.c.seq).where(
        changes.c.seq > bindparam("after", type_=BigInteger), changes.c.seq <= bindparam("until", type_=BigInteger)
    )
)


async def latest_seq(executor: Executor) -> int:
    return int(await executor.fetchval(_LATEST))


async def transaction_horizon(executor: Executor) -> tuple[int, int]:
    """(the oldest transaction id still running, the first not yet assigned): every transaction with an id below
    the first has ended; every one running now has an id below the second."""
    row = await executor.fetchrow(_HORIZON)
    assert row is not None
    return int(row[0]), int(row[1])


async def sequences_after(executor: Executor, after: int, until: int) -> list[int]:
    """The committed sequences in ``(after, until]``."""
    return [row[0] for row in await executor.fetch(_SEQUENCES, after=after, until=until)]


async def read_changes(
    executor: Executor,
    after: int,
    *,
    until: int = LAST_SEQ,
    limit: int = 500,
    missing: Sequence[int] = (),
    diffs: bool = True,
) -> list[Change]:
    """Committed changes with ``after < seq <= until``, and those of ``missing`` sequences, in sequence order: at
    most ``limit``. Without ``diffs``, each change's diff, ttl and expires are None (not read)."""
    in_range, of_missing = (_RANGE, _MISSING) if diffs else (_RANGE_IDS, _MISSING_IDS)
    rows = list(await executor.fetch(in_range, after=after, until=until, limit=limit))
    outside = [seq for seq in missing if not after < seq <= until]
    if outside:
        rows += await executor.fetch(of_missing, missing=outside)
        rows.sort(key=lambda row: int(row[0]))
    return [Change(*row) for row in rows[:limit]]


async def iterate_changes(executor: Executor, after: int, until: int, batch: int = 500) -> AsyncIterator[Change]:
    """Every change in ``(after, until]``, fetched in batches (replay for reconnecting subscribers)."""
    while after < until:
        page = await read_changes(executor, after, until=until, limit=batch)
        if not page:
            return
        for change in page:
            yield change
        after = page[-1].seq


_LAST_TENANT = Statement.of(
    select(changes.c.tenant)
    .where(changes.c.thing_id == bindparam("id", type_=Text))
    .order_by(changes.c.seq.desc())
    .limit(1)
)


async def last_tenant(executor: Executor, thing_id: str) -> str | None:
    """The tenant of the latest change of ``thing_id``: its description's, also once deleted (what its kept
    versions belong to); None when shared or never written."""
    tenant: str | None = await executor.fetchval(_LAST_TENANT, id=thing_id)
    return tenant


async def document_history(executor: Executor, thing_id: str, seq: int) -> list[tuple[int, str, Any]]:
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
    return [(row[0], row[1], row[2]) for row in await executor.fetch(query)]


__all__ = [
    "LAST_SEQ",
    "Change",
    "document_history",
    "iterate_changes",
    "last_tenant",
    "latest_seq",
    "read_changes",
    "sequences_after",
    "transaction_horizon",
]
