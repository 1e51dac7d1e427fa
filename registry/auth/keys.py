"""API keys: ``reg_<key id>_<secret>``. The key id finds the row; the secret is checked against its SHA-256 hash.

Secrets are 256 random bits, so a plain SHA-256 suffices (no password hashing needed: nothing to brute-force),
and hashes are compared in constant time. Only the key id (public) and the key's name ever appear in messages.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
import secrets

from registry.auth.principal import Principal, Scope, parse_scopes
from registry.errors import Unauthorized
from registry.store.keys import KeyRecord, KeyStore

PREFIX = "reg_"
_KEY = re.compile(r"reg_([0-9a-f]{12})_([A-Za-z0-9_-]{20,})")
#: last_used is written at most this often per key (a write per request would cost more than the request).
TOUCH_INTERVAL = dt.timedelta(minutes=1)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_key(
    name: str,
    scopes: list[str],
    *,
    owner: str | None = None,
    namespaces: tuple[str, ...] = (),
    vendors: tuple[str, ...] = (),
    tenant: str | None = None,
    expires: dt.datetime | None = None,
) -> tuple[KeyRecord, str]:
    """A new key's row and its secret (shown once, never stored)."""
    if not parse_scopes(scopes) or len(parse_scopes(scopes)) != len(set(scopes)):
        raise ValueError(f"scopes must be among {', '.join(Scope)}, got {', '.join(scopes) or 'none'}")
    key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    record = KeyRecord(
        id=key_id,
        name=name,
        secret_hash=hash_secret(secret),
        scopes=sorted(set(scopes)),
        owner=owner or name,
        namespaces=list(namespaces),
        vendors=list(vendors),
        tenant=tenant,
        created=dt.datetime.now(dt.UTC),
        expires=expires,
        revoked=None,
        last_used=None,
    )
    return record, f"{PREFIX}{key_id}_{secret}"


class KeyVerifier:
    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys

    async def verify(self, token: str) -> Principal:
        match = _KEY.fullmatch(token)
        if match is None:
            raise Unauthorized("The bearer credential is not a well-formed API key of this directory")
        key_id, secret = match.groups()
        record = await self.keys.get(key_id)
        # Compared even for an unknown key id, so that timing does not tell which key ids exist.
        expected = record.secret_hash if record is not None else hash_secret("")
        if not hmac.compare_digest(hash_secret(secret), expected) or record is None:
            raise Unauthorized("The API key is not known to this directory")
        now = dt.datetime.now(dt.UTC)
        if record.revoked is not None:
            raise Unauthorized(f"The API key {record.name!r} was revoked")
        if record.expires is not None and record.expires <= now:
            raise Unauthorized(f"The API key {record.name!r} expired at {record.expires.isoformat()}")
        if record.last_used is None or now - record.last_used >= TOUCH_INTERVAL:
            await self.keys.touch(key_id)
        return Principal(
            name=record.name,
            scopes=parse_scopes(record.scopes),
            owner_name=record.owner,
            namespaces=tuple(record.namespaces),
            vendors=tuple(record.vendors),
            tenant=record.tenant,
        )


__all__ = ["PREFIX", "KeyVerifier", "hash_secret", "new_key"]
