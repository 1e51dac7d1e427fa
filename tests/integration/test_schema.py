"""The migrated database matches registry/store/tables.py: Alembic autogenerate finds nothing to do."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.ext.asyncio import create_async_engine

from registry.store.database import driver_url
from registry.store.migrations import migrate
from registry.store.tables import capability_keys, metadata
from tests.support.servers import fresh_database


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
    """Collations, partial-index predicates and the columns an index includes are invisible to autogenerate, but
    listing order and resolution's index-only scans depend on them."""
    import asyncpg

    async def inspect() -> tuple[dict[str, str | None], dict[str, str]]:
        connection = await asyncpg.connect(database_url)
        try:
            collations = {
                f"{row['table_name']}.{row['column_name']}": row["collation_name"]
                for row in await connection.fetch(
                    "SELECT table_name, column_name, collation_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND data_type = 'character varying'"
                )
            }
            indexes = {
                row["indexname"]: row["indexdef"]
                for row in await connection.fetch(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
                )
            }
            return collations, indexes
        finally:
            await connection.close()

    collations, indexes = asyncio.run(inspect())
    for table in metadata.tables.values():
        for column in table.columns:
            collation = getattr(column.type, "collation", None)
            if collation:
                assert collations[f"{table.name}.{column.name}"] == collation, column
    assert "WHERE (expires IS NOT NULL)" in indexes["ix_descriptions_expires"]
    for table in metadata.tables.values():
        for declared in table.indexes:
            included = declared.dialect_options["postgresql"]["include"] or []
            definition = indexes[str(declared.name)].replace('"', "")  # "position" is quoted
            if included:
                assert definition.endswith(f"INCLUDE ({', '.join(included)})"), definition
            else:
                assert "INCLUDE" not in definition, definition


def test_rows_written_before_migration_0010_get_capability_keys_and_vendors(
    postgres_admin_url: str,
) -> None:
    """Migration 0010 fills ``capability_keys`` in as the write path spells them, and the vendors of capability
    rows, so that capability filters and vendor rules find the descriptions of an existing catalogue."""
    import asyncpg

    async def write_summaries(url: str) -> None:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute(
                "INSERT INTO thing_summaries (thing_id, kind, title_key, vendor_name, types, summary, search) VALUES "
                "('urn:a', 'agent', 'a', 'Acme', '{}', '{}', ''), ('urn:b', 'tool', 'b', NULL, '{}', '{}', '')"
            )
            await connection.execute(
                "INSERT INTO thing_capabilities (thing_id, position, source, capability_id, name, name_key, version) "
                "VALUES ('urn:a', 0, 'lmos', 'urn:cap:Weather', 'Weather', 'weather', '1.0.0'), "
                "('urn:a', 1, 'lmos', NULL, 'Plain', 'plain', NULL)"
            )
        finally:
            await connection.close()

    async def read_keys(url: str) -> tuple[dict[str, list[str]], set[str | None]]:
        connection = await asyncpg.connect(url)
        try:
            rows = await connection.fetch("SELECT thing_id, capability_keys FROM thing_summaries")
            vendors = await connection.fetch("SELECT vendor_name FROM thing_capabilities")
            return {row["thing_id"]: row["capability_keys"] for row in rows}, {row[0] for row in vendors}
        finally:
            await connection.close()

    with fresh_database(postgres_admin_url, migrate=False) as url:
        migrate(url, "0009_change_tenant")
        asyncio.run(write_summaries(url))
        migrate(url)
        keys, vendors = asyncio.run(read_keys(url))
    assert vendors == {"Acme"}
    assert keys == {
        "urn:a": capability_keys("urn:cap:Weather", "Weather") + capability_keys(None, "Plain"),
        "urn:b": [],
    }
