"""What counting the owners of the frequent words costs (registry/store/statistics.py ``count_word_owners``): a
generated catalogue of ``--size`` descriptions (bench/catalogue.py) in a fresh database, its descriptions spread
over ``--owners`` owners, then the count timed ``--repeat`` times (median and the slowest), with the ANALYZE of the
summaries it follows for comparison.

    python bench/bench_word_owners.py --admin-url postgresql://postgres@127.0.0.1:5432/postgres --size 100000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from unittest import mock

from sqlalchemy import text

from bench.catalogue import generate
from registry.store import database as database_module
from registry.store.database import Database
from registry.store.statistics import count_word_owners
from tests.support.servers import fresh_database

_SPREAD = text("UPDATE descriptions SET owner = 'key:o' || (abs(hashtext(id)) % :owners), tenant = 't1'")


async def _timed(database: Database, repeat: int) -> tuple[list[float], list[float]]:
    counts, analyses = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        await database.execute(text("ANALYZE thing_summaries"))
        analyses.append(time.perf_counter() - started)
        started = time.perf_counter()
        await count_word_owners(database)
        counts.append(time.perf_counter() - started)
    return counts, analyses


async def _run(url: str, size: int, owners: int, repeat: int) -> None:
    with mock.patch.object(database_module, "COMMAND_TIMEOUT", 1200):
        database = Database(url, connections=2)
        await database.open()
        try:
            await generate(database, size)
            await database.execute(_SPREAD, owners=owners)
            await database.execute(text("VACUUM ANALYZE descriptions"))
            counts, analyses = await _timed(database, repeat)
            row = await database.fetchrow(
                text("SELECT owners, sampled, cardinality(lexemes) AS n FROM word_owner_shares")
            )
        finally:
            await database.close()
    assert row is not None
    print(
        f"{size} descriptions, {owners} owners: sample of {row['sampled']} rows, {row['owners']} owners seen,"
        f" {row['n']} lexemes"
    )
    print(f"count: median {1000 * statistics.median(counts):.1f} ms, slowest {1000 * max(counts):.1f} ms")
    print(f"ANALYZE thing_summaries: median {1000 * statistics.median(analyses):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--admin-url", required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--owners", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    arguments = parser.parse_args()
    with fresh_database(arguments.admin_url) as url:
        asyncio.run(_run(url, arguments.size, arguments.owners, arguments.repeat))


if __name__ == "__main__":
    main()
