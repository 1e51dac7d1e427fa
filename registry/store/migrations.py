"""The schema changes only through Alembic migrations, applied when `registry serve` starts or by `registry migrate`."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

import registry


def migrations_dir() -> Path:
    """Alembic scripts: packaged inside the wheel, or the repository's ``migrations/`` in a checkout."""
    package_dir = Path(registry.__file__).parent
    for candidate in (package_dir / "_migrations", package_dir.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("Alembic migrations not found next to the registry package")


def sqlalchemy_url(url: str) -> str:
    """Alembic runs its migrations through SQLAlchemy's asyncpg dialect (see migrations/env.py)."""
    return make_url(url).set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def _config(url: str) -> AlembicConfig:
    config = AlembicConfig()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return config


def migrate(url: str, revision: str = "head") -> None:
    """Bring the schema to ``revision``. Blocking: call before the event loop or in a thread."""
    command.upgrade(_config(url), revision)


def head_revision() -> str:
    """The revision the code expects the database to be at."""
    head = ScriptDirectory.from_config(_config("postgresql://")).get_current_head()
    if head is None:
        raise RuntimeError("no Alembic head revision")
    return head


__all__ = ["head_revision", "migrate", "migrations_dir", "sqlalchemy_url"]
