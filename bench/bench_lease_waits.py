"""What a lease renewal waits for at scale: PostgreSQL's wait events while 32 clients renew leases.

Starts ``registry serve`` on a fresh database, loads ``--size`` generated descriptions with ``registry import``
(bench/catalogue.py: two in three are agents with a lease) and waits until the SPARQL index has caught up, then,
in each of ``--rounds`` rounds, drives renewals of random agents on 32 connections for ``--duration`` seconds
while sampling the wait events of the database's active backends every 5 ms, and reads the WAL written. The
reference is the share of samples on a core: a renewal bound by its commit's WAL flush shows ``IO/WALSync``.

    python bench/bench_lease_waits.py [--size 100000] [--rounds 3] [--duration 10]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import random
import sys
import time
from pathlib import Path
from urllib.parse import quote

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.catalogue import thing_id
from bench.load import Request, drive
from bench.rounds import add_logging_option, machine, served, use_logging_option
from bench.suite import bulk_import, index_caught_up
from tests.support.servers import ServerProcess, fresh_database, postgres_server

_ACTIVE = (
    "SELECT coalesce(wait_event_type || '/' || wait_event, 'on a core') FROM pg_stat_activity "
    "WHERE datname = current_database() AND backend_type = 'client backend' AND state = 'active' "
    "AND pid <> pg_backend_pid()"
)
_WAL = "SELECT pg_current_wal_lsn()"
_WAL_BYTES = "SELECT pg_wal_lsn_diff($1, $2)::bigint"


async def one_round(port: int, database_url: str, agents: list[int], duration: float) -> None:
    rng = random.Random()

    def renewal(_: int, __: int) -> Request:
        return "POST", f"/api/v1/things/{quote(thing_id(rng.choice(agents)), safe=':')}/lease", b"", ""

    waits: collections.Counter[str] = collections.Counter()
    done = asyncio.Event()
    connection = await asyncpg.connect(database_url)

    async def sample() -> None:
        while not done.is_set():
            waits.update(row[0] for row in await connection.fetch(_ACTIVE))
            await asyncio.sleep(0.005)

    try:
        before = await connection.fetchval(_WAL)
        sampler = asyncio.create_task(sample())
        outcome = await drive("127.0.0.1", port, renewal, 32, duration)
        done.set()
        await sampler
        wal = await connection.fetchval(_WAL_BYTES, await connection.fetchval(_WAL), before)
    finally:
        await connection.close()
    samples = sum(waits.values()) or 1
    shares = ", ".join(f"{name} {count / samples * 100:.0f} %" for name, count in waits.most_common(4))
    print(
        f"| {outcome.rate:,.0f} | {outcome.quantile_ms(0.5):.1f} | {outcome.quantile_ms(0.99):.1f} "
        f"| {wal / max(outcome.requests, 1):,.0f} | {shares} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10)
    add_logging_option(parser)
    args = parser.parse_args()
    print(use_logging_option(args))
    print(f"{machine()}; {args.size:,} descriptions")
    with postgres_server() as admin_url, fresh_database(admin_url) as database_url:
        server = ServerProcess(database_url, served({"REGISTRY_DB_POOL_SIZE": "10"})).start()
        try:
            rate, _ = bulk_import(args.size, server.base_url)
            print(f"imported at {rate:,.0f}/s; waiting for the SPARQL index to catch up")
            index_caught_up(server.base_url, args.size, time.monotonic(), 1800)
            agents = [index for index in range(args.size) if thing_id(index).startswith("urn:bench:agent:")]
            print("\n| renewals/s | p50 (ms) | p99 (ms) | WAL bytes per renewal | what active backends wait for |")
            print("|---:|---:|---:|---:|---|")
            for _ in range(args.rounds):
                asyncio.run(one_round(server.port, database_url, agents, args.duration))
        finally:
            server.close()
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
