"""What ``/metrics`` exposes besides the request metrics of Litestar's Prometheus middleware.

Counters move where the event happens, in this process (so that a sum over replicas counts each event once);
gauges of shared state (descriptions, leases) and of this process's parts (pool, SSE, SPARQL index) are read when
Prometheus scrapes (:func:`refresh`), so they cost nothing between scrapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import math
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from litestar.plugins.prometheus import PrometheusConfig, PrometheusMiddleware
from litestar.types import Message, Receive, Scope, Send
from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from registry.descriptions.summary import KIND_AGENT, KIND_THING, KIND_TOOL
from registry.errors import RegistryError
from registry.ops.logs import access_lines_dropped
from registry.store.census import descriptions_by_kind, expired_awaiting_purge, leases_expiring

if TYPE_CHECKING:
    from registry.directory.response_cache import ResponseCache
    from registry.events.feed import ChangeFeed
    from registry.events.hub import EventHub
    from registry.sparql.query import SparqlBackend
    from registry.store.database import Database

log = logging.getLogger(__name__)


#: Labels of the request metrics, as Litestar's Prometheus middleware names them.
_REQUEST_LABELS = ["method", "path", "status_code", "app_name"]
APP_NAME = "lmos-registry"
REQUESTS = Counter("registry_http_requests_total", "Total requests", _REQUEST_LABELS)
REQUEST_DURATION = Histogram("registry_http_request_duration_seconds", "Request duration, in seconds", _REQUEST_LABELS)
REQUEST_ERRORS = Counter("registry_http_requests_error_total", "Total errors in requests", _REQUEST_LABELS)


@dataclasses.dataclass(frozen=True, slots=True)
class _Series:
    """The request metrics' children of one route template, method and status."""

    requests: Counter
    duration: Histogram
    errors: Counter | None


#: Children by (method, route template, status): a label look-up costs more than the observation.
_series: dict[tuple[str, str, int], _Series] = {}


def record_request(method: str, route: str, status: int, duration: float) -> None:
    """Count a routed request (its route template bounds the number of series)."""
    key = (method, route, status)
    series = _series.get(key)
    if series is None:
        values = (method, route, str(status), APP_NAME)
        series = _series[key] = _Series(
            REQUESTS.labels(*values),
            REQUEST_DURATION.labels(*values),
            REQUEST_ERRORS.labels(*values) if status >= 500 else None,
        )
    series.requests.inc()
    series.duration.observe(duration)
    if series.errors is not None:
        series.errors.inc()


#: The probes a watching page polls: a request of them marked with the ``Registry-Poll`` header is counted in
#: ``registry_http_polls_total`` instead of the request metrics, so that a dashboard left open does not make its
#: own traffic and error rate (as ``/metrics`` scrapes are left out). Only these routes honour the mark, so no
#: other request can leave the request metrics by carrying it.
POLLED_ROUTES = frozenset({"/readyz", "/livez"})
POLL_HEADER = b"registry-poll"
POLLS = Counter(
    "registry_http_polls_total",
    "Probe requests marked as a watching page's polls (Registry-Poll header), left out of the request metrics",
    ["path", "status_code"],
)


def _is_poll(scope: Scope) -> bool:
    return any(name == POLL_HEADER for name, _ in scope.get("headers", ()))


