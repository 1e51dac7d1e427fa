"""SQL of discovery: summary and capability rows written with each description, searches, facets, capability
resolution, versions.

Rows of ``thing_summaries`` / ``thing_capabilities`` follow their description (written and removed by the catalog
projection); rows of ``thing_versions`` are immutable and outlive it, so the history of an id can still be compared.

- ``rows``: the values statements take and give (filters, pages, offers, rankings, kept versions).
- ``search``: filters as SQL conditions, and the statement of a search page.
- ``facets``: facet counts over the matches of a search.
- ``resolution``: the statements of capability resolution, compiled once per shape.
- ``writes``: summary and capability rows written and removed with their description.
- ``versions``: kept versions, read for ``/versions`` and by the version policy.
- ``words``: how common each word of a need is, which decides the passes of a need's full-text search.
- ``store``: :class:`CatalogStore`, which runs them (searches bounded in time).
"""

from registry.store.catalog.facets import FACET_LIMIT
from registry.store.catalog.rows import (
    EXPIRED,
    OUT_OF_RANGE,
    CapabilityRow,
    Filters,
    LeftOut,
    NewVersion,
    Offer,
    Outline,
    Page,
    RankedProvider,
    Ranking,
    SummaryRow,
    SummaryWrite,
    VersionRow,
)
from registry.store.catalog.search import FUZZY_VENDOR_CANDIDATES, RANK_CANDIDATES, search_query, vendor_prefix_query
from registry.store.catalog.store import SEARCH_TIMEOUT, CatalogStore
from registry.store.catalog.writes import TITLE_KEY_LENGTH

__all__ = [
    "EXPIRED",
    "FACET_LIMIT",
    "FUZZY_VENDOR_CANDIDATES",
    "OUT_OF_RANGE",
    "RANK_CANDIDATES",
    "SEARCH_TIMEOUT",
    "TITLE_KEY_LENGTH",
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
    "search_query",
    "vendor_prefix_query",
]
