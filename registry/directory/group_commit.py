"""Group commit: concurrent writes share one transaction.

A single PUT costs PostgreSQL a transaction of its own (BEGIN, six statements, COMMIT and its WAL flush, each a
round trip), more than the work of storing the description. Up to ``concurrency`` transactions of writes run at
once; writes that arrive while all of them run wait for one to end and then go together in the next one, whose
steps take one round trip each for all of them (``WriteSteps.save_all``). Nothing waits on purpose: a
write that finds a free slot starts its transaction at once, so groups form only when writes arrive faster than
they commit, and one slow transaction (an id locked by another replica's batch) holds up only its own group.

Each write keeps its own outcome: a check that refuses one write (validation, ownership, If-Match) refuses only
it. When the shared transaction fails in the database, each write of it is run again alone, so that a write whose
data the database refuses, or a collision, fails only that write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")

#: Writes in one transaction at most (a batch, ``POST /api/v1/things/batch``, commits in a transaction of its own,
#: not through a group).
MAX_GROUP = 64
#: Transactions of writes running at once, at most (and at most half the connection pool, but two: reads need the
#: rest, and a write held up by a lock must not hold up all the others).
CONCURRENCY = 4


class GroupCommit(Generic[Item, Outcome]):
    def __init__(
        self,
        commit: Callable[[Sequence[Item]], Awaitable[Sequence[Outcome]]],
        key: Callable[[Item], Hashable],
        *,
        max_group: int = MAX_GROUP,
        concurrency: int = CONCURRENCY,
    ) -> None:
        """``commit`` stores a group of items (distinct ``key``) in one transaction and returns their outcomes in
        order, or raises when the transaction is lost."""
        self._commit = commit
        self._key = key
        self._max_group = max_group
        self._concurrency = concurrency
        self._waiting: list[tuple[Item, asyncio.Future[Outcome]]] = []
        #: Committers running: counted by hand, since a task counts as running until its done callbacks ran,
        #: after it stopped taking waiting writes.
        self._running = 0
        self._committers: set[asyncio.Task[None]] = set()

    async def submit(self, item: Item) -> Outcome:
        """The outcome of ``item``, committed with the writes that arrived with it."""
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._running < self._concurrency:
            self._running += 1
            committer = asyncio.create_task(self._commit_waiting(), name="group-commit")
            self._committers.add(committer)
            committer.add_done_callback(self._committers.discard)
        return await future

    async def _commit_waiting(self) -> None:
        try:
            while self._waiting:
                await self._commit_group(self._next_group())
        finally:
            # No await between finding nothing waiting and this: a write submitted later starts a committer.
            self._running -= 1

    async def _commit_group(self, group: list[tuple[Item, asyncio.Future[Outcome]]]) -> None:
        if len(group) <= 1:
            for item, future in group:
                await self._commit_alone(item, future)
            return
        try:
            outcomes = await self._commit([item for item, _ in group])
        except Exception:
            for item, future in group:
                await self._commit_alone(item, future)
            return
        for (_, future), outcome in zip(group, outcomes, strict=True):
            _settle(future, outcome)

    async def _commit_alone(self, item: Item, future: asyncio.Future[Outcome]) -> None:
        try:
            [outcome] = await self._commit([item])
        except Exception as error:
            if not future.done():
                future.set_exception(error)
        else:
            _settle(future, outcome)

    def _next_group(self) -> list[tuple[Item, asyncio.Future[Outcome]]]:
        """The writes waiting longest, up to ``max_group`` with distinct keys (a write of a key already in the
        group waits for the next one: it must see the first one's result)."""
        group: list[tuple[Item, asyncio.Future[Outcome]]] = []
        later: list[tuple[Item, asyncio.Future[Outcome]]] = []
        keys: set[Hashable] = set()
        for entry in self._waiting:
            key = self._key(entry[0])
            if entry[1].done():  # its caller went away before it was written
                continue
            if len(group) >= self._max_group or key in keys:
                later.append(entry)
            else:
                keys.add(key)
                group.append(entry)
        self._waiting = later
        return group


def _settle(future: asyncio.Future[Outcome], outcome: Outcome) -> None:
    if not future.done():  # else its caller went away meanwhile
        future.set_result(outcome)


__all__ = ["CONCURRENCY", "MAX_GROUP", "GroupCommit"]
