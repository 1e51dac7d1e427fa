"""OAuth 2 / OpenID Connect access tokens (JWT) from the operator's identity provider, verified with PyJWT.

The signing keys come from a JWKS the operator names: a file (a mounted secret, say), or the issuer's JWKS URL (the
only outbound request the directory makes). Either is read at start, again every ``JWKS_REFRESH_INTERVAL`` (rotated
keys appear, removed ones stop being accepted) and when a token names a key id not seen yet. A failed read keeps the
keys read before and is retried with backoff: an outage of the identity provider does not stop the directory
starting, nor refuse tokens it can still check, and a token it cannot check yet is answered 503 (retry), never 401
(the token is not known to be bad). Only a file unreadable at start stops it (a configuration error). Signature,
``iss``, ``aud``, ``exp`` and ``nbf`` are checked; only the configured algorithms are accepted (never ``none``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import jwt

from registry.auth.principal import Principal, parse_scopes
from registry.config import ConfigError, Settings
from registry.errors import ServiceUnavailable, Unauthorized
from registry.redaction import redact_urls
from registry.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: Seconds of clock skew tolerated on exp and nbf.
LEEWAY = 30
#: Seconds between reads of the JWKS while it answers.
JWKS_REFRESH_INTERVAL = 300.0
#: Seconds before the first retry of a failed read; doubled on each failure, up to
#: ``REGISTRY_AUTH_JWKS_MAX_RETRY_DELAY``.
JWKS_RETRY_DELAY = 5.0
#: Seconds one fetch of the JWKS URL may take.
JWKS_FETCH_TIMEOUT = 10.0
#: Seconds a read under way may take to finish when the process stops.
STOP_READ_TIMEOUT = 2.0
#: Retry-After of a token refused because no key could be read to check it.
_RETRY_AFTER = "10"


def _strings(value: Any) -> list[str]:
    """A claim holding names: a list, or one string of space- or comma-separated names."""
    if isinstance(value, str):
        return [item for item in value.replace(",", " ").split() if item]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


#: The key type each family of signature algorithms needs (RFC 7518 §3.1, RFC 8037).
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


def _signing_key(keys: jwt.PyJWKSet | None, kid: Any, algorithm: str) -> Any:
    """The key of ``keys`` with id ``kid`` that may verify signatures of ``algorithm`` (the only one, if the token
    names none). A key of another type is never handed to the verifier (a forged header would make it fail)."""
    if keys is None:
        return None
    key_type = _KEY_TYPES.get(algorithm[:2])
    usable = [key for key in keys.keys if key.public_key_use in ("sig", None) and key.key_type == key_type]
    if kid is None:
        return usable[0].key if len(usable) == 1 else None
    return next((key.key for key in usable if key.key_id == kid), None)


class TokenVerifier:
    def __init__(self, settings: Settings) -> None:
        if not settings.auth_jwt_issuer or not settings.auth_jwt_audience:
            raise ConfigError("REGISTRY_AUTH_JWKS needs REGISTRY_AUTH_JWT_ISSUER and REGISTRY_AUTH_JWT_AUDIENCE too")
        self.settings = settings
        self.algorithms = list(settings.auth_jwt_algorithms)
        self.source = settings.auth_jwks
        #: The source as messages name it: without the URL's credentials and query (registry/redaction.py).
        self.source_name = redact_urls(self.source)
        #: Fetches the JWKS URL (http(s) only, no redirects); the keys are kept here, not in its cache.
        self._client: jwt.PyJWKClient | None = None
        self._keys: jwt.PyJWKSet | None = None
        #: Why the last read of the keys failed (None after a successful one), for ``/readyz`` and the 503s.
        self.problem: str | None = None
        #: When the keys were last read, and when a read was last tried (monotonic seconds).
        self.read_at: float | None = None
        #: Seconds after a read before a token naming an unknown key id may read the keys again.
        self.refetch_cooldown = settings.auth_jwks_refetch_cooldown
        #: Seconds before the first retry of a failed read, and the longest wait between two.
        self.max_retry_delay = settings.auth_jwks_max_retry_delay
        self.retry_delay = min(JWKS_RETRY_DELAY, self.max_retry_delay)
        self._tried_at = -self.refetch_cooldown
        self._reading: asyncio.Task[None] | None = None
        self._refresher: asyncio.Task[None] | None = None
        if self.source.startswith(("https://", "http://")):
            self._client = jwt.PyJWKClient(self.source, cache_jwk_set=False, timeout=JWKS_FETCH_TIMEOUT)
            self.problem = "not fetched yet"
        else:
            try:
                self._keys, self.read_at = self._read_file(), time.monotonic()
            except Exception as error:  # unreadable, not JSON, not a key set
                raise ConfigError(
                    f"REGISTRY_AUTH_JWKS: cannot read a JWKS from {self.source_name}: {redact_urls(str(error))}"
                ) from error

    def _read_file(self) -> jwt.PyJWKSet:
        return jwt.PyJWKSet.from_json(Path(self.source).expanduser().read_text(encoding="utf-8"))

    def _read_url(self) -> jwt.PyJWKSet:
        assert self._client is not None
        return jwt.PyJWKSet.from_dict(self._client.fetch_data())

    def state(self) -> str:
        """What ``/readyz`` says of the keys."""
        if self.problem is not None:
            return self.problem
        count = len(self._keys.keys) if self._keys is not None else 0
        age = "" if self.read_at is None else f", read {time.monotonic() - self.read_at:.0f} s ago"
        return f"{count} signing key(s) from {self.source_name}{age}"

    async def start(self) -> None:
        """Fetch the issuer's JWKS (a file was read already), then keep the keys fresh in the background. A failed
        first fetch is logged and retried: the directory serves meanwhile (API keys and reads work; tokens get 503)."""
        if self._client is not None:
            await self.refresh()
        self._refresher = asyncio.create_task(self._refresh_periodically(), name="jwks-refresh")

    async def stop(self) -> None:
        await cancel_and_wait(self._refresher)
        if self._reading is not None:  # a read in a thread cannot be stopped: waited for, briefly
            await asyncio.wait([self._reading], timeout=STOP_READ_TIMEOUT)

    async def refresh(self) -> None:
        """Read the keys now, or wait for the read under way (one at a time, whoever asks)."""
        if self._reading is None or self._reading.done():
            self._reading = asyncio.create_task(self._read_keys(), name="jwks-read")
        await asyncio.shield(self._reading)

    async def _read_keys(self) -> None:
        self._tried_at = time.monotonic()
        try:
            # urllib and file reads block: off the event loop.
            keys = await asyncio.to_thread(self._read_file if self._client is None else self._read_url)
        except Exception as error:  # unreachable, not JSON, not a key set: whatever it is, the keys held stay
            kept = "keeping the keys read before" if self._keys is not None else "no keys yet: tokens get 503"
            self.problem = f"cannot read the JWKS from {self.source_name} ({redact_urls(str(error))}); {kept}"
            log.warning("%s", self.problem)
            return
        if self.problem is not None and self.read_at is not None:
            log.info("the JWKS from %s is read again", self.source_name)
        self._keys, self.read_at, self.problem = keys, time.monotonic(), None

    async def _refresh_periodically(self) -> None:
        delay = self.retry_delay
        while True:
            if self.problem is None:
                delay = self.retry_delay
                await asyncio.sleep(JWKS_REFRESH_INTERVAL)
            else:
                await asyncio.sleep(delay)
                delay = min(2 * delay, self.max_retry_delay)
            await self.refresh()

    async def _key_for(self, header: dict[str, Any]) -> Any:
        kid, algorithm = header.get("kid"), str(header.get("alg"))
        key = _signing_key(self._keys, kid, algorithm)
        if key is None and time.monotonic() - self._tried_at >= self.refetch_cooldown:
            await self.refresh()  # a key rotated in since the last read
            key = _signing_key(self._keys, kid, algorithm)
        if key is not None:
            return key
        if self.problem is not None:
            # The details (the URL, the error) are the operator's: logged and in /readyz.
            raise ServiceUnavailable(
                "The access token cannot be checked now: the directory cannot read its identity provider's signing "
                "keys (JWKS); retry later",
                headers={"Retry-After": _RETRY_AFTER},
            )
        named = f"with id {kid!r}" if kid is not None else "(the token names no key id)"
        raise jwt.PyJWKClientError(f"no {algorithm} signing key {named} in the identity provider's JWKS")

    async def verify(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg") not in self.algorithms:
                raise Unauthorized(
                    f"Access tokens signed with {header.get('alg')!r} are not accepted "
                    f"(accepted: {', '.join(self.algorithms)})"
                )
            key = await self._key_for(header)
            claims = jwt.decode(
                token,
                key,
                algorithms=self.algorithms,
                audience=self.settings.auth_jwt_audience,
                issuer=self.settings.auth_jwt_issuer,
                leeway=LEEWAY,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except (jwt.PyJWTError, jwt.PyJWKClientError, TypeError, ValueError) as error:  # the last two: a key unfit
            raise Unauthorized(f"The access token was refused: {error}") from error
        return self.principal(claims)

    def principal(self, claims: dict[str, Any]) -> Principal:
        """The principal of verified claims, through the configured claim mapping."""
        settings = self.settings
        subject = str(claims["sub"])
        owner = claims.get(settings.auth_claim_owner)
        tenant = claims.get(settings.auth_claim_tenant)
        return Principal(
            name=subject,
            scopes=parse_scopes(_strings(claims.get(settings.auth_claim_scopes))),
            owner_name=owner if isinstance(owner, str) and owner else subject,
            namespaces=tuple(_strings(claims.get(settings.auth_claim_namespaces))),
            vendors=tuple(_strings(claims.get(settings.auth_claim_vendors))),
            tenant=tenant if isinstance(tenant, str) and tenant else None,
            origin=str(claims["iss"]),
        )


__all__ = ["TokenVerifier"]
