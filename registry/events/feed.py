"""The change feed: every committed change of the shared database, in sequence order, once per process.

Every consumer of changes in a process (the SSE hub, the SPARQL index follower, metrics, an external store)
subscribes to this one feed: one LISTEN connection (``registry_changes``) wakes one reader, which fetches the
rows of the ``changes`` log after the last delivered sequence and hands each batch to every consumer. The log is
the source of truth, the notification only a wake-up call: after a lost connection the reader catches up from the
log, and a periodic poll covers notifications lost in between.

One gap policy. Sequences are taken before commit, so a transaction may commit after a later one (held up by a
lock, or on a replica frozen mid-transaction). The reader delivers in order while it can: a missing sequence holds
back the ones after it until it commits, is proven empty, or ``gap_timeout`` has passed. After that the reader
moves on and keeps the sequence pending, asking for it at each read and delivering it late when it commits,
however late. A sequence is proven empty once every transaction that was running when it was first seen missing
has ended (the oldest running transaction id has passed the newest one seen then; a transaction has its id before
it takes a sequence, migration 0015) without committing it: it rolled back. Each delivered change carries its
position (``registry/events/positions.py``) so that a stream resumed with ``Last-Event-ID`` gets exactly what it
missed, late commits included.

Lease renewals leave no change-log entry: they come only as notifications (``registry_renewals``), to the
consumers of renewals, and a consumer is told when some may have been missed (its LISTEN connection was lost).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec

from registry.errors import RegistryError
from registry.events.positions import Position
from registry.store.changes import Change, latest_seq, read_changes, sequences_after, transaction_horizon
from registry.store.database import Database, Listening
from registry.store.leases import RENEWALS_CHANNEL
from registry.store.things import CHANGES_CHANNEL
from registry.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: Receives each batch of changes, in order. Called on the event loop: must not block (queue work instead).
Consumer = Callable[[Sequence[Change]], None]
#: Receives the ids of each notified batch of lease renewals, or None when renewals may have gone unseen. Called on
#: the event loop.
RenewalConsumer = Callable[[Sequence[str] | None], None]
_RENEWED_IDS = msgspec.json.Decoder(list[str])
Item = TypeVar("Item")

#: Re-read this soon while a sequence is missing.
_GAP_RETRY = 0.02
_BATCH = 500
#: How far below its start position the feed looks for sequences not yet committed.
START_WINDOW = 1000


class ChangeFeed:
    def __init__(
        self,
        database: Database,
        *,
        poll_interval: float = 5.0,
        gap_timeout: float = 2.0,
        reconnect_delay: float = 1.0,
        read_interval: float = 0.0,
        diffs: bool = True,
    ) -> None:
        """``read_interval``: seconds between two reads of the log on notifications at least (0: read on each), for
        a consumer that applies changes in bursts anyway; :meth:`sync` reads at once all the same. Without
        ``diffs``, the changes delivered carry no diff, ttl nor expires (for consumers that need only which
        descriptions changed: the log's reads are then much lighter)."""
        self.diffs = diffs
        self.database = database
        self.poll_interval = poll_interval
        self.gap_timeout = gap_timeout
        self.reconnect_delay = reconnect_delay
        self.read_interval = read_interval
        #: Sequence of the last change delivered in order; consumers see every committed change after it.
        self.position = 0
        #: Where the feed started (``position`` then).
        self._start = 0
        #: Highest sequence announced by a notification.
        self.notified = 0
        #: Changes delivered late (committed after a later sequence had been delivered).
        self.late_deliveries = 0
        self._consumers: list[Consumer] = []
        self._renewal_consumers: list[RenewalConsumer] = []
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._gap_since: float | None = None
        #: The newest transaction id once the gap held back since ``_gap_since`` was seen (None until read).
        self._gap_horizon: int | None = None
        #: Pending sequences (skipped, and may still commit): sequence → the newest transaction id when it was
        #: first seen missing (None until read); once every transaction up to it has ended, it is given up.
        self._missing: dict[int, int | None] = {}
        #: Since when the feed has known of committed changes it has not delivered (or failed to read the log).
        self._behind_since: float | None = None
        self._listening = False
        self._tasks: list[asyncio.Task[None]] = []

    # -- consumers

    def subscribe(self, consumer: Consumer) -> Callable[[], None]:
        """Feed ``consumer`` every change after ``position``; returns the function that stops it."""
        self._consumers.append(consumer)
        return lambda: self._consumers.remove(consumer)

    def subscribe_renewals(self, consumer: RenewalConsumer) -> Callable[[], None]:
        """Feed ``consumer`` the lease renewals notified from now on; subscribe before ``start`` (the feed LISTENs
        for renewals only if someone wants them when it connects)."""
        self._renewal_consumers.append(consumer)
        return lambda: self._renewal_consumers.remove(consumer)

    @property
    def cursor(self) -> Position:
        """Where a stream subscribing now starts: it gets every change this position does not cover."""
        return Position.of(self.position, self._missing)

    @property
    def settled(self) -> int:
        """The highest sequence up to which every change since the start is delivered or proven empty: where a
        consumer that records its progress resumes (the feed delivers again what it had after it). Never below the
        start, which the consumer had reached before; a sequence pending below it is looked for again at a
        restart among the ``START_WINDOW`` below the position the feed is started at."""
        return max(self._start, min(self._missing, default=self.position + 1) - 1)

    @property
    def pending(self) -> int:
        """Sequences skipped and not yet committed nor proven empty."""
        return len(self._missing)

    @property
    def lag(self) -> float:
        """Seconds the feed has been behind the log (0 when it has delivered everything it knows of)."""
        return 0.0 if self._behind_since is None else time.monotonic() - self._behind_since

    @property
    def listening(self) -> bool:
        return self._listening

    # -- life cycle

    async def start(self, position: int | None = None) -> None:
        """Deliver the changes after ``position`` (default: the latest, i.e. only changes from now on)."""
        self.position = await latest_seq(self.database) if position is None else position
        self._start = self.position
        # Sequences taken below the start by transactions still open are delivered late when they commit.
        window_start = max(0, self.position - START_WINDOW)
        committed = set(await sequences_after(self.database, window_start, self.position))
        self._missing = dict.fromkeys(seq for seq in range(window_start + 1, self.position + 1) if seq not in committed)
        self._tasks = [
            asyncio.create_task(self._listen(), name="change-feed-listen"),
            asyncio.create_task(self._read(), name="change-feed-read"),
        ]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)

    async def sync(self) -> None:
        """Deliver everything committed so far, for a read that must see every write acknowledged before it.

        A change held back by an earlier sequence not yet committed is waited for: such a transaction is
        committing (sequences are taken at the end of a write), so the wait is short, and bounded by
        ``gap_timeout``.
        """
        # Polling: what is awaited is another transaction's commit, which only a new read of the log shows.
        while await self._catch_up():  # noqa: ASYNC110
            await asyncio.sleep(_GAP_RETRY)

    # -- the LISTEN connection

    def _on_payload(self, payload: str) -> None:
        with contextlib.suppress(ValueError):
            seq = int(payload)
            self.notified = max(self.notified, seq)
            if seq <= self.position and not self._missing:
                return
            if self._behind_since is None:
                self._behind_since = time.monotonic()
        self._wake.set()

    def _on_renewals(self, payload: str) -> None:
        try:
            renewed: list[str] | None = _RENEWED_IDS.decode(payload)
        except msgspec.DecodeError:  # "*": ids too long for a notification
            renewed = None
        self._deliver_renewals(renewed)

    async def _listen(self) -> None:
        while True:
            listening: Listening | None = None
            try:
                channels = {CHANGES_CHANNEL: self._on_payload}
                if self._renewal_consumers:
                    channels[RENEWALS_CHANNEL] = self._on_renewals
                listening = await self.database.listen(channels)
                self._deliver_renewals(None)  # any made while not listening went unseen
                self._listening = True
                self._wake.set()  # catch up on whatever was written while not listening
                await listening.lost.wait()
                log.warning("change feed lost its LISTEN connection; reconnecting")
            except RegistryError as error:  # the poll covers the meantime
                log.warning("change feed cannot LISTEN (%s); retrying in %s s", error.detail, self.reconnect_delay)
            finally:
                self._listening = False
                if listening is not None:
                    await listening.close()
            await asyncio.sleep(self.reconnect_delay)

    # -- the reader

    async def _read(self) -> None:
        timeout = self.poll_interval
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            await asyncio.sleep(self.read_interval)  # the notifications meanwhile are answered by the same read
            self._wake.clear()
            try:
                waiting = await self._catch_up()
            except RegistryError as error:
                log.warning("change feed cannot read the change log (%s); retrying", error.detail)
                if self._behind_since is None:
                    self._behind_since = time.monotonic()
                waiting = False
                await asyncio.sleep(self.reconnect_delay)
            except Exception:
                log.exception("change feed failed; retrying")
                waiting = False
                await asyncio.sleep(self.reconnect_delay)
            timeout = _GAP_RETRY if waiting else self.poll_interval

    async def _catch_up(self) -> bool:
        """Deliver everything committed after ``position``; True while held back by a missing sequence."""
        async with self._lock:
            while True:
                read, delivered = await self._deliver_page()
                if delivered < read:
                    return True
                if read < _BATCH:
                    if self.position >= self.notified:
                        self._behind_since = None
                    return False

    async def _deliver_page(self) -> tuple[int, int]:
        """Read a page of the log after ``position`` (with the pending sequences) and deliver what is in order or
        late; the number of changes read and of those delivered."""
        oldest_running, proven_empty = await self._check_horizon()
        page = await read_changes(
            self.database, self.position, limit=_BATCH, missing=list(self._missing), diffs=self.diffs
        )
        late = [change for change in page if change.seq in self._missing]
        ready = self._in_order([change for change in page if change.seq not in self._missing], oldest_running)
        if len(page) < _BATCH:  # every pending row asked for was read: those not found rolled back
            self._forget_rolled_back(proven_empty, late)
        if late or ready:
            self._deliver(self._positioned(late, ready))
        self.late_deliveries += len(late)
        return len(page), len(ready) + len(late)

    def _forget_rolled_back(self, proven_empty: list[int], late: list[Change]) -> None:
        """Stop waiting for the pending sequences proven empty that the last read did not find."""
        found = {change.seq for change in late}
        for seq in proven_empty:
            if seq not in found:
                del self._missing[seq]

    async def _check_horizon(self) -> tuple[int | None, list[int]]:
        """While sequences are missing: the oldest running transaction id, after recording the horizon of those
        newly missing (the newest transaction id now), and the pending sequences every transaction that could have
        taken them has ended since (committed ones are read after this, so any not read then rolled back)."""
        if not self._missing and self._gap_since is None:
            return None, []
        oldest_running, newest = await transaction_horizon(self.database)
        if self._gap_since is not None and self._gap_horizon is None:
            self._gap_horizon = newest
        proven: list[int] = []
        for seq, horizon in self._missing.items():
            if horizon is None:
                self._missing[seq] = newest
            elif horizon <= oldest_running:
                proven.append(seq)
        return oldest_running, proven

    def _positioned(self, late: list[Change], ready: list[Change]) -> list[Change]:
        """The changes to deliver in sequence order, each with the event id of the position after it (late ones
        leave ``pending``); ``position`` moves to the last one in order."""
        for change in late:
            del self._missing[change.seq]
        batch = sorted([*late, *ready], key=lambda change: change.seq)
        if not self._missing and not late:
            if ready:
                self.position = ready[-1].seq
            return batch
        pending = set(self._missing) | {change.seq for change in late}
        high = self.position
        positioned: list[Change] = []
        for change in batch:
            if change.seq in pending:
                pending.discard(change.seq)
            else:
                high = change.seq
            event_id = Position.of(high, pending).event_id(change.seq)
            positioned.append(dataclasses.replace(change, event_id=event_id))
        self.position = high
        return positioned

    def _in_order(self, page: list[Change], oldest_running: int | None = None) -> list[Change]:
        """The changes of ``page`` deliverable now: in order, past a gap only once it is proven empty (the
        transactions that could have filled it have ended: ``oldest_running``, read before ``page``) or after
        ``gap_timeout`` (it stays pending then)."""
        ready: list[Change] = []
        expected = self.position + 1
        for change in page:
            if change.seq != expected and not self._gap_proven_empty(oldest_running):
                now = time.monotonic()
                if self._gap_since is None:
                    self._gap_since = now
                if now - self._gap_since < self.gap_timeout:
                    break
                # Not committed after gap_timeout: move on, and deliver it late when it commits.
                self._missing.update(dict.fromkeys(range(expected, change.seq)))
            self._gap_since = self._gap_horizon = None
            ready.append(change)
            expected = change.seq + 1
        return ready

    def _gap_proven_empty(self, oldest_running: int | None) -> bool:
        """Whether the gap held back since ``_gap_since`` rolled back: every sequence in it was taken before a
        later one committed, so by a transaction with an id below the horizon recorded then."""
        horizon = self._gap_horizon
        if self._gap_since is None or horizon is None or oldest_running is None:
            return False
        return horizon <= oldest_running

    def _deliver(self, batch: Sequence[Change]) -> None:
        _call_each(self._consumers, batch)

    def _deliver_renewals(self, renewed: Sequence[str] | None) -> None:
        _call_each(self._renewal_consumers, renewed)


def _call_each(consumers: list[Callable[[Item], None]], item: Item) -> None:
    """Hand ``item`` to every consumer; one that fails is logged and does not keep it from the others."""
    for consumer in list(consumers):
        try:
            consumer(item)
        except Exception:
            log.exception("change feed consumer %r failed", consumer)


__all__ = ["ChangeFeed", "Consumer", "RenewalConsumer"]
