"""All configuration in one place: typed settings read from ``REGISTRY_*`` environment variables.

Every variable is listed (with its default) in the README's configuration table; keep the two in step.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
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


#: The groups of settings, in the order the README lists them.
SERVER = "Server"
CONNECTIONS = "Connections and requests"
DATABASE = "Database"
REGISTRATIONS = "Registrations"
SEARCH = "Reads and search"
SPARQL = "SPARQL"
EVENTS = "Events"
AUTH = "Authentication"
LIMITS = "Rate limits and quotas"
OPERATIONS = "Logs and operations"
GROUPS = (SERVER, CONNECTIONS, DATABASE, REGISTRATIONS, SEARCH, SPARQL, EVENTS, AUTH, LIMITS, OPERATIONS)


@dataclasses.dataclass(frozen=True, slots=True)
class _Factory:
    make: Callable[[], Any]


def factory(make: Callable[[], Any]) -> Any:
    """A default computed when a :class:`Settings` is made (``setting``'s ``default``)."""
    return _Factory(make)


def setting(group: str, default: Any, doc: str, *, shown: str | None = None) -> Any:
    """A field of :class:`Settings`: its ``group`` (one of ``GROUPS``), its ``default`` and its ``doc``, the one
    description of the setting (Markdown; the README's configuration table is generated from it). ``shown`` is the
    default as the table shows it, where the value alone would not say it (a default computed from other settings)."""
    metadata = {"group": group, "doc": doc, "shown": shown}
    if isinstance(default, _Factory):
        return dataclasses.field(default_factory=default.make, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """Runtime settings. Field names map to ``REGISTRY_<FIELD_NAME_UPPER>``; each field's group and description
    are in its metadata (:func:`setting`), and ``python -m registry.config`` renders them as the README's table."""

    # -- Server
    host: str = setting(SERVER, "127.0.0.1", "Interface to listen on (`--host`).")
    port: int = setting(SERVER, 8080, "TCP port (`--port`).")
    public_url: str = setting(
        SERVER,
        "",
        "Base URL clients see (behind a proxy); used in the directory TD (`--public-url`).",
        shown="`http://{host}:{port}`",
    )
    allowed_hosts: tuple[str, ...] = setting(
        SERVER,
        (),
        "`Host` names the directory answers to, comma-separated (port ignored; `.example.com` = that domain and its "
        "subdomains; `*` = any); others get 400 (DNS rebinding, docs/security.md).",
        shown="loopback names, the listening address, the public URL's host",
    )
    cors_origins: tuple[str, ...] = setting(
        SERVER,
        (),
        "Origins (`https://app.example.com`) whose pages may write and read across sites (CORS); an unsafe request "
        "from any other page's origin gets 403.",
    )
    workers: int = setting(
        SERVER,
        1,
        "Server processes (`--workers`), each with its own connections, database budget and response cache; they "
        "share one SPARQL worker and its on-disk index (docs/scaling.md).",
    )

    # -- Connections and requests
    header_timeout: float = setting(
        CONNECTIONS,
        10.0,
        "Seconds a client has to send the request line and headers; 408 and closed after (`--header-timeout`).",
    )
    body_timeout: float = setting(
        CONNECTIONS,
        30.0,
        "Seconds a client has to send a request's whole body once its headers are in; 408 and closed after "
        "(`--body-timeout`).",
    )
    idle_timeout: float = setting(
        CONNECTIONS,
        5.0,
        "Seconds an idle keep-alive connection is kept open (`--idle-timeout`).",
    )
    trusted_proxies: tuple[str, ...] = setting(
        CONNECTIONS,
        (),
        "Reverse proxies (addresses or CIDR blocks, comma-separated) whose `X-Forwarded-For`, `X-Forwarded-Proto` and "
        '`Forwarded` headers name the client; from any other peer they are ignored (see "Connections and reverse '
        'proxies").',
    )
    max_connections: int = setting(
        CONNECTIONS,
        2048,
        "Open connections per process; beyond, a connection is answered 503 and closed (`--max-connections`).",
    )
    max_connections_per_client: int = setting(
        CONNECTIONS,
        256,
        "Open connections from one client address (an IPv6 client by its /64), per process "
        "(`--max-connections-per-client`); a trusted proxy's count only towards the total.",
    )
    max_header_bytes: int = setting(
        CONNECTIONS,
        16384,
        "Largest request headers besides the request line, in bytes; 431 above (`--max-header-bytes`).",
    )
    max_url_bytes: int = setting(
        CONNECTIONS,
        65536,
        "Longest URL (path and query string), in bytes; longer ones get 414 (send long SPARQL queries by POST).",
    )
    max_body_bytes: int = setting(CONNECTIONS, 4 * 1024 * 1024, "Largest request body, in bytes; larger ones get 413.")
    max_json_depth: int = setting(
        CONNECTIONS,
        128,
        "Deepest nesting of a JSON body (400 above); JSONPath search is built to traverse documents this deep.",
    )
    max_json_nodes: int = setting(
        CONNECTIONS,
        500_000,
        "Most values (objects, arrays, scalars) in a JSON body (400 above).",
    )
    max_notice_header_count: int = setting(
        CONNECTIONS,
        20,
        "Notices sent in the `Registry-Notices` header at most; all of them go in the body then.",
    )
    max_notice_header_bytes: int = setting(CONNECTIONS, 4096, "Longest `Registry-Notices` header value, in bytes.")

    # -- Database
    database_url: str = setting(DATABASE, "", "PostgreSQL URL; empty = embedded PostgreSQL (`--database-url`).")
    data_dir: Path = setting(
        DATABASE,
        factory(_default_data_dir),
        "Where the embedded PostgreSQL keeps its data (`--data-dir`), and the SPARQL index.",
        shown="user data dir",
    )
    migrate_on_start: bool = setting(
        DATABASE,
        True,
        "Apply migrations when `serve` starts (`--migrate/--no-migrate`), or when the database comes if it is down at "
        "start (docs/operations.md).",
    )
    db_pool_size: int = setting(
        DATABASE,
        10,
        "Database connections of a server process, its LISTEN connection included (minimum 2). Each replica's SPARQL "
        "worker holds 2 more.",
    )
    database_read_url: str = setting(
        DATABASE,
        "",
        "Streaming replicas of the database (a managed PostgreSQL's read replicas), several separated by spaces or "
        "newlines: searches, facets, capability resolution and JSONPath read the least busy one that keeps up, and go "
        "on reading one while the primary is down; writes and every other read stay on the primary (docs/scaling.md).",
    )
    db_read_pool_size: int = setting(
        DATABASE,
        8,
        "Connections of each server process to each read replica (searches there wait for these, not for the "
        "primary's).",
    )
    db_read_max_lag: float = setting(
        DATABASE,
        5.0,
        "Seconds a read replica may be behind the primary and still serve; beyond (or unreachable), those reads go to "
        "another or to the primary until it catches up.",
    )

    # -- Registrations
    max_ttl: int = setting(REGISTRATIONS, 0, "Largest accepted `ttl` in seconds (0 = no limit).")
    mandate_ttl: bool = setting(REGISTRATIONS, False, "Reject registrations without a `ttl`.")
    version_policy: str = setting(
        REGISTRATIONS,
        "warn",
        "A dishonest version bump, a version lower than the one replaced, or other content under a kept version: "
        "`warn` accepts the write with `Registry-Notices`, `enforce` refuses it with 409 (see docs/discovery.md).",
    )
    purge_interval: float = setting(REGISTRATIONS, 60.0, "Seconds between purges of expired descriptions.")
    expiry_grace: float = setting(
        REGISTRATIONS,
        3600.0,
        "Seconds after a registration expires during which only its owner (or an admin) may register its id again; "
        "the purge keeps a tombstone that long (0 = none; docs/security.md).",
    )
    strict_contexts: bool = setting(REGISTRATIONS, False, "Reject descriptions naming an unknown remote `@context`.")
    context_dir: Path | None = setting(
        REGISTRATIONS,
        None,
        "Extra local JSON-LD contexts (`index.json` maps URLs to files).",
    )
    a2a_trusted_keys: Path | None = setting(
        REGISTRATIONS,
        None,
        "JWK Set file with public keys that verify A2A Agent Card signatures on import (none = signatures kept and "
        "reported, not verified).",
    )

    # -- Reads and search
    max_page_size: int = setting(SEARCH, 1000, "Largest page a `limit` can ask for.")
    response_cache_entries: int = setting(
        SEARCH,
        10_000,
        "Descriptions the response cache of `GET /things/{id}` keeps per server process (`0`: no cache); evicted by "
        "the change feed (docs/performance.md).",
    )
    response_cache_bytes: int = setting(
        SEARCH,
        64 * 1024 * 1024,
        "Bytes of served JSON that cache keeps at most; a description larger than an eighth of it is not kept.",
    )
    search_timeout: float = setting(
        SEARCH,
        5.0,
        "Seconds PostgreSQL lets each statement of `/api/v1/search`, `/api/v1/facets` and `/api/v1/resolve` run (503 "
        "after).",
    )
    embeddings: str = setting(
        SEARCH,
        "wordllama",
        "Who computes the vectors of natural-language search (docs/discovery.md): `wordllama` (the model its wheel "
        "ships, offline), `openai` (an OpenAI-compatible `/v1/embeddings` endpoint: Ollama, vLLM, TEI, OpenAI) or "
        "`off` (lexical only). Needs pgvector in the database; without it needs are answered lexically and `/readyz` "
        "says so.",
    )
    embeddings_url: str = setting(
        SEARCH,
        "",
        "Base URL of the embeddings endpoint (`http://127.0.0.1:11434/v1`), for `REGISTRY_EMBEDDINGS=openai`.",
    )
    embeddings_model: str = setting(
        SEARCH, "", "Model name sent to the embeddings endpoint; a change of model re-embeds every description."
    )
    embeddings_dimensions: int = setting(SEARCH, 0, "Dimension of the endpoint's vectors (openai).")
    embeddings_api_key: str = setting(SEARCH, "", "Bearer key for the embeddings endpoint (also as `…_FILE`).")
    embeddings_timeout: float = setting(SEARCH, 10.0, "Seconds one request to the embeddings endpoint may take.")
    jsonpath_timeout: float = setting(
        SEARCH,
        10.0,
        "Seconds a JSONPath search may run before it is refused (400: narrow the query); kept inside the evaluation, "
        "so a search ends shortly after it. A search waits as long for a thread (503 with `Retry-After` after).",
    )
    jsonpath_concurrency: int = setting(
        SEARCH,
        2,
        "JSONPath searches evaluated at once, on threads of their own (writes decode, validate and project on others).",
    )
    jsonpath_client_concurrency: int = setting(
        SEARCH,
        2,
        "JSONPath searches one client (its principal, else its address) may have running or waiting; more get 429 "
        "with `Retry-After` (0 = no per-client limit).",
    )
    jsonpath_max_results: int = setting(SEARCH, 10_000, "Most values a JSONPath search may return (400 above).")
    jsonpath_max_bytes: int = setting(
        SEARCH,
        16 * 1024 * 1024,
        "Largest JSONPath answer in bytes, and most bytes of descriptions a query referring to the root inside a "
        "filter may hold (400 above).",
    )

    # -- SPARQL
    sparql_timeout: float = setting(SPARQL, 10.0, "SPARQL query timeout, seconds.")
    sparql_max_results: int = setting(SPARQL, 10_000, "Result cap for SPARQL.")
    sparql_service_allowlist: tuple[str, ...] = setting(
        SPARQL,
        (),
        "Comma-separated SPARQL `SERVICE` endpoints allowed (empty = federation off).",
    )
    sparql_index_dir: Path | None = setting(
        SPARQL,
        None,
        "Where the on-disk SPARQL index lives (one store per database; kept across restarts).",
        shown="`sparql-index` in `REGISTRY_DATA_DIR`",
    )
    sparql_index_defer: float = setting(
        SPARQL,
        10.0,
        "Seconds the on-disk SPARQL index may hold back a burst of writes at most: it applies them once the writes "
        "pause for 1 s, when a query needs them (a query still sees every write acknowledged before it), or after "
        "this long (0 = apply changes as they come; docs/scaling.md).",
    )
    sparql_concurrency: int = setting(
        SPARQL,
        2,
        "SPARQL queries evaluated at once (threads of the query worker), shared round-robin between clients; one "
        "client runs at most this minus one at once (1 when it is 1), so another always finds a thread "
        "(docs/search.md).",
    )
    sparql_queue: int = setting(
        SPARQL,
        64,
        "SPARQL queries waiting for their turn beyond those; more get 503 with `Retry-After`.",
    )
    sparql_client_concurrency: int = setting(
        SPARQL,
        8,
        "SPARQL queries one client (its principal, or its address when anonymous) may have in flight, running or "
        "waiting; more get 429 with `Retry-After` (0 = no per-client limit; behind a proxy every anonymous client has "
        "its address).",
    )
    sparql_memory_limit: int = setting(
        SPARQL,
        2048,
        "Address space of the SPARQL query worker, MiB (0 = unbounded); a query needing more fails with 503, the "
        "on-disk index stays.",
    )
    sparql_store_query_url: str = setting(
        SPARQL,
        "",
        "An external SPARQL 1.1 store (Oxigraph server, Fuseki, …) instead of the local index: its query endpoint "
        "(set together with `REGISTRY_SPARQL_STORE_UPDATE_URL`). One replica pushes the RDF to it, every replica "
        "answers `/search/sparql` from it; no SPARQL worker runs (docs/scaling.md).",
    )
    sparql_store_update_url: str = setting(
        SPARQL,
        "",
        "The external SPARQL store's update endpoint (set together with `REGISTRY_SPARQL_STORE_QUERY_URL`).",
    )
    sparql_store_graph_url: str = setting(
        SPARQL,
        "",
        "The store's Graph Store Protocol endpoint for its dataset (N-Quads by POST), used to load a new copy in "
        "bulk; without it, SPARQL Update.",
    )
    sparql_store_token: str = setting(SPARQL, "", "Bearer token for the external SPARQL store (also as `…_FILE`).")
    sparql_store_user: str = setting(
        SPARQL,
        "",
        "User for HTTP basic authentication to the external SPARQL store (with `REGISTRY_SPARQL_STORE_PASSWORD`).",
    )
    sparql_store_password: str = setting(
        SPARQL,
        "",
        "Password for HTTP basic authentication to the external SPARQL store (also as `…_FILE`).",
    )

    # -- Events
    sse_keepalive: float = setting(EVENTS, 15.0, "Seconds between SSE keep-alive comments.")
    sse_queue_size: int = setting(EVENTS, 1000, "Events buffered per SSE subscriber before it is told to reconnect.")
    sse_queue_bytes: int = setting(
        EVENTS,
        8 * 1024 * 1024,
        "Bytes of events buffered per SSE subscriber before it is told to reconnect (with `diff=true` an event holds "
        "a whole description).",
    )
    feed_poll_interval: float = setting(
        EVENTS,
        5.0,
        "Seconds between fallback polls of the change log (LISTEN/NOTIFY is the fast path).",
    )

    # -- Authentication
    auth: str = setting(
        AUTH,
        "",
        "`off`, `writes` (reads anonymous) or `all`. Unset on a non-loopback host (and no JWKS): `serve` refuses to "
        "start. See [docs/security.md](docs/security.md).",
        shown="`off` on loopback",
    )
    auth_jwks: str = setting(
        AUTH,
        "",
        "JWK Set of the identity provider whose access tokens (JWT) are accepted: a file or the issuer's JWKS URL "
        "(implies `REGISTRY_AUTH=writes` unless set). Read again every 5 min; while it cannot be read the keys held "
        "stay in use, and a token none of them can check gets 503.",
    )
    auth_jwt_issuer: str = setting(AUTH, "", "Required `iss` of access tokens (needed with a JWKS).")
    auth_jwt_audience: str = setting(AUTH, "", "Required `aud` of access tokens (needed with a JWKS).")
    auth_jwt_algorithms: tuple[str, ...] = setting(
        AUTH,
        ("RS256", "ES256"),
        "Accepted signature algorithms (`none` is refused).",
    )
    auth_claim_scopes: str = setting(
        AUTH,
        "scope",
        "Token claim holding the scopes (`read`, `write`, `admin`, optionally `registry:`-prefixed).",
    )
    auth_claim_owner: str = setting(
        AUTH,
        "sub",
        "Token claim holding the owner name of what it creates (owned as `jwt:<issuer>|<name>`).",
    )
    auth_claim_namespaces: str = setting(
        AUTH,
        "registry_namespaces",
        "Token claim holding the id patterns it may register.",
    )
    auth_claim_vendors: str = setting(
        AUTH,
        "registry_vendors",
        "Token claim holding the vendor names it may register for.",
    )
    auth_claim_tenant: str = setting(AUTH, "registry_tenant", "Token claim holding its tenant.")

    # -- Rate limits and quotas
    rate_limit_reads: str = setting(
        LIMITS,
        "",
        "Reads per principal (per address when anonymous), e.g. `600/minute`, counted over all replicas; more get 429 "
        "with `Retry-After`.",
    )
    rate_limit_writes: str = setting(
        LIMITS,
        "",
        "Writes per principal, e.g. `60/minute`; a batch counts one write per description (refused whole with 429 "
        "when they do not all fit).",
    )
    rate_limit_auth_failures: str = setting(
        LIMITS,
        "30/minute",
        "Refused API keys or tokens per client address, counted over all replicas; beyond, a request carrying "
        "credentials from that address gets 429 with `Retry-After` without them being checked (empty = no limit).",
    )
    max_descriptions_per_owner: int = setting(
        LIMITS,
        0,
        "Descriptions one owner (identity and tenant) may hold (0 = no cap); more get 403.",
    )
    max_streams_per_principal: int = setting(
        LIMITS,
        0,
        "Concurrent `/events` streams per principal or address (0 = no cap); more get 429.",
    )

    # -- Logs and operations
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
        if self.embeddings == "openai" and not (
            self.embeddings_url and self.embeddings_model and self.embeddings_dimensions
        ):
            raise ConfigError(
                "REGISTRY_EMBEDDINGS=openai needs REGISTRY_EMBEDDINGS_URL, REGISTRY_EMBEDDINGS_MODEL and "
                "REGISTRY_EMBEDDINGS_DIMENSIONS"
            )
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
    "embeddings": _choice("wordllama", "openai", "off"),
    "embeddings_url": str,
    "embeddings_model": str,
    "embeddings_dimensions": _positive(int),
    "embeddings_api_key": str,
    "embeddings_timeout": _positive(float),
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


#: The markers around the configuration tables in README.md, which ``python -m registry.config --write`` rewrites.
README_BEGIN = "<!-- python -m registry.config --write README.md: begin -->"
README_END = "<!-- python -m registry.config --write README.md: end -->"


def _shown(field: dataclasses.Field[Any]) -> str:
    if field.metadata["shown"] is not None:
        return str(field.metadata["shown"])
    value = field.default
    if value is None:
        return "*(none)*"
    if value in ("", ()):
        return "*(empty)*"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    if isinstance(value, tuple):
        return f"`{','.join(value)}`"
    return f"`{value}`"


def _escaped(text: str) -> str:
    """``text`` inside a Markdown table cell."""
    return text.replace("|", "\\|")


def markdown() -> str:
    """The settings as Markdown: a table per group, in the order of ``GROUPS``."""
    fields = dataclasses.fields(Settings)
    sections = []
    for group in GROUPS:
        rows = [
            f"| `{ENV_PREFIX}{field.name.upper()}` | {_shown(field)} | {_escaped(field.metadata['doc'])} |"
            for field in fields
            if field.metadata["group"] == group
        ]
        sections.append(f"### {group}\n\n| Variable | Default | Meaning |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(sections)


def with_markdown(readme: str) -> str:
    """``readme`` with :func:`markdown` between its markers."""
    before, found, rest = readme.partition(README_BEGIN + "\n")
    _, found_end, after = rest.partition(README_END)
    if not found or not found_end:
        raise ValueError(f"the README has no {README_BEGIN} … {README_END} markers")
    return f"{before}{README_BEGIN}\n{markdown()}{README_END}{after}"


def main(argv: Sequence[str]) -> int:
    """``python -m registry.config``: print the configuration tables; ``--write README.md``: put them into it."""
    if not argv:
        print(markdown(), end="")
        return 0
    if len(argv) != 2 or argv[0] != "--write":
        print("usage: python -m registry.config [--write README.md]", file=sys.stderr)
        return 2
    path = Path(argv[1])
    path.write_text(with_markdown(path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
