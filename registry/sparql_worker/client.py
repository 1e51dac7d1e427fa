"""The server side of the SPARQL worker: starts it, forwards queries, answers 503 while it (re)starts, kills it when
a query outlives its timeout (see :mod:`registry.sparql_worker` for why queries run in another process).

One worker (and one on-disk index) per data directory, shared by the server processes of ``--workers N``: the
process that holds the lock file beside the index runs the worker and relays the queries of the others, which reach
it over a Unix socket (abstract, named after the index directory). When that process ends, another one takes the
lock and starts the worker, which takes up the on-disk index where it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import itertools
import logging
import os
import signal
import socket
import struct
import sys
from http import HTTPStatus
from typing import IO, Any

import msgspec
from sqlalchemy.engine import make_url

from registry.config import Settings
from registry.errors import RegistryError, ServiceUnavailable
from registry.lifecycle import child_environment
from registry.metrics import SPARQL_QUERIES, SPARQL_TIMEOUTS, SPARQL_WORKER_RESTARTS
from registry.semantic.sparql import Answer

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")
#: Seconds beyond the query timeout before the worker is taken to be stuck.
GRACE = 1.0
#: Seconds a query waits for a worker that is starting before it is answered 503 (an empty index is ready in
#: about a second; on a loaded machine catching up with a few thousand descriptions took over 5 s, and a query
#: that waits is better served than one told to retry; a large index that has to catch up still answers 503).
READY_WAIT = 30.0
#: Seconds between attempts of a process that does not run the worker to reach the one that does (or to take over).
RECONNECT_DELAY = 0.5
#: Held by the server process that runs the worker, beside the index directories (``owner.lock.<scope>``: one per
#: database).
OWNER_LOCK = "owner.lock"


async def read_frame(reader: asyncio.StreamReader) -> Any:
    header = await reader.readexactly(_HEADER.size)
    return msgspec.msgpack.decode(await reader.readexactly(_HEADER.unpack(header)[0]))


def _unavailable(reason: str) -> ServiceUnavailable:
    return ServiceUnavailable(f"{reason}; retry shortly", headers={"Retry-After": "2"})


def frame(message: Any) -> bytes:
    payload = msgspec.msgpack.encode(message)
    return _HEADER.pack(len(payload)) + payload


class QueryWorker:
    """The server side: forwards queries, answers 503 while the worker (re)starts, kills it when it is stuck."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._process: asyncio.subprocess.Process | None = None
        #: Where queries go: the worker's stdin (this process runs it) or the socket to the process that does.
        self._channel: asyncio.StreamWriter | None = None
        self._ready = asyncio.Event()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False
        #: Set while this process runs the worker: the lock, the relay for the other processes and their connections.
        self._owner_lock: IO[str] | None = None
        self._relay: asyncio.Server | None = None
        self._peers: set[asyncio.StreamWriter] = set()
        # One worker per index directory and database: directories of other databases sharing a data directory
        # (the default one, say) must neither relay to each other's worker nor answer from each other's index.
        database = make_url(settings.database_url).set(password=None).render_as_string()
        scope = f"{settings.sparql_index_path.resolve()}\0{database}"
        self._scope = hashlib.sha256(scope.encode()).hexdigest()[:24]
        self._socket_name = f"\0lmos-registry-sparql-{self._scope}"

    async def start(self) -> None:
        """Start the worker in the background: the rest of the API answers while its index catches up."""
        self._supervisor = asyncio.create_task(self._supervise(), name="sparql-worker-supervisor")

    @property
    def ready(self) -> bool:
        """Whether queries are answered now (the index has caught up with the change log); for /readyz."""
        return self._ready.is_set()

    @property
    def runs_worker(self) -> bool:
        """Whether this process runs the worker (the others relay through it)."""
        return self._owner_lock is not None

    async def stop(self) -> None:
        self._stopping = True
        self._kill()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        if self._relay is not None:
            self._relay.close()
            for peer in list(self._peers):
                peer.close()
        if self._owner_lock is not None:
            self._owner_lock.close()
            self._owner_lock = None

    def unready_reason(self) -> str | None:
        """Why the worker cannot answer queries now (None when it can): for the readiness check."""
        if self._channel is None or self._channel.is_closing():
            if not self.runs_worker:
                return "not connected to the process that runs the SPARQL worker (reconnecting)"
            return "the SPARQL worker process is not running (it is restarted automatically)"
        if not self._ready.is_set():
            return "the SPARQL index is catching up with the catalogue"
        return None

    async def query(self, query: str, accept: str, default_graphs: list[str], named_graphs: list[str]) -> Answer:
        SPARQL_QUERIES.inc()
        content, media_type = await self._call("query", [query, accept, default_graphs, named_graphs])
        return Answer(content, media_type)

    async def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._call("stats", [])
        return result

    async def _call(self, kind: str, arguments: list[Any]) -> Any:
        if not self._ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), READY_WAIT)
        channel = self._channel
        if not self._ready.is_set() or channel is None:
            raise _unavailable("The SPARQL index is catching up with the catalogue")
        if channel.is_closing():
            # The worker (or the process running it) went away and this process has not noticed yet (writing
            # would raise RuntimeError).
            raise _unavailable("The SPARQL worker is restarting")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        # A relayed query is timed (and its worker killed) by the process running the worker: wait a little longer
        # for its answer.
        timeout = self.settings.sparql_timeout + GRACE * (1 if self.runs_worker else 2)
        try:
            channel.write(frame([request_id, kind, arguments]))
            await channel.drain()
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            SPARQL_TIMEOUTS.inc()
            if self.runs_worker:
                log.warning("a SPARQL query outlived its timeout; restarting the query worker")
                self._kill()
            raise _unavailable(
                f"The query did not finish within {self.settings.sparql_timeout:g} s (REGISTRY_SPARQL_TIMEOUT) "
                "and was stopped"
            ) from None
        except ConnectionError as error:
            raise _unavailable("The SPARQL worker is restarting") from error
        finally:
            self._pending.pop(request_id, None)

    def _kill(self) -> None:
        """Kill the worker if this process runs it (a process relaying through another cannot)."""
        self._set_ready(False)
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()

    def _set_ready(self, ready: bool) -> None:
        """Whether queries are answered now, told to the processes relaying through this one as well."""
        if ready:
            self._ready.set()
        else:
            self._ready.clear()
        for peer in list(self._peers):
            if not peer.is_closing():
                peer.write(frame([0, "ready", ready]))

    def _take_over(self) -> bool:
        """Take the lock of the worker's runner if no other process holds it."""
        directory = self.settings.sparql_index_path
        directory.mkdir(parents=True, exist_ok=True)
        lock = (directory / f"{OWNER_LOCK}.{self._scope}").open("a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            return False
        self._owner_lock = lock
        return True

    async def _supervise(self) -> None:
        """Run the worker, starting it again whenever it exits (killed, crashed), until the server stops; or, while
        another process runs it, relay through that one (and take over when it ends)."""
        while not self._stopping:
            if not self.runs_worker and not self._take_over():
                await self._relay_through_owner()
                await asyncio.sleep(RECONNECT_DELAY)
                continue
            if self._relay is None:
                await self._open_relay()
            started = asyncio.get_running_loop().time()
            try:
                returncode = await self._run_once()
            except OSError:
                log.exception("the SPARQL worker cannot be started; retrying")
                returncode = None
            if self._stopping:
                return
            if asyncio.get_running_loop().time() - started < 5:
                log.warning("the SPARQL worker exited with %s soon after it started; retrying", returncode)
                await asyncio.sleep(1)  # do not spin on a worker that cannot start
            SPARQL_WORKER_RESTARTS.inc()

    async def _run_once(self) -> int | None:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "registry.sparql_worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={
                **child_environment(dict(os.environ)),  # the worker dies with this process
                "REGISTRY_DATABASE_URL": self.settings.database_url,
                "REGISTRY_LOG_LEVEL": self.settings.log_level,
                "REGISTRY_SPARQL_TIMEOUT": str(self.settings.sparql_timeout),
                "REGISTRY_SPARQL_MAX_RESULTS": str(self.settings.sparql_max_results),
                "REGISTRY_SPARQL_SERVICE_ALLOWLIST": ",".join(self.settings.sparql_service_allowlist),
                "REGISTRY_SPARQL_INDEX_DIR": str(self.settings.sparql_index_path),
                "REGISTRY_SPARQL_CONCURRENCY": str(self.settings.sparql_concurrency),
                "REGISTRY_SPARQL_QUEUE": str(self.settings.sparql_queue),
                "REGISTRY_SPARQL_MEMORY_LIMIT": str(self.settings.sparql_memory_limit),
                # glibc's default of one arena per thread reserves address space the memory limit would count.
                "MALLOC_ARENA_MAX": "2",
            },
        )
        self._process = process
        self._channel = process.stdin
        assert process.stdout is not None
        try:
            await self._read_answers(process.stdout)
        finally:
            self._kill()
            await process.wait()
            reason = "The SPARQL worker is restarting"
            if process.returncode == -signal.SIGABRT:  # what oxigraph does when an allocation fails
                reason = (
                    "A query needed more memory than the SPARQL worker may use (REGISTRY_SPARQL_MEMORY_LIMIT); "
                    "the worker is restarting"
                )
            if not self._stopping:
                log.warning("the SPARQL worker exited with %s; starting it again", process.returncode)
            self._fail_pending(reason)
        return process.returncode

    async def _read_answers(self, reader: asyncio.StreamReader) -> None:
        """Settle the pending queries with the answers from ``reader`` until it ends; frame 0 tells readiness."""
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                request_id, status, payload = await read_frame(reader)
                if request_id == 0:
                    self._set_ready(payload is not False)
                    continue
                future = self._pending.get(request_id)
                if future is None or future.done():
                    continue
                if status == "ok":
                    future.set_result(payload)
                else:
                    code, detail, headers, extra = payload
                    error = RegistryError(detail, headers=headers, **extra)
                    error.status = HTTPStatus(code)
                    future.set_exception(error)

    def _fail_pending(self, reason: str) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(_unavailable(reason))

    # -- the processes that do not run the worker, and the relay that serves them

    async def _relay_through_owner(self) -> None:
        """Send queries to the process that runs the worker, until the connection to it ends."""
        # Sockets made here: uvloop takes no abstract socket names as paths.
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(connection, self._socket_name)
            reader, writer = await asyncio.open_unix_connection(sock=connection)
        except OSError:
            connection.close()
            return  # starting or gone: try again (or take over)
        self._channel = writer
        try:
            await self._read_answers(reader)
        finally:
            self._ready.clear()
            self._channel = None
            writer.close()
            self._fail_pending("The SPARQL worker is restarting")

    async def _open_relay(self) -> None:
        """Listen for the other server processes (a socket made here: uvloop takes no abstract names as paths)."""
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listening.bind(self._socket_name)
            listening.listen()
            listening.setblocking(False)
            self._relay = await asyncio.start_unix_server(self._serve_peer, sock=listening)
        except OSError:
            listening.close()
            log.exception("the other server processes cannot reach this one's SPARQL worker")

    async def _serve_peer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer the queries of another server process through this process's worker (timed and retried here)."""
        self._peers.add(writer)
        writer.write(frame([0, "ready", self._ready.is_set()]))
        calls: set[asyncio.Task[None]] = set()

        async def relay(request_id: int, kind: str, arguments: list[Any]) -> None:
            try:
                message = [request_id, "ok", await self._call(kind, arguments)]
            except RegistryError as error:
                message = [request_id, "error", [int(error.status), error.detail, error.headers, error.extra]]
            if not writer.is_closing():
                writer.write(frame(message))

        try:
            while True:
                request_id, kind, arguments = await read_frame(reader)
                call = asyncio.create_task(relay(request_id, kind, arguments))
                calls.add(call)
                call.add_done_callback(calls.discard)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._peers.discard(writer)
            for call in calls:
                call.cancel()
            writer.close()


__all__ = ["QueryWorker", "frame", "read_frame"]
