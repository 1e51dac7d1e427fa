"""In-process services on the session's real PostgreSQL database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from registry.config import Settings
from registry.directory.service import DirectoryService
from registry.events.feed import ChangeFeed
from registry.projections import Projections, Projector
from registry.store.database import Database
from registry.store.things import ThingStore


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url, connections=4)
    await database.open()
    yield database
    await database.close()


def directory_service(database: Database, *projectors: Projector, settings: Settings | None = None) -> DirectoryService:
    return DirectoryService(database, ThingStore(database), Projections(projectors), settings or Settings())


async def listening(feed: ChangeFeed) -> None:
    """Wait (a few seconds at most) until ``feed`` has its LISTEN connection: notifications before it go unseen."""
    for _ in range(100):
        if feed.listening:
            return
        await asyncio.sleep(0.05)
