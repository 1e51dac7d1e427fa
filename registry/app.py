"""``create_app(settings)``: wiring only. Builds the Litestar application and its background tasks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from litestar import Litestar
from litestar.datastructures import State
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.types import ASGIApp

from registry.config import Settings
from registry.discovery import CatalogProjector, DiscoveryService
from registry.events.feed import ChangeFeed
from registry.events.hub import EventHub
from registry.http.api_v1 import DiscoveryController
from registry.http.dashboard import dashboard
from registry.http.directory import CORE_AFFORDANCES, SEARCH_AFFORDANCES, directory_description, well_known_wot
from registry.http.events import EVENT_AFFORDANCES, all_events, events_of_type
from registry.http.head import head_as_get
from registry.http.ids import ids_as_segments
from registry.http.leases import renew_lease
from registry.http.problems import exception_handlers
from registry.http.search import SearchController
from registry.http.things import ThingsController
from registry.semantic.layer import SemanticLayer
from registry.service import DirectoryService
from registry.store.catalog import CatalogStore
from registry.store.database import create_engine
from registry.store.things import ThingRepository

log = logging.getLogger(__name__)


async def _purge_periodically(directory: DirectoryService, interval: float) -> None:
    """``tdd-registrationinfo-expiry-purge``; every replica runs it, each expired row is deleted once."""
    while True:
        await asyncio.sleep(interval)
        try:
            purged = await directory.repository.purge_expired()
        except Exception:
            log.exception("purging expired descriptions failed; retrying in %s s", interval)
            continue
        if purged:
            log.info("purged %d expired description(s)", len(purged))


def create_asgi_app(settings: Settings) -> ASGIApp:
    """What ``registry serve`` runs: the application, answering HEAD on every GET endpoint."""
    return head_as_get(ids_as_segments(create_app(settings)))


def create_app(settings: Settings) -> Litestar:
    """The application for ``settings``; ``settings.database_url`` must name a migrated database."""
    if not settings.database_url:
        raise ValueError("create_app needs a database URL (the CLI starts an embedded PostgreSQL for you)")

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        engine = create_engine(settings.database_url, pool_size=settings.db_pool_size)
        repository = ThingRepository(engine)
        semantic = SemanticLayer(settings, engine)
        directory = DirectoryService(repository, settings, projectors=[semantic.projector, CatalogProjector()])
        app.state.directory = directory
        app.state.semantic = semantic
        app.state.discovery = DiscoveryService(CatalogStore(engine), directory)
        app.state.settings = settings
        app.state.directory_td = directory_description(
            settings.base_url,
            CORE_AFFORDANCES | SEARCH_AFFORDANCES | EVENT_AFFORDANCES,
            directory_id=f"urn:lmos-registry:{settings.base_url}",
        )
        feed = ChangeFeed(engine, settings.database_url, poll_interval=settings.feed_poll_interval)
        app.state.feed = feed
        app.state.events = EventHub(feed, engine, settings.sse_queue_size, settings.sse_keepalive)
        await feed.start()
        app.state.events.start()
        await semantic.start()
        purger = asyncio.create_task(_purge_periodically(directory, settings.purge_interval))
        try:
            yield
        finally:
            purger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await purger
            await semantic.stop()
            await app.state.events.stop()
            await feed.stop()
            await repository.close()
            await engine.dispose()

    return Litestar(
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
        lifespan=[lifespan],
        state=State({"settings": settings}),
        exception_handlers=exception_handlers,
        request_max_body_size=settings.max_body_bytes,
        openapi_config=OpenAPIConfig(
            title="LMOS Agent and Tool Registry",
            version="1",
            path="/schema",
            render_plugins=[SwaggerRenderPlugin()],
        ),
    )
