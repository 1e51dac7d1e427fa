"""API keys in PostgreSQL: one row per key, holding a SHA-256 hash of its secret, never the secret."""

from __future__ import annotations

import dataclasses
import datetime as dt

from sqlalchemy import Text, bindparam, func, insert, or_, select, update

from registry.store.database import Database, Record, Statement
from registry.store.tables import api_keys


@dataclasses.dataclass(frozen=True, slots=True)
class KeyRecord:
    id: str
    name: str
    secret_hash: str
    scopes: list[str]
    owner: str
    namespaces: list[str]
    vendors: list[str]
    tenant: str | None
    created: dt.datetime
    expires: dt.datetime | None
    revoked: dt.datetime | None
    last_used: dt.datetime | None


_COLUMNS = tuple(api_keys.c[field.name] for field in dataclasses.fields(KeyRecord))
_GET = Statement.of(select(*_COLUMNS).where(api_keys.c.id == bindparam("id", type_=Text)))
_TOUCH = Statement.of(update(api_keys).where(api_keys.c.id == bindparam("id", type_=Text)).values(last_used=func.now()))


def _record(row: Record) -> KeyRecord:
    return KeyRecord(*row)


class KeyStore:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def get(self, key_id: str) -> KeyRecord | None:
        row = await self.database.fetchrow(_GET, id=key_id)
        return None if row is None else _record(row)

    async def touch(self, key_id: str) -> None:
        await self.database.execute(_TOUCH, id=key_id)

    async def add(self, record: KeyRecord) -> None:
        await self.database.execute(insert(api_keys).values(**dataclasses.asdict(record)))

    async def all(self) -> list[KeyRecord]:
        return [_record(row) for row in await self.database.fetch(select(*_COLUMNS).order_by(api_keys.c.name))]

    async def revoke(self, id_or_name: str) -> KeyRecord | None:
        """Mark the key (by id or name) revoked; it authenticates nothing from then on."""
        statement = (
            update(api_keys)
            .where(or_(api_keys.c.id == id_or_name, api_keys.c.name == id_or_name))
            .values(revoked=func.coalesce(api_keys.c.revoked, func.now()))
            .returning(*_COLUMNS)
        )
        row = await self.database.fetchrow(statement)
        return None if row is None else _record(row)


__all__ = ["KeyRecord", "KeyStore"]
