"""Filtered search and capability resolution in a generated catalogue: this tree against a reference commit, in one
run, over HTTP (the requests bench/bench_scale.py times).

    python bench/bench_filtered.py [--n 1000000 | --database URL] [--reference main] [--rounds 5] [--requests 20]

The catalogue is ``--n`` generated descriptions in a fresh database on the local PostgreSQL (bench/catalogue.py:
25 vendors, 300 capabilities, three offers each, written by SQL), or the database ``--database`` already holds
(generated, its summaries filled as bench/bench_nl_scale.py's ``_SUMMARIES`` does, migrated to this tree's head:
a 10⁶ catalogue takes minutes to write, so keep one for several runs). Two `registry serve` processes read it,
this tree ("candidate") and ``--reference`` (bench/bench_paging.py's ``serving``: default configuration but for
port, data directory, database and ``REGISTRY_EMBEDDINGS=off``). The reference's statements do not name the
columns this tree adds, so its plans are its own.

Requests, the same random sequence for both contenders in each round:

- filtered search: ``GET /api/v1/search?kind=agent&vendor=V&capability=urn:capability:C&limit=20`` (V one of the
  25 vendor numbers, a word prefix: ``1`` also starts 10-19; C one of the 300 capabilities);
- capability resolution: ``POST /api/v1/resolve`` of one capability in range ``^1`` or ``^2``.

Before the rounds, every request of the first round is sent to both and their answers compared (identical bodies,
or the run stops). One client, sequential requests; rounds alternate the contenders (reversed every other round),
each round keeps its median of ``--requests``; the summary is the median of the rounds with their spread, and the
candidate's time over the reference's, round by round.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_nl_scale import _SUMMARIES  # noqa: E402
from bench.bench_paging import serving, unpacked  # noqa: E402
from bench.catalogue import generate  # noqa: E402
from bench.rounds import alternated, load_average, machine, print_probes_against_reference  # noqa: E402
from registry.store import database as database_module  # noqa: E402
from registry.store.database import Database  # noqa: E402
from tests.support.servers import fresh_database  # noqa: E402

Request = tuple[str, str, dict[str, Any] | None]


def log(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load_average()}] {line}", flush=True)


def filtered(rng: random.Random) -> Request:
    vendor, capability = rng.randrange(25), rng.randrange(300)
    return "GET", f"/api/v1/search?kind=agent&vendor={vendor}&capability=urn%3Acapability%3A{capability}&limit=20", None


def resolve(rng: random.Random) -> Request:
    requirement = {"capability": f"urn:capability:{rng.randrange(300)}", "range": rng.choice(["^1", "^2"])}
    return "POST", "/api/v1/resolve", {"requirements": [requirement]}


PROBES = {"filtered search (kind + vendor + capability)": filtered, "capability resolution": resolve}


def requests_of(probe: str, seed: int, count: int) -> list[Request]:
    rng = random.Random(seed)
    return [PROBES[probe](rng) for _ in range(count)]


async def answer(client: httpx.AsyncClient, request: Request) -> httpx.Response:
    method, path, body = request
    response = await client.request(method, path, json=body)
    if response.status_code != 200:
        raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:500]}")
    return response


async def median_ms(client: httpx.AsyncClient, requests: list[Request]) -> float:
    durations = []
    for request in requests:
        started = time.perf_counter()
        await answer(client, request)
        durations.append(time.perf_counter() - started)
    return statistics.median(durations) * 1000


async def measure(urls: dict[str, str], rounds: int, count: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {}
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=120))
            for name, url in urls.items()
        }
        for probe in PROBES:  # the same answers from both, and both warmed alike
            for request in requests_of(probe, 0, count):
                bodies = [json.loads((await answer(client, request)).content) for client in clients.values()]
                if any(body != bodies[0] for body in bodies):
                    raise RuntimeError(f"the contenders answer {request} differently: {bodies}")
        log(f"{len(PROBES) * count} requests answered alike by {', '.join(clients)}")
        for round_number in range(rounds):
            for probe in PROBES:
                requests = requests_of(probe, round_number + 1, count)
                for name in alternated(list(clients), round_number):
                    figures.setdefault(f"{probe} | {name}", []).append(await median_ms(clients[name], requests))
            log(f"round {round_number + 1} of {rounds} done")
    return figures


async def fill(url: str, size: int) -> None:
    database_module.COMMAND_TIMEOUT = 7200  # one statement writes every row
    database = Database(url, connections=2)
    await database.open()
    try:
        await generate(database, size)
        await database.execute(_SUMMARIES)  # what a search item shows
    finally:
        await database.close()


@contextlib.contextmanager
def catalogue(arguments: argparse.Namespace) -> Iterator[str]:
    if arguments.database:
        yield arguments.database
        return
    with fresh_database(arguments.admin_url) as url:
        started = time.monotonic()
        asyncio.run(fill(url, arguments.n))
        log(f"generated {arguments.n:,} descriptions in {time.monotonic() - started:.0f} s")
        yield url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="generated descriptions (without --database)")
    parser.add_argument("--database", help="a database holding a generated catalogue, migrated to this tree's head")
    parser.add_argument("--reference", default="main", help="commit to measure against")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20, help="requests per round and probe")
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    arguments = parser.parse_args()
    print(machine())
    log(f"reference {arguments.reference}; {arguments.database or f'{arguments.n:,} generated descriptions'}")
    with (
        catalogue(arguments) as url,
        unpacked(arguments.reference) as reference_tree,
        serving(REPO_ROOT, url) as candidate,
        serving(reference_tree, url) as reference,
    ):
        figures = asyncio.run(
            measure({"reference": reference, "candidate": candidate}, arguments.rounds, arguments.requests)
        )
    print(f"\n{arguments.rounds} rounds of {arguments.requests} requests, one client")
    print_probes_against_reference("request", figures)
    log("done")


if __name__ == "__main__":
    main()
