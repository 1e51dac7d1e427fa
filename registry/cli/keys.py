"""``registry keys create|list|revoke``: API keys, managed on the directory's database (like ``migrate``).

Run where the directory's database is reachable: REGISTRY_DATABASE_URL, or the embedded one under --data-dir,
whether a ``registry serve`` runs on it or not. An admin manages keys over HTTP too (``/api/v1/keys``). The secret
of a new key is printed once and stored only as a hash.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.table import Table

from registry.auth.principal import KEY_ORIGIN, identity
from registry.cli.common import JSON_HELP, ClientFailure, out, print_json, print_table, settings_from_env, wants_json
from registry.cli.literal import styled
from registry.config import ConfigError, Settings

if TYPE_CHECKING:  # imported where used: they bring SQLAlchemy, which every other command would load for nothing
    from registry.store.embedded import Reached
    from registry.store.keys import KeyRecord, KeyStore

T = TypeVar("T")
#: The option of ``keys create`` that sets each field of a key.
_OPTIONS = {"scopes": "--scopes", "namespaces": "--namespace", "vendors": "--vendor", "expires": "--expires"}


#: Seconds a command waits for a ``registry serve`` that is starting to bring its schema up to date.
SCHEMA_WAIT = 60.0


def _on_keys(data_dir: Path | None, database_url: str | None, work: Callable[[KeyStore], Awaitable[T]]) -> T:
    """``work`` on the directory's keys: on REGISTRY_DATABASE_URL, on the embedded PostgreSQL of the running
    ``registry serve`` of the data directory, or on one started for the command (migrated first when its schema is
    missing or old, as ``registry serve`` would). Every expected failure is a one-line error."""
    from registry.errors import RegistryError
    from registry.store.embedded import shared_database_url

    settings = settings_from_env(data_dir=data_dir, database_url=database_url)
    try:
        with shared_database_url(settings) as (url, reached):
            _ensure_schema(url, reached, settings)
            return asyncio.run(_with_store(url, work))
    except ConfigError as error:
        raise ClientFailure(str(error)) from None
    except RegistryError as error:
        raise ClientFailure(f"the directory's database: {error.detail}") from None


async def _with_store(url: str, work: Callable[[KeyStore], Awaitable[T]]) -> T:
    from registry.store.database import Database
    from registry.store.keys import KeyStore

    database = Database(url, connections=1, name="lmos-registry-keys", listens=False)
    await database.open()
    try:
        return await work(KeyStore(database))
    finally:
        await database.close()


async def _schema_revision(url: str) -> str | None:
    """The Alembic revision of the database's schema; None for a database without the registry's schema."""
    from registry.store.database import Database
    from registry.store.migrations import schema_revision

    database = Database(url, connections=1, name="lmos-registry-keys", listens=False)
    await database.open()
    try:
        return await schema_revision(database)
    finally:
        await database.close()


def _ensure_schema(url: str, reached: Reached, settings: Settings) -> None:
    """The schema the key commands need: a running ``registry serve`` brings its own up to date (waited for while it
    starts); otherwise it is migrated here when REGISTRY_MIGRATE_ON_START allows, as ``registry serve`` would."""
    from registry.store.embedded import Reached
    from registry.store.migrations import head_revision, migrate

    head = head_revision()
    revision = asyncio.run(_schema_revision(url))
    if reached is Reached.SERVED:
        deadline = time.monotonic() + SCHEMA_WAIT
        while revision != head and time.monotonic() < deadline:
            time.sleep(0.5)
            revision = asyncio.run(_schema_revision(url))
    if revision == head:
        return
    found = f"at revision {revision}" if revision else "without the registry's schema"
    if reached is Reached.SERVED:
        raise ClientFailure(
            f"the database of the running registry serve is {found}, and this registry needs {head}: restart "
            "registry serve (it migrates on start unless --no-migrate)"
        )
    if not settings.migrate_on_start:
        raise ClientFailure(f"the database is {found}, and this registry needs {head}: run `registry migrate` first")
    from alembic.util.exc import CommandError

    try:
        migrate(url, jwt_issuer=settings.auth_jwt_issuer)
    except CommandError as error:
        raise ClientFailure(f"the database is {found}, and migrating it to {head} failed: {error}") from None


def _database_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--database-url", help="The directory's PostgreSQL (REGISTRY_DATABASE_URL).")(command)
    command = click.option(
        "--data-dir", type=click.Path(path_type=Path), help="Embedded PostgreSQL data (REGISTRY_DATA_DIR)."
    )(command)
    return click.option("--json", "as_json", is_flag=True, help=JSON_HELP)(command)


def _public(record: KeyRecord) -> dict[str, Any]:
    """Everything about a key but its hash."""
    from registry.auth.keys import key_state

    return {
        "id": record.id,
        "name": record.name,
        "scopes": record.scopes,
        "owner": record.owner,
        # What the descriptions it creates are owned by, as /owner shows it and a transfer names it.
        "ownerIdentity": identity(KEY_ORIGIN, record.owner),
        "namespaces": record.namespaces,
        "vendors": record.vendors,
        "tenant": record.tenant,
        "created": record.created.isoformat(),
        "expires": record.expires.isoformat() if record.expires else None,
        "revoked": record.revoked.isoformat() if record.revoked else None,
        "lastUsed": record.last_used.isoformat() if record.last_used else None,
        "state": key_state(record),
    }


@click.group()
def keys() -> None:
    """API keys for `Authorization: Bearer …` (see docs/security.md)."""


@keys.command()
@click.option("--name", required=True, help="Unique name; shown in the change log as who made a change.")
@click.option(
    "--scopes", default="read", show_default=True, help="Comma-separated: read, write, admin (each includes the last)."
)
@click.option(
    "--owner", help="Owner name of the descriptions it creates, owned as key:<owner> (default: the key's name)."
)
@click.option("--namespace", "namespaces", multiple=True, help="Id pattern it may register, e.g. 'urn:acme:*'.")
@click.option("--vendor", "vendors", multiple=True, help="lmos:vendor name it may register for.")
@click.option("--tenant", help="Tenant the key belongs to.")
@click.option("--expires", help="Lifetime (30d, 12h) or an ISO 8601 time; default: never.")
@_database_options
def create(
    name: str,
    scopes: str,
    owner: str | None,
    namespaces: tuple[str, ...],
    vendors: tuple[str, ...],
    tenant: str | None,
    expires: str | None,
    data_dir: Path | None,
    database_url: str | None,
    as_json: bool,
) -> None:
    """Create a key and print its secret (once: only a hash is stored)."""
    from registry.auth.keys import KeyFieldError, new_key, parse_expiry

    try:
        record, secret = new_key(
            name,
            [scope.strip() for scope in scopes.split(",") if scope.strip()],
            owner=owner,
            namespaces=namespaces,
            vendors=vendors,
            tenant=tenant,
            expires=parse_expiry(expires),
        )
    except KeyFieldError as error:
        raise click.BadParameter(str(error), param_hint=_OPTIONS.get(error.field, f"--{error.field}")) from None

    async def add(store: KeyStore) -> None:
        if any(existing.name == name for existing in await store.all()):
            raise ClientFailure(f"a key named {name!r} exists already; revoke it or choose another name")
        await store.add(record)

    _on_keys(data_dir, database_url, add)
    if wants_json(as_json):
        print_json({**_public(record), "secret": secret})
        return
    out.print(styled("Created key ", (name, "bold"), f" ({record.id}), scopes {', '.join(record.scopes)}."))
    out.print("Its secret, shown only now (send it as 'Authorization: Bearer <secret>'):", highlight=False)
    click.echo(secret)


@keys.command(name="list")
@_database_options
def list_keys(data_dir: Path | None, database_url: str | None, as_json: bool) -> None:
    """List keys (never their secrets)."""
    from registry.auth.keys import key_state

    records = _on_keys(data_dir, database_url, lambda store: store.all())
    if wants_json(as_json):
        print_json([_public(record) for record in records])
        return
    table = Table("id", "name", "scopes", "owner", "namespaces", "vendors", "tenant", "expires", "state", "last used")
    for record in records:
        table.add_row(
            record.id,
            record.name,
            ",".join(record.scopes),
            identity(KEY_ORIGIN, record.owner),
            " ".join(record.namespaces),
            " ".join(record.vendors),
            record.tenant or "",
            record.expires.isoformat(timespec="seconds") if record.expires else "never",
            key_state(record),
            record.last_used.isoformat(timespec="seconds") if record.last_used else "",
        )
    print_table(table)


@keys.command()
@click.argument("key")
@_database_options
def revoke(key: str, data_dir: Path | None, database_url: str | None, as_json: bool) -> None:
    """Revoke a key (by id or name): it authenticates nothing from then on."""
    record = _on_keys(data_dir, database_url, lambda store: store.revoke(key))
    if record is None:
        raise ClientFailure(f"no key with id or name {key!r}")
    if wants_json(as_json):
        print_json(_public(record))
    else:
        out.print(styled("Revoked key ", (record.name, "bold"), f" ({record.id})."))


COMMANDS = (keys,)
