"""The SPARQL index (held by each server's query worker): an in-memory oxigraph store, one named graph per
description and their union in the default graph.

Built from the stored RDF at start-up and kept in step with the change log by :class:`ChangeFollower`: LISTEN on
``registry_changes`` (with a periodic poll as fallback) wakes it, and :meth:`ChangeFollower.catch_up` is also
awaited before every query, so a query sees every write committed before it started, on any replica.

Change sequences are taken from an identity column, so a transaction can commit after one with a higher seq.
Applying a change therefore means "load the current RDF of that id" (idempotent, order-free), and seqs missing
from a poll are asked for again for :data:`GAP_PATIENCE` seconds before they are taken as rolled back.

oxigraph's in-memory store never frees the space of removed triples (about 45 kB per replaced description), so
after as many changes as there are descriptions (at least :data:`COMPACT_AFTER`) the follower builds a fresh
index from the stored RDF in the background and swaps it in (:meth:`ChangeFollower.compact`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import heapq
import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import asyncpg
import pyoxigraph as ox
from sqlalchemy import BigInteger, Text, any_, bindparam, func, literal_column, or_, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from registry.semantic.projector import graph_name
from registry.store.statements import DriverStatement, driver_connection
from registry.store.tables import changes, description_rdf, descriptions
from registry.store.things import CHANGES_CHANNEL

log = logging.getLogger(__name__)

#: Seconds a missing change seq is polled for before it is taken as a rolled-back transaction.
GAP_PATIENCE = 120.0
#: How far below the start-up position missing seqs are looked for.
GAP_WINDOW = 10_000
#: Seconds the follower waits after a NOTIFY, so that a burst of writes is applied in one poll.
BATCH_DELAY = 0.05
#: Changes applied before the index is rebuilt (or as many as there are descriptions, if more).
COMPACT_AFTER = 10_000


#: Takes a description out: its graph, and those of its triples in the default graph no other description has.
_REMOVAL = (
    "DELETE {{ ?s ?p ?o }} WHERE {{ GRAPH {graph} {{ ?s ?p ?o }} "
    "FILTER NOT EXISTS {{ GRAPH ?other {{ ?s ?p ?o }} FILTER(?other != {graph}) }} }} ; DROP GRAPH {graph} ; "
)

#: The "." that ends each N-Triples statement (one per line; literals cannot span lines): an N-Quads graph goes
#: before it.
_STATEMENT_END = re.compile(r"\.[ \t\r]*$", re.MULTILINE)


class RdfIndex:
    """One named graph per description, and their union materialised in the default graph.

    oxigraph answers a query over its real default graph about three times faster than over the union of the
    named graphs (7 ms instead of 21 ms for the capability query on 10,000 descriptions), at the price of a second
    copy of each triple. A triple is taken out of the default graph only when no other description has it.
    Thread-safe (oxigraph stores are): queries run in worker threads while the follower applies changes.
    """

    def __init__(self) -> None:
        self.store = ox.Store()
        self.descriptions = 0

    def replace(self, rows: Iterable[tuple[str, str]]) -> None:
        """Put (or put back) descriptions, each in one atomic update: queries never see half of one."""
        for thing_id, ntriples in rows:
            graph = graph_name(thing_id)
            if self.store.contains_named_graph(graph):
                self.store.update(
                    _REMOVAL.format(graph=graph)
                    + f"INSERT DATA {{ GRAPH {graph} {{ {ntriples} }} }} ; ADD {graph} TO DEFAULT"
                )
            elif ntriples:
                # A new description: its triples in the default graph and in its own graph as one N-Quads load
                # (atomic too, blank nodes renamed as by INSERT DATA), a third cheaper than the SPARQL update.
                quads = _STATEMENT_END.sub(f"{graph} .", ntriples)
                self.store.load(ntriples + quads, ox.RdfFormat.N_QUADS, lenient=True)
                self.descriptions += 1

    def load(self, rows: Iterable[tuple[str, str]]) -> None:
        """Start-up: bulk load into named graphs (no description is there yet); then :meth:`union`."""
        for thing_id, ntriples in rows:
            graph = graph_name(thing_id)
            self.store.load(ntriples, ox.RdfFormat.N_TRIPLES, to_graph=graph, lenient=True)
            self.descriptions += 1

    def union(self) -> None:
        self.store.update("INSERT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }")

    def remove(self, thing_ids: Iterable[str]) -> None:
        for thing_id in thing_ids:
            graph = graph_name(thing_id)
            if self.store.contains_named_graph(graph):
                self.store.update(_REMOVAL.format(graph=graph))
                self.descriptions -= 1

    def __len__(self) -> int:
        return len(self.store)


class ChangeFollower:
    def __init__(self, engine: AsyncEngine, index: RdfIndex, *, poll_interval: float = 2.0) -> None:
        self.engine = engine
        self.index = index
        self.poll_interval = poll_interval
        self.position = 0
        self._gaps: dict[int, float] = {}
        #: Leased descriptions leave the index when their lease ends, not only when the purge deletes them.
        self._expiries: dict[str, dt.datetime] = {}
        self._expiry_heap: list[tuple[dt.datetime, str]] = []
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Descriptions replaced or removed since the index was built; see :meth:`compact`.
        self.churn = 0
        #: Called with the new index after :meth:`compact` (the query engine moves to its store).
        self.on_swap: list[Callable[[RdfIndex], None]] = []

    async def start(self) -> None:
        self._install(*await self._build(self.index))
        self._task = asyncio.create_task(self._follow())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def catch_up(self) -> None:
        """Apply every change committed so far (one indexed query when there is none)."""
        async with self._lock:
            await self._poll()
            await self._drop_expired()

    async def compact(self) -> None:
        """Build a fresh index from the stored RDF and swap it in: oxigraph's in-memory store keeps the memory of
        every replaced or removed triple, so an index that has seen much churn is rebuilt (queries go on against
        the old one meanwhile)."""
        fresh = RdfIndex()
        state = await self._build(fresh)
        async with self._lock:
            self._install(fresh, *state[1:])
            await self._poll()
            await self._drop_expired()
        for listener in self.on_swap:
            listener(fresh)

    def _install(
        self, index: RdfIndex, position: int, gaps: dict[int, float], expiries: dict[str, dt.datetime]
    ) -> None:
        self.index = index
        self.position = position
        self._gaps = gaps
        self._expiries = {}
        self._expiry_heap = []
        for thing_id, expires in expiries.items():
            self._track_expiry(thing_id, expires)
        self.churn = 0

    async def _build(self, index: RdfIndex) -> tuple[RdfIndex, int, dict[int, float], dict[str, dt.datetime]]:
        started = time.perf_counter()
        expiries: dict[str, dt.datetime] = {}
        async with self.engine.connect() as plain:
            # One snapshot for the position, the seqs below it and the RDF: nothing is counted twice or lost.
            connection = await plain.execution_options(isolation_level="REPEATABLE READ")
            position = int((await connection.execute(select(func.coalesce(func.max(changes.c.seq), 0)))).scalar_one())
            recent = (
                await connection.execute(select(changes.c.seq).where(changes.c.seq > position - GAP_WINDOW))
            ).all()
            query = _current_rdf().execution_options(yield_per=500)
            batch: list[tuple[str, str]] = []
            async for row in await connection.stream(query):
                if row.expires is not None:
                    expiries[row.thing_id] = row.expires
                batch.append((row.thing_id, row.ntriples))
                if len(batch) >= 500:
                    await asyncio.to_thread(index.load, batch)
                    batch = []
            await asyncio.to_thread(index.load, batch)
        await asyncio.to_thread(index.union)
        seen = {row.seq for row in recent}
        now = time.monotonic()
        gaps = {seq: now for seq in range(max(1, position - GAP_WINDOW + 1), position + 1) if seq not in seen}
        log.info(
            "SPARQL index built: %d descriptions, %d quads (named graphs and their union) in %.2f s",
            index.descriptions,
            len(index),
            time.perf_counter() - started,
        )
        return index, position, gaps, expiries

    async def _poll(self) -> None:
        """Apply the changes after ``position`` and those of missing seqs that have committed since."""
        async with self.engine.connect() as connection:
            # Precompiled, on the driver: this runs after every burst of writes and before every query.
            driver = await driver_connection(connection)
            rows = await driver.fetch(_CHANGED.sql, *_CHANGED.arguments(after=self.position, gaps=list(self._gaps)))
            if not rows:
                self._expire_gaps()
                return
            ids = sorted({row["thing_id"] for row in rows})
            current = await driver.fetch(_CURRENT_RDF_OF.sql, *_CURRENT_RDF_OF.arguments(ids=ids))
        found = {row["thing_id"]: row["ntriples"] for row in current}
        for row in current:
            self._track_expiry(row["thing_id"], row["expires"])
        gone = [thing_id for thing_id in ids if thing_id not in found]
        for thing_id in gone:
            self._expiries.pop(thing_id, None)
        await asyncio.to_thread(self._apply, found, gone)
        seqs = {row["seq"] for row in rows}
        now = time.monotonic()
        for seq in seqs:
            self._gaps.pop(seq, None)
        highest = max(seqs)
        for seq in range(self.position + 1, highest):
            if seq not in seqs:
                self._gaps[seq] = now
        self.position = max(self.position, highest)
        self._expire_gaps()

    def _track_expiry(self, thing_id: str, expires: dt.datetime | None) -> None:
        if expires is None:
            self._expiries.pop(thing_id, None)
        elif self._expiries.get(thing_id) != expires:
            self._expiries[thing_id] = expires
            heapq.heappush(self._expiry_heap, (expires, thing_id))

    async def _drop_expired(self) -> None:
        now = dt.datetime.now(dt.UTC)
        due: list[str] = []
        while self._expiry_heap and self._expiry_heap[0][0] <= now:
            expires, thing_id = heapq.heappop(self._expiry_heap)
            if self._expiries.get(thing_id) == expires:  # else renewed or gone since
                del self._expiries[thing_id]
                due.append(thing_id)
        if due:
            await asyncio.to_thread(self.index.remove, due)

    def _apply(self, found: dict[str, str], gone: list[str]) -> None:
        self.churn += len(found) + len(gone)
        self.index.remove(gone)
        self.index.replace(found.items())

    def _expire_gaps(self) -> None:
        deadline = time.monotonic() - GAP_PATIENCE
        for seq in [seq for seq, since in self._gaps.items() if since < deadline]:
            del self._gaps[seq]

    async def _follow(self) -> None:
        """Wait for a NOTIFY (or the poll interval), then catch up; reconnect the listener when it drops."""
        listener: Any = None
        while True:
            try:
                if listener is None or listener.is_closed():
                    listener = await _listen(self.engine, self._wake.set)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.poll_interval)
                # Gather a burst of writes into one poll; queries do not wait for this, they catch up themselves.
                await asyncio.sleep(BATCH_DELAY)
                self._wake.clear()
                await self.catch_up()
                if self.churn > max(COMPACT_AFTER, self.index.descriptions):
                    await self.compact()
            except asyncio.CancelledError:
                if listener is not None:
                    with contextlib.suppress(Exception):
                        await listener.close()
                raise
            except Exception:
                log.exception("following the change log failed; retrying in %s s", self.poll_interval)
                listener = None
                await asyncio.sleep(self.poll_interval)


def _current_rdf() -> Any:
    """Stored RDF of live descriptions, with the end of their lease."""
    live = or_(descriptions.c.expires.is_(None), descriptions.c.expires > literal_column("now()"))
    return (
        select(description_rdf.c.thing_id, description_rdf.c.ntriples, descriptions.c.expires)
        .join(descriptions, descriptions.c.id == description_rdf.c.thing_id)
        .where(live)
    )


#: Changes after a position, and those of seqs that were missing (uncommitted) at an earlier poll.
_CHANGED = DriverStatement.of(
    select(changes.c.seq, changes.c.thing_id).where(
        or_(
            changes.c.seq > bindparam("after", type_=BigInteger),
            changes.c.seq == any_(bindparam("gaps", type_=ARRAY(BigInteger))),
        )
    )
)
_CURRENT_RDF_OF = DriverStatement.of(
    _current_rdf().where(description_rdf.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text))))
)


async def _listen(engine: AsyncEngine, wake: Any) -> Any:
    url = engine.url.set(drivername="postgresql")
    connection = await asyncpg.connect(make_url(url).render_as_string(hide_password=False))
    await connection.add_listener(CHANGES_CHANNEL, lambda *_: wake())
    return connection
