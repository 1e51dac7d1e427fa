"""Leases: ``POST /api/v1/things/{id}/lease`` keeps a registration alive without re-sending it; ``GET`` tells when
it was last renewed (or written) and when it expires."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath

from registry.descriptions.registration_info import format_time
from registry.directory.service import DirectoryService
from registry.http.access import principal_of, tenant_scope_of
from registry.http.contract import Answer, documented
from registry.http.middleware.ids import thing_id_from

_LEASE_SCHEMA = {
    "type": "object",
    "required": ["id", "ttl", "expires", "lastSeen"],
    "properties": {
        "id": {"type": "string"},
        "ttl": {"type": ["number", "null"]},
        "expires": {"type": ["string", "null"], "format": "date-time"},
        "lastSeen": {"type": "string", "format": "date-time"},
    },
}


def _ttl(ttl: float) -> float | int:
    return int(ttl) if ttl.is_integer() else ttl


@post(
    "/api/v1/things/{thing_id:str}/lease",
    operation_id="renewLease",
    summary="Renew the lease of a registration: expires = now + its ttl; no change event",
    tags=["Leases"],
    status_code=200,
    opt=documented(
        answers={
            200: Answer(
                "The renewed lease",
                {
                    "application/json": {
                        "type": "object",
                        "required": ["id", "ttl", "expires", "lastSeen"],
                        "properties": {
                            "id": {"type": "string"},
                            "ttl": {"type": "number"},
                            "expires": {"type": "string", "format": "date-time"},
                            "lastSeen": {"type": "string", "format": "date-time"},
                        },
                    }
                },
            )
        },
        problems={409: "The registration has no ttl, so there is no lease to renew"},
    ),
)
async def renew_lease(
    thing_id: FromPath[str], request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService]
) -> Response[bytes]:
    lease = await directory.renew_lease(thing_id_from(thing_id), principal=principal_of(request))
    body = {
        "id": lease.id,
        "ttl": _ttl(lease.ttl),
        "expires": format_time(lease.expires),
        "lastSeen": format_time(lease.last_seen),
    }
    return Response(content=msgspec.json.encode(body), media_type="application/json")


@get(
    "/api/v1/things/{thing_id:str}/lease",
    operation_id="leaseOf",
    summary="The lease of a registration: its ttl, expiry and last renewal or write (lastSeen)",
    tags=["Leases"],
    opt=documented(
        answers={
            200: Answer(
                "The lease as it stands; ttl and expires are null for a registration without a ttl",
                {"application/json": _LEASE_SCHEMA},
            )
        },
    ),
)
async def current_lease(
    thing_id: FromPath[str], request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService]
) -> Response[bytes]:
    thing_id = thing_id_from(thing_id)
    lease = await directory.lease(thing_id, tenant_scope_of(request))
    body = {
        "id": thing_id,
        "ttl": None if lease.ttl is None else _ttl(lease.ttl),
        "expires": None if lease.expires is None else format_time(lease.expires),
        "lastSeen": format_time(lease.last_seen),
    }
    return Response(content=msgspec.json.encode(body), media_type="application/json")


__all__ = ["current_lease", "renew_lease"]
