"""SQL of the MCP Registry API: published versions of MCP servers, read from the kept versions of live
descriptions typed ``mcp:Server`` (the catalog's ``thing_versions``; nothing of its own to write)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from sqlalchemy import select, tuple_

from registry.store.database import Database
from registry.store.tables import descriptions, live, of_tenant, thing_summaries, thing_versions
from registry.tenancy import EVERYTHING, TenantScope


@dataclasses.dataclass(frozen=True, slots=True)
class PublishedVersion:
    thing_id: str
    version: str
    #: The description as it was when this version was published.
    document_text: str
    registered: dt.datetime
    #: The version of the current description (the latest published).
    latest: str | None
    #: The current description (it holds every version's lifecycle status).
    current_text: str


@dataclasses.dataclass(frozen=True, slots=True)
class ServerQuery:
    server_type: str
    #: Only descriptions whose id contains this text (server names are part of the id).
    id_contains: str | None = None
    #: Only descriptions modified at or after this moment.
    modified_since: dt.datetime | None = None
    latest_only: bool = False
    version: str | None = None
    thing_id: str | None = None
    #: Whose descriptions may match (registry/auth/tenancy.py).
    readers: TenantScope = EVERYTHING


_COLUMNS = (
    thing_versions.c.thing_id,
    thing_versions.c.version,
    thing_versions.c.document_text,
    thing_versions.c.registered,
    thing_summaries.c.version,
    descriptions.c.document_text,
)


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def published_versions_statement(
    query: ServerQuery, *, after: tuple[str, str] | None = None, limit: int | None = None
) -> Any:
    """The statement of :meth:`ServerStore.versions`."""
    statement = (
        select(*_COLUMNS)
        .select_from(
            thing_versions.join(thing_summaries, thing_summaries.c.thing_id == thing_versions.c.thing_id).join(
                descriptions, descriptions.c.id == thing_versions.c.thing_id
            )
        )
        .where(thing_summaries.c.types.contains([query.server_type]), live())
    )
    if not query.readers.everything:
        statement = statement.where(of_tenant(descriptions.c.tenant, query.readers.tenant))
    if query.thing_id is not None:
        statement = statement.where(thing_versions.c.thing_id == query.thing_id)
    if query.id_contains:
        statement = statement.where(thing_versions.c.thing_id.ilike(f"%{_escaped(query.id_contains)}%", escape="\\"))
    if query.modified_since is not None:
        statement = statement.where(descriptions.c.modified >= query.modified_since)
    if query.latest_only:
        statement = statement.where(thing_versions.c.version == thing_summaries.c.version)
    if query.version is not None:
        statement = statement.where(thing_versions.c.version == query.version)
    if after is not None:
        # A row comparison, which the primary key (thing_id, version) seeks to; and the same lower bound on the
        # ids of the joined tables, so that a merge join does not read them from their first id to the cursor.
        statement = statement.where(
            tuple_(thing_versions.c.thing_id, thing_versions.c.version) > tuple_(*after),
            descriptions.c.id >= after[0],
            thing_summaries.c.thing_id >= after[0],
        )
    statement = statement.order_by(thing_versions.c.thing_id, thing_versions.c.version)
    return statement if limit is None else statement.limit(limit)


class ServerStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def versions(
        self, query: ServerQuery, *, after: tuple[str, str] | None = None, limit: int | None = None
    ) -> list[PublishedVersion]:
        """Published versions matching ``query`` in (id, version) order, after the key ``after``."""
        statement = published_versions_statement(query, after=after, limit=limit)
        return [PublishedVersion(*row) for row in await self.database.fetch(statement)]


__all__ = ["PublishedVersion", "ServerQuery", "ServerStore", "published_versions_statement"]
