"""OAuth 2 / OpenID Connect access tokens (JWT) from the operator's identity provider, verified with PyJWT.

The signing keys come from a JWKS the operator names: a file, or the issuer's JWKS URL, fetched at start and again
when a token names a key id not seen yet (the only outbound request the directory makes). Signature, ``iss``,
``aud``, ``exp`` and ``nbf`` are checked; only the configured algorithms are accepted (never ``none``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import jwt

from registry.auth.principal import Principal, parse_scopes
from registry.config import ConfigError, Settings
from registry.errors import Unauthorized

#: Seconds of clock skew tolerated on exp and nbf.
LEEWAY = 30
#: Seconds after a fetch of the JWKS URL before an unknown key id may fetch it again (so tokens with made-up key
#: ids cannot make the directory hammer the identity provider).
JWKS_REFETCH_COOLDOWN = 30.0


def _strings(value: Any) -> list[str]:
    """A claim holding names: a list, or one string of space- or comma-separated names."""
    if isinstance(value, str):
        return [item for item in value.replace(",", " ").split() if item]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


class TokenVerifier:
    def __init__(self, settings: Settings) -> None:
        if not settings.auth_jwt_issuer or not settings.auth_jwt_audience:
            raise ConfigError("REGISTRY_AUTH_JWKS needs REGISTRY_AUTH_JWT_ISSUER and REGISTRY_AUTH_JWT_AUDIENCE too")
        self.settings = settings
        self.algorithms = list(settings.auth_jwt_algorithms)
        source = settings.auth_jwks
        self._client: jwt.PyJWKClient | None = None
        self._keys: jwt.PyJWKSet | None = None
        if source.startswith(("https://", "http://")):
            self._client = jwt.PyJWKClient(source, cache_keys=True, timeout=10, cooldown_duration=JWKS_REFETCH_COOLDOWN)
        else:
            try:
                self._keys = jwt.PyJWKSet.from_json(Path(source).expanduser().read_text(encoding="utf-8"))
            except (OSError, jwt.PyJWKSetError, ValueError) as error:
                raise ConfigError(f"REGISTRY_AUTH_JWKS: cannot read a JWKS from {source}: {error}") from error

    async def start(self) -> None:
        """Fetch the issuer's JWKS once at start (off the event loop), so a bad URL shows at once."""
        if self._client is not None:
            await asyncio.to_thread(self._client.get_jwk_set)

    async def _signing_key(self, token: str, header: dict[str, Any]) -> Any:
        kid = header.get("kid")
        if self._client is not None:
            # PyJWKClient refetches the JWKS when the key id is unknown; its HTTP call blocks, so not on the loop.
            return (await asyncio.to_thread(self._client.get_signing_key_from_jwt, token)).key
        assert self._keys is not None
        if kid is None and len(self._keys.keys) == 1:
            return self._keys.keys[0].key
        for key in self._keys.keys:
            if key.key_id == kid:
                return key.key
        raise jwt.PyJWKClientError(f"no key with id {kid!r} in the configured JWKS")

    async def verify(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg") not in self.algorithms:
                raise Unauthorized(
                    f"Access tokens signed with {header.get('alg')!r} are not accepted "
                    f"(accepted: {', '.join(self.algorithms)})"
                )
            key = await self._signing_key(token, header)
            claims = jwt.decode(
                token,
                key,
                algorithms=self.algorithms,
                audience=self.settings.auth_jwt_audience,
                issuer=self.settings.auth_jwt_issuer,
                leeway=LEEWAY,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except (jwt.PyJWTError, jwt.PyJWKClientError) as error:
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
            owner=owner if isinstance(owner, str) and owner else subject,
            namespaces=tuple(_strings(claims.get(settings.auth_claim_namespaces))),
            vendors=tuple(_strings(claims.get(settings.auth_claim_vendors))),
            tenant=tenant if isinstance(tenant, str) and tenant else None,
        )


__all__ = ["TokenVerifier"]
