"""SQL of discovery: summary and capability rows written with each description, searches, facets, versions.

Rows of ``thing_summaries`` / ``thing_capabilities`` follow their description (written and removed by the catalog
projection); rows of ``thing_versions`` are immutable and outlive it, so the history of an id can still be compared.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Float,
    Text,
    and_,
    any_,
    bindparam,
    case,
    cast,
    delete,
    exists,
    func,
    literal,
    literal_column,
    or_,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REGCONFIG, distinct_on
from sqlalchemy.dialects.postgresql import insert as pg_insert

from registry.descriptions.model import (
    A2A_CARD_TYPE,
    CONVENTION_A2A,
    CONVENTION_LMOS,
    CONVENTION_MCP,
    MCP_SERVER_TYPE,
)
from registry.descriptions.summary import KIND_AGENT, KIND_TOOL, vendor_fuzzy_matches, vendor_words
from registry.errors import ServiceUnavailable, StatementTimeout
from registry.store.database import Database, Executor, Record, Statement, Transaction
from registry.store.tables import (
    SEARCH_CONFIG,
    capability_keys,
    changes,
    descriptions,
    live,
    of_tenant,
    thing_capabilities,
    thing_summaries,
    thing_versions,
)
from registry.tenancy import EVERYTHING, TenantScope

T = TypeVar("T")


def _text_search_config(name: str) -> Any:
    """A text search configuration as a constant of the statement, not a bound parameter: a parameter is cast to
    ``regconfig`` at run time, so ``websearch_to_tsquery`` of it is not folded into a constant either, and a
    filter evaluated row by row parses the words again for every row (for a word in every description, half of a
    search's time)."""
    return literal_column(f"'{name}'", type_=REGCONFIG)


_CONFIG = _text_search_config(SEARCH_CONFIG)
#: Vendor names are matched as words, without stemming (thing_summaries.vendor_words).
_WORDS_CONFIG = _text_search_config("simple")
#: Distinct vendor names a fuzzy vendor filter compares (the most frequent first).
FUZZY_VENDOR_CANDIDATES = 10_000
#: Facet lists are cut to the most frequent values.
FACET_LIMIT = 50
#: Seconds a search or facet statement may run by default (REGISTRY_SEARCH_TIMEOUT).
SEARCH_TIMEOUT = 5.0
#: Characters of a title kept in its sort key: a B-tree entry must stay under ~2.7 kB, whatever the title.
TITLE_KEY_LENGTH = 256


@dataclasses.dataclass(frozen=True, slots=True)
class SummaryRow:
    thing_id: str
    kind: str
    title: str | None
    vendor_name: str | None
    version: str | None
    types: list[str]
    #: The summary served by ``/summary``, as JSON.
    summary_json: str
    #: Texts by full-text weight A, B, C, D.
    search_texts: tuple[str, str, str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class CapabilityRow:
    source: str
    capability_id: str | None
    name: str
    version: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class NewVersion:
    """A version of a description to keep: the document (JSON) as it was registered at ``revision``."""

    version: str
    document_text: str
    revision: int


@dataclasses.dataclass(frozen=True, slots=True)
class Filters:
    kind: str | None = None
    vendor: str | None = None
    #: How ``vendor`` matches a vendor name: exact (any case), words (each word a word or word prefix of the
    #: name, any case) or fuzzy (similar names, typos included).
    vendor_match: str = "words"
    #: The vendor keys a fuzzy ``vendor`` matched (resolved by the store before the query).
    vendor_keys: tuple[str, ...] = ()
    #: Capability id or name; with ``capability_accepts`` only providers of a version it accepts.
    capability: str | None = None
    capability_accepts: Callable[[str], bool] | None = None
    type: str | None = None
    text: str | None = None
    #: How ``text`` matches: all (web-search syntax, every word) or any (plain words, ranked;
    #: registry.discovery.text), ``text_query`` then being the ``to_tsquery`` text of its words.
    text_match: str = "all"
    text_query: str | None = None
    #: lmos, a2a or mcp (registry.descriptions.model.convention_of).
    convention: str | None = None
    #: Whose descriptions may match (registry/auth/tenancy.py).
    readers: TenantScope = EVERYTHING


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    rows: list[Record]
    #: The sort key and id of the last row when more may follow.
    last: tuple[Any, str] | None


@dataclasses.dataclass(frozen=True, slots=True)
class Offer:
    """A capability as one description offers it."""

    thing_id: str
    capability_id: str | None
    name: str
    version: str | None


#: Why resolution leaves a provider out (besides the vendor rules of :class:`Ranking`).
OUT_OF_RANGE = "out_of_range"
EXPIRED = "expired"


@dataclasses.dataclass(frozen=True, slots=True)
class Ranking:
    """How resolution orders the providers of one capability, decided in Python on the few distinct versions and
    vendor names and applied in SQL, so that only the page answered is loaded."""

    capability: str
    #: Rank of each version in range (lower first; the key None: providers that declare no version).
    version_ranks: dict[str | None, int]
    #: Vendor names ("" for none) the rules leave out, with why.
    vendor_notes: dict[str, str] = dataclasses.field(default_factory=dict)
    #: Rank of preferred vendor names; the others get ``default_preference``.
    preferences: dict[str, int] = dataclasses.field(default_factory=dict)
    default_preference: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class RankedProvider:
    offer: Offer
    title: str | None
    vendor_name: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class LeftOut:
    thing_id: str
    version: str | None
    vendor_name: str | None
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class Outline:
    any_live_in_range: bool
    any_in_range: bool
    any_live: bool
    #: Versions offered by live providers.
    live_versions: list[str]


@dataclasses.dataclass(frozen=True, slots=True)
class VersionRow:
    version: str
    document_text: str
    registered: dt.datetime
    revision: int
    previous_version: str | None
    compatibility: dict[str, Any] | None
    #: Principal that registered it (audit; from the change log), None with authentication off.
    registered_by: str | None


_VERSION_COLUMNS = (
    thing_versions.c.version,
    thing_versions.c.document_text,
    thing_versions.c.registered,
    thing_versions.c.revision,
    thing_versions.c.previous_version,
    thing_versions.c.compatibility,
    select(changes.c.actor).where(changes.c.seq == thing_versions.c.revision).scalar_subquery(),
)


#: Matches a relevance-sorted search ranks at most (see :meth:`CatalogStore.search`).
RANK_CANDIDATES = 1000


def _weighted(text: Any, weight: str) -> Any:
    # The weight is a "char" literal; a bound parameter would be sent as varchar, which setweight refuses.
    return func.setweight(func.to_tsvector(_CONFIG, text), literal_column(f"'{weight}'"))


def _capability_match(capability: Any, name_key: Any) -> ColumnElement[bool]:
    """An offer of ``capability`` (a value or a bound parameter): by id, or by name in any case (``name_key``)."""
    return or_(thing_capabilities.c.capability_id == capability, thing_capabilities.c.name_key == name_key)


def _where(filters: Filters, versions: list[str] | None, *, expired_too: bool = False) -> list[ColumnElement[bool]]:
    """Conditions of ``filters``; ``versions``: the capability versions ``capability_accepts`` chose;
    ``expired_too``: without the one that leaves out expired descriptions (the caller checks it)."""
    clauses: list[ColumnElement[bool]] = [] if expired_too else [live()]
    if not filters.readers.everything:
        clauses.append(of_tenant(descriptions.c.tenant, filters.readers.tenant))
    if filters.kind is not None:
        clauses.append(thing_summaries.c.kind == filters.kind)
    if filters.vendor is not None:
        if filters.vendor_match == "exact":
            clauses.append(thing_summaries.c.vendor_key == filters.vendor.lower())
        elif filters.vendor_match == "fuzzy":
            clauses.append(thing_summaries.c.vendor_key.in_(filters.vendor_keys))
        else:
            words = func.to_tsquery(_WORDS_CONFIG, vendor_prefix_query(filters.vendor))
            clauses.append(thing_summaries.c.vendor_words.op("@@")(words))
    if filters.type is not None:
        clauses.append(thing_summaries.c.types.contains([filters.type]))
    if filters.convention is not None:
        clauses.append(_convention() == filters.convention)
    if filters.text is not None:
        clauses.append(thing_summaries.c.search.op("@@")(_query(filters)))
    if filters.capability is not None:
        # The keys a filter for an id or a name matches: an index scan that intersects with the others.
        clauses.append(
            thing_summaries.c.capability_keys.overlap(capability_keys(filters.capability, filters.capability))
        )
        if versions is not None:  # and among the candidates, those that offer it in a version accepted
            offered = _capability_match(filters.capability, filters.capability.lower())
            condition = and_(thing_capabilities.c.thing_id == thing_summaries.c.thing_id, offered)
            clauses.append(exists().where(condition, thing_capabilities.c.version.in_(versions)))
    return clauses


def vendor_prefix_query(vendor: str) -> str:
    """``Deutsche Tele`` → ``deutsche:* & tele:*`` (words only, so nothing in it is tsquery syntax)."""
    return " & ".join(f"{word}:*" for word in vendor_words(vendor))


def _convention() -> Any:
    """The convention of a summary row, as ``convention_of`` computes it, from its types and kind."""
    types = thing_summaries.c.types
    return case(
        (types.contains([MCP_SERVER_TYPE]), literal(CONVENTION_MCP)),
        (types.contains([A2A_CARD_TYPE]), literal(CONVENTION_A2A)),
        (thing_summaries.c.kind.in_([KIND_AGENT, KIND_TOOL]), literal(CONVENTION_LMOS)),
        else_=None,
    )


def _query(filters: Filters) -> Any:
    """The tsquery of the free text: web-search syntax, or any of its plain words (registry.discovery.text)."""
    if filters.text_match == "any":
        return func.to_tsquery(_CONFIG, filters.text_query or "")
    return func.websearch_to_tsquery(_CONFIG, filters.text)


def _relevance(search: Any, filters: Filters) -> Any:
    """0..1: ``ts_rank_cd`` over rank + 1 (normalisation 32), so that it is comparable across queries."""
    return cast(func.ts_rank_cd(search, _query(filters), literal_column("32")), Float)


def _joined() -> Any:
    return thing_summaries.join(descriptions, descriptions.c.id == thing_summaries.c.thing_id)


def search_query(
    filters: Filters, versions: list[str] | None, sort: str, limit: int, after: tuple[Any, str] | None
) -> Any:
    """The statement of one search page (``limit`` + 1 rows, to know whether more follow)."""
    thing_id: Any
    key: Any
    if sort == "relevance" and filters.text is not None:
        # Ranking reads every match it ranks, and a word most descriptions contain matches them all: so the
        # matches ranked are the first RANK_CANDIDATES in title order (all of them when there are fewer). Whether
        # a match has expired is read after the ranking, for the page only (joined in rank order, as far as it
        # needs): checking it for every candidate first is a lookup per candidate, a large share of the search
        # for a word in every description. An expired description not yet purged (within ``purge_interval``)
        # may so take the place of a candidate; it is never answered.
        source = thing_summaries if filters.readers.everything else _joined()  # a tenant's rows are chosen first
        candidates = (
            select(thing_summaries.c.thing_id, thing_summaries.c.summary, thing_summaries.c.search)
            .select_from(source)
            .where(*_where(filters, versions, expired_too=True))
            .order_by(thing_summaries.c.title_key, thing_summaries.c.thing_id)
            .limit(RANK_CANDIDATES)
            .subquery("candidates")
        )
        relevance = _relevance(candidates.c.search, filters)
        ranked = (
            select(candidates.c.thing_id, candidates.c.summary, relevance.label("relevance"))
            .order_by(relevance.desc(), candidates.c.thing_id)
            .subquery("ranked")
        )
        thing_id, key = ranked.c.thing_id, ranked.c.relevance
        query = (
            select(thing_id, ranked.c.summary, descriptions.c.modified, descriptions.c.expires, key.label("sort_key"))
            .select_from(ranked.join(descriptions, descriptions.c.id == thing_id))
            .where(live())
        )
        descending = True
    else:
        conditions = _where(filters, versions)
        thing_id = thing_summaries.c.thing_id
        if sort == "modified":
            # (modified DESC, id) is an index: the newest are read first and the scan stops at the page's end.
            key, descending, thing_id = descriptions.c.modified, True, descriptions.c.id
        elif sort == "expires":
            # Descriptions with a lease, the soonest to expire first (the expiry index serves the purge too).
            key, descending, thing_id = descriptions.c.expires, False, descriptions.c.id
            conditions = [*conditions, descriptions.c.expires.is_not(None)]
        else:
            key, descending = thing_summaries.c.title_key, False
        columns = (thing_summaries.c.summary, descriptions.c.modified, descriptions.c.expires)
        query = (
            select(thing_id.label("thing_id"), *columns, key.label("sort_key"))
            .select_from(_joined())
            .where(*conditions)
        )
    if after is not None:
        after_key, after_id = after
        beyond = key < after_key if descending else key > after_key
        query = query.where(or_(beyond, and_(key == after_key, thing_id > after_id)))
    return query.order_by(key.desc() if descending else key.asc(), thing_id.asc()).limit(limit + 1)


def _write_summary_statement() -> Any:
    """Summary upsert, capability rows (the surplus deleted, the others upserted), the first version of a
    description, and the versions kept before: one statement. Upserts skip rows that would not change."""
    thing_id = bindparam("thing_id", type_=Text)
    # The description's vendor, on its summary and on each of its capability rows.
    vendor_name = bindparam("vendor_name", type_=Text)
    summary = pg_insert(thing_summaries).values(
        thing_id=thing_id,
        kind=bindparam("kind"),
        title=bindparam("title"),
        title_key=bindparam("title_key"),
        vendor_name=vendor_name,
        vendor_key=bindparam("vendor_key"),
        version=bindparam("version"),
        types=bindparam("types", type_=ARRAY(Text)),
        capability_keys=bindparam("capability_keys", type_=ARRAY(Text)),
        summary=cast(bindparam("summary", type_=Text), JSONB),
        search=_weighted(bindparam("title_text", type_=Text), "A")
        .op("||")(_weighted(bindparam("body_text", type_=Text), "B"))
        .op("||")(_weighted(bindparam("capability_text", type_=Text), "C"))
        .op("||")(_weighted(bindparam("example_text", type_=Text), "D")),
    )
    summary = summary.on_conflict_do_update(
        index_elements=[thing_summaries.c.thing_id], **_changed(thing_summaries, summary.excluded, ["thing_id"])
    )
    names = bindparam("names", type_=ARRAY(Text))
    offered = func.unnest(
        bindparam("sources", type_=ARRAY(Text)),
        bindparam("capability_ids", type_=ARRAY(Text)),
        names,
        bindparam("name_keys", type_=ARRAY(Text)),
        bindparam("versions", type_=ARRAY(Text)),
    ).table_valued("source", "capability_id", "name", "name_key", "version", with_ordinality="ordinal")
    offered = offered.render_derived()
    capabilities = pg_insert(thing_capabilities).from_select(
        ["thing_id", "position", "source", "capability_id", "name", "name_key", "version", "vendor_name"],
        select(
            thing_id,
            offered.c.ordinal - 1,
            offered.c.source,
            offered.c.capability_id,
            offered.c.name,
            offered.c.name_key,
            offered.c.version,
            vendor_name,
        ),
    )
    capabilities = capabilities.on_conflict_do_update(
        index_elements=[thing_capabilities.c.thing_id, thing_capabilities.c.position],
        **_changed(thing_capabilities, capabilities.excluded, ["thing_id", "position"]),
    )
    surplus = delete(thing_capabilities).where(
        thing_capabilities.c.thing_id == thing_id, thing_capabilities.c.position >= func.cardinality(names)
    )
    first_version = bindparam("first_version", type_=Text)
    version = pg_insert(thing_versions).from_select(
        ["thing_id", "version", "document_text", "registered", "revision"],
        select(
            thing_id,
            first_version,
            bindparam("document_text", type_=Text),
            func.now(),
            bindparam("revision", type_=BigInteger),
        ).where(first_version.is_not(None), ~exists().where(thing_versions.c.thing_id == thing_id)),
    )
    version = version.on_conflict_do_nothing(index_elements=[thing_versions.c.thing_id, thing_versions.c.version])
    # Data-modifying CTEs run to completion whether or not the query reads them; the query sees the versions
    # as they were before the statement.
    return (
        select(func.array_agg(thing_versions.c.version))
        .where(thing_versions.c.thing_id == thing_id)
        .add_cte(
            summary.cte("summary"),
            surplus.cte("surplus"),
            capabilities.cte("capabilities"),
            version.cte("first_version"),
        )
    )


def _changed(table: Any, excluded: Any, key: list[str]) -> dict[str, Any]:
    """``set_`` and ``where`` of an ON CONFLICT DO UPDATE that leaves an unchanged row alone (generated columns
    follow by themselves)."""
    columns = [column.name for column in table.c if column.name not in key and column.computed is None]
    return {
        "set_": {name: excluded[name] for name in columns},
        "where": tuple_(*(table.c[name] for name in columns)).is_distinct_from(
            tuple_(*(excluded[name] for name in columns))
        ),
    }


_WRITE_SUMMARY = Statement.of(_write_summary_statement())
_VERSION_TEXT = Statement.of(
    select(thing_versions.c.document_text).where(
        thing_versions.c.thing_id == bindparam("thing_id"), thing_versions.c.version == bindparam("version")
    )
)
_KEEP_VERSION = Statement.of(
    pg_insert(thing_versions)
    .values(
        thing_id=bindparam("thing_id"),
        version=bindparam("version"),
        document_text=bindparam("document_text"),
        registered=func.now(),
        revision=bindparam("revision"),
        previous_version=bindparam("previous_version", type_=Text),
        compatibility=cast(bindparam("compatibility", type_=Text), JSONB),
    )
    .on_conflict_do_nothing(index_elements=[thing_versions.c.thing_id, thing_versions.c.version])
)


_REMOVE_SUMMARIES = Statement.of(
    delete(thing_summaries).where(thing_summaries.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text))))
)
_REMOVE_CAPABILITIES = Statement.of(
    delete(thing_capabilities).where(thing_capabilities.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text))))
)


