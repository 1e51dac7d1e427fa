"""The discovery migration creates exactly the tables registry/store/tables.py describes."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from registry.store.database import create_engine
from registry.store.tables import metadata

DISCOVERY_TABLES = {"thing_summaries", "thing_capabilities", "thing_versions"}


def _table_of(difference: Any) -> str | None:
    for item in difference if isinstance(difference, list) else [difference]:
        for part in item[1:] if isinstance(item, tuple) else []:
            table = getattr(part, "table", None)
            name = getattr(table, "name", None) or getattr(part, "name", None)
            if isinstance(name, str):
                return name
    return None


def test_migrated_discovery_tables_match_the_metadata(database_url: str) -> None:
    async def differences() -> list[Any]:
        engine = create_engine(database_url, pool_size=1)
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(
                    lambda sync: compare_metadata(MigrationContext.configure(sync), metadata)
                )
        finally:
            await engine.dispose()

    found = [item for item in asyncio.run(differences()) if _table_of(item) in DISCOVERY_TABLES]
    assert found == []
