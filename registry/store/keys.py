"""API keys in PostgreSQL: one row per key, holding a SHA-256 hash of its secret, never the secret."""

from __future__ import annotations

import dataclasses
import datetime as dt

from sqlalchemy import Text, bindparam, func, insert, select, update

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


_by_id = select(api_keys.c.id).where(api_keys.c.id == bindparam("key", type_=Text)).scalar_subquery()
_by_name = select(api_keys.c.id).where(api_keys.c.name == bindparam("key", type_=Text)).scalar_subquery()
_REVOKED = {"revoked": func.coalesce(api_keys.c.revoked, func.now())}
_REVOKE = Statement.of(
    update(api_keys).where(api_keys.c.id == func.coalesce(_by_id, _by_name)).values(**_REVOKED).returning(*_COLUMNS)
)
_REVOKE_ID = Statement.of(
    update(api_keys).where(api_keys.c.id == bindparam("id", type_=Text)).values(**_REVOKED).returning(*_COLUMNS)
)


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
        """Mark one key revoked, the one with that id or else the one with that name (a name may spell another
        key's id); it authenticates nothing from then on. Revoking a revoked key keeps the time it was revoked."""
        row = await self.database.fetchrow(_REVOKE, key=id_or_name)
        return None if row is None else _record(row)

    async def revoke_id(self, key_id: str) -> KeyRecord | None:
        """Mark the key with id ``key_id`` revoked (as ``revoke``)."""
        row = await self.database.fetchrow(_REVOKE_ID, id=key_id)
        return None if row is None else _record(row)


__all__ = ["KeyRecord", "KeyStore"]