@dataclasses.dataclass(frozen=True, slots=True)
class SummaryWrite:
    """What the catalog stores of one written description."""

    row: SummaryRow
    capabilities: Sequence[CapabilityRow]
    #: The version written (None without one): the statement keeps it if the description has none kept yet.
    first_version: NewVersion | None


def _summary_values(write: SummaryWrite) -> dict[str, Any]:
    row, capabilities, first_version = write.row, write.capabilities, write.first_version
    title_text, body_text, capability_text, example_text = row.search_texts
    return {
        "thing_id": row.thing_id,
        "kind": row.kind,
        "title": row.title,
        "title_key": (row.title or "").lower()[:TITLE_KEY_LENGTH],
        "vendor_name": row.vendor_name,
        "vendor_key": row.vendor_name.lower() if row.vendor_name else None,
        "version": row.version,
        "types": row.types,
        "capability_keys": [key for item in capabilities for key in capability_keys(item.capability_id, item.name)],
        "summary": row.summary_json,
        "title_text": title_text,
        "body_text": body_text,
        "capability_text": capability_text,
        "example_text": example_text,
        "sources": [capability.source for capability in capabilities],
        "capability_ids": [capability.capability_id for capability in capabilities],
        "names": [capability.name for capability in capabilities],
        "name_keys": [capability.name.lower() for capability in capabilities],
        "versions": [capability.version for capability in capabilities],
        "first_version": None if first_version is None else first_version.version,
        "document_text": None if first_version is None else first_version.document_text,
        "revision": None if first_version is None else first_version.revision,
    }


