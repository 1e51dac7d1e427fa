"""A read replica of the primary (PostgreSQL streaming replication) that serves client-driven reads: searches,
facets, capability resolution and JSONPath scans (``Database.search_reads``, ``Database.fetch_for_search``).

Those reads tolerate a short lag; everything else (writes, ``GET /things/{id}``, the listing, leases, events) stays
on the primary, so a client always reads its own writes there. The replica serves only while it is at most
``max_lag`` seconds behind: a read replica that stalls (replay paused, a long recovery conflict, its host down)
costs freshness for at most that long, then reads go back to the primary until it catches up.

How far behind it is, is measured by WAL position rather than by ``pg_last_xact_replay_timestamp()``, which grows
while the primary is idle: every ``probe_interval`` the primary's current WAL position is noted with the time, and
the replica's replayed position says which of those notes it has reached. Its lag is the age of the newest note it
has reached: every transaction committed before that note is visible on it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time

from sqlalchemy import text

from registry.errors import RegistryError
from registry.store.database import Database, Statement

log = logging.getLogger(__name__)

#: Seconds between two measurements of the replica's lag.
PROBE_INTERVAL = 0.5

#: Notes of the primary's position kept at most (an hour of probes): a replica stuck longer reads as an hour behind.
_KEPT_POSITIONS = 7200

_PRIMARY_POSITION = Statement.of(text("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint"))
_REPLICA_POSITION = Statement.of(text("SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint"))


class ReadReplica:
    """A pool on the replica, and how far behind the primary it is (``lag``, None while unknown)."""

    def __init__(
        self, primary: Database, url: str, *, connections: int, max_lag: float, probe_interval: float = PROBE_INTERVAL
    ) -> None:
        self.primary = primary
        self.database = Database(url, connections=connections, name=f"{primary.name}-reads", listens=False)
        self.max_lag = max_lag
        self.probe_interval = probe_interval
        #: Seconds behind the primary at the last probe; None when it could not be measured.
        self.lag: float | None = None
        #: Why the replica is not serving, for ``/readyz`` and the log (None while it serves).
        self.problem: str | None = "not measured yet"
        #: (monotonic time, primary WAL position) of recent probes, oldest first.
        self._positions: collections.deque[tuple[float, int]] = collections.deque(maxlen=_KEPT_POSITIONS)
        self._task: asyncio.Task[None] | None = None

    @property
    def serving(self) -> bool:
        return self.problem is None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._follow(), name="read-replica-lag")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.database.close()

    def set_aside(self, error: RegistryError) -> None:
        """A read on the replica failed for want of the replica (unreachable, a conflict with recovery): reads go
        to the primary until the next probe finds it usable."""
        self._judge(None, f"a read failed on it ({error.detail})")

    async def _follow(self) -> None:
        while True:
            try:
                lag = await self._measure()
            except RegistryError as error:
                self._judge(None, f"unreachable ({error.detail})")
            else:
                self._judge(lag, None if lag <= self.max_lag else f"{lag:.1f} s behind (bound {self.max_lag:g} s)")
            await asyncio.sleep(self.probe_interval)

    async def _measure(self) -> float:
        if not self.database.is_open:
            await self.database.open()
        position = int(await self.primary.fetchval(_PRIMARY_POSITION))
        now = time.monotonic()
        self._positions.append((now, position))
        row = await self.database.fetchrow(_REPLICA_POSITION)
        assert row is not None
        recovering, replayed = row
        if not recovering:
            # Not a standby (a primary, or a pooler in front of one): it has what it has, its lag is not ours to know.
            return 0.0
        # The oldest note kept is the newest one the replica has reached (or, if it has reached none, the oldest it
        # has not): every transaction committed before it is visible there.
        while len(self._positions) > 1 and replayed is not None and self._positions[1][1] <= replayed:
            self._positions.popleft()
        lag = now - self._positions[0][0]
        return lag

    def _judge(self, lag: float | None, problem: str | None) -> None:
        if problem is None and not self.serving:
            log.info("the read replica serves searches again (%.1f s behind)", lag)
        elif problem is not None and self.serving:
            log.warning("the read replica is set aside, searches read the primary: %s", problem)
        self.lag, self.problem = lag, problem


__all__ = ["PROBE_INTERVAL", "ReadReplica"]
