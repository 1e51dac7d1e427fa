"""All configuration in one place: typed settings read from ``REGISTRY_*`` environment variables.

Every variable is listed (with its default) in the README's configuration table; keep the two in step.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import platformdirs

T = TypeVar("T")

ENV_PREFIX = "REGISTRY_"


class ConfigError(ValueError):
    """A REGISTRY_* variable holds a value that cannot be used; raised at start-up, never later."""


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("lmos-registry", appauthor=False))


def _parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"expected a boolean (true/false), got {raw!r}")


def _parse_list(raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """Runtime settings. Field names map to ``REGISTRY_<FIELD_NAME_UPPER>``."""

    # -- server
    host: str = "127.0.0.1"
    port: int = 8080
    #: Base URL clients use to reach this server (behind a proxy); default: http://{host}:{port}
    public_url: str = ""
    log_level: str = "info"
    #: Largest accepted request body, in bytes (413 above).
    max_body_bytes: int = 4 * 1024 * 1024

    # -- storage
    #: PostgreSQL URL (postgresql://…); empty = embedded PostgreSQL under ``data_dir``.
    database_url: str = ""
    data_dir: Path = dataclasses.field(default_factory=_default_data_dir)
    #: Apply Alembic migrations when ``registry serve`` starts.
    migrate_on_start: bool = True
    db_pool_size: int = 10

    # -- registration lifecycle
    #: Upper bound for ``ttl`` in seconds (0 = unbounded); larger values are rejected with 400.
    max_ttl: int = 0
    #: Reject registrations without a ``ttl`` (agents must keep a lease alive).
    mandate_ttl: bool = False
    #: How often expired descriptions are purged, in seconds.
    purge_interval: float = 60.0

    # -- listing
    #: Page size used when ``limit`` is larger than this.
    max_page_size: int = 1000

    # -- semantic layer
    #: Reject descriptions whose @context names a remote context that is not bundled (default: store them).
    strict_contexts: bool = False
    #: Directory holding extra JSON-LD contexts: ``index.json`` maps context URLs to files in it.
    context_dir: Path | None = None
    #: SPARQL query timeout in seconds.
    sparql_timeout: float = 10.0
    #: Largest number of SPARQL result rows / triples returned.
    sparql_max_results: int = 10_000
    #: SPARQL SERVICE endpoints that federated queries may call (empty = federation off).
    sparql_service_allowlist: tuple[str, ...] = ()

    # -- events
    #: Seconds between SSE keep-alive comments.
    sse_keepalive: float = 15.0
    #: Events buffered per SSE subscriber before it is dropped and told to reconnect.
    sse_queue_size: int = 1000
    #: Seconds between reads of the change log when no notification arrives (fallback for lost NOTIFYs).
    feed_poll_interval: float = 5.0

    @property
    def base_url(self) -> str:
        """The externally visible base URL, without a trailing slash."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from the environment; explicit ``overrides`` (e.g. CLI flags) win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            key = ENV_PREFIX + field.name.upper()
            if key not in env:
                continue
            parser = _PARSERS[field.name]
            try:
                values[field.name] = parser(env[key])
            except ValueError as error:
                raise ConfigError(f"{key}: {error}") from error
        values.update({name: value for name, value in overrides.items() if value is not None})
        return cls(**values)


def _path(raw: str) -> Path:
    return Path(raw).expanduser()


def _optional_path(raw: str) -> Path | None:
    return Path(raw).expanduser() if raw.strip() else None


def _positive(parse: Callable[[str], T]) -> Callable[[str], T]:
    def parse_positive(raw: str) -> T:
        value = parse(raw)
        if value < 0:  # type: ignore[operator]
            raise ValueError(f"must not be negative, got {raw!r}")
        return value

    return parse_positive


_PARSERS: dict[str, Callable[[str], Any]] = {
    "host": str,
    "port": _positive(int),
    "public_url": str,
    "log_level": str,
    "max_body_bytes": _positive(int),
    "database_url": str,
    "data_dir": _path,
    "migrate_on_start": _parse_bool,
    "db_pool_size": _positive(int),
    "max_ttl": _positive(int),
    "mandate_ttl": _parse_bool,
    "purge_interval": _positive(float),
    "max_page_size": _positive(int),
    "strict_contexts": _parse_bool,
    "context_dir": _optional_path,
    "sparql_timeout": _positive(float),
    "sparql_max_results": _positive(int),
    "sparql_service_allowlist": _parse_list,
    "sse_keepalive": _positive(float),
    "sse_queue_size": _positive(int),
    "feed_poll_interval": _positive(float),
}
