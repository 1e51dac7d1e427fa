"""Descriptions and the change log in PostgreSQL: the statements of every read and write of a description.

A write is one transaction (sequenced by :class:`registry.directory.write_steps.WriteSteps`; writes that arrive
together share it): lock the id, read its current row, write the row together with its change-log entry and a
NOTIFY carrying the change sequence, let each projection store its rows, commit. So other replicas and event
streams see exactly the committed changes, in order. Writes to one id are serialised by a transaction-level
advisory lock, which also covers ids that do not exist yet.

The reads are here; the statements of a write are in :mod:`registry.store.thing_writes` (``ThingStore`` inherits
them from ``ThingWrites``), the rows and change types in :mod:`registry.store.thing_rows` (re-exported here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, cast

from sqlalchemy import BigInteger, Text, bindparam, func, select

from registry.store.counts import live_count
from registry.store.database import Database, Statement
from registry.store.tables import DESCRIPTIONS_OF_TENANT, changes, descriptions, live
from registry.store.thing_rows import (
    CHANGES_CHANNEL,
    COLUMNS,
    THING_CREATED,
    THING_DELETED,
    THING_TRANSFERRED,
    THING_UPDATED,
    Held,
    StoredDescription,
    Write,
    stored_from,
)
from registry.store.thing_writes import EXPIRED, ThingWrites
from registry.tenancy import EVERYTHING, TenantScope

_GET = Statement.of(select(*COLUMNS).where(descriptions.c.id == bindparam("id"), live()))

#: The latest change: any write changes it, so it serves as the listing's entity tag.
_LATEST_SEQ = Statement.of(select(func.coalesce(func.max(changes.c.seq), 0)))
#: A listing page: the live descriptions past the id ``after`` (a seek on the primary key: as fast deep in the
#: listing as at its start), ``offset`` of them skipped (a walk along the index: what a page costs grows with it).
_PAST = descriptions.c.id > bindparam("after", type_=Text)
_LISTING = Statement.of(
    select(*COLUMNS)
    .where(live(), _PAST)
    .order_by(descriptions.c.id)
    .offset(bindparam("offset", type_=BigInteger))
    .limit(bindparam("limit", type_=BigInteger))
)
#: The last id of a page and the id after it, if any (``skip`` = the page's offset + limit - 1): its next link.
_PAGE_END = Statement.of(
    select(descriptions.c.id)
    .where(live(), _PAST)
    .order_by(descriptions.c.id)
    .offset(bindparam("skip", type_=BigInteger))
    .limit(2)
)
_OWNER = Statement.of(
    select(descriptions.c.owner, descriptions.c.tenant).where(descriptions.c.id == bindparam("id"), live())
)

_DOCUMENTS = Statement.of(
    select(descriptions.c.id, descriptions.c.document_text)
    .where(live(), _PAST)
    .order_by(descriptions.c.id)
    .limit(bindparam("limit", type_=BigInteger))
)

#: The same reads for a reader of one tenant: the shared descriptions (no tenant) and that tenant's.
_LISTING_OF_TENANT = Statement.of(
    select(*COLUMNS)
    .where(live(), DESCRIPTIONS_OF_TENANT, _PAST)
    .order_by(descriptions.c.id)
    .offset(bindparam("offset", type_=BigInteger))
    .limit(bindparam("limit", type_=BigInteger))
)
_PAGE_END_OF_TENANT = Statement.of(
    select(descriptions.c.id)
    .where(live(), DESCRIPTIONS_OF_TENANT, _PAST)
    .order_by(descriptions.c.id)
    .offset(bindparam("skip", type_=BigInteger))
    .limit(2)
)
_DOCUMENTS_OF_TENANT = Statement.of(
    select(descriptions.c.id, descriptions.c.document_text)
    .where(live(), DESCRIPTIONS_OF_TENANT, _PAST)
    .order_by(descriptions.c.id)
    .limit(bindparam("limit", type_=BigInteger))
)


@dataclasses.dataclass(frozen=True, slots=True)
class Window:
    """Which descriptions of the listing a page holds: those past the id ``after`` (the empty id is before every
    id), ``offset`` of them skipped, at most ``limit`` (all without)."""

    after: str = ""
    offset: int = 0
    limit: int | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class PageHead:
    """What a listing tells before its first description."""

    #: How many descriptions the readers see, when asked for (a sum of the counts the writes keep).
    total: int | None
    #: The latest change of the collection: the listing's entity tag.
    version: int
    #: The id of the page's last description, when the page is full (its limit reached).
    last: str | None
    #: Whether descriptions follow the page.
    more: bool


#: The bigint bound of an unbounded page.
_NO_LIMIT = 2**63 - 1


class ThingStore(ThingWrites):
    """The descriptions in PostgreSQL: their reads here, the steps of their writes from :class:`ThingWrites`."""

    def __init__(self, database: Database) -> None:
        self.database = database

    # -- reads

    async def get(self, thing_id: str) -> StoredDescription | None:
        """The hot read: one round trip with a prepared statement."""
        row = await self.database.fetchrow(_GET, id=thing_id)
        return None if row is None else stored_from(row)

    async def count(self, readers: TenantScope = EVERYTHING) -> int:
        return await live_count(self.database, readers)

    async def listing(
        self, window: Window, readers: TenantScope = EVERYTHING, *, counted: bool = False
    ) -> tuple[PageHead, AsyncGenerator[StoredDescription, None]]:
        """A listing page (or the whole listing): what it tells before its descriptions, then the live descriptions
        ``readers`` may see in code-point order of id, through a cursor as the caller takes them.

        Both are read in one repeatable-read snapshot, held until the descriptions are all taken: the next link
        names the page's true last id, and a write between the two reads can neither push a description out of
        the page nor into it (the page would hold more than its limit, or the next page would skip one). Close
        the descriptions (``aclose``) if they are not all taken."""
        rows = self._listing(window, readers, counted)
        head = await anext(rows)
        assert isinstance(head, PageHead)
        return head, cast(AsyncGenerator[StoredDescription, None], rows)

    async def _listing(
        self, window: Window, readers: TenantScope, counted: bool
    ) -> AsyncGenerator[PageHead | StoredDescription, None]:
        tenant: dict[str, Any] = {} if readers.everything else {"tenant": readers.tenant}
        async with self.database.transaction(isolation="repeatable_read", readonly=True) as tx:
            total = None
            if counted:
                total = await live_count(tx, readers)
            version = int(await tx.fetchval(_LATEST_SEQ))
            last, more = None, False
            if window.limit is not None:
                ends = await tx.fetch(
                    _PAGE_END if readers.everything else _PAGE_END_OF_TENANT,
                    after=window.after,
                    skip=min(window.offset + window.limit - 1, _NO_LIMIT),
                    **tenant,
                )
                last, more = (ends[0][0] if ends else None), len(ends) == 2
            yield PageHead(total=total, version=version, last=last, more=more)
            page: dict[str, Any] = {"after": window.after, "offset": window.offset}
            page["limit"] = _NO_LIMIT if window.limit is None else window.limit
            async for row in tx.rows(_LISTING if readers.everything else _LISTING_OF_TENANT, **page, **tenant):
                yield stored_from(row)

    async def owner(self, thing_id: str) -> tuple[str | None, str | None] | None:
        """(owner, tenant) of a live description, None if there is none."""
        row = await self.database.fetchrow(_OWNER, id=thing_id)
        return None if row is None else (row[0], row[1])

    async def ids(self, readers: TenantScope = EVERYTHING) -> AsyncIterator[str]:
        """The ids of the live descriptions ``readers`` may see."""
        query = select(descriptions.c.id).where(live())
        if not readers.everything:
            query = query.where(DESCRIPTIONS_OF_TENANT)
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


__all__ = [
    "CHANGES_CHANNEL",
    "EXPIRED",
    "THING_CREATED",
    "THING_DELETED",
    "THING_TRANSFERRED",
    "THING_UPDATED",
    "Held",
    "PageHead",
    "StoredDescription",
    "ThingStore",
    "Window",
    "Write",
]
