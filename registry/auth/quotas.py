"""Rate limits per principal (per client address when anonymous), a limit on failed authentications per client
address, both shared by every server process, and a cap on concurrent event streams.

A limit is a sliding-window counter (the estimate of the last period: this window's count plus the previous
window's, weighted by the part of it still inside the period), so that a client cannot double its rate at a window
boundary. The counts are shared through PostgreSQL (``rate_counts``) without a round trip per request: each process
decides from the sums it last read plus what it counted since, and every ``SYNC_INTERVAL`` adds its new counts and
reads back the sums of every process in one statement. A client spread over N replicas so gets its limit, give or
take what the others counted in the last ``SYNC_INTERVAL``; while the database is unreachable each process goes on
counting alone and adds its counts when it returns.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import Callable

from registry.auth.principal import Scope
from registry.config import Settings
from registry.errors import TooManyRequests
from registry.rates import Rate, parse_rate
from registry.store.database import Database
from registry.store.rate_counts import CountDelta, add_counts, purge_counts
from registry.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: Seconds between two syncs of a process's counts with the others'.
SYNC_INTERVAL = 0.5
#: Seconds after a client's last request here during which each sync also reads back its sums (so that a client
#: alternating between replicas finds each one up to date with the others' counts).
KEEP_READING = 5.0
#: Seconds the last sync may take when the process stops.
STOP_SYNC_TIMEOUT = 2.0
#: Seconds between two purges of the windows no limit reads any more.
PURGE_INTERVAL = 60.0
#: The kind of count of refused credentials (beside ``Scope.READ`` and ``Scope.WRITE``, the kinds of requests).
AUTH_FAILURES = "auth-failures"


@dataclasses.dataclass(slots=True)
class _Counter:
    """One client's requests under one limit, in the current window and the one before it: the sums over every
    process as of the last sync (``known``), what this process counted since and is adding now (``sending``, until
    the database answers) and what it counted after that (``unsynced``). ``*_before``: the window before."""

    period: int
    window_number: int
    known: int = 0
    sending: int = 0
    unsynced: int = 0
    known_before: int = 0
    sending_before: int = 0
    unsynced_before: int = 0

    def move_to(self, window_number: int) -> None:
        if window_number == self.window_number:
            return
        if window_number == self.window_number + 1:
            self.known_before, self.sending_before, self.unsynced_before = self.known, self.sending, self.unsynced
        else:
            self.known_before = self.sending_before = self.unsynced_before = 0
        self.known = self.sending = self.unsynced = 0
        self.window_number = window_number

    @property
    def current(self) -> int:
        return self.known + self.sending + self.unsynced

    @property
    def before(self) -> int:
        return self.known_before + self.sending_before + self.unsynced_before

    @property
    def pending(self) -> bool:
        """Whether it holds counts not yet added to the shared ones."""
        return bool(self.unsynced or self.unsynced_before or self.sending or self.sending_before)

    def send(self, key: str) -> tuple[CountDelta, CountDelta]:
        """What to add to the shared counts of ``key``'s two windows: the unsynced counts, sending from now on."""
        self.sending, self.unsynced = self.sending + self.unsynced, 0
        self.sending_before, self.unsynced_before = self.sending_before + self.unsynced_before, 0
        expires = (self.window_number + 2) * self.period
        return (
            CountDelta(key, self.window_number - 1, self.sending_before, expires - self.period),
            CountDelta(key, self.window_number, self.sending, expires),
        )

    def unsend(self) -> None:
        """Take the counts being sent back as unsynced (the database did not take them: counted at the next sync)."""
        self.unsynced += self.sending
        self.unsynced_before += self.sending_before
        self.sending = self.sending_before = 0

    def receive(self, key: str, sums: dict[tuple[str, int], int]) -> None:
        """Take the shared sums of ``key``'s two windows, which include the counts sent."""
        # A window that moved meanwhile took its counts along (``move_to``): they are in the sums read here.
        self.known = sums.get((key, self.window_number), self.known + self.sending)
        self.known_before = sums.get((key, self.window_number - 1), self.known_before + self.sending_before)
        self.sending = self.sending_before = 0


