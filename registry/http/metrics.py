"""``/metrics``: the Prometheus text format, request metrics and the registry's own (see registry/metrics.py)."""

from __future__ import annotations

from litestar import Response, get
from litestar.di import NamedDependency
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from registry.http.contract import Answer, documented
from registry.metrics import Gauges


@get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics",
    tags=["Operations"],
    opt=documented(
        answers={200: Answer("Prometheus text exposition format", {CONTENT_TYPE_LATEST: {"type": "string"}})}
    ),
)
async def metrics(gauges: NamedDependency[Gauges]) -> Response[bytes]:
    await gauges.refresh()
    return Response(content=generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


__all__ = ["metrics"]
