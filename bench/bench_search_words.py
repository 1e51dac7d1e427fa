"""The full-text words refresh at scale (registry/projections/search_words.py): descriptions per second when every
row is of another product gazetteer, and the cost of a round with nothing to do (the job's periodic check).

    python bench/bench_search_words.py --size 100000 --database-url postgresql://postgres@127.0.0.1:5432/postgres

Descriptions are generated straight into the tables (bench/catalogue.py's ``generate``); their summaries get a
title, a vendor and a description, a quarter of the titles naming a product of the list, so that the words are
composed as for real ones. Then every row is marked as of another version, and the job refreshes them all (timed),
``--rounds`` times; then rounds with nothing to do (timed).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from sqlalchemy import text

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.catalogue import generate  # noqa: E402
from bench.tune_nl_search import admin_url  # noqa: E402
from registry.projections.search_words import SearchWordsRefresh  # noqa: E402
from registry.store.database import Database  # noqa: E402
from tests.support.servers import fresh_database  # noqa: E402

_SUMMARIES = text(
    "UPDATE thing_summaries SET summary = jsonb_build_object('kind', kind, 'title', "
    "(ARRAY['Strava ', 'GitHub ', '', '', 'Weather ', 'Invoices ', 'Notes ', ''])[1 + abs(hashtext(thing_id)) % 8] "
    "|| title, 'vendor', jsonb_build_object('name', vendor_name), 'description', "
    "'A service answering questions about ' || title_key, 'capabilities', '[]'::jsonb)"
)
_OTHER_VERSION = text("UPDATE thing_summaries SET search_version = 'another-version'")


async def measured(database_url: str, size: int, rounds: int) -> None:
    database = Database(database_url, connections=2)
    await database.open()
    try:
        await generate(database, size)
        await database.execute(_SUMMARIES)
        refreshes, idle = [], []
        for _ in range(rounds):
            await database.execute(_OTHER_VERSION)
            job = SearchWordsRefresh(database)
            started = time.perf_counter()
            count = await job.refresh()
            refreshes.append(time.perf_counter() - started)
            assert count == size, (count, size)
            started = time.perf_counter()
            assert await job.refresh() == 0
            idle.append(time.perf_counter() - started)
        seconds = statistics.median(refreshes)
        print(f"refresh of {size} descriptions: median {seconds:.1f} s ({size / seconds:.0f}/s) of {rounds} rounds")
        print(f"a round with nothing to do: median {statistics.median(idle) * 1000:.0f} ms")
    finally:
        await database.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", help="admin URL of a PostgreSQL (default: embedded)")
    args = parser.parse_args()
    with admin_url(args.database_url) as admin, fresh_database(admin) as database_url:
        asyncio.run(measured(database_url, args.size, args.rounds))


if __name__ == "__main__":
    main()
