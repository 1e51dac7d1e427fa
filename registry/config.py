"""All configuration in one place: typed settings read from ``REGISTRY_*`` environment variables.

Every variable is listed (with its default) in the README's configuration table; keep the two in step.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import platformdirs

from registry.rates import parse_rate

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
    #: ``json`` (one JSON object a line), ``console`` (readable lines) or ``auto`` (JSON unless stderr is a terminal).
    log_format: str = "auto"
    #: One log line per request (method, path, route, status, duration, request id).
    access_log: bool = True
    #: OpenTelemetry spans per request, exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_*); needs the ``tracing`` extra.
    tracing: bool = False
    #: Largest accepted request body, in bytes (413 above).
    max_body_bytes: int = 4 * 1024 * 1024
    #: Seconds a client has to send a request line and headers (408 after), and an idle keep-alive connection lives.
    header_timeout: float = 10.0
    idle_timeout: float = 5.0
    #: Seconds a client has to send a request's whole body once its headers arrived (408 and closed after).
    body_timeout: float = 30.0
    #: Peers (addresses or CIDR blocks) whose X-Forwarded-For, X-Forwarded-Proto and Forwarded headers say who the
    #: client is; empty = none (every client is the address it connects from).
    trusted_proxies: tuple[str, ...] = ()
    #: Most open connections per process, and from one client address (503 and closed beyond).
    max_connections: int = 2048
    max_connections_per_client: int = 256
    #: Largest request headers, in bytes, besides the request line (431 above).
    max_header_bytes: int = 16384
    #: Server processes (``registry serve --workers``), each with its own connections and database budget.
    workers: int = 1
    #: Deepest nesting and most values (objects, arrays, scalars) of a JSON body; the same limits bound JSONPath.
    max_json_depth: int = 128
    max_json_nodes: int = 500_000
    #: Longest accepted URL (path and query string), in bytes (414 above); longer SPARQL queries go by POST.
    max_url_bytes: int = 65536
    #: Notices sent in the ``Registry-Notices`` header at most (count, and bytes of the header value); a write
    #: with more answers with the full list in its body.
    max_notice_header_count: int = 20
    max_notice_header_bytes: int = 4096
    #: Host names the directory answers to (``*``: any; ``.example.com``: that domain and its subdomains); empty =
    #: the loopback names, the host it listens on and the host of the public URL (registry/http/sites.py).
    allowed_hosts: tuple[str, ...] = ()
    #: Origins (``https://app.example.com``) whose pages may send writes and read answers across sites (CORS).
    cors_origins: tuple[str, ...] = ()

    # -- storage
    #: PostgreSQL URL (postgresql://…); empty = embedded PostgreSQL under ``data_dir``.
    database_url: str = ""
    data_dir: Path = dataclasses.field(default_factory=_default_data_dir)
    #: Apply Alembic migrations when ``registry serve`` starts.
    migrate_on_start: bool = True
    db_pool_size: int = 10
    #: Streaming replicas of the database (postgresql://…, several separated by whitespace) for searches, facets,
    #: resolution and JSONPath; empty = they read the primary. Writes and every other read stay on the primary.
    database_read_url: str = ""
    #: Connections of each server process to each read replica (searches there queue for these, not the primary's).
    db_read_pool_size: int = 8
    #: Seconds a read replica may be behind the primary and still serve; beyond, reads go elsewhere.
    db_read_max_lag: float = 5.0

    # -- registration lifecycle
    #: Upper bound for ``ttl`` in seconds (0 = unbounded); larger values are rejected with 400.
    max_ttl: int = 0
    #: Reject registrations without a ``ttl`` (agents must keep a lease alive).
    mandate_ttl: bool = False
    #: How often expired descriptions are purged, in seconds.
    purge_interval: float = 60.0
    #: Seconds after a registration expires during which only its owner may register its id again (0 = none).
    expiry_grace: float = 3600.0

    #: What a dishonest version bump, a downgrade or changed content under a kept version does: ``warn`` (accept,
    #: with Registry-Notices) or ``enforce`` (409).
    version_policy: str = "warn"

    # -- response cache of GET /things/{id} (registry/directory/response_cache.py)
    #: Descriptions kept at most (0 = no cache), and bytes of served JSON at most.
    response_cache_entries: int = 10_000
    response_cache_bytes: int = 64 * 1024 * 1024

    # -- listing
    #: Page size used when ``limit`` is larger than this.
    max_page_size: int = 1000
    #: Seconds PostgreSQL lets each statement of ``/api/v1/search`` and ``/api/v1/facets`` run (503 after).
    search_timeout: float = 5.0

    # -- semantic layer
    #: Reject descriptions whose @context names a remote context that is not bundled (default: store them).
    strict_contexts: bool = False
    #: Directory holding extra JSON-LD contexts: ``index.json`` maps context URLs to files in it.
    context_dir: Path | None = None
    #: JSONPath search: seconds a query may run, and the most values / bytes it may return (400 above: narrow it);
    #: a query referring to the root inside a filter may hold at most ``jsonpath_max_bytes`` of descriptions.
    jsonpath_timeout: float = 10.0
    jsonpath_max_results: int = 10_000
    jsonpath_max_bytes: int = 16 * 1024 * 1024
    #: JSONPath searches evaluated at once (threads of their own), and per client (running or waiting; 429 above).
    jsonpath_concurrency: int = 2
    jsonpath_client_concurrency: int = 2
    #: SPARQL query timeout in seconds.
    sparql_timeout: float = 10.0
    #: Largest number of SPARQL result rows / triples returned.
    sparql_max_results: int = 10_000
    #: SPARQL SERVICE endpoints that federated queries may call (empty = federation off).
    sparql_service_allowlist: tuple[str, ...] = ()
    #: Directory of the on-disk SPARQL index (default: ``sparql-index`` in ``data_dir``).
    sparql_index_dir: Path | None = None
    #: Seconds the on-disk SPARQL index may hold back a burst of writes at most (0 = apply them as they come):
    #: it applies them once writes pause, or when a query needs them (docs/scaling.md).
    sparql_index_defer: float = 10.0
    #: SPARQL queries evaluated at once (each on a thread of the query worker; oxigraph releases the GIL).
    sparql_concurrency: int = 2
    #: SPARQL queries waiting for a thread beyond those; more are answered 503 with Retry-After.
    sparql_queue: int = 64
    #: SPARQL queries one client (address) may have running or waiting at once; more are answered 429.
    sparql_client_concurrency: int = 8
    #: Address space of the SPARQL query worker in MiB (0 = unbounded): a query needing more fails, the index
    #: stays (on disk).
    sparql_memory_limit: int = 2048
    #: An external SPARQL 1.1 store instead of the local index (docs/scaling.md): its query and update endpoints,
    #: and optionally its Graph Store Protocol endpoint (used to load a new copy in bulk).
    sparql_store_query_url: str = ""
    sparql_store_update_url: str = ""
    sparql_store_graph_url: str = ""
    #: Credentials for the store: a bearer token, or a user and password (HTTP basic).
    sparql_store_token: str = ""
    sparql_store_user: str = ""
    sparql_store_password: str = ""

    # -- other conventions (A2A, MCP)
    #: JWK Set file (JSON) with the public keys that verify A2A Agent Card signatures (none = not verified).
    a2a_trusted_keys: Path | None = None

    # -- events
    #: Seconds between SSE keep-alive comments.
    sse_keepalive: float = 15.0
    #: Events buffered per SSE subscriber before it is dropped and told to reconnect.
    sse_queue_size: int = 1000
    #: Bytes of events buffered per SSE subscriber before it is dropped and told to reconnect.
    sse_queue_bytes: int = 8 * 1024 * 1024
    #: Seconds between reads of the change log when no notification arrives (fallback for lost NOTIFYs).
    feed_poll_interval: float = 5.0

    # -- authentication and limits (docs/security.md)
    #: off, writes (reads stay anonymous) or all; empty = off on a loopback host, else the server refuses to start.
    auth: str = ""
    #: JWKS of the identity provider that issues access tokens (JWT): a file, or the issuer's https URL.
    auth_jwks: str = ""
    #: Required ``iss`` and ``aud`` of access tokens.
    auth_jwt_issuer: str = ""
    auth_jwt_audience: str = ""
    #: Signature algorithms accepted for access tokens (never ``none``).
    auth_jwt_algorithms: tuple[str, ...] = ("RS256", "ES256")
    #: Claims of an access token that carry its scopes, owner, namespaces, vendors and tenant.
    auth_claim_scopes: str = "scope"
    auth_claim_owner: str = "sub"
    auth_claim_namespaces: str = "registry_namespaces"
    auth_claim_vendors: str = "registry_vendors"
    auth_claim_tenant: str = "registry_tenant"
    #: Requests per principal (per client address when anonymous), e.g. ``600/minute``; empty = no limit.
    rate_limit_reads: str = ""
    rate_limit_writes: str = ""
    #: Failed authentications (refused API keys or tokens) per client address; empty = no limit.
    rate_limit_auth_failures: str = "30/minute"
    #: Descriptions one owner may hold (0 = no cap).
    max_descriptions_per_owner: int = 0
    #: Concurrent event streams per principal (per client address when anonymous); 0 = no cap.
    max_streams_per_principal: int = 0
    # -- operations
    #: Bearer token that lets a Prometheus scrape ``/metrics`` while authentication is on (besides admins).
    metrics_token: str = ""
    #: Seconds the change feed may lag behind the change log before ``/readyz`` answers 503.
    ready_max_feed_lag: float = 30.0

    @property
    def base_url(self) -> str:
        """The externally visible base URL, without a trailing slash."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def sparql_index_path(self) -> Path:
        return self.sparql_index_dir or self.data_dir / "sparql-index"

    @property
    def sparql_store(self) -> bool:
        """Whether SPARQL is answered by an external store (no local index, no query worker)."""
        return bool(self.sparql_store_query_url)

    @property
    def database_read_urls(self) -> tuple[str, ...]:
        """The read replicas' URLs (a URL holds no unescaped whitespace; libpq's multi-host form uses commas)."""
        return tuple(self.database_read_url.split())

    def __post_init__(self) -> None:
        for url in self.database_read_urls:
            scheme = url.split("://")[0].split("+")[0]
            if scheme not in {"postgres", "postgresql"}:
                raise ConfigError(
                    f"REGISTRY_DATABASE_READ_URL must be a PostgreSQL URL (postgresql://…) per read replica, "
                    f"not {scheme[:20]}://…"
                )
        if len(set(self.database_read_urls)) < len(self.database_read_urls):
            raise ConfigError("REGISTRY_DATABASE_READ_URL names a read replica twice")
        if not math.isfinite(self.db_read_max_lag) or (self.database_read_urls and self.db_read_max_lag < 1):
            # Below a second the replica's lag (measured every 0.5 s) would keep it flapping.
            raise ConfigError("REGISTRY_DB_READ_MAX_LAG must be a finite number of seconds, at least 1")
        if self.database_read_urls and self.db_read_pool_size < 1:
            raise ConfigError("REGISTRY_DB_READ_POOL_SIZE must be at least 1 when REGISTRY_DATABASE_READ_URL is set")
        if bool(self.sparql_store_query_url) != bool(self.sparql_store_update_url):
            raise ConfigError(
                "REGISTRY_SPARQL_STORE_QUERY_URL and REGISTRY_SPARQL_STORE_UPDATE_URL are set together or not at all"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from the environment; explicit ``overrides`` (e.g. CLI flags) win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            key = ENV_PREFIX + field.name.upper()
            raw = env.get(key)
            if raw is None and key + "_FILE" in env:
                # Secrets mounted as files (Docker/Compose secrets, Kubernetes secret volumes): REGISTRY_X_FILE.
                try:
                    raw = Path(env[key + "_FILE"]).read_text().strip()
                except OSError as error:
                    raise ConfigError(f"{key}_FILE: cannot read {env[key + '_FILE']}: {error.strerror}") from error
            if raw is None:
                continue
            parser = _PARSERS[field.name]
            try:
                values[field.name] = parser(raw)
            except ValueError as error:
                raise ConfigError(f"{key}: {error}") from error
        values.update({name: value for name, value in overrides.items() if value is not None})
        return cls(**values)


def _path(raw: str) -> Path:
    return Path(raw).expanduser()


def _optional_path(raw: str) -> Path | None:
    return Path(raw).expanduser() if raw.strip() else None


def _choice(*choices: str) -> Callable[[str], str]:
    def parse_choice(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {raw!r}")
        return value

    return parse_choice


def _positive(parse: Callable[[str], T]) -> Callable[[str], T]:
    def parse_positive(raw: str) -> T:
        value = parse(raw)
        if value < 0:  # type: ignore[operator]
            raise ValueError(f"must not be negative, got {raw!r}")
        return value

    return parse_positive


AUTH_MODES = ("off", "writes", "all")


def _auth_mode(raw: str) -> str:
    mode = raw.strip().lower()
    if mode and mode not in AUTH_MODES:
        raise ValueError(f"expected one of {', '.join(AUTH_MODES)}, got {raw!r}")
    return mode


def _algorithms(raw: str) -> tuple[str, ...]:
    algorithms = _parse_list(raw)
    if not algorithms or any(name.lower() == "none" for name in algorithms):
        raise ValueError(f"expected signature algorithms such as RS256,ES256 (never none), got {raw!r}")
    return algorithms


def _rate_limit(raw: str) -> str:
    """A rate such as ``600/minute`` (:mod:`registry.rates`), checked at start-up; empty for none."""
    if raw.strip():
        parse_rate(raw)
    return raw.strip()


def _trusted_proxies(raw: str) -> tuple[str, ...]:
    """Addresses and CIDR blocks separated by commas, each checked at start-up."""
    entries = _parse_list(raw)
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ValueError(f"expected IP addresses or CIDR blocks separated by commas, got {entry!r}") from None
    return entries


def _at_least_one(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError(f"must be at least 1, got {raw!r}")
    return value


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse_choice(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {raw!r}")
        return value

    return parse_choice


_PARSERS: dict[str, Callable[[str], Any]] = {
    "host": str,
    "port": _positive(int),
    "public_url": str,
    "log_level": str,
    "log_format": _choice("auto", "json", "console"),
    "access_log": _parse_bool,
    "tracing": _parse_bool,
    "max_body_bytes": _positive(int),
    "max_url_bytes": _positive(int),
    "header_timeout": _positive(float),
    "idle_timeout": _positive(float),
    "body_timeout": _positive(float),
    "trusted_proxies": _trusted_proxies,
    "max_connections": _positive(int),
    "max_connections_per_client": _positive(int),
    "max_header_bytes": _positive(int),
    "workers": _positive(int),
    "max_json_depth": _positive(int),
    "max_json_nodes": _positive(int),
    "max_notice_header_count": _positive(int),
    "max_notice_header_bytes": _positive(int),
    "allowed_hosts": _parse_list,
    "cors_origins": _parse_list,
    "database_url": str,
    "data_dir": _path,
    "migrate_on_start": _parse_bool,
    "db_pool_size": _positive(int),
    "database_read_url": str,
    "db_read_pool_size": _positive(int),
    "db_read_max_lag": _positive(float),
    "max_ttl": _positive(int),
    "a2a_trusted_keys": _optional_path,
    "mandate_ttl": _parse_bool,
    "purge_interval": _positive(float),
    "expiry_grace": _positive(float),
    "version_policy": _one_of("warn", "enforce"),
    "response_cache_entries": _positive(int),
    "response_cache_bytes": _positive(int),
    "max_page_size": _positive(int),
    "strict_contexts": _parse_bool,
    "context_dir": _optional_path,
    "search_timeout": _positive(float),
    "jsonpath_timeout": _positive(float),
    "jsonpath_max_results": _positive(int),
    "jsonpath_max_bytes": _positive(int),
    "jsonpath_concurrency": _at_least_one,
    "jsonpath_client_concurrency": _positive(int),
    "sparql_timeout": _positive(float),
    "sparql_max_results": _positive(int),
    "sparql_service_allowlist": _parse_list,
    "sparql_index_dir": _optional_path,
    "sparql_index_defer": _positive(float),
    "sparql_concurrency": _positive(int),
    "sparql_queue": _positive(int),
    "sparql_client_concurrency": _positive(int),
    "sparql_memory_limit": _positive(int),
    "sparql_store_query_url": str,
    "sparql_store_update_url": str,
    "sparql_store_graph_url": str,
    "sparql_store_token": str,
    "sparql_store_user": str,
    "sparql_store_password": str,
    "sse_keepalive": _positive(float),
    "sse_queue_size": _positive(int),
    "sse_queue_bytes": _positive(int),
    "feed_poll_interval": _positive(float),
    "auth": _auth_mode,
    "auth_jwks": str,
    "auth_jwt_issuer": str,
    "auth_jwt_audience": str,
    "auth_jwt_algorithms": _algorithms,
    "auth_claim_scopes": str,
    "auth_claim_owner": str,
    "auth_claim_namespaces": str,
    "auth_claim_vendors": str,
    "auth_claim_tenant": str,
    "rate_limit_reads": _rate_limit,
    "rate_limit_writes": _rate_limit,
    "rate_limit_auth_failures": _rate_limit,
    "max_descriptions_per_owner": _positive(int),
    "max_streams_per_principal": _positive(int),
    "ready_max_feed_lag": _positive(float),
    "metrics_token": str,
}
