"""Who makes a request: a principal, verified from an API key or an access token.

Owners and actors are identified by where the principal came from as well as by its name, so that names never
collide across credential kinds: ``key:<name>`` for an API key, ``jwt:<issuer>|<name>`` for an access token of
``issuer``. The tenant of an owner is the ``tenant`` column beside it (registry/auth/ownership.py compares both).
"""

from __future__ import annotations

import dataclasses
import enum
import re


class Scope(enum.StrEnum):
    """What a principal may do; each scope includes the ones before it (admin ⊃ write ⊃ read)."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


_RANK = {Scope.READ: 0, Scope.WRITE: 1, Scope.ADMIN: 2}

#: The origin of API keys; an access token's origin is its issuer.
KEY_ORIGIN = "key"
KEY_PREFIX = "key:"
TOKEN_PREFIX = "jwt:"
#: Separates a token's issuer from the name in an identity. Names may hold it (``auth0|123``); issuers hold it
#: escaped, so the first one is the separator.
ISSUER_END = "|"


def escape_issuer(issuer: str) -> str:
    """``%`` and ``|`` of an issuer percent-encoded: the first ``|`` of an identity then ends the issuer."""
    return issuer.replace("%", "%25").replace(ISSUER_END, "%7C")


_ESCAPED = re.compile("%(25|7C|7c)")


def unescape_issuer(escaped: str) -> str:
    return _ESCAPED.sub(lambda match: "%" if match.group(1) == "25" else ISSUER_END, escaped)


def identity(origin: str, name: str) -> str:
    """The canonical identity of ``name`` from ``origin`` (``KEY_ORIGIN`` or a token issuer): ``key:alice``,
    ``jwt:https://issuer.example|alice``. One string, compared whole, stored in ``descriptions.owner`` and
    ``changes.actor``."""
    if origin == KEY_ORIGIN:
        return KEY_PREFIX + name
    return f"{TOKEN_PREFIX}{escape_issuer(origin)}{ISSUER_END}{name}"


@dataclasses.dataclass(frozen=True, slots=True)
class Principal:
    #: The key's name or the token's subject, for messages; audit and limits use ``actor``.
    name: str
    scopes: frozenset[Scope]
    #: Owner name recorded on the descriptions it creates (several keys of one team may share it).
    owner_name: str
    #: Id patterns it may register under (``urn:acme:*``); empty = any id.
    namespaces: tuple[str, ...] = ()
    #: ``lmos:vendor`` names it may register for (compared case-insensitively); empty = any vendor.
    vendors: tuple[str, ...] = ()
    tenant: str | None = None
    #: ``KEY_ORIGIN`` for an API key, the issuer (``iss``) for an access token.
    origin: str = KEY_ORIGIN

    def allows(self, needed: Scope) -> bool:
        return any(_RANK[scope] >= _RANK[needed] for scope in self.scopes)

    @property
    def is_admin(self) -> bool:
        return Scope.ADMIN in self.scopes

    @property
    def owner(self) -> str:
        """The owner identity of what it creates (with its ``tenant``, who may change it)."""
        return identity(self.origin, self.owner_name)

    @property
    def actor(self) -> str:
        """Its own identity: who made a change (the change log) and whose budget a request counts against."""
        return identity(self.origin, self.name)


def parse_scopes(values: list[str] | tuple[str, ...]) -> frozenset[Scope]:
    """Scopes by name (``read``, ``write``, ``admin``, optionally prefixed ``registry:``); others are ignored."""
    names = {value.strip().lower().removeprefix("registry:") for value in values}
    return frozenset(Scope(name) for name in names if name in Scope.__members__.values())


__all__ = [
    "KEY_ORIGIN",
    "KEY_PREFIX",
    "TOKEN_PREFIX",
    "Principal",
    "Scope",
    "escape_issuer",
    "identity",
    "parse_scopes",
    "unescape_issuer",
]
