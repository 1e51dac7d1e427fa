"""Typed results of the SDK."""

from __future__ import annotations

from typing import Any

import msgspec


class Notice(msgspec.Struct, frozen=True):
    code: str
    message: str
    field: str | None = None


class WriteResult(msgspec.Struct, frozen=True):
    """Outcome of a registration, replacement or patch."""

    id: str
    created: bool
    etag: str | None
    notices: list[Notice] = msgspec.field(default_factory=list)


class Lease(msgspec.Struct, frozen=True, rename={"last_seen": "lastSeen"}):
    id: str
    ttl: float
    expires: str
    last_seen: str


class Event(msgspec.Struct, frozen=True):
    """One change event: ``type`` is thing_created/updated/deleted, ``seq`` the event id to resume after."""

    type: str
    seq: int
    data: dict[str, Any]

    @property
    def thing_id(self) -> str:
        return str(self.data.get("id", ""))


class SearchPage(msgspec.Struct, frozen=True):
    items: list[Any]
    next_cursor: str | None = None


__all__ = ["Event", "Lease", "Notice", "SearchPage", "WriteResult"]
