"""The ``/mcp`` route of the application: the origin check every MCP request gets, the methods it answers, and the
MCP server (registry/http/mcp_server.py, the ``mcp`` SDK) loaded when the first request comes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import msgspec
from litestar import Litestar, asgi
from litestar.handlers import ASGIRouteHandler
from litestar.types import Receive, Scope, Send

from registry.http.dependencies import ServiceHolder
from registry.http.middleware.boundary import send_problem
from registry.http.middleware.sites import SitePolicy

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

log = logging.getLogger(__name__)

#: The path of the MCP server.
MCP_PATH = "/mcp"
#: Seconds the first request waits for the SDK to load and the manager to start.
STARTUP_WAIT = 30.0


class McpEndpoint:
    """The ``/mcp`` route: the MCP server behind a session manager. The SDK is loaded and the manager started on the
    first request (most replicas never get one, and loading the SDK is a good part of a server's start); the
    manager runs in a task of its own until the application stops."""

    def __init__(self, holder: ServiceHolder, *, open_access: bool, sites: SitePolicy, max_body_bytes: int) -> None:
        self.holder = holder
        self.open_access = open_access
        self.sites = sites
        self.max_body_bytes = max_body_bytes
        self._manager: StreamableHTTPSessionManager | None = None
        self._wanted = asyncio.Event()
        self._stopping = asyncio.Event()
        self._running = asyncio.Event()
        self._serving: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def running(self, app: Litestar) -> AsyncIterator[None]:
        """The application's lifespan: a manager per run (one cannot be started twice)."""
        self._wanted, self._stopping, self._running = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._serving = asyncio.create_task(self._serve(), name="mcp-session-manager")
        try:
            yield
        finally:
            self._stopping.set()
            self._wanted.set()
            await asyncio.gather(self._serving, return_exceptions=True)
            self._serving = None

    async def _serve(self) -> None:
        await self._wanted.wait()
        if self._stopping.is_set():
            return
        try:
            from registry.http.mcp_server import session_manager

            manager = session_manager(self.holder, open_access=self.open_access, max_body_bytes=self.max_body_bytes)
            async with manager.run():
                self._manager = manager
                self._running.set()
                try:
                    await self._stopping.wait()
                finally:
                    self._manager = None
                    self._running.clear()
        except Exception:
            log.exception("the MCP server cannot start; the next request to %s tries again", MCP_PATH)

    async def _started(self) -> StreamableHTTPSessionManager | None:
        """The running manager, started now if need be; None while the application starts or stops, or when it
        cannot start (logged; the next request tries again)."""
        if self._manager is None and self._serving is not None and not self._stopping.is_set():
            if self._serving.done():
                self._serving = asyncio.create_task(self._serve(), name="mcp-session-manager")
            self._wanted.set()
            running = asyncio.ensure_future(self._running.wait())
            await asyncio.wait({running, self._serving}, timeout=STARTUP_WAIT, return_when=asyncio.FIRST_COMPLETED)
            running.cancel()
        return self._manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The input boundary checks the Origin of unsafe requests; an MCP server checks it on every one (GET too).
        origin = _header(scope, b"origin")
        if origin is not None and not self.sites.origin_allowed(origin, _header(scope, b"host")):
            await send_problem(send, 403, f"Pages of {origin[:100]!r} may not use this directory's MCP server")
            return
        method = scope.get("method", "GET")
        if method == "OPTIONS":
            await _answer(send, 204, b"", [(b"allow", b"POST, OPTIONS")])
            return
        if method != "POST":
            # Stateless: no session to end (DELETE) and no stream for the server's own messages (GET), which the
            # transport lets a server decline with 405 rather than hold a connection open with nothing to send.
            body = msgspec.json.encode(
                {
                    "type": "about:blank",
                    "title": "Method Not Allowed",
                    "status": 405,
                    "detail": f"The MCP server answers POST (JSON-RPC messages), not {method}",
                }
            )
            headers = [(b"allow", b"POST, OPTIONS"), (b"content-type", b"application/problem+json")]
            await _answer(send, 405, body, headers)
            return
        manager = await self._started()
        if manager is None:
            await send_problem(send, 503, "The MCP server is not running (the directory is starting or stopping)")
            return
        await manager.handle_request(scope, receive, send)  # type: ignore[arg-type]


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return str(value.decode("latin-1"))
    return None


def mcp_route(endpoint: McpEndpoint) -> ASGIRouteHandler:
    """The route handler of ``/mcp``: reading (``read`` access) whatever the method, as every tool only reads."""

    @asgi(MCP_PATH, opt={"access": "read"}, name="mcp", copy_scope=False)
    async def mcp_server(scope: Scope, receive: Receive, send: Send) -> None:
        await endpoint(scope, receive, send)

    return mcp_server


__all__ = ["MCP_PATH", "McpEndpoint", "mcp_route"]
