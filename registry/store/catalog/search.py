"""Filters as SQL: the conditions of a search, facet count or vector search, and the statement of a search page."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    and_,
    case,
    cast,
    exists,
    func,
    literal,
    literal_column,
    or_,
    select,
    union_all,
)
from sqlalchemy.dialects.postgresql import REGCONFIG

from registry.descriptions.model import (
    A2A_CARD_TYPE,
    CONVENTION_A2A,
    CONVENTION_LMOS,
    CONVENTION_MCP,
    MCP_SERVER_TYPE,
)
from registry.descriptions.summary import KIND_AGENT, KIND_TOOL, vendor_words
from registry.store.catalog.rows import Filters
from registry.store.catalog.words import PASS_ROWS, TOP_UP_ROWS, Passes
from registry.store.tables import (
    SEARCH_CONFIG,
    VENDOR_PREFIX_CHARS,
    capability_keys,
    descriptions,
    kind_key,
    live,
    of_tenant,
    thing_capabilities,
    thing_summaries,
    vendor_prefix_key,
)


def _text_search_config(name: str) -> Any:
    """A text search configuration as a constant of the statement, not a bound parameter: a parameter is cast to
    ``regconfig`` at run time, so ``websearch_to_tsquery`` of it is not folded into a constant either, and a
    filter evaluated row by row parses the words again for every row (for a word in every description, half of a
    search's time)."""
    return literal_column(f"'{name}'", type_=REGCONFIG)


TEXT_CONFIG = _text_search_config(SEARCH_CONFIG)
#: Vendor names are matched as words, without stemming (thing_summaries.vendor_words).
_WORDS_CONFIG = _text_search_config("simple")
#: Distinct vendor names a fuzzy vendor filter compares (the most frequent first).
FUZZY_VENDOR_CANDIDATES = 10_000

#: Vendor words whose ``filter_keys`` entry is certain to be the word as PostgreSQL's parser reads it: letters alone
#: or digits alone. Others may be split or normalised otherwise (the parser reads ``62e8546e`` as the number
#: ``62e8546`` and the word ``e``, ``3e5labs`` as ``3e5`` and ``labs``): their match is left to ``vendor_words``.
_PLAIN_WORD = re.compile(r"[a-z]+|[0-9]+")

#: Matches a relevance-sorted search of all words (``match=all``) ranks at most, the first in title order (see
#: :func:`search_query`; a need in plain words picks its candidates by its words' frequencies: :func:`need_query`).
RANK_CANDIDATES = 1000
#: ``ts_rank_cd``'s weights of the full-text classes (D, C, B, A) in a need's ranking. D holds what the products a
#: description names are known for (registry/descriptions/gazetteer.py) and its examples: the words of tasks a need
#: in plain words uses, so they count a little more than PostgreSQL's default 0.1 (tuned on bench/nl_eval's dev
#: split, docs/performance.md). Titles (A), descriptions (B) and capabilities (C) keep the default.
NEED_CLASS_WEIGHTS = (0.25, 0.2, 0.4, 1.0)


def capability_match(capability: Any, name_key: Any) -> ColumnElement[bool]:
    """An offer of ``capability`` (a value or a bound parameter): by id, or by name in any case (``name_key``)."""
    return or_(thing_capabilities.c.capability_id == capability, thing_capabilities.c.name_key == name_key)


def filter_conditions(
    filters: Filters, versions: list[str] | None, *, expired_too: bool = False
) -> list[ColumnElement[bool]]:
    """Conditions of ``filters``; ``versions``: the capability versions ``capability_accepts`` chose;
    ``expired_too``: without the one that leaves out expired descriptions (the caller checks it)."""
    return [*reader_conditions(filters, expired_too=expired_too), *summary_conditions(filters, versions)]


def reader_conditions(filters: Filters, *, expired_too: bool = False) -> list[ColumnElement[bool]]:
    """The conditions of ``filters`` on the descriptions table: live (unless ``expired_too``), of the readers'
    tenant."""
    clauses: list[ColumnElement[bool]] = [] if expired_too else [live()]
    if not filters.readers.everything:
        clauses.append(of_tenant(descriptions.c.tenant, filters.readers.tenant))
    return clauses


def summary_conditions(filters: Filters, versions: list[str] | None) -> list[ColumnElement[bool]]:
    """The conditions of ``filters`` on the summaries (and, for capability versions, their offers)."""
    # Kind, vendor words and capability are keys of one GIN index (thing_summaries.filter_keys): one scan that
    # skips to the rows holding every key, where an index per filter built a bitmap of each filter's matches.
    required = [] if filters.kind is None else [kind_key(filters.kind)]
    vendor_keys, clauses = _vendor_conditions(filters)
    required += vendor_keys
    if required:
        clauses.append(thing_summaries.c.filter_keys.contains(required))
    if filters.type is not None:
        clauses.append(thing_summaries.c.types.contains([filters.type]))
    if filters.convention is not None:
        clauses.append(convention_of_summary() == filters.convention)
    if filters.text is not None:
        clauses.append(thing_summaries.c.search.op("@@")(_query(filters)))
    return clauses + _capability_conditions(filters, versions)


def _vendor_conditions(filters: Filters) -> tuple[list[str], list[ColumnElement[bool]]]:
    """The filter keys and the conditions of the vendor filter: its name's key (exact, fuzzy), or its words' prefix
    keys and, for words those keys do not decide, a condition on the name's words."""
    vendor = filters.vendor
    if vendor is None:
        return [], []
    if filters.vendor_match == "exact":
        return [], [thing_summaries.c.vendor_key == vendor.lower()]
    if filters.vendor_match == "fuzzy":
        return [], [thing_summaries.c.vendor_key.in_(filters.vendor_keys)]
    words = vendor_words(vendor)
    keys = [vendor_prefix_key(word) for word in words if _PLAIN_WORD.fullmatch(word)]
    if all(_PLAIN_WORD.fullmatch(word) and len(word) <= VENDOR_PREFIX_CHARS for word in words):
        return keys, []
    # The keys decide for plain words the prefixes cover (a word is a key exactly when a word of the name starts
    # with it); the words' own condition decides for the others.
    prefixes = func.to_tsquery(_WORDS_CONFIG, vendor_prefix_query(vendor))
    return keys, [thing_summaries.c.vendor_words.op("@@")(prefixes)]


def _capability_conditions(filters: Filters, versions: list[str] | None) -> list[ColumnElement[bool]]:
    """The conditions of the capability filter: its keys, and among the candidates an offer in ``versions``."""
    if filters.capability is None:
        return []
    # The keys a filter for an id or a name matches, in the same index as the kind and vendor keys.
    clauses = [thing_summaries.c.filter_keys.overlap(capability_keys(filters.capability, filters.capability))]
    if versions is not None:  # and among the candidates, those that offer it in a version accepted
        offered = capability_match(filters.capability, filters.capability.lower())
        condition = and_(thing_capabilities.c.thing_id == thing_summaries.c.thing_id, offered)
        clauses.append(exists().where(condition, thing_capabilities.c.version.in_(versions)))
    return clauses


def vendor_prefix_query(vendor: str) -> str:
    """``Deutsche Tele`` → ``deutsche:* & tele:*`` (words only, so nothing in it is tsquery syntax)."""
    return " & ".join(f"{word}:*" for word in vendor_words(vendor))


def convention_of_summary() -> Any:
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
        return func.to_tsquery(TEXT_CONFIG, filters.text_query or "")
    return func.websearch_to_tsquery(TEXT_CONFIG, filters.text)


def _weighted_relevance(search: Any, weights: tuple[tuple[str, float], ...]) -> Any:
    """0..1: the sum over the words of their rarity weight times their own ``ts_rank_cd``, over that sum + 1 (as
    normalisation 32 does for one rank). Words all in every description weigh alike (none is rarer)."""
    if not any(weight > 0.0 for _, weight in weights):
        weights = tuple((word, 1.0) for word, _ in weights)
    classes: Any = literal_column(f"'{{{','.join(map(str, NEED_CLASS_WEIGHTS))}}}'::float4[]")
    ranks = [
        func.ts_rank_cd(classes, search, func.to_tsquery(TEXT_CONFIG, word), literal_column("0"))
        * literal_column(f"{weight:.6f}")
        for word, weight in weights
        if weight > 0.0
    ]
    total = sum(ranks[1:], ranks[0])
    return cast(total / (total + 1.0), Float)


def _relevance(search: Any, filters: Filters) -> Any:
    """0..1: ``ts_rank_cd`` over rank + 1 (normalisation 32), so that it is comparable across queries."""
    return cast(func.ts_rank_cd(search, _query(filters), literal_column("32")), Float)


def need_query(filters: Filters, versions: list[str] | None, passes: Passes, limit: int) -> Any:
    """The ``limit`` best full-text matches of a need read in ``passes`` (registry/store/catalog/words.py), best
    first, in one statement: the common words' pass runs only when the first brings fewer than ``limit`` (a
    ``LIMIT`` of 0 does not run what it limits)."""

    def selective(limit: Any) -> Any:
        assert passes.selective is not None
        return _need_pass(
            filters, versions, passes.selective, None, read=PASS_ROWS, limit=limit, weights=passes.weights
        )

    def common(limit: Any, excluded: str | None) -> Any:
        assert passes.common is not None
        return _need_pass(
            filters,
            versions,
            passes.common,
            excluded,
            read=TOP_UP_ROWS,
            limit=limit,
            sample=passes.sample,
            weights=passes.weights,
        )

    if passes.common is None:
        return selective(limit)
    if passes.selective is None:
        return common(limit, None)
    first = selective(limit).cte("first_pass")
    short = func.greatest(0, limit - select(func.count()).select_from(first).scalar_subquery())
    second = common(short, passes.selective).subquery("second_pass")
    both = union_all(select(first), select(second)).subquery("passes")
    return select(both).order_by(both.c.sort_key.desc(), both.c.thing_id)


def _need_pass(
    filters: Filters,
    versions: list[str] | None,
    matched: str,
    excluded: str | None,
    *,
    read: int,
    limit: Any,
    sample: float | None = None,
    weights: tuple[tuple[str, float], ...] = (),
) -> Any:
    """One pass over a need's words: up to ``read`` descriptions matching the ``to_tsquery`` text ``matched`` and
    not ``excluded`` (an earlier pass's), ranked on all the need's words (``filters.text_query``); the ``limit``
    best that have not expired. The matches are read through the full-text index (the caller has the planner use it
    rather than scan the table, which the ``LIMIT`` would make look cheap), or, ``sample`` and no filter, from that
    percentage of the table's pages; ``excluded`` is checked on those rows only (the function form of ``@@``, which
    no index serves)."""
    conditions = filter_conditions(dataclasses.replace(filters, text=None), versions, expired_too=True)
    table: Any = thing_summaries
    if sample is not None and not conditions:
        percent: Any = literal_column(f"{sample:.6f}")
        table = thing_summaries.tablesample(func.system(percent), name="sampled", seed=literal_column("0"))
    search = table.c.search
    conditions = [*conditions, search.op("@@")(func.to_tsquery(TEXT_CONFIG, matched))]
    if excluded is not None:
        conditions.append(~func.ts_match_vq(search, func.to_tsquery(TEXT_CONFIG, excluded)))
    source = table if filters.readers.everything else summaries_with_descriptions()
    chosen = (
        select(table.c.thing_id, table.c.summary, search).select_from(source).where(*conditions).limit(read)
    ).subquery("candidates")
    relevance = _weighted_relevance(chosen.c.search, weights) if weights else _relevance(chosen.c.search, filters)
    ranked = (
        select(chosen.c.thing_id, chosen.c.summary, relevance.label("relevance"))
        .order_by(relevance.desc(), chosen.c.thing_id)
        .subquery("ranked")
    )
    return (
        select(
            ranked.c.thing_id,
            ranked.c.summary,
            descriptions.c.modified,
            descriptions.c.expires,
            ranked.c.relevance.label("sort_key"),
        )
        .select_from(ranked.join(descriptions, descriptions.c.id == ranked.c.thing_id))
        .where(live())
        .order_by(ranked.c.relevance.desc(), ranked.c.thing_id)
        .limit(limit)
    )


def summaries_with_descriptions() -> Any:
    return thing_summaries.join(descriptions, descriptions.c.id == thing_summaries.c.thing_id)


def search_query(
    filters: Filters, versions: list[str] | None, sort: str, limit: int, after: tuple[Any, str] | None
) -> Any:
    """The statement of one search page (``limit`` + 1 rows, to know whether more follow)."""
    thing_id: Any
    key: Any
    if sort == "relevance" and filters.text is not None:
        # Ranking reads every match it ranks, and a word most descriptions contain matches them all: so the
        # matches ranked are the first RANK_CANDIDATES in title order (all of them when there are fewer), one
        # stable order for the pages a cursor walks (a need in plain words is answered by need_query). Whether
        # a match has expired is read after the ranking, for the page only (joined in rank order, as far as it
        # needs): checking it for every candidate first is a lookup per candidate, a large share of the search
        # for a word in every description. An expired description not yet purged (within ``purge_interval``)
        # may so take the place of a candidate; it is never answered.
        source = (
            thing_summaries if filters.readers.everything else summaries_with_descriptions()
        )  # a tenant's rows are chosen first
        candidates = (
            select(thing_summaries.c.thing_id, thing_summaries.c.summary, thing_summaries.c.search)
            .select_from(source)
            .where(*filter_conditions(filters, versions, expired_too=True))
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
        conditions = filter_conditions(filters, versions)
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
            .select_from(summaries_with_descriptions())
            .where(*conditions)
        )
    if after is not None:
        after_key, after_id = after
        beyond = key < after_key if descending else key > after_key
        # The first condition repeats what the second implies as a bound the sort's index seeks to: without it
        # the index is read from its first entry, every match before the cursor read and dropped.
        within = key <= after_key if descending else key >= after_key
        query = query.where(within, or_(beyond, and_(key == after_key, thing_id > after_id)))
    return query.order_by(key.desc() if descending else key.asc(), thing_id.asc()).limit(limit + 1)


def title_chunk(filters: Filters, versions: list[str] | None, size: int, after: tuple[Any, str] | None) -> Any:
    """Up to ``size`` summaries matching ``filters`` in title order past ``after``, cut before their descriptions
    are joined: the descriptions of these alone are read, each row saying whether its description is ``visible``
    (live). A join before the cut reads the description of every match, and a sort after it every match's.
    Readers of every tenant only (the rows another tenant's reader skips are not bounded); the caller drops the
    rows not visible and reads the next chunk while the page is not full (:meth:`CatalogStore.search`)."""
    key, thing_id = thing_summaries.c.title_key, thing_summaries.c.thing_id
    matching = select(thing_id, thing_summaries.c.summary, key).where(*summary_conditions(filters, versions))
    if after is not None:
        after_key, after_id = after
        # The first condition repeats what the second implies as a bound the title index seeks to.
        matching = matching.where(key >= after_key, or_(key > after_key, and_(key == after_key, thing_id > after_id)))
    matches = matching.order_by(key, thing_id).limit(size).subquery("matches")
    visible = and_(descriptions.c.id.is_not(None), live())
    return (
        select(
            matches.c.thing_id,
            matches.c.summary,
            descriptions.c.modified,
            descriptions.c.expires,
            matches.c.title_key.label("sort_key"),
            visible.label("visible"),
        )
        .select_from(matches.outerjoin(descriptions, descriptions.c.id == matches.c.thing_id))
        .order_by(matches.c.title_key, matches.c.thing_id)
    )


__all__ = [
    "FUZZY_VENDOR_CANDIDATES",
    "RANK_CANDIDATES",
    "TEXT_CONFIG",
    "capability_match",
    "convention_of_summary",
    "filter_conditions",
    "need_query",
    "reader_conditions",
    "search_query",
    "summaries_with_descriptions",
    "summary_conditions",
    "title_chunk",
    "vendor_prefix_query",
]
