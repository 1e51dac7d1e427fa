"""The counts kept with the writes (registry/store/counts.py) against a pass over the rows, in interleaved rounds on
a generated catalogue (bench/catalogue.py):

- the count's latency: the collection's total (all, one tenant) and the descriptions by kind, each read from the
  kept counts and by a pass over the rows;
- the write cost: milliseconds per batch of ``--batch`` descriptions replaced (one upsert of ``descriptions`` and
  one of ``thing_summaries``, moving each to another tenant and kind, as the write path's batch statements do) and
  deleted, with the triggers that keep the counts enabled and disabled.

    python bench/bench_counts.py [--n 100000] [--rounds 7] [--requests 20] [--batch 100]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import text

from bench.catalogue import generate
from bench.rounds import interleaved, machine
from registry.store.counts import BY_KIND, COUNT, COUNT_OF_TENANT, compact
from registry.store.database import Database
from tests.support.servers import fresh_database

LIVE = "(expires IS NULL OR expires > now())"
PASS_COUNT = text(
    "SELECT (SELECT count(*) FROM descriptions) - (SELECT count(*) FROM descriptions WHERE NOT " + LIVE + ")"
)
PASS_COUNT_OF_TENANT = text(f"SELECT count(*) FROM descriptions WHERE {LIVE} AND (tenant IS NULL OR tenant = :t)")
PASS_BY_KIND = text(
    "SELECT s.kind, count(*) FROM thing_summaries s JOIN descriptions d ON d.id = s.thing_id "
    f"WHERE {LIVE} GROUP BY s.kind"
)
REPLACE = """
    INSERT INTO descriptions (id, document_text, anonymous, created, modified, last_seen, revision, tenant)
    SELECT id, '{}', false, now(), now(), now(), 1, $2 FROM unnest($1::text[]) AS given (id)
    ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, revision = descriptions.revision + 1
"""
REPLACE_SUMMARIES = """
    INSERT INTO thing_summaries (thing_id, kind, title_key, types, summary, search)
    SELECT id, $2, id, '{}', '{}', ''::tsvector FROM unnest($1::text[]) AS given (id)
    ON CONFLICT (thing_id) DO UPDATE SET kind = excluded.kind
"""
DELETE = "DELETE FROM descriptions WHERE id = ANY($1::text[])"
DELETE_SUMMARIES = "DELETE FROM thing_summaries WHERE thing_id = ANY($1::text[])"


async def measure_counts(database: Database, rounds: int, requests: int) -> None:
    async def kept() -> None:
        await database.fetchval(COUNT)

    async def passed() -> None:
        await database.fetchval(PASS_COUNT)

    async def kept_of_tenant() -> None:
        await database.fetchval(COUNT_OF_TENANT, tenant="acme")

    async def passed_of_tenant() -> None:
        await database.fetchval(PASS_COUNT_OF_TENANT, t="acme")

    async def kept_by_kind() -> None:
        await database.fetch(BY_KIND)

    async def passed_by_kind() -> None:
        await database.fetch(PASS_BY_KIND)

    await interleaved("total", {"kept counts": kept, "pass over the rows": passed}, rounds, requests)
    await interleaved(
        "total of a tenant", {"kept counts": kept_of_tenant, "pass over the rows": passed_of_tenant}, rounds, requests
    )
    await interleaved("by kind", {"kept counts": kept_by_kind, "pass over the rows": passed_by_kind}, rounds, requests)


async def measure_writes(database: Database, n: int, rounds: int, requests: int, batch: int) -> None:
    state = {"batch": 0}

    def ids() -> list[str]:
        start = (state["batch"] * batch) % (n - batch) + 1
        state["batch"] += 1
        return [f"urn:gen:{number}" for number in range(start, start + batch)]

    async def writes(triggers: bool) -> None:
        chosen = ids()
        tenant, kind = ("acme", "agent") if state["batch"] % 2 else (None, "tool")
        # The same statements either way; ``replica`` skips ordinary triggers for the transaction, without a lock.
        role = "origin" if triggers else "replica"
        async with database.pool.acquire() as connection:
            async with connection.transaction():
                await connection.execute(f"SET LOCAL session_replication_role = {role}")
                await connection.execute(REPLACE, chosen, tenant)
                await connection.execute(REPLACE_SUMMARIES, chosen, kind)
            async with connection.transaction():
                await connection.execute(f"SET LOCAL session_replication_role = {role}")
                await connection.execute(DELETE, chosen[: batch // 10])
                await connection.execute(DELETE_SUMMARIES, chosen[: batch // 10])

    async def with_triggers() -> None:
        await writes(True)

    async def without_triggers() -> None:
        await writes(False)

    title = f"replace {batch} descriptions (tenant and kind change) and delete {batch // 10}"
    await interleaved(title, {"triggers": with_triggers, "no triggers": without_triggers}, rounds, requests)


async def main(arguments: argparse.Namespace) -> None:
    print(machine())
    with fresh_database(arguments.admin_url) as url:
        database = Database(url, connections=3)
        await database.open()
        try:
            await generate(database, arguments.n)
            await database.execute(text("UPDATE descriptions SET tenant = 'acme' WHERE id LIKE '%3'"))
            await database.execute(text("UPDATE descriptions SET expires = now() - interval '1 s' WHERE id LIKE '%77'"))
            await compact(database)
            await measure_counts(database, arguments.rounds, arguments.requests)
            await measure_writes(database, arguments.n, arguments.rounds, arguments.requests, arguments.batch)
        finally:
            await database.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="generated descriptions")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=20, help="runs per round and contender")
    parser.add_argument("--batch", type=int, default=100, help="descriptions per write batch")
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    asyncio.run(main(parser.parse_args()))
