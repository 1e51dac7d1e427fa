"""The counts kept with the writes (registry/store/counts.py) give the answer of a pass over the rows in every case:
creates, replaces that move a description to another tenant or kind, deletes, leases, expiries not purged yet,
purges, descriptions other tenants cannot see; before and after compaction, and while writes run (the sum read in
the same snapshot as the rows)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text

from registry.store.census import descriptions_by_kind
from registry.store.counts import compact, delta_rows, live_count
from registry.store.database import Database
from registry.store.migrations import migrate
from registry.store.things import ThingStore, Window
from registry.tenancy import EVERYTHING, TenantScope
from tests.support.servers import fresh_database

#: A pass over the rows: what the counts must equal.
LIVE = "(expires IS NULL OR expires > now())"
PASS_COUNT = f"SELECT count(*) FROM descriptions WHERE {LIVE}"
PASS_COUNT_OF_TENANT = f"SELECT count(*) FROM descriptions WHERE {LIVE} AND (tenant IS NULL OR tenant = $1)"
PASS_BY_KIND = (
    "SELECT s.kind, count(*) FROM thing_summaries s JOIN descriptions d ON d.id = s.thing_id "
    f"WHERE {LIVE} GROUP BY s.kind"
)
#: Written as the write path writes: one multi-row upsert per table.
UPSERT = """
    INSERT INTO descriptions (id, document_text, anonymous, created, modified, last_seen, revision, tenant, expires)
    SELECT id, '{}', false, now(), now(), now(), 1, tenant, expires
    FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS given (id, tenant, expires)
    ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, expires = excluded.expires, revision = 2
"""
UPSERT_SUMMARIES = """
    INSERT INTO thing_summaries (thing_id, kind, title_key, types, summary, search)
    SELECT id, kind, id, '{}', '{}', ''::tsvector FROM unnest($1::text[], $2::text[]) AS given (id, kind)
    ON CONFLICT (thing_id) DO UPDATE SET kind = excluded.kind
