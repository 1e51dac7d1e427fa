"""The rows of descriptions as the store reads and writes them (``StoredDescription``, ``Write``, ``Held``), and
the types of their changes in the change log."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import msgspec
from sqlalchemy import DateTime

from registry.store.database import Record
from registry.store.tables import descriptions
from registry.tenancy import Holder

#: PostgreSQL NOTIFY channel; the payload is the highest change sequence of the committed transaction.
CHANGES_CHANNEL = "registry_changes"

THING_CREATED = "thing_created"
THING_UPDATED = "thing_updated"
THING_DELETED = "thing_deleted"
#: An admin gave a description to another owner (the document does not change).
THING_TRANSFERRED = "thing_transferred"


@dataclasses.dataclass(frozen=True, slots=True)
class StoredDescription:
    id: str
    document_text: str
    anonymous: bool
    created: dt.datetime
    modified: dt.datetime
    expires: dt.datetime | None
    ttl: float | None
    revision: int
    #: Owner name that may change it (None: registered with authentication off) and its tenant (None: shared).
    owner: str | None = None
    tenant: str | None = None

    @property
    def etag(self) -> str:
        return f'"{self.revision}"'

    def document(self) -> dict[str, Any]:
        result: dict[str, Any] = msgspec.json.decode(self.document_text)
        return result


@dataclasses.dataclass(frozen=True, slots=True)
class Write:
    """What a write stores: the row of the description and its change-log entry."""

    thing_id: str
    change_type: str
    #: The full document on create, the merge patch (with ``id``) on update, as JSON.
    diff_text: str
    document_text: str
    anonymous: bool
    created: dt.datetime
    expires: dt.datetime | None
    ttl: float | None
    owner: str | None = None
    tenant: str | None = None
    #: Identity of the principal making the write (audit); None with authentication off.
    actor: str | None = None
    #: The owner holds the id rightfully (registry/auth/ownership.py, ``Grant.rightful``).
    rightful: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Held:
    """What a write finds at its ids: the live descriptions, who holds each id that is held (live, or expired
    less than the grace ago, or a tombstone of one purged), and the ids whose tombstone it found."""

    currents: dict[str, StoredDescription]
    holders: dict[str, Holder]
    tombstones: set[str]


COLUMNS = (
    descriptions.c.id,
    descriptions.c.document_text,
    descriptions.c.anonymous,
    descriptions.c.created,
    descriptions.c.modified,
    descriptions.c.expires,
    descriptions.c.ttl,
    descriptions.c.revision,
    descriptions.c.owner,
    descriptions.c.tenant,
)
TIMESTAMP = DateTime(timezone=True)


def stored_from(row: Record) -> StoredDescription:
    return StoredDescription(*row)


__all__ = [
    "CHANGES_CHANNEL",
    "COLUMNS",
    "THING_CREATED",
    "THING_DELETED",
    "THING_TRANSFERRED",
    "THING_UPDATED",
    "TIMESTAMP",
    "Held",
    "StoredDescription",
    "Write",
    "stored_from",
]
