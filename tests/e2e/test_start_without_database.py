"""``registry serve`` started while its database is down (or full) answers at once, reports the database in
``/readyz``, retries with backoff, migrates when the database comes, and then serves: a replica restarted during
an outage comes back by itself. Real server processes on a PostgreSQL cluster of the test's own, stopped and
started by the test."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import asyncpg
import httpx
import pytest

from tests.support.servers import ServerProcess, ThrowawayPostgres, wait_until
from tests.support.things import thing

pytestmark = pytest.mark.skipif(not ThrowawayPostgres.available(), reason="needs PostgreSQL 15 binaries")


@pytest.fixture
def cluster() -> Iterator[ThrowawayPostgres]:
    postgres = ThrowawayPostgres().init()
    try:
        yield postgres
    finally:
        postgres.destroy()


def _ready(base_url: str) -> bool:
    return httpx.get(base_url + "/readyz", timeout=5).status_code == 200


def _assert_waiting_for_the_database(server: ServerProcess, cause: str) -> None:
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        assert http.get("/livez").status_code == 200
        ready = http.get("/readyz")
        assert ready.status_code == 503
        database = ready.json()["checks"]["database"]
        assert cause in database["detail"], database
        read = http.get("/things")
        assert read.status_code == 503
        assert read.headers["content-type"].startswith("application/problem+json")
        assert "Retry-After" in read.headers


def _assert_serves(server: ServerProcess) -> None:
    document = thing("After the outage")
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        assert http.put(f"/things/{document['id']}", json=document).status_code == 201
        assert http.get(f"/things/{document['id']}").status_code == 200


def _assert_no_traceback(server: ServerProcess) -> None:
    wait_until(lambda: "the database is unavailable (" in server.output(), 15, "one line per failed attempt")
    assert "Traceback" not in server.output(), server.output()


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_starts_with_the_database_down_and_migrates_it_when_it_comes(
    cluster: ThrowawayPostgres, workers: int
) -> None:
    """With --workers 2, both processes wait, one migrates (the other finds it done), and both serve."""
    cluster.stop()
    env = {"REGISTRY_MIGRATE_ON_START": "true", "REGISTRY_LOG_LEVEL": "info", "REGISTRY_WORKERS": str(workers)}
    with ServerProcess(cluster.url, env) as server:
        _assert_waiting_for_the_database(server, "unreachable")
        cluster.start()  # a database never migrated: serve migrates it, then starts
        wait_until(lambda: _ready(server.base_url), 45, "ready once the database is up")
        _assert_serves(server)
        assert server.process is not None
        assert server.process.poll() is None
        _assert_no_traceback(server)
        assert server.output().count("migrating the database schema") == 1
        # Each process gets ready on its own (the one that waited for the other's migration a little later): answers
        # from either process, four in a row, are ready once both are.
        wait_until(lambda: all(_ready(server.base_url) for _ in range(4)), 45, "every process ready")


def test_serve_with_no_migrate_starts_with_the_database_down(cluster: ThrowawayPostgres) -> None:
    from registry.store.migrations import migrate

    migrate(cluster.url)
    cluster.stop()
    with ServerProcess(cluster.url, {"REGISTRY_LOG_LEVEL": "info"}) as server:  # REGISTRY_MIGRATE_ON_START=false
        _assert_waiting_for_the_database(server, "unreachable")
        cluster.start()
        wait_until(lambda: _ready(server.base_url), 45, "ready once the database is up")
        _assert_serves(server)
        _assert_no_traceback(server)


def test_a_replica_over_max_connections_names_the_cause_and_starts_once_connections_free(
    cluster: ThrowawayPostgres,
) -> None:
    from registry.store.migrations import migrate

    migrate(cluster.url)
    slots = 8

    async def configure() -> None:
        connection = await asyncpg.connect(cluster.url)
        await connection.execute(f"ALTER SYSTEM SET max_connections = {slots}")
        await connection.close()

    asyncio.run(configure())
    cluster.stop()
    cluster.start()

    async def occupy() -> list[asyncpg.Connection]:
        held: list[asyncpg.Connection] = []
        while len(held) < slots:
            try:
                held.append(await asyncpg.connect(cluster.url))
            except asyncpg.TooManyConnectionsError:
                break
        return held

    loop = asyncio.new_event_loop()
    held = loop.run_until_complete(occupy())
    try:
        with ServerProcess(cluster.url, {"REGISTRY_LOG_LEVEL": "info"}) as server:
            _assert_waiting_for_the_database(server, "max_connections reached")
            wait_until(
                lambda: "the database refuses more connections (max_connections reached)" in server.output(),
                5,
                "the cause in the log",
            )
            for connection in held:
                loop.run_until_complete(connection.close())
            held = []
            wait_until(lambda: _ready(server.base_url), 45, "ready once connections are free")
            _assert_serves(server)
            assert "Traceback" not in server.output()
    finally:
        for connection in held:
            loop.run_until_complete(connection.close())
        loop.close()
