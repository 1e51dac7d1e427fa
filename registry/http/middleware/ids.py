"""Description ids in paths. Ids are IRIs (``urn:uuid:…``, ``https://host/a/b``) that hold ``/`` and ``//``,
which routing would split or collapse. ``ids_as_segments`` wraps the ASGI application and rewrites
``/things/{id}``, ``/api/v1/things/{id}/{tail}`` (summary, versions, export, lease, owner),
``/a2a/{id}/.well-known/agent-card.json`` and the MCP Registry API's ``/v0.1/servers/{name}/…`` and
``/v0/servers/{name}/…`` so the id (or server name), percent-encoded, is a single path segment; handlers declare
``{thing_id:str}`` and decode it with ``thing_id_from``. Clients may send ids percent-encoded or not.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote_to_bytes

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from registry.errors import BadRequest

THINGS_PREFIX = "/things/"
API_THINGS_PREFIX = "/api/v1/things/"
A2A_PREFIX = "/a2a/"
MCP_SERVERS_PREFIX = "/v0.1/servers/"
#: The MCP Registry API is served under both prefixes (registry/http/mcp.py).
MCP_SERVERS_PREFIXES = (MCP_SERVERS_PREFIX, "/v0/servers/")
#: An MCP server name has exactly one "/" (``io.github.user/weather``); a version none. Other names are taken too
#: (the shortest that leaves a valid tail), so the MCP API answers them (404 in its error format).
_MCP_TAIL = re.compile(r"^(?P<name>.+?)/(?P<tail>status|versions(?:/(?P<version>[^/]+)(?P<status>/status)?)?)$")
_A2A_TAIL = re.compile(r"^(?P<id>.+)/(?P<tail>\.well-known/agent-card\.json)$", re.DOTALL)
#: Every route under ``/api/v1/things/{id}/`` (tests/integration/test_ids_in_paths.py checks none is missing).
_API_TAIL = re.compile(r"^(?P<id>.+)/(?P<tail>summary|export|lease|owner|versions(?:/[^/]+)?)$", re.DOTALL)
#: Prefixes followed by an id and a fixed tail, with the pattern that splits them.
_ID_TAILS = ((API_THINGS_PREFIX, _API_TAIL), (A2A_PREFIX, _A2A_TAIL))


def _raw_rest(scope: Scope, prefix: str) -> bytes:
    raw: bytes = scope.get("raw_path") or scope["path"].encode()
    return unquote_to_bytes(raw.partition(b"?")[0][len(prefix) :])


def _rewrite(scope: Scope) -> None:
    new_path = _segmented(scope, scope["path"])
    if new_path is not None:
        scope["path"], scope["raw_path"] = new_path, new_path.encode()


def _segmented(scope: Scope, path: str) -> str | None:
    """``path`` with its id (or server name) as one percent-encoded segment; None for a path that names none."""
    if path.startswith(THINGS_PREFIX):
        rest = _raw_rest(scope, THINGS_PREFIX)
        return THINGS_PREFIX + quote(rest, safe="") if rest else None
    for prefix in MCP_SERVERS_PREFIXES:
        if path.startswith(prefix):
            return _server_path(scope, prefix)
    for prefix, tail in _ID_TAILS:
        if path.startswith(prefix):
            return _id_path(scope, prefix, tail)
    return None


def _server_path(scope: Scope, prefix: str) -> str | None:
    """An MCP Registry API path with the server name, and the version if any, each one segment."""
    match = _tail_match(scope, prefix, _MCP_TAIL)
    if match is None:
        return None
    tail = match["tail"] if match["version"] is None else f"versions/{quote(match['version'], safe='')}"
    return prefix + quote(match["name"], safe="") + "/" + tail + (match["status"] or "")


def _id_path(scope: Scope, prefix: str, pattern: re.Pattern[str]) -> str | None:
    match = _tail_match(scope, prefix, pattern)
    return None if match is None else prefix + quote(match["id"], safe="") + "/" + match["tail"]


def _tail_match(scope: Scope, prefix: str, pattern: re.Pattern[str]) -> re.Match[str] | None:
    try:
        return pattern.match(_raw_rest(scope, prefix).decode("utf-8"))
    except UnicodeDecodeError:
        return None  # not an id: routing answers 404


def ids_as_segments(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            _rewrite(scope)
        await app(scope, receive, send)

    return middleware


def thing_id_from(segment: str) -> str:
    """The id of a segment made by ``ids_as_segments`` (the input boundary has checked it is UTF-8 without
    U+0000; other control characters may name a description stored before ids were checked, which can then be
    read and deleted)."""
    thing_id = unquote_to_bytes(segment).decode("utf-8")
    if not thing_id:
        raise BadRequest("The path names no Thing Description id")
    return thing_id
