"""``/search/sparql`` from an external store, in every replica; and the election of the one replica that pushes.

Every replica keeps one connection of its own (``lmos-registry-sparql-lock``) on which it tries, every second, to
take a PostgreSQL advisory lock. The holder pushes (:class:`registry.sparql.store.pusher.StorePusher`, with a pool
of 2 connections of its own like the local query worker); when it dies, its session ends, the lock is free and
another replica takes over within a second, taking up the store's copy where its marker says.

A query is screened as for the local index, then waits (at most ``CATCH_UP_WAIT``) until the store's copy reflects
every change committed before it (the pushing replica catches up itself; the others read the store's marker), so a
query sees every write acknowledged before it, on any replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import pyoxigraph as ox

from registry.config import Settings
from registry.errors import RegistryError, ServiceUnavailable
from registry.events.feed import ChangeFeed
from registry.ops.metrics import SPARQL_QUERIES, SPARQL_TIMEOUTS
from registry.sparql.query import (
    Answer,
    QueryTimeout,
    dataset_graphs,
    graph_answer,
    results_answer,
    screen,
    solution_count,
    too_many,
    with_prefixes,
)
from registry.sparql.store.pusher import StorePusher
from registry.sparql.store.store import LAYOUT, RESULTS_TYPES, SparqlStore, StoreState, StoreUnavailable
from registry.store.changes import latest_seq
from registry.store.database import APPLICATION_NAME, Database, Listening, translated
from registry.store.rdf import database_identity, names_first_change
from registry.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: The pusher's advisory lock (PostgreSQL scopes advisory locks to one database).
PUSHER_LOCK = 0x6C6D6F73_73746F72  # "lmosstor"
#: Connections of the pushing replica's own pool: one pooled, one for its change feed's LISTEN.
PUSHER_CONNECTIONS = 2
#: Seconds between a replica's attempts to take over pushing, and its reads of the store's marker.
POLL_INTERVAL = 1.0
#: Seconds a query waits for the store to catch up with the change log before it is answered 503.
CATCH_UP_WAIT = 10.0
_CATCH_UP_RETRY = 0.05
_UNION_HINT = (
    "the external SPARQL store does not use the union of its named graphs as its default graph, so queries without "
    "GRAPH find nothing: start it so (oxigraph serve --union-default-graph; Fuseki: tdb2:unionDefaultGraph true)"
)


class StoreEndpoint:
    """The :class:`registry.sparql.query.SparqlBackend` of an external store."""

    def __init__(self, settings: Settings, database: Database) -> None:
        self.settings = settings
        self.database = database
        self.store = SparqlStore(settings)
        #: Set while this replica pushes.
        self.pusher: StorePusher | None = None
        #: The store's state as last read, and whether its default graph is the union (None: not known yet).
        self._state: StoreState | None = None
        self._union: bool | None = None
        self._identity: str | None = None
        self._behind_since: float | None = None
        self._running = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Follow the store (and push when this replica holds the lock) in the background."""
        self._task = asyncio.create_task(self._supervise(), name="sparql-store")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        await self.store.close()

    @property
    def ready(self) -> bool:
        return self.unready_reason() is None

    @property
    def idle(self) -> bool:
        """Never: the store is pushed every write from the start."""
        return False

    @property
    def unready_counts(self) -> bool:
        """A store that is down, misconfigured or left behind needs the operator: the replica reports unready."""
        return True

    def unready_reason(self) -> str | None:
        if self.store.failure is not None:
            return self.store.failure
        if self._position() is None:
            return "the external SPARQL store does not hold a copy of this database yet (it is being built)"
        if self._union is False:
            return _UNION_HINT
        if self._behind_since is not None and time.monotonic() - self._behind_since > self.settings.ready_max_feed_lag:
            return (
                f"the external SPARQL store has been behind the change log for more than "
                f"{self.settings.ready_max_feed_lag:g} s (REGISTRY_READY_MAX_FEED_LAG)"
            )
        return None

    async def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "indexPosition": self._position() or 0,
            "queriesRunning": self._running,
            "externalStore": self.settings.sparql_store_query_url,
            "pushedByThisReplica": self.pusher is not None,
        }
        if self.pusher is not None:  # what the store leaves out is known where it is pushed from
            stats |= {"skippedDescriptions": len(self.pusher.skipped), "skippedTotal": self.pusher.skipped.total}
        return stats

    async def query(
        self, query: str, accept: str, default_graphs: list[str], named_graphs: list[str], client: str = ""
    ) -> Answer:
        SPARQL_QUERIES.inc()
        screened = screen(query, self.settings.sparql_service_allowlist)
        if not default_graphs and not named_graphs:
            # The query's own dataset, as protocol parameters: a store whose default graph is the union of its
            # graphs (what this directory needs of it) ignores a query's FROM clauses, but honours these.
            default_graphs, named_graphs = list(screened.default_graphs), list(screened.named_graphs)
        dataset_graphs([*default_graphs, *named_graphs])
        await self._catch_up()
        self._running += 1
        try:
            content, media_type = await self.store.query(
                with_prefixes(query), default_graphs, named_graphs, self.settings.sparql_max_results
            )
        except QueryTimeout:
            SPARQL_TIMEOUTS.inc()
            raise
        finally:
            self._running -= 1
        return await asyncio.to_thread(self._answer, content, media_type, accept)

    def _answer(self, content: bytes, media_type: str, accept: str) -> Answer:
        """The store's answer in the format the client asked for, within ``REGISTRY_SPARQL_MAX_RESULTS``."""
        limit = self.settings.sparql_max_results
        try:
            if media_type in RESULTS_TYPES:
                if solution_count(content) > limit:
                    raise too_many(limit)
                return results_answer(content, accept)
            triples = [quad.triple for quad in ox.parse(content, format=ox.RdfFormat.N_TRIPLES)]
        except (ValueError, SyntaxError) as error:
            raise StoreUnavailable(f"The SPARQL store's answer cannot be read: {error}") from error
        if len(triples) > limit:
            raise too_many(limit)
        return graph_answer(triples, accept)

    def _position(self) -> int | None:
        """The change position of this database's copy in the store, as far as this replica knows."""
        if self.pusher is not None:
            return None if self.pusher.state is None else self.pusher.state.position
        state = self._state
        current = state is not None and state.database == self._identity and state.layout == LAYOUT
        return state.position if state is not None and current else None

    async def _identify(self) -> None:
        """Read the database's identity (again while it has no change: its first one completes the identity)."""
        if self._identity is None or not names_first_change(self._identity):
            self._identity = await database_identity(self.database)

    async def _catch_up(self) -> None:
        """Wait until the store reflects every change committed before now."""
        if self.pusher is not None:
            await self.pusher.catch_up()
            return
        await self._identify()
        target = await latest_seq(self.database)
        deadline = time.monotonic() + CATCH_UP_WAIT
        while (position := self._position()) is None or position < target:
            if time.monotonic() > deadline:
                raise ServiceUnavailable(
                    "The external SPARQL store has not caught up with the catalogue; retry shortly",
                    headers={"Retry-After": "2"},
                )
            await asyncio.sleep(_CATCH_UP_RETRY)
            self._state = await self.store.state()

    # -- following the store, and pushing while this replica holds the lock

    async def _supervise(self) -> None:
        lock: Listening | None = None
        try:
            while True:
                try:
                    await self._identify()
                    if lock is None:
                        lock = await self.database.dedicated("sparql-lock")
                    with translated():
                        locked = await lock.try_lock(PUSHER_LOCK)
                    if locked:
                        held, lock = lock, None
                        await self._push(held)  # until the lock is lost or pushing fails; releases the lock
                    await self._observe()
                except RegistryError as error:  # the database or the store is away: expected, no traceback
                    log.warning("following the external SPARQL store failed (%s); retrying", error.detail)
                except Exception:
                    log.exception("following the external SPARQL store failed; retrying")
                if lock is not None and lock.lost.is_set():
                    await lock.close()
                    lock = None
                await asyncio.sleep(POLL_INTERVAL)
        finally:
            if lock is not None:
                await lock.close()

    async def _push(self, lock: Listening) -> None:
        assert self._identity is not None
        database = Database(
            self.settings.database_url, connections=PUSHER_CONNECTIONS, name=f"{APPLICATION_NAME}-sparql"
        )
        try:
            await database.open()
            pusher = StorePusher(
                database,
                ChangeFeed(database, poll_interval=self.settings.feed_poll_interval, diffs=False),
                self.store,
                self._identity,
            )
            try:
                await pusher.start()
                self.pusher = pusher
                log.info("this replica pushes to the external SPARQL store (at change %s)", self._position())
                while not lock.lost.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(lock.lost.wait(), POLL_INTERVAL)
                    await self._observe()
                    if not await pusher.holds_its_copy():
                        log.warning(
                            "the external SPARQL store lost (part of) its copy (%s); taking it up again", self._state
                        )
                        return
            finally:
                self.pusher = None
                await pusher.stop()
        finally:
            await database.close()
            await lock.close()  # another replica may take over

    async def _observe(self) -> None:
        """Read the store's marker (and once whether its default graph is the union), and how far behind it is."""
        await self._identify()
        self._state = await self.store.state()
        if self._union is None and self._state is not None:
            self._union = await self.store.union_default_graph()
            if not self._union:
                log.warning(_UNION_HINT)
        position, latest = self._position(), await latest_seq(self.database)
        if position is not None and position >= latest:
            self._behind_since = None
        elif self._behind_since is None:
            self._behind_since = time.monotonic()


__all__ = ["PUSHER_LOCK", "StoreEndpoint"]
