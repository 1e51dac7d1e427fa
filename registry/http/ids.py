"""Description ids in paths. Ids are IRIs (``urn:uuid:…``, ``https://host/a/b``) that hold ``/`` and ``//``,
which routing would split or collapse. ``ids_as_segments`` wraps the ASGI application and rewrites
``/things/{id}`` and ``/api/v1/things/{id}/{tail}`` so the id, percent-encoded, is a single path segment; handlers
declare ``{thing_id:str}`` and decode it with ``thing_id_from``. Clients may send ids percent-encoded or not.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote_to_bytes

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from registry.errors import BadRequest

THINGS_PREFIX = "/things/"
API_THINGS_PREFIX = "/api/v1/things/"
_API_TAIL = re.compile(r"^(?P<id>.+)/(?P<tail>summary|export|lease|versions(?:/[^/]+)?)$")


def _raw_rest(scope: Scope, prefix: str) -> bytes:
    raw: bytes = scope.get("raw_path") or scope["path"].encode()
    return unquote_to_bytes(raw.partition(b"?")[0][len(prefix) :])


def _rewrite(scope: Scope) -> None:
    path: str = scope["path"]
    new_path = None
    if path.startswith(THINGS_PREFIX):
        rest = _raw_rest(scope, THINGS_PREFIX)
        # Undecodable bytes stay encoded: thing_id_from refuses them with a 400.
        new_path = THINGS_PREFIX + quote(rest, safe="") if rest else None
    elif path.startswith(API_THINGS_PREFIX):
        try:
            match = _API_TAIL.match(_raw_rest(scope, API_THINGS_PREFIX).decode("utf-8"))
        except UnicodeDecodeError:
            match = None  # not an id: routing answers 404
        if match:
            new_path = API_THINGS_PREFIX + quote(match["id"], safe="") + "/" + match["tail"]
    if new_path is not None:
        scope["path"], scope["raw_path"] = new_path, new_path.encode()


def ids_as_segments(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            _rewrite(scope)
        await app(scope, receive, send)

    return middleware


def thing_id_from(segment: str) -> str:
    """The id of a segment made by ``ids_as_segments``; refuses what no stored id can be."""
    try:
        thing_id = unquote_to_bytes(segment).decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest("The id in the path is not valid percent-encoded UTF-8") from error
    if not thing_id:
        raise BadRequest("The path names no Thing Description id")
    if "\x00" in thing_id:
        raise BadRequest("The id in the path contains a U+0000 (NUL) character")
    return thing_id
