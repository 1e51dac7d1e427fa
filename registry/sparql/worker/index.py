"""The SPARQL index of a query worker: an on-disk oxigraph store (RocksDB), one named graph per description, kept
in step with the database by :class:`IndexFollower`, a consumer of the process's one change feed
(:mod:`registry.sparql.worker.follower` says how changes are applied).

The store lives in the data directory and remembers (``state.json`` beside it) which database it mirrors, the last
change it applied and the layout it was written in: a restarted worker (after a crash, a query killed for its time
or memory, or a restart of the server) opens it and applies the changes since, instead of rebuilding it. Only a new
store, one of another database or one of an older layout is built from the stored RDF. Its memory is RocksDB's
caches, not the catalogue: it does not grow with the number of descriptions.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import pyoxigraph as ox

from registry.events.feed import ChangeFeed
from registry.semantic.graphs import DistinctBlankNodes, graph_name, quads_in
from registry.sparql.worker.follower import ChangeFollower, SkippedDescriptions
from registry.store.database import Database
from registry.store.rdf import same_history

log = logging.getLogger(__name__)

#: N-Triples written (bytes) after which the store's memtables are flushed to disk. RocksDB as oxigraph 0.5 opens it
#: (no options) flushes them on its own only when they are large: a bulk load grows the worker with every description
#: until then, past its memory limit for a large catalogue (bench/bench_index_memory.py; docs/performance.md).
#: Flushed every few MB, the memtables stay near ten times this.
FLUSH_AFTER_BYTES = 4 * 2**20
#: New descriptions in one batch from which :meth:`RdfIndex.replace` bulk-loads them (a burst the index catches up
#: on). With RocksDB's compactions after them, bursts of this size cost less CPU per description bulk-loaded than
#: loaded one by one (bench/bench_index_replace.py); smaller batches cost more bulk-loaded, each being an ingestion
#: (docs/performance.md).
BULK_FROM = 100
#: Characters of N-Triples of the new descriptions in one batch from which they are bulk-loaded all the same, however
#: few: a large description costs about half the CPU bulk-loaded that it costs in a transaction, while a small one
#: costs several times more bulk-loaded (compactions after them counted; docs/performance.md).
BULK_FROM_CHARACTERS = 2 * 2**20
#: What the removal of a description counts for towards ``FLUSH_AFTER_BYTES`` (its deletion markers).
_REMOVAL_BYTES = 4096
#: Nice value of the thread that writes to the index. Keeping the index in step costs more CPU per description than
#: accepting it (validation, projections and PostgreSQL; bench/suite.py), and
#: the index follows the change log by design: under a bulk import the writes are acknowledged at the database's
#: pace and the index catches up behind them instead of taking half the machine from them. Queries, which run on
#: their own threads, keep their priority; on an idle machine the niceness changes nothing.
APPLY_NICENESS = 10
STATE_FILE = "state.json"
#: How the store holds descriptions. 1: each also copied into the default graph (the union, materialised); 2: only
#: in its own graph, the union being the engine's (``SparqlEngine``); 3: each graph holds only the description's
#: statements about itself (a store of layout 2 may hold what a description said about others). A store of another
#: layout is rebuilt.
LAYOUT = 3
LOCK_FILE = "lock"
STORE_DIRECTORY = "store"


@dataclasses.dataclass(frozen=True, slots=True)
class IndexState:
    """What an on-disk index mirrors: a database (see :func:`database_identity`), up to a change position, in which
    ``LAYOUT`` (a state written before layouts were recorded is of layout 1)."""

    database: str
    position: int
    descriptions: int
    layout: int = 1
    #: Descriptions left out because their RDF cannot be loaded (see ``SkippedDescriptions``).
    skipped: tuple[str, ...] = ()


class RdfIndex:
    """One named graph per description; queries see their union as the default graph (``SparqlEngine``).

    The union is not materialised in the store's default graph: a copy of every triple there adds a large share
    to the CPU of writing a description, and taking a description out of it looks up each of its triples in every
    other graph, a cost that grows with the index (bench/bench_index_replace.py), while a query over the union of
    the named graphs costs about what it costs over a copy in the default graph (bench/bench_semantic.py). Writing
    and taking out a description cost in proportion to it, not to the index.
    Thread-safe (oxigraph stores are): queries run in worker threads while the follower applies changes.
    """

    def __init__(self, directory: Path | None = None, state: IndexState | None = None) -> None:
        """In memory without ``directory`` (tests); else the store in it, holding what ``state`` says."""
        self.directory = directory
        self.store = ox.Store() if directory is None else ox.Store(str(directory / STORE_DIRECTORY))
        self.state = state
        self.descriptions = 0 if state is None else state.descriptions
        self.skipped = SkippedDescriptions("SPARQL index", () if state is None else state.skipped)
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
            if state is not None and state.layout != LAYOUT:
                log.warning("the SPARQL index in %s is of an older layout; rebuilding it", directory)
                state = None
            if state is not None and not same_history(state.database, database):
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

    def checkpoint(self, target: Path) -> None:
        """A copy of the index in ``target`` (a new directory), holding what ``state`` says: the store's files are
        hard-linked, not copied (RocksDB's checkpoint, after a flush of its memtables)."""
        if self.directory is None or self.state is None:
            raise ValueError("only an on-disk index that has recorded its position can be copied")
        target.mkdir(parents=True)
        self.store.backup(str(target / STORE_DIRECTORY))
        (target / STATE_FILE).write_text(json.dumps(dataclasses.asdict(self.state)))

    def remember(self, database: str, position: int) -> None:
        """Record that every change up to ``position`` is applied (written atomically beside the store)."""
        self.state = IndexState(database, position, self.descriptions, LAYOUT, tuple(self.skipped.reasons))
        if self.directory is None:
            return
        temporary = self.directory / (STATE_FILE + ".tmp")
        temporary.write_text(json.dumps(dataclasses.asdict(self.state)))
        os.replace(temporary, self.directory / STATE_FILE)

    def replace(self, rows: Iterable[tuple[str, str]]) -> None:
        """Put (or put back) descriptions, each in one atomic update: queries never see half of one.

        ``BULK_FROM`` new descriptions or more (a burst of registrations the index catches up on), or new ones of
        ``BULK_FROM_CHARACTERS`` of RDF or more, are added together with oxigraph's bulk loader instead
        (:meth:`load`), which skips the memtables. Every path parses strictly, so a description is indexed or left
        out (``skipped``) the same way whichever path takes it; one left out never stops the others.
        """
        new: list[tuple[str, str]] = []
        for thing_id, ntriples in rows:
            graph = graph_name(thing_id)
            if not self.store.contains_named_graph(graph):
                if ntriples:
                    new.append((thing_id, ntriples))
                else:
                    self.skipped.taken([thing_id])
            elif ntriples:
                self._put_back(thing_id, graph, ntriples)
            else:
                self._remove(graph)
                self.skipped.taken([thing_id])
        if len(new) >= BULK_FROM or sum(len(ntriples) for _, ntriples in new) >= BULK_FROM_CHARACTERS:
            self.load(new)
            return
        for thing_id, ntriples in new:
            # A load (atomic, blank nodes renamed as by INSERT DATA): a third cheaper than an update.
            try:
                self.store.load(ntriples, ox.RdfFormat.N_TRIPLES, to_graph=graph_name(thing_id))
            except (SyntaxError, ValueError) as error:
                self.skipped.skip(thing_id, error)
                continue
            self.skipped.taken([thing_id])
            self.descriptions += 1
            self._written(len(ntriples))

    def _put_back(self, thing_id: str, graph: ox.NamedNode, ntriples: str) -> None:
        """Replace the description in ``graph``; one whose new RDF cannot be loaded is taken out (what the graph
        holds is no longer what the directory serves) and left out."""
        try:
            self.store.update(f"DROP GRAPH {graph} ; INSERT DATA {{ GRAPH {graph} {{ {ntriples} }} }}")
        except (SyntaxError, ValueError) as error:
            self._remove(graph)
            self.skipped.skip(thing_id, error)
            return
        self.skipped.taken([thing_id])
        self._written(len(ntriples))

    def load(self, rows: Iterable[tuple[str, str]]) -> None:
        """Add descriptions that are not there yet with oxigraph's bulk loader: it sorts their index entries and
        writes them to files, ingested all at once when it commits (atomic: queries see all or none of them).
        One parse for the whole batch, so each description's blank node labels are kept distinct from the others'
        first (:class:`DistinctBlankNodes`).

        A batch the loader refuses (a description whose RDF does not parse) is loaded again without the
        descriptions that do not parse on their own, which are left out (``skipped``)."""
        batch: list[tuple[str, str]] = []
        apart = DistinctBlankNodes()
        for thing_id, ntriples in rows:
            if ntriples:
                batch.append((thing_id, quads_in(graph_name(thing_id), apart.of(ntriples))))
        if not batch:
            return
        try:
            self.store.bulk_load("\n".join(quads for _, quads in batch).encode(), ox.RdfFormat.N_QUADS)
        except (SyntaxError, ValueError):
            batch = self._load_parsing(batch)
        self.skipped.taken(thing_id for thing_id, _ in batch)
        self.descriptions += len(batch)

    def _load_parsing(self, batch: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Load the descriptions of ``batch`` (id, N-Quads) that parse, leaving out the others; the loaded ones."""
        loadable = [(thing_id, quads) for thing_id, quads in batch if self._parses(thing_id, quads)]
        try:
            if loadable:
                self.store.bulk_load("\n".join(quads for _, quads in loadable).encode(), ox.RdfFormat.N_QUADS)
            return loadable
        except (SyntaxError, ValueError):
            pass
        # What parses alone but not in one load with the others: one load each (each atomic).
        return [(thing_id, quads) for thing_id, quads in loadable if self._loads_alone(thing_id, quads)]

    def _parses(self, thing_id: str, quads: str) -> bool:
        """Whether a description's N-Quads parse; one that does not is left out (``skipped``)."""
        try:
            for _ in ox.parse(quads, ox.RdfFormat.N_QUADS):
                pass
        except (SyntaxError, ValueError) as error:
            self.skipped.skip(thing_id, error)
            return False
        return True

    def _loads_alone(self, thing_id: str, quads: str) -> bool:
        """Load one description's N-Quads on their own; one the store refuses is left out (``skipped``)."""
        try:
            self.store.load(quads, ox.RdfFormat.N_QUADS)
        except (SyntaxError, ValueError) as error:
            self.skipped.skip(thing_id, error)
            return False
        return True

    def remove(self, thing_ids: Iterable[str]) -> None:
        for thing_id in thing_ids:
            graph = graph_name(thing_id)
            if self.store.contains_named_graph(graph):
                self._remove(graph)
            self.skipped.taken([thing_id])

    def _remove(self, graph: ox.NamedNode) -> None:
        self.store.remove_graph(graph)
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
        self.skipped.reasons.clear()
        self.state = None

    def __len__(self) -> int:
        return len(self.store)


def _lower_priority() -> None:
    """The calling thread and RocksDB's flush and compaction threads (``rocksdb:*``, which do the rest of the
    index's writing: after a bulk import, a core for minutes) run at ``APPLY_NICENESS``. Linux gives each thread
    its own nice value; elsewhere this does nothing."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), APPLY_NICENESS)
        for task in Path("/proc/self/task").iterdir():
            with contextlib.suppress(OSError):  # a thread that has ended
                if (task / "comm").read_text().startswith("rocksdb:"):
                    os.setpriority(os.PRIO_PROCESS, int(task.name), APPLY_NICENESS)


def _read_state(path: Path) -> IndexState | None:
    try:
        state = IndexState(**json.loads(path.read_text()))
        return dataclasses.replace(state, skipped=tuple(str(thing_id) for thing_id in state.skipped))
    except (OSError, ValueError, TypeError):
        return None


class IndexFollower(ChangeFollower):
    """Opens or builds an :class:`RdfIndex` and applies every change the feed delivers, on a thread of low
    priority (``APPLY_NICENESS``)."""

    def __init__(
        self, database: Database, feed: ChangeFeed, index: RdfIndex, identity: str = "", defer: float = 0.0
    ) -> None:
        super().__init__(database, feed, identity, defer)
        self.index = index
        self._writer = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="index-writer", initializer=_lower_priority
        )

    async def stop(self) -> None:
        await super().stop()
        self._writer.shutdown(wait=False)

    async def checkpoint(self, target: Path) -> None:
        """Copy the index into ``target`` between two batches of changes (see :meth:`RdfIndex.checkpoint`). The
        memtables are flushed first, on a thread of its own and without holding back changes or the queries that
        wait for them: the checkpoint's own flush is then short."""
        await asyncio.to_thread(self.index.store.flush)
        async with self._lock:
            await self._in_background(self.index.checkpoint, target)

    async def _in_background(self, function: Callable[..., None], *arguments: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(self._writer, function, *arguments)

    async def _position(self) -> int | None:
        return None if self.index.state is None else self.index.state.position

    async def _clear(self) -> None:
        await self._in_background(self.index.clear)

    async def _load(self, rows: list[tuple[str, str]]) -> None:
        await self._in_background(self.index.load, rows)

    async def _write(self, gone: list[str], current: dict[str, str], position: int | None) -> None:
        await self._in_background(self._write_now, gone, current, position)

    def _write_now(self, gone: list[str], current: dict[str, str], position: int | None) -> None:
        self.index.remove(gone)
        self.index.replace(current.items())
        if position is not None and (self.index.state is None or position != self.index.state.position):
            self.index.remember(self.identity, position)


__all__ = ["IndexFollower", "IndexState", "RdfIndex"]
