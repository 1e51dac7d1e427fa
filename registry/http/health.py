"""``/livez`` and ``/readyz``: what the container runtime's probes and load balancers ask.

Both are public (probes carry no credentials), so they name checks and their states only; what a check found
(errors, addresses, paths) is logged, and shown in ``/readyz`` to a request with an admin's credentials (to
everyone while authentication is off, when everyone may see everything), without any URL's credentials or query.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response, get
from litestar.di import NamedDependency

from registry.auth.authenticator import AuthMode
from registry.errors import RegistryError
from registry.http.contract import JSON_OBJECT, Answer, documented
from registry.http.dependencies import Access
from registry.http.problems import problem_response
from registry.ops.health import Readiness, status

#: Seconds a load balancer should wait before asking an unready replica again.
RETRY_AFTER = "5"


@get(
    "/livez",
    operation_id="livez",
    summary="Liveness: the process answers",
    tags=["Operations"],
    sync_to_thread=False,
    opt={  # probes carry no credentials (registry/http/access.py)
        "access": "public",
        **documented(
            answers={200: Answer("Alive", {"application/json": JSON_OBJECT})},
            problems={400: "The request was refused at the input boundary (e.g. an invalid percent-encoding)"},
            common_problems=False,
        ),
    },
)
def livez() -> Response[bytes]:
    """The process answers: a liveness probe restarts the replica when this stops answering."""
    return Response(content=b'{"status":"alive"}', media_type="application/json", headers={"Cache-Control": "no-store"})


@get(
    "/readyz",
    operation_id="readyz",
    summary="Readiness: database, SPARQL worker, change feed",
    tags=["Operations"],
    opt={
        "access": "public",
        **documented(
            answers={200: Answer("Ready, with each check", {"application/json": JSON_OBJECT})},
            problems={503: "Not ready: the problem's checks name each failing one"},
        ),
    },
)
async def readyz(
    request: Request[Any, Any, Any], readiness: NamedDependency[Readiness], access: NamedDependency[Access]
) -> Response[bytes]:
    """Database reachable with the expected schema, SPARQL worker up, change feed not lagging; else 503."""
    checks = await readiness.checks()
    detailed = await _admin_asks(access, request.headers.get("authorization"))
    report = {check.name: check.shown(detailed) for check in checks}
    failing = [check for check in checks if not check.ok and check.counts]
    if failing:
        named = "; ".join(
            f"{check.name}: {report[check.name]['detail']}" if detailed else check.name for check in failing
        )
        return problem_response(
            503,
            f"Not ready: {named}",
            headers={"Retry-After": RETRY_AFTER, "Cache-Control": "no-store"},
            checks=report,
        )
    return Response(
        content=msgspec.json.encode({"status": status(checks), "checks": report}),
        media_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


async def _admin_asks(access: Access, authorization: str | None) -> bool:
    """Whether the request carries an admin's credentials (a probe's missing or bad ones just get the states);
    while authentication is off everyone may see everything, as with tenants and ``/metrics``."""
    if access.authenticator.mode is AuthMode.OFF:
        return True
    if not authorization:
        return False
    try:
        principal = await access.authenticator.principal(authorization)
    except RegistryError:
        return False
    return principal is not None and principal.is_admin


__all__ = ["livez", "readyz"]
