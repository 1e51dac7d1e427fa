"""Lease renewals, the hottest write: concurrent renewals are coalesced into one UPDATE.

Agents renew often and all at once; one statement per renewal would spend most of its time in driver and
round-trip overhead. While a batch is in flight, new renewals queue up and go out together in the next one, so
an idle directory answers a renewal in one round trip and a busy one in a few, with far less work per renewal.

A renewal moves ``expires`` without a change-log entry (it is not a change of the description, and agents renew
far more often than anything changes). The same statement NOTIFYs the renewed ids on ``registry_renewals``, so
that every server process's response cache drops what it holds of them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from typing import Any

from sqlalchemy import ARRAY, Text, bindparam, case, cast, func, literal, select, update

from registry.errors import Conflict, NotFound
from registry.store.database import Database, Statement
from registry.store.tables import ID_TYPE, descriptions, live

_ONE_SECOND: Any = func.make_interval(0, 0, 0, 0, 0, 0, 1)

#: PostgreSQL NOTIFY channel of renewals: a JSON array of renewed ids, or ``*`` for "some ids, too long to name".
RENEWALS_CHANNEL = "registry_renewals"
#: A NOTIFY payload must stay under 8,000 bytes: the ids go out in parts of about this many bytes of JSON.
_PART_BYTES = 6000
_PAYLOAD_LIMIT = 7999


def _renew_and_notify() -> Any:
    renewed = (
        update(descriptions)
        .where(
            descriptions.c.id == func.any(bindparam("ids", type_=ARRAY(ID_TYPE))),
            descriptions.c.ttl.is_not(None),
            live(),
        )
        .values(expires=func.now() + descriptions.c.ttl * _ONE_SECOND, last_seen=func.now())
        .returning(descriptions.c.id, descriptions.c.ttl, descriptions.c.expires, descriptions.c.last_seen)
        .cte("renewed")
    )
    quoted = cast(func.to_json(renewed.c.id), Text)
    sized = select(
        quoted.label("quoted"),
        (func.sum(func.octet_length(quoted) + 1).over(order_by=renewed.c.id) // _PART_BYTES).label("part"),
    ).subquery("sized")
    payload = "[" + func.string_agg(sized.c.quoted, ",") + "]"
    notified = (
        select(
            func.pg_notify(
                RENEWALS_CHANNEL, case((func.octet_length(payload) <= _PAYLOAD_LIMIT, payload), else_=literal("*"))
            ).label("sent")
        )
        .group_by(sized.c.part)
        .cte("notified")
    )
    # PostgreSQL runs a SELECT in a WITH only where it is referenced: counting the notifications sends them.
    parts = select(func.count()).select_from(notified).scalar_subquery()
    return select(renewed.c.id, renewed.c.ttl, renewed.c.expires, renewed.c.last_seen, parts.label("parts"))


#: Compiled once: statement construction would otherwise cost more than the renewal itself. One statement on the
#: pool commits on its own (one round trip, no BEGIN/COMMIT), and its NOTIFYs go out with the commit.
_RENEW = Statement.of(_renew_and_notify())
_EXISTS = Statement.of(select(descriptions.c.id).where(descriptions.c.id == bindparam("id"), live()))
_LEASE_OF = Statement.of(
    select(descriptions.c.ttl, descriptions.c.expires, descriptions.c.last_seen, descriptions.c.tenant).where(
        descriptions.c.id == bindparam("id"), live()
    )
)


@dataclasses.dataclass(frozen=True, slots=True)
class LeaseState:
    """A live registration's lease as it stands: its ttl and expiry (None without a ttl), when it was last renewed
    or written (``last_seen``), and its tenant (who may read it)."""

    ttl: float | None
    expires: dt.datetime | None
    last_seen: dt.datetime
    tenant: str | None


async def lease_of(database: Database, thing_id: str) -> LeaseState | None:
    """The lease of the live description ``thing_id``; None when there is none (never registered, gone, expired)."""
    row = await database.fetchrow(_LEASE_OF, id=thing_id)
    return None if row is None else LeaseState(row[0], row[1], row[2], row[3])


@dataclasses.dataclass(frozen=True, slots=True)
class Lease:
    id: str
    ttl: float
    expires: dt.datetime
    last_seen: dt.datetime


class LeaseRenewer:
    def __init__(self, database: Database) -> None:
        self.database = database
        self._waiting: dict[str, list[asyncio.Future[Lease | None]]] = {}
        self._flusher: asyncio.Task[None] | None = None

    async def renew(self, thing_id: str) -> Lease:
        """``expires = now + ttl`` and ``last_seen = now``; no new revision and no change event."""
        future: asyncio.Future[Lease | None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(thing_id, []).append(future)
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        lease = await future
        if lease is not None:
            return lease
        if await self.database.fetchrow(_EXISTS, id=thing_id) is None:
            raise NotFound(f"No Thing Description with id {thing_id!r} (never registered, deleted or expired)")
        raise Conflict(
            f"The registration of {thing_id!r} has no ttl, so there is no lease to renew; "
            "register it with registration.ttl to use leases"
        )

    async def _flush(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, {}
                try:
                    rows = await self.database.fetch(_RENEW, ids=list(batch))
                except Exception as error:
                    _settle(batch, error=error)
                    continue
                leases = {row[0]: Lease(row[0], row[1], row[2], row[3]) for row in rows}
                _settle(batch, leases=leases)
        finally:
            self._flusher = None


def _settle(
    batch: dict[str, list[asyncio.Future[Lease | None]]],
    *,
    leases: dict[str, Lease] | None = None,
    error: BaseException | None = None,
) -> None:
    for thing_id, futures in batch.items():
        for future in futures:
            if future.done():  # the request went away
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result((leases or {}).get(thing_id))


__all__ = ["RENEWALS_CHANNEL", "Lease", "LeaseRenewer", "LeaseState", "lease_of"]
