"""HEAD on every GET endpoint (``tdd-http-head``): run the GET, send its headers, drop the body.

Works for streams that never end (SSE): the handler is cancelled as soon as the headers are out.
"""

from __future__ import annotations

import asyncio
import contextlib

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send


def head_as_get(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope.get("method") != "HEAD":
            await app(scope, receive, send)
            return
        scope = {**scope, "method": "GET"}
        headers_sent = asyncio.Event()

        async def send_headers_only(message: Message) -> None:
            if headers_sent.is_set():
                return
            if message["type"] == "http.response.start":
                await send(message)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                headers_sent.set()

        task = asyncio.ensure_future(app(scope, receive, send_headers_only))
        waiter = asyncio.ensure_future(headers_sent.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return middleware
