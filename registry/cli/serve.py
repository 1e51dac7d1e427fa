"""``registry serve``, ``registry migrate``: run a directory."""

from __future__ import annotations

import dataclasses
import gc
import os
import resource
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from registry.cli.common import JSON_HELP, print_json, settings_from_env, wants_json
from registry.config import ENV_PREFIX, ConfigError, Settings

if TYPE_CHECKING:
    from litestar import Litestar


def _exit_cleanly(signum: int, frame: object) -> None:
    """SIGTERM as an exception, so ``finally`` blocks run (stopping the embedded PostgreSQL).

    uvicorn handles SIGTERM itself while serving and re-raises it once shut down; with the default handler the
    process would then die on the spot and leave the embedded PostgreSQL running.
    """
    raise SystemExit(0)


#: What uvicorn runs: the application factory, and the protocol with the connection limits.
APP_FACTORY = "registry.cli.serve:serving_app"
HTTP_PROTOCOL = "registry.http.middleware.connections:HardenedHttpProtocol"


def serving_app() -> Litestar:
    """The application of a server process (each of ``--workers N`` calls it), from REGISTRY_* variables.

    Large bodies are decoded, validated and projected in threads, and other requests must not wait for them: a
    short GIL switch interval hands the event loop the GIL within a millisecond rather than five, and fewer,
    cheaper garbage collections (the long-lived objects of the code frozen out of them, a larger young
    generation) shorten the decoding of a large body, which holds the GIL throughout, to about a third.
    """
    from registry.app import create_app
    from registry.lifecycle import die_with_parent
    from registry.ops.logs import configure_logging

    settings = Settings.from_env()
    # A worker of --workers N (a spawned process: the serve process's logging is not inherited) ends with the
    # serve process, however that ends.
    if die_with_parent():
        configure_logging(settings.log_level, settings.log_format)
    sys.setswitchinterval(0.001)
    gc.set_threshold(50_000, 20, 20)
    app = create_app(settings)
    gc.freeze()
    return app


def _export(settings: Settings, overrides: dict[str, Any]) -> None:
    """Command-line flags as REGISTRY_* variables, so that every server process reads the same settings."""
    for name, value in overrides.items():
        if value is not None:
            rendered = str(value).lower() if isinstance(value, bool) else str(value)
            os.environ[ENV_PREFIX + name.upper()] = rendered
    os.environ[ENV_PREFIX + "DATABASE_URL"] = settings.database_url
    # Each server process migrates when the database answers, one at a time (registry/startup.py).
    os.environ[ENV_PREFIX + "MIGRATE_ON_START"] = str(settings.migrate_on_start).lower()


def _raise_descriptor_limit(connections: int) -> None:
    """Room for ``connections`` sockets plus the process's own files, as far as the hard limit allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))


@click.command()
@click.option("--host", help="Interface to listen on (REGISTRY_HOST, default 127.0.0.1).")
@click.option("--port", type=int, help="TCP port (REGISTRY_PORT, default 8080).")
@click.option("--data-dir", type=click.Path(path_type=Path), help="Embedded PostgreSQL data (REGISTRY_DATA_DIR).")
@click.option("--database-url", help="External PostgreSQL URL (REGISTRY_DATABASE_URL).")
@click.option("--public-url", help="Base URL clients see, e.g. behind a proxy (REGISTRY_PUBLIC_URL).")
@click.option("--migrate/--no-migrate", default=None, help="Apply migrations on start (default: yes).")
@click.option("--workers", type=click.IntRange(min=1), help="Server processes (REGISTRY_WORKERS, default 1).")
@click.option("--header-timeout", type=float, help="Seconds to send request headers (REGISTRY_HEADER_TIMEOUT).")
@click.option("--body-timeout", type=float, help="Seconds to send a request body (REGISTRY_BODY_TIMEOUT).")
@click.option("--idle-timeout", type=float, help="Seconds an idle keep-alive connection lives (REGISTRY_IDLE_TIMEOUT).")
@click.option("--max-connections", type=int, help="Open connections per process (REGISTRY_MAX_CONNECTIONS).")
@click.option(
    "--max-connections-per-client", type=int, help="Connections from one address (REGISTRY_MAX_CONNECTIONS_PER_CLIENT)."
)
@click.option("--max-header-bytes", type=int, help="Largest request headers (REGISTRY_MAX_HEADER_BYTES).")
def serve(**flags: Any) -> None:
    """Run the directory HTTP server until interrupted (Ctrl-C or SIGTERM)."""
    import uvicorn

    from registry.auth.authenticator import auth_mode
    from registry.lifecycle import child_environment
    from registry.ops.logs import configure_logging
    from registry.store.embedded import database_url as resolve_database_url

    overrides = {("migrate_on_start" if name == "migrate" else name): value for name, value in flags.items()}
    settings = settings_from_env(**overrides)
    try:
        auth_mode(settings)
    except ConfigError as error:
        raise click.ClickException(str(error)) from None
    configure_logging(settings.log_level, settings.log_format)
    signal.signal(signal.SIGTERM, _exit_cleanly)
    _raise_descriptor_limit(settings.max_connections)
    with resolve_database_url(settings) as url:
        _export(dataclasses.replace(settings, database_url=url), overrides)
        os.environ.update(child_environment(dict(os.environ)))  # the workers of --workers N die with this process
        uvicorn.run(
            APP_FACTORY,
            factory=True,
            workers=settings.workers,
            host=settings.host,
            port=settings.port,
            log_level=settings.log_level.lower(),
            access_log=False,  # registry.http.middleware.access_log writes one line per request, with its request id
            log_config=None,  # configure_logging routes uvicorn's loggers through the one format
            loop="uvloop",
            http=HTTP_PROTOCOL,
            # Forwarded headers are honoured by registry.http.middleware.forwarded, from REGISTRY_TRUSTED_PROXIES only
            # (uvicorn's own handling trusts any loopback peer).
            proxy_headers=False,
            timeout_keep_alive=max(1, round(settings.idle_timeout)),
            timeout_graceful_shutdown=5,
        )


@click.command()
@click.option("--data-dir", type=click.Path(path_type=Path), help="Embedded PostgreSQL data (REGISTRY_DATA_DIR).")
@click.option("--database-url", help="External PostgreSQL URL (REGISTRY_DATABASE_URL).")
@click.option("--revision", default="head", show_default=True, help="Alembic revision to migrate to.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def migrate(data_dir: Path | None, database_url: str | None, revision: str, as_json: bool) -> None:
    """Apply the database migrations (Alembic) and exit."""
    from registry.ops.logs import configure_logging
    from registry.store.embedded import database_url as resolve_database_url
    from registry.store.migrations import head_revision
    from registry.store.migrations import migrate as apply_migrations

    settings = settings_from_env(data_dir=data_dir, database_url=database_url)
    configure_logging(settings.log_level, settings.log_format)
    with resolve_database_url(settings) as url:
        apply_migrations(url, revision, jwt_issuer=settings.auth_jwt_issuer)
    if wants_json(as_json):
        print_json({"revision": head_revision() if revision == "head" else revision})
    else:
        click.echo(f"database migrated to {revision}")


COMMANDS = (serve, migrate)
