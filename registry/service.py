"""The directory's use cases: register, replace, patch, delete and read descriptions.

Sits between the HTTP layer and the store; owns the WoT Discovery rules (ids, validation, lifetimes) and runs the
projectors that derive indexed data (RDF, capability summaries) from every accepted description.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import json_merge_patch
import msgspec

from registry.config import Settings
from registry.descriptions.registration import LifetimePolicy, enrich, enrich_json, split_registration
from registry.descriptions.validation import validate
from registry.errors import BadRequest, InvalidDescription, NotFound
from registry.schemas import Notice
from registry.store.things import Candidate, Lease, Projection, StoredDescription, ThingRepository


class Projector(Protocol):
    """Derives stored data from a valid description (e.g. its RDF). May reject it with a RegistryError."""

    def project(self, thing_id: str, document: dict[str, Any]) -> ProjectionWithNotices: ...


class ProjectionWithNotices(Projection, Protocol):
    notices: Sequence[Notice]


@dataclasses.dataclass(frozen=True, slots=True)
class WriteOutcome:
    created: bool
    stored: StoredDescription
    notices: list[Notice]


#: Longest id accepted, in UTF-8 bytes: PostgreSQL cannot index (and so cannot store) much longer keys.
MAX_ID_BYTES = 2048

#: Descriptions up to this size (encoded JSON) are projected on the event loop: their projections take under a
#: millisecond (0.3 ms for the 3.6 kB seed agent), and a thread hand-off costs about as much CPU as it spares the
#: loop (the GIL serialises the work either way).
INLINE_PROJECTION_BYTES = 8192


def new_local_id() -> str:
    """Local ids of anonymous TDs: a UUID v4 as a URN (``tdd-anonymous-td-local-uuid``)."""
    return f"urn:uuid:{uuid.uuid4()}"


class DirectoryService:
    def __init__(self, repository: ThingRepository, settings: Settings, projectors: Sequence[Projector] = ()) -> None:
        self.repository = repository
        self.policy = LifetimePolicy(max_ttl=settings.max_ttl, mandate_ttl=settings.mandate_ttl)
        self.projectors = list(projectors)

    # -- reads

    async def get(self, thing_id: str) -> StoredDescription:
        stored = await self.repository.get(thing_id)
        if stored is None:
            raise NotFound(f"No Thing Description with id {thing_id!r}")
        return stored

    @staticmethod
    def enriched(stored: StoredDescription, retrieved: dt.datetime | None = None) -> dict[str, Any]:
        return enrich(
            stored.document(),
            created=stored.created,
            modified=stored.modified,
            expires=stored.expires,
            ttl=stored.ttl,
            retrieved=retrieved or dt.datetime.now(dt.UTC),
        )

    @staticmethod
    def enriched_json(stored: StoredDescription, retrieved: dt.datetime | None = None) -> bytes:
        """``enriched`` serialized, without decoding the stored document (the hot path of GET and listing)."""
        return enrich_json(
            stored.document_text,
            created=stored.created,
            modified=stored.modified,
            expires=stored.expires,
            ttl=stored.ttl,
            retrieved=retrieved or dt.datetime.now(dt.UTC),
        )

    # -- writes

    async def create_anonymous(self, document: Any) -> WriteOutcome:
        """POST /things: the TD must not have an id; the directory assigns a local one."""
        if isinstance(document, dict) and "id" in document:
            raise BadRequest(
                "POST /things registers anonymous Thing Descriptions; this one has an id, use PUT /things/{id}",
                validationErrors=[{"field": "id", "description": "an anonymous TD must not have an id"}],
            )
        thing_id = new_local_id()
        document = {**document, "id": thing_id} if isinstance(document, dict) else document
        candidate, notices = await self._candidate(thing_id, document)
        result = await self.repository.save(thing_id, _constant(candidate), anonymous=True)
        return WriteOutcome(result.created, result.stored, notices)

    async def put(self, thing_id: str, document: Any, *, if_match: str | None = None) -> WriteOutcome:
        """PUT /things/{id}: create (201) or replace (204). The body's id must equal the path's."""
        if len(thing_id.encode()) > MAX_ID_BYTES:
            raise BadRequest(
                f"The id is {len(thing_id.encode())} bytes long; this directory accepts ids of up to {MAX_ID_BYTES}",
                validationErrors=[{"field": "id", "description": f"at most {MAX_ID_BYTES} bytes of UTF-8"}],
            )
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
        candidate, notices = await self._candidate(thing_id, document)
        result = await self.repository.save(thing_id, _constant(candidate), if_match=if_match)
        return WriteOutcome(result.created, result.stored, notices)

    async def patch(self, thing_id: str, patch: Any, *, if_match: str | None = None) -> WriteOutcome:
        """PATCH /things/{id}: RFC 7396 merge patch, validated after merging. ``{}`` renews a ttl."""
        if not isinstance(patch, dict):
            raise BadRequest("A merge patch of a Thing Description must be a JSON object")
        if "id" in patch and patch["id"] != thing_id:
            raise BadRequest(
                "A patch cannot change the id of a Thing Description",
                validationErrors=[{"field": "id", "description": "must be absent or equal the id in the path"}],
            )
        notices: list[Notice] = []

        async def produce(current: StoredDescription | None) -> Candidate:
            assert current is not None  # must_exist
            merged = json_merge_patch.merge(_with_lifetime(current), patch)
            candidate, found = await self._candidate(thing_id, merged)
            notices.extend(found)
            return candidate

        result = await self.repository.save(thing_id, produce, if_match=if_match, must_exist=True)
        return WriteOutcome(result.created, result.stored, notices)

    async def delete(self, thing_id: str, *, if_match: str | None = None) -> None:
        await self.repository.delete(thing_id, if_match=if_match)

    async def renew_lease(self, thing_id: str) -> Lease:
        """Extend a registration by its ttl; agents call this instead of registering again."""
        return await self.repository.renew_lease(thing_id)

    # -- helpers

    async def _candidate(self, thing_id: str, document: Any) -> tuple[Candidate, list[Notice]]:
        errors = validate(document)
        if errors:
            raise InvalidDescription(errors)
        now = dt.datetime.now(dt.UTC)
        stored_document, lifetime, lifetime_errors = split_registration(document, self.policy, now)
        if lifetime_errors:
            raise InvalidDescription(lifetime_errors)
        document_text = msgspec.json.encode(stored_document).decode()
        projections = await self._project(
            thing_id, stored_document, inline=len(document_text) <= INLINE_PROJECTION_BYTES
        )
        notices = [notice for projection in projections for notice in projection.notices]
        return (
            Candidate(
                document=stored_document,
                ttl=lifetime.ttl,
                expires_at=lifetime.expiry,
                projections=projections,
                document_text=document_text,
            ),
            notices,
        )

    async def _project(self, thing_id: str, document: dict[str, Any], *, inline: bool) -> list[ProjectionWithNotices]:
        def project() -> list[ProjectionWithNotices]:
            return [projector.project(thing_id, document) for projector in self.projectors]

        # Projections are CPU-bound (JSON-LD, schema walks): those of larger descriptions run off the event loop.
        return project() if inline or not self.projectors else await asyncio.to_thread(project)


def _constant(candidate: Candidate) -> Callable[[StoredDescription | None], Awaitable[Candidate]]:
    async def produce(current: StoredDescription | None) -> Candidate:
        return candidate

    return produce


def _with_lifetime(stored: StoredDescription) -> dict[str, Any]:
    """The stored document with the lifetime the registrant asked for, as the base a merge patch applies to."""
    document = stored.document()
    if stored.ttl is not None:
        document["registration"] = {"ttl": stored.ttl}
    elif stored.expires is not None:
        document["registration"] = {"expires": stored.expires.isoformat()}
    return document


__all__ = ["DirectoryService", "ProjectionWithNotices", "Projector", "WriteOutcome"]
