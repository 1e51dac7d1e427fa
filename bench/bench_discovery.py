"""Discovery benchmark: filtered capability search and 5-requirement resolution at N descriptions.

Loads N agent descriptions (50 vendors, 200 capabilities, 3 capabilities and 2 actions each) into a fresh
database through the directory service (so the summary projector runs as on every write), starts one
``registry serve`` process on it and times requests over loopback from one client, one at a time.

    python bench/bench_discovery.py --n 10000 [--requests 300] [--admin-url postgresql://postgres@127.0.0.1/postgres]

``--database-url`` reuses a migrated database (loading only when it holds fewer than N bench descriptions), so
repeated runs skip the load. Statistics are refreshed (ANALYZE) after loading, as autovacuum would.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from registry.config import Settings
from registry.directory.service import DirectoryService
from registry.projections import Projections
from registry.projections.catalog import CatalogProjector
from registry.store.database import Database
from registry.store.things import ThingStore
from tests.support.servers import ServerProcess, fresh_database

VENDORS = 50
CAPABILITIES = 200


def description(index: int, rng: random.Random) -> dict[str, Any]:
    capabilities = [
        {
            "id": f"urn:bench:capability:{number}",
            "name": f"capability-{number}",
            "version": f"{rng.randint(0, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}",
            "description": f"Capability {number} for bench agents",
            "examples": [f"Please do task {number}"],
        }
        for number in rng.sample(range(CAPABILITIES), 3)
    ]
    return {
        "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
        "@type": "lmos:Agent",
        "id": f"urn:bench:agent:{index}",
        "title": f"Bench agent {index}",
        "description": f"Agent number {index} answering questions about topic {index % 97}",
        "version": {"instance": f"1.{index % 10}.0"},
        "lmos:metadata": {"lmos:vendor": {"lmos:name": f"Vendor {index % VENDORS}"}},
        "lmos:capabilities": capabilities,
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
        "actions": {
            f"action_{name}": {
                "description": f"Action {name}",
                "input": {
                    "type": "object",
                    "properties": {"q": {"type": "string", "description": "Q"}},
                    "required": [],
                },
                "forms": [{"href": f"https://bench.example/{index}/{name}"}],
            }
            for name in ("ask", "act")
        },
    }


async def load(url: str, count: int) -> float:
    database = Database(url, connections=9)
    await database.open()
    present = await database.fetchval(text("SELECT count(*) FROM descriptions WHERE id LIKE 'urn:bench:%'"))
    if present is not None and present >= count:
        await database.close()
        return 0.0
    directory = DirectoryService(database, ThingStore(database), Projections([CatalogProjector()]), Settings())
    rng = random.Random(7)
    documents = [description(index, rng) for index in range(count)]
    semaphore = asyncio.Semaphore(8)

    async def register(document: dict[str, Any]) -> None:
        async with semaphore:
            await directory.put(document["id"], document)

    started = time.perf_counter()
    await asyncio.gather(*(register(document) for document in documents))
    elapsed = time.perf_counter() - started
    # A bulk load finishes before autovacuum would analyze; stale statistics make the capability search 10x slower.
    await database.execute(text("ANALYZE"))
    await database.close()
    return elapsed


def timed(client: httpx.Client, requests: list[tuple[str, str, dict[str, Any]]]) -> list[float]:
    durations = []
    for method, path, kwargs in requests:
        started = time.perf_counter()
        response = client.request(method, path, **kwargs)
        durations.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
    return durations


def report(name: str, durations: list[float], target: float) -> None:
    ordered = sorted(durations)
    p50 = statistics.median(ordered)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    verdict = "meets" if p50 <= target else "MISSES"
    print(f"{name}: p50 {p50:.2f} ms, p95 {p95:.2f} ms over {len(ordered)} requests ({verdict} target {target} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="descriptions to load")
    parser.add_argument("--requests", type=int, default=300, help="timed requests per measurement")
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--database-url", help="reuse this migrated database instead of a fresh one")
    args = parser.parse_args()
    print(f"os.cpu_count() = {os.cpu_count()}; {args.n} descriptions")
    rng = random.Random(11)
    with contextlib.ExitStack() as stack:
        url = args.database_url or stack.enter_context(fresh_database(args.admin_url))
        elapsed = asyncio.run(load(url, args.n))
        if elapsed:
            print(f"loaded {args.n} descriptions in {elapsed:.1f} s ({args.n / elapsed:.0f}/s, 8 concurrent writers)")
        with ServerProcess(url) as server, httpx.Client(base_url=server.base_url, timeout=30) as client:
            searches = [
                (
                    "GET",
                    "/api/v1/search",
                    {
                        "params": {
                            "capability": f"urn:bench:capability:{rng.randrange(CAPABILITIES)}",
                            "capability_version": rng.choice(["^1", ">=2 <3", "[0.5,2.0)", "1.x || 3.x"]),
                            "kind": "agent",
                            "limit": 20,
                        }
                    },
                )
                for _ in range(args.requests)
            ]
            resolutions = [
                (
                    "POST",
                    "/api/v1/resolve",
                    {
                        "json": {
                            "requirements": [
                                {
                                    "capability": f"urn:bench:capability:{rng.randrange(CAPABILITIES)}",
                                    "range": rng.choice(["^1", "^2.1", "[1.0,3.0)", ">=0.5 <4"]),
                                    "strategy": strategy,
                                    **({"closest_to": "1.5.0"} if strategy == "closest" else {}),
                                }
                                for strategy in ("highest", "lowest", "closest", "highest", "lowest")
                            ]
                        }
                    },
                )
                for _ in range(args.requests)
            ]
            text_searches = [
                ("GET", "/api/v1/search", {"params": {"q": f"topic {rng.randrange(97)}", "limit": 20}})
                for _ in range(args.requests)
            ]
            timed(client, searches[:20] + resolutions[:20])  # warm-up: connections, prepared statements
            report("filtered capability search", timed(client, searches), 10)
            report("resolution of 5 requirements", timed(client, resolutions), 20)
            report("full-text search (no target)", timed(client, text_searches), float("inf"))


if __name__ == "__main__":
    main()
