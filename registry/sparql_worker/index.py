"""The SPARQL index of a query worker: an on-disk oxigraph store (RocksDB), one named graph per description and their
union in the default graph, kept in step with the database by :class:`IndexFollower`, a consumer of the process's
one change feed.

Applying a change means "load the current RDF of that id" (idempotent and order-free), so a batch of changes is
one query for the current RDF of its ids, and a change delivered late by the feed is applied like any other.

The store lives in the data directory and remembers (``state.json`` beside it) which database it mirrors and the
last change it applied: a restarted worker (after a crash, a query killed for its time or memory, or a restart of
the server) opens it and applies the changes since, instead of rebuilding it. Only a new store, or one of another
database, is built from the stored RDF. Its memory is RocksDB's caches, not the catalogue: it does not grow with
the number of descriptions.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import datetime as dt
import fcntl
import heapq
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import pyoxigraph as ox

from registry.errors import RegistryError
from registry.events.feed import ChangeFeed
from registry.semantic.graphs import graph_name
from registry.store.changes import Change, latest_seq
from registry.store.database import Database
from registry.store.rdf import StoredRdf, all_current_rdf, current_rdf_of, expired_ids, lease_ends

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds the follower waits after a batch of changes, so that a burst of writes is applied in one go.
BATCH_DELAY = 0.05
_LOAD_BATCH = 500
#: Descriptions whose current RDF is read in one statement while catching up.
_APPLY_BATCH = 500
#: N-Triples written (bytes) after which the store's memtables are flushed to disk. RocksDB as oxigraph 0.5 opens it
#: (no options) flushes them on its own only when they are large: a bulk load grew the worker by ~90 MB per 1,000
#: descriptions (over 1 GB before the first flush; bench/bench_index_memory.py), past its memory limit at 10⁵.
#: Flushed every few MB, the memtables stay near ten times this.
FLUSH_AFTER_BYTES = 4 * 2**20
#: What the removal of a description counts for towards ``FLUSH_AFTER_BYTES`` (its deletion markers).
_REMOVAL_BYTES = 4096
#: Nice value of the thread that writes to the index. Keeping the index in step costs more CPU per description than
#: accepting it (1.3-2.8 ms against about 1 ms for validation, projections and PostgreSQL; bench/suite.py), and
#: the index follows the change log by design: under a bulk import the writes are acknowledged at the database's
#: pace and the index catches up behind them instead of taking half the machine from them. Queries, which run on
#: their own threads, keep their priority; on an idle machine the niceness changes nothing.
APPLY_NICENESS = 10
STATE_FILE = "state.json"
LOCK_FILE = "lock"
STORE_DIRECTORY = "store"


#: Takes a description out: its graph, and those of its triples in the default graph no other description has.
_REMOVAL = (
    "DELETE {{ ?s ?p ?o }} WHERE {{ GRAPH {graph} {{ ?s ?p ?o }} "
    "FILTER NOT EXISTS {{ GRAPH ?other {{ ?s ?p ?o }} FILTER(?other != {graph}) }} }} ; DROP GRAPH {graph} ; "
)

#: The "." that ends each N-Triples statement (one per line; literals cannot span lines): an N-Quads graph goes
#: before it.
_STATEMENT_END = re.compile(r"\.[ \t\r]*$", re.MULTILINE)
#: An IRI or a literal (group 1, left as it is), or a blank node label (group 2) in N-Triples.
_LITERAL_OR_BLANK_NODE = re.compile(r'(<[^>]*>|"(?:[^"\\]|\\.)*")|_:([A-Za-z0-9_][A-Za-z0-9_\-.]*)')


@dataclasses.dataclass(frozen=True, slots=True)
class IndexState:
    """What an on-disk index mirrors: a database (see :func:`database_identity`), up to a change position."""

    database: str
    position: int
    descriptions: int


class RdfIndex:
    """One named graph per description, and their union materialised in the default graph.

    oxigraph answers a query over its real default graph about three times faster than over the union of the
    named graphs, and its ``use_default_graph_as_union`` gives a bag, not the set union (a triple two descriptions
    share comes back twice; 0.5.13), so the union is kept at the price of a second copy of each triple on disk.
    A triple is taken out of the default graph only when no other description has it.
    Thread-safe (oxigraph stores are): queries run in worker threads while the follower applies changes.
    """

    def __init__(self, directory: Path | None = None, state: IndexState | None = None) -> None:
        """In memory without ``directory`` (tests); else the store in it, holding what ``state`` says."""
        self.directory = directory
        self.store = ox.Store() if directory is None else ox.Store(str(directory / STORE_DIRECTORY))
        self.state = state
        self.descriptions = 0 if state is None else state.descriptions
        self._lock: IO[str] | None = None
        #: Bytes written since the memtables were last flushed (see ``FLUSH_AFTER_BYTES``).
        self._unflushed = 0

    @classmethod
    def open(cls, directory: Path, database: str) -> RdfIndex:
        """The index in ``directory`` if it mirrors ``database`` (``state`` says up to where), else an empty one
        there (``state`` None: it must be built). A directory another process holds gives a temporary index."""
        directory.mkdir(parents=True, exist_ok=True)
        # Held while the index is open: another worker process on this data directory (``--workers``) must neither
        # open the store nor wipe it, and builds a temporary index of its own instead.
        lock = (directory / LOCK_FILE).open("a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            state = _read_state(directory / STATE_FILE)
            if state is not None and state.database != database:
                state = None
            if state is None:
                shutil.rmtree(directory / STORE_DIRECTORY, ignore_errors=True)
                with contextlib.suppress(FileNotFoundError):
                    (directory / STATE_FILE).unlink()
            index = cls(directory, state)
        except OSError as error:  # held by another worker process, or unreadable
            lock.close()
            fallback = Path(tempfile.mkdtemp(prefix="registry-sparql-"))
            log.warning("cannot open the SPARQL index in %s (%s); building one in %s", directory, error, fallback)
            return cls(fallback, None)
        index._lock = lock
        return index

    def close(self) -> None:
        """Let go of the on-disk store and its directory (another process may open them then)."""
        self.store = ox.Store()  # the on-disk store closes with its last reference
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def remember(self, database: str, position: int) -> None:
        """Record that every change up to ``position`` is applied (written atomically beside the store)."""
        self.state = IndexState(database, position, self.descriptions)
        if self.directory is None:
            return
        temporary = self.directory / (STATE_FILE + ".tmp")
        temporary.write_text(json.dumps(dataclasses.asdict(self.state)))
        os.replace(temporary, self.directory / STATE_FILE)

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
                self._add(graph, ntriples)
                self.descriptions += 1
            self._written(len(ntriples))

    def load(self, rows: Iterable[tuple[str, str]]) -> None:
        """Building (no query is answered yet): add descriptions that are not there yet with oxigraph's bulk
        loader, three times faster than a load per description but not atomic, and one parse for the whole batch:
        so blank node labels are made distinct per description first."""
        batch: list[str] = []
        for thing_id, ntriples in rows:
            if ntriples:
                ntriples = _blank_nodes_apart(ntriples, f"d{self.descriptions}x")
                batch.append(ntriples)
                batch.append(_STATEMENT_END.sub(f"{graph_name(thing_id)} .", ntriples))
                self.descriptions += 1
        if batch:
            self.store.bulk_load("\n".join(batch).encode(), ox.RdfFormat.N_QUADS)

    def _add(self, graph: ox.NamedNode, ntriples: str) -> None:
        # Its triples in the default graph and in its own graph as one N-Quads load (atomic, blank nodes renamed
        # as by INSERT DATA), a third cheaper than the SPARQL update.
        quads = _STATEMENT_END.sub(f"{graph} .", ntriples)
        self.store.load(ntriples + quads, ox.RdfFormat.N_QUADS, lenient=True)

    def remove(self, thing_ids: Iterable[str]) -> None:
        for thing_id in thing_ids:
            graph = graph_name(thing_id)
            if self.store.contains_named_graph(graph):
                self.store.update(_REMOVAL.format(graph=graph))
                self.descriptions -= 1
                self._written(_REMOVAL_BYTES)

    def _written(self, size: int) -> None:
        """Flush the memtables once enough is written since the last flush: bounds the store's memory."""
        self._unflushed += size
        if self._unflushed >= FLUSH_AFTER_BYTES and self.directory is not None:
            self.store.flush()
            self._unflushed = 0

    def clear(self) -> None:
        self.store.clear()
        self.descriptions = 0
        self.state = None

    def __len__(self) -> int:
        return len(self.store)


