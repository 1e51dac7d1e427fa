"""The schema changes only through Alembic migrations, applied when `registry serve` starts or by `registry migrate`."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory

import registry
from registry.store.database import Database, driver_url

#: Whether the version table exists where the query below finds it (the schemas of the search path).
_VERSION_TABLE = sa.text("SELECT to_regclass('alembic_version') IS NOT NULL")
_REVISION = sa.text("SELECT version_num FROM alembic_version")


def migrations_dir() -> Path:
    """Alembic scripts: packaged inside the wheel, or the repository's ``migrations/`` in a checkout."""
    package_dir = Path(registry.__file__).parent
    for candidate in (package_dir / "_migrations", package_dir.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("Alembic migrations not found next to the registry package")


def _config(url: str) -> AlembicConfig:
    config = AlembicConfig()
    config.set_main_option("script_location", str(migrations_dir()))
    # Alembic runs its migrations through SQLAlchemy's asyncpg dialect (see migrations/env.py).
    config.set_main_option("sqlalchemy.url", driver_url(url, "postgresql+asyncpg").replace("%", "%%"))
    return config


def migrate(url: str, revision: str = "head", *, jwt_issuer: str = "") -> None:
    """Bring the schema to ``revision``. Blocking: call before the event loop or in a thread. ``jwt_issuer``: the
    configured issuer of access tokens (a migration that gives owners their origin needs it)."""
    config = _config(url)
    config.attributes["jwt_issuer"] = jwt_issuer
    command.upgrade(config, revision)


def head_revision() -> str:
    """The revision the code expects the database to be at."""
    head = ScriptDirectory.from_config(_config("postgresql://")).get_current_head()
    if head is None:
        raise RuntimeError("no Alembic head revision")
    return head


async def schema_revision(database: Database) -> str | None:
    """The revision the database's schema is at; None for a database without it (never migrated)."""
    if not await database.fetchval(_VERSION_TABLE):
        return None
    return await recorded_revision(database)


async def recorded_revision(database: Database) -> str | None:
    """The revision in the version table, which must exist (a database never migrated raises)."""
    revision = await database.fetchval(_REVISION)
    return None if revision is None else str(revision)


__all__ = ["head_revision", "migrate", "migrations_dir", "recorded_revision", "schema_revision"]
