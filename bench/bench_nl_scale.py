"""Natural-language search at scale: the vector backfill's rate and the latency of needs at 10⁴ or 10⁵ descriptions.

    python bench/bench_nl_scale.py --size 10000
    python bench/bench_nl_scale.py --size 100000 --database-url postgresql://...   # a PostgreSQL with pgvector

Descriptions are generated straight into the tables (bench/catalogue.py's ``generate``; their summaries get a title
and a description so that their vectors differ), then the backfill job embeds them all (timed: descriptions per
second, with the model's load), then the 124 needs of bench/nl_eval are asked in process (Litestar's test client,
no socket; with ``--http`` over loopback to a `registry serve` on the database, in its default configuration) in each
mode, one at a time, over ``--passes`` passes: p50 and p95 per mode. Also the RSS of the process
before and after the WordLlama model is loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_nl_search import NL_EVAL, percentile, read_needs  # noqa: E402
from bench.catalogue import generate  # noqa: E402
from bench.rounds import alternated, load_average, machine, print_against  # noqa: E402
from bench.tune_nl_search import admin_url  # noqa: E402
from registry.app import create_app  # noqa: E402
from registry.config import Settings  # noqa: E402
from registry.discovery.needs import LEXICAL_CANDIDATES, Candidate, NeedSearch  # noqa: E402
from registry.embeddings.indexer import VectorIndexer  # noqa: E402
from registry.embeddings.wordllama import WordLlamaEmbeddings, load_model  # noqa: E402
from registry.store.database import Database  # noqa: E402
from tests.support.in_process import local_client  # noqa: E402
from tests.support.servers import ServerProcess, fresh_database  # noqa: E402

#: Seconds a `registry serve` may take to answer with its SPARQL index built over the whole generated catalogue.
SERVER_START_TIMEOUT = 3600.0


_SUMMARIES = text(
    "UPDATE thing_summaries SET summary = jsonb_build_object('kind', kind, 'title', title, 'description', "
    "'A service answering questions about ' || title_key, 'capabilities', '[]'::jsonb)"
)


def rss_mb() -> float:
    """The process's current resident set (Linux: /proc/self/statm), MB."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


async def backfilled(database_url: str, size: int) -> None:
    database = Database(database_url, connections=4)
    await database.open()
    try:
        started = time.monotonic()
        await generate(database, size)
        await database.execute(_SUMMARIES)
        print(f"generated {size} descriptions in {time.monotonic() - started:.1f} s", flush=True)
        before = rss_mb()
        load_model()
        print(f"RSS {before:.0f} MB before the model, {rss_mb():.0f} MB after", flush=True)
        indexer = VectorIndexer(database, WordLlamaEmbeddings())
        indexer.available = True
        started = time.monotonic()
        count = await indexer.backfill()
        seconds = time.monotonic() - started
        print(f"backfill: {count} descriptions in {seconds:.1f} s ({count / seconds:.0f}/s)", flush=True)
    finally:
        await database.close()


@contextlib.asynccontextmanager
async def search_client(database_url: str, http: bool) -> AsyncIterator[Any]:
    """Litestar's test client of the application in this process, or (``http``) an HTTP client of a `registry serve`
    on the database, in its default configuration, once its SPARQL index has caught up (not to share the cores)."""
    if not http:
        async with local_client(create_app(Settings(database_url=database_url, db_pool_size=4)), timeout=60) as client:
            yield client
        return
    server = ServerProcess(database_url, {"REGISTRY_DB_POOL_SIZE": "10", "REGISTRY_LOG_LEVEL": "info"})
    started = time.monotonic()
    await asyncio.to_thread(server.start, SERVER_START_TIMEOUT)
    print(f"registry serve answering with its SPARQL index caught up after {time.monotonic() - started:.0f} s")
    try:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as client:
            yield client
    finally:
        server.close()