"""
DELETE = "DELETE FROM descriptions WHERE id = ANY($1::text[])"
DELETE_SUMMARIES = "DELETE FROM thing_summaries WHERE thing_id = ANY($1::text[])"
TENANTS = (None, "acme", "globex")
KINDS = ("agent", "tool", "thing")
SCOPES = (EVERYTHING, TenantScope(everything=False, tenant="acme"), TenantScope(everything=False, tenant="globex"))
SCOPES += (TenantScope(everything=False, tenant="initech"),)  # a tenant with no description of its own


@pytest.fixture
async def database(own_database_url: str) -> AsyncIterator[Database]:
    database = Database(own_database_url, connections=4)
    await database.open()
    yield database
    await database.close()


async def write(database: Database, rows: list[tuple[str, str | None, str, Any]]) -> None:
    """Create or replace (id, tenant, kind, expires) rows, each table in one statement, in one transaction."""
    async with database.pool.acquire() as connection, connection.transaction():
        ids = [row[0] for row in rows]
        await connection.execute(UPSERT, ids, [row[1] for row in rows], [row[3] for row in rows])
        await connection.execute(UPSERT_SUMMARIES, ids, [row[2] for row in rows])


async def remove(database: Database, ids: list[str]) -> None:
    async with database.pool.acquire() as connection, connection.transaction():
        await connection.execute(DELETE, ids)
        await connection.execute(DELETE_SUMMARIES, ids)


async def assert_counts_match(database: Database) -> None:
    things = ThingStore(database)
    async with database.pool.acquire() as connection:
        assert await things.count() == await connection.fetchval(PASS_COUNT)
        for scope in SCOPES[1:]:
            assert await things.count(scope) == await connection.fetchval(PASS_COUNT_OF_TENANT, scope.tenant)
        assert await descriptions_by_kind(database) == dict(await connection.fetch(PASS_BY_KIND))
    for scope in SCOPES:
        head, rows = await things.listing(Window(limit=1), scope, counted=True)
        await rows.aclose()
        assert head.total == await things.count(scope)


async def build_catalogue(database: Database) -> None:
    """Creates in every tenant and kind, leases, replaces that move tenant and kind, deletes, expiries, a purge."""
    soon = await database.fetchval(text("SELECT now() + interval '1 hour'"))
    await write(database, [(f"urn:c:{n}", TENANTS[n % 3], KINDS[n % 3 - 1], None) for n in range(60)])
    await write(database, [(f"urn:l:{n}", TENANTS[n % 2], KINDS[n % 3], soon) for n in range(20)])
    await assert_counts_match(database)
    # Replaces: to another tenant, to another kind, both, neither (a replace that changes no key).
    await write(database, [(f"urn:c:{n}", TENANTS[(n + 1) % 3], KINDS[n % 3 - 1], None) for n in range(0, 10)])
    await write(database, [(f"urn:c:{n}", TENANTS[n % 3], KINDS[n % 3], None) for n in range(10, 20)])
    await write(database, [(f"urn:c:{n}", "initech", "agent", None) for n in range(20, 25)])
    await write(database, [(f"urn:c:{n}", TENANTS[n % 3], KINDS[n % 3 - 1], None) for n in range(25, 30)])
    await remove(database, [f"urn:c:{n}" for n in range(30, 38)])
    await assert_counts_match(database)
    # Expiries not purged yet are not counted; a purge removes them without changing a count.
    await database.execute(
        text("UPDATE descriptions SET expires = now() - interval '1 second' WHERE id LIKE 'urn:l:1%'")
    )
    await assert_counts_match(database)
    async with database.transaction() as tx:
        purged = await ThingStore(database).purge_expired(tx, grace=dt.timedelta(0))
        await tx.execute(text("DELETE FROM thing_summaries WHERE thing_id = ANY(:ids)"), ids=purged)
    assert purged
    await assert_counts_match(database)


async def test_the_counts_equal_a_pass_over_the_rows_before_and_after_compaction(database: Database) -> None:
    await build_catalogue(database)
    assert await delta_rows(database) > 10
    await compact(database)
    await assert_counts_match(database)
    keys = await database.fetchval(
        text(
            "SELECT (SELECT count(*) FROM (SELECT DISTINCT tenant FROM descriptions) AS tenants)"
            " + (SELECT count(DISTINCT kind) FROM thing_summaries)"
        )
    )
    assert await delta_rows(database) == keys  # one row per key
    await compact(database)  # folding folded rows changes nothing
    assert await delta_rows(database) == keys
    await remove(database, [f"urn:c:{n}" for n in range(60)] + [f"urn:l:{n}" for n in range(20)])
    await assert_counts_match(database)
    await compact(database)
    assert await delta_rows(database) == 0
    assert await ThingStore(database).count() == 0
    assert await descriptions_by_kind(database) == {}


async def test_a_truncate_leaves_nothing_to_count(database: Database) -> None:
    await build_catalogue(database)
    await database.execute(text("TRUNCATE thing_summaries"))
    await assert_counts_match(database)
    assert await ThingStore(database).count() > 0
    await database.execute(text("TRUNCATE descriptions"))
    await assert_counts_match(database)
    assert await delta_rows(database) == 0


async def test_a_count_is_read_in_the_snapshot_of_its_page_while_writes_and_compactions_run(
    database: Database,
) -> None:
    await write(database, [(f"urn:w:{n:04}", TENANTS[n % 3], KINDS[n % 3], None) for n in range(100)])
    done = asyncio.Event()

    async def writer() -> None:
        n = 100
        while not done.is_set():
            await write(database, [(f"urn:w:{n:04}", TENANTS[n % 3], KINDS[n % 3], None)])
            await write(database, [(f"urn:w:{n - 50:04}", TENANTS[(n + 1) % 3], KINDS[n % 2], None)])
            await remove(database, [f"urn:w:{n - 100:04}"])
            n += 1

    async def compactor() -> None:
        while not done.is_set():
            await compact(database)
            await asyncio.sleep(0)

    tasks = [asyncio.create_task(writer()), asyncio.create_task(compactor())]
    try:
        for _ in range(40):
            for scope in SCOPES:
                async with database.transaction(isolation="repeatable_read", readonly=True) as tx:
                    head_total = await live_count(tx, scope)
                    if scope.everything:
                        expected = await tx.fetchval(text(PASS_COUNT))
                    else:
                        expected = await tx.fetchval(text(PASS_COUNT_OF_TENANT.replace("$1", ":t")), t=scope.tenant)
                    assert head_total == expected
    finally:
        done.set()
        await asyncio.gather(*tasks)
    await assert_counts_match(database)


async def store_rows_before_the_counts(url: str) -> None:
    """Rows as 0020 stored them (no triggers yet), some expired, one summary per description."""
    database = Database(url, connections=4)
    await database.open()
    try:
        soon = await database.fetchval(text("SELECT now() - interval '1 minute'"))
        await write(
            database, [(f"urn:m:{n}", TENANTS[n % 3], KINDS[n % 2], soon if n % 7 == 0 else None) for n in range(30)]
        )
    finally:
        await database.close()


async def counts_after_migration(url: str) -> None:
    database = Database(url, connections=4)
    await database.open()
    try:
        await assert_counts_match(database)
        assert await ThingStore(database).count() == 25
        await write(database, [("urn:m:1", "initech", "thing", None)])  # the triggers keep them from here
        await assert_counts_match(database)
    finally:
        await database.close()


def test_the_migration_counts_the_rows_already_stored(postgres_admin_url: str) -> None:
    with fresh_database(postgres_admin_url, migrate=False) as url:
        migrate(url, "0021_word_owner_shares")
        asyncio.run(store_rows_before_the_counts(url))
        migrate(url)
        asyncio.run(counts_after_migration(url))
