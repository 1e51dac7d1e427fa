"""The worker processes of a server process: one worker and the calls in flight in it, how it is started, and how
the calls in flight in it are settled when it exits (:mod:`registry.sparql.worker.client` runs them)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
from typing import Any

from registry.config import Settings
from registry.errors import ServiceUnavailable
from registry.lifecycle import child_environment
from registry.sparql.worker.protocol import frame


class StuckIn(Exception):
    """A query outlived its timeout in ``worker`` (being replaced): answered ``problem`` at once, while its client's
    slot stays held until ``worker`` is gone."""

    def __init__(self, worker: WorkerProcess, problem: ServiceUnavailable) -> None:
        super().__init__(problem.detail)
        self.worker = worker
        self.problem = problem


class WorkerExited(Exception):
    """The worker died while a call was in flight in it; ``suspect`` when it crashed on its own (any call in flight
    may have caused it) rather than being killed by this process."""

    def __init__(self, problem: ServiceUnavailable, *, suspect: bool) -> None:
        super().__init__(problem.detail)
        self.problem = problem
        self.suspect = suspect


OUT_OF_MEMORY = (
    "A query needed more memory than the SPARQL worker may use (REGISTRY_SPARQL_MEMORY_LIMIT); the worker is restarting"
)


def unavailable(reason: str) -> ServiceUnavailable:
    return ServiceUnavailable(f"{reason}; retry shortly", headers={"Retry-After": "2"})


@dataclasses.dataclass(eq=False)
class WorkerProcess:
    """One worker process of this server process, and the calls in flight in it."""

    process: asyncio.subprocess.Process
    pending: dict[int, asyncio.Future[Any]] = dataclasses.field(default_factory=dict)
    #: Set once its index has caught up: it answers queries.
    answered: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    #: Set once it has exited and the calls in flight in it are settled.
    exited: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    #: A query outlived its timeout in it: it is being replaced.
    replaced: bool = False
    #: This process killed it (being replaced, or stopping): the calls in flight in it did not cause its end.
    killed: bool = False
    watcher: asyncio.Task[None] | None = None

    @property
    def channel(self) -> asyncio.StreamWriter:
        assert self.process.stdin is not None
        return self.process.stdin

    async def send(self, message: list[Any]) -> None:
        """Write a frame to the worker; a worker whose stdin is closed is exiting (``WorkerExited``)."""
        try:
            if self.channel.is_closing():
                raise ConnectionResetError("the worker's stdin is closed")
            self.channel.write(frame(message))
            await self.channel.drain()
        except (ConnectionError, RuntimeError) as error:  # RuntimeError: uvloop's write to a closed pipe
            raise WorkerExited(unavailable("The SPARQL worker is restarting"), suspect=False) from error

    def kill(self) -> None:
        self.killed = True
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()

    def settle_exited(self) -> None:
        """The worker is gone: the calls in flight in it are sent again to the next worker. Killed by this
        process, it took innocent calls with it. Out of memory (oxigraph aborts when an allocation fails), a call
        alone in flight caused it and is answered so; otherwise any call in flight may have caused the crash, and
        each is sent again once."""
        waiting = [future for future in self.pending.values() if not future.done()]
        out_of_memory = self.process.returncode == -signal.SIGABRT
        problem = unavailable(OUT_OF_MEMORY if out_of_memory else "The SPARQL worker is restarting")
        for future in waiting:
            if self.killed:
                future.set_exception(WorkerExited(problem, suspect=False))
            elif out_of_memory and len(waiting) == 1:
                future.set_exception(problem)
            else:
                future.set_exception(WorkerExited(problem, suspect=True))


async def spawn_worker(settings: Settings) -> asyncio.subprocess.Process:
    """A worker process, importing its modules and then waiting for its start frame."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "registry.sparql.worker",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env={
            **child_environment(dict(os.environ)),  # the worker dies with this process
            "REGISTRY_DATABASE_URL": settings.database_url,
            "REGISTRY_LOG_LEVEL": settings.log_level,
            "REGISTRY_SPARQL_TIMEOUT": str(settings.sparql_timeout),
            "REGISTRY_SPARQL_MAX_RESULTS": str(settings.sparql_max_results),
            "REGISTRY_SPARQL_SERVICE_ALLOWLIST": ",".join(settings.sparql_service_allowlist),
            "REGISTRY_SPARQL_INDEX_DIR": str(settings.sparql_index_path),
            "REGISTRY_SPARQL_CONCURRENCY": str(settings.sparql_concurrency),
            "REGISTRY_SPARQL_QUEUE": str(settings.sparql_queue),
            "REGISTRY_SPARQL_MEMORY_LIMIT": str(settings.sparql_memory_limit),
            # glibc's default of one arena per thread reserves address space the memory limit would count.
            "MALLOC_ARENA_MAX": "2",
        },
    )


__all__ = ["OUT_OF_MEMORY", "StuckIn", "WorkerExited", "WorkerProcess", "spawn_worker", "unavailable"]
