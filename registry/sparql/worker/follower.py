"""Keeps a copy of the stored RDF (one named graph per description) in step with the change feed: the base of the
local index's follower (:mod:`registry.sparql.worker.index`) and of the pusher to an external SPARQL store
(:mod:`registry.sparql.store.pusher`), which differ only in where they write.

Applying a change means "write the current RDF of that id" (idempotent and order-free), so a batch of changes is
one query for the current RDF of its ids, and a change delivered late by the feed is applied like any other. The
copy remembers the position up to which every change is applied and none may still commit (the feed's settled
position, below any sequence still pending; the external store's marker excepted, see its pusher), so a restart
applies only the changes since, late ones included; a copy that holds nothing (or another database's RDF) is
built from the stored RDF.
Leased descriptions leave the copy when their lease ends, not only when the purge deletes them.

What goes into the copy is each description's statements about itself only (:func:`own_statements`), whatever the
stored RDF holds: rows written before that rule, or by a replica of an older version during an upgrade, may hold
statements about other descriptions, and no copy ever serves them.

A copy may hold back during a burst of writes (``defer``): the changes wait until the writes pause for
``QUIET`` seconds, a query needs them (:meth:`ChangeFollower.catch_up`), or ``defer`` seconds have passed since
the first of them. The local index's writes cost more CPU than accepting the writes, and on the cores the server
and PostgreSQL share with it they took a fifth of the write rate while it kept up (docs/performance.md); held
back, they are done after the burst, in larger and cheaper bulk loads, and no query sees the difference: each one
still waits for every write acknowledged before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import heapq
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from registry.errors import RegistryError
from registry.events.feed import ChangeFeed
from registry.semantic.graphs import own_statements
from registry.store.changes import Change, latest_seq
from registry.store.database import Database
from registry.store.rdf import (
    StoredRdf,
    current_rdf_of,
    database_identity,
    expired_ids,
    lease_ends,
    live_rdf_sizes,
    names_first_change,
    rdf_sizes_of,
)
from registry.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: Seconds the follower waits after a batch of changes, so that a burst of writes is applied in one go.
BATCH_DELAY = 0.05
#: Seconds without a new change after which a burst of writes is over (a copy that defers applies it then). A fleet
#: registering at once, or a single client writing back to back, leaves gaps of milliseconds between changes; the
#: batches of ``registry import`` commit about every tenth of this, and a much shorter wait ends the burst again and
#: again at the longer gaps between them during a large import (docs/performance.md).
QUIET = 1.0
#: Bytes of RDF (N-Triples) read and written in one step at most, but one description at least: what a step holds
#: in memory is a few copies of it. Counting descriptions instead lets a few dozen registrations of the largest size
#: take the SPARQL worker past its memory limit on every attempt.
STEP_BYTES = 16 * 2**20
#: Descriptions in one step at most. Larger steps are bulk-loaded in fewer, larger files, which RocksDB compacts
#: less often: PUT new runs faster with steps of up to this many than with a quarter of them
#: (docs/performance.md).
STEP_DESCRIPTIONS = 2000
#: Descriptions whose size is read in one statement while building.
_BUILD_PAGE = 10_000


class SkippedDescriptions:
    """Descriptions a copy does not hold because their RDF cannot be loaded (stored before ids and IRIs were
    checked): each is logged with its id, counted, and left out while the others are taken. A description taken
    later (registered again) or gone leaves the set."""

    def __init__(self, copy: str, ids: Iterable[str] = ()) -> None:
        self.copy = copy
        #: Id → why its RDF could not be loaded.
        self.reasons: dict[str, str] = dict.fromkeys(ids, "skipped before the copy was opened again")
        #: Descriptions skipped since this process started (one skipped again counts again).
        self.total = 0

    def skip(self, thing_id: str, reason: object) -> None:
        if self.reasons.get(thing_id) != str(reason):  # once, not again at each retry of the same write
            log.warning(
                "the %s leaves out the description %r: its RDF cannot be loaded (%s)", self.copy, thing_id, reason
            )
        self.reasons[thing_id] = str(reason)
        self.total += 1

    def taken(self, thing_ids: Iterable[str]) -> None:
        for thing_id in thing_ids:
            self.reasons.pop(thing_id, None)

    def __len__(self) -> int:
        return len(self.reasons)

    def __contains__(self, thing_id: object) -> bool:
        return thing_id in self.reasons


class ChangeFollower:
    """Builds the copy (or takes up a stored one where it left off) and applies every change the feed delivers.

    Subclasses say where the copy is: :meth:`_position`, :meth:`_clear`, :meth:`_load` and :meth:`_write`.
    """

    #: Names the copy in log lines.
    copy = "SPARQL index"
    #: Record the feed's settled position (below any sequence still pending), so that a restart applies a change
    #: that commits late however far back it is; else the highest delivered (a restart then looks for pending
    #: sequences among the 1,000 below it only, ``START_WINDOW``).
    records_settled = True

    def __init__(self, database: Database, feed: ChangeFeed, identity: str = "", defer: float = 0.0) -> None:
        """``identity``: the database's (:func:`registry.store.rdf.database_identity`), recorded with the position;
        ``defer``: seconds a burst of changes may be held back at most (0: applied as they come)."""
        self.database = database
        self.feed = feed
        self.identity = identity
        self.defer = defer
        #: Ids changed since they were last applied.
        self._pending: set[str] = set()
        self._expiries: dict[str, dt.datetime] = {}
        self._expiry_heap: list[tuple[dt.datetime, str]] = []
        self._lock = asyncio.Lock()
        #: The feed position up to which every change is applied (None until the first batch is).
        self._applied: int | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # -- where the copy is

    async def _position(self) -> int | None:
        """The change position the copy holds of this database; None when it must be built."""
        raise NotImplementedError

    async def _clear(self) -> None:
        raise NotImplementedError

    async def _load(self, rows: list[tuple[str, str]]) -> None:
        """Building (no query is answered from the copy yet): add descriptions (id, N-Triples) not there yet."""
        raise NotImplementedError

    async def _write(self, gone: list[str], current: dict[str, str], position: int | None) -> None:
        """Take out the ``gone`` descriptions and put in the ``current`` ones (id → N-Triples); with ``position``,
        record that every change up to it is applied (when it moved, or anything was written)."""
        raise NotImplementedError

    # -- life cycle

    async def start(self) -> None:
        """Build the copy (or take up a stored one where it left off), then apply every change since."""
        position = await self._position()
        if position is not None and position > await latest_seq(self.database):
            log.warning("the %s is ahead of the change log (a restored database?); rebuilding it", self.copy)
            await self._clear()
            position = None
        if position is None:
            position = await self._build()
        else:
            await self._resume(position)
        self._unsubscribe = self.feed.subscribe(self._on_changes)
        await self.feed.start(position)
        self._task = asyncio.create_task(self._follow(), name="change-follower")
        await self.catch_up()

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        await cancel_and_wait(self._task)
        await self.feed.stop()

    async def catch_up(self) -> None:
        """Apply every change committed so far: a query sees every write acknowledged before it, on any replica.
        With nothing to apply, it returns without waiting for the copy's writer (busy with a checkpoint, say)."""
        await self.feed.sync()
        if self._pending or self._applied != self.feed.position or self._lease_ended():
            await self._apply_pending()

    def _on_changes(self, batch: Sequence[Change]) -> None:
        self._pending |= {change.thing_id for change in batch}
        self._wake.set()

    async def _build(self) -> int:
        """Load the stored RDF of every live description; returns the change position the load reflects.

        The position is read before the RDF: a change committed in between is delivered by the feed too and
        applied again, which is harmless (applying is idempotent).
        """
        started = time.perf_counter()
        position = await latest_seq(self.database)
        expiries: dict[str, dt.datetime] = {}
        loaded = 0
        after = ""
        while page := await live_rdf_sizes(self.database, after, _BUILD_PAGE):
            for step in steps([thing_id for thing_id, _ in page], dict(page)):
                rows = await current_rdf_of(self.database, step)
                for row in rows:
                    if row.expires is not None:
                        expiries[row.thing_id] = row.expires
                await self._load([(row.thing_id, _own(row)) for row in rows])
                loaded += len(rows)
            after = page[-1][0]
        self._expiries, self._expiry_heap = {}, []
        for thing_id, expires in expiries.items():
            self._track_expiry(thing_id, expires)
        await self._record(position)
        log.info("%s built: %d descriptions in %.2f s", self.copy, loaded, time.perf_counter() - started)
        return position

    async def _record(self, position: int) -> None:
        """Record that every change up to ``position`` is applied."""
        await self._complete_identity()
        await self._write([], {}, position)

    async def _complete_identity(self) -> None:
        """Read before the database's first change, the identity names the database alone, and its first change
        completes it: the copy records the complete one with a position, so that the next start takes it up."""
        if not names_first_change(self.identity):
            self.identity = await database_identity(self.database)

    async def _resume(self, position: int) -> None:
        """A stored copy: learn the leases still running, and drop descriptions whose lease ended meanwhile."""
        for thing_id, expires in await lease_ends(self.database):
            self._track_expiry(thing_id, expires)
        await self._write(await expired_ids(self.database), {}, None)
        log.info("%s opened: taken up at change %d", self.copy, position)

    async def _apply_pending(self) -> None:
        async with self._lock:
            # Every change up to it is in _pending or applied (and, settled, none below it may still commit).
            position = self.feed.settled if self.records_settled else self.feed.position
            while not await self._apply_step(position):
                pass

    async def _apply_step(self, position: int) -> bool:
        """Apply the next step of the pending descriptions (with the leases ended, on the last step); whether it
        is the last, which records every change up to ``position`` as applied."""
        ids = await self._next_step()
        rows = await current_rdf_of(self.database, ids) if ids else []
        self._pending.difference_update(ids)  # kept for the next attempt if reading failed
        last = not self._pending
        due = self._due() if last else []
        current = {row.thing_id: _own(row) for row in rows}
        gone = self._track_expiries(ids, rows)
        try:
            if last:
                await self._complete_identity()
            await self._write(gone + due, current, position if last else None)
        except BaseException:
            self._pending.update(ids, due)  # applied again next time (an expired id reads as gone)
            raise
        if last:
            self._applied = position
        return last

    async def _next_step(self) -> Sequence[str]:
        """The first pending descriptions, as many as one step holds (by count and by the size of their RDF)."""
        ids: Sequence[str] = sorted(self._pending)[:STEP_DESCRIPTIONS]
        if len(ids) > 1:
            ids = next(steps(ids, await rdf_sizes_of(self.database, ids)))
        return ids

    def _track_expiries(self, ids: Sequence[str], rows: Sequence[StoredRdf]) -> list[str]:
        """Track the leases of the descriptions read; the ids of the step that are gone (their lease with them)."""
        for row in rows:
            self._track_expiry(row.thing_id, row.expires)
        read = {row.thing_id for row in rows}
        gone = [thing_id for thing_id in ids if thing_id not in read]
        for thing_id in gone:
            self._expiries.pop(thing_id, None)
        return gone

    async def _burst_over(self) -> None:
        """Return once no change has come for ``QUIET`` seconds, or ``defer`` seconds after the burst's first
        change (at once when the copy does not defer, or when nothing is pending: a lease that ended)."""
        deadline = time.monotonic() - BATCH_DELAY + self.defer
        while self._pending and self._wake.is_set() and (left := deadline - time.monotonic()) > 0:
            self._wake.clear()  # set again by the next change
            await asyncio.sleep(min(QUIET, left))

    def _track_expiry(self, thing_id: str, expires: dt.datetime | None) -> None:
        if expires is None:
            self._expiries.pop(thing_id, None)
        elif self._expiries.get(thing_id) != expires:
            self._expiries[thing_id] = expires
            heapq.heappush(self._expiry_heap, (expires, thing_id))

    def _due(self) -> list[str]:
        """The descriptions whose lease has ended (and was not renewed since)."""
        now = dt.datetime.now(dt.UTC)
        due: list[str] = []
        while self._expiry_heap and self._expiry_heap[0][0] <= now:
            expires, thing_id = heapq.heappop(self._expiry_heap)
            if self._expiries.get(thing_id) == expires:  # else renewed or gone since
                del self._expiries[thing_id]
                due.append(thing_id)
        return due

    def _lease_ended(self) -> bool:
        """Whether a description's lease has ended and it is still in the copy."""
        return bool(self._expiry_heap) and self._expiry_heap[0][0] <= dt.datetime.now(dt.UTC)

    def _until_a_lease_ends(self) -> float | None:
        if not self._expiry_heap:
            return None
        return max(0.0, (self._expiry_heap[0][0] - dt.datetime.now(dt.UTC)).total_seconds())

    @property
    def pending(self) -> int:
        """Descriptions changed and not applied yet (held back during a burst, or being applied)."""
        return len(self._pending)

    async def _follow(self) -> None:
        """Apply changes as the feed delivers them (a burst at a time, held back while it lasts when the copy
        defers), and take descriptions out when their lease ends (a query on another replica does not wake this
        one)."""
        while True:
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._until_a_lease_ends()):
                        await self._wake.wait()
                await asyncio.sleep(BATCH_DELAY)
                await self._burst_over()
                self._wake.clear()
                await self._apply_pending()
            except asyncio.CancelledError:
                raise
            except RegistryError as error:  # the database or the store is away: expected, no traceback
                log.warning("applying changes to the %s failed (%s); retrying", self.copy, error.detail)
                self._wake.set()
                await asyncio.sleep(1)
            except Exception:
                log.exception("applying changes to the %s failed; retrying", self.copy)
                self._wake.set()
                await asyncio.sleep(1)


def _own(row: StoredRdf) -> str:
    """The stored RDF of a description without its statements about other subjects."""
    return own_statements(row.thing_id, row.ntriples).ntriples


def steps(ids: Sequence[str], sizes: dict[str, int]) -> Iterator[Sequence[str]]:
    """``ids`` in order, in steps of at most ``STEP_DESCRIPTIONS`` whose RDF (``sizes``, none for one gone) fits in
    ``STEP_BYTES`` together; a description larger than that is a step of its own."""
    start, total = 0, 0
    for end, thing_id in enumerate(ids):
        size = sizes.get(thing_id, 0)
        if end > start and (total + size > STEP_BYTES or end - start == STEP_DESCRIPTIONS):
            yield ids[start:end]
            start, total = end, 0
        total += size
    if start < len(ids):
        yield ids[start:]


__all__ = ["BATCH_DELAY", "QUIET", "STEP_BYTES", "STEP_DESCRIPTIONS", "ChangeFollower", "SkippedDescriptions", "steps"]
