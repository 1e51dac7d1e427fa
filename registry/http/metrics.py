"""``/metrics``: the Prometheus text format, request metrics and the registry's own (see registry/metrics.py).
OpenMetrics when the scraper asks for it in ``Accept`` (as Prometheus does), else the Prometheus text format."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, get
from litestar.di import NamedDependency
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_CONTENT_TYPE

from registry.http.contract import Answer, documented
from registry.metrics import Gauges


@get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics",
    tags=["Operations"],
    opt=documented(
        answers={
            200: Answer(
                "Prometheus text exposition format, or OpenMetrics when `Accept` asks for it",
                {CONTENT_TYPE_LATEST: {"type": "string"}, OPENMETRICS_CONTENT_TYPE: {"type": "string"}},
            )
        }
    ),
)
async def metrics(request: Request[Any, Any, Any], gauges: NamedDependency[Gauges]) -> Response[bytes]:
    await gauges.refresh()
    encode, content_type = choose_encoder(request.headers.get("accept", ""))
    # The header is given whole: Litestar would append a second charset to a text/* media type.
    return Response(content=encode(REGISTRY), media_type=content_type, headers={"Content-Type": content_type})


__all__ = ["metrics"]
