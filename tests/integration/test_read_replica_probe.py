"""What the read replica's probe refuses (tests/e2e/test_read_replica.py runs a real standby): a database that is
not a standby, and one that does not answer, are set aside and searches read the primary."""

from __future__ import annotations

from sqlalchemy import text

from registry.store.database import Database, Transaction
from registry.store.migrations import head_revision
from registry.store.replica import ReadReplica
from tests.support.replicas import problem_once_probed
from tests.support.servers import free_port


async def _searched_on(database: Database) -> str:
    async def read(tx: Transaction) -> str:
        return str(await tx.fetchval(text("SELECT current_setting('application_name')")))

    return await database.run_search(read, seconds=5)


async def test_a_database_that_is_not_a_standby_is_set_aside(database: Database, database_url: str) -> None:
    replica = ReadReplica(database, database_url, connections=1, max_lag=5, schema_revision=head_revision())
    problem = await problem_once_probed(replica)
    assert problem == "not a streaming replica (not in recovery): its lag cannot be measured"
    assert not replica.serving


async def test_an_unreachable_replica_is_set_aside_and_searches_read_the_primary(database: Database) -> None:
    unreachable = f"postgresql://postgres@127.0.0.1:{free_port()}/registry"
    replica = ReadReplica(database, unreachable, connections=1, max_lag=5, schema_revision=head_revision())
    database.replicas = (replica,)
    try:
        assert (await problem_once_probed(replica)).startswith("unreachable (")
        assert await _searched_on(database) == database.name  # the primary's pool answered
    finally:
        database.replicas = ()
