"""Server-Sent Events subscribers, fed from the change feed.

Each change is encoded once per payload variant and offered to every interested subscriber's bounded queue
without waiting: a subscriber that cannot keep up is dropped (told to reconnect, and resumes from the log with
``Last-Event-ID``), so it never slows writers or other subscribers. A queue is bounded in events
(``REGISTRY_SSE_QUEUE_SIZE``) and in bytes (``REGISTRY_SSE_QUEUE_BYTES``): with ``diff=true`` an event carries a
whole description, and a subscriber that does not read would otherwise hold a thousand of them. A subscriber only
ever gets the changes of descriptions its reader may see (registry/auth/tenancy.py), live and replayed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import msgspec

from registry.auth.tenancy import TenantScope
from registry.descriptions.registration_info import enrich
from registry.events.feed import ChangeFeed
from registry.events.filters import DescriptionFilter
from registry.events.history import DocumentStates
from registry.events.positions import Position
from registry.ops.metrics import SSE_DROPPED
from registry.store.changes import Change, iterate_changes
from registry.store.database import Database
from registry.store.things import THING_CREATED, THING_DELETED, THING_TRANSFERRED, THING_UPDATED
from registry.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: WoT Discovery's three, and ownership transfers (beyond the spec; stock clients skip event types they do not know).
EVENT_TYPES = (THING_CREATED, THING_UPDATED, THING_DELETED, THING_TRANSFERRED)
#: The events whose data is the change's diff when a subscriber asks for it (the created TD, the merge patch).
_CARRYING_DIFF = frozenset({THING_CREATED, THING_UPDATED})

#: Queue item: (sequence, encoded event), or None once the subscriber has been dropped.
Item = tuple[int, bytes] | None

KEEP_ALIVE = b": keep-alive\n\n"
DROPPED = b": dropped: too far behind; reconnect with Last-Event-ID to resume\n\n"
#: The last chunk of every stream when the server shuts down (clients reconnect, to another replica if need be).
SHUTTING_DOWN = b": the server is shutting down; reconnect with Last-Event-ID to resume\n\n"


def encode_event(change: Change, diff: bool) -> bytes:
    """The SSE frame of ``change``: data is ``{"id"}``, or with ``diff`` the enriched TD / the merge patch."""
    data = _event_data(change, diff)
    event_id = change.event_id.encode() if change.event_id is not None else b"%d" % change.seq
    return b"event: %s\nid: %s\ndata: %s\n\n" % (change.type.encode(), event_id, msgspec.json.encode(data))


def _event_data(change: Change, diff: bool) -> object:
    """A transfer's record whatever ``diff`` says; with ``diff`` a creation's enriched TD and an update's merge
    patch; else the id. ``change.diff`` is decoded only for the events that carry it."""
    if change.type == THING_TRANSFERRED:
        record = change.diff
        if record is not None:
            # Who gave the description from whom to whom, with or without ``diff``.
            return record if change.actor is None else {**record, "actor": change.actor}
    elif diff and change.type in _CARRYING_DIFF:
        document = change.diff
        if document is not None:
            return _enriched(change, document) if change.type == THING_CREATED else document
    return _id_data(change)


def _enriched(change: Change, document: dict[str, Any]) -> dict[str, Any]:
    """The created TD with its registration information."""
    return enrich(
        document,
        created=change.at,
        modified=change.at,
        expires=change.expires,
        ttl=change.ttl,
        retrieved=dt.datetime.now(dt.UTC),
    )


def _id_data(change: Change) -> dict[str, object]:
    """The id, who made the change (audit) when the directory knows (with authentication on), and why an expired
    description was deleted."""
    data: dict[str, object] = {"id": change.thing_id}
    if change.actor is not None:
        data["actor"] = change.actor
    if change.type == THING_DELETED:
        record = change.diff
        if isinstance(record, dict) and "reason" in record:
            data["reason"] = record["reason"]  # ``expired``: the purge removed it, no principal deleted it
    return data


class _Frames:
    """The encodings of one change, made on first use and shared by all subscribers."""

    __slots__ = ("change", "plain", "with_diff")

    def __init__(self, change: Change) -> None:
        self.change = change
        self.plain: bytes | None = None
        self.with_diff: bytes | None = None

    def get(self, diff: bool) -> bytes:
        if diff and self.change.type != THING_DELETED:
            if self.with_diff is None:
                self.with_diff = encode_event(self.change, True)
            return self.with_diff
        if self.plain is None:
            self.plain = encode_event(self.change, False)
        return self.plain


#: Bytes of events a subscriber's queue holds at most, by default (REGISTRY_SSE_QUEUE_BYTES).
DEFAULT_QUEUE_BYTES = 8 * 1024 * 1024


class Subscriber:
    __slots__ = (
        "diff",
        "dropped",
        "farewell",
        "idle",
        "max_bytes",
        "query",
        "queue",
        "queued_bytes",
        "readers",
        "start",
        "types",
    )

    def __init__(
        self,
        types: frozenset[str],
        diff: bool,
        query: DescriptionFilter,
        readers: TenantScope,
        queue_size: int,
        start: Position,
        max_bytes: int = DEFAULT_QUEUE_BYTES,
    ) -> None:
        self.types = types
        self.diff = diff
        self.query = query
        self.readers = readers
        #: Feed position when subscribed: later changes arrive through the queue, earlier ones only by replay.
        self.start = start
        self.queue: asyncio.Queue[Item] = asyncio.Queue(queue_size + 1)
        #: Bytes of the events in ``queue``, and the most it may hold (one event of any size fits an empty queue).
        self.queued_bytes = 0
        self.max_bytes = max_bytes
        self.dropped = False
        #: The comment the stream ends with once dropped.
        self.farewell = DROPPED
        #: Nothing was offered since the last keep-alive tick. A new subscriber is not idle yet: its first
        #: keep-alive comes after a whole interval without events, never before its first event.
        self.idle = False

    def wants(self, change: Change) -> bool:
        """Of the type it subscribed to and of a description it may see (before any content filter)."""
        return change.type in self.types and self.readers.sees(change.tenant)

    def offer(self, seq: int, frame: bytes) -> None:
        self.idle = False
        if self.dropped:
            return
        too_many = self.queue.qsize() >= self.queue.maxsize - 1
        if too_many or (self.queued_bytes and self.queued_bytes + len(frame) > self.max_bytes):
            SSE_DROPPED.inc()
            self.end(DROPPED)
            return
        self.queued_bytes += len(frame)
        self.queue.put_nowait((seq, frame))

    def end(self, farewell: bytes) -> None:
        """End the stream: what is queued is discarded, then ``farewell`` is sent."""
        self.dropped = True
        self.farewell = farewell
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queued_bytes = 0
        self.queue.put_nowait(None)

    async def next_chunk(self, after: Position | None) -> bytes | None:
        """Everything queued (events ``after`` does not cover, and keep-alives) as one chunk; None once dropped."""
        items = [await self.queue.get()]
        while not self.queue.empty():
            items.append(self.queue.get_nowait())
        frames = []
        for item in items:
            if item is None:
                return None
            seq, frame = item
            self.queued_bytes -= len(frame)
            if seq < 0 or after is None or not after.covers(seq):
                frames.append(frame)
        return b"".join(frames)


class EventHub:
    def __init__(
        self,
        feed: ChangeFeed,
        database: Database,
        queue_size: int,
        keepalive: float,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
    ) -> None:
        self.feed = feed
        self.database = database
        self.queue_size = queue_size
        self.queue_bytes = queue_bytes
        self.keepalive = keepalive
        self._plain: set[Subscriber] = set()
        self._filtered: set[Subscriber] = set()
        self._backlog: asyncio.Queue[Sequence[Change]] = asyncio.Queue()
        self._states = DocumentStates(database)
        self._tasks: list[asyncio.Task[None]] = []
        self._unsubscribe = feed.subscribe(self._on_changes)

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._match_filtered(), name="event-hub-filters"),
            asyncio.create_task(self._keep_alive(), name="event-hub-keep-alive"),
        ]

    async def stop(self) -> None:
        self._unsubscribe()
        await cancel_and_wait(*self._tasks)

    async def _keep_alive(self) -> None:
        """One timer for all subscribers (not one per stream): idle streams get a comment so proxies keep them."""
        while True:
            await asyncio.sleep(self.keepalive)
            for subscriber in [*self._plain, *self._filtered]:
                if subscriber.idle:
                    subscriber.offer(-1, KEEP_ALIVE)
                subscriber.idle = True

    @property
    def subscriber_count(self) -> int:
        return len(self._plain) + len(self._filtered)

    def subscribe(
        self, types: frozenset[str], diff: bool, query: DescriptionFilter, readers: TenantScope
    ) -> Subscriber:
        subscriber = Subscriber(types, diff, query, readers, self.queue_size, self.feed.cursor, self.queue_bytes)
        (self._filtered if query.active else self._plain).add(subscriber)
        return subscriber

    def end_streams(self) -> None:
        """Shutdown: every stream ends at once with a last comment, so the server need not wait for them."""
        for subscriber in [*self._plain, *self._filtered]:
            subscriber.end(SHUTTING_DOWN)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._plain.discard(subscriber)
        self._filtered.discard(subscriber)

    async def replay(self, subscriber: Subscriber, after: Position) -> AsyncIterator[tuple[int, bytes]]:
        """The changes the subscriber would have received that ``after`` (its ``Last-Event-ID``) does not cover
        and its start does (later ones come live): first those committed late in ``after``'s pending ranges, then
        those after it, each event with the id of the position after it."""
        start = subscriber.start
        states = DocumentStates(self.database) if subscriber.query.active else None
        position = after
        for first, last in after.pending:
            async for change in iterate_changes(self.database, first - 1, min(last, start.high)):
                if start.covers(change.seq):
                    position = position.without(change.seq)
                    event = await self._replayed(subscriber, change, position, states)
                    if event is not None:
                        yield event
        async for change in iterate_changes(self.database, after.high, start.high):
            if start.covers(change.seq):
                # Below it, only the sequences still pending at the start may yet commit (and come live).
                event = await self._replayed(subscriber, change, start.below(change.seq), states)
                if event is not None:
                    yield event

    @staticmethod
    async def _replayed(
        subscriber: Subscriber, change: Change, position: Position, states: DocumentStates | None
    ) -> tuple[int, bytes] | None:
        if states is not None:
            before, now = await states.states(change)
            if not (subscriber.query.matches(before) or subscriber.query.matches(now)):
                return None
        if not subscriber.wants(change):
            return None
        event_id = position.event_id(change.seq)
        positioned = change if event_id == str(change.seq) else dataclasses.replace(change, event_id=event_id)
        return change.seq, _Frames(positioned).get(subscriber.diff)

    def _on_changes(self, batch: Sequence[Change]) -> None:
        for change in batch:
            frames = _Frames(change)
            for subscriber in self._plain:
                if not subscriber.start.covers(change.seq) and subscriber.wants(change):
                    subscriber.offer(change.seq, frames.get(subscriber.diff))
        self._backlog.put_nowait(batch)

    async def _match_filtered(self) -> None:
        """Filtered subscribers need each document before and after the change, which may take a query."""
        while True:
            batch = await self._backlog.get()
            if not self._filtered:
                self._states.forget()  # states are only cached while every change passes through them
                continue
            try:
                for change in batch:
                    before, after = await self._states.states(change)
                    frames = _Frames(change)
                    for subscriber in list(self._filtered):
                        if subscriber.start.covers(change.seq) or not subscriber.wants(change):
                            continue
                        if subscriber.query.matches(before) or subscriber.query.matches(after):
                            subscriber.offer(change.seq, frames.get(subscriber.diff))
            except Exception:
                log.exception("matching changes against filtered subscriptions failed")
                self._states.forget()


__all__ = ["EVENT_TYPES", "EventHub", "Subscriber", "encode_event"]
