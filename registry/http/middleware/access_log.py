"""One access log line per request, with a request id that every log line of the request carries.

The id comes from the client's ``X-Request-ID`` when it is a plausible one (a load balancer's or a caller's
trace id), else a new one; the response echoes it, so a client reporting a problem can name the log lines.

The middleware runs around every request, so it does as little as it can: no structlog, no wall clock, no
formatting, no call of its own per message. It queues a tuple of the line's fields for the writer
(registry/ops/log_writer.py); its wrapper of ``send`` is a plain function that returns ``send``'s own awaitable
(no coroutine of its own), and new ids are made 4,096 at a time.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Send

from registry.ops import logs
from registry.ops.logs import REQUEST_ID, access_line

log = logging.getLogger("registry.access")

#: What an HTTP request goes through inside the access log: the scope, ``receive`` and ``send`` to an awaitable.
Enter = Callable[[Any, Receive, Send], Awaitable[None]]

REQUEST_ID_HEADER = b"x-request-id"
#: Ids accepted from clients; anything else (too long, odd characters) is replaced, never logged as sent.
_ACCEPTED_ID = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}")

#: An id and the header echoing it.
Identified = tuple[str, tuple[bytes, bytes]]


def _new_ids(count: int) -> Iterator[Identified]:
    """``count`` new ids, each with its header: 128 random bits in 32 hexadecimal digits, unique across replicas and
    restarts, made by C-level calls (one read of the system's random source, cut where ``hex`` puts its spaces)."""
    digits = os.urandom(16 * count).hex(" ", 16)
    headers = zip(itertools.repeat(REQUEST_ID_HEADER), digits.encode().split(), strict=False)
    return zip(digits.split(), headers, strict=True)


#: New ids, drawn 4,096 at a time.
_NEW_IDS = itertools.chain.from_iterable(map(_new_ids, itertools.repeat(4096)))


def _given_id(headers: Iterable[tuple[bytes, bytes]]) -> Identified | None:
    for name, value in headers:
        if name == REQUEST_ID_HEADER and _ACCEPTED_ID.fullmatch(value):
            return value.decode("ascii"), (REQUEST_ID_HEADER, value)
    return None


def access_logged(app: ASGIApp, enter: Enter | None = None) -> ASGIApp:
    """Log each HTTP request once it is answered: method, path, route template, status, duration, request id.

    ``enter`` is what an HTTP request goes through (the input boundary's checks, then ``app``): a plain function
    returning the awaitable, so that the boundary and the access log are one layer; without it, ``app``."""
    perf_counter, new_ids, http, set_request_id = time.perf_counter, _NEW_IDS, ScopeType.HTTP, REQUEST_ID.set
    answer: Enter = app if enter is None else enter

    async def middleware(scope: Any, receive: Receive, send: Send) -> None:  # an HTTP scope past the first line
        if scope["type"] != http:
            await app(scope, receive, send)
            return
        request_id, echoed = _given_id(scope["headers"]) or next(new_ids)
        method, path = scope["method"], scope["path"]  # as requested: inner layers may rewrite the scope
        start: Any = None

        def send_with_id(message: Any) -> Awaitable[None]:
            nonlocal start
            if start is None:  # the first message starts the answer (http.response.start)
                start = message
                message["headers"] = [*message.get("headers", ()), echoed]
            return send(message)

        # Not reset: a server runs each request in a task of its own (a copy of the context), and every request
        # sets its own id before anything of it runs.
        set_request_id(request_id)
        started = perf_counter()
        try:
            await answer(scope, receive, send_with_id)
        finally:
            ended = perf_counter()
            status = 0 if start is None else start["status"]
            writer = logs.access_writer
            if writer is not None:  # JSON lines at information level: queued for the writer
                queue = writer.queue
                if len(queue) < writer.capacity:  # the client's address and port: the writer takes the address
                    queue.append(
                        (ended, request_id, method, path, scope.get("path_template"), status, ended - started,
                         scope.get("client"))
                    )  # fmt: skip
                else:
                    writer.refuse()
            elif log.isEnabledFor(logging.INFO):
                address = (scope.get("client") or ("",))[0]
                access_line(log, request_id, method, path, scope.get("path_template"), status, ended - started, address)

    return middleware


__all__ = ["REQUEST_ID_HEADER", "access_logged"]
