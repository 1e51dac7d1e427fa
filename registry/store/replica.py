"""A read replica of the primary (PostgreSQL streaming replication) that serves client-driven reads: searches,
facets, capability resolution and JSONPath scans (``Database.run_search``, ``Database.fetch_for_search``).

Those reads tolerate a short lag; everything else (writes, ``GET /things/{id}``, the listing, leases, events) stays
on the primary, so a client always reads its own writes there. The replica serves only while it is at most
``max_lag`` seconds behind: a read replica that stalls (replay paused, a long recovery conflict, its host down)
costs freshness for at most that long, then reads go back to the primary until it catches up.

How far behind it is, is measured by WAL position rather than by ``pg_last_xact_replay_timestamp()``, which grows
while the primary is idle: every ``probe_interval`` the primary's current WAL insert position is noted with the
time, and the replica's replayed position says which of those notes it has reached. Its lag is the age of the
newest note it has reached (every transaction committed before that note is visible there): at most its real lag
plus one probe interval. A replica that has reached none of the notes kept, or whose schema is not the one this
code needs (a migration not replayed yet), does not serve.

While the primary cannot be reached, and the replica has lost it too (its WAL receiver does not stream), a
replica that has replayed all it received and the primary's flushed position at the last probe that read it keeps
serving: discovery goes on through a failover, with what the primary had committed up to about one probe before it
went (its lag is unknown then). A primary that only this process cannot reach still streams to the replica, which
is then set aside: a replica does not serve an ageing copy while the primary takes writes from elsewhere.

There may be several read replicas: each is measured on its own, and a read goes to the least busy of those that
serve (``Database.run_search``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import math
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from registry.errors import DatabaseUnavailable, RegistryError
from registry.store.database import Database, Listening, translated

log = logging.getLogger(__name__)

#: Seconds between two measurements of the replica's lag.
PROBE_INTERVAL = 0.5
#: Notes of the primary's position kept at most (an hour of probes): a replica stuck longer reads as an hour behind.
_KEPT_POSITIONS = 7200

#: The insert position measures the lag; the flush position bounds what a primary that goes down had committed
#: (a replica can never receive WAL that was not flushed).
_PRIMARY_POSITION = (
    "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint, (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint"
)
#: Also whether it still streams from its primary (the WAL receiver's status: no row when none runs; NULL for a
#: role without ``pg_read_all_stats``), and whether it has replayed all it received.
_REPLICA_POSITION = (
    "SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, "
    "(SELECT version_num FROM alembic_version), "
    "(SELECT coalesce(status, 'hidden') FROM pg_stat_wal_receiver), "
    "coalesce(pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn(), true)"
)
#: WAL page size, and the sizes of a page's header (the long one starts a segment).
_WAL_PAGE = 8192
_PAGE_HEADERS = (24, 40)


def _record_boundary(position: int) -> int:
    """The insert position just past a page header (an idle primary after a WAL switch) is where the replica's
    replay stops, the page's start: no record lies in a header."""
    offset = position % _WAL_PAGE
    return position - offset if offset in _PAGE_HEADERS else position


class _Unusable(Exception):
    """What a probe found that keeps the replica from serving."""


def replica_names(urls: Sequence[str]) -> list[str]:
    """``host:port/database`` of each replica's URL, without its credentials (for logs, ``/readyz`` and metrics),
    numbered where two would read the same (the same host under two roles)."""
    names = [_without_credentials(url) for url in urls]
    return [
        f"{name} #{names[:position].count(name) + 1}" if names.count(name) > 1 else name
        for position, name in enumerate(names)
    ]


