"""The steps of writes inside their transaction, for one write or many: lock the ids, check each write
(preconditions, ownership, quota, version policy), then store the rows, changes and projections of those
that pass, each step one round trip for all of them."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence

import json_merge_patch
import msgspec

from registry.auth.ownership import Grant, authorize_write
from registry.auth.principal import Principal
from registry.auth.tenancy import writer_scope
from registry.directory.version_policy import KeptTexts, VersionPolicy, kept_for
from registry.directory.writes import Candidate, PendingWrite, WriteOutcome, etag_matches, precondition_failed
from registry.errors import Forbidden, PreconditionFailed, RegistryError
from registry.projections import Projections
from registry.store.database import Transaction, raised_by_database
from registry.store.things import THING_CREATED, THING_UPDATED, Held, StoredDescription, ThingStore, Write
from registry.wire import Notice


@dataclasses.dataclass(frozen=True, slots=True)
class Authorized:
    """A write past its preconditions and authorization."""

    index: int
    write: PendingWrite
    #: The description it replaces (None: it registers the id, also when it takes it over).
    replaced: StoredDescription | None
    #: The live description of another holder it takes over (deleted first), if any.
    taken_over: StoredDescription | None
    candidate: Candidate
    grant: Grant
    #: The owner whose quota it counts towards (a new description, with a cap), else None.
    counted: tuple[str, str | None] | None


class WriteSteps:
    """What a write does inside its transaction (:class:`registry.directory.service.DirectoryService` holds
    the transaction, the group commit and what follows the commit)."""

    def __init__(
        self,
        things: ThingStore,
        projections: Projections,
        version_policy: VersionPolicy,
        *,
        grace: dt.timedelta,
        max_owned: int,
    ) -> None:
        self.things = things
        self.projections = projections
        self.version_policy = version_policy
        #: How long after its expiry a registration's id stays held for its owner.
        self.grace = grace
        #: Descriptions one owner may hold (0: no cap).
        self.max_owned = max_owned

    async def save_all(self, tx: Transaction, pending: Sequence[PendingWrite]) -> list[WriteOutcome | RegistryError]:
        """The steps of a write inside ``tx``, for one write or many (distinct ids): lock the ids and read what
        they hold, check each write, then write the rows, changes and projections of those that pass, each step
        one round trip for all of them. A write refused by a check gets its error in its place; a database error
        raises (the transaction is lost)."""
        ids = [write.thing_id for write in pending]
        now = await self.things.lock(tx, ids)
        held = await self.things.held(tx, ids, now, self.grace)
        kept = await self.version_policy.kept(tx, ids)
        results: dict[int, WriteOutcome | RegistryError] = {}
        authorized = await self._authorize_all(pending, held, results)
        seen, texts = await self._compared(tx, authorized, kept)
        accepted = await self._accept_all(tx, authorized, seen, texts, now, results)
        await self._release_previous_holders(tx, [each for each, _, _ in accepted], held, now)
        stored = await self.things.write(tx, [row for _, row, _ in accepted], now)
        await self.projections.store(
            tx, [(each.candidate.projections, row) for (each, _, _), row in zip(accepted, stored, strict=True)]
        )
        for (each, row, notices), description in zip(accepted, stored, strict=True):
            results[each.index] = WriteOutcome(row.change_type == THING_CREATED, description, notices)
        return [results[index] for index in range(len(pending))]

    async def _authorize_all(
        self, pending: Sequence[PendingWrite], held: Held, results: dict[int, WriteOutcome | RegistryError]
    ) -> list[Authorized]:
        """The writes past their preconditions and ownership checks; each refusal goes to ``results``."""
        authorized: list[Authorized] = []
        for index, write in enumerate(pending):
            try:
                authorized.append(await self._authorized(index, write, held))
            except RegistryError as error:
                if raised_by_database(error):
                    raise
                results[index] = error
        return authorized

    async def _compared(
        self, tx: Transaction, authorized: Sequence[Authorized], kept: dict[str, list[tuple[str, str | None]]]
    ) -> tuple[dict[str, list[str]], KeptTexts]:
        """The kept versions each write is compared with (those its author may see) and their texts."""
        # A holder that loses its id to its rightful party loses what it registered there: its kept versions too.
        for each in authorized:
            if each.grant.takes_over:
                kept.pop(each.write.thing_id, None)
        seen = {
            each.write.thing_id: kept_for(kept.get(each.write.thing_id, []), writer_scope(each.write.principal))
            for each in authorized
        }
        compared = [
            (
                each.write.thing_id,
                self.version_policy.compared_with(each.candidate.version, seen[each.write.thing_id]),
            )
            for each in authorized
        ]
        texts = await self.version_policy.texts(tx, [(id_, version) for id_, version in compared if version])
        return seen, texts

    async def _accept_all(
        self,
        tx: Transaction,
        authorized: Sequence[Authorized],
        seen: dict[str, list[str]],
        texts: KeptTexts,
        now: dt.datetime,
        results: dict[int, WriteOutcome | RegistryError],
    ) -> list[tuple[Authorized, Write, list[Notice]]]:
        """The authorized writes within their owner's quota and the version policy, with the row each stores and
        its notices; each refusal goes to ``results``."""
        accepted: list[tuple[Authorized, Write, list[Notice]]] = []
        #: Descriptions each owner (identity and tenant) holds, counted when their quota first matters.
        owned: dict[tuple[str, str | None], int] = {}
        for each in authorized:
            thing_id, candidate = each.write.thing_id, each.candidate
            try:
                if each.counted is not None:
                    await self._check_owned(tx, each.counted, owned)
                notices = candidate.notices + self.version_policy.check(
                    thing_id,
                    each.replaced,
                    candidate.document,
                    candidate.document_text,
                    seen[thing_id],
                    texts,
                    version=candidate.version,
                )
                if each.counted is not None:
                    owned[each.counted] += 1
                accepted.append((each, self._write(each, now), notices))
            except RegistryError as error:
                if raised_by_database(error):
                    raise
                results[each.index] = error
        return accepted

    async def _check_owned(
        self, tx: Transaction, counted: tuple[str, str | None], owned: dict[tuple[str, str | None], int]
    ) -> None:
        """Refuse a new description of an owner that holds its quota already (counted once per transaction)."""
        if counted not in owned:
            owned[counted] = await self.things.count_owned(tx, *counted)
        _check_quota(counted[0], owned[counted], self.max_owned)

    async def _authorized(self, index: int, write: PendingWrite, held: Held) -> Authorized:
        """``write`` past its preconditions and the ownership check (registry/auth/ownership.py), or its refusal.

        The checks run in this order: what the author may see, the preconditions on it, then the candidate made
        from it and the ownership rules on that candidate."""
        thing_id, principal = write.thing_id, write.principal
        stored = held.currents.get(thing_id)
        current = _visible(stored, principal)
        _check_preconditions(write, current)
        candidate = await write.produce(current)
        grant = authorize_write(
            principal,
            thing_id,
            candidate.document,
            holder=held.holders.get(thing_id),
            creates=write.creates,
            assigned_id=write.anonymous or write.assigned_id,
            derived=write.derived,
        )
        replaced = None if grant.takes_over else current
        counted = self._counted(principal, replaced)
        taken_over = stored if grant.takes_over else None
        return Authorized(index, write, replaced, taken_over, candidate, grant, counted)

    def _counted(
        self, principal: Principal | None, replaced: StoredDescription | None
    ) -> tuple[str, str | None] | None:
        """The owner whose quota a write counts towards: a new description's, when there is a cap."""
        if principal is None or replaced is not None or not self.max_owned:
            return None
        return principal.owner, principal.tenant

    async def _release_previous_holders(
        self, tx: Transaction, accepted: Sequence[Authorized], held: Held, now: dt.datetime
    ) -> None:
        """Before the writes: a description taken over is deleted (its ``thing_deleted`` change made by the
        rightful party) with its projections and kept versions, and the tombstones of ids registered again are
        forgotten."""
        taken = [each for each in accepted if each.grant.takes_over]
        if taken:
            await self._take_over(tx, taken, now)
        tombstoned = [each.write.thing_id for each in accepted if each.write.thing_id in held.tombstones]
        if tombstoned:
            await self.things.drop_claims(tx, tombstoned)

    async def _take_over(self, tx: Transaction, taken: Sequence[Authorized], now: dt.datetime) -> None:
        """Delete the live descriptions ``taken`` takes over, their projections, and the kept versions of every id
        of ``taken``."""
        deleted = [(each, each.taken_over) for each in taken if each.taken_over is not None]
        for each, description in deleted:
            await self.things.delete(tx, description, now, _actor(each.write.principal))
        await self.projections.remove(tx, [each.write.thing_id for each, _ in deleted])
        await self.version_policy.forget(tx, [each.write.thing_id for each in taken])

    @staticmethod
    def _write(authorized: Authorized, now: dt.datetime) -> Write:
        """The row and change that store the authorized write's candidate over what it replaces."""
        pending, candidate, current = authorized.write, authorized.candidate, authorized.replaced
        thing_id, principal = pending.thing_id, pending.principal
        if current is None:
            change_type, diff_text = THING_CREATED, candidate.document_text
        else:
            change_type = THING_UPDATED
            diff = json_merge_patch.create_patch(current.document(), candidate.document)
            diff["id"] = thing_id
            diff_text = msgspec.json.encode(diff).decode()
        return Write(
            thing_id=thing_id,
            change_type=change_type,
            diff_text=diff_text,
            document_text=candidate.document_text,
            anonymous=pending.anonymous if current is None else current.anonymous,
            created=now if current is None else current.created,
            expires=candidate.lifetime.expiry(now),
            ttl=candidate.lifetime.ttl,
            owner=current.owner if current else principal.owner if principal else None,
            tenant=current.tenant if current else principal.tenant if principal else None,
            actor=_actor(principal),
            rightful=authorized.grant.rightful,
        )


def _visible(stored: StoredDescription | None, principal: Principal | None) -> StoredDescription | None:
    """A description the author cannot see is a missing one to it, for every check of its write."""
    return stored if stored is not None and writer_scope(principal).sees(stored.tenant) else None


def _check_preconditions(write: PendingWrite, current: StoredDescription | None) -> None:
    """``If-None-Match: *`` then ``If-Match`` of ``write`` against the description its author sees."""
    if write.create_only and current is not None:
        raise PreconditionFailed(
            f"If-None-Match: * given, but a description with id {write.thing_id!r} exists",
            headers={"ETag": current.etag},
        )
    if write.if_match is not None and (current is None or not etag_matches(write.if_match, current.etag)):
        raise precondition_failed(current, write.thing_id)


def _actor(principal: Principal | None) -> str | None:
    return principal.actor if principal else None


def _check_quota(owner: str, owned: int, cap: int) -> None:
    if owned >= cap:
        raise Forbidden(
            f"{owner!r} holds {cap} descriptions, the most one owner may hold here; delete one first", rule="quota"
        )
