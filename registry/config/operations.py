"""Settings of the group "Logs and operations": logs, tracing, metrics, readiness."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from registry.config.fields import OPERATIONS, setting
from registry.config.parsers import choice, non_negative, parse_bool


@dataclasses.dataclass(frozen=True)
class OperationSettings:
    """The fields of :class:`registry.config.Settings` in the group ``OPERATIONS``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    log_level: str = setting(
        OPERATIONS,
        "info",
        "Log level (`debug` also shows the embedded PostgreSQL's output; an unexpected error, a 500, is logged at "
        "`error` with its traceback and request id).",
    )
    log_format: str = setting(
        OPERATIONS,
        "auto",
        "`json` (one object a line), `console` (readable lines) or `auto` (JSON unless stderr is a terminal).",
    )
    access_log: bool = setting(
        OPERATIONS,
        True,
        "One log line per request: method, path, route, status, duration, request id (`X-Request-ID`).",
    )
    tracing: bool = setting(
        OPERATIONS,
        False,
        "OpenTelemetry spans per request, exported over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT`; needs the "
        "`tracing` extra (`pip install '.[tracing]'`).",
    )
    metrics_token: str = setting(
        OPERATIONS,
        "",
        "Bearer token that lets Prometheus read `/metrics` once authentication is on (besides admins); also as "
        "`…_FILE`.",
    )
    ready_max_feed_lag: float = setting(
        OPERATIONS,
        30.0,
        "Seconds the change feed may lag behind the change log before `/readyz` answers 503.",
    )


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "log_level": str,
    "log_format": choice("auto", "json", "console"),
    "access_log": parse_bool,
    "tracing": parse_bool,
    "metrics_token": str,
    "ready_max_feed_lag": non_negative(float),
}
