"""``create_app(settings)``: wiring only. Builds the Litestar application, its services and background tasks.

The application returned is the one ``registry serve`` runs, so tests can run it in-process too (with Litestar's
test client) besides the end-to-end tests against real server processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor

import msgspec
from litestar import Litestar
from litestar.config.cors import CORSConfig
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import License

from registry.auth.authenticator import Authenticator, AuthMode, auth_mode
from registry.auth.keys import KeyAdministration, KeyVerifier
from registry.auth.quotas import RateLimits
from registry.auth.tokens import TokenVerifier
from registry.config import Settings
from registry.conventions.service import ConventionService, load_trusted_keys
from registry.directory.search import JsonPathThreads, SearchService
from registry.directory.service import DirectoryService
from registry.discovery.oversight import OversightService
from registry.discovery.service import DiscoveryService
from registry.embeddings import provider_of
from registry.embeddings.indexer import VectorIndexer
from registry.errors import RegistryError
from registry.events.feed import ChangeFeed
from registry.events.hub import EventHub
from registry.http.a2a import A2AController
from registry.http.access import access_guard, declare_security, security_components
from registry.http.api_docs import OfflineSwaggerUI
from registry.http.batches import register_batch
from registry.http.bodies import JsonLimits, limited_request
from registry.http.contract import ContractDocument, ContractJson
from registry.http.dashboard import dashboard
from registry.http.dependencies import Access, DirectoryTd, ServiceHolder, Services, dependencies
from registry.http.directory import CORE_AFFORDANCES, SEARCH_AFFORDANCES, directory_description, well_known_wot
from registry.http.discovery import DiscoveryController
from registry.http.events import EVENT_AFFORDANCES, all_events, events_of_type
from registry.http.health import livez, readyz
from registry.http.keys import KeysController
from registry.http.leases import current_lease, renew_lease
from registry.http.mcp import McpRegistryController
from registry.http.mcp_endpoint import McpEndpoint, mcp_route
from registry.http.metrics import metrics
from registry.http.middleware.addresses import TrustedProxies
from registry.http.middleware.boundary import input_boundary, refuse_marked_input
from registry.http.middleware.cached_reads import answer_cached_reads
from registry.http.middleware.connections import when_draining
from registry.http.middleware.forwarded import honour_forwarded_headers
from registry.http.middleware.head import head_as_get
from registry.http.middleware.ids import ids_as_segments
from registry.http.middleware.options import allow_every_method
from registry.http.middleware.sites import SitePolicy
from registry.http.oversight import quality, recent_changes
from registry.http.owners import OwnersController
from registry.http.problems import exception_handlers
from registry.http.search import SearchController
from registry.http.things import ThingsController
from registry.ops.health import Readiness
from registry.ops.logs import flush_access_lines
from registry.ops.metrics import PURGED, READ_REPLICA_READS, REQUEST_METRICS, Gauges
from registry.ops.tracing import tracing_plugins
from registry.projections import Projections
from registry.projections.catalog import CatalogProjector
from registry.projections.rdf import RdfProjector
from registry.projections.search_words import SearchWordsRefresh
from registry.semantic.jsonpath import JsonPathLimits
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter, read_with
from registry.sparql.query import SparqlBackend
from registry.sparql.store.endpoint import StoreEndpoint
from registry.sparql.worker.client import QueryWorker
from registry.startup import DatabaseStartup, migrate_if_behind
from registry.store.catalog import CatalogStore
from registry.store.catalog.words import WordStatistics
from registry.store.counts import compact as compact_counts
from registry.store.database import Database
from registry.store.keys import KeyStore
from registry.store.migrations import head_revision
from registry.store.replica import ReadReplica, replica_names
from registry.store.servers import ServerStore
from registry.store.statistics import WORD_OWNERS, refresh_stale_statistics
from registry.store.things import ThingStore
from registry.tasks import cancel_and_wait, run_periodically

log = logging.getLogger(__name__)

#: The OpenAPI document (``/schema/openapi.json``) and the API docs (``/schema/swagger``).
SCHEMA_PATH = "/schema"
#: Seconds between checks for tables whose planner statistics are stale (see registry/store/statistics.py).
STATISTICS_INTERVAL = 30.0


async def _purge_expired(directory: DirectoryService) -> None:
    """``tdd-registrationinfo-expiry-purge``; every replica runs it, each expired row is deleted once."""
    purged = await directory.purge_expired()
    PURGED.inc(len(purged))
    if purged:
        log.info("purged %d expired description(s)", len(purged))


async def _refresh_statistics(database: Database, words: WordStatistics) -> None:
    """After a bulk load (an import, many agents registering at once) the planner learns the new sizes within a
    round, without waiting for autovacuum; and the need search its words' new frequencies, which it caches. The
    description counts kept with the writes are folded into one row per key, so that a count sums a few rows."""
    await compact_counts(database)
    refreshed = await refresh_stale_statistics(database)
    if refreshed:
        log.info("refreshed planner statistics of %s", ", ".join(refreshed))
    if "thing_summaries" in refreshed or WORD_OWNERS in refreshed:
        words.forget()


def _every(name: str, round_: Callable[[], Awaitable[None]], interval: float) -> asyncio.Task[None]:
    """A job of every replica that runs ``round_`` every ``interval`` seconds, the first after one interval."""
    job = run_periodically(name, round_, idle=interval, expected=(RegistryError,), first_round_now=False, logger=log)
    return asyncio.create_task(job, name=name)


async def _start_offload_threads() -> None:
    """Start every thread of the executor that ``asyncio.to_thread`` uses (large bodies are decoded, validated
    and projected there) now: starting one while a request holds the GIL blocks the event loop for a long while
    (docs/performance.md, "Figures behind the code")."""
    loop = asyncio.get_running_loop()
    workers = min(32, (os.cpu_count() or 1) + 4)
    loop.set_default_executor(ThreadPoolExecutor(workers, thread_name_prefix="registry-offload"))
    started = threading.Barrier(workers)
    await asyncio.gather(*(loop.run_in_executor(None, started.wait) for _ in range(workers)))


#: What a page of an origin in REGISTRY_CORS_ORIGINS may send and read across sites.
CORS_REQUEST_HEADERS = ["Authorization", "Content-Type", "If-Match", "If-None-Match", "Last-Event-ID", "X-Request-ID"]
CORS_RESPONSE_HEADERS = ["ETag", "Location", "Link", "Retry-After", "Registry-Notices", "Registry-Notices-Total"]


def _cors(settings: Settings) -> CORSConfig | None:
    """CORS answers (preflights, ``Access-Control-Allow-Origin``) for the origins of REGISTRY_CORS_ORIGINS; none
    without them (the dashboard is served by the directory itself, same origin)."""
    if not settings.cors_origins:
        return None
    return CORSConfig(
        allow_origins=list(settings.cors_origins),
        allow_methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        allow_headers=CORS_REQUEST_HEADERS,
        expose_headers=CORS_RESPONSE_HEADERS,
        allow_credentials=False,  # credentials are bearer tokens in a header, never cookies
    )


def create_app(settings: Settings) -> Litestar:
    """The application for ``settings``. The database need not be there yet: what needs it starts when it comes
    (``registry/startup.py``), migrating its schema first with ``settings.migrate_on_start``."""
    if not settings.database_url:
        raise ValueError("create_app needs a database URL (the CLI starts an embedded PostgreSQL for you)")

    holder = ServiceHolder()
    mode = auth_mode(settings)
    # Access tokens are accepted only from a configured identity provider.
    jwt_issuer = (
        (settings.auth_jwt_issuer or "the identity provider of REGISTRY_AUTH_JWKS") if settings.auth_jwks else ""
    )
    tokens = TokenVerifier(settings) if settings.auth_jwks else None
    limits = RateLimits(settings, count_auth_failures=mode is not AuthMode.OFF)
    schema_revision = head_revision()

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        await _start_offload_threads()
        database = Database(settings.database_url, connections=settings.db_pool_size)
        urls = settings.database_read_urls
        database.replicas = tuple(
            ReadReplica(
                database,
                url,
                connections=settings.db_read_pool_size,
                max_lag=settings.db_read_max_lag,
                schema_revision=schema_revision,
                name=name,
                on_read=READ_REPLICA_READS.labels(name).inc,
            )
            for url, name in zip(urls, replica_names(urls), strict=True)
        )
        things = ThingStore(database)
        library = ContextLibrary.load(settings.context_dir)
        converter = RdfConverter(library)
        read_with(converter)  # the rules on LMOS members read them with the contexts the RDF is made with
        # Every projection of a description, each one line: see registry/projections/__init__.py.
        projections = Projections(
            [
                RdfProjector(converter, strict_contexts=settings.strict_contexts),
                CatalogProjector(),
            ]
        )
        directory = DirectoryService(database, things, projections, settings)
        vector_index = VectorIndexer(database, provider_of(settings))
        search_words = SearchWordsRefresh(database)
        startup = DatabaseStartup()
        feed = ChangeFeed(database, poll_interval=settings.feed_poll_interval)
        events = EventHub(
            feed, database, settings.sse_queue_size, settings.sse_keepalive, queue_bytes=settings.sse_queue_bytes
        )
        jsonpath_threads = JsonPathThreads(settings.jsonpath_concurrency, settings.jsonpath_client_concurrency)
        # What answers /search/sparql: an external SPARQL store when one is configured, else the local index's worker.
        sparql: SparqlBackend = StoreEndpoint(settings, database) if settings.sparql_store else QueryWorker(settings)
        keys = KeyStore(database)
        access = Access(
            Authenticator(mode, KeyVerifier(keys), tokens),
            limits,
            KeyAdministration(keys),
            metrics_token=settings.metrics_token,
        )
        directory_td = directory_description(
            settings.base_url,
            CORE_AFFORDANCES | SEARCH_AFFORDANCES | EVENT_AFFORDANCES,
            directory_id=f"urn:lmos-registry:{settings.base_url}",
            mode=mode,
            issuer=settings.auth_jwt_issuer,
        )
        discovery = DiscoveryService(
            CatalogStore(database, search_timeout=settings.search_timeout), directory, vector_index
        )
        holder.fill(
            Services(
                events=events,
                directory=directory,
                discovery=discovery,
                search=SearchService(
                    database,
                    things,
                    sparql,
                    library,
                    per_client=settings.sparql_client_concurrency,
                    jsonpath_limits=JsonPathLimits(
                        settings.jsonpath_timeout,
                        settings.jsonpath_max_results,
                        settings.jsonpath_max_bytes,
                        settings.max_json_depth,
                    ),
                    jsonpath_threads=jsonpath_threads,
                ),
                conventions=ConventionService(
                    directory, ServerStore(database), load_trusted_keys(settings.a2a_trusted_keys)
                ),
                directory_td=DirectoryTd(msgspec.json.encode(directory_td)),
                access=access,
                gauges=Gauges(database, feed, events, sparql, directory.cache),
                oversight=OversightService(database),
                readiness=Readiness(
                    database,
                    sparql,
                    feed,
                    schema_revision=schema_revision,
                    max_feed_lag=settings.ready_max_feed_lag,
                    tokens=tokens,
                    startup=startup,
                    vectors=vector_index,
                    search_words=search_words,
                ),
            )
        )

        async def start_with_database(started: contextlib.AsyncExitStack) -> None:
            """What needs the database, in order; ``started`` stops it again."""
            await database.open()
            started.push_async_callback(database.close)
            if settings.migrate_on_start:
                await migrate_if_behind(database, schema_revision, jwt_issuer=settings.auth_jwt_issuer)
            for replica in database.replicas:
                await replica.start()
                started.push_async_callback(replica.stop)
            await limits.start(database)
            started.push_async_callback(limits.stop)
            started.callback(directory.cache.follow(feed))
            await feed.start()
            started.push_async_callback(feed.stop)
            await sparql.start()
            started.push_async_callback(sparql.stop)
            await vector_index.start()
            started.push_async_callback(vector_index.stop)
            started.callback(feed.subscribe(vector_index.nudge))
            warming = asyncio.create_task(discovery.needs.warm(), name="needs-warm-up")
            started.push_async_callback(cancel_and_wait, warming)
            search_words.start()
            started.push_async_callback(search_words.stop)
            purger = _every("purging expired descriptions", lambda: _purge_expired(directory), settings.purge_interval)
            started.push_async_callback(cancel_and_wait, purger)
            statistics = _every(
                "refreshing planner statistics",
                lambda: _refresh_statistics(database, discovery.catalog.word_statistics),
                STATISTICS_INTERVAL,
            )
            started.push_async_callback(cancel_and_wait, statistics)

        async with contextlib.AsyncExitStack() as stack:
            if tokens is not None:
                await tokens.start()
                stack.push_async_callback(tokens.stop)
            events.start()
            stack.push_async_callback(events.stop)
            stack.callback(when_draining(events.end_streams))
            await jsonpath_threads.start()
            stack.callback(jsonpath_threads.stop)
            with_database = await stack.enter_async_context(contextlib.AsyncExitStack())

            async def attempt() -> None:
                started = contextlib.AsyncExitStack()
                try:
                    await start_with_database(started)
                except BaseException:
                    await started.aclose()
                    raise
                with_database.push_async_callback(started.aclose)

            # The first attempt before serving (a database that is there is ready when the first request comes);
            # the next ones while serving, /readyz saying why not yet.
            starting = asyncio.create_task(startup.run(attempt), name="database-startup")
            stack.push_async_callback(cancel_and_wait, starting)
            await startup.first_attempt.wait()
            yield

    sites = SitePolicy.of(settings)
    mcp = McpEndpoint(holder, open_access=mode is AuthMode.OFF, sites=sites, max_body_bytes=settings.max_body_bytes)
    contract = ContractDocument()
    app = Litestar(
        request_class=limited_request(JsonLimits.of(settings)),
        before_request=refuse_marked_input,
        route_handlers=[
            ThingsController,
            SearchController,
            DiscoveryController,
            A2AController,
            McpRegistryController,
            mcp_route(mcp),
            well_known_wot,
            all_events,
            events_of_type,
            renew_lease,
            current_lease,
            register_batch,
            OwnersController,
            KeysController,
            dashboard,
            livez,
            readyz,
            metrics,
            quality,
            recent_changes,
        ],
        middleware=[REQUEST_METRICS.middleware, allow_every_method],
        plugins=tracing_plugins(settings),
        dependencies=dependencies(holder),
        guards=[access_guard(holder)] if mode is not AuthMode.OFF or limits.active else [],
        lifespan=[lifespan, mcp.running],
        on_shutdown=[flush_access_lines],  # the last requests' lines out before the process ends
        exception_handlers=exception_handlers,
        logging_config=None,  # registry.ops.logs.configure_logging (called by serve) owns the process's logging
        request_max_body_size=settings.max_body_bytes,
        cors_config=_cors(settings),
        openapi_config=OpenAPIConfig(
            title="LMOS Agent and Tool Registry",
            version="1",
            path=SCHEMA_PATH,
            render_plugins=[OfflineSwaggerUI(SCHEMA_PATH, contract), ContractJson(contract)],
            components=security_components(jwt_issuer),
            license=License(name="Apache-2.0", identifier="Apache-2.0"),
        ),
    )
    declare_security(app, mode, jwt_issuer)
    # Before routing: input is checked at the boundary, ids with "/" become one path segment, HEAD is answered
    # as GET without a body, and a read of a cached description is answered at once (unless requests are traced:
    # the tracing middleware is inside).
    routed = app.asgi_handler if settings.tracing else answer_cached_reads(app.asgi_handler, holder)
    app.asgi_handler = input_boundary(
        ids_as_segments(head_as_get(routed)),
        max_url_bytes=settings.max_url_bytes,
        sites=sites,
        access_log=settings.access_log,
    )
    # Outermost: every layer above counts and logs the client a trusted proxy names, and only such a proxy's.
    app.asgi_handler = honour_forwarded_headers(app.asgi_handler, TrustedProxies.of(settings.trusted_proxies))
    return app
