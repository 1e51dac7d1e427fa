"""``create_app(settings)``: wiring only. Builds the Litestar application, its services and background tasks.

The application returned is the one ``registry serve`` runs, so tests can run it in-process too (with Litestar's
test client) besides the end-to-end tests against real server processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import msgspec
from litestar import Litestar
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin

from registry.config import Settings
from registry.directory.search import SearchService
from registry.directory.service import DirectoryService
from registry.discovery.service import DiscoveryService
from registry.events.feed import ChangeFeed
from registry.events.hub import EventHub
from registry.http.dashboard import dashboard
from registry.http.dependencies import DirectoryTd, ServiceHolder, Services, dependencies
from registry.http.directory import CORE_AFFORDANCES, SEARCH_AFFORDANCES, directory_description, well_known_wot
from registry.http.discovery import DiscoveryController
from registry.http.events import EVENT_AFFORDANCES, all_events, events_of_type
from registry.http.head import head_as_get
from registry.http.ids import ids_as_segments
from registry.http.leases import renew_lease
from registry.http.problems import exception_handlers
from registry.http.search import SearchController
from registry.http.things import ThingsController
from registry.projections import Projections
from registry.projections.catalog import CatalogProjector
from registry.projections.rdf import RdfProjector
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.sparql_worker.client import QueryWorker
from registry.store.catalog import CatalogStore
from registry.store.database import Database
from registry.store.things import ThingStore

log = logging.getLogger(__name__)


async def _purge_periodically(directory: DirectoryService, interval: float) -> None:
    """``tdd-registrationinfo-expiry-purge``; every replica runs it, each expired row is deleted once."""
    while True:
        await asyncio.sleep(interval)
        try:
            purged = await directory.purge_expired()
        except Exception:
            log.exception("purging expired descriptions failed; retrying in %s s", interval)
            continue
        if purged:
            log.info("purged %d expired description(s)", len(purged))


def create_app(settings: Settings) -> Litestar:
    """The application for ``settings``; ``settings.database_url`` must name a migrated database."""
    if not settings.database_url:
        raise ValueError("create_app needs a database URL (the CLI starts an embedded PostgreSQL for you)")

    holder = ServiceHolder()

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        database = Database(settings.database_url, connections=settings.db_pool_size)
        await database.open()
        things = ThingStore(database)
        library = ContextLibrary.load(settings.context_dir)
        # Every projection of a description, each one line: see registry/projections/__init__.py.
        projections = Projections(
            [
                RdfProjector(RdfConverter(library), strict_contexts=settings.strict_contexts),
                CatalogProjector(),
            ]
        )
        directory = DirectoryService(database, things, projections, settings)
        feed = ChangeFeed(database, poll_interval=settings.feed_poll_interval)
        events = EventHub(feed, database, settings.sse_queue_size, settings.sse_keepalive)
        worker = QueryWorker(settings)
        directory_td = directory_description(
            settings.base_url,
            CORE_AFFORDANCES | SEARCH_AFFORDANCES | EVENT_AFFORDANCES,
            directory_id=f"urn:lmos-registry:{settings.base_url}",
        )
        holder.fill(
            Services(
                settings=settings,
                database=database,
                feed=feed,
                events=events,
                directory=directory,
                discovery=DiscoveryService(CatalogStore(database), directory),
                search=SearchService(database, things, worker, library),
                directory_td=DirectoryTd(msgspec.json.encode(directory_td)),
            )
        )
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(database.close)
            await feed.start()
            stack.push_async_callback(feed.stop)
            events.start()
            stack.push_async_callback(events.stop)
            await worker.start()
            stack.push_async_callback(worker.stop)
            purger = asyncio.create_task(_purge_periodically(directory, settings.purge_interval))
            stack.callback(purger.cancel)
            yield

    app = Litestar(
        route_handlers=[
            ThingsController,
            SearchController,
            DiscoveryController,
            well_known_wot,
            all_events,
            events_of_type,
            renew_lease,
            dashboard,
        ],
        dependencies=dependencies(holder, settings),
        lifespan=[lifespan],
        exception_handlers=exception_handlers,
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="LMOS Agent and Tool Registry",
            version="1",
            path="/schema",
            render_plugins=[SwaggerRenderPlugin()],
        ),
    )
    # Before routing: ids with "/" become one path segment, and HEAD is answered as GET without a body.
    app.asgi_handler = ids_as_segments(head_as_get(app.asgi_handler))
    return app
