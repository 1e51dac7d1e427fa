"""The server side of the SPARQL worker: starts it, forwards queries, answers 503 while it (re)starts, replaces it
when a query outlives its timeout (see :mod:`registry.sparql.worker` for why queries run in another process).

A timed-out query costs only its own client:

- Queries reach the worker through :class:`FairSlots`: round-robin per client, each client held below the worker's
  concurrency, so one client's slow queries never hold every thread.
- A worker with a query stuck past its timeout is replaced without a gap (:mod:`registry.sparql.worker.generations`):
  it writes a checkpoint of its index (hard links), a standby worker (started ahead once the first query has come,
  its imports done) opens it and catches up, and only then is the old worker killed, after the other queries in
  flight in it were answered. The old worker serves the other clients meanwhile. The client of the stuck query is
  answered 503 at once, and its slot stays held until the old worker is gone, so that its next query runs in the
  new one.
- A worker that dies on its own (a crash, or a query past ``REGISTRY_SPARQL_MEMORY_LIMIT``) is replaced by the
  standby, which takes up the on-disk index where it was; the queries in flight in it are sent again to the new
  one once, except a query alone in flight in a worker that ran out of memory, which caused it.

One worker (and one on-disk index) per data directory, shared by the server processes of ``--workers N``: the
process that holds the lock file beside the index runs the worker and relays the queries of the others, which reach
it over a Unix socket (abstract, named after the index directory). When that process ends, another one takes the
lock and starts the worker, which takes up the on-disk index where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import logging
from http import HTTPStatus
from pathlib import Path
from typing import IO, Any

from registry.config import Settings
from registry.errors import RegistryError
from registry.ops.metrics import SPARQL_QUERIES, SPARQL_TIMEOUTS, SPARQL_WORKER_RESTARTS
from registry.sparql.query import Answer
from registry.sparql.worker.fairness import FairSlots
from registry.sparql.worker.processes import StuckIn, WorkerExited, WorkerProcess, spawn_worker, unavailable
from registry.sparql.worker.protocol import frame, read_frame
from registry.sparql.worker.relay import Relay, owner_lock
from registry.store.database import without_password
from registry.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: Seconds beyond the query timeout before the worker is taken to be stuck.
GRACE = 1.0
#: Seconds a query waits for a worker that is (re)starting or catching up before it is answered 503: long enough
#: for the standby to take over after a crash, short enough that a client is told to retry at once while the index
#: is built or catches up at start (which can take long).
READY_WAIT = 1.0
#: Times a query is sent to a worker at most when workers die under it for other queries.
ATTEMPTS = 3
#: Seconds a worker being replaced may take to write the checkpoint of its index, and its successor to open it and
#: catch up, before the worker is killed and its successor started on its index instead (a restart).
HANDOVER_WAIT = 10.0
#: Seconds between attempts of a process that does not run the worker to reach the one that does (or to take over).
RECONNECT_DELAY = 0.5
#: Seconds before a worker that exited before it caught up (it cannot start: the database is down, say) is started
#: again.
START_BACKOFF = 1.0


def _holds_an_index(directory: Path) -> bool:
    """Whether the index directory holds an index already (of this database or another one sharing it): a
    directory of one, beside the lock files of the processes that ran its worker."""
    try:
        return any(entry.is_dir() for entry in directory.iterdir())
    except OSError:
        return False


class QueryWorker:
    """The server side: schedules queries fairly, forwards them, answers 503 while the worker (re)starts, and
    replaces a worker in which a query is stuck (see the module's docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        #: The worker new calls go to (this process runs it); others may still be finishing their calls.
        self._worker: WorkerProcess | None = None
        self._workers: set[WorkerProcess] = set()
        #: A worker started ahead, waiting to be called on.
        self._standby: asyncio.subprocess.Process | None = None
        self._standby_task: asyncio.Task[None] | None = None
        #: Set at the first query: a process that is never asked a query starts no standby.
        self._queried = asyncio.Event()
        #: Set when the current worker is to be replaced.
        self._replace = asyncio.Event()
        self._retiring: set[asyncio.Task[None]] = set()
        #: Slots held for clients whose query is stuck in a worker being replaced.
        self._holding: set[asyncio.Task[None]] = set()
        self._ready = asyncio.Event()
        self._ids = itertools.count(1)
        self._slots = FairSlots(settings.sparql_concurrency, settings.sparql_queue)
        self._supervisor: asyncio.Task[None] | None = None
        #: Until when (event loop time) queries wait for a worker started by a query to answer.
        self._starting_until = 0.0
        self._stopping = False
        #: Set while this process runs the worker.
        self._owner_lock: IO[str] | None = None
        # One worker per index directory and database: directories of other databases sharing a data directory
        # (the default one, say) must neither relay to each other's worker nor answer from each other's index.
        database = without_password(settings.database_url)
        scope = f"{settings.sparql_index_path.resolve()}\0{database}"
        self._scope = hashlib.sha256(scope.encode()).hexdigest()[:24]
        #: The socket between the server processes: to the one that runs the worker, or of it.
        self._relay = Relay(f"\0lmos-registry-sparql-{self._scope}", self._ids)

    async def start(self) -> None:
        """Start the worker in the background (the rest of the API answers while its index catches up) when it
        starts eagerly: ``REGISTRY_SPARQL_START=eager``, or an index is already on disk. Otherwise the first query
        starts it."""
        if self.settings.sparql_start == "eager" or _holds_an_index(self.settings.sparql_index_path):
            self._begin()

    def _begin(self, *, by_a_query: bool = False) -> None:
        """Start supervising the worker, once; a query that starts it (and those that come while it starts) waits
        up to the query timeout for it to answer, instead of ``READY_WAIT``."""
        if self._supervisor is not None:
            return
        if by_a_query:
            self._starting_until = asyncio.get_running_loop().time() + self.settings.sparql_timeout
        self._supervisor = asyncio.create_task(self._supervise(), name="sparql-worker-supervisor")

    @property
    def idle(self) -> bool:
        """Whether the worker waits for the first query to start (``REGISTRY_SPARQL_START=on-demand``)."""
        return self._supervisor is None

    @property
    def ready(self) -> bool:
        """Whether queries are answered now (the index has caught up with the change log); for /readyz."""
        return self._ready.is_set()

    @property
    def runs_worker(self) -> bool:
        """Whether this process runs the worker (the others relay through it)."""
        return self._owner_lock is not None

    @property
    def unready_counts(self) -> bool:
        """The worker restarts and catches up by itself while the rest of the API serves: /readyz reports it as
        degraded, never as unready."""
        return False

    async def stop(self) -> None:
        self._stopping = True
        await cancel_and_wait(self._supervisor, self._standby_task, *self._retiring, *self._holding)
        await self._drop_standby()
        await self._kill_workers()
        self._relay.close()
        if self._owner_lock is not None:
            self._owner_lock.close()
            self._owner_lock = None

    async def _kill_workers(self) -> None:
        """Kill every worker of this process and wait (a little) until each has exited and let go of its index."""
        workers = list(self._workers)
        for worker in workers:
            worker.kill()
        for worker in workers:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(worker.exited.wait(), 5)

    def unready_reason(self) -> str | None:
        """Why the worker cannot answer queries now (None when it can, or when the first query starts it): for the
        readiness check."""
        if self.idle:
            return None
        if self.runs_worker:
            worker = self._worker
            if worker is None or worker.exited.is_set():
                return "the SPARQL worker process is restarting (it is restarted automatically)"
            return None if worker.answered.is_set() else "the SPARQL index is catching up with the catalogue"
        if not self._relay.connected:
            return "not connected to the process that runs the SPARQL worker (reconnecting)"
        return None if self._ready.is_set() else "the SPARQL index is catching up with the catalogue"

    async def query(
        self, query: str, accept: str, default_graphs: list[str], named_graphs: list[str], client: str = ""
    ) -> Answer:
        """Run the query for ``client`` (who it counts against for fairness: a principal or an address)."""
        SPARQL_QUERIES.inc()
        content, media_type = await self._call("query", [query, accept, default_graphs, named_graphs], client)
        return Answer(content, media_type)

    async def stats(self) -> dict[str, Any]:
        if self.idle:  # asking for figures does not start the worker
            raise unavailable("The SPARQL worker has not started: the first SPARQL query starts it")
        result: dict[str, Any] = await self._call("stats", [], "")
        return result

    async def _call(self, kind: str, arguments: list[Any], client: str) -> Any:
        if kind == "query":
            self._queried.set()
            self._begin(by_a_query=True)
        await self._until_ready()
        if not self.runs_worker:
            # The owner answers within its queue wait and the attempts it makes: wait a little longer than that.
            timeout = self._queue_wait + ATTEMPTS * (READY_WAIT + self.settings.sparql_timeout + GRACE + HANDOVER_WAIT)
            return await self._relay.forward(kind, arguments, client, timeout)
        if kind != "query":  # answered by the worker's event loop at once, without a query thread
            try:
                return await self._in_worker(kind, arguments)
            except StuckIn as stuck:
                raise stuck.problem from None
        await self._slots.acquire(client, self._queue_wait)
        held_on = False
        try:
            return await self._in_worker(kind, arguments)
        except StuckIn as stuck:
            # The client's slot is held until the worker with its stuck query is gone: its next query runs in the
            # next worker, never beside the stuck one.
            held_on = True
            self._hold_until_gone(client, stuck.worker)
            raise stuck.problem from None
        finally:
            if not held_on:
                self._slots.release(client)

    def _hold_until_gone(self, client: str, worker: WorkerProcess) -> None:
        async def hold() -> None:
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(worker.exited.wait(), HANDOVER_WAIT + GRACE)
            finally:
                self._slots.release(client)

        holding = asyncio.create_task(hold())
        self._holding.add(holding)
        holding.add_done_callback(self._holding.discard)

    @property
    def _queue_wait(self) -> float:
        """Seconds a query waits for its turn at most: a slot is free again within one query's time."""
        return self.settings.sparql_timeout + GRACE + READY_WAIT

    async def _until_ready(self) -> None:
        """Wait ``READY_WAIT`` at most for a worker that answers (longer while a query starts it); else 503 saying
        why."""
        if self.unready_reason() is not None:
            wait = max(READY_WAIT, self._starting_until - asyncio.get_running_loop().time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), wait)
        if reason := self.unready_reason():
            raise unavailable(reason[0].upper() + reason[1:])

    async def _in_worker(self, kind: str, arguments: list[Any]) -> Any:
        """Run a call in this process's worker; sent again to the next worker when the worker dies under it for
        another reason than this call (once, when it crashed with other calls in flight)."""
        crashes = 0
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return await self._send(kind, arguments)
            except WorkerExited as exited:
                crashes += exited.suspect
                if crashes > 1 or attempt == ATTEMPTS:
                    raise exited.problem from None
        raise AssertionError("unreachable")

    async def _send(self, kind: str, arguments: list[Any]) -> Any:
        await self._until_ready()
        worker = self._worker
        assert worker is not None
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        worker.pending[request_id] = future
        try:
            await worker.send([request_id, kind, arguments])
            return await asyncio.wait_for(asyncio.shield(future), self.settings.sparql_timeout + GRACE)
        except TimeoutError:
            worker.pending.pop(request_id, None)
            SPARQL_TIMEOUTS.inc()
            self._have_replaced(worker)
            problem = unavailable(
                f"The query did not finish within {self.settings.sparql_timeout:g} s (REGISTRY_SPARQL_TIMEOUT) "
                "and was stopped"
            )
            raise StuckIn(worker, problem) from None
        finally:
            worker.pending.pop(request_id, None)

    async def _request(self, worker: WorkerProcess, kind: str, arguments: list[Any]) -> Any:
        """A call to ``worker`` for this process's own use (no slot, no timeout: the caller bounds it)."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        worker.pending[request_id] = future
        try:
            await worker.send([request_id, kind, arguments])
            return await future
        finally:
            worker.pending.pop(request_id, None)

    def _have_replaced(self, worker: WorkerProcess) -> None:
        if worker is self._worker and not worker.replaced:
            log.warning("a SPARQL query outlived its timeout; replacing the query worker")
            worker.replaced = True
            self._replace.set()

    def _set_ready(self, ready: bool) -> None:
        """Whether queries are answered now, told to the processes relaying through this one as well."""
        if ready:
            self._ready.set()
        else:
            self._ready.clear()
        self._relay.tell_ready(ready)

    # -- running the workers

    def _take_over(self) -> bool:
        """Take the lock of the worker's runner if no other process holds it."""
        self._owner_lock = owner_lock(self.settings.sparql_index_path, self._scope)
        return self._owner_lock is not None

    async def _supervise(self) -> None:
        """Run the worker, starting the next one whenever it exits, until the server stops; or, while another
        process runs it, relay through that one (and take over when it ends)."""
        while not self._stopping:
            if not self.runs_worker and not self._take_over():
                await self._relay.through_owner(
                    lambda reader, pending: self._read_answers(reader, pending, None), self._ready.clear
                )
                await asyncio.sleep(RECONNECT_DELAY)
                continue
            if self._relay.server is None:
                await self._relay.open(self._call, self._ready.is_set)
            try:
                worker = await self._serve_with_workers()
            except Exception:
                log.exception("running the SPARQL worker failed; starting it again")
                await self._kill_workers()
                await asyncio.sleep(START_BACKOFF)
                continue
            if self._stopping:
                return
            SPARQL_WORKER_RESTARTS.inc()
            if not worker.killed and not worker.answered.is_set():
                log.warning("the SPARQL worker exited with %s before it answered", worker.process.returncode)
                await asyncio.sleep(START_BACKOFF)  # do not spin on a worker that cannot start

    async def _serve_with_workers(self) -> WorkerProcess:
        """Start a worker on the index in use and replace it whenever a query is stuck in it; returns the worker
        that exited (crashed, or killed without a successor)."""
        worker = await self._call_on(None)
        self._make_current(worker)
        while True:
            replace = asyncio.ensure_future(self._replace.wait())
            assert worker.watcher is not None
            await asyncio.wait({worker.watcher, replace}, return_when=asyncio.FIRST_COMPLETED)
            replace.cancel()
            if worker.exited.is_set():
                return worker
            self._replace.clear()
            successor = await self._successor_of(worker)
            if successor is None:
                worker.kill()  # a restart: the standby takes up the index where the worker leaves it
                continue
            self._make_current(successor)
            retiring = asyncio.create_task(self._retire(worker, successor))
            self._retiring.add(retiring)
            retiring.add_done_callback(self._retiring.discard)
            worker = successor
            SPARQL_WORKER_RESTARTS.inc()

    async def _successor_of(self, worker: WorkerProcess) -> WorkerProcess | None:
        """A worker on a checkpoint of ``worker``'s index, caught up; None when that fails (in time)."""
        successor: WorkerProcess | None = None
        try:
            async with asyncio.timeout(HANDOVER_WAIT):
                generation = await self._request(worker, "checkpoint", [])
                successor = await self._call_on(generation)
                assert successor.watcher is not None
                answered = asyncio.ensure_future(successor.answered.wait())
                await asyncio.wait({answered, successor.watcher}, return_when=asyncio.FIRST_COMPLETED)
                answered.cancel()
        except (TimeoutError, RegistryError, WorkerExited, OSError) as error:
            log.warning("the SPARQL worker could not hand over its index (%r); restarting it", error)
        if successor is not None and successor.answered.is_set() and not successor.exited.is_set():
            return successor
        if successor is not None:
            successor.kill()
            await successor.exited.wait()
        return None

    async def _retire(self, worker: WorkerProcess, successor: WorkerProcess) -> None:
        """Kill a replaced worker once the other calls in flight in it are answered (within ``GRACE``; those left
        are sent again to its successor), then have its successor remove its index generation."""
        if worker.pending:  # no call comes in now: it is no longer the current worker
            await asyncio.wait(list(worker.pending.values()), timeout=GRACE)
        worker.kill()
        await worker.exited.wait()
        if not successor.exited.is_set():
            with contextlib.suppress(RegistryError, WorkerExited, ConnectionError, TimeoutError):
                async with asyncio.timeout(HANDOVER_WAIT):
                    await self._request(successor, "tidy", [])

    def _make_current(self, worker: WorkerProcess) -> None:
        self._worker = worker
        self._set_ready(worker.answered.is_set())

    async def _call_on(self, generation: str | None) -> WorkerProcess:
        """Start a worker (the standby, when there is one) on ``generation`` of the index (None: the one in use)."""
        standby, self._standby = self._standby, None
        process = standby if standby is not None and standby.returncode is None else await spawn_worker(self.settings)
        worker = WorkerProcess(process)
        with contextlib.suppress(WorkerExited):  # a standby that died waiting: its watcher sees it exit
            await worker.send([0, "start", generation])
        worker.watcher = asyncio.create_task(self._watch(worker), name="sparql-worker-watcher")
        self._workers.add(worker)
        if self._standby_task is None or self._standby_task.done():
            # After a handover (a query past its timeout, maybe one of a series) the next standby is started at once;
            # after a start or a crash, once this worker answers and a query has come: not while it opens or builds
            # its index, and not at all in a process that is never asked a query.
            first = None if generation is not None else worker
            self._standby_task = asyncio.create_task(self._prepare_standby(first), name="sparql-standby")
        return worker

    async def _prepare_standby(self, after: WorkerProcess | None) -> None:
        """Start the next worker while the current one serves (once ``after`` answers, if given, and the first query
        has come): its imports take long, and a worker replaced for a query's timeout may soon be replaced again."""
        if after is not None:
            assert after.watcher is not None
            await self._queried.wait()
            answered = asyncio.ensure_future(after.answered.wait())
            await asyncio.wait({answered, after.watcher}, return_when=asyncio.FIRST_COMPLETED)
            answered.cancel()
            if not after.answered.is_set():
                return  # it could not start: the next one is started afresh
        if self._standby is None and not self._stopping:
            try:
                self._standby = await spawn_worker(self.settings)
            except OSError:
                log.exception("the standby SPARQL worker cannot be started; the next restart starts one")

    async def _drop_standby(self) -> None:
        standby, self._standby = self._standby, None
        if standby is not None and standby.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                standby.kill()
            await standby.wait()

    async def _watch(self, worker: WorkerProcess) -> None:
        """Read the worker's answers until it exits, then settle the calls still in flight in it."""
        assert worker.process.stdout is not None
        try:
            await self._read_answers(worker.process.stdout, worker.pending, worker)
        finally:
            if worker.process.returncode is None:  # its answers ended: it is exiting (or stopped answering)
                with contextlib.suppress(ProcessLookupError):
                    worker.process.kill()
            await worker.process.wait()
            if not self._stopping and not worker.replaced:
                log.warning("the SPARQL worker exited with %s; starting the next one", worker.process.returncode)
            worker.settle_exited()
            self._workers.discard(worker)
            worker.exited.set()
            if worker is self._worker:
                self._set_ready(False)

    async def _read_answers(
        self, reader: asyncio.StreamReader, pending: dict[int, asyncio.Future[Any]], worker: WorkerProcess | None
    ) -> None:
        """Settle ``pending`` calls with the answers from ``reader`` until it ends; frame 0 tells readiness (of
        ``worker``, or of the process this one relays through)."""
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                request_id, status, payload = await read_frame(reader)
                if request_id == 0:
                    if worker is None:
                        self._set_ready(payload is not False)
                    else:
                        worker.answered.set()
                        if worker is self._worker:
                            self._set_ready(True)
                    continue
                future = pending.get(request_id)
                if future is None or future.done():
                    continue
                if status == "ok":
                    future.set_result(payload)
                else:
                    code, detail, headers, extra = payload
                    error = RegistryError(detail, headers=headers, **extra)
                    error.status = HTTPStatus(code)
                    future.set_exception(error)


__all__ = ["QueryWorker", "WorkerExited", "frame", "read_frame"]
