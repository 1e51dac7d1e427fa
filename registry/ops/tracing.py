"""Optional OpenTelemetry tracing: a span per request (Litestar's OpenTelemetry plugin), exported over OTLP/HTTP.

Off by default (``REGISTRY_TRACING``); its packages come with the ``tracing`` extra
(``pip install '.[tracing]'`` in a clone). Where spans go is OpenTelemetry's own configuration:
``OTEL_EXPORTER_OTLP_ENDPOINT`` (default ``http://localhost:4318``), ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_BSP_*``.
"""

from __future__ import annotations

from typing import Any

from litestar.plugins import InitPlugin

from registry.config import ConfigError, Settings

SERVICE_NAME = "lmos-registry"


def tracing_plugins(settings: Settings) -> list[InitPlugin]:
    """The plugins that trace requests: none unless ``settings.tracing``."""
    if not settings.tracing:
        return []
    try:
        from litestar.plugins.opentelemetry import OpenTelemetryConfig, OpenTelemetryPlugin
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as error:
        raise ConfigError(
            "REGISTRY_TRACING=true needs the OpenTelemetry packages: install the registry with its tracing extra "
            "(pip install '.[tracing]' in its clone, or pip install 'WHEEL[tracing]' for a built wheel)"
        ) from error
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    config = OpenTelemetryConfig(
        tracer_provider=provider,
        server_request_hook_handler=_remember_server_span,
        client_response_hook_handler=_name_by_route,
    )
    return [OpenTelemetryPlugin(config)]


_SERVER_SPAN = "registry.server_span"


def _remember_server_span(span: Any, scope: dict[str, Any]) -> None:
    scope[_SERVER_SPAN] = span


def _name_by_route(span: Any, scope: dict[str, Any], message: dict[str, Any]) -> None:
    """Once routed, the request's span is named by route template (``GET /things/{thing_id}``), never by the id
    requested: span names stay few (the middleware runs before routing, when only the path is known)."""
    server_span = scope.get(_SERVER_SPAN)
    route = scope.get("path_template")
    if message.get("type") == "http.response.start" and server_span is not None and route:
        server_span.update_name(f"{scope.get('method', '')} {route}")
        server_span.set_attribute("http.route", route)
