"""Settings of the group "Authentication": the mode, the identity provider's keys, the claims of its tokens."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from registry.config.fields import AUTH, setting
from registry.config.parsers import algorithms, auth_mode, non_negative, positive


@dataclasses.dataclass(frozen=True)
class AuthSettings:
    """The fields of :class:`registry.config.Settings` in the group ``AUTH``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    auth: str = setting(
        AUTH,
        "",
        "`off`, `writes` (reads anonymous) or `all`. Unset on a non-loopback host (and no JWKS): `serve` refuses to "
        "start. See [docs/security.md](docs/security.md).",
        shown="`off` on loopback",
    )
    auth_jwks: str = setting(
        AUTH,
        "",
        "JWK Set of the identity provider whose access tokens (JWT) are accepted: a file or the issuer's JWKS URL "
        "(implies `REGISTRY_AUTH=writes` unless set). Read again every 5 min; while it cannot be read the keys held "
        "stay in use, and a token none of them can check gets 503.",
    )
    auth_jwks_refetch_cooldown: float = setting(
        AUTH,
        30.0,
        "Seconds after a read of the JWKS before a token naming an unknown key id may read it again (so made-up key "
        "ids cannot make the directory hammer the identity provider).",
    )
    auth_jwks_max_retry_delay: float = setting(
        AUTH,
        60.0,
        "Longest wait, seconds, between retries of a failed read of the JWKS: the first retry comes after 5 s (or "
        "this, if less), each next one after twice the wait before, up to this.",
    )
    auth_jwt_issuer: str = setting(AUTH, "", "Required `iss` of access tokens (needed with a JWKS).")
    auth_jwt_audience: str = setting(AUTH, "", "Required `aud` of access tokens (needed with a JWKS).")
    auth_jwt_algorithms: tuple[str, ...] = setting(
        AUTH,
        ("RS256", "ES256"),
        "Accepted signature algorithms (`none` is refused).",
    )
    auth_claim_scopes: str = setting(
        AUTH,
        "scope",
        "Token claim holding the scopes (`read`, `write`, `admin`, optionally `registry:`-prefixed).",
    )
    auth_claim_owner: str = setting(
        AUTH,
        "sub",
        "Token claim holding the owner name of what it creates (owned as `jwt:<issuer>|<name>`).",
    )
    auth_claim_namespaces: str = setting(
        AUTH,
        "registry_namespaces",
        "Token claim holding the id patterns it may register.",
    )
    auth_claim_vendors: str = setting(
        AUTH,
        "registry_vendors",
        "Token claim holding the vendor names it may register for.",
    )
    auth_claim_tenant: str = setting(AUTH, "registry_tenant", "Token claim holding its tenant.")


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "auth": auth_mode,
    "auth_jwks": str,
    "auth_jwks_refetch_cooldown": non_negative(float),
    "auth_jwks_max_retry_delay": positive(float),
    "auth_jwt_issuer": str,
    "auth_jwt_audience": str,
    "auth_jwt_algorithms": algorithms,
    "auth_claim_scopes": str,
    "auth_claim_owner": str,
    "auth_claim_namespaces": str,
    "auth_claim_vendors": str,
    "auth_claim_tenant": str,
}
