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

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from registry.ops.logs import REQUEST_ID, access_line

log = logging.getLogger("registry.access")

REQUEST_ID_HEADER = b"x-request-id"
#: Ids accepted from clients; anything else (too long, odd characters) is replaced, never logged as sent.
_ACCEPTED_ID = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}")


#: New ids: a random prefix per process and a counter, unique across replicas without a random draw per request.
#: The counter starts at 16¹⁵, so that ``hex`` gives it 16 digits (no format specification to interpret).
_PREFIX = uuid.uuid4().hex[:16]
_COUNTER = itertools.count(1 << 60)


def _request_id(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER and _ACCEPTED_ID.fullmatch(value):
            return value.decode("ascii")
    return _PREFIX + hex(next(_COUNTER))[2:]


def access_logged(app: ASGIApp) -> ASGIApp:
    """Log each HTTP request once it is answered: method, path, route template, status, duration, request id."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        request_id = _request_id(scope)
        method, path = scope["method"], scope["path"]  # as requested: inner layers may rewrite the scope
        echoed = (REQUEST_ID_HEADER, request_id.encode())
        status = 0
        logged = log.isEnabledFor(logging.INFO)  # at warning level no line is made at all
        started = time.perf_counter() if logged else 0.0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), echoed]
            await send(message)

        token = REQUEST_ID.set(request_id)
        try:
            await app(scope, receive, send_with_id)
        finally:
            if logged:
                access_line(
                    log,
                    request_id,
                    method,
                    path,
                    scope.get("path_template"),
                    status,
                    time.perf_counter() - started,
                    (scope.get("client") or ("",))[0],
                )
            REQUEST_ID.reset(token)

    return middleware


__all__ = ["REQUEST_ID_HEADER", "access_logged"]
