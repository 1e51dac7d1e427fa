"""Capability resolution on a generated catalogue (bench/catalogue.py ``generate``: 300 capabilities, three per
description, so ~1,000 providers per capability at 10⁵), in process, against the bare floor of reading the
capability's offers through its index.

    python bench/bench_resolution.py [--n 100000] [--rounds 5] [--requests 100]

Rounds alternate between the two, so drifting load on the machine touches both alike; each round reports the
median of its requests, and the summary the median and spread (min-max) of the round medians.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import select

from bench.catalogue import generate
from bench.rounds import Run, interleaved, main
from registry.directory.service import DirectoryService
from registry.discovery.service import DiscoveryService
from registry.store.catalog import CatalogStore
from registry.store.database import Database
from registry.store.tables import thing_capabilities
from registry.wire import Requirement, ResolveRequest

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

        runs: dict[str, Run] = {"offers of a capability (floor)": floor, "resolve": resolve}
        await interleaved(f"capability resolution ({size} descriptions)", runs, rounds, requests)
    finally:
        await database.close()


if __name__ == "__main__":
    main(__doc__, measure, size=100_000, rounds=5, requests=100)
