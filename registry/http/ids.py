"""Description ids in paths. Ids are IRIs (``urn:uuid:…``, ``https://host/a/b``) that hold ``/`` and ``//``,
which routing would split or collapse. ``ids_as_segments`` wraps the ASGI application and rewrites
``/things/{id}`` and ``/api/v1/things/{id}/{tail}`` so the id, percent-encoded, is a single path segment; handlers
declare ``{thing_id:str}`` and decode it with ``thing_id_from``. Clients may send ids percent-encoded or not.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote, unquote_to_bytes

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from registry.errors import BadRequest

THINGS_PREFIX = "/things/"
API_THINGS_PREFIX = "/api/v1/things/"
_API_TAIL = re.compile(r"^(?P<id>.+)/(?P<tail>summary|export|lease|versions(?:/[^/]+)?)$")


def _raw_rest(scope: Scope, prefix: str) -> str | None:
    raw: bytes = scope.get("raw_path") or scope["path"].encode()
    try:
        return unquote_to_bytes(raw.partition(b"?")[0][len(prefix) :]).decode("utf-8")
    except UnicodeDecodeError:
        return None


def _rewrite(scope: Scope) -> None:
    path: str = scope["path"]
    if path.startswith(THINGS_PREFIX):
        rest = _raw_rest(scope, THINGS_PREFIX)
        new_path = THINGS_PREFIX + quote(rest, safe="") if rest else None
    elif path.startswith(API_THINGS_PREFIX):
        rest = _raw_rest(scope, API_THINGS_PREFIX)
        match = _API_TAIL.match(rest or "")
        new_path = API_THINGS_PREFIX + quote(match["id"], safe="") + "/" + match["tail"] if match else None
    else:
        return
    if new_path is not None:  # else routing answers as for any unknown path
        scope["path"], scope["raw_path"] = new_path, new_path.encode()


def ids_as_segments(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            _rewrite(scope)
        await app(scope, receive, send)

    return middleware


def thing_id_from(segment: str) -> str:
    thing_id = unquote(segment)
    if not thing_id:
        raise BadRequest("The path names no Thing Description id")
    return thing_id
