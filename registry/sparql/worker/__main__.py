"""The SPARQL worker process (``python -m registry.sparql.worker``): builds its index, follows the change feed and
answers the queries its server forwards over stdin/stdout (length-prefixed msgpack frames). It starts as a
standby: it loads its modules, then waits for the server's start frame before it opens the database and the index."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import resource
import sys
from pathlib import Path
from typing import Any

from registry.config import Settings
from registry.errors import RegistryError, ServiceUnavailable
from registry.events.feed import ChangeFeed
from registry.lifecycle import die_with_parent
from registry.ops.logs import configure_logging
from registry.sparql.query import SparqlEngine
from registry.sparql.worker.follower import QUIET
from registry.sparql.worker.generations import current_generation, make_current, next_generation, remove_unused
from registry.sparql.worker.index import IndexFollower, RdfIndex
from registry.sparql.worker.protocol import frame, read_frame
from registry.store.database import APPLICATION_NAME, Database
from registry.store.rdf import database_identity, database_part

log = logging.getLogger(__name__)

#: The worker's share of a replica's connection budget: one pooled connection and its LISTEN connection.
WORKER_CONNECTIONS = 2
#: Seconds between two reads of the change log by the worker's feed at least, while the index defers bursts: well
#: inside ``QUIET``, so that a burst still reads as one.
FEED_READ_INTERVAL = QUIET / 4
#: Seconds a query waits for the index to apply the writes acknowledged before it (at most half its timeout).
CATCH_UP_WAIT = 5.0


_OUT_OF_MEMORY = (
    "The query needed more memory than the SPARQL worker may use (REGISTRY_SPARQL_MEMORY_LIMIT); narrow it or add LIMIT"
)


def limit_memory(megabytes: int) -> None:
    """Bound the worker's address space: a query that would need more fails (or the worker dies and is started
    again, taking up its on-disk index where it left off) instead of the machine running out of memory."""
    if megabytes > 0:
        limit = megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


async def _serve() -> None:
    """The worker: build the index, follow the change log, answer queries until stdin closes."""
    settings = Settings.from_env()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb"))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(1, "wb"))
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    # Started as a standby, the worker waits here (its imports done) until the server calls on it: the worker before
    # it holds the index until then.
    try:
        _, _, generation = await read_frame(reader)
    except (asyncio.IncompleteReadError, ConnectionError):
        return

    database = Database(settings.database_url, connections=WORKER_CONNECTIONS, name=f"{APPLICATION_NAME}-sparql")
    await database.open()
    identity = await database_identity(database)
    # Named after the database alone (not its first change), so that an index started on an empty database is
    # still found once the database has changes.
    base = settings.sparql_index_path / hashlib.sha256(database_part(identity).encode()).hexdigest()[:16]
    directory = Path(generation) if generation else current_generation(base)
    index = await asyncio.to_thread(RdfIndex.open, directory, identity)
    # Changes held back during a burst need not be read as each one commits: reading the log on every notification
    # costs the worker about twice the CPU per PUT of reading it at most every ``FEED_READ_INTERVAL``, PostgreSQL's
    # share of the reads besides.
    read_interval = FEED_READ_INTERVAL if settings.sparql_index_defer else 0.0
    feed = ChangeFeed(database, poll_interval=settings.feed_poll_interval, read_interval=read_interval, diffs=False)
    follower = IndexFollower(database, feed, index, identity, defer=settings.sparql_index_defer)
    await follower.start()
    sparql = SparqlEngine(
        index.store,
        timeout=settings.sparql_timeout,
        max_results=settings.sparql_max_results,
        service_allowlist=settings.sparql_service_allowlist,
        abandon_on_timeout=False,
        concurrency=settings.sparql_concurrency,
        queue=settings.sparql_queue,
    )
    if index.directory == directory:  # not a temporary index (another process holds this one)
        await asyncio.to_thread(make_current, base, directory)
        if not generation:
            await asyncio.to_thread(remove_unused, base)  # left by a server that stopped during a handover
    writer.write(frame([0, "ready", None]))
    calls = _Calls(settings, base, follower, sparql, writer)

    tasks: set[asyncio.Task[None]] = set()
    try:
        while True:
            try:
                request_id, kind, arguments = await read_frame(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                return  # the server went away
            task = asyncio.create_task(calls.answer(request_id, kind, arguments))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    finally:
        await follower.stop()
        sparql.close()
        await database.close()


class _Calls:
    """What the worker answers: queries (once the index has the writes acknowledged before them), its statistics,
    and the checkpoint of its index for the worker that replaces it."""

    def __init__(
        self,
        settings: Settings,
        base: Path,
        follower: IndexFollower,
        sparql: SparqlEngine,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.settings = settings
        self.base = base
        self.follower = follower
        self.sparql = sparql
        self.writer = writer
        #: Catch-ups that queries stopped waiting for, running to their end.
        self._catching_up: set[asyncio.Task[None]] = set()

    async def answer(self, request_id: int, kind: str, arguments: list[Any]) -> None:
        try:
            message = [request_id, "ok", await self._payload(kind, arguments)]
        except RegistryError as error:
            message = [request_id, "error", [int(error.status), error.detail, error.headers, error.extra]]
        except MemoryError:
            message = [request_id, "error", [503, _OUT_OF_MEMORY, {"Retry-After": "1"}, {}]]
        except Exception:
            log.exception("SPARQL request failed")
            message = [request_id, "error", [500, "The SPARQL query failed; the error has been logged", {}, {}]]
        self.writer.write(frame(message))

    async def _payload(self, kind: str, arguments: list[Any]) -> Any:
        if kind == "stats":
            state = self.follower.index.state
            return {
                "indexedDescriptions": self.follower.index.descriptions,
                "indexPosition": 0 if state is None else state.position,  # what it applied
                "pendingDescriptions": self.follower.pending,
                "queriesRunning": self.sparql.running,
                "skippedDescriptions": len(self.follower.index.skipped),
                "skippedTotal": self.follower.index.skipped.total,
            }
        if kind == "checkpoint":  # for the worker that replaces this one
            target = next_generation(self.base)
            await self.follower.checkpoint(target)
            return str(target)
        if kind == "tidy":  # the worker this one replaced is gone
            await asyncio.to_thread(remove_unused, self.base)
            return None
        await self._caught_up()
        result = await self.sparql.run(*arguments)
        return [result.content, result.media_type]

    async def _caught_up(self) -> None:
        """Wait until every write acknowledged before now is applied, within a bound: after a bulk import the
        index may be many changes behind (it applies them at low priority), and a query that waited for all of
        them would outlive its timeout and have the worker killed, losing the progress since the last position
        remembered. Past the bound the query is told to come back; its catch-up goes on."""
        catch_up = asyncio.create_task(self.follower.catch_up())
        self._catching_up.add(catch_up)
        catch_up.add_done_callback(self._settled)
        done, _ = await asyncio.wait({catch_up}, timeout=min(CATCH_UP_WAIT, self.settings.sparql_timeout / 2))
        if not done:
            raise ServiceUnavailable(
                "The SPARQL index is still applying recent writes (after a bulk import it catches up behind "
                "them); retry shortly",
                headers={"Retry-After": "5"},
            )
        catch_up.result()

    def _settled(self, catch_up: asyncio.Task[None]) -> None:
        self._catching_up.discard(catch_up)
        if not catch_up.cancelled():
            catch_up.exception()  # retrieved: a failure is the waiting query's answer, or retried by the follower


def main() -> None:
    settings = Settings.from_env()
    configure_logging(settings.log_level, settings.log_format, process="sparql-worker")
    die_with_parent()  # also while building the index, before it reads its stdin (which closes then too)
    sys.stdout = sys.stderr  # fd 1 carries the protocol: nothing else may write to it
    limit_memory(settings.sparql_memory_limit)
    asyncio.run(_serve())
    _exit_now()


def _exit_now() -> None:
    """End the process without waiting for query threads stuck in native code; a coverage measurement under way
    (the test suite's) is saved first, as a normal exit would."""
    with contextlib.suppress(ImportError):
        import coverage

        measurement = coverage.Coverage.current()
        if measurement is not None:
            measurement.stop()
            measurement.save()
    os._exit(0)


if __name__ == "__main__":
    main()
