"""The server side of the SPARQL worker: starts it, forwards queries, answers 503 while it (re)starts, kills it when
a query outlives its timeout (see :mod:`registry.sparql_worker` for why queries run in another process)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import struct
import sys
from http import HTTPStatus
from typing import Any

import msgspec

from registry.config import Settings
from registry.errors import RegistryError, ServiceUnavailable
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
        self._ready = asyncio.Event()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._supervisor: asyncio.Task[None] | None = None
        self._stopping = False

    async def start(self) -> None:
        """Start the worker in the background: the rest of the API answers while its index catches up."""
        self._supervisor = asyncio.create_task(self._supervise(), name="sparql-worker-supervisor")

    @property
    def ready(self) -> bool:
        """Whether queries are answered now (the index has caught up with the change log); for /readyz."""
        return self._ready.is_set()

    async def stop(self) -> None:
        self._stopping = True
        self._kill()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor

    def unready_reason(self) -> str | None:
        """Why the worker cannot answer queries now (None when it can): for the readiness check."""
        if self._process is None or self._process.returncode is not None:
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
        if not self._ready.is_set() or self._process is None or self._process.stdin is None:
            raise _unavailable("The SPARQL index is catching up with the catalogue")
        if self._process.stdin.is_closing():
            # The worker died and the supervisor has not noticed yet (writing would raise RuntimeError).
            raise _unavailable("The SPARQL worker is restarting")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            self._process.stdin.write(frame([request_id, kind, arguments]))
            await self._process.stdin.drain()
            return await asyncio.wait_for(asyncio.shield(future), self.settings.sparql_timeout + GRACE)
        except TimeoutError:
            log.warning("a SPARQL query outlived its timeout; restarting the query worker")
            SPARQL_TIMEOUTS.inc()
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
        self._ready.clear()
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()

    async def _supervise(self) -> None:
        """Run the worker; start it again whenever it exits (killed, crashed), until the server stops."""
        while not self._stopping:
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
                **os.environ,
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
        assert process.stdout is not None
        try:
            while True:
                request_id, status, payload = await read_frame(process.stdout)
                if request_id == 0:
                    self._ready.set()
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
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._ready.clear()
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
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(_unavailable(reason))
        return process.returncode


__all__ = ["QueryWorker", "frame", "read_frame"]