class CatalogStore:
    def __init__(self, database: Database, *, search_timeout: float = SEARCH_TIMEOUT) -> None:
        """``search_timeout``: seconds each statement of a search or facet count may run (the client chooses
        their cost: terms matching most of the catalogue, facets over all of it)."""
        # Other reads are single indexed statements (or tolerate seeing two snapshots): on the pool, no BEGIN/COMMIT.
        self.database = database
        self.search_timeout = search_timeout

    async def _bounded(self, read: Callable[[Transaction], Awaitable[T]]) -> T:
        """``read`` in a read-only transaction whose statements stop after ``search_timeout`` (503, never a held
        core), on the read replica while it keeps up (``Database.run_search``)."""
        try:
            return await self.database.run_search(read, seconds=self.search_timeout)
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
        rows = await tx.fetchmany(_WRITE_SUMMARY, [_summary_values(write) for write in writes])
        return [list(record[0] or ()) for record in rows]

    @staticmethod
    async def version_text(tx: Transaction, thing_id: str, version: str) -> str:
        return str(await tx.fetchval(_VERSION_TEXT, thing_id=thing_id, version=version))

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
            _KEEP_VERSION,
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
        await tx.execute(_REMOVE_SUMMARIES, ids=list(thing_ids))
        await tx.execute(_REMOVE_CAPABILITIES, ids=list(thing_ids))

    # -- reads

    @staticmethod
    async def _accepted_versions(executor: Executor, filters: Filters) -> list[str] | None:
        """The distinct versions of the filtered capability that ``capability_accepts`` (a range test) accepts."""
        if filters.capability is None or filters.capability_accepts is None:
            return None
        query = (
            select(thing_capabilities.c.version)
            .where(
                _capability_match(filters.capability, filters.capability.lower()),
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
            return await tx.fetch(search_query(narrowed, versions, sort, limit, after))

        rows = await self._bounded(read)
        more = len(rows) > limit
        rows = rows[:limit]
        last = (rows[-1]["sort_key"], rows[-1]["thing_id"]) if more and rows else None
        return Page(rows=rows, last=last)

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
        convention = _convention()
        conventions = (
            select(convention.label("value"), count)
            .select_from(joined)
            .where(convention.is_not(None))
            .group_by(convention)
        )
        result: dict[str, list[tuple[str, int]]] = {}
        facets = (("kind", kinds), ("vendor", vendors), ("capability", capabilities), ("convention", conventions))
        for name, query in facets:
            rows = await executor.fetch(query)
            counted: list[tuple[str, int]] = [(row[0], row[1]) for row in rows]
            result[name] = sorted(counted, key=lambda item: (-item[1], item[0]))
        return result

    async def summary(self, thing_id: str) -> tuple[dict[str, Any], dt.datetime, dt.datetime | None] | None:
        query = (
            select(thing_summaries.c.summary, descriptions.c.modified, descriptions.c.expires)
            .select_from(_joined())
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
        statement = _versions_statement(readers.everything)
        rows = await self._resolution_rows(statement, _offers_values(capability, readers))
        return (rows[0][1] if rows else 0), [row[0] for row in rows]

    async def offered_vendors(self, capability: str, readers: TenantScope = EVERYTHING) -> list[str]:
        """The distinct vendor names of the providers of ``capability`` ("" for none): vendor rules are decided on
        these."""
        statement = _vendors_statement(readers.everything)
        return [row[0] for row in await self._resolution_rows(statement, _offers_values(capability, readers))]

    async def ranked_providers(
        self, ranking: Ranking, limit: int, readers: TenantScope = EVERYTHING
    ) -> list[RankedProvider]:
        """The first ``limit`` live providers in range the vendor rules accept, in ``ranking``'s order (vendor
        preference, version rank, id), each with its best offer. The offers in range are sorted first and their
        descriptions read in that order until the page is full."""
        statement = _ranked_statement(readers.everything, bool(ranking.vendor_notes or ranking.preferences))
        rows = await self._resolution_rows(statement, {"limit": limit, **_ranking_values(ranking, readers)})
        return [RankedProvider(Offer(*row[:4]), row[4], row[5]) for row in rows]

    async def left_out(self, ranking: Ranking, limit: int, readers: TenantScope = EVERYTHING) -> list[LeftOut]:
        """The first ``limit`` providers ``ranking`` leaves out, with why (no version in range, expired, vendor):
        those in range first, in rank order, then the others by id. Asked for when fewer than a page were chosen,
        so at most that many accepted providers are read past."""
        statement = _left_out_statement(readers.everything)
        rows = await self._resolution_rows(statement, {"limit": limit, **_ranking_values(ranking, readers)})
        return [LeftOut(*row) for row in rows]

    async def outline(self, ranking: Ranking, readers: TenantScope = EVERYTHING) -> Outline:
        """What the providers of the capability have in common, to say why none was chosen (every offer is read:
        asked for only when none was)."""
        statement = _outline_statement(readers.everything)
        (row,) = await self._resolution_rows(statement, _ranking_values(ranking, readers))  # an aggregate: one row
        return Outline(row[0], row[1], row[2], list(row[3] or []))

    async def versions(self, thing_id: str, readers: TenantScope = EVERYTHING) -> list[VersionRow]:
        """The kept versions of ``thing_id`` that ``readers`` may see (:func:`_kept_for`)."""
        query = select(*_VERSION_COLUMNS).where(thing_versions.c.thing_id == thing_id, *_kept_for(readers))
        return [VersionRow(*row) for row in await self.database.fetch(query)]

    async def version(self, thing_id: str, version: str, readers: TenantScope = EVERYTHING) -> VersionRow | None:
        query = select(*_VERSION_COLUMNS).where(
            thing_versions.c.thing_id == thing_id, thing_versions.c.version == version, *_kept_for(readers)
        )
        row = await self.database.fetchrow(query)
        return None if row is None else VersionRow(*row)


def _kept_for(readers: TenantScope) -> tuple[ColumnElement[bool], ...]:
    """Kept versions are their registrant's tenant's: a version is seen by the readers of the tenant of the change
    that registered it (the change log keeps it after the description is deleted, and when another tenant takes
    the id later)."""
    if readers.everything:
        return ()
    registered_in = select(changes.c.seq).where(
        changes.c.seq == thing_versions.c.revision, of_tenant(changes.c.tenant, readers.tenant)
    )
    return (exists(registered_in),)


# -- capability resolution: statements compiled once per shape, values bound per request (compiling them per
# request cost more CPU than PostgreSQL's work on a small catalogue)


def _offers_values(capability: str, readers: TenantScope) -> dict[str, Any]:
    return {"capability": capability, "capability_key": capability.lower(), "tenant": readers.tenant}


def _ranking_values(ranking: Ranking, readers: TenantScope) -> dict[str, Any]:
    ranked = [(version, rank) for version, rank in ranking.version_ranks.items() if version is not None]
    return {
        **_offers_values(ranking.capability, readers),
        "range_versions": [version for version, _ in ranked],
        "range_ranks": [rank for _, rank in ranked],
        "unversioned_rank": ranking.version_ranks.get(None),
        "noted_vendors": list(ranking.vendor_notes),
        "vendor_notes": list(ranking.vendor_notes.values()),
        "preferred_vendors": list(ranking.preferences),
        "vendor_preferences": list(ranking.preferences.values()),
        "default_preference": ranking.default_preference,
    }


#: What resolution reads of an offer: the columns its two indexes hold, so that they are read alone.
_OFFER_COLUMNS = (
    thing_capabilities.c.thing_id,
    thing_capabilities.c.position,
    thing_capabilities.c.capability_id,
    thing_capabilities.c.name,
    thing_capabilities.c.version,
    thing_capabilities.c.vendor_name,
)


def _bound_offers(everything: bool) -> Any:
    """The offers of the bound capability a reader of the bound tenant may see (by id, or by name in any case).

    Two index-only scans, each offer from one of them, rather than one scan for either condition: a capability's
    offers lie scattered over the table, and reading their rows costs a page each, many times what the covering
    indexes cost."""
    capability = bindparam("capability", type_=Text)
    by_id = select(*_OFFER_COLUMNS).where(thing_capabilities.c.capability_id == capability)
    by_name_only = select(*_OFFER_COLUMNS).where(
        thing_capabilities.c.name_key == bindparam("capability_key", type_=Text),
        thing_capabilities.c.capability_id.is_distinct_from(capability),
    )
    offers = union_all(by_id, by_name_only)
    if everything:
        return offers
    matched = offers.subquery("matched")
    return (
        select(matched)
        .join(descriptions, descriptions.c.id == matched.c.thing_id)
        .where(of_tenant(descriptions.c.tenant, bindparam("tenant", type_=Text)))
    )


def _best_offers(everything: bool, *, in_range_only: bool) -> Any:
    """One row per provider of the capability: its best offer and that offer's rank (None: out of range),
    in range (by rank) first, then by id. Reads the capability's offers only (from its indexes): a query that
    orders by (rank nulls last, thing_id) reads their descriptions in that order, as far as it needs."""
    offers = _bound_offers(everything).subquery("offers")
    in_range = (
        func.unnest(bindparam("range_versions", type_=ARRAY(Text)), bindparam("range_ranks", type_=ARRAY(BigInteger)))
        .table_valued("version", "rank")
        .render_derived()
    )
    unversioned = case((offers.c.version.is_(None), bindparam("unversioned_rank", type_=BigInteger)))
    rank = func.coalesce(in_range.c.rank, unversioned)
    query = (
        select(
            offers.c.thing_id,
            offers.c.capability_id,
            offers.c.name,
            offers.c.version,
            offers.c.vendor_name,
            rank.label("rank"),
        )
        .select_from(offers.outerjoin(in_range, in_range.c.version == offers.c.version))
        .ext(distinct_on(offers.c.thing_id))
        .order_by(offers.c.thing_id, rank.asc().nulls_last(), offers.c.position)
    )
    if in_range_only:
        query = query.where(rank.is_not(None))
    best = query.subquery("best")
    return select(best).order_by(best.c.rank.asc().nulls_last(), best.c.thing_id).subquery("ordered")


def _vendor_rules() -> tuple[Any, Any]:
    """What the vendor rules say of an offer's vendor ("" for none; see ``_offer_vendor``): the table of noted
    vendor names (its ``note`` is None for an accepted vendor once outer-joined) and the table of preferred ones."""
    notes = (
        func.unnest(bindparam("noted_vendors", type_=ARRAY(Text)), bindparam("vendor_notes", type_=ARRAY(Text)))
        .table_valued("name", "note")
        .render_derived()
    )
    preferences = (
        func.unnest(
            bindparam("preferred_vendors", type_=ARRAY(Text)), bindparam("vendor_preferences", type_=ARRAY(BigInteger))
        )
        .table_valued("name", "rank")
        .render_derived()
    )
    return notes, preferences


def _offer_vendor(offers: Any) -> Any:
    """The vendor name of an offer as vendor rules name it ("" for none)."""
    return func.coalesce(offers.c.vendor_name, "")


_LIMIT = bindparam("limit", type_=BigInteger)
_IS_LIVE = and_(thing_summaries.c.thing_id.is_not(None), live())


@functools.cache
def _versions_statement(everything: bool) -> Statement:
    # A CTE read twice is materialised: the offers are read once.
    offers = _bound_offers(everything).cte("offers")
    considered = select(func.count(offers.c.thing_id.distinct())).scalar_subquery()
    return Statement.of(select(offers.c.version, considered).group_by(offers.c.version))


@functools.cache
def _vendors_statement(everything: bool) -> Statement:
    offers = _bound_offers(everything).subquery("offers")
    return Statement.of(select(_offer_vendor(offers)).distinct())


@functools.cache
def _ranked_statement(everything: bool, vendor_rules: bool) -> Statement:
    """The offers in range are ranked (by vendor preference when there are ``vendor_rules``, version rank, id)
    before any description is read: their descriptions are read in that order, a page's worth."""
    best = _best_offers(everything, in_range_only=True)
    ranked: Any = best
    order: tuple[Any, ...] = (best.c.rank.asc().nulls_last(), best.c.thing_id)
    if vendor_rules:
        notes, preferences = _vendor_rules()
        preference = func.coalesce(preferences.c.rank, bindparam("default_preference", type_=BigInteger))
        vendor = _offer_vendor(best)
        # Sorted in a subquery of its own (which PostgreSQL keeps): the page is cut before the joins below.
        ranked = (
            select(best, preference.label("preference"))
            .select_from(
                best.outerjoin(notes, notes.c.name == vendor).outerjoin(preferences, preferences.c.name == vendor)
            )
            .where(notes.c.note.is_(None))
            .order_by(preference, best.c.rank.asc().nulls_last(), best.c.thing_id)
            .subquery("ranked")
        )
        order = (ranked.c.preference, ranked.c.rank.asc().nulls_last(), ranked.c.thing_id)
    return Statement.of(
        select(ranked.c.thing_id, ranked.c.capability_id, ranked.c.name, ranked.c.version, thing_summaries.c.title)
        .add_columns(ranked.c.vendor_name)
        .select_from(
            ranked.join(descriptions, descriptions.c.id == ranked.c.thing_id).join(
                thing_summaries, thing_summaries.c.thing_id == ranked.c.thing_id
            )
        )
        .where(live())
        .order_by(*order)
        .limit(_LIMIT)
    )


@functools.cache
def _left_out_statement(everything: bool) -> Statement:
    notes, _ = _vendor_rules()
    best = _best_offers(everything, in_range_only=False)
    reason = case(
        (best.c.rank.is_(None), literal(OUT_OF_RANGE)),
        (~_IS_LIVE, literal(EXPIRED)),
        else_=notes.c.note,
    )
    return Statement.of(
        select(best.c.thing_id, best.c.version, best.c.vendor_name, reason)
        .select_from(
            best.outerjoin(descriptions, descriptions.c.id == best.c.thing_id)
            .outerjoin(thing_summaries, thing_summaries.c.thing_id == best.c.thing_id)
            .outerjoin(notes, notes.c.name == _offer_vendor(best))
        )
        .where(reason.is_not(None))
        .order_by(best.c.rank.asc().nulls_last(), best.c.thing_id)
        .limit(_LIMIT)
    )


@functools.cache
def _outline_statement(everything: bool) -> Statement:
    offers = _bound_offers(everything).subquery("offers")
    best = _best_offers(everything, in_range_only=False)
    joined = (
        offers.join(best, best.c.thing_id == offers.c.thing_id)
        .outerjoin(descriptions, descriptions.c.id == offers.c.thing_id)
        .outerjoin(thing_summaries, thing_summaries.c.thing_id == offers.c.thing_id)
    )
    in_range = best.c.rank.is_not(None)
    return Statement.of(
        select(
            func.coalesce(func.bool_or(and_(in_range, _IS_LIVE)), False),
            func.coalesce(func.bool_or(in_range), False),
            func.coalesce(func.bool_or(_IS_LIVE), False),
            func.array_agg(offers.c.version.distinct()).filter(and_(_IS_LIVE, offers.c.version.is_not(None))),
        ).select_from(joined)
    )


__all__ = [
    "CapabilityRow",
    "CatalogStore",
    "Filters",
    "LeftOut",
    "NewVersion",
    "Offer",
    "Outline",
    "Page",
    "RankedProvider",
    "Ranking",
    "SummaryRow",
    "SummaryWrite",
    "VersionRow",
]
