"""Capability resolution: statements compiled once per shape, values bound per request (compiling them per request
costs more CPU than PostgreSQL's work on a small catalogue)."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import BigInteger, Text, and_, bindparam, case, func, literal, select, true, union_all
from sqlalchemy.dialects.postgresql import ARRAY, distinct_on

from registry.store.catalog.rows import EXPIRED, OUT_OF_RANGE, Ranking
from registry.store.database import Statement
from registry.store.tables import (
    DESCRIPTIONS_OF_TENANT,
    descriptions,
    live,
    thing_capabilities,
    thing_summaries,
)
from registry.tenancy import TenantScope


def offers_values(capability: str, readers: TenantScope) -> dict[str, Any]:
    return {"capability": capability, "capability_key": capability.lower(), "tenant": readers.tenant}


def ranking_values(ranking: Ranking, readers: TenantScope) -> dict[str, Any]:
    ranked = [(version, rank) for version, rank in ranking.version_ranks.items() if version is not None]
    return {
        **offers_values(ranking.capability, readers),
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
    return select(matched).join(descriptions, descriptions.c.id == matched.c.thing_id).where(DESCRIPTIONS_OF_TENANT)


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
def versions_statement(everything: bool) -> Statement:
    if everything:
        # The offers are read twice from their covering indexes (index-only scans), which costs less than reading
        # them once into a materialised CTE and scanning that twice.
        offers, counted = _bound_offers(everything).subquery("offers"), _bound_offers(everything).subquery("counted")
    else:  # each offer is joined to its description (tenant): once, in a CTE read twice (materialised)
        offers = counted = _bound_offers(everything).cte("offers")
    considered = select(func.count(counted.c.thing_id.distinct())).scalar_subquery()
    return Statement.of(select(offers.c.version, considered).group_by(offers.c.version))


@functools.cache
def vendors_statement(everything: bool) -> Statement:
    offers = _bound_offers(everything).subquery("offers")
    return Statement.of(select(_offer_vendor(offers)).distinct())


def _first_providers(everything: bool, *, by_name: bool, versioned: bool) -> Any:
    """The first ``limit`` live providers (by id) offering the bound capability in each version in range (by id
    or, ``by_name``, by name only), each with the rank of that version; or (not ``versioned``) those offering it
    without a version, with the rank of unversioned offers if any. Each version's offers are read in provider
    order from its index (capability, version, thing_id, position) as far as a page of live ones: the cost of a
    page, whatever the number of providers."""
    offered = thing_capabilities.c
    capability = bindparam("capability", type_=Text)
    matched = (
        and_(
            offered.name_key == bindparam("capability_key", type_=Text),
            offered.capability_id.is_distinct_from(capability),
        )
        if by_name
        else offered.capability_id == capability
    )
    conditions = [matched, live()]
    if not everything:
        conditions.append(DESCRIPTIONS_OF_TENANT)
    offers = (
        select(*_OFFER_COLUMNS)
        .select_from(thing_capabilities.join(descriptions, descriptions.c.id == offered.thing_id))
        .ext(distinct_on(offered.thing_id))
        .order_by(offered.thing_id, offered.position)
        .limit(_LIMIT)
    )
    if not versioned:
        unversioned = bindparam("unversioned_rank", type_=BigInteger)
        return select(
            offers.where(*conditions, offered.version.is_(None), unversioned.is_not(None)).subquery(),
            unversioned.label("rank"),
        )
    in_range = (
        func.unnest(bindparam("range_versions", type_=ARRAY(Text)), bindparam("range_ranks", type_=ARRAY(BigInteger)))
        .table_valued("version", "rank")
        .render_derived()
    )
    page = offers.where(*conditions, offered.version == in_range.c.version).lateral("page")
    return select(page, in_range.c.rank).select_from(in_range.join(page, true()))


def _ranked_page(everything: bool) -> Statement:
    """The first ``limit`` providers in range by (version rank, id), each with its best offer, from the first
    ``limit`` providers of each version in range (``_first_providers``). Those are enough: a provider of the
    page is among the first ``limit`` of every version it offers in range at its best rank (every provider before
    it there comes before it in the page's order), so its best offer is among them, and a provider whose best
    offer is not among them ranks after the page."""
    branches = [
        _first_providers(everything, by_name=by_name, versioned=versioned)
        for by_name in (False, True)
        for versioned in (True, False)
    ]
    candidates = union_all(*branches).subquery("candidates")
    best = (
        select(candidates)
        .ext(distinct_on(candidates.c.thing_id))
        .order_by(candidates.c.thing_id, candidates.c.rank, candidates.c.position)
        .subquery("best")
    )
    # The page is cut before the titles are read: a summary per provider of the page, not per candidate.
    page = select(best).order_by(best.c.rank, best.c.thing_id).limit(_LIMIT).subquery("page")
    return Statement.of(
        select(page.c.thing_id, page.c.capability_id, page.c.name, page.c.version, thing_summaries.c.title)
        .add_columns(page.c.vendor_name)
        .select_from(page.join(thing_summaries, thing_summaries.c.thing_id == page.c.thing_id))
        .order_by(page.c.rank, page.c.thing_id)
    )


@functools.cache
def ranked_statement(everything: bool, vendor_rules: bool) -> Statement:
    """The offers in range are ranked (by vendor preference when there are ``vendor_rules``, version rank, id)
    before any description is read: their descriptions are read in that order, a page's worth. Without vendor
    rules, a page of providers of each version in range is read (``_ranked_page``), not every offer."""
    if not vendor_rules:
        return _ranked_page(everything)
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
def left_out_statement(everything: bool) -> Statement:
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
def outline_statement(everything: bool) -> Statement:
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
    "left_out_statement",
    "offers_values",
    "outline_statement",
    "ranked_statement",
    "ranking_values",
    "vendors_statement",
    "versions_statement",
]
