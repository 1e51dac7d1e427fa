"""The directory's use cases: register, replace, patch, delete, read, list, renew and purge descriptions, and
tell who owns one, its lease and who may see it.

Sits between the HTTP layer and the store; owns the WoT Discovery rules (ids, validation, lifetimes) and the
sequence of every write: validate and project *before* the transaction (CPU work, never under the per-id lock),
then in one transaction lock the id, check the current revision, write the row and its change, and let each
projection store its rows.

A description its author cannot read (another tenant's) is, on every write path, what a missing one is: its
visibility is checked first, before preconditions, ownership and version rules, so that no answer (status, detail,
ETag) tells it apart. A PUT that would create an id held that way is refused as an id outside the author's
namespaces is (registry/auth/ownership.py, ``unavailable_id``).

What a write is (its candidate, the pending write, its outcome) is in :mod:`registry.directory.writes`; the steps of
writes inside their transaction are :class:`registry.directory.write_steps.WriteSteps`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import json_merge_patch
import msgspec

from registry.auth.ownership import DerivedId, authorize_write, ensure_visible, not_found
from registry.auth.principal import Principal
from registry.auth.tenancy import EVERYTHING, TenantScope, writer_scope
from registry.config import Settings
from registry.descriptions.registration_info import Lifetime, LifetimePolicy, enrich, enrich_json, split_registration
from registry.descriptions.summary import version_of
from registry.descriptions.validation import validate
from registry.directory.group_commit import CONCURRENCY, GroupCommit
from registry.directory.response_cache import ResponseCache
from registry.directory.version_policy import VersionPolicy
from registry.directory.write_steps import WriteSteps
from registry.directory.writes import (
    Candidate,
    PendingWrite,
    RevisionMoved,
    WriteOutcome,
    at_revision,
    check_put_id,
    constant,
    etag_matches,
    new_local_id,
    precondition_failed,
    with_lifetime,
)
from registry.errors import BadRequest, InvalidDescription, InvalidId, NotFound, RegistryError
from registry.ops.metrics import REGISTRATIONS
from registry.projections import INLINE_PROJECTION_BYTES, Projections
from registry.semantic.rdf import reading_carried, readings_kept
from registry.store.changes import last_tenant
from registry.store.database import Database, Transaction
from registry.store.leases import Lease, LeaseRenewer, LeaseState, lease_of
from registry.store.things import PageHead, StoredDescription, ThingStore, Window
from registry.tenancy import Holder

#: Attempts of a PATCH computed outside the lock before it is computed under it (so that it cannot be overtaken).
OPTIMISTIC_PATCH_ATTEMPTS = 3


class DirectoryService:
    def __init__(self, database: Database, things: ThingStore, projections: Projections, settings: Settings) -> None:
        self.database = database
        self.things = things
        self.projections = projections
        #: Also the handlers' settings: a handler with a second dependency costs Litestar a task group per request.
        self.settings = settings
        self.leases = LeaseRenewer(database)
        self.policy = LifetimePolicy(max_ttl=settings.max_ttl, mandate_ttl=settings.mandate_ttl)
        #: How long after its expiry a registration's id stays held for its owner.
        self.grace = dt.timedelta(seconds=settings.expiry_grace)
        self.max_owned = settings.max_descriptions_per_owner
        self.version_policy = VersionPolicy(settings.version_policy)
        self.steps = WriteSteps(things, projections, self.version_policy, grace=self.grace, max_owned=self.max_owned)
        #: Batches compute their candidates one at a time (see :meth:`put_many`).
        self._batch_turn = asyncio.Lock()
        self.group_commit: GroupCommit[PendingWrite, WriteOutcome | RegistryError] = GroupCommit(
            self._commit,
            key=lambda pending: pending.thing_id,
            concurrency=max(2, min(CONCURRENCY, database.pool_size // 2)),
        )
        #: Off until it follows the process's change feed (``cache.follow``).
        self.cache = ResponseCache(
            entries=settings.response_cache_entries,
            max_bytes=settings.response_cache_bytes,
        )

    # -- reads

    async def served(self, thing_id: str, readers: TenantScope = EVERYTHING) -> tuple[bytes, str]:
        """The enriched JSON of ``thing_id`` and its entity tag, for ``readers``: from the response cache when it
        holds the description, else from PostgreSQL (and then kept there)."""
        now = dt.datetime.now(dt.UTC)
        cached = self.cache.lookup(thing_id, now)
        if cached is not None:
            if not readers.sees(cached.tenant):
                raise NotFound(f"No Thing Description with id {thing_id!r}")
            return cached.body(now), cached.etag
        stored: StoredDescription | None = None
        served = b""
        self.cache.reading(thing_id)
        try:
            stored = await self.get(thing_id, readers)
            now = dt.datetime.now(dt.UTC)
            served = self.enriched_json(stored, now)
        finally:
            self.cache.read(thing_id, stored, served, now)
        return served, stored.etag

    async def get(self, thing_id: str, readers: TenantScope = EVERYTHING) -> StoredDescription:
        """The live description, if ``readers`` may see it (another tenant's is as absent as a missing one)."""
        stored = await self.things.get(thing_id)
        if stored is None or not readers.sees(stored.tenant):
            raise NotFound(f"No Thing Description with id {thing_id!r}")
        return stored

    async def listing(
        self, readers: TenantScope, window: Window, *, counted: bool
    ) -> tuple[PageHead, AsyncGenerator[StoredDescription, None]]:
        """A listing page: the total (when ``counted``), the version and the page's end, then its descriptions in
        code-point order of id, read through a cursor as the caller takes them (both from one snapshot: see
        :meth:`ThingStore.listing`). Close the descriptions (``aclose``) if they are not all taken."""
        return await self.things.listing(window, readers, counted=counted)

    async def ownership(self, thing_id: str, readers: TenantScope) -> Holder:
        """The owner and tenant of the live description ``thing_id``, if ``readers`` may see it."""
        held = await self.things.owner(thing_id)
        if held is None or not readers.sees(held[1]):
            raise not_found(thing_id)
        return Holder(*held)

    async def require_visible(self, thing_id: str, readers: TenantScope) -> None:
        """404 for another tenant's description, as if it did not exist (reads that are not of /things/{id} itself:
        summaries, exports, cards); a deleted description's kept versions stay its tenant's (the change log knows
        it)."""
        if readers.everything:
            return
        held = await self.things.owner(thing_id)
        tenant = held[1] if held is not None else await last_tenant(self.database, thing_id)
        if not readers.sees(tenant):
            raise not_found(thing_id)

    async def lease(self, thing_id: str, readers: TenantScope) -> LeaseState:
        """The lease of the live description ``thing_id`` (ttl, expiry, last renewal), if ``readers`` may see it."""
        lease = await lease_of(self.database, thing_id)
        if lease is None or not readers.sees(lease.tenant):
            raise not_found(thing_id)
        return lease

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

    async def create_anonymous(self, document: Any, *, principal: Principal | None = None) -> WriteOutcome:
        """POST /things: the TD must not have an id; the directory assigns a local one."""
        if isinstance(document, dict) and "id" in document:
            raise BadRequest(
                "POST /things registers anonymous Thing Descriptions; this one has an id, use PUT /things/{id}",
                validationErrors=[{"field": "id", "description": "an anonymous TD must not have an id"}],
            )
        thing_id = new_local_id()
        document = {**document, "id": thing_id} if isinstance(document, dict) else document
        candidate = await self._candidate(thing_id, document)
        return await self._save(PendingWrite(thing_id, constant(candidate), principal, anonymous=True))

    async def put(
        self,
        thing_id: str,
        document: Any,
        *,
        if_match: str | None = None,
        principal: Principal | None = None,
        derived: DerivedId | None = None,
        assigned_id: bool = False,
        create_only: bool = False,
    ) -> WriteOutcome:
        """PUT /things/{id}: create (201) or replace (204). The body's id must equal the path's.

        ``derived``: the directory derived the id from that (a tool's vendor, a card's URL, a server's namespace),
        so the party bound to it holds it rightfully (registry/auth/ownership.py); ``assigned_id``: the directory
        chose the id, so no id pattern applies to it. ``create_only`` (``If-None-Match: *``, RFC 9110 §13.1.2)
        refuses to replace an existing description (412).
        """
        check_put_id(thing_id, document)
        candidate = await self._candidate(thing_id, document)
        return await self._save(
            PendingWrite(
                thing_id,
                constant(candidate),
                principal,
                assigned_id=assigned_id,
                if_match=if_match,
                create_only=create_only,
                derived=derived,
            )
        )

    async def holder(self, thing_id: str) -> Holder | None:
        """Who holds ``thing_id`` now (outside any lock: a hint for what a write will meet, which its own check
        under the lock decides)."""
        now = dt.datetime.now(dt.UTC)
        return (await self.things.held(self.database, [thing_id], now, self.grace)).holders.get(thing_id)

    async def put_many(
        self, documents: Sequence[Any], *, principal: Principal | None = None
    ) -> list[WriteOutcome | RegistryError]:
        """Create or replace each description (each with its id) as PUT would, with the same checks, in one
        transaction: a bulk import then costs each description's validation and projections, not a request and
        a commit each. A description refused by a check is reported in its place and does not refuse the others;
        a database error (which loses the transaction) refuses the whole batch, as it would a single PUT.

        Batches compute their descriptions one batch at a time, so that each commits while the next is computed:
        batches taking turns description by description would all finish and commit together, and PostgreSQL and
        the server would take turns idling."""
        results: dict[int, WriteOutcome | RegistryError] = {}
        candidates: list[tuple[int, str, Candidate]] = []
        seen: set[str] = set()
        async with self._batch_turn:
            for index, document in enumerate(documents):
                try:
                    thing_id = document.get("id") if isinstance(document, dict) else None
                    if not isinstance(thing_id, str) or not thing_id:
                        raise BadRequest(
                            "Each description of a batch needs its id (register anonymous TDs with POST /things)",
                            validationErrors=[{"field": "id", "description": "a non-empty string is required"}],
                        )
                    if thing_id in seen:
                        raise BadRequest(
                            f"The id {thing_id!r} appears more than once in this batch; send each description once",
                            validationErrors=[{"field": "id", "description": "already given earlier in this batch"}],
                        )
                    seen.add(thing_id)
                    check_put_id(thing_id, document)
                    candidates.append((index, thing_id, await self._candidate(thing_id, document)))
                except RegistryError as error:
                    results[index] = error
                await asyncio.sleep(0)  # other requests get the event loop between descriptions
        saved = await self._commit(
            [PendingWrite(thing_id, constant(candidate), principal) for _, thing_id, candidate in candidates]
        )
        results.update((index, outcome) for (index, _, _), outcome in zip(candidates, saved, strict=True))
        return [results[index] for index in range(len(documents))]

    async def patch(
        self, thing_id: str, patch: Any, *, if_match: str | None = None, principal: Principal | None = None
    ) -> WriteOutcome:
        """PATCH /things/{id}: RFC 7396 merge patch, validated after merging. ``{}`` renews a ttl.

        The merge, validation and projections run outside the transaction on the revision read first; the write
        then checks, under the lock, that the description is still at that revision, and starts over if not. A
        patch overtaken that way several times is computed under the lock, so that it always gets through.
        """
        InvalidId.check(thing_id)
        if not isinstance(patch, dict):
            raise BadRequest("A merge patch of a Thing Description must be a JSON object")
        if "id" in patch and patch["id"] != thing_id:
            raise BadRequest(
                "A patch cannot change the id of a Thing Description",
                validationErrors=[{"field": "id", "description": "must be absent or equal the id in the path"}],
            )

        async def merged(current: StoredDescription | None) -> Candidate:
            if current is None:
                raise not_found(thing_id)
            ensure_visible(principal, thing_id, current.tenant)
            return await self._candidate(thing_id, json_merge_patch.merge(with_lifetime(current), patch))

        for _ in range(OPTIMISTIC_PATCH_ATTEMPTS):
            current = await self.get(thing_id, writer_scope(principal))
            if if_match is not None and not etag_matches(if_match, current.etag):
                raise precondition_failed(current)
            candidate = await merged(current)
            try:
                return await self._save(
                    PendingWrite(
                        thing_id,
                        at_revision(current.revision, candidate),
                        principal,
                        if_match=if_match,
                        creates=False,
                    ),
                    grouped=False,
                )
            except RevisionMoved:
                continue
        return await self._save(
            PendingWrite(thing_id, merged, principal, if_match=if_match, creates=False), grouped=False
        )

    async def delete(self, thing_id: str, *, if_match: str | None = None, principal: Principal | None = None) -> None:
        async with self.database.transaction() as tx:
            now, current = await self._locked(tx, thing_id)
            ensure_visible(principal, thing_id, current.tenant)
            if if_match is not None and not etag_matches(if_match, current.etag):
                raise precondition_failed(current)
            authorize_write(principal, thing_id, None, holder=Holder(current.owner, current.tenant), creates=False)
            await self.things.delete(tx, current, now, principal.actor if principal else None)
            await self.projections.remove(tx, [thing_id])
        self.cache.evict([thing_id])

    async def renew_lease(self, thing_id: str, *, principal: Principal | None = None) -> Lease:
        """Extend a registration by its ttl; agents call this instead of registering again."""
        InvalidId.check(thing_id)
        if principal is not None:
            held = await self.things.owner(thing_id)
            missing = NotFound(f"No Thing Description with id {thing_id!r} (never registered, deleted or expired)")
            if held is None:
                raise missing
            ensure_visible(principal, thing_id, held[1], missing)
            authorize_write(principal, thing_id, None, holder=Holder(*held), creates=False)
        try:
            return await self.leases.renew(thing_id)
        finally:
            self.cache.evict([thing_id])

    async def transfer(self, thing_id: str, owner: str, *, principal: Principal | None = None) -> StoredDescription:
        """Give a description to another owner (an admin's decision, checked by the caller); the change log
        records who gave it from whom to whom. Returns the description as it was before."""
        InvalidId.check(thing_id)
        async with self.database.transaction() as tx:
            now, current = await self._locked(tx, thing_id)
            await self.things.transfer(tx, current, owner, now, principal.actor if principal else None)
        return current

    async def purge_expired(self) -> list[str]:
        """Delete expired descriptions (``tdd-registrationinfo-expiry-purge``); safe on every replica at once."""
        async with self.database.transaction() as tx:
            purged = await self.things.purge_expired(tx, self.grace)
            await self.projections.remove(tx, purged)
        self.cache.evict(purged)
        return purged

    # -- helpers

    async def _locked(self, tx: Transaction, thing_id: str) -> tuple[dt.datetime, StoredDescription]:
        """Lock ``thing_id`` in ``tx``: the transaction's time and the live description (404 if there is none; the
        caller checks who may see it)."""
        now = await self.things.lock(tx, [thing_id])
        current = (await self.things.current(tx, [thing_id], now)).get(thing_id)
        if current is None:
            raise NotFound(f"No Thing Description with id {thing_id!r}")
        return now, current

    def _checked(self, document: Any, encoded: bytes) -> tuple[dict[str, Any], Lifetime, str]:
        """Validate ``document`` (``encoded``: its JSON) and split off its lifetime: the stored document, its
        lifetime and its JSON."""
        errors = validate(document)
        if errors:
            raise InvalidDescription(errors)
        stored_document, lifetime, lifetime_errors = split_registration(document, self.policy, dt.datetime.now(dt.UTC))
        if lifetime_errors:
            raise InvalidDescription(lifetime_errors)
        # The projections read the stored document's LMOS members as validation read the document's
        # (``readings_kept``): the stored document is the document itself, or its reading is carried over.
        if "registration" not in document:
            return document, lifetime, encoded.decode()
        reading_carried(document, stored_document, "registration")
        return stored_document, lifetime, msgspec.json.encode(stored_document).decode()

    async def _candidate(self, thing_id: str, document: Any) -> Candidate:
        # Every write of a description computes its candidate here: no id the directory does not accept is stored.
        InvalidId.check(thing_id)
        encoded = msgspec.json.encode(document)
        with readings_kept():
            # Validating a large document takes long enough to stall every other request: off the event loop then.
            if len(encoded) <= INLINE_PROJECTION_BYTES:
                stored_document, lifetime, document_text = self._checked(document, encoded)
            else:
                stored_document, lifetime, document_text = await asyncio.to_thread(self._checked, document, encoded)
            projections = await self.projections.compute(thing_id, stored_document, len(document_text))
            version = version_of(stored_document)
        return Candidate(
            document=stored_document,
            document_text=document_text,
            lifetime=lifetime,
            projections=projections,
            notices=[notice for projection in projections for notice in projection.notices],
            version=version,
        )

    async def _save(self, pending: PendingWrite, *, grouped: bool = True) -> WriteOutcome:
        """Store ``pending`` under its id's lock, if its principal may (registry/auth/ownership.py); ``grouped``:
        in one transaction with the writes that arrive with it (:mod:`registry.directory.group_commit`), else in
        one of its own (a patch, whose candidate may have to be computed again: :class:`RevisionMoved`)."""
        if grouped:
            outcome = await self.group_commit.submit(pending)
        else:
            [outcome] = await self._commit([pending])
        if isinstance(outcome, RegistryError):
            raise outcome
        return outcome

    async def _commit(self, pending: Sequence[PendingWrite]) -> list[WriteOutcome | RegistryError]:
        """Store ``pending`` (distinct ids) in one transaction; the response cache and the metrics learn of each
        description written."""
        async with self.database.transaction() as tx:
            outcomes = await self.steps.save_all(tx, pending)
        written = [outcome for outcome in outcomes if isinstance(outcome, WriteOutcome)]
        self.cache.evict([outcome.stored.id for outcome in written])
        for outcome in written:
            REGISTRATIONS.labels("created" if outcome.created else "updated").inc()
        return outcomes


__all__ = ["DirectoryService", "PageHead", "Window", "WriteOutcome"]
