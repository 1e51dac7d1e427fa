"""The served bytes of hot descriptions (``GET /things/{id}``), kept in step with the database by the change feed.

A GET otherwise costs a PostgreSQL round trip and an enrichment per request. What keeps the cache correct:

- Every committed change reaches every server process through its change feed, which evicts the id; a write made
  by this process evicts it at once, so a client reads its own writes.
- A read that was under way when its id was evicted is not stored if it may have read the row before the change
  (its revision is older than the change, or the change is not in the change log: a renewal).
- Entries are served only while the feed listens and has delivered every change it was told of; otherwise
  (start-up, a lost LISTEN connection, a change held back by an earlier one not yet committed) PostgreSQL answers.
- An entry is not served past its description's expiry (the row is invisible before it is purged).
- Lease renewals move ``expires`` without a change-log entry: this process evicts on its own renewals at once, and
  every process on the renewed ids the renewal statement NOTIFYs. Leased entries are dropped when the LISTEN
  connection comes back (renewals made meanwhile went unseen).
- The bytes are shared by every reader, the authorization is not: the tenant is kept and checked on every hit.
- ``registration.retrieved`` is the time of each response: the bytes are kept around it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from cachetools import LRUCache

from registry.descriptions.registration_info import format_time
from registry.events.feed import ChangeFeed
from registry.ops.metrics import RESPONSE_CACHE_READS
from registry.store.changes import LAST_SEQ, Change
from registry.store.things import StoredDescription

#: Bytes an entry costs besides its JSON and id (the entry, its key and the LRU bookkeeping), for the byte bound.
ENTRY_OVERHEAD = 400
#: ``registry_response_cache_reads`` by outcome: how operators size the cache.
_HITS, _MISSES = RESPONSE_CACHE_READS.labels("hit"), RESPONSE_CACHE_READS.labels("miss")
#: A description larger than this share of the byte budget is not cached: a few huge ones would flush the rest.
LARGEST_SHARE = 8


@dataclasses.dataclass(frozen=True, slots=True)
class CachedDescription:
    #: The enriched JSON up to the value of ``registration.retrieved``, and after it.
    head: bytes
    tail: bytes
    revision: int
    etag: str
    tenant: str | None
    expires: dt.datetime | None
    #: Whether lease renewals (which leave no change-log entry) can move ``expires``.
    leased: bool
    size: int

    def body(self, retrieved: dt.datetime) -> bytes:
        return b"".join((self.head, format_time(retrieved).encode(), self.tail))


def _split_at_retrieved(stored: StoredDescription, served: bytes, retrieved: dt.datetime) -> CachedDescription | None:
    """The entry for ``served`` (enriched at ``retrieved``); None if its ``retrieved`` value is not unambiguous."""
    stamp = format_time(retrieved).encode()
    marker = b'"retrieved":"' + stamp + b'"'
    if served.count(marker) != 1:
        return None
    end = served.index(marker) + len(marker) - 1
    start = end - len(stamp)
    return CachedDescription(
        head=served[:start],
        tail=served[end:],
        revision=stored.revision,
        etag=stored.etag,
        tenant=stored.tenant,
        expires=stored.expires,
        leased=stored.ttl is not None,
        size=len(served) + len(stored.id) + ENTRY_OVERHEAD,
    )


class ResponseCache:
    """Bounded in entries and bytes (least recently used out first); off until it follows a change feed."""

    def __init__(self, *, entries: int, max_bytes: int) -> None:
        self.max_entries = entries
        self.largest = max_bytes // LARGEST_SHARE
        self._entries: LRUCache[str, CachedDescription] = LRUCache(
            maxsize=max(max_bytes, 1), getsizeof=lambda entry: entry.size
        )
        self._feed: ChangeFeed | None = None
        #: Reads of PostgreSQL under way per id, and the latest change evicting an id while one was.
        self._reading: Counter[str] = Counter()
        self._evicted_while_reading: dict[str, int] = {}

    @property
    def enabled(self) -> bool:
        return self._feed is not None and self.max_entries > 0 and self.largest > 0

    def follow(self, feed: ChangeFeed) -> Callable[[], None]:
        """Evict every id ``feed`` delivers a change or a renewal of; returns the function that stops (and turns the
        cache off)."""
        unsubscribe = feed.subscribe(self._on_changes)
        unsubscribe_renewals = feed.subscribe_renewals(self._on_renewals)
        self._feed = feed

        def stop() -> None:
            unsubscribe()
            unsubscribe_renewals()
            self._feed = None
            self._entries.clear()

        return stop

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, thing_id: str) -> bool:
        """Whether an entry of ``thing_id`` is kept (served only while ``lookup`` says so)."""
        return thing_id in self._entries

    @property
    def held_bytes(self) -> int:
        return int(self._entries.currsize)

    def lookup(self, thing_id: str, now: dt.datetime) -> CachedDescription | None:
        """The entry of ``thing_id`` if it may be served now."""
        feed = self._feed
        if feed is None or not self.enabled:
            return None
        entry = self._entries.get(thing_id) if feed.listening and not feed.lag else None
        if entry is not None and entry.expires is not None and entry.expires <= now:
            self._entries.pop(thing_id, None)
            entry = None
        (_MISSES if entry is None else _HITS).inc()
        return entry

    def reading(self, thing_id: str) -> None:
        """A read of ``thing_id`` from PostgreSQL starts; ``read`` must follow, whatever its outcome."""
        self._reading[thing_id] += 1

    def read(self, thing_id: str, stored: StoredDescription | None, served: bytes, retrieved: dt.datetime) -> None:
        """The read of ``thing_id`` ended with ``stored`` enriched at ``retrieved`` (None: it failed): keep it unless
        the id was evicted meanwhile."""
        remaining = self._reading[thing_id] - 1
        evicted_by = self._evicted_while_reading.get(thing_id, 0)
        if remaining:
            self._reading[thing_id] = remaining
        else:
            del self._reading[thing_id]
            self._evicted_while_reading.pop(thing_id, None)
        if stored is None or evicted_by > stored.revision or not self.enabled:
            return
        entry = _split_at_retrieved(stored, served, retrieved)
        if entry is None or entry.size > self.largest:
            return
        while len(self._entries) >= self.max_entries and thing_id not in self._entries:
            self._entries.popitem()
        self._entries[thing_id] = entry

    def evict(self, thing_ids: Iterable[str], seq: int = LAST_SEQ) -> None:
        """Drop ``thing_ids`` because of change ``seq`` (default: one that is not in the change log, or not known
        yet: reads under way are not kept); an entry read at ``seq`` or after stays."""
        entries = self._entries
        for thing_id in thing_ids:
            entry = entries.get(thing_id)
            if entry is not None and entry.revision < seq:
                del entries[thing_id]
            if thing_id in self._reading:
                evicted = self._evicted_while_reading
                evicted[thing_id] = max(evicted.get(thing_id, 0), seq)

    def _on_changes(self, batch: Sequence[Change]) -> None:
        for change in batch:
            self.evict((change.thing_id,), change.seq)

    def _on_renewals(self, renewed: Sequence[str] | None) -> None:
        if renewed is not None:
            self.evict(renewed)
            return
        # Renewals went unseen: no leased entry, and no read under way, may be trusted.
        for thing_id in [thing_id for thing_id, entry in self._entries.items() if entry.leased]:
            del self._entries[thing_id]
        self.evict(list(self._reading))


__all__ = ["CachedDescription", "ResponseCache"]
