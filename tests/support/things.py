"""Small descriptions and event helpers for end-to-end tests."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Collection
from typing import Any

from registry.client import AsyncEventStream, AsyncRegistryClient, Event


def thing(title: str = "Thing", **members: Any) -> dict[str, Any]:
    """A minimal valid TD 1.1 with a fresh id."""
    return {
        "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
        "id": f"urn:test:{uuid.uuid4()}",
        "title": title,
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
        **members,
    }


def nested(depth: int, width: int) -> dict[str, Any]:
    """A tree of objects ``depth`` levels deep, ``width`` members each (width ** depth leaves)."""
    if depth == 0:
        return {"leaf": True}
    return {f"k{index}": nested(depth - 1, width) for index in range(width)}


#: A JSONPath query whose nested descendant segments and filters visit a tree of n nodes about n * depth ** 3
#: times: over a description holding ``nested(7, 4)`` (300 kB) it runs for seconds.
PATHOLOGICAL_JSONPATH = "$..[?@..[?@..[?@..absent]]]"


class Collector:
    """Reads an event stream in the background into a queue.

    Only events about the ids in ``about`` are kept (when given): tests share a database with other tests and
    with servers that purge expired descriptions at any moment.
    """

    def __init__(self, stream: AsyncEventStream, about: Collection[str] | None = None) -> None:
        self.stream = stream
        self.about = None if about is None else set(about)
        self.events: asyncio.Queue[Event] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        async for event in self.stream:
            if self.about is None or event.thing_id in self.about:
                self.events.put_nowait(event)

    async def next(self, within: float = 5.0) -> Event:
        return await asyncio.wait_for(self.events.get(), within)

    async def take(self, count: int, within: float = 5.0) -> list[Event]:
        return [await self.next(within) for _ in range(count)]

    async def nothing_within(self, seconds: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.events.get(), seconds)
            return False
        return True


@contextlib.asynccontextmanager
async def collecting(
    base_url: str, about: Collection[str] | None = None, **subscription: Any
) -> AsyncIterator[Collector]:
    """Subscribe (``watch``: in place once entered, so every later change is collected), and stop afterwards."""
    async with AsyncRegistryClient(base_url) as client, client.watch(**subscription) as stream:
        collector = Collector(stream, about)
        collector.task = asyncio.create_task(collector._run())
        try:
            yield collector
        finally:
            collector.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await collector.task


def versioned_tool(thing_id: str, version: str, required: list[str]) -> dict[str, Any]:
    """A tool whose input gains a required member at 1.0.1: a breaking change claimed as a patch (quality)."""
    return thing(
        "Versioned tool",
        id=thing_id,
        **{"@type": "lmos:Tool"},
        version={"instance": version},
        actions={
            "ask": {
                "input": {"type": "object", "properties": {"q": {"type": "string"}}, "required": required},
                "forms": [{"href": "https://agents.example/ask"}],
            }
        },
    )
