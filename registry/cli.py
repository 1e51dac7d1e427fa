"""The ``registry`` command: run the directory (``serve``, ``migrate``) and talk to one."""

from __future__ import annotations

import dataclasses
import logging
import signal
import sys
from pathlib import Path
from typing import Any

import click

from registry.cli_client import add_client_commands
from registry.config import ConfigError, Settings


def _exit_cleanly(signum: int, frame: object) -> None:
    """SIGTERM as an exception, so ``finally`` blocks run (stopping the embedded PostgreSQL).

    uvicorn handles SIGTERM itself while serving and re-raises it once shut down; with the default handler the
    process would then die on the spot and leave the embedded PostgreSQL running.
    """
    raise SystemExit(0)


def _settings(**overrides: Any) -> Settings:
    try:
        return Settings.from_env(**overrides)
    except ConfigError as error:
        raise click.UsageError(str(error)) from error


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lmos-registry")
def main() -> None:
    """LMOS agent and tool registry: a W3C WoT Thing Description Directory on PostgreSQL.

    `serve` and `migrate` run a directory; every other command talks to a running one (--url or REGISTRY_URL,
    default http://127.0.0.1:8080), prints tables for people or JSON with --json, and exits 1 with the
    directory's problem detail when a request fails. `registry COMMAND --help` explains each.

    Without REGISTRY_DATABASE_URL, `registry serve` runs an embedded PostgreSQL whose data lives in the user
    data directory (see --data-dir). Every option can also be set by a REGISTRY_* environment variable.
    """


@main.command()
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

    from registry.app import create_asgi_app
    from registry.store.database import database_url as resolve_database_url
    from registry.store.database import migrate as apply_migrations

    settings = _settings(
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
        app = create_asgi_app(dataclasses.replace(settings, database_url=url))
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


@main.command()
@click.option("--data-dir", type=click.Path(path_type=Path), help="Embedded PostgreSQL data (REGISTRY_DATA_DIR).")
@click.option("--database-url", help="External PostgreSQL URL (REGISTRY_DATABASE_URL).")
@click.option("--revision", default="head", show_default=True, help="Alembic revision to migrate to.")
def migrate(data_dir: Path | None, database_url: str | None, revision: str) -> None:
    """Apply the database migrations (Alembic) and exit."""
    from registry.store.database import database_url as resolve_database_url
    from registry.store.database import migrate as apply_migrations

    settings = _settings(data_dir=data_dir, database_url=database_url)
    with resolve_database_url(settings) as url:
        apply_migrations(url, revision)
    click.echo(f"database migrated to {revision}")


add_client_commands(main)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
