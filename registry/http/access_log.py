"""One access log line per request, with a request id that every log line of the request carries.

The id comes from the client's ``X-Request-ID`` when it is a plausible one (a load balancer's or a caller's
trace id), else a new one; the response echoes it, so a client reporting a problem can name the log lines.
"""

from __future__ import annotations

import itertools
import logging
import re
import time
import uuid

import structlog
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from registry.logs import info_line

log = logging.getLogger("registry.access")

REQUEST_ID_HEADER = b"x-request-id"
#: Ids accepted from clients; anything else (too long, odd characters) is replaced, never logged as sent.
_ACCEPTED_ID = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}")


#: New ids: a random prefix per process and a counter, unique across replicas without a random draw per request.
_PREFIX = uuid.uuid4().hex[:16]
_COUNTER = itertools.count(1)


def _request_id(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER and _ACCEPTED_ID.fullmatch(value):
            return value.decode("ascii")
    return f"{_PREFIX}{next(_COUNTER):016x}"


def access_logged(app: ASGIApp) -> ASGIApp:
    """Log each HTTP request once it is answered: method, path, route template, status, duration, request id."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        request_id = _request_id(scope)
        method, path = scope.get("method", ""), scope["path"]
        status = 0
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), (REQUEST_ID_HEADER, request_id.encode())]
            await send(message)

        tokens = structlog.contextvars.bind_contextvars(request_id=request_id)
        try:
            await app(scope, receive, send_with_id)
        finally:
            if log.isEnabledFor(logging.INFO):  # at warning level no line is built at all
                _log_request(scope, method, path, status, started)
            structlog.contextvars.reset_contextvars(**tokens)

    return middleware


def _log_request(scope: Scope, method: str, path: str, status: int, started: float) -> None:
    info_line(
        log,
        f"{method} {path} {status}",
        {
            "method": method,
            "path": path,
            "route": scope.get("path_template"),
            "status": status or None,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            "client": (scope.get("client") or ("",))[0],
        },
    )


__all__ = ["REQUEST_ID_HEADER", "access_logged"]
