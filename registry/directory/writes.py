"""What a write of a description is: the candidate it stores, the write waiting for its transaction, its outcome;
and the rules of a write that need no database (ids, preconditions, the base of a merge patch)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from registry.auth.ownership import DerivedId
from registry.auth.principal import Principal
from registry.descriptions.registration_info import Lifetime
from registry.errors import BadRequest, InvalidId, NotFound, PreconditionFailed
from registry.projections import Projection
from registry.store.things import StoredDescription
from registry.wire import Notice


@dataclasses.dataclass(frozen=True, slots=True)
class WriteOutcome:
    created: bool
    stored: StoredDescription
    notices: list[Notice]


@dataclasses.dataclass(frozen=True, slots=True)
class Candidate:
    """What a write will store: the document (with ``id``, without ``registration``), its lifetime, its
    projections and the notices they raised, and the version it declares (``version_of``: read with the
    projections, not again under the id's lock)."""

    document: dict[str, Any]
    document_text: str
    lifetime: Lifetime
    projections: Sequence[Projection]
    notices: list[Notice]
    version: str | None


#: Makes the candidate of a write from the current description (None if there is none), under the id's lock.
Produce = Callable[[StoredDescription | None], Awaitable[Candidate]]


@dataclasses.dataclass(frozen=True, slots=True)
class PendingWrite:
    """One write to store: what ``produce`` makes of the id's current description, by ``principal``, with the
    checks the request asked for."""

    thing_id: str
    produce: Produce
    principal: Principal | None
    #: The directory assigned the id: POST /things (``anonymous``) or a tool or card import (``assigned_id``).
    anonymous: bool = False
    assigned_id: bool = False
    if_match: str | None = None
    create_only: bool = False
    #: Registers the id if it is free (PUT, POST, imports), or only changes the description there (PATCH).
    creates: bool = True
    #: What the directory derived the id from (a tool's vendor, an A2A card's URL), whose bound party holds it.
    derived: DerivedId | None = None


class RevisionMoved(Exception):
    """Another write changed the description between reading it and locking it: compute the candidate again."""


def new_local_id() -> str:
    """Local ids of anonymous TDs: a UUID v4 as a URN (``tdd-anonymous-td-local-uuid``)."""
    return f"urn:uuid:{uuid.uuid4()}"


def etag_matches(if_match: str, etag: str) -> bool:
    """RFC 9110 If-Match: ``*`` or a list of entity tags compared strongly."""
    candidates = [tag.strip() for tag in if_match.split(",")]
    return "*" in candidates or etag in candidates


def constant(candidate: Candidate) -> Produce:
    async def produce(current: StoredDescription | None) -> Candidate:
        return candidate

    return produce


def at_revision(revision: int, candidate: Candidate) -> Produce:
    """``candidate``, computed from ``revision``: only while the description is still at that revision."""

    async def produce(current: StoredDescription | None) -> Candidate:
        if current is None:
            raise NotFound("The Thing Description was deleted while the patch was applied")
        if current.revision != revision:
            raise RevisionMoved
        return candidate

    return produce


def check_put_id(thing_id: str, document: Any) -> None:
    """PUT's rules for the id: one the directory accepts (registry/descriptions/ids.py), and the body's id equal
    to the path's."""
    InvalidId.check(thing_id)
    if isinstance(document, dict):
        body_id = document.get("id")
        if body_id is None:
            raise BadRequest(
                "The Thing Description has no id; PUT needs the same id in the body as in the path "
                "(use POST /things for anonymous TDs)",
                validationErrors=[{"field": "id", "description": "id is required for PUT"}],
            )
        if body_id != thing_id:
            raise BadRequest(
                f"The id in the body ({body_id!r}) differs from the id in the path ({thing_id!r})",
                validationErrors=[{"field": "id", "description": "must equal the id in the request path"}],
            )


def precondition_failed(current: StoredDescription | None, thing_id: str = "") -> PreconditionFailed:
    if current is None:
        return PreconditionFailed(f"If-Match given, but there is no description with id {thing_id!r}")
    return PreconditionFailed(
        "If-Match does not match the current version of the description", headers={"ETag": current.etag}
    )


def with_lifetime(stored: StoredDescription) -> dict[str, Any]:
    """The stored document with the lifetime the registrant asked for, as the base a merge patch applies to."""
    document = stored.document()
    if stored.ttl is not None:
        document["registration"] = {"ttl": stored.ttl}
    elif stored.expires is not None:
        document["registration"] = {"expires": stored.expires.isoformat()}
    return document


__all__ = [
    "Candidate",
    "PendingWrite",
    "Produce",
    "RevisionMoved",
    "WriteOutcome",
    "at_revision",
    "check_put_id",
    "constant",
    "etag_matches",
    "new_local_id",
    "precondition_failed",
    "with_lifetime",
]
