"""The input boundary: every byte of the request line, the headers and the body is checked once, before routing.

Whatever a handler later reads is then valid UTF-8 without U+0000 (which PostgreSQL text cannot hold) and within
the size limits, so no decoder or driver deeper in can fail on client input with a 500. Refusals are precise 400s
(414 for a URL over the limit); bodies are checked as they stream in, so a 4 MB body costs one pass and no copy.

A refused request line is marked in the scope and refused by ``refuse_marked_input`` (the application's
``before_request``), so that the route's own error format applies (the MCP registry API answers
``application/json``); a request that matches no route is a 404 problem.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote_to_bytes

from litestar import Request
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from registry.errors import BadRequest, RegistryError

#: C0 controls and DEL: never part of a path (``%0d%0a`` would forge log lines where logs are not escaped), except
#: percent-encoded in the id of a description stored before ids were checked (``_ID_PATHS``).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RAW_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")
#: Paths whose next segments are a description's id. No id the directory accepts holds a control character (every
#: write refuses them with the id rule, registry/descriptions/ids.py, which names the character), but one stored
#: before must still be readable and deletable; logs escape them (registry/logs.py).
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
    if _RAW_CONTROL.search(path):
        raise InputRefused(400, "The path contains a control character (U+0000 to U+001F or U+007F)")
    if b"%" in path or not path.isascii():
        text = _decoded(path, "path")
        if "\x00" in text:
            raise InputRefused(400, "The path contains a U+0000 (NUL), which nothing this directory holds contains")
        if not path.startswith(_ID_PATHS) and _CONTROL.search(text):
            raise InputRefused(400, "The path contains a control character (U+0000 to U+001F or U+007F)")
    for pair in query.split(b"&") if query else ():
        name, _, value = pair.partition(b"=")
        name_text = _decoded(name.replace(b"+", b" "), "query string")
        value_text = _decoded(value.replace(b"+", b" "), f"query parameter {name_text!r}")
        if "\x00" in name_text or "\x00" in value_text:
            raise InputRefused(400, f"The query parameter {name_text.replace(chr(0), '')!r} contains a U+0000 (NUL)")


def check_headers(headers: Iterable[tuple[bytes, bytes]]) -> None:
    for name, value in headers:
        if b"\x00" in value:
            raise InputRefused(400, f"The header {name.decode('latin-1')} contains a NUL byte")


class _Utf8Body:
    """``receive`` that checks the body is UTF-8 as it streams in (every body this directory reads is text)."""

    def __init__(self, receive: Receive) -> None:
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
        return message


#: Scope key of the refusal of a request line.
REFUSAL = "registry.input_refusal"


async def refuse_marked_input(request: Request[Any, Any, Any]) -> None:
    refusal = request.scope.get(REFUSAL)
    if isinstance(refusal, InputRefused):
        raise refusal


def input_boundary(app: ASGIApp, *, max_url_bytes: int) -> ASGIApp:
    """Wrap the application: a request line failing the checks is marked for ``refuse_marked_input``; bodies are
    checked as the handler reads them."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode()
        try:
            check_request_line(raw_path.partition(b"?")[0], scope.get("query_string", b""), max_url_bytes)
            check_headers(scope.get("headers", []))
        except InputRefused as refusal:
            scope[REFUSAL] = refusal  # type: ignore[literal-required]
        await app(scope, _Utf8Body(receive), send)

    return middleware


__all__ = ["InputRefused", "check_request_line", "input_boundary", "refuse_marked_input"]
