"""``registry serve``, ``registry migrate``: run a directory."""

from __future__ import annotations

import dataclasses
import logging
import signal
from pathlib import Path

import click

from registry.cli.common import settings_from_env


def _exit_cleanly(signum: int, frame: object) -> None:
    """SIGTERM as an exception, so ``finally`` blocks run (stopping the embedded PostgreSQL).

    uvicorn handles SIGTERM itself while serving and re-raises it once shut down; with the default handler the
    process would then die on the spot and leave the embedded PostgreSQL running.
    """
    raise SystemExit(0)


@click.command()
@click.option("--host", help="Interface to listen on (REGISTRY_HOST, default 127.0.0.1).")
@click.option("--port", type=int, help="TCP port (REGISTRY_PORT, default 8080).")
@click.option("--data-dir", type=click.Path(path_type=Path), help="Embedded PostgreSQL data (REGISTRY_DATA_DIR).")
@click.option("--database-url", help="External PostgreSQL URL (REGISTRY_DATABASE_URL).")
@click.option("--public-url", help="Base URL clients see, e.g. behind a proxy (REGISTRY_PUBLIC_URL).")
@click.option("--migrate/--no-migrate", default=None, help="Apply migrations on start (default: yes).")
def serve(
    host: str | None,
    port: int | None,
    data_dir: Path | None,
    database_url: str | None,
    public_url: str | None,
    migrate: bool | None,
) -> None:
    """Run the directory HTTP server until interrupted (Ctrl-C or SIGTERM)."""
    import uvicorn

    from registry.app import create_app
    from registry.store.embedded import database_url as resolve_database_url
    from registry.store.migrations import migrate as apply_migrations

    settings = settings_from_env(
        host=host,
        port=port,
        data_dir=data_dir,
        database_url=database_url,
        public_url=public_url,
        migrate_on_start=migrate,
    )
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _exit_cleanly)
    with resolve_database_url(settings) as url:
        if settings.migrate_on_start:
            apply_migrations(url)
        app = create_app(dataclasses.replace(settings, database_url=url))
        uvicorn.run(
            app,
            host=settings.host,
            port=settings.port,
            log_level=settings.log_level.lower(),
            access_log=False,
            loop="uvloop",
            http="httptools",
            timeout_graceful_shutdown=5,
        )


@click.command()
@click.option("--data-dir", type=click.Path(path_type=Path), help="Embedded PostgreSQL data (REGISTRY_DATA_DIR).")
@click.option("--database-url", help="External PostgreSQL URL (REGISTRY_DATABASE_URL).")
@click.option("--revision", default="head", show_default=True, help="Alembic revision to migrate to.")
def migrate(data_dir: Path | None, database_url: str | None, revision: str) -> None:
    """Apply the database migrations (Alembic) and exit."""
    from registry.store.embedded import database_url as resolve_database_url
    from registry.store.migrations import migrate as apply_migrations

    settings = settings_from_env(data_dir=data_dir, database_url=database_url)
    with resolve_database_url(settings) as url:
        apply_migrations(url, revision)
    click.echo(f"database migrated to {revision}")


COMMANDS = (serve, migrate)