class RateLimits:
    def __init__(
        self, settings: Settings, *, count_auth_failures: bool = True, clock: Callable[[], float] = time.time
    ) -> None:
        """``count_auth_failures``: whether credentials are verified at all (not with authentication off);
        ``clock``: seconds since the epoch (every process must agree on the windows' numbers)."""
        self._clock = clock
        self._limits = {
            str(Scope.READ): _parsed(settings.rate_limit_reads),
            str(Scope.WRITE): _parsed(settings.rate_limit_writes),
            AUTH_FAILURES: _parsed(settings.rate_limit_auth_failures) if count_auth_failures else None,
        }
        self._counters: dict[str, _Counter] = {}
        #: Keys of the counters synced (their counts added, their sums read back) at each sync, with when each was
        #: last hit (``clock``).
        self._active: dict[str, float] = {}
        self._streams_cap = settings.max_streams_per_principal
        self._streams: collections.Counter[str] = collections.Counter()
        self._database: Database | None = None
        self._syncer: asyncio.Task[None] | None = None

    @property
    def limits_reads(self) -> bool:
        return self._limits[Scope.READ] is not None

    @property
    def active(self) -> bool:
        """Whether any limit on requests is set (failed authentications only count where credentials are)."""
        return any(self._limits[kind] for kind in (Scope.READ, Scope.WRITE)) or self._streams_cap > 0

    def hit(self, access: Scope, who: str, count: int = 1) -> None:
        """Count ``count`` requests of ``who`` (``principal:<identity>`` or ``address:<ip>``, see ``requester`` in
        registry/http/access.py), all or none: 429 if they do not all fit in what its limit leaves."""
        kind = _kind(access)
        if self._fits(kind, who, count, f"{access} requests"):
            self._count(kind, who, count)

    def check(self, access: Scope, who: str) -> None:
        """429 if not even one more request of ``who`` fits, without counting one."""
        self._fits(_kind(access), who, 1, f"{access} requests")

    def refuse_after_failed_authentications(self, who: str) -> None:
        """429 once ``who`` (a client address) has used up its failed authentications: credentials it sends are then
        not even checked, so guessing them stops."""
        self._fits(AUTH_FAILURES, who, 1, "failed authentications (refused API keys or tokens)")

    def failed_authentications_used_up(self, who: str) -> bool:
        try:
            self.refuse_after_failed_authentications(who)
        except TooManyRequests:
            return True
        return False

    def count_failed_authentication(self, who: str) -> None:
        self._count(AUTH_FAILURES, who, 1)

    def _counter(self, kind: str, who: str) -> tuple[Rate, str, _Counter, float] | None:
        """The limit of ``kind``, the key and the counter of ``who`` under it (moved to now), and how far into its
        window now is; None without a limit."""
        limit = self._limits[kind]
        if limit is None:
            return None
        window_number, into = divmod(self._clock(), limit.period)
        key = f"{kind}:{limit.period}:{who}"
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = _Counter(limit.period, int(window_number))
        counter.move_to(int(window_number))
        return limit, key, counter, into

    def _fits(self, kind: str, who: str, count: int, what: str) -> bool:
        """Whether ``count`` more of ``kind`` fit in what ``who``'s limit leaves (False without a limit); 429 if not."""
        found = self._counter(kind, who)
        if found is None:
            return False
        limit, _, counter, into = found
        current, before = counter.current, counter.before
        if current + before * (1 - into / limit.period) + count <= limit.amount:
            return True
        if count > limit.amount:
            detail = (
                f"Rate limit of {limit.text} for {what}: this request counts {count}, more than the limit allows at "
                f"all; send at most {limit.amount} at a time"
            )
            wait = float(limit.period)
        else:
            wait = _wait(limit, current, before, into, count)
            detail = f"Rate limit of {limit.text} for {what} reached" + (
                f": this request counts {count} and does not fit in what is left" if count > 1 else ""
            )
        raise TooManyRequests(f"{detail}; retry later", headers={"Retry-After": str(max(1, math.ceil(wait)))})

    def _count(self, kind: str, who: str, count: int) -> None:
        found = self._counter(kind, who)
        if found is not None:
            _, key, counter, _ = found
            counter.unsynced += count
            self._active[key] = self._clock()

    async def start(self, database: Database) -> None:
        """Share the counts through ``database`` from now on (if any limit is set)."""
        if any(self._limits.values()):
            self._database = database
            self._syncer = asyncio.create_task(self._sync_periodically(), name="rate-limit-sync")

    async def stop(self) -> None:
        syncer, self._syncer = self._syncer, None
        await cancel_and_wait(syncer)
        # What was counted since the last sync still counts for the other processes, if the database answers soon.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(STOP_SYNC_TIMEOUT):
                await self.sync()

    async def sync(self) -> None:
        """Add this process's new counts to the shared ones and read back the sums of every process."""
        if self._database is None or not self._active:
            return
        touched = self._to_sync(self._clock())
        deltas = [delta for key in touched for delta in self._counters[key].send(key)]
        try:
            sums = await add_counts(self._database, deltas)
        except BaseException:
            for key in touched:  # counted again at the next sync
                self._counters[key].unsend()
            raise
        for key in touched:
            self._counters[key].receive(key, sums)

    def _to_sync(self, now: float) -> list[str]:
        """The keys of the counters this sync adds and reads back (hit lately, or holding counts not added yet), in
        their window at ``now``; the others are no longer active."""
        touched = []
        for key, last in self._active.items():
            counter = self._counters[key]
            counter.move_to(int(now // counter.period))  # counts of windows no estimate reads any more go
            if now - last <= KEEP_READING or counter.pending:
                touched.append(key)
        self._active = {key: self._active[key] for key in touched}
        # In one order in every process: concurrent upserts of the same rows then wait for each other instead of
        # deadlocking.
        touched.sort()
        return touched

    def _forget_idle(self) -> None:
        """Drop the counters of clients not seen in their last two windows."""
        now = self._clock()
        for key, counter in list(self._counters.items()):
            if (counter.window_number + 2) * counter.period < now and key not in self._active:
                del self._counters[key]

    async def _sync_periodically(self) -> None:
        assert self._database is not None
        purged = time.monotonic()
        failing = False
        while True:
            await asyncio.sleep(SYNC_INTERVAL)
            purge_due = time.monotonic() - purged >= PURGE_INTERVAL
            try:
                await self.sync()
                if purge_due:
                    await purge_counts(self._database, int(self._clock()))
            except Exception as error:  # a failover's read-only node, a missing migration: log, retry
                if not failing:
                    log.warning("rate limits are counted by this process alone until the database answers: %s", error)
                failing = True
            else:
                failing = False
            if purge_due:  # whatever the database did: idle counters must not pile up during an outage
                self._forget_idle()
                purged = time.monotonic()

    def open_stream(self, who: str) -> None:
        """Take one of ``who``'s concurrent event streams (give it back with ``close_stream``); 429 if none is left."""
        if self._streams_cap and self._streams[who] >= self._streams_cap:
            raise TooManyRequests(
                f"{self._streams_cap} event streams are open for this client already; close one first",
                headers={"Retry-After": "30"},
            )
        self._streams[who] += 1

    def close_stream(self, who: str) -> None:
        self._streams[who] -= 1
        if self._streams[who] <= 0:
            del self._streams[who]


def _parsed(text: str) -> Rate | None:
    return parse_rate(text) if text else None


def _kind(access: Scope) -> str:
    return str(Scope.READ if access is Scope.READ else Scope.WRITE)


def _wait(limit: Rate, current: int, before: int, into: float, count: int = 1) -> float:
    """Seconds until ``count`` more requests fit under ``limit`` (at most its amount), if no other comes meanwhile."""
    period = limit.period
    if current + count > limit.amount:
        # Not in this window: in the next one, this window's count weighs as the one before.
        needed = 1 - (limit.amount - count) / max(current, 1)
        return period - into + max(0.0, needed) * period
    needed = 1 - (limit.amount - count - current) / before
    return max(0.0, needed * period - into)


__all__ = ["AUTH_FAILURES", "RateLimits"]
