"""The catalog's store: the writes that follow each description, searches and facet counts bounded in time, and
capability resolution."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy import func, select

from registry.descriptions.summary import vendor_fuzzy_matches
from registry.errors import ServiceUnavailable, StatementTimeout
from registry.store.catalog.facets import facet_queries
from registry.store.catalog.resolution import (
    left_out_statement,
    offers_values,
    outline_statement,
    ranked_statement,
    ranking_values,
    vendors_statement,
    versions_statement,
)
from registry.store.catalog.rows import (
    Filters,
    LeftOut,
    NewVersion,
    Offer,
    Outline,
    Page,
    RankedProvider,
    Ranking,
    SummaryWrite,
    VersionRow,
)
from registry.store.catalog.search import (
    FUZZY_VENDOR_CANDIDATES,
    capability_match,
    need_query,
    search_query,
    summaries_with_descriptions,
    title_chunk,
)
from registry.store.catalog.versions import (
    FORGET,
    KEEP_VERSION,
    KEPT,
    KEPT_TEXTS,
    VERSION_TEXT,
    version_query,
    versions_query,
)
from registry.store.catalog.words import NEED_PLANNER, WordStatistics, need_passes
from registry.store.catalog.writes import REMOVE_CAPABILITIES, REMOVE_SUMMARIES, WRITE_SUMMARY, summary_values
from registry.store.database import Database, Executor, Record, Statement, Transaction
from registry.store.tables import descriptions, live, thing_capabilities, thing_summaries
from registry.tenancy import EVERYTHING, TenantScope

T = TypeVar("T")

#: Seconds a search or facet statement may run by default (REGISTRY_SEARCH_TIMEOUT).
SEARCH_TIMEOUT = 5.0


class CatalogStore:
    def __init__(self, database: Database, *, search_timeout: float = SEARCH_TIMEOUT) -> None:
        """``search_timeout``: seconds each statement of a search or facet count may run (the client chooses
        their cost: terms matching most of the catalogue, facets over all of it)."""
        # Other reads are single indexed statements (or tolerate seeing two snapshots): on the pool, no BEGIN/COMMIT.
        self.database = database
        self.search_timeout = search_timeout
        self.word_statistics = WordStatistics()

    async def _bounded(self, read: Callable[[Transaction], Awaitable[T]], planner: str = "") -> T:
        """``read`` in a read-only transaction whose statements stop after ``search_timeout`` (503, never a held
        core), on the read replica while it keeps up (``Database.run_search``), planned with the ``planner``
        settings too."""
        try:
            return await self.database.run_search(read, seconds=self.search_timeout, planner=planner)
        except StatementTimeout as error:
            raise ServiceUnavailable(
                f"The search did not finish within {self.search_timeout:g} s (REGISTRY_SEARCH_TIMEOUT); retry "
                "later or narrow it (more specific terms, more filters)",
                headers={"Retry-After": "5"},
            ) from error

    # -- writes, inside the description's transaction

    @staticmethod
    async def write_summaries(tx: Transaction, writes: Sequence[SummaryWrite]) -> list[list[str]]:
        """Store the summary and capabilities of each description, and its first version if it has no kept version
        yet; returns the versions kept before the write, for each. One round trip for the batch (one statement
        each, pipelined); unchanged rows are not rewritten."""
        rows = await tx.fetchmany(WRITE_SUMMARY, [summary_values(write) for write in writes])
        return [list(record[0] or ()) for record in rows]

    @staticmethod
    async def version_text(tx: Transaction, thing_id: str, version: str) -> str:
        return str(await tx.fetchval(VERSION_TEXT, thing_id=thing_id, version=version))

    @staticmethod
    async def keep_version(
        tx: Transaction,
        thing_id: str,
        version: NewVersion,
        previous_version: str | None,
        compatibility_json: str | None,
    ) -> None:
        """Insert a version unless it is already kept: versions are immutable, the first registration wins."""
        await tx.execute(
            KEEP_VERSION,
            thing_id=thing_id,
            version=version.version,
            document_text=version.document_text,
            revision=version.revision,
            previous_version=previous_version,
            compatibility=compatibility_json,
        )

    @staticmethod
    async def remove(tx: Transaction, thing_ids: Sequence[str]) -> None:
        """Summaries and capabilities of descriptions that left (their kept versions stay)."""
        await tx.execute(REMOVE_SUMMARIES, ids=list(thing_ids))
        await tx.execute(REMOVE_CAPABILITIES, ids=list(thing_ids))

    # -- kept versions a write is compared with (the version policy), inside its transaction

    @staticmethod
    async def kept_versions(tx: Transaction, thing_ids: Sequence[str]) -> list[tuple[str, str, str | None]]:
        """(id, version, tenant that registered it) of every version kept for ``thing_ids``."""
        return [(row[0], row[1], row[2]) for row in await tx.fetch(KEPT, ids=list(thing_ids))]

    @staticmethod
    async def forget_versions(tx: Transaction, thing_ids: Sequence[str]) -> None:
        """Drop the versions kept for ``thing_ids``."""
        await tx.execute(FORGET, ids=list(thing_ids))

    @staticmethod
    async def kept_texts(tx: Transaction, wanted: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """The kept texts of ``wanted`` (id, version) pairs."""
        rows = await tx.fetch(
            KEPT_TEXTS, ids=[thing_id for thing_id, _ in wanted], versions=[version for _, version in wanted]
        )
        return {(thing_id, version): text for thing_id, version, text in rows}

    # -- reads

    @staticmethod
    async def _accepted_versions(executor: Executor, filters: Filters) -> list[str] | None:
        """The distinct versions of the filtered capability that ``capability_accepts`` (a range test) accepts."""
        if filters.capability is None or filters.capability_accepts is None:
            return None
        query = (
            select(thing_capabilities.c.version)
            .where(
                capability_match(filters.capability, filters.capability.lower()),
                thing_capabilities.c.version.is_not(None),
            )
            .distinct()
        )
        offered = [row[0] for row in await executor.fetch(query)]
        return [version for version in offered if filters.capability_accepts(version)]

    @staticmethod
    async def resolve_vendor(executor: Executor, filters: Filters) -> Filters:
        """``filters`` with the vendor keys a fuzzy vendor filter matches: the distinct vendor names (a bounded
        set, read from the vendor_key index) compared word by word in Python (rapidfuzz; pg_trgm is not always
        available)."""
        if filters.vendor is None or filters.vendor_match != "fuzzy":
            return filters
        names = (
            select(thing_summaries.c.vendor_key)
            .where(thing_summaries.c.vendor_key.is_not(None))
            .group_by(thing_summaries.c.vendor_key)
            .order_by(func.count().desc())
            .limit(FUZZY_VENDOR_CANDIDATES)
        )
        keys = [row[0] for row in await executor.fetch(names)]
        matched = tuple(key for key in keys if vendor_fuzzy_matches(filters.vendor, key))
        return dataclasses.replace(filters, vendor_keys=matched)

    async def search(self, filters: Filters, sort: str, limit: int, after: tuple[Any, str] | None) -> Page:
        """One page of live summaries matching ``filters``, ordered by ``sort`` (keyset pagination)."""

        async def read(tx: Transaction) -> list[Record]:
            narrowed = await self.resolve_vendor(tx, filters)
            versions = await self._accepted_versions(tx, narrowed)
            if sort == "title" and narrowed.readers.everything:
                return await self._title_rows(tx, narrowed, versions, limit, after)
            return await tx.fetch(search_query(narrowed, versions, sort, limit, after))

        rows = await self._bounded(read)
        more = len(rows) > limit
        rows = rows[:limit]
        last = (rows[-1]["sort_key"], rows[-1]["thing_id"]) if more and rows else None
        return Page(rows=rows, last=last)

    async def need_matches(self, filters: Filters, words: list[str], prefix_from: int, limit: int) -> list[Record]:
        """The ``limit`` best full-text matches of a need in plain words (``filters.text_query``: its ``words``
        joined by ``|``, those of ``prefix_from`` letters or more as prefixes), best first, picked in passes by
        how common each word is (registry/store/catalog/words.py); rows as :meth:`search`'s."""

        async def read(tx: Transaction) -> list[Record]:
            narrowed = await self.resolve_vendor(tx, filters)
            versions = await self._accepted_versions(tx, narrowed)
            plan = await need_passes(tx, self.word_statistics, words, prefix_from)
            if plan.selective is None and plan.common is None:
                return []
            return await tx.fetch(need_query(narrowed, versions, plan, limit))

        return await self._bounded(read, NEED_PLANNER)

    @staticmethod
    async def _title_rows(
        tx: Transaction, filters: Filters, versions: list[str] | None, limit: int, after: tuple[Any, str] | None
    ) -> list[Record]:
        """``limit`` + 1 live matches in title order, read in chunks of that size (``title_chunk``): a chunk cut
        short by expired descriptions not yet purged is followed by the next, past its last row."""
        rows: list[Record] = []
        while True:
            chunk = await tx.fetch(title_chunk(filters, versions, limit + 1, after))
            rows += [row for row in chunk if row["visible"]]
            if len(chunk) <= limit or len(rows) > limit:
                return rows[: limit + 1]
            after = (chunk[-1]["sort_key"], chunk[-1]["thing_id"])

    async def filtered_read(
        self, filters: Filters, read: Callable[[Transaction, Filters, list[str] | None], Awaitable[T]]
    ) -> T:
        """``read`` bounded as searches are, given ``filters`` resolved (fuzzy vendors) and the capability versions
        they accept."""

        async def run(tx: Transaction) -> T:
            narrowed = await self.resolve_vendor(tx, filters)
            return await read(tx, narrowed, await self._accepted_versions(tx, narrowed))

        return await self._bounded(run)

    async def facets(self, filters: Filters) -> dict[str, list[tuple[str, int]]]:

        async def read(tx: Transaction) -> dict[str, list[tuple[str, int]]]:
            narrowed = await self.resolve_vendor(tx, filters)
            return await self._facets(tx, narrowed, await self._accepted_versions(tx, narrowed))

        return await self._bounded(read)

    @staticmethod
    async def _facets(
        executor: Executor, filters: Filters, versions: list[str] | None
    ) -> dict[str, list[tuple[str, int]]]:
        result: dict[str, list[tuple[str, int]]] = {}
        for name, query in facet_queries(filters, versions):
            rows = await executor.fetch(query)
            counted: list[tuple[str, int]] = [(row[0], row[1]) for row in rows]
            result[name] = sorted(counted, key=lambda item: (-item[1], item[0]))
        return result

    async def summary(self, thing_id: str) -> tuple[dict[str, Any], dt.datetime, dt.datetime | None] | None:
        query = (
            select(thing_summaries.c.summary, descriptions.c.modified, descriptions.c.expires)
            .select_from(summaries_with_descriptions())
            .where(thing_summaries.c.thing_id == thing_id, live())
        )
        row = await self.database.fetchrow(query)
        return None if row is None else (row[0], row[1], row[2])

    async def _resolution_rows(self, statement: Statement, values: dict[str, Any]) -> list[Record]:
        """Rows of one step of resolution, bounded and planned for its values as searches are: the statement is
        compiled once, so without a custom plan PostgreSQL would soon reuse a generic one blind to the values."""

        async def read(tx: Transaction) -> list[Record]:
            return await tx.fetch(statement, **values)

        return await self._bounded(read)

    async def offered_versions(
        self, capability: str, readers: TenantScope = EVERYTHING
    ) -> tuple[int, list[str | None]]:
        """How many descriptions offer ``capability`` (live or expired but not yet purged), and the distinct
        versions they offer it in (a few, whatever the number of providers: ranges are decided on these)."""
        statement = versions_statement(readers.everything)
        rows = await self._resolution_rows(statement, offers_values(capability, readers))
        return (rows[0][1] if rows else 0), [row[0] for row in rows]

    async def offered_vendors(self, capability: str, readers: TenantScope = EVERYTHING) -> list[str]:
        """The distinct vendor names of the providers of ``capability`` ("" for none): vendor rules are decided on
        these."""
        statement = vendors_statement(readers.everything)
        return [row[0] for row in await self._resolution_rows(statement, offers_values(capability, readers))]

    async def ranked_providers(
        self, ranking: Ranking, limit: int, readers: TenantScope = EVERYTHING
    ) -> list[RankedProvider]:
        """The first ``limit`` live providers in range the vendor rules accept, in ``ranking``'s order (vendor
        preference, version rank, id), each with its best offer. The offers in range are sorted first and their
        descriptions read in that order until the page is full."""
        statement = ranked_statement(readers.everything, bool(ranking.vendor_notes or ranking.preferences))
        rows = await self._resolution_rows(statement, {"limit": limit, **ranking_values(ranking, readers)})
        return [RankedProvider(Offer(*row[:4]), row[4], row[5]) for row in rows]

    async def left_out(self, ranking: Ranking, limit: int, readers: TenantScope = EVERYTHING) -> list[LeftOut]:
        """The first ``limit`` providers ``ranking`` leaves out, with why (no version in range, expired, vendor):
        those in range first, in rank order, then the others by id. Asked for when fewer than a page were chosen,
        so at most that many accepted providers are read past."""
        statement = left_out_statement(readers.everything)
        rows = await self._resolution_rows(statement, {"limit": limit, **ranking_values(ranking, readers)})
        return [LeftOut(*row) for row in rows]

    async def outline(self, ranking: Ranking, readers: TenantScope = EVERYTHING) -> Outline:
        """What the providers of the capability have in common, to say why none was chosen (every offer is read:
        asked for only when none was)."""
        statement = outline_statement(readers.everything)
        (row,) = await self._resolution_rows(statement, ranking_values(ranking, readers))  # an aggregate: one row
        return Outline(row[0], row[1], row[2], list(row[3] or []))

    async def versions(self, thing_id: str, readers: TenantScope = EVERYTHING) -> list[VersionRow]:
        """The kept versions of ``thing_id`` that ``readers`` may see (a version is its registrant's tenant's)."""
        return [VersionRow(*row) for row in await self.database.fetch(versions_query(thing_id, readers))]

    async def version(self, thing_id: str, version: str, readers: TenantScope = EVERYTHING) -> VersionRow | None:
        row = await self.database.fetchrow(version_query(thing_id, version, readers))
        return None if row is None else VersionRow(*row)


__all__ = ["SEARCH_TIMEOUT", "CatalogStore"]
