"""What the statement timeout costs a search: a page of ``/api/v1/search`` read in a read-only transaction with
``SET LOCAL statement_timeout`` and the search planner settings (registry/store/database.py ``SEARCH_PLANNER``;
BEGIN and SET in one round trip, then the query, then COMMIT), against the same statement run alone on the pool
with PostgreSQL's default planner settings (the reference floor), on a generated catalogue.

    python bench/bench_bounded_search.py [--n 20000] [--rounds 7] [--requests 300]

Rounds alternate between the two, so drifting load on the machine touches both alike; each round reports the
median of its requests, and the summary the median and spread (min-max) of the round medians.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.catalogue import generate
from registry.store.catalog import CatalogStore, Filters, search_query
from registry.store.database import Database
from tests.support.servers import fresh_database

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


async def round_median(run: Callable[[], Awaitable[None]], requests: int) -> float:
    durations = []
    for _ in range(requests):
        started = time.perf_counter()
        await run()
        durations.append(time.perf_counter() - started)
    return statistics.median(durations) * 1000


async def measure(url: str, size: int, rounds: int, requests: int) -> None:
    database = Database(url, connections=2)
    await database.open()
    try:
        await generate(database, size)
        catalog = CatalogStore(database)
        for name, (filters, sort) in CASES.items():
            medians: dict[str, list[float]] = {"bare statement": [], "statement_timeout": []}
            runs: dict[str, Callable[[], Awaitable[None]]] = {
                "bare statement": functools.partial(bare, database, filters, sort),
                "statement_timeout": functools.partial(bounded, catalog, filters, sort),
            }
            for _ in range(rounds):
                for kind, run in runs.items():
                    medians[kind].append(await round_median(run, requests))
            print(f"{name} ({size} descriptions, {rounds} rounds of {requests}):")
            for kind, values in medians.items():
                print(
                    f"  {kind:18} median {statistics.median(values):.3f} ms "
                    f"(rounds {min(values):.3f}-{max(values):.3f} ms)"
                )
    finally:
        await database.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20_000, help="generated descriptions")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=300, help="searches per round")
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    arguments = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    with fresh_database(arguments.admin_url) as url:
        asyncio.run(measure(url, arguments.n, arguments.rounds, arguments.requests))
    print(f"load average after: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")


if __name__ == "__main__":
    main()
