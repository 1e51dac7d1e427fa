"""The executor translates every driver error once, into the domain error it stands for, and outlives connections
the server closed."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from sqlalchemy import TextClause, text

from registry.errors import BadRequest, Conflict, DatabaseUnavailable
from registry.store.database import Database


async def test_a_data_exception_is_the_clients_error(database: Database) -> None:
    with pytest.raises(BadRequest, match="cannot be stored"):
        await database.fetchval(text("SELECT 'not a number'::integer"))
    with pytest.raises(BadRequest):
        await database.fetchval(text("SELECT convert_from('\\x00'::bytea, 'UTF8')"))


async def test_an_index_row_too_large_is_the_clients_error(database: Database) -> None:
    async with database.transaction() as tx:
        await tx.execute(text("CREATE TEMPORARY TABLE big_keys (key text) ON COMMIT DROP"))
        await tx.execute(text("CREATE INDEX ON big_keys (key)"))
        with pytest.raises(BadRequest, match="exceeds a limit"):
            # Random hex does not compress below the B-tree limit (~2.7 kB per entry).
            await tx.execute(
                text("INSERT INTO big_keys SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 400)")
            )


async def test_a_unique_violation_is_a_conflict(database: Database) -> None:
    async with database.transaction() as tx:
        await tx.execute(text("CREATE TEMPORARY TABLE unique_keys (key text PRIMARY KEY) ON COMMIT DROP"))
        await tx.execute(text("INSERT INTO unique_keys VALUES ('a')"))
        with pytest.raises(Conflict):
            await tx.execute(text("INSERT INTO unique_keys VALUES ('a')"))


async def test_a_statement_timeout_is_unavailability_with_retry_after(database: Database) -> None:
    async with database.transaction() as tx:
        await tx.execute(text("SET LOCAL statement_timeout = 50"))
        with pytest.raises(DatabaseUnavailable) as raised:
            await tx.execute(text("SELECT pg_sleep(2)"))
    assert raised.value.headers["Retry-After"]


async def fail_after_creating_a_table(database: Database) -> None:
    async with database.transaction() as tx:
        await tx.execute(text("CREATE TEMPORARY TABLE rolled_back (key text)"))
        await tx.fetchval(text("SELECT 1/0"))


async def test_a_failed_transaction_is_rolled_back_and_its_connection_reused(database: Database) -> None:
    with pytest.raises(BadRequest):
        await fail_after_creating_a_table(database)
    for _ in range(database.pool_size + 1):
        assert await database.fetchval(text("SELECT to_regclass('pg_temp.rolled_back') IS NULL")) is True


async def test_connections_closed_by_the_server_are_replaced_without_failing_requests(database: Database) -> None:
    async with database.transaction() as tx:  # every pooled connection has been used at least once
        await tx.fetchval(text("SELECT 1"))
    terminated = await database.fetchval(
        text(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = 'lmos-registry' AND pid <> pg_backend_pid()"
        )
    )
    assert terminated >= 1
    for _ in range(database.pool_size * 2):
        assert await database.fetchval(text("SELECT 1")) == 1
        async with database.transaction() as tx:
            assert await tx.fetchval(text("SELECT 2")) == 2


async def test_an_unreachable_database_is_unavailability(database_url: str) -> None:
    unreachable = Database("postgresql://postgres@127.0.0.1:1/none", connections=2)
    with pytest.raises(DatabaseUnavailable):
        await unreachable.open()


async def streamed(database: Database, query: TextClause) -> list[object]:
    return [row[0] async for row in database.stream(query)]


async def test_callers_waiting_for_a_pooled_connection_are_counted(database: Database) -> None:
    assert database.waiting() == 0
    held: list[object] = []
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(database.pool_size):
            held.append(await stack.enter_async_context(database.transaction()))
        assert database.usage() == (database.pool_size, 0)
        reads = [asyncio.create_task(database.fetchval(text("SELECT 1"))) for _ in range(2)]
        stream = asyncio.create_task(streamed(database, text("SELECT 2")))
        await asyncio.sleep(0.05)
        assert database.waiting() == 3
    assert await asyncio.gather(*reads) == [1, 1]
    assert await stream == [2]
    assert database.waiting() == 0
