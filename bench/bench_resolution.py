"""Capability resolution on a generated catalogue (bench/catalogue.py ``generate``: 300 capabilities, three per
description, so ~1,000 providers per capability at 10⁵), in process, against the bare floor of reading the
capability's offers through its index.

    python bench/bench_resolution.py [--n 100000] [--rounds 5] [--requests 100]

Rounds alternate between the two, so drifting load on the machine touches both alike; each round reports the
median of its requests, and the summary the median and spread (min-max) of the round medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import select

from bench.bench_bounded_search import round_median
from bench.catalogue import generate
from registry.directory.service import DirectoryService
from registry.discovery.service import DiscoveryService
from registry.store.catalog import CatalogStore
from registry.store.database import Database
from registry.store.tables import thing_capabilities
from registry.wire import Requirement, ResolveRequest
from tests.support.servers import fresh_database

RANGES = ("^1", "^2", ">=1 <3")


async def measure(url: str, size: int, rounds: int, requests: int) -> None:
    database = Database(url, connections=2)
    await database.open()
    try:
        started = time.perf_counter()
        await generate(database, size)
        print(f"generated {size} descriptions in {time.perf_counter() - started:.1f} s")
        # The directory is not used by resolution.
        discovery = DiscoveryService(CatalogStore(database), cast(DirectoryService, None))
        rng = random.Random(1)

        def capability() -> str:
            return f"urn:capability:{rng.randrange(300)}"

        async def floor() -> None:
            wanted = capability()
            await database.fetch(
                select(thing_capabilities.c.thing_id, thing_capabilities.c.version).where(
                    thing_capabilities.c.capability_id == wanted
                )
            )

        async def resolve() -> None:
            requirement = Requirement(capability=capability(), range=rng.choice(RANGES))
            await discovery.resolve(ResolveRequest(requirements=[requirement]))

        runs: dict[str, Callable[[], Awaitable[None]]] = {"offers of a capability (floor)": floor, "resolve": resolve}
        medians: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(rounds):
            for name, run in runs.items():
                medians[name].append(await round_median(run, requests))
        print(f"capability resolution ({size} descriptions, {rounds} rounds of {requests}):")
        for name, values in medians.items():
            print(
                f"  {name:32} median {statistics.median(values):.2f} ms (rounds {min(values):.2f}-{max(values):.2f} ms)"
            )
    finally:
        await database.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="generated descriptions")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=100, help="resolutions per round")
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    arguments = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    with fresh_database(arguments.admin_url) as url:
        asyncio.run(measure(url, arguments.n, arguments.rounds, arguments.requests))
    print(f"load average after: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")


if __name__ == "__main__":
    main()
