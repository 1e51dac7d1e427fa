"""``registry keys create|list|revoke``: API keys, managed on the directory's database (like ``migrate``).

Run where the directory's database is reachable (REGISTRY_DATABASE_URL, or the embedded one under --data-dir).
The secret of a new key is printed once and stored only as a hash.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.table import Table

from registry.auth.principal import KEY_ORIGIN, identity
from registry.cli.common import JSON_HELP, ClientFailure, out, print_json, print_table, settings_from_env, wants_json
from registry.cli.literal import styled

if TYPE_CHECKING:  # imported where used: they bring SQLAlchemy, which every other command would load for nothing
    from registry.store.keys import KeyRecord, KeyStore

T = TypeVar("T")
_DURATION = re.compile(r"(\d+)([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def _expiry(raw: str | None) -> dt.datetime | None:
    """``30d``, ``12h``, ``90m``, ``45s`` from now, or an ISO 8601 time (UTC if it names no zone)."""
    if raw is None:
        return None
    match = _DURATION.fullmatch(raw.strip())
    if match:
        return dt.datetime.now(dt.UTC) + dt.timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        moment = dt.datetime.fromisoformat(raw.strip())
    except ValueError as error:
        raise click.BadParameter(f"expected a duration such as 30d or 12h, or an ISO 8601 time; got {raw!r}") from error
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _on_keys(data_dir: Path | None, database_url: str | None, work: Callable[[KeyStore], Awaitable[T]]) -> T:
    from registry.store.database import Database
    from registry.store.embedded import database_url as resolve_database_url
    from registry.store.keys import KeyStore

    async def run(url: str) -> T:
        database = Database(url, connections=2, name="lmos-registry-keys")
        await database.open()
        try:
            return await work(KeyStore(database))
        finally:
            await database.close()

    settings = settings_from_env(data_dir=data_dir, database_url=database_url)
    with resolve_database_url(settings) as url:
        return asyncio.run(run(url))


def _database_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--database-url", help="The directory's PostgreSQL (REGISTRY_DATABASE_URL).")(command)
    command = click.option(
        "--data-dir", type=click.Path(path_type=Path), help="Embedded PostgreSQL data (REGISTRY_DATA_DIR)."
    )(command)
    return click.option("--json", "as_json", is_flag=True, help=JSON_HELP)(command)


def _public(record: KeyRecord) -> dict[str, Any]:
    """Everything about a key but its hash."""
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
    from registry.auth.keys import new_key

    try:
        record, secret = new_key(
            name,
            [scope.strip() for scope in scopes.split(",") if scope.strip()],
            owner=owner,
            namespaces=namespaces,
            vendors=vendors,
            tenant=tenant,
            expires=_expiry(expires),
        )
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--scopes") from error

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
    records = _on_keys(data_dir, database_url, lambda store: store.all())
    if wants_json(as_json):
        print_json([_public(record) for record in records])
        return
    table = Table("id", "name", "scopes", "owner", "namespaces", "vendors", "tenant", "expires", "state", "last used")
    now = dt.datetime.now(dt.UTC)
    for record in records:
        state = "revoked" if record.revoked else "expired" if record.expires and record.expires <= now else "active"
        table.add_row(
            record.id,
            record.name,
            ",".join(record.scopes),
            identity(KEY_ORIGIN, record.owner),
            " ".join(record.namespaces),
            " ".join(record.vendors),
            record.tenant or "",
            record.expires.isoformat(timespec="seconds") if record.expires else "never",
            state,
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
