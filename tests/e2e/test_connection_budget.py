"""A replica holds exactly its documented connection budget: REGISTRY_DB_POOL_SIZE for the server process (its
LISTEN connection included) plus 2 for its SPARQL worker; three default replicas fit in a stock PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import asyncpg

from registry.store.database import driver_url
from tests.support.servers import ServerProcess

DEFAULT_POOL_SIZE = 10
SPARQL_WORKER_CONNECTIONS = 2


def connections_by_application(database_url: str) -> dict[str, int]:
    async def query() -> dict[str, int]:
        connection = await asyncpg.connect(driver_url(database_url))
        try:
            rows = await connection.fetch(
                "SELECT application_name, count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() GROUP BY 1"
            )
        finally:
            await connection.close()
        return {row[0]: row[1] for row in rows}

    return asyncio.run(query())


def settled_count(database_url: str, expected: int, within: float = 10.0) -> dict[str, int]:
    """Connections by application name, once their total reached ``expected`` (or the time is up)."""
    deadline = time.monotonic() + within
    while True:
        found = connections_by_application(database_url)
        if sum(found.values()) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_one_replica_holds_its_budget_and_three_fit_in_a_stock_postgresql(
    own_database_url: str, start_server: Callable[..., ServerProcess]
) -> None:
    budget = DEFAULT_POOL_SIZE + SPARQL_WORKER_CONNECTIONS
    # The SPARQL worker runs from the start, as in a directory that answers SPARQL: its connections count.
    env = {"REGISTRY_DB_POOL_SIZE": str(DEFAULT_POOL_SIZE), "REGISTRY_SPARQL_START": "eager"}
    start_server(env, database=own_database_url)
    found = settled_count(own_database_url, budget)
    assert found == {
        "lmos-registry": DEFAULT_POOL_SIZE - 1,
        "lmos-registry-listen": 1,  # one LISTEN connection per process
        "lmos-registry-sparql": 1,
        "lmos-registry-sparql-listen": 1,
    }
    for _ in range(2):
        start_server(env, database=own_database_url)
    total = sum(settled_count(own_database_url, 3 * budget).values())
    assert total == 3 * budget
    # PostgreSQL's default max_connections is 100, 3 of them reserved for superusers.
    assert total <= 100 - 3 - 10, "three replicas must leave room for an admin and migrations"
