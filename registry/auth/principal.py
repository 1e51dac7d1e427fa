"""Who makes a request: a principal, verified from an API key or an access token."""

from __future__ import annotations

import dataclasses
import enum


class Scope(enum.StrEnum):
    """What a principal may do; each scope includes the ones before it (admin ⊃ write ⊃ read)."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


_RANK = {Scope.READ: 0, Scope.WRITE: 1, Scope.ADMIN: 2}


@dataclasses.dataclass(frozen=True, slots=True)
class Principal:
    #: Shown in the change log, events and /versions; never a secret.
    name: str
    scopes: frozenset[Scope]
    #: Owner name recorded on the descriptions it creates (several keys of one team may share it).
    owner: str
    #: Id patterns it may register under (``urn:acme:*``); empty = any id.
    namespaces: tuple[str, ...] = ()
    #: ``lmos:vendor`` names it may register for (compared case-insensitively); empty = any vendor.
    vendors: tuple[str, ...] = ()
    tenant: str | None = None

    def allows(self, needed: Scope) -> bool:
        return any(_RANK[scope] >= _RANK[needed] for scope in self.scopes)

    @property
    def is_admin(self) -> bool:
        return Scope.ADMIN in self.scopes


def parse_scopes(values: list[str] | tuple[str, ...]) -> frozenset[Scope]:
    """Scopes by name (``read``, ``write``, ``admin``, optionally prefixed ``registry:``); others are ignored."""
    names = {value.strip().lower().removeprefix("registry:") for value in values}
    return frozenset(Scope(name) for name in names if name in Scope.__members__.values())


__all__ = ["Principal", "Scope", "parse_scopes"]
