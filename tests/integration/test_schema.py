"""The migrated database matches registry/store/tables.py: Alembic autogenerate finds nothing to do."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.ext.asyncio import create_async_engine

from registry.store.database import driver_url
from registry.store.tables import metadata


def schema_differences(database_url: str) -> list[Any]:
    async def compare() -> list[Any]:
        engine = create_async_engine(driver_url(database_url, "postgresql+asyncpg"))
        try:
            async with engine.connect() as connection:
                return await connection.run_sync(
                    lambda sync: compare_metadata(
                        MigrationContext.configure(sync, opts={"compare_type": True, "compare_server_default": True}),
                        metadata,
                    )
                )
        finally:
            await engine.dispose()

    return asyncio.run(compare())


def test_migrations_match_tables(database_url: str) -> None:
    assert schema_differences(database_url) == []


def test_migrated_details_autogenerate_cannot_see(database_url: str) -> None:
    """Collations and partial-index predicates are invisible to autogenerate, but listing order depends on them."""
    import asyncpg

    async def inspect() -> tuple[dict[str, str | None], str]:
        connection = await asyncpg.connect(database_url)
        try:
            collations = {
                f"{row['table_name']}.{row['column_name']}": row["collation_name"]
                for row in await connection.fetch(
                    "SELECT table_name, column_name, collation_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND data_type = 'character varying'"
                )
            }
            index = await connection.fetchval(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_descriptions_expires'"
            )
            return collations, index
        finally:
            await connection.close()

    collations, index = asyncio.run(inspect())
    for table in metadata.tables.values():
        for column in table.columns:
            collation = getattr(column.type, "collation", None)
            if collation:
                assert collations[f"{table.name}.{column.name}"] == collation, column
    assert "WHERE (expires IS NOT NULL)" in index
