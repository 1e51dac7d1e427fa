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
from registry.errors import Conflict, NotFound, Unauthorized
from registry.store.keys import KeyRecord, KeyStore

PREFIX = "reg_"
_KEY = re.compile(r"reg_([0-9a-f]{12})_([A-Za-z0-9_-]{20,})")
#: Longest name, owner name or tenant of a key: they are shown as identities (``key:<name>``) and in logs.
MAX_NAME = 128
#: Most id patterns or vendors one key is bound to, and the longest of each.
MAX_BINDINGS = 100
MAX_PATTERN = 2048
#: Characters a name, pattern or vendor of a key may not hold: controls, line separators and bidi overrides, which
#: would disguise it where it is shown.
_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_DURATION = re.compile(r"(\d{1,6})([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


class KeyFieldError(ValueError):
    """A value a key cannot have; ``field`` names it as the API's body and the CLI's options do."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def parse_expiry(raw: str | None, now: dt.datetime | None = None) -> dt.datetime | None:
    """``30d``, ``12h``, ``90m``, ``45s`` from now, or an ISO 8601 time (UTC if it names no zone); None = never."""
    if raw is None or not raw.strip():
        return None
    now = now or dt.datetime.now(dt.UTC)
    match = _DURATION.fullmatch(raw.strip())
    if match:
        return now + dt.timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        moment = dt.datetime.fromisoformat(raw.strip())
    except ValueError:
        raise KeyFieldError(
            "expires", f"expected a duration such as 30d or 12h, or an ISO 8601 time; got {raw!r}"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _check_text(field: str, value: str, longest: int) -> None:
    if not value.strip() or value != value.strip():
        raise KeyFieldError(field, f"{field} must be non-empty, without leading or trailing spaces")
    if len(value) > longest:
        raise KeyFieldError(field, f"{field} is {len(value)} characters long; at most {longest} are allowed")
    unshowable = _UNSHOWABLE.search(value)
    if unshowable:
        raise KeyFieldError(field, f"{field} holds U+{ord(unshowable.group()):04X}, a control or formatting character")


def _check_bindings(field: str, values: tuple[str, ...]) -> None:
    if len(values) > MAX_BINDINGS:
        raise KeyFieldError(field, f"{len(values)} {field} given; a key is bound to at most {MAX_BINDINGS}")
    for value in values:
        _check_text(field, value, MAX_PATTERN)


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
    """A new key's row and its secret (shown once, never stored); ``KeyFieldError`` for a value it cannot have."""
    if not parse_scopes(scopes) or len(parse_scopes(scopes)) != len(set(scopes)):
        raise KeyFieldError("scopes", f"scopes must be among {', '.join(Scope)}, got {', '.join(scopes) or 'none'}")
    _check_text("name", name, MAX_NAME)
    for field, value in (("owner", owner), ("tenant", tenant)):
        if value is not None:
            _check_text(field, value, MAX_NAME)
    _check_bindings("namespaces", namespaces)
    _check_bindings("vendors", vendors)
    if expires is not None and expires <= dt.datetime.now(dt.UTC):
        raise KeyFieldError("expires", f"expires ({expires.isoformat()}) is not in the future")
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


def key_state(record: KeyRecord, now: dt.datetime | None = None) -> str:
    """``active``, ``revoked`` or ``expired``."""
    if record.revoked is not None:
        return "revoked"
    if record.expires is not None and record.expires <= (now or dt.datetime.now(dt.UTC)):
        return "expired"
    return "active"


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


class KeyAdministration:
    """API keys as an admin manages them over HTTP (``/api/v1/keys``): every key, a new one (names are unique), a
    revocation by id."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys

    async def all(self) -> list[KeyRecord]:
        return await self.keys.all()

    async def add(self, record: KeyRecord) -> None:
        if any(existing.name == record.name for existing in await self.keys.all()):
            raise Conflict(f"A key named {record.name!r} exists already; revoke it or choose another name")
        await self.keys.add(record)

    async def revoke(self, key_id: str) -> KeyRecord:
        record = await self.keys.revoke_id(key_id)
        if record is None:
            raise NotFound(f"No API key with id {key_id!r}")
        return record


__all__ = [
    "PREFIX",
    "KeyAdministration",
    "KeyFieldError",
    "KeyRecord",
    "KeyVerifier",
    "hash_secret",
    "key_state",
    "new_key",
    "parse_expiry",
]