def _blank_nodes_apart(ntriples: str, prefix: str) -> str:
    """``ntriples`` with every blank node label prefixed (IRIs and literals untouched)."""
    return _LITERAL_OR_BLANK_NODE.sub(lambda match: match.group(1) or f"_:{prefix}{match.group(2)}", ntriples)


def _lower_priority() -> None:
    # Linux gives each thread its own nice value: this lowers the calling thread's only.
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), APPLY_NICENESS)


def _read_state(path: Path) -> IndexState | None:
    try:
        return IndexState(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


class IndexFollower:
    """Opens or builds an :class:`RdfIndex` and applies every change the feed delivers."""

    def __init__(self, database: Database, feed: ChangeFeed, index: RdfIndex, identity: str = "") -> None:
        """``identity``: the database's (:func:`database_identity`), recorded with the position applied."""
        self.database = database
        self.feed = feed
        self.index = index
        self.identity = identity
        #: Ids changed since they were last applied.
        self._pending: set[str] = set()
        #: Leased descriptions leave the index when their lease ends, not only when the purge deletes them.
        self._expiries: dict[str, dt.datetime] = {}
        self._expiry_heap: list[tuple[dt.datetime, str]] = []
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        #: Writes to the index run on one thread of low priority (see ``APPLY_NICENESS``).
        self._writer = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="index-writer", initializer=_lower_priority
        )

    async def start(self) -> None:
        """Build the index (or take up a stored one where it left off), then apply every change since."""
        if self.index.state is not None and self.index.state.position > await latest_seq(self.database):
            log.warning("the SPARQL index is ahead of the change log (a restored database?); rebuilding it")
            await self._in_background(self.index.clear)
        if self.index.state is None:
            position = await self._build(self.index)
        else:
            position = self.index.state.position
            await self._resume()
        self._unsubscribe = self.feed.subscribe(self._on_changes)
        await self.feed.start(position)
        self._task = asyncio.create_task(self._follow(), name="index-follower")
        await self.catch_up()

    async def _in_background(self, function: Callable[..., T], *arguments: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._writer, function, *arguments)

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.feed.stop()
        self._writer.shutdown(wait=False)

    async def catch_up(self) -> None:
        """Apply every change committed so far: a query sees every write acknowledged before it, on any replica."""
        await self.feed.sync()
        await self._apply_pending()

    def _on_changes(self, batch: Sequence[Change]) -> None:
        self._pending |= {change.thing_id for change in batch}
        self._wake.set()

    async def _build(self, index: RdfIndex) -> int:
        """Load the stored RDF of every live description; returns the change position the load reflects.

        The position is read before the RDF: a change committed in between is delivered by the feed too and
        applied again, which is harmless (applying is idempotent).
        """
        started = time.perf_counter()
        position = await latest_seq(self.database)
        expiries: dict[str, dt.datetime] = {}
        batch: list[tuple[str, str]] = []
        async for row in all_current_rdf(self.database):
            if row.expires is not None:
                expiries[row.thing_id] = row.expires
            batch.append((row.thing_id, row.ntriples))
            if len(batch) >= _LOAD_BATCH:
                await self._in_background(index.load, batch)
                batch = []
        await self._in_background(index.load, batch)
        self._expiries, self._expiry_heap = {}, []
        for thing_id, expires in expiries.items():
            self._track_expiry(thing_id, expires)
        index.remember(self.identity, position)
        log.info("SPARQL index built: %d descriptions in %.2f s", index.descriptions, time.perf_counter() - started)
        return position

    async def _resume(self) -> None:
        """A stored index: learn the leases still running, and drop descriptions whose lease ended meanwhile."""
        for thing_id, expires in await lease_ends(self.database):
            self._track_expiry(thing_id, expires)
        ended = await expired_ids(self.database)
        await self._in_background(self.index.remove, ended)
        log.info(
            "SPARQL index opened: %d descriptions, at change %d",
            self.index.descriptions,
            self.index.state.position if self.index.state else 0,
        )

    async def _apply_pending(self) -> None:
        async with self._lock:
            position = self.feed.position  # every change up to it is in _pending or applied
            while self._pending:
                ids = sorted(self._pending)[:_APPLY_BATCH]
                current = await current_rdf_of(self.database, ids)
                self._pending.difference_update(ids)  # kept for the next attempt if reading failed
                await self._in_background(self._apply, ids, current)
            await self._drop_expired()
            if self.index.state is None or position != self.index.state.position:
                await self._in_background(self.index.remember, self.identity, position)

    def _apply(self, ids: list[str], current: list[StoredRdf]) -> None:
        found = {row.thing_id: row.ntriples for row in current}
        for row in current:
            self._track_expiry(row.thing_id, row.expires)
        gone = [thing_id for thing_id in ids if thing_id not in found]
        for thing_id in gone:
            self._expiries.pop(thing_id, None)
        self.index.remove(gone)
        self.index.replace(found.items())

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
            await self._in_background(self.index.remove, due)

    async def _follow(self) -> None:
        """Apply changes as the feed delivers them (a burst at a time)."""
        while True:
            try:
                await self._wake.wait()
                await asyncio.sleep(BATCH_DELAY)
                self._wake.clear()
                await self._apply_pending()
            except asyncio.CancelledError:
                raise
            except RegistryError as error:  # the database is away: expected, no traceback
                log.warning("applying changes to the SPARQL index failed (%s); retrying", error.detail)
                self._wake.set()
                await asyncio.sleep(1)
            except Exception:
                log.exception("applying changes to the SPARQL index failed; retrying")
                self._wake.set()
                await asyncio.sleep(1)


__all__ = ["IndexFollower", "IndexState", "RdfIndex"]
