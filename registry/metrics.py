"""What ``/metrics`` exposes besides the request metrics of Litestar's Prometheus middleware.

Counters move where the event happens, in this process (so that a sum over replicas counts each event once);
gauges of shared state (descriptions, leases) and of this process's parts (pool, SSE, SPARQL index) are read when
Prometheus scrapes (:func:`refresh`), so they cost nothing between scrapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from typing import TYPE_CHECKING

from litestar.plugins.prometheus import PrometheusConfig, PrometheusMiddleware
from litestar.types import Message, Receive, Scope, Send
from prometheus_client import Counter, Gauge

from registry.descriptions.summary import KIND_AGENT, KIND_THING, KIND_TOOL
from registry.errors import RegistryError
from registry.store.census import descriptions_by_kind, expired_awaiting_purge, leases_expiring

if TYPE_CHECKING:
    from registry.events.feed import ChangeFeed
    from registry.events.hub import EventHub
    from registry.semantic.sparql import SparqlBackend
    from registry.store.database import Database

log = logging.getLogger(__name__)


class _RequestMetrics(PrometheusMiddleware):
    """Litestar's Prometheus middleware, its metrics and labels, for less per request: no Request object is built
    and no in-progress gauge kept (measured with bench/bench_instructions.py: the stock middleware and the access
    log together added 27 % to the instructions of a GET)."""

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
            labels: dict[str, str | int | float] = {
                "method": str(scope.get("method") or scope["type"]),
                "path": scope.get("path_template", scope["path"]),
                "status_code": status,
                "app_name": self._config.app_name,
            }
            values = list(labels.values())
            if status >= 500:
                self.requests_error_count(labels).labels(*values).inc()
            self.request_count(labels).labels(*values).inc()
            self.request_time(labels).labels(*values).observe(duration)


#: Request count, latency histogram and error count by route template, method and status.
REQUEST_METRICS = PrometheusConfig(
    app_name="lmos-registry",
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

DESCRIPTIONS = Gauge("registry_descriptions", "Live descriptions by kind", ["kind"])
LEASES_EXPIRING = Gauge("registry_leases_expiring_soon", "Live descriptions whose lease ends within 5 minutes")
EXPIRED = Gauge("registry_descriptions_expired", "Descriptions past their expiry, not yet purged (never served)")
SSE_SUBSCRIBERS = Gauge("registry_sse_subscribers", "Open SSE subscriptions on this replica")
SPARQL_INDEX_LAG = Gauge(
    "registry_sparql_index_lag_changes", "Changes the SPARQL index is behind this replica's change feed"
)
FEED_LAG = Gauge("registry_change_feed_lag_seconds", "Seconds the change feed has been behind the change log")
DB_POOL_SIZE = Gauge("registry_db_pool_connections", "Pooled database connections of this replica")
DB_POOL_IN_USE = Gauge("registry_db_pool_in_use", "Pooled database connections lent out")
DB_POOL_WAITING = Gauge("registry_db_pool_waiting", "Callers waiting for a pooled database connection")
DATABASE_UP = Gauge("registry_database_up", "1 when the last scrape could read the database, else 0")


class Gauges:
    """The parts of this process whose state the gauges show, read at each scrape."""

    def __init__(self, database: Database, feed: ChangeFeed, events: EventHub, worker: SparqlBackend) -> None:
        self.database = database
        self.feed = feed
        self.events = events
        self.worker = worker

    async def refresh(self) -> None:
        """Read the gauges; a part that does not answer in time leaves its gauges at their last values."""
        await _refresh(self.database, self.feed, self.events, self.worker)


async def _refresh(database: Database, feed: ChangeFeed, events: EventHub, worker: SparqlBackend) -> None:
    in_use, _idle = database.usage()
    DB_POOL_SIZE.set(database.pool_size)
    DB_POOL_IN_USE.set(in_use)
    DB_POOL_WAITING.set(database.waiting())
    SSE_SUBSCRIBERS.set(events.subscriber_count)
    FEED_LAG.set(feed.lag)
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


__all__ = [
    "DESCRIPTIONS",
    "FAILED_VALIDATIONS",
    "PURGED",
    "REGISTRATIONS",
    "REQUEST_METRICS",
    "SPARQL_QUERIES",
    "SPARQL_STORE_PUSHES",
    "SPARQL_TIMEOUTS",
    "SPARQL_WORKER_RESTARTS",
    "SSE_DROPPED",
    "Gauges",
]