def _without_credentials(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    # libpq's host and port parameters (a Unix socket's directory) name the server when the URL's authority does not.
    query = {key: value for key, value in urllib.parse.parse_qsl(parts.query) if key in {"host", "port"}}
    server = parts.netloc.rpartition("@")[2] or ":".join(query.values())
    return f"{server}{parts.path}" or "read replica"


class ReadReplica:
    """A pool on the replica, and how far behind the primary it is (``lag``, None while unknown)."""

    def __init__(
        self,
        primary: Database,
        url: str,
        *,
        connections: int,
        max_lag: float,
        schema_revision: str,
        name: str = "",
        probe_interval: float = PROBE_INTERVAL,
        on_read: Callable[[], object] = lambda: None,
    ) -> None:
        """``name``: for logs, ``/readyz`` and metrics (:func:`replica_names`; by default its URL's). ``on_read``
        is called for each read it answers (the caller counts them; the store does not know the metrics)."""
        self.primary = primary
        self.schema_revision = schema_revision
        self.name = name or replica_names([url])[0]
        self.database = Database(url, connections=connections, name=f"{primary.name}-reads", listens=False)
        self.max_lag = max_lag
        self.probe_interval = probe_interval
        #: Seconds behind the primary at the last probe; None when it could not be measured.
        self.lag: float | None = None
        #: Why the replica is not serving, for ``/readyz`` and the log (None while it serves).
        self.problem: str | None = "not measured yet"
        #: Why the primary could not be read at the last probe, while the replica serves without it.
        self.primary_unreachable: str | None = None
        #: Called for each read it answered.
        self.on_read = on_read
        #: (monotonic time, primary WAL position) of recent probes, oldest first.
        self._positions: collections.deque[tuple[float, int]] = collections.deque(maxlen=_KEPT_POSITIONS)
        #: The primary's flushed WAL position at the last probe that read it.
        self._flushed = 0
        #: When the newest note the replica had reached at the last good probe was taken, and when a read last
        #: set it aside.
        self._reached_at = -math.inf
        self._set_aside_at = -math.inf
        #: The probe's own connection to each (outside the pools: searches holding every pooled connection must
        #: not keep the replica from being measured).
        self._probes: dict[str, Listening] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def serving(self) -> bool:
        """Usable at the last probe, and what it had replayed then is still within the bound now (or the primary
        was unreachable then): a probe that stalls does not keep it serving (it ends in ``max_lag``)."""
        if self.problem is not None:
            return False
        return self.primary_unreachable is not None or time.monotonic() - self._reached_at <= self.max_lag

    @property
    def busy(self) -> int:
        """Reads holding or waiting for one of its connections."""
        return self.database.usage()[0] + self.database.waiting()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._follow(), name=f"read-replica-lag {self.name}")

    async def stop(self) -> None:
        try:
            if self._task is not None:
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await self._task
        finally:
            for probe in self._probes.values():
                await probe.close()
            await self.database.close()

    def set_aside(self, error: RegistryError) -> None:
        """A read on the replica failed for want of the replica (unreachable, cancelled by a conflict with its
        recovery): reads go to the primary until a probe started after this finds it usable."""
        self._set_aside_at = time.monotonic()
        self._judge(None, f"a read failed on it ({error.__cause__ or error.detail})")

    async def _follow(self) -> None:
        while True:
            started = time.monotonic()
            try:
                async with asyncio.timeout(self.max_lag):
                    lag = await self._measure(started)
            except TimeoutError:
                self._judge(None, f"its lag could not be measured within {self.max_lag:g} s")
            except _Unusable as problem:
                self._judge(None, str(problem))
            except Exception as error:  # a probe must never end the monitor: the replica would serve unwatched
                log.exception("measuring the lag of the read replica %s failed", self.name)
                self._judge(None, f"its lag could not be measured ({error})")
            else:
                if self._set_aside_at < started:  # else a read failed on it while this probe ran
                    if isinstance(lag, _PrimaryUnreachable):
                        self._judge(None, None, primary_unreachable=lag.why)
                    else:
                        bound = f"{lag:.1f} s behind (bound {self.max_lag:g} s)"
                        self._judge(lag, None if lag <= self.max_lag else bound)
            await asyncio.sleep(self.probe_interval)

    async def _probe(self, database: Database, role: str, query: str) -> Any:
        """One row of ``query`` on the probe's own connection to ``database``, connected again once lost."""
        probe = self._probes.get(role)
        if probe is None or probe.lost.is_set():
            if probe is not None:
                await probe.close()
            probe = self._probes[role] = await database.dedicated(role)
        try:
            with translated():
                return await probe.connection.fetchrow(query)
        except BaseException:
            # A probe cut short (timed out, cancelled) leaves its connection mid-statement: start afresh.
            probe.connection.terminate()
            del self._probes[role]
            raise

    async def _measure(self, now: float) -> float | _PrimaryUnreachable:
        """Seconds behind the primary; or, the primary being unreachable, why (see the module's docstring)."""
        primary_unreachable = await self._note_primary_position(now)
        replayed, receiving, replayed_all = await self._replica_position()
        if primary_unreachable is not None:
            return self._without_primary(primary_unreachable, replayed, receiving, replayed_all)
        return self._lag_at(replayed)

    async def _note_primary_position(self, now: float) -> str | None:
        """Note the primary's WAL position at ``now`` (and what it has flushed); why it is unreachable, if it is."""
        try:
            # Half the bound: an unreachable primary host (no answer at all) leaves time to read the replica.
            async with asyncio.timeout(self.max_lag / 2):
                inserted, flushed = await self._probe(self.primary, "replica-probe", _PRIMARY_POSITION)
        except DatabaseUnavailable as error:
            return str(error.__cause__ or error.detail)
        except TimeoutError:
            return f"no answer within {self.max_lag / 2:g} s"
        except RegistryError as error:
            raise _Unusable(f"the primary's WAL position could not be read ({error.detail})") from error
        if self._positions and inserted < self._positions[-1][1]:
            self._positions.clear()  # another primary (a promoted replica): the old notes say nothing of it
        self._positions.append((now, _record_boundary(int(inserted))))
        self._flushed = _record_boundary(int(flushed))
        return None

    async def _replica_position(self) -> tuple[int, str | None, bool]:
        """The replica's replayed WAL position, its WAL receiver's status and whether it has replayed all it
        received; ``_Unusable`` unless it is a streaming replica with this code's schema."""
        try:
            if not self.database.is_open:
                await self.database.open()
            recovering, replayed, revision, receiving, replayed_all = await self._probe(
                self.database, "probe", _REPLICA_POSITION
            )
        except RegistryError as error:
            raise _Unusable(f"unreachable ({error.__cause__ or error.detail})") from error
        if not recovering or replayed is None:
            raise _Unusable("not a streaming replica (not in recovery): its lag cannot be measured")
        if revision != self.schema_revision:
            raise _Unusable(f"its schema is at revision {revision}, this code needs {self.schema_revision}")
        return replayed, receiving, replayed_all

    def _lag_at(self, replayed: int) -> float:
        """The age of the newest note of the primary's position the replica has reached at ``replayed``."""
        # The oldest note kept becomes the newest one the replica has reached.
        while len(self._positions) > 1 and self._positions[1][1] <= replayed:
            self._positions.popleft()
        reached_at, noted = self._positions[0]
        if noted > replayed:
            raise _Unusable("catching up: it has not replayed any WAL position noted since it was last usable")
        self._reached_at = reached_at
        return time.monotonic() - reached_at

    def _without_primary(
        self, why: str, replayed: int, receiving: str | None, replayed_all: bool
    ) -> _PrimaryUnreachable:
        """The replica serves while the primary is unreachable only if it has lost its primary too (a primary that
        merely refuses this process's probe still streams to it, and commits what it would miss), and has replayed
        all it received and everything the primary had flushed at the last probe that read it."""
        unreachable = f"the primary is unreachable ({why})"
        if receiving == "hidden":
            raise _Unusable(
                f"{unreachable}, and the replica's role cannot see whether it still streams from it "
                "(grant it pg_read_all_stats)"
            )
        if receiving == "streaming":
            raise _Unusable(f"{unreachable} from here, but the replica still streams from it")
        if not self._positions or replayed < self._flushed or not replayed_all:
            raise _Unusable(f"{unreachable}, and the replica had not replayed all the primary had written")
        return _PrimaryUnreachable(why)

    def _judge(self, lag: float | None, problem: str | None, *, primary_unreachable: str | None = None) -> None:
        if primary_unreachable is not None and self.primary_unreachable is None:
            log.warning(
                "the primary is unreachable (%s); the read replica %s serves searches with what it has replayed",
                primary_unreachable,
                self.name,
            )
        elif problem is None and (self.problem is not None or self.primary_unreachable is not None):
            log.info("the read replica %s serves searches (%.1f s behind the primary)", self.name, lag or 0)
        elif problem is not None and self.problem is None:
            log.warning("the read replica %s is set aside: %s", self.name, problem)
        self.lag, self.problem, self.primary_unreachable = lag, problem, primary_unreachable


@dataclasses.dataclass(frozen=True, slots=True)
class _PrimaryUnreachable:
    why: str


__all__ = ["PROBE_INTERVAL", "ReadReplica", "replica_names"]
