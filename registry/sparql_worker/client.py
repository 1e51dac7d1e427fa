"""The server side of the SPARQL worker: starts it, forwards queries, answers 503 while it (re)starts, kills it when
a query outlives its timeout (see :mod:`registry.sparql_worker` for why queries run in another process)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import struct
import sys
from http import HTTPStatus
from typing import Any

import msgspec

from registry.config import Settings
from registry.errors import RegistryError, ServiceUnavailable
from registry.semantic.sparql import Answer

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")
#: Seconds beyond the query timeout before the worker is taken to be stuck.
GRACE = 1.0


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
        self._ever_ready = False

    async def start(self) -> None:
        self._supervisor = asyncio.create_task(self._supervise())
        ready = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait({ready, self._supervisor}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            self._supervisor.result()  # raises what stopped it

    async def stop(self) -> None:
        self._stopping = True
        self._kill()
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor

    async def query(self, query: str, accept: str, default_graphs: list[str], named_graphs: list[str]) -> Answer:
        content, media_type = await self._call("query", [query, accept, default_graphs, named_graphs])
        return Answer(content, media_type)

    async def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._call("stats", [])
        return result

    async def _call(self, kind: str, arguments: list[Any]) -> Any:
        if not self._ready.is_set() or self._process is None or self._process.stdin is None:
            raise _unavailable("The SPARQL index is being built")
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
            returncode = await self._run_once()
            if self._stopping:
                return
            if not self._ever_ready:
                raise RuntimeError(f"the SPARQL worker exited with {returncode} before its index was built")
            if asyncio.get_running_loop().time() - started < 5:
                await asyncio.sleep(1)  # do not spin on a worker that cannot start

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
            },
        )
        self._process = process
        assert process.stdout is not None
        try:
            while True:
                request_id, status, payload = await read_frame(process.stdout)
                if request_id == 0:
                    self._ready.set()
                    self._ever_ready = True
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
            if not self._stopping:
                log.warning("the SPARQL worker exited with %s; starting it again", process.returncode)
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(_unavailable("The SPARQL worker is restarting"))
        return process.returncode


__all__ = ["QueryWorker", "frame", "read_frame"]
