"""SQL of discovery: summary and capability rows written with each description, searches, facets, versions.

Rows of ``thing_summaries`` / ``thing_capabilities`` follow their description (foreign key ON DELETE CASCADE);
rows of ``thing_versions`` are immutable and outlive it, so the history of an id can still be compared.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Text,
    and_,
    any_,
    cast,
    delete,
    exists,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from registry.store.tables import SEARCH_CONFIG, descriptions, thing_capabilities, thing_summaries, thing_versions
from registry.store.things import live

_CONFIG = cast(literal(SEARCH_CONFIG), REGCONFIG)
#: Facet lists are cut to the most frequent values.
FACET_LIMIT = 50


@dataclasses.dataclass(frozen=True, slots=True)
class SummaryRow:
    thing_id: str
    kind: str
    title: str | None
    vendor_name: str | None
    version: str | None
    types: list[str]
    summary: dict[str, Any]
    #: Texts by full-text weight A, B, C, D.
    search_texts: tuple[str, str, str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class CapabilityRow:
    source: str
    capability_id: str | None
    name: str
    version: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Filters:
    kind: str | None = None
    vendor: str | None = None
    #: Capability id or name; with ``capability_accepts`` only providers of a version it accepts.
    capability: str | None = None
    capability_accepts: Callable[[str], bool] | None = None
    type: str | None = None
    text: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    rows: list[Any]
    #: The sort key and id of the last row when more may follow.
    last: tuple[Any, str] | None


@dataclasses.dataclass(frozen=True, slots=True)
class Offer:
    """A capability as one description offers it."""

    thing_id: str
    capability_id: str | None
    name: str
    version: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderDetails:
    thing_id: str
    title: str | None
    vendor_name: str | None
    live: bool


@dataclasses.dataclass(frozen=True, slots=True)
class VersionRow:
    version: str
    document_text: str
    registered: dt.datetime
    revision: int
    previous_version: str | None
    compatibility: dict[str, Any] | None


_VERSION_COLUMNS = (
    thing_versions.c.version,
    thing_versions.c.document_text,
    thing_versions.c.registered,
    thing_versions.c.revision,
    thing_versions.c.previous_version,
    thing_versions.c.compatibility,
)


def _weighted(text: str, weight: str) -> Any:
    # The weight is a "char" literal; a bound parameter would be sent as varchar, which setweight refuses.
    return func.setweight(func.to_tsvector(_CONFIG, text), literal_column(f"'{weight}'"))


def _capability_match(capability: str) -> ColumnElement[bool]:
    return or_(thing_capabilities.c.capability_id == capability, thing_capabilities.c.name_key == capability.lower())


def _where(filters: Filters, versions: list[str] | None) -> list[ColumnElement[bool]]:
    """Conditions of ``filters``; ``versions``: the capability versions ``capability_accepts`` chose."""
    clauses: list[ColumnElement[bool]] = [live()]
    if filters.kind is not None:
        clauses.append(thing_summaries.c.kind == filters.kind)
    if filters.vendor is not None:
        clauses.append(thing_summaries.c.vendor_key == filters.vendor.lower())
    if filters.type is not None:
        clauses.append(thing_summaries.c.types.contains([filters.type]))
    if filters.text is not None:
        clauses.append(thing_summaries.c.search.op("@@")(_query(filters.text)))
    if filters.capability is not None:
        condition = and_(
            thing_capabilities.c.thing_id == thing_summaries.c.thing_id, _capability_match(filters.capability)
        )
        if versions is not None:
            condition = and_(condition, thing_capabilities.c.version.in_(versions))
        clauses.append(exists().where(condition))
    return clauses


def _query(text: str) -> Any:
    return func.websearch_to_tsquery(_CONFIG, text)


def _joined() -> Any:
    return thing_summaries.join(descriptions, descriptions.c.id == thing_summaries.c.thing_id)


class CatalogStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        # Reads are single statements (or tolerate seeing two snapshots): no BEGIN/ROLLBACK round trips.
        self.reader = engine.execution_options(isolation_level="AUTOCOMMIT")

    # -- writes, inside the description's transaction

    @staticmethod
    async def write_summary(
        connection: AsyncConnection, row: SummaryRow, capabilities: Sequence[CapabilityRow]
    ) -> None:
        title_text, body_text, capability_text, example_text = row.search_texts
        values = {
            "kind": row.kind,
            "title": row.title,
            "title_key": (row.title or "").lower(),
            "vendor_name": row.vendor_name,
            "vendor_key": row.vendor_name.lower() if row.vendor_name else None,
            "version": row.version,
            "types": row.types,
            "summary": row.summary,
            "search": _weighted(title_text, "A")
            .op("||")(_weighted(body_text, "B"))
            .op("||")(_weighted(capability_text, "C"))
            .op("||")(_weighted(example_text, "D")),
        }
        await connection.execute(
            pg_insert(thing_summaries)
            .values(thing_id=row.thing_id, **values)
            .on_conflict_do_update(index_elements=[thing_summaries.c.thing_id], set_=values)
        )
        await connection.execute(delete(thing_capabilities).where(thing_capabilities.c.thing_id == row.thing_id))
        if capabilities:
            await connection.execute(
                insert(thing_capabilities),
                [
                    {
                        "thing_id": row.thing_id,
                        "position": position,
                        "source": capability.source,
                        "capability_id": capability.capability_id,
                        "name": capability.name,
                        "name_key": capability.name.lower(),
                        "version": capability.version,
                    }
                    for position, capability in enumerate(capabilities)
                ],
            )

    @staticmethod
    async def kept_versions(connection: AsyncConnection, thing_id: str) -> list[str]:
        query = select(thing_versions.c.version).where(thing_versions.c.thing_id == thing_id)
        return [row.version for row in await connection.execute(query)]

    @staticmethod
    async def version_text(connection: AsyncConnection, thing_id: str, version: str) -> str:
        query = select(thing_versions.c.document_text).where(
            thing_versions.c.thing_id == thing_id, thing_versions.c.version == version
        )
        return str((await connection.execute(query)).scalar_one())

    @staticmethod
    async def keep_version(
        connection: AsyncConnection,
        thing_id: str,
        version: str,
        document_text: str,
        revision: int,
        previous_version: str | None,
        compatibility: dict[str, Any] | None,
    ) -> None:
        """Insert a version unless it is already kept: versions are immutable, the first registration wins."""
        await connection.execute(
            pg_insert(thing_versions)
            .values(
                thing_id=thing_id,
                version=version,
                document_text=document_text,
                registered=func.now(),
                revision=revision,
                previous_version=previous_version,
                compatibility=compatibility,
            )
            .on_conflict_do_nothing(index_elements=[thing_versions.c.thing_id, thing_versions.c.version])
        )

    # -- reads

    @staticmethod
    async def _accepted_versions(connection: AsyncConnection, filters: Filters) -> list[str] | None:
        """The distinct versions of the filtered capability that ``capability_accepts`` (a range test) accepts."""
        if filters.capability is None or filters.capability_accepts is None:
            return None
        query = (
            select(thing_capabilities.c.version)
            .where(_capability_match(filters.capability), thing_capabilities.c.version.is_not(None))
            .distinct()
        )
        offered = [row.version for row in await connection.execute(query)]
        return [version for version in offered if filters.capability_accepts(version)]

    async def search(self, filters: Filters, sort: str, limit: int, after: tuple[Any, str] | None) -> Page:
        """One page of live summaries matching ``filters``, ordered by ``sort`` (keyset pagination)."""
        thing_id = thing_summaries.c.thing_id
        key: Any
        if sort == "relevance" and filters.text is not None:
            key = cast(func.ts_rank_cd(thing_summaries.c.search, _query(filters.text)), Float)
            descending = True
        elif sort == "modified":
            key, descending = descriptions.c.modified, True
        else:
            key, descending = thing_summaries.c.title_key, False
        query = select(
            thing_id,
            thing_summaries.c.summary,
            descriptions.c.modified,
            descriptions.c.expires,
            key.label("sort_key"),
        ).select_from(_joined())
        if after is not None:
            after_key, after_id = after
            beyond = key < after_key if descending else key > after_key
            query = query.where(or_(beyond, and_(key == after_key, thing_id > after_id)))
        query = query.order_by(key.desc() if descending else key.asc(), thing_id.asc()).limit(limit + 1)
        async with self.reader.connect() as connection:
            versions = await self._accepted_versions(connection, filters)
            rows = list(await connection.execute(query.where(*_where(filters, versions))))
        more = len(rows) > limit
        rows = rows[:limit]
        last = (rows[-1].sort_key, rows[-1].thing_id) if more and rows else None
        return Page(rows=rows, last=last)

    async def facets(self, filters: Filters) -> dict[str, list[tuple[str, int]]]:
        async with self.reader.connect() as connection:
            versions = await self._accepted_versions(connection, filters)
            return await self._facets(connection, filters, versions)

    @staticmethod
    async def _facets(
        connection: AsyncConnection, filters: Filters, versions: list[str] | None
    ) -> dict[str, list[tuple[str, int]]]:
        matching = (
            select(thing_summaries.c.thing_id).select_from(_joined()).where(*_where(filters, versions)).cte("matching")
        )
        joined = thing_summaries.join(matching, matching.c.thing_id == thing_summaries.c.thing_id)
        count = func.count().label("total")
        kinds = (
            select(thing_summaries.c.kind.label("value"), count).select_from(joined).group_by(thing_summaries.c.kind)
        )
        vendors = (
            select(func.min(thing_summaries.c.vendor_name).label("value"), count)
            .select_from(joined)
            .where(thing_summaries.c.vendor_key.is_not(None))
            .group_by(thing_summaries.c.vendor_key)
            .order_by(count.desc(), func.min(thing_summaries.c.vendor_name))
            .limit(FACET_LIMIT)
        )
        capability = func.coalesce(thing_capabilities.c.capability_id, thing_capabilities.c.name)
        providers = func.count(thing_capabilities.c.thing_id.distinct()).label("total")
        capabilities = (
            select(capability.label("value"), providers)
            .select_from(thing_capabilities.join(matching, matching.c.thing_id == thing_capabilities.c.thing_id))
            .group_by(capability)
            .order_by(providers.desc(), capability)
            .limit(FACET_LIMIT)
        )
        result: dict[str, list[tuple[str, int]]] = {}
        for name, query in (("kind", kinds), ("vendor", vendors), ("capability", capabilities)):
            rows = await connection.execute(query)
            counted: list[tuple[str, int]] = [(row.value, row.total) for row in rows]
            result[name] = sorted(counted, key=lambda item: (-item[1], item[0]))
        return result

    async def summary(self, thing_id: str) -> tuple[dict[str, Any], dt.datetime, dt.datetime | None] | None:
        query = (
            select(thing_summaries.c.summary, descriptions.c.modified, descriptions.c.expires)
            .select_from(_joined())
            .where(thing_summaries.c.thing_id == thing_id, live())
        )
        async with self.reader.connect() as connection:
            row = (await connection.execute(query)).first()
        return None if row is None else (row.summary, row.modified, row.expires)

    async def providers(
        self, capabilities: Sequence[str], worth_detailing: Callable[[list[Offer]], set[str]]
    ) -> tuple[list[Offer], dict[str, ProviderDetails]]:
        """Every offer of one of ``capabilities`` (live or expired but not yet purged), and the details of the
        descriptions ``worth_detailing`` picks from them. Two indexed queries on one connection: joining every
        offer to its description costs more than the ranges leave over."""
        keys = list(dict.fromkeys(capabilities))
        offers_query = select(
            thing_capabilities.c.thing_id,
            thing_capabilities.c.capability_id,
            thing_capabilities.c.name,
            thing_capabilities.c.version,
        ).where(
            or_(
                thing_capabilities.c.capability_id.in_(keys),
                thing_capabilities.c.name_key.in_([key.lower() for key in keys]),
            )
        )
        async with self.reader.connect() as connection:
            offers = [Offer(*row) for row in await connection.execute(offers_query)]
            wanted = worth_detailing(offers)
            if not wanted:
                return offers, {}
            details_query = (
                select(thing_summaries.c.thing_id, thing_summaries.c.title, thing_summaries.c.vendor_name, live())
                .select_from(_joined())
                .where(thing_summaries.c.thing_id == any_(literal(sorted(wanted), ARRAY(Text))))
            )
            details = {row[0]: ProviderDetails(*row) for row in await connection.execute(details_query)}
        return offers, details

    async def versions(self, thing_id: str) -> list[VersionRow]:
        query = select(*_VERSION_COLUMNS).where(thing_versions.c.thing_id == thing_id)
        async with self.reader.connect() as connection:
            return [VersionRow(*row) for row in await connection.execute(query)]

    async def version(self, thing_id: str, version: str) -> VersionRow | None:
        query = select(*_VERSION_COLUMNS).where(
            thing_versions.c.thing_id == thing_id, thing_versions.c.version == version
        )
        async with self.reader.connect() as connection:
            row = (await connection.execute(query)).first()
        return None if row is None else VersionRow(*row)


__all__ = [
    "CapabilityRow",
    "CatalogStore",
    "Filters",
    "Offer",
    "Page",
    "ProviderDetails",
    "SummaryRow",
    "VersionRow",
]
