"""Facet counts: how the descriptions that match a search divide by kind, vendor, capability and convention."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from registry.store.catalog.rows import Filters
from registry.store.catalog.search import convention_of_summary, filter_conditions, summaries_with_descriptions
from registry.store.tables import thing_capabilities, thing_summaries

#: Facet lists are cut to the most frequent values.
FACET_LIMIT = 50


def facet_queries(filters: Filters, versions: list[str] | None) -> tuple[tuple[str, Any], ...]:
    """(facet, statement of its (value, count) rows) for the descriptions matching ``filters``; ``versions``: the
    capability versions ``capability_accepts`` chose."""
    matching = (
        select(thing_summaries.c.thing_id)
        .select_from(summaries_with_descriptions())
        .where(*filter_conditions(filters, versions))
        .cte("matching")
    )
    joined = thing_summaries.join(matching, matching.c.thing_id == thing_summaries.c.thing_id)
    count = func.count().label("total")
    kinds = select(thing_summaries.c.kind.label("value"), count).select_from(joined).group_by(thing_summaries.c.kind)
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
    convention = convention_of_summary()
    conventions = (
        select(convention.label("value"), count).select_from(joined).where(convention.is_not(None)).group_by(convention)
    )
    return (("kind", kinds), ("vendor", vendors), ("capability", capabilities), ("convention", conventions))


__all__ = ["FACET_LIMIT", "facet_queries"]
