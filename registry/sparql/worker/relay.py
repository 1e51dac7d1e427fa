"""Between the server processes of one data directory (``--workers N``): the process that runs the SPARQL worker
listens on a Unix socket (abstract, named after the index directory and the database) and answers the calls of the
others through its worker; the others forward their calls over it. :class:`registry.sparql.worker.client.QueryWorker`
decides which side a process is on."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import socket
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO, Any

from registry.errors import RegistryError
from registry.sparql.worker.processes import unavailable
from registry.sparql.worker.protocol import frame, read_frame

#: The logger of the query worker's server side, whose part this is.
log = logging.getLogger("registry.sparql.worker.client")

#: Held by the server process that runs the worker, beside the index directories (``owner.lock.<scope>``: one per
#: database).
OWNER_LOCK = "owner.lock"

#: Reads the answers of the process that runs the worker into the calls in flight, until the connection ends.
ReadAnswers = Callable[[asyncio.StreamReader, dict[int, asyncio.Future[Any]]], Awaitable[None]]
#: Answers a call (kind, arguments, client) of another process through this process's worker.
Answer = Callable[[str, list[Any], str], Awaitable[Any]]


def owner_lock(directory: Path, scope: str) -> IO[str] | None:
    """The lock of the process that runs the worker of ``scope`` (held while the file stays open), if no other
    process holds it; else None."""
    directory.mkdir(parents=True, exist_ok=True)
    lock = (directory / f"{OWNER_LOCK}.{scope}").open("a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    return lock


class Relay:
    """Either side of the socket between the server processes: the connection to the process that runs the worker
    (and the calls in flight over it), or the listening socket of that process and its peers."""

    def __init__(self, socket_name: str, ids: Iterator[int]) -> None:
        self.socket_name = socket_name
        self._ids = ids
        #: Where calls go when another process runs the worker: the socket to that process, and the calls in flight.
        self.channel: asyncio.StreamWriter | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        #: Set while this process runs the worker: the relay for the other processes and their connections.
        self.server: asyncio.Server | None = None
        self._peers: set[asyncio.StreamWriter] = set()

    @property
    def connected(self) -> bool:
        """Whether this process is connected to the one that runs the worker."""
        return self.channel is not None and not self.channel.is_closing()

    # -- a process that does not run the worker

    async def forward(self, kind: str, arguments: list[Any], client: str, answer_within: float) -> Any:
        """Send a call to the process that runs the worker (it schedules, times and retries it); ``answer_within``: how
        long its answer may take."""
        channel = self.channel
        assert channel is not None
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            if channel.is_closing():
                raise ConnectionResetError("the connection to the process that runs the worker is closed")
            channel.write(frame([request_id, kind, arguments, client]))
            await channel.drain()
            return await asyncio.wait_for(asyncio.shield(future), answer_within)
        except TimeoutError:
            raise unavailable("The process that runs the SPARQL worker did not answer") from None
        except (ConnectionError, RuntimeError) as error:  # RuntimeError: uvloop's write to a closed socket
            raise unavailable("The SPARQL worker is restarting") from error
        finally:
            self._pending.pop(request_id, None)

    async def through_owner(self, read_answers: ReadAnswers, lost: Callable[[], None]) -> None:
        """Send queries to the process that runs the worker, until the connection to it ends (then ``lost``)."""
        # Sockets made here: uvloop takes no abstract socket names as paths.
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(connection, self.socket_name)
            reader, writer = await asyncio.open_unix_connection(sock=connection)
        except OSError:
            connection.close()
            return  # starting or gone: try again (or take over)
        self.channel = writer
        try:
            await read_answers(reader, self._pending)
        finally:
            lost()
            self.channel = None
            writer.close()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(unavailable("The SPARQL worker is restarting"))

    # -- the process that runs the worker

    async def open(self, answer: Answer, ready: Callable[[], bool]) -> None:
        """Listen for the other server processes (a socket made here: uvloop takes no abstract names as paths);
        ``answer`` answers their calls, ``ready`` tells whether the worker answers now."""
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._serve_peer(reader, writer, answer, ready())

        try:
            listening.bind(self.socket_name)
            listening.listen()
            listening.setblocking(False)
            self.server = await asyncio.start_unix_server(serve, sock=listening)
        except OSError:
            listening.close()
            log.exception("the other server processes cannot reach this one's SPARQL worker")

    def tell_ready(self, ready: bool) -> None:
        """Tell the processes relaying through this one whether queries are answered now."""
        for peer in list(self._peers):
            if not peer.is_closing():
                peer.write(frame([0, "ready", ready]))

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            for peer in list(self._peers):
                peer.close()

    async def _serve_peer(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer: Answer, ready: bool
    ) -> None:
        """Answer the calls of another server process through this process's worker (scheduled among this
        process's own by their client, timed and retried there)."""
        self._peers.add(writer)
        writer.write(frame([0, "ready", ready]))
        calls: set[asyncio.Task[None]] = set()

        async def relay(request_id: int, kind: str, arguments: list[Any], client: str) -> None:
            try:
                message = [request_id, "ok", await answer(kind, arguments, client)]
            except RegistryError as error:
                message = [request_id, "error", [int(error.status), error.detail, error.headers, error.extra]]
            if not writer.is_closing():
                writer.write(frame(message))

        try:
            while True:
                request_id, kind, arguments, client = await read_frame(reader)
                call = asyncio.create_task(relay(request_id, kind, arguments, client))
                calls.add(call)
                call.add_done_callback(calls.discard)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._peers.discard(writer)
            for call in calls:
                call.cancel()
            writer.close()


__all__ = ["OWNER_LOCK", "Relay", "owner_lock"]
