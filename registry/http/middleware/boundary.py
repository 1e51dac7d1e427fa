"""The input boundary: every byte of the request line, the headers and the body is checked once, before routing.

Whatever a handler later reads is then valid UTF-8 without U+0000 (which PostgreSQL text cannot hold) and within
the size limits, so no decoder or driver deeper in can fail on client input with a 500. Refusals are precise 400s
(414 for a URL over the limit); bodies are checked as they stream in, so a 4 MB body costs one pass and no copy.

A refused request line is marked in the scope and refused by ``refuse_marked_input`` (the application's
``before_request``), so that the route's own error format applies (the MCP registry API answers
``application/json``); a request that matches no route is a 404 problem.

Before any of that, a request must be meant for this directory (registry/http/middleware/sites.py): a ``Host`` it does
not answer to is a 400 and an unsafe request from another site's page a 403, answered here for every path, before the
body is read, so that neither DNS rebinding nor a cross-site form reaches a handler.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Awaitable, Iterable
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote_to_bytes

import msgspec
from litestar import Request
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from registry.errors import BadRequest, RegistryError
from registry.http.middleware.access_log import access_logged
from registry.http.middleware.sites import UNSAFE_METHODS, SitePolicy

#: C0 controls and DEL: never part of a path (``%0d%0a`` would forge log lines where logs are not escaped), except
#: percent-encoded in the id of a description stored before ids were checked (``_ID_PATHS``).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RAW_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")
#: Paths whose next segments are a description's id. No id the directory accepts holds a control character (every
#: write refuses them with the id rule, registry/descriptions/ids.py, which names the character), but one stored
#: before must still be readable and deletable; logs escape them (registry/ops/logs.py).
_ID_PATHS = (b"/things/", b"/api/v1/things/", b"/a2a/")


class InputRefused(RegistryError):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = HTTPStatus(status)


def _decoded(raw: bytes, where: str) -> str:
    try:
        return unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputRefused(400, f"The {where} is not valid percent-encoded UTF-8 (byte {error.start})") from error


def check_request_line(path: bytes, query: bytes, max_url_bytes: int) -> None:
    """Refuse a request line no handler could use: too long, undecodable, or with control characters."""
    if len(path) + len(query) > max_url_bytes:
        raise InputRefused(
            414, f"The URL is {len(path) + len(query)} bytes long; this directory accepts up to {max_url_bytes}"
        )
    _check_path(path)
    if query:
        _check_query(query)


def _check_path(path: bytes) -> None:
    """Control characters are refused, raw or percent-encoded (but for those in ids, ``_ID_PATHS``); U+0000
    everywhere."""
    if _RAW_CONTROL.search(path):
        raise InputRefused(400, "The path contains a control character (U+0000 to U+001F or U+007F)")
    if b"%" in path or not path.isascii():
        text = _decoded(path, "path")
        if "\x00" in text:
            raise InputRefused(400, "The path contains a U+0000 (NUL), which nothing this directory holds contains")
        if not path.startswith(_ID_PATHS) and _CONTROL.search(text):
            raise InputRefused(400, "The path contains a control character (U+0000 to U+001F or U+007F)")


def _check_query(query: bytes) -> None:
    """Each parameter's name and value decode (``+`` is a space) and hold no U+0000."""
    for pair in query.split(b"&"):
        name, _, value = pair.partition(b"=")
        name_text = _decoded(name.replace(b"+", b" "), "query string")
        value_text = _decoded(value.replace(b"+", b" "), f"query parameter {name_text!r}")
        if "\x00" in name_text or "\x00" in value_text:
            raise InputRefused(400, f"The query parameter {name_text.replace(chr(0), '')!r} contains a U+0000 (NUL)")


def check_headers(headers: Iterable[tuple[bytes, bytes]]) -> None:
    for name, value in headers:
        if b"\x00" in value:
            raise InputRefused(400, f"The header {name.decode('latin-1')} contains a NUL byte")


