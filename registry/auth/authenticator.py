"""From an ``Authorization`` header to a principal, and the mode that says which requests need one."""

from __future__ import annotations

import enum
import ipaddress

from registry.auth.keys import PREFIX, KeyVerifier
from registry.auth.principal import KEY_ORIGIN, Principal, Scope
from registry.auth.tokens import TokenVerifier
from registry.config import ConfigError, Settings
from registry.errors import Forbidden, Unauthorized

REALM = "registry"


class AuthMode(enum.StrEnum):
    OFF = "off"
    #: Writes need credentials; reads are anonymous (credentials, when given, are verified all the same).
    WRITES = "writes"
    ALL = "all"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def auth_mode(settings: Settings) -> AuthMode:
    """REGISTRY_AUTH, or its default: off on a loopback host, writes with an identity provider, else refuse."""
    if settings.auth:
        return AuthMode(settings.auth)
    if settings.auth_jwks:
        return AuthMode.WRITES
    if is_loopback(settings.host):
        return AuthMode.OFF
    raise ConfigError(
        f"Refusing to listen on {settings.host} without authentication: set REGISTRY_AUTH=writes or all "
        "(keys from `registry keys create`, or REGISTRY_AUTH_JWKS), or REGISTRY_AUTH=off to let anyone who "
        "reaches the port write"
    )


def unauthorized(detail: str, *, invalid: bool) -> Unauthorized:
    """401 with the RFC 6750 challenge: ``invalid_token`` when credentials were given but refused."""
    challenge = f'Bearer realm="{REALM}"' + (', error="invalid_token"' if invalid else "")
    return Unauthorized(detail, headers={"WWW-Authenticate": challenge})


class Authenticator:
    def __init__(self, mode: AuthMode, keys: KeyVerifier, tokens: TokenVerifier | None) -> None:
        self.mode = mode
        self.keys = keys
        self.tokens = tokens

    def needs_credentials(self, access: Scope) -> bool:
        return self.mode is AuthMode.ALL or (self.mode is AuthMode.WRITES and access is not Scope.READ)

    async def principal(self, authorization: str | None) -> Principal | None:
        """The principal of the header's bearer credential; None without one. Bad credentials are a 401."""
        if not authorization:
            return None
        scheme, _, credential = authorization.partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential:
            raise unauthorized("The Authorization header must be 'Bearer <API key or access token>'", invalid=True)
        try:
            if credential.startswith(PREFIX):
                return await self.keys.verify(credential)
            if self.tokens is not None:
                return await self.tokens.verify(credential)
        except Unauthorized as error:
            raise unauthorized(error.detail, invalid=True) from None
        raise unauthorized(
            "The bearer credential is not an API key of this directory, and no identity provider is configured",
            invalid=True,
        )

    async def authorize(self, authorization: str | None, access: Scope) -> Principal | None:
        """The principal, if it may have ``access``: 401 without (good) credentials, 403 if they fall short."""
        if self.mode is AuthMode.OFF:
            return None
        principal = await self.principal(authorization)
        if principal is None:
            if self.needs_credentials(access):
                raise unauthorized(
                    f"This directory needs credentials for {access} requests: send 'Authorization: Bearer <API key "
                    "or access token>'",
                    invalid=False,
                )
            return None
        if not principal.allows(access):
            raise scope_refusal(principal, access, self.tokens.settings.auth_claim_scopes if self.tokens else "scope")
        return principal


def scope_refusal(principal: Principal, needed: Scope, scope_claim: str = "scope") -> Forbidden:
    """The 403 of credentials whose scopes fall short: what they have, what the request needs, and how to get
    credentials that have it (``scopes`` and ``needed`` as members of the problem too)."""
    granted = sorted(principal.scopes)
    has = ", ".join(granted) or "no scope"
    if principal.origin == KEY_ORIGIN:
        credential = f"The API key {principal.name!r} has the scopes {has}"
        remedy = (
            f"ask an admin for a key with {needed} (`registry keys create --name NAME --scopes {needed}`, or "
            "POST /api/v1/keys)"
        )
    else:
        credential = f"The access token of {principal.name!r} has the scopes {has}"
        remedy = f"ask your identity provider for a token whose {scope_claim!r} claim includes registry:{needed}"
    detail = f"{credential}; this request needs {needed}: {remedy}"
    return Forbidden(detail, rule="scope", scopes=granted, needed=str(needed))


__all__ = ["REALM", "AuthMode", "Authenticator", "auth_mode", "is_loopback", "scope_refusal", "unauthorized"]
