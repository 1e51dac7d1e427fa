"""The change feed: every committed change of the shared database, in sequence order, once per process.

One PostgreSQL ``LISTEN registry_changes`` connection per process wakes a reader that fetches the rows of the
``changes`` log after the last delivered sequence and hands them to the consumers (the SSE hub, later the RDF
index). The log is the source of truth, the notification only a wake-up call: after a lost connection the reader
catches up from the log, and a periodic poll covers notifications lost in between.

Sequences are taken before commit, so a transaction may commit after a later one. The reader delivers strictly in
order: a missing sequence holds back the ones after it until it commits, or until ``gap_timeout`` says it never
will (its transaction rolled back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from registry.store.changes import Change, latest_seq, read_changes
from registry.store.things import CHANGES_CHANNEL

log = logging.getLogger(__name__)

#: Receives each batch of changes, in order. Called on the event loop: must not block (queue work instead).
Consumer = Callable[[Sequence[Change]], None]

#: Re-read this soon while a sequence is missing.
_GAP_RETRY = 0.02
_BATCH = 500


def listen_url(database_url: str) -> str:
    """The database URL as plain ``postgresql://`` for a raw asyncpg connection."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


class ChangeFeed:
    def __init__(
        self,
        engine: AsyncEngine,
        database_url: str,
        *,
        poll_interval: float = 5.0,
        gap_timeout: float = 2.0,
        reconnect_delay: float = 1.0,
    ) -> None:
        self.engine = engine
        self.database_url = listen_url(database_url)
        self.poll_interval = poll_interval
        self.gap_timeout = gap_timeout
        self.reconnect_delay = reconnect_delay
        #: Sequence of the last change delivered; consumers see every change after it.
        self.position = 0
        self._consumers: list[Consumer] = []
        self._wake = asyncio.Event()
        self._gap_since: float | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def subscribe(self, consumer: Consumer) -> Callable[[], None]:
        """Feed ``consumer`` every change after ``position``; returns the function that stops it."""
        self._consumers.append(consumer)
        return lambda: self._consumers.remove(consumer)

    async def start(self) -> None:
        async with self.engine.connect() as connection:
            self.position = await latest_seq(connection)
        self._tasks = [
            asyncio.create_task(self._listen(), name="change-feed-listen"),
            asyncio.create_task(self._read(), name="change-feed-read"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    # -- the LISTEN connection

    def _on_notification(self, connection: Any, pid: int, channel: str, payload: object) -> None:
        with contextlib.suppress(ValueError):
            if int(str(payload)) <= self.position:
                return
        self._wake.set()

    async def _listen(self) -> None:
        while True:
            try:
                await self._listen_once()
                log.warning("change feed lost its LISTEN connection; reconnecting")
            except Exception as error:  # whatever broke, keep trying: the poll covers the meantime
                log.warning("change feed cannot LISTEN (%r); retrying in %s s", error, self.reconnect_delay)
            await asyncio.sleep(self.reconnect_delay)

    async def _listen_once(self) -> None:
        """Listen until the connection is lost."""
        lost = asyncio.Event()
        connection = await asyncpg.connect(self.database_url, server_settings={"application_name": "registry-feed"})
        try:
            connection.add_termination_listener(lambda _connection: lost.set())
            await connection.add_listener(CHANGES_CHANNEL, self._on_notification)
            self._wake.set()  # catch up on whatever was written while not listening
            await lost.wait()
        finally:
            if not connection.is_closed():
                connection.terminate()

    # -- the reader

    async def _read(self) -> None:
        timeout = self.poll_interval
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            self._wake.clear()
            try:
                waiting = await self._catch_up()
            except Exception:
                log.exception("change feed failed to read the change log; retrying")
                waiting = False
                await asyncio.sleep(self.reconnect_delay)
            timeout = _GAP_RETRY if waiting else self.poll_interval

    async def _catch_up(self) -> bool:
        """Deliver everything committed after ``position``; True while held back by a missing sequence."""
        while True:
            async with self.engine.connect() as connection:
                page = await read_changes(connection, self.position, limit=_BATCH)
            ready = self._in_order(page)
            if ready:
                self.position = ready[-1].seq
                self._deliver(ready)
            if len(ready) < len(page):
                return True
            if len(page) < _BATCH:
                return False

    def _in_order(self, page: list[Change]) -> list[Change]:
        ready: list[Change] = []
        expected = self.position + 1
        for change in page:
            if change.seq != expected:
                now = time.monotonic()
                if self._gap_since is None:
                    self._gap_since = now
                if now - self._gap_since < self.gap_timeout:
                    break
                log.debug("change sequences %d..%d never committed; skipping them", expected, change.seq - 1)
            self._gap_since = None
            ready.append(change)
            expected = change.seq + 1
        return ready

    def _deliver(self, batch: Sequence[Change]) -> None:
        for consumer in list(self._consumers):
            try:
                consumer(batch)
            except Exception:
                log.exception("change feed consumer %r failed", consumer)


__all__ = ["ChangeFeed", "Consumer", "listen_url"]
