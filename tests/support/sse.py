"""A raw Server-Sent Events reader for tests: the ids and payloads exactly as the directory sends them."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field

import httpx
import httpx_sse


@dataclass(frozen=True)
class RawEvent:
    type: str
    id: str
    thing_id: str

    @property
    def seq(self) -> int:
        return int(self.id.partition("/")[0])


@dataclass
class RawStream:
    """Events of the ids in ``about`` received so far, and the ids of every event (to resume from)."""

    about: Collection[str]
    events: list[RawEvent] = field(default_factory=list)
    subscribed: asyncio.Event = field(default_factory=asyncio.Event)
    #: The directory's Registry-Stream-Position header: where the stream started.
    start: str = ""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def wait_for(self, count: int, within: float) -> list[RawEvent]:
        """The first ``count`` events, waiting ``within`` seconds at most for them."""
        async with asyncio.timeout(within):
            while len(self.events) < count:
                self.arrived.clear()
                await self.arrived.wait()
        return self.events[:count]


@contextlib.asynccontextmanager
async def raw_events(
    base_url: str, about: Collection[str], last_event_id: str | None = None
) -> AsyncIterator[RawStream]:
    """Subscribe to ``/events`` (resuming after ``last_event_id``) and read in the background until the block ends;
    yields once the directory has answered (subscribed)."""
    stream = RawStream(about)
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}

    async def read() -> None:
        async with (
            httpx.AsyncClient(base_url=base_url, timeout=httpx.Timeout(30, read=None)) as http,
            httpx_sse.aconnect_sse(http, "GET", "/events", headers=headers) as source,
        ):
            source.response.raise_for_status()
            stream.start = source.response.headers.get("registry-stream-position", "")
            stream.subscribed.set()
            async for message in source.aiter_sse():
                thing_id = json.loads(message.data).get("id", "") if message.data else ""
                if thing_id in stream.about:
                    stream.events.append(RawEvent(message.event, message.id, thing_id))
                    stream.arrived.set()

    task = asyncio.create_task(read())
    try:
        async with asyncio.timeout(10):
            done, _ = await asyncio.wait(
                [task, asyncio.create_task(stream.subscribed.wait())], return_when=asyncio.FIRST_COMPLETED
            )
        if task in done:
            task.result()  # the subscription failed: raise why
        yield stream
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
