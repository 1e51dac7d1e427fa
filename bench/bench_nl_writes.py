"""Write throughput with embeddings on and off: PUT new on two `registry serve` processes, rounds interleaved.

    python bench/bench_nl_writes.py --rounds 3 --duration 10
    python bench/bench_nl_writes.py --database-url postgresql://postgres@host/postgres   # a PostgreSQL with pgvector

Both servers run the default configuration (access log on, information level) on databases of their own in one
PostgreSQL with pgvector (the embedded one unless ``--database-url`` names an admin URL); one of them with
``REGISTRY_EMBEDDINGS=off``. Each round PUTs new WeatherAgents (distinct ids) for ``--duration`` seconds on each
server, in alternating order, with wrk at 32 connections; then, untimed, waits until the embedding server has the
vectors of every description written so far, and reports the CPU its processes spent meanwhile (the vectors are
computed by a background job, not in the write's transaction). Printed per round: PUT/s on and off, their ratio,
CPU ms per PUT of each server's processes, and the embedding's CPU ms per description.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import psutil

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_things import PUT_SCRIPT, WEATHER_AGENT, run_wrk, tree_cpu_seconds  # noqa: E402
from bench.rounds import alternated, load_average, machine  # noqa: E402
from bench.tune_nl_search import admin_url  # noqa: E402
from registry.store.database import driver_url  # noqa: E402
from tests.support.servers import ServerProcess, fresh_database  # noqa: E402

ON, OFF = "embeddings on (wordllama)", "embeddings off"
CONNECTIONS = 32
#: Seconds the vectors of a round's writes may take to be written.
SETTLE_TIMEOUT = 900.0


@dataclass
class Contender:
    label: str
    server: ServerProcess
    database_url: str
    rates: list[float] = field(default_factory=list)
    cpu_per_put: list[float] = field(default_factory=list)

    @property
    def process(self) -> psutil.Process:
        assert self.server.process is not None
        return psutil.Process(self.server.process.pid)


async def _counts(database_url: str) -> tuple[int, int]:
    """Descriptions stored, and those with an up-to-date vector of their own (0 where there is no vector table)."""
    connection = await asyncpg.connect(driver_url(database_url))
    try:
        stored = await connection.fetchval("SELECT count(*) FROM descriptions")
        if not await connection.fetchval("SELECT to_regclass('description_vectors') IS NOT NULL"):
            return stored, 0
        embedded = await connection.fetchval(
            "SELECT count(*) FROM description_vectors v JOIN descriptions d ON d.id = v.thing_id "
            "AND d.revision = v.revision WHERE v.part = -1"
        )
        return stored, embedded
    finally:
        await connection.close()


def put_round(contender: Contender, round_number: int, duration: float) -> None:
    template = json.dumps(WEATHER_AGENT).replace(WEATHER_AGENT["id"], "__ID__")
    script = PUT_SCRIPT % {"template": template, "prefix": f"urn:bench:nl-writes:r{round_number}:"}
    before = tree_cpu_seconds(contender.process)
    stored_before, _ = asyncio.run(_counts(contender.database_url))
    figures = run_wrk("PUT new", contender.server.base_url, script, CONNECTIONS, duration, 2)
    stored_after, _ = asyncio.run(_counts(contender.database_url))
    contender.rates.append(figures.rps)
    written = max(stored_after - stored_before, 1)
    contender.cpu_per_put.append((tree_cpu_seconds(contender.process) - before) / written * 1000)


def settle(contender: Contender) -> tuple[int, float, float]:
    """Wait until every stored description has its vector: (descriptions embedded meanwhile, seconds, CPU ms each)."""
    before = tree_cpu_seconds(contender.process)
    started = time.monotonic()
    stored, embedded = asyncio.run(_counts(contender.database_url))
    first = embedded
    while embedded < stored and time.monotonic() - started < SETTLE_TIMEOUT:
        time.sleep(0.5)
        stored, embedded = asyncio.run(_counts(contender.database_url))
    if embedded < stored:
        raise RuntimeError(f"{stored - embedded} descriptions still had no vector after {SETTLE_TIMEOUT:g} s")
    done = embedded - first
    return done, time.monotonic() - started, (tree_cpu_seconds(contender.process) - before) / max(done, 1) * 1000


@contextmanager
def contenders(admin: str) -> Iterator[list[Contender]]:
    with ExitStack() as stack:
        started = []
        for label, env in ((ON, {}), (OFF, {"REGISTRY_EMBEDDINGS": "off"})):
            url = stack.enter_context(fresh_database(admin))
            # The default connection budget and logging of a server process, whatever the test helper sets.
            server_env = {"REGISTRY_DB_POOL_SIZE": "10", "REGISTRY_LOG_LEVEL": "info", **env}
            server = stack.enter_context(ServerProcess(url, server_env))
            started.append(Contender(label, server, url))
        yield started


def spread(values: list[float], digits: int = 0) -> str:
    return f"{statistics.median(values):,.{digits}f} ({min(values):,.{digits}f}-{max(values):,.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10, help="seconds of PUTs per server and round")
    parser.add_argument("--database-url", help="admin URL of a PostgreSQL with pgvector (default: embedded)")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed (apt-get install wrk)")
    print(machine())
    with admin_url(args.database_url) as admin, contenders(admin) as both:
        embedding = both[0]
        for contender in both:  # warm-up, untimed: the model loaded, connections opened
            put_round(contender, 0, 2)
            contender.rates.clear()
            contender.cpu_per_put.clear()
        settle(embedding)
        ratios = []
        for round_number in range(1, args.rounds + 1):
            for contender in alternated(both, round_number):
                put_round(contender, round_number, args.duration)
            done, seconds, cpu = settle(embedding)
            ratios.append(embedding.rates[-1] / both[1].rates[-1])
            print(
                f"round {round_number}: on {embedding.rates[-1]:,.0f}/s, off {both[1].rates[-1]:,.0f}/s "
                f"(on/off {ratios[-1]:.2f}); vectors of {done:,} descriptions written {seconds:.1f} s after the "
                f"PUTs, {cpu:.2f} ms CPU each; load average {load_average()}"
            )
        for contender in both:
            print(
                f"{contender.label}: PUT new {spread(contender.rates)}/s, "
                f"CPU {spread(contender.cpu_per_put, 2)} ms per PUT (server and its worker processes)"
            )
        each = ", ".join(f"{ratio:.2f}" for ratio in ratios)
        print(f"on/off per round: {each} (median {statistics.median(ratios):.2f})")


if __name__ == "__main__":
    main()
