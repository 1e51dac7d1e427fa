"""``GET /things/{id}`` answered from the response cache before routing.

The directory's busiest request is a read of a description the response cache holds. Through the framework it
cost twice a bare Litestar handler returning the same bytes (routing, exception middleware, dependency injection,
signature parsing, response building); ``bench/bench_things.py --get-floors`` measures both. This middleware sits
where routing would start, inside the input boundary, the id rewriting, HEAD and the access log, and answers a
plain read of a cached description itself, with what the handler would send: the same bytes, ``ETag`` and
content type, counted in the same request metrics under the same route template.

It answers only when the full pipeline would answer exactly that: a GET without a query or conditional headers,
a request line (and Host) the boundary accepted, no Origin (the application adds CORS headers), credentials the
authenticator accepts for reads (none needed when reads are open), no rate limit on reads (a hit counted here and
again on the fall-through would count twice), a client that has not used up its failed authentications (when it
sends credentials: the application answers 429), a cached entry the reader's tenant may see. Everything else, and
any error here, goes on to the application, which decides as usual: a refusal, a 401 or a miss is the framework's
to answer (credentials refused here are counted once, as the application refuses them again).
"""

from __future__ import annotations

import datetime as dt
import logging
import time

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from registry.auth.principal import Scope as Access
from registry.auth.tenancy import tenant_scope
from registry.http.access import client_address
from registry.http.bodies import TD_JSON
from registry.http.dependencies import ServiceHolder
from registry.http.middleware.boundary import REFUSAL
from registry.http.middleware.ids import THINGS_PREFIX, thing_id_from
from registry.ops.metrics import record_request

log = logging.getLogger(__name__)

#: The route template the handler of ``GET /things/{id}`` has (access log, request metrics).
ROUTE = THINGS_PREFIX + "{thing_id}"
_TD_JSON = TD_JSON.encode()
#: Request headers that ask for something other than the plain answer (``origin``: a cross-site read, which the
#: application answers with its CORS headers).
_CONDITIONAL = frozenset(
    {b"if-none-match", b"if-modified-since", b"if-match", b"if-unmodified-since", b"range", b"origin"}
)


def _plain_read(scope: Scope) -> str | None:
    """The path segment of the id, if the request is a plain ``GET /things/{id}``."""
    if scope.get("method") != "GET" or scope.get("query_string") or REFUSAL in scope:
        return None
    path: str = scope["path"]
    if not path.startswith(THINGS_PREFIX):
        return None
    segment = path[len(THINGS_PREFIX) :]
    if not segment or "/" in segment:
        return None
    return segment


async def _cached_answer(
    holder: ServiceHolder, scope: Scope, segment: str, authorization: bytes | None
) -> tuple[bytes, str] | None:
    """The body and entity tag the handler would send, if the cache holds them for this reader."""
    services = holder.services
    access = services.access
    if access.limits.limits_reads:
        return None
    if authorization is not None and access.limits.failed_authentications_used_up(client_address(scope)):
        return None
    now = dt.datetime.now(dt.UTC)
    entry = services.directory.cache.lookup(thing_id_from(segment), now)
    if entry is None:
        return None
    principal = await access.authenticator.authorize(
        None if authorization is None else authorization.decode("latin-1"), Access.READ
    )
    if not tenant_scope(principal, access.authenticator.mode).sees(entry.tenant):
        return None
    return entry.body(now), entry.etag


def answer_cached_reads(app: ASGIApp, holder: ServiceHolder) -> ASGIApp:
    """Wrap ``app`` (the application's ASGI handler, before routing) with the cached-read answer."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        segment = _plain_read(scope) if scope["type"] == ScopeType.HTTP else None
        if segment is None:
            await app(scope, receive, send)
            return
        started = time.perf_counter()
        authorization: bytes | None = None
        for name, value in scope["headers"]:
            if name in _CONDITIONAL:
                await app(scope, receive, send)
                return
            if name == b"authorization" and authorization is None:
                authorization = value
        try:
            answer = await _cached_answer(holder, scope, segment, authorization)
        except Exception as error:  # the application answers (and reports) whatever it was: a 401, a bad id
            log.debug("cached read of %r left to the application: %r", segment, error)
            answer = None
        if answer is None:
            await app(scope, receive, send)
            return
        body, etag = answer
        scope["path_template"] = ROUTE
        headers = [
            (b"etag", etag.encode("latin-1")),
            (b"content-type", _TD_JSON),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
        record_request("GET", ROUTE, 200, time.perf_counter() - started)

    return middleware


__all__ = ["ROUTE", "answer_cached_reads"]
