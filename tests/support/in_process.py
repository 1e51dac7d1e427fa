"""The in-process test client, as a local client reaches the directory."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

#: The directory answers only to its own names (REGISTRY_ALLOWED_HOSTS): the test client's default host,
#: testserver.local, is not one of them.
LOCAL_BASE_URL = "http://127.0.0.1:8080"


def local_client(app: Litestar, **options: Any) -> AsyncTestClient[Litestar]:
    """``AsyncTestClient`` of ``app`` sending ``Host: 127.0.0.1:8080``."""
    return AsyncTestClient(app=app, base_url=LOCAL_BASE_URL, **options)


async def until_sparql_answers(client: AsyncTestClient[Litestar], within: float = 60) -> None:
    """Wait until the app's SPARQL worker has started and caught up: a query starts it when it is idle (it starts
    on demand), and SPARQL answers 503 with Retry-After until it has caught up."""
    deadline = time.monotonic() + within
    while (await client.get("/search/sparql", params={"query": "ASK {}"})).status_code == 503:
        assert time.monotonic() < deadline, f"the SPARQL worker did not answer within {within:g} s"
        await asyncio.sleep(0.1)


async def events_replayed(app: Litestar, path: str, count: int) -> tuple[int, list[bytes]]:
    """The status and the first ``count`` events of an event stream replayed from the start (the test client
    waits for a response to end, and a stream does not)."""
    status, received, enough = 0, bytearray(), asyncio.Event()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8080"), (b"last-event-id", b"0")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await enough.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            received.extend(message.get("body", b""))
            if received.count(b"\n\n") >= count or not message.get("more_body", False):
                enough.set()

    task = asyncio.create_task(app(scope, receive, send))  # type: ignore[arg-type]
    try:
        await asyncio.wait_for(enough.wait(), 10)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    events = [event for event in bytes(received).split(b"\n\n") if event.startswith(b"event:")]
    return status, events