class _RequestMetrics(PrometheusMiddleware):
    """Litestar's Prometheus middleware and its metrics, for less per request: no Request object is built, no
    in-progress gauge kept, and each series is looked up once (bench/bench_instructions.py measures what the stock
    middleware and the access log add to the instructions of a GET)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        status = 500
        started = time.perf_counter()
        duration = 0.0

        async def send_and_observe(message: Message) -> None:
            nonlocal status, duration
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                duration = time.perf_counter() - started
            await send(message)

        try:
            await self.app(scope, receive, send_and_observe)
        finally:
            # Only routed requests reach this middleware, so they have a path template.
            route = scope.get("path_template", scope["path"])
            if route in POLLED_ROUTES and _is_poll(scope):
                POLLS.labels(route, str(status)).inc()
            else:
                record_request(str(scope.get("method") or scope["type"]), route, status, duration)


#: Request count, latency histogram and error count by route template, method and status.
REQUEST_METRICS = PrometheusConfig(
    app_name=APP_NAME,
    prefix="registry_http",
    group_path=True,
    exclude=["^/metrics$"],
    middleware_class=_RequestMetrics,
)
#: A lease ending within this window counts as expiring soon.
EXPIRING_WITHIN = dt.timedelta(minutes=5)
#: Seconds a scrape waits for the database or the SPARQL worker before leaving their gauges as they were.
REFRESH_TIMEOUT = 2.0

REGISTRATIONS = Counter(
    "registry_registrations", "Descriptions stored by this replica (created or updated)", ["outcome"]
)
FAILED_VALIDATIONS = Counter("registry_failed_validations", "Writes refused because the description is invalid")
PURGED = Counter("registry_purged_descriptions", "Expired descriptions purged by this replica")
SSE_DROPPED = Counter(
    "registry_sse_dropped_subscribers", "SSE subscribers dropped because they read too slowly (told to reconnect)"
)
SPARQL_QUERIES = Counter("registry_sparql_queries", "SPARQL queries forwarded to the worker")
SPARQL_TIMEOUTS = Counter("registry_sparql_timeouts", "SPARQL queries stopped for outliving REGISTRY_SPARQL_TIMEOUT")
SPARQL_WORKER_RESTARTS = Counter("registry_sparql_worker_restarts", "Times the SPARQL worker was started again")
SPARQL_STORE_PUSHES = Counter(
    "registry_sparql_store_pushes", "SPARQL Update requests this replica sent to the external SPARQL store"
)

RESPONSE_CACHE_READS = Counter(
    "registry_response_cache_reads",
    "GET /things/{id} reads by whether the response cache held the description (hit) or PostgreSQL answered (miss)",
    ["outcome"],
)
RESPONSE_CACHE_ENTRIES = Gauge("registry_response_cache_entries", "Descriptions the response cache holds")
RESPONSE_CACHE_BYTES = Gauge("registry_response_cache_bytes", "Bytes the response cache holds (JSON and overhead)")

DESCRIPTIONS = Gauge("registry_descriptions", "Live descriptions by kind", ["kind"])
LEASES_EXPIRING = Gauge("registry_leases_expiring_soon", "Live descriptions whose lease ends within 5 minutes")
EXPIRED = Gauge("registry_descriptions_expired", "Descriptions past their expiry, not yet purged (never served)")
SSE_SUBSCRIBERS = Gauge("registry_sse_subscribers", "Open SSE subscriptions on this replica")
SPARQL_INDEX_LAG = Gauge(
    "registry_sparql_index_lag_changes", "Changes the SPARQL index is behind this replica's change feed"
)
SPARQL_INDEX_SKIPPED = Gauge(
    "registry_sparql_index_skipped_descriptions",
    "Descriptions the SPARQL index leaves out because their RDF cannot be loaded (their ids are logged)",
)


class _SkippedTotal(Collector):
    """``registry_sparql_index_skipped_total``: descriptions the SPARQL worker (or, on the replica that pushes, the
    pusher to the external store) has left out since it started, as it last told (a restart starts it over)."""

    def __init__(self) -> None:
        self.value = 0.0

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(
            "registry_sparql_index_skipped",
            "Descriptions left out of the SPARQL index since its worker started (each time one is left out)",
            value=self.value,
        )


SPARQL_INDEX_SKIPPED_TOTAL = _SkippedTotal()
REGISTRY.register(SPARQL_INDEX_SKIPPED_TOTAL)


class _AccessLinesDropped(Collector):
    """``registry_access_log_dropped_total``: access lines this process has not written, read when scraped (the
    writer counts them without a metric's lock on the request path)."""

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(
            "registry_access_log_dropped",
            "Access log lines dropped: the queue to the log writer was full, or the log stream refused them",
            value=access_lines_dropped(),
        )


REGISTRY.register(_AccessLinesDropped())
EMBEDDED = Gauge("registry_descriptions_embedded", "Descriptions whose vectors are up to date (this model)")
EMBEDDING_PENDING = Gauge("registry_descriptions_to_embed", "Descriptions whose vectors are missing or stale")
EMBEDDING_FAILURES = Counter("registry_embedding_failures", "Rounds of the vector backfill that failed")
SEARCH_WORDS_CURRENT = Gauge(
    "registry_search_words_current",
    "Descriptions whose full-text words are of this server's composition and product list",
)
SEARCH_WORDS_STALE = Gauge(
    "registry_search_words_stale", "Descriptions whose full-text words are of another composition or product list"
)
SEARCH_WORDS_FAILURES = Counter("registry_search_words_failures", "Rounds of the full-text words refresh that failed")
FEED_LAG = Gauge("registry_change_feed_lag_seconds", "Seconds the change feed has been behind the change log")
DB_POOL_SIZE = Gauge("registry_db_pool_connections", "Pooled database connections of this replica")
DB_POOL_IN_USE = Gauge("registry_db_pool_in_use", "Pooled database connections lent out")
DB_POOL_WAITING = Gauge("registry_db_pool_waiting", "Callers waiting for a pooled database connection")
READ_REPLICA_LAG = Gauge(
    "registry_read_replica_lag_seconds",
    "Seconds the read replica is behind the primary (NaN while unmeasured, or while the primary is unreachable)",
    ["replica"],
)
READ_REPLICA_SERVING = Gauge(
    "registry_read_replica_serving", "1 while the read replica serves searches, else 0", ["replica"]
)
READ_REPLICA_READS = Counter(
    "registry_read_replica_reads", "Searches and scans this process ran on the read replica", ["replica"]
)
READ_POOL_IN_USE = Gauge("registry_db_read_pool_in_use", "Pooled connections to the read replica lent out", ["replica"])
READ_POOL_WAITING = Gauge(
    "registry_db_read_pool_waiting", "Searches waiting for a connection to the read replica", ["replica"]
)
DATABASE_UP = Gauge("registry_database_up", "1 when the last scrape could read the database, else 0")


class Gauges:
    """The parts of this process whose state the gauges show, read at each scrape."""

    def __init__(
        self, database: Database, feed: ChangeFeed, events: EventHub, worker: SparqlBackend, cache: ResponseCache
    ) -> None:
        self.database = database
        self.feed = feed
        self.events = events
        self.worker = worker
        self.cache = cache

    async def refresh(self) -> None:
        """Read the gauges; a part that does not answer in time leaves its gauges at their last values."""
        RESPONSE_CACHE_ENTRIES.set(len(self.cache))
        RESPONSE_CACHE_BYTES.set(self.cache.held_bytes)
        await _refresh(self.database, self.feed, self.events, self.worker)


async def _refresh(database: Database, feed: ChangeFeed, events: EventHub, worker: SparqlBackend) -> None:
    in_use, _idle = database.usage()
    DB_POOL_SIZE.set(database.pool_size)
    DB_POOL_IN_USE.set(in_use)
    DB_POOL_WAITING.set(database.waiting())
    SSE_SUBSCRIBERS.set(events.subscriber_count)
    FEED_LAG.set(feed.lag)
    for replica in database.replicas:
        READ_REPLICA_LAG.labels(replica.name).set(math.nan if replica.lag is None else replica.lag)
        READ_REPLICA_SERVING.labels(replica.name).set(int(replica.serving))
        READ_POOL_IN_USE.labels(replica.name).set(replica.database.usage()[0])
        READ_POOL_WAITING.labels(replica.name).set(replica.database.waiting())
    try:
        async with asyncio.timeout(REFRESH_TIMEOUT):
            kinds = await descriptions_by_kind(database)
            expiring = await leases_expiring(database, EXPIRING_WITHIN)
            expired = await expired_awaiting_purge(database)
    except (RegistryError, TimeoutError):
        DATABASE_UP.set(0)
    else:
        DATABASE_UP.set(1)
        for kind in {*kinds, KIND_AGENT, KIND_TOOL, KIND_THING}:
            DESCRIPTIONS.labels(kind).set(kinds.get(kind, 0))
        LEASES_EXPIRING.set(expiring)
        EXPIRED.set(expired)
    if worker.unready_reason() is None:
        with contextlib.suppress(RegistryError, TimeoutError):
            async with asyncio.timeout(REFRESH_TIMEOUT):
                stats = await worker.stats()
            SPARQL_INDEX_LAG.set(max(0, feed.position - int(stats["indexPosition"])))
            if "skippedDescriptions" in stats:
                SPARQL_INDEX_SKIPPED.set(int(stats["skippedDescriptions"]))
                SPARQL_INDEX_SKIPPED_TOTAL.value = float(stats["skippedTotal"])


__all__ = [
    "DESCRIPTIONS",
    "FAILED_VALIDATIONS",
    "PURGED",
    "REGISTRATIONS",
    "REQUEST_METRICS",
    "RESPONSE_CACHE_READS",
    "SPARQL_QUERIES",
    "SPARQL_STORE_PUSHES",
    "SPARQL_TIMEOUTS",
    "SPARQL_WORKER_RESTARTS",
    "SSE_DROPPED",
    "Gauges",
]
