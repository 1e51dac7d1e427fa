"""``/metrics``: the Prometheus text format, request metrics and the registry's own (see registry/ops/metrics.py).
OpenMetrics when the scraper asks for it in ``Accept`` (as Prometheus does), else the Prometheus text format.

The gauges count every tenant's descriptions and show the replica's internals, so once authentication is on only
an admin or the scrape token (``REGISTRY_METRICS_TOKEN``, for Prometheus) reads them; with authentication off
(everyone sees everything) they are open, like the rest of the directory.
"""

from __future__ import annotations

import hmac
from typing import Any

from litestar import Request, Response, get
from litestar.di import NamedDependency
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_CONTENT_TYPE

from registry.auth.authenticator import AuthMode
from registry.auth.principal import Scope
from registry.http.contract import Answer, documented
from registry.http.dependencies import Access
from registry.ops.metrics import Gauges


@get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics (admin or REGISTRY_METRICS_TOKEN once authentication is on)",
    tags=["Operations"],
    opt={
        # Checked here: the scrape token is no principal of the guard's.
        "access": "public",
        **documented(
            answers={
                200: Answer(
                    "Prometheus text exposition format, or OpenMetrics when `Accept` asks for it",
                    {CONTENT_TYPE_LATEST: {"type": "string"}, OPENMETRICS_CONTENT_TYPE: {"type": "string"}},
                )
            },
            problems={
                401: "Authentication is on and the request carries no credentials",
                403: "The credentials are neither an admin's nor the scrape token",
            },
        ),
    },
)
async def metrics(
    request: Request[Any, Any, Any], gauges: NamedDependency[Gauges], access: NamedDependency[Access]
) -> Response[bytes]:
    await _require_scraper(access, request.headers.get("authorization"))
    await gauges.refresh()
    encode, content_type = choose_encoder(request.headers.get("accept", ""))
    # The header is given whole: Litestar would append a second charset to a text/* media type.
    return Response(content=encode(REGISTRY), media_type=content_type, headers={"Content-Type": content_type})


async def _require_scraper(access: Access, authorization: str | None) -> None:
    """Nothing to check with authentication off; else the scrape token, or an admin (401/403 otherwise)."""
    if access.authenticator.mode is AuthMode.OFF:
        return
    scheme, _, credential = (authorization or "").partition(" ")
    expected = access.metrics_token.encode()
    if expected and scheme.lower() == "bearer" and hmac.compare_digest(credential.strip().encode(), expected):
        return
    await access.authenticator.authorize(authorization, Scope.ADMIN)


__all__ = ["metrics"]