#: Scope key the connection protocol (registry/http/middleware/connections.py) sets when a body did not arrive within
#: ``REGISTRY_BODY_TIMEOUT``: it has answered 408 itself, and the application's read of the body ends with that 408.
BODY_TIMED_OUT = "registry.body_timed_out"


class _Utf8Body:
    """``receive`` that checks the body is UTF-8 as it streams in (every body this directory reads is text)."""

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self._scope = scope
        self._receive = receive
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._offset = 0

    async def __call__(self) -> ReceiveMessage:
        message = await self._receive()
        if message["type"] == "http.request":
            chunk: bytes = message.get("body", b"")
            final = not message.get("more_body", False)
            try:
                self._decoder.decode(chunk, final)
            except UnicodeDecodeError as error:
                raise BadRequest(f"The request body is not valid UTF-8 (byte {self._offset + error.start})") from error
            self._offset += len(chunk)
        elif message["type"] == "http.disconnect" and BODY_TIMED_OUT in self._scope:
            raise InputRefused(408, self._scope[BODY_TIMED_OUT])  # type: ignore[literal-required]
        return message


#: Scope key of the refusal of a request line.
REFUSAL = "registry.input_refusal"


async def refuse_marked_input(request: Request[Any, Any, Any]) -> None:
    refusal = request.scope.get(REFUSAL)
    if isinstance(refusal, InputRefused):
        raise refusal


#: Longest piece of a refused ``Host`` or ``Origin`` quoted in the problem.
_QUOTED_CHARS = 100


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return str(value.decode("latin-1"))
    return None


def site_refusal(scope: Scope, sites: SitePolicy) -> tuple[int, str] | None:
    """The status and detail refusing a request not meant for this directory, or None."""
    host = _header(scope, b"host")
    if not sites.host_allowed(host):
        return 400, (
            f"Host not allowed: {str(host)[:_QUOTED_CHARS]!r} is not a name of this directory (REGISTRY_ALLOWED_HOSTS)"
        )
    method = str(scope.get("method", "GET"))
    if method not in UNSAFE_METHODS:
        return None
    origin = _header(scope, b"origin")
    if origin is not None and not sites.origin_allowed(origin, host):
        return 403, (
            f"Cross-site {method} refused: pages of {origin[:_QUOTED_CHARS]!r} may not change this directory "
            "(REGISTRY_CORS_ORIGINS lists the origins that may)"
        )
    return None


async def send_problem(send: Send, status: int, detail: str) -> None:
    """Answer with a problem document (RFC 7807) before the application: no route's handler runs."""
    body = msgspec.json.encode(
        {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status, "detail": detail}
    )
    headers = [
        (b"content-type", b"application/problem+json; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def input_boundary(
    app: ASGIApp, *, max_url_bytes: int, sites: SitePolicy | None = None, access_log: bool = False
) -> ASGIApp:
    """Wrap the application: a request not meant for this directory (``sites``) is refused at once; a request
    line failing the checks is marked for ``refuse_marked_input``; bodies are checked as the handler reads them.

    With ``access_log`` the same layer logs each request (registry/http/middleware/access_log.py), refusals
    included: one layer around every request rather than two."""

    def enter(scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """An HTTP request's way in: a refusal answered at once, or the application with the body checked (a
        plain function returning the awaitable, so that the access log calls it without a coroutine of its own)."""
        refused = None if sites is None else site_refusal(scope, sites)
        if refused is not None:
            return send_problem(send, *refused)
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        try:
            check_request_line(raw_path.partition(b"?")[0], scope.get("query_string", b""), max_url_bytes)
            check_headers(scope.get("headers", []))
        except InputRefused as refusal:
            scope[REFUSAL] = refusal  # type: ignore[literal-required]
        return app(scope, _Utf8Body(scope, receive), send)

    if access_log:
        return access_logged(app, enter)

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        await enter(scope, receive, send)

    return middleware


__all__ = [
    "BODY_TIMED_OUT",
    "InputRefused",
    "check_request_line",
    "input_boundary",
    "refuse_marked_input",
    "send_problem",
    "site_refusal",
]
