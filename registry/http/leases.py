"""Leases: ``POST /api/v1/things/{id}/lease`` keeps a registration alive without re-sending it."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_to_bytes

import msgspec
from litestar import Request, Response, post
from litestar.datastructures import State

from registry.descriptions.registration import format_time
from registry.errors import BadRequest, NotFound
from registry.service import DirectoryService

_PREFIX = b"/api/v1/things/"
_SUFFIX = b"/lease"


def _leased_id(request: Request[Any, Any, Any]) -> str:
    """The id from the raw path (ids may hold ``/`` and ``//``), which must end in ``/lease``."""
    raw_path: bytes = request.scope.get("raw_path") or request.scope["path"].encode()
    _, _, rest = raw_path.partition(_PREFIX)
    if not rest.endswith(_SUFFIX):
        raise NotFound(f"No resource at {request.url.path}")
    try:
        thing_id = unquote_to_bytes(rest[: -len(_SUFFIX)]).decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadRequest("The id in the path is not valid percent-encoded UTF-8") from error
    if not thing_id:
        raise BadRequest("The path names no Thing Description id")
    return thing_id


@post(
    "/api/v1/things/{path:path}",
    operation_id="renewLease",
    summary="Renew the lease of a registration: expires = now + its ttl; no change event",
    tags=["Leases"],
    status_code=200,
)
async def renew_lease(path: str, request: Request[Any, Any, Any], state: State) -> Response[bytes]:
    directory: DirectoryService = state.directory
    lease = await directory.renew_lease(_leased_id(request))
    body = {
        "id": lease.id,
        "ttl": int(lease.ttl) if lease.ttl.is_integer() else lease.ttl,
        "expires": format_time(lease.expires),
        "lastSeen": format_time(lease.last_seen),
    }
    return Response(content=msgspec.json.encode(body), media_type="application/json")


__all__ = ["renew_lease"]
