"""What the statement timeout costs a search: a page of ``/api/v1/search`` read in a read-only transaction with
``SET LOCAL statement_timeout`` and the search planner settings (registry/store/database.py ``SEARCH_PLANNER``;
BEGIN and SET in one round trip, then the query, then COMMIT), against the same statement run alone on the pool
with PostgreSQL's default planner settings (the reference floor), on a generated catalogue.

    python bench/bench_bounded_search.py [--n 20000] [--rounds 7] [--requests 300]

Rounds alternate between the two, so drifting load on the machine touches both alike; each round reports the
median of its requests, and the summary the median and spread (min-max) of the round medians.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.catalogue import generate
from bench.rounds import Run, interleaved, main
from registry.store.catalog import CatalogStore, Filters, search_query
from registry.store.database import Database

CASES = {
    "rare word, by relevance": (Filters(text="topic42"), "relevance"),
    "vendor, by title": (Filters(vendor="Vendor 7"), "title"),
    # The filter of bench/suite.py's "filtered search" (one vendor word, as "Deutsche").
    "kind, vendor and capability, by title": (
        Filters(kind="agent", vendor="7", capability="urn:capability:17"),
        "title",
    ),
}


async def bounded(catalog: CatalogStore, filters: Filters, sort: str) -> None:
    await catalog.search(filters, sort, 20, None)


async def bare(database: Database, filters: Filters, sort: str) -> None:
    await database.fetch(search_query(filters, None, sort, 20, None))


async def measure(url: str, size: int, rounds: int, requests: int) -> None:
    database = Database(url, connections=2)
    await database.open()
    try:
        await generate(database, size)
        catalog = CatalogStore(database)
        for name, (filters, sort) in CASES.items():
            runs: dict[str, Run] = {
                "bare statement": functools.partial(bare, database, filters, sort),
                "statement_timeout": functools.partial(bounded, catalog, filters, sort),
            }
            await interleaved(f"{name} ({size} descriptions)", runs, rounds, requests, digits=3)
    finally:
        await database.close()


if __name__ == "__main__":
    main(__doc__, measure, size=20_000, rounds=7, requests=300)