async def _title_order(self: NeedSearch, filters: Any) -> list[Candidate]:
    """The full-text leg as it was: the first RANK_CANDIDATES matches in title order, ranked (the reference)."""
    page = await self.catalog.search(filters, "relevance", LEXICAL_CANDIDATES, None)
    return [
        Candidate(row["thing_id"], row["summary"], row["modified"], row["expires"], lexical=float(row["sort_key"]))
        for row in page.rows
    ]


async def against_title_order(database_url: str, rounds: int) -> None:
    """``--against-title-order``: lexical and hybrid needs, each round asking every need with the full-text leg
    picking its candidates by its words' frequencies (as shipped) and by title order (the reference), in
    alternating order; per contender the median and spread of the rounds' p50 and p95, and their ratios."""
    needs = read_needs(NL_EVAL / "needs.jsonl", NL_EVAL / "qrels.jsonl")
    contenders = {"by frequency": NeedSearch._lexical, "title order": _title_order}
    async with search_client(database_url, False) as client:
        for mode in ("lexical", "hybrid"):
            figures: dict[str, dict[str, list[float]]] = {name: {"p50": [], "p95": []} for name in contenders}
            for number in range(rounds + 1):
                for name in alternated(list(contenders), number):
                    setattr(NeedSearch, "_lexical", contenders[name])  # noqa: B010 (a method swapped per round)
                    timings = []
                    for need in needs:
                        started = time.perf_counter()
                        params = {"q": need.text, "mode": mode, "limit": 10}
                        response = await client.get("/api/v1/search", params=params)
                        assert response.status_code == 200, response.text
                        timings.append((time.perf_counter() - started) * 1000)
                    if number:  # the first round warms up
                        figures[name]["p50"].append(percentile(timings, 0.5))
                        figures[name]["p95"].append(percentile(timings, 0.95))
            setattr(NeedSearch, "_lexical", contenders["by frequency"])  # noqa: B010
            print(f"{mode}, {rounds} rounds of {len(needs)} needs (load average {load_average()}):")
            for quantile in ("p50", "p95"):
                print_against(
                    f"{mode} {quantile} | rounds (median, min-max ms)",
                    {name: values[quantile] for name, values in figures.items()},
                    "title order",
                    lambda values: f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})",
                )


async def asked(database_url: str, passes: int, http: bool) -> None:
    needs = read_needs(NL_EVAL / "needs.jsonl", NL_EVAL / "qrels.jsonl")
    async with search_client(database_url, http) as client:
        for mode in ("lexical", "semantic", "hybrid"):
            timings = []
            for number in range(passes + 1):
                for need in needs:
                    started = time.perf_counter()
                    response = await client.get("/api/v1/search", params={"q": need.text, "mode": mode, "limit": 10})
                    assert response.status_code == 200, response.text
                    if number:  # the first pass warms up
                        timings.append((time.perf_counter() - started) * 1000)
            p50, p95 = percentile(timings, 0.5), percentile(timings, 0.95)
            print(f"{mode}: p50 {p50:.1f} ms, p95 {p95:.1f} ms, mean {statistics.fmean(timings):.1f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--database-url", help="admin URL of a PostgreSQL with pgvector (default: embedded)")
    parser.add_argument("--http", action="store_true", help="ask over HTTP a `registry serve` started on the database")
    parser.add_argument(
        "--against-title-order",
        type=int,
        metavar="ROUNDS",
        help="lexical and hybrid in ROUNDS interleaved rounds against the full-text leg's former candidates "
        "(the first 1,000 matches in title order), in process",
    )
    args = parser.parse_args()
    print(machine(), flush=True)
    with admin_url(args.database_url) as admin, fresh_database(admin) as database_url:
        asyncio.run(backfilled(database_url, args.size))
        if args.against_title_order:
            asyncio.run(against_title_order(database_url, args.against_title_order))
        else:
            asyncio.run(asked(database_url, args.passes, args.http))


if __name__ == "__main__":
    main()
