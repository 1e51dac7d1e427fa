"""Fair shares of the SPARQL worker's query threads: round-robin between clients, each held below the whole.

The worker runs ``slots`` queries at once (``REGISTRY_SPARQL_CONCURRENCY``). One client may run at most
``slots - 1`` of them (one when there is a single slot), so another client always finds a thread that this one's
queries cannot hold, however slow they are. Queries that cannot run yet wait in one queue per client, and a
freed slot goes to the next client in turn that has a query waiting and room under its share: a client with many
queries waiting gets one slot in turn like a client with one, never all of them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator

from registry.errors import ServiceUnavailable


def client_share(slots: int) -> int:
    """Queries one client may run at once: fewer than the worker runs, so that one client cannot hold them all."""
    return max(1, slots - 1)


class FairSlots:
    """Query slots shared round-robin between clients (see the module's docstring)."""

    def __init__(self, slots: int, queue: int) -> None:
        """``slots``: queries run at once; ``queue``: queries waiting at most (beyond: 503 with Retry-After)."""
        self.slots = max(1, slots)
        self.share = client_share(self.slots)
        self.queue = queue
        self._running: collections.Counter[str] = collections.Counter()
        #: Waiting queries per client, in the order the clients are served in (the last one served goes last).
        self._waiting: dict[str, collections.deque[asyncio.Future[None]]] = {}
        self._waiting_count = 0

    @property
    def running(self) -> int:
        return sum(self._running.values())

    @property
    def waiting(self) -> int:
        return self._waiting_count

    @contextlib.asynccontextmanager
    async def slot(self, client: str, wait: float) -> AsyncIterator[None]:
        """Hold one of the slots for ``client`` while the block runs; waits ``wait`` seconds at most for it."""
        await self.acquire(client, wait)
        try:
            yield
        finally:
            self.release(client)

    async def acquire(self, client: str, wait: float) -> None:
        """Take one of the slots for ``client`` (give it back with :meth:`release`); waits ``wait`` seconds at most."""
        if self._waiting_count >= self.queue:
            raise ServiceUnavailable(
                "The SPARQL endpoint is busy with other queries (REGISTRY_SPARQL_QUEUE are waiting); retry shortly",
                headers={"Retry-After": "1"},
            )
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, collections.deque()).append(turn)
        self._waiting_count += 1
        self._dispatch()
        try:
            await asyncio.wait_for(asyncio.shield(turn), wait)
        except BaseException as error:
            if turn.done() and not turn.cancelled():
                self.release(client)  # granted as the wait ended: hand the slot on
            else:
                turn.cancel()
                self._forget(client, turn)
            if isinstance(error, TimeoutError):
                raise ServiceUnavailable(
                    f"The SPARQL endpoint is busy: this query waited {wait:g} s for its turn; retry shortly",
                    headers={"Retry-After": "2"},
                ) from None
            raise

    def release(self, client: str) -> None:
        self._running[client] -= 1
        if self._running[client] <= 0:
            del self._running[client]
        self._dispatch()

    def _forget(self, client: str, turn: asyncio.Future[None]) -> None:
        waiting = self._waiting.get(client)
        if waiting is not None and turn in waiting:
            waiting.remove(turn)
            self._waiting_count -= 1
            if not waiting:
                del self._waiting[client]

    def _dispatch(self) -> None:
        """Give free slots to the waiting clients in turn, each within its share."""
        while self.running < self.slots:
            client = next((name for name in self._waiting if self._running[name] < self.share), None)
            if client is None:
                return
            waiting = self._waiting.pop(client)
            turn = waiting.popleft()
            self._waiting_count -= 1
            if waiting:
                self._waiting[client] = waiting  # back in line, behind the clients not served yet
            self._running[client] += 1
            turn.set_result(None)


__all__ = ["FairSlots", "client_share"]
