"""A database of its own holding a generated catalogue (bench/catalogue.py), for tests that need 10⁴ to 10⁵
descriptions: plans, timeouts and paging only show at that size."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from unittest import mock

from bench.catalogue import generate
from registry.store import database as database_module
from registry.store.database import Database
from tests.support.servers import fresh_database


@contextlib.asynccontextmanager
async def opened(url: str) -> AsyncIterator[Database]:
    database = Database(url, connections=2)
    await database.open()
    try:
        yield database
    finally:
        await database.close()


async def _generate(url: str, size: int) -> None:
    # Generating 10⁵ descriptions is a few statements of seconds each, which a loaded machine makes longer than
    # the directory's own command timeout.
    with mock.patch.object(database_module, "COMMAND_TIMEOUT", 600):
        async with opened(url) as database:
            await generate(database, size)


@contextlib.contextmanager
def generated_catalogue(postgres_admin_url: str, size: int) -> Iterator[str]:
    """The URL of a fresh database holding ``size`` generated descriptions (a few seconds per 10⁵)."""
    with fresh_database(postgres_admin_url) as url:
        asyncio.run(_generate(url, size))
        yield url
