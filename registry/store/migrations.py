"""The schema changes only through Alembic migrations, applied when `registry serve` starts or by `registry migrate`."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

import registry
from registry.store.database import Database, driver_url

if TYPE_CHECKING:
    from alembic.config import Config as AlembicConfig

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
    from alembic.config import Config as AlembicConfig  # Alembic loads its plugins: only where it migrates

    config = AlembicConfig()
    config.set_main_option("script_location", str(migrations_dir()))
    # Alembic runs its migrations through SQLAlchemy's asyncpg dialect (see migrations/env.py).
    config.set_main_option("sqlalchemy.url", driver_url(url, "postgresql+asyncpg").replace("%", "%%"))
    return config


def migrate(url: str, revision: str = "head", *, jwt_issuer: str = "") -> None:
    """Bring the schema to ``revision``. Blocking: call before the event loop or in a thread. ``jwt_issuer``: the
    configured issuer of access tokens (a migration that gives owners their origin needs it)."""
    from alembic import command

    config = _config(url)
    config.attributes["jwt_issuer"] = jwt_issuer
    command.upgrade(config, revision)


def head_revision() -> str:
    """The revision the code expects the database to be at: the one no other migration revises.

    Read from the scripts' ``revision`` and ``down_revision`` assignments without importing Alembic or the scripts,
    which every server start would otherwise pay for.
    """
    revisions: set[str] = set()
    revised: set[str] = set()
    for script in sorted((migrations_dir() / "versions").glob("*.py")):
        names = _assignments(script)
        revisions.add(str(names["revision"]))
        down = names.get("down_revision")
        if isinstance(down, str):
            revised.add(down)
        elif isinstance(down, (tuple, list)):
            revised.update(str(each) for each in down)
    heads = revisions - revised
    if len(heads) != 1:
        raise RuntimeError(f"the migrations have {len(heads)} head revisions, not one: {sorted(heads)}")
    return heads.pop()


def _assignments(script: Path) -> dict[str, object]:
    """The literal values a migration script assigns at module level (``revision``, ``down_revision`` …)."""
    values: dict[str, object] = {}
    for node in ast.parse(script.read_text(encoding="utf-8")).body:
        target, value = _assigned(node)
        if target in {"revision", "down_revision"} and value is not None:
            values[target] = ast.literal_eval(value)
    return values


def _assigned(node: ast.stmt) -> tuple[str, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return "", None


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
