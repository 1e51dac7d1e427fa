"""``/livez`` and ``/readyz``: what the container runtime's probes and load balancers ask."""

from __future__ import annotations

import msgspec
from litestar import Response, get
from litestar.di import NamedDependency

from registry.health import Readiness, status
from registry.http.contract import JSON_OBJECT, Answer, documented
from registry.http.problems import problem_response

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
        **documented(answers={200: Answer("Alive", {"application/json": JSON_OBJECT})}, common_problems=False),
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
async def readyz(readiness: NamedDependency[Readiness]) -> Response[bytes]:
    """Database reachable with the expected schema, SPARQL worker up, change feed not lagging; else 503."""
    checks = await readiness.checks()
    report = {check.name: {"ok": check.ok, "status": check.state, "detail": check.detail} for check in checks}
    failing = [check for check in checks if not check.ok and check.counts]
    if failing:
        named = "; ".join(f"{check.name}: {check.detail}" for check in failing)
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


__all__ = ["livez", "readyz"]
